//! The analysis tier: reads the store's tables in bulk (per-class percentiles, useful goodput,
//! paired outcomes per stratum) and hands them to the rules in `kvgate-core`.
//!
//! It must not decide anything itself: thresholds, verdicts and the decision table live in
//! `kvgate-core`. It must not write to the store; results are recomputed from stored evidence.
//!
//! It is also the one crate that depends on polars, so the importers of tabular files (CSV and
//! Parquet, read with a column mapping) live here, in [`tabular`].

pub mod parquet_out;
pub mod study;
pub mod tabular;
