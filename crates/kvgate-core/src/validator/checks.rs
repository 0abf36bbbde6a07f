//! Answer checks for a team's own approved prompts ([`crate::fixtures::team`]).
//!
//! A generated item is judged against its extraction answer by [`super::validate`]. An item a
//! team brings names how its answer is judged, one [`AnswerCheck`] per item:
//!
//! - `json_fields`: exactly one JSON object with exactly the expected members, as the validator
//!   reads a response: the same keys (no more, no fewer, none twice), strings equal, numbers
//!   equal as exact decimals (12.5 == 12.50, 12.5 != 12.500001), booleans and null equal,
//!   nested objects and arrays compared member by member under their path (`parts[1].qty`).
//! - `exact_text`: the response, without surrounding whitespace, is exactly the text.
//! - `number`: the response, without surrounding whitespace, is one number in JSON syntax within
//!   `tolerance` of `value`, compared exactly (0.4 is within 0.1 of 0.3).
//! - `regex`: the whole response, without surrounding whitespace, matches the pattern.
//! - `refusal`: the validator's refusal object, `{"error": "not_found"}`.
//!
//! Timeouts, failed requests and empty outputs are rejected verdicts under every check, so they
//! stay in every denominator.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::json::{Node, Value};
use super::{
    excerpt, extracted_fields, json_string, kind_name, kind_of, read_object, unfence, validate,
    Decimal, ExpectedAnswer, Findings, ReasonCode, ResponseOutcome, ValidatorPolicy, Verdict,
    REFUSAL_CODE, REFUSAL_FIELD,
};

/// How one approved answer is judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AnswerCheck {
    /// One JSON object with exactly these members.
    JsonFields(JsonFieldsCheck),
    /// Exactly this text.
    ExactText(ExactTextCheck),
    /// One number within `tolerance` of `value` (inclusive).
    Number(NumberCheck),
    /// A regular expression (Rust `regex` syntax) the whole response matches.
    Regex(RegexCheck),
    /// The refusal object `{"error": "not_found"}`.
    Refusal(RefusalCheck),
}

/// See [`AnswerCheck::JsonFields`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonFieldsCheck {
    #[ts(type = "Record<string, unknown>")]
    pub expected: serde_json::Map<String, serde_json::Value>,
}

/// See [`AnswerCheck::ExactText`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExactTextCheck {
    pub text: String,
}

/// See [`AnswerCheck::Number`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NumberCheck {
    #[ts(type = "number")]
    pub value: Decimal,
    #[ts(type = "number")]
    pub tolerance: Decimal,
}

/// See [`AnswerCheck::Regex`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegexCheck {
    pub pattern: String,
}

/// See [`AnswerCheck::Refusal`]: no parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefusalCheck {}

impl AnswerCheck {
    /// The check's name as the item file writes it.
    pub fn kind(&self) -> &'static str {
        match self {
            AnswerCheck::JsonFields(_) => "json_fields",
            AnswerCheck::ExactText(_) => "exact_text",
            AnswerCheck::Number(_) => "number",
            AnswerCheck::Regex(_) => "regex",
            AnswerCheck::Refusal(_) => "refusal",
        }
    }

    /// What the check accepts, said for people (the reviewer's target line).
    pub fn describe(&self) -> String {
        match self {
            AnswerCheck::JsonFields(JsonFieldsCheck { expected }) => {
                format!(
                    "the JSON object {}",
                    serde_json::Value::Object(expected.clone())
                )
            }
            AnswerCheck::ExactText(ExactTextCheck { text }) => {
                format!("exactly the text {}", json_string(text))
            }
            AnswerCheck::Number(NumberCheck { value, tolerance }) => {
                format!("one number within {tolerance} of {value}")
            }
            AnswerCheck::Regex(RegexCheck { pattern }) => {
                format!("text matching /{pattern}/ whole")
            }
            AnswerCheck::Refusal(_) => {
                format!("the refusal {{\"{REFUSAL_FIELD}\": \"{REFUSAL_CODE}\"}}")
            }
        }
    }

    /// The members a response must hold, where the check judges members: a JSON check's
    /// object, the refusal object; `None` for a check of the whole text.
    pub fn expected_fields(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        match self {
            AnswerCheck::JsonFields(c) => Some(c.expected.clone()),
            AnswerCheck::Refusal(_) => match serde_json::to_value(ExpectedAnswer::refusal()) {
                Ok(serde_json::Value::Object(m)) => Some(m),
                _ => None,
            },
            _ => None,
        }
    }

    /// Why the check cannot judge anything, with the JSON path inside the check: a pattern that
    /// does not compile, a negative or too precise tolerance, a number written in a way JSON
    /// cannot carry exactly.
    pub fn problems(&self) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        match self {
            AnswerCheck::Regex(RegexCheck { pattern }) => {
                // The pattern as given, so the error speaks of it and not of the anchored form.
                if let Err(e) = regex::Regex::new(pattern).and_then(|_| anchored(pattern)) {
                    let why = e.to_string();
                    let why = why
                        .lines()
                        .last()
                        .unwrap_or("")
                        .trim_start_matches("error: ");
                    out.push((
                        "check.pattern".into(),
                        "a regular expression (Rust regex syntax)".into(),
                        format!("{}: {why}", json_string(pattern)),
                    ));
                }
            }
            AnswerCheck::Number(NumberCheck { value, tolerance }) => {
                let zero = Decimal::from_scaled(0, 0);
                if *tolerance < zero {
                    out.push((
                        "check.tolerance".into(),
                        "a tolerance of 0 or more".into(),
                        tolerance.to_string(),
                    ));
                }
                if bounds(value, tolerance).is_none() {
                    out.push((
                        "check.value".into(),
                        "a value and tolerance of at most 36 digits together".into(),
                        format!("{value} ± {tolerance}"),
                    ));
                }
            }
            AnswerCheck::JsonFields(JsonFieldsCheck { expected }) => {
                if expected.is_empty() {
                    out.push((
                        "check.expected".into(),
                        "an object with at least one member".into(),
                        "{}".into(),
                    ));
                }
                if let Some(path) = float_only_number(
                    &serde_json::Value::Object(expected.clone()),
                    "check.expected",
                ) {
                    out.push((
                        path,
                        "a finite JSON number".into(),
                        "a number JSON cannot carry".into(),
                    ));
                }
            }
            AnswerCheck::ExactText(ExactTextCheck { text }) => {
                if text.trim().is_empty() || text.trim() != text {
                    out.push((
                        "check.text".into(),
                        "a text without surrounding whitespace, not empty".into(),
                        json_string(text),
                    ));
                }
            }
            AnswerCheck::Refusal(_) => {}
        }
        out
    }
}

fn float_only_number(value: &serde_json::Value, path: &str) -> Option<String> {
    match value {
        serde_json::Value::Number(n) => Decimal::parse_json_number(&n.to_string())
            .is_none()
            .then(|| path.to_owned()),
        serde_json::Value::Object(m) => m
            .iter()
            .find_map(|(k, v)| float_only_number(v, &format!("{path}.{k}"))),
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| float_only_number(v, &format!("{path}[{i}]"))),
        _ => None,
    }
}

fn anchored(pattern: &str) -> Result<regex::Regex, regex::Error> {
    regex::Regex::new(&format!("^(?:{pattern})$"))
}

/// `value − tolerance` and `value + tolerance`, exactly.
fn bounds(value: &Decimal, tolerance: &Decimal) -> Option<(Decimal, Decimal)> {
    let scale = value.scale().max(tolerance.scale());
    let v = value.to_scaled_i128(scale)?;
    let t = tolerance.to_scaled_i128(scale)?;
    Some((
        Decimal::from_scaled_i128(v.checked_sub(t)?, scale),
        Decimal::from_scaled_i128(v.checked_add(t)?, scale),
    ))
}

/// Judges one outcome by an item's check. The refusal check is the validator's own.
pub fn judge(check: &AnswerCheck, outcome: &ResponseOutcome, policy: ValidatorPolicy) -> Verdict {
    if let AnswerCheck::Refusal(_) = check {
        return validate(&ExpectedAnswer::refusal(), outcome, policy);
    }
    let mut findings = Findings::default();
    let mut extracted = None;
    let mut fenced = false;
    let text = match outcome {
        ResponseOutcome::Completed { text } if !text.trim().is_empty() => text.trim(),
        // Timeouts, errors and empty outputs are judged as the validator judges them.
        other => return validate(&ExpectedAnswer::refusal(), other, policy),
    };
    match check {
        AnswerCheck::ExactText(ExactTextCheck { text: want }) => {
            if text != want {
                findings.add(
                    ReasonCode::WrongValue,
                    None,
                    Some(json_string(want)),
                    Some(json_string(&excerpt(text))),
                    format!(
                        "expected exactly {}, found {}",
                        json_string(want),
                        json_string(&excerpt(text))
                    ),
                );
            }
        }
        AnswerCheck::Regex(RegexCheck { pattern }) => match anchored(pattern) {
            Ok(re) if re.is_match(text) => {}
            Ok(_) => findings.add(
                ReasonCode::WrongValue,
                None,
                Some(format!("/{pattern}/")),
                Some(json_string(&excerpt(text))),
                format!(
                    "expected text matching /{pattern}/ whole, found {}",
                    json_string(&excerpt(text))
                ),
            ),
            Err(e) => findings.add(
                ReasonCode::Error,
                None,
                Some("a regular expression".into()),
                Some(pattern.clone()),
                format!("the item's pattern /{pattern}/ does not compile: {e}"),
            ),
        },
        AnswerCheck::Number(NumberCheck { value, tolerance }) => {
            judge_number(value, tolerance, text, &mut findings)
        }
        AnswerCheck::JsonFields(JsonFieldsCheck { expected }) => {
            // Read as the validator reads an answer object, code fence policy included.
            let (body, is_fenced) = unfence(text, policy, &mut findings);
            fenced = is_fenced;
            if let Some(members) = read_object(body, &mut findings) {
                extracted = Some(extracted_fields(&members));
                if is_refusal(&members) && !expected.contains_key(REFUSAL_FIELD) {
                    findings.add(
                        ReasonCode::UnexpectedRefusal,
                        Some(REFUSAL_FIELD),
                        Some("the answer object".into()),
                        Some(body.to_owned()),
                        "expected the answer, found a refusal".into(),
                    );
                } else {
                    compare_members(expected, &members, "", &mut findings);
                }
            }
        }
        AnswerCheck::Refusal(_) => unreachable!("judged above"),
    }
    findings.into_verdict(fenced, extracted)
}

fn is_refusal(members: &[(String, Node<'_>)]) -> bool {
    matches!(members, [(key, Node { value: Value::String(code), .. })] if key == REFUSAL_FIELD && code == REFUSAL_CODE)
}

fn judge_number(value: &Decimal, tolerance: &Decimal, text: &str, findings: &mut Findings) {
    let want = if tolerance.is_zero() {
        value.to_string()
    } else {
        format!("{value} ± {tolerance}")
    };
    let Some(found) = Decimal::parse_json_number(text) else {
        findings.add(
            ReasonCode::Malformed,
            None,
            Some(want.clone()),
            Some(excerpt(text)),
            format!(
                "expected one number in JSON syntax ({want}), found {}",
                json_string(&excerpt(text))
            ),
        );
        return;
    };
    let Some((low, high)) = bounds(value, tolerance) else {
        findings.add(
            ReasonCode::Error,
            None,
            Some("a value and tolerance of at most 36 digits together".into()),
            Some(want.clone()),
            format!("the item's bounds {want} cannot be computed exactly"),
        );
        return;
    };
    if low <= found && found <= high {
        return;
    }
    let reason = match found.power_of_ten_ratio(value) {
        Some(k) if k != 0 && (-3..=3).contains(&k) => ReasonCode::FactorOfTen,
        _ => ReasonCode::WrongValue,
    };
    findings.add(
        reason,
        None,
        Some(want.clone()),
        Some(text.to_owned()),
        format!("expected a number in [{low}, {high}] ({want}), found {text}"),
    );
}

fn field_path(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

fn compare_members(
    expected: &serde_json::Map<String, serde_json::Value>,
    members: &[(String, Node<'_>)],
    prefix: &str,
    findings: &mut Findings,
) {
    let mut by_key: BTreeMap<&str, &Node<'_>> = BTreeMap::new();
    for (key, node) in members {
        let path = field_path(prefix, key);
        if by_key.contains_key(key.as_str()) {
            findings.add(
                ReasonCode::Malformed,
                Some(&path),
                None,
                Some(node.raw.to_owned()),
                format!("field `{path}` appears more than once"),
            );
        } else {
            by_key.insert(key.as_str(), node);
            if !expected.contains_key(key) {
                findings.add(
                    ReasonCode::ExtraField,
                    Some(&path),
                    None,
                    Some(node.raw.to_owned()),
                    format!("field `{path}` is not part of the approved answer"),
                );
            }
        }
    }
    for (key, want) in expected {
        let path = field_path(prefix, key);
        match by_key.get(key.as_str()) {
            None => findings.add(
                ReasonCode::MissingField,
                Some(&path),
                Some(want.to_string()),
                None,
                format!("field `{path}` is missing; expected {want}"),
            ),
            Some(node) => compare_value(want, node, &path, findings),
        }
    }
}

fn compare_value(want: &serde_json::Value, node: &Node<'_>, path: &str, findings: &mut Findings) {
    use serde_json::Value as J;
    let wrong_type = |findings: &mut Findings, expected_kind: &str| {
        findings.add(
            ReasonCode::WrongType,
            Some(path),
            Some(want.to_string()),
            Some(node.raw.to_owned()),
            format!(
                "field `{path}`: expected a {expected_kind} ({want}), found a {} {}",
                kind_name(kind_of(&node.value)),
                excerpt(node.raw)
            ),
        )
    };
    let wrong_value = |findings: &mut Findings, reason: ReasonCode| {
        findings.add(
            reason,
            Some(path),
            Some(want.to_string()),
            Some(node.raw.to_owned()),
            format!(
                "field `{path}`: expected {want}, found {}",
                excerpt(node.raw)
            ),
        )
    };
    match (want, &node.value) {
        (J::Null, Value::Null) => {}
        (J::Bool(a), Value::Bool(b)) => {
            if a != b {
                wrong_value(findings, ReasonCode::WrongValue);
            }
        }
        (J::String(a), Value::String(b)) => {
            if a != b {
                wrong_value(findings, ReasonCode::WrongValue);
            }
        }
        (J::Number(a), Value::Number(b)) => {
            let a = Decimal::parse_json_number(&a.to_string());
            let b = Decimal::parse_json_number(b);
            match (a, b) {
                (Some(a), Some(b)) if a == b => {}
                (Some(a), Some(b)) => match b.power_of_ten_ratio(&a) {
                    Some(k) if k != 0 && (-3..=3).contains(&k) => {
                        wrong_value(findings, ReasonCode::FactorOfTen)
                    }
                    _ => wrong_value(findings, ReasonCode::WrongValue),
                },
                _ => wrong_value(findings, ReasonCode::WrongValue),
            }
        }
        (J::Object(inner), Value::Object(members)) => {
            compare_members(inner, members, path, findings)
        }
        (J::Array(wants), Value::Array(nodes)) => {
            for (i, w) in wants.iter().enumerate() {
                let p = format!("{path}[{i}]");
                match nodes.get(i) {
                    Some(n) => compare_value(w, n, &p, findings),
                    None => findings.add(
                        ReasonCode::MissingField,
                        Some(&p),
                        Some(w.to_string()),
                        None,
                        format!("element `{p}` is missing; expected {w}"),
                    ),
                }
            }
            for (i, n) in nodes.iter().enumerate().skip(wants.len()) {
                let p = format!("{path}[{i}]");
                findings.add(
                    ReasonCode::ExtraField,
                    Some(&p),
                    None,
                    Some(n.raw.to_owned()),
                    format!("element `{p}` is not part of the approved answer"),
                );
            }
        }
        (J::Null, _) => wrong_type(findings, "null"),
        (J::Bool(_), _) => wrong_type(findings, "boolean"),
        (J::String(_), _) => wrong_type(findings, "string"),
        (J::Number(_), _) => wrong_type(findings, "number"),
        (J::Object(_), _) => wrong_type(findings, "object"),
        (J::Array(_), _) => wrong_type(findings, "array"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(v: serde_json::Value) -> AnswerCheck {
        serde_json::from_value(v).unwrap()
    }

    fn said(text: &str) -> ResponseOutcome {
        ResponseOutcome::Completed { text: text.into() }
    }

    fn run(c: &AnswerCheck, text: &str) -> Verdict {
        judge(c, &said(text), ValidatorPolicy::default())
    }

    type Reasons = Vec<(ReasonCode, Option<String>)>;

    fn reasons(c: &AnswerCheck, text: &str) -> Reasons {
        run(c, text)
            .detail
            .into_iter()
            .map(|d| (d.reason, d.field))
            .collect()
    }

    #[test]
    fn a_number_is_within_its_tolerance_exactly_where_floats_would_round() {
        let c = check(json!({"kind": "number", "value": 0.3, "tolerance": 0.1}));
        assert!(c.problems().is_empty());
        // 0.4 − 0.3 is 0.10000000000000003 in binary floating point; exactly 0.1 here.
        for ok in [
            "0.4",
            "0.2",
            "0.3",
            " 0.30 ",
            "3e-1",
            "0.39999999999999999999",
        ] {
            assert!(run(&c, ok).accepted, "{ok}");
        }
        for (bad, reason) in [
            ("0.40000000000000001", ReasonCode::WrongValue),
            ("0.19999999999999999", ReasonCode::WrongValue),
            ("3", ReasonCode::FactorOfTen),
            ("0.03", ReasonCode::FactorOfTen),
            ("-0.3", ReasonCode::WrongValue),
        ] {
            let v = run(&c, bad);
            assert!(!v.accepted, "{bad}");
            assert_eq!(v.reasons, vec![reason], "{bad}");
        }
        // Not one number: prose, a string, a decimal comma, two numbers, a unit.
        for bad in [
            "about 0.3",
            "\"0.3\"",
            "0,3",
            "0.3 0.3",
            "0.3 N",
            ".3",
            "+0.3",
        ] {
            assert_eq!(run(&c, bad).reasons, vec![ReasonCode::Malformed], "{bad}");
        }
        let exact = check(json!({"kind": "number", "value": 12, "tolerance": 0}));
        assert!(run(&exact, "12.0").accepted);
        assert!(!run(&exact, "12.000000000000000001").accepted);
        let negative = check(json!({"kind": "number", "value": -5, "tolerance": 0.5}));
        assert!(run(&negative, "-4.5").accepted && run(&negative, "-5.5").accepted);
        assert!(!run(&negative, "-4.49").accepted && !run(&negative, "5").accepted);
    }

    #[test]
    fn a_check_that_cannot_judge_is_named_before_any_item_is_kept() {
        let paths = |v| -> Vec<String> { check(v).problems().into_iter().map(|p| p.0).collect() };
        assert_eq!(
            paths(json!({"kind": "regex", "pattern": "(a"})),
            ["check.pattern"]
        );
        assert_eq!(
            paths(json!({"kind": "number", "value": 1, "tolerance": -0.1})),
            ["check.tolerance"]
        );
        assert_eq!(
            paths(json!({"kind": "number", "value": 1e30, "tolerance": 1e-10})),
            ["check.value"]
        );
        assert_eq!(
            paths(json!({"kind": "json_fields", "expected": {}})),
            ["check.expected"]
        );
        assert_eq!(
            paths(json!({"kind": "exact_text", "text": " yes"})),
            ["check.text"]
        );
        assert_eq!(
            paths(json!({"kind": "exact_text", "text": ""})),
            ["check.text"]
        );
        assert!(serde_json::from_value::<AnswerCheck>(json!({"kind": "fuzzy"})).is_err());
        assert!(serde_json::from_value::<AnswerCheck>(
            json!({"kind": "regex", "pattern": "a", "flags": "i"})
        )
        .is_err());
    }

    #[test]
    fn exact_text_and_regex_judge_the_whole_response() {
        let c = check(json!({"kind": "exact_text", "text": "Clause 7.2"}));
        assert!(run(&c, "  Clause 7.2\n").accepted);
        for bad in [
            "clause 7.2",
            "Clause 7.2.",
            "Clause 7.2 applies",
            "Clause  7.2",
        ] {
            assert_eq!(run(&c, bad).reasons, vec![ReasonCode::WrongValue], "{bad}");
        }
        // Anchored: a pattern found inside a longer answer is not a match, and an alternation
        // cannot escape the anchors.
        let r = check(json!({"kind": "regex", "pattern": "yes|no"}));
        assert!(run(&r, "yes").accepted && run(&r, " no ").accepted);
        for bad in ["yes, and no", "not sure: no", "nope"] {
            assert_eq!(run(&r, bad).reasons, vec![ReasonCode::WrongValue], "{bad}");
        }
    }

    #[test]
    fn json_fields_are_compared_member_by_member_under_their_paths() {
        let c = check(json!({"kind": "json_fields", "expected": {
            "clause": "7.2", "amount": 1250.5, "final": true, "note": null,
            "parts": [{"sku": "A-1", "qty": 2}, {"sku": "B-7", "qty": 10}]
        }}));
        let good = r#"{"parts":[{"qty":2,"sku":"A-1"},{"sku":"B-7","qty":10.0}],"clause":"7.2","amount":1250.50,"final":true,"note":null}"#;
        let v = run(&c, good);
        assert!(v.accepted, "{:?}", v.detail);
        assert_eq!(v.extracted.as_ref().map(Vec::len), Some(5));
        let cases: [(&str, Reasons); 8] = [
            (
                r#"{"clause":"7.2","amount":12505,"final":true,"note":null,"parts":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":10}]}"#,
                vec![(ReasonCode::FactorOfTen, Some("amount".into()))],
            ),
            (
                r#"{"clause":7.2,"amount":1250.5,"final":true,"note":null,"parts":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":10}]}"#,
                vec![(ReasonCode::WrongType, Some("clause".into()))],
            ),
            (
                r#"{"clause":"7.2","amount":1250.5,"final":"true","note":null,"parts":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":10}]}"#,
                vec![(ReasonCode::WrongType, Some("final".into()))],
            ),
            (
                r#"{"clause":"7.2","amount":1250.5,"final":true,"parts":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":11}]}"#,
                vec![
                    (ReasonCode::MissingField, Some("note".into())),
                    (ReasonCode::WrongValue, Some("parts[1].qty".into())),
                ],
            ),
            (
                r#"{"clause":"7.2","amount":1250.5,"final":true,"note":null,"parts":[{"sku":"A-1","qty":2}]}"#,
                vec![(ReasonCode::MissingField, Some("parts[1]".into()))],
            ),
            (
                r#"{"clause":"7.2","amount":1250.5,"final":true,"note":null,"parts":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":10}],"clause":"7.3"}"#,
                vec![(ReasonCode::Malformed, Some("clause".into()))],
            ),
            (
                r#"{"clause":"7.2","amount":1250.5,"final":true,"note":null,"parts":[{"sku":"A-1","qty":2,"lot":"x"},{"sku":"B-7","qty":10}],"extra":1}"#,
                vec![
                    (ReasonCode::ExtraField, Some("parts[0].lot".into())),
                    (ReasonCode::ExtraField, Some("extra".into())),
                ],
            ),
            (
                r#"{"error":"not_found"}"#,
                vec![(ReasonCode::UnexpectedRefusal, Some("error".into()))],
            ),
        ];
        for (text, want) in cases {
            let mut got = reasons(&c, text);
            let mut want = want;
            got.sort();
            want.sort();
            assert_eq!(got, want, "{text}");
        }
        assert_eq!(
            run(&c, "The clause is 7.2").reasons,
            vec![ReasonCode::Malformed]
        );
        assert_eq!(run(&c, "[1]").reasons, vec![ReasonCode::Malformed]);
        // A code fence is read as the validator reads one: refused unless the policy allows it.
        let fenced = format!("```json\n{good}\n```");
        let v = run(&c, &fenced);
        assert_eq!((v.accepted, v.fenced), (false, true));
        assert_eq!(v.reasons, vec![ReasonCode::Malformed]);
        let allowed = judge(
            &c,
            &said(&fenced),
            ValidatorPolicy {
                allow_code_fence: true,
            },
        );
        assert!(allowed.accepted && allowed.fenced, "{:?}", allowed.detail);
    }

    #[test]
    fn failures_stay_rejected_under_every_check_and_the_refusal_is_the_validators() {
        let checks = [
            check(json!({"kind": "exact_text", "text": "x"})),
            check(json!({"kind": "regex", "pattern": ".*"})),
            check(json!({"kind": "number", "value": 1, "tolerance": 1})),
            check(json!({"kind": "json_fields", "expected": {"a": 1}})),
            check(json!({"kind": "refusal"})),
        ];
        for c in &checks {
            for (outcome, reason) in [
                (ResponseOutcome::Timeout, ReasonCode::Timeout),
                (
                    ResponseOutcome::Error {
                        message: "503".into(),
                    },
                    ReasonCode::Error,
                ),
                (ResponseOutcome::Empty, ReasonCode::Malformed),
                (said("  \n"), ReasonCode::Malformed),
            ] {
                let v = judge(c, &outcome, ValidatorPolicy::default());
                assert_eq!(v.reasons, vec![reason], "{} {outcome:?}", c.kind());
            }
        }
        // `.*` matches anything, but not an empty output.
        let refusal = &checks[4];
        assert!(run(refusal, r#"{"error": "not_found"}"#).accepted);
        assert_eq!(
            run(refusal, r#"{"answer": "7.2"}"#).reasons,
            vec![ReasonCode::InventedValue]
        );
    }
}
