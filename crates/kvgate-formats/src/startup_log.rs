//! Startup logs of vLLM and llama.cpp: what the engine actually ran (attention backend, KV
//! dtype, scale signatures, KV capacity), each finding with the line it came from. This is the
//! compatibility evidence compared with a cell's manifest.
//!
//! Lines carry engine-specific prefixes (timestamps, levels, process names), so every pattern is
//! searched anywhere in the line, never anchored at its start.

use kvgate_core::compat::ObservedEngine;
use kvgate_core::device_memory::DeviceMemory;
use schemars::JsonSchema;
use serde::Serialize;
use ts_rs::TS;

/// One value read from a log, with where it was read.
#[derive(Debug, Clone, PartialEq, Serialize, TS, JsonSchema)]
pub struct Found<T> {
    pub value: T,
    /// 1-based line number.
    pub line: usize,
    /// The line as written (trimmed), so a reviewer sees the evidence itself.
    pub text: String,
}

/// llama.cpp's `llama_kv_cache: size = …` line.
#[derive(Debug, Clone, PartialEq, Serialize, TS, JsonSchema)]
pub struct LlamaKvCache {
    /// Total size as printed, in MiB (two decimals: not exact bytes).
    pub size_mib: f64,
    pub cells: u64,
    pub layers: u32,
    pub seqs: String,
    pub k_type: String,
    pub k_mib: f64,
    pub v_type: String,
    pub v_mib: f64,
}

/// llama.cpp's `<where>: <device> <kind> buffer size = X MiB` lines, e.g.
/// `load_tensors:   CPU_Mapped model buffer size =   462.96 MiB`,
/// `llama_kv_cache:        CPU KV buffer size =    24.00 MiB`.
#[derive(Debug, Clone, PartialEq, Serialize, TS, JsonSchema)]
pub struct LlamaBuffer {
    /// What the buffer holds as printed: `model`, `KV`, `RS`, `compute`, `output`.
    pub kind: String,
    /// Where it lives as printed: `CPU_Mapped`, `CPU_REPACK`, `MTL0`, `CUDA0`, …
    pub device: String,
    pub mib: f64,
}

/// Everything recognised in one startup log. Absent = not seen in the log, never a default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct StartupEvidence {
    /// vLLM: `Using X attention backend`; llama.cpp: `flash_attn` when flash attention is enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attention_backend: Option<Found<String>>,
    /// llama.cpp `llama_context: flash_attn = enabled|disabled` (or `Flash Attention was auto,
    /// set to …`); `auto` alone is not a setting and leaves it absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flash_attention: Option<Found<bool>>,
    /// vLLM `Using FlashAttention version N`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flash_attention_version: Option<Found<u32>>,
    /// vLLM `Using fp8 data type to store kv cache`; llama.cpp the K cache type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_cache_dtype: Option<Found<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llama_kv_cache: Option<Found<LlamaKvCache>>,
    /// llama.cpp's further KV caches of the same start (one per cache type: a model with
    /// sliding-window layers prints a full-attention and a sliding-window cache). Each counts
    /// toward the KV memory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_llama_kv_caches: Vec<Found<LlamaKvCache>>,
    /// Where each server start begins (llama.cpp's `system_info:` line): a log holding more
    /// than one start cannot say which engine a run talked to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub starts: Vec<usize>,
    /// vLLM's version as the engine printed it (`Initializing a V1 LLM engine (v0.29.0)`,
    /// `vLLM API server version 0.10.1.1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_version: Option<Found<String>>,
    /// The model the engine loaded (vLLM's engine config `model='…'`, llama.cpp's
    /// `general.name`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<Found<String>>,
    /// The first line saying the engine did not start (`EngineCore failed to start`, a negative
    /// `Available KV cache memory`, `No available memory for the cache blocks`, llama.cpp
    /// `failed to load model`): such a log is never valid compatibility evidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_failure: Option<Found<String>>,
    /// vLLM `Available KV cache memory: X GiB`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_kv_cache_gib: Option<Found<f64>>,
    /// vLLM `GPU KV cache size: N tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_cache_tokens: Option<Found<u64>>,
    /// vLLM `Maximum concurrency for N tokens per request: X.XXx`: (tokens per request, factor).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<Found<(u64, f64)>>,
    /// The sequences the engine admits at once: llama.cpp `llama_context: n_seq_max = N` (its
    /// slots), vLLM `'max_num_seqs': N` among the `non-default args` (absent when left at the
    /// default, which vLLM does not print).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_sequences: Option<Found<u32>>,
    /// vLLM `Model loading took X GiB [memory] and N seconds` (one worker's share under
    /// tensor parallelism).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_weights_gib: Option<Found<f64>>,
    /// vLLM `Graph capturing finished in N secs, took X GiB`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cuda_graph_gib: Option<Found<f64>>,
    /// llama.cpp's buffer sizes of the log's first start (a later start repeats them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(as = "Option<Vec<Found<LlamaBuffer>>>", optional)]
    pub llama_buffers: Vec<Found<LlamaBuffer>>,
    /// Lines showing default scales (1.0) or uncalibrated q/prob scales: expected in a C1 run,
    /// drift in a C2 run.
    pub default_scale_lines: Vec<Found<String>>,
}

const DEFAULT_SCALE_SIGNATURES: [&str; 3] = [
    "Checkpoint does not provide a q scaling factor",
    "Using KV cache scaling factor 1.0",
    "Using uncalibrated q_scale 1.0",
];

/// Reads every recognised line of a vLLM or llama.cpp startup log. Unknown lines are skipped:
/// logs carry much else, and versions drift.
pub fn parse_startup_log(text: &str) -> StartupEvidence {
    let mut ev = StartupEvidence::default();
    // vLLM's engine configuration line: `kv_cache_dtype=auto` follows the model `dtype=…`.
    let mut auto_kv: Option<(String, usize, String)> = None;
    // FlashInfer's resolved line states the cache dtype the kernels use.
    let mut resolved_kv: Option<Found<String>> = None;
    let lines: Vec<&str> = text.lines().collect();
    for (index, raw) in lines.iter().enumerate() {
        let line = index + 1;
        let clean = strip_ansi(raw);
        // A captured terminal keeps progress-bar redraws as `\r`-separated segments on one
        // line: each segment is what the terminal showed at one moment.
        for segment in clean.split('\r') {
            let trimmed = segment.trim();
            if trimmed.is_empty() {
                continue;
            }
            if let Some(backend) = vllm_backend(trimmed) {
                ev.attention_backend
                    .get_or_insert(at(backend, line, trimmed));
            }
            if trimmed.contains("system_info:") {
                ev.starts.push(line);
            }
            if let Some(version) = engine_version(trimmed) {
                ev.engine_version.get_or_insert(at(version, line, trimmed));
            }
            if trimmed.contains("LLM engine (") && ev.model.is_none() {
                let config = engine_config(&lines, index);
                if let Some(model) = quoted_after(&config, " model='") {
                    ev.model = Some(at(model, line, trimmed));
                }
                if let (Some(kv), Some(dtype)) = (
                    word_after(&config, " kv_cache_dtype="),
                    word_after(&config, " dtype=torch."),
                ) {
                    if kv == "auto" {
                        auto_kv = Some((dtype, line, trimmed.to_owned()));
                    }
                }
            }
            if let Some(name) = after(trimmed, "general.name").and_then(|r| after(r, "= ")) {
                ev.model
                    .get_or_insert(at(name.trim().to_owned(), line, trimmed));
            }
            if trimmed.contains("FlashInfer resolved") {
                if let Some(dtype) = word_after(trimmed, "kv_cache_dtype=torch.") {
                    resolved_kv.get_or_insert(at(torch_kv_dtype(&dtype), line, trimmed));
                }
            }
            if ev.startup_failure.is_none() && is_startup_failure(trimmed) {
                ev.startup_failure = Some(at(trimmed.to_owned(), line, trimmed));
            }
            if let Some(rest) = after(trimmed, "Using FlashAttention version ") {
                if let Ok(v) = leading_number(rest).parse() {
                    ev.flash_attention_version
                        .get_or_insert(at(v, line, trimmed));
                }
            }
            if let Some(rest) = after(trimmed, "Using ") {
                if let Some(dtype) = rest.strip_suffix_at(" data type to store kv cache") {
                    ev.kv_cache_dtype
                        .get_or_insert(at(dtype.trim().to_owned(), line, trimmed));
                }
            }
            if let Some(rest) = after(trimmed, "Available KV cache memory:") {
                let rest = rest.trim();
                if rest.starts_with('-') {
                    // A negative budget: the engine found no room for a KV cache and stops.
                    ev.startup_failure
                        .get_or_insert(at(trimmed.to_owned(), line, trimmed));
                } else if let Ok(v) = leading_number(rest).replace(',', "").parse() {
                    ev.available_kv_cache_gib
                        .get_or_insert(at(v, line, trimmed));
                }
            }
            if let Some(rest) = after(trimmed, "GPU KV cache size:") {
                if let Ok(v) = leading_number(rest.trim()).replace(',', "").parse() {
                    ev.kv_cache_tokens.get_or_insert(at(v, line, trimmed));
                }
            }
            if let Some(rest) = after(trimmed, "Maximum concurrency for ") {
                let tokens = leading_number(rest).replace(',', "");
                let factor =
                    after(rest, "per request:").map(|r| leading_number(r.trim()).replace(',', ""));
                if let (Ok(t), Some(Ok(f))) = (tokens.parse(), factor.map(|f| f.parse())) {
                    ev.max_concurrency.get_or_insert(at((t, f), line, trimmed));
                }
            }
            let admits = after(trimmed, "llama_context: n_seq_max")
                .map(|r| r.trim_start_matches([' ', '=']))
                .or_else(|| {
                    after(trimmed, "non-default args:").and_then(|r| after(r, "'max_num_seqs':"))
                });
            if let Some(rest) = admits {
                if let Ok(n) = leading_number(rest.trim()).parse() {
                    ev.max_sequences.get_or_insert(at(n, line, trimmed));
                }
            }
            if let Some(rest) = after(trimmed, "Model loading took ") {
                if let Some(gib) = gib_before(rest) {
                    ev.model_weights_gib.get_or_insert(at(gib, line, trimmed));
                }
            }
            if let Some(rest) = after(trimmed, "Graph capturing finished in ") {
                if let Some(gib) = after(rest, "took ").and_then(gib_before) {
                    ev.cuda_graph_gib.get_or_insert(at(gib, line, trimmed));
                }
            }
            if ev.starts.len() <= 1 {
                if let Some(buffer) = parse_llama_buffer(trimmed) {
                    ev.llama_buffers.push(at(buffer, line, trimmed));
                }
            }
            if let Some(kv) = parse_llama_kv_cache(trimmed) {
                ev.kv_cache_dtype
                    .get_or_insert(at(kv.k_type.clone(), line, trimmed));
                if ev.llama_kv_cache.is_none() {
                    ev.llama_kv_cache = Some(at(kv, line, trimmed));
                } else {
                    ev.more_llama_kv_caches.push(at(kv, line, trimmed));
                }
            }
            let flash = after(trimmed, "llama_context: flash_attn")
                .filter(|rest| rest.starts_with([' ', '=']))
                .or_else(|| after(trimmed, "Flash Attention was auto, set to"));
            if let Some(rest) = flash {
                let setting = rest.trim_start_matches([' ', '=']);
                let enabled = if setting.starts_with("enabled") {
                    Some(true)
                } else if setting.starts_with("disabled") {
                    Some(false)
                } else {
                    None
                };
                if let Some(enabled) = enabled {
                    ev.flash_attention.get_or_insert(at(enabled, line, trimmed));
                    if enabled {
                        ev.attention_backend.get_or_insert(at(
                            "flash_attn".to_owned(),
                            line,
                            trimmed,
                        ));
                    }
                }
            }
            if DEFAULT_SCALE_SIGNATURES.iter().any(|s| trimmed.contains(s)) {
                ev.default_scale_lines
                    .push(at(trimmed.to_owned(), line, trimmed));
            }
        }
    }
    // No `Using … data type to store kv cache` line: the kernels' own statement, else `auto`
    // resolved to the model dtype the engine configuration names.
    if ev.kv_cache_dtype.is_none() {
        ev.kv_cache_dtype =
            resolved_kv.or_else(|| auto_kv.map(|(dtype, line, text)| at(dtype, line, &text)));
    }
    ev
}

/// The attention backend a vLLM line says was selected, in each wording vLLM has printed:
/// `Using FLASH_ATTN attention backend out of potential backends: …` (0.10+),
/// `Using AttentionBackendEnum.FLASHINFER backend.` (0.29), `Using FLASH_ATTN backend.`,
/// `Using Flash Attention backend on V1 engine.`, `Using Triton backend on V1 engine.`,
/// `Using Flash Attention backend.` (XPU). Backends of other parts of a model (`… for vit
/// attention`, `… Fp8 MoE backend …`) are not the decoder's attention backend.
fn vllm_backend(line: &str) -> Option<String> {
    let rest = after(line, "Using ")?;
    if let Some(name) = rest.strip_suffix_at(" attention backend") {
        return backend_name(name.trim());
    }
    let end = rest.find(" backend")?;
    let tail = &rest[end + " backend".len()..];
    let sentence_ends = tail.is_empty()
        || tail.starts_with('.')
        || tail.starts_with(" on V1 engine")
        || tail.starts_with(" on V0 engine");
    if !sentence_ends {
        return None;
    }
    backend_name(rest[..end].trim())
}

/// vLLM's backend names: an enum member (`AttentionBackendEnum.FLASHINFER` → `FLASHINFER`), an
/// upper-case name as printed, or the prose names older versions printed.
fn backend_name(name: &str) -> Option<String> {
    let name = name.strip_prefix("AttentionBackendEnum.").unwrap_or(name);
    let upper = |c: char| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_';
    if !name.is_empty() && name.chars().all(upper) {
        return Some(name.to_owned());
    }
    let known = [
        ("Flash Attention", "FLASH_ATTN"),
        ("FlashAttention", "FLASH_ATTN"),
        ("Triton", "TRITON_ATTN"),
        ("FlashInfer", "FLASHINFER"),
        ("XFormers", "XFORMERS"),
        ("Torch SDPA", "TORCH_SDPA"),
        ("FlexAttention", "FLEX_ATTENTION"),
        ("ROCmFlashAttention", "ROCM_FLASH"),
    ];
    known
        .iter()
        .find(|(prose, _)| *prose == name)
        .map(|(_, id)| (*id).to_owned())
}

/// vLLM's engine configuration line, with the lines a terminal copy hard-wrapped it into
/// joined back (a wrapped piece does not start like a log line: `(EngineCore …`, a level, `[`).
fn engine_config(lines: &[&str], index: usize) -> String {
    let mut config = strip_ansi(lines[index]).into_owned();
    for next in lines.iter().skip(index + 1).take(64) {
        let next = strip_ansi(next);
        let starts_a_record = next.is_empty()
            || next.starts_with('(')
            || next.starts_with('[')
            || ["INFO", "WARNING", "ERROR", "DEBUG"]
                .iter()
                .any(|level| next.starts_with(level));
        if starts_a_record {
            break;
        }
        config.push_str(&next);
    }
    config
}

/// `Initializing a V1 LLM engine (v0.29.0) with config` or `vLLM API server version 0.10.1.1`.
fn engine_version(line: &str) -> Option<String> {
    if let Some(rest) = after(line, "LLM engine (v") {
        let version: String = rest.chars().take_while(|c| *c != ')').collect();
        return (!version.is_empty() && rest.len() > version.len()).then_some(version);
    }
    let rest = after(line, "vLLM API server version ")?;
    let version = rest.split_whitespace().next()?;
    Some(version.to_owned())
}

/// Lines that say the engine did not start.
fn is_startup_failure(line: &str) -> bool {
    const SIGNATURES: [&str; 5] = [
        "EngineCore failed to start",
        "No available memory for the cache blocks",
        "Engine core initialization failed",
        "failed to load model",
        "unable to load model",
    ];
    SIGNATURES.iter().any(|s| line.contains(s))
}

/// Torch's dtype names as vLLM's KV dtype names.
fn torch_kv_dtype(dtype: &str) -> String {
    match dtype {
        "float8_e4m3fn" | "float8_e4m3fnuz" => "fp8_e4m3".to_owned(),
        "float8_e5m2" | "float8_e5m2fnuz" => "fp8_e5m2".to_owned(),
        "float16" | "half" => "float16".to_owned(),
        other => other.to_owned(),
    }
}

/// The identifier after `key` (letters, digits, `_`, `.`), e.g. `auto` in `kv_cache_dtype=auto,`.
fn word_after(hay: &str, key: &str) -> Option<String> {
    let rest = after(hay, key)?;
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
        .collect();
    (!word.is_empty()).then_some(word)
}

/// The text between `key` (ending in a quote) and the next `'`.
fn quoted_after(hay: &str, key: &str) -> Option<String> {
    let rest = after(hay, key)?;
    let end = rest.find('\'')?;
    Some(rest[..end].to_owned())
}

/// The line without terminal colour codes (`ESC [ … m`), which some captured logs keep.
fn strip_ansi(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    std::borrow::Cow::Owned(out)
}

impl StartupEvidence {
    /// The allocated device memory this log states, in MiB, each figure naming its lines:
    /// vLLM's figures converted from GiB; llama.cpp's buffers summed by what they hold (a vLLM
    /// figure and a llama.cpp buffer never meet in one log; if they did, vLLM's is kept).
    /// Not part of [`StartupEvidence::observed`]: stored compatibility records stay as signed.
    pub fn device_memory(&self) -> DeviceMemory {
        let mut m = DeviceMemory::default();
        let mut vllm = |field: &str, found: &Option<Found<f64>>| {
            found.as_ref().map(|f| {
                m.sources
                    .push(format!("{field}: startup log line {}", f.line));
                round2(f.value * 1024.0)
            })
        };
        let weights = vllm("weights_mib", &self.model_weights_gib);
        let kv = vllm("kv_cache_mib", &self.available_kv_cache_gib);
        let graphs = vllm("cuda_graph_mib", &self.cuda_graph_gib);
        m.weights_mib = weights;
        m.kv_cache_mib = kv;
        m.cuda_graph_mib = graphs;
        let groups: [(&str, &[&str]); 4] = [
            ("weights_mib", &["model"]),
            ("kv_cache_mib", &["KV"]),
            ("recurrent_state_mib", &["RS"]),
            ("compute_mib", &["compute", "output"]),
        ];
        for (field, kinds) in groups {
            let parts: Vec<&Found<LlamaBuffer>> = self
                .llama_buffers
                .iter()
                .filter(|b| kinds.contains(&b.value.kind.as_str()))
                .collect();
            if parts.is_empty() {
                continue;
            }
            let sum = round2(parts.iter().map(|b| b.value.mib).sum());
            let lines: Vec<String> = parts.iter().map(|b| b.line.to_string()).collect();
            let s = if lines.len() == 1 { "" } else { "s" };
            m.sources
                .push(format!("{field}: startup log line{s} {}", lines.join(", ")));
            let slot = match field {
                "weights_mib" => &mut m.weights_mib,
                "kv_cache_mib" => &mut m.kv_cache_mib,
                "recurrent_state_mib" => &mut m.recurrent_state_mib,
                _ => &mut m.compute_mib,
            };
            slot.get_or_insert(sum);
        }
        m
    }

    /// The engine-neutral facts of this log for the compatibility rule, each source naming its
    /// line. llama.cpp's K type, which also fills `kv_cache_dtype` here, goes to
    /// `k_cache_dtype` only (vLLM's dtype line is a different fact); vLLM's available KV memory
    /// is converted from GiB to MiB.
    pub fn observed(&self) -> ObservedEngine {
        let mut o = ObservedEngine::default();
        let mut source = |field: &str, line: usize| {
            o.sources.push(format!("{field}: startup log line {line}"));
        };
        if let Some(b) = &self.attention_backend {
            o.attention_backend = Some(b.value.clone());
            source("attention_backend", b.line);
        }
        if let Some(f) = &self.flash_attention {
            o.flash_attention = Some(f.value);
            source("flash_attention", f.line);
        }
        if let Some(n) = &self.max_sequences {
            o.max_sequences = Some(n.value);
            source("max_sequences", n.line);
        }
        if let Some(kv) = &self.llama_kv_cache {
            o.k_cache_dtype = Some(kv.value.k_type.clone());
            o.v_cache_dtype = Some(kv.value.v_type.clone());
            o.kv_cache_mib = Some(kv.value.size_mib);
            o.kv_cells = Some(kv.value.cells);
            source(
                "k_cache_dtype, v_cache_dtype, kv_cache_mib, kv_cells",
                kv.line,
            );
            // Every cache counts toward the KV memory; the token positions one sequence can
            // hold are those of the largest cache (the full-attention one).
            for more in &self.more_llama_kv_caches {
                o.kv_cache_mib = o.kv_cache_mib.map(|m| round2(m + more.value.size_mib));
                o.kv_cells = o.kv_cells.max(Some(more.value.cells));
                source("kv_cache_mib, kv_cells", more.line);
                for (side, first, other) in [
                    ("k_cache_dtype", &kv.value.k_type, &more.value.k_type),
                    ("v_cache_dtype", &kv.value.v_type, &more.value.v_type),
                ] {
                    if first != other {
                        o.conflicts.push(kvgate_core::compat::CompatProblem::new(
                            format!("evidence.{side}"),
                            format!("`{first}` (line {})", kv.line),
                            format!("`{other}` (line {})", more.line),
                            "the engine's KV caches are stored in different types",
                        ));
                    }
                }
            }
        }
        if let Some(f) = &self.startup_failure {
            o.startup_failure = Some(format!("line {}: {}", f.line, f.text));
            source("startup_failure", f.line);
        }
        if let Some(d) = &self.kv_cache_dtype {
            let from_llama_line = self
                .llama_kv_cache
                .as_ref()
                .is_some_and(|kv| kv.line == d.line);
            if !from_llama_line {
                o.kv_cache_dtype = Some(d.value.clone());
                source("kv_cache_dtype", d.line);
            }
        }
        if o.kv_cache_mib.is_none() {
            if let Some(g) = &self.available_kv_cache_gib {
                o.kv_cache_mib = Some(g.value * 1024.0);
                source("kv_cache_mib", g.line);
            }
        }
        if let Some(t) = &self.kv_cache_tokens {
            o.kv_cache_tokens = Some(t.value);
            source("kv_cache_tokens", t.line);
        }
        for l in &self.default_scale_lines {
            o.default_scale_lines.push(l.value.clone());
            source("default_scale_lines", l.line);
        }
        o
    }
}

/// `1.11 GiB …` → 1.11; a figure in another unit is not read (never guessed).
fn gib_before(rest: &str) -> Option<f64> {
    let number = leading_number(rest.trim_start());
    let unit = rest.trim_start()[number.len()..].trim_start();
    if !unit.starts_with("GiB") {
        return None;
    }
    number.replace(',', "").parse().ok()
}

/// `load_tensors:   CPU_Mapped model buffer size =   462.96 MiB`; `alloc_compute_meta:` lines
/// (a graph's metadata estimate, printed before the scheduler reserves) are not allocations.
fn parse_llama_buffer(line: &str) -> Option<LlamaBuffer> {
    let (head, tail) = line.split_once(" buffer size =")?;
    if head.contains("alloc_compute_meta:") {
        return None;
    }
    let mib_text = tail.trim();
    let number = leading_number(mib_text);
    if !mib_text[number.len()..].trim_start().starts_with("MiB") {
        return None;
    }
    let mib = number.parse().ok()?;
    // The words after the `prefix:` are `<device> <kind>`.
    let words: Vec<&str> = head.rsplit_once(':')?.1.split_whitespace().collect();
    let [device, kind] = words[..] else {
        return None;
    };
    Some(LlamaBuffer {
        kind: kind.to_owned(),
        device: device.to_owned(),
        mib,
    })
}

/// MiB as llama.cpp prints them (two decimals), so a sum is not shown as 1063.9999999.
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn at<T>(value: T, line: usize, text: &str) -> Found<T> {
    Found {
        value,
        line,
        text: text.to_owned(),
    }
}

/// `llama_kv_cache: size =   23.91 MiB (  2048 cells,  30 layers,  1/1 seqs), K (q8_0):   11.95 MiB, V (q8_0):   11.95 MiB`
fn parse_llama_kv_cache(line: &str) -> Option<LlamaKvCache> {
    let rest = after(line, "llama_kv_cache: size =")?;
    let size_mib = leading_number(rest.trim()).parse().ok()?;
    let inside = after(rest, "(")?;
    let cells = leading_number(inside.trim()).parse().ok()?;
    let layers_part = after(inside, "cells,")?;
    let layers = leading_number(layers_part.trim()).parse().ok()?;
    let seqs_part = after(layers_part, "layers,")?.trim();
    let seqs = seqs_part.split_whitespace().next()?.to_owned();
    let k = after(line, "K (")?;
    let k_type = k.split(')').next()?.to_owned();
    let k_mib = leading_number(after(k, "):")?.trim()).parse().ok()?;
    let v = after(line, "V (")?;
    let v_type = v.split(')').next()?.to_owned();
    let v_mib = leading_number(after(v, "):")?.trim()).parse().ok()?;
    Some(LlamaKvCache {
        size_mib,
        cells,
        layers,
        seqs,
        k_type,
        k_mib,
        v_type,
        v_mib,
    })
}

/// The text after the first occurrence of `needle`.
fn after<'a>(hay: &'a str, needle: &str) -> Option<&'a str> {
    hay.find(needle).map(|i| &hay[i + needle.len()..])
}

/// The leading run of digits, separators and one decimal point.
fn leading_number(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .collect::<String>()
        .trim_end_matches(['.', ','])
        .to_owned()
}

trait StripSuffixAt {
    fn strip_suffix_at(&self, suffix: &str) -> Option<&str>;
}

impl StripSuffixAt for str {
    /// The text before `suffix` when the text contains it.
    fn strip_suffix_at(&self, suffix: &str) -> Option<&str> {
        self.find(suffix).map(|i| &self[..i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field_data::field;

    const LLAMA_Q8: &str = "\
0.03.612.001 I llama_context: n_ctx         = 2048
0.03.701.752 I llama_kv_cache: size =   23.91 MiB (  2048 cells,  30 layers,  1/1 seqs), K (q8_0):   11.95 MiB, V (q8_0):   11.95 MiB
0.04.171.934 I llama_context: flash_attn            = enabled
";

    const VLLM_C1: &str = "\
INFO 08-12 10:00:01 [cuda.py:345] Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN', 'TRITON_ATTN']
INFO 08-12 10:00:01 [flash_attn.py:80] Using FlashAttention version 3
INFO 08-12 10:00:02 [cache.py:120] Using fp8 data type to store kv cache. It reduces the GPU memory footprint and boosts the performance. Meanwhile, it may cause accuracy drop without a proper scaling factor
WARNING 08-12 10:00:03 [kv_cache.py:90] Checkpoint does not provide a q scaling factor. Setting it to k_scale.
WARNING 08-12 10:00:03 [kv_cache.py:95] Using KV cache scaling factor 1.0 for fp8_e4m3. If this is unintended, verify that k/v_scale scaling factors are properly set in the checkpoint.
INFO 08-12 10:00:09 [gpu_worker.py:290] Available KV cache memory: 52.43 GiB
INFO 08-12 10:00:09 [kv_cache_utils.py:870] GPU KV cache size: 858,992 tokens
INFO 08-12 10:00:09 [kv_cache_utils.py:874] Maximum concurrency for 16,384 tokens per request: 52.43x
";

    #[test]
    fn llama_cpp_kv_cache_and_flash_attention() {
        let ev = parse_startup_log(LLAMA_Q8);
        let kv = ev.llama_kv_cache.unwrap();
        assert_eq!(kv.line, 2);
        assert_eq!(kv.value.size_mib, 23.91);
        assert_eq!(kv.value.cells, 2048);
        assert_eq!(kv.value.layers, 30);
        assert_eq!(kv.value.seqs, "1/1");
        assert_eq!(
            (kv.value.k_type.as_str(), kv.value.v_type.as_str()),
            ("q8_0", "q8_0")
        );
        assert_eq!(kv.value.k_mib, 11.95);
        assert_eq!(ev.kv_cache_dtype.unwrap().value, "q8_0");
        let backend = ev.attention_backend.unwrap();
        assert_eq!((backend.value.as_str(), backend.line), ("flash_attn", 3));
        assert!(ev.default_scale_lines.is_empty());
    }

    #[test]
    fn vllm_backend_dtype_capacity_and_default_scales() {
        let ev = parse_startup_log(VLLM_C1);
        assert_eq!(ev.attention_backend.unwrap().value, "FLASH_ATTN");
        assert_eq!(ev.flash_attention_version.unwrap().value, 3);
        assert_eq!(ev.kv_cache_dtype.unwrap().value, "fp8");
        assert_eq!(ev.available_kv_cache_gib.unwrap().value, 52.43);
        let tokens = ev.kv_cache_tokens.unwrap();
        assert_eq!((tokens.value, tokens.line), (858_992, 7));
        assert_eq!(ev.max_concurrency.unwrap().value, (16_384, 52.43));
        assert_eq!(ev.default_scale_lines.len(), 2);
        assert_eq!(ev.default_scale_lines[1].line, 5);
    }

    #[test]
    fn older_vllm_and_joined_capacity_lines() {
        let log = "Using Flash Attention backend on V1 engine.\n\
                   GPU KV cache size: 123,456 tokens, Maximum concurrency for 4,096 tokens per request: 30.14x\n";
        let ev = parse_startup_log(log);
        assert_eq!(ev.attention_backend.unwrap().value, "FLASH_ATTN");
        assert_eq!(ev.kv_cache_tokens.unwrap().value, 123_456);
        assert_eq!(ev.max_concurrency.unwrap().value, (4096, 30.14));
    }

    const F16_LOG: &str = include_str!("../../../fixtures/evidence/llamacpp-f16-startup.log");
    const Q8_LOG: &str = include_str!("../../../fixtures/evidence/llamacpp-q8_0-startup.log");

    fn manifest(json: &str) -> kvgate_core::manifest::Manifest {
        kvgate_core::manifest::Manifest::from_json(json).unwrap()
    }

    #[test]
    fn real_llama_cpp_logs_give_the_observed_engine() {
        let f16 = parse_startup_log(F16_LOG).observed();
        assert_eq!(f16.k_cache_dtype.as_deref(), Some("f16"));
        assert_eq!(f16.v_cache_dtype.as_deref(), Some("f16"));
        assert_eq!(f16.kv_cache_mib, Some(45.0));
        assert_eq!(f16.kv_cells, Some(2048));
        assert_eq!(f16.flash_attention, Some(true));
        assert_eq!(f16.attention_backend.as_deref(), Some("flash_attn"));
        // llama.cpp facts only: no vLLM dtype line, no token capacity, no scale signatures.
        assert_eq!(f16.kv_cache_dtype, None);
        assert_eq!(f16.kv_cache_tokens, None);
        assert_eq!(f16.skipped_layers, None);
        assert!(f16.default_scale_lines.is_empty());
        assert_eq!(f16.max_sequences, Some(1), "one slot: n_seq_max");
        assert_eq!(
            f16.sources,
            [
                "attention_backend: startup log line 140",
                "flash_attention: startup log line 140",
                "max_sequences: startup log line 134",
                "k_cache_dtype, v_cache_dtype, kv_cache_mib, kv_cells: startup log line 150",
            ]
        );

        let q8 = parse_startup_log(Q8_LOG).observed();
        assert_eq!(q8.k_cache_dtype.as_deref(), Some("q8_0"));
        assert_eq!(q8.v_cache_dtype.as_deref(), Some("q8_0"));
        assert_eq!(q8.kv_cache_mib, Some(23.91));
        assert_eq!(q8.kv_cells, Some(2048));
        assert_eq!(q8.flash_attention, Some(true));
    }

    #[test]
    fn real_logs_against_the_real_manifests() {
        use kvgate_core::compat::check_compatibility;
        let b0 = manifest(include_str!(
            "../../../fixtures/manifests/smollm2-135m-cpu-b0.json"
        ));
        let q8 = manifest(include_str!(
            "../../../fixtures/manifests/smollm2-135m-cpu-q8.json"
        ));
        let f16_log = parse_startup_log(F16_LOG).observed();
        let q8_log = parse_startup_log(Q8_LOG).observed();

        let v = check_compatibility(&q8, Some(&q8_log));
        assert!(v.valid, "{:#?}", v.problems);
        assert!(check_compatibility(&b0, Some(&f16_log)).valid);

        let v = check_compatibility(&q8, Some(&f16_log));
        assert!(!v.valid);
        assert!(
            v.problems.iter().all(|p| p.field == "kv_dtype"),
            "{:#?}",
            v.problems
        );
        assert_eq!(v.problems.len(), 2);
        assert_eq!(v.problems[0].found, "`f16`");
        let v = check_compatibility(&b0, Some(&q8_log));
        assert_eq!(v.problems[0].field, "kv_dtype");
        assert_eq!(v.problems[0].found, "`q8_0`");

        // The real log with its KV line cut out no longer confirms the cell.
        let cut: String = Q8_LOG
            .lines()
            .filter(|l| !l.contains("llama_kv_cache: size"))
            .map(|l| format!("{l}\n"))
            .collect();
        let v = check_compatibility(&q8, Some(&parse_startup_log(&cut).observed()));
        assert_eq!(v.problems.len(), 2);
        assert!(v
            .problems
            .iter()
            .all(|p| p.found == "not found in evidence"));
        // A vLLM manifest refuses llama.cpp evidence.
        let c1 = manifest(include_str!(
            "../../../fixtures/manifests/llama31-8b-h100-c1.json"
        ));
        let v = check_compatibility(&c1, Some(&q8_log));
        assert!(v.problems.iter().any(|p| p.field == "engine"));
    }

    #[test]
    fn flash_attention_disabled_and_auto() {
        let off = parse_startup_log("llama_context: flash_attn            = disabled\n");
        let f = off.flash_attention.as_ref().unwrap();
        assert_eq!((f.value, f.line), (false, 1));
        assert_eq!(off.attention_backend, None);
        assert_eq!(off.observed().flash_attention, Some(false));
        let auto = parse_startup_log(
            "llama_context: flash_attn            = auto\n\
             llama_context: Flash Attention was auto, set to enabled\n",
        );
        let f = auto.flash_attention.unwrap();
        assert_eq!((f.value, f.line), (true, 2));
        assert_eq!(auto.attention_backend.unwrap().value, "flash_attn");
        assert_eq!(
            parse_startup_log("llama_context: flash_attn = auto\n").flash_attention,
            None
        );
    }

    #[test]
    fn vllm_log_gives_the_observed_engine() {
        let o = parse_startup_log(VLLM_C1).observed();
        assert_eq!(o.attention_backend.as_deref(), Some("FLASH_ATTN"));
        assert_eq!(o.kv_cache_dtype.as_deref(), Some("fp8"));
        assert_eq!(o.kv_cache_tokens, Some(858_992));
        assert_eq!(o.kv_cache_mib, Some(52.43 * 1024.0));
        assert_eq!(o.default_scale_lines.len(), 2);
        assert!(o.default_scale_lines[1].contains("Using KV cache scaling factor 1.0"));
        assert_eq!((o.k_cache_dtype.as_ref(), o.flash_attention), (None, None));
        assert!(o
            .sources
            .contains(&"kv_cache_dtype: startup log line 3".to_owned()));
        assert!(o
            .sources
            .contains(&"default_scale_lines: startup log line 5".to_owned()));

        use kvgate_core::compat::check_compatibility;
        let c1 = manifest(include_str!(
            "../../../fixtures/manifests/llama31-8b-h100-c1.json"
        ));
        let c2 = manifest(include_str!(
            "../../../fixtures/manifests/llama31-8b-h100-c2.json"
        ));
        let b0 = manifest(include_str!(
            "../../../fixtures/manifests/llama31-8b-h100-b0.json"
        ));
        let c3 = manifest(include_str!(
            "../../../fixtures/manifests/llama31-8b-h100-c3.json"
        ));
        assert!(check_compatibility(&c1, Some(&o)).valid);
        // C2 promised calibrated scales: the default-scale lines are a silent fallback.
        let v = check_compatibility(&c2, Some(&o));
        assert_eq!(v.problems.len(), 2);
        assert!(v.problems.iter().all(|p| p.field == "scale_source"));
        // B0 froze an unquantized cache; C3's skipped layers are not in the log.
        assert_eq!(
            check_compatibility(&b0, Some(&o)).problems[0].field,
            "kv_dtype"
        );
        assert_eq!(
            check_compatibility(&c3, Some(&o)).problems[0].field,
            "skipped_layers"
        );
    }

    // Synthetic lines reproducing what real logs of vLLM 0.10 … 0.29 and llama.cpp wrote
    // (the public field files the formats tests read, `tests/import/field.rs`).

    #[test]
    fn every_backend_wording_vllm_printed_is_read() {
        for (line, backend) in [
            ("(EngineCore pid=1) INFO [cuda.py:432] Using AttentionBackendEnum.FLASHINFER backend.", "FLASHINFER"),
            ("INFO [cuda.py:323] Using Triton backend on V1 engine.\u{1b}[32m [repeated 3x across cluster]\u{1b}[0m", "TRITON_ATTN"),
            ("\u{1b}[0;36m(Worker_TP2 pid=3)\u{1b}[0;0m INFO [xpu.py:77] Using Flash Attention backend.", "FLASH_ATTN"),
            ("INFO Using FLASH_ATTN backend.", "FLASH_ATTN"),
            ("INFO Using FlashInfer backend.", "FLASHINFER"),
            ("INFO [cuda.py:351] Using FLASHINFER attention backend out of potential backends: ('FLASHINFER', 'TRITON_ATTN')", "FLASHINFER"),
        ] {
            let ev = parse_startup_log(line);
            let found = ev.attention_backend.unwrap_or_else(|| panic!("{line}"));
            assert_eq!(found.value, backend, "{line}");
            assert!(!found.text.contains('\u{1b}'), "{}", found.text);
        }
        // Other parts of a model name their own backends: not the decoder's.
        for line in [
            "INFO [cuda.py:390] Using backend AttentionBackendEnum.FLASH_ATTN for vit attention",
            "INFO [mm_encoder_attention.py:77] Using AttentionBackendEnum.FLASH_ATTN for MMEncoderAttention.",
            "INFO [fp8.py:396] Using TRITON Fp8 MoE backend out of potential backends: ['TRITON']",
            "INFO [selector.py:138] Using HND KV cache layout for CPU_ATTN backend.",
        ] {
            assert_eq!(parse_startup_log(line).attention_backend, None, "{line}");
        }
    }

    #[test]
    fn auto_kv_dtype_resolves_to_the_model_dtype_even_when_wrapped() {
        let one_line = "INFO [core.py:105] Initializing a V1 LLM engine (v0.18.1) with config: model='Qwen/Qwen3.5', dtype=torch.bfloat16, kv_cache_dtype=auto, device_config=cuda\n";
        let ev = parse_startup_log(one_line);
        let dtype = ev.kv_cache_dtype.unwrap();
        assert_eq!((dtype.value.as_str(), dtype.line), ("bfloat16", 1));
        assert_eq!(ev.engine_version.unwrap().value, "0.18.1");
        assert_eq!(ev.model.unwrap().value, "Qwen/Qwen3.5");
        // A terminal copy wrapped at a fixed width, cutting words.
        let wrapped = "(EngineCore_0 pid=1) INFO [core.py:74] Initializing a V1 LLM engine (v0.10.1.1) with config: model='Qwen2-7B'\n\
                       , trust_remote_code=False, dtype=torch.bfl\n\
                       oat16, enforce_eager=False, kv_cache_d\n\
                       type=auto, device_config=cuda\n\
                       (EngineCore_0 pid=1) INFO [cuda.py:328] Using Flash Attention backend on V1 engine.\n";
        let ev = parse_startup_log(wrapped);
        assert_eq!(ev.kv_cache_dtype.unwrap().value, "bfloat16");
        assert_eq!(ev.attention_backend.unwrap().value, "FLASH_ATTN");
        // An explicit line wins over the configuration.
        let both = format!("{one_line}INFO [cache.py:1] Using fp8 data type to store kv cache.\n");
        assert_eq!(
            parse_startup_log(&both).kv_cache_dtype.unwrap().value,
            "fp8"
        );
        // FlashInfer states the kernels' cache dtype: read when nothing else does.
        let fi = "INFO [flashinfer.py:910] FlashInfer resolved query dtypes: prefill=torch.bfloat16, kv_cache_dtype=torch.float8_e4m3fn, arch=sm120\n";
        assert_eq!(
            parse_startup_log(fi).kv_cache_dtype.unwrap().value,
            "fp8_e4m3"
        );
    }

    #[test]
    fn a_failed_startup_is_named_and_never_a_capacity() {
        let negative = "INFO [cache.py:205] Using fp8 data type to store kv cache.\n\
                        INFO [gpu_worker.py:375] Available KV cache memory: -2.51 GiB\n\
                        ERROR [core.py:866] EngineCore failed to start.\n";
        let ev = parse_startup_log(negative);
        let failure = ev.startup_failure.as_ref().unwrap();
        assert_eq!(failure.line, 2);
        assert_eq!(ev.available_kv_cache_gib, None);
        let o = ev.observed();
        assert_eq!(
            o.startup_failure.as_deref(),
            Some("line 2: INFO [gpu_worker.py:375] Available KV cache memory: -2.51 GiB")
        );
        assert!(
            !o.is_empty(),
            "a failed start is evidence: of an invalid cell"
        );
        let cpu = "ERROR [core.py:1231] EngineCore failed to start.\r\nValueError: No available memory for the cache blocks.\n";
        assert_eq!(parse_startup_log(cpu).startup_failure.unwrap().line, 1);
        let llama = "srv    load_model: failed to load model, '/m/x.gguf'\n";
        assert!(parse_startup_log(llama).startup_failure.is_some());
    }

    #[test]
    fn progress_bar_redraws_are_segments_of_one_line() {
        let text = "Loading 10%\rLoading 100%\r(EngineCore) INFO [kv_cache_utils.py:2032] GPU KV cache size: 28,784 tokens, Maximum concurrency for 4,096 tokens per request: 7.03x\n";
        let ev = parse_startup_log(text);
        let tokens = ev.kv_cache_tokens.unwrap();
        assert_eq!((tokens.value, tokens.line), (28_784, 1));
        assert!(tokens.text.starts_with("(EngineCore)"), "{}", tokens.text);
        assert_eq!(ev.max_concurrency.unwrap().value, (4096, 7.03));
    }

    #[test]
    fn every_llama_cache_counts_and_starts_are_counted() {
        let text = "system_info: n_threads = 4\n\
                    print_info: general.name          = Gemma-4-E4B-It\n\
                    llama_kv_cache: size = 1024.00 MiB ( 65536 cells,   4 layers,  1/1 seqs), K (f16):  512.00 MiB, V (f16):  512.00 MiB\n\
                    llama_kv_cache: size =   40.00 MiB (  1024 cells,  20 layers,  1/1 seqs), K (f16):   20.00 MiB, V (f16):   20.00 MiB\n\
                    sched_reserve: Flash Attention was auto, set to enabled\n";
        let ev = parse_startup_log(text);
        assert_eq!(ev.starts, [1]);
        assert_eq!(ev.more_llama_kv_caches.len(), 1);
        assert_eq!(ev.model.as_ref().unwrap().value, "Gemma-4-E4B-It");
        let o = ev.observed();
        assert_eq!(o.kv_cache_mib, Some(1064.0));
        assert_eq!(
            o.kv_cells,
            Some(65_536),
            "the full-attention cache's positions"
        );
        assert!(o.conflicts.is_empty());
        // Caches stored in different types are a conflict, never a silent first.
        let mixed = text.replacen("K (f16):   20.00", "K (q8_0):   10.62", 1);
        let o = parse_startup_log(&mixed).observed();
        assert_eq!(o.conflicts.len(), 1);
        assert_eq!(o.conflicts[0].field, "evidence.k_cache_dtype");
    }

    #[test]
    fn nothing_recognised_is_absent_not_zero() {
        let ev = parse_startup_log("hello\nworld\n");
        assert_eq!(ev, StartupEvidence::default());
        assert!(ev.observed().is_empty());
        assert!(ev.observed().sources.is_empty());
        assert_eq!(
            serde_json::to_string(&ev).unwrap(),
            r#"{"default_scale_lines":[]}"#
        );
    }

    #[test]
    fn recorded_llama_cpp_logs_state_weights_flat_and_the_kv_buffer_halved() {
        // The project's recorded SmolLM2 starts: lines 129 (model), 148 (output), 149 (KV),
        // 158 (compute). The weights stay 92.10 MiB while the KV buffer falls 45.00 → 23.91.
        let f16 = parse_startup_log(F16_LOG).device_memory();
        let q8 = parse_startup_log(Q8_LOG).device_memory();
        assert_eq!(f16.weights_mib, Some(92.10));
        assert_eq!(q8.weights_mib, Some(92.10));
        assert_eq!(f16.kv_cache_mib, Some(45.00));
        assert_eq!(q8.kv_cache_mib, Some(23.91));
        // 16.64 compute + 0.19 output; 16.67 + 0.19.
        assert_eq!(f16.compute_mib, Some(16.83));
        assert_eq!(q8.compute_mib, Some(16.86));
        // A CPU server has no CUDA graphs and SmolLM2 no recurrent state: absent, not 0.
        assert_eq!((f16.cuda_graph_mib, f16.recurrent_state_mib), (None, None));
        assert_eq!(
            f16.sources,
            vec![
                "weights_mib: startup log line 129",
                "kv_cache_mib: startup log line 149",
                "compute_mib: startup log lines 148, 158"
            ]
        );
        // Not a compatibility fact: the observed engine (and the record signed over it) is
        // the same with or without these lines.
        // (Blanked, not removed, so every other line keeps its number.)
        let without: String = F16_LOG
            .lines()
            .map(|l| {
                if l.contains("buffer size") {
                    "\n".to_owned()
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        assert_eq!(
            parse_startup_log(&without).observed(),
            parse_startup_log(F16_LOG).observed()
        );
        assert!(parse_startup_log(&without).device_memory().is_empty());
    }

    #[test]
    fn vllm_memory_lines_in_each_wording_and_never_another_unit() {
        // Synthetic lines in the wordings real logs show (0.10: `took X GiB and N seconds`;
        // 0.13+: `took X GiB memory and N seconds`).
        let log = "\
(EngineCore_0 pid=1) INFO 09-04 01:03:03 [gpu_model_runner.py:2007] Model loading took 14.2488 GiB and 4.422213 seconds
(EngineCore_0 pid=1) INFO 09-04 01:04:29 [gpu_worker.py:276] Available KV cache memory: 5.01 GiB
(EngineCore_0 pid=1) INFO 09-04 01:04:32 [gpu_model_runner.py:2708] Graph capturing finished in 3 secs, took 0.50 GiB
";
        let m = parse_startup_log(log).device_memory();
        // 14.2488 × 1024 = 14590.7712; 5.01 × 1024 = 5130.24; 0.50 × 1024 = 512.
        assert_eq!(m.weights_mib, Some(14590.77));
        assert_eq!(m.kv_cache_mib, Some(5130.24));
        assert_eq!(m.cuda_graph_mib, Some(512.0));
        assert_eq!(m.compute_mib, None);
        let newer = parse_startup_log(
            "INFO [gpu_model_runner.py:3659] Model loading took 4.9054 GiB memory and 170.713657 seconds\n",
        );
        assert_eq!(newer.device_memory().weights_mib, Some(5023.13));
        // A figure in MiB, a time alone (`Loading weights took 0.65 seconds`) or an estimate
        // (`Estimated CUDA graph memory`) is no GiB allocation: nothing read.
        let fooled = parse_startup_log(
            "Model loading took 512 MiB and 3.2 seconds\n\
             Loading weights took 0.65 seconds\n\
             Estimated CUDA graph memory: 0.81 GiB total\n\
             Graph capturing finished in 5 secs\n",
        );
        assert!(fooled.device_memory().is_empty(), "{fooled:?}");
    }

    #[test]
    fn llama_buffers_of_the_first_start_only_and_no_metadata_estimates() {
        // Synthetic, in the wording of a real Metal log: two starts, a hybrid model's RS buffer,
        // and an `alloc_compute_meta` estimate that is not an allocation.
        let log = "\
system_info: n_threads = 8
load_tensors:   CPU_Mapped model buffer size =   545.62 MiB
load_tensors:  MTL0_Mapped model buffer size =  5679.25 MiB
llama_context:        CPU  output buffer size =     3.79 MiB
llama_kv_cache:       MTL0 KV buffer size =  1088.00 MiB
llama_memory_recurrent:       MTL0 RS buffer size =   201.00 MiB
sched_reserve:       MTL0 compute buffer size =   501.00 MiB
sched_reserve:        CPU compute buffer size =   144.29 MiB
alloc_compute_meta:       MTL0 compute buffer size =   101.27 MiB
system_info: n_threads = 8
load_tensors:   CPU_Mapped model buffer size =   417.66 MiB
llama_kv_cache:       MTL0 KV buffer size =  4352.00 MiB
";
        let ev = parse_startup_log(log);
        assert_eq!(ev.llama_buffers.len(), 7);
        assert_eq!(ev.llama_buffers[1].value.device, "MTL0_Mapped");
        assert_eq!(ev.llama_buffers[1].value.kind, "model");
        let m = ev.device_memory();
        // 545.62 + 5679.25; 501.00 + 144.29 + 3.79.
        assert_eq!(m.weights_mib, Some(6224.87));
        assert_eq!(m.kv_cache_mib, Some(1088.0));
        assert_eq!(m.recurrent_state_mib, Some(201.0));
        assert_eq!(m.compute_mib, Some(649.08));
        assert_eq!(m.stated_total_mib(), Some((8162.95, 4)));
    }

    #[test]
    fn field_logs_state_their_memory_or_leave_it_absent() {
        let test = "field_logs_state_their_memory_or_leave_it_absent";
        // Hand-read from each file: (weights, KV, graphs, recurrent state, compute) in MiB.
        type Want = (
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<f64>,
        );
        let cases: [(&str, Want); 5] = [
            (
                "vllm-log/dennislee22-qwen2-7b-a100-0.25gram.log",
                (Some(14590.77), Some(5130.24), Some(512.0), None, None),
            ),
            // Four Ray workers each print 17.2217 GiB: one worker's share, the first.
            (
                "vllm-log/dennislee22-gpt-oss-120b-4xa100-ray.log",
                (Some(17635.02), Some(46407.68), Some(1925.12), None, None),
            ),
            // A negative KV budget is a failed start, never a KV figure.
            (
                "vllm-log/guardkit-nemotron-4b-fp8kv-startup-failed.log",
                (Some(5023.13), None, None, None, None),
            ),
            // CPU, eager: no memory line at all.
            (
                "vllm-log/er0080-opt125m-cpu-v0.25.1-no-kv-memory.log",
                (None, None, None, None, None),
            ),
            // Three starts: the first start's buffers only.
            (
                "llamacpp-log/urika-qwen35-9b-metal-q8_0-multistart.log",
                (Some(6224.87), Some(1088.0), None, Some(201.0), Some(649.08)),
            ),
        ];
        for (file, want) in cases {
            let Some(text) = field(test, file) else {
                continue;
            };
            let m = parse_startup_log(&text).device_memory();
            let have = (
                m.weights_mib,
                m.kv_cache_mib,
                m.cuda_graph_mib,
                m.recurrent_state_mib,
                m.compute_mib,
            );
            assert_eq!(have, want, "{file}: {:?}", m.sources);
        }
    }
}
