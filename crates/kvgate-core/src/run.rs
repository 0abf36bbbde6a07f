//! A run's measurements: one request record per planned request, all times in milliseconds on
//! the run's single monotonic clock (zero = run start), anchored once to the wall clock.
//!
//! A measurement that was not taken is `None` (JSON `null`), never 0: a request that never got a
//! first token has no TTFT, and a server that sent no `usage` has no token counts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::validator::ResponseOutcome;

/// How one request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RequestStatus {
    /// The stream completed with `[DONE]`.
    Ok,
    /// HTTP status ≥ 400, a transport failure, a broken or malformed stream.
    Error,
    /// The request's own deadline passed before `[DONE]`.
    Timeout,
    /// Refused without being served: HTTP 429 from the server, or never dispatched because the
    /// run was cancelled first (then `dispatch_ms` is `None`).
    Rejected,
    /// Still running at the run's drain deadline (or at cancellation) and abandoned there.
    Unfinished,
}

impl RequestStatus {
    pub const ALL: [RequestStatus; 5] = [
        RequestStatus::Ok,
        RequestStatus::Error,
        RequestStatus::Timeout,
        RequestStatus::Rejected,
        RequestStatus::Unfinished,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RequestStatus::Ok => "ok",
            RequestStatus::Error => "error",
            RequestStatus::Timeout => "timeout",
            RequestStatus::Rejected => "rejected",
            RequestStatus::Unfinished => "unfinished",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == s)
    }
}

/// What a run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    /// Fixture items sent and their responses judged by the validator.
    Quality,
    /// Requests sent on a schedule to measure latency and throughput.
    Load,
}

impl RunKind {
    pub const ALL: [RunKind; 2] = [RunKind::Quality, RunKind::Load];

    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Quality => "quality",
            RunKind::Load => "load",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == s)
    }
}

/// Where a run is in its life. Every state but `Running` is final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Running,
    /// Every planned request reached a final status.
    Completed,
    /// The user stopped it; requests never sent are stored as `rejected`, running ones as `unfinished`.
    Cancelled,
    /// The process running it ended before it finished; nothing it measured was stored.
    Interrupted,
    /// It could not go on; the note says why.
    Failed,
}

impl RunState {
    pub const ALL: [RunState; 5] = [
        RunState::Running,
        RunState::Completed,
        RunState::Cancelled,
        RunState::Interrupted,
        RunState::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Completed => "completed",
            RunState::Cancelled => "cancelled",
            RunState::Interrupted => "interrupted",
            RunState::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == s)
    }

    /// True for every final state: the run and everything under it can no longer change.
    pub fn is_finished(self) -> bool {
        self != RunState::Running
    }
}

/// Where a run's data came from. Synthetic data is labelled wherever it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunProvenance {
    /// Executed and recorded by KV Gate against a real endpoint.
    Recorded,
    /// Read from a file another tool (or another KV Gate) wrote.
    Imported,
    /// Generated demo data, not a measurement.
    SyntheticDemo,
}

impl RunProvenance {
    pub const ALL: [RunProvenance; 3] = [
        RunProvenance::Recorded,
        RunProvenance::Imported,
        RunProvenance::SyntheticDemo,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunProvenance::Recorded => "recorded",
            RunProvenance::Imported => "imported",
            RunProvenance::SyntheticDemo => "synthetic_demo",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// How much of a run its source carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    /// One row per request.
    PerRequest,
    /// Only the tool's aggregates (counts, percentiles): no per-request rows exist.
    Aggregate,
    /// No requests at all: startup evidence or metric scrapes only.
    Evidence,
}

impl Granularity {
    pub const ALL: [Granularity; 3] = [
        Granularity::PerRequest,
        Granularity::Aggregate,
        Granularity::Evidence,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Granularity::PerRequest => "per_request",
            Granularity::Aggregate => "aggregate",
            Granularity::Evidence => "evidence",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|g| g.as_str() == s)
    }
}

/// The stored word of each run enum is also how it is shown in text.
macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(RunKind, RunState, RunProvenance, Granularity, RequestStatus);

/// Everything the client observed about one request. Times are milliseconds since run start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestRecord {
    /// Position in the run's plan, from 0.
    pub index: u32,
    /// The fixture item sent, when the request came from a corpus.
    pub item_id: Option<String>,
    /// sha256 of what was sent (`kvgate_core::pairing::prompt_sha256`: messages, decoding
    /// parameters, output cap, stops); absent in records made before it was recorded and in
    /// other tools' files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub prompt_sha256: Option<String>,
    /// When the schedule wanted the request sent. Closed loop: when a worker became free for it.
    pub planned_arrival_ms: f64,
    /// When the client actually handed the request to the connection; `None` if never sent.
    pub dispatch_ms: Option<f64>,
    /// `dispatch_ms − planned_arrival_ms`: how late the client itself was.
    pub client_delay_ms: Option<f64>,
    /// Arrival of the first chunk that carried output text.
    pub first_token_ms: Option<f64>,
    /// Arrival of every chunk that carried output text (network chunk times, not engine times).
    pub chunk_times_ms: Vec<f64>,
    /// When the response ended: `[DONE]` for `ok`, the failure for `error`/`rejected`; `None` for
    /// `timeout` and `unfinished` (they never ended) and for requests never sent.
    pub finish_ms: Option<f64>,
    pub status: RequestStatus,
    /// The HTTP status line's code, when a response head arrived.
    pub http_status: Option<u16>,
    /// What went wrong: the response body excerpt (≤ 2 KB) or the transport or parse error.
    pub error: Option<String>,
    /// The text streamed so far (complete for `ok`, partial otherwise).
    pub output_text: String,
    /// From the server's `usage`; `None` when it sent none.
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`: prefix-cache hits, when reported.
    pub cached_prompt_tokens: Option<u64>,
    /// `length`, `stop`, … as the server sent it.
    pub finish_reason: Option<String>,
    /// The engine's own timing object, verbatim (llama.cpp `timings`); vLLM sends none.
    #[ts(type = "Record<string, unknown> | null")]
    pub engine_timings: Option<serde_json::Value>,
}

impl RequestRecord {
    /// Time to first token measured from actual dispatch, when both exist.
    pub fn ttft_ms(&self) -> Option<f64> {
        Some(self.first_token_ms? - self.dispatch_ms?)
    }

    /// End-to-end latency from actual dispatch, for a request that ended.
    pub fn e2e_ms(&self) -> Option<f64> {
        Some(self.finish_ms? - self.dispatch_ms?)
    }

    /// What the validator judges: an `ok` stream is the completed text (or empty output); every
    /// other status is a failure of its own kind. Nothing is skipped: a failed request gets a
    /// verdict (rejected) like any other, so it stays in every denominator.
    pub fn response_outcome(&self) -> ResponseOutcome {
        match self.status {
            RequestStatus::Ok if self.output_text.trim().is_empty() => ResponseOutcome::Empty,
            RequestStatus::Ok => ResponseOutcome::Completed {
                text: self.output_text.clone(),
            },
            RequestStatus::Timeout | RequestStatus::Unfinished => ResponseOutcome::Timeout,
            RequestStatus::Error | RequestStatus::Rejected => {
                let mut message = self.status.as_str().to_owned();
                if let Some(code) = self.http_status {
                    message.push_str(&format!(" (HTTP {code})"));
                }
                if let Some(error) = &self.error {
                    message.push_str(": ");
                    message.push_str(error);
                }
                ResponseOutcome::Error { message }
            }
        }
    }

    /// Gaps between consecutive text chunks as they arrived over the network.
    pub fn chunk_gaps_ms(&self) -> Vec<f64> {
        self.chunk_times_ms
            .windows(2)
            .map(|w| w[1] - w[0])
            .collect()
    }
}

/// The single link between a run's monotonic clock and the wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunTiming {
    /// Unix time in milliseconds of the run clock's zero, read once when the run started.
    pub wall_anchor_unix_ms: i64,
}

/// Progress of a run while it executes, for progress bars and app events.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RunProgress {
    /// Requests in the plan; `None` when a closed loop runs for a duration (unknown in advance).
    pub planned: Option<u32>,
    /// Requests dispatched so far.
    pub sent: u32,
    /// Requests that reached a final status (any status, failures included). The last report
    /// of a run counts every planned request, those never dispatched included.
    pub finished: u32,
    /// Of `finished`, those whose status is not `ok`.
    pub failed: u32,
    /// Milliseconds since run start.
    pub elapsed_ms: f64,
}

/// The order in which several cells of one series are run, one after another, recorded with the
/// seed in each run's configuration (`cell_order`). The guide asks for a randomized run order:
/// always running B0 first would tie every candidate to whatever drifts over the series (a
/// warming machine, a neighbour's load). The order depends on the set of cells and the seed only,
/// not on how the cells were listed; a cell named twice runs once.
pub fn cell_order(cells: &[String], seed: u64) -> Vec<String> {
    let mut order: Vec<String> = cells
        .iter()
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    crate::prng::SplitMix64::from_label(&format!("cell-order/{seed}")).shuffle(&mut order);
    order
}

/// Where one run stands in a series run in [`cell_order`], as its configuration records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CellOrder {
    /// The seed the order was drawn from.
    #[ts(type = "number")]
    pub seed: u64,
    /// Every cell of the series, in the order run.
    pub order: Vec<String>,
    /// This run's place in `order`, from 0.
    pub position: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(names: &[&str]) -> Vec<String> {
        names.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn the_cell_order_is_seeded_and_the_same_for_the_same_seed() {
        let a = cell_order(&cells(&["B0", "C1", "C2", "C3"]), 42);
        assert_eq!(a, cell_order(&cells(&["B0", "C1", "C2", "C3"]), 42));
        // How the cells were listed does not matter; a repeated cell runs once.
        assert_eq!(a, cell_order(&cells(&["C3", "C2", "B0", "C1", "B0"]), 42));
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, cells(&["B0", "C1", "C2", "C3"]));
        assert!((0..20).any(|s| cell_order(&cells(&["B0", "C1", "C2", "C3"]), s) != a));
    }

    #[test]
    fn the_baseline_is_not_always_first() {
        // The order the cells were listed in (B0 first) is not the order run: over seeds, B0
        // comes second about half of the time.
        let two = cells(&["B0", "Q8"]);
        let b0_first = (0..200u64)
            .filter(|s| cell_order(&two, *s)[0] == "B0")
            .count();
        assert!((60..=140).contains(&b0_first), "B0 first {b0_first} of 200");
    }

    fn record() -> RequestRecord {
        RequestRecord {
            index: 3,
            item_id: Some("item-7".into()),
            prompt_sha256: None,
            planned_arrival_ms: 10.0,
            dispatch_ms: Some(10.25),
            client_delay_ms: Some(0.25),
            first_token_ms: Some(40.5),
            chunk_times_ms: vec![40.5, 52.0, 61.5],
            finish_ms: Some(70.0),
            status: RequestStatus::Ok,
            http_status: Some(200),
            error: None,
            output_text: "{\"a\":1}".into(),
            prompt_tokens: None,
            completion_tokens: Some(3),
            cached_prompt_tokens: None,
            finish_reason: Some("stop".into()),
            engine_timings: Some(serde_json::json!({"predicted_n": 3})),
        }
    }

    #[test]
    fn run_status_strings_round_trip() {
        for status in RequestStatus::ALL {
            assert_eq!(RequestStatus::parse(status.as_str()), Some(status));
            assert_eq!(
                serde_json::to_value(status).unwrap(),
                serde_json::Value::String(status.as_str().into())
            );
        }
        assert_eq!(RequestStatus::parse("OK"), None);
    }

    #[test]
    fn run_record_keeps_missing_measurements_null_not_zero() {
        let json = serde_json::to_value(record()).unwrap();
        assert!(json["prompt_tokens"].is_null(), "{json}");
        assert!(json["cached_prompt_tokens"].is_null(), "{json}");
        assert_eq!(json["completion_tokens"], 3);
        let back: RequestRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back, record());
    }

    #[test]
    fn run_record_rejects_unknown_fields() {
        let mut json = serde_json::to_value(record()).unwrap();
        json["ttft"] = 0.into();
        let err = serde_json::from_value::<RequestRecord>(json).unwrap_err();
        assert!(err.to_string().contains("ttft"), "{err}");
    }

    #[test]
    fn run_record_outcome_keeps_failures_for_the_validator() {
        assert_eq!(
            record().response_outcome(),
            ResponseOutcome::Completed {
                text: "{\"a\":1}".into()
            }
        );
        let empty = RequestRecord {
            output_text: "  ".into(),
            ..record()
        };
        assert_eq!(empty.response_outcome(), ResponseOutcome::Empty);
        let failed = RequestRecord {
            status: RequestStatus::Error,
            http_status: Some(500),
            error: Some("boom".into()),
            ..record()
        };
        assert_eq!(
            failed.response_outcome(),
            ResponseOutcome::Error {
                message: "error (HTTP 500): boom".into()
            }
        );
        for status in [RequestStatus::Timeout, RequestStatus::Unfinished] {
            let r = RequestRecord { status, ..record() };
            assert_eq!(r.response_outcome(), ResponseOutcome::Timeout);
        }
    }

    #[test]
    fn run_record_derived_latencies() {
        let r = record();
        assert_eq!(r.ttft_ms(), Some(30.25));
        assert_eq!(r.e2e_ms(), Some(59.75));
        assert_eq!(r.chunk_gaps_ms(), vec![11.5, 9.5]);
        let never_sent = RequestRecord {
            dispatch_ms: None,
            client_delay_ms: None,
            ..record()
        };
        assert_eq!(never_sent.ttft_ms(), None);
        assert_eq!(never_sent.e2e_ms(), None);
        let no_token = RequestRecord {
            first_token_ms: None,
            ..record()
        };
        assert_eq!(no_token.ttft_ms(), None);
        let never_ended = RequestRecord {
            status: RequestStatus::Timeout,
            finish_ms: None,
            ..record()
        };
        assert_eq!(never_ended.e2e_ms(), None);
    }

    #[test]
    fn run_types_export_to_typescript_and_json_schema() {
        let cfg = crate::ts_config();
        let decl = <RequestRecord as TS>::decl(&cfg);
        assert!(decl.contains("first_token_ms: number | null"), "{decl}");
        assert!(decl.contains("prompt_tokens: number | null"), "{decl}");
        assert!(decl.contains("chunk_times_ms: Array<number>"), "{decl}");
        let timing = <RunTiming as TS>::decl(&cfg);
        assert!(timing.contains("wall_anchor_unix_ms: number"), "{timing}");

        let schema = serde_json::to_value(schemars::schema_for!(RequestRecord)).unwrap();
        let tokens = &schema["properties"]["prompt_tokens"]["type"];
        assert_eq!(tokens, &serde_json::json!(["integer", "null"]), "{schema}");
    }
}
