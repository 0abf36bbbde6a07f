//! The KV memory model: unsharded KV payload bytes = 2 × layers × KV heads × head dim ×
//! retained positions × bytes per element, with the guide's omitted terms made explicit and
//! reported separately: sliding-window layers, skipped (full-precision) layers, block rounding,
//! and per-block / per-head / per-tensor scale metadata. Also the token capacity of a memory
//! budget and the rollback fit (does B0's representation hold the candidate's admission limit).
//!
//! GQA needs no term of its own: the KV-heads input is the number of KV heads, not query heads.
//! Allocator overhead, activations and replicated state are outside this model, and it does not
//! apply unchanged to latent-attention or hybrid models ([`NOT_FOR_LATENT_OR_HYBRID`]).
//! All arithmetic is checked (u128 inside); overflow is an error, never a wrapped number.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::manifest::{Manifest, ScaleGranularity, SkippedLayer};

/// Shown with every result of this model.
pub const NOT_FOR_LATENT_OR_HYBRID: &str = "Simplified model of a homogeneous full-attention \
     decoder (sliding-window layers allowed). It does not apply unchanged to latent-attention \
     (MLA) or hybrid (state-space / linear-attention) models, and it excludes allocator overhead, \
     temporary activations and replicated state.";

/// Bytes per element as an exact fraction: `bytes` per `per_elements` elements (q4_0 payload: 1/2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ElementSize {
    pub bytes: u32,
    pub per_elements: u32,
}

impl ElementSize {
    pub const F32: ElementSize = ElementSize::new(4, 1);
    /// float16 or bfloat16.
    pub const F16: ElementSize = ElementSize::new(2, 1);
    pub const FP8: ElementSize = ElementSize::new(1, 1);

    pub const fn new(bytes: u32, per_elements: u32) -> ElementSize {
        ElementSize {
            bytes,
            per_elements,
        }
    }
}

/// One scale per block of consecutive elements of a token's key or value row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockScales {
    pub elements_per_block: u32,
    pub bytes_per_scale: u32,
}

/// How a KV dtype stores elements: payload size plus any per-block scales.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct KvRepresentation {
    pub element_size: ElementSize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_scales: Option<BlockScales>,
}

/// The representation of a KV dtype; `auto` resolves to `model_dtype`. `None` if unknown.
pub fn representation_of(kv_dtype: &str, model_dtype: &str) -> Option<KvRepresentation> {
    let plain = |element_size| {
        Some(KvRepresentation {
            element_size,
            block_scales: None,
        })
    };
    // ggml blocks of 32: an fp16 scale (plus an fp16 minimum for the `_1` types) per block.
    let ggml = |bytes, per_elements, scale_bytes| {
        Some(KvRepresentation {
            element_size: ElementSize::new(bytes, per_elements),
            block_scales: Some(BlockScales {
                elements_per_block: 32,
                bytes_per_scale: scale_bytes,
            }),
        })
    };
    match kv_dtype {
        "auto" if model_dtype != "auto" => representation_of(model_dtype, "auto"),
        "float32" | "f32" => plain(ElementSize::F32),
        "float16" | "bfloat16" | "half" | "f16" | "bf16" => plain(ElementSize::F16),
        "fp8" | "fp8_e4m3" | "fp8_e5m2" | "fp8_inc" => plain(ElementSize::FP8),
        "q8_0" => ggml(1, 1, 2),
        "q5_0" => ggml(5, 8, 2),
        "q5_1" => ggml(5, 8, 4),
        "q4_0" | "iq4_nl" => ggml(1, 2, 2),
        "q4_1" => ggml(1, 2, 4),
        _ => None,
    }
}

/// Layers that retain at most `window_positions` positions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlidingWindowTerm {
    pub window_positions: u64,
    pub layers: Vec<u32>,
}

/// Layers kept out of the reduced representation, at their own element size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkippedLayersTerm {
    pub layers: Vec<u32>,
    pub element_size: ElementSize,
}

/// Scale metadata of the reduced-precision layers (skipped layers carry none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
#[ts(optional_fields)]
pub struct ScaleMetadata {
    /// Scales that grow with positions (llama.cpp q8_0: 2 bytes per 32 elements).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_block: Option<BlockScales>,
    /// Bytes of one scale per layer, KV head and K/V.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_head_scale_bytes: Option<u32>,
    /// Bytes of one scale per layer and K/V.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_tensor_scale_bytes: Option<u32>,
}

/// The inputs that size one KV cache, unsharded (divide by tensor parallelism per GPU).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
#[ts(optional_fields)]
pub struct KvShape {
    pub num_layers: u32,
    /// KV heads, not query heads: this is where grouped-query attention enters.
    pub num_kv_heads: u32,
    pub head_dim: u32,
    pub element_size: ElementSize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<SlidingWindowTerm>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_layers: Option<SkippedLayersTerm>,
    /// Positions are rounded up to whole blocks per sequence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_size: Option<u32>,
    #[serde(default)]
    pub scale_metadata: ScaleMetadata,
}

/// KV bytes term by term; `total_bytes` is their sum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct KvBytesBreakdown {
    /// Σ retained positions over the sequences given.
    pub retained_positions: u64,
    pub reduced_layers: u32,
    pub skipped_layers: u32,
    pub sliding_window_layers: u32,
    /// The guide's term: 2 × layers × KV heads × head dim × positions × bytes per element, over
    /// the reduced-precision layers (sliding-window layers capped at the window).
    pub payload_bytes: u64,
    /// The same for skipped layers at their own element size.
    pub skipped_layers_bytes: u64,
    /// Extra bytes from rounding each sequence up to whole blocks.
    pub block_rounding_bytes: u64,
    pub per_block_scale_bytes: u64,
    pub per_head_scale_bytes: u64,
    pub per_tensor_scale_bytes: u64,
    pub total_bytes: u64,
    pub caveat: String,
}

/// How many token positions a KV memory budget holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct TokenCapacity {
    pub budget_bytes: u64,
    /// Per-head and per-tensor scales: paid once, whatever the positions.
    pub fixed_bytes: u64,
    /// Bytes one more position costs across all layers (scales included).
    pub bytes_per_position: u64,
    /// Positions that fit, whole blocks only when a block size is set.
    pub positions: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<u64>,
    pub caveat: String,
}

/// The admission limit a candidate was approved at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AdmissionLimit {
    pub max_num_seqs: u32,
    /// Retained positions per admitted sequence (e.g. the context limit, or a class's length).
    pub positions_per_sequence: u64,
}

/// Whether rolling back to B0's representation still holds the candidate's admission limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct RollbackFit {
    pub required_bytes: u64,
    pub budget_bytes: u64,
    pub fits: bool,
    /// Bytes missing; absent when it fits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shortfall_bytes: Option<u64>,
    /// Sequences of that length B0's representation holds: reduce admission to this first.
    pub max_sequences_that_fit: u64,
    pub caveat: String,
}

/// Why the model cannot be evaluated for these inputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KvCapacityError {
    #[error("`{field}`: expected at least 1, found 0")]
    Zero { field: &'static str },
    #[error("`{field}`: expected layer indices below num_layers ({num_layers}), found {index}")]
    LayerOutOfRange {
        field: &'static str,
        index: u32,
        num_layers: u32,
    },
    #[error("`{field}`: expected each layer once, found {index} twice")]
    DuplicateLayer { field: &'static str, index: u32 },
    #[error("`{term}`: expected a result below 2^64 bytes, found an overflow")]
    Overflow { term: &'static str },
    #[error("`{field}`: expected {expected}, found {found}")]
    Unsupported {
        field: &'static str,
        expected: String,
        found: String,
    },
}

type Result<T> = std::result::Result<T, KvCapacityError>;

fn mul(term: &'static str, factors: &[u128]) -> Result<u128> {
    factors.iter().try_fold(1u128, |acc, f| {
        acc.checked_mul(*f)
            .ok_or(KvCapacityError::Overflow { term })
    })
}

fn add(term: &'static str, terms: &[u128]) -> Result<u128> {
    terms.iter().try_fold(0u128, |acc, t| {
        acc.checked_add(*t)
            .ok_or(KvCapacityError::Overflow { term })
    })
}

fn to_u64(term: &'static str, v: u128) -> Result<u64> {
    u64::try_from(v).map_err(|_| KvCapacityError::Overflow { term })
}

fn layer_set(field: &'static str, layers: &[u32], num_layers: u32) -> Result<BTreeSet<u32>> {
    let mut set = BTreeSet::new();
    for &index in layers {
        if index >= num_layers {
            return Err(KvCapacityError::LayerOutOfRange {
                field,
                index,
                num_layers,
            });
        }
        if !set.insert(index) {
            return Err(KvCapacityError::DuplicateLayer { field, index });
        }
    }
    Ok(set)
}

/// Layer counts by class, and the per-row sizes that multiply positions.
struct Classes {
    full_reduced: u128,
    window_reduced: u128,
    full_skipped: u128,
    window_skipped: u128,
    /// Bytes of one token's key (or value) row in a reduced layer.
    reduced_row: u128,
    skipped_row: u128,
    /// Per-block scale bytes of one token's key (or value) row in a reduced layer.
    scale_row: u128,
}

impl KvShape {
    fn classes(&self) -> Result<Classes> {
        for (field, v) in [
            ("num_layers", self.num_layers),
            ("num_kv_heads", self.num_kv_heads),
            ("head_dim", self.head_dim),
            ("element_size.bytes", self.element_size.bytes),
            ("element_size.per_elements", self.element_size.per_elements),
        ] {
            if v == 0 {
                return Err(KvCapacityError::Zero { field });
            }
        }
        let window = match &self.sliding_window {
            Some(sw) => {
                if sw.window_positions == 0 {
                    return Err(KvCapacityError::Zero {
                        field: "sliding_window.window_positions",
                    });
                }
                layer_set("sliding_window.layers", &sw.layers, self.num_layers)?
            }
            None => BTreeSet::new(),
        };
        let (skipped, skipped_size) = match &self.skipped_layers {
            Some(s) => {
                if s.element_size.bytes == 0 {
                    return Err(KvCapacityError::Zero {
                        field: "skipped_layers.element_size.bytes",
                    });
                }
                if s.element_size.per_elements == 0 {
                    return Err(KvCapacityError::Zero {
                        field: "skipped_layers.element_size.per_elements",
                    });
                }
                (
                    layer_set("skipped_layers.layers", &s.layers, self.num_layers)?,
                    s.element_size,
                )
            }
            None => (BTreeSet::new(), self.element_size),
        };
        let window_skipped = window.intersection(&skipped).count() as u128;
        let window_reduced = window.len() as u128 - window_skipped;
        let full_skipped = skipped.len() as u128 - window_skipped;
        let full_reduced =
            u128::from(self.num_layers) - window_reduced - window_skipped - full_skipped;
        let row_elements = mul(
            "row elements",
            &[self.num_kv_heads.into(), self.head_dim.into()],
        )?;
        // A row of H × D elements is stored whole, so a fractional size rounds up per row.
        let row = |size: ElementSize| -> Result<u128> {
            Ok(mul("row bytes", &[row_elements, size.bytes.into()])?
                .div_ceil(size.per_elements.into()))
        };
        let scale_row = match self.scale_metadata.per_block {
            Some(b) => {
                if b.elements_per_block == 0 {
                    return Err(KvCapacityError::Zero {
                        field: "scale_metadata.per_block.elements_per_block",
                    });
                }
                mul(
                    "per-block scales",
                    &[
                        row_elements.div_ceil(b.elements_per_block.into()),
                        b.bytes_per_scale.into(),
                    ],
                )?
            }
            None => 0,
        };
        Ok(Classes {
            full_reduced,
            window_reduced,
            full_skipped,
            window_skipped,
            reduced_row: row(self.element_size)?,
            skipped_row: row(skipped_size)?,
            scale_row,
        })
    }

    fn round_up(&self, positions: u128) -> Result<u128> {
        match self.block_size {
            None => Ok(positions),
            Some(0) => Err(KvCapacityError::Zero {
                field: "block_size",
            }),
            Some(b) => mul("block rounding", &[positions.div_ceil(b.into()), b.into()]),
        }
    }

    /// Fixed scale bytes: per-head and per-tensor scales of the reduced layers.
    fn fixed_scale_bytes(&self, c: &Classes) -> Result<(u128, u128)> {
        let reduced_layers = c.full_reduced + c.window_reduced;
        let per_head = match self.scale_metadata.per_head_scale_bytes {
            Some(b) => mul(
                "per-head scales",
                &[2, reduced_layers, self.num_kv_heads.into(), b.into()],
            )?,
            None => 0,
        };
        let per_tensor = match self.scale_metadata.per_tensor_scale_bytes {
            Some(b) => mul("per-tensor scales", &[2, reduced_layers, b.into()])?,
            None => 0,
        };
        Ok((per_head, per_tensor))
    }
}

/// KV bytes for sequences retaining `sequence_positions` positions each. Count a shared prefix
/// once, as its own entry, and leave it out of the sequences that share it.
pub fn kv_bytes(shape: &KvShape, sequence_positions: &[u64]) -> Result<KvBytesBreakdown> {
    let c = shape.classes()?;
    let window = shape
        .sliding_window
        .as_ref()
        .map(|sw| u128::from(sw.window_positions));
    let (mut full, mut windowed, mut full_rounded, mut windowed_rounded) =
        (0u128, 0u128, 0u128, 0u128);
    for &p in sequence_positions {
        let p = u128::from(p);
        let w = window.map_or(p, |w| p.min(w));
        full = add("retained positions", &[full, p])?;
        windowed = add("retained positions", &[windowed, w])?;
        full_rounded = add("block rounding", &[full_rounded, shape.round_up(p)?])?;
        windowed_rounded = add("block rounding", &[windowed_rounded, shape.round_up(w)?])?;
    }
    // Bytes of K and V rows over a layer class: 2 × layers × positions × row bytes.
    let class =
        |term, layers: u128, positions: u128, row: u128| mul(term, &[2, layers, positions, row]);
    let payload = add(
        "payload",
        &[
            class("payload", c.full_reduced, full, c.reduced_row)?,
            class("payload", c.window_reduced, windowed, c.reduced_row)?,
        ],
    )?;
    let skipped = add(
        "skipped layers",
        &[
            class("skipped layers", c.full_skipped, full, c.skipped_row)?,
            class("skipped layers", c.window_skipped, windowed, c.skipped_row)?,
        ],
    )?;
    let rounded_total = add(
        "block rounding",
        &[
            class(
                "block rounding",
                c.full_reduced,
                full_rounded,
                c.reduced_row,
            )?,
            class(
                "block rounding",
                c.window_reduced,
                windowed_rounded,
                c.reduced_row,
            )?,
            class(
                "block rounding",
                c.full_skipped,
                full_rounded,
                c.skipped_row,
            )?,
            class(
                "block rounding",
                c.window_skipped,
                windowed_rounded,
                c.skipped_row,
            )?,
        ],
    )?;
    let rounding = rounded_total - payload - skipped;
    // Block scales cover the stored (rounded) positions of the reduced layers.
    let per_block = add(
        "per-block scales",
        &[
            class(
                "per-block scales",
                c.full_reduced,
                full_rounded,
                c.scale_row,
            )?,
            class(
                "per-block scales",
                c.window_reduced,
                windowed_rounded,
                c.scale_row,
            )?,
        ],
    )?;
    let (per_head, per_tensor) = shape.fixed_scale_bytes(&c)?;
    let total = add("total", &[rounded_total, per_block, per_head, per_tensor])?;
    Ok(KvBytesBreakdown {
        retained_positions: to_u64("retained positions", full)?,
        reduced_layers: (c.full_reduced + c.window_reduced) as u32,
        skipped_layers: (c.full_skipped + c.window_skipped) as u32,
        sliding_window_layers: (c.window_reduced + c.window_skipped) as u32,
        payload_bytes: to_u64("payload", payload)?,
        skipped_layers_bytes: to_u64("skipped layers", skipped)?,
        block_rounding_bytes: to_u64("block rounding", rounding)?,
        per_block_scale_bytes: to_u64("per-block scales", per_block)?,
        per_head_scale_bytes: to_u64("per-head scales", per_head)?,
        per_tensor_scale_bytes: to_u64("per-tensor scales", per_tensor)?,
        total_bytes: to_u64("total", total)?,
        caveat: NOT_FOR_LATENT_OR_HYBRID.to_owned(),
    })
}

/// Positions a KV budget holds. Sliding-window layers are counted as if they grew with every
/// position (their cap depends on how positions split into sequences), so this is a lower bound
/// for models with sliding-window layers.
pub fn token_capacity(shape: &KvShape, budget_bytes: u64) -> Result<TokenCapacity> {
    let c = shape.classes()?;
    let reduced = c.full_reduced + c.window_reduced;
    let skipped = c.full_skipped + c.window_skipped;
    let per_position = add(
        "bytes per position",
        &[
            mul(
                "bytes per position",
                &[2, reduced, c.reduced_row + c.scale_row],
            )?,
            mul("bytes per position", &[2, skipped, c.skipped_row])?,
        ],
    )?;
    let (per_head, per_tensor) = shape.fixed_scale_bytes(&c)?;
    let fixed = per_head + per_tensor;
    let available = u128::from(budget_bytes).saturating_sub(fixed);
    let mut positions = available / per_position;
    let blocks = match shape.block_size {
        Some(0) => {
            return Err(KvCapacityError::Zero {
                field: "block_size",
            })
        }
        Some(b) => {
            let blocks = positions / u128::from(b);
            positions = blocks * u128::from(b);
            Some(to_u64("blocks", blocks)?)
        }
        None => None,
    };
    Ok(TokenCapacity {
        budget_bytes,
        fixed_bytes: to_u64("fixed scales", fixed)?,
        bytes_per_position: to_u64("bytes per position", per_position)?,
        positions: to_u64("positions", positions)?,
        blocks,
        caveat: NOT_FOR_LATENT_OR_HYBRID.to_owned(),
    })
}

/// The admission limit a candidate manifest approves: `max_num_seqs` sequences, each retaining
/// up to the context limit (the worst case rollback must still hold).
pub fn admission_of(candidate: &Manifest) -> AdmissionLimit {
    AdmissionLimit {
        max_num_seqs: candidate.scheduler.max_num_seqs,
        positions_per_sequence: u64::from(candidate.context_limit),
    }
}

/// Whether B0's representation (`baseline`) holds `admission` within `budget_bytes`, and how
/// many such sequences it does hold.
pub fn rollback_fit(
    baseline: &KvShape,
    admission: &AdmissionLimit,
    budget_bytes: u64,
) -> Result<RollbackFit> {
    // Every term is fixed plus linear in the number of identical sequences.
    let none = kv_bytes(baseline, &[])?.total_bytes;
    let one = kv_bytes(baseline, &[admission.positions_per_sequence])?.total_bytes;
    let per_sequence = one - none;
    let all = mul(
        "required bytes",
        &[per_sequence.into(), admission.max_num_seqs.into()],
    )?;
    let required = to_u64(
        "required bytes",
        add("required bytes", &[none.into(), all])?,
    )?;
    let max_sequences_that_fit = match budget_bytes.checked_sub(none) {
        None => 0,
        Some(_) if per_sequence == 0 => u64::MAX,
        Some(room) => room / per_sequence,
    };
    let fits = required <= budget_bytes;
    Ok(RollbackFit {
        required_bytes: required,
        budget_bytes,
        fits,
        shortfall_bytes: (!fits).then(|| required - budget_bytes),
        max_sequences_that_fit,
        caveat: NOT_FOR_LATENT_OR_HYBRID.to_owned(),
    })
}

/// The KV shape a manifest describes: needs `model_geometry` and a known `kv_dtype`. Skipped
/// layers are stored in the model dtype; vLLM scales are float32 (4 bytes).
pub fn shape_for_manifest(m: &Manifest) -> Result<KvShape> {
    let g = m
        .model_geometry
        .as_ref()
        .ok_or(KvCapacityError::Unsupported {
            field: "model_geometry",
            expected: "the model's layers, KV heads and head dim".into(),
            found: "nothing".into(),
        })?;
    let unknown = |field: &'static str, value: &str| KvCapacityError::Unsupported {
        field,
        expected: "a dtype with a known element size".into(),
        found: format!("`{value}`"),
    };
    let rep = representation_of(&m.kv_dtype, &g.model_dtype)
        .ok_or_else(|| unknown("kv_dtype", &m.kv_dtype))?;
    let model_rep = representation_of(&g.model_dtype, "auto")
        .ok_or_else(|| unknown("model_geometry.model_dtype", &g.model_dtype))?;
    let mut skipped = BTreeSet::new();
    for layer in &m.skipped_layers {
        match layer {
            SkippedLayer::Index(i) => {
                skipped.insert(*i);
            }
            SkippedLayer::Token(_) => {
                let sw = g
                    .sliding_window
                    .as_ref()
                    .ok_or(KvCapacityError::Unsupported {
                        field: "skipped_layers",
                        expected: "`sliding_window` only with model_geometry.sliding_window".into(),
                        found: "`sliding_window`".into(),
                    })?;
                skipped.extend(sw.layers.iter().copied());
            }
        }
    }
    let mut scale_metadata = ScaleMetadata {
        per_block: rep.block_scales,
        ..ScaleMetadata::default()
    };
    match (m.scale_granularity, rep.block_scales) {
        (None, _) | (Some(ScaleGranularity::PerBlock), Some(_)) => {}
        (Some(ScaleGranularity::PerTensor), None) => {
            scale_metadata.per_tensor_scale_bytes = Some(4)
        }
        (Some(ScaleGranularity::PerHead), None) => scale_metadata.per_head_scale_bytes = Some(4),
        (Some(other), _) => {
            return Err(KvCapacityError::Unsupported {
                field: "scale_granularity",
                expected: format!(
                    "a granularity this model covers for kv_dtype `{}`",
                    m.kv_dtype
                ),
                found: format!("{other:?}"),
            })
        }
    }
    Ok(KvShape {
        num_layers: g.num_layers,
        num_kv_heads: g.num_kv_heads,
        head_dim: g.head_dim,
        element_size: rep.element_size,
        sliding_window: g.sliding_window.as_ref().map(|sw| SlidingWindowTerm {
            window_positions: sw.window.into(),
            layers: sw.layers.clone(),
        }),
        skipped_layers: (!skipped.is_empty()).then(|| SkippedLayersTerm {
            layers: skipped.into_iter().collect(),
            element_size: model_rep.element_size,
        }),
        block_size: m.kv_block_size,
        scale_metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1024.0 * 1024.0;

    fn plain(layers: u32, kv_heads: u32, head_dim: u32, size: ElementSize) -> KvShape {
        KvShape {
            num_layers: layers,
            num_kv_heads: kv_heads,
            head_dim,
            element_size: size,
            sliding_window: None,
            skipped_layers: None,
            block_size: None,
            scale_metadata: ScaleMetadata::default(),
        }
    }

    #[test]
    fn worked_example_is_131072_bytes_per_token() {
        let b = kv_bytes(&plain(32, 8, 128, ElementSize::F16), &[1]).unwrap();
        assert_eq!(b.payload_bytes, 131_072);
        assert_eq!(b.total_bytes, 131_072);
        assert_eq!(b.retained_positions, 1);
        assert_eq!(b.caveat, NOT_FOR_LATENT_OR_HYBRID);
        assert!(b.caveat.contains("latent-attention") && b.caveat.contains("hybrid"));
    }

    #[test]
    fn positions_sum_across_sequences() {
        let shape = plain(32, 8, 128, ElementSize::F16);
        let b = kv_bytes(&shape, &[1000, 24, 1]).unwrap();
        assert_eq!(b.retained_positions, 1025);
        assert_eq!(b.total_bytes, 131_072 * 1025);
    }

    #[test]
    fn gqa_enters_through_kv_heads_only() {
        // Llama 3.1 8B has 32 query heads but 8 KV heads: a quarter of the MHA bytes.
        let gqa = kv_bytes(&plain(32, 8, 128, ElementSize::F16), &[100]).unwrap();
        let mha = kv_bytes(&plain(32, 32, 128, ElementSize::F16), &[100]).unwrap();
        assert_eq!(mha.total_bytes, 4 * gqa.total_bytes);
    }

    #[test]
    fn halving_bytes_per_element_halves_only_the_payload_term() {
        let mut shape = plain(32, 8, 128, ElementSize::F16);
        shape.skipped_layers = Some(SkippedLayersTerm {
            layers: vec![0, 31],
            element_size: ElementSize::F16,
        });
        shape.scale_metadata.per_head_scale_bytes = Some(4);
        let wide = kv_bytes(&shape, &[4096, 100]).unwrap();
        shape.element_size = ElementSize::FP8;
        let narrow = kv_bytes(&shape, &[4096, 100]).unwrap();
        assert_eq!(narrow.payload_bytes * 2, wide.payload_bytes);
        assert_eq!(narrow.skipped_layers_bytes, wide.skipped_layers_bytes);
        assert_eq!(narrow.per_head_scale_bytes, wide.per_head_scale_bytes);
        assert!(narrow.total_bytes * 2 > wide.total_bytes);
        assert_eq!(wide.per_head_scale_bytes, 2 * 30 * 8 * 4);
        assert_eq!(wide.skipped_layers_bytes, 2 * 2 * 8 * 128 * 4196 * 2);
    }

    #[test]
    fn sliding_window_caps_positions_for_its_layers() {
        let mut shape = plain(4, 2, 64, ElementSize::F16);
        shape.sliding_window = Some(SlidingWindowTerm {
            window_positions: 100,
            layers: vec![1, 3],
        });
        let b = kv_bytes(&shape, &[1000, 50]).unwrap();
        let row = 2 * 64 * 2;
        // Two full layers keep 1050 positions, two windowed keep 100 + 50.
        assert_eq!(b.payload_bytes, 2 * row * (2 * 1050 + 2 * 150));
        assert_eq!(b.sliding_window_layers, 2);
    }

    #[test]
    fn block_rounding_is_per_sequence_and_reported_apart() {
        let mut shape = plain(32, 8, 128, ElementSize::F16);
        shape.block_size = Some(16);
        let b = kv_bytes(&shape, &[1, 16, 17]).unwrap();
        assert_eq!(b.payload_bytes, 131_072 * 34);
        // 1 → 16, 16 → 16, 17 → 32: 64 stored positions, 30 of them rounding.
        assert_eq!(b.block_rounding_bytes, 131_072 * 30);
        assert_eq!(b.total_bytes, 131_072 * 64);
    }

    #[test]
    fn llama_cpp_smollm2_f16_is_45_mib() {
        let f16 = representation_of("f16", "f16").unwrap();
        let shape = plain(30, 3, 64, f16.element_size);
        let b = kv_bytes(&shape, &[2048]).unwrap();
        assert_eq!(b.total_bytes, 47_185_920);
        assert_eq!(format!("{:.2}", b.total_bytes as f64 / MIB), "45.00");
    }

    #[test]
    fn llama_cpp_smollm2_q8_0_is_23_91_mib_either_way() {
        // As 34 bytes per 32 elements, all payload...
        let packed = kv_bytes(&plain(30, 3, 64, ElementSize::new(34, 32)), &[2048]).unwrap();
        assert_eq!(packed.total_bytes, 25_067_520);
        assert_eq!(format!("{:.2}", packed.total_bytes as f64 / MIB), "23.91");
        // ...or as 1-byte payload plus a 2-byte scale per 32 elements, reported apart.
        let q8 = representation_of("q8_0", "f16").unwrap();
        let mut shape = plain(30, 3, 64, q8.element_size);
        shape.scale_metadata.per_block = q8.block_scales;
        let split = kv_bytes(&shape, &[2048]).unwrap();
        assert_eq!(split.payload_bytes, 23_592_960);
        assert_eq!(split.per_block_scale_bytes, 1_474_560);
        assert_eq!(split.total_bytes, packed.total_bytes);
        // K and V are half each, as the startup log prints (11.95 MiB).
        assert_eq!(
            format!("{:.2}", split.total_bytes as f64 / 2.0 / MIB),
            "11.95"
        );
    }

    #[test]
    fn representations_match_ggml_block_sizes() {
        // ggml block bytes per 32 elements: q8_0 34, q4_0 18, q4_1 20, q5_0 22, q5_1 24, iq4_nl 18.
        for (dtype, block_bytes) in [
            ("q8_0", 34),
            ("q4_0", 18),
            ("q4_1", 20),
            ("q5_0", 22),
            ("q5_1", 24),
            ("iq4_nl", 18),
        ] {
            let r = representation_of(dtype, "f16").unwrap();
            let scales = r.block_scales.unwrap();
            let payload = 32 * r.element_size.bytes / r.element_size.per_elements;
            assert_eq!(payload + scales.bytes_per_scale, block_bytes, "{dtype}");
        }
        assert_eq!(
            representation_of("auto", "bfloat16").unwrap().element_size,
            ElementSize::F16
        );
        assert_eq!(
            representation_of("fp8_e4m3", "bfloat16")
                .unwrap()
                .element_size,
            ElementSize::FP8
        );
        assert_eq!(representation_of("auto", "auto"), None);
        assert_eq!(representation_of("nvfp4", "bfloat16"), None);
    }

    #[test]
    fn token_capacity_of_a_budget() {
        let mut shape = plain(32, 8, 128, ElementSize::F16);
        shape.block_size = Some(16);
        let budget = 131_072 * 1000;
        let cap = token_capacity(&shape, budget).unwrap();
        assert_eq!(cap.bytes_per_position, 131_072);
        assert_eq!(cap.positions, 992);
        assert_eq!(cap.blocks, Some(62));
        shape.element_size = ElementSize::FP8;
        shape.scale_metadata.per_tensor_scale_bytes = Some(4);
        let fp8 = token_capacity(&shape, budget).unwrap();
        assert_eq!(fp8.fixed_bytes, 2 * 32 * 4);
        assert_eq!(fp8.bytes_per_position, 65_536);
        // Slightly under twice: the fixed scales and the block floor.
        assert_eq!(fp8.positions, 1984);
        let tiny = token_capacity(&shape, 10).unwrap();
        assert_eq!(tiny.positions, 0);
    }

    #[test]
    fn rollback_fit_checks_b0_against_the_candidate_admission() {
        let b0 = plain(32, 8, 128, ElementSize::F16);
        let mut fp8 = b0.clone();
        fp8.element_size = ElementSize::FP8;
        let budget = 131_072 * 8192 * 4; // B0 holds four 8k sequences
        let fp8_cap = token_capacity(&fp8, budget).unwrap();
        let admission = AdmissionLimit {
            max_num_seqs: (fp8_cap.positions / 8192) as u32,
            positions_per_sequence: 8192,
        };
        assert_eq!(admission.max_num_seqs, 8);
        let fit = rollback_fit(&b0, &admission, budget).unwrap();
        assert!(!fit.fits);
        assert_eq!(fit.required_bytes, 131_072 * 8192 * 8);
        assert_eq!(fit.shortfall_bytes, Some(131_072 * 8192 * 4));
        assert_eq!(fit.max_sequences_that_fit, 4);
        let ok = rollback_fit(
            &b0,
            &AdmissionLimit {
                max_num_seqs: 4,
                ..admission
            },
            budget,
        )
        .unwrap();
        assert!(ok.fits);
        assert_eq!(ok.shortfall_bytes, None);
        // Computed, not enumerated: a huge admission limit is arithmetic, not a huge allocation.
        let huge = AdmissionLimit {
            max_num_seqs: u32::MAX,
            positions_per_sequence: 8192,
        };
        let fit = rollback_fit(&b0, &huge, budget).unwrap();
        assert_eq!(fit.required_bytes, 131_072 * 8192 * u64::from(u32::MAX));
        assert!(!fit.fits);
    }

    #[test]
    fn overflow_and_bad_layers_are_errors() {
        let huge = plain(u32::MAX, u32::MAX, u32::MAX, ElementSize::F32);
        assert!(matches!(
            kv_bytes(&huge, &[u64::MAX]),
            Err(KvCapacityError::Overflow { .. })
        ));
        let mut shape = plain(4, 1, 1, ElementSize::F16);
        shape.skipped_layers = Some(SkippedLayersTerm {
            layers: vec![4],
            element_size: ElementSize::F16,
        });
        let err = kv_bytes(&shape, &[1]).unwrap_err();
        assert_eq!(
            err,
            KvCapacityError::LayerOutOfRange {
                field: "skipped_layers.layers",
                index: 4,
                num_layers: 4
            }
        );
        assert!(err.to_string().contains("below num_layers (4)"));
        assert_eq!(
            kv_bytes(&plain(0, 1, 1, ElementSize::F16), &[1]),
            Err(KvCapacityError::Zero {
                field: "num_layers"
            })
        );
        // A zero-byte element would make capacity a division by zero.
        assert_eq!(
            token_capacity(&plain(1, 1, 1, ElementSize::new(0, 1)), 100),
            Err(KvCapacityError::Zero {
                field: "element_size.bytes"
            })
        );
    }

    #[test]
    fn shapes_from_the_fixture_manifests() {
        let load = |t: &str| Manifest::from_json(t).unwrap();
        let b0 = load(include_str!(
            "../../../fixtures/manifests/smollm2-135m-cpu-b0.json"
        ));
        let q8 = load(include_str!(
            "../../../fixtures/manifests/smollm2-135m-cpu-q8.json"
        ));
        let cells = |m: &Manifest| {
            kv_bytes(&shape_for_manifest(m).unwrap(), &[m.context_limit.into()]).unwrap()
        };
        assert_eq!(cells(&b0).total_bytes, 47_185_920);
        assert_eq!(cells(&q8).total_bytes, 25_067_520);

        let llama_b0 = load(include_str!(
            "../../../fixtures/manifests/llama31-8b-h100-b0.json"
        ));
        let llama_c3 = load(include_str!(
            "../../../fixtures/manifests/llama31-8b-h100-c3.json"
        ));
        let one = |m: &Manifest| {
            let mut s = shape_for_manifest(m).unwrap();
            s.block_size = None;
            kv_bytes(&s, &[1]).unwrap()
        };
        assert_eq!(one(&llama_b0).total_bytes, 131_072);
        let c3 = one(&llama_c3);
        let skipped = llama_c3.skipped_layers.len() as u64;
        assert_eq!(c3.skipped_layers_bytes, skipped * 2 * 8 * 128 * 2);
        assert_eq!(c3.payload_bytes, (32 - skipped) * 2 * 8 * 128);
        assert_eq!(c3.per_tensor_scale_bytes, (32 - skipped) * 2 * 4);
    }
}
