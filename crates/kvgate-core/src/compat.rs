//! The compatibility rule: does what an engine actually ran (its startup evidence and
//! `/metrics`) match the cell's frozen manifest?
//!
//! A cell whose evidence is missing, contradicts the manifest or contradicts itself is an
//! **invalid cell**: it never gets a quality score. Nothing here accepts silently: every rule
//! either confirms a manifest field from evidence, or reports a [`CompatProblem`] that says which
//! field, what the manifest expected, what the evidence showed and why that matters.
//!
//! The rules, in the order [`check_compatibility`] applies them:
//! 1. **evidence present**: no evidence at all (or evidence without a single fact) is invalid,
//!    "missing startup evidence".
//! 2. **evidence agrees with itself**: conflicts recorded while combining evidence
//!    ([`ObservedEngine::merge`]) are problems at `evidence.<field>`.
//! 3. **engine**: a cell of an engine without rules here (`other`) is invalid, because nothing
//!    can be confirmed; evidence that only the other known engine prints (llama.cpp's
//!    `llama_kv_cache` facts for a vLLM cell, vLLM's KV dtype line, skip layers or token capacity
//!    for a llama.cpp cell) is invalid, because it was read from the wrong engine's log.
//! 4. **KV dtype** (`kv_dtype`): see [`check_compatibility`] for the per-engine mapping.
//! 5. **attention backend**: vLLM's observed backend must appear as a whole word in the
//!    manifest's `attention_backend`; llama.cpp's flash attention on/off must agree with the
//!    manifest's `flash_attn_type` (or `flash_attn`) engine argument when it records one.
//! 6. **scales**: a manifest whose scales are calibrated (`checkpoint` or `runtime`) is invalid
//!    when the evidence shows default 1.0 or uncalibrated scales (a silent fallback); so is a
//!    manifest claiming `scales_observed_loaded: true`. Default or unrecorded scales with such
//!    lines are what C1 expects; silence is fine for every scale source.
//! 7. **skipped layers**: compared as sets when the evidence states them; a manifest that skips
//!    layers (C3) with evidence silent on them is invalid, because the exclusion is its
//!    intervention and cannot be confirmed.
//! 8. **KV capacity**: when the evidence states it, the engine must hold at least one sequence of
//!    `context_limit` tokens (llama.cpp cells, vLLM tokens). Capacity absent from the evidence is
//!    a missing measurement, not a problem.
//! 9. **admission limit**: when the evidence states how many sequences the engine admits
//!    (llama.cpp `n_seq_max`, its slots; vLLM's non-default `max_num_seqs`), it must be the
//!    manifest's `scheduler.max_num_seqs`: cells are compared at equal admission limits, and the
//!    limit compared is the one that ran. Silence (vLLM's default) is not a problem.

use std::collections::BTreeSet;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::manifest::{Engine, LayerToken, Manifest, ScaleSource, SkippedLayer};

/// Engine-neutral facts read from startup evidence (logs) and `/metrics`. Absent = the evidence
/// did not say, never a default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ObservedEngine {
    /// The attention backend the engine selected (vLLM `FLASH_ATTN`, `FLASHINFER`, …).
    #[serde(default)]
    pub attention_backend: Option<String>,
    /// llama.cpp: whether flash attention ran (`llama_context: flash_attn = enabled|disabled`).
    #[serde(default)]
    pub flash_attention: Option<bool>,
    /// llama.cpp K cache type (`f16`, `q8_0`, …).
    #[serde(default)]
    pub k_cache_dtype: Option<String>,
    /// llama.cpp V cache type.
    #[serde(default)]
    pub v_cache_dtype: Option<String>,
    /// vLLM KV cache dtype: `fp8`, `fp8_e4m3`, … from the startup line, or the configured value
    /// (`auto` included) from `vllm:cache_config_info`.
    #[serde(default)]
    pub kv_cache_dtype: Option<String>,
    /// Evidence lines showing default 1.0 scales or uncalibrated q/prob scales.
    #[serde(default)]
    pub default_scale_lines: Vec<String>,
    /// Layers the engine kept in full precision (indices or `sliding_window`), as the evidence
    /// wrote them; `Some(empty)` when the evidence says none.
    #[serde(default)]
    pub skipped_layers: Option<Vec<String>>,
    /// KV cache size in MiB (llama.cpp total; vLLM available KV memory).
    #[serde(default)]
    pub kv_cache_mib: Option<f64>,
    /// vLLM KV cache capacity in tokens.
    #[serde(default)]
    pub kv_cache_tokens: Option<u64>,
    /// llama.cpp KV cells (token positions).
    #[serde(default)]
    pub kv_cells: Option<u64>,
    /// The sequences the engine admits at once (llama.cpp slots, vLLM `max_num_seqs`); left out
    /// of the evidence's JSON when unstated, so evidence read before it keeps its digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub max_sequences: Option<u32>,
    /// The evidence says the engine did not start (quoted with its line): never valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub startup_failure: Option<String>,
    /// Where each fact came from, e.g. `kv_dtype: startup log line 150`.
    #[serde(default)]
    pub sources: Vec<String>,
    /// Facts two pieces of evidence disagreed on; each one invalidates the cell.
    #[serde(default)]
    pub conflicts: Vec<CompatProblem>,
}

impl ObservedEngine {
    /// Whether the evidence holds no fact at all (sources alone are not facts).
    pub fn is_empty(&self) -> bool {
        self.attention_backend.is_none()
            && self.flash_attention.is_none()
            && self.k_cache_dtype.is_none()
            && self.v_cache_dtype.is_none()
            && self.kv_cache_dtype.is_none()
            && self.default_scale_lines.is_empty()
            && self.skipped_layers.is_none()
            && self.kv_cache_mib.is_none()
            && self.kv_cache_tokens.is_none()
            && self.kv_cells.is_none()
            && self.max_sequences.is_none()
            && self.startup_failure.is_none()
            && self.conflicts.is_empty()
    }

    /// Combines two pieces of evidence about the same engine start (e.g. its log and its
    /// `/metrics`). A fact only one side states is taken; a fact both state differently keeps
    /// the first value and records a conflict (field `evidence.<name>`), which invalidates the
    /// cell: evidence that contradicts itself is never resolved silently.
    pub fn merge(mut self, other: ObservedEngine) -> ObservedEngine {
        let mut conflicts = Vec::new();
        merge_field(
            "attention_backend",
            &mut self.attention_backend,
            other.attention_backend,
            |a, b| a.eq_ignore_ascii_case(b),
            &mut conflicts,
        );
        merge_field(
            "flash_attention",
            &mut self.flash_attention,
            other.flash_attention,
            |a, b| a == b,
            &mut conflicts,
        );
        merge_field(
            "k_cache_dtype",
            &mut self.k_cache_dtype,
            other.k_cache_dtype,
            |a, b| a.eq_ignore_ascii_case(b),
            &mut conflicts,
        );
        merge_field(
            "v_cache_dtype",
            &mut self.v_cache_dtype,
            other.v_cache_dtype,
            |a, b| a.eq_ignore_ascii_case(b),
            &mut conflicts,
        );
        merge_field(
            "kv_cache_dtype",
            &mut self.kv_cache_dtype,
            other.kv_cache_dtype,
            |a, b| a.eq_ignore_ascii_case(b),
            &mut conflicts,
        );
        merge_field(
            "skipped_layers",
            &mut self.skipped_layers,
            other.skipped_layers,
            |a, b| layer_set(a) == layer_set(b),
            &mut conflicts,
        );
        merge_field(
            "kv_cache_mib",
            &mut self.kv_cache_mib,
            other.kv_cache_mib,
            |a, b| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()),
            &mut conflicts,
        );
        merge_field(
            "kv_cache_tokens",
            &mut self.kv_cache_tokens,
            other.kv_cache_tokens,
            |a, b| a == b,
            &mut conflicts,
        );
        merge_field(
            "kv_cells",
            &mut self.kv_cells,
            other.kv_cells,
            |a, b| a == b,
            &mut conflicts,
        );
        merge_field(
            "max_sequences",
            &mut self.max_sequences,
            other.max_sequences,
            |a, b| a == b,
            &mut conflicts,
        );
        if self.startup_failure.is_none() {
            self.startup_failure = other.startup_failure;
        }
        for line in other.default_scale_lines {
            if !self.default_scale_lines.contains(&line) {
                self.default_scale_lines.push(line);
            }
        }
        self.sources.extend(other.sources);
        self.conflicts.extend(other.conflicts);
        self.conflicts.extend(conflicts);
        self
    }
}

fn merge_field<T: fmt::Debug>(
    name: &str,
    mine: &mut Option<T>,
    theirs: Option<T>,
    same: impl Fn(&T, &T) -> bool,
    conflicts: &mut Vec<CompatProblem>,
) {
    match (mine.as_ref(), theirs) {
        (None, theirs) => *mine = theirs,
        (Some(a), Some(b)) if !same(a, &b) => conflicts.push(CompatProblem::new(
            format!("evidence.{name}"),
            format!("{a:?} (first evidence)"),
            format!("{b:?} (second evidence)"),
            "two pieces of evidence about the same engine start disagree",
        )),
        _ => {}
    }
}

/// Whether a cell's evidence matches its manifest, with every reason it does not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CellValidity {
    /// `true` exactly when `problems` is empty.
    pub valid: bool,
    pub problems: Vec<CompatProblem>,
}

/// One reason a cell is invalid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CompatProblem {
    /// The manifest JSON path concerned (`kv_dtype`, `effective_args.flash_attn_type`, `$`), or
    /// `evidence.<field>` for evidence that contradicts itself.
    pub field: String,
    /// What the manifest (or the first evidence) says.
    pub expected: String,
    /// What the evidence shows; `not found in evidence` when it is silent.
    pub found: String,
    /// Why this makes the cell invalid.
    pub reason: String,
}

impl CompatProblem {
    pub fn new(
        field: impl Into<String>,
        expected: impl Into<String>,
        found: impl Into<String>,
        reason: impl Into<String>,
    ) -> CompatProblem {
        CompatProblem {
            field: field.into(),
            expected: expected.into(),
            found: found.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for CompatProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: expected {}, found {} ({})",
            self.field, self.expected, self.found, self.reason
        )
    }
}

/// What a problem says when the evidence is silent on a fact the rule needs.
pub const NOT_FOUND: &str = "not found in evidence";

/// Compares what the engine ran with the cell's manifest (rules in the module documentation).
///
/// KV dtype mapping:
/// - **llama.cpp**: both the K and the V cache type must equal `kv_dtype` (ASCII case ignored);
///   a type the evidence does not state is a problem.
/// - **vLLM**: dtypes fall into classes. FP8 (`fp8`, `fp8_e4m3`, `fp8_e5m2`, `fp8_inc`): the
///   evidence must state an FP8 dtype; generic `fp8` on either side matches any FP8 variant,
///   two named variants must be equal; no KV dtype line means the cache may have run
///   unquantized, a problem. Full precision (`auto`, `float16`/`fp16`/`half`,
///   `bfloat16`/`bf16`, `float32`): the evidence must not state FP8; silence is accepted
///   because vLLM prints `Using … data type to store kv cache` whenever it quantizes the cache;
///   a stated value must be the same precision, where `auto` stands for the model's dtype
///   (`model_geometry.model_dtype`) and cannot be confirmed against a concrete dtype when the
///   manifest does not record it. A dtype outside these classes, on either side, is a problem.
pub fn check_compatibility(manifest: &Manifest, observed: Option<&ObservedEngine>) -> CellValidity {
    let mut problems = Vec::new();
    match observed.filter(|o| !o.is_empty()) {
        None => problems.push(CompatProblem::new(
            "$",
            "startup evidence (log or /metrics) for this cell",
            "none",
            "missing startup evidence: invalid — compatibility evidence missing",
        )),
        Some(o) => {
            if let Some(failure) = &o.startup_failure {
                problems.push(CompatProblem::new(
                    "startup",
                    "an engine that started",
                    failure.clone(),
                    "the engine failed to start: this evidence shows no running cell",
                ));
            }
            problems.extend(o.conflicts.iter().cloned());
            match manifest.engine {
                Engine::Vllm => {
                    check_engine_facts(o, Engine::Vllm, &mut problems);
                    check_vllm_kv_dtype(manifest, o, &mut problems);
                    check_vllm_backend(manifest, o, &mut problems);
                }
                Engine::LlamaCpp => {
                    check_engine_facts(o, Engine::LlamaCpp, &mut problems);
                    check_llama_kv_dtype(manifest, o, &mut problems);
                    check_llama_flash_attention(manifest, o, &mut problems);
                }
                Engine::Other => problems.push(CompatProblem::new(
                    "engine",
                    "vllm or llama.cpp (engines with compatibility rules)",
                    "other",
                    "KV Gate has no compatibility rule for this engine, so nothing can be confirmed",
                )),
            }
            if manifest.engine != Engine::Other {
                check_scales(manifest, o, &mut problems);
                check_skipped_layers(manifest, o, &mut problems);
                check_capacity(manifest, o, &mut problems);
                check_admission_limit(manifest, o, &mut problems);
            }
        }
    }
    CellValidity {
        valid: problems.is_empty(),
        problems,
    }
}

/// Facts only the other known engine prints mean the evidence came from the wrong engine.
fn check_engine_facts(o: &ObservedEngine, engine: Engine, problems: &mut Vec<CompatProblem>) {
    let foreign: Vec<&str> = match engine {
        Engine::Vllm => [
            ("k_cache_dtype", o.k_cache_dtype.is_some()),
            ("v_cache_dtype", o.v_cache_dtype.is_some()),
            ("flash_attention", o.flash_attention.is_some()),
            ("kv_cells", o.kv_cells.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, present)| present.then_some(name))
        .collect(),
        _ => [
            ("kv_cache_dtype", o.kv_cache_dtype.is_some()),
            ("skipped_layers", o.skipped_layers.is_some()),
            ("kv_cache_tokens", o.kv_cache_tokens.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, present)| present.then_some(name))
        .collect(),
    };
    if !foreign.is_empty() {
        let (this, other) = match engine {
            Engine::Vllm => ("vllm", "llama.cpp"),
            _ => ("llama.cpp", "vllm"),
        };
        problems.push(CompatProblem::new(
            "engine",
            format!("evidence printed by {this}"),
            format!("{other} facts: {}", foreign.join(", ")),
            "the evidence was read from another engine's output",
        ));
    }
}

fn check_llama_kv_dtype(m: &Manifest, o: &ObservedEngine, problems: &mut Vec<CompatProblem>) {
    for (side, found) in [("K", &o.k_cache_dtype), ("V", &o.v_cache_dtype)] {
        match found {
            None => problems.push(CompatProblem::new(
                "kv_dtype",
                format!("{side} cache type `{}`", m.kv_dtype),
                NOT_FOUND,
                format!("the {side} cache type the engine ran is not confirmed (llama_kv_cache line missing)"),
            )),
            Some(t) if !t.trim().eq_ignore_ascii_case(m.kv_dtype.trim()) => {
                problems.push(CompatProblem::new(
                    "kv_dtype",
                    format!("{side} cache type `{}`", m.kv_dtype),
                    format!("`{t}`"),
                    format!("the engine stored the {side} cache in another type than the manifest froze"),
                ))
            }
            Some(_) => {}
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Precision {
    Float16,
    Bfloat16,
    Float32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VllmKv {
    /// `None` = generic `fp8`.
    Fp8(Option<&'static str>),
    Auto,
    Full(Precision),
    Unknown,
}

fn vllm_kv_class(dtype: &str) -> VllmKv {
    match dtype.trim().to_ascii_lowercase().as_str() {
        "fp8" => VllmKv::Fp8(None),
        "fp8_e4m3" => VllmKv::Fp8(Some("fp8_e4m3")),
        "fp8_e5m2" => VllmKv::Fp8(Some("fp8_e5m2")),
        "fp8_inc" => VllmKv::Fp8(Some("fp8_inc")),
        "auto" => VllmKv::Auto,
        other => match precision(other) {
            Some(p) => VllmKv::Full(p),
            None => VllmKv::Unknown,
        },
    }
}

fn precision(dtype: &str) -> Option<Precision> {
    match dtype.trim().to_ascii_lowercase().as_str() {
        "float16" | "fp16" | "half" | "f16" => Some(Precision::Float16),
        "bfloat16" | "bf16" => Some(Precision::Bfloat16),
        "float32" | "fp32" | "float" | "f32" => Some(Precision::Float32),
        _ => None,
    }
}

fn check_vllm_kv_dtype(m: &Manifest, o: &ObservedEngine, problems: &mut Vec<CompatProblem>) {
    let expected = format!("`{}`", m.kv_dtype);
    let found = o.kv_cache_dtype.as_deref();
    let problem = |found: String, reason: &str| {
        CompatProblem::new("kv_dtype", expected.clone(), found, reason)
    };
    let manifest_class = vllm_kv_class(&m.kv_dtype);
    let found_class = found.map(vllm_kv_class);
    match (manifest_class, found_class) {
        (VllmKv::Unknown, _) => problems.push(problem(
            found.map_or(NOT_FOUND.to_owned(), |f| format!("`{f}`")),
            "the manifest's KV dtype is not one KV Gate can match against vLLM evidence",
        )),
        (_, Some(VllmKv::Unknown)) => problems.push(problem(
            format!("`{}`", found.unwrap_or_default()),
            "the evidence names a KV dtype KV Gate does not know",
        )),
        (VllmKv::Fp8(_), None) => problems.push(problem(
            NOT_FOUND.to_owned(),
            "no `Using fp8 data type to store kv cache` line or cache_dtype: the engine may have run the KV cache unquantized",
        )),
        (VllmKv::Fp8(a), Some(VllmKv::Fp8(b))) => {
            if let (Some(a), Some(b)) = (a, b) {
                if a != b {
                    problems.push(problem(
                        format!("`{b}`"),
                        "the engine ran another FP8 format than the manifest froze",
                    ));
                }
            }
        }
        (VllmKv::Fp8(_), Some(_)) => problems.push(problem(
            format!("`{}`", found.unwrap_or_default()),
            "the manifest freezes an FP8 KV cache but the engine ran it in full precision",
        )),
        (_, Some(VllmKv::Fp8(_))) => problems.push(problem(
            format!("`{}`", found.unwrap_or_default()),
            "the manifest freezes a full-precision KV cache but the engine stored it in FP8",
        )),
        // vLLM announces every quantized KV cache, so silence is full precision.
        (_, None) => {}
        (VllmKv::Auto, Some(VllmKv::Auto)) => {}
        (a, Some(b)) => {
            let model = m
                .model_geometry
                .as_ref()
                .and_then(|g| precision(&g.model_dtype));
            let resolve = |k: VllmKv| match k {
                VllmKv::Full(p) => Some(p),
                _ => model,
            };
            match (resolve(a), resolve(b)) {
                (Some(x), Some(y)) if x == y => {}
                (Some(_), Some(_)) => problems.push(problem(
                    format!("`{}`", found.unwrap_or_default()),
                    "the engine stored the KV cache in another precision than the manifest froze",
                )),
                _ => problems.push(problem(
                    format!("`{}`", found.unwrap_or_default()),
                    "`auto` follows the model dtype, which the manifest does not record (model_geometry.model_dtype): the precision cannot be confirmed",
                )),
            }
        }
    }
}

fn check_vllm_backend(m: &Manifest, o: &ObservedEngine, problems: &mut Vec<CompatProblem>) {
    let expected = format!("`{}`", m.attention_backend);
    match o.attention_backend.as_deref() {
        None => problems.push(CompatProblem::new(
            "attention_backend",
            expected,
            NOT_FOUND,
            "the attention backend the engine selected is not confirmed",
        )),
        Some(b) if !contains_word(&m.attention_backend, b) => problems.push(CompatProblem::new(
            "attention_backend",
            expected,
            format!("`{b}`"),
            "the engine selected another attention backend than the manifest froze",
        )),
        Some(_) => {}
    }
}

/// Whether `needle` occurs in `hay` (ASCII case ignored) bounded by non-word characters, so
/// `FLASH_ATTN` does not match inside `FLASH_ATTN_MLA`.
fn contains_word(hay: &str, needle: &str) -> bool {
    let hay = hay.to_ascii_lowercase();
    let needle = needle.trim().to_ascii_lowercase();
    if needle.is_empty() {
        return false;
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    hay.match_indices(&needle).any(|(i, _)| {
        !word(hay[..i].chars().next_back()) && !word(hay[i + needle.len()..].chars().next())
    })
}

/// The engine arguments that record llama.cpp's flash attention setting, in precedence order.
const FLASH_ATTN_ARGS: [&str; 2] = ["flash_attn_type", "flash_attn"];

fn flash_setting(value: &str) -> Option<Option<bool>> {
    match value.trim().to_ascii_lowercase().as_str() {
        "enabled" | "on" | "1" | "true" | "yes" | "llama_flash_attn_type_enabled" => {
            Some(Some(true))
        }
        "disabled" | "off" | "0" | "false" | "no" | "llama_flash_attn_type_disabled" => {
            Some(Some(false))
        }
        "auto" | "-1" | "llama_flash_attn_type_auto" => Some(None),
        _ => None,
    }
}

/// The manifest's flash attention argument decides; `auto` leaves the choice to the engine (any
/// observed setting agrees, but one must be observed); no argument means the manifest does not
/// pin it, so there is nothing to compare.
fn check_llama_flash_attention(
    m: &Manifest,
    o: &ObservedEngine,
    problems: &mut Vec<CompatProblem>,
) {
    let Some((arg, value)) = FLASH_ATTN_ARGS
        .iter()
        .find_map(|a| m.effective_args.get(*a).map(|v| (*a, v)))
    else {
        return;
    };
    let field = format!("effective_args.{arg}");
    let Some(want) = flash_setting(value) else {
        problems.push(CompatProblem::new(
            field,
            "enabled, disabled or auto",
            format!("`{value}`"),
            "the manifest's flash attention setting cannot be read",
        ));
        return;
    };
    let on_off = |b: bool| if b { "enabled" } else { "disabled" };
    match (want, o.flash_attention) {
        (_, None) => problems.push(CompatProblem::new(
            field,
            format!("flash attention `{value}`"),
            NOT_FOUND,
            "whether flash attention ran is not confirmed (llama_context: flash_attn line missing)",
        )),
        (Some(w), Some(f)) if w != f => problems.push(CompatProblem::new(
            field,
            format!("flash attention {}", on_off(w)),
            format!("flash attention {}", on_off(f)),
            "the engine ran another attention path than the manifest froze",
        )),
        _ => {}
    }
}

fn check_scales(m: &Manifest, o: &ObservedEngine, problems: &mut Vec<CompatProblem>) {
    let calibrated = matches!(
        m.scale_source,
        Some(ScaleSource::Checkpoint | ScaleSource::Runtime)
    );
    for line in &o.default_scale_lines {
        if calibrated {
            let source = match m.scale_source {
                Some(ScaleSource::Checkpoint) => "checkpoint",
                _ => "runtime",
            };
            problems.push(CompatProblem::new(
                "scale_source",
                format!("`{source}` (calibrated) scales"),
                line.clone(),
                "the engine silently fell back to default or uncalibrated scales",
            ));
        }
        if m.scales_observed_loaded == Some(true) {
            problems.push(CompatProblem::new(
                "scales_observed_loaded",
                "true (scales seen loading)",
                line.clone(),
                "the evidence shows default or uncalibrated scales, not loaded ones",
            ));
        }
    }
}

fn layer_name(l: &SkippedLayer) -> String {
    match l {
        SkippedLayer::Index(i) => i.to_string(),
        SkippedLayer::Token(LayerToken::SlidingWindow) => "sliding_window".to_owned(),
    }
}

/// Layer names normalized for comparison: trimmed, quotes dropped, lower case, numbers without
/// leading zeros.
fn layer_set(layers: &[String]) -> BTreeSet<String> {
    layers
        .iter()
        .map(|l| {
            let l = l
                .trim()
                .trim_matches(['\'', '"'])
                .trim()
                .to_ascii_lowercase();
            l.parse::<u64>().map_or(l, |n| n.to_string())
        })
        .collect()
}

fn check_skipped_layers(m: &Manifest, o: &ObservedEngine, problems: &mut Vec<CompatProblem>) {
    let frozen: Vec<String> = m.skipped_layers.iter().map(layer_name).collect();
    let shown = |layers: &[String]| format!("[{}]", layers.join(", "));
    match &o.skipped_layers {
        None if frozen.is_empty() => {}
        None => problems.push(CompatProblem::new(
            "skipped_layers",
            shown(&frozen),
            NOT_FOUND,
            "the layer exclusion is this cell's intervention and the evidence does not confirm it",
        )),
        Some(seen) if layer_set(seen) != layer_set(&frozen) => problems.push(CompatProblem::new(
            "skipped_layers",
            shown(&frozen),
            shown(seen),
            "the engine kept other layers in full precision than the manifest froze",
        )),
        Some(_) => {}
    }
}

fn check_capacity(m: &Manifest, o: &ObservedEngine, problems: &mut Vec<CompatProblem>) {
    let capacity = match m.engine {
        Engine::LlamaCpp => o.kv_cells.map(|c| (c, "KV cells")),
        _ => o.kv_cache_tokens.map(|t| (t, "KV cache tokens")),
    };
    if let Some((n, what)) = capacity {
        if n < u64::from(m.context_limit) {
            problems.push(CompatProblem::new(
                "context_limit",
                format!("at least {} {what}", m.context_limit),
                format!("{n} {what}"),
                "the engine cannot hold one sequence of the frozen context limit",
            ));
        }
    }
}

fn check_admission_limit(m: &Manifest, o: &ObservedEngine, problems: &mut Vec<CompatProblem>) {
    if let Some(ran) = o.max_sequences {
        let frozen = m.scheduler.max_num_seqs;
        if ran != frozen {
            problems.push(CompatProblem::new(
                "scheduler.max_num_seqs",
                format!("{frozen} sequences admitted at once"),
                format!("{ran}"),
                "the engine ran at another admission limit than the manifest froze: cells are compared at the limit that ran",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B0_JSON: &str = include_str!("../../../fixtures/manifests/llama31-8b-h100-b0.json");
    const C1_JSON: &str = include_str!("../../../fixtures/manifests/llama31-8b-h100-c1.json");
    const C2_JSON: &str = include_str!("../../../fixtures/manifests/llama31-8b-h100-c2.json");
    const C3_JSON: &str = include_str!("../../../fixtures/manifests/llama31-8b-h100-c3.json");
    const SMOL_B0_JSON: &str = include_str!("../../../fixtures/manifests/smollm2-135m-cpu-b0.json");
    const SMOL_Q8_JSON: &str = include_str!("../../../fixtures/manifests/smollm2-135m-cpu-q8.json");

    fn load(json: &str) -> Manifest {
        Manifest::from_json(json).unwrap()
    }

    /// What the real llama.cpp logs in fixtures/evidence/ show (flash attention on, 2048 cells).
    fn llama(kv: &str, mib: f64) -> ObservedEngine {
        ObservedEngine {
            attention_backend: Some("flash_attn".into()),
            flash_attention: Some(true),
            k_cache_dtype: Some(kv.into()),
            v_cache_dtype: Some(kv.into()),
            kv_cache_mib: Some(mib),
            kv_cells: Some(2048),
            sources: vec!["kv_dtype: startup log line 150".into()],
            ..ObservedEngine::default()
        }
    }

    /// A vLLM FP8 start with default scales (the C1 signature lines).
    fn vllm_fp8(default_scales: bool) -> ObservedEngine {
        ObservedEngine {
            attention_backend: Some("FLASH_ATTN".into()),
            kv_cache_dtype: Some("fp8".into()),
            default_scale_lines: if default_scales {
                vec![
                    "Checkpoint does not provide a q scaling factor. Setting it to k_scale.".into(),
                    "Using KV cache scaling factor 1.0 for fp8_e4m3. If this is unintended, verify that k/v_scale scaling factors are properly set in the checkpoint.".into(),
                ]
            } else {
                vec![]
            },
            kv_cache_mib: Some(52.43 * 1024.0),
            kv_cache_tokens: Some(858_992),
            ..ObservedEngine::default()
        }
    }

    fn vllm_bf16() -> ObservedEngine {
        ObservedEngine {
            attention_backend: Some("FLASH_ATTN".into()),
            kv_cache_tokens: Some(429_496),
            ..ObservedEngine::default()
        }
    }

    fn fields(v: &CellValidity) -> Vec<&str> {
        v.problems.iter().map(|p| p.field.as_str()).collect()
    }

    #[test]
    fn no_evidence_is_an_invalid_cell() {
        for m in [load(SMOL_B0_JSON), load(B0_JSON)] {
            for observed in [None, Some(&ObservedEngine::default())] {
                let v = check_compatibility(&m, observed);
                assert!(!v.valid);
                assert_eq!(fields(&v), ["$"]);
                assert!(v.problems[0].reason.contains("missing startup evidence"));
            }
        }
        // Sources without a single fact are still no evidence.
        let only_sources = ObservedEngine {
            sources: vec!["startup log".into()],
            ..ObservedEngine::default()
        };
        assert!(!check_compatibility(&load(B0_JSON), Some(&only_sources)).valid);
    }

    #[test]
    fn a_failed_startup_is_never_valid_evidence() {
        // Everything a C1 cell needs, from a log whose engine then failed to start.
        let failed = ObservedEngine {
            startup_failure: Some(
                "line 77: INFO [gpu_worker.py:375] Available KV cache memory: -2.51 GiB".into(),
            ),
            ..vllm_fp8(true)
        };
        let v = check_compatibility(&load(C1_JSON), Some(&failed));
        assert!(!v.valid);
        assert_eq!(fields(&v), ["startup"]);
        assert!(v.problems[0].found.contains("-2.51 GiB"));
        assert!(v.problems[0].reason.contains("failed to start"));
        // A failure alone is evidence too: of an invalid cell, not of a missing one.
        let only = ObservedEngine {
            startup_failure: failed.startup_failure.clone(),
            ..ObservedEngine::default()
        };
        assert!(fields(&check_compatibility(&load(B0_JSON), Some(&only))).contains(&"startup"));
        // Merged with a scrape of another start, the failure stays.
        let merged = vllm_fp8(true).merge(failed);
        assert!(merged.startup_failure.is_some());
    }

    #[test]
    fn llama_cpp_cells_match_their_own_kv_type_only() {
        let b0 = load(SMOL_B0_JSON);
        let q8 = load(SMOL_Q8_JSON);
        let f16_log = llama("f16", 45.0);
        let q8_log = llama("q8_0", 23.91);
        assert_eq!(
            check_compatibility(&b0, Some(&f16_log)),
            CellValidity {
                valid: true,
                problems: vec![]
            }
        );
        assert!(check_compatibility(&q8, Some(&q8_log)).valid);

        let v = check_compatibility(&q8, Some(&f16_log));
        assert!(!v.valid);
        assert_eq!(fields(&v), ["kv_dtype", "kv_dtype"]);
        assert_eq!(v.problems[0].expected, "K cache type `q8_0`");
        assert_eq!(v.problems[0].found, "`f16`");
        assert_eq!(v.problems[1].expected, "V cache type `q8_0`");
        let v = check_compatibility(&b0, Some(&q8_log));
        assert_eq!(fields(&v), ["kv_dtype", "kv_dtype"]);

        // Only V differs: one problem, naming V.
        let mut mixed = q8_log.clone();
        mixed.v_cache_dtype = Some("f16".into());
        let v = check_compatibility(&q8, Some(&mixed));
        assert_eq!(fields(&v), ["kv_dtype"]);
        assert!(v.problems[0].expected.starts_with("V cache"));
    }

    #[test]
    fn llama_cpp_kv_type_missing_from_evidence_is_not_accepted() {
        let q8 = load(SMOL_Q8_JSON);
        let mut partial = llama("q8_0", 23.91);
        partial.k_cache_dtype = None;
        partial.v_cache_dtype = None;
        let v = check_compatibility(&q8, Some(&partial));
        assert_eq!(fields(&v), ["kv_dtype", "kv_dtype"]);
        assert!(v.problems.iter().all(|p| p.found == NOT_FOUND));
    }

    #[test]
    fn llama_cpp_flash_attention_must_agree_with_the_frozen_argument() {
        let b0 = load(SMOL_B0_JSON);
        let mut off = llama("f16", 45.0);
        off.flash_attention = Some(false);
        let v = check_compatibility(&b0, Some(&off));
        assert_eq!(fields(&v), ["effective_args.flash_attn_type"]);
        assert_eq!(v.problems[0].expected, "flash attention enabled");
        assert_eq!(v.problems[0].found, "flash attention disabled");

        let mut silent = llama("f16", 45.0);
        silent.flash_attention = None;
        let v = check_compatibility(&b0, Some(&silent));
        assert_eq!(fields(&v), ["effective_args.flash_attn_type"]);
        assert_eq!(v.problems[0].found, NOT_FOUND);

        let mut disabled = b0.clone();
        for value in ["off", "0", "false", "disabled", "Disabled"] {
            disabled
                .effective_args
                .insert("flash_attn_type".into(), value.into());
            assert!(check_compatibility(&disabled, Some(&off)).valid, "{value}");
            assert!(!check_compatibility(&disabled, Some(&llama("f16", 45.0))).valid);
        }
        for value in ["on", "1", "true", "enabled"] {
            disabled
                .effective_args
                .insert("flash_attn_type".into(), value.into());
            assert!(!check_compatibility(&disabled, Some(&off)).valid, "{value}");
        }
        // `auto` accepts what the engine chose, but it must have been observed.
        disabled
            .effective_args
            .insert("flash_attn_type".into(), "auto".into());
        assert!(check_compatibility(&disabled, Some(&off)).valid);
        assert!(!check_compatibility(&disabled, Some(&silent)).valid);
        disabled
            .effective_args
            .insert("flash_attn_type".into(), "sometimes".into());
        let v = check_compatibility(&disabled, Some(&off));
        assert_eq!(v.problems[0].found, "`sometimes`");
        // The older argument name is read too; without any argument nothing is pinned.
        let mut older = b0.clone();
        older.effective_args.remove("flash_attn_type");
        older
            .effective_args
            .insert("flash_attn".into(), "on".into());
        assert_eq!(
            fields(&check_compatibility(&older, Some(&off))),
            ["effective_args.flash_attn"]
        );
        older.effective_args.remove("flash_attn");
        assert!(check_compatibility(&older, Some(&off)).valid);
    }

    #[test]
    fn llama_cpp_capacity_below_the_context_limit_is_invalid() {
        let mut b0 = load(SMOL_B0_JSON);
        let mut small = llama("f16", 22.5);
        small.kv_cells = Some(1024);
        let v = check_compatibility(&b0, Some(&small));
        assert_eq!(fields(&v), ["context_limit"]);
        assert_eq!(v.problems[0].found, "1024 KV cells");
        b0.context_limit = 1024;
        assert!(check_compatibility(&b0, Some(&small)).valid);
        // Absent capacity is a missing measurement, not a problem.
        small.kv_cells = None;
        small.kv_cache_mib = None;
        assert!(check_compatibility(&b0, Some(&small)).valid);
    }

    /// The admission limit that ran must be the frozen one; a log that does not state it (vLLM's
    /// default) is no problem, and two pieces of evidence that disagree on it are.
    #[test]
    fn the_admission_limit_that_ran_must_be_the_frozen_one() {
        let m = load(SMOL_B0_JSON);
        assert_eq!(m.scheduler.max_num_seqs, 1);
        let mut o = llama("f16", 45.0);
        o.max_sequences = Some(1);
        assert!(check_compatibility(&m, Some(&o)).valid);
        o.max_sequences = Some(4);
        let v = check_compatibility(&m, Some(&o));
        assert_eq!(fields(&v), ["scheduler.max_num_seqs"]);
        assert_eq!(v.problems[0].found, "4");
        o.max_sequences = None;
        assert!(
            check_compatibility(&m, Some(&o)).valid,
            "silence is no problem"
        );
        let vllm = load(B0_JSON);
        let mut bf16 = vllm_bf16();
        bf16.max_sequences = Some(256);
        assert_eq!(
            fields(&check_compatibility(&vllm, Some(&bf16))),
            ["scheduler.max_num_seqs"]
        );
        let one = ObservedEngine {
            max_sequences: Some(1),
            ..ObservedEngine::default()
        };
        let two = ObservedEngine {
            max_sequences: Some(2),
            ..ObservedEngine::default()
        };
        assert_eq!(one.merge(two).conflicts[0].field, "evidence.max_sequences");
    }

    #[test]
    fn evidence_from_the_other_engine_is_refused() {
        let v = check_compatibility(&load(B0_JSON), Some(&llama("f16", 45.0)));
        assert!(fields(&v).contains(&"engine"), "{v:#?}");
        let p = v.problems.iter().find(|p| p.field == "engine").unwrap();
        assert!(p.found.contains("k_cache_dtype") && p.found.contains("kv_cells"));
        let v = check_compatibility(&load(SMOL_B0_JSON), Some(&vllm_bf16()));
        assert_eq!(fields(&v)[0], "engine");
        assert!(v.problems[0].found.contains("kv_cache_tokens"));
    }

    #[test]
    fn other_engines_have_no_rule_and_are_never_accepted() {
        let mut m = load(SMOL_B0_JSON);
        m.engine = Engine::Other;
        let v = check_compatibility(&m, Some(&llama("f16", 45.0)));
        assert_eq!(fields(&v), ["engine"]);
    }

    #[test]
    fn vllm_fp8_cells_need_an_fp8_line() {
        for json in [C1_JSON, C3_JSON] {
            let m = load(json);
            let mut o = vllm_fp8(true);
            if json == C3_JSON {
                o.skipped_layers = Some(vec!["0".into(), "31".into()]);
            }
            assert!(check_compatibility(&m, Some(&o)).valid, "{}", m.cell);
            let mut silent = o.clone();
            silent.kv_cache_dtype = None;
            let v = check_compatibility(&m, Some(&silent));
            assert_eq!(fields(&v), ["kv_dtype"]);
            assert_eq!(v.problems[0].found, NOT_FOUND);
            assert!(v.problems[0].reason.contains("unquantized"));
        }
        let c1 = load(C1_JSON);
        for seen in ["fp8", "fp8_e4m3", "FP8_E4M3"] {
            let mut o = vllm_fp8(true);
            o.kv_cache_dtype = Some(seen.into());
            assert!(check_compatibility(&c1, Some(&o)).valid, "{seen}");
        }
        for seen in ["fp8_e5m2", "auto", "bfloat16", "int8"] {
            let mut o = vllm_fp8(true);
            o.kv_cache_dtype = Some(seen.into());
            let v = check_compatibility(&c1, Some(&o));
            assert_eq!(fields(&v), ["kv_dtype"], "{seen}");
            assert_eq!(v.problems[0].found, format!("`{seen}`"));
        }
        // A generic `fp8` manifest accepts any named FP8 variant.
        let mut generic = c1.clone();
        generic.kv_dtype = "fp8".into();
        let mut o = vllm_fp8(true);
        o.kv_cache_dtype = Some("fp8_e5m2".into());
        assert!(check_compatibility(&generic, Some(&o)).valid);
    }

    #[test]
    fn vllm_full_precision_cells_refuse_fp8_and_accept_silence() {
        let b0 = load(B0_JSON);
        assert!(check_compatibility(&b0, Some(&vllm_bf16())).valid);
        let v = check_compatibility(&b0, Some(&vllm_fp8(false)));
        assert_eq!(fields(&v), ["kv_dtype"]);
        assert!(v.problems[0].reason.contains("stored it in FP8"));
        // cache_config_info reports the configured value, `auto` included.
        let mut o = vllm_bf16();
        o.kv_cache_dtype = Some("auto".into());
        assert!(check_compatibility(&b0, Some(&o)).valid);
        // `auto` resolves to the model dtype (bfloat16 for this manifest).
        o.kv_cache_dtype = Some("bfloat16".into());
        assert!(check_compatibility(&b0, Some(&o)).valid);
        o.kv_cache_dtype = Some("float16".into());
        assert_eq!(fields(&check_compatibility(&b0, Some(&o))), ["kv_dtype"]);
        let mut no_geometry = b0.clone();
        no_geometry.model_geometry = None;
        o.kv_cache_dtype = Some("bfloat16".into());
        let v = check_compatibility(&no_geometry, Some(&o));
        assert_eq!(fields(&v), ["kv_dtype"]);
        assert!(v.problems[0].reason.contains("cannot be confirmed"));
        let mut explicit = b0.clone();
        explicit.kv_dtype = "bfloat16".into();
        o.kv_cache_dtype = Some("auto".into());
        assert!(check_compatibility(&explicit, Some(&o)).valid);
        explicit.kv_dtype = "q8_0".into();
        let v = check_compatibility(&explicit, Some(&o));
        assert!(v.problems[0].reason.contains("not one KV Gate can match"));
    }

    #[test]
    fn vllm_backend_must_appear_as_a_word_in_the_manifest() {
        let c1 = load(C1_JSON);
        let mut o = vllm_fp8(true);
        o.attention_backend = Some("flash_attn".into());
        assert!(check_compatibility(&c1, Some(&o)).valid);
        for other in ["FLASHINFER", "TRITON_ATTN", "FLASH", "ATTN"] {
            o.attention_backend = Some(other.into());
            let v = check_compatibility(&c1, Some(&o));
            assert_eq!(fields(&v), ["attention_backend"], "{other}");
        }
        let mut mla = c1.clone();
        mla.attention_backend = "FLASH_ATTN_MLA".into();
        o.attention_backend = Some("FLASH_ATTN".into());
        assert!(!check_compatibility(&mla, Some(&o)).valid);
        let mut prose = c1.clone();
        prose.attention_backend = "vLLM FLASH_ATTN (FlashAttention 3)".into();
        assert!(check_compatibility(&prose, Some(&o)).valid);
        o.attention_backend = None;
        let v = check_compatibility(&c1, Some(&o));
        assert_eq!(v.problems[0].found, NOT_FOUND);
    }

    #[test]
    fn calibrated_cells_refuse_a_silent_fallback_to_default_scales() {
        let c1 = load(C1_JSON);
        let c2 = load(C2_JSON);
        // Default scales are what C1 expects, and silence is fine too.
        assert!(check_compatibility(&c1, Some(&vllm_fp8(true))).valid);
        assert!(check_compatibility(&c1, Some(&vllm_fp8(false))).valid);
        assert!(check_compatibility(&c2, Some(&vllm_fp8(false))).valid);
        let v = check_compatibility(&c2, Some(&vllm_fp8(true)));
        assert_eq!(fields(&v), ["scale_source", "scale_source"]);
        assert!(v.problems[0].reason.contains("fell back"));
        assert!(v.problems[1].found.contains("scaling factor 1.0"));
        let mut runtime = c2.clone();
        runtime.scale_source = Some(ScaleSource::Runtime);
        assert!(!check_compatibility(&runtime, Some(&vllm_fp8(true))).valid);
        let mut claimed = c1.clone();
        claimed.scales_observed_loaded = Some(true);
        assert_eq!(
            fields(&check_compatibility(&claimed, Some(&vllm_fp8(true)))),
            ["scales_observed_loaded", "scales_observed_loaded"]
        );
    }

    #[test]
    fn skipped_layers_compare_as_sets_and_c3_needs_them_confirmed() {
        let c3 = load(C3_JSON);
        let mut o = vllm_fp8(true);
        let v = check_compatibility(&c3, Some(&o));
        assert_eq!(fields(&v), ["skipped_layers"]);
        assert_eq!(v.problems[0].expected, "[0, 31]");
        assert_eq!(v.problems[0].found, NOT_FOUND);
        o.skipped_layers = Some(vec!["'31'".into(), " 0".into()]);
        assert!(check_compatibility(&c3, Some(&o)).valid);
        o.skipped_layers = Some(vec!["0".into()]);
        let v = check_compatibility(&c3, Some(&o));
        assert_eq!(v.problems[0].found, "[0]");
        // C1 skips nothing: evidence saying none agrees, evidence naming a layer does not.
        let c1 = load(C1_JSON);
        o.skipped_layers = Some(vec![]);
        assert!(check_compatibility(&c1, Some(&o)).valid);
        o.skipped_layers = Some(vec!["sliding_window".into()]);
        assert_eq!(
            fields(&check_compatibility(&c1, Some(&o))),
            ["skipped_layers"]
        );
        let mut sw = c1.clone();
        sw.skipped_layers = vec![SkippedLayer::Token(LayerToken::SlidingWindow)];
        assert!(check_compatibility(&sw, Some(&o)).valid);
    }

    #[test]
    fn vllm_capacity_below_the_context_limit_is_invalid() {
        let b0 = load(B0_JSON);
        let mut o = vllm_bf16();
        o.kv_cache_tokens = Some(16_383);
        let v = check_compatibility(&b0, Some(&o));
        assert_eq!(fields(&v), ["context_limit"]);
        o.kv_cache_tokens = Some(16_384);
        assert!(check_compatibility(&b0, Some(&o)).valid);
    }

    #[test]
    fn merge_takes_facts_from_both_and_records_conflicts() {
        let log = vllm_fp8(true);
        let metrics = ObservedEngine {
            kv_cache_dtype: Some("FP8".into()),
            skipped_layers: Some(vec!["0".into(), "31".into()]),
            kv_cache_tokens: Some(858_992),
            sources: vec!["/metrics vllm:cache_config_info".into()],
            ..ObservedEngine::default()
        };
        let both = log.clone().merge(metrics.clone());
        assert!(both.conflicts.is_empty(), "{:#?}", both.conflicts);
        assert_eq!(both.skipped_layers.as_deref().map(<[String]>::len), Some(2));
        assert_eq!(both.kv_cache_dtype.as_deref(), Some("fp8"));
        assert_eq!(both.default_scale_lines.len(), 2);
        assert_eq!(both.sources, ["/metrics vllm:cache_config_info"]);
        assert!(check_compatibility(&load(C3_JSON), Some(&both)).valid);

        let mut disagreeing = metrics;
        disagreeing.kv_cache_dtype = Some("auto".into());
        disagreeing.kv_cache_tokens = Some(429_496);
        let both = log.merge(disagreeing);
        assert_eq!(both.kv_cache_dtype.as_deref(), Some("fp8"));
        let v = check_compatibility(&load(C3_JSON), Some(&both));
        assert_eq!(
            fields(&v),
            ["evidence.kv_cache_dtype", "evidence.kv_cache_tokens"]
        );
        assert_eq!(v.problems[0].found, "\"auto\" (second evidence)");
        // Merging with nothing changes nothing.
        let one = llama("q8_0", 23.91);
        assert_eq!(one.clone().merge(ObservedEngine::default()), one);
        assert_eq!(ObservedEngine::default().merge(one.clone()), one);
    }

    #[test]
    fn problems_read_as_sentences_and_types_export() {
        let v = check_compatibility(&load(SMOL_Q8_JSON), Some(&llama("f16", 45.0)));
        assert_eq!(
            v.problems[0].to_string(),
            "kv_dtype: expected K cache type `q8_0`, found `f16` (the engine stored the K cache in another type than the manifest froze)"
        );
        let json = serde_json::to_value(&v).unwrap();
        assert_eq!(json["valid"], false);
        let back: CellValidity = serde_json::from_value(json).unwrap();
        assert_eq!(back, v);
        // Absent facts deserialize as absent.
        let o: ObservedEngine = serde_json::from_str(r#"{"kv_cells": 2048}"#).unwrap();
        assert_eq!(o.kv_cells, Some(2048));
        assert_eq!(o.k_cache_dtype, None);

        let cfg = crate::ts_config();
        let decl = <ObservedEngine as TS>::decl(&cfg);
        assert!(decl.contains("kv_cache_tokens: number | null"), "{decl}");
        assert!(decl.contains("flash_attention: boolean | null"), "{decl}");
        let decl = <CellValidity as TS>::decl(&cfg);
        assert!(decl.contains("problems: Array<CompatProblem>"), "{decl}");
        let schema = serde_json::to_value(schemars::schema_for!(ObservedEngine)).unwrap();
        assert_eq!(
            schema["properties"]["kv_cells"]["type"],
            serde_json::json!(["integer", "null"])
        );
    }
}
