//! The recovery plan of a study (check 4 of the acceptance checklist): the bounded canary route,
//! the breach rule that sends new traffic back to B0, the drain deadline for streams already
//! running, the admission to reduce to before the larger cache is restored, and a dated rehearsal
//! of restart, cache loss and warm-up. Recorded by the service owner, versioned, never edited.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::canonical::{canonical_json, sha256_hex};
use crate::policy::{problem, PolicyProblem};

/// Longest free-text field accepted (route, rule, notes).
pub const MAX_RECOVERY_TEXT_CHARS: usize = 2000;

/// How one rehearsal step went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RehearsalOutcome {
    Passed,
    Failed,
}

/// The canary: which traffic the candidate serves first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Canary {
    /// The route (or tenant, or class) the candidate serves, e.g. `chat-short/eu-1`.
    pub route: String,
    /// Share of that route's traffic, in percent: bounded, so (0, 100].
    pub share_percent: f64,
}

/// A rehearsal of the rollback, with its date.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rehearsal {
    /// The day it was rehearsed, `YYYY-MM-DD`.
    pub date: String,
    /// Restart of the baseline's servers from the approved, frozen manifest.
    pub restart: RehearsalOutcome,
    /// Loss of the KV cache (every cached prefix gone) while serving.
    pub cache_loss: RehearsalOutcome,
    /// Warm-up back to the SLOs after the restart.
    pub warm_up: RehearsalOutcome,
    #[serde(default)]
    pub notes: String,
}

/// The recovery plan as the service owner records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecoveryPlan {
    pub canary: Canary,
    /// What counts as a breach, e.g. "TTFT p99 > 800 ms for 5 min, or any protected-segment
    /// regression found by review": on a breach new traffic goes back to B0.
    pub breach_rule: String,
    /// Existing streams are drained only until this deadline after a breach, in seconds.
    pub drain_deadline_s: f64,
    /// Concurrent sequences to admit before the larger (baseline) cache is restored, when the
    /// candidate's admission would not fit it; absent when rollback fits as is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_before_restore: Option<u64>,
    pub rehearsal: Rehearsal,
}

/// Whether `s` is a real calendar day written `YYYY-MM-DD`.
pub fn is_iso_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &s[r];
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(y), Some(m), Some(d)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    y >= 1970 && (1..=days).contains(&d)
}

fn check_text(path: &str, v: &str, out: &mut Vec<PolicyProblem>) {
    let n = v.chars().count();
    if v.trim().is_empty() || n > MAX_RECOVERY_TEXT_CHARS {
        out.push(problem(
            path,
            text_expected(),
            if n > MAX_RECOVERY_TEXT_CHARS {
                format!("{n} characters")
            } else {
                format!("{v:?}")
            },
        ));
    }
}

fn text_expected() -> String {
    format!("a text of 1 to {MAX_RECOVERY_TEXT_CHARS} characters")
}

const SHARE_EXPECTED: &str = "a bounded share of the route in (0, 100] percent";
const DRAIN_EXPECTED: &str = "a finite number of seconds greater than 0";
const ADMISSION_EXPECTED: &str =
    "a whole number of at least 1 sequence, or no key when rollback fits as is";
const DATE_EXPECTED: &str = "a calendar day written YYYY-MM-DD";
const STEP_EXPECTED: &str = "passed or failed";

const PLAN_FIELDS: [&str; 5] = [
    "canary",
    "breach_rule",
    "drain_deadline_s",
    "admission_before_restore",
    "rehearsal",
];
const CANARY_FIELDS: [&str; 2] = ["route", "share_percent"];
const REHEARSAL_FIELDS: [&str; 5] = ["date", "restart", "cache_loss", "warm_up", "notes"];

type Object = serde_json::Map<String, Value>;

/// A value as a problem names it: short, and never a whole object.
fn found(v: &Value) -> String {
    match v {
        Value::Null => "nothing".to_owned(),
        Value::Object(_) => "an object".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        other => other.to_string(),
    }
}

fn key_of(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// Names every field of `o` that a plan does not have.
fn unknown_fields(o: &Object, prefix: &str, fields: &[&str], out: &mut Vec<PolicyProblem>) {
    for key in o.keys().filter(|k| !fields.contains(&k.as_str())) {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        out.push(problem(
            path,
            format!("only the fields {}", fields.join(", ")),
            format!("unknown field `{key}`"),
        ));
    }
}

/// The object at `path`, or a problem when it is missing or of another type.
fn object<'v>(
    parent: &'v Object,
    path: &str,
    fields: &[&str],
    out: &mut Vec<PolicyProblem>,
) -> Option<&'v Object> {
    match parent.get(key_of(path)) {
        Some(Value::Object(o)) => {
            unknown_fields(o, path, fields, out);
            Some(o)
        }
        other => {
            out.push(problem(
                path,
                format!("an object with {}", fields.join(", ")),
                other.map_or_else(|| "nothing".to_owned(), found),
            ));
            None
        }
    }
}

/// The value at `path`; `Err` (with a problem) when it is of another type, `Ok(None)` when it is
/// missing or null.
fn optional<T: serde::de::DeserializeOwned>(
    parent: &Object,
    path: &str,
    expected: &str,
    out: &mut Vec<PolicyProblem>,
) -> Result<Option<T>, ()> {
    match parent.get(key_of(path)) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => T::deserialize(v).map(Some).map_err(|_| {
            out.push(problem(path, expected, found(v)));
        }),
    }
}

/// The value at `path`, or a problem when it is missing, null or of another type.
fn required<T: serde::de::DeserializeOwned>(
    parent: &Object,
    path: &str,
    expected: &str,
    out: &mut Vec<PolicyProblem>,
) -> Option<T> {
    match optional(parent, path, expected, out) {
        Ok(Some(v)) => Some(v),
        Ok(None) => {
            out.push(problem(path, expected, "nothing"));
            None
        }
        Err(()) => None,
    }
}

/// Every problem of a plan as authored, in the order of its fields, all at once: a missing,
/// null or mistyped value, an unknown field, and a value out of its bounds. `today` bounds the
/// rehearsal date.
fn plan_problems(value: &Value, today: &str) -> Vec<PolicyProblem> {
    let mut out = Vec::new();
    let Some(root) = value.as_object() else {
        out.push(problem(
            "$",
            "a JSON object: a recovery plan as in schemas/recovery-plan.schema.json",
            found(value),
        ));
        return out;
    };
    unknown_fields(root, "", &PLAN_FIELDS, &mut out);
    if let Some(canary) = object(root, "canary", &CANARY_FIELDS, &mut out) {
        let route: Option<String> = required(canary, "canary.route", &text_expected(), &mut out);
        if let Some(route) = route {
            check_text("canary.route", &route, &mut out);
        }
        let share: Option<f64> = required(canary, "canary.share_percent", SHARE_EXPECTED, &mut out);
        if let Some(share) = share.filter(|s| !(s.is_finite() && *s > 0.0 && *s <= 100.0)) {
            out.push(problem(
                "canary.share_percent",
                SHARE_EXPECTED,
                format!("{share}"),
            ));
        }
    }
    let breach: Option<String> = required(root, "breach_rule", &text_expected(), &mut out);
    if let Some(breach) = breach {
        check_text("breach_rule", &breach, &mut out);
    }
    let drain: Option<f64> = required(root, "drain_deadline_s", DRAIN_EXPECTED, &mut out);
    if let Some(drain) = drain.filter(|d| !(d.is_finite() && *d > 0.0)) {
        out.push(problem(
            "drain_deadline_s",
            DRAIN_EXPECTED,
            format!("{drain}"),
        ));
    }
    let admission: Result<Option<u64>, ()> = optional(
        root,
        "admission_before_restore",
        ADMISSION_EXPECTED,
        &mut out,
    );
    if admission == Ok(Some(0)) {
        out.push(problem("admission_before_restore", ADMISSION_EXPECTED, "0"));
    }
    if let Some(rehearsal) = object(root, "rehearsal", &REHEARSAL_FIELDS, &mut out) {
        let date: Option<String> = required(rehearsal, "rehearsal.date", DATE_EXPECTED, &mut out);
        match date {
            Some(date) if !is_iso_date(&date) => {
                out.push(problem(
                    "rehearsal.date",
                    DATE_EXPECTED,
                    format!("{date:?}"),
                ));
            }
            Some(date) if date.as_str() > today => out.push(problem(
                "rehearsal.date",
                format!("a day that has happened (today is {today})"),
                format!("{date:?}"),
            )),
            _ => {}
        }
        for step in [
            "rehearsal.restart",
            "rehearsal.cache_loss",
            "rehearsal.warm_up",
        ] {
            let _: Option<RehearsalOutcome> = required(rehearsal, step, STEP_EXPECTED, &mut out);
        }
        let notes_expected = format!("at most {MAX_RECOVERY_TEXT_CHARS} characters");
        let notes: Result<Option<String>, ()> =
            optional(rehearsal, "rehearsal.notes", &notes_expected, &mut out);
        if let Ok(Some(notes)) = notes {
            let n = notes.chars().count();
            if n > MAX_RECOVERY_TEXT_CHARS {
                out.push(problem(
                    "rehearsal.notes",
                    notes_expected,
                    format!("{n} characters"),
                ));
            }
        }
    }
    out
}

impl RecoveryPlan {
    /// Parses a plan from JSON text; unknown fields, wrong types and bad values are refused with
    /// the JSON path of each problem. `today` (`YYYY-MM-DD`) bounds the rehearsal date.
    pub fn from_json_text(text: &str, today: &str) -> Result<RecoveryPlan, Vec<PolicyProblem>> {
        let value: Value = crate::canonical::parse_strict(text).map_err(|e| {
            vec![problem(
                "$",
                "a JSON object (duplicate keys refused)",
                e.to_string(),
            )]
        })?;
        RecoveryPlan::from_value(value, today)
    }

    /// Parses and checks a plan from a JSON value: every problem at once, each at its path.
    pub fn from_value(value: Value, today: &str) -> Result<RecoveryPlan, Vec<PolicyProblem>> {
        let problems = plan_problems(&value, today);
        if !problems.is_empty() {
            return Err(problems);
        }
        // Every field was read above; this only builds the typed plan.
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { "$".to_owned() } else { path };
            vec![problem(
                path,
                "a recovery plan as in schemas/recovery-plan.schema.json",
                e.into_inner().to_string(),
            )]
        })
    }

    /// The rehearsal steps that failed, by name.
    pub fn failed_steps(&self) -> Vec<&'static str> {
        let r = &self.rehearsal;
        [
            ("restart", r.restart),
            ("cache_loss", r.cache_loss),
            ("warm_up", r.warm_up),
        ]
        .into_iter()
        .filter(|(_, o)| *o == RehearsalOutcome::Failed)
        .map(|(n, _)| n)
        .collect()
    }

    pub fn canonical_json(&self) -> String {
        canonical_json(&serde_json::to_value(self).expect("a plan serializes"))
    }

    pub fn sha256(&self) -> String {
        sha256_hex(self.canonical_json().as_bytes())
    }
}

/// What a recovery finding is about, so a shell can weigh it without reading its sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryFindingKind {
    /// No plan is recorded: the check cannot be signed.
    NoPlan,
    /// A rehearsal step failed.
    RehearsalStepFailed,
    /// The plan's drain deadline is not the locked policy's goodput drain.
    DrainDiffers,
    /// Rollback does not fit B0's cache and the plan names no admission to reduce to.
    RollbackDoesNotFit,
    /// Whether rollback fits B0's cache is unknown.
    RollbackFitUnknown,
}

/// One thing the recovery check should draw the signer's eye to: its kind and its sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RecoveryFinding {
    pub kind: RecoveryFindingKind,
    pub text: String,
}

impl RecoveryFinding {
    fn new(kind: RecoveryFindingKind, text: String) -> Self {
        RecoveryFinding { kind, text }
    }
}

/// What the recovery check should draw the signer's eye to.
/// `policy_drain_s` is the drain of the locked policy's goodput window; `rollback_fits` lists
/// each candidate with whether B0's cache fits its admission (None when unknown).
pub fn recovery_findings(
    plan: Option<&RecoveryPlan>,
    policy_drain_s: Option<f64>,
    rollback_fits: &[(String, Option<bool>)],
) -> Vec<RecoveryFinding> {
    use RecoveryFindingKind as Kind;
    let mut out = Vec::new();
    let Some(plan) = plan else {
        out.push(RecoveryFinding::new(
            Kind::NoPlan,
            "no recovery plan recorded: canary route, breach rule, drain deadline and a dated \
             rehearsal are required before this check can be signed"
                .to_owned(),
        ));
        return out;
    };
    for step in plan.failed_steps() {
        out.push(RecoveryFinding::new(
            Kind::RehearsalStepFailed,
            format!("rehearsal step {step} failed on {}", plan.rehearsal.date),
        ));
    }
    if let Some(drain) = policy_drain_s {
        if (drain - plan.drain_deadline_s).abs() > 1e-9 {
            out.push(RecoveryFinding::new(
                Kind::DrainDiffers,
                format!(
                    "the plan drains streams for {} s, the locked policy's goodput drain is {} s",
                    plan.drain_deadline_s, drain
                ),
            ));
        }
    }
    for (cell, fits) in rollback_fits {
        match (fits, plan.admission_before_restore) {
            (Some(false), None) => out.push(RecoveryFinding::new(
                Kind::RollbackDoesNotFit,
                format!(
                    "rollback from {cell} does not fit B0's cache at its admission, and the plan \
                     names no admission to reduce to before restoring it"
                ),
            )),
            (None, _) => out.push(RecoveryFinding::new(
                Kind::RollbackFitUnknown,
                format!("rollback fit of {cell} unknown"),
            )),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan() -> Value {
        json!({
            "canary": {"route": "chat-short/eu-1", "share_percent": 5},
            "breach_rule": "TTFT p99 > 800 ms for 5 min, or a confirmed protected regression",
            "drain_deadline_s": 30,
            "rehearsal": {"date": "2026-11-30", "restart": "passed", "cache_loss": "passed",
                          "warm_up": "failed", "notes": "warm-up took 9 min"}
        })
    }

    #[test]
    fn a_plan_parses_and_hashes_canonically() {
        let p = RecoveryPlan::from_value(plan(), "2026-12-01").unwrap();
        assert_eq!(p.failed_steps(), vec!["warm_up"]);
        let again = RecoveryPlan::from_json_text(&p.canonical_json(), "2026-12-01").unwrap();
        assert_eq!(again.sha256(), p.sha256());
        assert_eq!(p.sha256().len(), 64);
    }

    #[test]
    fn bad_values_are_named_by_path() {
        let mut v = plan();
        v["canary"]["share_percent"] = json!(0);
        v["breach_rule"] = json!("  ");
        v["drain_deadline_s"] = json!(-1);
        v["admission_before_restore"] = json!(0);
        v["rehearsal"]["date"] = json!("2026-02-30");
        let err = RecoveryPlan::from_value(v, "2026-12-01").unwrap_err();
        let paths: Vec<&str> = err.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "canary.share_percent",
                "breach_rule",
                "drain_deadline_s",
                "admission_before_restore",
                "rehearsal.date"
            ]
        );
        let mut v = plan();
        v["rehearsal"]["date"] = json!("2026-12-02");
        let err = RecoveryPlan::from_value(v, "2026-12-01").unwrap_err();
        assert_eq!(err[0].path, "rehearsal.date");
        assert!(err[0].expected.contains("today is 2026-12-01"));
        let mut v = plan();
        v["rehearsal"]["outcome"] = json!("passed");
        let err = RecoveryPlan::from_value(v, "2026-12-01").unwrap_err();
        assert_eq!(err[0].path, "rehearsal.outcome");
        assert!(
            err[0].found.contains("unknown field `outcome`"),
            "{}",
            err[0]
        );
        let err = RecoveryPlan::from_json_text(r#"{"a":1,"a":2}"#, "2026-12-01").unwrap_err();
        assert_eq!(err[0].path, "$");
    }

    #[test]
    fn dates_are_real_calendar_days() {
        for ok in ["2024-02-29", "2026-12-01", "2000-02-29"] {
            assert!(is_iso_date(ok), "{ok}");
        }
        for bad in [
            "2025-02-29",
            "1900-02-29",
            "2026-13-01",
            "2026-1-01",
            "26-12-01",
            "2026-12-0a",
            "",
        ] {
            assert!(!is_iso_date(bad), "{bad}");
        }
    }

    #[test]
    fn findings_name_what_the_signer_must_weigh() {
        use RecoveryFindingKind as Kind;
        let none = recovery_findings(None, Some(30.0), &[]);
        assert_eq!(none[0].kind, Kind::NoPlan);
        assert!(none[0].text.starts_with("no recovery plan"));
        let p = RecoveryPlan::from_value(plan(), "2026-12-01").unwrap();
        let f = recovery_findings(
            Some(&p),
            Some(60.0),
            &[
                ("Q8".into(), Some(false)),
                ("C2".into(), Some(true)),
                ("C3".into(), None),
            ],
        );
        let kinds: Vec<Kind> = f.iter().map(|f| f.kind).collect();
        assert_eq!(
            kinds,
            vec![
                Kind::RehearsalStepFailed,
                Kind::DrainDiffers,
                Kind::RollbackDoesNotFit,
                Kind::RollbackFitUnknown
            ],
            "{f:?}"
        );
        assert_eq!(f[0].text, "rehearsal step warm_up failed on 2026-11-30");
        assert!(f[1].text.contains("30 s") && f[1].text.contains("60 s"));
        assert_eq!(
            f[2].text,
            "rollback from Q8 does not fit B0's cache at its admission, and the plan names no \
             admission to reduce to before restoring it"
        );
        assert_eq!(f[3].text, "rollback fit of C3 unknown");
        let mut v = plan();
        v["admission_before_restore"] = json!(64);
        v["rehearsal"]["warm_up"] = json!("passed");
        let p = RecoveryPlan::from_value(v, "2026-12-01").unwrap();
        assert!(recovery_findings(Some(&p), Some(30.0), &[("Q8".into(), Some(false))]).is_empty());
    }

    fn paths(v: Value) -> Vec<String> {
        match RecoveryPlan::from_value(v, "2026-12-01") {
            Ok(_) => Vec::new(),
            Err(problems) => problems.into_iter().map(|p| p.path).collect(),
        }
    }

    /// A plan as a form sends it before anything is filled in: empty texts, null numbers and
    /// outcomes.
    fn empty_form() -> Value {
        json!({
            "canary": {"route": "", "share_percent": null},
            "breach_rule": "",
            "drain_deadline_s": null,
            "rehearsal": {"date": "", "restart": null, "cache_loss": null, "warm_up": null,
                          "notes": ""}
        })
    }

    #[test]
    fn every_problem_of_a_form_is_named_at_once() {
        assert_eq!(
            paths(empty_form()),
            vec![
                "canary.route",
                "canary.share_percent",
                "breach_rule",
                "drain_deadline_s",
                "rehearsal.date",
                "rehearsal.restart",
                "rehearsal.cache_loss",
                "rehearsal.warm_up",
            ]
        );
        let err = RecoveryPlan::from_value(empty_form(), "2026-12-01").unwrap_err();
        let at = |path: &str| err.iter().find(|p| p.path == path).unwrap().clone();
        assert_eq!(at("canary.share_percent").found, "nothing");
        assert_eq!(at("rehearsal.restart").expected, "passed or failed");
        assert_eq!(at("rehearsal.restart").found, "nothing");
        assert_eq!(
            at("canary.route").expected,
            "a text of 1 to 2000 characters"
        );
        // Missing objects and fields are named too, and a plan that is not an object.
        assert_eq!(
            paths(json!({"breach_rule": "x", "drain_deadline_s": 1})),
            vec!["canary", "rehearsal"]
        );
        let mut v = plan();
        v["canary"].as_object_mut().unwrap().remove("route");
        assert_eq!(paths(v), vec!["canary.route"]);
        assert_eq!(paths(json!([1])), vec!["$"]);
    }

    #[test]
    fn each_value_is_held_to_its_bounds() {
        let with = |path: &[&str], value: Value| {
            let mut v = plan();
            let mut at = &mut v;
            for key in &path[..path.len() - 1] {
                at = &mut at[*key];
            }
            at[path[path.len() - 1]] = value;
            paths(v)
        };
        assert_eq!(paths(plan()), Vec::<String>::new());
        assert_eq!(
            with(&["canary", "share_percent"], json!(0)),
            ["canary.share_percent"]
        );
        assert!(with(&["canary", "share_percent"], json!(100)).is_empty());
        assert_eq!(
            with(&["canary", "share_percent"], json!(100.5)),
            ["canary.share_percent"]
        );
        assert_eq!(
            with(&["canary", "share_percent"], json!("5")),
            ["canary.share_percent"]
        );
        assert_eq!(with(&["drain_deadline_s"], json!(0)), ["drain_deadline_s"]);
        assert_eq!(
            with(&["admission_before_restore"], json!(0)),
            ["admission_before_restore"]
        );
        assert_eq!(
            with(&["admission_before_restore"], json!(2.5)),
            ["admission_before_restore"]
        );
        assert!(with(&["admission_before_restore"], json!(null)).is_empty());
        assert_eq!(with(&["breach_rule"], json!("   ")), ["breach_rule"]);
        assert_eq!(
            with(&["canary", "route"], json!("x".repeat(2001))),
            ["canary.route"]
        );
        assert!(with(&["rehearsal", "notes"], json!("")).is_empty());
        assert_eq!(
            with(&["rehearsal", "notes"], json!("x".repeat(2001))),
            ["rehearsal.notes"]
        );
        assert_eq!(
            with(&["rehearsal", "date"], json!("2026-02-30")),
            ["rehearsal.date"]
        );
        assert_eq!(
            with(&["rehearsal", "restart"], json!("maybe")),
            ["rehearsal.restart"]
        );
        let mut v = plan();
        v["rehearsal"]["date"] = json!("2026-12-02");
        let err = RecoveryPlan::from_value(v, "2026-12-01").unwrap_err();
        assert_eq!(err[0].path, "rehearsal.date");
        assert_eq!(
            err[0].expected,
            "a day that has happened (today is 2026-12-01)"
        );
        assert_eq!(err[0].found, "\"2026-12-02\"");
    }
}
