//! The validator: turns one response to a fixture item into a [`Verdict`].
//!
//! A response is accepted only if it is exactly one JSON object (surrounding whitespace allowed)
//! equal to the item's expected answer: the same keys, no more and no fewer, strings equal, and
//! `nominal_torque` a JSON number equal to the expected decimal, compared exactly as decimals
//! (12.5 == 12.50, 12.5 != 12.500000001). For an absent asset the only accepted answer is the
//! refusal `{"error": "not_found"}`. Items that ask for several records (several assets, or every
//! revision of one) expect `{"answers": [...]}`: one object with only that key, an array of
//! exactly the expected answers in the order asked, each compared by the same rules under the
//! path `answers[i]`. Timeouts, transport errors and empty outputs are verdicts
//! too, so they stay in every denominator. A rejected verdict lists every reason that applies.

mod checks;
mod decimal;
mod json;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use checks::{
    judge, AnswerCheck, ExactTextCheck, JsonFieldsCheck, NumberCheck, RefusalCheck, RegexCheck,
};
pub use decimal::Decimal;
use json::{Node, Value};

/// The keys of an extraction answer, in the order they are written.
pub const ANSWER_FIELDS: [&str; 4] = ["asset", "revision", "nominal_torque", "unit"];
/// The key of a list answer's array.
pub const ANSWERS_FIELD: &str = "answers";
/// The key of the refusal object.
pub const REFUSAL_FIELD: &str = "error";
/// The value of the refusal object's `error` key.
pub const REFUSAL_CODE: &str = "not_found";

/// The approved answer when the asked asset is in the context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractionAnswer {
    pub asset: String,
    pub revision: String,
    /// Written into JSON as a number, never as a string.
    #[ts(type = "number")]
    pub nominal_torque: Decimal,
    /// Exactly as written in the evidence record: no unit conversion is asked for.
    pub unit: String,
}

/// The only code a refusal may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RefusalCode {
    NotFound,
}

/// The approved answer when the asked asset is absent from the context: `{"error": "not_found"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Refusal {
    pub error: RefusalCode,
}

/// The approved answer of an item asking for several records: `{"answers": [...]}`, in the
/// order the question asks for them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerList {
    pub answers: Vec<ExtractionAnswer>,
}

/// The approved answer of a fixture item, serialised as the very JSON object a model must give.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(untagged)]
pub enum ExpectedAnswer {
    Answer(ExtractionAnswer),
    Refusal(Refusal),
    Answers(AnswerList),
}

impl ExpectedAnswer {
    pub fn answer(asset: &str, revision: &str, nominal_torque: Decimal, unit: &str) -> Self {
        ExpectedAnswer::Answer(ExtractionAnswer {
            asset: asset.to_owned(),
            revision: revision.to_owned(),
            nominal_torque,
            unit: unit.to_owned(),
        })
    }

    pub fn refusal() -> Self {
        ExpectedAnswer::Refusal(Refusal {
            error: RefusalCode::NotFound,
        })
    }

    /// Whether the JSON form keeps `nominal_torque` exact (serde writes it through an `f64`).
    pub fn serializes_exactly(&self) -> bool {
        match self {
            ExpectedAnswer::Answer(answer) => answer.nominal_torque.round_trips_through_f64(),
            ExpectedAnswer::Refusal(_) => true,
            ExpectedAnswer::Answers(list) => list
                .answers
                .iter()
                .all(|a| a.nominal_torque.round_trips_through_f64()),
        }
    }

    /// The extraction answers it holds: one, several, or none for the refusal.
    pub fn answers(&self) -> &[ExtractionAnswer] {
        match self {
            ExpectedAnswer::Answer(answer) => std::slice::from_ref(answer),
            ExpectedAnswer::Refusal(_) => &[],
            ExpectedAnswer::Answers(list) => &list.answers,
        }
    }
}

/// How strict the validator is about the wrapping of the object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ValidatorPolicy {
    /// Accept one markdown code fence (```` ``` ```` or ```` ```json ````) around the object.
    pub allow_code_fence: bool,
}

/// What came back for one request. Every outcome gets a verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ResponseOutcome {
    /// The response finished; `text` is the complete output.
    Completed { text: String },
    /// No complete response before the deadline.
    Timeout,
    /// The request failed (transport or server error).
    Error { message: String },
    /// The response finished without any output.
    Empty,
}

/// Why a response was rejected. A verdict lists every code that applies, in this order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ReasonCode {
    /// Not exactly one JSON object (prose, two objects, a disallowed fence, empty output).
    Malformed,
    MissingField,
    ExtraField,
    /// A field of the wrong JSON type, e.g. the number written as a string.
    WrongType,
    WrongAsset,
    WrongRevision,
    /// `nominal_torque` equals the expected value × 10^k for k in ±1..±3.
    FactorOfTen,
    WrongValue,
    WrongUnit,
    /// Any answer other than the refusal when the asked asset is absent.
    InventedValue,
    /// The refusal when the asked asset is present.
    UnexpectedRefusal,
    Timeout,
    Error,
    /// An evaluation harness scored the answer 0 (its metric, not KV Gate's validator).
    HarnessScore,
}

impl ReasonCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::Malformed => "malformed",
            ReasonCode::MissingField => "missing_field",
            ReasonCode::ExtraField => "extra_field",
            ReasonCode::WrongType => "wrong_type",
            ReasonCode::WrongAsset => "wrong_asset",
            ReasonCode::WrongRevision => "wrong_revision",
            ReasonCode::FactorOfTen => "factor_of_ten",
            ReasonCode::WrongValue => "wrong_value",
            ReasonCode::WrongUnit => "wrong_unit",
            ReasonCode::InventedValue => "invented_value",
            ReasonCode::UnexpectedRefusal => "unexpected_refusal",
            ReasonCode::Timeout => "timeout",
            ReasonCode::Error => "error",
            ReasonCode::HarnessScore => "harness_score",
        }
    }
}

/// The JSON type of an extracted field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JsonKind {
    String,
    Number,
    Boolean,
    Null,
    Object,
    Array,
}

/// One member of the response object, for the reviewer's field-by-field diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ExtractedField {
    pub key: String,
    pub kind: JsonKind,
    /// The JSON text of the value exactly as the model wrote it (`12.50`, `"N.m"`).
    pub json: String,
}

/// One reason, said for people: which field, what was expected, what was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ReasonDetail {
    pub reason: ReasonCode,
    pub field: Option<String>,
    /// JSON text of the expected value, where one applies.
    pub expected: Option<String>,
    /// JSON text of what the response held, where one applies.
    pub found: Option<String>,
    pub text: String,
}

/// The validator's result for one response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct Verdict {
    pub accepted: bool,
    /// Every reason that applies, sorted and without repeats; empty exactly when accepted.
    pub reasons: Vec<ReasonCode>,
    /// The object was wrapped in a markdown code fence (allowed or not).
    pub fenced: bool,
    /// The members of the response object, in the order written; absent when no object was read.
    pub extracted: Option<Vec<ExtractedField>>,
    pub detail: Vec<ReasonDetail>,
}

/// Validates one outcome against the expected answer of its fixture item.
pub fn validate(
    expected: &ExpectedAnswer,
    outcome: &ResponseOutcome,
    policy: ValidatorPolicy,
) -> Verdict {
    let mut findings = Findings::default();
    let mut fenced = false;
    let mut extracted = None;
    match outcome {
        ResponseOutcome::Timeout => findings.add(
            ReasonCode::Timeout,
            None,
            None,
            None,
            "no complete response before the deadline".into(),
        ),
        ResponseOutcome::Error { message } => findings.add(
            ReasonCode::Error,
            None,
            None,
            Some(message.clone()),
            format!("the request failed: {message}"),
        ),
        ResponseOutcome::Empty => findings.empty_output(),
        ResponseOutcome::Completed { text } if text.trim().is_empty() => findings.empty_output(),
        ResponseOutcome::Completed { text } => {
            let (body, is_fenced) = unfence(text, policy, &mut findings);
            fenced = is_fenced;
            if let Some(members) = read_object(body, &mut findings) {
                extracted = Some(extracted_fields(&members));
                compare_object(expected, &members, &mut findings);
            }
        }
    }
    findings.into_verdict(fenced, extracted)
}

#[derive(Default)]
struct Findings {
    detail: Vec<ReasonDetail>,
}

impl Findings {
    fn add(
        &mut self,
        reason: ReasonCode,
        field: Option<&str>,
        expected: Option<String>,
        found: Option<String>,
        text: String,
    ) {
        self.detail.push(ReasonDetail {
            reason,
            field: field.map(str::to_owned),
            expected,
            found,
            text,
        });
    }

    fn empty_output(&mut self) {
        self.add(
            ReasonCode::Malformed,
            None,
            Some("one JSON object".into()),
            Some(String::new()),
            "the response was empty".into(),
        );
    }

    fn into_verdict(self, fenced: bool, extracted: Option<Vec<ExtractedField>>) -> Verdict {
        let mut reasons: Vec<ReasonCode> = self.detail.iter().map(|d| d.reason).collect();
        reasons.sort();
        reasons.dedup();
        Verdict {
            accepted: reasons.is_empty(),
            reasons,
            fenced,
            extracted,
            detail: self.detail,
        }
    }
}

/// The trimmed text, or the inside of its code fence (said a finding unless the policy allows
/// it), and whether it was fenced.
fn unfence<'a>(text: &'a str, policy: ValidatorPolicy, findings: &mut Findings) -> (&'a str, bool) {
    let body = text.trim();
    let Some(inner) = strip_code_fence(body) else {
        return (body, false);
    };
    if !policy.allow_code_fence {
        findings.add(
            ReasonCode::Malformed,
            None,
            None,
            None,
            "the object is wrapped in a markdown code fence, which the policy does not allow"
                .into(),
        );
    }
    (inner, true)
}

/// The members of `body` when it is exactly one JSON object; otherwise the finding that says
/// what it is instead.
fn read_object<'a>(body: &'a str, findings: &mut Findings) -> Option<Vec<(String, Node<'a>)>> {
    match json::parse_single(body) {
        Ok(Node {
            value: Value::Object(members),
            ..
        }) => Some(members),
        Ok(node) => {
            findings.add(
                ReasonCode::Malformed,
                None,
                Some("one JSON object".into()),
                Some(excerpt(node.raw)),
                format!(
                    "expected exactly one JSON object, found a JSON {}",
                    kind_name(kind_of(&node.value))
                ),
            );
            None
        }
        Err(err) => {
            findings.add(
                ReasonCode::Malformed,
                None,
                Some("one JSON object".into()),
                Some(excerpt(body)),
                format!(
                    "expected exactly one JSON object, found text that is not: {} at byte {}",
                    err.message, err.offset
                ),
            );
            None
        }
    }
}

/// The JSON path (`$.labels.language`) of the first key written twice in one object of `text`,
/// when `text` is one JSON value; serde keeps the last of two keys without a word, so readers
/// of files ask this first.
pub(crate) fn repeated_key_path(text: &str) -> Option<String> {
    fn walk(node: &Node<'_>, path: &str) -> Option<String> {
        match &node.value {
            Value::Object(members) => {
                let mut seen = std::collections::BTreeSet::new();
                for (key, child) in members {
                    let here = format!("{path}.{key}");
                    if !seen.insert(key.as_str()) {
                        return Some(here);
                    }
                    if let Some(p) = walk(child, &here) {
                        return Some(p);
                    }
                }
                None
            }
            Value::Array(elements) => elements
                .iter()
                .enumerate()
                .find_map(|(i, child)| walk(child, &format!("{path}[{i}]"))),
            _ => None,
        }
    }
    walk(&json::parse_single(text).ok()?, "$")
}

/// The inside of one ```` ``` ```` or ```` ```json ```` fence spanning the whole (trimmed) text.
fn strip_code_fence(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("```")?;
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    let inner = rest.strip_suffix("```")?;
    // Only whitespace may follow the language tag on the opening line; a second fence is not one.
    let starts_cleanly = inner.starts_with(char::is_whitespace) || inner.starts_with('{');
    (starts_cleanly && !inner.contains("```")).then_some(inner.trim())
}

fn compare_object(
    expected: &ExpectedAnswer,
    members: &[(String, Node<'_>)],
    findings: &mut Findings,
) {
    let mut by_key: BTreeMap<&str, &Node<'_>> = BTreeMap::new();
    for (key, node) in members {
        // The first occurrence is compared; the repeat itself makes the response malformed.
        if by_key.contains_key(key.as_str()) {
            findings.add(
                ReasonCode::Malformed,
                Some(key),
                None,
                Some(node.raw.to_owned()),
                format!("field `{key}` appears more than once"),
            );
        } else {
            by_key.insert(key.as_str(), node);
        }
    }
    let answer_keys_present: Vec<&str> = ANSWER_FIELDS
        .iter()
        .chain(&[ANSWERS_FIELD])
        .copied()
        .filter(|k| by_key.contains_key(k))
        .collect();
    let has_refusal_key = by_key.contains_key(REFUSAL_FIELD);
    match expected {
        ExpectedAnswer::Refusal(_) => compare_with_refusal(&by_key, &answer_keys_present, findings),
        // Shape mismatches get one code: field-level codes would only restate it.
        ExpectedAnswer::Answer(_) if has_refusal_key && answer_keys_present.is_empty() => {
            findings.add(
                ReasonCode::UnexpectedRefusal,
                Some(REFUSAL_FIELD),
                Some("the answer object".into()),
                Some(by_key[REFUSAL_FIELD].raw.to_owned()),
                "expected the answer for an asset that is in the context, found a refusal".into(),
            );
        }
        ExpectedAnswer::Answer(answer) => compare_with_answer(answer, &by_key, "", findings),
        ExpectedAnswer::Answers(_) if has_refusal_key && answer_keys_present.is_empty() => {
            findings.add(
                ReasonCode::UnexpectedRefusal,
                Some(REFUSAL_FIELD),
                Some("the answers object".into()),
                Some(by_key[REFUSAL_FIELD].raw.to_owned()),
                "expected the answers for records that are in the context, found a refusal".into(),
            );
        }
        ExpectedAnswer::Answers(list) => compare_with_answers(&list.answers, &by_key, findings),
    }
}

fn compare_with_answers(
    answers: &[ExtractionAnswer],
    by_key: &BTreeMap<&str, &Node<'_>>,
    findings: &mut Findings,
) {
    for (key, node) in by_key {
        if *key != ANSWERS_FIELD {
            findings.add(
                ReasonCode::ExtraField,
                Some(key),
                None,
                Some(node.raw.to_owned()),
                format!("field `{key}` is not part of the answers object"),
            );
        }
    }
    let expected_list =
        || serde_json::to_string(answers).unwrap_or_else(|_| format!("{} objects", answers.len()));
    let Some(node) = by_key.get(ANSWERS_FIELD) else {
        findings.add(
            ReasonCode::MissingField,
            Some(ANSWERS_FIELD),
            Some(expected_list()),
            None,
            format!(
                "field `{ANSWERS_FIELD}` is missing (expected an array of {} answer objects)",
                answers.len()
            ),
        );
        return;
    };
    let Value::Array(elements) = &node.value else {
        findings.add(
            ReasonCode::WrongType,
            Some(ANSWERS_FIELD),
            Some(expected_list()),
            Some(node.raw.to_owned()),
            format!(
                "field `{ANSWERS_FIELD}`: expected an array of {} answer objects, found a {} {}",
                answers.len(),
                kind_name(kind_of(&node.value)),
                excerpt(node.raw)
            ),
        );
        return;
    };
    for (i, want) in answers.iter().enumerate() {
        let path = format!("{ANSWERS_FIELD}[{i}]");
        let Some(element) = elements.get(i) else {
            let want_json = serde_json::to_string(want).unwrap_or_default();
            findings.add(
                ReasonCode::MissingField,
                Some(&path),
                Some(want_json.clone()),
                None,
                format!("`{path}` is missing (expected {want_json})"),
            );
            continue;
        };
        let Value::Object(members) = &element.value else {
            findings.add(
                ReasonCode::WrongType,
                Some(&path),
                Some("an answer object".into()),
                Some(element.raw.to_owned()),
                format!(
                    "`{path}`: expected an answer object, found a {} {}",
                    kind_name(kind_of(&element.value)),
                    excerpt(element.raw)
                ),
            );
            continue;
        };
        let mut inner: BTreeMap<&str, &Node<'_>> = BTreeMap::new();
        for (key, value) in members {
            if inner.contains_key(key.as_str()) {
                findings.add(
                    ReasonCode::Malformed,
                    Some(&format!("{path}.{key}")),
                    None,
                    Some(value.raw.to_owned()),
                    format!("field `{path}.{key}` appears more than once"),
                );
            } else {
                inner.insert(key.as_str(), value);
            }
        }
        compare_with_answer(want, &inner, &format!("{path}."), findings);
    }
    for (i, element) in elements.iter().enumerate().skip(answers.len()) {
        let path = format!("{ANSWERS_FIELD}[{i}]");
        findings.add(
            ReasonCode::ExtraField,
            Some(&path),
            None,
            Some(element.raw.to_owned()),
            format!(
                "`{path}` is one answer more than the {} expected",
                answers.len()
            ),
        );
    }
}

fn compare_with_refusal(
    by_key: &BTreeMap<&str, &Node<'_>>,
    answer_keys_present: &[&str],
    findings: &mut Findings,
) {
    let refusal_json = format!("{{\"{REFUSAL_FIELD}\": \"{REFUSAL_CODE}\"}}");
    let Some(error_node) = by_key.get(REFUSAL_FIELD) else {
        let found = answer_keys_present
            .iter()
            .map(|k| format!("`{k}` = {}", by_key[k].raw))
            .collect::<Vec<_>>()
            .join(", ");
        findings.add(
            ReasonCode::InventedValue,
            None,
            Some(refusal_json),
            Some(if found.is_empty() {
                "an object without `error`".into()
            } else {
                found.clone()
            }),
            format!(
                "the asked asset is not in the context, so the only correct answer is the refusal; found an answer instead{}",
                if found.is_empty() { String::new() } else { format!(" ({found})") }
            ),
        );
        return;
    };
    match &error_node.value {
        Value::String(code) if code == REFUSAL_CODE => {}
        Value::String(_) => findings.add(
            ReasonCode::WrongValue,
            Some(REFUSAL_FIELD),
            Some(format!("\"{REFUSAL_CODE}\"")),
            Some(error_node.raw.to_owned()),
            format!(
                "field `error`: expected \"{REFUSAL_CODE}\", found {}",
                error_node.raw
            ),
        ),
        other => findings.add(
            ReasonCode::WrongType,
            Some(REFUSAL_FIELD),
            Some(format!("\"{REFUSAL_CODE}\"")),
            Some(error_node.raw.to_owned()),
            format!(
                "field `error`: expected a string, found a {}",
                kind_name(kind_of(other))
            ),
        ),
    }
    for (key, node) in by_key {
        if *key == REFUSAL_FIELD {
            continue;
        }
        findings.add(
            ReasonCode::ExtraField,
            Some(key),
            None,
            Some(node.raw.to_owned()),
            format!("field `{key}` is not part of the refusal object"),
        );
    }
    if !answer_keys_present.is_empty() {
        findings.add(
            ReasonCode::InventedValue,
            None,
            Some(refusal_json),
            Some(answer_keys_present.join(", ")),
            format!(
                "the asked asset is not in the context, yet the refusal carries answer fields: {}",
                answer_keys_present.join(", ")
            ),
        );
    }
}

/// Compares one answer object; `prefix` (`""`, or `answers[i].` inside a list) leads every
/// field name said.
fn compare_with_answer(
    answer: &ExtractionAnswer,
    by_key: &BTreeMap<&str, &Node<'_>>,
    prefix: &str,
    findings: &mut Findings,
) {
    for key in ANSWER_FIELDS {
        if !by_key.contains_key(key) {
            let field = format!("{prefix}{key}");
            findings.add(
                ReasonCode::MissingField,
                Some(&field),
                Some(expected_json(answer, key)),
                None,
                format!(
                    "field `{field}` is missing (expected {})",
                    expected_json(answer, key)
                ),
            );
        }
    }
    for (key, node) in by_key {
        if !ANSWER_FIELDS.contains(key) {
            let field = format!("{prefix}{key}");
            findings.add(
                ReasonCode::ExtraField,
                Some(&field),
                None,
                Some(node.raw.to_owned()),
                format!("field `{field}` is not part of the answer object"),
            );
        }
    }
    let string_fields = [
        ("asset", answer.asset.as_str(), ReasonCode::WrongAsset),
        (
            "revision",
            answer.revision.as_str(),
            ReasonCode::WrongRevision,
        ),
        ("unit", answer.unit.as_str(), ReasonCode::WrongUnit),
    ];
    for (name, want, wrong) in string_fields {
        let Some(node) = by_key.get(name) else {
            continue;
        };
        let key = format!("{prefix}{name}");
        let key = key.as_str();
        let want_json = json_string(want);
        match &node.value {
            Value::String(found) if found == want => {}
            Value::String(_) => findings.add(
                wrong,
                Some(key),
                Some(want_json.clone()),
                Some(node.raw.to_owned()),
                format!("field `{key}`: expected {want_json}, found {}", node.raw),
            ),
            other => findings.add(
                ReasonCode::WrongType,
                Some(key),
                Some(want_json.clone()),
                Some(node.raw.to_owned()),
                format!(
                    "field `{key}`: expected the string {want_json}, found a {} {}",
                    kind_name(kind_of(other)),
                    node.raw
                ),
            ),
        }
    }
    if let Some(node) = by_key.get("nominal_torque") {
        compare_torque(&answer.nominal_torque, node, prefix, findings);
    }
}

fn compare_torque(want: &Decimal, node: &Node<'_>, prefix: &str, findings: &mut Findings) {
    let key = format!("{prefix}nominal_torque");
    let key = key.as_str();
    let found = match &node.value {
        Value::Number(text) => Decimal::parse_json_number(text),
        other => {
            findings.add(
                ReasonCode::WrongType,
                Some(key),
                Some(want.to_string()),
                Some(node.raw.to_owned()),
                format!(
                    "field `{key}`: expected the JSON number {want}, found a {} {}",
                    kind_name(kind_of(other)),
                    node.raw
                ),
            );
            // A number written as a string still shows whether its value was right.
            match other {
                Value::String(s) => Decimal::parse_json_number(s.trim()),
                _ => None,
            }
        }
    };
    let Some(found) = found else {
        return;
    };
    if &found == want {
        return;
    }
    match found.power_of_ten_ratio(want) {
        Some(k) if k != 0 && (-3..=3).contains(&k) => findings.add(
            ReasonCode::FactorOfTen,
            Some(key),
            Some(want.to_string()),
            Some(node.raw.to_owned()),
            format!(
                "field `{key}`: expected {want}, found {} (10^{k} times the expected value)",
                node.raw
            ),
        ),
        _ => findings.add(
            ReasonCode::WrongValue,
            Some(key),
            Some(want.to_string()),
            Some(node.raw.to_owned()),
            format!("field `{key}`: expected {want}, found {}", node.raw),
        ),
    }
}

fn expected_json(answer: &ExtractionAnswer, key: &str) -> String {
    match key {
        "asset" => json_string(&answer.asset),
        "revision" => json_string(&answer.revision),
        "unit" => json_string(&answer.unit),
        _ => answer.nominal_torque.to_string(),
    }
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

fn kind_of(value: &Value<'_>) -> JsonKind {
    match value {
        Value::Object(_) => JsonKind::Object,
        Value::Array(_) => JsonKind::Array,
        Value::String(_) => JsonKind::String,
        Value::Number(_) => JsonKind::Number,
        Value::Bool(_) => JsonKind::Boolean,
        Value::Null => JsonKind::Null,
    }
}

fn kind_name(kind: JsonKind) -> &'static str {
    match kind {
        JsonKind::String => "string",
        JsonKind::Number => "number",
        JsonKind::Boolean => "boolean",
        JsonKind::Null => "null",
        JsonKind::Object => "object",
        JsonKind::Array => "array",
    }
}

/// The members of the response object for the reviewer's diff. A list answer's array of objects
/// is shown member by member (`answers[1].unit`), so each value is compared on its own.
fn extracted_fields(members: &[(String, Node<'_>)]) -> Vec<ExtractedField> {
    let field = |key: String, node: &Node<'_>| ExtractedField {
        key,
        kind: kind_of(&node.value),
        json: node.raw.to_owned(),
    };
    let mut out = Vec::new();
    for (key, node) in members {
        match &node.value {
            Value::Array(elements) if key == ANSWERS_FIELD && !elements.is_empty() => {
                for (i, element) in elements.iter().enumerate() {
                    match &element.value {
                        Value::Object(inner) => out.extend(
                            inner
                                .iter()
                                .map(|(k, n)| field(format!("{key}[{i}].{k}"), n)),
                        ),
                        _ => out.push(field(format!("{key}[{i}]"), element)),
                    }
                }
            }
            _ => out.push(field(key.clone(), node)),
        }
    }
    out
}

/// The start of a long text, so a detail line stays readable.
fn excerpt(text: &str) -> String {
    const LIMIT: usize = 200;
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests;
