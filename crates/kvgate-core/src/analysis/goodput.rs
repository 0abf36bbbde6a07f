//! Useful goodput per run and class, and its repeat summary per cell.

use super::latency::{e2e, itl, ttft};
use super::*;

/// Useful goodput of each class (plus unclassified) in one run.
pub(super) fn run_goodput(policy: &Policy, run: &RunInput) -> Vec<RunGoodput> {
    let buckets = policy.classes.len() + 1;
    let slo_only = run.requests.iter().all(|r| r.accepted.is_none());
    let mut out: Vec<RunGoodput> = (0..buckets)
        .map(|_| RunGoodput {
            run_id: run.run_id,
            slo_only,
            ..Default::default()
        })
        .collect();
    let Some(t0) = run
        .requests
        .iter()
        .map(|r| r.planned_ms)
        .min_by(f64::total_cmp)
    else {
        return out;
    };
    let interval_ms = policy.goodput.interval_s * 1000.0;
    let end = t0 + interval_ms;
    let deadline = end + policy.goodput.drain_s * 1000.0;
    for r in &run.requests {
        if r.planned_ms >= end {
            continue;
        }
        let class = policy.class_of(r.input_tokens(), None);
        let g = &mut out[class.unwrap_or(policy.classes.len())];
        g.cohort += 1;
        match r.status {
            RequestStatus::Ok => {}
            RequestStatus::Error => {
                g.failed += 1;
                continue;
            }
            RequestStatus::Rejected => {
                g.refused += 1;
                continue;
            }
            RequestStatus::Timeout | RequestStatus::Unfinished => {
                g.unfinished += 1;
                continue;
            }
        }
        if let Some(k) = class {
            let slo = &policy.classes[k].slo;
            let within =
                |limit: Option<f64>, v: Option<f64>| limit.zip(v).is_some_and(|(l, x)| x <= l);
            g.slo_met.ttft += u64::from(within(slo.ttft_ms, ttft(r)));
            g.slo_met.e2e += u64::from(within(slo.e2e_ms, e2e(r)));
            let single = r.completion_tokens.get().is_some_and(|t| t <= 1);
            g.slo_met.itl +=
                u64::from(slo.itl_ms.is_some() && (single || within(slo.itl_ms, itl(r))));
        }
        let Some(finish) = r.finish_ms.get() else {
            g.unfinished += 1;
            continue;
        };
        if finish > deadline {
            g.misses.after_drain += 1;
            continue;
        }
        if !slo_only && r.accepted != Some(true) {
            g.misses.not_accepted += 1;
            continue;
        }
        let Some(class) = class else {
            // No class, no SLO to meet: never good.
            continue;
        };
        let slo = &policy.classes[class].slo;
        let mut good = true;
        let mut missing = false;
        if let Some(limit) = slo.ttft_ms {
            match ttft(r) {
                Some(x) if x <= limit => {}
                Some(_) => {
                    g.misses.ttft += 1;
                    good = false;
                }
                None => missing = true,
            }
        }
        if let Some(limit) = slo.e2e_ms {
            match e2e(r) {
                Some(x) if x <= limit => {}
                Some(_) => {
                    g.misses.e2e += 1;
                    good = false;
                }
                None => missing = true,
            }
        }
        let mut itl_na = false;
        if let Some(limit) = slo.itl_ms {
            if r.completion_tokens.get().is_some_and(|t| t <= 1) {
                itl_na = true;
            } else {
                match itl(r) {
                    Some(x) if x <= limit => {}
                    Some(_) => {
                        g.misses.itl += 1;
                        good = false;
                    }
                    None => missing = true,
                }
            }
        }
        if missing {
            g.misses.timing_missing += 1;
            good = false;
        }
        if good {
            g.good += 1;
            g.itl_not_applicable += u64::from(itl_na);
        }
    }
    for g in &mut out {
        g.per_s = g.good as f64 / policy.goodput.interval_s;
    }
    out
}

/// Useful goodput of each run at one operating point, per class (see `points.rs`): computed once
/// per point, read by the cell's summary, B0's side of a comparison and the envelope.
pub(super) fn point_goodput(policy: &Policy, runs: &[&RunInput]) -> Vec<Vec<RunGoodput>> {
    runs.iter().map(|r| run_goodput(policy, r)).collect()
}

/// Useful goodput of the repeats at one operating point, from their per-run rows.
pub(super) fn goodput(
    policy: &Policy,
    per_run: &[Vec<RunGoodput>],
) -> (BTreeMap<String, ClassGoodput>, RepeatSummary) {
    let buckets = policy.classes.len() + 1;
    let mut out = BTreeMap::new();
    for k in 0..buckets {
        let rows: Vec<RunGoodput> = per_run.iter().map(|p| p[k].clone()).collect();
        if k == policy.classes.len() && rows.iter().all(|r| r.cohort == 0) {
            continue;
        }
        let per_s: Vec<f64> = rows.iter().map(|r| r.per_s).collect();
        let repeats = repeat_summary(&per_s);
        let mut g = ClassGoodput {
            per_s: repeats.mean,
            good: 0,
            cohort: 0,
            unfinished: 0,
            failed: 0,
            refused: 0,
            misses: SloMisses::default(),
            itl_not_applicable: 0,
            slo_only: rows.iter().any(|r| r.slo_only),
            repeats,
            runs: Vec::new(),
        };
        for r in &rows {
            g.good += r.good;
            g.cohort += r.cohort;
            g.unfinished += r.unfinished;
            g.failed += r.failed;
            g.refused += r.refused;
            g.itl_not_applicable += r.itl_not_applicable;
            g.misses.add(&r.misses);
        }
        g.runs = rows;
        out.insert(
            class_name(policy, (k < policy.classes.len()).then_some(k)),
            g,
        );
    }
    let totals: Vec<f64> = per_run
        .iter()
        .map(|p| p.iter().map(|g| g.per_s).sum())
        .collect();
    (out, repeat_summary(&totals))
}
