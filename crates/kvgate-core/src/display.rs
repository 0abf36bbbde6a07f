//! How a figure reads in a sentence for a person: the decision's rules and headline, the packet's
//! report, the CLI's text. The same rules as the window's `ui/src/lib/format.ts`, held to one
//! table of cases (`fixtures/format/cases.json`) that both test. JSON, CSV and the packet's data
//! files keep the raw values; nothing here rounds a figure that is stored or compared.
//!
//! Rounding is half away from zero on the exact decimal value of the `f64`, as JavaScript's
//! `Intl.NumberFormat` does, so a share of 1/16 reads "6.3%" here and in the window.

/// What a missing value reads as, everywhere: never 0, never blank.
pub const ABSENT: &str = "absent";

/// The sign of a negative figure (U+2212, not a hyphen).
const MINUS: char = '\u{2212}';

/// |v| rounded half away from zero to `digits` decimals, as digits only (no sign, no grouping).
fn round_abs(v: f64, digits: usize) -> String {
    // Rust prints the exact decimal expansion up to the precision asked: 30 more digits than
    // kept tell which side of the half the value lies on.
    let exact = format!("{:.*}", digits + 30, v.abs());
    let (int_part, frac) = exact.split_once('.').unwrap_or((&exact, ""));
    let mut kept: Vec<u8> = int_part.bytes().chain(frac.bytes().take(digits)).collect();
    let up = frac.as_bytes().get(digits).is_some_and(|d| *d >= b'5');
    if up {
        let mut i = kept.len();
        loop {
            if i == 0 {
                kept.insert(0, b'1');
                break;
            }
            i -= 1;
            if kept[i] == b'9' {
                kept[i] = b'0';
            } else {
                kept[i] += 1;
                break;
            }
        }
    }
    let int_len = kept.len() - digits;
    let (i, f) = kept.split_at(int_len);
    let i = std::str::from_utf8(i).unwrap_or("0");
    let f = std::str::from_utf8(f).unwrap_or("");
    if digits == 0 {
        i.to_owned()
    } else {
        format!("{i}.{f}")
    }
}

/// Thousands grouped with commas: "1234567.5" → "1,234,567.5".
fn grouped(digits: &str) -> String {
    let (int_part, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (digits, None),
    };
    let mut out = String::new();
    for (k, c) in int_part.chars().enumerate() {
        if k > 0 && (int_part.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// The text of |v| with the sign of `v` put back, unless every shown digit is zero (no "−0").
fn signed(v: f64, text: String) -> String {
    if v < 0.0 && text.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        format!("{MINUS}{text}")
    } else {
        text
    }
}

fn fixed(v: f64, digits: usize) -> String {
    signed(v, grouped(&round_abs(v, digits)))
}

/// Up to `digits` decimals: trailing zeros dropped.
fn up_to(v: f64, digits: usize) -> String {
    let mut t = round_abs(v, digits);
    if t.contains('.') {
        while t.ends_with('0') {
            t.pop();
        }
        if t.ends_with('.') {
            t.pop();
        }
    }
    signed(v, grouped(&t))
}

fn present(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

/// A count: whole, thousands grouped ("12,345"), no unit.
pub fn count(n: u64) -> String {
    grouped(&n.to_string())
}

/// A share in [0, 1] as a percentage with one decimal: 0.2739… → "27.4%".
pub fn share(v: Option<f64>) -> String {
    present(v).map_or_else(|| ABSENT.into(), |x| format!("{}%", fixed(x * 100.0, 1)))
}

fn pp_text(diff: f64, digits: usize) -> String {
    let text = grouped(&round_abs(diff * 100.0, digits));
    if !text.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        return text;
    }
    format!("{}{text}", if diff < 0.0 { MINUS } else { '+' })
}

/// A difference of shares in signed percentage points: −0.0125 → "−1.3 pp", 0.004 → "+0.4 pp".
pub fn pp(diff: Option<f64>) -> String {
    present(diff).map_or_else(|| ABSENT.into(), |x| format!("{} pp", pp_text(x, 1)))
}

/// An interval of share differences: "[−3.1, +0.8] pp"; absent when a bound is missing.
pub fn pp_interval(low: Option<f64>, high: Option<f64>) -> String {
    match (present(low), present(high)) {
        (Some(l), Some(h)) => format!("[{}, {}] pp", pp_text(l, 1), pp_text(h, 1)),
        _ => ABSENT.into(),
    }
}

/// Three significant digits, never rounding away integer digits: "0.312", "1.13", "12.3", "1,234".
fn significant(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    let decimals = |x: f64| (3 - (x.log10().floor() as i64 + 1)).max(0) as usize;
    let mut digits = decimals(a);
    // 9.996 rounds to "10.0": count the digits of the rounded value.
    let rounded: f64 = round_abs(a, digits).parse().unwrap_or(a);
    digits = decimals(rounded);
    fixed(v, digits)
}

/// A rate per second with three significant digits and its unit: "1.13 req/s", "0.312 good/s".
pub fn rate(per_s: Option<f64>, unit: &str) -> String {
    present(per_s).map_or_else(|| ABSENT.into(), |x| format!("{} {unit}", significant(x)))
}

/// A figure without a unit (a cost, a ratio): three significant digits, as a rate is shown.
pub fn figure(v: Option<f64>) -> String {
    present(v).map_or_else(|| ABSENT.into(), significant)
}

/// A p-value: three significant digits, "< 0.001" below.
pub fn p_value(p: Option<f64>) -> String {
    match present(p) {
        None => ABSENT.into(),
        Some(x) if x < 0.001 => "< 0.001".into(),
        Some(x) => significant(x),
    }
}

/// A duration given in milliseconds: "850 ms", "81.5 ms", "12.4 s", "3 min 05 s", "2 h 01 min 05 s".
pub fn duration_ms(ms: Option<f64>) -> String {
    let Some(ms) = present(ms) else {
        return ABSENT.into();
    };
    let a = ms.abs();
    let sign = |t: String| signed(ms, t);
    // The window's arithmetic, step for step, so both round the same way.
    let tenths_of_ms = (a * 10.0).round() / 10.0;
    if tenths_of_ms < 1000.0 {
        return sign(format!("{} ms", up_to(tenths_of_ms, 1)));
    }
    let tenths_of_s = (a / 100.0).round() / 10.0;
    if tenths_of_s < 60.0 {
        return sign(format!("{} s", fixed(tenths_of_s, 1)));
    }
    let total = (a / 1000.0).round() as u64;
    let (h, m, s) = (total / 3600, (total / 60) % 60, total % 60);
    if h == 0 {
        sign(format!("{m} min {s:02} s"))
    } else {
        sign(format!("{} h {m:02} min {s:02} s", count(h)))
    }
}

/// Two figures compared in one sentence, each by `show`, with as many more decimals as it takes
/// (up to `extra`) for different values not to read the same: "−4.96 pp < −5.00 pp", never
/// "−5.0 pp < −5.0 pp". `show(value, decimals_added)`.
pub fn distinct<F: Fn(f64, usize) -> String>(
    a: f64,
    b: f64,
    extra: usize,
    show: F,
) -> (String, String) {
    let mut k = 0;
    loop {
        let (x, y) = (show(a, k), show(b, k));
        if x != y || a == b || k == extra {
            return (x, y);
        }
        k += 1;
    }
}

/// A share with `1 + extra` decimals: for [`distinct`].
pub fn share_with(v: f64, extra: usize) -> String {
    format!("{}%", fixed(v * 100.0, 1 + extra))
}

/// Signed percentage points with `1 + extra` decimals: for [`distinct`].
pub fn pp_with(v: f64, extra: usize) -> String {
    format!("{} pp", pp_text(v, 1 + extra))
}

/// A rate with three significant digits, or `3 + extra`: for [`distinct`].
pub fn rate_with(v: f64, extra: usize, unit: &str) -> String {
    if extra == 0 || v == 0.0 {
        return rate(Some(v), unit);
    }
    let magnitude = v.abs().log10().floor() as i64 + 1;
    let decimals = (3 + extra as i64 - magnitude).max(0) as usize;
    format!("{} {unit}", fixed(v, decimals))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The window's format.ts is held to the same table (ui/src/lib/format-cases.test.ts).
    #[test]
    fn the_shared_cases_read_the_same_here() {
        let text = include_str!("../../../fixtures/format/cases.json");
        let cases: Value = serde_json::from_str(text).unwrap();
        let mut n = 0;
        for (kind, list) in cases.as_object().unwrap() {
            if kind.starts_with('_') {
                continue;
            }
            for case in list.as_array().unwrap() {
                let input = &case[0];
                let want = case[1].as_str().unwrap();
                let got = match kind.as_str() {
                    "share" => share(input.as_f64()),
                    "pp" => pp(input.as_f64()),
                    "pp_interval" => pp_interval(input[0].as_f64(), input[1].as_f64()),
                    "rate" => rate(input.as_f64(), "req/s"),
                    "duration_ms" => duration_ms(input.as_f64()),
                    "count" => count(input.as_u64().unwrap()),
                    "p_value" => p_value(input.as_f64()),
                    other => panic!("unknown kind {other}"),
                };
                assert_eq!(got, want, "{kind}({input})");
                n += 1;
            }
        }
        assert!(n > 40, "{n} cases");
    }

    #[test]
    fn ties_round_away_from_zero_on_the_exact_value() {
        // 1/16 is exactly 0.0625: a tie, rounded up as JavaScript does ("6.3%", not "6.2%").
        assert_eq!(share(Some(1.0 / 16.0)), "6.3%");
        // 0.1 × 3 is 0.30000000000000004: above the tie at 30.0 %.
        assert_eq!(share(Some(0.1 * 3.0)), "30.0%");
        // 1.005 is stored as 1.00499999999999989…: below the tie.
        assert_eq!(fixed(1.005, 2), "1.00");
        assert_eq!(fixed(-999.95, 1), "−1,000.0");
    }

    #[test]
    fn compared_figures_never_read_the_same_when_they_differ() {
        let (a, b) = distinct(-0.0496, -0.05, 3, pp_with);
        assert_eq!((a.as_str(), b.as_str()), ("−4.96 pp", "−5.00 pp"));
        let (a, b) = distinct(0.1249, 0.125, 3, share_with);
        assert_eq!((a.as_str(), b.as_str()), ("12.49%", "12.50%"));
        let (a, b) = distinct(0.5, 0.5, 3, share_with);
        assert_eq!((a.as_str(), b.as_str()), ("50.0%", "50.0%"));
        let (a, b) = distinct(0.31241, 0.31249, 3, |v, k| rate_with(v, k, "good/s"));
        assert_eq!((a.as_str(), b.as_str()), ("0.3124 good/s", "0.3125 good/s"));
    }
}
