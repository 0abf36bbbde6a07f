//! Recognising KV/attention scale tensors by name, and reading their layer, granularity and range.

use kvgate_core::manifest::ScaleGranularity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Which attention quantity a scale tensor scales.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScaleKind {
    /// Keys written to the KV cache.
    K,
    /// Values written to the KV cache.
    V,
    /// Queries (backends that run attention in the quantized domain).
    Q,
    /// Attention probabilities (softmax output).
    Prob,
    /// One scale for both K and V (the deprecated `kv_scale`; vLLM uses it for both).
    Kv,
}

/// One entry of [`SCALE_TENSOR_PATTERNS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS, JsonSchema)]
pub struct ScaleTensorPattern {
    /// `*` then a dotted suffix: a tensor name matches when it ends with the suffix.
    #[ts(type = "string")]
    pub pattern: &'static str,
    pub kind: ScaleKind,
    /// Which tool writes names like this, shown next to the pattern.
    #[ts(type = "string")]
    pub origin: &'static str,
}

/// The one list of tensor-name patterns read as KV/attention scale metadata, shown to users as is.
///
/// A tensor whose name ends with one of these suffixes is a scale tensor: it is left out of the
/// weights digest and reported with its layer, kind, granularity and value range. Everything else
/// is a weight, including the scales that belong to quantized *weights* (`*.weight_scale`,
/// `*.input_scale`, GPTQ/AWQ `*.scales`): changing those changes what the model computes.
///
/// The suffixes cover vLLM's names (`*.self_attn.attn.k_scale`), llm-compressor's
/// (`*.self_attn.k_scale`), ModelOpt's (`*.self_attn.k_proj.k_scale`), the deprecated single
/// `*.kv_scale`, and the older compressed-tensors output-activation names that vLLM maps onto the
/// attention scales (`*.self_attn.k_proj.output_scale` → `attn.k_scale`).
pub const SCALE_TENSOR_PATTERNS: &[ScaleTensorPattern] = &[
    ScaleTensorPattern {
        pattern: "*.k_scale",
        kind: ScaleKind::K,
        origin: "vLLM, llm-compressor, ModelOpt",
    },
    ScaleTensorPattern {
        pattern: "*.v_scale",
        kind: ScaleKind::V,
        origin: "vLLM, llm-compressor, ModelOpt",
    },
    ScaleTensorPattern {
        pattern: "*.q_scale",
        kind: ScaleKind::Q,
        origin: "vLLM, llm-compressor",
    },
    ScaleTensorPattern {
        pattern: "*.prob_scale",
        kind: ScaleKind::Prob,
        origin: "vLLM, llm-compressor",
    },
    ScaleTensorPattern {
        pattern: "*.kv_scale",
        kind: ScaleKind::Kv,
        origin: "older FP8 checkpoints (deprecated in vLLM)",
    },
    ScaleTensorPattern {
        pattern: "*.k_proj.output_scale",
        kind: ScaleKind::K,
        origin: "older compressed-tensors",
    },
    ScaleTensorPattern {
        pattern: "*.v_proj.output_scale",
        kind: ScaleKind::V,
        origin: "older compressed-tensors",
    },
    ScaleTensorPattern {
        pattern: "*.q_proj.output_scale",
        kind: ScaleKind::Q,
        origin: "older compressed-tensors",
    },
    ScaleTensorPattern {
        pattern: "*.prob_output_scale",
        kind: ScaleKind::Prob,
        origin: "older compressed-tensors",
    },
];

/// Largest scale tensor whose values are decoded for the range; larger ones are only hashed.
pub const MAX_SCALE_DECODE_BYTES: u64 = 1 << 20;

/// The pattern `name` matches, if it is a scale tensor.
pub fn classify_scale_tensor(name: &str) -> Option<&'static ScaleTensorPattern> {
    SCALE_TENSOR_PATTERNS.iter().find(|p| {
        let suffix = p.pattern.strip_prefix('*').unwrap_or(p.pattern);
        name.ends_with(suffix)
    })
}

/// The layer index in names like `model.layers.12.self_attn.k_scale` or `blk.3.attn_k.weight`.
pub fn layer_index(name: &str) -> Option<u32> {
    let parts: Vec<&str> = name.split('.').collect();
    parts.windows(2).find_map(|w| {
        matches!(w[0], "layers" | "layer" | "blk" | "h")
            .then(|| w[1].parse::<u32>().ok())
            .flatten()
    })
}

/// Per tensor for a single element; per head for a vector (one dimension above 1, e.g.
/// `[num_kv_heads]` or `[num_kv_heads, 1]`); `None` otherwise. A vector of `num_heads × head_dim`
/// entries would be per channel: telling the two apart needs the model config, which the caller
/// has and this module does not read.
pub fn scale_granularity(shape: &[u64]) -> Option<ScaleGranularity> {
    let numel: u64 = shape.iter().product();
    if numel == 1 {
        return Some(ScaleGranularity::PerTensor);
    }
    let wide = shape.iter().filter(|&&d| d > 1).count();
    (numel > 1 && wide == 1).then_some(ScaleGranularity::PerHead)
}

/// Elements of a little-endian float tensor as f64, for the dtypes scales come in.
pub(crate) fn decode_floats(dtype: &str, bytes: &[u8]) -> Option<Vec<f64>> {
    match dtype {
        "F64" => Some(
            bytes
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        ),
        "F32" => Some(
            bytes
                .chunks_exact(4)
                .map(|c| f64::from(f32::from_le_bytes(c.try_into().expect("4 bytes"))))
                .collect(),
        ),
        "BF16" => Some(
            bytes
                .chunks_exact(2)
                .map(|c| {
                    let bits = u32::from(u16::from_le_bytes([c[0], c[1]])) << 16;
                    f64::from(f32::from_bits(bits))
                })
                .collect(),
        ),
        "F16" => Some(
            bytes
                .chunks_exact(2)
                .map(|c| f16_to_f64(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
        ),
        _ => None,
    }
}

fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f64::from(bits & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// (min, max, non-finite count) over the finite values; min/max `None` when none is finite.
pub(crate) fn value_range(values: &[f64]) -> (Option<f64>, Option<f64>, u64) {
    let mut min: Option<f64> = None;
    let mut max: Option<f64> = None;
    let mut non_finite = 0u64;
    for &v in values {
        if !v.is_finite() {
            non_finite += 1;
            continue;
        }
        min = Some(min.map_or(v, |m| m.min(v)));
        max = Some(max.map_or(v, |m| m.max(v)));
    }
    (min, max, non_finite)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_scales_match_and_weight_scales_do_not() {
        let kind = |n: &str| classify_scale_tensor(n).map(|p| p.kind);
        assert_eq!(kind("model.layers.0.self_attn.k_scale"), Some(ScaleKind::K));
        assert_eq!(
            kind("model.layers.0.self_attn.attn.v_scale"),
            Some(ScaleKind::V)
        );
        assert_eq!(
            kind("model.layers.0.self_attn.k_proj.k_scale"),
            Some(ScaleKind::K)
        );
        assert_eq!(kind("model.layers.1.self_attn.q_scale"), Some(ScaleKind::Q));
        assert_eq!(
            kind("model.layers.1.self_attn.prob_scale"),
            Some(ScaleKind::Prob)
        );
        assert_eq!(
            kind("model.layers.1.self_attn.kv_scale"),
            Some(ScaleKind::Kv)
        );
        assert_eq!(
            kind("model.layers.1.self_attn.v_proj.output_scale"),
            Some(ScaleKind::V)
        );
        for weight in [
            "model.layers.0.self_attn.k_proj.weight_scale",
            "model.layers.0.self_attn.k_proj.input_scale",
            "model.layers.0.mlp.down_proj.weight_scale",
            "model.layers.0.mlp.down_proj.output_scale",
            "model.layers.0.self_attn.k_proj.scales",
            "model.layers.0.self_attn.k_proj.weight",
            "k_scale_table",
        ] {
            assert_eq!(kind(weight), None, "{weight}");
        }
    }

    #[test]
    fn layer_granularity_and_decoding() {
        assert_eq!(layer_index("model.layers.12.self_attn.k_scale"), Some(12));
        assert_eq!(layer_index("blk.3.attn_k.weight"), Some(3));
        assert_eq!(layer_index("lm_head.weight"), None);
        assert_eq!(scale_granularity(&[]), Some(ScaleGranularity::PerTensor));
        assert_eq!(scale_granularity(&[1]), Some(ScaleGranularity::PerTensor));
        assert_eq!(scale_granularity(&[8]), Some(ScaleGranularity::PerHead));
        assert_eq!(scale_granularity(&[8, 1]), Some(ScaleGranularity::PerHead));
        assert_eq!(scale_granularity(&[8, 64]), None);
        assert_eq!(scale_granularity(&[0]), None);

        // 1.0 and -2.5 in each encoding.
        assert_eq!(
            decode_floats("F16", &[0x00, 0x3c, 0x00, 0xc1]),
            Some(vec![1.0, -2.5])
        );
        assert_eq!(
            decode_floats("BF16", &[0x80, 0x3f, 0x20, 0xc0]),
            Some(vec![1.0, -2.5])
        );
        assert_eq!(decode_floats("F8_E4M3", &[0x38]), None);
        assert_eq!(
            value_range(&[0.5, f64::NAN, 2.0]),
            (Some(0.5), Some(2.0), 1)
        );
    }
}
