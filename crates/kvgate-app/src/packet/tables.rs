//! The results tables of a packet, built from the analysis exactly as computed: every count and
//! figure in full, absent values absent.

use kvgate_core::analysis::{CellAnalysis, PairedRow};
use kvgate_core::table::{Table, Values};
use serde::Serialize;

use crate::analysis::StudyAnalysis;

fn name<T: Serialize>(v: &T) -> Option<String> {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
}

fn text(v: impl Into<String>) -> Option<String> {
    Some(v.into())
}

fn int(v: u64) -> Option<i64> {
    i64::try_from(v).ok()
}

/// One row per cell: validity, request counts, suggested outcome, goodput across repeats,
/// capacity evidence.
pub fn cells(a: &StudyAnalysis) -> Table {
    let c = &a.body.cells;
    let col = |f: &dyn Fn(&CellAnalysis) -> Option<i64>| Values::Int(c.iter().map(f).collect());
    let fcol = |f: &dyn Fn(&CellAnalysis) -> Option<f64>| Values::Float(c.iter().map(f).collect());
    Table::new()
        .with(
            "cell",
            Values::Text(c.iter().map(|x| text(&x.cell)).collect()),
        )
        .with(
            "manifest_sha256",
            Values::Text(c.iter().map(|x| text(&x.manifest_sha256)).collect()),
        )
        .with(
            "valid",
            Values::Bool(c.iter().map(|x| Some(x.valid)).collect()),
        )
        .with(
            "invalid_reasons",
            Values::Text(
                c.iter()
                    .map(|x| text(x.invalid_reasons.join("; ")))
                    .collect(),
            ),
        )
        .with(
            "runs",
            Values::Text(
                c.iter()
                    .map(|x| {
                        text(
                            x.runs
                                .iter()
                                .map(i64::to_string)
                                .collect::<Vec<_>>()
                                .join(" "),
                        )
                    })
                    .collect(),
            ),
        )
        .with("offered", col(&|x| int(x.requests.offered)))
        .with("completed", col(&|x| int(x.requests.completed)))
        .with("failed", col(&|x| int(x.requests.failed)))
        .with("refused", col(&|x| int(x.requests.refused)))
        .with("timeout", col(&|x| int(x.requests.timeout)))
        .with("unfinished", col(&|x| int(x.requests.unfinished)))
        .with("validated", col(&|x| x.requests.validated.and_then(int)))
        .with("accepted", col(&|x| x.requests.accepted.and_then(int)))
        .with(
            "suggested_outcome",
            Values::Text(c.iter().map(|x| name(&x.decision.outcome)).collect()),
        )
        .with("goodput_repeats", col(&|x| int(x.goodput_total.n)))
        .with("goodput_mean_per_s", fcol(&|x| x.goodput_total.mean))
        .with("goodput_sd_per_s", fcol(&|x| x.goodput_total.sd))
        .with("goodput_ci_low_per_s", fcol(&|x| x.goodput_total.ci_low))
        .with("goodput_ci_high_per_s", fcol(&|x| x.goodput_total.ci_high))
        .with(
            "engine_kv_tokens",
            col(&|x| x.capacity.engine_kv_tokens.and_then(int)),
        )
        .with("engine_kv_mib", fcol(&|x| x.capacity.engine_kv_mib))
        .with(
            "device_weights_mib",
            fcol(&|x| {
                x.capacity
                    .device_memory
                    .as_ref()
                    .and_then(|m| m.weights_mib)
            }),
        )
        .with(
            "device_kv_cache_mib",
            fcol(&|x| {
                x.capacity
                    .device_memory
                    .as_ref()
                    .and_then(|m| m.kv_cache_mib)
            }),
        )
        .with(
            "device_cuda_graph_mib",
            fcol(&|x| {
                x.capacity
                    .device_memory
                    .as_ref()
                    .and_then(|m| m.cuda_graph_mib)
            }),
        )
        .with(
            "device_recurrent_state_mib",
            fcol(&|x| {
                x.capacity
                    .device_memory
                    .as_ref()
                    .and_then(|m| m.recurrent_state_mib)
            }),
        )
        .with(
            "device_compute_mib",
            fcol(&|x| {
                x.capacity
                    .device_memory
                    .as_ref()
                    .and_then(|m| m.compute_mib)
            }),
        )
        // nvidia-smi's reading: another measure of the same memory, beside the parts above.
        .with(
            "device_allocated_mib",
            fcol(&|x| {
                x.capacity
                    .device_memory
                    .as_ref()
                    .and_then(|m| m.allocated_mib)
            }),
        )
        .with(
            "device_allocated_gpus",
            col(&|x| {
                x.capacity
                    .device_memory
                    .as_ref()
                    .and_then(|m| m.allocated_gpus)
                    .map(i64::from)
            }),
        )
        .with("kv_usage_max", fcol(&|x| x.capacity.kv_usage_max))
        .with("preemptions_delta", fcol(&|x| x.capacity.preemptions_delta))
        .with(
            "rollback_fits",
            Values::Bool(
                c.iter()
                    .map(|x| x.capacity.rollback_fit.as_ref().map(|f| f.fits))
                    .collect(),
            ),
        )
}

/// Paired rows of every candidate against B0, automatic and (when labels exist) adjudicated.
pub fn paired(a: &StudyAnalysis) -> Table {
    let mut rows: Vec<(&str, &str, &PairedRow)> = Vec::new();
    for c in &a.body.cells {
        for r in &c.paired {
            rows.push((&c.cell, "automatic", r));
        }
        if let Some(adj) = a.adjudicated.get(&c.cell) {
            for r in adj {
                rows.push((&c.cell, "adjudicated", r));
            }
        }
        // Relabels made after the reveal, counted apart: every label, unblinded ones included.
        if let Some(adj) = a.adjudicated_unblinded.get(&c.cell) {
            for r in adj {
                rows.push((&c.cell, "adjudicated_unblinded", r));
            }
        }
    }
    let f = |g: &dyn Fn(&PairedRow) -> Option<f64>| {
        Values::Float(rows.iter().map(|(_, _, r)| g(r)).collect())
    };
    let i = |g: &dyn Fn(&PairedRow) -> u64| {
        Values::Int(rows.iter().map(|(_, _, r)| int(g(r))).collect())
    };
    Table::new()
        .with(
            "candidate",
            Values::Text(rows.iter().map(|(c, _, _)| text(*c)).collect()),
        )
        .with(
            "basis",
            Values::Text(rows.iter().map(|(_, b, _)| text(*b)).collect()),
        )
        .with(
            "stratum",
            Values::Text(rows.iter().map(|(_, _, r)| text(&r.stratum)).collect()),
        )
        .with(
            "kind",
            Values::Text(rows.iter().map(|(_, _, r)| name(&r.kind)).collect()),
        )
        .with(
            "protected",
            Values::Bool(rows.iter().map(|(_, _, r)| Some(r.protected)).collect()),
        )
        .with("n", i(&|r| r.n))
        .with("b_b0_only", i(&|r| r.b))
        .with("c_candidate_only", i(&|r| r.c))
        .with("delta", f(&|r| r.delta))
        .with("mcnemar_p", f(&|r| Some(r.mcnemar_p)))
        .with("mcnemar_p_holm", f(&|r| r.mcnemar_p_holm))
        .with("ci_low", f(&|r| r.ci_low))
        .with("ci_high", f(&|r| r.ci_high))
        .with("level", f(&|r| Some(r.level)))
        .with("alpha", f(&|r| Some(r.alpha)))
        .with("margin", f(&|r| Some(r.margin)))
        .with(
            "verdict",
            Values::Text(rows.iter().map(|(_, _, r)| name(&r.verdict)).collect()),
        )
}

/// Absolute floors per cell and segment.
pub fn floors(a: &StudyAnalysis) -> Table {
    let rows: Vec<_> = a
        .body
        .cells
        .iter()
        .flat_map(|c| c.floors.iter().map(move |f| (c.cell.as_str(), f)))
        .collect();
    Table::new()
        .with(
            "cell",
            Values::Text(rows.iter().map(|(c, _)| text(*c)).collect()),
        )
        .with(
            "segment",
            Values::Text(rows.iter().map(|(_, f)| text(&f.segment)).collect()),
        )
        .with(
            "protected",
            Values::Bool(rows.iter().map(|(_, f)| Some(f.protected)).collect()),
        )
        .with(
            "floor",
            Values::Float(rows.iter().map(|(_, f)| Some(f.floor)).collect()),
        )
        .with(
            "n",
            Values::Int(rows.iter().map(|(_, f)| int(f.n)).collect()),
        )
        .with(
            "accepted",
            Values::Int(rows.iter().map(|(_, f)| int(f.accepted)).collect()),
        )
        .with(
            "rate",
            Values::Float(rows.iter().map(|(_, f)| f.rate).collect()),
        )
        .with(
            "passes",
            Values::Bool(rows.iter().map(|(_, f)| f.passes).collect()),
        )
}

/// Latency percentiles per cell, class and metric.
pub fn latency(a: &StudyAnalysis) -> Table {
    let mut rows = Vec::new();
    for c in &a.body.cells {
        for (class, l) in &c.latency {
            for (metric, p) in [
                ("ttft_ms", &l.ttft_ms),
                ("itl_ms", &l.itl_ms),
                ("e2e_ms", &l.e2e_ms),
            ] {
                rows.push((
                    c.cell.as_str(),
                    class.as_str(),
                    metric,
                    p,
                    l.itl_not_applicable,
                ));
            }
        }
    }
    Table::new()
        .with(
            "cell",
            Values::Text(rows.iter().map(|r| text(r.0)).collect()),
        )
        .with(
            "class",
            Values::Text(rows.iter().map(|r| text(r.1)).collect()),
        )
        .with(
            "metric",
            Values::Text(rows.iter().map(|r| text(r.2)).collect()),
        )
        .with(
            "count",
            Values::Int(rows.iter().map(|r| int(r.3.count)).collect()),
        )
        .with("p50", Values::Float(rows.iter().map(|r| r.3.p50).collect()))
        .with("p90", Values::Float(rows.iter().map(|r| r.3.p90).collect()))
        .with("p99", Values::Float(rows.iter().map(|r| r.3.p99).collect()))
        .with(
            "itl_not_applicable",
            Values::Int(rows.iter().map(|r| int(r.4)).collect()),
        )
}

/// Useful goodput per cell and class, with every kind of miss.
pub fn goodput(a: &StudyAnalysis) -> Table {
    let rows: Vec<_> = a
        .body
        .cells
        .iter()
        .flat_map(|c| {
            c.goodput
                .iter()
                .map(move |(k, g)| (c.cell.as_str(), k.as_str(), g))
        })
        .collect();
    let i = |f: &dyn Fn(&kvgate_core::analysis::ClassGoodput) -> u64| {
        Values::Int(rows.iter().map(|r| int(f(r.2))).collect())
    };
    Table::new()
        .with(
            "cell",
            Values::Text(rows.iter().map(|r| text(r.0)).collect()),
        )
        .with(
            "class",
            Values::Text(rows.iter().map(|r| text(r.1)).collect()),
        )
        .with(
            "per_s",
            Values::Float(rows.iter().map(|r| r.2.per_s).collect()),
        )
        .with("good", i(&|g| g.good))
        .with("cohort", i(&|g| g.cohort))
        .with("unfinished", i(&|g| g.unfinished))
        .with("failed", i(&|g| g.failed))
        .with("refused", i(&|g| g.refused))
        .with("miss_ttft", i(&|g| g.misses.ttft))
        .with("miss_itl", i(&|g| g.misses.itl))
        .with("miss_e2e", i(&|g| g.misses.e2e))
        .with("miss_after_drain", i(&|g| g.misses.after_drain))
        .with("miss_not_accepted", i(&|g| g.misses.not_accepted))
        .with("miss_timing_missing", i(&|g| g.misses.timing_missing))
        .with(
            "slo_only",
            Values::Bool(rows.iter().map(|r| Some(r.2.slo_only)).collect()),
        )
        .with("repeats", i(&|g| g.repeats.n))
        .with(
            "repeats_mean",
            Values::Float(rows.iter().map(|r| r.2.repeats.mean).collect()),
        )
        .with(
            "repeats_ci_low",
            Values::Float(rows.iter().map(|r| r.2.repeats.ci_low).collect()),
        )
        .with(
            "repeats_ci_high",
            Values::Float(rows.iter().map(|r| r.2.repeats.ci_high).collect()),
        )
}
