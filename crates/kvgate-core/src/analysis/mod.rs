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

use crate::operating_point::{GoodputComparison, OfferedLoad, OperatingPoint, RunArrivals};
use crate::pairing::{corpus_mismatch, CorpusMismatch, Unpaired};
use crate::policy::{ItemStrata, Policy};
use crate::run::RequestStatus;
use crate::stats::{
    holm, paired_stats, percentiles, repeat_summary, PairedVerdict, Percentiles, RepeatSummary,
};
use crate::test_cell::{ScoreableCell, TestCell, DECISION_TABLE};

mod contracts;
mod decide;
mod envelope;
mod goodput;
mod latency;
mod pairs;
mod points;

pub use contracts::{ContractCheck, ContractKind};
use decide::decide;
pub use envelope::{EnvelopePoint, SloShare};
use goodput::goodput;
use latency::{class_name, latency};
pub use pairs::{adjudicated_paired, reading_order};
use pairs::{count_pairs, floors, paired_rows, second_pass, unpaired, Keys};
use points::goodput_points;
pub use points::PointRuns;

/// Name of the goodput and latency bucket of requests no class takes.
pub const UNCLASSIFIED: &str = "(unclassified)";

/// A time in milliseconds that may be absent, in the eight bytes of an `f64`: NaN stands for
/// absent (no measured time is NaN, and a NaN given is no measurement). An `Option<f64>` takes
/// sixteen, and a 1M-request study holds five per request.
#[derive(Clone, Copy)]
pub struct Ms(f64);

impl Default for Ms {
    fn default() -> Ms {
        Ms::ABSENT
    }
}

impl Ms {
    /// No measurement.
    pub const ABSENT: Ms = Ms(f64::NAN);

    /// The time, or `None` when absent.
    #[inline]
    pub fn get(self) -> Option<f64> {
        (!self.0.is_nan()).then_some(self.0)
    }
}

impl From<Option<f64>> for Ms {
    #[inline]
    fn from(v: Option<f64>) -> Ms {
        v.map_or(Ms::ABSENT, Ms)
    }
}

impl PartialEq for Ms {
    /// Absent equals absent; times compare as numbers.
    fn eq(&self, other: &Ms) -> bool {
        self.get() == other.get()
    }
}

impl std::fmt::Debug for Ms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

/// A token count that may be absent, in four bytes: `u32::MAX` stands for absent. No request
/// has four billion tokens; a count that large is read as no count rather than wrapped.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Tokens(u32);

impl Tokens {
    /// No count.
    pub const ABSENT: Tokens = Tokens(u32::MAX);

    /// The count, or `None` when absent.
    #[inline]
    pub fn get(self) -> Option<u64> {
        (self.0 != u32::MAX).then_some(u64::from(self.0))
    }
}

impl From<Option<u64>> for Tokens {
    #[inline]
    fn from(v: Option<u64>) -> Tokens {
        match v {
            Some(n) if n < u64::from(u32::MAX) => Tokens(n as u32),
            _ => Tokens::ABSENT,
        }
    }
}

impl Default for Tokens {
    fn default() -> Tokens {
        Tokens::ABSENT
    }
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

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
    pub dispatch_ms: Ms,
    pub first_token_ms: Ms,
    pub finish_ms: Ms,
    pub prompt_tokens: Tokens,
    pub completion_tokens: Tokens,
    /// The validator's verdict; `None` when the run did not validate.
    pub accepted: Option<bool>,
    /// The input token count of the fixture item the request sent (by the pinned tokenizer),
    /// when known: the class of a request whose own count is unknown.
    pub item_input_tokens: Tokens,
    /// How long the request waited in the client after its planned arrival, as recorded (the
    /// runner's dispatch lag; vLLM bench `queue_times`, the wait for a concurrency slot).
    pub client_delay_ms: Ms,
    /// The engine's own mean time per generated token, when the engine reported it with the
    /// request (llama.cpp `timings.predicted_per_token_ms`); never derived from chunk arrivals.
    pub engine_itl_ms: Ms,
}

impl RequestRow {
    /// The input tokens a request's class is chosen by: its own count, else its fixture item's.
    pub fn input_tokens(&self) -> Option<u64> {
        self.prompt_tokens.get().or(self.item_input_tokens.get())
    }
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
    /// Allocated device memory the engine's startup log states (weights, KV pool, CUDA graphs,
    /// working buffers), beside the KV capacity; absent when no log of the cell states any.
    #[serde(default)]
    pub device_memory: Option<crate::device_memory::DeviceMemory>,
    /// Each run's engine-wide load over its own clock (KV usage, waiting, running, preemption
    /// deltas) with its restarts; runs without scrapes are left out.
    #[serde(default)]
    pub metric_series: Vec<crate::metrics::RunSeries>,
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
    /// The frozen manifest as read back; absent when it cannot be, and then nothing is proven
    /// held constant against it.
    pub manifest: Option<crate::manifest::Manifest>,
    /// Named interventions recorded for this cell (audit events), oldest first.
    pub interventions: Vec<Intervention>,
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
    /// Refused by the server (HTTP 429 and the like; the request status `rejected`). "Rejected"
    /// is the validator's verdict only.
    pub refused: u64,
    pub timeout: u64,
    /// Never ended (cancelled or cut off).
    pub unfinished: u64,
    /// Judged by the validator, and of those accepted. Absent for an invalid cell: it shows
    /// request counts only, never a score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub validated: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub accepted: Option<u64>,
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
    /// Queueing from per-request figures only: the client delay of every request of the class
    /// that recorded one, whatever its status (engine-wide queue histograms are never split
    /// across classes). Count 0 when no request recorded it.
    pub client_delay_ms: Percentiles,
    /// The engine's own per-token time over `ok` requests that carry it, kept apart from
    /// `itl_ms`, which is measured by the client from streamed network chunks. Count 0 when
    /// the engine reported none (vLLM sends none).
    pub engine_itl_ms: Percentiles,
    /// The TTFT distribution for a CDF: its quantiles at 0, 1, …, 100 % (empty without values).
    pub ttft_cdf_ms: Vec<f64>,
    /// The end-to-end distribution, likewise.
    pub e2e_cdf_ms: Vec<f64>,
}

/// Quantiles at 0, 1, …, 100 % of `values` (reordered; empty for no values), with the p50, p90
/// and p99 among them.
fn cdf(values: &mut [f64]) -> (Vec<f64>, Percentiles) {
    let qs: Vec<f64> = (0..=100).map(|q| f64::from(q) / 100.0).collect();
    let at = crate::stats::quantiles(values, &qs);
    let p = Percentiles {
        p50: at[50],
        p90: at[90],
        p99: at[99],
        count: values.len() as u64,
    };
    (at.into_iter().flatten().collect(), p)
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
    /// Refused by the server.
    pub refused: u64,
    pub misses: SloMisses,
    /// Good requests whose ITL SLO did not apply (at most one output token).
    pub itl_not_applicable: u64,
    /// The run had no verdicts: goodput counts SLOs only, not answer quality.
    pub slo_only: bool,
    /// Cohort requests that ended `ok` within each SLO of their class, whatever their verdict
    /// or finish time: the share meeting each SLO, read by the envelope.
    #[serde(skip)]
    #[ts(skip)]
    #[schemars(skip)]
    pub slo_met: SloMet,
}

/// Cohort requests that ended `ok` within one SLO of their class (ITL: also those with at most
/// one output token, where it does not apply).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SloMet {
    pub ttft: u64,
    pub itl: u64,
    pub e2e: u64,
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
    /// Refused by the server.
    pub refused: u64,
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
    /// B0 is invalid: no candidate is paired, compared or scored against it.
    BaselineInvalid,
    /// A held-constant field differs from B0 (or, for C2, the backend changes against C1) and no
    /// named intervention accepts it: the comparison is not controlled, never promoted.
    Uncontrolled,
}

/// Where one gate stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    Qualifies,
    DoesNot,
    Undecided,
}

/// The goodput gate of one request class: a candidate's goodput qualifies only when every class
/// qualifies on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ClassGate {
    /// A class of the policy, or [`UNCLASSIFIED`].
    pub class: String,
    pub status: GateStatus,
    pub reason: String,
    /// Mean useful goodput of the candidate and of B0 at the compared point, per second.
    pub candidate_per_s: Option<f64>,
    pub b0_per_s: Option<f64>,
}

/// A field that must be held constant and differs: B0's (or C1's) value against the candidate's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct HeldConstantFinding {
    /// The cell compared with: `B0`, or `C1` for C2's backend coupling.
    pub against: String,
    /// Path of the field, e.g. `weights_digest` or `decoding.temperature`: what an intervention
    /// names to accept it.
    pub path: String,
    pub kind: crate::manifest::FindingKind,
    /// Canonical JSON of each side's value; absent when that side lacks the field.
    pub reference_value: Option<String>,
    pub candidate_value: Option<String>,
    pub message: String,
}

/// A named intervention recorded as an audit event: who accepted which findings, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct Intervention {
    /// Sequence number of its audit event.
    pub event: i64,
    pub by: String,
    pub at: String,
    pub why: String,
    /// The findings it accepts, each with the values it was recorded over.
    pub accepts: Vec<HeldConstantFinding>,
}

/// A held-constant finding a named intervention accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct AcceptedFinding {
    pub finding: HeldConstantFinding,
    /// Its audit event, who recorded it, when, and why.
    pub event: i64,
    pub by: String,
    pub at: String,
    pub why: String,
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
    /// Goodput gate: Some(true) only when every class of the policy qualifies on its own.
    pub goodput_qualifies: Option<bool>,
    /// What the gates say, in one sentence: shown as the decision's headline everywhere.
    pub headline: String,
    /// The goodput gate per class (policy order, then [`UNCLASSIFIED`] when any request has no
    /// class); empty for B0 and for a cell that is not compared.
    pub goodput_by_class: Vec<ClassGate>,
    /// Held-constant findings against B0 (and C2's coupling against C1) no intervention
    /// accepts; empty when the comparison is controlled.
    pub uncontrolled_findings: Vec<HeldConstantFinding>,
    /// Held-constant findings a named intervention accepts, with the intervention.
    pub accepted_findings: Vec<AcceptedFinding>,
    /// Paired items the planner needs per protected segment for the quality gate to decide
    /// (power 0.8), when it is undecided for want of pairs.
    pub pairs_needed: Option<u64>,
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
    /// Useful goodput per class at every operating point the cell was measured at (its
    /// operating envelope); empty for an invalid cell.
    #[serde(default)]
    pub envelope: Vec<EnvelopePoint>,
    /// The highest offered rate inside the policy's envelope bar for every class; absent
    /// without a bar (`envelope.min_good_share`) or when no point meets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub knee_rps: Option<f64>,
    /// The class contracts the policy declares (error and completion rates), at the target load
    /// when the cell has runs there, else at its summary point; empty without a contract or for
    /// an invalid cell.
    #[serde(default)]
    pub contracts: Vec<ContractCheck>,
}

/// The analysis of a study under its locked policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct AnalysisBody {
    /// Class names in policy order.
    pub classes: Vec<String>,
    pub cells: Vec<CellAnalysis>,
    /// B0 against its own second pass; absent without a second B0 pass.
    pub noise_floor: Option<NoiseFloor>,
    /// The policy's target load and envelope bar, as the envelope was read against them (for
    /// charts that mark them); absent when the policy declares none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub target_offered_load_rps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub min_good_share: Option<f64>,
}

fn counts(cell: &CellInput, scored: bool) -> RequestCounts {
    let mut k = RequestCounts::default();
    let (mut validated, mut accepted) = (0, 0);
    for r in cell.runs.iter().flat_map(|r| &r.requests) {
        k.offered += 1;
        match r.status {
            RequestStatus::Ok => k.completed += 1,
            RequestStatus::Error => k.failed += 1,
            RequestStatus::Rejected => k.refused += 1,
            RequestStatus::Timeout => k.timeout += 1,
            RequestStatus::Unfinished => k.unfinished += 1,
        }
        if let Some(a) = r.accepted {
            validated += 1;
            accepted += u64::from(a);
        }
    }
    // An invalid cell shows request counts only: its accepted answers are not a result.
    if scored {
        k.validated = Some(validated);
        k.accepted = Some(accepted);
    }
    k
}

/// Accepted answers of every offered request; `None` without an offered request or a score.
fn accepted_share(k: &RequestCounts) -> Option<f64> {
    let accepted = k.accepted?;
    (k.offered > 0).then(|| accepted as f64 / k.offered as f64)
}

/// The cell as the decision table reads it: a cell whose evidence makes it invalid is the
/// table's invalid row, whatever its name.
fn effective_cell(cell: &CellInput) -> TestCell {
    if cell.invalid_reasons.is_empty() {
        return cell.test_cell.clone();
    }
    cell.test_cell
        .clone()
        .mark_invalid(&cell.invalid_reasons.join("; "))
        .unwrap_or_else(|_| cell.test_cell.clone())
}

/// What one valid cell's scores are, before its decision. Only a [`ScoreableCell`] holds one.
struct Scored<'a> {
    #[allow(dead_code)] // the key that proves the cell may be scored
    cell: ScoreableCell,
    /// Per pair key, the row of the cell's first pass ([`pairs::first_rows`]): read once.
    first: Vec<Option<&'a RequestRow>>,
    latency: BTreeMap<String, ClassLatency>,
    goodput: BTreeMap<String, ClassGoodput>,
    total: RepeatSummary,
    paired: Vec<PairedRow>,
    floors: Vec<FloorCheck>,
    points: Vec<points::Point<'a>>,
    /// Goodput per run and class at each point, in `points` order: computed once.
    point_rows: Vec<Vec<Vec<RunGoodput>>>,
    summary: Option<usize>,
    envelope: (Vec<EnvelopePoint>, Option<f64>),
    contracts: Vec<ContractCheck>,
}

/// `f` of each of `items`, in their order, computed on two cores: every other item on a second
/// thread. The cells of a study are scored independently of each other, and each is a
/// large share of the analysis.
fn each_on_two_cores<'a, T: Sync, R: Send>(
    items: &'a [T],
    f: impl Fn(&'a T) -> R + Sync,
) -> Vec<R> {
    if items.len() < 2 {
        return items.iter().map(&f).collect();
    }
    std::thread::scope(|scope| {
        let odd = scope.spawn(|| items.iter().skip(1).step_by(2).map(&f).collect::<Vec<R>>());
        let even: Vec<R> = items.iter().step_by(2).map(&f).collect();
        let odd = odd.join().expect("scoring a cell does not panic");
        let mut out = Vec::with_capacity(items.len());
        let mut odd = odd.into_iter();
        for e in even {
            out.push(e);
            out.extend(odd.next());
        }
        out
    })
}

/// Analyzes a study under its policy.
pub fn analyze(policy: &Policy, input: &StudyInput) -> AnalysisBody {
    let keys = Keys::new(input);
    let b0_cell = input.cells.iter().find(|c| c.test_cell == TestCell::B0);
    let scoreable = |cell: &CellInput| effective_cell(cell).scoreable().ok();
    // An invalid B0 is no baseline: nothing is paired or compared against it.
    let b0 = b0_cell.filter(|c| scoreable(c).is_some());
    let baseline_invalid = b0_cell.is_some() && b0.is_none();
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
    let b0_points = b0.map(goodput_points);
    // Each valid cell is scored from the shared, read-only inputs above: the cells on both
    // cores, in their order.
    let scored = each_on_two_cores(&input.cells, |cell| {
        scoreable(cell).map(|key| {
            let points = goodput_points(cell);
            let b0_side = b0_points
                .as_deref()
                .filter(|_| cell.test_cell != TestCell::B0);
            let summary = points::summary_point(&points, b0_side);
            let point_rows: Vec<Vec<Vec<RunGoodput>>> = points
                .iter()
                .map(|p| goodput::point_goodput(policy, &p.runs))
                .collect();
            let (goodput, total) = goodput(policy, summary.map_or(&[][..], |i| &point_rows[i][..]));
            // B0's first rows are read once, above.
            let first = match (&b0_rows, b0) {
                (Some(rows), Some(b)) if std::ptr::eq(b, cell) => rows.clone(),
                _ => pairs::first_rows(cell, &keys),
            };
            let pass = pairs::verdicts(&first);
            let paired = match (&cell.test_cell, &b0_pass) {
                (TestCell::B0, _) | (_, None) => Vec::new(),
                (_, Some(base)) => paired_rows(policy, &keys.items, base, &pass, &b0_lengths),
            };
            Scored {
                cell: key,
                first,
                latency: latency(policy, cell),
                goodput,
                total,
                paired,
                floors: floors(policy, &keys.items, &pass),
                envelope: envelope::envelope(policy, cell, &points, &point_rows),
                contracts: contracts::contracts(policy, &points, &point_rows, summary),
                points,
                point_rows,
                summary,
            }
        })
    });
    let cells: Vec<(&CellInput, Option<Scored>)> = scored
        .into_iter()
        .zip(&input.cells)
        .map(|(scored, cell)| (cell, scored))
        .collect();
    let b0_scored = cells
        .iter()
        .find(|c| c.0.test_cell == TestCell::B0)
        .and_then(|c| c.1.as_ref());
    let b0_floors: Vec<FloorCheck> = b0_scored.map(|s| s.floors.clone()).unwrap_or_default();
    let b0_manifest = b0_cell.and_then(|c| c.manifest.as_ref());
    let c1_manifest = input
        .cells
        .iter()
        .find(|c| c.test_cell == TestCell::C1)
        .and_then(|c| c.manifest.as_ref());
    let classes: Vec<String> = policy.classes.iter().map(|c| c.name.clone()).collect();
    let cells = cells
        .iter()
        .map(|(cell, scored)| {
            let valid = scored.is_some();
            let requests = counts(cell, valid);
            let mut runs: Vec<i64> = cell.runs.iter().map(|r| r.run_id).collect();
            runs.sort_unstable();
            let empty = repeat_summary(&[]);
            let total = scored.as_ref().map_or(&empty, |s| &s.total);
            let point = scored
                .as_ref()
                .and_then(|s| s.summary.map(|i| &s.points[i]));
            let comparable = match (&b0_points, cell.test_cell == TestCell::B0) {
                (Some(b), false) if valid => points::comparison(&cell.cell, point, b),
                _ => None,
            };
            // B0's goodput where the candidate is compared: at the shared point.
            let b0_at_point = point.and_then(|p| {
                let b0 = b0_scored?;
                let at = b0.points.iter().position(|b| b.point == p.point)?;
                Some(goodput(policy, &b0.point_rows[at]))
            });
            let b0_goodput = b0_at_point
                .as_ref()
                .map(|(g, t)| (g, t))
                .or(b0_scored.map(|s| (&s.goodput, &s.total)));
            let not_compared = comparable
                .as_ref()
                .filter(|c| !c.comparable)
                .and_then(|c| c.reason.as_deref());
            let (paired, floors) = scored
                .as_ref()
                .map_or((&[][..], &[][..]), |s| (&s.paired[..], &s.floors[..]));
            let empty_goodput = BTreeMap::new();
            let contracts = scored.as_ref().map_or(&[][..], |s| &s.contracts[..]);
            let held = if cell.test_cell.is_candidate() {
                held_constant(cell, b0_manifest, c1_manifest)
            } else {
                Vec::new()
            };
            let decision = decide(decide::Gates {
                cell,
                table_cell: &effective_cell(cell),
                valid,
                baseline_invalid,
                classes: &classes,
                paired,
                floors,
                goodput: scored.as_ref().map_or(&empty_goodput, |s| &s.goodput),
                total,
                b0_goodput,
                b0_floors: &b0_floors,
                goodput_not_compared: not_compared,
                held,
                noise_floor: noise_floor.as_ref(),
                contracts,
                envelope: envelope_gate(policy, cell, scored.as_ref(), b0.zip(b0_scored)),
            });
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
                valid,
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
                unpaired: match (scored, &b0_rows) {
                    (Some(s), base) if !baseline_invalid => unpaired(
                        input,
                        &keys,
                        cell,
                        b0,
                        (base.as_deref().unwrap_or(&[]), &s.first),
                    ),
                    _ => Vec::new(),
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
                envelope: scored
                    .as_ref()
                    .map(|s| s.envelope.0.clone())
                    .unwrap_or_default(),
                knee_rps: scored.as_ref().and_then(|s| s.envelope.1),
                contracts: contracts.to_vec(),
            }
        })
        .collect();
    AnalysisBody {
        classes,
        cells,
        noise_floor,
        target_offered_load_rps: policy.target_offered_load_rps,
        min_good_share: policy.envelope.as_ref().map(|e| e.min_good_share),
    }
}

/// The envelope comparison of a scored candidate with a scored B0, when the policy declares a
/// bar and a target load.
fn envelope_gate<'a>(
    policy: &Policy,
    cell: &CellInput,
    scored: Option<&'a Scored<'_>>,
    b0: Option<(&CellInput, &'a Scored<'_>)>,
) -> Option<decide::EnvelopeGate<'a>> {
    let (bar, target_rps) = (
        policy.envelope.as_ref()?.min_good_share,
        policy.target_offered_load_rps?,
    );
    let (scored, (b0_cell, b0)) = (scored?, b0?);
    if !cell.test_cell.is_candidate() {
        return None;
    }
    // The same arrivals at the target on both sides, or the reason they are not.
    let at_target = scored
        .points
        .iter()
        .find(|p| p.point.offered == OfferedLoad::Rate { per_s: target_rps });
    let arrivals = points::comparison(&cell.cell, at_target, &b0.points)
        .filter(|c| !c.comparable)
        .and_then(|c| c.reason);
    Some(decide::EnvelopeGate {
        bar,
        target_rps,
        arrivals_differ: arrivals,
        candidate: &scored.envelope.0,
        candidate_knee: scored.envelope.1,
        b0: &b0.envelope.0,
        b0_knee: b0.envelope.1,
        b0_admission_limit: b0_cell.admission_limit,
    })
}

/// The held-constant findings of `cell` against the study's B0 (and C1), before any named
/// intervention accepts them; empty for B0.
pub fn held_constant_findings(input: &StudyInput, cell: &CellInput) -> Vec<HeldConstantFinding> {
    if !cell.test_cell.is_candidate() {
        return Vec::new();
    }
    let manifest_of = |t: TestCell| {
        input
            .cells
            .iter()
            .find(|c| c.test_cell == t)
            .and_then(|c| c.manifest.as_ref())
    };
    held_constant(cell, manifest_of(TestCell::B0), manifest_of(TestCell::C1))
}

/// The held-constant findings of a candidate: the red findings of its manifest against B0's,
/// and for C2 the backend or kernel coupling against C1's (amber in `manifest diff`, but it
/// leaves calibration's effect unattributed). A manifest that cannot be read back proves
/// nothing held constant: that is a finding too.
fn held_constant(
    cell: &CellInput,
    b0: Option<&crate::manifest::Manifest>,
    c1: Option<&crate::manifest::Manifest>,
) -> Vec<HeldConstantFinding> {
    use crate::manifest::{diff, FindingKind, Severity};
    let Some(candidate) = cell.manifest.as_ref() else {
        return vec![HeldConstantFinding {
            against: "B0".into(),
            path: "(manifest)".into(),
            kind: FindingKind::HeldConstantViolation,
            reference_value: None,
            candidate_value: None,
            message: format!(
                "the frozen manifest of {} cannot be read back: nothing is proven held constant",
                cell.cell
            ),
        }];
    };
    let Some(b0) = b0 else {
        return Vec::new();
    };
    let found = |against: &str, f: crate::manifest::Finding| HeldConstantFinding {
        against: against.into(),
        path: f.path,
        kind: f.kind,
        reference_value: f.reference_value,
        candidate_value: f.candidate_value,
        message: f.message,
    };
    let mut out: Vec<HeldConstantFinding> = diff(b0, candidate)
        .into_iter()
        .filter(|f| f.severity == Severity::Red)
        .map(|f| found("B0", f))
        .collect();
    if cell.test_cell == TestCell::C2 {
        if let Some(c1) = c1 {
            out.extend(
                diff(c1, candidate)
                    .into_iter()
                    .filter(|f| f.kind == FindingKind::CoupledIntervention)
                    .map(|f| found("C1", f)),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests;
