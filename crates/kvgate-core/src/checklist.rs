//! The acceptance checklist's four checks and the evidence each one signs. The evidence is typed,
//! so a shell renders fields instead of reading JSON back, and hashed as canonical JSON, so a
//! signature names exactly what its signer saw: a later change of the evidence voids it.
//!
//! `kvgate-app` gathers the inputs (the analysis, the stored run evidence, the labels, the
//! recovery plan) and stores the signatures; the shape, the digest, the findings and whether a
//! check may be signed are decided here.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::analysis::{
    AcceptedFinding, CellAnalysis, ContractCheck, FloorCheck, HeldConstantFinding, NoiseFloor,
    PairedRow, RequestCounts,
};
use crate::canonical::canonical_sha256;
use crate::evidence::EvidenceKind;
use crate::kv_capacity::RollbackFit;
use crate::pairing::{is_output_length_stratum, CorpusMismatch, Unpaired};
use crate::recovery::{recovery_findings, RecoveryFinding, RecoveryPlan};
use crate::review::AdjudicationLabel;
use crate::stats::Percentiles;

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

// The evidence structs serialize to exactly the JSON the checklist has always hashed (field
// names, nesting, `null` for an absent value), so signatures made before they were typed hold.

/// Check 1: each frozen cell against its manifest, and the startup and metrics evidence archived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CompatibilityEvidence {
    pub cells: Vec<CompatibilityCell>,
    /// Every piece of run evidence stored, by run.
    pub evidence: Vec<ArchivedEvidence>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CompatibilityCell {
    pub cell: String,
    pub manifest_sha256: String,
    /// False for an invalid cell: it never gets a quality score.
    pub valid: bool,
    pub invalid_reasons: Vec<String>,
    /// Held-constant findings against B0 (or C1) no named intervention accepts: an
    /// uncontrolled comparison. Omitted when none, so signatures over held-constant cells hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<HeldConstantFinding>>", optional)]
    pub uncontrolled_findings: Vec<HeldConstantFinding>,
    /// Held-constant findings a named intervention accepts, with who, when and why; omitted
    /// when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<AcceptedFinding>>", optional)]
    pub accepted_findings: Vec<AcceptedFinding>,
}

/// One piece of run evidence as archived: its run, cell, kind and digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ArchivedEvidence {
    pub run: i64,
    pub cell: String,
    pub kind: EvidenceKind,
    pub sha256: String,
}

/// Check 2: per cell the paired rows and floors under the locked policy, the noise floor and the
/// reviewers' labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct QualityEvidence {
    pub policy_sha256: String,
    pub cells: Vec<QualityCell>,
    pub noise_floor: Option<NoiseFloor>,
    pub adjudications: Vec<AdjudicationEvidence>,
    /// The policy was changed after results existed; omitted when it was not, so signatures
    /// made before this was recorded hold.
    #[serde(default, skip_serializing_if = "is_false")]
    #[ts(as = "Option<bool>", optional)]
    pub policy_changed_after_results: bool,
    /// The policy was first locked after results existed: its floors were not set before
    /// results could be read. Omitted when it was not.
    #[serde(default, skip_serializing_if = "is_false")]
    #[ts(as = "Option<bool>", optional)]
    pub policy_first_lock_after_results: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct QualityCell {
    pub cell: String,
    pub manifest_sha256: String,
    /// Every paired row; the protected ones gate the candidate. The output-length stratum is
    /// read beside them, not signed: its classes come from the answers, not from the fixture
    /// strata the policy was locked over.
    pub paired: Vec<PairedRow>,
    pub floors: Vec<FloorCheck>,
    /// Judged items (and runs) left without a pair, with why; omitted when every one paired.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<Unpaired>>", optional)]
    pub unpaired: Vec<Unpaired>,
    /// Runs over another corpus than the manifest's evaluation corpus; omitted when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<CorpusMismatch>>", optional)]
    pub corpus_mismatches: Vec<CorpusMismatch>,
}

/// One reviewer's label on a pair, with the audit event that recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct AdjudicationEvidence {
    pub pair: String,
    pub label: AdjudicationLabel,
    pub event: i64,
    /// Given after the reveal (a relabel), counted apart; omitted for a blind label, so
    /// signatures made over blind labels hold.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(optional, as = "Option<bool>")]
    pub unblinded: bool,
}

/// Check 3: per cell the request outcomes and, per class, latency percentiles and useful goodput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct OperationsEvidence {
    pub policy_sha256: String,
    pub cells: Vec<OperationsCell>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct OperationsCell {
    pub cell: String,
    pub manifest_sha256: String,
    pub requests: RequestCountsEvidence,
    /// Per class.
    pub latency: BTreeMap<String, LatencyEvidence>,
    /// Per class.
    pub goodput: BTreeMap<String, GoodputEvidence>,
    /// The class contracts (error, completion rates) as checked; left out when the policy
    /// declares none, so evidence signed before contracts existed keeps its digest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(optional, as = "Option<Vec<ContractCheck>>")]
    pub contracts: Vec<ContractCheck>,
}

/// A cell's request counts as Check 3 signs them. Server refusals keep the key `rejected` they
/// were signed under before the analysis called them `refused`, so those signatures still hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RequestCountsEvidence {
    pub offered: u64,
    pub completed: u64,
    pub failed: u64,
    /// Refused by the server (the analysis's `refused`).
    #[serde(rename = "rejected")]
    pub refused: u64,
    pub timeout: u64,
    pub unfinished: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub validated: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub accepted: Option<u64>,
}

impl From<&RequestCounts> for RequestCountsEvidence {
    fn from(r: &RequestCounts) -> Self {
        RequestCountsEvidence {
            offered: r.offered,
            completed: r.completed,
            failed: r.failed,
            refused: r.refused,
            timeout: r.timeout,
            unfinished: r.unfinished,
            validated: r.validated,
            accepted: r.accepted,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct LatencyEvidence {
    pub ttft_ms: Percentiles,
    pub itl_ms: Percentiles,
    pub e2e_ms: Percentiles,
    /// `ok` requests of the class.
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct GoodputEvidence {
    /// Useful goodput per second; absent when it cannot be computed.
    pub per_s: Option<f64>,
    pub good: u64,
    pub cohort: u64,
    /// Counted on SLOs only (no verdicts).
    pub slo_only: bool,
}

/// Check 4: the drain deadline of the locked policy, the recovery plan in force, what the signer
/// must weigh, and per cell whether rollback fits B0's cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RecoveryEvidence {
    pub drain_s: Option<f64>,
    /// Absent until a plan is recorded: the check cannot be signed without one.
    pub plan: Option<PlanEvidence>,
    /// The findings' sentences (their kinds travel beside the evidence, see [`CheckEvidence`]).
    pub findings: Vec<String>,
    pub cells: Vec<RollbackCell>,
}

/// The recovery plan version in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct PlanEvidence {
    pub version: i64,
    pub sha256: String,
    pub recorded_at: String,
    pub recorded_by: String,
    pub plan: RecoveryPlan,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RollbackCell {
    pub cell: String,
    pub rollback_fit: Option<RollbackFit>,
    /// Why the fit could not be modelled, when it could not.
    pub model_note: Option<String>,
}

/// Why a check cannot be signed as its evidence stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SignBlocker {
    /// The recovery check needs a recorded recovery plan.
    NoRecoveryPlan,
}

/// A check with the evidence it signs. Serialized as `{"check": …, "evidence": …}` (and, for
/// recovery, the findings with their kinds), so a shell can tell the shape by the check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(tag = "check", rename_all = "snake_case")]
pub enum CheckEvidence {
    Compatibility {
        evidence: CompatibilityEvidence,
    },
    Quality {
        evidence: QualityEvidence,
    },
    Operations {
        evidence: OperationsEvidence,
    },
    Recovery {
        evidence: RecoveryEvidence,
        /// The evidence's findings with their kinds, in the same order.
        findings: Vec<RecoveryFinding>,
    },
}

impl CheckEvidence {
    pub fn check(&self) -> Check {
        match self {
            CheckEvidence::Compatibility { .. } => Check::Compatibility,
            CheckEvidence::Quality { .. } => Check::Quality,
            CheckEvidence::Operations { .. } => Check::Operations,
            CheckEvidence::Recovery { .. } => Check::Recovery,
        }
    }

    /// The evidence as it is hashed.
    pub fn evidence_json(&self) -> Value {
        let v = match self {
            CheckEvidence::Compatibility { evidence } => serde_json::to_value(evidence),
            CheckEvidence::Quality { evidence } => serde_json::to_value(evidence),
            CheckEvidence::Operations { evidence } => serde_json::to_value(evidence),
            CheckEvidence::Recovery { evidence, .. } => serde_json::to_value(evidence),
        };
        v.expect("evidence serializes")
    }

    /// sha256 of the canonical JSON of the evidence: what a signature is made over.
    pub fn sha256(&self) -> String {
        canonical_sha256(&self.evidence_json())
    }

    /// Why the check cannot be signed now; None when it can.
    pub fn blocker(&self) -> Option<SignBlocker> {
        match self {
            CheckEvidence::Recovery { evidence, .. } if evidence.plan.is_none() => {
                Some(SignBlocker::NoRecoveryPlan)
            }
            _ => None,
        }
    }
}

/// Where a check's signature stands against the evidence now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SignatureState {
    Unsigned,
    /// Signed over the evidence as it stands.
    Signed,
    /// Signed over evidence that has changed since: the signature no longer holds.
    Void,
}

impl SignatureState {
    /// `signed_over`: None when the check was never signed, else the digest its latest signature
    /// names (None when it names none).
    pub fn of(signed_over: Option<Option<&str>>, evidence_sha256: &str) -> SignatureState {
        match signed_over {
            None => SignatureState::Unsigned,
            Some(Some(digest)) if digest == evidence_sha256 => SignatureState::Signed,
            Some(_) => SignatureState::Void,
        }
    }
}

impl CompatibilityEvidence {
    pub fn new(cells: &[CellAnalysis], evidence: Vec<ArchivedEvidence>) -> Self {
        CompatibilityEvidence {
            cells: cells
                .iter()
                .map(|c| CompatibilityCell {
                    cell: c.cell.clone(),
                    manifest_sha256: c.manifest_sha256.clone(),
                    valid: c.valid,
                    invalid_reasons: c.invalid_reasons.clone(),
                    uncontrolled_findings: c.decision.uncontrolled_findings.clone(),
                    accepted_findings: c.decision.accepted_findings.clone(),
                })
                .collect(),
            evidence,
        }
    }
}

impl QualityEvidence {
    pub fn new(
        policy_sha256: &str,
        cells: &[CellAnalysis],
        noise_floor: Option<NoiseFloor>,
        adjudications: Vec<AdjudicationEvidence>,
    ) -> Self {
        QualityEvidence {
            policy_sha256: policy_sha256.to_owned(),
            cells: cells
                .iter()
                .map(|c| QualityCell {
                    cell: c.cell.clone(),
                    manifest_sha256: c.manifest_sha256.clone(),
                    paired: c
                        .paired
                        .iter()
                        .filter(|r| !is_output_length_stratum(&r.stratum))
                        .cloned()
                        .collect(),
                    floors: c.floors.clone(),
                    unpaired: c.unpaired.clone(),
                    corpus_mismatches: c.corpus_mismatches.clone(),
                })
                .collect(),
            noise_floor,
            adjudications,
            policy_changed_after_results: false,
            policy_first_lock_after_results: false,
        }
    }

    /// The same evidence, naming how the policy's lock stands to the results.
    pub fn with_policy_marks(
        mut self,
        changed_after_results: bool,
        first_lock_after_results: bool,
    ) -> Self {
        self.policy_changed_after_results = changed_after_results;
        self.policy_first_lock_after_results = first_lock_after_results;
        self
    }
}

impl OperationsEvidence {
    pub fn new(policy_sha256: &str, cells: &[CellAnalysis]) -> Self {
        OperationsEvidence {
            policy_sha256: policy_sha256.to_owned(),
            cells: cells
                .iter()
                .map(|c| OperationsCell {
                    cell: c.cell.clone(),
                    manifest_sha256: c.manifest_sha256.clone(),
                    requests: (&c.requests).into(),
                    latency: c
                        .latency
                        .iter()
                        .map(|(class, l)| {
                            let l = LatencyEvidence {
                                ttft_ms: l.ttft_ms.clone(),
                                itl_ms: l.itl_ms.clone(),
                                e2e_ms: l.e2e_ms.clone(),
                                count: l.count,
                            };
                            (class.clone(), l)
                        })
                        .collect(),
                    goodput: c
                        .goodput
                        .iter()
                        .map(|(class, g)| {
                            let g = GoodputEvidence {
                                per_s: g.per_s,
                                good: g.good,
                                cohort: g.cohort,
                                slo_only: g.slo_only,
                            };
                            (class.clone(), g)
                        })
                        .collect(),
                    contracts: c.contracts.clone(),
                })
                .collect(),
        }
    }
}

impl RecoveryEvidence {
    /// The evidence with its findings: the plan in force against the locked policy's drain
    /// (`policy_drain_s`) and each candidate's rollback fit.
    pub fn new(
        plan: Option<PlanEvidence>,
        policy_drain_s: Option<f64>,
        cells: &[CellAnalysis],
    ) -> (Self, Vec<RecoveryFinding>) {
        let fits: Vec<(String, Option<bool>)> = cells
            .iter()
            .filter(|c| c.test_cell.is_candidate())
            .map(|c| {
                let fits = c.capacity.rollback_fit.as_ref().map(|f| f.fits);
                (c.cell.clone(), fits)
            })
            .collect();
        let findings = recovery_findings(plan.as_ref().map(|p| &p.plan), policy_drain_s, &fits);
        let evidence = RecoveryEvidence {
            drain_s: policy_drain_s,
            plan,
            findings: findings.iter().map(|f| f.text.clone()).collect(),
            cells: cells
                .iter()
                .map(|c| RollbackCell {
                    cell: c.cell.clone(),
                    rollback_fit: c.capacity.rollback_fit.clone(),
                    model_note: c.capacity.model_note.clone(),
                })
                .collect(),
        };
        (evidence, findings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv_capacity::RollbackFit;
    use crate::recovery::RecoveryFindingKind;
    use serde_json::json;

    /// The evidence of the demo study as the checklist hashed it before it was typed.
    fn golden() -> Value {
        serde_json::from_str(include_str!("../../../fixtures/signoff/demo-evidence.json")).unwrap()
    }

    fn typed(name: &str, evidence: Value) -> CheckEvidence {
        if name.starts_with("compatibility") {
            CheckEvidence::Compatibility {
                evidence: serde_json::from_value(evidence).unwrap(),
            }
        } else if name.starts_with("quality") {
            CheckEvidence::Quality {
                evidence: serde_json::from_value(evidence).unwrap(),
            }
        } else if name.starts_with("operations") {
            CheckEvidence::Operations {
                evidence: serde_json::from_value(evidence).unwrap(),
            }
        } else {
            CheckEvidence::Recovery {
                evidence: serde_json::from_value(evidence).unwrap(),
                findings: Vec::new(),
            }
        }
    }

    #[test]
    fn typed_evidence_hashes_to_the_digests_signed_before_it_was_typed() {
        let golden = golden();
        let checks = golden["checks"].as_array().unwrap();
        assert_eq!(checks.len(), 7);
        for c in checks {
            let name = c["name"].as_str().unwrap();
            let typed = typed(name, c["evidence"].clone());
            assert_eq!(typed.evidence_json(), c["evidence"], "{name}");
            assert_eq!(typed.sha256(), c["sha256"].as_str().unwrap(), "{name}");
        }
    }

    #[test]
    fn absent_values_stay_in_the_hashed_json_as_null() {
        let (evidence, findings) = RecoveryEvidence::new(None, None, &[]);
        let e = CheckEvidence::Recovery { evidence, findings };
        assert_eq!(
            e.evidence_json(),
            json!({"drain_s": null, "plan": null, "cells": [], "findings": [
                "no recovery plan recorded: canary route, breach rule, drain deadline and a dated rehearsal are required before this check can be signed"
            ]})
        );
        let cell = RollbackCell {
            cell: "C1".into(),
            rollback_fit: Some(RollbackFit {
                required_bytes: 12,
                budget_bytes: 8,
                fits: false,
                shortfall_bytes: Some(4),
                max_sequences_that_fit: 21,
                caveat: "a model estimate".into(),
            }),
            model_note: None,
        };
        assert_eq!(
            serde_json::to_value(cell).unwrap(),
            json!({"cell": "C1", "model_note": null, "rollback_fit": {
                "required_bytes": 12, "budget_bytes": 8, "fits": false, "shortfall_bytes": 4,
                "max_sequences_that_fit": 21, "caveat": "a model estimate"}})
        );
    }

    #[test]
    fn recovery_needs_a_plan_before_it_can_be_signed() {
        let golden = golden();
        let checks = golden["checks"].as_array().unwrap();
        let blockers: Vec<(&str, Option<SignBlocker>)> = checks
            .iter()
            .map(|c| {
                let name = c["name"].as_str().unwrap();
                (name, typed(name, c["evidence"].clone()).blocker())
            })
            .collect();
        for (name, blocker) in blockers {
            let expected =
                (name == "recovery without a plan").then_some(SignBlocker::NoRecoveryPlan);
            assert_eq!(blocker, expected, "{name}");
        }
    }

    #[test]
    fn recovery_findings_keep_their_kinds_beside_the_hashed_sentences() {
        let golden = golden();
        let with_plan = &golden["checks"][6]["evidence"];
        let plan: PlanEvidence = serde_json::from_value(with_plan["plan"].clone()).unwrap();
        let (evidence, findings) = RecoveryEvidence::new(Some(plan), Some(600.0), &[]);
        assert_eq!(
            findings.iter().map(|f| f.kind).collect::<Vec<_>>(),
            vec![
                RecoveryFindingKind::RehearsalStepFailed,
                RecoveryFindingKind::DrainDiffers
            ]
        );
        let texts: Vec<&str> = findings.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(evidence.findings, texts);
        assert_eq!(
            evidence.findings[..],
            with_plan["findings"].as_array().unwrap()[..2]
        );
    }

    #[test]
    fn a_signature_holds_while_it_names_the_evidence_now() {
        let now = "a".repeat(64);
        assert_eq!(SignatureState::of(None, &now), SignatureState::Unsigned);
        assert_eq!(
            SignatureState::of(Some(Some(&now)), &now),
            SignatureState::Signed
        );
        assert_eq!(
            SignatureState::of(Some(Some(&"b".repeat(64))), &now),
            SignatureState::Void
        );
        assert_eq!(SignatureState::of(Some(None), &now), SignatureState::Void);
    }

    #[test]
    fn a_check_serializes_with_its_name_beside_its_evidence() {
        let golden = golden();
        let c = &golden["checks"][0];
        let e = typed("compatibility", c["evidence"].clone());
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["check"], "compatibility");
        assert_eq!(v["evidence"], c["evidence"]);
        let back: CheckEvidence = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
        assert_eq!(back.check(), Check::Compatibility);
        assert_eq!(Check::parse("recovery"), Some(Check::Recovery));
    }
}
