use kvgate_core::run::RequestStatus;
use kvgate_formats::import::{Granularity, ImportFormat};

use crate::{parse_text, read_fixture};

const NAME: &str = "profile_export.jsonl";

fn export() -> String {
    read_fixture("aiperf/profile_export.jsonl")
}

/// The fixture with `from` replaced by `to` exactly once.
fn variant(from: &str, to: &str) -> String {
    let text = export();
    assert_eq!(
        text.matches(from).count(),
        1,
        "{from:?} must occur once in the fixture"
    );
    text.replacen(from, to, 1)
}

fn error(text: &str) -> String {
    parse_text(ImportFormat::Aiperf, NAME, text)
        .expect_err("the variant must be refused")
        .to_string()
}

#[test]
fn fixture_keeps_every_request_and_its_failure() {
    let import = parse_text(ImportFormat::Aiperf, NAME, &export()).unwrap();
    assert_eq!(import.tool.as_deref(), Some("aiperf"));
    assert_eq!(import.runs.len(), 1);
    let run = &import.runs[0];
    assert_eq!(run.label, "aiperf · profiling");
    assert_eq!(run.granularity, Granularity::PerRequest);
    // Zero is the first credit the rate limiter issued, 1 ms before the first request left.
    assert_eq!(run.wall_anchor_unix_ms, Some(1_759_999_999_999));
    assert_eq!(run.requests.len(), 4);

    let ok = &run.requests[0];
    assert_eq!(ok.status, RequestStatus::Ok);
    assert_eq!(ok.planned_arrival_ms, 0.0);
    assert_eq!(ok.dispatch_ms, Some(1.0));
    assert_eq!(ok.client_delay_ms, Some(1.0));
    assert_eq!(ok.first_token_ms, Some(61.5));
    assert_eq!(ok.ttft_ms(), Some(60.5));
    assert_eq!(ok.chunk_times_ms, vec![61.5, 71.5, 82.5, 95.0]);
    assert_eq!(ok.finish_ms, Some(401.0));
    assert_eq!(ok.e2e_ms(), Some(400.0));
    assert_eq!(
        (ok.prompt_tokens, ok.completion_tokens),
        (Some(550), Some(4))
    );
    assert_eq!(ok.output_text, "");
    assert_eq!(ok.http_status, None);

    let second = &run.requests[1];
    assert_eq!(second.planned_arrival_ms, 250.5);
    assert_eq!(second.client_delay_ms, Some(0.5));
    assert_eq!(second.ttft_ms(), Some(45.25));
    assert_eq!(second.chunk_times_ms.len(), 2);

    let cancelled = &run.requests[2];
    assert_eq!(cancelled.status, RequestStatus::Unfinished);
    assert_eq!(cancelled.planned_arrival_ms, 501.0);
    assert_eq!(cancelled.client_delay_ms, None);
    assert_eq!(cancelled.dispatch_ms, Some(501.0));
    assert_eq!(cancelled.finish_ms, None);
    assert_eq!(cancelled.first_token_ms, None);
    assert_eq!(cancelled.http_status, None);
    assert_eq!(
        cancelled.error.as_deref(),
        Some("RequestCancellationError: Request was cancelled after 0.012 seconds")
    );
    assert_eq!(cancelled.prompt_tokens, Some(550));
    assert_eq!(cancelled.completion_tokens, None);

    let failed = &run.requests[3];
    assert_eq!(failed.status, RequestStatus::Error);
    assert_eq!(failed.http_status, Some(500));
    assert_eq!(failed.dispatch_ms, Some(752.0));
    assert_eq!(failed.finish_ms, Some(764.0));
    assert_eq!(
        failed.error.as_deref(),
        Some("InternalServerError: Server encountered an internal error")
    );
    assert_eq!(failed.prompt_tokens, Some(549));
}

#[test]
fn fixture_warnings_say_what_the_file_lacks() {
    let import = parse_text(ImportFormat::Aiperf, NAME, &export()).unwrap();
    let warnings: Vec<(&str, u64)> = import
        .warnings
        .iter()
        .map(|w| (w.message.as_str(), w.rows))
        .collect();
    assert_eq!(
        warnings,
        [
            (
                "profile_export.jsonl carries no run configuration and no aggregates (AIPerf \
                 writes those to profile_export_aiperf.json)",
                0
            ),
            (
                "AIPerf exports no response text: the content of these responses cannot be \
                 validated",
                2
            ),
        ]
    );
}

#[test]
fn truncated_line_is_refused_on_its_line() {
    let text = export();
    let cut = text.rfind("\"error_isl\"").unwrap();
    assert_eq!(
        error(&text[..cut]),
        "profile_export.jsonl, line 4, column 552, $: expected the rest of the JSON object on this \
         line, found the end of the line (EOF while parsing an object): the line is cut short"
    );
}

#[test]
fn wrong_type_is_refused_on_its_line() {
    let text = variant(
        "\"request_start_ns\": 1760000000250000000,",
        "\"request_start_ns\": \"1760000000250000000\",",
    );
    assert_eq!(
        error(&text),
        "profile_export.jsonl, line 2, $.metadata.request_start_ns, field `request_start_ns`: \
         expected a Unix time in whole nanoseconds (a non-negative integer), found \
         \"1760000000250000000\""
    );
}

#[test]
fn negative_latency_is_refused() {
    let text = variant(
        "\"time_to_first_token\": {\"value\": 45.25,",
        "\"time_to_first_token\": {\"value\": -45.25,",
    );
    assert_eq!(
        error(&text),
        "profile_export.jsonl, line 2, $.metrics.time_to_first_token.value, field `value`: \
         expected a finite, non-negative duration, found -45.25"
    );
}

#[test]
fn nan_latency_reads_as_absent_with_a_warning() {
    let text = variant(
        "\"time_to_first_token\": {\"value\": 45.25,",
        "\"time_to_first_token\": {\"value\": NaN,",
    );
    let import = parse_text(ImportFormat::Aiperf, NAME, &text).unwrap();
    let second = &import.runs[0].requests[1];
    assert_eq!(second.first_token_ms, None);
    assert!(second.chunk_times_ms.is_empty());
    assert_eq!(second.status, RequestStatus::Ok);
    let nan = &import.warnings[1];
    assert_eq!(
        (nan.message.as_str(), nan.rows),
        (
            "1 NaN/Infinity value(s) (Python's non-standard JSON) on 1 line(s) read as absent, not 0",
            1
        )
    );
}

#[test]
fn nan_timestamp_is_refused() {
    let text = variant(
        "\"request_end_ns\": 1760000000731250000,",
        "\"request_end_ns\": NaN,",
    );
    assert_eq!(
        error(&text),
        "profile_export.jsonl, line 2, $.metadata.request_end_ns, field `request_end_ns`: \
         expected a Unix time in whole nanoseconds (a non-negative integer), found null or NaN"
    );
}

#[test]
fn duplicate_request_id_is_refused() {
    let text = variant(
        "\"x_request_id\": \"e1f2a3b4-c5d6-4e7f-8a9b-0c1d2e3f4a5b\"",
        "\"x_request_id\": \"7609a2e7-aa53-4ab1-98f4-f35ecafefd25\"",
    );
    assert_eq!(
        error(&text),
        "profile_export.jsonl, line 4, $.metadata.x_request_id, field `x_request_id`: expected a \
         request id unique in the file, found \"7609a2e7-aa53-4ab1-98f4-f35ecafefd25\", already on \
         line 1"
    );
}

#[test]
fn end_before_start_is_refused() {
    let text = variant(
        "\"request_end_ns\": 1760000000763000000",
        "\"request_end_ns\": 1760000000750000000",
    );
    assert_eq!(
        error(&text),
        "profile_export.jsonl, line 4, $.metadata.request_end_ns, field `request_end_ns`: \
         expected a time ≥ request_start_ns (1760000000751000000), found 1760000000750000000: the \
         request would end 1 ms before it started"
    );
}

#[test]
fn first_token_after_the_end_is_refused() {
    let text = variant(
        "\"time_to_first_token\": {\"value\": 60.5,",
        "\"time_to_first_token\": {\"value\": 600.5,",
    );
    assert_eq!(
        error(&text),
        "profile_export.jsonl, line 1, $.metrics.time_to_first_token.value, field `value`: \
         expected at most the request's duration (400 ms, request_end_ns − request_start_ns), \
         found 600.5 ms: the first token would arrive after the request ended"
    );
}

#[test]
fn blank_lines_and_crlf_are_fine() {
    let text = export().replace('\n', "\r\n\r\n");
    let import = parse_text(ImportFormat::Aiperf, NAME, &text).unwrap();
    assert_eq!(import.runs[0].requests.len(), 4);
    assert_eq!(
        error("\n  \n"),
        "profile_export.jsonl, $: expected at least one request record (one JSON object per \
         line), found no records"
    );
}
