//! The domain of KV Gate: studies, manifests, fixtures, validation, statistics, goodput,
//! the KV capacity model and the decision table, as plain types and pure functions.
//!
//! This crate must not do I/O of any kind: no files, no network, no clock, no database, no async.
//! Every rule of the product lives here so that a rule change touches this crate only; the
//! other crates feed it data and store what it returns.
//!
//! Words: "the guide" is the KV-precision review guide the product implements (its manifest
//! fields, decision table, fixture record and checklist are quoted from it); "seed" always means
//! the seed of a random generator ([`prng`]).
//!
//! Tests: a module that is one file ends with its `mod tests`; a module that is a folder
//! (`analysis/`, `fixtures/`, `manifest/`, `validator/`) keeps them in its `tests.rs`.

pub mod analysis;
pub mod canonical;
pub mod checklist;
pub mod compat;
pub mod decision;
pub mod device_memory;
pub mod display;
pub mod evidence;
pub mod fixtures;
pub mod harness;
pub mod kv_capacity;
pub mod manifest;
pub mod metrics;
pub mod operating_point;
pub mod pairing;
pub mod policy;
pub mod prng;
pub mod recovery;
pub mod review;
pub mod run;
pub mod stats;
pub mod study;
pub mod sweep;
pub mod table;
pub mod test_cell;
pub mod validator;
pub mod warmup;

/// How the TypeScript bindings are written (the UI's generated types and every test of them):
/// counts, ids and sizes cross the IPC as JSON numbers, since every value KV Gate exchanges is
/// below 2^53 (request indices, byte counts, Unix milliseconds).
pub fn ts_config() -> ts_rs::Config {
    ts_rs::Config::new().with_large_int("number")
}
