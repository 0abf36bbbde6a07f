//! The validation rules of a manifest: every field of one bundle, then the rules of a study's
//! set of cells.

use std::collections::BTreeSet;

use super::*;
use crate::canonical::is_sha256_hex;

impl Manifest {
    pub(super) fn non_finite_numbers(&self) -> Vec<String> {
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

/// [`validate_cell_set`] for the frozen manifests of a study that may not have frozen its B0
/// yet: a candidate may be frozen first; every other set rule applies.
pub fn validate_frozen_set(manifests: &[Manifest]) -> Vec<ManifestProblem> {
    let has_b0 = manifests.iter().any(|m| m.cell == "B0");
    validate_cell_set(manifests)
        .into_iter()
        .filter(|p| has_b0 || !(p.path == "$" && p.found == "0"))
        .collect()
}
