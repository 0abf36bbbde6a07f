//! The decision gate: a decision (retain, calibrate, rollback, promote) is recorded only over the
//! four checks signed and current. Against a check that is unsigned, or whose signature is void
//! because its evidence changed, the decision is refused, naming the checks, unless it is
//! recorded as an override with a stated rationale: an audit event every shell shows in red.
//!
//! And the sign-off rule: a check whose evidence shows a failure (an invalid cell, a protected
//! floor failed) is signed only with a stated reason, recorded with the signature.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::checklist::{Check, CheckEvidence, SignatureState};

/// The decision recorded for a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionOutcome {
    /// Keep B0.
    Retain,
    /// Next experiment: scales, backend, layer exclusion.
    Calibrate,
    Rollback,
    /// The candidate goes to production.
    Promote,
}

impl DecisionOutcome {
    pub const ALL: [DecisionOutcome; 4] = [
        DecisionOutcome::Retain,
        DecisionOutcome::Calibrate,
        DecisionOutcome::Rollback,
        DecisionOutcome::Promote,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DecisionOutcome::Retain => "retain",
            DecisionOutcome::Calibrate => "calibrate",
            DecisionOutcome::Rollback => "rollback",
            DecisionOutcome::Promote => "promote",
        }
    }

    pub fn parse(s: &str) -> Option<DecisionOutcome> {
        Self::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// A check that does not stand signed over its current evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct OpenCheck {
    pub check: Check,
    /// `unsigned` or `void`.
    pub state: SignatureState,
}

/// Why a decision is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecisionRefusal {
    /// Checks not signed over their current evidence, and no override.
    ChecksOpen(Vec<OpenCheck>),
    /// An override without a rationale.
    OverrideWithoutRationale(Vec<OpenCheck>),
}

fn named(open: &[OpenCheck]) -> String {
    open.iter()
        .map(|o| {
            format!(
                "{} ({})",
                o.check.as_str(),
                match o.state {
                    SignatureState::Void => "void: its evidence changed since it was signed",
                    _ => "unsigned",
                }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl std::fmt::Display for DecisionRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecisionRefusal::ChecksOpen(open) => write!(
                f,
                "a decision needs the four checks signed over their current evidence; not signed: \
                 {}. Sign them, or record the decision as an override with a rationale \
                 (--override --rationale T)",
                named(open)
            ),
            DecisionRefusal::OverrideWithoutRationale(open) => write!(
                f,
                "an override of the sign-off gate needs a rationale (--rationale T); not signed: {}",
                named(open)
            ),
        }
    }
}

/// What the gate lets through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateOutcome {
    /// True when recorded past open checks: shown in red wherever the decision is shown.
    pub overridden: bool,
    /// The checks it overrides (empty when every check holds).
    pub open: Vec<OpenCheck>,
}

/// The gate. `checks`: each check with its signature state now (a check not listed counts as
/// unsigned); `override_requested` with `rationale`: record past open checks.
pub fn gate_decision(
    checks: &[(Check, SignatureState)],
    override_requested: bool,
    rationale: &str,
) -> Result<GateOutcome, DecisionRefusal> {
    let open: Vec<OpenCheck> = Check::ALL
        .into_iter()
        .filter_map(|check| {
            let state = checks
                .iter()
                .find(|(c, _)| *c == check)
                .map_or(SignatureState::Unsigned, |(_, s)| *s);
            (state != SignatureState::Signed).then_some(OpenCheck { check, state })
        })
        .collect();
    if open.is_empty() {
        return Ok(GateOutcome {
            overridden: false,
            open,
        });
    }
    if !override_requested {
        return Err(DecisionRefusal::ChecksOpen(open));
    }
    if rationale.trim().is_empty() {
        return Err(DecisionRefusal::OverrideWithoutRationale(open));
    }
    Ok(GateOutcome {
        overridden: true,
        open,
    })
}

/// The failures a check's evidence shows: an invalid cell (compatibility), a protected floor
/// that fails (quality). Signing such a check takes a stated reason.
pub fn evidence_failures(evidence: &CheckEvidence) -> Vec<String> {
    match evidence {
        CheckEvidence::Compatibility { evidence } => evidence
            .cells
            .iter()
            .filter(|c| !c.valid)
            .map(|c| {
                if c.invalid_reasons.is_empty() {
                    format!("cell {} is invalid", c.cell)
                } else {
                    format!(
                        "cell {} is invalid: {}",
                        c.cell,
                        c.invalid_reasons.join("; ")
                    )
                }
            })
            .collect(),
        CheckEvidence::Quality { evidence } => evidence
            .cells
            .iter()
            .flat_map(|c| {
                c.floors
                    .iter()
                    .filter(|f| f.protected && f.passes == Some(false))
                    .map(move |f| {
                        format!(
                            "cell {}: protected floor {} failed ({} of {} accepted, floor {})",
                            c.cell,
                            f.segment,
                            crate::display::count(f.accepted),
                            crate::display::count(f.n),
                            crate::display::share(Some(f.floor))
                        )
                    })
            })
            .collect(),
        CheckEvidence::Operations { .. } | CheckEvidence::Recovery { .. } => Vec::new(),
    }
}

/// Why signing is refused: the evidence shows failures and no reason was stated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasonRequired(pub Vec<String>);

impl std::fmt::Display for ReasonRequired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the evidence shows a failure ({}): signing it needs a stated reason (--reason T)",
            self.0.join("; ")
        )
    }
}

/// The sign-off rule: a check whose evidence shows a failure is signed only with a reason.
/// Returns the failures the signature acknowledges (empty when there are none).
pub fn gate_signature(
    evidence: &CheckEvidence,
    reason: &str,
) -> Result<Vec<String>, ReasonRequired> {
    let failures = evidence_failures(evidence);
    if !failures.is_empty() && reason.trim().is_empty() {
        return Err(ReasonRequired(failures));
    }
    Ok(failures)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checklist::{CompatibilityCell, CompatibilityEvidence};

    fn all(state: SignatureState) -> Vec<(Check, SignatureState)> {
        Check::ALL.into_iter().map(|c| (c, state)).collect()
    }

    #[test]
    fn a_decision_needs_every_check_signed_over_its_current_evidence() {
        let ok = gate_decision(&all(SignatureState::Signed), false, "").unwrap();
        assert!(!ok.overridden && ok.open.is_empty());

        // One void signature among signed ones is enough to refuse, and it is named as void.
        let mut checks = all(SignatureState::Signed);
        checks[1].1 = SignatureState::Void;
        let err = gate_decision(&checks, false, "looks fine").unwrap_err();
        assert_eq!(
            err,
            DecisionRefusal::ChecksOpen(vec![OpenCheck {
                check: Check::Quality,
                state: SignatureState::Void
            }])
        );
        let says = err.to_string();
        assert!(says.contains("quality (void"), "{says}");
        assert!(!says.contains("compatibility"), "{says}");

        // A check missing from the list is unsigned, not signed.
        let err = gate_decision(&all(SignatureState::Signed)[..3], false, "").unwrap_err();
        assert!(err.to_string().contains("recovery (unsigned)"), "{err}");

        // An override needs a rationale; with one it is recorded, flagged, naming what it overrides.
        let err = gate_decision(&all(SignatureState::Unsigned), true, "  ").unwrap_err();
        assert!(matches!(err, DecisionRefusal::OverrideWithoutRationale(ref o) if o.len() == 4));
        let over = gate_decision(&checks, true, "release freeze; accepted by the CTO").unwrap();
        assert!(over.overridden);
        assert_eq!(over.open.len(), 1);
        // An override over signed checks is no override.
        let clean = gate_decision(&all(SignatureState::Signed), true, "why not").unwrap();
        assert!(!clean.overridden);
    }

    #[test]
    fn outcomes_round_trip_and_promote_is_one() {
        for o in DecisionOutcome::ALL {
            assert_eq!(DecisionOutcome::parse(o.as_str()), Some(o));
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
        }
        assert_eq!(
            DecisionOutcome::parse("promote"),
            Some(DecisionOutcome::Promote)
        );
        assert_eq!(DecisionOutcome::parse("ship"), None);
    }

    #[test]
    fn signing_over_an_invalid_cell_needs_a_reason() {
        let evidence = |valid: bool| CheckEvidence::Compatibility {
            evidence: CompatibilityEvidence {
                cells: vec![CompatibilityCell {
                    cell: "C1".into(),
                    manifest_sha256: "x".into(),
                    valid,
                    invalid_reasons: vec!["startup log shows kv dtype auto".into()],
                    uncontrolled_findings: vec![],
                    accepted_findings: vec![],
                }],
                evidence: vec![],
            },
        };
        assert_eq!(gate_signature(&evidence(true), ""), Ok(vec![]));
        let err = gate_signature(&evidence(false), " ").unwrap_err();
        assert!(
            err.to_string().contains("cell C1 is invalid: startup log"),
            "{err}"
        );
        let acknowledged = gate_signature(&evidence(false), "C1 is out of scope").unwrap();
        assert_eq!(acknowledged.len(), 1);
    }

    #[test]
    fn signing_over_a_failed_protected_floor_needs_a_reason_an_unprotected_one_not() {
        use crate::analysis::FloorCheck;
        use crate::checklist::{QualityCell, QualityEvidence};
        let evidence = |protected: bool, passes: Option<bool>| CheckEvidence::Quality {
            evidence: QualityEvidence {
                policy_sha256: "p".into(),
                policy_changed_after_results: false,
                policy_first_lock_after_results: false,
                cells: vec![QualityCell {
                    cell: "C1".into(),
                    manifest_sha256: "m".into(),
                    paired: vec![],
                    floors: vec![FloorCheck {
                        segment: "task=extraction".into(),
                        protected,
                        floor: 0.95,
                        n: 40,
                        accepted: 30,
                        rate: Some(0.75),
                        passes,
                    }],
                    unpaired: vec![],
                    corpus_mismatches: vec![],
                }],
                noise_floor: None,
                adjudications: vec![],
            },
        };
        let err = gate_signature(&evidence(true, Some(false)), "").unwrap_err();
        assert!(
            err.to_string()
                .contains("protected floor task=extraction failed (30 of 40 accepted"),
            "{err}"
        );
        assert_eq!(
            gate_signature(&evidence(false, Some(false)), ""),
            Ok(vec![])
        );
        // Undecided (no judged item) is not a failure.
        assert_eq!(gate_signature(&evidence(true, None), ""), Ok(vec![]));
        assert_eq!(gate_signature(&evidence(true, Some(true)), ""), Ok(vec![]));
    }
}
