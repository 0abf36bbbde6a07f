//! The acceptance checklist and the decision: each of the four checks is signed with the sha256
//! of the evidence the signer saw; a later change of that evidence voids the signature, visibly.
//! Sign-offs and decisions are events of the study's audit chain.

use kvgate_core::analysis::SuggestedOutcome;
use kvgate_core::checklist::{
    AdjudicationEvidence, ArchivedEvidence, CompatibilityEvidence, OperationsEvidence,
    PlanEvidence, QualityEvidence, RecoveryEvidence,
};
pub use kvgate_core::checklist::{Check, CheckEvidence, SignBlocker, SignatureState};
use kvgate_core::evidence::EvidenceKind;
use kvgate_core::review::{AdjudicationLabel, AuditEvent, AuditKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::{App, AppError, ErrorCode};

pub use kvgate_core::decision::{DecisionOutcome, OpenCheck};

/// One check's state: the evidence now, and the last signature with whether it still holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CheckStatus {
    /// The check and its evidence as hashed (`check`, `evidence`; for recovery also `findings`).
    #[serde(flatten)]
    pub evidence: CheckEvidence,
    /// sha256 of the evidence as it stands now.
    pub evidence_sha256: String,
    /// The latest signature, if any.
    pub signed: Option<AuditEvent>,
    /// The evidence digest the latest signature was made over.
    pub signed_sha256: Option<String>,
    pub state: SignatureState,
    /// True when signed and the evidence has not changed since.
    pub valid: bool,
    /// Why the signature is void, when it is.
    pub void_reason: Option<String>,
    /// Why signing would be refused as the evidence stands; None when it may be signed.
    pub blocker: Option<SignBlocker>,
    /// Failures the evidence shows (an invalid cell, a failed protected floor): signing takes
    /// a stated reason while there are any.
    pub failures: Vec<String>,
    /// The reason the latest signature states, when it states one.
    pub signed_reason: Option<String>,
}

impl CheckStatus {
    pub fn check(&self) -> Check {
        self.evidence.check()
    }
}

/// The checklist of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct Checklist {
    pub study_id: i64,
    pub checks: Vec<CheckStatus>,
    /// The cells a decision is recorded for: every frozen cell but the baseline B0.
    pub candidates: Vec<String>,
    /// The decisions recorded, oldest first.
    pub decisions: Vec<RecordedDecision>,
}

/// What a decision records: the payload of its audit event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct DecisionRecord {
    pub outcome: DecisionOutcome,
    pub rationale: String,
    /// The outcome the decision table suggested, with the rules that fired.
    pub suggested: SuggestedOutcome,
    pub rules: Vec<String>,
    pub next_experiment: Vec<String>,
    pub policy_sha256: String,
    /// The state of every check when the decision was recorded.
    pub checks: Vec<CheckAtDecision>,
    /// Recorded past checks not signed over their current evidence (`--override`, with the
    /// rationale): shown in red wherever the decision is shown. Absent for a gated decision.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(optional, as = "Option<bool>")]
    pub overridden: bool,
    /// The checks the override passed, with their state then.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(optional, as = "Option<Vec<OpenCheck>>")]
    pub overridden_checks: Vec<OpenCheck>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CheckAtDecision {
    pub check: Check,
    pub valid: bool,
    pub evidence_sha256: String,
}

/// A decision's audit event and what it records (None when its payload is not a decision record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RecordedDecision {
    pub event: AuditEvent,
    pub record: Option<DecisionRecord>,
}

/// What signing a check takes. Recovery is refused until a recovery plan is recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct SignInput {
    pub study_id: i64,
    pub check: Check,
    pub by: String,
    /// The evidence digest the signer saw; refused when the evidence has changed since.
    #[serde(default)]
    pub expected_sha256: Option<String>,
    /// Why the check is signed although its evidence shows a failure; required then, recorded
    /// with the signature.
    #[serde(default)]
    #[ts(as = "Option<String>", optional)]
    pub reason: String,
}

/// What recording a decision takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct DecideInput {
    pub study_id: i64,
    pub candidate: String,
    pub outcome: DecisionOutcome,
    pub by: String,
    #[serde(default)]
    pub rationale: String,
    /// Record the decision although checks are unsigned or void: needs a rationale; an audit
    /// event shown in red.
    #[serde(default)]
    #[ts(as = "Option<bool>", optional)]
    pub override_gate: bool,
}

fn invalid(message: String) -> AppError {
    AppError::new(ErrorCode::InvalidInput, message)
}

fn check_by(by: &str) -> Result<&str, AppError> {
    let by = by.trim();
    if by.is_empty() || by.chars().count() > crate::analysis::MAX_AUTHOR_CHARS {
        return Err(invalid(format!(
            "field `by`: expected the signer's name, found {by:?}"
        )));
    }
    Ok(by)
}

fn stored_as(what: &str, value: &str) -> AppError {
    AppError::storage(format!("stored {what} {value:?} is not one KV Gate knows"))
}

impl App {
    /// The evidence each check signs, as it stands now, and the candidate cells.
    async fn check_evidence(
        &self,
        study_id: i64,
    ) -> Result<(Vec<CheckEvidence>, Vec<String>), AppError> {
        let analysis = self.analyze(study_id).await?;
        let mut archived = Vec::new();
        for run in self.store.list_runs(study_id).await? {
            for e in self.store.run_evidence(run.id).await? {
                archived.push(ArchivedEvidence {
                    run: run.id,
                    cell: run.cell.clone(),
                    kind: EvidenceKind::parse(&e.kind)
                        .ok_or_else(|| stored_as("evidence kind", &e.kind))?,
                    sha256: e.sha256,
                });
            }
        }
        let labels = self
            .store
            .adjudications(study_id)
            .await?
            .into_iter()
            .map(|a| {
                Ok(AdjudicationEvidence {
                    label: AdjudicationLabel::parse(&a.label)
                        .ok_or_else(|| stored_as("label", &a.label))?,
                    pair: a.pair_id,
                    event: a.event_seq,
                    unblinded: a.unblinded,
                })
            })
            .collect::<Result<Vec<_>, AppError>>()?;
        let cells = &analysis.body.cells;
        let policy = &analysis.policy_sha256;
        let drain_s = self
            .policy_status(study_id)
            .await?
            .current
            .map(|p| p.policy.goodput.drain_s);
        let plan = self
            .recovery_status(study_id)
            .await?
            .current
            .map(|p| PlanEvidence {
                version: p.version,
                sha256: p.sha256,
                recorded_at: p.recorded_at,
                recorded_by: p.recorded_by,
                plan: p.plan,
            });
        let (recovery, findings) = RecoveryEvidence::new(plan, drain_s, cells);
        let candidates = cells
            .iter()
            .filter(|c| c.test_cell.is_candidate())
            .map(|c| c.cell.clone())
            .collect();
        let evidence = vec![
            CheckEvidence::Compatibility {
                evidence: CompatibilityEvidence::new(cells, archived),
            },
            CheckEvidence::Quality {
                evidence: QualityEvidence::new(
                    policy,
                    cells,
                    analysis.body.noise_floor.clone(),
                    labels,
                )
                .with_policy_marks(
                    analysis.policy_changed_after_results,
                    analysis.policy_first_lock_after_results,
                ),
            },
            CheckEvidence::Operations {
                evidence: OperationsEvidence::new(policy, cells),
            },
            CheckEvidence::Recovery {
                evidence: recovery,
                findings,
            },
        ];
        Ok((evidence, candidates))
    }

    /// The four checks with their current evidence digests and signatures, the candidates and
    /// the decisions.
    pub async fn checklist(&self, study_id: i64) -> Result<Checklist, AppError> {
        let (evidence, candidates) = self.check_evidence(study_id).await?;
        let events = self.store.audit_events(study_id).await?;
        let checks = evidence
            .into_iter()
            .map(|evidence| {
                let check = evidence.check();
                let digest = evidence.sha256();
                let signed = events
                    .iter()
                    .rev()
                    .find(|e| e.kind == AuditKind::Signoff && e.subject == check.as_str())
                    .cloned();
                let signed_sha256 = signed
                    .as_ref()
                    .and_then(|e| e.payload["evidence_sha256"].as_str().map(str::to_owned));
                let state = SignatureState::of(
                    signed.as_ref().map(|_| signed_sha256.as_deref()),
                    &digest,
                );
                let void_reason = match (&signed, state) {
                    (Some(e), SignatureState::Void) => Some(format!(
                        "signed by {} at {} over evidence {}; the evidence is now {}: the signature is void",
                        e.actor,
                        e.at,
                        signed_sha256.as_deref().unwrap_or("?"),
                        digest
                    )),
                    _ => None,
                };
                let signed_reason = signed
                    .as_ref()
                    .and_then(|e| e.payload["reason"].as_str().map(str::to_owned));
                CheckStatus {
                    blocker: evidence.blocker(),
                    failures: kvgate_core::decision::evidence_failures(&evidence),
                    signed_reason,
                    evidence,
                    evidence_sha256: digest,
                    signed,
                    signed_sha256,
                    state,
                    valid: state == SignatureState::Signed,
                    void_reason,
                }
            })
            .collect();
        let decisions = events
            .into_iter()
            .filter(|e| e.kind == AuditKind::Decision)
            .map(|event| RecordedDecision {
                record: serde_json::from_value(event.payload.clone()).ok(),
                event,
            })
            .collect();
        Ok(Checklist {
            study_id,
            checks,
            candidates,
            decisions,
        })
    }

    /// Signs a check over its current evidence digest.
    pub async fn sign_check(&self, input: SignInput) -> Result<AuditEvent, AppError> {
        let by = check_by(&input.by)?;
        let list = self.checklist(input.study_id).await?;
        let status = list
            .checks
            .iter()
            .find(|c| c.check() == input.check)
            .expect("every check is listed");
        if let Some(expected) = &input.expected_sha256 {
            if expected != &status.evidence_sha256 {
                return Err(AppError::new(
                    ErrorCode::Conflict,
                    format!(
                        "the {} evidence changed since it was shown ({expected}, now {}): review it again before signing",
                        input.check.as_str(),
                        status.evidence_sha256
                    ),
                ));
            }
        }
        match status.blocker {
            Some(SignBlocker::NoRecoveryPlan) => return Err(AppError::new(
                ErrorCode::Conflict,
                "the recovery check needs a recorded recovery plan (canary route, breach rule, \
                     drain deadline, dated rehearsal) before it can be signed: record one first \
                     (Sign-off screen, or `kvgate recovery record`)",
            )),
            None => {}
        }
        let reason = input.reason.trim();
        if reason.chars().count() > crate::review::MAX_NOTE_CHARS {
            return Err(invalid(format!(
                "field `reason`: expected at most {} characters",
                crate::review::MAX_NOTE_CHARS
            )));
        }
        let failures =
            kvgate_core::decision::gate_signature(&status.evidence, reason).map_err(|e| {
                AppError::new(
                    ErrorCode::Conflict,
                    format!("the {} check: {e}", input.check.as_str()),
                )
            })?;
        let mut payload = serde_json::json!({"evidence_sha256": status.evidence_sha256});
        if !reason.is_empty() {
            payload["reason"] = reason.into();
        }
        if !failures.is_empty() {
            payload["failures"] = failures.into();
        }
        Ok(self
            .store
            .append_audit_event(
                input.study_id,
                by,
                AuditKind::Signoff,
                input.check.as_str(),
                &payload,
            )
            .await?)
    }

    /// Records the decision for a candidate, with the outcome the decision table suggested.
    pub async fn decide(&self, input: DecideInput) -> Result<AuditEvent, AppError> {
        let by = check_by(&input.by)?;
        let analysis = self.analyze(input.study_id).await?;
        let Some(cell) = analysis
            .body
            .cells
            .iter()
            .find(|c| c.cell == input.candidate && c.test_cell.is_candidate())
        else {
            return Err(AppError::not_found(format!(
                "candidate {} not found among the study's frozen cells (B0 is the baseline, not a candidate)",
                input.candidate
            )));
        };
        let list = self.checklist(input.study_id).await?;
        let states: Vec<_> = list.checks.iter().map(|c| (c.check(), c.state)).collect();
        let rationale = input.rationale.trim().to_owned();
        if rationale.chars().count() > crate::review::MAX_NOTE_CHARS {
            return Err(invalid(format!(
                "field `rationale`: expected at most {} characters",
                crate::review::MAX_NOTE_CHARS
            )));
        }
        let gate = kvgate_core::decision::gate_decision(&states, input.override_gate, &rationale)
            .map_err(|e| AppError::new(ErrorCode::Conflict, e.to_string()))?;
        let record = DecisionRecord {
            outcome: input.outcome,
            rationale,
            overridden: gate.overridden,
            overridden_checks: gate.open,
            suggested: cell.decision.outcome,
            rules: cell.decision.rules.clone(),
            next_experiment: cell.decision.next_experiment.clone(),
            policy_sha256: analysis.policy_sha256.clone(),
            checks: list
                .checks
                .iter()
                .map(|c| CheckAtDecision {
                    check: c.check(),
                    valid: c.valid,
                    evidence_sha256: c.evidence_sha256.clone(),
                })
                .collect(),
        };
        let payload = serde_json::to_value(&record).expect("a decision serializes");
        Ok(self
            .store
            .append_audit_event(
                input.study_id,
                by,
                AuditKind::Decision,
                &input.candidate,
                &payload,
            )
            .await?)
    }
}
