//! Analyses as the Results screen receives them, for the chart tests: a valid B0, a candidate
//! with paired rows, an invalid cell.

use serde_json::{json, Value};

use crate::analysis::StudyAnalysis;

pub fn row(stratum: &str, patch: Value) -> Value {
    let kind = if stratum == "overall" {
        "overall"
    } else if stratum.contains('=') {
        "marginal"
    } else {
        "segment"
    };
    merge(
        json!({
            "stratum": stratum, "kind": kind, "protected": false, "n": 40, "b": 2, "c": 1,
            "delta": -0.025, "mcnemar_p": 1.0, "mcnemar_p_holm": null, "ci_low": -0.09,
            "ci_high": 0.04, "level": 0.9, "alpha": 0.05, "margin": 0.02,
            "verdict": "collect_more_evidence"
        }),
        patch,
    )
}

/// `base` with the keys of `patch` replaced.
pub fn merge(mut base: Value, patch: Value) -> Value {
    if let (Some(b), Value::Object(p)) = (base.as_object_mut(), patch) {
        for (k, v) in p {
            b.insert(k, v);
        }
    }
    base
}

pub fn cell(name: &str, patch: Value) -> Value {
    let baseline = name == "B0";
    let none = json!({"p50": null, "p90": null, "p99": null, "count": 0});
    let misses = json!({"ttft": 3, "itl": 0, "e2e": 0, "after_drain": 1, "not_accepted": 0, "timing_missing": 0});
    let ttft_cdf: Vec<f64> = (0..=100).map(|q| 100.0 + f64::from(q) * 1.5).collect();
    let e2e_cdf: Vec<f64> = (0..=100).map(|q| 800.0 + f64::from(q) * 13.0).collect();
    let paired = if baseline {
        json!([])
    } else {
        // In the analysis's own order (overall, marginal strata by name, segments as the policy
        // lists them), not the order they are read in.
        json!([
            row("overall", json!({"n": 120})),
            row(
                "answer_kind=absent",
                json!({"n": 0, "delta": null, "ci_low": null, "ci_high": null})
            ),
            row("language=de", json!({})),
            row("language=en", json!({})),
            row("length_class=long", json!({})),
            row(
                "numeric",
                json!({"verdict": "non_inferior", "ci_low": -0.01, "ci_high": 0.03, "delta": 0.01})
            ),
            row(
                "de-long",
                json!({"protected": true, "margin": 0.03, "mcnemar_p_holm": 0.8,
                                  "verdict": "inferior", "ci_low": -0.3, "ci_high": -0.05})
            ),
        ])
    };
    merge(
        json!({
            "cell": name,
            "test_cell": if baseline { json!({"kind": "b0"}) } else { json!({"kind": "c1"}) },
            "manifest_sha256": format!("{:0<64}", name.to_lowercase()),
            "valid": true,
            "invalid_reasons": [],
            "runs": if baseline { json!([1, 2]) } else { json!([3]) },
            "requests": {"offered": 40, "completed": 38, "failed": 1, "refused": 0, "timeout": 1,
                         "unfinished": 0, "validated": 39, "accepted": 36},
            "accepted_share": 0.9,
            "latency": {
                "short": {
                    "ttft_ms": {"p50": 120.5, "p90": 180.0, "p99": 250.0, "count": 30},
                    "itl_ms": {"p50": 20.0, "p90": 25.0, "p99": null, "count": 28},
                    "e2e_ms": {"p50": 900.0, "p90": 1400.0, "p99": 2100.0, "count": 30},
                    "count": 30, "itl_not_applicable": 2,
                    "client_delay_ms": none, "engine_itl_ms": none,
                    "ttft_cdf_ms": ttft_cdf, "e2e_cdf_ms": e2e_cdf
                },
                "long": {"ttft_ms": none, "itl_ms": none, "e2e_ms": none, "count": 0,
                         "itl_not_applicable": 0, "client_delay_ms": none, "engine_itl_ms": none,
                         "ttft_cdf_ms": [], "e2e_cdf_ms": []}
            },
            "goodput": {
                "short": {
                    "per_s": 0.5, "good": 30, "cohort": 36, "unfinished": 1, "failed": 1, "refused": 0,
                    "misses": misses, "itl_not_applicable": 2, "slo_only": false,
                    "repeats": {"n": 2, "mean": 0.5, "sd": 0.05, "ci_low": 0.05, "ci_high": 0.95},
                    "runs": [{"run_id": if baseline { 1 } else { 3 }, "per_s": 0.5, "good": 30, "cohort": 36,
                              "unfinished": 1, "failed": 1, "refused": 0, "misses": misses,
                              "itl_not_applicable": 2, "slo_only": false}]
                }
            },
            "goodput_total": {"n": 2, "mean": 0.5, "sd": 0.05, "ci_low": 0.05, "ci_high": 0.95},
            "paired": paired,
            "floors": [],
            "capacity": {
                "engine_kv_tokens": if baseline { 100_000 } else { 200_000 },
                "engine_kv_mib": null, "kv_usage_max": 0.42, "waiting_max": null, "running_max": 8.0,
                "preemptions_delta": null, "runs": [], "model_kv_tokens": null, "rollback_fit": null,
                "model_note": null
            },
            "decision": {"outcome": if baseline { "baseline" } else { "calibrate" },
                         "table_decision": null, "rules": [], "next_experiment": [],
                         "quality_qualifies": null, "goodput_qualifies": null,
                         "headline": if baseline { "baseline — retained as the rollback target" } else { "calibrate" },
                         "goodput_by_class": [], "uncontrolled_findings": [], "accepted_findings": [],
                         "pairs_needed": null}
        }),
        patch,
    )
}

pub fn invalid_cell(name: &str) -> Value {
    cell(
        name,
        json!({
            "test_cell": {"kind": "invalid", "name": name, "reason": "unsupported backend"},
            "valid": false,
            "invalid_reasons": ["no compatibility evidence: no startup log or /metrics for this cell"],
            "latency": {}, "goodput": {},
            "goodput_total": {"n": 0, "mean": null, "sd": null, "ci_low": null, "ci_high": null},
            "paired": [],
            "decision": {"outcome": "invalid", "table_decision": null, "rules": [], "next_experiment": [],
                         "quality_qualifies": null, "goodput_qualifies": null,
                         "headline": "invalid — Mark invalid; do not manufacture a result",
                         "goodput_by_class": [], "uncontrolled_findings": [], "accepted_findings": [],
                         "pairs_needed": null}
        }),
    )
}

pub fn analysis(patch: Value) -> StudyAnalysis {
    let v = merge(
        json!({
            "study_id": 7, "study_name": "FP8 KV demo", "provenance": "synthetic_demo",
            "provenance_label": "synthetic demo", "policy_version": 2,
            "policy_sha256": "f".repeat(64), "policy_locked_at": "2026-03-04T10:00:00Z",
            "policy_locked_by": "Service Owner", "policy_changed_after_results": false,
            "measured_requests": 120, "adjudicated_labels": 0, "adjudicated": {},
            "classes": ["short", "long"],
            "cells": [cell("B0", json!({})), cell("C1", json!({})), invalid_cell("C9")],
            "noise_floor": {"n": 40, "b": 1, "c": 1, "flip_rate": 0.05}
        }),
        patch,
    );
    serde_json::from_value(v).expect("the fixture is an analysis")
}
