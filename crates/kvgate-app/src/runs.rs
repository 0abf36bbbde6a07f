//! User actions on runs: a paired-quality run of a corpus against one cell's server, a load run
//! at an offered rate, cancelling a running run, and reading runs back with their verdicts and
//! evidence.
//!
//! A run is stored as `running` before its first request and finished in one transaction with
//! every request (failures included), its verdicts, the compatibility evidence and the metric
//! scrapes. A cancelled run is kept, labelled `cancelled`, with every planned request accounted
//! for.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kvgate_core::canonical::{canonical_json, sha256_hex};
use kvgate_core::compat::{CellValidity, ObservedEngine};
use kvgate_core::evidence::{CompatibilityRecord, EvidenceKind};
use kvgate_core::fixtures::{balanced_subset, FixtureItem};
use kvgate_core::manifest::Manifest;
use kvgate_core::metrics::{
    normalize, summarize, CanonicalMetric, EngineProfile, MetricPoint, MetricSummary,
};
use kvgate_core::policy::{ItemStrata, SegmentFilter};
use kvgate_core::run::{RequestRecord, RunProgress};
use kvgate_core::validator::{validate, ValidatorPolicy, Verdict};
use kvgate_formats::import::{logs, Source};
use kvgate_formats::prometheus::{observed_from_cache_config_info, parse_exposition};
use kvgate_formats::run_file::{
    parse_run_file, render_run_file, RunFile, RunFileEvidence, RunFileHeader, RunFileRequest,
    RunFileScrape, RUN_FILE_FORMAT, RUN_FILE_VERSION,
};
use kvgate_formats::startup_log::{parse_startup_log, StartupEvidence};
use kvgate_runner::{
    chat_body, metrics_url, parse_trace, quality_order, run_closed_loop, run_open_loop, Api,
    Arrivals, CancellationToken, Client, ClosedLoop, ClosedLoopLimit, Endpoint, OpenLoop,
    PlannedRequest, RawScrape, RunOutcome, Scraper,
};
use kvgate_store::{
    Granularity, MetricScrapeRow, NewRun, RunEvidence, RunKind, RunProvenance, RunRecord, RunState,
    StoredRequest,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use ts_rs::TS;

use crate::evidence::EvidenceSet;
use crate::fixtures::open_corpus;
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
    /// Engine warm-up requests sent first and stored apart from measured ones (default 1).
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
    /// Measured requests (warm-up excluded) by verdict; failures are rejected, never skipped.
    pub accepted: u32,
    pub rejected: u32,
    pub unvalidated: u32,
    /// The compatibility check against the cell's manifest; `None` only for runs stored
    /// before any check existed.
    pub validity: Option<CellValidity>,
    pub startup: Option<StartupEvidence>,
    pub evidence: Vec<EvidenceInfo>,
    pub metrics: Option<MetricSummary>,
    /// Figures the source tool reported about the whole run, verbatim with their unit (imports).
    pub aggregates: Vec<crate::imports::ImportFigure>,
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

/// Parses `poisson:RPS`, `gamma:RPS:SHAPE`, `constant:RPS` or `trace:FILE` (the trace's sha256
/// enters the plan).
pub fn parse_arrivals(spec: &str, seed: u64) -> Result<Arrivals, AppError> {
    let bad = |why: String| invalid(format!("arrivals {spec:?}: {why}"));
    let (kind, rest) = spec.split_once(':').ok_or_else(|| {
        bad("expected poisson:RPS, gamma:RPS:SHAPE, constant:RPS or trace:FILE".into())
    })?;
    let number = |text: &str, what: &str| -> Result<f64, AppError> {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0)
            .ok_or_else(|| {
                bad(format!(
                    "{what}: expected a positive number, found {text:?}"
                ))
            })
    };
    match kind {
        "poisson" => Ok(Arrivals::Poisson {
            rate: number(rest, "rate")?,
            seed,
        }),
        "constant" => Ok(Arrivals::Constant {
            rate: number(rest, "rate")?,
        }),
        "gamma" => {
            let (rate, shape) = rest
                .split_once(':')
                .ok_or_else(|| bad("expected gamma:RPS:SHAPE".into()))?;
            Ok(Arrivals::Gamma {
                rate: number(rate, "rate")?,
                shape: number(shape, "shape")?,
                seed,
            })
        }
        "trace" => {
            let bytes = std::fs::read(rest).map_err(|e| bad(format!("cannot read {rest}: {e}")))?;
            let text = String::from_utf8(bytes.clone())
                .map_err(|_| bad(format!("{rest}: expected UTF-8 text")))?;
            let offsets_ms = parse_trace(&text).map_err(|e| bad(format!("{rest}: {e}")))?;
            Ok(Arrivals::Trace {
                offsets_ms,
                sha256: sha256_hex(&bytes),
            })
        }
        other => Err(bad(format!(
            "expected poisson, gamma, constant or trace before ':', found {other:?}"
        ))),
    }
}

/// A run's startup log: its path as given, its text, and what was recognised in it.
struct StartupLog {
    path: String,
    text: String,
    parsed: StartupEvidence,
}

/// Reads the startup log named by a run's input, when one is named. It is stored whole as the
/// run's evidence (and written into packets), so only a startup log is accepted: the size cap,
/// UTF-8 check and recognition of `kvgate-formats`' log reader.
fn read_startup_log(path: Option<&str>) -> Result<Option<StartupLog>, AppError> {
    let Some(path) = path.filter(|p| !p.trim().is_empty()) else {
        return Ok(None);
    };
    let file = std::fs::File::open(path)
        .map_err(|e| invalid(format!("startup_log {path}: cannot read it: {e}")))?;
    let (text, parsed) = logs::read_startup_log(&Source::new(path), file)
        .map_err(|e| invalid(format!("startup_log {e}")))?;
    Ok(Some(StartupLog {
        path: path.to_owned(),
        text,
        parsed,
    }))
}

/// Where a run goes and how it is observed, as given by the user.
struct Target<'a> {
    study_id: i64,
    cell: &'a str,
    base_url: &'a str,
    model: Option<&'a str>,
    startup_log: Option<&'a str>,
    scrape_interval_ms: Option<u32>,
    deadline_s: Option<f64>,
}

/// Everything a run needs once its input is checked.
struct Prepared {
    study_id: i64,
    manifest_id: i64,
    manifest: Manifest,
    endpoint: Endpoint,
    startup_log: Option<StartupLog>,
    scrape_interval: Option<Duration>,
    deadline: Duration,
}

impl Prepared {
    /// A run's configuration: what every run records (endpoint without key, deadlines, scrape
    /// interval, startup-log digest, manifest digest, validator, runner), plus `specific`.
    fn config(&self, specific: Value) -> Value {
        let mut config = json!({
            "endpoint": {"base_url": self.endpoint.base_url, "api": "chat", "model": self.endpoint.model},
            "request_deadline_ms": self.deadline.as_millis() as u64,
            "scrape_interval_ms": self.scrape_interval.map(|d| d.as_millis() as u64),
            "startup_log": self.startup_log.as_ref().map(|log| {
                json!({"path": log.path, "sha256": sha256_hex(log.text.as_bytes())})
            }),
            "manifest_sha256": self.manifest.digest().ok(),
            "validator": ValidatorPolicy::default(),
            "runner": concat!("kvgate-runner ", env!("CARGO_PKG_VERSION")),
        });
        if let (Value::Object(config), Value::Object(specific)) = (&mut config, specific) {
            config.extend(specific);
        }
        config
    }
}

/// A run stored as `running`, with what its schedule needs.
struct Started {
    run_id: i64,
    client: Client,
    cancel: CancellationToken,
    scraper: Mutex<Option<Scraper>>,
}

/// What the scheduler part of a run produced.
struct Executed {
    warmup: Option<RunOutcome>,
    measured: RunOutcome,
    repeats: Vec<u32>,
}

impl App {
    async fn prepare(&self, t: Target<'_>) -> Result<Prepared, AppError> {
        let Target {
            study_id,
            cell,
            base_url,
            model,
            startup_log,
            scrape_interval_ms,
            deadline_s,
        } = t;
        let stored = self.manifest(study_id, cell).await?;
        let Some(_digest) = stored.digest.as_ref() else {
            return Err(AppError::new(
                ErrorCode::Conflict,
                format!(
                    "cell {cell}: its manifest is a draft; freeze it before running, so the run \
                     is bound to an immutable manifest"
                ),
            ));
        };
        let manifest = Manifest::from_json(&stored.text)
            .map_err(|p| AppError::storage(format!("stored manifest of cell {cell}: {p}")))?;
        let endpoint = Endpoint {
            base_url: base_url.trim().to_owned(),
            api: Api::Chat,
            model: model
                .filter(|m| !m.trim().is_empty())
                .unwrap_or(DEFAULT_MODEL)
                .to_owned(),
            // The key, if one is kept for this server, from the session or the keyring: only in
            // memory, never in the run's recorded config (see `config`). Asked for last, after
            // the checks that need no keyring (a keyring may prompt to be unlocked).
            api_key: None,
        };
        let deadline_s = deadline_s.unwrap_or(DEFAULT_DEADLINE_S);
        if !(deadline_s.is_finite() && deadline_s > 0.0) {
            return Err(invalid(format!(
                "request_deadline_s: expected a positive number of seconds, found {deadline_s}"
            )));
        }
        let startup_log = read_startup_log(startup_log)?;
        let endpoint = Endpoint {
            api_key: self.endpoint_key(&endpoint.base_url).await?,
            ..endpoint
        };
        Client::new(endpoint.clone()).map_err(|e| invalid(e.to_string()))?;
        let scrape_ms = scrape_interval_ms.unwrap_or(DEFAULT_SCRAPE_MS);
        Ok(Prepared {
            study_id,
            manifest_id: stored.id,
            manifest,
            endpoint,
            startup_log,
            scrape_interval: (scrape_ms > 0).then(|| Duration::from_millis(scrape_ms.into())),
            deadline: Duration::from_secs_f64(deadline_s),
        })
    }

    /// Runs a paired-quality pass of a corpus against one cell's server, validates every
    /// response, checks the compatibility evidence and stores it all. `on_event` receives
    /// progress reports (at most ten a second) and a last `finished` one.
    pub async fn run_quality(
        &self,
        input: &QualityRunInput,
        on_event: impl FnMut(RunEvent) + Send,
    ) -> Result<RunSummary, AppError> {
        let p = self
            .prepare(Target {
                study_id: input.study_id,
                cell: &input.cell,
                base_url: &input.base_url,
                model: input.model.as_deref(),
                startup_log: input.startup_log.as_deref(),
                scrape_interval_ms: input.scrape_interval_ms,
                deadline_s: input.request_deadline_s,
            })
            .await?;
        let corpus = open_corpus(Path::new(&input.corpus_dir))?;
        let repeats = input.repeats.unwrap_or(1);
        if repeats == 0 {
            return Err(invalid("repeats: expected at least 1, found 0"));
        }
        let concurrency = input.concurrency.unwrap_or(1);
        if concurrency == 0 {
            return Err(invalid("concurrency: expected at least 1, found 0"));
        }
        let seed = input.seed.unwrap_or(1);
        let only = input.only.clone().unwrap_or_default();
        let eligible: Vec<FixtureItem> = corpus
            .items
            .iter()
            .filter(|i| ItemStrata::from_item_id(&i.id).is_some_and(|s| only.matches(&s)))
            .cloned()
            .collect();
        if eligible.is_empty() {
            return Err(invalid(format!(
                "only: expected strata matching at least one of the corpus's {} items, found none matching {}",
                corpus.items.len(),
                serde_json::to_string(&only).unwrap_or_default()
            )));
        }
        let limit = input.limit.map(|l| l as usize).unwrap_or(eligible.len());
        if limit == 0 {
            return Err(invalid("limit: expected at least 1 item, found 0"));
        }
        let items: Vec<FixtureItem> = balanced_subset(&eligible, limit)
            .into_iter()
            .cloned()
            .collect();
        let warmup = (input.warmup.unwrap_or(1) as usize).min(items.len());
        let ids: Vec<String> = items.iter().map(|i| i.id.clone()).collect();
        let order = quality_order(&ids, repeats, seed);
        let config = p.config(json!({
            "kind": "quality",
            "corpus": {
                "dir": input.corpus_dir,
                "items_sha256": corpus.meta.items_sha256,
                "item_count": corpus.meta.item_count,
                "synthetic": corpus.meta.synthetic,
                "only": only,
                "selected": ids,
            },
            "repeats": repeats,
            "seed": seed,
            "warmup": warmup,
            "concurrency": concurrency,
        }));
        let label = format!(
            "quality · {} · {} items × {repeats}",
            input.cell,
            items.len()
        );
        let by_id: BTreeMap<&str, &FixtureItem> =
            items.iter().map(|i| (i.id.as_str(), i)).collect();
        let measured: Vec<PlannedRequest> = order
            .iter()
            .map(|(_, id)| planned(by_id[id.as_str()], &p.manifest))
            .collect::<Result<_, _>>()?;
        let warmups: Vec<PlannedRequest> = items[..warmup]
            .iter()
            .map(|i| planned(i, &p.manifest))
            .collect::<Result<_, _>>()?;
        let repeats_of: Vec<u32> = order.iter().map(|(r, _)| *r).collect();
        let closed = ClosedLoop {
            concurrency,
            limit: ClosedLoopLimit::Once,
            request_deadline: p.deadline,
        };
        let expected: HashMap<String, FixtureItem> =
            items.into_iter().map(|i| (i.id.clone(), i)).collect();
        let started = self.begin_run(&p, RunKind::Quality, label, config).await?;
        let run_id = started.run_id;
        let on_event = Mutex::new(on_event);
        let report = |phase: RunPhase, progress: RunProgress| {
            (on_event.lock().expect("events"))(RunEvent {
                run_id,
                phase,
                progress,
                state: None,
            })
        };
        let result = async {
            let warm = if warmups.is_empty() {
                None
            } else {
                let once = ClosedLoop {
                    concurrency: 1,
                    ..closed.clone()
                };
                Some(
                    run_closed_loop(
                        &started.client,
                        &warmups,
                        &once,
                        |pr| report(RunPhase::Warmup, pr),
                        &started.cancel,
                    )
                    .await
                    .map_err(|e| invalid(e.to_string()))?,
                )
            };
            App::start_scraper(&p, &started);
            let measured = run_closed_loop(
                &started.client,
                &measured,
                &closed,
                |pr| report(RunPhase::Measured, pr),
                &started.cancel,
            )
            .await
            .map_err(|e| invalid(e.to_string()))?;
            Ok(Executed {
                warmup: warm,
                measured,
                repeats: repeats_of,
            })
        }
        .await;
        let on_event = on_event.into_inner().expect("events");
        self.conclude_run(&p, started, result, &expected, on_event)
            .await
    }

    /// Runs load against one cell's server for a duration: open loop at the given arrivals, or
    /// closed loop at a fixed concurrency. Every response is validated against its item.
    pub async fn run_load(
        &self,
        input: &LoadRunInput,
        on_event: impl FnMut(RunEvent) + Send,
    ) -> Result<RunSummary, AppError> {
        let p = self
            .prepare(Target {
                study_id: input.study_id,
                cell: &input.cell,
                base_url: &input.base_url,
                model: input.model.as_deref(),
                startup_log: input.startup_log.as_deref(),
                scrape_interval_ms: input.scrape_interval_ms,
                deadline_s: input.request_deadline_s,
            })
            .await?;
        if !(input.duration_s.is_finite() && input.duration_s > 0.0) {
            return Err(invalid(format!(
                "duration_s: expected a positive number of seconds, found {}",
                input.duration_s
            )));
        }
        let drain_s = input.drain_s.unwrap_or(DEFAULT_DRAIN_S);
        if !(drain_s.is_finite() && drain_s >= 0.0) {
            return Err(invalid(format!(
                "drain_s: expected seconds ≥ 0, found {drain_s}"
            )));
        }
        let duration = Duration::from_secs_f64(input.duration_s);
        let drain = Duration::from_secs_f64(drain_s);
        let seed = input.seed.unwrap_or(1);
        let corpus = match input.corpus_dir.as_deref().filter(|d| !d.trim().is_empty()) {
            Some(dir) => open_corpus(Path::new(dir))?,
            None => crate::fixtures::default_load_corpus(seed)?,
        };
        let ids: Vec<String> = corpus.items.iter().map(|i| i.id.clone()).collect();
        let order = quality_order(&ids, 1, seed);
        let by_id: BTreeMap<&str, &FixtureItem> =
            corpus.items.iter().map(|i| (i.id.as_str(), i)).collect();
        let requests: Vec<PlannedRequest> = order
            .iter()
            .map(|(_, id)| planned(by_id[id.as_str()], &p.manifest))
            .collect::<Result<_, _>>()?;
        let (mode, arrivals) = match (input.concurrency, input.arrivals.as_deref()) {
            (Some(0), _) => return Err(invalid("concurrency: expected at least 1, found 0")),
            (Some(n), _) => (json!({"closed_loop": {"concurrency": n}}), None),
            (None, Some(spec)) => {
                let a = parse_arrivals(spec, seed)?;
                let recorded = match &a {
                    Arrivals::Trace { offsets_ms, sha256 } => {
                        json!({"kind": "trace", "sha256": sha256, "arrivals": offsets_ms.len(), "spec": spec})
                    }
                    other => serde_json::to_value(other).unwrap_or(Value::Null),
                };
                (json!({"open_loop": recorded}), Some(a))
            }
            (None, None) => {
                return Err(invalid(
                    "arrivals: expected poisson:RPS, gamma:RPS:SHAPE, constant:RPS or trace:FILE \
                     (or a concurrency for a closed loop), found neither",
                ))
            }
        };
        let config = p.config(json!({
            "kind": "load",
            "corpus": {
                "dir": corpus.dir,
                "items_sha256": corpus.meta.items_sha256,
                "item_count": corpus.meta.item_count,
                "synthetic": corpus.meta.synthetic,
            },
            "mode": mode,
            "duration_ms": duration.as_millis() as u64,
            "drain_ms": drain.as_millis() as u64,
            "seed": seed,
        }));
        let label = match (&arrivals, input.concurrency) {
            (_, Some(n)) => format!(
                "load · {} · closed loop × {n} · {} s",
                input.cell, input.duration_s
            ),
            (Some(_), None) => format!(
                "load · {} · {} · {} s",
                input.cell,
                input.arrivals.as_deref().unwrap_or_default(),
                input.duration_s
            ),
            (None, None) => unreachable!("checked above"),
        };
        let expected: HashMap<String, FixtureItem> = corpus
            .items
            .into_iter()
            .map(|i| (i.id.clone(), i))
            .collect();
        let started = self.begin_run(&p, RunKind::Load, label, config).await?;
        let run_id = started.run_id;
        let on_event = Mutex::new(on_event);
        let report = |progress: RunProgress| {
            (on_event.lock().expect("events"))(RunEvent {
                run_id,
                phase: RunPhase::Measured,
                progress,
                state: None,
            })
        };
        App::start_scraper(&p, &started);
        let result = match (input.concurrency, arrivals) {
            (Some(n), _) => {
                let plan = ClosedLoop {
                    concurrency: n,
                    limit: ClosedLoopLimit::For { duration, drain },
                    request_deadline: p.deadline,
                };
                run_closed_loop(&started.client, &requests, &plan, report, &started.cancel).await
            }
            (None, Some(arrivals)) => {
                let plan = OpenLoop {
                    arrivals,
                    duration,
                    drain,
                    request_deadline: p.deadline,
                };
                run_open_loop(&started.client, &requests, &plan, report, &started.cancel).await
            }
            (None, None) => unreachable!("checked above"),
        }
        .map_err(|e| invalid(e.to_string()))
        .map(|measured| Executed {
            warmup: None,
            repeats: vec![0; measured.records.len()],
            measured,
        });
        let on_event = on_event.into_inner().expect("events");
        self.conclude_run(&p, started, result, &expected, on_event)
            .await
    }

    /// Stores the run as `running`, registers its cancellation and starts the metric scraper.
    async fn begin_run(
        &self,
        p: &Prepared,
        kind: RunKind,
        label: String,
        config: Value,
    ) -> Result<Started, AppError> {
        let client = Client::new(p.endpoint.clone()).map_err(|e| invalid(e.to_string()))?;
        let config_json = canonical_json(&config);
        let run = self
            .store
            .create_run(&NewRun {
                study_id: p.study_id,
                manifest_id: p.manifest_id,
                kind,
                label,
                provenance: RunProvenance::Recorded,
                config_sha256: sha256_hex(config_json.as_bytes()),
                config_json,
                wall_anchor_unix_ms: unix_ms_now(),
                started_at: kvgate_store::now_rfc3339(),
                owner_pid: Some(i64::from(std::process::id())),
            })
            .await?;
        let cancel = CancellationToken::new();
        self.runs
            .inner
            .lock()
            .expect("run registry")
            .insert(run.id, cancel.clone());
        Ok(Started {
            run_id: run.id,
            client,
            cancel,
            scraper: Mutex::new(None),
        })
    }

    /// Starts scraping `/metrics` for the measured part of a run (warm-up excluded).
    fn start_scraper(p: &Prepared, started: &Started) {
        if let (Some(interval), Ok(url)) = (p.scrape_interval, metrics_url(&p.endpoint.base_url)) {
            *started.scraper.lock().expect("scraper") = Scraper::start(url, interval).ok();
        }
    }

    /// Validates every response, checks the evidence and stores the whole run in one
    /// transaction; a run whose schedule failed is stored `failed` with the reason.
    async fn conclude_run(
        &self,
        p: &Prepared,
        started: Started,
        result: Result<Executed, AppError>,
        expected: &HashMap<String, FixtureItem>,
        mut on_event: impl FnMut(RunEvent),
    ) -> Result<RunSummary, AppError> {
        let run_id = started.run_id;
        let scraper = started.scraper.lock().expect("scraper").take();
        let scrapes = match scraper {
            Some(s) => s.stop().await,
            None => Vec::new(),
        };
        self.runs
            .inner
            .lock()
            .expect("run registry")
            .remove(&run_id);
        let executed = match result {
            Ok(executed) => executed,
            Err(err) => {
                let note = format!("the run could not execute: {}", err.message);
                let _ = self
                    .store
                    .finish_run(
                        run_id,
                        RunState::Failed,
                        None,
                        None,
                        Some(&note),
                        &[],
                        &[],
                        &[],
                    )
                    .await;
                return Err(err);
            }
        };
        let scrapes = read_scrapes(p, &scrapes, executed.measured.timing.wall_anchor_unix_ms);
        let (evidence, validity) = self.evidence(p, &scrapes);
        let mut stored = Vec::new();
        if let Some(warm) = &executed.warmup {
            for record in &warm.records {
                stored.push(stored_request(record, 0, true, expected));
            }
        }
        for (record, repeat) in executed.measured.records.iter().zip(&executed.repeats) {
            stored.push(stored_request(record, *repeat, false, expected));
        }
        let measured = &executed.measured;
        let planned = measured.records.len() as i64;
        let state = if measured.cancelled {
            RunState::Cancelled
        } else {
            RunState::Completed
        };
        let mut notes = Vec::new();
        if measured.cancelled {
            let sent = measured
                .records
                .iter()
                .filter(|r| r.dispatch_ms.is_some())
                .count();
            notes.push(format!(
                "cancelled: a partial run, {sent} of {planned} planned requests sent; the rest are recorded as rejected (never dispatched)"
            ));
        }
        if !validity.valid {
            let reasons: Vec<String> = validity.problems.iter().map(|p| p.reason.clone()).collect();
            notes.push(format!("cell invalid: {}", reasons.join("; ")));
        }
        let note = (!notes.is_empty()).then(|| notes.join(" · "));
        let scrape_rows: Vec<MetricScrapeRow> = scrapes.iter().map(ReadScrape::row).collect();
        let finished = self
            .store
            .finish_run(
                run_id,
                state,
                Some(measured.elapsed_ms),
                Some(planned),
                note.as_deref(),
                &stored,
                &evidence,
                &scrape_rows,
            )
            .await?;
        let failed = measured
            .records
            .iter()
            .filter(|r| r.status != kvgate_core::run::RequestStatus::Ok)
            .count() as u32;
        on_event(RunEvent {
            run_id,
            phase: RunPhase::Finished,
            progress: RunProgress {
                planned: Some(planned as u32),
                sent: measured
                    .records
                    .iter()
                    .filter(|r| r.dispatch_ms.is_some())
                    .count() as u32,
                finished: planned as u32,
                failed,
                elapsed_ms: measured.elapsed_ms,
            },
            state: Some(finished.state.as_str().to_owned()),
        });
        Ok(summary_of(finished))
    }

    /// The compatibility evidence of a run: the startup log, `cache_config_info` from the first
    /// scrape that has it, the metric summary, and the check against the manifest.
    fn evidence(&self, p: &Prepared, scrapes: &[ReadScrape]) -> (Vec<RunEvidence>, CellValidity) {
        let mut set = EvidenceSet::default();
        if let Some(log) = &p.startup_log {
            set.startup_log(log.path.clone(), log.text.clone(), &log.parsed);
        }
        let first_config = scrapes
            .iter()
            .find_map(|s| s.cache_config.as_ref().map(|c| (s.unix_ms, c)));
        if let Some((unix_ms, (from_metrics, excerpt))) = first_config {
            set.cache_config(
                format!("/metrics at unix ms {unix_ms}"),
                from_metrics.clone(),
                excerpt.clone(),
            );
        }
        if !scrapes.is_empty() {
            let points: Vec<MetricPoint> = scrapes
                .iter()
                .filter_map(|s| {
                    let values = s.values.as_ref().ok()?.clone();
                    Some(MetricPoint {
                        at_ms: s.at_ms,
                        values,
                    })
                })
                .collect();
            set.metrics(
                format!("{} scrapes of /metrics", scrapes.len()),
                &summarize(&points),
            );
        }
        set.check(&p.manifest, true)
    }

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

    /// One run with its requests, verdicts and evidence.
    pub async fn run_detail(&self, run_id: i64) -> Result<RunDetail, AppError> {
        let run = summary_of(self.store.get_run(run_id).await?);
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
                verdict: s.verdict,
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
            accepted,
            rejected,
            unvalidated,
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
        })
    }
}

fn planned(item: &FixtureItem, manifest: &Manifest) -> Result<PlannedRequest, AppError> {
    PlannedRequest::new(Some(item.id.clone()), chat_body(item, manifest))
        .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))
}

fn stored_request(
    record: &RequestRecord,
    repeat: u32,
    warmup: bool,
    expected: &HashMap<String, FixtureItem>,
) -> StoredRequest {
    let verdict = record
        .item_id
        .as_ref()
        .and_then(|id| expected.get(id))
        .map(|item| {
            validate(
                &item.expected,
                &record.response_outcome(),
                ValidatorPolicy::default(),
            )
        });
    StoredRequest {
        record: record.clone(),
        repeat,
        warmup,
        verdict,
    }
}

/// One scrape, parsed once: its run-clock time, its engine-neutral values (or why it has
/// none), and the `cache_config_info` facts it carries with their lines.
struct ReadScrape {
    at_ms: f64,
    unix_ms: i64,
    values: Result<BTreeMap<CanonicalMetric, f64>, String>,
    cache_config: Option<(ObservedEngine, String)>,
}

impl ReadScrape {
    fn row(&self) -> MetricScrapeRow {
        let value = match &self.values {
            Ok(values) => json!({ "values": values }),
            Err(error) => json!({ "error": error }),
        };
        MetricScrapeRow {
            at_ms: self.at_ms,
            values_json: value.to_string(),
        }
    }
}

/// Parses every scrape once, on the run clock.
fn read_scrapes(p: &Prepared, scrapes: &[RawScrape], anchor_unix_ms: i64) -> Vec<ReadScrape> {
    let profile = EngineProfile::for_engine(&p.manifest.engine);
    scrapes
        .iter()
        .map(|s| {
            let parsed = match (&s.text, &s.error) {
                (_, Some(error)) => Err(error.clone()),
                (None, None) => Err("empty scrape".to_owned()),
                (Some(text), None) => parse_exposition(text)
                    .map(|exp| (text, exp))
                    .map_err(|e| e.to_string()),
            };
            let cache_config = parsed.as_ref().ok().and_then(|(text, exp)| {
                let observed = observed_from_cache_config_info(exp)?;
                let lines: Vec<&str> = text
                    .lines()
                    .filter(|l| l.contains("cache_config_info"))
                    .collect();
                Some((observed, lines.join("\n")))
            });
            let values = parsed.and_then(|(_, exp)| match profile {
                Some(profile) => Ok(normalize(
                    profile,
                    exp.samples
                        .iter()
                        .map(|s| (s.name.as_str(), &s.labels, s.value)),
                )),
                None => Err("no metric profile for this engine".to_owned()),
            });
            ReadScrape {
                at_ms: (s.unix_ms - anchor_unix_ms) as f64,
                unix_ms: s.unix_ms,
                values,
                cache_config,
            }
        })
        .collect()
}

fn unix_ms_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Whether a process with this PID exists (a run's owner still executing it).
fn process_alive(pid: i64) -> bool {
    if pid == i64::from(std::process::id()) {
        return true;
    }
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists; nothing is sent.
        let rc = unsafe { libc::kill(pid, 0) };
        rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        true
    }
}

impl App {
    /// Marks runs left `running` by a process that ended without finishing them; runs another
    /// live process is executing are left alone.
    pub(crate) async fn mark_interrupted_runs(&self) -> Result<u64, AppError> {
        Ok(self.store.mark_interrupted_runs(process_alive).await?)
    }
}

impl App {
    /// The run as a `kvgate-run` JSONL file: header, requests, evidence, scrapes.
    pub async fn export_run(&self, run_id: i64) -> Result<String, AppError> {
        let run = self.store.get_run(run_id).await?;
        if run.state == RunState::Running {
            return Err(AppError::new(
                ErrorCode::Conflict,
                format!("run {run_id} is still running: export it once it has finished"),
            ));
        }
        let manifest = self
            .store
            .list_manifests(run.study_id)
            .await?
            .into_iter()
            .find(|m| m.id == run.manifest_id)
            .ok_or_else(|| AppError::storage(format!("run {run_id}: its manifest is missing")))?;
        let config: Value = serde_json::from_str(&run.config_json)
            .map_err(|e| AppError::storage(format!("run {run_id}: stored config: {e}")))?;
        let header = RunFileHeader {
            format: RUN_FILE_FORMAT.into(),
            version: RUN_FILE_VERSION,
            kind: run.kind.as_str().into(),
            cell: run.cell.clone(),
            manifest_sha256: manifest.digest.unwrap_or_default(),
            label: run.label.clone(),
            provenance: run.provenance.as_str().to_owned(),
            config,
            config_sha256: run.config_sha256.clone(),
            wall_anchor_unix_ms: run.wall_anchor_unix_ms,
            started_at: run.started_at.clone(),
            finished_at: run.finished_at.clone(),
            state: run.state.as_str().into(),
            elapsed_ms: run.elapsed_ms,
            planned: run.planned,
            note: run.note.clone(),
        };
        let requests = self
            .store
            .run_requests(run_id)
            .await?
            .into_iter()
            .map(|s| RunFileRequest {
                record: s.record,
                repeat: s.repeat,
                warmup: s.warmup,
                verdict: s.verdict,
            })
            .collect();
        let evidence = self
            .store
            .run_evidence(run_id)
            .await?
            .into_iter()
            .map(|e| RunFileEvidence {
                kind: e.kind,
                source_name: e.source_name,
                sha256: e.sha256,
                text: e.text,
                parsed_json: e.parsed_json,
            })
            .collect();
        let scrapes = self
            .store
            .run_scrapes(run_id)
            .await?
            .into_iter()
            .map(|s| RunFileScrape {
                at_ms: s.at_ms,
                values: serde_json::from_str(&s.values_json).unwrap_or(Value::Null),
            })
            .collect();
        Ok(render_run_file(&RunFile {
            header,
            requests,
            evidence,
            scrapes,
        }))
    }

    /// Imports a `kvgate-run` file into a study, bound to the frozen manifest of the cell it
    /// names, whose digest must match. Atomic: on any error nothing is stored. The same run
    /// (same configuration digest and start) imported twice is refused.
    pub async fn import_run_file(
        &self,
        study_id: i64,
        source_name: &str,
        text: &str,
        provenance: RunProvenance,
    ) -> Result<RunSummary, AppError> {
        let file = parse_run_file(source_name, text).map_err(|e| invalid(e.to_string()))?;
        let h = &file.header;
        let stored = self.manifest(study_id, &h.cell).await?;
        if stored.digest.as_deref() != Some(h.manifest_sha256.as_str()) {
            return Err(invalid(format!(
                "{source_name} line 1, $.manifest_sha256: expected the frozen manifest of cell {} ({}), found {}",
                h.cell,
                stored.digest.as_deref().unwrap_or("a draft, not frozen"),
                h.manifest_sha256
            )));
        }
        let kind = RunKind::parse(&h.kind).ok_or_else(|| {
            invalid(format!(
                "{source_name} line 1, $.kind: expected quality or load, found {:?}",
                h.kind
            ))
        })?;
        let state = RunState::parse(&h.state)
            .filter(|s| *s != RunState::Running)
            .ok_or_else(|| {
                invalid(format!(
                    "{source_name} line 1, $.state: expected completed, cancelled, interrupted or failed, found {:?}",
                    h.state
                ))
            })?;
        let duplicate = self
            .store
            .list_runs(study_id)
            .await?
            .into_iter()
            .find(|r| r.config_sha256 == h.config_sha256 && r.started_at == h.started_at);
        if let Some(existing) = duplicate {
            return Err(AppError::new(
                ErrorCode::Conflict,
                format!(
                    "{source_name}: this run is already in the study as run {} (same configuration sha256 and start time)",
                    existing.id
                ),
            ));
        }
        let new = NewRun {
            study_id,
            manifest_id: stored.id,
            kind,
            label: h.label.clone(),
            provenance,
            config_json: canonical_json(&h.config),
            config_sha256: h.config_sha256.clone(),
            wall_anchor_unix_ms: h.wall_anchor_unix_ms,
            started_at: h.started_at.clone(),
            owner_pid: None,
        };
        let requests: Vec<StoredRequest> = file
            .requests
            .iter()
            .map(|r| StoredRequest {
                record: r.record.clone(),
                repeat: r.repeat,
                warmup: r.warmup,
                verdict: r.verdict.clone(),
            })
            .collect();
        let evidence: Vec<RunEvidence> = file
            .evidence
            .iter()
            .map(|e| RunEvidence {
                kind: e.kind.clone(),
                source_name: e.source_name.clone(),
                sha256: e.sha256.clone(),
                text: e.text.clone(),
                parsed_json: e.parsed_json.clone(),
            })
            .collect();
        let scrapes: Vec<MetricScrapeRow> = file
            .scrapes
            .iter()
            .map(|s| MetricScrapeRow {
                at_ms: s.at_ms,
                values_json: s.values.to_string(),
            })
            .collect();
        let finished_at = h
            .finished_at
            .clone()
            .unwrap_or_else(kvgate_store::now_rfc3339);
        let run = self
            .store
            .insert_finished_run(
                &new,
                state,
                &finished_at,
                h.elapsed_ms,
                h.planned,
                h.note.as_deref(),
                &requests,
                &evidence,
                &scrapes,
            )
            .await?;
        Ok(summary_of(run))
    }
}
