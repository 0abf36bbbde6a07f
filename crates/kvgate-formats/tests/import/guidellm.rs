use kvgate_core::run::RequestStatus;
use kvgate_formats::import::{Granularity, ImportFormat};

use crate::{aggregate, parse_text, read_fixture};

const NAME: &str = "report-v2.json";

fn report() -> String {
    read_fixture("guidellm/report-v2.json")
}

/// The fixture with `from` replaced by `to` exactly once.
fn variant(from: &str, to: &str) -> String {
    let text = report();
    assert_eq!(
        text.matches(from).count(),
        1,
        "{from:?} must occur once in the fixture"
    );
    text.replacen(from, to, 1)
}

fn error(text: &str) -> String {
    parse_text(ImportFormat::Guidellm, NAME, text)
        .expect_err("the variant must be refused")
        .to_string()
}

#[test]
fn fixture_reads_every_row_on_the_run_clock() {
    let import = parse_text(ImportFormat::Guidellm, NAME, &report()).unwrap();
    assert_eq!(import.format, ImportFormat::Guidellm);
    assert_eq!(import.tool.as_deref(), Some("guidellm 0.7.1"));
    assert_eq!(import.runs.len(), 1);
    let run = &import.runs[0];
    assert_eq!(run.label, "guidellm · constant@4.0 rps");
    assert_eq!(run.granularity, Granularity::PerRequest);
    assert_eq!(run.wall_anchor_unix_ms, Some(1_760_000_000_000));
    assert_eq!(run.elapsed_ms, Some(2000.0));
    assert_eq!(run.planned, None);

    let statuses: Vec<RequestStatus> = run.requests.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            RequestStatus::Ok,
            RequestStatus::Ok,
            RequestStatus::Error,
            RequestStatus::Unfinished,
            RequestStatus::Rejected
        ]
    );
    let indexes: Vec<u32> = run.requests.iter().map(|r| r.index).collect();
    assert_eq!(indexes, [0, 1, 2, 3, 4]);

    let first = &run.requests[0];
    assert_eq!(first.planned_arrival_ms, 0.0);
    assert_eq!(first.dispatch_ms, Some(3.90625));
    assert_eq!(first.client_delay_ms, Some(3.90625));
    assert_eq!(first.first_token_ms, Some(62.5));
    assert_eq!(first.ttft_ms(), Some(58.59375));
    assert_eq!(first.finish_ms, Some(253.90625));
    assert_eq!(first.output_text, "Paris is the capital of France.");
    assert_eq!(
        (first.prompt_tokens, first.completion_tokens),
        (Some(128), Some(32))
    );
    assert!(first.chunk_times_ms.is_empty());
    assert_eq!(first.item_id, None);

    let errored = &run.requests[2];
    assert_eq!(errored.planned_arrival_ms, 500.0);
    assert_eq!(errored.finish_ms, Some(515.625));
    assert_eq!(errored.first_token_ms, None);
    assert_eq!(errored.completion_tokens, None);
    assert_eq!(errored.output_text, "");
    assert!(errored
        .error
        .as_deref()
        .unwrap()
        .starts_with("HTTPStatusError: Server error '500 Internal Server Error'"));

    let cut = &run.requests[3];
    assert_eq!(cut.dispatch_ms, Some(1751.953125));
    assert_eq!(cut.first_token_ms, Some(1812.5));
    assert_eq!(cut.finish_ms, None);
    assert_eq!(cut.output_text, "Lyon is a");
    // output_metrics has no usage: GuideLLM's own count (its token iterations) stands.
    assert_eq!(cut.completion_tokens, Some(3));

    let never = &run.requests[4];
    assert_eq!(never.planned_arrival_ms, 2000.0);
    assert_eq!(never.dispatch_ms, None);
    assert_eq!(never.client_delay_ms, None);
    assert_eq!(never.finish_ms, None);
    assert_eq!(
        never.error.as_deref(),
        Some("never sent: the benchmark ended first")
    );
    assert_eq!(never.prompt_tokens, Some(128));
}

#[test]
fn fixture_aggregates_keep_the_tools_numbers_and_units() {
    let import = parse_text(ImportFormat::Guidellm, NAME, &report()).unwrap();
    let run = &import.runs[0];
    let ttft = aggregate(run, "metrics.time_to_first_token_ms.successful", "p99.9");
    assert_eq!((ttft.value, ttft.unit.as_str()), (61.8, "ms"));
    let p01 = aggregate(run, "metrics.time_to_first_token_ms.successful", "p0.1");
    assert_eq!(p01.value, 58.59375);
    assert_eq!(
        aggregate(run, "metrics.time_to_first_token_ms.successful", "p5").value,
        58.6
    );
    let latency = aggregate(run, "metrics.request_latency.errored", "mean");
    assert_eq!((latency.value, latency.unit.as_str()), (0.01171875, "s"));
    let rps = aggregate(run, "metrics.requests_per_second.total", "median");
    assert_eq!((rps.value, rps.unit.as_str()), (4.4, "1/s"));
    let totals = aggregate(run, "metrics.request_totals.successful", "value");
    assert_eq!((totals.value, totals.unit.as_str()), (6.0, "requests"));
    assert_eq!(
        aggregate(run, "metrics.output_tokens_per_second.successful", "mean").unit,
        "tokens/s"
    );
    assert_eq!(
        aggregate(run, "metrics.output_token_count.successful", "max").unit,
        "tokens"
    );
    let made = aggregate(run, "scheduler_metrics.requests_made.total", "value");
    assert_eq!((made.value, made.unit.as_str()), (9.0, "requests"));
    assert_eq!(
        aggregate(run, "scheduler_metrics.queued_time_avg", "value").unit,
        "s"
    );
    assert_eq!(
        aggregate(run, "scheduler_state.cancelled_requests", "value").value,
        2.0
    );
    assert_eq!(aggregate(run, "duration", "value").unit, "s");
    // `pdf` is null here and never an aggregate; statistics are not invented for absent splits.
    assert!(run.aggregates.iter().all(|a| a.stat != "pdf"));
    assert!(run
        .aggregates
        .iter()
        .all(|a| a.name != "metrics.time_to_first_token_ms.errored"));
}

#[test]
fn fixture_config_is_the_header_without_rows() {
    let import = parse_text(ImportFormat::Guidellm, NAME, &report()).unwrap();
    let config = &import.runs[0].config;
    assert_eq!(config["metadata"]["version"], 2);
    assert_eq!(config["config"]["spec"]["profile"]["kind"], "constant");
    let benchmark = &config["benchmark"];
    assert_eq!(benchmark["config"]["strategy"]["rate"], 4.0);
    assert_eq!(benchmark["scheduler_metrics"]["requests_made"]["total"], 9);
    assert!(benchmark.get("requests").is_none());
    assert!(benchmark.get("metrics").is_none());
    assert!(config.get("benchmarks").is_none());
}

#[test]
fn fixture_warnings_say_what_is_missing() {
    let import = parse_text(ImportFormat::Guidellm, NAME, &report()).unwrap();
    let messages: Vec<(&str, &str, u64)> = import
        .warnings
        .iter()
        .map(|w| (w.at.as_str(), w.message.as_str(), w.rows))
        .collect();
    assert_eq!(
        messages,
        [(
            "$.benchmarks[0].requests.successful",
            "the report keeps 2 of 6 successful requests (GuideLLM samples rows); its aggregates \
             cover all 6",
            2
        )]
    );
}

#[test]
fn truncated_report_is_refused_where_it_stops() {
    let text = report();
    let cut = text.find("\"Bonjour !").unwrap();
    assert_eq!(
        error(&text[..cut]),
        "report-v2.json, line 156, column 22, $.benchmarks[0].requests.successful[1]: expected \
         the rest of the JSON document, found end of file (EOF while parsing a value): the file \
         is truncated"
    );
}

#[test]
fn wrong_type_is_refused_with_its_path() {
    let text = variant(
        "\"request_end\": 1760000000.25390625,",
        "\"request_end\": \"1760000000.25390625\",",
    );
    assert_eq!(
        error(&text),
        "report-v2.json, $.benchmarks[0].requests.successful[0].info.timings.request_end, field \
         `request_end`: expected a Unix time in seconds (a number) or null, found \
         \"1760000000.25390625\""
    );
}

#[test]
fn negative_latency_is_refused() {
    let text = variant(
        "\"first_token_iteration\": 1760000000.3125,",
        "\"first_token_iteration\": 1760000000.25,",
    );
    assert_eq!(
        error(&text),
        "report-v2.json, $.benchmarks[0].requests.successful[1].info.timings.first_token_iteration, \
         field `first_token_iteration`: expected a time ≥ request_start (1760000000.2519531), found \
         1760000000.25: a negative time to first token (-1.953 ms)"
    );
}

#[test]
fn nan_end_of_a_successful_request_is_refused() {
    // GuideLLM itself falls back from request_end to resolve_end: both NaN leave no end at all.
    let text = variant(
        "\"request_end\": 1760000000.25390625,",
        "\"request_end\": NaN,",
    )
    .replacen(
        "\"resolve_end\": 1760000000.2541,",
        "\"resolve_end\": NaN,",
        1,
    );
    assert_eq!(
        error(&text),
        "report-v2.json, $.benchmarks[0].requests.successful[0].info.timings.request_end, field \
         `request_end`: expected a Unix time in seconds: a successful request was sent and ended \
         (NaN reads as null), found null"
    );
}

#[test]
fn nan_statistic_reads_as_absent_with_a_warning() {
    let text = variant(
        "\"variance\": 1.21, \"std_dev\": 1.1,",
        "\"variance\": NaN, \"std_dev\": NaN,",
    );
    let import = parse_text(ImportFormat::Guidellm, NAME, &text).unwrap();
    let run = &import.runs[0];
    let ttft = "metrics.time_to_first_token_ms.successful";
    assert!(run
        .aggregates
        .iter()
        .all(|a| !(a.name == ttft && a.stat == "std_dev")));
    assert_eq!(aggregate(run, ttft, "mean").value, 59.9);
    assert_eq!(
        import.warnings[0].message,
        "2 NaN/Infinity value(s) (Python's non-standard JSON) read as absent, not 0"
    );
}

#[test]
fn nan_first_token_reads_as_absent() {
    let text = variant(
        "\"first_token_iteration\": 1760000000.0625,",
        "\"first_token_iteration\": NaN,",
    );
    let import = parse_text(ImportFormat::Guidellm, NAME, &text).unwrap();
    let first = &import.runs[0].requests[0];
    assert_eq!(first.first_token_ms, None);
    assert_eq!(first.status, RequestStatus::Ok);
}

#[test]
fn duplicate_request_id_is_refused() {
    let text = variant(
        "\"request_id\": \"b1c0c2a4-1f0e-4e0b-9c57-6f0a4c1d7e03\",\n            \"response_id\"",
        "\"request_id\": \"b1c0c2a4-1f0e-4e0b-9c57-6f0a4c1d7e01\",\n            \"response_id\"",
    );
    assert_eq!(
        error(&text),
        "report-v2.json, $.benchmarks[0].requests.errored[0].request_id, field `request_id`: \
         expected a request_id unique within its benchmark, found \
         \"b1c0c2a4-1f0e-4e0b-9c57-6f0a4c1d7e01\", already used at \
         $.benchmarks[0].requests.successful[0]"
    );
}

#[test]
fn end_before_start_is_refused() {
    let text = variant(
        "\"request_end\": 1760000000.515625,",
        "\"request_end\": 1760000000.5,",
    );
    assert_eq!(
        error(&text),
        "report-v2.json, $.benchmarks[0].requests.errored[0].info.timings.request_end, field \
         `request_end`: expected a time ≥ request_start (1760000000.5039063), found 1760000000.5: \
         the request would end 3.906 ms before it started"
    );
}

#[test]
fn not_a_report_is_refused() {
    assert_eq!(
        error("[1, 2]"),
        "report-v2.json, line 1, column 1, $: expected a GuideLLM report object, found an array"
    );
    assert_eq!(
        error("{\"benchmarks\": []}"),
        "report-v2.json, $.metadata, field `metadata`: expected a GuideLLM report with \
         `metadata.version` 1 or 2, found no `metadata` (a report written before GuideLLM 0.4?)"
    );
    let empty = "{\"metadata\": {\"version\": 2}, \"benchmarks\": []}";
    assert_eq!(
        error(empty),
        "report-v2.json, $.benchmarks, field `benchmarks`: expected at least one benchmark, found none"
    );
}
