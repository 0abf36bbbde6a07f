//! What the real tools wrote when run against the real llama.cpp servers (f16 KV and q8_0 KV, a
//! CPU stand-in; `fixtures/real-tools/`, recorded by `scripts/record-real-tools.sh`), imported
//! and checked against the tool's own summary of the same run: counts exact, means and
//! percentiles to the tool's printed precision.

use std::path::PathBuf;

use kvgate_core::run::{RequestRecord, RequestStatus};
use kvgate_formats::import::{self, Granularity, ImportFormat, ParsedImport};
use serde_json::Value;

use crate::aggregate;

fn recorded(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/real-tools")
        .join(relative)
}

fn parse(format: ImportFormat, relative: &str) -> ParsedImport {
    let path = recorded(relative);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    import::parse(format, relative, &bytes[..]).unwrap_or_else(|e| panic!("{e}"))
}

fn json(relative: &str) -> Value {
    let path = recorded(relative);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

fn close(found: f64, expected: f64, rel: f64) -> bool {
    (found - expected).abs() <= rel * expected.abs()
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// numpy's default (linear) percentile, as AIPerf computes it.
fn linear(sorted: &[f64], p: f64) -> f64 {
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

/// GuideLLM's percentile: the nearest rank.
fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank - 1]
}

fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

fn ttfts(rows: &[&RequestRecord]) -> Vec<f64> {
    sorted(rows.iter().map(|r| r.ttft_ms().unwrap()).collect())
}

fn e2es(rows: &[&RequestRecord]) -> Vec<f64> {
    sorted(rows.iter().map(|r| r.e2e_ms().unwrap()).collect())
}

#[test]
fn aiperf_0_13_records_give_aiperfs_own_summary() {
    for kv in ["f16", "q8_0"] {
        let out = format!("aiperf-0.13.0/{kv}/out");
        let parsed = parse(ImportFormat::Aiperf, &format!("{out}/profile_export.jsonl"));
        let summary = json(&format!("{out}/profile_export_aiperf.json"));
        assert_eq!(summary["aiperf_version"], "0.13.0");
        let labels: Vec<&str> = parsed.runs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["aiperf · warmup", "aiperf · profiling"], "{kv}");
        let warmup = json(&format!("{out}/phases/warmup/profile_export_aiperf.json"));
        assert_eq!(
            parsed.runs[0].requests.len() as f64,
            warmup["request_count"]["avg"].as_f64().unwrap(),
            "{kv}"
        );
        let run = &parsed.runs[1];
        assert_eq!(run.granularity, Granularity::PerRequest);
        let ok: Vec<&RequestRecord> = run
            .requests
            .iter()
            .filter(|r| r.status == RequestStatus::Ok)
            .collect();
        let count = summary["request_count"]["avg"].as_f64().unwrap();
        assert_eq!(ok.len() as f64, count, "{kv}: request_count");
        assert_eq!(run.requests.len(), ok.len(), "{kv}: no errors recorded");
        assert_eq!(summary["error_summary"], Value::Array(vec![]));

        let stat = |metric: &str, s: &str| summary[metric][s].as_f64().unwrap();
        let t = ttfts(&ok);
        assert!(
            close(mean(&t), stat("time_to_first_token", "avg"), 1e-12),
            "{kv}"
        );
        for p in ["p50", "p90", "p99"] {
            let q: f64 = p[1..].parse().unwrap();
            assert!(
                close(linear(&t, q), stat("time_to_first_token", p), 1e-12),
                "{kv} {p}"
            );
        }
        assert!(close(t[0], stat("time_to_first_token", "min"), 1e-12));
        // The rows end at AIPerf's own request latency (ns on the record clock).
        let e = e2es(&ok);
        assert!(
            close(mean(&e), stat("request_latency", "avg"), 1e-9),
            "{kv}"
        );
        assert!(
            close(linear(&e, 50.0), stat("request_latency", "p50"), 1e-9),
            "{kv}"
        );
        let tokens: u64 = ok.iter().map(|r| r.completion_tokens.unwrap()).sum();
        assert_eq!(tokens as f64, stat("total_output_tokens", "avg"), "{kv}");
        let prompt: u64 = ok.iter().map(|r| r.prompt_tokens.unwrap()).sum();
        assert_eq!(prompt as f64, stat("total_isl", "avg"), "{kv}");
    }
}

#[test]
fn guidellm_0_8_reports_give_guidellms_own_metrics() {
    for kv in ["f16", "q8_0"] {
        let file = format!("guidellm-0.8.1/{kv}/out/benchmarks.json");
        let parsed = parse(ImportFormat::Guidellm, &file);
        let report = json(&file);
        assert_eq!(report["metadata"]["version"], 2);
        assert_eq!(parsed.tool.as_deref(), Some("guidellm 0.8.1"));
        let labels: Vec<&str> = parsed.runs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            ["guidellm · constant@0.3 rps", "guidellm · constant@0.6 rps"],
            "{kv}"
        );
        for (run, bench) in parsed
            .runs
            .iter()
            .zip(report["benchmarks"].as_array().unwrap())
        {
            let m = &bench["metrics"];
            let ok: Vec<&RequestRecord> = run
                .requests
                .iter()
                .filter(|r| r.status == RequestStatus::Ok)
                .collect();
            assert_eq!(
                ok.len() as f64,
                m["request_totals"]["successful"].as_f64().unwrap(),
                "{kv} {}",
                run.label
            );
            assert!(
                run.unmeasured.is_empty(),
                "no warm-up or cool-down configured"
            );
            assert_eq!(
                aggregate(run, "metrics.request_totals.successful", "value").value,
                ok.len() as f64
            );
            let ttft = &m["time_to_first_token_ms"]["successful"];
            let t = ttfts(&ok);
            assert!(
                close(mean(&t), ttft["mean"].as_f64().unwrap(), 1e-9),
                "{kv}"
            );
            for (p, key) in [(50.0, "p50"), (90.0, "p90"), (99.0, "p99")] {
                let tool = ttft["percentiles"][key].as_f64().unwrap();
                assert!(close(nearest_rank(&t, p), tool, 1e-9), "{kv} {key}");
            }
            let latency = &m["request_latency"]["successful"];
            let e = e2es(&ok);
            assert!(
                close(mean(&e) / 1000.0, latency["mean"].as_f64().unwrap(), 1e-9),
                "{kv}"
            );
            let prompt: u64 = ok.iter().map(|r| r.prompt_tokens.unwrap()).sum();
            assert_eq!(
                prompt as f64,
                m["prompt_token_count"]["successful"]["total_sum"]
                    .as_f64()
                    .unwrap()
            );
            assert!(ok.iter().all(|r| !r.output_text.is_empty()), "texts kept");
        }
    }
}

#[test]
fn inference_perf_0_7_stage_reports_keep_every_number() {
    for kv in ["f16", "q8_0"] {
        for (name, stage) in [
            ("stage_0_lifecycle_metrics.json", Some(0.3)),
            ("stage_1_lifecycle_metrics.json", Some(0.6)),
            ("summary_lifecycle_metrics.json", None),
        ] {
            let file = format!("inference-perf-0.7.0/{kv}/out/{name}");
            let parsed = parse(ImportFormat::InferencePerf, &file);
            let raw = json(&file);
            let run = &parsed.runs[0];
            assert_eq!(run.granularity, Granularity::Aggregate);
            assert_eq!(
                aggregate(run, "successes", "count").value,
                raw["successes"]["count"].as_f64().unwrap(),
                "{file}"
            );
            assert_eq!(
                aggregate(run, "successes.latency.time_to_first_token", "median").value,
                raw["successes"]["latency"]["time_to_first_token"]["median"]
                    .as_f64()
                    .unwrap()
            );
            if let Some(rate) = stage {
                assert_eq!(
                    aggregate(run, "load_summary.requested_rate", "value").value,
                    rate
                );
                assert!(
                    run.label.ends_with(&format!("{rate} rps requested")),
                    "{}",
                    run.label
                );
            }
        }
    }
}

#[test]
fn inference_perf_0_7_per_request_rows_give_its_own_summary() {
    for kv in ["f16", "q8_0"] {
        let dir = format!("inference-perf-0.7.0/{kv}/out");
        let parsed = parse(
            ImportFormat::InferencePerf,
            &format!("{dir}/per_request_lifecycle_metrics.json"),
        );
        let summary = json(&format!("{dir}/summary_lifecycle_metrics.json"));
        let run = &parsed.runs[0];
        assert_eq!(run.granularity, Granularity::PerRequest);
        assert!(run.clocked);
        let ok: Vec<&RequestRecord> = run
            .requests
            .iter()
            .filter(|r| r.status == RequestStatus::Ok)
            .collect();
        let successes = summary["successes"]["count"].as_f64().unwrap();
        assert_eq!(ok.len() as f64, successes, "{kv}");
        assert_eq!(
            (run.requests.len() - ok.len()) as f64,
            summary["failures"]["count"].as_f64().unwrap()
        );
        let latency = &summary["successes"]["latency"];
        let e = e2es(&ok);
        let tool = |metric: &str, stat: &str| latency[metric][stat].as_f64().unwrap();
        assert!(
            close(mean(&e) / 1000.0, tool("request_latency", "mean"), 1e-9),
            "{kv}"
        );
        assert!(close(
            linear(&e, 50.0) / 1000.0,
            tool("request_latency", "median"),
            1e-9
        ));
        assert!(close(
            linear(&e, 99.0) / 1000.0,
            tool("request_latency", "p99"),
            1e-9
        ));
        let t = ttfts(&ok);
        assert!(
            close(mean(&t) / 1000.0, tool("time_to_first_token", "mean"), 1e-9),
            "{kv}"
        );
        assert!(close(
            linear(&t, 90.0) / 1000.0,
            tool("time_to_first_token", "p90"),
            1e-9
        ));
        assert!(ok.iter().all(|r| !r.output_text.is_empty()));
        // Token counts are the server's `usage` (the tool's own output_len counts with its
        // tokenizer, and may differ by a token).
        let raw = json(&format!("{dir}/per_request_lifecycle_metrics.json"));
        let usage: u64 = raw
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r["info"]["response_metrics"]["server_usage"]["completion_tokens"]
                    .as_u64()
                    .unwrap()
            })
            .sum();
        let output: u64 = ok.iter().map(|r| r.completion_tokens.unwrap()).sum();
        assert_eq!(output, usage, "{kv}");
    }
}
