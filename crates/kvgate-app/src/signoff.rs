//! The acceptance checklist and the decision: each of the four checks is signed with the sha256
//! of the evidence the signer saw; a later change of that evidence voids the signature, visibly.
//! Sign-offs and decisions are events of the study's audit chain.

use kvgate_core::canonical::{canonical_json, sha256_hex};
use kvgate_core::recovery::recovery_findings;
use kvgate_core::review::{AuditEvent, AuditKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use ts_rs::TS;

use crate::{App, AppError, ErrorCode};

/// The guide's four checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    Compatibility,
    Quality,
    Operations,
    Recovery,
}

impl Check {
    pub const ALL: [Check; 4] = [
        Check::Compatibility,
        Check::Quality,
        Check::Operations,
        Check::Recovery,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Check::Compatibility => "compatibility",
            Check::Quality => "quality",
            Check::Operations => "operations",
            Check::Recovery => "recovery",
        }
    }

    pub fn parse(s: &str) -> Option<Check> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// The decision recorded for a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionOutcome {
    /// Keep B0.
    Retain,
    /// Next experiment: scales, backend, layer exclusion.
    Calibrate,
    Rollback,
}

impl DecisionOutcome {
    pub fn parse(s: &str) -> Option<DecisionOutcome> {
        match s {
            "retain" => Some(DecisionOutcome::Retain),
            "calibrate" => Some(DecisionOutcome::Calibrate),
            "rollback" => Some(DecisionOutcome::Rollback),
            _ => None,
        }
    }
}

/// One check's state: the evidence now, and the last signature with whether it still holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CheckStatus {
    pub check: Check,
    /// sha256 of the evidence as it stands now.
    pub evidence_sha256: String,
    /// The evidence itself, as hashed.
    #[ts(type = "unknown")]
    pub evidence: Value,
    /// The latest signature, if any.
    pub signed: Option<AuditEvent>,
    /// True when signed and the evidence has not changed since.
    pub valid: bool,
    /// Why the signature is void, when it is.
    pub void_reason: Option<String>,
}

/// The checklist of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct Checklist {
    pub study_id: i64,
    pub checks: Vec<CheckStatus>,
    /// The decisions recorded, oldest first.
    pub decisions: Vec<AuditEvent>,
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

impl App {
    /// The evidence each check signs, as it stands now.
    async fn check_evidence(&self, study_id: i64) -> Result<Vec<(Check, Value)>, AppError> {
        let analysis = self.analyze(study_id).await?;
        let runs = self.store.list_runs(study_id).await?;
        let mut startup = Vec::new();
        for run in &runs {
            for e in self.store.run_evidence(run.id).await? {
                startup.push(
                    json!({"run": run.id, "cell": run.cell, "kind": e.kind, "sha256": e.sha256}),
                );
            }
        }
        let cells = &analysis.body.cells;
        let compatibility = json!({
            "cells": cells.iter().map(|c| json!({
                "cell": c.cell, "manifest_sha256": c.manifest_sha256, "valid": c.valid,
                "invalid_reasons": c.invalid_reasons,
            })).collect::<Vec<_>>(),
            "evidence": startup,
        });
        let labels: Vec<Value> = self
            .store
            .adjudications(study_id)
            .await?
            .into_iter()
            .map(|a| json!({"pair": a.pair_id, "label": a.label, "event": a.event_seq}))
            .collect();
        let quality = json!({
            "policy_sha256": analysis.policy_sha256,
            "cells": cells.iter().map(|c| json!({
                "cell": c.cell, "manifest_sha256": c.manifest_sha256,
                "paired": c.paired, "floors": c.floors,
            })).collect::<Vec<_>>(),
            "noise_floor": analysis.body.noise_floor,
            "adjudications": labels,
        });
        let operations = json!({
            "policy_sha256": analysis.policy_sha256,
            "cells": cells.iter().map(|c| json!({
                "cell": c.cell, "manifest_sha256": c.manifest_sha256, "requests": c.requests,
                "latency": c.latency.iter().map(|(k, l)| (k.clone(), json!({
                    "ttft_ms": l.ttft_ms, "itl_ms": l.itl_ms, "e2e_ms": l.e2e_ms, "count": l.count,
                }))).collect::<serde_json::Map<_, _>>(),
                "goodput": c.goodput.iter().map(|(k, g)| (k.clone(), json!({
                    "per_s": g.per_s, "good": g.good, "cohort": g.cohort, "slo_only": g.slo_only,
                }))).collect::<serde_json::Map<_, _>>(),
            })).collect::<Vec<_>>(),
        });
        let policy = self.policy_status(study_id).await?.current;
        let plan = self.recovery_status(study_id).await?.current;
        let policy_drain_s = policy.as_ref().map(|p| p.policy.goodput.drain_s);
        let fits: Vec<(String, Option<bool>)> = cells
            .iter()
            .filter(|c| c.cell != "B0")
            .map(|c| {
                (
                    c.cell.clone(),
                    c.capacity.rollback_fit.as_ref().map(|f| f.fits),
                )
            })
            .collect();
        let findings = recovery_findings(plan.as_ref().map(|p| &p.plan), policy_drain_s, &fits);
        let recovery = json!({
            "drain_s": policy_drain_s,
            "plan": plan.as_ref().map(|p| json!({
                "version": p.version, "sha256": p.sha256, "recorded_at": p.recorded_at,
                "recorded_by": p.recorded_by, "plan": p.plan,
            })),
            "findings": findings,
            "cells": cells.iter().map(|c| json!({
                "cell": c.cell, "rollback_fit": c.capacity.rollback_fit,
                "model_note": c.capacity.model_note,
            })).collect::<Vec<_>>(),
        });
        Ok(vec![
            (Check::Compatibility, compatibility),
            (Check::Quality, quality),
            (Check::Operations, operations),
            (Check::Recovery, recovery),
        ])
    }

    /// The four checks with their current evidence digests and signatures, and the decisions.
    pub async fn checklist(&self, study_id: i64) -> Result<Checklist, AppError> {
        let evidence = self.check_evidence(study_id).await?;
        let events = self.store.audit_events(study_id).await?;
        let checks = evidence
            .into_iter()
            .map(|(check, evidence)| {
                let digest = sha256_hex(canonical_json(&evidence).as_bytes());
                let signed = events
                    .iter()
                    .rev()
                    .find(|e| e.kind == AuditKind::Signoff && e.subject == check.as_str())
                    .cloned();
                let signed_digest = signed
                    .as_ref()
                    .and_then(|e| e.payload["evidence_sha256"].as_str().map(str::to_owned));
                let valid = signed_digest.as_deref() == Some(digest.as_str());
                let void_reason = match (&signed, valid) {
                    (Some(e), false) => Some(format!(
                        "signed by {} at {} over evidence {}; the evidence is now {}: the signature is void",
                        e.actor,
                        e.at,
                        signed_digest.as_deref().unwrap_or("?"),
                        digest
                    )),
                    _ => None,
                };
                CheckStatus {
                    check,
                    evidence_sha256: digest,
                    evidence,
                    signed,
                    valid,
                    void_reason,
                }
            })
            .collect();
        let decisions = events
            .into_iter()
            .filter(|e| e.kind == AuditKind::Decision)
            .collect();
        Ok(Checklist {
            study_id,
            checks,
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
            .find(|c| c.check == input.check)
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
        if input.check == Check::Recovery && status.evidence["plan"].is_null() {
            return Err(AppError::new(
                ErrorCode::Conflict,
                "the recovery check needs a recorded recovery plan (canary route, breach rule, \
                 drain deadline, dated rehearsal) before it can be signed: record one first \
                 (Sign-off screen, or `kvgate recovery record`)",
            ));
        }
        let payload = json!({"evidence_sha256": status.evidence_sha256});
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
            .find(|c| c.cell == input.candidate && c.cell != "B0")
        else {
            return Err(AppError::not_found(format!(
                "candidate {} not found among the study's frozen cells (B0 is the baseline, not a candidate)",
                input.candidate
            )));
        };
        let list = self.checklist(input.study_id).await?;
        let signed: Vec<Value> = list
            .checks
            .iter()
            .map(|c| json!({"check": c.check, "valid": c.valid, "evidence_sha256": c.evidence_sha256}))
            .collect();
        let payload = json!({
            "outcome": input.outcome,
            "rationale": input.rationale,
            "suggested": cell.decision.outcome,
            "rules": cell.decision.rules,
            "next_experiment": cell.decision.next_experiment,
            "policy_sha256": analysis.policy_sha256,
            "checks": signed,
        });
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
