//! Startup logs of vLLM and llama.cpp: what the engine actually ran (attention backend, KV
//! dtype, scale signatures, KV capacity), each finding with the line it came from. This is the
//! compatibility evidence compared with a cell's manifest.
//!
//! Lines carry engine-specific prefixes (timestamps, levels, process names), so every pattern is
//! searched anywhere in the line, never anchored at its start.

use kvgate_core::compat::ObservedEngine;
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
    #[ts(type = "number")]
    pub cells: u64,
    pub layers: u32,
    pub seqs: String,
    pub k_type: String,
    pub k_mib: f64,
    pub v_type: String,
    pub v_mib: f64,
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
    /// vLLM `Available KV cache memory: X GiB`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_kv_cache_gib: Option<Found<f64>>,
    /// vLLM `GPU KV cache size: N tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<Found<f64>>")]
    pub kv_cache_tokens: Option<Found<u64>>,
    /// vLLM `Maximum concurrency for N tokens per request: X.XXx`: (tokens per request, factor).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<Found<(f64, f64)>>")]
    pub max_concurrency: Option<Found<(u64, f64)>>,
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
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim();
        if let Some(rest) = after(trimmed, "Using ") {
            if let Some(backend) = rest.strip_suffix_at(" attention backend") {
                ev.attention_backend
                    .get_or_insert(at(backend.trim().to_owned(), line, trimmed));
            }
        }
        if trimmed.contains("Using Flash Attention backend") {
            ev.attention_backend
                .get_or_insert(at("FLASH_ATTN".to_owned(), line, trimmed));
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
            if let Ok(v) = leading_number(rest.trim()).replace(',', "").parse() {
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
        if let Some(kv) = parse_llama_kv_cache(trimmed) {
            ev.kv_cache_dtype
                .get_or_insert(at(kv.k_type.clone(), line, trimmed));
            ev.llama_kv_cache.get_or_insert(at(kv, line, trimmed));
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
                    ev.attention_backend
                        .get_or_insert(at("flash_attn".to_owned(), line, trimmed));
                }
            }
        }
        if DEFAULT_SCALE_SIGNATURES.iter().any(|s| trimmed.contains(s)) {
            ev.default_scale_lines
                .push(at(trimmed.to_owned(), line, trimmed));
        }
    }
    ev
}

impl StartupEvidence {
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
        if let Some(kv) = &self.llama_kv_cache {
            o.k_cache_dtype = Some(kv.value.k_type.clone());
            o.v_cache_dtype = Some(kv.value.v_type.clone());
            o.kv_cache_mib = Some(kv.value.size_mib);
            o.kv_cells = Some(kv.value.cells);
            source(
                "k_cache_dtype, v_cache_dtype, kv_cache_mib, kv_cells",
                kv.line,
            );
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
        assert_eq!(
            f16.sources,
            [
                "attention_backend: startup log line 140",
                "flash_attention: startup log line 140",
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
}
