//! Where each imported run lands: the operating point read from the file (the offered load and
//! the client's own in-flight cap), never guessed, and the warning when the file records none.
//! Real recorded files (`fixtures/real-tools/`), the field files (`../shared/realdata/field/`,
//! skipped visibly where absent: `shared_data` prints "skipped: shared field data not present")
//! and synthetic variants, labelled so.

use std::path::{Path, PathBuf};

use kvgate_core::operating_point::{imported_point, ImportedPoint, OfferedLoad};
use kvgate_formats::import::{self, aiperf, ImportFormat, ParsedImport, UNKNOWN_POINT};

use crate::shared_data;

fn recorded(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real-tools")
        .join(relative)
}

/// Parses a file and notes unknown points, the way the app does (for AIPerf with the run
/// summary beside the export when `with_summary`).
fn import(format: ImportFormat, path: &Path, with_summary: bool) -> ParsedImport {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut parsed = import::parse(format, &name, &bytes[..]).unwrap_or_else(|e| panic!("{e}"));
    if with_summary {
        let summary = path.with_file_name(aiperf::SUMMARY_FILE);
        let text = std::fs::read_to_string(&summary).unwrap();
        let source = import::Source::new(summary.display().to_string());
        let config = aiperf::summary_input_config(&source, &text).unwrap();
        aiperf::attach_summary(
            &mut parsed,
            aiperf::SUMMARY_FILE,
            "0".repeat(64).as_str(),
            &config,
        );
    }
    import::note_unknown_points(&mut parsed, &name);
    parsed
}

fn points(p: &ParsedImport) -> Vec<ImportedPoint> {
    p.runs.iter().map(|r| imported_point(&r.config)).collect()
}

fn rate(per_s: f64, client_concurrency: Option<u32>) -> ImportedPoint {
    ImportedPoint {
        offered: OfferedLoad::Rate { per_s },
        client_concurrency,
    }
}

fn unknown_noted(p: &ParsedImport) -> Vec<&str> {
    p.warnings
        .iter()
        .filter(|w| w.message.contains(UNKNOWN_POINT))
        .map(|w| w.at.as_str())
        .collect()
}

/// GuideLLM 0.8.1 wrote one report with two constant-rate benchmarks (0.3 and 0.6 /s, its
/// default in-flight cap 10240): two runs, each on its own rate, the cap kept as the client's.
#[test]
fn a_guidellm_report_of_two_rates_is_two_runs_on_two_points() {
    for kv in ["f16", "q8_0"] {
        let path = recorded(&format!("guidellm-0.8.1/{kv}/out/benchmarks.json"));
        let p = import(ImportFormat::Guidellm, &path, false);
        assert_eq!(
            points(&p),
            [rate(0.3, Some(10240)), rate(0.6, Some(10240))],
            "{kv}"
        );
        assert!(unknown_noted(&p).is_empty(), "{:?}", p.warnings);
    }
}

/// AIPerf 0.13.0's export holds no load settings: alone, both phases are unknown points and the
/// import says so for each; with `profile_export_aiperf.json` beside it, both are the closed
/// loop of 2 the command line set (`--concurrency 2`, no rate), and nothing is said.
#[test]
fn aiperf_runs_take_their_point_from_the_summary_beside_the_export() {
    let path = recorded("aiperf-0.13.0/f16/out/profile_export.jsonl");
    let alone = import(ImportFormat::Aiperf, &path, false);
    assert_eq!(alone.runs.len(), 2, "warmup and profiling");
    assert!(points(&alone)
        .iter()
        .all(|p| p.offered == OfferedLoad::Unknown));
    let noted: Vec<_> = alone
        .warnings
        .iter()
        .filter(|w| w.message.contains(UNKNOWN_POINT))
        .collect();
    assert_eq!(noted.len(), 2);
    assert_eq!(noted[1].rows, 12, "the profiling phase's 12 requests");
    assert!(noted[1]
        .message
        .starts_with("profile_export.jsonl, aiperf · profiling"));
    assert!(noted[1]
        .message
        .contains("profile_export_aiperf.json beside the export"));

    let with = import(ImportFormat::Aiperf, &path, true);
    let closed = ImportedPoint {
        offered: OfferedLoad::Concurrency { requests: 2 },
        client_concurrency: None,
    };
    assert_eq!(points(&with), [closed.clone(), closed]);
    assert!(unknown_noted(&with).is_empty());
    assert_eq!(
        with.runs[1].config["aiperf_summary"]["file"],
        aiperf::SUMMARY_FILE
    );
}

/// A malformed summary is an error naming it and the key, not a silent unknown point.
#[test]
fn a_summary_without_its_input_config_is_named() {
    // Synthetic.
    let source = import::Source::new("out/profile_export_aiperf.json");
    let err = aiperf::summary_input_config(&source, r#"{"records": {}}"#)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "out/profile_export_aiperf.json, $.input_config, field `input_config`: expected AIPerf's run configuration, found no `input_config` key"
    );
    let err = aiperf::summary_input_config(&source, r#"{"input_config": [1]}"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("expected an object") && err.contains("found an array"),
        "{err}"
    );
}

/// inference-perf 0.7.0's stage reports carry their requested rate (0.3, 0.6 /s); its per-request
/// report spans every stage and states none: an unknown point, said, never an average rate.
#[test]
fn inference_perf_stages_are_at_their_requested_rate_and_the_request_report_is_unknown() {
    let stage = |n: u32| {
        let path = recorded(&format!(
            "inference-perf-0.7.0/f16/out/stage_{n}_lifecycle_metrics.json"
        ));
        points(&import(ImportFormat::InferencePerf, &path, false))
    };
    assert_eq!(stage(0), [rate(0.3, None)]);
    assert_eq!(stage(1), [rate(0.6, None)]);
    let path = recorded("inference-perf-0.7.0/f16/out/per_request_lifecycle_metrics.json");
    let p = import(ImportFormat::InferencePerf, &path, false);
    assert_eq!(points(&p)[0].offered, OfferedLoad::Unknown);
    assert_eq!(unknown_noted(&p), ["$"]);
    assert_eq!(
        p.warnings
            .iter()
            .find(|w| w.message.contains(UNKNOWN_POINT))
            .unwrap()
            .rows,
        15
    );
}

/// vLLM bench results: the rate from `request_rate`, `max_concurrency` the client cap beside it,
/// `"inf"` all at once; a result with request rows and no `request_rate` is said to be unknown
/// (synthetic), one per appended result, at its own path.
#[test]
fn vllm_bench_results_say_their_rate_and_an_absent_one_is_warned() {
    let text = concat!(
        r#"{"request_rate": 2.0, "max_concurrency": 4, "start_times": [1.0], "latencies": [0.5], "errors": [""]}"#,
        "\n",
        r#"{"start_times": [1.0], "latencies": [0.5], "errors": [""]}"#,
        "\n",
        r#"{"request_rate": "inf", "max_concurrency": null, "start_times": [1.0], "latencies": [0.5], "errors": [""]}"#,
        "\n"
    );
    let mut p = import::parse(ImportFormat::VllmBench, "sweep.jsonl", text.as_bytes()).unwrap();
    import::note_unknown_points(&mut p, "sweep.jsonl");
    assert_eq!(
        points(&p),
        [
            rate(2.0, Some(4)),
            ImportedPoint {
                offered: OfferedLoad::Unknown,
                client_concurrency: None
            },
            ImportedPoint {
                offered: OfferedLoad::Unbounded,
                client_concurrency: None
            },
        ]
    );
    assert_eq!(unknown_noted(&p), ["result 2: $.request_rate"]);
}

/// The field files: the sweep's run (`inf`, `--max-concurrency 2`, server `max_num_seqs` 4) is
/// all at once with a client cap of 2, never a closed loop and never the admission limit; the
/// older results keep their rate; GuideLLM's synchronous and concurrent@4 benchmarks are closed
/// loops; the AIPerf example (`--concurrency 100`, `concurrency_burst`) a closed loop of 100.
#[test]
fn the_field_files_land_where_their_headers_say() {
    let test = "the_field_files_land_where_their_headers_say";
    let field = |rel: &str| shared_data(test, &format!("field/{rel}"));
    let Some(sweep) = field("vllm-bench/er0080-opt125m-v0.25.1-sweep-run0.json") else {
        return;
    };
    let p = import(ImportFormat::VllmBench, &sweep, false);
    assert_eq!(
        points(&p),
        [ImportedPoint {
            offered: OfferedLoad::Unbounded,
            client_concurrency: Some(2)
        }]
    );
    assert_eq!(
        p.runs[0].config["max_num_seqs"], 4,
        "the server's limit stays its own key"
    );
    let bench = |rel: &str| {
        points(&import(
            ImportFormat::VllmBench,
            &field(rel).unwrap(),
            false,
        ))
    };
    assert_eq!(
        bench("vllm-bench/lambdalabs-llama3-8b-h100-v0.6-detailed.json")[0],
        ImportedPoint {
            offered: OfferedLoad::Unbounded,
            client_concurrency: None
        }
    );
    assert_eq!(
        bench("vllm-bench/nv-action-ascend-llama3-8b-fork-latency-only.json"),
        [rate(1.0, None)]
    );
    let closed = |requests| ImportedPoint {
        offered: OfferedLoad::Concurrency { requests },
        client_concurrency: None,
    };
    let guidellm = |rel: &str| points(&import(ImportFormat::Guidellm, &field(rel).unwrap(), false));
    assert_eq!(
        guidellm("guidellm/danielkorat-gpt-oss-20b-tp4-benchmarks.json"),
        [closed(1)]
    );
    assert_eq!(
        guidellm("guidellm/danielkorat-qwen3-4b-tp4-sanity-benchmarks.json"),
        [closed(4)]
    );
    // The AIPerf example keeps its summary under its own name: attach it by hand.
    let export = field("aiperf/aiperf-repo-example-run1-20251003-profile_export.jsonl").unwrap();
    let mut p = import(ImportFormat::Aiperf, &export, false);
    assert_eq!(unknown_noted(&p).len(), p.runs.len());
    let summary =
        field("aiperf/aiperf-repo-example-run1-20251003-profile_export_aiperf.json").unwrap();
    let source = import::Source::new(summary.display().to_string());
    let config =
        aiperf::summary_input_config(&source, &std::fs::read_to_string(&summary).unwrap()).unwrap();
    aiperf::attach_summary(&mut p, aiperf::SUMMARY_FILE, &"0".repeat(64), &config);
    assert!(
        points(&p).iter().all(|q| *q == closed(100)),
        "{:?}",
        points(&p)
    );
}
