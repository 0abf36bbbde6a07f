//! The study analysis under a locked acceptance policy: per cell and class latency percentiles,
//! useful goodput, paired statistics per stratum and protected segment against B0, absolute
//! floors, the B0-vs-B0 noise floor and the decision table's suggested outcome.
//!
//! Pure: the analysis tier loads the stored rows into [`StudyInput`] and calls [`analyze`].
//!
//! Rules, each decided here and nowhere else:
//! - **Measured requests** are the non-warm-up requests of a cell's runs; every one of them is
//!   offered demand, whatever its status. The **accepted share** of a cell is its accepted
//!   answers over its offered requests, so every failure stays in the denominator.
//! - **Latency** (per class): TTFT = first token − dispatch, e2e = finish − dispatch over `ok`
//!   requests that have them; mean ITL of one request = (e2e − TTFT) / (output tokens − 1),
//!   only for more than one output token (the others are counted as not applicable).
//! - **Goodput** is computed per run: t0 = the run's first planned arrival; the cohort is the
//!   requests planned in [t0, t0 + interval); a request is good when it is `ok`, accepted by the
//!   validator (not checked in an "SLO-only" run without verdicts), meets every SLO of its class
//!   and finished by t0 + interval + drain. Goodput = good / interval. When a cell has load runs,
//!   only they count; otherwise its quality runs do. Repeats are summarized by mean, sd and a 95%
//!   t interval.
//! - **Pairs**: for each fixture item, the first pass of each cell that judged it (lowest run
//!   id, then lowest repeat) is its answer; a pair is an item judged by both B0 and the
//!   candidate. b = B0 accepted & candidate rejected, c = the reverse, Δ = (c − b)/n. The rows
//!   are read in [`reading_order`]: overall, segments (protected first), marginal strata.
//! - The **noise floor** pairs B0's first pass with its second pass over the same items.
//! - **Gates**: each protected segment must be non-inferior at the Bonferroni α (α divided by
//!   the number of protected segments) and meet its floor; Holm adjusts the McNemar p-values
//!   across protected segments. Goodput qualifies when the candidate's mean useful goodput
//!   (summed over classes) is above B0's and their 95% repeat intervals do not overlap.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::policy::{ItemStrata, Policy};
use crate::run::RequestStatus;
use crate::stats::{
    holm, paired_stats, percentiles, repeat_summary, PairedVerdict, Percentiles, RepeatSummary,
};
use crate::test_cell::{TestCell, DECISION_TABLE};

/// Name of the goodput and latency bucket of requests no class takes.
pub const UNCLASSIFIED: &str = "(unclassified)";

/// One measured request, as the analysis needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    /// Index into [`StudyInput::items`], when the request came from a fixture item.
    pub item: Option<u32>,
    pub repeat: u32,
    pub status: RequestStatus,
    pub planned_ms: f64,
    pub dispatch_ms: Option<f64>,
    pub first_token_ms: Option<f64>,
    pub finish_ms: Option<f64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// The validator's verdict; `None` when the run did not validate.
    pub accepted: Option<bool>,
}

pub use crate::run::RunKind;

/// One run of a cell with its measured requests.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInput {
    pub run_id: i64,
    pub kind: RunKind,
    /// False for imported per-request rows without send times: each is timed from its own
    /// send, so arrivals are unknown and the run never enters goodput.
    pub clocked: bool,
    pub requests: Vec<RequestRow>,
}

/// What the engine reported about KV capacity and load, gathered from a cell's evidence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CapacityEvidence {
    /// KV capacity in tokens as the engine reported it at startup.
    pub engine_kv_tokens: Option<u64>,
    /// KV cache size in MiB as the engine reported it.
    pub engine_kv_mib: Option<f64>,
    /// Highest KV usage share seen in the scrapes.
    pub kv_usage_max: Option<f64>,
    /// Highest number of waiting requests seen in the scrapes.
    pub waiting_max: Option<f64>,
    /// Highest number of running requests seen in the scrapes (admitted concurrency).
    pub running_max: Option<f64>,
    /// Preemptions counted over the scrapes (restart-aware delta).
    pub preemptions_delta: Option<f64>,
    /// Runs whose scrapes fed these figures.
    pub runs: Vec<i64>,
    /// KV positions the manifest's KV budget holds by the KV model, beside the engine's figure.
    pub model_kv_tokens: Option<u64>,
    /// For a candidate: whether B0's representation still holds this candidate's admission limit.
    pub rollback_fit: Option<crate::kv_capacity::RollbackFit>,
    /// Why the model figures are absent, when they are.
    pub model_note: Option<String>,
}

/// One test cell's manifest, runs and evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct CellInput {
    /// The manifest's cell name (B0, C1, …).
    pub cell: String,
    pub test_cell: TestCell,
    pub manifest_sha256: String,
    /// Why the cell is invalid (unsupported or without compatibility evidence); empty when valid.
    pub invalid_reasons: Vec<String>,
    pub runs: Vec<RunInput>,
    pub capacity: CapacityEvidence,
}

/// Everything the analysis reads.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyInput {
    /// Fixture item ids referenced by [`RequestRow::item`], with their strata when the id names them.
    pub items: Vec<(String, Option<ItemStrata>)>,
    pub cells: Vec<CellInput>,
}

/// Request counts of a cell: every measured request is offered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RequestCounts {
    pub offered: u64,
    /// Ended `ok`.
    pub completed: u64,
    /// Ended with an error.
    pub failed: u64,
    /// Refused by the server.
    pub rejected: u64,
    pub timeout: u64,
    /// Never ended (cancelled or cut off).
    pub unfinished: u64,
    /// Judged by the validator, and of those accepted.
    pub validated: u64,
    pub accepted: u64,
}

/// Latency percentiles of one class of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ClassLatency {
    pub ttft_ms: Percentiles,
    pub itl_ms: Percentiles,
    pub e2e_ms: Percentiles,
    /// `ok` requests of the class.
    pub count: u64,
    /// `ok` requests with at most one output token: no inter-token latency exists.
    pub itl_not_applicable: u64,
    /// The TTFT distribution for a CDF: its quantiles at 0, 1, …, 100 % (empty without values).
    pub ttft_cdf_ms: Vec<f64>,
    /// The end-to-end distribution, likewise.
    pub e2e_cdf_ms: Vec<f64>,
}

/// Quantiles at 0, 1, …, 100 % of sorted values; empty for no values.
fn cdf(sorted: &[f64]) -> Vec<f64> {
    (0..=100)
        .filter_map(|q| crate::stats::percentile_linear(sorted, f64::from(q) / 100.0))
        .collect()
}

/// Why cohort requests were not good.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct SloMisses {
    pub ttft: u64,
    pub itl: u64,
    pub e2e: u64,
    /// `ok` but finished after the drain deadline.
    pub after_drain: u64,
    /// `ok` but rejected by the validator.
    pub not_accepted: u64,
    /// An SLO could not be checked because a timing was not recorded: not good.
    pub timing_missing: u64,
}

impl SloMisses {
    fn add(&mut self, o: &SloMisses) {
        self.ttft += o.ttft;
        self.itl += o.itl;
        self.e2e += o.e2e;
        self.after_drain += o.after_drain;
        self.not_accepted += o.not_accepted;
        self.timing_missing += o.timing_missing;
    }
}

/// Useful goodput of one class in one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RunGoodput {
    pub run_id: i64,
    pub per_s: f64,
    pub good: u64,
    pub cohort: u64,
    /// Cohort requests that had not ended by the drain deadline.
    pub unfinished: u64,
    pub failed: u64,
    pub rejected: u64,
    pub misses: SloMisses,
    /// Good requests whose ITL SLO did not apply (at most one output token).
    pub itl_not_applicable: u64,
    /// The run had no verdicts: goodput counts SLOs only, not answer quality.
    pub slo_only: bool,
}

/// Useful goodput of one class of one cell over its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ClassGoodput {
    /// Mean over the runs, per second.
    pub per_s: Option<f64>,
    pub good: u64,
    pub cohort: u64,
    pub unfinished: u64,
    pub failed: u64,
    pub rejected: u64,
    pub misses: SloMisses,
    pub itl_not_applicable: u64,
    /// True when any run counted SLOs only (no verdicts): labelled "SLO-only".
    pub slo_only: bool,
    /// Variation across the runs (repeats).
    pub repeats: RepeatSummary,
    pub runs: Vec<RunGoodput>,
}

/// What a paired row describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StratumKind {
    Overall,
    /// One value of one fixture dimension, e.g. `language=de`.
    Marginal,
    /// A segment of the policy.
    Segment,
}

/// Paired statistics of one candidate against B0 on one stratum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct PairedRow {
    pub stratum: String,
    pub kind: StratumKind,
    /// A protected segment: this row gates the candidate.
    pub protected: bool,
    pub n: u64,
    pub b: u64,
    pub c: u64,
    pub delta: Option<f64>,
    pub mcnemar_p: f64,
    /// Holm-adjusted across the protected segments (protected rows only).
    pub mcnemar_p_holm: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Confidence level of the interval: 1 − 2·(the α used).
    pub level: f64,
    /// The α used: Bonferroni-adjusted for protected segments, the policy's α otherwise.
    pub alpha: f64,
    pub margin: f64,
    pub verdict: PairedVerdict,
}

/// An absolute quality floor of one segment for one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct FloorCheck {
    pub segment: String,
    pub protected: bool,
    pub floor: f64,
    /// Items of the segment the cell's first pass judged, and of those accepted.
    pub n: u64,
    pub accepted: u64,
    pub rate: Option<f64>,
    /// `None` when the segment has no judged item.
    pub passes: Option<bool>,
}

/// B0 against itself: how often the same item flips between two B0 passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct NoiseFloor {
    pub n: u64,
    pub b: u64,
    pub c: u64,
    /// (b + c) / n.
    pub flip_rate: f64,
}

/// The outcome the decision table suggests for a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SuggestedOutcome {
    /// B0: retain as the rollback target.
    Baseline,
    /// Quality and goodput both qualify: the candidate may be promoted.
    Promote,
    /// Keep B0: quality holds but goodput does not improve.
    Retain,
    /// A protected segment regressed: investigate scales, backend and layer exclusions next.
    Calibrate,
    /// A protected segment regressed after calibration or layer exclusion: back to B0.
    Rollback,
    /// The evidence cannot tell yet: never called "equivalent".
    CollectMoreEvidence,
    /// Invalid cell: no score, no result manufactured.
    Invalid,
}

/// The decision-table outcome of one cell, with every rule that fired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CellDecision {
    pub outcome: SuggestedOutcome,
    /// The guide's decision-table row for this cell, verbatim (none for a named intervention).
    pub table_decision: Option<String>,
    pub rules: Vec<String>,
    /// The next experiment suggested from the failure.
    pub next_experiment: Vec<String>,
    /// Quality gate: Some(true) passed, Some(false) breached, None undecided.
    pub quality_qualifies: Option<bool>,
    pub goodput_qualifies: Option<bool>,
}

/// The analysis of one test cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct CellAnalysis {
    pub cell: String,
    pub test_cell: TestCell,
    pub manifest_sha256: String,
    pub valid: bool,
    pub invalid_reasons: Vec<String>,
    pub runs: Vec<i64>,
    pub requests: RequestCounts,
    /// Accepted answers of every offered request, `accepted / offered`: refusals, failures,
    /// timeouts and unfinished requests stay in the denominator. Left out without an offered
    /// request (absent, not 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub accepted_share: Option<f64>,
    /// Per class (policy order), then [`UNCLASSIFIED`] when any request had no class.
    pub latency: BTreeMap<String, ClassLatency>,
    pub goodput: BTreeMap<String, ClassGoodput>,
    /// Mean useful goodput summed over the classes, and its repeat variation.
    pub goodput_total: RepeatSummary,
    pub paired: Vec<PairedRow>,
    pub floors: Vec<FloorCheck>,
    pub capacity: CapacityEvidence,
    pub decision: CellDecision,
}

/// The analysis of a study under its locked policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct AnalysisBody {
    /// Class names in policy order.
    pub classes: Vec<String>,
    pub cells: Vec<CellAnalysis>,
    /// B0 against its own second pass; absent without a second B0 pass.
    pub noise_floor: Option<NoiseFloor>,
}

/// First pass of a cell: per item, whether it was accepted.
fn first_pass(cell: &CellInput, items: usize) -> Vec<Option<bool>> {
    let mut out = vec![None; items];
    let mut order: Vec<&RunInput> = cell.runs.iter().collect();
    order.sort_by_key(|r| r.run_id);
    let mut best: Vec<Option<(i64, u32)>> = vec![None; items];
    for run in order {
        for r in &run.requests {
            let (Some(i), Some(acc)) = (r.item, r.accepted) else {
                continue;
            };
            let i = i as usize;
            let key = (run.run_id, r.repeat);
            if best[i].is_none_or(|b| key < b) {
                best[i] = Some(key);
                out[i] = Some(acc);
            }
        }
    }
    out
}

/// Second pass of a cell: per item, the verdict of the second-earliest (run, repeat) judging it.
fn second_pass(cell: &CellInput, items: usize) -> Vec<Option<bool>> {
    let mut passes: Vec<Vec<((i64, u32), bool)>> = vec![Vec::new(); items];
    for run in &cell.runs {
        for r in &run.requests {
            if let (Some(i), Some(acc)) = (r.item, r.accepted) {
                passes[i as usize].push(((run.run_id, r.repeat), acc));
            }
        }
    }
    passes
        .into_iter()
        .map(|mut p| {
            p.sort_by_key(|x| x.0);
            p.dedup_by_key(|x| x.0);
            p.get(1).map(|x| x.1)
        })
        .collect()
}

fn count_pairs(
    base: &[Option<bool>],
    cand: &[Option<bool>],
    keep: impl Fn(usize) -> bool,
) -> (u64, u64, u64) {
    let (mut n, mut b, mut c) = (0, 0, 0);
    for (i, (x, y)) in base.iter().zip(cand).enumerate() {
        if let (Some(x), Some(y)) = (x, y) {
            if keep(i) {
                n += 1;
                match (x, y) {
                    (true, false) => b += 1,
                    (false, true) => c += 1,
                    _ => {}
                }
            }
        }
    }
    (n, b, c)
}

fn counts(cell: &CellInput) -> RequestCounts {
    let mut k = RequestCounts::default();
    for r in cell.runs.iter().flat_map(|r| &r.requests) {
        k.offered += 1;
        match r.status {
            RequestStatus::Ok => k.completed += 1,
            RequestStatus::Error => k.failed += 1,
            RequestStatus::Rejected => k.rejected += 1,
            RequestStatus::Timeout => k.timeout += 1,
            RequestStatus::Unfinished => k.unfinished += 1,
        }
        if let Some(a) = r.accepted {
            k.validated += 1;
            k.accepted += u64::from(a);
        }
    }
    k
}

/// Accepted answers of every offered request; `None` without an offered request.
fn accepted_share(k: &RequestCounts) -> Option<f64> {
    (k.offered > 0).then(|| k.accepted as f64 / k.offered as f64)
}

fn class_name(policy: &Policy, class: Option<usize>) -> String {
    class.map_or_else(
        || UNCLASSIFIED.to_owned(),
        |i| policy.classes[i].name.clone(),
    )
}

fn ttft(r: &RequestRow) -> Option<f64> {
    Some(r.first_token_ms? - r.dispatch_ms?)
}

fn e2e(r: &RequestRow) -> Option<f64> {
    Some(r.finish_ms? - r.dispatch_ms?)
}

/// Mean inter-token latency of one request; `None` when not applicable or not measured.
fn itl(r: &RequestRow) -> Option<f64> {
    let out = r.completion_tokens?;
    if out <= 1 {
        return None;
    }
    Some((e2e(r)? - ttft(r)?) / (out - 1) as f64)
}

fn latency(policy: &Policy, cell: &CellInput) -> BTreeMap<String, ClassLatency> {
    let buckets = policy.classes.len() + 1;
    let mut v: Vec<[Vec<f64>; 3]> = (0..buckets).map(|_| Default::default()).collect();
    let mut count = vec![0u64; buckets];
    let mut na = vec![0u64; buckets];
    let mut seen = vec![false; buckets];
    for r in cell.runs.iter().flat_map(|r| &r.requests) {
        let class = policy.class_of(r.prompt_tokens, None);
        let k = class.unwrap_or(policy.classes.len());
        seen[k] = true;
        if r.status != RequestStatus::Ok {
            continue;
        }
        count[k] += 1;
        if let Some(x) = ttft(r) {
            v[k][0].push(x);
        }
        if let Some(x) = e2e(r) {
            v[k][2].push(x);
        }
        if r.completion_tokens.is_some_and(|t| t <= 1) {
            na[k] += 1;
        } else if let Some(x) = itl(r) {
            v[k][1].push(x);
        }
    }
    let mut out = BTreeMap::new();
    for (k, [t, i, e]) in v.iter_mut().enumerate() {
        if k == policy.classes.len() && !seen[k] {
            continue;
        }
        let name = class_name(policy, (k < policy.classes.len()).then_some(k));
        let (ttft_ms, itl_ms, e2e_ms) = (percentiles(t), percentiles(i), percentiles(e));
        out.insert(
            name,
            ClassLatency {
                ttft_ms,
                itl_ms,
                e2e_ms,
                count: count[k],
                itl_not_applicable: na[k],
                ttft_cdf_ms: cdf(t),
                e2e_cdf_ms: cdf(e),
            },
        );
    }
    out
}

/// Useful goodput of each class (plus unclassified) in one run.
fn run_goodput(policy: &Policy, run: &RunInput) -> Vec<RunGoodput> {
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
        let class = policy.class_of(r.prompt_tokens, None);
        let g = &mut out[class.unwrap_or(policy.classes.len())];
        g.cohort += 1;
        match r.status {
            RequestStatus::Ok => {}
            RequestStatus::Error => {
                g.failed += 1;
                continue;
            }
            RequestStatus::Rejected => {
                g.rejected += 1;
                continue;
            }
            RequestStatus::Timeout | RequestStatus::Unfinished => {
                g.unfinished += 1;
                continue;
            }
        }
        let Some(finish) = r.finish_ms else {
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
            if r.completion_tokens.is_some_and(|t| t <= 1) {
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

fn goodput(policy: &Policy, cell: &CellInput) -> (BTreeMap<String, ClassGoodput>, RepeatSummary) {
    // Goodput needs arrivals: unclocked runs are left out, whatever their kind.
    let clocked = || cell.runs.iter().filter(|r| r.clocked);
    let has_load = clocked().any(|r| r.kind == RunKind::Load);
    let runs: Vec<&RunInput> = clocked()
        .filter(|r| !has_load || r.kind == RunKind::Load)
        .filter(|r| !r.requests.is_empty())
        .collect();
    let per_run: Vec<Vec<RunGoodput>> = runs.iter().map(|r| run_goodput(policy, r)).collect();
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
            rejected: 0,
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
            g.rejected += r.rejected;
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

/// Paired rows of one candidate against B0: overall, each marginal stratum, each segment. This
/// order is part of the signed quality evidence, so it stays; [`reading_order`] is how they are read.
fn paired_rows(
    policy: &Policy,
    items: &[(String, Option<ItemStrata>)],
    base: &[Option<bool>],
    cand: &[Option<bool>],
) -> Vec<PairedRow> {
    let report_margin = policy
        .protected_segments()
        .map(|s| s.margin)
        .fold(f64::INFINITY, f64::min);
    let report_margin = if report_margin.is_finite() {
        report_margin
    } else {
        0.0
    };
    let row = |stratum: String,
               kind,
               protected,
               margin: f64,
               alpha: f64,
               keep: &dyn Fn(usize) -> bool| {
        let (n, b, c) = count_pairs(base, cand, keep);
        let s = paired_stats(b, c, n, margin, alpha).expect("counts and policy values are valid");
        PairedRow {
            stratum,
            kind,
            protected,
            n,
            b,
            c,
            delta: s.delta,
            mcnemar_p: s.mcnemar_p,
            mcnemar_p_holm: None,
            ci_low: s.ci_low,
            ci_high: s.ci_high,
            level: s.level,
            alpha,
            margin,
            verdict: s.verdict,
        }
    };
    let mut rows = vec![row(
        "overall".into(),
        StratumKind::Overall,
        false,
        report_margin,
        policy.alpha,
        &|_| true,
    )];
    let mut marginals: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, (_, strata)) in items.iter().enumerate() {
        if let Some(s) = strata {
            for m in s.marginals() {
                marginals.entry(m).or_default().push(i);
            }
        }
    }
    for (name, members) in marginals {
        let mut set = vec![false; items.len()];
        for i in members {
            set[i] = true;
        }
        rows.push(row(
            name,
            StratumKind::Marginal,
            false,
            report_margin,
            policy.alpha,
            &|i| set[i],
        ));
    }
    let gate_alpha = policy.gate_alpha();
    let first_segment = rows.len();
    for s in &policy.segments {
        let alpha = if s.protected {
            gate_alpha
        } else {
            policy.alpha
        };
        let keep = |i: usize| items[i].1.as_ref().is_some_and(|st| s.filter.matches(st));
        rows.push(row(
            s.name.clone(),
            StratumKind::Segment,
            s.protected,
            s.margin,
            alpha,
            &keep,
        ));
    }
    let protected: Vec<usize> = (first_segment..rows.len())
        .filter(|&i| rows[i].protected)
        .collect();
    let adjusted = holm(
        &protected
            .iter()
            .map(|&i| rows[i].mcnemar_p)
            .collect::<Vec<_>>(),
    );
    for (&i, p) in protected.iter().zip(adjusted) {
        rows[i].mcnemar_p_holm = Some(p);
    }
    rows
}

/// How the paired rows of a candidate are read (tables, forest plots): overall, the segments with
/// the protected first (each group in policy order), then the marginal strata by dimension and
/// value as [`crate::policy::strata`] lists them. Returns indices into `rows`.
pub fn reading_order(rows: &[PairedRow]) -> Vec<usize> {
    let strata = crate::policy::strata();
    let marginal = |stratum: &str| {
        let (key, value) = stratum.split_once('=').unwrap_or((stratum, ""));
        let d = strata.iter().position(|d| d.key == key);
        let v = d.and_then(|d| strata[d].values.iter().position(|v| *v == value));
        (d.unwrap_or(strata.len()), v.unwrap_or(usize::MAX))
    };
    let key = |r: &PairedRow| match (r.kind, r.protected) {
        (StratumKind::Overall, _) => (0, 0, 0),
        (StratumKind::Segment, true) => (1, 0, 0),
        (StratumKind::Segment, false) => (2, 0, 0),
        (StratumKind::Marginal, _) => {
            let (d, v) = marginal(&r.stratum);
            (3, d, v)
        }
    };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    // Stable: rows with the same key keep the analysis's order (segments: the policy's).
    order.sort_by_key(|&i| key(&rows[i]));
    order
}

fn floors(
    policy: &Policy,
    items: &[(String, Option<ItemStrata>)],
    pass: &[Option<bool>],
) -> Vec<FloorCheck> {
    policy
        .segments
        .iter()
        .filter_map(|s| {
            let floor = s.floor?;
            let (mut n, mut accepted) = (0, 0);
            for (i, v) in pass.iter().enumerate() {
                if let (Some(v), Some(st)) = (v, &items[i].1) {
                    if s.filter.matches(st) {
                        n += 1;
                        accepted += u64::from(*v);
                    }
                }
            }
            let rate = (n > 0).then(|| accepted as f64 / n as f64);
            Some(FloorCheck {
                segment: s.name.clone(),
                protected: s.protected,
                floor,
                n,
                accepted,
                rate,
                passes: rate.map(|r| r >= floor),
            })
        })
        .collect()
}

fn table_decision(cell: &TestCell) -> Option<String> {
    let row = match cell {
        TestCell::B0 => 0,
        TestCell::C1 => 1,
        TestCell::C2 => 2,
        TestCell::C3 => 3,
        TestCell::Invalid { .. } => 4,
        TestCell::Custom { .. } => return None,
    };
    Some(DECISION_TABLE[row].decision.to_owned())
}

const NEXT_AFTER_REGRESSION: [&str; 3] = [
    "investigate scales: calibrated FP8 (C2) with checkpoint scales whose loading is observed",
    "check the backend's numerical behaviour (attention in the quantized domain, query precision)",
    "try supported selective layer exclusion (C3) before buying the apparent concurrency gain",
];

fn decide(
    cell: &CellInput,
    valid: bool,
    paired: &[PairedRow],
    floors: &[FloorCheck],
    total: &RepeatSummary,
    b0_total: Option<&RepeatSummary>,
    b0_floors: &[FloorCheck],
) -> CellDecision {
    let mut d = CellDecision {
        outcome: SuggestedOutcome::CollectMoreEvidence,
        table_decision: table_decision(&cell.test_cell),
        rules: Vec::new(),
        next_experiment: Vec::new(),
        quality_qualifies: None,
        goodput_qualifies: None,
    };
    if !valid {
        d.outcome = SuggestedOutcome::Invalid;
        d.rules.push(
            "invalid cell: compatibility evidence missing or contradicting the manifest; no score"
                .into(),
        );
        d.rules.extend(cell.invalid_reasons.iter().cloned());
        return d;
    }
    if cell.test_cell == TestCell::B0 {
        d.outcome = SuggestedOutcome::Baseline;
        d.rules.push("B0 is retained as the rollback target".into());
        return d;
    }
    if let Some(fit) = cell.capacity.rollback_fit.as_ref().filter(|f| !f.fits) {
        d.rules.push(format!(
            "rollback to B0 does not fit this candidate's admission limit: reduce admission to {} sequences before restoring the larger cache",
            fit.max_sequences_that_fit
        ));
    }
    if matches!(cell.test_cell, TestCell::C3 | TestCell::Custom { .. }) {
        d.rules.push(
            "a distinct intervention: compare the deployment bundles, not a cache-only effect"
                .into(),
        );
    }
    // Quality gate.
    let mut breach = false;
    let mut undecided = false;
    for r in paired.iter().filter(|r| r.protected) {
        match r.verdict {
            PairedVerdict::Inferior => {
                breach = true;
                d.rules.push(format!(
                    "protected segment `{}`: inferior (upper bound {} < −{})",
                    r.stratum,
                    fmt(r.ci_high),
                    r.margin
                ));
            }
            PairedVerdict::CollectMoreEvidence => {
                undecided = true;
                d.rules.push(format!(
                    "protected segment `{}`: collect more evidence (n = {}, interval [{}, {}] crosses −{})",
                    r.stratum,
                    r.n,
                    fmt(r.ci_low),
                    fmt(r.ci_high),
                    r.margin
                ));
            }
            PairedVerdict::NonInferior => {}
        }
    }
    let mut baseline_below = Vec::new();
    for f in floors.iter().filter(|f| f.protected) {
        match f.passes {
            Some(false)
                if b0_floors
                    .iter()
                    .any(|b| b.segment == f.segment && b.passes == Some(false)) =>
            {
                baseline_below.push(f.segment.clone());
                d.rules.push(format!(
                    "protected segment `{}`: accepted {} of {} = {} below the floor {}, and B0 is below it too: the floor is not met by the baseline either",
                    f.segment,
                    f.accepted,
                    f.n,
                    fmt(f.rate),
                    f.floor
                ));
            }
            Some(false) => {
                breach = true;
                d.rules.push(format!(
                    "protected segment `{}`: accepted {} of {} = {} below the floor {}",
                    f.segment,
                    f.accepted,
                    f.n,
                    fmt(f.rate),
                    f.floor
                ));
            }
            None => {
                undecided = true;
                d.rules.push(format!(
                    "protected segment `{}`: no judged item for its floor",
                    f.segment
                ));
            }
            Some(true) => {}
        }
    }
    d.quality_qualifies = if breach {
        Some(false)
    } else if undecided {
        None
    } else {
        Some(true)
    };
    // Goodput gate.
    d.goodput_qualifies = match (total.mean, b0_total.and_then(|b| b.mean)) {
        (Some(c), Some(b)) if c <= b => {
            d.rules
                .push(format!("useful goodput {c} /s does not exceed B0's {b} /s"));
            Some(false)
        }
        (Some(c), Some(b)) => match (total.ci_low, b0_total.and_then(|x| x.ci_high)) {
            (Some(lo), Some(hi)) if lo > hi => {
                d.rules.push(format!(
                    "useful goodput {c} /s exceeds B0's {b} /s beyond repeat variation"
                ));
                Some(true)
            }
            (Some(_), Some(_)) => {
                d.rules.push(format!(
                    "useful goodput {c} /s above B0's {b} /s but within repeat variation"
                ));
                Some(false)
            }
            _ => {
                d.rules
                    .push("fewer than 2 repeats on a side: goodput variation unknown".into());
                None
            }
        },
        _ => {
            d.rules
                .push("no goodput measured for the candidate or for B0".into());
            None
        }
    };
    if !breach && !baseline_below.is_empty() {
        // Below a floor B0 does not meet either: not a regression of the candidate, and no
        // reason to promote it. The simpler baseline stays; the floor needs another remedy.
        d.quality_qualifies = Some(false);
        d.rules.push(
            "the candidate cannot qualify below a protected floor; B0 misses it too, so this is not a regression: retain the simpler baseline"
                .into(),
        );
        d.outcome = SuggestedOutcome::Retain;
        return d;
    }
    d.outcome = match (d.quality_qualifies, d.goodput_qualifies) {
        (Some(false), _) => {
            d.next_experiment = NEXT_AFTER_REGRESSION
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            if matches!(cell.test_cell, TestCell::C1) {
                d.rules
                    .push("C1: reject on any protected-segment gate breach; calibrate next".into());
                SuggestedOutcome::Calibrate
            } else {
                d.rules.push(
                    "a protected segment regressed after the intervention: roll back to B0".into(),
                );
                SuggestedOutcome::Rollback
            }
        }
        (None, _) => SuggestedOutcome::CollectMoreEvidence,
        (Some(true), Some(true)) => {
            d.rules.push("quality and goodput both qualify".into());
            SuggestedOutcome::Promote
        }
        (Some(true), Some(false)) => {
            d.rules.push(
                "quality holds but goodput does not improve: retain the simpler baseline".into(),
            );
            SuggestedOutcome::Retain
        }
        (Some(true), None) => SuggestedOutcome::CollectMoreEvidence,
    };
    d
}

fn fmt(v: Option<f64>) -> String {
    v.map_or_else(|| "absent".into(), |x| format!("{x}"))
}

/// The paired rows of one candidate against B0 recomputed on the reviewers' adjudications:
/// a labelled pair counts as its label says (`labels` maps an item id to the acceptance of
/// (B0, candidate), `None` for an ambiguous item, which leaves the pair out); unlabelled pairs
/// keep their automatic verdicts. Empty when B0 or the candidate is missing or invalid.
pub fn adjudicated_paired(
    policy: &Policy,
    input: &StudyInput,
    candidate: &str,
    labels: &HashMap<String, Option<(bool, bool)>>,
) -> Vec<PairedRow> {
    let n_items = input.items.len();
    let valid = |c: &&CellInput| {
        c.invalid_reasons.is_empty() && !matches!(c.test_cell, TestCell::Invalid { .. })
    };
    let (Some(b0), Some(cand)) = (
        input
            .cells
            .iter()
            .filter(valid)
            .find(|c| c.test_cell == TestCell::B0),
        input
            .cells
            .iter()
            .filter(valid)
            .find(|c| c.cell == candidate && c.test_cell != TestCell::B0),
    ) else {
        return Vec::new();
    };
    let mut base = first_pass(b0, n_items);
    let mut pass = first_pass(cand, n_items);
    for (i, (id, _)) in input.items.iter().enumerate() {
        if base[i].is_none() || pass[i].is_none() {
            continue;
        }
        match labels.get(id) {
            None => {}
            Some(Some((x, y))) => {
                base[i] = Some(*x);
                pass[i] = Some(*y);
            }
            Some(None) => {
                base[i] = None;
                pass[i] = None;
            }
        }
    }
    paired_rows(policy, &input.items, &base, &pass)
}

/// Analyzes a study under its policy.
pub fn analyze(policy: &Policy, input: &StudyInput) -> AnalysisBody {
    let n_items = input.items.len();
    let b0 = input.cells.iter().find(|c| c.test_cell == TestCell::B0);
    let b0_pass = b0.map(|c| first_pass(c, n_items));
    let noise_floor = b0.and_then(|c| {
        let second = second_pass(c, n_items);
        let (n, b, cc) = count_pairs(b0_pass.as_deref().unwrap_or(&[]), &second, |_| true);
        (n > 0).then(|| NoiseFloor {
            n,
            b,
            c: cc,
            flip_rate: (b + cc) as f64 / n as f64,
        })
    });
    let mut totals: HashMap<&str, RepeatSummary> = HashMap::new();
    let mut cells = Vec::new();
    for cell in &input.cells {
        let valid =
            cell.invalid_reasons.is_empty() && !matches!(cell.test_cell, TestCell::Invalid { .. });
        let requests = counts(cell);
        let mut runs: Vec<i64> = cell.runs.iter().map(|r| r.run_id).collect();
        runs.sort_unstable();
        let (latency, goodput, total, paired, floors) = if valid {
            let (goodput, total) = goodput(policy, cell);
            let pass = first_pass(cell, n_items);
            let paired = match (&cell.test_cell, &b0_pass) {
                (TestCell::B0, _) | (_, None) => Vec::new(),
                (_, Some(base)) => paired_rows(policy, &input.items, base, &pass),
            };
            (
                latency(policy, cell),
                goodput,
                total,
                paired,
                floors(policy, &input.items, &pass),
            )
        } else {
            (
                BTreeMap::new(),
                BTreeMap::new(),
                repeat_summary(&[]),
                Vec::new(),
                Vec::new(),
            )
        };
        totals.insert(cell.cell.as_str(), total.clone());
        cells.push((
            cell, valid, requests, runs, latency, goodput, total, paired, floors,
        ));
    }
    let b0_total = b0.and_then(|c| totals.get(c.cell.as_str()));
    let b0_floors: Vec<FloorCheck> = cells
        .iter()
        .find(|c| c.0.test_cell == TestCell::B0)
        .map(|c| c.8.clone())
        .unwrap_or_default();
    let cells = cells
        .into_iter()
        .map(
            |(cell, valid, requests, runs, latency, goodput, total, paired, floors)| {
                let decision = decide(cell, valid, &paired, &floors, &total, b0_total, &b0_floors);
                CellAnalysis {
                    cell: cell.cell.clone(),
                    test_cell: cell.test_cell.clone(),
                    manifest_sha256: cell.manifest_sha256.clone(),
                    valid,
                    invalid_reasons: cell.invalid_reasons.clone(),
                    runs,
                    accepted_share: accepted_share(&requests),
                    requests,
                    latency,
                    goodput,
                    goodput_total: total,
                    paired,
                    floors,
                    capacity: cell.capacity.clone(),
                    decision,
                }
            },
        )
        .collect();
    AnalysisBody {
        classes: policy.classes.iter().map(|c| c.name.clone()).collect(),
        cells,
        noise_floor,
    }
}

#[cfg(test)]
mod tests;
