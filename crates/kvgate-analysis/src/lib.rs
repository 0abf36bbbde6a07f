//! The analysis tier: reads the store's tables in bulk (per-class percentiles, useful goodput,
//! paired outcomes per stratum) and hands them to the rules in `kvgate-core`.
//!
//! It must not decide anything itself: thresholds, verdicts and the decision table live in
//! `kvgate-core`. It must not write to the store; results are recomputed from stored evidence.
