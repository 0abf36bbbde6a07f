//! The operating envelope of a cell: useful goodput per class at every operating point it was
//! measured at, with repeat intervals, the good share, the cost per good response, and the knee —
//! the highest offered rate at which every class stays inside the policy's bar.
//!
//! Each point's runs are its repeats (runs at other points never are: `points.rs`). Goodput per
//! run and class is the one rule of `goodput.rs` (cohort, drain, validated ∧ SLO).

use super::latency::{class_name, e2e, ttft};
use super::points::Point;
use super::*;

/// One class of one cell at one operating point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct EnvelopePoint {
    /// The offered rate in requests per second; absent for a point that offered no rate (all at
    /// once, a closed loop, a trace, or unknown): shown, never a knee.
    pub offered_rps: Option<f64>,
    pub offered: OfferedLoad,
    /// The server's limit (the manifest's `max_num_seqs`, llama.cpp's slots).
    pub admission_limit: Option<u32>,
    /// The client's own cap on requests in flight, read from the imported file; never the
    /// admission limit. Two caps at one rate are two points, each shown.
    pub client_concurrency: Option<u32>,
    /// A class of the policy, or [`UNCLASSIFIED`].
    pub class: String,
    /// Runs at the point: its repeats.
    pub repeats: u64,
    pub runs: Vec<i64>,
    /// Useful goodput per second over the runs: mean, sd and Student-t 95 % interval (absent
    /// below 2 runs).
    pub goodput_per_s: RepeatSummary,
    /// Good ÷ cohort, the mean over the runs whose cohort has a request of the class; absent
    /// when none has.
    pub good_share: Option<f64>,
    /// The good share's variation over those runs: mean, sd and Student-t 95 % interval
    /// (absent below 2 runs). The gate reads the bar against this interval, not the mean alone.
    pub good_share_repeats: RepeatSummary,
    /// Good requests and cohort over the runs, as counted.
    pub good: u64,
    pub cohort: u64,
    /// The share of the cohort that ended `ok` within each SLO of the class, over the runs at
    /// the point (met ÷ cohort); absent for an SLO the class does not declare or without a
    /// request of the class.
    pub slo_share: SloShare,
    /// Latency of the class's `ok` requests over the runs at the point (every measured one, as
    /// in the cell's latency table): latency against load.
    pub ttft_ms: Percentiles,
    pub e2e_ms: Percentiles,
    /// A run had no verdicts: the share counts SLOs, not answers, and never makes a knee.
    pub slo_only: bool,
    /// The runs' wall time (first dispatch to last completion, every request sent included) ×
    /// the policy's cost rate × the cell's instances ÷ the point's good responses of every
    /// class together; absent without a declared rate or with nothing good, never 0.
    pub cost_per_good_response: Option<f64>,
}

/// The share of a point's cohort within each SLO of its class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct SloShare {
    pub ttft: Option<f64>,
    pub itl: Option<f64>,
    pub e2e: Option<f64>,
}

/// Instances a cell's manifest serves on: its GPU count, 1 when it names none.
fn instances(cell: &CellInput) -> u32 {
    let gpus: u32 = cell
        .manifest
        .as_ref()
        .map(|m| m.gpu_inventory.iter().map(|g| g.count).sum())
        .unwrap_or(0);
    gpus.max(1)
}

/// First dispatch to last completion of a run, in hours; absent without both.
fn wall_hours(run: &RunInput) -> Option<f64> {
    let first = run
        .requests
        .iter()
        .filter_map(|r| r.dispatch_ms.get())
        .min_by(f64::total_cmp)?;
    let last = run
        .requests
        .iter()
        .filter_map(|r| r.finish_ms.get())
        .max_by(f64::total_cmp)?;
    (last >= first).then(|| (last - first) / 3_600_000.0)
}

fn rate_of(load: &OfferedLoad) -> Option<f64> {
    match load {
        OfferedLoad::Rate { per_s } if per_s.is_finite() && *per_s > 0.0 => Some(*per_s),
        _ => None,
    }
}

/// The envelope of a cell over its goodput points.
/// The envelope of a cell over its goodput points, in the order of their offered rate (points
/// without one last, classes in policy order within a point), and its knee: the highest offered
/// rate at which every class with requests has a good share of at least the policy's
/// `envelope.min_good_share`, absent without that bar or when no point meets it.
pub(super) fn envelope(
    policy: &Policy,
    cell: &CellInput,
    points: &[Point<'_>],
    rows: &[Vec<Vec<RunGoodput>>],
) -> (Vec<EnvelopePoint>, Option<f64>) {
    let buckets = policy.classes.len() + 1;
    let mut out = Vec::new();
    for (p, per_run) in points.iter().zip(rows) {
        let good_all: u64 = per_run.iter().flatten().map(|g| g.good).sum();
        let cost = policy.cost.as_ref().and_then(|c| {
            let hours: Option<f64> = p.runs.iter().map(|r| wall_hours(r)).sum();
            let hours = hours?;
            (good_all > 0)
                .then(|| hours * c.per_instance_hour * f64::from(instances(cell)) / good_all as f64)
        });
        // TTFT and end-to-end values of `ok` requests per class, over the point's runs.
        let mut timings: Vec<[Vec<f64>; 2]> = (0..buckets).map(|_| Default::default()).collect();
        for r in p.runs.iter().flat_map(|r| &r.requests) {
            if r.status != RequestStatus::Ok {
                continue;
            }
            let k = policy
                .class_of(r.input_tokens(), None)
                .unwrap_or(policy.classes.len());
            if let Some(x) = ttft(r) {
                timings[k][0].push(x);
            }
            if let Some(x) = e2e(r) {
                timings[k][1].push(x);
            }
        }
        for k in 0..buckets {
            let rows: Vec<&RunGoodput> = per_run.iter().map(|r| &r[k]).collect();
            let cohort: u64 = rows.iter().map(|g| g.cohort).sum();
            if k == policy.classes.len() && cohort == 0 {
                continue;
            }
            let shares: Vec<f64> = rows
                .iter()
                .filter(|g| g.cohort > 0)
                .map(|g| g.good as f64 / g.cohort as f64)
                .collect();
            let per_s: Vec<f64> = rows.iter().map(|g| g.per_s).collect();
            let slo = policy.classes.get(k).map(|c| &c.slo);
            let share = |declared: bool, met: fn(&SloMet) -> u64| {
                let met: u64 = rows.iter().map(|g| met(&g.slo_met)).sum();
                (declared && cohort > 0).then(|| met as f64 / cohort as f64)
            };
            let slo_share = SloShare {
                ttft: share(slo.is_some_and(|s| s.ttft_ms.is_some()), |m| m.ttft),
                itl: share(slo.is_some_and(|s| s.itl_ms.is_some()), |m| m.itl),
                e2e: share(slo.is_some_and(|s| s.e2e_ms.is_some()), |m| m.e2e),
            };
            out.push(EnvelopePoint {
                offered_rps: rate_of(&p.point.offered),
                offered: p.point.offered.clone(),
                admission_limit: p.point.admission_limit,
                client_concurrency: p.point.client_concurrency,
                class: class_name(policy, (k < policy.classes.len()).then_some(k)),
                repeats: p.runs.len() as u64,
                runs: p.runs.iter().map(|r| r.run_id).collect(),
                goodput_per_s: repeat_summary(&per_s),
                good_share: (!shares.is_empty())
                    .then(|| shares.iter().sum::<f64>() / shares.len() as f64),
                good_share_repeats: repeat_summary(&shares),
                good: rows.iter().map(|g| g.good).sum(),
                cohort,
                slo_share,
                ttft_ms: percentiles(&mut timings[k][0]),
                e2e_ms: percentiles(&mut timings[k][1]),
                slo_only: rows.iter().any(|g| g.slo_only),
                cost_per_good_response: cost,
            });
        }
    }
    // Points by offered rate, those without one last; the sort is stable, classes keep their order.
    out.sort_by(|a, b| match (a.offered_rps, b.offered_rps) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let knee_rps = policy
        .envelope
        .as_ref()
        .and_then(|rule| knee(&out, rule.min_good_share));
    (out, knee_rps)
}

/// The highest offered rate whose every class with requests (the unclassified too) has a good
/// share of at least `bar`, counted on verdicts (an SLO-only point never qualifies). Points at
/// one rate under different client caps must all pass: a cap that hides the queue cannot carry
/// the rate alone.
fn knee(points: &[EnvelopePoint], bar: f64) -> Option<f64> {
    let mut rates: Vec<f64> = points.iter().filter_map(|p| p.offered_rps).collect();
    rates.dedup();
    rates
        .into_iter()
        .filter(|&rate| {
            let at: Vec<&EnvelopePoint> = points
                .iter()
                .filter(|p| p.offered_rps == Some(rate) && p.cohort > 0)
                .collect();
            !at.is_empty()
                && at
                    .iter()
                    .all(|p| !p.slo_only && p.good_share.is_some_and(|s| s >= bar))
        })
        .max_by(f64::total_cmp)
}
