//! Exact decimal numbers, read from JSON number text without going through binary floating point.
//!
//! The validator compares `nominal_torque` as written: 12.5 equals 12.50, but 12.500000001 does
//! not equal 12.5 even where two `f64` values would round to each other. A [`Decimal`] is kept
//! normalised (no leading or trailing zeros in its digits), so equal values have equal fields.

use std::borrow::Cow;
use std::fmt;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

/// Exponents are clamped here so that absurd inputs such as `1e99999999999999999999` stay exact
/// enough to compare (they are never equal to a fixture value) without overflowing.
const EXPONENT_LIMIT: i64 = 1 << 40;

/// An exact decimal value: `digits × 10^exponent`, with a sign.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decimal {
    negative: bool,
    /// ASCII digits without leading or trailing zeros; empty for zero.
    digits: String,
    exponent: i64,
}

impl Decimal {
    /// Reads a number written in strict JSON number syntax (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`).
    /// Returns `None` for anything else, including leading `+`, leading zeros, `NaN` and `1.`.
    pub fn parse_json_number(text: &str) -> Option<Decimal> {
        let bytes = text.as_bytes();
        let mut i = 0;
        let negative = bytes.first() == Some(&b'-');
        if negative {
            i += 1;
        }
        let int_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let int_part = &text[int_start..i];
        if int_part.is_empty() || (int_part.len() > 1 && int_part.starts_with('0')) {
            return None;
        }
        let mut frac_part = "";
        if i < bytes.len() && bytes[i] == b'.' {
            i += 1;
            let frac_start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            frac_part = &text[frac_start..i];
            if frac_part.is_empty() {
                return None;
            }
        }
        let mut exponent: i64 = 0;
        if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
            i += 1;
            let exp_negative = match bytes.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let exp_start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                exponent = (exponent * 10 + i64::from(bytes[i] - b'0')).min(EXPONENT_LIMIT);
                i += 1;
            }
            if i == exp_start {
                return None;
            }
            if exp_negative {
                exponent = -exponent;
            }
        }
        if i != bytes.len() {
            return None;
        }
        let frac_len = i64::try_from(frac_part.len()).unwrap_or(EXPONENT_LIMIT);
        let mut all_digits = String::with_capacity(int_part.len() + frac_part.len());
        all_digits.push_str(int_part);
        all_digits.push_str(frac_part);
        Some(Decimal::normalised(
            negative,
            &all_digits,
            exponent - frac_len,
        ))
    }

    /// `mantissa × 10^-scale`, e.g. `from_scaled(125, 1)` is 12.5.
    pub fn from_scaled(mantissa: i64, scale: u32) -> Decimal {
        let digits = mantissa.unsigned_abs().to_string();
        Decimal::normalised(mantissa < 0, &digits, -i64::from(scale))
    }

    fn normalised(negative: bool, digits: &str, exponent: i64) -> Decimal {
        let trimmed = digits.trim_start_matches('0');
        let without_trailing = trimmed.trim_end_matches('0');
        if without_trailing.is_empty() {
            return Decimal {
                negative: false,
                digits: String::new(),
                exponent: 0,
            };
        }
        let trailing = (trimmed.len() - without_trailing.len()) as i64;
        Decimal {
            negative,
            digits: without_trailing.to_owned(),
            exponent: (exponent + trailing).clamp(-EXPONENT_LIMIT, EXPONENT_LIMIT),
        }
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// This value multiplied by `10^k`.
    pub fn times_power_of_ten(&self, k: i64) -> Decimal {
        if self.is_zero() {
            return self.clone();
        }
        Decimal {
            negative: self.negative,
            digits: self.digits.clone(),
            exponent: (self.exponent + k).clamp(-EXPONENT_LIMIT, EXPONENT_LIMIT),
        }
    }

    /// The `k` for which `self == other × 10^k`, if there is one (never for zero).
    pub fn power_of_ten_ratio(&self, other: &Decimal) -> Option<i64> {
        (!self.is_zero() && self.negative == other.negative && self.digits == other.digits)
            .then(|| self.exponent - other.exponent)
    }

    /// The value in plain notation with `decimal_separator`, grouping the integer part in threes
    /// with `group_separator` when given (`1,250.5` in English, `1.250,5` in German).
    pub fn format(&self, decimal_separator: char, group_separator: Option<char>) -> String {
        let (int_part, frac_part) = self.plain_parts();
        let mut out = String::new();
        if self.negative {
            out.push('-');
        }
        match group_separator {
            Some(sep) => {
                for (i, c) in int_part.chars().enumerate() {
                    if i > 0 && (int_part.len() - i) % 3 == 0 {
                        out.push(sep);
                    }
                    out.push(c);
                }
            }
            None => out.push_str(&int_part),
        }
        if !frac_part.is_empty() {
            out.push(decimal_separator);
            out.push_str(&frac_part);
        }
        out
    }

    /// Integer and fraction digits of the plain notation (`"0"` and `""` for zero).
    fn plain_parts(&self) -> (String, String) {
        if self.is_zero() {
            return ("0".into(), String::new());
        }
        let len = self.digits.len() as i64;
        if self.exponent >= 0 {
            let zeros = "0".repeat(self.exponent as usize);
            (format!("{}{zeros}", self.digits), String::new())
        } else if -self.exponent < len {
            let split = (len + self.exponent) as usize;
            (
                self.digits[..split].to_owned(),
                self.digits[split..].to_owned(),
            )
        } else {
            let zeros = "0".repeat((-self.exponent - len) as usize);
            ("0".into(), format!("{zeros}{}", self.digits))
        }
    }

    /// `mantissa × 10^-scale` for a wide mantissa (a tolerance's bounds).
    pub fn from_scaled_i128(mantissa: i128, scale: u32) -> Decimal {
        let digits = mantissa.unsigned_abs().to_string();
        Decimal::normalised(mantissa < 0, &digits, -i64::from(scale))
    }

    /// The digits after the decimal point this value needs (0 for an integer).
    pub fn scale(&self) -> u32 {
        u32::try_from((-self.exponent).max(0)).unwrap_or(u32::MAX)
    }

    /// This value as `mantissa × 10^-scale`, when that mantissa has at most 36 digits; `None`
    /// when the value needs more digits after the point than `scale`, or is too large.
    pub fn to_scaled_i128(&self, scale: u32) -> Option<i128> {
        if self.is_zero() {
            return Some(0);
        }
        let shift = self.exponent.checked_add(i64::from(scale))?;
        if shift < 0 || self.digits.len() as i64 + shift > 36 {
            return None;
        }
        let mut text = self.digits.clone();
        text.extend(std::iter::repeat_n('0', shift as usize));
        let magnitude: i128 = text.parse().ok()?;
        Some(if self.negative { -magnitude } else { magnitude })
    }

    /// The nearest `f64`, for places that can only carry a binary float (a JSON number in
    /// `items.jsonl`); exact for the short decimals the fixture generator writes.
    pub fn to_f64(&self) -> f64 {
        let sign = if self.negative { "-" } else { "" };
        let digits = if self.is_zero() { "0" } else { &self.digits };
        format!("{sign}{digits}e{}", self.exponent)
            .parse()
            .unwrap_or(f64::NAN)
    }

    /// Whether this value survives a trip through `f64` and back unchanged, i.e. may be written
    /// into JSON by serde without losing digits.
    pub fn round_trips_through_f64(&self) -> bool {
        Decimal::from_f64(self.to_f64()).as_ref() == Some(self)
    }

    /// The decimal that `value` prints as (shortest representation that reads back the same).
    pub fn from_f64(value: f64) -> Option<Decimal> {
        if !value.is_finite() {
            return None;
        }
        // `{:e}` prints the shortest round-tripping digits in scientific notation, e.g. `1.25e1`.
        Decimal::parse_json_number(&format!("{value:e}"))
    }
}

/// Exact numeric order: no rounding, whatever the exponents.
impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let magnitude = |a: &Decimal, b: &Decimal| match (a.is_zero(), b.is_zero()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => {
                // Where the leading digit stands, then the digits (no trailing zeros, so a
                // prefix is the smaller).
                let lead = |d: &Decimal| d.digits.len() as i64 + d.exponent;
                lead(a)
                    .cmp(&lead(b))
                    .then_with(|| a.digits.as_bytes().cmp(b.digits.as_bytes()))
            }
        };
        match (self.negative, other.negative) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => magnitude(self, other),
            (true, true) => magnitude(other, self),
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Decimal {
    /// Plain notation with a decimal point, or scientific notation for extreme exponents.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.exponent.abs() > 40 {
            let sign = if self.negative { "-" } else { "" };
            let (head, tail) = self.digits.split_at(1);
            let exponent = self.exponent + tail.len() as i64;
            if tail.is_empty() {
                write!(f, "{sign}{head}e{exponent}")
            } else {
                write!(f, "{sign}{head}.{tail}e{exponent}")
            }
        } else {
            f.write_str(&self.format('.', None))
        }
    }
}

impl Serialize for Decimal {
    /// A JSON number: an integer when the value is whole and fits, otherwise the nearest `f64`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.exponent >= 0 && self.exponent <= 18 {
            if let Ok(whole) = self.format('.', None).parse::<i64>() {
                return serializer.serialize_i64(whole);
            }
        }
        serializer.serialize_f64(self.to_f64())
    }
}

impl<'de> Deserialize<'de> for Decimal {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl de::Visitor<'_> for Visitor {
            type Value = Decimal;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Decimal, E> {
                Ok(Decimal::from_scaled(v, 0))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Decimal, E> {
                Ok(Decimal::normalised(false, &v.to_string(), 0))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Decimal, E> {
                Decimal::from_f64(v).ok_or_else(|| E::custom("expected a finite number"))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl JsonSchema for Decimal {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Decimal".into()
    }
    fn json_schema(_generator: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "number" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        Decimal::parse_json_number(text).unwrap_or_else(|| panic!("{text} should parse"))
    }

    #[test]
    fn equal_values_written_differently_are_equal() {
        assert_eq!(d("12.5"), d("12.50"));
        assert_eq!(d("12.5"), d("1.25e1"));
        assert_eq!(d("12.5"), d("125E-1"));
        assert_eq!(d("0"), d("-0.000"));
        assert_eq!(d("1250"), d("1.25e3"));
    }

    #[test]
    fn values_that_a_float_would_merge_stay_different() {
        assert_ne!(d("12.5"), d("12.500000001"));
        assert_ne!(d("12.5"), d("12.50000000000000000001"));
        assert_eq!(
            "12.50000000000000000001".parse::<f64>().unwrap(),
            12.5,
            "the float comparison this type exists to avoid"
        );
    }

    #[test]
    fn rejects_text_outside_json_number_syntax() {
        for bad in [
            "", "-", "+1", "01", "1.", ".5", "1e", "1e+", "NaN", "12,5", " 1", "1 ", "0x10", "1_0",
        ] {
            assert_eq!(Decimal::parse_json_number(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn power_of_ten_ratio_is_exact() {
        assert_eq!(d("125").power_of_ten_ratio(&d("12.5")), Some(1));
        assert_eq!(d("1.25").power_of_ten_ratio(&d("12.5")), Some(-1));
        assert_eq!(d("12500").power_of_ten_ratio(&d("12.5")), Some(3));
        assert_eq!(d("12.5").power_of_ten_ratio(&d("12.5")), Some(0));
        assert_eq!(d("125.1").power_of_ten_ratio(&d("12.5")), None);
        assert_eq!(d("-125").power_of_ten_ratio(&d("12.5")), None);
        assert_eq!(d("0").power_of_ten_ratio(&d("0")), None);
    }

    #[test]
    fn formats_with_language_separators() {
        assert_eq!(d("12.5").format(',', None), "12,5");
        assert_eq!(d("1250.5").format('.', Some(',')), "1,250.5");
        assert_eq!(d("1250.5").format(',', Some('.')), "1.250,5");
        assert_eq!(d("125000").format('.', Some(',')), "125,000");
        assert_eq!(d("0.035").format('.', None), "0.035");
        assert_eq!(d("-7").to_string(), "-7");
        assert_eq!(d("1e99").to_string(), "1e99");
        assert_eq!(d("1.5e-60").to_string(), "1.5e-60");
    }

    #[test]
    fn from_scaled_and_times_power_of_ten() {
        assert_eq!(Decimal::from_scaled(125, 1), d("12.5"));
        assert_eq!(Decimal::from_scaled(1200, 2), d("12"));
        assert_eq!(Decimal::from_scaled(-35, 3), d("-0.035"));
        assert_eq!(d("12.5").times_power_of_ten(-2), d("0.125"));
    }

    #[test]
    fn serialises_as_json_number_and_reads_back() {
        for text in ["12.5", "1250", "0.035", "8.75", "1237.5", "0"] {
            let value = d(text);
            let json = serde_json::to_string(&value).unwrap();
            assert_eq!(json, text);
            assert_eq!(serde_json::from_str::<Decimal>(&json).unwrap(), value);
            assert!(value.round_trips_through_f64());
        }
        assert!(!d("12.50000000000000000001").round_trips_through_f64());
        assert!(serde_json::from_str::<Decimal>("\"12.5\"").is_err());
    }

    #[test]
    fn absurd_exponents_do_not_overflow() {
        let huge = d("1e99999999999999999999999");
        assert_ne!(huge, d("1"));
        assert!(huge.to_f64().is_infinite());
    }
}
