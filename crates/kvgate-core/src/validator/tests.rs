//! The guide's validator self-test: the correct tuple AX-104, B, 12.5, N.m is accepted and each
//! injected error is rejected with its reason.

use super::*;

const STRICT: ValidatorPolicy = ValidatorPolicy {
    allow_code_fence: false,
};
const FENCES_ALLOWED: ValidatorPolicy = ValidatorPolicy {
    allow_code_fence: true,
};
const CORRECT: &str =
    r#"{"asset": "AX-104", "revision": "B", "nominal_torque": 12.5, "unit": "N.m"}"#;

fn seed_answer() -> ExpectedAnswer {
    ExpectedAnswer::answer(
        "AX-104",
        "B",
        Decimal::parse_json_number("12.5").unwrap(),
        "N.m",
    )
}

fn check(expected: &ExpectedAnswer, text: &str) -> Verdict {
    validate(
        expected,
        &ResponseOutcome::Completed { text: text.into() },
        STRICT,
    )
}

fn reasons(expected: &ExpectedAnswer, text: &str) -> Vec<ReasonCode> {
    check(expected, text).reasons
}

#[test]
fn accepts_the_correct_tuple() {
    let verdict = check(&seed_answer(), CORRECT);
    assert!(verdict.accepted, "{verdict:?}");
    assert!(verdict.reasons.is_empty() && verdict.detail.is_empty());
    assert!(!verdict.fenced);
    let extracted = verdict.extracted.unwrap();
    let keys: Vec<&str> = extracted.iter().map(|f| f.key.as_str()).collect();
    assert_eq!(keys, ANSWER_FIELDS);
    assert_eq!(extracted[2].kind, JsonKind::Number);
    assert_eq!(extracted[2].json, "12.5");
}

#[test]
fn accepts_equal_decimals_key_order_and_surrounding_whitespace() {
    for text in [
        r#"{"asset":"AX-104","revision":"B","nominal_torque":12.50,"unit":"N.m"}"#,
        r#"  {"unit": "N.m", "nominal_torque": 1.25e1, "revision": "B", "asset": "AX-104"}  "#,
        "\n\t{\"asset\": \"AX-104\", \"revision\": \"B\", \"nominal_torque\": 125E-1, \"unit\": \"N.m\"}\n",
    ] {
        assert!(check(&seed_answer(), text).accepted, "{text}");
    }
}

#[test]
fn rejects_a_wrong_revision() {
    let verdict = check(
        &seed_answer(),
        r#"{"asset": "AX-104", "revision": "A", "nominal_torque": 12.5, "unit": "N.m"}"#,
    );
    assert_eq!(verdict.reasons, vec![ReasonCode::WrongRevision]);
    let d = &verdict.detail[0];
    assert_eq!(d.field.as_deref(), Some("revision"));
    assert_eq!(d.expected.as_deref(), Some("\"B\""));
    assert_eq!(d.found.as_deref(), Some("\"A\""));
    assert!(
        d.text.contains("revision") && d.text.contains("\"B\"") && d.text.contains("\"A\""),
        "{}",
        d.text
    );
}

#[test]
fn rejects_factor_of_ten_errors_both_ways() {
    for (value, k) in [
        ("125", "10^1"),
        ("1.25", "10^-1"),
        ("12500", "10^3"),
        ("0.0125", "10^-3"),
    ] {
        let text = format!(
            r#"{{"asset": "AX-104", "revision": "B", "nominal_torque": {value}, "unit": "N.m"}}"#
        );
        let verdict = check(&seed_answer(), &text);
        assert_eq!(verdict.reasons, vec![ReasonCode::FactorOfTen], "{value}");
        assert!(
            verdict.detail[0].text.contains(k),
            "{}",
            verdict.detail[0].text
        );
    }
}

#[test]
fn other_values_are_wrong_values_not_factor_of_ten() {
    for value in [
        "125000",
        "0.00125",
        "12.500000001",
        "12.50000000000000000001",
        "-12.5",
        "13",
    ] {
        let text = format!(
            r#"{{"asset": "AX-104", "revision": "B", "nominal_torque": {value}, "unit": "N.m"}}"#
        );
        assert_eq!(
            reasons(&seed_answer(), &text),
            vec![ReasonCode::WrongValue],
            "{value}"
        );
    }
}

#[test]
fn rejects_a_wrong_unit_and_a_wrong_asset() {
    assert_eq!(
        reasons(
            &seed_answer(),
            r#"{"asset": "AX-104", "revision": "B", "nominal_torque": 12.5, "unit": "Nm"}"#
        ),
        vec![ReasonCode::WrongUnit]
    );
    assert_eq!(
        reasons(
            &seed_answer(),
            r#"{"asset": "AX-140", "revision": "B", "nominal_torque": 125, "unit": "kN.m"}"#
        ),
        vec![
            ReasonCode::WrongAsset,
            ReasonCode::FactorOfTen,
            ReasonCode::WrongUnit
        ]
    );
}

#[test]
fn rejects_a_missing_field() {
    let verdict = check(
        &seed_answer(),
        r#"{"asset": "AX-104", "revision": "B", "nominal_torque": 12.5}"#,
    );
    assert_eq!(verdict.reasons, vec![ReasonCode::MissingField]);
    assert_eq!(verdict.detail[0].field.as_deref(), Some("unit"));
    assert_eq!(verdict.detail[0].expected.as_deref(), Some("\"N.m\""));
}

#[test]
fn rejects_an_additional_field() {
    let verdict = check(
        &seed_answer(),
        r#"{"asset": "AX-104", "revision": "B", "nominal_torque": 12.5, "unit": "N.m", "confidence": 0.9}"#,
    );
    assert_eq!(verdict.reasons, vec![ReasonCode::ExtraField]);
    assert_eq!(verdict.detail[0].field.as_deref(), Some("confidence"));
    assert_eq!(verdict.detail[0].found.as_deref(), Some("0.9"));
}

#[test]
fn rejects_the_number_as_a_string_and_still_compares_its_value() {
    assert_eq!(
        reasons(
            &seed_answer(),
            r#"{"asset": "AX-104", "revision": "B", "nominal_torque": "12.5", "unit": "N.m"}"#
        ),
        vec![ReasonCode::WrongType]
    );
    assert_eq!(
        reasons(
            &seed_answer(),
            r#"{"asset": "AX-104", "revision": "B", "nominal_torque": "125", "unit": "N.m"}"#
        ),
        vec![ReasonCode::WrongType, ReasonCode::FactorOfTen]
    );
    assert_eq!(
        reasons(
            &seed_answer(),
            r#"{"asset": "AX-104", "revision": "B", "nominal_torque": "12,5", "unit": "N.m"}"#
        ),
        vec![ReasonCode::WrongType]
    );
    assert_eq!(
        reasons(
            &seed_answer(),
            r#"{"asset": "AX-104", "revision": 2, "nominal_torque": null, "unit": "N.m"}"#
        ),
        vec![ReasonCode::WrongType]
    );
}

#[test]
fn prose_around_the_json_is_malformed() {
    for text in [
        format!("Here is the record: {CORRECT}"),
        format!("{CORRECT}\nI hope this helps."),
        "The nominal torque of AX-104 is 12.5 N.m.".to_owned(),
    ] {
        let verdict = check(&seed_answer(), &text);
        assert_eq!(verdict.reasons, vec![ReasonCode::Malformed], "{text}");
        assert_eq!(verdict.extracted, None);
    }
}

#[test]
fn two_objects_are_malformed() {
    let verdict = check(&seed_answer(), &format!("{CORRECT}\n{CORRECT}"));
    assert_eq!(verdict.reasons, vec![ReasonCode::Malformed]);
    assert!(verdict.detail[0].text.contains("after the JSON value"));
}

#[test]
fn an_array_or_a_duplicate_key_is_malformed() {
    assert_eq!(
        reasons(&seed_answer(), &format!("[{CORRECT}]")),
        vec![ReasonCode::Malformed]
    );
    let verdict = check(
        &seed_answer(),
        r#"{"asset": "AX-104", "asset": "AX-140", "revision": "B", "nominal_torque": 12.5, "unit": "N.m"}"#,
    );
    assert_eq!(verdict.reasons, vec![ReasonCode::Malformed]);
    assert_eq!(verdict.detail[0].field.as_deref(), Some("asset"));
    assert_eq!(verdict.extracted.unwrap().len(), 5, "both duplicates shown");
}

#[test]
fn a_fence_needs_the_policy_switch() {
    for text in [
        format!("```json\n{CORRECT}\n```"),
        format!("```\n{CORRECT}\n```"),
        format!("  ```json {CORRECT} ```\n"),
    ] {
        let strict = validate(
            &seed_answer(),
            &ResponseOutcome::Completed { text: text.clone() },
            STRICT,
        );
        assert!(!strict.accepted);
        assert_eq!(strict.reasons, vec![ReasonCode::Malformed], "{text}");
        assert!(strict.fenced);
        assert!(strict.detail[0].text.contains("code fence"));
        assert_eq!(strict.extracted.as_ref().map(Vec::len), Some(4));

        let allowed = validate(
            &seed_answer(),
            &ResponseOutcome::Completed { text: text.clone() },
            FENCES_ALLOWED,
        );
        assert!(allowed.accepted, "{text}: {allowed:?}");
        assert!(allowed.fenced);
    }
}

#[test]
fn only_one_plain_or_json_fence_counts_as_a_fence() {
    for text in [
        format!("```python\n{CORRECT}\n```"),
        format!("```json\n{CORRECT}\n```\n```json\n{CORRECT}\n```"),
        format!("Answer:\n```json\n{CORRECT}\n```"),
    ] {
        let verdict = validate(
            &seed_answer(),
            &ResponseOutcome::Completed { text: text.clone() },
            FENCES_ALLOWED,
        );
        assert_eq!(verdict.reasons, vec![ReasonCode::Malformed], "{text}");
        assert!(!verdict.fenced, "{text}");
    }
    let wrong_inside = validate(
        &seed_answer(),
        &ResponseOutcome::Completed {
            text: "```json\n{\"asset\": \"AX-104\", \"revision\": \"C\", \"nominal_torque\": 12.5, \"unit\": \"N.m\"}\n```".into(),
        },
        FENCES_ALLOWED,
    );
    assert_eq!(wrong_inside.reasons, vec![ReasonCode::WrongRevision]);
    assert!(wrong_inside.fenced);
}

#[test]
fn the_refusal_is_accepted_for_an_absent_asset() {
    for text in [r#"{"error": "not_found"}"#, " {\"error\":\"not_found\"}\n"] {
        let verdict = check(&ExpectedAnswer::refusal(), text);
        assert!(verdict.accepted, "{text}: {verdict:?}");
    }
}

#[test]
fn an_invented_value_for_an_absent_asset_is_rejected() {
    let verdict = check(&ExpectedAnswer::refusal(), CORRECT);
    assert_eq!(verdict.reasons, vec![ReasonCode::InventedValue]);
    assert!(verdict.detail[0].text.contains("not in the context"));
    assert!(verdict.detail[0].found.as_deref().unwrap().contains("12.5"));
    assert_eq!(
        reasons(&ExpectedAnswer::refusal(), "{}"),
        vec![ReasonCode::InventedValue]
    );
    assert_eq!(
        reasons(
            &ExpectedAnswer::refusal(),
            r#"{"error": "not_found", "asset": "AX-104"}"#
        ),
        vec![ReasonCode::ExtraField, ReasonCode::InventedValue]
    );
}

#[test]
fn a_malformed_refusal_is_rejected_with_its_reason() {
    assert_eq!(
        reasons(&ExpectedAnswer::refusal(), r#"{"error": "not found"}"#),
        vec![ReasonCode::WrongValue]
    );
    assert_eq!(
        reasons(&ExpectedAnswer::refusal(), r#"{"error": true}"#),
        vec![ReasonCode::WrongType]
    );
    assert_eq!(
        reasons(
            &ExpectedAnswer::refusal(),
            r#"{"error": "not_found", "note": "x"}"#
        ),
        vec![ReasonCode::ExtraField]
    );
    assert_eq!(
        reasons(&ExpectedAnswer::refusal(), "The asset is not listed."),
        vec![ReasonCode::Malformed]
    );
}

#[test]
fn a_refusal_for_a_present_asset_is_unexpected() {
    let verdict = check(&seed_answer(), r#"{"error": "not_found"}"#);
    assert_eq!(verdict.reasons, vec![ReasonCode::UnexpectedRefusal]);
    assert!(!verdict.accepted);
}

#[test]
fn timeouts_errors_and_empty_outputs_are_verdicts() {
    let timeout = validate(&seed_answer(), &ResponseOutcome::Timeout, STRICT);
    assert_eq!(timeout.reasons, vec![ReasonCode::Timeout]);
    assert!(!timeout.accepted);

    let error = validate(
        &seed_answer(),
        &ResponseOutcome::Error {
            message: "HTTP 503".into(),
        },
        STRICT,
    );
    assert_eq!(error.reasons, vec![ReasonCode::Error]);
    assert!(error.detail[0].text.contains("HTTP 503"));

    for outcome in [
        ResponseOutcome::Empty,
        ResponseOutcome::Completed {
            text: String::new(),
        },
        ResponseOutcome::Completed {
            text: " \n\t ".into(),
        },
    ] {
        for expected in [seed_answer(), ExpectedAnswer::refusal()] {
            let verdict = validate(&expected, &outcome, FENCES_ALLOWED);
            assert_eq!(verdict.reasons, vec![ReasonCode::Malformed], "{outcome:?}");
            assert_eq!(verdict.detail[0].text, "the response was empty");
        }
    }
}

#[test]
fn lists_every_reason_that_applies_in_order() {
    let verdict = check(
        &seed_answer(),
        r#"{"asset": "AX-104A", "revision": "C", "nominal_torque": "1.25", "note": 1}"#,
    );
    assert_eq!(
        verdict.reasons,
        vec![
            ReasonCode::MissingField,
            ReasonCode::ExtraField,
            ReasonCode::WrongType,
            ReasonCode::WrongAsset,
            ReasonCode::WrongRevision,
            ReasonCode::FactorOfTen,
        ]
    );
    assert_eq!(verdict.detail.len(), 6);
}

#[test]
fn german_decimal_comma_in_the_answer_is_malformed() {
    assert_eq!(
        reasons(
            &seed_answer(),
            r#"{"asset": "AX-104", "revision": "B", "nominal_torque": 12,5, "unit": "N.m"}"#
        ),
        vec![ReasonCode::Malformed]
    );
}

#[test]
fn verdict_and_expected_answer_serialise_as_documented() {
    let verdict = check(
        &seed_answer(),
        r#"{"asset": "AX-104", "revision": "B", "nominal_torque": 125, "unit": "N.m"}"#,
    );
    let json = serde_json::to_value(&verdict).unwrap();
    assert_eq!(json["accepted"], false);
    assert_eq!(json["reasons"], serde_json::json!(["factor_of_ten"]));
    assert_eq!(json["fenced"], false);
    assert_eq!(json["extracted"][2]["json"], "125");
    let back: Verdict = serde_json::from_value(json).unwrap();
    assert_eq!(back, verdict);

    assert_eq!(
        serde_json::to_string(&seed_answer()).unwrap(),
        r#"{"asset":"AX-104","revision":"B","nominal_torque":12.5,"unit":"N.m"}"#
    );
    assert_eq!(
        serde_json::to_string(&ExpectedAnswer::refusal()).unwrap(),
        r#"{"error":"not_found"}"#
    );
    let read: ExpectedAnswer = serde_json::from_str(r#"{"error":"not_found"}"#).unwrap();
    assert_eq!(read, ExpectedAnswer::refusal());
    let read: ExpectedAnswer = serde_json::from_str(CORRECT).unwrap();
    assert_eq!(read, seed_answer());
    assert!(serde_json::from_str::<ExpectedAnswer>(r#"{"error":"other"}"#).is_err());

    let outcome: ResponseOutcome =
        serde_json::from_str(r#"{"outcome": "completed", "text": "{}"}"#).unwrap();
    assert_eq!(outcome, ResponseOutcome::Completed { text: "{}".into() });
    assert_eq!(
        serde_json::to_string(&ResponseOutcome::Timeout).unwrap(),
        r#"{"outcome":"timeout"}"#
    );
    for code in [
        ReasonCode::Malformed,
        ReasonCode::FactorOfTen,
        ReasonCode::UnexpectedRefusal,
    ] {
        assert_eq!(
            serde_json::to_value(code).unwrap(),
            serde_json::Value::String(code.as_str().into())
        );
    }
}

#[test]
fn types_export_to_typescript_and_json_schema() {
    let cfg = crate::ts_config();
    let verdict = <Verdict as TS>::decl(&cfg);
    assert!(verdict.contains("reasons: Array<ReasonCode>"), "{verdict}");
    let answer = <ExtractionAnswer as TS>::decl(&cfg);
    assert!(answer.contains("nominal_torque: number"), "{answer}");
    let outcome = <ResponseOutcome as TS>::decl(&cfg);
    assert!(outcome.contains("\"outcome\": \"timeout\""), "{outcome}");

    let schema = serde_json::to_value(schemars::schema_for!(ExpectedAnswer)).unwrap();
    let variants = schema["anyOf"]
        .as_array()
        .expect("an untagged enum is anyOf");
    assert_eq!(variants.len(), 3, "answer, refusal, answers");
    let torque = &schema["$defs"]["ExtractionAnswer"]["properties"]["nominal_torque"];
    assert_eq!(torque["type"], "number", "{schema}");
}

/// AX-104 rev B 12.5 N.m, then KL-233 rev D 8.75 kN.m, in that order.
fn two_answers() -> ExpectedAnswer {
    let second = ExtractionAnswer {
        asset: "KL-233".into(),
        revision: "D".into(),
        nominal_torque: Decimal::parse_json_number("8.75").unwrap(),
        unit: "kN.m".into(),
    };
    let ExpectedAnswer::Answer(first) = seed_answer() else {
        unreachable!()
    };
    ExpectedAnswer::Answers(AnswerList {
        answers: vec![first, second],
    })
}

const FIRST: &str =
    r#"{"asset": "AX-104", "revision": "B", "nominal_torque": 12.5, "unit": "N.m"}"#;
const SECOND: &str =
    r#"{"asset": "KL-233", "revision": "D", "nominal_torque": 8.75, "unit": "kN.m"}"#;

/// Each reason of a verdict with the field it names.
type Said<'a> = Vec<(ReasonCode, Option<&'a str>)>;

fn fields(verdict: &Verdict) -> Said<'_> {
    verdict
        .detail
        .iter()
        .map(|d| (d.reason, d.field.as_deref()))
        .collect()
}

#[test]
fn a_list_answer_is_accepted_only_whole_and_in_the_order_asked() {
    let expected = two_answers();
    let right = format!(r#"{{"answers": [{FIRST}, {SECOND}]}}"#);
    let verdict = check(&expected, &right);
    assert!(verdict.accepted, "{verdict:?}");
    // The list is shown member by member, so the reviewer's diff compares each value.
    let keys: Vec<String> = verdict
        .extracted
        .unwrap()
        .into_iter()
        .map(|f| f.key)
        .collect();
    assert_eq!(keys[0], "answers[0].asset");
    assert_eq!(keys[7], "answers[1].unit");
    assert_eq!(keys.len(), 8);
    // Equal decimals and key order inside an element are fine, as for one answer.
    let respelled = format!(
        r#"{{"answers": [{{"unit": "N.m", "nominal_torque": 12.50, "revision": "B", "asset": "AX-104"}}, {SECOND}]}}"#
    );
    assert!(check(&expected, &respelled).accepted);
    // The expected answer as serialised is the accepted text.
    assert!(check(&expected, &serde_json::to_string(&expected).unwrap()).accepted);

    let cases: Vec<(String, Said<'_>)> = vec![
        // The right records in the wrong order.
        (
            format!(r#"{{"answers": [{SECOND}, {FIRST}]}}"#),
            vec![
                (ReasonCode::WrongAsset, Some("answers[0].asset")),
                (ReasonCode::WrongRevision, Some("answers[0].revision")),
                (ReasonCode::WrongUnit, Some("answers[0].unit")),
                (ReasonCode::WrongValue, Some("answers[0].nominal_torque")),
                (ReasonCode::WrongAsset, Some("answers[1].asset")),
                (ReasonCode::WrongRevision, Some("answers[1].revision")),
                (ReasonCode::WrongUnit, Some("answers[1].unit")),
                (ReasonCode::WrongValue, Some("answers[1].nominal_torque")),
            ],
        ),
        // One record only.
        (
            format!(r#"{{"answers": [{FIRST}]}}"#),
            vec![(ReasonCode::MissingField, Some("answers[1]"))],
        ),
        // One record too many: the first again.
        (
            format!(r#"{{"answers": [{FIRST}, {SECOND}, {FIRST}]}}"#),
            vec![(ReasonCode::ExtraField, Some("answers[2]"))],
        ),
        // The first answer alone, as a single extraction would give it.
        (
            FIRST.to_owned(),
            vec![
                (ReasonCode::ExtraField, Some("asset")),
                (ReasonCode::ExtraField, Some("nominal_torque")),
                (ReasonCode::ExtraField, Some("revision")),
                (ReasonCode::ExtraField, Some("unit")),
                (ReasonCode::MissingField, Some("answers")),
            ],
        ),
        (
            r#"{"answers": {"asset": "AX-104"}}"#.to_owned(),
            vec![(ReasonCode::WrongType, Some("answers"))],
        ),
        (
            format!(r#"{{"answers": ["AX-104", {SECOND}]}}"#),
            vec![(ReasonCode::WrongType, Some("answers[0]"))],
        ),
        (
            format!(
                r#"{{"answers": [{FIRST}, {{"asset": "KL-233", "revision": "D", "nominal_torque": 87.5, "unit": "kN.m"}}]}}"#
            ),
            vec![(ReasonCode::FactorOfTen, Some("answers[1].nominal_torque"))],
        ),
        (
            format!(
                r#"{{"answers": [{FIRST}, {{"asset": "KL-233", "asset": "KL-233", "revision": "D", "nominal_torque": 8.75, "unit": "kN.m"}}]}}"#
            ),
            vec![(ReasonCode::Malformed, Some("answers[1].asset"))],
        ),
        (
            format!(r#"{{"answers": [{FIRST}, {SECOND}], "note": "both found"}}"#),
            vec![(ReasonCode::ExtraField, Some("note"))],
        ),
        (
            r#"{"error": "not_found"}"#.to_owned(),
            vec![(ReasonCode::UnexpectedRefusal, Some("error"))],
        ),
        (
            r#"{"answers": []}"#.to_owned(),
            vec![
                (ReasonCode::MissingField, Some("answers[0]")),
                (ReasonCode::MissingField, Some("answers[1]")),
            ],
        ),
    ];
    for (text, want) in cases {
        let verdict = check(&expected, &text);
        assert!(!verdict.accepted, "{text}");
        assert_eq!(fields(&verdict), want, "{text}");
    }

    // A list where the refusal is right invents values.
    let verdict = check(
        &ExpectedAnswer::refusal(),
        &format!(r#"{{"answers": [{FIRST}]}}"#),
    );
    assert_eq!(verdict.reasons, [ReasonCode::InventedValue]);
    assert!(verdict.detail[0].text.contains("answers"), "{verdict:?}");
    // A list where one answer is asked for is not that answer.
    let verdict = check(&seed_answer(), &format!(r#"{{"answers": [{FIRST}]}}"#));
    assert!(!verdict.accepted);
    assert!(verdict.reasons.contains(&ReasonCode::MissingField));
}
