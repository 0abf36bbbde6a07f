#![no_main]
//! The validator: any model output gets a verdict, never a panic; the first byte picks the
//! approved answer (an extraction or a refusal) and whether a code fence is allowed.

use kvgate_core::validator::{validate, ExpectedAnswer, ResponseOutcome, ValidatorPolicy};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let expected: ExpectedAnswer = serde_json::from_str(if first & 1 == 0 {
        r#"{"asset":"LJ-204","revision":"F","nominal_torque":33.8,"unit":"kN.m"}"#
    } else {
        r#"{"error":"not_found"}"#
    })
    .expect("a fixed approved answer");
    let policy = ValidatorPolicy {
        allow_code_fence: first & 2 != 0,
    };
    let outcome = ResponseOutcome::Completed {
        text: String::from_utf8_lossy(rest).into_owned(),
    };
    let verdict = validate(&expected, &outcome, policy);
    assert_eq!(verdict.accepted, verdict.reasons.is_empty());
});
