//! The manifest: the frozen record of one deployment bundle (B0 or a candidate), its digest
//! (sha256 of its RFC 8785 canonical JSON), its validation rules and the candidate-vs-reference
//! diff that turns every changed field into a finding.
//!
//! A manifest holds no measurement: TTFT, capacity and quality live with runs and are absent
//! until measured. Optional values here are absent when unknown, never 0.
//!
//! Digest formats (decided here, checked by [`Manifest::validate`]):
//! - `image_digest` is an OCI content digest, `sha256:` followed by 64 lowercase hex digits,
//!   because that is how registries and `docker inspect` print it;
//! - every other `*_sha256` field and `weights_digest` is 64 lowercase hex digits, no prefix.
//!
//! Problem paths use dots and indices, e.g. `decoding.top_p` or `skipped_layers[2]`; `$` is the
//! whole document.

mod diff;
mod validate;

pub use diff::{
    calibration_coupling_warning, diff, Finding, FindingKind, Severity, C1_C2_COUPLING_WARNING,
};
pub use validate::{validate_cell_set, validate_frozen_set};

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::canonical::{self, CanonicalError};
use crate::test_cell::TestCell;

/// Largest integer a JSON number carries exactly (2^53 − 1); canonical JSON rounds beyond it.
pub const MAX_EXACT_INTEGER: u64 = (1 << 53) - 1;
/// Longest identifier, revision or version text accepted, in characters.
pub const MAX_TEXT_CHARS: usize = 256;
/// Longest `notes` or `label` text accepted, in characters.
pub const MAX_NOTES_CHARS: usize = 4000;

/// KV cache dtypes vLLM accepts for `--kv-cache-dtype`.
pub const VLLM_KV_DTYPES: &[&str] = &[
    "auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc",
];
/// KV cache types llama.cpp accepts for `--cache-type-k` / `--cache-type-v`.
pub const LLAMA_CPP_KV_DTYPES: &[&str] = &[
    "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl",
];
const FP8_KV_DTYPES: &[&str] = &["fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"];
const FULL_PRECISION_KV_DTYPES: &[&str] = &["auto", "float16", "bfloat16", "f32", "f16", "bf16"];

/// The serving engine of a bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub enum Engine {
    #[serde(rename = "vllm")]
    Vllm,
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
    #[serde(rename = "other")]
    Other,
}

impl Engine {
    /// The KV dtypes this engine accepts; `None` when KV Gate does not know the engine's list.
    pub fn kv_dtypes(self) -> Option<&'static [&'static str]> {
        match self {
            Engine::Vllm => Some(VLLM_KV_DTYPES),
            Engine::LlamaCpp => Some(LLAMA_CPP_KV_DTYPES),
            Engine::Other => None,
        }
    }
}

/// Whether a KV dtype stores a reduced-precision representation that needs scales;
/// `None` for a dtype KV Gate does not know.
pub fn kv_dtype_is_quantized(kv_dtype: &str) -> Option<bool> {
    if FULL_PRECISION_KV_DTYPES.contains(&kv_dtype) {
        Some(false)
    } else if FP8_KV_DTYPES.contains(&kv_dtype) || LLAMA_CPP_KV_DTYPES.contains(&kv_dtype) {
        Some(true)
    } else {
        None
    }
}

/// Whether a KV dtype is one of vLLM's FP8 formats.
pub fn kv_dtype_is_fp8(kv_dtype: &str) -> bool {
    FP8_KV_DTYPES.contains(&kv_dtype)
}

/// How many elements share one KV scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScaleGranularity {
    /// One scale per layer for K and one for V.
    PerTensor,
    /// One scale per layer and KV head.
    PerHead,
    /// One scale per layer and channel.
    PerChannel,
    /// One scale per token position and head.
    PerToken,
    /// One scale per block of consecutive elements (llama.cpp q8_0: 32).
    PerBlock,
}

/// Where the KV scales come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScaleSource {
    /// The engine's default scales (vLLM: 1.0).
    Default,
    /// Scales stored with the checkpoint (calibrated offline).
    Checkpoint,
    /// Scales computed by the engine while serving.
    Runtime,
}

/// The token `sliding_window` that vLLM's `--kv-cache-dtype-skip-layers` accepts.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum LayerToken {
    SlidingWindow,
}

/// One entry of `skipped_layers`: a layer index or the `sliding_window` token.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS, JsonSchema,
)]
#[serde(untagged)]
pub enum SkippedLayer {
    Index(u32),
    Token(LayerToken),
}

/// Accelerators of one model in the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
#[ts(optional_fields)]
pub struct GpuGroup {
    /// Model as the driver reports it, e.g. `NVIDIA H100 80GB HBM3`.
    pub model: String,
    pub count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
}

/// The attention geometry that sizes the KV cache (from the model's config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
#[ts(optional_fields)]
pub struct ModelGeometry {
    pub num_layers: u32,
    pub num_query_heads: u32,
    /// Grouped-query attention stores fewer KV heads than query heads.
    pub num_kv_heads: u32,
    pub head_dim: u32,
    /// The activation dtype, which KV dtype `auto` and skipped layers use, e.g. `bfloat16`.
    pub model_dtype: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<SlidingWindowLayers>,
}

/// Layers that attend over a sliding window only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlidingWindowLayers {
    /// Positions each such layer retains.
    pub window: u32,
    pub layers: Vec<u32>,
}

/// Memory the engine may take for weights, activations and KV cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
#[ts(optional_fields)]
pub struct MemoryBudget {
    /// vLLM `--gpu-memory-utilization`, in (0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_memory_utilization: Option<f64>,
    /// vLLM `--kv-cache-memory-bytes`: a fixed KV budget instead of a fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_memory_bytes: Option<u64>,
}

/// Admission limits of the scheduler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
#[ts(optional_fields)]
pub struct SchedulerLimits {
    /// vLLM `--max-num-seqs`; llama.cpp `n_parallel` (slots).
    pub max_num_seqs: u32,
    /// vLLM `--max-num-batched-tokens`; llama.cpp `n_batch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_num_batched_tokens: Option<u32>,
}

/// Prefix-cache reuse policy, held fixed for a precision comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
#[ts(optional_fields)]
pub struct PrefixCachePolicy {
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_algorithm: Option<String>,
}

/// Speculative decoding, stated explicitly even when off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
#[ts(optional_fields)]
pub struct SpeculativeDecoding {
    pub enabled: bool,
    /// e.g. `eagle3`, `ngram`, `draft_model`; only when enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_speculative_tokens: Option<u32>,
}

impl SpeculativeDecoding {
    pub fn disabled() -> SpeculativeDecoding {
        SpeculativeDecoding {
            enabled: false,
            method: None,
            draft_model: None,
            num_speculative_tokens: None,
        }
    }
}

/// Sampling parameters sent with every request; absent means the pinned engine's default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
#[ts(optional_fields)]
pub struct DecodingParams {
    pub temperature: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
}

/// When generation stops (besides the output cap).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoppingPolicy {
    pub stop: Vec<String>,
    pub stop_token_ids: Vec<u32>,
    pub ignore_eos: bool,
}

/// The frozen record of one deployment bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
#[ts(optional_fields)]
pub struct Manifest {
    /// `B0`, `C1`, `C2`, `C3` or a custom name; unique within a study.
    pub cell: String,
    /// Id of the study's B0 bundle (B0 names itself).
    pub baseline_id: String,
    /// Id of this candidate bundle; absent for B0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Free text; says which values are illustrative (synthetic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,

    pub engine: Engine,
    /// Engine version or commit, e.g. `0.11.0` or a git sha.
    pub engine_version: String,
    /// OCI image digest `sha256:<64 hex>`; required for vLLM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    /// e.g. CUDA or ROCm runtime version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_version: Option<String>,
    /// Empty means CPU only.
    pub gpu_inventory: Vec<GpuGroup>,

    /// Revision of the weights' source; a calibrated copy with scale metadata keeps it.
    pub model_revision: String,
    pub tokenizer_revision: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_sha256: Option<String>,
    /// sha256 over the weight tensors only (not scale metadata), so a hidden weight change shows.
    pub weights_digest: String,
    pub weight_dtype: String,
    /// Recorded even when unchanged; `none` for unquantized weights.
    pub quantization_recipe: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_geometry: Option<ModelGeometry>,

    /// The backend actually selected at startup, not the requested one.
    pub attention_backend: String,
    pub kernel_revision: String,
    /// Precision of queries and attention arithmetic (FA3 with FP8 KV quantizes queries).
    pub query_attention_precision: String,
    pub kv_dtype: String,
    /// Positions per KV block (vLLM `--block-size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_block_size: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_granularity: Option<ScaleGranularity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_source: Option<ScaleSource>,
    /// Whether the startup evidence showed the scales loading; absent until that evidence exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scales_observed_loaded: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_artifact_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration_corpus_sha256: Option<String>,
    /// Layers kept in full precision, ascending; vLLM also accepts `sliding_window`.
    pub skipped_layers: Vec<SkippedLayer>,

    pub tensor_parallel_size: u32,
    /// Longest sequence (prompt + output) admitted: vLLM `--max-model-len`.
    pub context_limit: u32,
    /// Required for vLLM; llama.cpp sizes its cache from the context instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_budget: Option<MemoryBudget>,
    pub scheduler: SchedulerLimits,
    pub prefix_cache: PrefixCachePolicy,
    pub speculative_decoding: SpeculativeDecoding,
    pub decoding: DecodingParams,
    pub stopping: StoppingPolicy,
    /// `max_tokens` sent with every request.
    pub output_cap: u32,
    /// Engine arguments as the engine reported them (name → value text), model location excluded.
    pub effective_args: BTreeMap<String, String>,

    pub evaluation_corpus_sha256: String,
    pub trace_sha256: String,
    pub evaluator_revision: String,
}

/// One reason a manifest is not valid: where, what was expected, what was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ManifestProblem {
    pub path: String,
    pub expected: String,
    pub found: String,
}

impl fmt::Display for ManifestProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: expected {}, found {}",
            self.path, self.expected, self.found
        )
    }
}

impl std::error::Error for ManifestProblem {}

impl ManifestProblem {
    fn new(path: impl Into<String>, expected: impl Into<String>, found: impl Into<String>) -> Self {
        ManifestProblem {
            path: path.into(),
            expected: expected.into(),
            found: found.into(),
        }
    }
}

impl Manifest {
    /// Parses manifest JSON, rejecting duplicate member names and unknown fields; the error
    /// names the JSON path.
    pub fn from_json(text: &str) -> Result<Manifest, ManifestProblem> {
        let value = canonical::parse_strict(text).map_err(|e| {
            let found = match e {
                CanonicalError::Parse(m) => m,
                other => other.to_string(),
            };
            ManifestProblem::new("$", "JSON text without duplicate member names", found)
        })?;
        if !value.is_object() {
            return Err(ManifestProblem::new(
                "$",
                "a JSON object",
                describe(Some(&value)),
            ));
        }
        let manifest: Manifest = serde_path_to_error::deserialize(&value).map_err(|e| {
            let path = match e.path().to_string().as_str() {
                "." | "" => "$".to_owned(),
                p => p.to_owned(),
            };
            let message = e.into_inner().to_string();
            match message.split_once(", expected ") {
                Some((found, expected)) => ManifestProblem::new(path, expected, found),
                None => ManifestProblem::new(path, "a manifest field of the right type", message),
            }
        })?;
        // What is hashed must be what was written: no `null` for absent, no arrays for objects.
        let written = serde_json::to_value(&manifest).unwrap_or(Value::Null);
        let mut lost = Vec::new();
        diff::collect_differences(String::new(), Some(&value), Some(&written), &mut lost);
        if let Some((path, found, expected)) = lost.into_iter().next() {
            let path = if path.is_empty() {
                "$".to_owned()
            } else {
                path
            };
            let expected = match expected {
                None => "the member left out (absent means unknown)".to_owned(),
                Some(v) => describe(Some(&v)),
            };
            return Err(ManifestProblem::new(
                path,
                expected,
                describe(found.as_ref()),
            ));
        }
        Ok(manifest)
    }

    /// Canonical JSON (RFC 8785) of the manifest as serialized (absent options omitted).
    pub fn canonical_json(&self) -> Result<String, CanonicalError> {
        // serde_json would silently write NaN as null, so non-finite numbers are refused first.
        if let Some(path) = self.non_finite_numbers().into_iter().next() {
            return Err(CanonicalError::NonFinite { path });
        }
        let value =
            serde_json::to_value(self).map_err(|e| CanonicalError::Serialize(e.to_string()))?;
        Ok(canonical::canonical_json(&value))
    }

    /// The manifest digest: lowercase 64-hex sha256 of its canonical JSON.
    pub fn digest(&self) -> Result<String, CanonicalError> {
        Ok(canonical::sha256_hex(self.canonical_json()?.as_bytes()))
    }

    /// The test cell this manifest's `cell` names.
    pub fn test_cell(&self) -> Result<TestCell, ManifestProblem> {
        TestCell::from_name(&self.cell).map_err(|e| {
            let (expected, found) = e.expected_found();
            ManifestProblem::new("cell", expected, found)
        })
    }
}

/// A short description of a JSON value for a problem message.
fn describe(value: Option<&Value>) -> String {
    match value {
        None => "nothing".to_owned(),
        Some(Value::Object(_)) => "a JSON object".to_owned(),
        Some(Value::Array(items)) if !items.is_empty() => "a JSON array".to_owned(),
        Some(v) => quote(&canonical::canonical_json(v)),
    }
}

fn quote(s: &str) -> String {
    const MAX: usize = 80;
    if s.chars().count() > MAX {
        let head: String = s.chars().take(MAX).collect();
        format!("`{}…`", head.escape_debug())
    } else {
        format!("`{}`", s.escape_debug())
    }
}

fn opt_json<T: Serialize>(v: Option<T>) -> String {
    v.map(|v| json_text(&v)).unwrap_or_else(|| "nothing".into())
}

fn json_text<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .map(|v| canonical::canonical_json(&v))
        .unwrap_or_else(|e| e.to_string())
}

/// Where the data of a frozen manifest's cell comes from, in one sentence for reports: an
/// engine that is not the production one (llama.cpp on CPU) and a KV type that is not FP8 are
/// named as a stand-in.
pub fn data_origin(cell: &str, manifest: &Value) -> String {
    let engine = manifest["engine"].as_str().unwrap_or("unknown engine");
    let kv = manifest["kv_dtype"].as_str().unwrap_or("unknown");
    let label = manifest["label"].as_str().unwrap_or("");
    if engine == "llama.cpp" {
        let stand_in = if kv.starts_with("q8") || kv.starts_with("q4") {
            format!(
                "llama.cpp {kv} KV on CPU, an {}-bit stand-in — not FP8, not a GPU measurement",
                if kv.starts_with("q8") { 8 } else { 4 }
            )
        } else {
            format!("llama.cpp {kv} KV on CPU — not a GPU measurement")
        };
        format!("{cell}: {stand_in}. {label}")
    } else {
        format!("{cell}: {engine}, KV {kv}. {label}")
    }
}

#[cfg(test)]
mod tests;
