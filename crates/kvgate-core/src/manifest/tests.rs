//! Tests of the manifest: parsing, digest, validation and diff.

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

use super::validate::*;
use super::*;
use crate::canonical::is_sha256_hex;

const B0_JSON: &str = include_str!("../../../../fixtures/manifests/llama31-8b-h100-b0.json");
const C1_JSON: &str = include_str!("../../../../fixtures/manifests/llama31-8b-h100-c1.json");
const C2_JSON: &str = include_str!("../../../../fixtures/manifests/llama31-8b-h100-c2.json");
const C3_JSON: &str = include_str!("../../../../fixtures/manifests/llama31-8b-h100-c3.json");
const SMOL_B0_JSON: &str = include_str!("../../../../fixtures/manifests/smollm2-135m-cpu-b0.json");
const SMOL_Q8_JSON: &str = include_str!("../../../../fixtures/manifests/smollm2-135m-cpu-q8.json");

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
