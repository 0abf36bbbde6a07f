//! inference-perf reports (kubernetes-sigs/inference-perf): `stage_N_lifecycle_metrics.json`
//! and `summary_lifecycle_metrics.json` (the client's load summary and latency percentiles),
//! `stage_N_prometheus_metrics.json` and `summary_prometheus_metrics.json` (server-side
//! aggregates queried from Prometheus).
//!
//! Aggregates only: one run per file with every number it holds, in the tool's units (seconds,
//! tokens, requests, 1/s). The file name says which report it is; the content never decides.
//! inference-perf 0.7's `per_request_lifecycle_metrics.json` is read by
//! [`inference_perf_requests`](super::inference_perf_requests).

use std::collections::BTreeSet;
use std::io::BufRead;

use serde_json::{Map, Value};

use super::pyjson::read_document;
use super::{
    check_duration, Aggregate, Granularity, ImportError, ImportFormat, ImportWarning, ParsedImport,
    ParsedRun, Source,
};

const AGGREGATES_ONLY: &str = "aggregates only: this report holds no per-request rows \
                               (inference-perf 0.7 writes them to \
                               per_request_lifecycle_metrics.json); percentiles are the tool's, \
                               not recomputed";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Report {
    /// Client-side: `load_summary`, `successes`, `failures`.
    Lifecycle,
    /// Server-side, from Prometheus queries.
    Prometheus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Stage(u32),
    Summary,
}

pub fn parse(source: &Source, reader: impl BufRead) -> Result<ParsedImport, ImportError> {
    if file_name(source) == "per_request_lifecycle_metrics.json" {
        return super::inference_perf_requests::parse(source, reader);
    }
    let (report, scope) = kind(source)?;
    let (value, nan_warning) = read_document(source, reader, "an inference-perf report object")?;
    let Value::Object(root) = value else {
        return Err(source.at(
            "$",
            None,
            "an inference-perf report object",
            describe(&value),
        ));
    };

    let mut run = ParsedRun::new(label(report, scope, &root), Granularity::Aggregate);
    flatten(source, &mut Vec::new(), &root, &mut run.aggregates)?;

    let load = root.get("load_summary").and_then(Value::as_object);
    if let Some(count) = load.and_then(|l| l.get("count")).and_then(Value::as_u64) {
        run.planned = i64::try_from(count).ok();
    }
    if let Some(send) = load
        .and_then(|l| l.get("send_duration"))
        .and_then(Value::as_f64)
    {
        let send = check_duration(source, || "$.load_summary.send_duration".to_owned(), send)?;
        run.elapsed_ms = Some(send * 1000.0);
    }
    // The files carry no configuration (inference-perf writes config.yaml beside them): the
    // name and a stage's requested rate (its operating point) are all there is.
    run.config = serde_json::json!({
        "report": match report { Report::Lifecycle => "lifecycle", Report::Prometheus => "prometheus" },
        "stage": match scope { Scope::Stage(n) => Value::from(n), Scope::Summary => Value::Null },
    });
    if let Some(rate) = load.and_then(|l| l.get("requested_rate")) {
        run.config["requested_rate"] = rate.clone();
    }

    let mut import = ParsedImport::new(ImportFormat::InferencePerf);
    import.tool = Some("inference-perf".to_owned());
    import
        .warnings
        .push(ImportWarning::new("$", AGGREGATES_ONLY, 0));
    import.warnings.extend(nan_warning);
    if report == Report::Prometheus {
        let zeros = all_zero_metrics(&run.aggregates);
        if !zeros.is_empty() {
            import.warnings.push(ImportWarning::new(
                "$.successes",
                format!(
                    "inference-perf writes 0 when its Prometheus query fails or finds no series: \
                     every statistic of {} is 0, which may mean \"not measured\"",
                    zeros.join(", ")
                ),
                0,
            ));
        }
    }
    import.runs.push(run);
    Ok(import)
}

/// Which report a file is, from its name alone (a bare name or a path).
fn file_name(source: &Source) -> &str {
    source
        .file
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(&source.file)
}

fn kind(source: &Source) -> Result<(Report, Scope), ImportError> {
    let name = file_name(source);
    let refuse = || {
        source.at(
            "$",
            None,
            "an inference-perf report named stage_N_lifecycle_metrics.json, \
             summary_lifecycle_metrics.json, stage_N_prometheus_metrics.json, \
             summary_prometheus_metrics.json or per_request_lifecycle_metrics.json",
            format!("a file named {name:?}"),
        )
    };
    let (scope, report) = if let Some(scope) = name.strip_suffix("_lifecycle_metrics.json") {
        (scope, Report::Lifecycle)
    } else if let Some(scope) = name.strip_suffix("_prometheus_metrics.json") {
        (scope, Report::Prometheus)
    } else {
        return Err(refuse());
    };
    if scope == "summary" {
        return Ok((report, Scope::Summary));
    }
    match scope.strip_prefix("stage_") {
        Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => n
            .parse::<u32>()
            .map(|n| (report, Scope::Stage(n)))
            .map_err(|_| refuse()),
        _ => Err(refuse()),
    }
}

fn label(report: Report, scope: Scope, root: &Map<String, Value>) -> String {
    let mut label = String::from("inference-perf");
    match scope {
        Scope::Stage(n) => label.push_str(&format!(" · stage {n}")),
        Scope::Summary => label.push_str(" · summary"),
    }
    match report {
        Report::Prometheus => label.push_str(" · server metrics"),
        Report::Lifecycle => {
            let load = root.get("load_summary");
            let field = |key: &str| load.and_then(|l| l.get(key));
            if let Some(rate) = field("requested_rate").and_then(Value::as_f64) {
                label.push_str(&format!(" · {} rps requested", number(rate)));
            }
            if let Some(concurrency) = field("concurrency").and_then(Value::as_u64) {
                label.push_str(&format!(" · concurrency {concurrency}"));
            }
        }
    }
    label
}

/// `8.0`, `92.19`: whole numbers keep one decimal, others print as they are.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
        Value::String(s) if s.chars().count() > 60 => {
            format!("{}…", Value::String(s.chars().take(60).collect()))
        }
        other => other.to_string(),
    }
}

/// Keys that are a statistic of the object they sit in (`p0.1` … `p99.9` too), not a metric.
fn is_stat(key: &str) -> bool {
    matches!(
        key,
        "mean" | "median" | "min" | "max" | "std" | "sd" | "stddev" | "count" | "rate"
    ) || key.strip_prefix('p').is_some_and(|rest| {
        !rest.is_empty()
            && rest.parse::<f64>().is_ok()
            && rest.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    })
}

/// Every number in the report; nulls and empty objects record nothing (never 0), and any other
/// leaf is a shape this parser does not know.
fn flatten(
    source: &Source,
    path: &mut Vec<String>,
    map: &Map<String, Value>,
    out: &mut Vec<Aggregate>,
) -> Result<(), ImportError> {
    for (key, value) in map {
        match value {
            Value::Object(inner) => {
                path.push(key.clone());
                flatten(source, path, inner, out)?;
                path.pop();
            }
            Value::Number(n) => {
                let Some(x) = n.as_f64() else { continue };
                let (name, stat) = if is_stat(key) && !path.is_empty() {
                    (path.join("."), key.clone())
                } else {
                    let mut full = path.clone();
                    full.push(key.clone());
                    (full.join("."), "value".to_owned())
                };
                // A request may start before its scheduled time: only schedule delays go below 0.
                let may_be_negative = path.iter().any(|p| p == "schedule_delay");
                if x < 0.0 && !may_be_negative {
                    return Err(source.at(
                        json_path(path, key),
                        Some(key),
                        "a non-negative number",
                        n.to_string(),
                    ));
                }
                out.push(Aggregate {
                    unit: unit(&name, &stat).to_owned(),
                    name,
                    stat,
                    value: x,
                });
            }
            Value::Null => {}
            other => {
                return Err(source.at(
                    json_path(path, key),
                    Some(key),
                    "a number, null or an object of numbers",
                    describe(other),
                ))
            }
        }
    }
    Ok(())
}

fn json_path(path: &[String], key: &str) -> String {
    let mut out = String::from("$");
    for segment in path.iter().map(String::as_str).chain([key]) {
        let plain = segment
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if plain {
            out.push('.');
            out.push_str(segment);
        } else {
            out.push('[');
            out.push_str(&Value::String(segment.to_owned()).to_string());
            out.push(']');
        }
    }
    out
}

/// The unit inference-perf uses for a metric: seconds for times, tokens for lengths, requests
/// for counts, `1/s` for request rates.
fn unit(name: &str, stat: &str) -> &'static str {
    let metric = name.rsplit('.').next().unwrap_or(name);
    let tokens = matches!(metric, "prompt_len" | "output_len") || metric.contains("tokens");
    match stat {
        "count" => return "requests",
        "rate" if tokens => return "tokens/s",
        "rate" => return "1/s",
        _ => {}
    }
    match metric {
        "requests_per_sec" | "requested_rate" | "achieved_rate" | "goodput_rate" => "1/s",
        m if m.ends_with("_tokens_per_sec") => "tokens/s",
        // vLLM's `vllm:gpu_cache_usage_perc`, a fraction from 0 to 1 despite the name.
        "kv_cache_usage_percentage" => "ratio",
        m if m.ends_with("_percent") || m.ends_with("_pct") => "percent",
        "schedule_delay" | "send_duration" | "ttft_slo" | "tpot_slo" => "s",
        m if m.contains("latency")
            || m.contains("time_to_first_token")
            || m.contains("time_per_output_token")
            || m.ends_with("_time")
            || m.starts_with("kv_block_") =>
        {
            "s"
        }
        "queue_len"
        | "concurrency"
        | "requests_met"
        | "requests_failed"
        | "total_requests"
        | "request_success_count"
        | "corrupted_requests" => "requests",
        m if m.starts_with("num_requests_") => "requests",
        _ if tokens => "tokens",
        _ => "",
    }
}

/// Metrics whose every statistic is 0, sorted by name.
fn all_zero_metrics(aggregates: &[Aggregate]) -> Vec<String> {
    let names: BTreeSet<&str> = aggregates.iter().map(|a| a.name.as_str()).collect();
    names
        .into_iter()
        .filter(|name| {
            aggregates
                .iter()
                .filter(|a| a.name == *name)
                .all(|a| a.value == 0.0)
        })
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, text: &str) -> Result<ParsedImport, ImportError> {
        parse(&Source::new(name), text.as_bytes())
    }

    fn find<'a>(run: &'a ParsedRun, name: &str, stat: &str) -> &'a Aggregate {
        run.aggregates
            .iter()
            .find(|a| a.name == name && a.stat == stat)
            .unwrap_or_else(|| panic!("{name} {stat} in {:?}", run.aggregates))
    }

    #[test]
    fn the_name_decides_the_report() {
        let src = |n: &str| Source::new(n);
        assert_eq!(
            kind(&src("a/b/stage_12_lifecycle_metrics.json")).unwrap(),
            (Report::Lifecycle, Scope::Stage(12))
        );
        assert_eq!(
            kind(&src("C:\\x\\summary_prometheus_metrics.json")).unwrap(),
            (Report::Prometheus, Scope::Summary)
        );
        for bad in [
            "per_request_lifecycle_metrics.json",
            "stage__lifecycle_metrics.json",
            "stage_99999999999_lifecycle_metrics.json",
            "stage_-1_lifecycle_metrics.json",
            "results.json",
        ] {
            assert!(kind(&src(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn statistics_name_their_metric() {
        let import = read(
            "stage_3_lifecycle_metrics.json",
            r#"{"load_summary": {"count": 8, "schedule_delay": {"p0.1": -0.5, "mean": 0.1},
                "send_duration": 7.5, "requested_rate": 8.0},
               "successes": {"count": 8, "latency": {"time_to_first_token": {"p99": 0.04, "p99.9": 0.05}},
                "throughput": {"output_tokens_per_sec": 10.5}, "prompt_len": {"mean": 20.0}},
               "failures": {"count": 0, "request_latency": null}}"#,
        )
        .unwrap();
        let run = &import.runs[0];
        assert_eq!(run.label, "inference-perf · stage 3 · 8.0 rps requested");
        assert_eq!(run.granularity, Granularity::Aggregate);
        assert_eq!(run.planned, Some(8));
        assert_eq!(run.elapsed_ms, Some(7500.0));
        assert_eq!(
            find(run, "successes.latency.time_to_first_token", "p99.9").unit,
            "s"
        );
        assert_eq!(
            find(run, "load_summary.requested_rate", "value").unit,
            "1/s"
        );
        assert_eq!(find(run, "load_summary.schedule_delay", "p0.1").value, -0.5);
        assert_eq!(
            find(run, "successes.throughput.output_tokens_per_sec", "value").unit,
            "tokens/s"
        );
        assert_eq!(find(run, "successes.prompt_len", "mean").unit, "tokens");
        assert_eq!(find(run, "failures", "count").unit, "requests");
        assert!(run
            .aggregates
            .iter()
            .all(|a| a.name != "failures.request_latency"));
        assert_eq!(import.warnings[0].message, AGGREGATES_ONLY);
    }

    #[test]
    fn negative_latency_is_refused() {
        let err = read(
            "summary_lifecycle_metrics.json",
            r#"{"successes": {"latency": {"request_latency": {"p0.1": -0.25}}}}"#,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "summary_lifecycle_metrics.json, $.successes.latency.request_latency[\"p0.1\"], \
             field `p0.1`: expected a non-negative number, found -0.25"
        );
    }

    #[test]
    fn prometheus_zeros_are_flagged_not_dropped() {
        let import = read(
            "stage_0_prometheus_metrics.json",
            r#"{"load_summary": {}, "successes": {"count": 9, "rate": 1.5,
                "prompt_len": {"mean": 5, "rate": 7.5},
                "kv_cache_usage_percentage": {"mean": 0.0, "p99": 0.0}}, "failures": {}}"#,
        )
        .unwrap();
        let run = &import.runs[0];
        assert_eq!(run.label, "inference-perf · stage 0 · server metrics");
        assert_eq!(find(run, "successes", "rate").unit, "1/s");
        assert_eq!(find(run, "successes.prompt_len", "rate").unit, "tokens/s");
        assert_eq!(
            find(run, "successes.kv_cache_usage_percentage", "p99").unit,
            "ratio"
        );
        assert!(import.warnings[1]
            .message
            .contains("successes.kv_cache_usage_percentage"));
        assert!(!import.warnings[1].message.contains("prompt_len"));
    }

    #[test]
    fn nan_reads_as_absent() {
        let import = read(
            "summary_lifecycle_metrics.json",
            r#"{"successes": {"latency": {"time_to_first_token": {"mean": NaN, "max": 0.5}}}}"#,
        )
        .unwrap();
        assert_eq!(import.runs[0].aggregates.len(), 1);
        assert!(import.warnings[1]
            .message
            .starts_with("1 NaN/Infinity value(s)"));
    }
}
