use std::fs::File;
use std::path::{Path, PathBuf};

use kvgate_formats::import::{self, Granularity, ImportFormat, ParsedImport, ParsedRun};
use serde_json::Value;

use crate::{aggregate, parse_text, shared_data};

const AGGREGATES_ONLY: &str = "aggregates only: this report holds no per-request rows \
                               (inference-perf 0.7 writes them to \
                               per_request_lifecycle_metrics.json); percentiles are the tool's, \
                               not recomputed";

/// The real inference-perf results of the KubeCon NA 2025 demo (kept beside the repository,
/// never in it), or the visible line "skipped: shared field data not present" where `../shared`
/// is absent.
fn realdata(test: &str) -> Option<PathBuf> {
    shared_data(test, "inference-perf-kubecon-na-2025")
}

fn import_file(path: &Path) -> ParsedImport {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    import::parse(ImportFormat::InferencePerf, &path.to_string_lossy(), file)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn run_of(root: &Path, bundle: &str, name: &str) -> ParsedRun {
    let mut import = import_file(&root.join(bundle).join(name));
    assert_eq!(import.runs.len(), 1);
    import.runs.remove(0)
}

/// Numbers anywhere in a JSON value, as an independent count of what must become aggregates.
fn numbers(value: &Value) -> usize {
    match value {
        Value::Number(_) => 1,
        Value::Object(map) => map.values().map(numbers).sum(),
        Value::Array(items) => items.iter().map(numbers).sum(),
        _ => 0,
    }
}

/// (bundle, file, load_summary.count, requested_rate, send_duration, successes.count, TTFT p99)
type Lifecycle = (
    &'static str,
    &'static str,
    i64,
    Option<f64>,
    Option<f64>,
    f64,
    f64,
);

const LIFECYCLE: [Lifecycle; 16] = [
    (
        "vllm",
        "stage_0_lifecycle_metrics.json",
        60,
        Some(1.0),
        Some(58.51001774193719),
        60.0,
        0.039696927970508104,
    ),
    (
        "vllm",
        "stage_1_lifecycle_metrics.json",
        1884,
        Some(31.4),
        Some(59.9711401569657),
        1884.0,
        0.04361342025920749,
    ),
    (
        "vllm",
        "stage_2_lifecycle_metrics.json",
        3707,
        Some(61.79),
        Some(59.993806313024834),
        3707.0,
        0.056964946878142665,
    ),
    (
        "vllm",
        "stage_3_lifecycle_metrics.json",
        5531,
        Some(92.19),
        Some(59.97347861202434),
        5531.0,
        0.18182665726635605,
    ),
    (
        "vllm",
        "stage_4_lifecycle_metrics.json",
        7355,
        Some(122.59),
        Some(69.06510553101543),
        7355.0,
        3.2043639390263707,
    ),
    (
        "vllm",
        "stage_5_lifecycle_metrics.json",
        9178,
        Some(152.98),
        Some(86.92603525496088),
        9178.0,
        3.304704702957533,
    ),
    (
        "vllm",
        "stage_6_lifecycle_metrics.json",
        11002,
        Some(183.38),
        Some(103.25901604094543),
        11002.0,
        3.3474315829982517,
    ),
    (
        "vllm",
        "summary_lifecycle_metrics.json",
        38717,
        None,
        None,
        38717.0,
        3.3292115439707413,
    ),
    (
        "vllm+quantization",
        "stage_0_lifecycle_metrics.json",
        60,
        Some(1.0),
        Some(59.46639028401114),
        60.0,
        0.040942011214792726,
    ),
    (
        "vllm+quantization",
        "stage_1_lifecycle_metrics.json",
        2598,
        Some(43.31),
        Some(59.96932984003797),
        2598.0,
        0.03483204861870039,
    ),
    (
        "vllm+quantization",
        "stage_2_lifecycle_metrics.json",
        5137,
        Some(85.62),
        Some(59.99265242903493),
        5137.0,
        0.03678809832315893,
    ),
    (
        "vllm+quantization",
        "stage_3_lifecycle_metrics.json",
        7675,
        Some(127.93),
        Some(59.99696710205171),
        7675.0,
        0.04179430214222521,
    ),
    (
        "vllm+quantization",
        "stage_4_lifecycle_metrics.json",
        10214,
        Some(170.24),
        Some(59.994787464034744),
        10214.0,
        0.23105642874608773,
    ),
    (
        "vllm+quantization",
        "stage_5_lifecycle_metrics.json",
        12753,
        Some(212.55),
        Some(71.87144495802931),
        12753.0,
        1.9022326552169397,
    ),
    (
        "vllm+quantization",
        "stage_6_lifecycle_metrics.json",
        15291,
        Some(254.86),
        Some(86.41397182201035),
        15291.0,
        1.9568686707061715,
    ),
    (
        "vllm+quantization",
        "summary_lifecycle_metrics.json",
        53728,
        None,
        None,
        53728.0,
        1.9340070191654368,
    ),
];

/// (bundle, file, successes.count, time_to_first_token p99 in s)
const PROMETHEUS: [(&str, &str, f64, f64); 16] = [
    ("vllm", "stage_0_prometheus_metrics.json", 937.0, 4.955306),
    ("vllm", "stage_1_prometheus_metrics.json", 4071.0, 0.039055),
    ("vllm", "stage_2_prometheus_metrics.json", 7458.0, 0.053482),
    ("vllm", "stage_3_prometheus_metrics.json", 10938.0, 0.238939),
    ("vllm", "stage_4_prometheus_metrics.json", 14849.0, 4.967312),
    ("vllm", "stage_5_prometheus_metrics.json", 18353.0, 4.973179),
    ("vllm", "stage_6_prometheus_metrics.json", 21904.0, 4.973688),
    ("vllm", "summary_prometheus_metrics.json", 81418.0, 4.961079),
    (
        "vllm+quantization",
        "stage_0_prometheus_metrics.json",
        1409.0,
        2.478823,
    ),
    (
        "vllm+quantization",
        "stage_1_prometheus_metrics.json",
        5472.0,
        0.01991,
    ),
    (
        "vllm+quantization",
        "stage_2_prometheus_metrics.json",
        10610.0,
        0.028635,
    ),
    (
        "vllm+quantization",
        "stage_3_prometheus_metrics.json",
        15822.0,
        0.177967,
    ),
    (
        "vllm+quantization",
        "stage_4_prometheus_metrics.json",
        21085.0,
        1.651778,
    ),
    (
        "vllm+quantization",
        "stage_5_prometheus_metrics.json",
        25928.0,
        2.483726,
    ),
    (
        "vllm+quantization",
        "stage_6_prometheus_metrics.json",
        29704.0,
        2.484659,
    ),
    (
        "vllm+quantization",
        "summary_prometheus_metrics.json",
        110969.0,
        2.47023,
    ),
];

#[test]
fn every_real_report_is_imported_with_every_number() {
    let Some(root) = realdata("every_real_report_is_imported_with_every_number") else {
        return;
    };
    let mut seen = 0;
    for bundle in ["vllm", "vllm+quantization"] {
        let mut names: Vec<PathBuf> = std::fs::read_dir(root.join(bundle))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        names.sort();
        assert_eq!(
            names.len(),
            16,
            "{bundle}: 7 stages + summary, lifecycle and prometheus"
        );
        for path in names {
            let import = import_file(&path);
            assert_eq!(import.format, ImportFormat::InferencePerf);
            assert_eq!(import.tool.as_deref(), Some("inference-perf"));
            assert_eq!(import.warnings[0].message, AGGREGATES_ONLY);
            assert_eq!(import.runs.len(), 1);
            let run = &import.runs[0];
            assert_eq!(run.granularity, Granularity::Aggregate);
            assert!(run.requests.is_empty());
            assert_eq!(run.wall_anchor_unix_ms, None);
            let raw: Value = serde_json::from_reader(File::open(&path).unwrap()).unwrap();
            assert_eq!(run.aggregates.len(), numbers(&raw), "{}", path.display());
            assert!(run.aggregates.iter().all(|a| a.value.is_finite()));
            seen += 1;
        }
    }
    assert_eq!(seen, 32);
}

#[test]
fn lifecycle_reports_keep_load_and_latency() {
    let Some(root) = realdata("lifecycle_reports_keep_load_and_latency") else {
        return;
    };
    for (bundle, name, count, rate, send, successes, ttft_p99) in LIFECYCLE {
        let run = run_of(&root, bundle, name);
        let at = format!("{bundle}/{name}");
        assert_eq!(run.planned, Some(count), "{at}");
        assert_eq!(
            aggregate(&run, "load_summary", "count").value,
            count as f64,
            "{at}"
        );
        assert_eq!(aggregate(&run, "load_summary", "count").unit, "requests");
        assert_eq!(
            aggregate(&run, "successes", "count").value,
            successes,
            "{at}"
        );
        assert_eq!(aggregate(&run, "failures", "count").value, 0.0, "{at}");
        let ttft = aggregate(&run, "successes.latency.time_to_first_token", "p99");
        assert_eq!((ttft.value, ttft.unit.as_str()), (ttft_p99, "s"), "{at}");
        match rate {
            Some(rate) => {
                let requested = aggregate(&run, "load_summary.requested_rate", "value");
                assert_eq!(
                    (requested.value, requested.unit.as_str()),
                    (rate, "1/s"),
                    "{at}"
                );
            }
            None => assert!(run
                .aggregates
                .iter()
                .all(|a| a.name != "load_summary.requested_rate")),
        }
        assert_eq!(run.elapsed_ms, send.map(|s| s * 1000.0), "{at}");
        // `failures.request_latency: null`: no failures were measured, nothing is recorded.
        assert!(
            run.aggregates
                .iter()
                .all(|a| !a.name.starts_with("failures.")),
            "{at}"
        );
    }
}

#[test]
fn stage_zero_of_the_baseline_reads_exactly() {
    let Some(root) = realdata("stage_zero_of_the_baseline_reads_exactly") else {
        return;
    };
    let run = run_of(&root, "vllm", "stage_0_lifecycle_metrics.json");
    assert_eq!(run.label, "inference-perf · stage 0 · 1.0 rps requested");
    assert_eq!(
        run.config,
        serde_json::json!({"report": "lifecycle", "stage": 0, "requested_rate": 1.0}),
        "the stage's requested rate is its operating point"
    );
    let delay = aggregate(&run, "load_summary.schedule_delay", "min");
    assert_eq!(
        (delay.value, delay.unit.as_str()),
        (-0.0006079088198021054, "s")
    );
    assert_eq!(
        aggregate(&run, "load_summary.schedule_delay", "p0.1").value,
        -0.0005960080651566386
    );
    assert_eq!(
        aggregate(&run, "load_summary.send_duration", "value").value,
        58.51001774193719
    );
    assert_eq!(
        aggregate(&run, "load_summary.achieved_rate", "value").value,
        1.0254654214024423
    );
    let e2e = aggregate(&run, "successes.latency.request_latency", "p99.9");
    assert_eq!((e2e.value, e2e.unit.as_str()), (0.4899891945802374, "s"));
    assert_eq!(
        aggregate(&run, "successes.latency.inter_token_latency", "median").value,
        3.718049265444279e-05
    );
    assert_eq!(
        aggregate(
            &run,
            "successes.latency.normalized_time_per_output_token",
            "mean"
        )
        .unit,
        "s"
    );
    let tps = aggregate(&run, "successes.throughput.output_tokens_per_sec", "value");
    assert_eq!(
        (tps.value, tps.unit.as_str()),
        (64.23350089997027, "tokens/s")
    );
    assert_eq!(
        aggregate(&run, "successes.throughput.requests_per_sec", "value").unit,
        "1/s"
    );
    let prompt = aggregate(&run, "successes.prompt_len", "p99");
    assert_eq!((prompt.value, prompt.unit.as_str()), (211.41, "tokens"));
    assert_eq!(aggregate(&run, "successes.output_len", "min").value, 36.0);
}

#[test]
fn labels_carry_stage_and_requested_rate() {
    let Some(root) = realdata("labels_carry_stage_and_requested_rate") else {
        return;
    };
    assert_eq!(
        run_of(&root, "vllm", "stage_3_lifecycle_metrics.json").label,
        "inference-perf · stage 3 · 92.19 rps requested"
    );
    assert_eq!(
        run_of(&root, "vllm+quantization", "stage_6_lifecycle_metrics.json").label,
        "inference-perf · stage 6 · 254.86 rps requested"
    );
    assert_eq!(
        run_of(&root, "vllm", "summary_lifecycle_metrics.json").label,
        "inference-perf · summary"
    );
    assert_eq!(
        run_of(&root, "vllm", "stage_2_prometheus_metrics.json").label,
        "inference-perf · stage 2 · server metrics"
    );
    assert_eq!(
        run_of(
            &root,
            "vllm+quantization",
            "summary_prometheus_metrics.json"
        )
        .label,
        "inference-perf · summary · server metrics"
    );
}

#[test]
fn prometheus_reports_keep_server_aggregates() {
    let Some(root) = realdata("prometheus_reports_keep_server_aggregates") else {
        return;
    };
    for (bundle, name, successes, ttft_p99) in PROMETHEUS {
        let run = run_of(&root, bundle, name);
        let at = format!("{bundle}/{name}");
        assert_eq!(run.planned, None, "{at}");
        assert_eq!(run.elapsed_ms, None, "{at}");
        let count = aggregate(&run, "successes", "count");
        assert_eq!(
            (count.value, count.unit.as_str()),
            (successes, "requests"),
            "{at}"
        );
        let ttft = aggregate(&run, "successes.time_to_first_token", "p99");
        assert_eq!((ttft.value, ttft.unit.as_str()), (ttft_p99, "s"), "{at}");
        assert_eq!(
            aggregate(&run, "successes.kv_cache_usage_percentage", "mean").unit,
            "ratio"
        );
        assert_eq!(
            aggregate(&run, "successes.prefix_cache_hit_percent", "mean").unit,
            "percent"
        );
    }
    let run = run_of(&root, "vllm", "stage_0_prometheus_metrics.json");
    assert_eq!(
        run.config,
        serde_json::json!({"report": "prometheus", "stage": 0})
    );
    let rate = aggregate(&run, "successes", "rate");
    assert_eq!((rate.value, rate.unit.as_str()), (11.865978, "1/s"));
    let prompt_rate = aggregate(&run, "successes.prompt_len", "rate");
    assert_eq!(
        (prompt_rate.value, prompt_rate.unit.as_str()),
        (2111.084841, "tokens/s")
    );
    let prompt_mean = aggregate(&run, "successes.prompt_len", "mean");
    assert_eq!(
        (prompt_mean.value, prompt_mean.unit.as_str()),
        (4995.0, "tokens")
    );
    assert_eq!(
        aggregate(&run, "successes.queue_len", "mean").unit,
        "requests"
    );
    assert_eq!(
        aggregate(&run, "successes.time_per_output_token", "p90").value,
        0.02261
    );
}

#[test]
fn prometheus_zeros_are_kept_and_flagged() {
    let Some(root) = realdata("prometheus_zeros_are_kept_and_flagged") else {
        return;
    };
    let path = root.join("vllm/stage_4_prometheus_metrics.json");
    let import = import_file(&path);
    let run = &import.runs[0];
    assert_eq!(
        aggregate(run, "successes.kv_cache_usage_percentage", "p99").value,
        0.0
    );
    assert_eq!(import.warnings.len(), 2);
    assert_eq!(
        import.warnings[1].message,
        "inference-perf writes 0 when its Prometheus query fails or finds no series: every \
         statistic of successes.kv_cache_usage_percentage, successes.num_preemptions_total, \
         successes.num_requests_swapped, successes.prefix_cache_hit_percent is 0, which may \
         mean \"not measured\""
    );
    // Lifecycle reports are the client's own counts: no such warning.
    let lifecycle = import_file(&root.join("vllm/stage_4_lifecycle_metrics.json"));
    assert_eq!(lifecycle.warnings.len(), 1);
}

fn real_text(root: &Path, name: &str) -> String {
    std::fs::read_to_string(root.join("vllm").join(name)).unwrap()
}

fn error(name: &str, text: &str) -> String {
    parse_text(ImportFormat::InferencePerf, name, text)
        .expect_err("the variant must be refused")
        .to_string()
}

/// inference-perf 0.7.0's own stage report, recorded against the local llama.cpp server
/// (`fixtures/real-tools/`): the malformed variants below are edits of it.
fn recorded_stage() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../../fixtures/real-tools/inference-perf-0.7.0/f16/out/stage_0_lifecycle_metrics.json",
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn truncated_report_is_refused() {
    let text = recorded_stage();
    assert_eq!(
        error("stage_0_lifecycle_metrics.json", &text[..1000]),
        "stage_0_lifecycle_metrics.json, line 34, column 10: expected the rest of the JSON \
         document, found end of file (EOF while parsing a string): the file is truncated"
    );
}

#[test]
fn wrong_type_is_refused() {
    let text =
        recorded_stage().replacen("\"requested_rate\": 0.3", "\"requested_rate\": \"0.3\"", 1);
    assert_eq!(
        error("stage_0_lifecycle_metrics.json", &text),
        "stage_0_lifecycle_metrics.json, $.load_summary.requested_rate, field `requested_rate`: \
         expected a number, null or an object of numbers, found \"0.3\""
    );
}

#[test]
fn negative_latency_is_refused() {
    let text = recorded_stage().replacen(
        "\"p99\": 0.762399444500096",
        "\"p99\": -0.762399444500096",
        1,
    );
    assert_eq!(
        error("stage_0_lifecycle_metrics.json", &text),
        "stage_0_lifecycle_metrics.json, $.successes.latency.time_to_first_token.p99, field \
         `p99`: expected a non-negative number, found -0.762399444500096"
    );
}

#[test]
fn nan_latency_reads_as_absent() {
    let text = recorded_stage().replacen("\"p99\": 0.762399444500096", "\"p99\": NaN", 1);
    let import = parse_text(
        ImportFormat::InferencePerf,
        "stage_0_lifecycle_metrics.json",
        &text,
    )
    .unwrap();
    let run = &import.runs[0];
    assert!(run
        .aggregates
        .iter()
        .all(|a| !(a.name == "successes.latency.time_to_first_token" && a.stat == "p99")));
    assert_eq!(
        aggregate(run, "successes.latency.time_to_first_token", "p95").value,
        0.7590592785000752
    );
    assert_eq!(
        import.warnings[1].message,
        "1 NaN/Infinity value(s) (Python's non-standard JSON) read as absent, not 0"
    );
}

#[test]
fn negative_send_duration_is_refused() {
    let text = recorded_stage().replacen(
        "\"send_duration\": 19.24045658900002",
        "\"send_duration\": -19.2",
        1,
    );
    assert_eq!(
        error("stage_0_lifecycle_metrics.json", &text),
        "stage_0_lifecycle_metrics.json, $.load_summary.send_duration, field `send_duration`: \
         expected a non-negative number, found -19.2"
    );
}

#[test]
fn the_file_name_decides() {
    let Some(root) = realdata("the_file_name_decides") else {
        return;
    };
    let text = real_text(&root, "stage_0_lifecycle_metrics.json");
    // A lifecycle report named as the per-request file is read as one, and refused.
    assert_eq!(
        error("results/per_request_lifecycle_metrics.json", &text),
        "results/per_request_lifecycle_metrics.json, $: expected an array of request records \
         (inference-perf's per-request file), found an object"
    );
    assert_eq!(
        error("results/validation.json", &text),
        "results/validation.json, $: expected an inference-perf report named \
         stage_N_lifecycle_metrics.json, summary_lifecycle_metrics.json, \
         stage_N_prometheus_metrics.json, summary_prometheus_metrics.json or \
         per_request_lifecycle_metrics.json, found a file named \"validation.json\""
    );
    // The same content under a prometheus name is read as server metrics: the name decides.
    let import = parse_text(
        ImportFormat::InferencePerf,
        "stage_5_prometheus_metrics.json",
        &text,
    )
    .unwrap();
    assert_eq!(
        import.runs[0].label,
        "inference-perf · stage 5 · server metrics"
    );
}
