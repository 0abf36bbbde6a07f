//! Executing a run: checking its input, storing it `running`, sending its requests on the
//! schedule, scraping `/metrics`, judging each response, and finishing it in one transaction
//! with its evidence.

use super::*;
use crate::evidence::EvidenceSet;

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
        let stored = self.require_frozen(study_id, cell).await?;
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
        self.run_quality_in(input, None, on_event).await
    }

    /// Runs several cells' paired-quality passes one after another, in the order
    /// `kvgate_core::run::cell_order` draws from `seed` (recorded with the seed in each run's
    /// configuration as `cell_order`). Every cell's input is checked before the first request
    /// is sent; a run that fails to execute or is cancelled ends the series, and the error names
    /// the runs already stored. `on_event` receives every run's progress.
    pub async fn run_quality_cells(
        &self,
        inputs: &[QualityRunInput],
        seed: u64,
        mut on_event: impl FnMut(RunEvent) + Send,
    ) -> Result<Vec<RunSummary>, AppError> {
        let names: Vec<String> = inputs.iter().map(|i| i.cell.clone()).collect();
        if names.is_empty() {
            return Err(invalid("cells: expected at least one cell, found none"));
        }
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return Err(invalid(format!(
                    "cells: expected each cell once, found {name} again"
                )));
            }
        }
        if let Some(other) = inputs.iter().find(|i| i.study_id != inputs[0].study_id) {
            return Err(invalid(format!(
                "cells: expected one study, found cell {} of another",
                other.cell
            )));
        }
        for input in inputs {
            self.check_quality_input(input).await?;
        }
        let order = kvgate_core::run::cell_order(&names, seed);
        let mut done: Vec<RunSummary> = Vec::new();
        for (position, cell) in order.iter().enumerate() {
            let input = inputs
                .iter()
                .find(|i| &i.cell == cell)
                .expect("the order holds the cells given");
            let place = kvgate_core::run::CellOrder {
                seed,
                order: order.clone(),
                position: position as u32,
            };
            let ran = self
                .run_quality_in(input, Some(&place), &mut on_event)
                .await
                .map_err(|e| {
                    series_error(
                        e,
                        &format!(
                            "cell {cell} ({} of {} in the order {})",
                            position + 1,
                            order.len(),
                            order.join(", ")
                        ),
                        &done,
                    )
                })?;
            let stop = ran.state == RunState::Cancelled;
            done.push(ran);
            if stop {
                break;
            }
        }
        Ok(done)
    }

    /// Of a quality run's selection, the items still to send: all of them, or with `resume` those
    /// the cell has not answered with the same prompt in the study's finished quality runs; then
    /// at most `at_most` of them, in the selection's order.
    async fn left_to_send(
        &self,
        input: &QualityRunInput,
        study_id: i64,
        manifest_id: i64,
        manifest: &Manifest,
        selection: &[CorpusItem],
    ) -> Result<LeftToSend, AppError> {
        if input.at_most == Some(0) {
            return Err(invalid("at_most: expected at least 1 item, found 0"));
        }
        let answered: HashSet<(String, String)> = if input.resume.unwrap_or(false) {
            self.store
                .answered_prompts(study_id, manifest_id)
                .await?
                .into_iter()
                .collect()
        } else {
            HashSet::new()
        };
        let open: Vec<&CorpusItem> = selection
            .iter()
            .filter(|i| {
                !answered.contains(&(
                    i.id().to_owned(),
                    kvgate_core::pairing::item_prompt_sha256(*i, manifest),
                ))
            })
            .collect();
        let answered_count = selection.len() - open.len();
        let take = input.at_most.map_or(open.len(), |n| n as usize);
        Ok(LeftToSend {
            answered: answered_count,
            remaining: open
                .into_iter()
                .take(take)
                .map(|i| i.id().to_owned())
                .collect(),
        })
    }

    /// How many of a quality run's selection are left to send, for `resume`: the selection's size,
    /// those answered already, and those a run would send now. Nothing is stored or sent.
    pub async fn quality_left(&self, input: &QualityRunInput) -> Result<QualityLeft, AppError> {
        let stored = self.require_frozen(input.study_id, &input.cell).await?;
        let corpus = open_run_corpus(Path::new(&input.corpus_dir))?;
        let only = input.only.clone().unwrap_or_default();
        let eligible = eligible_items(&corpus, &only);
        let limit = input.limit.map(|l| l as usize).unwrap_or(eligible.len());
        let selection: Vec<CorpusItem> = CorpusItem::balanced_subset(&eligible, limit)
            .into_iter()
            .cloned()
            .collect();
        let manifest = Manifest::from_json(&stored.text).map_err(|p| {
            AppError::storage(format!("stored manifest of cell {}: {p}", input.cell))
        })?;
        let left = self
            .left_to_send(input, input.study_id, stored.id, &manifest, &selection)
            .await?;
        Ok(QualityLeft {
            cell: input.cell.clone(),
            selected: selection.len() as u32,
            answered: left.answered as u32,
            to_send: left.remaining.len() as u32,
        })
    }

    /// What a quality run checks before anything is stored or sent: the cell's manifest is
    /// frozen, its startup log readable, its corpus open.
    async fn check_quality_input(&self, input: &QualityRunInput) -> Result<(), AppError> {
        self.require_frozen(input.study_id, &input.cell).await?;
        read_startup_log(input.startup_log.as_deref())?;
        open_run_corpus(Path::new(&input.corpus_dir))?;
        Ok(())
    }

    /// A run is bound to an immutable manifest: a draft cell is refused before anything is sent.
    async fn require_frozen(
        &self,
        study_id: i64,
        cell: &str,
    ) -> Result<crate::manifests::StoredManifest, AppError> {
        let stored = self.manifest(study_id, cell).await?;
        if stored.digest.is_none() {
            return Err(AppError::new(
                ErrorCode::Conflict,
                format!(
                    "cell {cell}: its manifest is a draft; freeze it before running, so the run is \
                     bound to an immutable manifest"
                ),
            ));
        }
        Ok(stored)
    }

    async fn run_quality_in(
        &self,
        input: &QualityRunInput,
        place: Option<&kvgate_core::run::CellOrder>,
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
        let corpus = open_run_corpus(Path::new(&input.corpus_dir))?;
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
        let eligible = eligible_items(&corpus, &only);
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
        let selection: Vec<CorpusItem> = CorpusItem::balanced_subset(&eligible, limit)
            .into_iter()
            .cloned()
            .collect();
        let selected: Vec<String> = selection.iter().map(|i| i.id().to_owned()).collect();
        let left = self
            .left_to_send(input, p.study_id, p.manifest_id, &p.manifest, &selection)
            .await?;
        let items: Vec<CorpusItem> = selection
            .into_iter()
            .filter(|i| left.remaining.iter().any(|r| r == i.id()))
            .collect();
        if items.is_empty() {
            return Err(invalid(format!(
                "resume: every one of the {} selected items has an answer from cell {} in this \
                 study's finished quality runs; nothing is left to send",
                selected.len(),
                input.cell
            )));
        }
        // The guard below and the length classes count with the corpus's tokenizer and
        // template: they must be the ones the cell's manifest binds.
        let mismatches = kvgate_core::pairing::token_count_mismatches(
            &corpus.meta.tokenizer_sha256,
            &corpus.meta.chat_template,
            &p.manifest,
        );
        if !mismatches.is_empty() {
            return Err(invalid(format!(
                "corpus {}: its token counts are not cell {}'s: {}; generate the corpus with the \
                 cell's tokenizer (--tokenizer) and chat template (--chat-template); nothing was sent",
                input.corpus_dir,
                input.cell,
                mismatches
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )));
        }
        let overflows = kvgate_core::pairing::context_overflows(&items, &p.manifest);
        if let Some(first) = overflows.first() {
            return Err(invalid(format!(
                "corpus {}: {} of the items to send do not fit cell {}'s context: item {} has {} \
                 prompt tokens (by the corpus's tokenizer, sha256 {}) + output cap {} > context \
                 limit {}; nothing was sent",
                input.corpus_dir,
                overflows.len(),
                input.cell,
                first.item,
                first.prompt_tokens,
                corpus.meta.tokenizer_sha256,
                first.output_cap,
                first.context_limit
            )));
        }
        let ids: Vec<String> = items.iter().map(|i| i.id().to_owned()).collect();
        // Engine warm-up with items that are not then measured, so no measured prompt is in the
        // prefix cache before its measured request: none of the whole selection, so a resumed
        // run never warms up with an item another run of the series measures.
        // Only items that fit the cell's context warm it up.
        let too_long: HashSet<String> =
            kvgate_core::pairing::context_overflows(&corpus.items, &p.manifest)
                .into_iter()
                .map(|o| o.item)
                .collect();
        let corpus_ids: Vec<String> = corpus
            .items
            .iter()
            .filter(|i| !too_long.contains(i.id()))
            .map(|i| i.id().to_owned())
            .collect();
        let warmup = kvgate_core::warmup::plan_warmup(
            &corpus_ids,
            &selected,
            input.warmup.unwrap_or(1),
            seed,
        );
        let order = quality_order(&ids, repeats, seed);
        let config = p.config(json!({
            "kind": "quality",
            "corpus": {
                "dir": input.corpus_dir,
                "items_sha256": corpus.meta.items_sha256,
                "item_count": corpus.meta.item_count,
                "synthetic": corpus.meta.synthetic,
                "only": only,
                "selected": selected,
            },

            "repeats": repeats,
            "seed": seed,
            "warmup": warmup,
            "concurrency": concurrency,
        }));
        let config = match (config, place) {
            (Value::Object(mut c), Some(place)) => {
                c.insert("cell_order".into(), json!(place));
                Value::Object(c)
            }
            (config, _) => config,
        };
        // Part of the selection only (resumed, or bounded by `at_most`): which part, and why.
        let config = match config {
            Value::Object(mut c) if ids.len() < selected.len() => {
                c.insert(
                    "sent".into(),
                    json!({"items": ids, "answered_before": left.answered, "at_most": input.at_most}),
                );
                Value::Object(c)
            }
            config => config,
        };
        let label = format!(
            "quality · {} · {} items × {repeats}",
            input.cell,
            items.len()
        );
        let by_id: BTreeMap<&str, &CorpusItem> = items.iter().map(|i| (i.id(), i)).collect();
        let measured: Vec<PlannedRequest> = order
            .iter()
            .map(|(_, id)| planned(by_id[id.as_str()], &p.manifest))
            .collect::<Result<_, _>>()?;
        let warm_items: Vec<&CorpusItem> = warmup
            .items
            .iter()
            .filter_map(|id| corpus.items.iter().find(|i| i.id() == id))
            .collect();
        let warmups: Vec<PlannedRequest> = warm_items
            .iter()
            .map(|i| planned(i, &p.manifest))
            .collect::<Result<_, _>>()?;
        let repeats_of: Vec<u32> = order.iter().map(|(r, _)| *r).collect();
        let closed = ClosedLoop {
            concurrency,
            limit: ClosedLoopLimit::Once,
            request_deadline: p.deadline,
        };
        // Warm-up responses are judged too, and stored apart from the measured ones.
        let expected: HashMap<String, CorpusItem> = items
            .into_iter()
            .chain(warm_items.into_iter().cloned())
            .map(|i| (i.id().to_owned(), i))
            .collect();
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
        self.run_load_in(input, None, on_event).await
    }

    /// Sweeps offered load: every cell at every rate, `runs_per_point` repeats each, open-loop
    /// Poisson arrivals for `duration_s` (at least the locked policy's goodput interval plus its
    /// drain, which is also each run's drain). Repeat `r` draws the same arrivals for every cell;
    /// the cells of each (rate, repeat) run in a seeded random order. The plan is
    /// `kvgate_core::sweep::plan`; each run's configuration records its place (`sweep`). Every
    /// cell is checked before the first request; a cancelled or failed run ends the sweep, and
    /// an error names the runs already stored.
    pub async fn run_sweep(
        &self,
        input: &SweepInput,
        mut on_event: impl FnMut(RunEvent) + Send,
    ) -> Result<Vec<RunSummary>, AppError> {
        let policy = self
            .require_locked_policy(
                input.study_id,
                "no sweep is started either (its duration is sized by the policy's goodput interval and drain)",
            )
            .await?
            .policy;
        let names: Vec<String> = input.cells.iter().map(|c| c.cell.clone()).collect();
        let spec = kvgate_core::sweep::SweepSpec {
            cells: &names,
            rates: &input.rates,
            repeats: input.runs_per_point,
            duration_s: input.duration_s,
            seed: input.seed,
        };
        let steps = kvgate_core::sweep::plan(&spec, &policy).map_err(|e| invalid(e.to_string()))?;
        for c in &input.cells {
            self.require_frozen(input.study_id, &c.cell).await?;
            read_startup_log(c.startup_log.as_deref())?;
        }
        open_run_corpus(Path::new(&input.corpus_dir))?;
        let mut done: Vec<RunSummary> = Vec::new();
        for (k, step) in steps.iter().enumerate() {
            let cell = input
                .cells
                .iter()
                .find(|c| c.cell == step.cell)
                .expect("the plan holds the cells given");
            let load = LoadRunInput {
                study_id: input.study_id,
                cell: cell.cell.clone(),
                base_url: cell.base_url.clone(),
                model: input.model.clone(),
                corpus_dir: Some(input.corpus_dir.clone()),
                arrivals: Some(format!("poisson:{}", step.place.rate)),
                duration_s: input.duration_s,
                concurrency: None,
                seed: Some(step.place.arrival_seed),
                drain_s: Some(policy.goodput.drain_s),
                startup_log: cell.startup_log.clone(),
                scrape_interval_ms: input.scrape_interval_ms,
                request_deadline_s: input.request_deadline_s,
                only: input.only.clone(),
            };
            let ran = self
                .run_load_in(&load, Some(&step.place), &mut on_event)
                .await
                .map_err(|e| {
                    series_error(
                        e,
                        &format!(
                            "cell {} at {} req/s, repeat {} (run {} of {})",
                            step.cell,
                            step.place.rate,
                            step.place.repeat + 1,
                            k + 1,
                            steps.len()
                        ),
                        &done,
                    )
                })?;
            let stop = ran.state == RunState::Cancelled;
            done.push(ran);
            if stop {
                break;
            }
        }
        Ok(done)
    }

    async fn run_load_in(
        &self,
        input: &LoadRunInput,
        sweep: Option<&kvgate_core::sweep::SweepPlace>,
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
            Some(dir) => open_run_corpus(Path::new(dir))?,
            None => crate::fixtures::default_load_corpus(seed)?.into(),
        };
        let only = input.only.clone().unwrap_or_default();
        let ids: Vec<String> = eligible_items(&corpus, &only)
            .iter()
            .map(|i| i.id().to_owned())
            .collect();
        if ids.is_empty() {
            return Err(invalid(format!(
                "only: expected strata matching at least one of the corpus's {} items, found none matching {}",
                corpus.items.len(),
                serde_json::to_string(&only).unwrap_or_default()
            )));
        }
        let order = quality_order(&ids, 1, seed);
        let by_id: BTreeMap<&str, &CorpusItem> = corpus.items.iter().map(|i| (i.id(), i)).collect();
        let requests: Vec<PlannedRequest> = order
            .iter()
            .map(|(_, id)| planned(by_id[id.as_str()], &p.manifest))
            .collect::<Result<_, _>>()?;
        let (mode, arrivals) = match (input.concurrency, input.arrivals.as_deref()) {
            (Some(0), _) => return Err(invalid("concurrency: expected at least 1, found 0")),
            (Some(n), _) => (json!({"closed_loop": {"concurrency": n}}), None),
            (None, Some(spec)) => {
                let a = kvgate_runner::parse_arrivals(spec, seed).map_err(invalid)?;
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
            "only": only,
            "duration_ms": duration.as_millis() as u64,
            "drain_ms": drain.as_millis() as u64,
            "seed": seed,
        }));
        let config = match (config, sweep) {
            (Value::Object(mut c), Some(place)) => {
                c.insert("sweep".into(), json!(place));
                Value::Object(c)
            }
            (config, _) => config,
        };
        let label = match (&arrivals, input.concurrency) {
            (_, Some(n)) => format!(
                "load · {} · closed loop × {n} · {} s",
                input.cell, input.duration_s
            ),
            (Some(_), None) => format!(
                "load · {} · {} · {} s{}",
                input.cell,
                input.arrivals.as_deref().unwrap_or_default(),
                input.duration_s,
                sweep
                    .map(|s| format!(" · sweep repeat {} of {}", s.repeat + 1, s.repeats))
                    .unwrap_or_default()
            ),
            (None, None) => unreachable!("checked above"),
        };
        let expected: HashMap<String, CorpusItem> = corpus
            .items
            .into_iter()
            .map(|i| (i.id().to_owned(), i))
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
        expected: &HashMap<String, CorpusItem>,
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
}

/// Of a quality run's selection: how many were answered before, and the ids to send now.
struct LeftToSend {
    answered: usize,
    remaining: Vec<String>,
}

/// The items of a corpus a run may send: those in the strata `only` names.
fn eligible_items(corpus: &RunCorpus, only: &SegmentFilter) -> Vec<CorpusItem> {
    corpus
        .items
        .iter()
        .filter(|i| match i {
            CorpusItem::Generated(g) => {
                ItemStrata::from_item_id(&g.id).is_some_and(|s| only.matches_item(&g.id, Some(&s)))
            }
            CorpusItem::Team(t) => only.matches_item(&t.id, None),
        })
        .cloned()
        .collect()
}

fn planned(item: &CorpusItem, manifest: &Manifest) -> Result<PlannedRequest, AppError> {
    PlannedRequest::new(Some(item.id().to_owned()), chat_body(item, manifest))
        .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))
}

fn stored_request(
    record: &RequestRecord,
    repeat: u32,
    warmup: bool,
    expected: &HashMap<String, CorpusItem>,
) -> StoredRequest {
    let verdict = record
        .item_id
        .as_ref()
        .and_then(|id| expected.get(id))
        .map(|item| item.judge(&record.response_outcome(), ValidatorPolicy::default()));
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

/// A run of a series that failed, named by `context`, with the runs the series already stored.
fn series_error(e: AppError, context: &str, done: &[RunSummary]) -> AppError {
    let stored: Vec<String> = done
        .iter()
        .map(|r| format!("run {} ({})", r.id, r.cell))
        .collect();
    let stored = if stored.is_empty() {
        String::new()
    } else {
        format!("; already stored: {}", stored.join(", "))
    };
    AppError::new(e.code, format!("{context}: {}{stored}", e.message))
}
