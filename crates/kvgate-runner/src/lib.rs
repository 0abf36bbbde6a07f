//! The runner: sends fixture prompts and load traces to OpenAI-compatible endpoints over
//! streaming HTTP, records every request's timings on one monotonic clock, and scrapes `/metrics`.
//!
//! It must not judge responses (the validator lives in `kvgate-core`) and must never drop a
//! request from the record: failures, timeouts and unfinished requests are stored like successes.
//!
//! - [`client`]: one streaming request → one [`RequestRecord`], never an `Err`.
//! - [`arrivals`]: seeded open-loop arrival times (Poisson, gamma, constant, trace replay).
//! - [`schedule`]: the open-loop dispatcher and the closed-loop workers.
//! - [`quality`]: the randomized, repeated order of a quality run and each item's request body.
//! - [`metrics`]: `/metrics` scraped at a fixed interval during a run.

pub mod arrivals;
pub mod client;
pub mod clock;
pub mod metrics;
pub mod quality;
pub mod schedule;
mod sse;

pub use arrivals::{parse_arrivals, parse_trace, Arrivals, ScheduleError, TraceError};
pub use client::{endpoint_origin, Api, Client, ClientError, Endpoint, PlannedRequest};
pub use clock::RunClock;
pub use kvgate_core::run::{RequestRecord, RequestStatus, RunProgress, RunTiming};
pub use metrics::{metrics_url, RawScrape, Scraper};
pub use quality::{chat_body, quality_order};
pub use schedule::{
    run_closed_loop, run_open_loop, ClosedLoop, ClosedLoopLimit, OpenLoop, RunOutcome,
};
pub use tokio_util::sync::CancellationToken;
