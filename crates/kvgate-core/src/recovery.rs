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
            format!("a text of 1 to {MAX_RECOVERY_TEXT_CHARS} characters"),
            if n > MAX_RECOVERY_TEXT_CHARS {
                format!("{n} characters")
            } else {
                format!("{v:?}")
            },
        ));
    }
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

    /// Parses and checks a plan from a JSON value.
    pub fn from_value(value: Value, today: &str) -> Result<RecoveryPlan, Vec<PolicyProblem>> {
        let plan: RecoveryPlan = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let path = if path == "." { "$".to_owned() } else { path };
            vec![problem(
                path,
                "a recovery plan as in schemas/recovery-plan.schema.json",
                e.into_inner().to_string(),
            )]
        })?;
        let problems = plan.problems(today);
        if problems.is_empty() {
            Ok(plan)
        } else {
            Err(problems)
        }
    }

    /// Every problem of the plan's values; empty when it may be recorded.
    pub fn problems(&self, today: &str) -> Vec<PolicyProblem> {
        let mut out = Vec::new();
        check_text("canary.route", &self.canary.route, &mut out);
        let share = self.canary.share_percent;
        if !(share.is_finite() && share > 0.0 && share <= 100.0) {
            out.push(problem(
                "canary.share_percent",
                "a bounded share of the route in (0, 100] percent",
                format!("{share}"),
            ));
        }
        check_text("breach_rule", &self.breach_rule, &mut out);
        if !(self.drain_deadline_s.is_finite() && self.drain_deadline_s > 0.0) {
            out.push(problem(
                "drain_deadline_s",
                "a finite number of seconds greater than 0",
                format!("{}", self.drain_deadline_s),
            ));
        }
        if self.admission_before_restore == Some(0) {
            out.push(problem(
                "admission_before_restore",
                "at least 1 sequence, or no key when rollback fits as is",
                "0",
            ));
        }
        let date = &self.rehearsal.date;
        if !is_iso_date(date) {
            out.push(problem(
                "rehearsal.date",
                "a calendar day written YYYY-MM-DD",
                format!("{date:?}"),
            ));
        } else if date.as_str() > today {
            out.push(problem(
                "rehearsal.date",
                format!("a day that has happened (today is {today})"),
                format!("{date:?}"),
            ));
        }
        if self.rehearsal.notes.chars().count() > MAX_RECOVERY_TEXT_CHARS {
            out.push(problem(
                "rehearsal.notes",
                format!("at most {MAX_RECOVERY_TEXT_CHARS} characters"),
                format!("{} characters", self.rehearsal.notes.chars().count()),
            ));
        }
        out
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

/// What the recovery check should draw the signer's eye to: each finding is a sentence.
/// `policy_drain_s` is the drain of the locked policy's goodput window; `rollback_fits` lists
/// each candidate with whether B0's cache fits its admission (None when unknown).
pub fn recovery_findings(
    plan: Option<&RecoveryPlan>,
    policy_drain_s: Option<f64>,
    rollback_fits: &[(String, Option<bool>)],
) -> Vec<String> {
    let mut out = Vec::new();
    let Some(plan) = plan else {
        out.push(
            "no recovery plan recorded: canary route, breach rule, drain deadline and a dated \
             rehearsal are required before this check can be signed"
                .to_owned(),
        );
        return out;
    };
    for step in plan.failed_steps() {
        out.push(format!(
            "rehearsal step {step} failed on {}",
            plan.rehearsal.date
        ));
    }
    if let Some(drain) = policy_drain_s {
        if (drain - plan.drain_deadline_s).abs() > 1e-9 {
            out.push(format!(
                "the plan drains streams for {} s, the locked policy's goodput drain is {} s",
                plan.drain_deadline_s, drain
            ));
        }
    }
    for (cell, fits) in rollback_fits {
        match (fits, plan.admission_before_restore) {
            (Some(false), None) => out.push(format!(
                "rollback from {cell} does not fit B0's cache at its admission, and the plan names \
                 no admission to reduce to before restoring it"
            )),
            (None, _) => out.push(format!("rollback fit of {cell} unknown")),
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
        ] {
            assert!(!is_iso_date(bad), "{bad}");
        }
    }

    #[test]
    fn findings_name_what_the_signer_must_weigh() {
        assert!(recovery_findings(None, Some(30.0), &[])[0].starts_with("no recovery plan"));
        let p = RecoveryPlan::from_value(plan(), "2026-12-01").unwrap();
        let f = recovery_findings(
            Some(&p),
            Some(60.0),
            &[("Q8".into(), Some(false)), ("C2".into(), Some(true))],
        );
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(f[0].contains("warm_up failed on 2026-11-30"));
        assert!(f[1].contains("30 s") && f[1].contains("60 s"));
        assert!(f[2].contains("rollback from Q8 does not fit"));
        let mut v = plan();
        v["admission_before_restore"] = json!(64);
        v["rehearsal"]["warm_up"] = json!("passed");
        let p = RecoveryPlan::from_value(v, "2026-12-01").unwrap();
        assert!(recovery_findings(Some(&p), Some(30.0), &[("Q8".into(), Some(false))]).is_empty());
    }
}
