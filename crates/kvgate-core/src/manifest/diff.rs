//! The candidate-vs-reference diff: every changed field of two manifests as a classified
//! finding (a weights change, a held-constant field, the named intervention, …).

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use super::Manifest;
use crate::canonical;

/// How a difference between two manifests is to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// weights_digest differs: the weights changed, not just the KV representation.
    HiddenWeightChange,
    /// A field that must be held constant differs.
    HeldConstantViolation,
    /// Backend, kernel or attention precision changed along with the KV change.
    CoupledIntervention,
    /// A difference the intervention is expected to make (KV dtype, scales, skipped layers).
    Intervention,
    /// Naming only: cell, candidate id, label, notes.
    Identity,
}

/// How loudly a finding is shown.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Red,
    Amber,
    Info,
}

impl FindingKind {
    pub fn severity(self) -> Severity {
        match self {
            FindingKind::HiddenWeightChange | FindingKind::HeldConstantViolation => Severity::Red,
            FindingKind::CoupledIntervention => Severity::Amber,
            FindingKind::Intervention | FindingKind::Identity => Severity::Info,
        }
    }
}

/// One field that differs between a reference manifest and a compared one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct Finding {
    /// Path of the differing field, e.g. `decoding.temperature` or `effective_args.kv_cache_dtype`.
    pub path: String,
    pub kind: FindingKind,
    pub severity: Severity,
    /// Canonical JSON of the reference's value; absent when the reference lacks the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_value: Option<String>,
    /// Canonical JSON of the compared manifest's value; absent when it lacks the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_value: Option<String>,
    pub message: String,
}

/// The guide's warning, shown on a C1→C2 comparison that changes more than calibration.
pub const C1_C2_COUPLING_WARNING: &str = "Do not silently switch kernels between C1 and C2 and \
     attribute everything to calibration. Where coupling cannot be avoided, name the complete \
     intervention and compare the deployment bundles rather than claiming a causal cache-only effect.";

const IDENTITY_FIELDS: &[&str] = &["cell", "candidate_id", "label", "notes"];
const INTERVENTION_FIELDS: &[&str] = &[
    "kv_dtype",
    "scale_granularity",
    "scale_source",
    "scales_observed_loaded",
    "scale_artifact_sha256",
    "calibration_corpus_sha256",
    "skipped_layers",
];
const COUPLED_FIELDS: &[&str] = &[
    "attention_backend",
    "kernel_revision",
    "query_attention_precision",
];
/// Engine arguments that set the KV representation.
const KV_ARGS: &[&str] = &[
    "kv_cache_dtype",
    "kv_cache_dtype_skip_layers",
    "calculate_kv_scales",
    "cache_type_k",
    "cache_type_v",
];
/// Engine arguments that choose the attention backend.
const BACKEND_ARGS: &[&str] = &[
    "attention_backend",
    "VLLM_ATTENTION_BACKEND",
    "flash_attn",
    "flash_attn_type",
];
/// Intervention fields that must not change between C1 and C2: C2 differs by calibration only.
const C1_C2_FIXED: &[&str] = &[
    "kv_dtype",
    "skipped_layers",
    "kv_cache_dtype",
    "cache_type_k",
    "cache_type_v",
    "kv_cache_dtype_skip_layers",
];

/// The guide's warning for a C1↔C2 comparison that also changes backend, kernel or attention
/// precision (calibration would otherwise get the credit for a kernel switch); `None` otherwise.
pub fn calibration_coupling_warning(
    reference_cell: &str,
    candidate_cell: &str,
    findings: &[Finding],
) -> Option<&'static str> {
    let calibration_pair = matches!(
        (reference_cell, candidate_cell),
        ("C1", "C2") | ("C2", "C1")
    );
    let coupled = findings
        .iter()
        .any(|f| f.kind == FindingKind::CoupledIntervention);
    (calibration_pair && coupled).then_some(C1_C2_COUPLING_WARNING)
}

/// Every field that differs between `reference` (B0, or C1 for a C1→C2 comparison) and
/// `candidate`, classified. Sorted by severity, then path.
pub fn diff(reference: &Manifest, candidate: &Manifest) -> Vec<Finding> {
    let a = serde_json::to_value(reference).unwrap_or(Value::Null);
    let b = serde_json::to_value(candidate).unwrap_or(Value::Null);
    let mut leaves = Vec::new();
    collect_differences(String::new(), Some(&a), Some(&b), &mut leaves);
    let c1_to_c2 = reference.cell == "C1" && candidate.cell == "C2";
    let mut findings: Vec<Finding> = leaves
        .into_iter()
        .map(|(path, ra, cb)| {
            let (kind, message) = classify(&path, reference, c1_to_c2);
            Finding {
                severity: kind.severity(),
                kind,
                reference_value: ra.map(|v| canonical::canonical_json(&v)),
                candidate_value: cb.map(|v| canonical::canonical_json(&v)),
                path,
                message,
            }
        })
        .collect();
    findings.sort_by(|x, y| (x.severity, &x.path).cmp(&(y.severity, &y.path)));
    findings
}

type Leaf = (String, Option<Value>, Option<Value>);

pub(super) fn collect_differences(
    path: String,
    a: Option<&Value>,
    b: Option<&Value>,
    out: &mut Vec<Leaf>,
) {
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                collect_differences(child, x.get(key), y.get(key), out);
            }
        }
        // Canonical text decides equality: `0` and `0.0` are the same number.
        (a, b) => {
            if a.map(canonical::canonical_json) != b.map(canonical::canonical_json) {
                out.push((path, a.cloned(), b.cloned()));
            }
        }
    }
}

fn classify(path: &str, reference: &Manifest, c1_to_c2: bool) -> (FindingKind, String) {
    let (top, rest) = path.split_once('.').unwrap_or((path, ""));
    let reference_name = if reference.cell == "B0" {
        "B0".to_owned()
    } else {
        format!("the reference cell {}", reference.cell)
    };
    let arg = if top == "effective_args" { rest } else { "" };
    if top == "weights_digest" {
        return (
            FindingKind::HiddenWeightChange,
            format!("hidden weight change: the weight tensors differ from {reference_name}'s; the experiment must change the KV representation only"),
        );
    }
    if IDENTITY_FIELDS.contains(&top) {
        return (
            FindingKind::Identity,
            format!("`{path}` names the bundle; expected to differ"),
        );
    }
    let is_coupled = COUPLED_FIELDS.contains(&top) || BACKEND_ARGS.contains(&arg);
    let is_intervention = INTERVENTION_FIELDS.contains(&top) || KV_ARGS.contains(&arg);
    if c1_to_c2 && (is_coupled || C1_C2_FIXED.contains(&top) || C1_C2_FIXED.contains(&arg)) {
        return (
            FindingKind::CoupledIntervention,
            format!("coupled intervention: `{path}` changes between C1 and C2 besides calibration. {C1_C2_COUPLING_WARNING}"),
        );
    }
    if is_coupled {
        return (
            FindingKind::CoupledIntervention,
            format!("coupled intervention: `{path}` changes together with the KV representation, so the intervention includes attention arithmetic; name the complete intervention rather than claiming a cache-only effect"),
        );
    }
    if is_intervention {
        return (
            FindingKind::Intervention,
            format!("`{path}` is part of the KV intervention; expected to differ"),
        );
    }
    (
        FindingKind::HeldConstantViolation,
        format!("`{path}` must be held constant but differs from {reference_name}"),
    )
}
