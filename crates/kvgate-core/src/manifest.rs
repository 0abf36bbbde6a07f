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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::canonical::{self, is_sha256_hex, CanonicalError};
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
        collect_differences(String::new(), Some(&value), Some(&written), &mut lost);
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

    fn non_finite_numbers(&self) -> Vec<String> {
        let d = &self.decoding;
        let floats = [
            ("decoding.temperature", Some(d.temperature)),
            ("decoding.top_p", d.top_p),
            ("decoding.min_p", d.min_p),
            ("decoding.repetition_penalty", d.repetition_penalty),
            ("decoding.presence_penalty", d.presence_penalty),
            ("decoding.frequency_penalty", d.frequency_penalty),
            (
                "memory_budget.gpu_memory_utilization",
                self.memory_budget
                    .as_ref()
                    .and_then(|m| m.gpu_memory_utilization),
            ),
        ];
        floats
            .into_iter()
            .filter(|(_, v)| v.is_some_and(|v| !v.is_finite()))
            .map(|(p, _)| p.to_owned())
            .collect()
    }

    /// Every problem with this manifest; empty when it is valid.
    pub fn validate(&self) -> Vec<ManifestProblem> {
        let mut c = Checks::default();
        let cell = match self.test_cell() {
            Ok(cell) => Some(cell),
            Err(p) => {
                c.0.push(p);
                None
            }
        };
        self.check_identity(&mut c, cell.as_ref());
        self.check_deployment(&mut c);
        self.check_model(&mut c);
        self.check_kv(&mut c, cell.as_ref());
        self.check_serving(&mut c);
        self.check_effective_args(&mut c);
        c.sha256("evaluation_corpus_sha256", &self.evaluation_corpus_sha256);
        c.sha256("trace_sha256", &self.trace_sha256);
        c.text("evaluator_revision", &self.evaluator_revision);
        c.0
    }

    fn check_identity(&self, c: &mut Checks, cell: Option<&TestCell>) {
        c.text("baseline_id", &self.baseline_id);
        if let Some(id) = &self.candidate_id {
            c.text("candidate_id", id);
        }
        c.long_text("label", self.label.as_deref());
        c.long_text("notes", self.notes.as_deref());
        match (cell, &self.candidate_id) {
            (Some(TestCell::B0), Some(id)) => c.push(
                "candidate_id",
                "no candidate_id for B0 (it is the baseline)",
                quote(id),
            ),
            (Some(cell), None) if cell.is_candidate() => c.push(
                "candidate_id",
                format!("an id for candidate cell {}", cell.name()),
                "nothing",
            ),
            (Some(_), Some(id)) if *id == self.baseline_id => c.push(
                "candidate_id",
                "an id different from baseline_id",
                quote(id),
            ),
            _ => {}
        }
    }

    fn check_deployment(&self, c: &mut Checks) {
        c.text("engine_version", &self.engine_version);
        match &self.image_digest {
            Some(d) => {
                let ok = d.strip_prefix("sha256:").is_some_and(is_sha256_hex);
                if !ok {
                    c.push(
                        "image_digest",
                        "an OCI digest `sha256:` + 64 lowercase hex digits",
                        quote(d),
                    );
                }
            }
            None if self.engine == Engine::Vllm => c.push(
                "image_digest",
                "the image digest of the vLLM deployment",
                "nothing",
            ),
            None => {}
        }
        c.opt_text("driver_version", self.driver_version.as_deref());
        c.opt_text("runtime_version", self.runtime_version.as_deref());
        if self.engine == Engine::Vllm && self.gpu_inventory.is_empty() {
            c.push(
                "gpu_inventory",
                "at least one GPU group for vLLM",
                "an empty list",
            );
        }
        let mut total_gpus: u64 = 0;
        for (i, g) in self.gpu_inventory.iter().enumerate() {
            c.text(&format!("gpu_inventory[{i}].model"), &g.model);
            c.at_least(&format!("gpu_inventory[{i}].count"), g.count.into(), 1);
            if let Some(bytes) = g.memory_bytes {
                c.exact_int(&format!("gpu_inventory[{i}].memory_bytes"), bytes, 1);
            }
            total_gpus += u64::from(g.count);
        }
        c.at_least("tensor_parallel_size", self.tensor_parallel_size.into(), 1);
        if !self.gpu_inventory.is_empty() && u64::from(self.tensor_parallel_size) > total_gpus {
            c.push(
                "tensor_parallel_size",
                format!("at most the {total_gpus} GPU(s) in gpu_inventory"),
                self.tensor_parallel_size.to_string(),
            );
        }
    }

    fn check_model(&self, c: &mut Checks) {
        c.text("model_revision", &self.model_revision);
        c.text("tokenizer_revision", &self.tokenizer_revision);
        if let Some(d) = &self.chat_template_sha256 {
            c.sha256("chat_template_sha256", d);
        }
        c.sha256("weights_digest", &self.weights_digest);
        c.text("weight_dtype", &self.weight_dtype);
        c.text("quantization_recipe", &self.quantization_recipe);
        let Some(g) = &self.model_geometry else {
            return;
        };
        c.at_least("model_geometry.num_layers", g.num_layers.into(), 1);
        c.at_least(
            "model_geometry.num_query_heads",
            g.num_query_heads.into(),
            1,
        );
        c.at_least("model_geometry.num_kv_heads", g.num_kv_heads.into(), 1);
        c.at_least("model_geometry.head_dim", g.head_dim.into(), 1);
        c.text("model_geometry.model_dtype", &g.model_dtype);
        if g.num_kv_heads > 0 && g.num_query_heads % g.num_kv_heads != 0 {
            c.push(
                "model_geometry.num_query_heads",
                format!("a multiple of num_kv_heads ({})", g.num_kv_heads),
                g.num_query_heads.to_string(),
            );
        }
        if let Some(sw) = &g.sliding_window {
            c.at_least("model_geometry.sliding_window.window", sw.window.into(), 1);
            if sw.layers.is_empty() {
                c.push(
                    "model_geometry.sliding_window.layers",
                    "at least one sliding-window layer",
                    "an empty list",
                );
            }
            c.ascending_layers(
                "model_geometry.sliding_window.layers",
                &sw.layers,
                g.num_layers,
            );
        }
    }

    fn check_kv(&self, c: &mut Checks, cell: Option<&TestCell>) {
        c.text("attention_backend", &self.attention_backend);
        c.text("kernel_revision", &self.kernel_revision);
        c.text("query_attention_precision", &self.query_attention_precision);
        if let Some(allowed) = self.engine.kv_dtypes() {
            if !allowed.contains(&self.kv_dtype.as_str()) {
                c.push(
                    "kv_dtype",
                    format!("one of {}", allowed.join(", ")),
                    quote(&self.kv_dtype),
                );
            }
        } else {
            c.text("kv_dtype", &self.kv_dtype);
        }
        if let Some(b) = self.kv_block_size {
            c.at_least("kv_block_size", b.into(), 1);
        }
        if let Some(d) = &self.scale_artifact_sha256 {
            c.sha256("scale_artifact_sha256", d);
        }
        if let Some(d) = &self.calibration_corpus_sha256 {
            c.sha256("calibration_corpus_sha256", d);
            if *d == self.evaluation_corpus_sha256 {
                c.push(
                    "calibration_corpus_sha256",
                    "a calibration corpus separate from the evaluation corpus",
                    "the evaluation corpus digest",
                );
            }
        }
        match kv_dtype_is_quantized(&self.kv_dtype) {
            Some(false) => self.check_full_precision_kv(c),
            Some(true) => self.check_quantized_kv(c),
            None => {}
        }
        self.check_skipped_layers(c);
        match cell {
            Some(TestCell::C1) => self.check_c1(c),
            Some(TestCell::C2) => self.check_c2(c),
            Some(TestCell::C3) => self.check_c3(c),
            _ => {}
        }
    }

    fn check_full_precision_kv(&self, c: &mut Checks) {
        let expected = format!("nothing for full-precision kv_dtype `{}`", self.kv_dtype);
        let present = [
            ("scale_granularity", self.scale_granularity.is_some()),
            ("scale_source", self.scale_source.is_some()),
            (
                "scales_observed_loaded",
                self.scales_observed_loaded.is_some(),
            ),
            (
                "scale_artifact_sha256",
                self.scale_artifact_sha256.is_some(),
            ),
            (
                "calibration_corpus_sha256",
                self.calibration_corpus_sha256.is_some(),
            ),
            ("skipped_layers", !self.skipped_layers.is_empty()),
        ];
        for (path, is_present) in present {
            if is_present {
                c.push(path, expected.clone(), "a value");
            }
        }
    }

    fn check_quantized_kv(&self, c: &mut Checks) {
        if self.scale_granularity.is_none() {
            c.push(
                "scale_granularity",
                format!("the scale granularity of kv_dtype `{}`", self.kv_dtype),
                "nothing",
            );
        }
        match self.scale_source {
            None => c.push(
                "scale_source",
                "default, checkpoint or runtime for a reduced-precision KV cache",
                "nothing",
            ),
            Some(ScaleSource::Default) => {
                for (path, v) in [
                    ("scale_artifact_sha256", &self.scale_artifact_sha256),
                    ("calibration_corpus_sha256", &self.calibration_corpus_sha256),
                ] {
                    if v.is_some() {
                        c.push(path, "nothing with default scales", "a digest");
                    }
                }
            }
            Some(ScaleSource::Checkpoint) if self.scale_artifact_sha256.is_none() => c.push(
                "scale_artifact_sha256",
                "the digest of the checkpoint's scale artifact",
                "nothing",
            ),
            Some(_) => {}
        }
        // llama.cpp quantizes each block of 32 as it stores it, so its scales are runtime, per block.
        if self.engine == Engine::LlamaCpp {
            if self
                .scale_granularity
                .is_some_and(|g| g != ScaleGranularity::PerBlock)
            {
                c.push(
                    "scale_granularity",
                    "per_block for a llama.cpp quantized cache",
                    opt_json(self.scale_granularity),
                );
            }
            if self.scale_source.is_some_and(|s| s != ScaleSource::Runtime) {
                c.push(
                    "scale_source",
                    "runtime for a llama.cpp quantized cache",
                    opt_json(self.scale_source),
                );
            }
        }
    }

    fn check_skipped_layers(&self, c: &mut Checks) {
        let num_layers = self.model_geometry.as_ref().map(|g| g.num_layers);
        for (i, pair) in self.skipped_layers.windows(2).enumerate() {
            if pair[0] >= pair[1] {
                c.push(
                    format!("skipped_layers[{}]", i + 1),
                    "strictly ascending layer indices, then `sliding_window` at most once",
                    json_text(&pair[1]),
                );
            }
        }
        for (i, layer) in self.skipped_layers.iter().enumerate() {
            let path = format!("skipped_layers[{i}]");
            match layer {
                SkippedLayer::Index(index) => {
                    if let Some(n) = num_layers {
                        if *index >= n {
                            c.push(
                                path,
                                format!("a layer index below model_geometry.num_layers ({n})"),
                                index.to_string(),
                            );
                        }
                    }
                }
                SkippedLayer::Token(LayerToken::SlidingWindow) => {
                    if self.engine != Engine::Vllm {
                        c.push(
                            path,
                            "layer indices (`sliding_window` is vLLM's)",
                            "`sliding_window`",
                        );
                    } else if self
                        .model_geometry
                        .as_ref()
                        .is_some_and(|g| g.sliding_window.is_none())
                    {
                        c.push(
                            path,
                            "`sliding_window` only for a model with sliding-window layers",
                            "`sliding_window`",
                        );
                    }
                }
            }
        }
    }

    fn check_c1(&self, c: &mut Checks) {
        self.require_fp8(c, "C1");
        if self.scale_source != Some(ScaleSource::Default) {
            c.push(
                "scale_source",
                "default for cell C1 (supported FP8 default scales)",
                opt_json(self.scale_source),
            );
        }
        self.forbid_skipped(c, "C1");
    }

    fn check_c2(&self, c: &mut Checks) {
        self.require_fp8(c, "C2");
        if !matches!(
            self.scale_source,
            Some(ScaleSource::Checkpoint | ScaleSource::Runtime)
        ) {
            c.push(
                "scale_source",
                "checkpoint or runtime for cell C2 (supported calibrated FP8)",
                opt_json(self.scale_source),
            );
        }
        if self.calibration_corpus_sha256.is_none() {
            c.push(
                "calibration_corpus_sha256",
                "the calibration corpus digest (C2 needs calibration provenance)",
                "nothing",
            );
        }
        self.forbid_skipped(c, "C2");
    }

    fn check_c3(&self, c: &mut Checks) {
        if self.skipped_layers.is_empty() {
            c.push(
                "skipped_layers",
                "the excluded layers for cell C3 (supported selective layer exclusion)",
                "an empty list",
            );
        }
        if kv_dtype_is_quantized(&self.kv_dtype) == Some(false) {
            c.push(
                "kv_dtype",
                "a reduced-precision kv_dtype for cell C3",
                quote(&self.kv_dtype),
            );
        }
    }

    fn require_fp8(&self, c: &mut Checks, cell: &str) {
        if !kv_dtype_is_fp8(&self.kv_dtype) {
            c.push(
                "kv_dtype",
                format!("an FP8 kv_dtype for cell {cell} (another representation is a named intervention)"),
                quote(&self.kv_dtype),
            );
        }
    }

    fn forbid_skipped(&self, c: &mut Checks, cell: &str) {
        if !self.skipped_layers.is_empty() {
            c.push(
                "skipped_layers",
                format!("no layer exclusion in cell {cell} (that is C3 or a named intervention)"),
                "a non-empty list",
            );
        }
    }

    fn check_serving(&self, c: &mut Checks) {
        c.at_least("context_limit", self.context_limit.into(), 1);
        c.at_least("output_cap", self.output_cap.into(), 1);
        if self.output_cap >= self.context_limit && self.context_limit > 0 {
            c.push(
                "output_cap",
                format!("fewer tokens than context_limit ({})", self.context_limit),
                self.output_cap.to_string(),
            );
        }
        match &self.memory_budget {
            None if self.engine == Engine::Vllm => c.push(
                "memory_budget",
                "gpu_memory_utilization and/or kv_cache_memory_bytes for vLLM",
                "nothing",
            ),
            None => {}
            Some(m) => {
                if m.gpu_memory_utilization.is_none() && m.kv_cache_memory_bytes.is_none() {
                    c.push(
                        "memory_budget",
                        "gpu_memory_utilization and/or kv_cache_memory_bytes",
                        "neither",
                    );
                }
                if let Some(u) = m.gpu_memory_utilization {
                    c.range("memory_budget.gpu_memory_utilization", u, 0.0, false, 1.0);
                }
                if let Some(b) = m.kv_cache_memory_bytes {
                    c.exact_int("memory_budget.kv_cache_memory_bytes", b, 1);
                }
            }
        }
        c.at_least(
            "scheduler.max_num_seqs",
            self.scheduler.max_num_seqs.into(),
            1,
        );
        if let Some(t) = self.scheduler.max_num_batched_tokens {
            c.at_least("scheduler.max_num_batched_tokens", t.into(), 1);
        }
        c.opt_text(
            "prefix_cache.hash_algorithm",
            self.prefix_cache.hash_algorithm.as_deref(),
        );
        let sd = &self.speculative_decoding;
        if sd.enabled {
            match &sd.method {
                Some(m) => c.text("speculative_decoding.method", m),
                None => c.push(
                    "speculative_decoding.method",
                    "the speculation method",
                    "nothing",
                ),
            }
            c.opt_text(
                "speculative_decoding.draft_model",
                sd.draft_model.as_deref(),
            );
            match sd.num_speculative_tokens {
                Some(n) => c.at_least("speculative_decoding.num_speculative_tokens", n.into(), 1),
                None => c.push(
                    "speculative_decoding.num_speculative_tokens",
                    "the number of speculative tokens",
                    "nothing",
                ),
            }
        } else {
            for (path, present) in [
                ("speculative_decoding.method", sd.method.is_some()),
                ("speculative_decoding.draft_model", sd.draft_model.is_some()),
                (
                    "speculative_decoding.num_speculative_tokens",
                    sd.num_speculative_tokens.is_some(),
                ),
            ] {
                if present {
                    c.push(
                        path,
                        "nothing while speculative decoding is disabled",
                        "a value",
                    );
                }
            }
        }
        let d = &self.decoding;
        c.range("decoding.temperature", d.temperature, 0.0, true, f64::MAX);
        if let Some(v) = d.top_p {
            c.range("decoding.top_p", v, 0.0, false, 1.0);
        }
        if let Some(v) = d.top_k {
            c.at_least("decoding.top_k", v.into(), 1);
        }
        if let Some(v) = d.min_p {
            c.range("decoding.min_p", v, 0.0, true, 1.0);
        }
        if let Some(v) = d.seed {
            c.exact_int("decoding.seed", v, 0);
        }
        if let Some(v) = d.repetition_penalty {
            c.range("decoding.repetition_penalty", v, 0.0, false, f64::MAX);
        }
        if let Some(v) = d.presence_penalty {
            c.range("decoding.presence_penalty", v, -2.0, true, 2.0);
        }
        if let Some(v) = d.frequency_penalty {
            c.range("decoding.frequency_penalty", v, -2.0, true, 2.0);
        }
        for (i, s) in self.stopping.stop.iter().enumerate() {
            if s.is_empty() {
                c.push(
                    format!("stopping.stop[{i}]"),
                    "a non-empty stop sequence",
                    "\"\"",
                );
            }
        }
    }

    fn check_effective_args(&self, c: &mut Checks) {
        for key in self.effective_args.keys() {
            if key.is_empty() || key.chars().any(|ch| ch.is_whitespace() || ch.is_control()) {
                c.push(
                    "effective_args",
                    "argument names without whitespace",
                    quote(key),
                );
            }
        }
        // The recorded arguments must agree with the fields they set.
        let kv = Some(self.kv_dtype.clone());
        let seqs = Some(self.scheduler.max_num_seqs.to_string());
        let batched = self.scheduler.max_num_batched_tokens.map(|v| v.to_string());
        let agreements: Vec<(&str, Option<String>, &str)> = match self.engine {
            Engine::Vllm => vec![
                ("kv_cache_dtype", kv, "kv_dtype"),
                (
                    "tensor_parallel_size",
                    Some(self.tensor_parallel_size.to_string()),
                    "tensor_parallel_size",
                ),
                (
                    "max_model_len",
                    Some(self.context_limit.to_string()),
                    "context_limit",
                ),
                ("max_num_seqs", seqs, "scheduler.max_num_seqs"),
                (
                    "max_num_batched_tokens",
                    batched,
                    "scheduler.max_num_batched_tokens",
                ),
                (
                    "block_size",
                    self.kv_block_size.map(|v| v.to_string()),
                    "kv_block_size",
                ),
                (
                    "enable_prefix_caching",
                    Some(self.prefix_cache.enabled.to_string()),
                    "prefix_cache.enabled",
                ),
            ],
            Engine::LlamaCpp => vec![
                ("cache_type_k", kv.clone(), "kv_dtype"),
                ("cache_type_v", kv, "kv_dtype"),
                ("n_parallel", seqs, "scheduler.max_num_seqs"),
                ("n_batch", batched, "scheduler.max_num_batched_tokens"),
            ],
            Engine::Other => vec![],
        };
        for (arg, field_value, field) in agreements {
            let Some(recorded) = self.effective_args.get(arg) else {
                continue;
            };
            let agrees = match &field_value {
                Some(v) => recorded.eq_ignore_ascii_case(v),
                None => false,
            };
            if !agrees {
                c.push(
                    format!("effective_args.{arg}"),
                    format!(
                        "the value of {field} ({})",
                        field_value
                            .as_deref()
                            .map(quote)
                            .unwrap_or_else(|| "absent".into())
                    ),
                    quote(recorded),
                );
            }
        }
        if let (Some(recorded), Some(Some(u))) = (
            self.effective_args.get("gpu_memory_utilization"),
            self.memory_budget
                .as_ref()
                .map(|m| m.gpu_memory_utilization),
        ) {
            if recorded.parse::<f64>().ok() != Some(u) {
                c.push(
                    "effective_args.gpu_memory_utilization",
                    format!("the value of memory_budget.gpu_memory_utilization ({u})"),
                    quote(recorded),
                );
            }
        }
    }
}

/// Collects problems; each helper names the path and what it expected.
#[derive(Default)]
struct Checks(Vec<ManifestProblem>);

impl Checks {
    fn push(
        &mut self,
        path: impl Into<String>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) {
        self.0.push(ManifestProblem::new(path, expected, found));
    }

    fn text_max(&mut self, path: &str, value: &str, max: usize, allow_newlines: bool) {
        let chars = value.chars().count();
        if value.trim().is_empty() {
            self.push(path, "a non-empty text", quote(value));
        } else if value.trim() != value {
            // Stray whitespace would give the same meaning two digests.
            self.push(
                path,
                "text without leading or trailing whitespace",
                quote(value),
            );
        } else if chars > max {
            self.push(
                path,
                format!("at most {max} characters"),
                format!("{chars}"),
            );
        } else if value
            .chars()
            .any(|ch| ch.is_control() && !(allow_newlines && matches!(ch, '\n' | '\t')))
        {
            self.push(path, "no control characters", quote(value));
        }
    }

    fn text(&mut self, path: &str, value: &str) {
        self.text_max(path, value, MAX_TEXT_CHARS, false);
    }

    fn opt_text(&mut self, path: &str, value: Option<&str>) {
        if let Some(v) = value {
            self.text(path, v);
        }
    }

    fn long_text(&mut self, path: &str, value: Option<&str>) {
        if let Some(v) = value {
            self.text_max(path, v, MAX_NOTES_CHARS, true);
        }
    }

    fn sha256(&mut self, path: &str, value: &str) {
        if !is_sha256_hex(value) {
            let hint = if value.starts_with("sha256:") {
                " (without the `sha256:` prefix)"
            } else {
                ""
            };
            self.push(path, format!("64 lowercase hex digits{hint}"), quote(value));
        }
    }

    fn at_least(&mut self, path: &str, value: u64, min: u64) {
        if value < min {
            self.push(path, format!("at least {min}"), value.to_string());
        }
    }

    fn exact_int(&mut self, path: &str, value: u64, min: u64) {
        self.at_least(path, value, min);
        if value > MAX_EXACT_INTEGER {
            self.push(
                path,
                format!(
                    "at most {MAX_EXACT_INTEGER} (larger integers do not survive canonical JSON)"
                ),
                value.to_string(),
            );
        }
    }

    fn range(&mut self, path: &str, value: f64, low: f64, low_inclusive: bool, high: f64) {
        let above_low = if low_inclusive {
            value >= low
        } else {
            value > low
        };
        if !value.is_finite() || !above_low || value > high {
            let open = if low_inclusive { '[' } else { '(' };
            let range = if high == f64::MAX {
                format!("a finite number in {open}{low}, ∞)")
            } else {
                format!("a number in {open}{low}, {high}]")
            };
            self.push(path, range, value.to_string());
        }
    }

    fn ascending_layers(&mut self, path: &str, layers: &[u32], num_layers: u32) {
        for (i, pair) in layers.windows(2).enumerate() {
            if pair[0] >= pair[1] {
                self.push(
                    format!("{path}[{}]", i + 1),
                    "strictly ascending layer indices",
                    pair[1].to_string(),
                );
            }
        }
        for (i, layer) in layers.iter().enumerate() {
            if *layer >= num_layers {
                self.push(
                    format!("{path}[{i}]"),
                    format!("a layer index below num_layers ({num_layers})"),
                    layer.to_string(),
                );
            }
        }
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

/// Checks a set of manifests meant for one study: one B0, unique cell names and candidate ids,
/// every candidate pointing at B0's `baseline_id`. Paths start with the manifest's index.
pub fn validate_cell_set(manifests: &[Manifest]) -> Vec<ManifestProblem> {
    let mut problems = Vec::new();
    let b0: Vec<usize> = (0..manifests.len())
        .filter(|&i| manifests[i].cell == "B0")
        .collect();
    if b0.len() != 1 {
        problems.push(ManifestProblem::new(
            "$",
            "exactly one manifest with cell B0",
            format!("{}", b0.len()),
        ));
    }
    let mut cells = BTreeSet::new();
    let mut candidates = BTreeSet::new();
    for (i, m) in manifests.iter().enumerate() {
        if !cells.insert(m.cell.as_str()) {
            problems.push(ManifestProblem::new(
                format!("[{i}].cell"),
                "a cell name unique within the study",
                quote(&m.cell),
            ));
        }
        if let Some(id) = &m.candidate_id {
            if !candidates.insert(id.as_str()) {
                problems.push(ManifestProblem::new(
                    format!("[{i}].candidate_id"),
                    "a candidate id unique within the study",
                    quote(id),
                ));
            }
        }
        if let [only] = b0.as_slice() {
            let baseline = &manifests[*only].baseline_id;
            if m.baseline_id != *baseline {
                problems.push(ManifestProblem::new(
                    format!("[{i}].baseline_id"),
                    format!("B0's baseline_id {}", quote(baseline)),
                    quote(&m.baseline_id),
                ));
            }
        }
    }
    problems
}

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

/// The seed's warning, shown on a C1→C2 comparison that changes more than calibration.
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

/// [`validate_cell_set`] for the frozen manifests of a study that may not have frozen its B0
/// yet: a candidate may be frozen first; every other set rule applies.
pub fn validate_frozen_set(manifests: &[Manifest]) -> Vec<ManifestProblem> {
    let has_b0 = manifests.iter().any(|m| m.cell == "B0");
    validate_cell_set(manifests)
        .into_iter()
        .filter(|p| has_b0 || !(p.path == "$" && p.found == "0"))
        .collect()
}

/// The seed's warning for a C1↔C2 comparison that also changes backend, kernel or attention
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

fn collect_differences(path: String, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<Leaf>) {
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

#[cfg(test)]
mod tests {
    #[test]
    fn data_origin_names_a_cpu_stand_in() {
        let q8 = serde_json::json!({"engine": "llama.cpp", "kv_dtype": "q8_0", "label": "Q8 cell"});
        assert_eq!(
            data_origin("Q8", &q8),
            "Q8: llama.cpp q8_0 KV on CPU, an 8-bit stand-in — not FP8, not a GPU measurement. Q8 cell"
        );
        let b0 = serde_json::json!({"engine": "llama.cpp", "kv_dtype": "f16"});
        assert_eq!(
            data_origin("B0", &b0),
            "B0: llama.cpp f16 KV on CPU — not a GPU measurement. "
        );
        let vllm = serde_json::json!({"engine": "vllm", "kv_dtype": "fp8_e4m3", "label": "C1"});
        assert_eq!(data_origin("C1", &vllm), "C1: vllm, KV fp8_e4m3. C1");
    }

    use super::*;

    const B0_JSON: &str = include_str!("../../../fixtures/manifests/llama31-8b-h100-b0.json");
    const C1_JSON: &str = include_str!("../../../fixtures/manifests/llama31-8b-h100-c1.json");
    const C2_JSON: &str = include_str!("../../../fixtures/manifests/llama31-8b-h100-c2.json");
    const C3_JSON: &str = include_str!("../../../fixtures/manifests/llama31-8b-h100-c3.json");
    const SMOL_B0_JSON: &str = include_str!("../../../fixtures/manifests/smollm2-135m-cpu-b0.json");
    const SMOL_Q8_JSON: &str = include_str!("../../../fixtures/manifests/smollm2-135m-cpu-q8.json");

    fn load(text: &str) -> Manifest {
        Manifest::from_json(text).unwrap_or_else(|p| panic!("{p}"))
    }

    fn paths(problems: &[ManifestProblem]) -> Vec<&str> {
        problems.iter().map(|p| p.path.as_str()).collect()
    }

    fn kinds(findings: &[Finding]) -> Vec<(&str, FindingKind)> {
        findings.iter().map(|f| (f.path.as_str(), f.kind)).collect()
    }

    #[test]
    fn every_fixture_validates() {
        for text in [
            B0_JSON,
            C1_JSON,
            C2_JSON,
            C3_JSON,
            SMOL_B0_JSON,
            SMOL_Q8_JSON,
        ] {
            let m = load(text);
            let problems = m.validate();
            assert!(problems.is_empty(), "{}: {problems:#?}", m.cell);
            assert!(
                m.notes.as_deref().unwrap_or("").contains("synthetic"),
                "{}",
                m.cell
            );
        }
        let set: Vec<Manifest> = [B0_JSON, C1_JSON, C2_JSON, C3_JSON].map(load).into();
        assert_eq!(validate_cell_set(&set), vec![]);
        let llama: Vec<Manifest> = [SMOL_B0_JSON, SMOL_Q8_JSON].map(load).into();
        assert_eq!(validate_cell_set(&llama), vec![]);
    }

    #[test]
    fn fixture_synthetic_digests_are_derived_from_their_label() {
        // The notes promise: sha256 of `kvgate-synthetic:<set>:<field>`; this keeps them honest.
        let b0 = load(B0_JSON);
        let synthetic = |field: &str| {
            canonical::sha256_hex(format!("kvgate-synthetic:llama31-8b:{field}").as_bytes())
        };
        assert_eq!(b0.weights_digest, synthetic("weights_digest"));
        assert_eq!(
            b0.image_digest.as_deref(),
            Some(format!("sha256:{}", synthetic("image_digest")).as_str())
        );
        assert_eq!(b0.trace_sha256, synthetic("trace_sha256"));
        let c2 = load(C2_JSON);
        assert_eq!(
            c2.scale_artifact_sha256,
            Some(synthetic("scale_artifact_sha256"))
        );
        assert_eq!(
            c2.calibration_corpus_sha256,
            Some(synthetic("calibration_corpus_sha256"))
        );
        // The llama.cpp pair's weights digest is the real GGUF file's sha256.
        assert_eq!(
            load(SMOL_B0_JSON).weights_digest,
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
        );
    }

    #[test]
    fn b0_vs_c1_is_kv_intervention_without_red() {
        let findings = diff(&load(B0_JSON), &load(C1_JSON));
        assert!(
            findings.iter().all(|f| f.severity != Severity::Red),
            "{findings:#?}"
        );
        let k = kinds(&findings);
        assert!(k.contains(&("kv_dtype", FindingKind::Intervention)));
        assert!(k.contains(&("scale_source", FindingKind::Intervention)));
        assert!(k.contains(&("effective_args.kv_cache_dtype", FindingKind::Intervention)));
        // FA3 with FP8 KV quantizes queries: named as coupled, never hidden as storage-only.
        assert!(k.contains(&(
            "query_attention_precision",
            FindingKind::CoupledIntervention
        )));
        let kv = findings.iter().find(|f| f.path == "kv_dtype").unwrap();
        assert_eq!(kv.reference_value.as_deref(), Some("\"auto\""));
        assert_eq!(kv.candidate_value.as_deref(), Some("\"fp8_e4m3\""));
        assert_eq!(kv.severity, Severity::Info);
        // A field only the candidate has is still listed.
        let src = findings.iter().find(|f| f.path == "scale_source").unwrap();
        assert_eq!(src.reference_value, None);
    }

    #[test]
    fn b0_vs_c2_and_c3_have_no_red() {
        let b0 = load(B0_JSON);
        let c2 = diff(&b0, &load(C2_JSON));
        assert!(c2.iter().all(|f| f.severity != Severity::Red), "{c2:#?}");
        assert!(kinds(&c2).contains(&("scale_artifact_sha256", FindingKind::Intervention)));
        assert!(kinds(&c2).contains(&("calibration_corpus_sha256", FindingKind::Intervention)));
        let c3 = diff(&b0, &load(C3_JSON));
        assert!(c3.iter().all(|f| f.severity != Severity::Red), "{c3:#?}");
        assert!(kinds(&c3).contains(&("skipped_layers", FindingKind::Intervention)));
    }

    #[test]
    fn identical_manifests_have_no_findings() {
        let b0 = load(B0_JSON);
        assert_eq!(diff(&b0, &b0.clone()), vec![]);
    }

    #[test]
    fn c1_to_c2_is_calibration_only_unless_the_kernel_switches() {
        let c1 = load(C1_JSON);
        let c2 = load(C2_JSON);
        let clean = diff(&c1, &c2);
        assert!(
            clean
                .iter()
                .all(|f| f.kind != FindingKind::CoupledIntervention && f.severity != Severity::Red),
            "{clean:#?}"
        );
        for field in ["attention_backend", "kernel_revision"] {
            let mut switched = c2.clone();
            match field {
                "attention_backend" => switched.attention_backend = "FLASHINFER".into(),
                _ => switched.kernel_revision = "vllm-flash-attn FA2 (other build)".into(),
            }
            let findings = diff(&c1, &switched);
            let f = findings.iter().find(|f| f.path == field).unwrap();
            assert_eq!(f.kind, FindingKind::CoupledIntervention);
            assert_eq!(f.severity, Severity::Amber);
            assert!(f
                .message
                .contains("Do not silently switch kernels between C1 and C2"));
        }
        let mut other_dtype = c2.clone();
        other_dtype.kv_dtype = "fp8_e5m2".into();
        let f = diff(&c1, &other_dtype);
        assert!(kinds(&f).contains(&("kv_dtype", FindingKind::CoupledIntervention)));
    }

    #[test]
    fn every_held_constant_field_is_red() {
        let b0 = load(B0_JSON);
        let c1 = load(C1_JSON);
        type Edit = fn(&mut Manifest);
        let cases: &[(&str, Edit)] = &[
            ("weights_digest", |m| m.weights_digest = "0".repeat(64)),
            ("model_revision", |m| m.model_revision.push('x')),
            ("tokenizer_revision", |m| m.tokenizer_revision.push('x')),
            ("chat_template_sha256", |m| {
                m.chat_template_sha256 = Some("1".repeat(64))
            }),
            ("scheduler.max_num_seqs", |m| m.scheduler.max_num_seqs += 1),
            ("scheduler.max_num_batched_tokens", |m| {
                m.scheduler.max_num_batched_tokens = None
            }),
            ("decoding.temperature", |m| m.decoding.temperature = 0.7),
            ("decoding.seed", |m| m.decoding.seed = Some(7)),
            ("stopping.stop", |m| m.stopping.stop.push("###".into())),
            ("stopping.ignore_eos", |m| {
                m.stopping.ignore_eos = !m.stopping.ignore_eos
            }),
            ("output_cap", |m| m.output_cap += 1),
            ("prefix_cache.enabled", |m| {
                m.prefix_cache.enabled = !m.prefix_cache.enabled
            }),
            ("speculative_decoding.enabled", |m| {
                m.speculative_decoding = SpeculativeDecoding {
                    enabled: true,
                    method: Some("ngram".into()),
                    draft_model: None,
                    num_speculative_tokens: Some(4),
                }
            }),
            ("tensor_parallel_size", |m| m.tensor_parallel_size = 2),
            ("context_limit", |m| m.context_limit = 8192),
            ("memory_budget.gpu_memory_utilization", |m| {
                m.memory_budget.as_mut().unwrap().gpu_memory_utilization = Some(0.8)
            }),
            ("weight_dtype", |m| m.weight_dtype = "float16".into()),
            ("quantization_recipe", |m| {
                m.quantization_recipe = "fp8 dynamic".into()
            }),
            ("evaluation_corpus_sha256", |m| {
                m.evaluation_corpus_sha256 = "2".repeat(64)
            }),
            ("trace_sha256", |m| m.trace_sha256 = "3".repeat(64)),
            ("evaluator_revision", |m| m.evaluator_revision.push('x')),
            ("image_digest", |m| {
                m.image_digest = Some(format!("sha256:{}", "4".repeat(64)))
            }),
            ("engine_version", |m| m.engine_version = "0.12.0".into()),
            ("driver_version", |m| m.driver_version = None),
            ("gpu_inventory", |m| m.gpu_inventory[0].count = 2),
            ("kv_block_size", |m| m.kv_block_size = Some(32)),
            ("baseline_id", |m| m.baseline_id.push('x')),
            ("effective_args.max_num_seqs", |m| {
                m.effective_args.insert("max_num_seqs".into(), "1".into());
            }),
        ];
        for (path, edit) in cases {
            let mut changed = c1.clone();
            edit(&mut changed);
            let findings = diff(&b0, &changed);
            let f = findings
                .iter()
                .find(|f| f.path == *path)
                .unwrap_or_else(|| panic!("no finding at {path}: {findings:#?}"));
            assert_eq!(f.severity, Severity::Red, "{path}");
            let expected = if *path == "weights_digest" {
                FindingKind::HiddenWeightChange
            } else {
                FindingKind::HeldConstantViolation
            };
            assert_eq!(f.kind, expected, "{path}");
            // Red findings sort first.
            assert_eq!(findings[0].severity, Severity::Red);
        }
        let mut w = c1.clone();
        w.weights_digest = "0".repeat(64);
        let f = diff(&b0, &w);
        assert!(
            f[0].message.starts_with("hidden weight change"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn llama_cpp_pair_differs_only_in_the_kv_representation() {
        let findings = diff(&load(SMOL_B0_JSON), &load(SMOL_Q8_JSON));
        assert!(
            findings.iter().all(|f| f.severity != Severity::Red),
            "{findings:#?}"
        );
        let k = kinds(&findings);
        assert!(k.contains(&("kv_dtype", FindingKind::Intervention)));
        assert!(k.contains(&("effective_args.cache_type_k", FindingKind::Intervention)));
        assert!(k.contains(&("effective_args.cache_type_v", FindingKind::Intervention)));
        // Flash attention is on in both cells, so the backend does not change.
        assert!(!k
            .iter()
            .any(|(p, _)| p.contains("flash_attn") || *p == "attention_backend"));
    }

    #[test]
    fn digest_ignores_key_order_and_whitespace_but_not_values() {
        let b0 = load(B0_JSON);
        let digest = b0.digest().unwrap();
        assert!(is_sha256_hex(&digest));
        // Re-serialized compactly, in another member order, it parses to the same digest.
        let mut value: Value = serde_json::from_str(B0_JSON).unwrap();
        let reordered: serde_json::Map<String, Value> = value
            .as_object_mut()
            .unwrap()
            .clone()
            .into_iter()
            .rev()
            .collect();
        let text = serde_json::to_string(&Value::Object(reordered)).unwrap();
        assert_ne!(text, B0_JSON);
        assert_eq!(load(&text).digest().unwrap(), digest);
        assert_eq!(
            b0.canonical_json().unwrap(),
            canonical::canonicalize_str(B0_JSON).unwrap()
        );
        let mut changed = b0.clone();
        changed.decoding.top_p = Some(0.9999);
        assert_ne!(changed.digest().unwrap(), digest);
        let mut changed = b0.clone();
        changed.skipped_layers = vec![SkippedLayer::Index(0)];
        assert_ne!(changed.digest().unwrap(), digest);
        let mut nan = b0.clone();
        nan.decoding.temperature = f64::NAN;
        assert_eq!(
            nan.digest(),
            Err(CanonicalError::NonFinite {
                path: "decoding.temperature".into()
            })
        );
    }

    #[test]
    fn absent_options_are_omitted_not_zero() {
        let b0 = load(SMOL_B0_JSON);
        let json = serde_json::to_value(&b0).unwrap();
        let obj = json.as_object().unwrap();
        for absent in [
            "memory_budget",
            "scale_source",
            "scales_observed_loaded",
            "image_digest",
            "candidate_id",
        ] {
            assert!(!obj.contains_key(absent), "{absent}");
        }
        assert!(!obj["decoding"].as_object().unwrap().contains_key("seed"));
    }

    #[test]
    fn bindings_and_schema_treat_unknown_as_absent() {
        let decl = <Manifest as TS>::decl(&ts_rs::Config::default());
        assert!(decl.contains("candidate_id?: string"), "{decl}");
        assert!(decl.contains("scales_observed_loaded?: boolean"), "{decl}");
        assert!(decl.contains("weights_digest: string"), "{decl}");
        let schema = serde_json::to_value(schemars::schema_for!(Manifest)).unwrap();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(required.contains(&"weights_digest") && required.contains(&"kv_dtype"));
        assert!(!required.contains(&"scale_source") && !required.contains(&"candidate_id"));
        assert_eq!(schema["additionalProperties"], Value::Bool(false));
    }

    #[test]
    fn from_json_names_the_path_of_type_and_unknown_field_errors() {
        let wrong_type = B0_JSON.replace("\"max_num_seqs\": 64", "\"max_num_seqs\": -1");
        let p = Manifest::from_json(&wrong_type).unwrap_err();
        assert_eq!(p.path, "scheduler.max_num_seqs");
        assert!(p.found.contains("-1"), "{p}");
        let unknown = B0_JSON.replacen("{", "{\"ttft_ms\": 0, ", 1);
        let p = Manifest::from_json(&unknown).unwrap_err();
        assert!(p.found.contains("ttft_ms"), "{p}");
        let dup = B0_JSON.replacen("{", "{\"cell\": \"C9\", ", 1);
        let p = Manifest::from_json(&dup).unwrap_err();
        assert_eq!(p.path, "$");
        assert!(p.found.contains("twice"), "{p}");
        let bad_layer = C3_JSON.replace("\"skipped_layers\": [", "\"skipped_layers\": [-1, ");
        assert!(Manifest::from_json(&bad_layer)
            .unwrap_err()
            .path
            .starts_with("skipped_layers"));
    }

    #[test]
    fn from_json_refuses_what_the_digest_would_not_show() {
        let null = B0_JSON.replacen("{", "{\"candidate_id\": null, ", 1);
        let p = Manifest::from_json(&null).unwrap_err();
        assert_eq!(p.path, "candidate_id");
        assert!(p.expected.contains("left out"), "{p}");
        let positional = B0_JSON.replace(
            "\"max_num_seqs\": 64,\n    \"max_num_batched_tokens\": 8192",
            "\"x\": 0",
        );
        assert_ne!(positional, B0_JSON);
        let arrays = positional.replace("{\n    \"x\": 0\n  }", "[64, 8192]");
        assert_ne!(arrays, positional);
        let p = Manifest::from_json(&arrays).unwrap_err();
        assert_eq!(p.path, "scheduler");
        assert_eq!(p.expected, "a JSON object");
        let missing = B0_JSON.replace("\"skipped_layers\": [],", "");
        assert!(Manifest::from_json(&missing)
            .unwrap_err()
            .found
            .contains("skipped_layers"));
        assert_eq!(
            Manifest::from_json("[]").unwrap_err().expected,
            "a JSON object"
        );
    }

    #[test]
    fn validate_reports_digest_formats() {
        let mut m = load(C2_JSON);
        m.weights_digest = m.weights_digest.to_uppercase();
        m.image_digest = m
            .image_digest
            .as_ref()
            .map(|d| d.trim_start_matches("sha256:").to_owned());
        m.trace_sha256 = format!("sha256:{}", m.trace_sha256);
        m.scale_artifact_sha256 = Some("abc".into());
        let problems = m.validate();
        assert_eq!(
            paths(&problems),
            [
                "image_digest",
                "weights_digest",
                "scale_artifact_sha256",
                "trace_sha256"
            ]
        );
        assert!(problems[3]
            .expected
            .contains("without the `sha256:` prefix"));
        assert!(problems[0]
            .to_string()
            .starts_with("image_digest: expected an OCI digest"));
    }

    #[test]
    fn validate_checks_kv_dtype_against_the_engine() {
        let mut m = load(C1_JSON);
        m.kv_dtype = "q8_0".into();
        let problems = m.validate();
        assert!(paths(&problems).contains(&"kv_dtype"));
        assert!(problems[0].expected.contains("fp8_e4m3"));
        let mut q = load(SMOL_Q8_JSON);
        q.kv_dtype = "fp8".into();
        q.effective_args.clear();
        assert_eq!(paths(&q.validate()), ["kv_dtype"]);
        q.kv_dtype = "iq4_nl".into();
        assert_eq!(q.validate(), vec![]);
    }

    #[test]
    fn validate_checks_cell_rules() {
        let mut c1 = load(C1_JSON);
        c1.scale_source = Some(ScaleSource::Checkpoint);
        assert!(paths(&c1.validate()).contains(&"scale_source"));
        let mut c2 = load(C2_JSON);
        c2.calibration_corpus_sha256 = None;
        assert_eq!(paths(&c2.validate()), ["calibration_corpus_sha256"]);
        let mut c2 = load(C2_JSON);
        c2.calibration_corpus_sha256 = Some(c2.evaluation_corpus_sha256.clone());
        assert_eq!(paths(&c2.validate()), ["calibration_corpus_sha256"]);
        let mut c3 = load(C3_JSON);
        c3.skipped_layers.clear();
        c3.effective_args.remove("kv_cache_dtype_skip_layers");
        assert_eq!(paths(&c3.validate()), ["skipped_layers"]);
        let mut b0 = load(B0_JSON);
        b0.candidate_id = Some("x".into());
        b0.scale_source = Some(ScaleSource::Default);
        assert_eq!(paths(&b0.validate()), ["candidate_id", "scale_source"]);
        let mut c1 = load(C1_JSON);
        c1.candidate_id = None;
        c1.cell = "c1".into();
        let problems = c1.validate();
        assert_eq!(paths(&problems), ["cell"]);
        assert_eq!(
            problems[0].to_string(),
            "cell: expected `C1` (reserved names are upper case), found `c1`"
        );
    }

    #[test]
    fn validate_checks_layers_and_serving_limits() {
        let mut c3 = load(C3_JSON);
        c3.effective_args.remove("kv_cache_dtype_skip_layers");
        c3.skipped_layers = vec![
            SkippedLayer::Index(31),
            SkippedLayer::Index(0),
            SkippedLayer::Index(32),
        ];
        let problems = c3.validate();
        assert_eq!(paths(&problems), ["skipped_layers[1]", "skipped_layers[2]"]);
        c3.skipped_layers = vec![
            SkippedLayer::Index(0),
            SkippedLayer::Token(LayerToken::SlidingWindow),
        ];
        // Llama 3.1 has no sliding-window layers.
        assert_eq!(paths(&c3.validate()), ["skipped_layers[1]"]);

        let mut m = load(B0_JSON);
        m.tensor_parallel_size = 2;
        m.effective_args.remove("tensor_parallel_size");
        m.output_cap = m.context_limit;
        m.decoding.top_p = Some(0.0);
        m.decoding.seed = Some(MAX_EXACT_INTEGER + 1);
        m.memory_budget = None;
        m.scheduler.max_num_seqs = 0;
        m.effective_args.remove("max_num_seqs");
        let problems = m.validate();
        assert_eq!(
            paths(&problems),
            [
                "tensor_parallel_size",
                "output_cap",
                "memory_budget",
                "scheduler.max_num_seqs",
                "decoding.top_p",
                "decoding.seed"
            ],
            "{problems:#?}"
        );
        assert!(problems[0].expected.contains("at most the 1 GPU"));
    }

    #[test]
    fn validate_checks_speculative_decoding_is_complete_or_off() {
        let mut m = load(B0_JSON);
        m.speculative_decoding.enabled = true;
        assert_eq!(
            paths(&m.validate()),
            [
                "speculative_decoding.method",
                "speculative_decoding.num_speculative_tokens"
            ]
        );
        m.speculative_decoding.enabled = false;
        m.speculative_decoding.method = Some("ngram".into());
        assert_eq!(paths(&m.validate()), ["speculative_decoding.method"]);
        m.speculative_decoding = SpeculativeDecoding::disabled();
        assert_eq!(m.validate(), vec![]);
    }

    #[test]
    fn validate_checks_effective_args_agree_with_fields() {
        let mut m = load(C1_JSON);
        m.effective_args
            .insert("kv_cache_dtype".into(), "auto".into());
        m.effective_args
            .insert("max_model_len".into(), "4096".into());
        let problems = m.validate();
        assert_eq!(
            paths(&problems),
            [
                "effective_args.kv_cache_dtype",
                "effective_args.max_model_len"
            ]
        );
        assert!(problems[0].expected.contains("`fp8_e4m3`"));
    }

    #[test]
    fn validate_cell_set_requires_one_b0_and_unique_cells() {
        let b0 = load(B0_JSON);
        let c1 = load(C1_JSON);
        let problems = validate_cell_set(&[c1.clone(), c1.clone()]);
        assert_eq!(paths(&problems), ["$", "[1].cell", "[1].candidate_id"]);
        let mut stray = c1.clone();
        stray.baseline_id = "other".into();
        assert_eq!(paths(&validate_cell_set(&[b0, stray])), ["[1].baseline_id"]);
    }

    #[test]
    fn coupling_warning_only_for_a_coupled_calibration_pair() {
        let coupled = Finding {
            path: "kernel_revision".into(),
            kind: FindingKind::CoupledIntervention,
            severity: Severity::Amber,
            reference_value: None,
            candidate_value: None,
            message: String::new(),
        };
        let plain = Finding {
            kind: FindingKind::Intervention,
            severity: Severity::Info,
            ..coupled.clone()
        };
        let f = std::slice::from_ref(&coupled);
        assert_eq!(
            calibration_coupling_warning("C1", "C2", f),
            Some(C1_C2_COUPLING_WARNING)
        );
        assert_eq!(
            calibration_coupling_warning("C2", "C1", f),
            Some(C1_C2_COUPLING_WARNING)
        );
        assert_eq!(calibration_coupling_warning("B0", "C1", f), None);
        assert_eq!(calibration_coupling_warning("C1", "C2", &[plain]), None);
    }

    #[test]
    fn a_candidate_may_be_frozen_before_b0_but_not_beside_two() {
        let c1 = Manifest::from_json(C1_JSON).unwrap();
        let b0 = Manifest::from_json(B0_JSON).unwrap();
        assert!(!validate_cell_set(std::slice::from_ref(&c1)).is_empty());
        assert!(validate_frozen_set(std::slice::from_ref(&c1)).is_empty());
        assert!(validate_frozen_set(&[b0.clone(), c1]).is_empty());
        let twice = validate_frozen_set(&[b0.clone(), b0]);
        assert!(
            twice.iter().any(|p| p.path == "$" && p.found == "2"),
            "{twice:?}"
        );
    }
}
