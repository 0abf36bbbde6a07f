//! The runner: sends fixture prompts and load traces to OpenAI-compatible endpoints over
//! streaming HTTP, records every request's timings on one monotonic clock, and scrapes `/metrics`.
//!
//! It must not judge responses (the validator lives in `kvgate-core`) and must never drop a
//! request from the record: failures, timeouts and unfinished requests are stored like successes.
