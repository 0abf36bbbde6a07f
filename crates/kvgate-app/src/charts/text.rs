//! Figures in words inside a chart, written as the window writes them in its tables
//! (`ui/src/lib/format.ts`): "absent" for a missing value, never 0; a true minus sign; thousands
//! grouped; shares in per cent and their differences in percentage points.

use kvgate_core::stats::PairedVerdict;

/// What a missing value reads as.
pub const ABSENT: &str = "absent";

/// The sign of a negative figure (U+2212, not a hyphen).
const MINUS: char = '−';

/// Groups the integer part of a plain decimal text by thousands: "12345.6" → "12,345.6".
fn grouped(text: &str) -> String {
    let (int, frac) = text
        .split_once('.')
        .map_or((text, None), |(i, f)| (i, Some(f)));
    let mut out = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// `text` of |v| with the sign put back, unless the shown digits are all zero (no "−0").
fn signed(v: f64, text: String) -> String {
    if v < 0.0 && text.chars().any(|c| ('1'..='9').contains(&c)) {
        format!("{MINUS}{text}")
    } else {
        text
    }
}

/// `a` (≥ 0) with `digits` decimals, an exact tie rounded away from zero as the window's
/// `Intl.NumberFormat` does (Rust's formatting rounds it to even: 91.25 → "91.2", not "91.3").
fn decimals(a: f64, digits: usize) -> String {
    let p = 10f64.powi(digits as i32);
    let scaled = a * p;
    let a = if scaled.fract() == 0.5 {
        (scaled.floor() + 1.0) / p
    } else {
        a
    };
    format!("{a:.digits$}")
}

/// |v| with exactly `digits` decimals, thousands grouped, signed.
fn fixed(v: f64, digits: usize) -> String {
    signed(v, grouped(&decimals(v.abs(), digits)))
}

/// |v| with up to `digits` decimals (trailing zeros trimmed), thousands grouped, signed.
fn up_to(v: f64, digits: usize) -> String {
    let text = decimals(v.abs(), digits);
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    };
    signed(v, grouped(&text))
}

/// `v` rounded to `digits` significant digits (as JavaScript's `toPrecision` reads back).
fn significant_value(v: f64, digits: usize) -> f64 {
    format!("{:.*e}", digits.saturating_sub(1), v)
        .parse()
        .unwrap_or(v)
}

/// A count: thousands grouped ("12,345").
pub fn count(n: u64) -> String {
    grouped(&n.to_string())
}

/// A measured number without a known unit: up to three decimals, thousands grouped.
pub fn number(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(|| ABSENT.to_owned(), |v| up_to(v, 3))
}

/// A share in [0, 1] as a percentage with one decimal: 0.2739 → "27.4%".
pub fn share(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map_or_else(
        || ABSENT.to_owned(),
        |v| format!("{}%", fixed(v * 100.0, 1)),
    )
}

fn pp_bare(diff: f64) -> String {
    let text = decimals((diff * 100.0).abs(), 1);
    if !text.chars().any(|c| ('1'..='9').contains(&c)) {
        return text;
    }
    format!("{}{text}", if diff < 0.0 { MINUS } else { '+' })
}

/// A difference of shares in signed percentage points: −0.0125 → "−1.3 pp", 0.004 → "+0.4 pp".
pub fn pp(diff: Option<f64>) -> String {
    diff.filter(|v| v.is_finite())
        .map_or_else(|| ABSENT.to_owned(), |d| format!("{} pp", pp_bare(d)))
}

/// An interval of share differences: "[−3.1, +0.8] pp"; absent when a bound is missing.
pub fn pp_interval(low: Option<f64>, high: Option<f64>) -> String {
    match (
        low.filter(|v| v.is_finite()),
        high.filter(|v| v.is_finite()),
    ) {
        (Some(l), Some(h)) => format!("[{}, {}] pp", pp_bare(l), pp_bare(h)),
        _ => ABSENT.to_owned(),
    }
}

/// Three significant digits, never rounding away integer digits: "0.312", "1.13", "1,234".
fn significant(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".to_owned();
    }
    if a < 1.0 {
        let r = significant_value(a, 3);
        let decimals = (2 - r.log10().floor() as i32).max(0) as usize;
        return signed(v, format!("{r:.decimals$}"));
    }
    let decimals = |x: f64| (3 - (x.log10().floor() as i32 + 1)).max(0) as usize;
    let d = decimals(a);
    // 9.996 rounds to "10.00": count the digits of the rounded value.
    let rounded: f64 = format!("{a:.d$}").parse().unwrap_or(a);
    fixed(v, decimals(rounded))
}

/// A rate per second with three significant digits: "0.312 good/s".
pub fn rate(v: Option<f64>, unit: &str) -> String {
    v.filter(|v| v.is_finite()).map_or_else(
        || ABSENT.to_owned(),
        |v| format!("{} {unit}", significant(v)),
    )
}

/// "[1.11, 1.35]" from a repeat interval of a rate; absent below two repeats.
pub fn rate_range(low: Option<f64>, high: Option<f64>) -> String {
    match (
        low.filter(|v| v.is_finite()),
        high.filter(|v| v.is_finite()),
    ) {
        (Some(l), Some(h)) => format!("[{}, {}]", significant(l), significant(h)),
        _ => ABSENT.to_owned(),
    }
}

/// A latency in milliseconds: "81.5 ms" below a second, "1.2 s" below a minute, then minutes.
pub fn duration(ms: Option<f64>) -> String {
    let Some(ms) = ms.filter(|v| v.is_finite()) else {
        return ABSENT.to_owned();
    };
    let a = ms.abs();
    let tenths_ms = (a * 10.0).round() / 10.0;
    let text = if tenths_ms < 1000.0 {
        format!("{} ms", up_to(tenths_ms, 1))
    } else if (a / 100.0).round() / 10.0 < 60.0 {
        format!("{:.1} s", (a / 100.0).round() / 10.0)
    } else {
        let total = (a / 1000.0).round() as u64;
        let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
        if h == 0 {
            format!("{m} min {s:02} s")
        } else {
            format!("{} h {m:02} min {s:02} s", count(h))
        }
    };
    signed(ms, text)
}

/// An axis label: compact for large values ("12k", "1.5M"), trimmed decimals otherwise.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    let text = if a >= 1e6 {
        format!("{}M", significant_value(a / 1e6, 3))
    } else if a >= 1e4 {
        format!("{}k", significant_value(a / 1e3, 3))
    } else {
        format!("{}", significant_value(a, 4))
    };
    if text == "0" || v >= 0.0 {
        text
    } else {
        format!("{MINUS}{text}")
    }
}

/// A paired verdict in words; there is no "equivalent".
pub fn verdict(v: PairedVerdict) -> &'static str {
    match v {
        PairedVerdict::NonInferior => "non-inferior",
        PairedVerdict::Inferior => "inferior",
        PairedVerdict::CollectMoreEvidence => "collect more evidence",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_value_reads_absent_never_zero() {
        assert_eq!(number(None), "absent");
        assert_eq!(share(None), "absent");
        assert_eq!(pp(None), "absent");
        assert_eq!(duration(None), "absent");
        assert_eq!(rate(Some(f64::NAN), "good/s"), "absent");
        assert_eq!(pp_interval(None, Some(0.1)), "absent");
        assert_eq!(rate_range(Some(0.1), None), "absent");
        // A measured 0 is 0.
        assert_eq!(number(Some(0.0)), "0");
        assert_eq!(duration(Some(0.0)), "0 ms");
        assert_eq!(share(Some(0.0)), "0.0%");
    }

    #[test]
    fn figures_read_as_in_the_window_tables() {
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(number(Some(200_000.0)), "200,000");
        assert_eq!(number(Some(0.12345)), "0.123");
        assert_eq!(duration(Some(1234.56)), "1.2 s");
        assert_eq!(duration(Some(234.56)), "234.6 ms");
        assert_eq!(duration(Some(185_000.0)), "3 min 05 s");
        assert_eq!(share(Some(0.9125)), "91.3%");
        assert_eq!(share(Some(0.975)), "97.5%");
        assert_eq!(pp(Some(-0.00125)), "−0.1 pp");
        assert_eq!(pp(Some(-0.0125)), "−1.3 pp");
        assert_eq!(pp(Some(0.004)), "+0.4 pp");
        assert_eq!(pp(Some(-0.0001)), "0.0 pp");
        assert_eq!(pp_interval(Some(-0.031), Some(0.008)), "[−3.1, +0.8] pp");
        assert_eq!(rate(Some(0.5), "good/s"), "0.500 good/s");
        assert_eq!(rate(Some(1.1345), "good/s"), "1.13 good/s");
        assert_eq!(rate(Some(9.996), "good/s"), "10.0 good/s");
        assert_eq!(rate(Some(1234.0), "good/s"), "1,234 good/s");
        assert_eq!(rate_range(Some(1.11), Some(1.354)), "[1.11, 1.35]");
        assert_eq!(
            verdict(PairedVerdict::CollectMoreEvidence),
            "collect more evidence"
        );
    }

    #[test]
    fn axis_labels_are_compact() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(-0.0), "0");
        assert_eq!(tick(0.6000000000000001), "0.6");
        assert_eq!(tick(-6.0), "−6");
        assert_eq!(tick(2500.0), "2500");
        assert_eq!(tick(12_000.0), "12k");
        assert_eq!(tick(1_500_000.0), "1.5M");
    }
}
