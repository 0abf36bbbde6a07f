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
//!   only they count; otherwise its quality runs do. Runs at different operating points
//!   ([`crate::operating_point`]) are never repeats: a cell's summary is at one point (a
//!   candidate's at a point it shares with B0), the runs at other points are listed apart.
//!   Repeats are summarized by mean, sd and a 95% t interval. A candidate is compared with B0
//!   only at a shared point with the same arrivals ([`CellAnalysis::goodput_comparable`]).
//! - **Pairs**: an item is keyed by its id **and** the sha256 of the prompt sent
//!   ([`crate::pairing`]); for each key, the first pass of each cell that judged it (lowest run
//!   id, then lowest repeat) is its answer; a pair is a key judged by both B0 and the
//!   candidate. Requests without an item id or a prompt digest never pair; every judged item
//!   left without a pair is listed with its reason ([`CellAnalysis::unpaired`]).
//!   b = B0 accepted & candidate rejected, c = the reverse, Δ = (c − b)/n. The rows
//!   are read in [`reading_order`]: overall, segments (protected first), marginal strata (the
//!   output-length stratum, by B0's answer, last).
//! - The **noise floor** pairs B0's first pass with its second pass over the same items.
//! - **Gates**: each protected segment must be non-inferior at the Bonferroni α (α divided by
//!   the number of protected segments) and meet its floor; Holm adjusts the McNemar p-values
//!   across protected segments. Goodput qualifies when the candidate's mean useful goodput
//!   (summed over classes) is above B0's and their 95% repeat intervals do not overlap.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::operating_point::{GoodputComparison, OperatingPoint, RunArrivals};
use crate::pairing::{corpus_mismatch, CorpusMismatch, Unpaired};
use crate::policy::{ItemStrata, Policy};
use crate::run::RequestStatus;
use crate::stats::{
    holm, paired_stats, percentiles, repeat_summary, PairedVerdict, Percentiles, RepeatSummary,
};
use crate::test_cell::{TestCell, DECISION_TABLE};

mod decide;
mod goodput;
mod latency;
mod pairs;
mod points;

use decide::decide;
use goodput::goodput;
use latency::{class_name, latency};
pub use pairs::{adjudicated_paired, reading_order};
use pairs::{count_pairs, first_pass, floors, paired_rows, second_pass, unpaired, Keys};
use points::goodput_points;
pub use points::PointRuns;

/// Name of the goodput and latency bucket of requests no class takes.
pub const UNCLASSIFIED: &str = "(unclassified)";

/// One measured request, as the analysis needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    /// Index into [`StudyInput::items`], when the request came from a fixture item.
    pub item: Option<u32>,
    /// Index into [`StudyInput::prompts`]: the sha256 of what was sent, recorded or recomputed.
    pub prompt: Option<u32>,
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
    /// The offered load and arrival identity its configuration records.
    pub arrivals: RunArrivals,
    /// `corpus.items_sha256` of its configuration; absent for imports of other tools' files.
    pub corpus_sha256: Option<String>,
    /// Why rows of this run that name an item carry no prompt digest (stored before digests
    /// were recorded, and not recomputable); absent when every row has one.
    pub prompt_note: Option<String>,
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
    /// The manifest's `evaluation_corpus_sha256`.
    pub evaluation_corpus_sha256: Option<String>,
    /// The manifest's scheduler limit on sequences: the admission limit of its operating points.
    pub admission_limit: Option<u32>,
}

/// Everything the analysis reads.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyInput {
    /// Fixture item ids referenced by [`RequestRow::item`], with their strata when the id names them.
    pub items: Vec<(String, Option<ItemStrata>)>,
    /// Prompt digests referenced by [`RequestRow::prompt`].
    pub prompts: Vec<String>,
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
    /// Judged items (and runs) left without a pair, with why; for a candidate, against B0.
    /// (Defaults keep analyses written before these fields readable.)
    #[serde(default)]
    pub unpaired: Vec<Unpaired>,
    /// Runs whose corpus is not the manifest's evaluation corpus.
    #[serde(default)]
    pub corpus_mismatches: Vec<CorpusMismatch>,
    /// The operating point the goodput summary is at; absent without goodput runs.
    pub operating_point: Option<OperatingPoint>,
    /// Goodput runs at other points: listed, not averaged in.
    #[serde(default)]
    pub other_points: Vec<PointRuns>,
    /// For a candidate with goodput runs on both sides: whether its goodput is compared with
    /// B0's (a shared point, the same arrivals), and why not.
    pub goodput_comparable: Option<GoodputComparison>,
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

/// What one valid cell's scores are, before its decision.
struct Scored<'a> {
    latency: BTreeMap<String, ClassLatency>,
    goodput: BTreeMap<String, ClassGoodput>,
    total: RepeatSummary,
    paired: Vec<PairedRow>,
    floors: Vec<FloorCheck>,
    points: Vec<points::Point<'a>>,
    summary: Option<usize>,
}

/// Analyzes a study under its policy.
pub fn analyze(policy: &Policy, input: &StudyInput) -> AnalysisBody {
    let keys = Keys::new(input);
    let b0 = input.cells.iter().find(|c| c.test_cell == TestCell::B0);
    let b0_rows = b0.map(|c| pairs::first_rows(c, &keys));
    let b0_pass = b0_rows.as_deref().map(pairs::verdicts);
    let b0_lengths = b0_rows
        .as_deref()
        .map(pairs::output_lengths)
        .unwrap_or_default();
    let noise_floor = b0.and_then(|c| {
        let second = second_pass(c, &keys);
        let (n, b, cc) = count_pairs(b0_pass.as_deref().unwrap_or(&[]), &second, |_| true);
        (n > 0).then(|| NoiseFloor {
            n,
            b,
            c: cc,
            flip_rate: (b + cc) as f64 / n as f64,
        })
    });
    let is_valid = |cell: &CellInput| {
        cell.invalid_reasons.is_empty() && !matches!(cell.test_cell, TestCell::Invalid { .. })
    };
    let b0_points = b0.filter(|c| is_valid(c)).map(goodput_points);
    let mut cells = Vec::new();
    for cell in &input.cells {
        let valid = is_valid(cell);
        let scored = valid.then(|| {
            let points = goodput_points(cell);
            let b0_side = b0_points
                .as_deref()
                .filter(|_| cell.test_cell != TestCell::B0);
            let summary = points::summary_point(&points, b0_side);
            let runs = summary.map(|i| points[i].runs.as_slice()).unwrap_or(&[]);
            let (goodput, total) = goodput(policy, runs);
            let pass = first_pass(cell, &keys);
            let paired = match (&cell.test_cell, &b0_pass) {
                (TestCell::B0, _) | (_, None) => Vec::new(),
                (_, Some(base)) => paired_rows(policy, &keys.items, base, &pass, &b0_lengths),
            };
            Scored {
                latency: latency(policy, cell),
                goodput,
                total,
                paired,
                floors: floors(policy, &keys.items, &pass),
                points,
                summary,
            }
        });
        cells.push((cell, valid, scored));
    }
    let b0_scored = cells
        .iter()
        .find(|c| c.0.test_cell == TestCell::B0)
        .and_then(|c| c.2.as_ref());
    let b0_floors: Vec<FloorCheck> = b0_scored.map(|s| s.floors.clone()).unwrap_or_default();
    let cells = cells
        .iter()
        .map(|(cell, valid, scored)| {
            let requests = counts(cell);
            let mut runs: Vec<i64> = cell.runs.iter().map(|r| r.run_id).collect();
            runs.sort_unstable();
            let empty = repeat_summary(&[]);
            let total = scored.as_ref().map_or(&empty, |s| &s.total);
            let point = scored
                .as_ref()
                .and_then(|s| s.summary.map(|i| &s.points[i]));
            let comparable = match (&b0_points, cell.test_cell == TestCell::B0) {
                (Some(b), false) if *valid => points::comparison(&cell.cell, point, b),
                _ => None,
            };
            // B0's goodput where the candidate is compared: at the shared point.
            let b0_at_point = point.and_then(|p| {
                let b = b0_points.as_deref()?.iter().find(|b| b.point == p.point)?;
                Some(goodput(policy, &b.runs).1)
            });
            let b0_total = b0_at_point.as_ref().or(b0_scored.map(|s| &s.total));
            let not_compared = comparable
                .as_ref()
                .filter(|c| !c.comparable)
                .and_then(|c| c.reason.as_deref());
            let (paired, floors) = scored
                .as_ref()
                .map_or((&[][..], &[][..]), |s| (&s.paired[..], &s.floors[..]));
            let decision = decide(
                cell,
                *valid,
                paired,
                floors,
                total,
                b0_total,
                &b0_floors,
                not_compared,
            );
            let corpus_mismatches = match &cell.evaluation_corpus_sha256 {
                Some(frozen) => cell
                    .runs
                    .iter()
                    .filter_map(|r| corpus_mismatch(r.run_id, r.corpus_sha256.as_deref(), frozen))
                    .collect(),
                None => Vec::new(),
            };
            CellAnalysis {
                cell: cell.cell.clone(),
                test_cell: cell.test_cell.clone(),
                manifest_sha256: cell.manifest_sha256.clone(),
                valid: *valid,
                invalid_reasons: cell.invalid_reasons.clone(),
                runs,
                accepted_share: accepted_share(&requests),
                requests,
                latency: scored
                    .as_ref()
                    .map(|s| s.latency.clone())
                    .unwrap_or_default(),
                goodput: scored
                    .as_ref()
                    .map(|s| s.goodput.clone())
                    .unwrap_or_default(),
                goodput_total: total.clone(),
                paired: paired.to_vec(),
                floors: floors.to_vec(),
                capacity: cell.capacity.clone(),
                decision,
                unpaired: if *valid {
                    unpaired(input, &keys, cell, b0.filter(|c| is_valid(c)))
                } else {
                    Vec::new()
                },
                corpus_mismatches,
                operating_point: point.map(|p| p.point.clone()),
                other_points: scored
                    .as_ref()
                    .map(|s| {
                        (0..s.points.len())
                            .filter(|&i| Some(i) != s.summary)
                            .map(|i| s.points[i].listed())
                            .collect()
                    })
                    .unwrap_or_default(),
                goodput_comparable: comparable,
            }
        })
        .collect();
    AnalysisBody {
        classes: policy.classes.iter().map(|c| c.name.clone()).collect(),
        cells,
        noise_floor,
    }
}

#[cfg(test)]
mod tests;
