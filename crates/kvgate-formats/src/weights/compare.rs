//! Base checkpoint against candidate: were the weights kept, and were only scales added?

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{shape_text, CheckpointDigest, TensorDigest};

/// What differs about one weight tensor. One kind per tensor, the first that applies in this
/// order: dtype, shape, bytes.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DifferenceKind {
    Dtype,
    Shape,
    Bytes,
    /// In the base, not in the candidate.
    Missing,
    /// In the candidate, not in the base.
    Extra,
}

impl DifferenceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DifferenceKind::Dtype => "dtype",
            DifferenceKind::Shape => "shape",
            DifferenceKind::Bytes => "bytes",
            DifferenceKind::Missing => "missing",
            DifferenceKind::Extra => "extra",
        }
    }
}

/// One weight tensor that differs between base and candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct TensorDifference {
    pub name: String,
    pub what: DifferenceKind,
    /// The base's dtype, shape or sha256 (whichever `what` names); absent when missing there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate: Option<String>,
}

/// The answer to "did the weights stay the same?".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WeightsVerdict {
    WeightsIdentical,
    /// Same weights; the candidate has `count` scale tensors the base has not.
    WeightsIdenticalScalesAdded {
        count: u64,
    },
    /// The hidden weight change the guide warns about.
    WeightsDiffer {
        differences: Vec<TensorDifference>,
    },
}

/// Base against candidate: the verdict over weight tensors, and what happened to scale tensors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct WeightsComparison {
    pub verdict: WeightsVerdict,
    pub base_weights_digest: String,
    pub candidate_weights_digest: String,
    /// Scale tensors only the candidate has.
    pub scales_added: Vec<String>,
    /// Scale tensors only the base has.
    pub scales_removed: Vec<String>,
    /// Scale tensors in both whose dtype, shape or bytes differ (recalibrated).
    pub scales_changed: Vec<String>,
}

impl WeightsComparison {
    /// True unless the verdict is `weights differ`: the exit status of `kvgate weights compare`.
    pub fn weights_identical(&self) -> bool {
        !matches!(self.verdict, WeightsVerdict::WeightsDiffer { .. })
    }

    /// The verdict line: `weights identical, scales added (N)`, `weights identical` or
    /// `weights differ`.
    pub fn summary(&self) -> String {
        match &self.verdict {
            WeightsVerdict::WeightsIdentical => "weights identical".to_owned(),
            WeightsVerdict::WeightsIdenticalScalesAdded { count } => {
                format!("weights identical, scales added ({count})")
            }
            WeightsVerdict::WeightsDiffer { .. } => "weights differ".to_owned(),
        }
    }
}

/// The verdict line, then one indented line per differing weight tensor, then scale tensors
/// removed or changed (added ones are counted in the verdict line).
impl fmt::Display for WeightsComparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())?;
        if let WeightsVerdict::WeightsDiffer { differences } = &self.verdict {
            for d in differences {
                write!(f, "\n  {}: {}", d.what.as_str(), d.name)?;
                match (&d.base, &d.candidate) {
                    (Some(b), Some(c)) if d.what == DifferenceKind::Bytes => {
                        write!(f, " (sha256 {} → {})", short(b), short(c))?
                    }
                    (Some(b), Some(c)) => write!(f, " ({b} → {c})")?,
                    _ => {}
                }
            }
        }
        for name in &self.scales_removed {
            write!(f, "\n  scale removed: {name}")?;
        }
        for name in &self.scales_changed {
            write!(f, "\n  scale changed: {name}")?;
        }
        Ok(())
    }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// Compares the weight tensors of `candidate` with those of `base`, by name.
pub fn compare(base: &CheckpointDigest, candidate: &CheckpointDigest) -> WeightsComparison {
    let base_weights: BTreeMap<&str, &TensorDigest> =
        base.tensors.iter().map(|t| (t.name.as_str(), t)).collect();
    let cand_weights: BTreeMap<&str, &TensorDigest> = candidate
        .tensors
        .iter()
        .map(|t| (t.name.as_str(), t))
        .collect();

    let mut differences = Vec::new();
    for (name, b) in &base_weights {
        match cand_weights.get(name) {
            None => differences.push(TensorDifference {
                name: name.to_string(),
                what: DifferenceKind::Missing,
                base: Some(format!("{} {}", b.dtype, shape_text(&b.shape))),
                candidate: None,
            }),
            Some(c) => {
                if let Some((what, bv, cv)) = tensor_change(b, c) {
                    differences.push(TensorDifference {
                        name: name.to_string(),
                        what,
                        base: Some(bv),
                        candidate: Some(cv),
                    });
                }
            }
        }
    }
    for (name, c) in &cand_weights {
        if !base_weights.contains_key(name) {
            differences.push(TensorDifference {
                name: name.to_string(),
                what: DifferenceKind::Extra,
                base: None,
                candidate: Some(format!("{} {}", c.dtype, shape_text(&c.shape))),
            });
        }
    }
    differences.sort_by(|a, b| (&a.name, a.what).cmp(&(&b.name, b.what)));

    let base_scales: BTreeMap<&str, &TensorDigest> = base
        .scale_tensors
        .iter()
        .map(|s| (s.tensor.name.as_str(), &s.tensor))
        .collect();
    let cand_scales: BTreeMap<&str, &TensorDigest> = candidate
        .scale_tensors
        .iter()
        .map(|s| (s.tensor.name.as_str(), &s.tensor))
        .collect();
    let scales_added: Vec<String> = cand_scales
        .keys()
        .filter(|n| !base_scales.contains_key(*n))
        .map(|n| n.to_string())
        .collect();
    let scales_removed: Vec<String> = base_scales
        .keys()
        .filter(|n| !cand_scales.contains_key(*n))
        .map(|n| n.to_string())
        .collect();
    let scales_changed: Vec<String> = base_scales
        .iter()
        .filter(|(n, b)| {
            cand_scales
                .get(*n)
                .is_some_and(|c| tensor_change(b, c).is_some())
        })
        .map(|(n, _)| n.to_string())
        .collect();

    let verdict = if !differences.is_empty() {
        WeightsVerdict::WeightsDiffer { differences }
    } else if !scales_added.is_empty() {
        WeightsVerdict::WeightsIdenticalScalesAdded {
            count: scales_added.len() as u64,
        }
    } else {
        WeightsVerdict::WeightsIdentical
    };
    WeightsComparison {
        verdict,
        base_weights_digest: base.weights_digest.clone(),
        candidate_weights_digest: candidate.weights_digest.clone(),
        scales_added,
        scales_removed,
        scales_changed,
    }
}

/// The first of dtype, shape, bytes that differs, with both sides' values.
fn tensor_change(b: &TensorDigest, c: &TensorDigest) -> Option<(DifferenceKind, String, String)> {
    if b.dtype != c.dtype {
        Some((DifferenceKind::Dtype, b.dtype.clone(), c.dtype.clone()))
    } else if b.shape != c.shape {
        Some((
            DifferenceKind::Shape,
            shape_text(&b.shape),
            shape_text(&c.shape),
        ))
    } else if b.sha256 != c.sha256 {
        Some((DifferenceKind::Bytes, b.sha256.clone(), c.sha256.clone()))
    } else {
        None
    }
}
