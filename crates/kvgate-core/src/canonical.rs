//! Canonical JSON (RFC 8785, JSON Canonicalization Scheme) and its sha256: the digest that
//! freezes a manifest, a policy or a packet file.
//!
//! Rules implemented: object members sorted by the UTF-16 code units of their names; strings with
//! only the escapes JSON requires (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, other control
//! characters as lowercase `\u00xx`, nothing else escaped); numbers as IEEE-754 doubles printed
//! like ECMAScript's `Number.prototype.toString` (shortest round-trip digits, `1e+21`, `1e-7`,
//! `-0` → `0`); no whitespace. Integers beyond 2^53 are rounded to a double, exactly as RFC 8785
//! prescribes, so a format that needs them exact must carry them as strings.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

/// Why a text or value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    #[error("expected JSON text (I-JSON, no duplicate member names), found: {0}")]
    Parse(String),
    #[error("`{path}`: expected a finite number, found NaN or Infinity")]
    NonFinite { path: String },
    #[error("expected a value serde_json can represent, found: {0}")]
    Serialize(String),
}

/// The canonical JSON text of `value`.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Lowercase 64-hex sha256 of the canonical JSON text of `value`.
pub fn canonical_sha256(value: &Value) -> String {
    sha256_hex(canonical_json(value).as_bytes())
}

/// Parses JSON text (rejecting duplicate member names) and returns its canonical form.
pub fn canonicalize_str(text: &str) -> Result<String, CanonicalError> {
    Ok(canonical_json(&parse_strict(text)?))
}

/// Parses JSON text into a value, rejecting duplicate member names: with duplicates, different
/// readers keep different members, so the digest would not pin one meaning.
pub fn parse_strict(text: &str) -> Result<Value, CanonicalError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let StrictValue(value) =
        StrictValue::deserialize(&mut de).map_err(|e| CanonicalError::Parse(e.to_string()))?;
    de.end().map_err(|e| CanonicalError::Parse(e.to_string()))?;
    Ok(value)
}

/// Lowercase 64-hex sha256 of `bytes`: the one digest form KV Gate writes and compares.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lowercase hex of a finished digest (a streaming hasher's `finalize()`), as `sha256_hex` writes it.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// True when `s` is exactly 64 lowercase hexadecimal digits, the form `sha256_hex` produces.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The ECMAScript `Number.prototype.toString` text of a finite double; `None` for NaN/Infinity.
pub fn format_number(v: f64) -> Option<String> {
    if !v.is_finite() {
        return None;
    }
    if v == 0.0 {
        return Some("0".to_owned());
    }
    let (digits, exponent) = shortest_closest_digits(v.abs())?;
    let k = digits.len() as i32;
    // ES names the decimal exponent n such that value = 0.digits × 10^n.
    let n = exponent + 1;
    let mut out = String::new();
    if v < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (int, frac) = digits.split_at(n as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        let e = n - 1;
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if e < 0 { '-' } else { '+' });
        let _ = write!(out, "{}", e.unsigned_abs());
    }
    Some(out)
}

/// The decimal digits and exponent ES picks: the fewest digits that round-trip and, among those,
/// the ones closest to the exact value (ties to even).
fn shortest_closest_digits(v: f64) -> Option<(String, i32)> {
    // Rust's `{:e}` gives the fewest round-trip digits but not always the closest of them.
    let shortest = format!("{v:e}");
    let k = split_sci(&shortest)?.0.len();
    // Precision formatting rounds the exact binary value correctly, ties to even.
    let closest = format!("{v:.prec$e}", prec = k - 1);
    let chosen = if closest.parse::<f64>().ok() == Some(v) {
        closest
    } else {
        shortest
    };
    let (mut digits, exponent) = split_sci(&chosen)?;
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    Some((digits, exponent))
}

fn split_sci(text: &str) -> Option<(String, i32)> {
    let (mantissa, exponent) = text.split_once('e')?;
    let digits = mantissa.chars().filter(|c| *c != '.').collect();
    Some((digits, exponent.parse().ok()?))
}

fn number_as_f64(n: &Number) -> f64 {
    // Every serde_json number converts; integers above 2^53 round like an I-JSON reader would.
    if let Some(u) = n.as_u64() {
        u as f64
    } else if let Some(i) = n.as_i64() {
        i as f64
    } else {
        n.as_f64().unwrap_or(f64::NAN)
    }
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => {
            // serde_json numbers are always finite, so the fallback is unreachable in practice.
            out.push_str(&format_number(number_as_f64(n)).unwrap_or_else(|| "null".into()))
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| utf16_order(a.0, b.0));
            out.push('{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// RFC 8785 orders member names by UTF-16 code units, which differs from UTF-8 byte order
/// above the Basic Multilingual Plane.
fn utf16_order(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON value whose objects were checked for duplicate member names while parsing.
struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("expected a finite number, found NaN or Infinity"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                return Err(de::Error::custom(format!(
                    "expected unique member names, found `{key}` twice"
                )));
            }
            let StrictValue(item) = access.next_value()?;
            map.insert(key, item);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(text: &str) -> String {
        canonicalize_str(text).unwrap()
    }

    #[test]
    fn rfc8785_main_example() {
        let input = r#"{
            "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
            "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
            "literals": [null, true, false]
        }"#;
        assert_eq!(
            canon(input),
            "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],\
             \"string\":\"€$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}"
        );
    }

    #[test]
    fn rfc8785_number_table_from_ieee_bits() {
        // Appendix B of RFC 8785: IEEE-754 bit patterns and their required text.
        let table: &[(u64, &str)] = &[
            (0x0000000000000000, "0"),
            (0x8000000000000000, "0"),
            (0x0000000000000001, "5e-324"),
            (0x8000000000000001, "-5e-324"),
            (0x7fefffffffffffff, "1.7976931348623157e+308"),
            (0xffefffffffffffff, "-1.7976931348623157e+308"),
            (0x4340000000000000, "9007199254740992"),
            (0xc340000000000000, "-9007199254740992"),
            (0x4430000000000000, "295147905179352830000"),
            (0x44b52d02c7e14af5, "9.999999999999997e+22"),
            (0x44b52d02c7e14af6, "1e+23"),
            (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
            (0x444b1ae4d6e2ef4e, "999999999999999700000"),
            (0x444b1ae4d6e2ef4f, "999999999999999900000"),
            (0x444b1ae4d6e2ef50, "1e+21"),
            (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
            (0x3eb0c6f7a0b5ed8d, "0.000001"),
            (0x41b3de4355555553, "333333333.3333332"),
            (0x41b3de4355555554, "333333333.33333325"),
            (0x41b3de4355555555, "333333333.3333333"),
            (0x41b3de4355555556, "333333333.3333334"),
            (0x41b3de4355555557, "333333333.33333343"),
            (0xbecbf647612f3696, "-0.0000033333333333333333"),
            (0x43143ff3c1cb0959, "1424953923781206.2"),
            // Exact ties between two shortest candidates (checked against V8's String(x)).
            (0x42be193fbaa77990, "33093792212857.562"),
            (0x43188d8af43099d1, "1727756845721204.2"),
            (0xc30be4f6669de9fa, "-981446413237567.2"),
        ];
        for &(bits, expected) in table {
            let v = f64::from_bits(bits);
            assert_eq!(
                format_number(v).as_deref(),
                Some(expected),
                "bits {bits:016x}"
            );
        }
    }

    #[test]
    fn rejects_nan_and_infinity() {
        assert_eq!(format_number(f64::from_bits(0x7fffffffffffffff)), None);
        assert_eq!(format_number(f64::INFINITY), None);
        assert_eq!(format_number(f64::NEG_INFINITY), None);
        assert!(canonicalize_str("[1e400]").is_err());
        assert!(canonicalize_str("[NaN]").is_err());
    }

    #[test]
    fn numbers_from_json_text_follow_ecmascript() {
        let cases = [
            ("1e30", "1e+30"),
            ("4.50", "4.5"),
            ("2e-3", "0.002"),
            ("0.000001", "0.000001"),
            ("1e-7", "1e-7"),
            ("1.5e-7", "1.5e-7"),
            ("333333333.33333329", "333333333.3333333"),
            ("1E+21", "1e+21"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("999999999999999999", "1000000000000000000"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("100", "100"),
            ("1.0", "1"),
            ("-12.5", "-12.5"),
            ("0.1", "0.1"),
            ("123456789012345680000", "123456789012345680000"),
            ("18446744073709551615", "18446744073709552000"),
            ("-9223372036854775808", "-9223372036854776000"),
        ];
        for (input, expected) in cases {
            assert_eq!(
                canon(&format!("[{input}]")),
                format!("[{expected}]"),
                "{input}"
            );
        }
    }

    #[test]
    fn shortest_form_round_trips_for_many_doubles() {
        // A fixed xorshift stream keeps the check deterministic while covering all exponents.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut checked = 0;
        while checked < 20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let v = f64::from_bits(state);
            if !v.is_finite() {
                continue;
            }
            let text = format_number(v).unwrap();
            let back: f64 = text.parse().unwrap();
            assert_eq!(
                back.to_bits(),
                if v == 0.0 { 0 } else { v.to_bits() },
                "{text}"
            );
            assert!(!text.contains("e") || text.contains("e+") || text.contains("e-"));
            checked += 1;
        }
    }

    #[test]
    fn rfc8785_key_sorting_by_utf16_code_units() {
        let input = r#"{
            "\u20ac": "Euro Sign",
            "\r": "Carriage Return",
            "\ufb33": "Hebrew Letter Dalet With Dagesh",
            "1": "One",
            "\ud83d\ude00": "Emoji: Grinning Face",
            "\u0080": "Control",
            "\u00f6": "Latin Small Letter O With Diaeresis",
            "\u00e9": "Latin Small Letter E With Acute"
        }"#;
        let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
             \"é\":\"Latin Small Letter E With Acute\",\
             \"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\
             \"😀\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
        assert_eq!(canon(input), expected);
    }

    #[test]
    fn utf16_order_differs_from_utf8_order_above_the_bmp() {
        // UTF-16 puts the surrogate 0xD83D before 0xFB33; UTF-8 puts F0 (emoji) after EF (U+FB33).
        assert_eq!(utf16_order("\u{1F600}", "\u{FB33}"), Ordering::Less);
        assert_eq!("\u{1F600}".cmp("\u{FB33}"), Ordering::Greater);
    }

    #[test]
    fn strings_escape_only_what_jcs_requires() {
        let v = json!(["\u{0}\u{1f}\u{7f}", "/<>&'", "ä€😀", "\u{8}\u{c}\n\r\t\"\\"]);
        assert_eq!(
            canonical_json(&v),
            "[\"\\u0000\\u001f\u{7f}\",\"/<>&'\",\"ä€😀\",\"\\b\\f\\n\\r\\t\\\"\\\\\"]"
        );
    }

    #[test]
    fn nested_structures_are_sorted_recursively_without_whitespace() {
        let text = r#" { "b" : [ { "z" : 1 , "a" : { "y" : true , "x" : null } } ] , "a" : "" } "#;
        assert_eq!(
            canon(text),
            r#"{"a":"","b":[{"a":{"x":null,"y":true},"z":1}]}"#
        );
    }

    #[test]
    fn key_order_and_whitespace_do_not_change_the_digest() {
        let a = parse_strict(r#"{"kv_dtype":"fp8","layers":[1,2],"top_p":0.95}"#).unwrap();
        let b = parse_strict(
            "{\n  \"top_p\": 9.5e-1,\n  \"layers\": [ 1, 2 ],\n  \"kv_dtype\": \"fp8\"\n}",
        )
        .unwrap();
        assert_eq!(canonical_sha256(&a), canonical_sha256(&b));
        assert!(is_sha256_hex(&canonical_sha256(&a)));
    }

    #[test]
    fn any_value_change_changes_the_digest() {
        let base = json!({"kv_dtype":"fp8","layers":[1,2],"top_p":0.95,"on":true,"x":null});
        let changed = [
            json!({"kv_dtype":"fp8_e4m3","layers":[1,2],"top_p":0.95,"on":true,"x":null}),
            json!({"kv_dtype":"fp8","layers":[2,1],"top_p":0.95,"on":true,"x":null}),
            json!({"kv_dtype":"fp8","layers":[1,2],"top_p":0.9500001,"on":true,"x":null}),
            json!({"kv_dtype":"fp8","layers":[1,2],"top_p":0.95,"on":false,"x":null}),
            json!({"kv_dtype":"fp8","layers":[1,2],"top_p":0.95,"on":true}),
            json!({"kv_dtype":"fp8","layers":[1,2],"top_p":0.95,"on":true,"x":0}),
            json!({"kv_dtype":"fp8","layers":[1,2],"top_p":0.95,"on":true,"x":null,"y":1}),
        ];
        let digest = canonical_sha256(&base);
        for other in changed {
            assert_ne!(canonical_sha256(&other), digest, "{other}");
        }
    }

    #[test]
    fn sha256_matches_known_vectors() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(!is_sha256_hex(&sha256_hex(b"abc").to_uppercase()));
        assert!(!is_sha256_hex("abc"));
    }

    #[test]
    fn rejects_duplicate_member_names_and_trailing_text() {
        let err = canonicalize_str(r#"{"a":1,"b":{"c":1,"c":2}}"#).unwrap_err();
        assert!(err.to_string().contains("`c` twice"), "{err}");
        assert!(canonicalize_str(r#"{"a":1} x"#).is_err());
        assert!(canonicalize_str(r#"["\ud800"]"#).is_err());
    }
}
