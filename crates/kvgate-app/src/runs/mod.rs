//! User actions on runs: a paired-quality run of a corpus against one cell's server, a load run
//! at an offered rate, cancelling a running run, and reading runs back with their verdicts and
//! evidence.
//!
//! A run is stored as `running` before its first request and finished in one transaction with
//! every request (failures included), its verdicts, the compatibility evidence and the metric
//! scrapes. A cancelled run is kept, labelled `cancelled`, with every planned request accounted
//! for.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kvgate_core::canonical::{canonical_json, sha256_hex};
use kvgate_core::compat::{CellValidity, ObservedEngine};
use kvgate_core::evidence::{CompatibilityRecord, EvidenceKind};
use kvgate_core::fixtures::{ApprovedPrompt, CorpusItem};
use kvgate_core::manifest::Manifest;
use kvgate_core::metrics::{
    normalize, summarize, CanonicalMetric, EngineProfile, MetricPoint, MetricSummary,
};
use kvgate_core::policy::{ItemStrata, SegmentFilter};
use kvgate_core::run::{RequestRecord, RunProgress};
use kvgate_core::validator::{ValidatorPolicy, Verdict};
use kvgate_formats::import::{logs, Source};
use kvgate_formats::prometheus::{observed_from_cache_config_info, parse_exposition};
use kvgate_formats::run_file::{
    parse_run_file, render_run_file, RunFile, RunFileEvidence, RunFileHeader, RunFileRequest,
    RunFileScrape, RUN_FILE_FORMAT, RUN_FILE_VERSION,
};
use kvgate_formats::startup_log::{parse_startup_log, StartupEvidence};
use kvgate_runner::{
    chat_body, metrics_url, quality_order, run_closed_loop, run_open_loop, Api, Arrivals,
    CancellationToken, Client, ClosedLoop, ClosedLoopLimit, Endpoint, OpenLoop, PlannedRequest,
    RawScrape, RunOutcome, Scraper,
};
use kvgate_store::{
    Granularity, MetricScrapeRow, NewRun, RunEvidence, RunKind, RunProvenance, RunRecord, RunState,
    StoredRequest,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use ts_rs::TS;

use crate::fixtures::{open_run_corpus, RunCorpus};
use crate::{App, AppError, ErrorCode};

/// Model name sent when the input names none (llama.cpp serves whatever it loaded).
pub const DEFAULT_MODEL: &str = "default";
const DEFAULT_DEADLINE_S: f64 = 300.0;
const DEFAULT_SCRAPE_MS: u32 = 1000;
const DEFAULT_DRAIN_S: f64 = 30.0;

/// Cancellation tokens of the runs this process is executing, by run id.
#[derive(Debug, Default, Clone)]
pub(crate) struct ActiveRuns {
    inner: Arc<Mutex<HashMap<i64, CancellationToken>>>,
}

/// A paired-quality run: the corpus (or a balanced subset) sent to one cell's server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct QualityRunInput {
    pub study_id: i64,
    pub cell: String,
    /// Server root or its `/v1` prefix.
    pub base_url: String,
    #[serde(default)]
    pub model: Option<String>,
    /// A corpus folder (`items.jsonl` + `corpus.json`).
    pub corpus_dir: String,
    /// Passes over the items (default 1), each in its own seeded order.
    #[serde(default)]
    pub repeats: Option<u32>,
    #[serde(default)]
    #[ts(type = "number | undefined")]
    pub seed: Option<u64>,
    /// Send only a balanced subset of this many items.
    #[serde(default)]
    pub limit: Option<u32>,
    /// Send only the items of these strata (applied before `limit`).
    #[serde(default)]
    pub only: Option<SegmentFilter>,
    /// Resume: of the selection (`only`, then `limit`), send only the items this cell has not
    /// yet answered with the same prompt in the study's finished quality runs (see
    /// `Store::answered_prompts`). Runs that resume one another pair like one run.
    #[serde(default)]
    pub resume: Option<bool>,
    /// Send at most this many of the items left (in the selection's balanced order): a long
    /// recording in bounded runs, so an interruption loses at most one of them.
    #[serde(default)]
    pub at_most: Option<u32>,
    /// Engine warm-up requests sent first and stored apart from measured ones (default 1):
    /// corpus items outside the measured set, never a measured item (see
    /// `kvgate_core::warmup::plan_warmup`; recorded in the run's config as `warmup`).
    #[serde(default)]
    pub warmup: Option<u32>,
    /// Requests in flight at once (default 1).
    #[serde(default)]
    pub concurrency: Option<u32>,
    /// The server's startup log: compatibility evidence compared with the manifest.
    #[serde(default)]
    pub startup_log: Option<String>,
    /// `/metrics` scrape interval; 0 turns scraping off (default 1000).
    #[serde(default)]
    pub scrape_interval_ms: Option<u32>,
    /// Per-request deadline in seconds (default 300).
    #[serde(default)]
    pub request_deadline_s: Option<f64>,
}

/// How much of a quality run's selection is left to send (`resume`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct QualityLeft {
    pub cell: String,
    /// Items in the selection (`only`, then `limit`).
    pub selected: u32,
    /// Of them, answered by the cell with the same prompt in the study's finished quality runs
    /// (counted only with `resume`).
    pub answered: u32,
    /// What a run with this input would send now (`at_most` applied).
    pub to_send: u32,
}

/// A load run at an offered rate (open loop) or a fixed concurrency (closed loop).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct LoadRunInput {
    pub study_id: i64,
    pub cell: String,
    pub base_url: String,
    #[serde(default)]
    pub model: Option<String>,
    /// Prompts to cycle through; every response is validated against its item. Without one,
    /// the synthetic test-2k evaluation corpus generated from `seed` with the pinned tokenizer.
    #[serde(default)]
    pub corpus_dir: Option<String>,
    /// `poisson:RPS`, `gamma:RPS:SHAPE`, `constant:RPS` or `trace:FILE`. Ignored when
    /// `concurrency` is set (closed loop).
    #[serde(default)]
    pub arrivals: Option<String>,
    pub duration_s: f64,
    /// Closed loop with this many workers instead of open-loop arrivals.
    #[serde(default)]
    pub concurrency: Option<u32>,
    #[serde(default)]
    #[ts(type = "number | undefined")]
    pub seed: Option<u64>,
    /// Grace after the duration before running requests are recorded unfinished (default 30).
    #[serde(default)]
    pub drain_s: Option<f64>,
    #[serde(default)]
    pub startup_log: Option<String>,
    #[serde(default)]
    pub scrape_interval_ms: Option<u32>,
    #[serde(default)]
    pub request_deadline_s: Option<f64>,
    /// Cycle only through the items of these strata (e.g. short ones, for a slow server).
    #[serde(default)]
    pub only: Option<SegmentFilter>,
}

/// One cell of a sweep: its server and, for the compatibility check, its startup log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct SweepCell {
    pub cell: String,
    pub base_url: String,
    #[serde(default)]
    pub startup_log: Option<String>,
}

/// An offered-load sweep over cells and rates (`App::run_sweep`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct SweepInput {
    pub study_id: i64,
    pub cells: Vec<SweepCell>,
    /// Offered rates, requests per second, in the order run.
    pub rates: Vec<f64>,
    /// Seconds during which each run's requests are planned: at least the locked policy's
    /// goodput interval plus its drain deadline.
    pub duration_s: f64,
    /// Repeats at each rate (runs per point).
    pub runs_per_point: u32,
    #[ts(type = "number")]
    pub seed: u64,
    #[serde(default)]
    pub model: Option<String>,
    /// Prompts to cycle through, the same at every point (every response is validated
    /// against its item).
    pub corpus_dir: String,
    #[serde(default)]
    pub scrape_interval_ms: Option<u32>,
    #[serde(default)]
    pub request_deadline_s: Option<f64>,
    /// Cycle only through the items of these strata.
    #[serde(default)]
    pub only: Option<SegmentFilter>,
}

/// A run as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RunSummary {
    pub id: i64,
    pub study_id: i64,
    pub cell: String,
    pub kind: RunKind,
    pub state: RunState,
    pub label: String,
    pub provenance: RunProvenance,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub elapsed_ms: Option<f64>,
    pub planned: Option<i64>,
    pub ok: i64,
    pub failed: i64,
    pub note: Option<String>,
    pub config_sha256: String,
    #[ts(type = "Record<string, unknown>")]
    pub config: Value,
    /// The import that created the run; absent for runs KV Gate executed.
    pub import_id: Option<i64>,
    pub granularity: Granularity,
}

/// One stored request with its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RunRequest {
    pub record: RequestRecord,
    /// Time to first token from actual dispatch (`RequestRecord::ttft_ms`); absent unless both
    /// were observed.
    pub ttft_ms: Option<f64>,
    /// End-to-end latency from actual dispatch (`RequestRecord::e2e_ms`); absent for a request
    /// that never ended or was never sent.
    pub e2e_ms: Option<f64>,
    pub repeat: u32,
    pub warmup: bool,
    /// The validator's verdict; absent for a request not validated, and for every request while
    /// the study's results are withheld (`RunDetail::withheld` says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional = nullable)]
    pub verdict: Option<Verdict>,
}

/// One piece of evidence, without its (possibly long) text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct EvidenceInfo {
    pub kind: String,
    pub source_name: String,
    pub sha256: String,
    pub bytes: u64,
}

/// A run with everything it recorded.
#[derive(Debug, Clone, PartialEq, Serialize, TS, JsonSchema)]
pub struct RunDetail {
    pub run: RunSummary,
    pub requests: Vec<RunRequest>,
    /// Why the verdicts and their counts are absent, while they are: floors before results.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub withheld: Option<kvgate_core::policy::Withheld>,
    /// Measured requests (warm-up excluded) by verdict; failures are rejected, never skipped.
    /// Absent (not 0) while the study's results are withheld.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub accepted: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub rejected: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub unvalidated: Option<u32>,
    /// The compatibility check against the cell's manifest; `None` only for runs stored
    /// before any check existed.
    pub validity: Option<CellValidity>,
    pub startup: Option<StartupEvidence>,
    pub evidence: Vec<EvidenceInfo>,
    pub metrics: Option<MetricSummary>,
    /// Figures the source tool reported about the whole run, verbatim with their unit (imports).
    pub aggregates: Vec<crate::imports::ImportFigure>,
    /// Set when the run's corpus is not its manifest's evaluation corpus: its items are not the
    /// ones the manifest froze, and they pair only where the same prompt was sent to B0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub corpus_mismatch: Option<kvgate_core::pairing::CorpusMismatch>,
}

/// The phase a progress report belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunPhase {
    Warmup,
    Measured,
    Finished,
}

/// A progress report of a running run, for progress bars and app events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RunEvent {
    pub run_id: i64,
    pub phase: RunPhase,
    pub progress: RunProgress,
    /// Set with the `finished` phase: the run's final state.
    pub state: Option<String>,
}

fn invalid(message: impl Into<String>) -> AppError {
    AppError::new(ErrorCode::InvalidInput, message)
}

fn summary_of(r: RunRecord) -> RunSummary {
    let config = serde_json::from_str(&r.config_json).unwrap_or(Value::Null);
    RunSummary {
        id: r.id,
        study_id: r.study_id,
        cell: r.cell,
        kind: r.kind,
        state: r.state,
        label: r.label,
        provenance: r.provenance,
        started_at: r.started_at,
        finished_at: r.finished_at,
        elapsed_ms: r.elapsed_ms,
        planned: r.planned,
        ok: r.ok,
        failed: r.failed,
        note: r.note,
        config_sha256: r.config_sha256,
        config,
        import_id: r.import_id,
        granularity: r.granularity,
    }
}

mod execute;
mod run_file;

impl App {
    /// Asks a running run of this process to stop. Its requests in flight are recorded as they
    /// stand and the run is stored `cancelled`.
    pub fn cancel_run(&self, run_id: i64) -> Result<(), AppError> {
        match self.runs.inner.lock().expect("run registry").get(&run_id) {
            Some(token) => {
                token.cancel();
                Ok(())
            }
            None => Err(AppError::not_found(format!(
                "run {run_id} is not running in this workbench"
            ))),
        }
    }

    /// Every run of a study, oldest first.
    pub async fn list_runs(&self, study_id: i64) -> Result<Vec<RunSummary>, AppError> {
        Ok(self
            .store
            .list_runs(study_id)
            .await?
            .into_iter()
            .map(summary_of)
            .collect())
    }

    /// One run with its requests, verdicts and evidence. Until the study's policy is locked the
    /// verdicts and their counts are left out, and `withheld` says why.
    pub async fn run_detail(&self, run_id: i64) -> Result<RunDetail, AppError> {
        let record = self.store.get_run(run_id).await?;
        let withheld = self.results_withheld(record.study_id).await?;
        let manifest = self
            .store
            .list_manifests(record.study_id)
            .await?
            .into_iter()
            .find(|m| m.id == record.manifest_id)
            .and_then(|m| Manifest::from_json(&m.text).ok());
        let run = summary_of(record);
        let corpus_mismatch = manifest.and_then(|m| {
            kvgate_core::pairing::corpus_mismatch(
                run.id,
                run.config["corpus"]["items_sha256"].as_str(),
                &m.evaluation_corpus_sha256,
            )
        });
        let requests: Vec<RunRequest> = self
            .store
            .run_requests(run_id)
            .await?
            .into_iter()
            .map(|s| RunRequest {
                ttft_ms: s.record.ttft_ms(),
                e2e_ms: s.record.e2e_ms(),
                record: s.record,
                repeat: s.repeat,
                warmup: s.warmup,
                verdict: s.verdict.filter(|_| withheld.is_none()),
            })
            .collect();
        let (mut accepted, mut rejected, mut unvalidated) = (0, 0, 0);
        for r in requests.iter().filter(|r| !r.warmup) {
            match &r.verdict {
                Some(v) if v.accepted => accepted += 1,
                Some(_) => rejected += 1,
                None => unvalidated += 1,
            }
        }
        let count = |n: u32| withheld.is_none().then_some(n);
        let stored = self.store.run_evidence(run_id).await?;
        let mut validity = None;
        let mut startup = None;
        let mut metrics = None;
        for e in &stored {
            match EvidenceKind::parse(&e.kind) {
                Some(EvidenceKind::Compatibility) => {
                    validity = CompatibilityRecord::from_text(&e.text)
                        .ok()
                        .map(|r| r.validity)
                }
                Some(EvidenceKind::StartupLog) => startup = Some(parse_startup_log(&e.text)),
                Some(EvidenceKind::Metrics) => metrics = serde_json::from_str(&e.text).ok(),
                Some(EvidenceKind::CacheConfigInfo) | None => {}
            }
        }
        let evidence = stored
            .iter()
            .map(|e| EvidenceInfo {
                kind: e.kind.clone(),
                source_name: e.source_name.clone(),
                sha256: e.sha256.clone(),
                bytes: e.text.len() as u64,
            })
            .collect();
        Ok(RunDetail {
            run,
            requests,
            withheld,
            accepted: count(accepted),
            rejected: count(rejected),
            unvalidated: count(unvalidated),
            validity,
            startup,
            evidence,
            metrics,
            aggregates: self
                .store
                .run_aggregates(run_id)
                .await?
                .into_iter()
                .map(|a| crate::imports::ImportFigure {
                    name: a.name,
                    stat: a.stat,
                    value: a.value,
                    unit: a.unit,
                })
                .collect(),
            corpus_mismatch,
        })
    }
}
