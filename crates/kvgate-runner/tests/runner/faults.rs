//! One request per fault: each ends as a record with its status, HTTP status, error text and
//! whatever arrived before the fault.

use std::time::{Duration, Instant};

use kvgate_runner::{Api, RequestRecord, RequestStatus, RunClock};

use crate::server::{self, TEXT};
use crate::{chat_request, client, DEADLINE};

async fn one(mode: &str, api: Api, deadline: Duration) -> RequestRecord {
    let server = server::start().await;
    let client = client(server.base(mode), api);
    let clock = RunClock::start();
    client
        .send_streaming(7, &chat_request("item-1"), deadline, &clock)
        .await
}

fn assert_times_consistent(r: &RequestRecord) {
    let dispatch = r.dispatch_ms.expect("dispatched");
    assert_eq!(r.client_delay_ms, Some(dispatch - r.planned_arrival_ms));
    assert!(r.chunk_times_ms.windows(2).all(|w| w[0] <= w[1]), "{r:?}");
    if let Some(first) = r.first_token_ms {
        assert!(first >= dispatch, "{r:?}");
        assert_eq!(Some(first), r.chunk_times_ms.first().copied());
        if let Some(finish) = r.finish_ms {
            assert!(first <= finish, "{r:?}");
            assert!(r.chunk_times_ms.iter().all(|t| *t <= finish), "{r:?}");
        }
    }
}

#[tokio::test]
async fn a_key_echoed_by_the_server_is_not_recorded() {
    let r = one("echo-auth", Api::Chat, DEADLINE).await;
    assert_eq!(r.http_status, Some(401));
    assert_eq!(
        r.error.as_deref(),
        Some("unauthorized; you sent Authorization: Bearer <redacted>")
    );
    assert!(!format!("{r:?}").contains("sk-test-secret"));
}

#[tokio::test]
async fn normal_stream_records_text_usage_timings_and_chunk_times() {
    let server = server::start().await;
    let client = client(server.base("normal"), Api::Chat);
    let clock = RunClock::start();
    let r = client
        .send_streaming(7, &chat_request("item-1"), DEADLINE, &clock)
        .await;
    assert_eq!(r.status, RequestStatus::Ok, "{r:?}");
    assert_eq!(r.index, 7);
    assert_eq!(r.item_id.as_deref(), Some("item-1"));
    assert_eq!(r.http_status, Some(200));
    assert_eq!(r.error, None);
    assert_eq!(r.output_text, TEXT);
    assert_eq!(r.prompt_tokens, Some(11));
    assert_eq!(r.completion_tokens, Some(4));
    assert_eq!(r.cached_prompt_tokens, Some(3));
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    assert_eq!(r.engine_timings.as_ref().unwrap()["predicted_n"], 4);
    assert_eq!(r.chunk_times_ms.len(), 4);
    // Tokens were written 5 ms apart: their arrival times strictly increase.
    assert!(r.chunk_times_ms.windows(2).all(|w| w[0] < w[1]), "{r:?}");
    assert!(r.finish_ms.unwrap() > *r.chunk_times_ms.last().unwrap());
    assert_times_consistent(&r);
    // No schedule: planned arrival is the dispatch itself.
    assert_eq!(r.client_delay_ms, Some(0.0));

    let seen = server.stats.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/normal/v1/chat/completions");
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some("Bearer sk-test-secret")
    );
    assert_eq!(seen[0].body["model"], "smollm2-135m");
    assert_eq!(seen[0].body["stream"], true);
    assert_eq!(seen[0].body["stream_options"]["include_usage"], true);
    assert_eq!(seen[0].body["max_tokens"], 4);
}

#[tokio::test]
async fn missing_usage_leaves_token_counts_absent_not_zero() {
    let r = one("nousage", Api::Chat, DEADLINE).await;
    assert_eq!(r.status, RequestStatus::Ok, "{r:?}");
    assert_eq!(r.output_text, TEXT);
    assert_eq!(r.prompt_tokens, None);
    assert_eq!(r.completion_tokens, None);
    assert_eq!(r.cached_prompt_tokens, None);
    // llama.cpp puts `timings` on the finish chunk when usage is not requested.
    assert_eq!(r.engine_timings.as_ref().unwrap()["prompt_n"], 11);
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    let json = serde_json::to_value(&r).unwrap();
    assert!(json["prompt_tokens"].is_null());
}

#[tokio::test]
async fn completions_api_streams_choice_text() {
    let r = one("normal", Api::Completions, DEADLINE).await;
    assert_eq!(r.status, RequestStatus::Ok, "{r:?}");
    assert_eq!(r.output_text, TEXT);
    assert_eq!(r.chunk_times_ms.len(), 4);
    assert_eq!(r.completion_tokens, Some(4));
    assert_times_consistent(&r);
}

#[tokio::test]
async fn byte_by_byte_stream_with_crlf_comments_and_fields_decodes() {
    for api in [Api::Chat, Api::Completions] {
        let r = one("split", api, DEADLINE).await;
        assert_eq!(r.status, RequestStatus::Ok, "{api:?} {r:?}");
        assert_eq!(r.output_text, TEXT);
        assert_eq!(r.chunk_times_ms.len(), 4);
        assert_eq!(r.prompt_tokens, Some(11));
        assert_times_consistent(&r);
    }
}

#[tokio::test]
async fn http_500_is_an_error_with_status_and_body_excerpt() {
    let r = one("http500", Api::Chat, DEADLINE).await;
    assert_eq!(r.status, RequestStatus::Error);
    assert_eq!(r.http_status, Some(500));
    assert!(
        r.error.as_deref().unwrap().contains("model exploded"),
        "{r:?}"
    );
    assert!(r.finish_ms.is_some());
    assert_eq!(r.first_token_ms, None);
    assert_eq!(r.output_text, "");
    assert_eq!(r.completion_tokens, None);
}

#[tokio::test]
async fn http_429_is_rejected_by_the_server() {
    let r = one("http429", Api::Chat, DEADLINE).await;
    assert_eq!(r.status, RequestStatus::Rejected);
    assert_eq!(r.http_status, Some(429));
    assert!(r.dispatch_ms.is_some());
    assert!(
        r.error.as_deref().unwrap().contains("admission limit"),
        "{r:?}"
    );
}

#[tokio::test]
async fn unknown_route_404_is_an_error() {
    let r = one("nosuchmode", Api::Chat, DEADLINE).await;
    assert_eq!(r.status, RequestStatus::Error);
    assert_eq!(r.http_status, Some(404));
    assert!(
        r.error.as_deref().unwrap().contains("unknown mode"),
        "{r:?}"
    );
}

#[tokio::test]
async fn connection_reset_mid_stream_keeps_the_text_so_far() {
    let r = one("reset", Api::Chat, DEADLINE).await;
    assert_eq!(r.status, RequestStatus::Error, "{r:?}");
    assert_eq!(r.http_status, Some(200));
    assert_eq!(r.output_text, "Hello,");
    assert_eq!(r.chunk_times_ms.len(), 2);
    let error = r.error.as_deref().unwrap();
    assert!(error.contains("stream broke after 3 SSE events"), "{error}");
    assert!(r.finish_ms.is_some());
    assert_eq!(r.completion_tokens, None);
    assert_times_consistent(&r);
}

#[tokio::test]
async fn a_stall_past_the_deadline_is_a_timeout_with_partial_text() {
    let started = Instant::now();
    let r = one("stall", Api::Chat, Duration::from_millis(300)).await;
    let took = started.elapsed();
    assert_eq!(r.status, RequestStatus::Timeout, "{r:?}");
    assert_eq!(r.output_text, "Hello");
    assert_eq!(r.chunk_times_ms.len(), 1);
    assert_eq!(r.finish_ms, None);
    assert!(r
        .error
        .as_deref()
        .unwrap()
        .contains("300 ms request deadline"));
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(2),
        "{took:?}"
    );
    assert_times_consistent(&r);
}

#[tokio::test]
async fn malformed_sse_json_names_the_event_and_the_parse_error() {
    let r = one("malformed", Api::Chat, DEADLINE).await;
    assert_eq!(r.status, RequestStatus::Error, "{r:?}");
    let error = r.error.as_deref().unwrap();
    assert!(error.contains("malformed SSE data in event 3"), "{error}");
    assert!(error.contains("EOF while parsing"), "{error}");
    assert_eq!(r.output_text, "Hello");
}

#[tokio::test]
async fn an_error_object_mid_stream_is_an_error() {
    let r = one("error-event", Api::Chat, DEADLINE).await;
    assert_eq!(r.status, RequestStatus::Error);
    assert!(r.error.as_deref().unwrap().contains("KV cache exhausted"));
    assert_eq!(r.output_text, "Hello");
}

#[tokio::test]
async fn a_stream_closed_without_done_is_an_error() {
    let r = one("no-done", Api::Chat, DEADLINE).await;
    assert_eq!(r.status, RequestStatus::Error);
    let error = r.error.as_deref().unwrap();
    assert!(
        error.contains("ended before [DONE] after 3 SSE events"),
        "{error}"
    );
    assert_eq!(r.output_text, "Hello,");
}

#[tokio::test]
async fn a_non_streaming_answer_is_an_error_naming_the_content_type() {
    let r = one("json", Api::Chat, DEADLINE).await;
    assert_eq!(r.status, RequestStatus::Error);
    let error = r.error.as_deref().unwrap();
    assert!(error.contains("no SSE events"), "{error}");
    assert!(error.contains("application/json"), "{error}");
}

#[tokio::test]
async fn a_refused_connection_is_an_error_without_http_status() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let client = client(format!("http://{addr}"), Api::Chat);
    let r = client
        .send_streaming(0, &chat_request("x"), DEADLINE, &RunClock::start())
        .await;
    assert_eq!(r.status, RequestStatus::Error);
    assert_eq!(r.http_status, None);
    assert!(r.dispatch_ms.is_some());
    let error = r.error.as_deref().unwrap();
    assert!(error.contains("connection failed"), "{error}");
    assert!(!error.contains("sk-test-secret"));
}

#[tokio::test]
async fn a_kept_alive_connection_closed_unanswered_is_resent_once_on_a_new_one() {
    let server = server::start().await;
    let client = client(server.base("close-second"), Api::Chat);
    let clock = RunClock::start();
    let mut records = Vec::new();
    for index in 0..3 {
        let r = client
            .send_streaming(index, &chat_request("x"), Duration::from_secs(5), &clock)
            .await;
        records.push(r);
    }
    for r in &records {
        assert_eq!(r.status, RequestStatus::Ok, "{r:?}");
        assert_eq!(r.output_text, server::TEXT);
    }
    // Requests 2 and 3 each reached the server twice: dropped unanswered as the second request
    // of a connection, then answered as the first of a new one.
    assert_eq!(
        server
            .stats
            .requests
            .load(std::sync::atomic::Ordering::SeqCst),
        5
    );
}
