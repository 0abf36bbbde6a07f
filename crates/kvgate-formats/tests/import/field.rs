//! What each file real users published must give: the 35 files of `../shared/realdata/field/`
//! (vLLM 0.6 … 0.29 bench results and startup logs, GuideLLM, AIPerf, llama.cpp, Prometheus
//! scrapes, lm-evaluation-harness and Inspect AI logs; provenance in its SOURCES.md). They are
//! public data kept beside the repository, never copied into it: where `../shared` is absent
//! (a user's clone) the table is skipped with a visible line (`shared_data`):
//! "skipped: shared field data not present".
//!
//! The table is the written-down meaning of "right": each row names the file, the format it is
//! imported as, what it gives in words, and the check. Figures were computed independently from
//! the files (Python, not this crate) and are compared exactly, or to the tool's printed
//! precision where the tool rounded.

use kvgate_core::compat::check_compatibility;
use kvgate_core::manifest::Manifest;
use kvgate_core::run::RequestStatus;
use kvgate_formats::import::{self, Granularity, ImportFormat, ParsedImport, ParsedRun};
use kvgate_formats::prometheus::{observed_from_cache_config_info, parse_exposition};
use kvgate_formats::startup_log::{parse_startup_log, StartupEvidence};

use crate::{aggregate, shared_data};

enum Check {
    /// Imported; the function checks the figures.
    Reads(fn(&ParsedImport)),
    /// Refused; the message holds every one of these.
    Refused(&'static [&'static str]),
}

struct Field {
    file: &'static str,
    format: ImportFormat,
    gives: &'static str,
    check: Check,
}

use Check::{Reads, Refused};
use ImportFormat as F;

const FIELD: &[Field] = &[
    // vLLM bench results.
    Field {
        file: "vllm-bench/er0080-opt125m-v0.25.1-c2.json",
        format: F::VllmBench,
        gives: "aggregates only (no per-request arrays): 8 completed, 0 failed, 1.544 s, rate inf",
        check: Reads(bench_c2),
    },
    Field {
        file: "vllm-bench/er0080-opt125m-v0.25.1-all-failed.json",
        format: F::VllmBench,
        gives: "8 failed shown as failed; the 0.0 statistics over zero completed requests absent, with a warning",
        check: Reads(bench_all_failed),
    },
    Field {
        file: "vllm-bench/er0080-opt125m-v0.25.1-sweep-run0.json",
        format: F::VllmBench,
        gives: "aggregates with e2el; the sweep's run_number and max_num_seqs are the tool's keys, not user metadata",
        check: Reads(bench_sweep),
    },
    Field {
        file: "vllm-bench/lambdalabs-llama3-8b-h100-v0.6-detailed.json",
        format: F::VllmBench,
        gives: "10 unclocked per-request rows (no start_times): TTFTs and 189 chunk gaps as the tool's own statistics",
        check: Reads(bench_lambdalabs),
    },
    Field {
        file: "vllm-bench/nv-action-ascend-llama3-8b-fork-latency-only.json",
        format: F::VllmBench,
        gives: "a fork's statistics only: 200 planned at 1.0 rps, no duration, no counts",
        check: Reads(bench_fork),
    },
    // GuideLLM reports.
    Field {
        file: "guidellm/danielkorat-qwen3-4b-tp4-sanity-benchmarks.json",
        format: F::Guidellm,
        gives: "concurrent@4: 4 measured rows, all ok, the tool's latency statistics",
        check: Reads(guidellm_qwen),
    },
    Field {
        file: "guidellm/danielkorat-gpt-oss-20b-tp4-benchmarks.json",
        format: F::Guidellm,
        gives: "30 rows of which 5 (2 warm-up, 3 cool-down) outside the measured window: 25 measured, as the tool's request_totals",
        check: Reads(guidellm_gpt_oss),
    },
    // AIPerf.
    Field {
        file: "aiperf/aiperf-repo-example-run1-20251003-profile_export.jsonl",
        format: F::Aiperf,
        gives: "AIPerf 0.1.1 records (timestamp_ns, ttft): 100 rows, 89 ok, 11 cancelled kept as unfinished",
        check: Reads(aiperf_records),
    },
    Field {
        file: "aiperf/aiperf-repo-example-run1-20251003-profile_export_aiperf.json",
        format: F::Aiperf,
        gives: "refused: the run summary, not the records; names profile_export.jsonl",
        check: Refused(&["AIPerf's run summary", "import profile_export.jsonl"]),
    },
    // Prometheus scrapes.
    Field {
        file: "prometheus/er0080-vllm-0.25.1-opt125m-loaded.prom",
        format: F::Prometheus,
        gives: "one scrape; every vLLM 0.25.1 name known; cache_config_info 400,448 tokens, auto",
        check: Reads(prom_loaded),
    },
    Field {
        file: "prometheus/er0080-vllm-0.25.1-opt125m-idle.prom",
        format: F::Prometheus,
        gives: "one scrape of the idle server; every name known",
        check: Reads(prom_idle),
    },
    // llama.cpp startup logs.
    Field {
        file: "llamacpp-log/acdtrx-gemma4-e4b-metal-f16-iswa.log",
        format: F::LlamacppLog,
        gives: "two KV caches (full 1024 MiB, SWA 40 MiB) both counted: 1064 MiB, 65,536 cells, f16, flash attention on",
        check: Reads(llama_iswa),
    },
    Field {
        file: "llamacpp-log/urika-qwen35-9b-metal-q8_0-multistart.log",
        format: F::LlamacppLog,
        gives: "refused: three server starts in one file, named with their lines",
        check: Refused(&["3 server starts", "lines 669, 3024, 4607", "line 3024"]),
    },
    // vLLM startup logs.
    Field {
        file: "vllm-log/akamaslabs-qwen3-8b-fp8kv-flashinfer-v0.29-mig.log",
        format: F::VllmLog,
        gives: "0.29 wording `Using AttentionBackendEnum.FLASHINFER backend.`, fp8, the combined capacity line, 3 default-scale lines",
        check: Reads(vllm_akamaslabs),
    },
    Field {
        file: "vllm-log/danielkorat-qwen3-4b-xpu-tp4-server.log",
        format: F::VllmLog,
        gives: "XPU `Using Flash Attention backend.` behind colour codes; auto resolved to bfloat16; 561,728 tokens",
        check: Reads(vllm_xpu),
    },
    Field {
        file: "vllm-log/dennislee22-gpt-oss-120b-4xa100-ray.log",
        format: F::VllmLog,
        gives: "`Using Triton backend on V1 engine.` → TRITON_ATTN; 2,640,144 tokens printed 4 times, read once",
        check: Reads(vllm_ray),
    },
    Field {
        file: "vllm-log/dennislee22-qwen2-7b-a100-0.25gram.log",
        format: F::VllmLog,
        gives: "a hard-wrapped engine config: kv_cache_dtype=auto resolved to bfloat16; 93,872 tokens, 5.01 GiB",
        check: Reads(vllm_wrapped),
    },
    Field {
        file: "vllm-log/er0080-opt125m-cpu-v0.25.1-no-kv-memory.log",
        format: F::VllmLog,
        gives: "a failed startup: never valid evidence; the message quotes `EngineCore failed to start`",
        check: Reads(vllm_cpu_failed),
    },
    Field {
        file: "vllm-log/guardkit-nemotron-4b-fp8kv-startup-failed.log",
        format: F::VllmLog,
        gives: "a failed startup: `Available KV cache memory: -2.51 GiB` quoted, no capacity read",
        check: Reads(vllm_negative_memory),
    },
    Field {
        file: "vllm-log/guardkit-nemotron-4b-hybrid-fp8kv-flashinfer-gb10.log",
        format: F::VllmLog,
        gives: "FLASHINFER, fp8, 208,320 tokens, 11.15 GiB, no default-scale line",
        check: Reads(vllm_nemotron),
    },
    Field {
        file: "vllm-log/guardkit-qwen25-14b-fp8kv-flashinfer-gb10.log",
        format: F::VllmLog,
        gives: "FLASHINFER, fp8, 332,672 tokens, 30.46 GiB, 3 default-scale lines",
        check: Reads(vllm_qwen25),
    },
    Field {
        file: "vllm-log/guardkit-qwen35-35b-hybrid-kvauto-flashattn-v0.18.log",
        format: F::VllmLog,
        gives: "the decoder's FLASH_ATTN at line 39, not the ViT line 34; auto → bfloat16; 729,696 tokens",
        check: Reads(vllm_qwen35),
    },
    // lm-evaluation-harness and Inspect AI: recognised and refused by name.
    Field {
        file: "lm-eval/pyfade-gsm8k-gemma3-12b-it-q4km-base-ollama/samples_gsm8k_2025-09-09T13-42-42.857006.jsonl",
        format: F::LmEvalSamples,
        gives: "3 unclocked rows, docs 16, 17, 18 of gsm8k, strict-match, exact_match 1, 0, 1",
        check: Reads(lm_eval_gsm8k),
    },
    Field {
        file: "lm-eval/pyfade-gsm8k-gemma3-12b-it-q4km-base-ollama/results_2025-09-09T13-42-42.857006.json",
        format: F::LmEvalSamples,
        gives: "refused as samples: a results file goes with its samples file",
        check: Refused(LM_EVAL_RESULTS),
    },
    Field {
        file: "lm-eval/pyfade-gsm8k-gemma3-12b-u1-tuned-ollama/samples_gsm8k_2025-09-09T13-31-53.431753.jsonl",
        format: F::Aiperf,
        gives: "refused, named as lm-eval per-sample results",
        check: Refused(LM_EVAL_SAMPLES),
    },
    Field {
        file: "lm-eval/pyfade-gsm8k-gemma3-12b-u1-tuned-ollama/results_2025-09-09T13-31-53.431753.json",
        format: F::Guidellm,
        gives: "refused, named as lm-eval results",
        check: Refused(LM_EVAL_RESULTS),
    },
    Field {
        file: "lm-eval/pyfade-mmlu-pro-plus-gemma-3-12b-it-base-vllm/samples_mmlu_pro_plus_chemistry_2025-10-14T15-11-56.507865.jsonl",
        format: F::LmEvalSamples,
        gives: "3 rows of mmlu_pro_plus_chemistry, docs 0, 6, 7, filter custom-extract, exact_match scored",
        check: Reads(lm_eval_mmlu),
    },
    Field {
        file: "lm-eval/pyfade-mmlu-pro-plus-gemma-3-12b-it-base-vllm/results_2025-10-14T15-11-56.507865.json",
        format: F::VllmBench,
        gives: "refused, named as lm-eval results",
        check: Refused(LM_EVAL_RESULTS),
    },
    Field {
        file: "lm-eval/pyfade-mmlu-pro-plus-gemma3-12b-u2-tuned-vllm/samples_mmlu_pro_plus_chemistry_2025-10-14T14-44-39.372006.jsonl",
        format: F::Jsonl,
        gives: "refused, named as lm-eval per-sample results",
        check: Refused(LM_EVAL_SAMPLES),
    },
    Field {
        file: "lm-eval/pyfade-mmlu-pro-plus-gemma3-12b-u2-tuned-vllm/results_2025-10-14T14-44-39.372006.json",
        format: F::InferencePerf,
        gives: "refused, named as lm-eval results",
        check: Refused(LM_EVAL_RESULTS),
    },
    Field {
        file: "lm-eval/textorpixels-niah-single-1-len500-qwen25-05b-hf/samples_niah_single_1_2025-06-27T15-36-26.531929.jsonl",
        format: F::LmEvalSamples,
        gives: "500 RULER rows at the configured length 500 (the 4096 placeholder -1 is no length)",
        check: Reads(lm_eval_niah_500),
    },
    Field {
        file: "lm-eval/textorpixels-niah-single-1-len1000-qwen25-05b-hf/samples_niah_single_1_2025-06-27T14-58-32.284616.jsonl",
        format: F::Aiperf,
        gives: "refused, named as lm-eval per-sample results (500 RULER rows)",
        check: Refused(LM_EVAL_SAMPLES),
    },
    Field {
        file: "inspect/eee-arc-easy-ollama-qwen25-05b.json",
        format: F::Inspect,
        gives: "3 samples of inspect_evals/arc_easy, ids 1, 2, 3, choice C, I, I",
        check: Reads(inspect_arc_qwen),
    },
    Field {
        file: "inspect/eee-arc-easy-claude-sonnet-4-0.json",
        format: F::VllmBench,
        gives: "refused, named as an Inspect AI log",
        check: Refused(INSPECT_JSON),
    },
    Field {
        file: "inspect/inspectai-popularity-ollama-gemma3-log_read_sample.eval",
        format: F::Inspect,
        gives: "the .eval archive: 1 sample of popularity, id 1, match C",
        check: Reads(inspect_popularity),
    },
];

const LM_EVAL_SAMPLES: &[&str] = &[
    "lm-evaluation-harness per-sample results",
    "import it with --format lm-eval-samples",
];
const LM_EVAL_RESULTS: &[&str] = &[
    "lm-evaluation-harness results",
    "with its samples file, --format lm-eval-samples",
];
const INSPECT_JSON: &[&str] = &["an Inspect AI log (JSON", "import it with --format inspect"];

/// One harness row as read: (item id, filter, scores).
type HarnessRowRead = (String, String, Vec<(String, Option<f64>)>);

/// The harness rows of a parsed harness file.
fn harness_rows(p: &ParsedImport) -> Vec<HarnessRowRead> {
    let run = &p.runs[0];
    assert!(!run.clocked, "harness rows carry no timing");
    assert_eq!(run.harness.len(), run.requests.len());
    run.requests
        .iter()
        .zip(&run.harness)
        .map(|(r, h)| {
            assert!(r.prompt_sha256.as_ref().is_some_and(|d| d.len() == 64));
            (
                r.item_id.clone().unwrap(),
                h.scored.filter.clone(),
                h.scored.scores.clone(),
            )
        })
        .collect()
}

fn lm_eval_gsm8k(p: &ParsedImport) {
    let rows = harness_rows(p);
    let ids: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        ids,
        ["lm-eval:gsm8k:16", "lm-eval:gsm8k:17", "lm-eval:gsm8k:18"]
    );
    for (i, v) in [1.0, 0.0, 1.0].into_iter().enumerate() {
        assert_eq!(rows[i].1, "strict-match");
        assert_eq!(rows[i].2, vec![("exact_match".to_owned(), Some(v))]);
    }
    assert!(p.runs[0].requests[0].output_text.contains("#### 230"));
}

fn lm_eval_mmlu(p: &ParsedImport) {
    let rows = harness_rows(p);
    let ids: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        ids,
        [
            "lm-eval:mmlu_pro_plus_chemistry:0",
            "lm-eval:mmlu_pro_plus_chemistry:6",
            "lm-eval:mmlu_pro_plus_chemistry:7"
        ]
    );
    assert!(rows.iter().all(|r| r.1 == "custom-extract"));
    assert!(rows
        .iter()
        .all(|r| r.2[0].0 == "exact_match" && r.2[0].1.is_some()));
}

fn lm_eval_niah_500(p: &ParsedImport) {
    let rows = harness_rows(p);
    assert_eq!(rows.len(), 500);
    assert_eq!(rows[0].0, "lm-eval:niah_single_1@500:0");
    assert_eq!(rows[499].0, "lm-eval:niah_single_1@500:499");
    // Every row: 4096 not run (-1), 500 scored 1 (the SOURCES.md count).
    assert!(rows.iter().all(|r| r.2
        == vec![
            ("4096".to_owned(), Some(-1.0)),
            ("500".to_owned(), Some(1.0))
        ]));
    // The reviewer's view: the target (a Python list repr, `['3336625']` in row 0) names the
    // needle, and every row's needle stands in its prompt.
    let run = &p.runs[0];
    assert_eq!(run.harness[0].reference.target, "['3336625']");
    for (i, h) in run.harness.iter().enumerate() {
        let needles = kvgate_core::harness::target_needles(&h.reference.target);
        assert!(
            !needles.is_empty(),
            "row {i}: target {:?}",
            h.reference.target
        );
        assert!(
            needles
                .iter()
                .all(|n| h.reference.prompt.contains(n.as_str())),
            "row {i}: {needles:?} not in its prompt"
        );
    }
}

fn inspect_arc_qwen(p: &ParsedImport) {
    let rows = harness_rows(p);
    let ids: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        ids,
        [
            "inspect:inspect_evals/arc_easy:1",
            "inspect:inspect_evals/arc_easy:2",
            "inspect:inspect_evals/arc_easy:3"
        ]
    );
    let values: Vec<Option<f64>> = rows.iter().map(|r| r.2[0].1).collect();
    assert_eq!(values, [Some(1.0), Some(0.0), Some(0.0)], "C, I, I");
    assert!(rows.iter().all(|r| r.2[0].0 == "choice"));
    assert_eq!(
        p.tool.as_deref(),
        Some("inspect_ai 0.3.138.dev45+g23fb0e7e")
    );
    assert!(p.runs[0].requests[0].output_text.starts_with("ANSWER: A"));
}

fn inspect_popularity(p: &ParsedImport) {
    let rows = harness_rows(p);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].0, "inspect:popularity:1");
    assert_eq!(rows[0].2, vec![("match".to_owned(), Some(1.0))]);
}

#[test]
fn every_field_file_gives_what_the_table_says() {
    let Some(root) = shared_data("every_field_file_gives_what_the_table_says", "field") else {
        return;
    };
    assert_eq!(FIELD.len(), 35, "one row per file of SOURCES.md");
    let mut listed: Vec<String> = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if dir.is_dir() {
            walk(&dir, &root, &mut listed);
        }
    }
    listed.sort();
    let mut tabled: Vec<String> = FIELD.iter().map(|f| f.file.to_owned()).collect();
    tabled.sort();
    assert_eq!(tabled, listed, "the table covers every field file, once");

    for row in FIELD {
        let path = root.join(row.file);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", row.file));
        let outcome = import::parse(row.format, row.file, &bytes[..]);
        match (&row.check, outcome) {
            (Reads(check), Ok(parsed)) => check(&parsed),
            (Reads(_), Err(e)) => panic!("{} ({}): refused: {e}", row.file, row.gives),
            (Refused(words), Err(e)) => {
                let message = e.to_string();
                assert!(message.starts_with(row.file), "{message}");
                for word in *words {
                    assert!(
                        message.contains(word),
                        "{} ({}): `{word}` not in: {message}",
                        row.file,
                        row.gives
                    );
                }
            }
            (Refused(_), Ok(_)) => panic!("{} ({}): imported", row.file, row.gives),
        }
    }
}

fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, root, out);
        } else {
            out.push(
                path.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
}

fn one(parsed: &ParsedImport) -> &ParsedRun {
    assert_eq!(parsed.runs.len(), 1);
    &parsed.runs[0]
}

fn value(run: &ParsedRun, name: &str) -> f64 {
    aggregate(run, name, "value").value
}

fn has(run: &ParsedRun, name: &str, stat: &str) -> bool {
    run.aggregates
        .iter()
        .any(|a| a.name == name && a.stat == stat)
}

fn warned(parsed: &ParsedImport, at: &str, words: &str) -> bool {
    parsed
        .warnings
        .iter()
        .any(|w| w.at == at && w.message.contains(words))
}

/// Equal to the tool's own figure within `rel` (relative).
fn close(found: f64, expected: f64, rel: f64) -> bool {
    (found - expected).abs() <= rel * expected.abs().max(1e-300)
}

fn bench_c2(p: &ParsedImport) {
    let run = one(p);
    assert_eq!(run.granularity, Granularity::Aggregate);
    assert!(run.requests.is_empty());
    assert_eq!(run.planned, Some(8));
    assert_eq!(run.label, "vllm bench serve · rate inf");
    assert_eq!(run.elapsed_ms, Some(1.5441598830002476 * 1000.0));
    assert_eq!(value(run, "completed"), 8.0);
    assert_eq!(value(run, "failed"), 0.0);
    assert_eq!(value(run, "total_input_tokens"), 256.0);
    assert_eq!(value(run, "total_output_tokens"), 128.0);
    assert_eq!(run.config["max_concurrency"], 2);
    assert!(has(run, "ttft", "p99"));
    assert!(run.metadata.is_empty(), "{:?}", run.metadata);
}

fn bench_all_failed(p: &ParsedImport) {
    let run = one(p);
    assert_eq!(run.granularity, Granularity::Aggregate);
    assert_eq!(value(run, "completed"), 0.0);
    assert_eq!(value(run, "failed"), 8.0);
    for (name, stat) in [("ttft", "mean"), ("itl", "p99"), ("tpot", "median")] {
        assert!(
            !has(run, name, stat),
            "{name} {stat}: a placeholder, not a figure"
        );
    }
    for key in ["request_throughput", "output_throughput", "rtfx"] {
        assert!(!has(run, key, "value"), "{key}");
    }
    assert!(
        warned(p, "$.completed", "17 statistic(s)"),
        "{:?}",
        p.warnings
    );
    assert!(warned(p, "$.completed", "(8 failed)"));
    assert_eq!(
        value(run, "duration"),
        0.00503263997961767,
        "a duration is no placeholder"
    );
}

fn bench_sweep(p: &ParsedImport) {
    let run = one(p);
    assert_eq!(aggregate(run, "e2el", "mean").value, 340.3411977451469);
    assert_eq!(value(run, "run_number"), 0.0);
    assert_eq!(value(run, "max_num_seqs"), 4.0);
    assert!(run.metadata.is_empty(), "{:?}", run.metadata);
}

fn bench_lambdalabs(p: &ParsedImport) {
    let run = one(p);
    assert_eq!(run.granularity, Granularity::PerRequest);
    assert!(!run.clocked, "no start_times: unclocked");
    assert_eq!(run.requests.len(), 10);
    assert!(run.requests.iter().all(|r| r.status == RequestStatus::Ok));
    assert!(run.requests.iter().all(|r| r.dispatch_ms == Some(0.0)));
    assert!(
        run.requests.iter().all(|r| r.finish_ms.is_none()),
        "no latencies"
    );
    let chunks: usize = run.requests.iter().map(|r| r.chunk_times_ms.len()).sum();
    assert_eq!(
        chunks,
        10 + 189,
        "a first token and one chunk per itls entry"
    );
    // The rows reproduce the tool's own TTFT statistics.
    let mut ttfts: Vec<f64> = run.requests.iter().map(|r| r.ttft_ms().unwrap()).collect();
    let mean = ttfts.iter().sum::<f64>() / ttfts.len() as f64;
    assert!(close(mean, aggregate(run, "ttft", "mean").value, 1e-12));
    assert!(close(mean, 62.426355000934564, 1e-12));
    ttfts.sort_by(f64::total_cmp);
    assert!(close((ttfts[4] + ttfts[5]) / 2.0, 62.1947320032632, 1e-12));
    assert_eq!(aggregate(run, "latency", "mean").value, 1431.7765221989248);
    assert_eq!(
        value(run, "input_throughput"),
        run.config["input_throughput"].as_f64().unwrap()
    );
    assert!(warned(p, "$.start_times", "unclocked"));
    assert!(warned(p, "$.latencies", "no `latencies`"));
    assert!(!warned(p, "$.ttfts", "without a TTFT"), "{:?}", p.warnings);
    assert!(run.metadata.is_empty(), "{:?}", run.metadata);
}

fn bench_fork(p: &ParsedImport) {
    let run = one(p);
    assert_eq!(run.granularity, Granularity::Aggregate);
    assert_eq!(run.planned, Some(200));
    assert_eq!(run.label, "vllm bench serve · rate 1.0");
    assert_eq!(run.elapsed_ms, None);
    assert_eq!(aggregate(run, "ttft", "mean").value, 111.23647520318627);
    assert!(!has(run, "completed", "value"));
}

fn guidellm_qwen(p: &ParsedImport) {
    assert_eq!(p.tool.as_deref(), Some("guidellm 0.5.0.dev0"));
    let run = one(p);
    assert_eq!(run.label, "guidellm · concurrent@4 streams");
    assert_eq!(run.requests.len(), 4);
    assert!(
        run.unmeasured.is_empty(),
        "both window bounds are inclusive"
    );
    assert!(run.requests.iter().all(|r| r.status == RequestStatus::Ok));
    assert_eq!(
        aggregate(run, "metrics.request_latency.successful", "mean").value,
        24.90865981578827
    );
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

fn guidellm_gpt_oss(p: &ParsedImport) {
    let run = one(p);
    assert_eq!(run.label, "guidellm · synchronous");
    assert_eq!(run.requests.len(), 30);
    assert_eq!(run.unmeasured, [0, 1, 27, 28, 29]);
    let measured: Vec<_> = run
        .requests
        .iter()
        .filter(|r| !run.unmeasured.contains(&r.index))
        .collect();
    assert_eq!(measured.len(), 25);
    assert_eq!(
        aggregate(run, "metrics.request_totals.successful", "value").value,
        25.0
    );
    // The 25 measured rows give the tool's own latency total.
    let total: f64 = measured.iter().map(|r| r.e2e_ms().unwrap()).sum();
    assert!(close(total / 1000.0, 766.1037046909332, 1e-9), "{total}");
    assert!(warned(
        p,
        "$.benchmarks[0].requests",
        "2 warm-up, 3 cool-down"
    ));
    assert!(!p
        .warnings
        .iter()
        .any(|w| w.message.contains("samples rows")));
}

fn aiperf_records(p: &ParsedImport) {
    let run = one(p);
    assert_eq!(run.label, "aiperf · profiling");
    assert_eq!(run.requests.len(), 100);
    let ok: Vec<_> = run
        .requests
        .iter()
        .filter(|r| r.status == RequestStatus::Ok)
        .collect();
    assert_eq!(ok.len(), 89);
    let cancelled = run
        .requests
        .iter()
        .filter(|r| r.status == RequestStatus::Unfinished)
        .count();
    assert_eq!(cancelled, 11, "RequestCancellationError: cancelled, kept");
    let mean = |f: &dyn Fn(&kvgate_core::run::RequestRecord) -> f64| {
        ok.iter().map(|r| f(r)).sum::<f64>() / ok.len() as f64
    };
    // The summary (profile_export_aiperf.json) of the same run: ttft avg, request_latency avg.
    assert!(close(
        mean(&|r| r.ttft_ms().unwrap()),
        2343.219436988764,
        1e-12
    ));
    assert!(close(
        mean(&|r| r.e2e_ms().unwrap()),
        9059.654633033708,
        1e-9
    ));
}

fn prom_loaded(p: &ParsedImport) {
    let run = one(p);
    assert_eq!(run.scrapes.len(), 1);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
    let exp = parse_exposition(&run.scrapes[0].text).unwrap();
    let o = observed_from_cache_config_info(&exp).unwrap();
    assert_eq!(o.kv_cache_tokens, Some(400_448));
    assert_eq!(o.kv_cache_dtype.as_deref(), Some("auto"));
    let values = kvgate_core::metrics::normalize(
        kvgate_core::metrics::EngineProfile::Vllm,
        exp.samples
            .iter()
            .map(|s| (s.name.as_str(), &s.labels, s.value)),
    );
    use kvgate_core::metrics::CanonicalMetric as M;
    assert_eq!(values[&M::KvCacheUsage], 0.11223878211531546);
    assert_eq!(values[&M::RequestsRunning], 64.0);
    assert_eq!(values[&M::RequestsWaiting], 64.0);
    assert_eq!(values[&M::PreemptionsTotal], 0.0);
}

fn prom_idle(p: &ParsedImport) {
    let run = one(p);
    assert_eq!(run.scrapes.len(), 1);
    assert!(p.warnings.is_empty(), "{:?}", p.warnings);
}

/// The startup evidence of an imported log.
fn evidence(p: &ParsedImport) -> StartupEvidence {
    let run = one(p);
    assert_eq!(run.granularity, Granularity::Evidence);
    let read = run.evidence[0]
        .startup
        .clone()
        .expect("read once by the parser");
    assert_eq!(read, parse_startup_log(&run.evidence[0].text));
    read
}

fn llama_iswa(p: &ParsedImport) {
    let ev = evidence(p);
    assert_eq!(ev.starts, [23]);
    assert_eq!(ev.llama_kv_cache.as_ref().unwrap().line, 199);
    assert_eq!(ev.more_llama_kv_caches.len(), 1);
    assert_eq!(ev.more_llama_kv_caches[0].line, 204);
    assert_eq!(ev.model.as_ref().unwrap().value, "Gemma-4-E4B-It");
    let o = ev.observed();
    assert_eq!(o.kv_cache_mib, Some(1064.0));
    assert_eq!(o.kv_cells, Some(65_536));
    assert_eq!(o.k_cache_dtype.as_deref(), Some("f16"));
    assert_eq!(o.flash_attention, Some(true));
    assert!(o.conflicts.is_empty());
}

fn c1() -> Manifest {
    Manifest::from_json(include_str!(
        "../../../../fixtures/manifests/llama31-8b-h100-c1.json"
    ))
    .unwrap()
}

fn vllm_akamaslabs(p: &ParsedImport) {
    let ev = evidence(p);
    let backend = ev.attention_backend.as_ref().unwrap();
    assert_eq!(backend.value, "FLASHINFER");
    assert!(backend
        .text
        .ends_with("Using AttentionBackendEnum.FLASHINFER backend."));
    assert_eq!(ev.kv_cache_dtype.as_ref().unwrap().value, "fp8");
    assert_eq!(ev.kv_cache_tokens.as_ref().unwrap().value, 28_784);
    assert_eq!(ev.max_concurrency.as_ref().unwrap().value, (4096, 7.03));
    assert_eq!(ev.available_kv_cache_gib.as_ref().unwrap().value, 1.98);
    assert_eq!(ev.engine_version.as_ref().unwrap().value, "0.29.0");
    assert_eq!(ev.model.as_ref().unwrap().value, "Qwen/Qwen3-8B-FP8");
    assert_eq!(ev.default_scale_lines.len(), 3);
    assert!(ev.startup_failure.is_none());
    // The admission limit from vLLM's own non-default args, not the wrapper's config line.
    let limit = ev.max_sequences.as_ref().unwrap();
    assert_eq!(limit.value, 256);
    assert!(limit.text.contains("non-default args:"), "{}", limit.text);
}

fn vllm_xpu(p: &ParsedImport) {
    let ev = evidence(p);
    let backend = ev.attention_backend.as_ref().unwrap();
    assert_eq!((backend.value.as_str(), backend.line), ("FLASH_ATTN", 93));
    assert!(!backend.text.contains('\u{1b}'), "colour codes stripped");
    let dtype = ev.kv_cache_dtype.as_ref().unwrap();
    assert_eq!(
        (dtype.value.as_str(), dtype.line),
        ("bfloat16", 41),
        "auto → dtype"
    );
    assert_eq!(ev.kv_cache_tokens.as_ref().unwrap().value, 561_728);
    assert_eq!(ev.max_concurrency.as_ref().unwrap().value, (2048, 274.28));
    assert!(ev.available_kv_cache_gib.is_none());
    assert_eq!(
        ev.engine_version.as_ref().unwrap().value,
        "0.1.dev12986+gfa99ccebd"
    );
}

fn vllm_ray(p: &ParsedImport) {
    let ev = evidence(p);
    let backend = ev.attention_backend.as_ref().unwrap();
    assert_eq!((backend.value.as_str(), backend.line), ("TRITON_ATTN", 76));
    let tokens = ev.kv_cache_tokens.as_ref().unwrap();
    assert_eq!((tokens.value, tokens.line), (2_640_144, 108));
    assert_eq!(ev.available_kv_cache_gib.as_ref().unwrap().value, 45.32);
    assert_eq!(ev.kv_cache_dtype.as_ref().unwrap().value, "bfloat16");
    assert_eq!(ev.model.as_ref().unwrap().value, "gpt-oss-120b");
}

fn vllm_wrapped(p: &ParsedImport) {
    let ev = evidence(p);
    assert_eq!(ev.attention_backend.as_ref().unwrap().value, "FLASH_ATTN");
    let dtype = ev.kv_cache_dtype.as_ref().unwrap();
    assert_eq!(
        dtype.value, "bfloat16",
        "read across the wrapped config lines"
    );
    assert_eq!(ev.kv_cache_tokens.as_ref().unwrap().value, 93_872);
    assert_eq!(ev.available_kv_cache_gib.as_ref().unwrap().value, 5.01);
    assert_eq!(ev.max_concurrency.as_ref().unwrap().value, (16_384, 5.73));
    assert_eq!(ev.engine_version.as_ref().unwrap().value, "0.10.1.1");
}

fn vllm_cpu_failed(p: &ParsedImport) {
    let ev = evidence(p);
    let failure = ev.startup_failure.as_ref().unwrap();
    assert_eq!(failure.line, 38);
    assert!(failure.text.ends_with("EngineCore failed to start."));
    assert!(ev.attention_backend.is_none() && ev.kv_cache_tokens.is_none());
    assert_eq!(ev.max_sequences.as_ref().unwrap().value, 4);
    let v = check_compatibility(&c1(), Some(&ev.observed()));
    assert!(!v.valid);
    let startup = v.problems.iter().find(|p| p.field == "startup").unwrap();
    assert!(startup.found.contains("line 38"), "{startup:?}");
    assert!(startup.reason.contains("failed to start"));
}

fn vllm_negative_memory(p: &ParsedImport) {
    let ev = evidence(p);
    let failure = ev.startup_failure.as_ref().unwrap();
    assert_eq!(failure.line, 77);
    assert!(failure
        .text
        .ends_with("Available KV cache memory: -2.51 GiB"));
    assert!(
        ev.available_kv_cache_gib.is_none(),
        "a negative budget is no capacity"
    );
    assert!(ev.kv_cache_tokens.is_none());
    // FP8 announced and a backend chosen: still never valid.
    assert_eq!(ev.kv_cache_dtype.as_ref().unwrap().value, "fp8");
    let v = check_compatibility(&c1(), Some(&ev.observed()));
    assert!(v.problems.iter().any(|p| p.field == "startup"));
}

fn vllm_nemotron(p: &ParsedImport) {
    let ev = evidence(p);
    assert_eq!(ev.attention_backend.as_ref().unwrap().value, "FLASHINFER");
    assert_eq!(ev.kv_cache_dtype.as_ref().unwrap().value, "fp8");
    assert_eq!(ev.kv_cache_tokens.as_ref().unwrap().value, 208_320);
    assert_eq!(ev.available_kv_cache_gib.as_ref().unwrap().value, 11.15);
    assert_eq!(ev.max_concurrency.as_ref().unwrap().value, (8192, 98.20));
    assert!(ev.default_scale_lines.is_empty());
    assert!(ev.startup_failure.is_none());
}

fn vllm_qwen25(p: &ParsedImport) {
    let ev = evidence(p);
    let backend = ev.attention_backend.as_ref().unwrap();
    assert_eq!((backend.value.as_str(), backend.line), ("FLASHINFER", 52));
    assert_eq!(ev.kv_cache_dtype.as_ref().unwrap().line, 36);
    assert_eq!(ev.kv_cache_tokens.as_ref().unwrap().value, 332_672);
    assert_eq!(ev.available_kv_cache_gib.as_ref().unwrap().value, 30.46);
    let lines: Vec<usize> = ev.default_scale_lines.iter().map(|l| l.line).collect();
    assert_eq!(lines, [61, 62, 63]);
    // A C1 cell with default scales: the log confirms fp8 and the backend family it names.
    let o = ev.observed();
    assert_eq!(o.default_scale_lines.len(), 3);
}

fn vllm_qwen35(p: &ParsedImport) {
    let ev = evidence(p);
    let backend = ev.attention_backend.as_ref().unwrap();
    assert_eq!((backend.value.as_str(), backend.line), ("FLASH_ATTN", 39));
    let dtype = ev.kv_cache_dtype.as_ref().unwrap();
    assert_eq!((dtype.value.as_str(), dtype.line), ("bfloat16", 24));
    assert_eq!(ev.kv_cache_tokens.as_ref().unwrap().value, 729_696);
    assert_eq!(ev.available_kv_cache_gib.as_ref().unwrap().value, 55.72);
    assert_eq!(ev.max_concurrency.as_ref().unwrap().value, (262_144, 10.85));
    assert_eq!(
        ev.engine_version.as_ref().unwrap().value,
        "0.18.1rc1.dev147+g290809456"
    );
}

/// Every vLLM result real users published reads the same laid out and streamed column by column
/// as read whole: the same runs, records and warnings.
#[test]
fn every_field_vllm_result_streams_to_what_the_whole_file_parse_gives() {
    use kvgate_formats::import::vllm_bench::stream::scan;
    let Some(dir) = shared_data(
        "every_field_vllm_result_streams_to_what_the_whole_file_parse_gives",
        "field/vllm-bench",
    ) else {
        return;
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let source = import::Source::new(&name);
        let whole = import::vllm_bench::parse(&source, &bytes[..]);
        let file = scan(&source, &bytes[..]).unwrap();
        let Some(file) = file else {
            assert!(
                whole.is_err(),
                "{name}: the scan gave up on a file the parser reads"
            );
            continue;
        };
        let whole = whole.unwrap();
        let mut records = Vec::new();
        let mut read = Vec::new();
        for k in 0..file.import.runs.len() {
            let mut rows = file.rows(k, &path).unwrap();
            for row in rows.by_ref() {
                records.push(row.unwrap());
            }
            read.push(rows.finish().unwrap());
        }
        let expected: Vec<_> = whole.runs.iter().flat_map(|r| r.requests.clone()).collect();
        assert_eq!(records.len(), expected.len(), "{name}");
        assert!(records == expected, "{name}: other records");
        assert_eq!(file.warnings(&read), whole.warnings, "{name}");
        for (a, b) in file.import.runs.iter().zip(&whole.runs) {
            assert_eq!(
                (&a.label, &a.config, a.granularity, a.clocked),
                (&b.label, &b.config, b.granularity, b.clocked),
                "{name}"
            );
        }
        eprintln!("{name}: {} rows streamed as parsed", records.len());
    }
}
