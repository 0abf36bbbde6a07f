use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use kvgate_app::domain::policy::SegmentFilter;
use kvgate_app::runs::{
    LoadRunInput, QualityRunInput, RunDetail, RunEvent, RunPhase, RunSummary, SweepCell, SweepInput,
};
use kvgate_app::{App, AppError, ErrorCode};

use crate::{print_json, Outcome};

/// The one cell a load run is bound to, its server and startup log.
#[derive(Debug, Args)]
pub struct OneCell {
    /// Cell whose frozen manifest the run is bound to (e.g. B0, C1)
    #[arg(long)]
    cell: String,
    /// Server root or its /v1 prefix, e.g. http://127.0.0.1:8080. Its API key, if it needs one,
    /// comes from the OS keyring (`kvgate endpoint key set`) or KVGATE_API_KEY
    #[arg(long)]
    endpoint: String,
    /// The server's startup log: compatibility evidence checked against the manifest
    #[arg(long, value_name = "FILE")]
    startup_log: Option<PathBuf>,
}

/// The cells of a quality run: one (`--cell`), or several run one after another (`--cells`).
#[derive(Debug, Args)]
pub struct QualityCells {
    /// Cell whose frozen manifest the run is bound to (e.g. B0, C1)
    #[arg(long, required_unless_present = "cells", conflicts_with = "cells")]
    cell: Option<String>,
    /// Several cells, e.g. B0,Q8: run one after another in a random order drawn from --seed,
    /// recorded (with the seed) in each run's config as `cell_order`
    #[arg(long, value_delimiter = ',', value_name = "CELL,CELL")]
    cells: Vec<String>,
    /// Server root or its /v1 prefix, e.g. http://127.0.0.1:8080; with --cells one per cell as
    /// CELL=URL (e.g. --endpoint B0=http://127.0.0.1:8080 --endpoint Q8=http://127.0.0.1:8081).
    /// Its API key, if it needs one, comes from the OS keyring (`kvgate endpoint key set`) or
    /// KVGATE_API_KEY
    #[arg(long, required = true, value_name = "URL|CELL=URL")]
    endpoint: Vec<String>,
    /// The server's startup log: compatibility evidence checked against the manifest; with
    /// --cells as CELL=FILE, once per cell that has one
    #[arg(long, value_name = "FILE|CELL=FILE")]
    startup_log: Vec<String>,
}

#[derive(Debug, Args)]
pub struct Target {
    /// Study name
    #[arg(long)]
    study: String,
    /// Model name sent with each request
    #[arg(long)]
    model: Option<String>,
    /// /metrics scrape interval in milliseconds; 0 turns scraping off
    #[arg(long, default_value_t = 1000)]
    scrape_interval_ms: u32,
    /// Per-request deadline in seconds
    #[arg(long, default_value_t = 300.0)]
    request_deadline: f64,
    /// Seed of the run order and of the warm-up items (quality), the order of the cells
    /// (--cells), or of the arrivals (load)
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the stored run as JSON instead of a summary line
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
pub enum RunCommand {
    /// Send a fixture corpus to one cell's server (or to several, one after another in a seeded
    /// random order), validate every response, store it all. Exits 2 when a run did not
    /// complete or a cell's evidence does not match its manifest
    Quality {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        cells: QualityCells,
        /// Corpus folder (items.jsonl + corpus.json)
        #[arg(long)]
        corpus: PathBuf,
        /// Passes over the items, each in its own seeded order
        #[arg(long, default_value_t = 1)]
        repeats: u32,
        /// Send only a balanced subset of this many items
        #[arg(long)]
        limit: Option<u32>,
        /// Send only items of a stratum, e.g. `--only length_class=short --only task_type=literal`
        /// (keys: language, length_class, position, task_type, answer_kind; a team corpus's
        /// labels as `label.KEY`, e.g. `--only label.language=de`); applied before --limit
        #[arg(long, value_name = "KEY=VALUE")]
        only: Vec<String>,
        /// Send only the selected items a cell has not answered yet (same item, same prompt) in
        /// the study's finished quality runs: a run interrupted or cancelled is resumed by
        /// running the same command again with --resume; its runs pair like one. A cell with
        /// nothing left is said so and skipped; exit 0 when no cell has anything left
        #[arg(long)]
        resume: bool,
        /// Send at most this many of the items left, in the selection's balanced order: a long
        /// recording in bounded runs (with --resume), so an interruption loses one run at most
        #[arg(long, value_name = "N")]
        at_most: Option<u32>,
        /// Engine warm-up requests, sent first and stored apart: corpus items that are not then
        /// measured (fewer, and said so, when the corpus has no item left over)
        #[arg(long, default_value_t = 1)]
        warmup: u32,
        /// Requests in flight at once
        #[arg(long, default_value_t = 1)]
        concurrency: u32,
    },
    /// Offer load for a duration: open loop at given arrivals, or closed loop at a concurrency.
    /// Exits 2 when the run did not complete or the cell's evidence does not match its manifest
    Load {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        cell: OneCell,
        /// Prompts to cycle through (every response is validated against its item); default: the
        /// synthetic test-2k evaluation corpus generated from --seed with the pinned tokenizer
        #[arg(long)]
        corpus: Option<PathBuf>,
        /// poisson:RPS, gamma:RPS:SHAPE, constant:RPS or trace:FILE
        #[arg(long, required_unless_present = "concurrency")]
        arrivals: Option<String>,
        /// Seconds during which requests are planned
        #[arg(long)]
        duration: f64,
        /// Closed loop with this many workers instead of open-loop arrivals
        #[arg(long, conflicts_with = "arrivals")]
        concurrency: Option<u32>,
        /// Seconds after the duration before running requests are recorded unfinished
        #[arg(long, default_value_t = 30.0)]
        drain: f64,
        /// Cycle only through items of a stratum, e.g. `--only length_class=short`
        #[arg(long, value_name = "KEY=VALUE")]
        only: Vec<String>,
    },
    /// Sweep offered load: every cell at every rate, open-loop Poisson arrivals, `--runs-per-point`
    /// repeats each. Repeat r draws the same arrivals (seed + r) for every cell and rate; the
    /// cells of each rate and repeat run in a random order drawn from --seed, recorded in each
    /// run's config (`sweep`). --duration must be at least the locked policy's goodput interval
    /// plus its drain deadline (goodput is good requests ÷ the interval); each run drains for
    /// the policy's drain deadline. The analysis reads the runs as the cells' operating envelope
    /// (`envelope`, `knee_rps` in `kvgate analyze --json`). Exits 2 when a run did not complete
    /// or a cell's evidence does not match its manifest
    Sweep {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        cells: QualityCells,
        /// Prompts to cycle through, the same at every point (every response is validated)
        #[arg(long)]
        corpus: PathBuf,
        /// Offered rates in requests per second, run in this order, e.g. 0.05,0.1,0.2
        #[arg(long, required = true, value_delimiter = ',', value_name = "RPS,RPS")]
        rates: Vec<f64>,
        /// Seconds during which each run's requests are planned
        #[arg(long)]
        duration: f64,
        /// Repeats at each rate
        #[arg(long, default_value_t = 2)]
        runs_per_point: u32,
        /// Cycle only through items of a stratum, e.g. `--only length_class=short` (a slow
        /// server's envelope is measured on the items it can serve)
        #[arg(long, value_name = "KEY=VALUE")]
        only: Vec<String>,
    },
    /// List a study's runs
    List {
        #[arg(long)]
        study: String,
        #[arg(long)]
        json: bool,
    },
    /// Write a finished run as a kvgate-run JSONL file (header, requests, evidence, scrapes)
    Export {
        /// Run id
        id: i64,
        /// File to write (must not exist)
        #[arg(long)]
        out: PathBuf,
    },
    /// Import a kvgate-run JSONL file into a study (its cell's frozen manifest must match)
    Import {
        #[arg(long)]
        study: String,
        file: PathBuf,
    },
    /// Show one run with its verdict counts (once the study's policy is locked) and evidence
    Show {
        /// Run id
        id: i64,
        #[arg(long)]
        json: bool,
    },
}

/// Progress on stderr: one redrawn line on a terminal, a line every 5 s otherwise.
struct ProgressLine {
    tty: bool,
    last: Option<Instant>,
    run_id: Arc<AtomicI64>,
}

impl ProgressLine {
    fn show(&mut self, e: &RunEvent) {
        self.run_id.store(e.run_id, Ordering::SeqCst);
        let p = &e.progress;
        let phase = match e.phase {
            RunPhase::Warmup => "warm-up",
            RunPhase::Measured => "measured",
            RunPhase::Finished => "finished",
        };
        let planned = p
            .planned
            .map(|n| n.to_string())
            .unwrap_or_else(|| "?".into());
        let bar = match p.planned {
            Some(n) if n > 0 => {
                let filled = (p.finished as usize * 30) / n as usize;
                format!(
                    "[{}{}] ",
                    "#".repeat(filled),
                    ".".repeat(30 - filled.min(30))
                )
            }
            _ => String::new(),
        };
        let line = format!(
            "run {} {phase}: {bar}sent {}/{planned} finished {} failed {} · {:.1} s",
            e.run_id,
            p.sent,
            p.finished,
            p.failed,
            p.elapsed_ms / 1e3
        );
        let mut err = std::io::stderr();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
            if e.phase == RunPhase::Finished {
                let _ = writeln!(err);
            }
        } else if e.phase == RunPhase::Finished
            || self
                .last
                .is_none_or(|t| t.elapsed() >= Duration::from_secs(5))
        {
            let _ = writeln!(err, "{line}");
            self.last = Some(Instant::now());
        }
    }
}

fn print_summary(s: &RunSummary) {
    let planned = s
        .planned
        .map(|n| n.to_string())
        .unwrap_or_else(|| "?".into());
    let elapsed = s
        .elapsed_ms
        .map(|ms| format!("{:.1} s", ms / 1e3))
        .unwrap_or_else(|| "—".into());
    println!(
        "run {} {} [{}] cell {}: {planned} planned, {} ok, {} not ok, {elapsed} · config sha256 {}",
        s.id, s.state, s.kind, s.cell, s.ok, s.failed, s.config_sha256
    );
    if let Some(note) = &s.note {
        println!("  note: {note}");
    }
}

/// The verdict counts of a run, or why they are withheld.
fn print_verdicts(detail: &RunDetail) {
    match (detail.accepted, detail.rejected, detail.unvalidated) {
        (Some(a), Some(r), Some(u)) => {
            println!("  verdicts (measured): {a} accepted, {r} rejected, {u} not validated")
        }
        _ => println!(
            "  verdicts withheld ({}): the study has no locked acceptance policy; floors come \
             before results (`kvgate policy lock`)",
            detail
                .withheld
                .map(|w| w.as_str())
                .unwrap_or("policy_not_locked")
        ),
    }
}

/// The warm-up and the place in a series a quality run recorded in its config.
fn print_method(s: &RunSummary) {
    let warmup = &s.config["warmup"];
    if let Some(items) = warmup["items"].as_array() {
        let ids: Vec<&str> = items.iter().filter_map(|i| i.as_str()).collect();
        println!(
            "  warm-up: {} item(s) outside the measured set{}",
            ids.len(),
            if ids.is_empty() {
                String::new()
            } else {
                format!(" ({})", ids.join(", "))
            }
        );
        if let Some(why) = warmup["shortfall"].as_str() {
            println!("  warm-up short: {why}");
        }
    }
    let place = &s.config["cell_order"];
    if let (Some(order), Some(position)) = (place["order"].as_array(), place["position"].as_u64()) {
        let order: Vec<&str> = order.iter().filter_map(|c| c.as_str()).collect();
        println!(
            "  cell order (seed {}): {}; this run {} of {}",
            place["seed"],
            order.join(", "),
            position + 1,
            order.len()
        );
    }
}

/// Prints a finished run; true when it completed over a valid cell.
async fn report(
    app: &App,
    summary: &RunSummary,
    json: bool,
) -> Result<(RunDetail, bool), AppError> {
    let detail = app.run_detail(summary.id).await?;
    let valid = detail.validity.as_ref().is_some_and(|v| v.valid);
    if !json {
        print_summary(summary);
        print_method(summary);
        print_verdicts(&detail);
        match &detail.validity {
            Some(v) if v.valid => println!("  compatibility: valid against the frozen manifest"),
            Some(v) => {
                println!("  compatibility: INVALID cell");
                for p in &v.problems {
                    println!(
                        "    {}: expected {}, found {}: {}",
                        p.field, p.expected, p.found, p.reason
                    );
                }
            }
            None => println!("  compatibility: not checked"),
        }
    }
    // Failed requests are data, not a failure of the command; a run that did not complete, or
    // a cell whose evidence does not match its manifest, is.
    let ok = summary.state == kvgate_app::domain::run::RunState::Completed && valid;
    Ok((detail, ok))
}

/// Runs `work` with Ctrl-C cancelling the run in progress, then reports each run it stored:
/// one run as an object (`--json`), a series as an array in the order run.
async fn execute(
    app: &App,
    json: bool,
    work: impl std::future::Future<Output = Result<Vec<RunSummary>, AppError>>,
    run_id: Arc<AtomicI64>,
    series: bool,
) -> Result<Outcome, AppError> {
    let canceller = {
        let app = app.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                let id = run_id.load(Ordering::SeqCst);
                eprintln!("\ncancelling run {id}: requests in flight are recorded as they stand");
                let _ = app.cancel_run(id);
            }
        })
    };
    let result = work.await;
    canceller.abort();
    let summaries = result?;
    let mut details = Vec::new();
    let mut all_ok = true;
    for summary in &summaries {
        let (detail, ok) = report(app, summary, json).await?;
        all_ok &= ok;
        details.push(detail);
    }
    if json {
        match (series, details.as_slice()) {
            (false, [one]) => print_json(one)?,
            _ => print_json(&details)?,
        }
    }
    Ok(if all_ok {
        Outcome::Success
    } else {
        Outcome::Failure(2)
    })
}

/// `CELL=VALUE` when the text starts with a cell name and `=`; a URL or path otherwise.
fn split_cell(text: &str) -> Option<(&str, &str)> {
    let (cell, value) = text.split_once('=')?;
    let is_cell = !cell.is_empty()
        && cell
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
    (is_cell && !value.is_empty()).then_some((cell, value))
}

/// Each cell's endpoint and startup log, from `--cell`/`--cells`, `--endpoint` and
/// `--startup-log`.
fn cell_targets(c: &QualityCells) -> Result<Vec<(String, String, Option<String>)>, AppError> {
    let bad = |m: String| AppError::new(ErrorCode::InvalidInput, m);
    if let Some(cell) = &c.cell {
        let one = |values: &[String], what: &str| -> Result<Option<String>, AppError> {
            match values {
                [] => Ok(None),
                [v] => Ok(Some(match split_cell(v) {
                    Some((named, value)) if named == cell => value.to_owned(),
                    _ => v.clone(),
                })),
                _ => Err(bad(format!(
                    "--{what}: expected one for --cell {cell}, found {}",
                    values.len()
                ))),
            }
        };
        let endpoint = one(&c.endpoint, "endpoint")?.unwrap_or_default();
        return Ok(vec![(
            cell.clone(),
            endpoint,
            one(&c.startup_log, "startup-log")?,
        )]);
    }
    let mut cells: Vec<String> = Vec::new();
    for cell in c.cells.iter().map(|c| c.trim()).filter(|c| !c.is_empty()) {
        if cells.iter().any(|c| c == cell) {
            return Err(bad(format!(
                "--cells: expected each cell once, found {cell} again"
            )));
        }
        cells.push(cell.to_owned());
    }
    let by_cell = |values: &[String], what: &str| -> Result<Vec<(String, String)>, AppError> {
        let mut out: Vec<(String, String)> = Vec::new();
        for v in values {
            let Some((cell, value)) = split_cell(v) else {
                return Err(bad(format!(
                    "--{what}: expected CELL=VALUE with --cells, found {v:?}"
                )));
            };
            if !cells.iter().any(|c| c == cell) {
                return Err(bad(format!(
                    "--{what}: expected one of the cells {}, found {cell}",
                    cells.join(", ")
                )));
            }
            if out.iter().any(|(c, _)| c == cell) {
                return Err(bad(format!(
                    "--{what}: expected one per cell, found {cell} again"
                )));
            }
            out.push((cell.to_owned(), value.to_owned()));
        }
        Ok(out)
    };
    let endpoints = by_cell(&c.endpoint, "endpoint")?;
    let logs = by_cell(&c.startup_log, "startup-log")?;
    cells
        .into_iter()
        .map(|cell| {
            let endpoint = endpoints
                .iter()
                .find(|(c, _)| c == &cell)
                .map(|(_, u)| u.clone())
                .ok_or_else(|| {
                    bad(format!(
                        "--endpoint: expected {cell}=URL, found none for {cell}"
                    ))
                })?;
            let log = logs
                .iter()
                .find(|(c, _)| c == &cell)
                .map(|(_, f)| f.clone());
            Ok((cell, endpoint, log))
        })
        .collect()
}

pub async fn run(app: &App, cmd: RunCommand) -> Result<Outcome, AppError> {
    let run_id = Arc::new(AtomicI64::new(0));
    let mut progress = ProgressLine {
        tty: std::io::stderr().is_terminal(),
        last: None,
        run_id: run_id.clone(),
    };
    match cmd {
        RunCommand::Quality {
            target,
            cells,
            corpus,
            repeats,
            limit,
            only,
            resume,
            at_most,
            warmup,
            concurrency,
        } => {
            let only = strata_filter(&only)?;
            let study = app.study_by_name(&target.study).await?;
            let series = cells.cell.is_none();
            let mut inputs = Vec::new();
            for (cell, endpoint, startup_log) in cell_targets(&cells)? {
                crate::endpoint::key_from_env(app, &endpoint)?;
                inputs.push(QualityRunInput {
                    study_id: study.id,
                    cell,
                    base_url: endpoint,
                    model: target.model.clone(),
                    corpus_dir: corpus.display().to_string(),
                    repeats: Some(repeats),
                    seed: Some(target.seed),
                    limit,
                    only: only.clone(),
                    resume: Some(resume),
                    at_most,
                    warmup: Some(warmup),
                    concurrency: Some(concurrency),
                    startup_log,
                    scrape_interval_ms: Some(target.scrape_interval_ms),
                    request_deadline_s: Some(target.request_deadline),
                });
            }
            if resume {
                let mut open = Vec::new();
                for input in inputs {
                    let left = app.quality_left(&input).await?;
                    if left.to_send == 0 {
                        eprintln!(
                            "cell {}: all {} selected items answered in finished runs; nothing left to send",
                            left.cell, left.selected
                        );
                    } else {
                        eprintln!(
                            "cell {}: {} of {} selected items answered before; sending {}",
                            left.cell, left.answered, left.selected, left.to_send
                        );
                        open.push(input);
                    }
                }
                if open.is_empty() {
                    if target.json {
                        println!("[]");
                    }
                    return Ok(Outcome::Success);
                }
                inputs = open;
            }
            if series {
                let work = app.run_quality_cells(&inputs, target.seed, |e| progress.show(&e));
                execute(app, target.json, work, run_id, true).await
            } else {
                let work = async {
                    app.run_quality(&inputs[0], |e| progress.show(&e))
                        .await
                        .map(|s| vec![s])
                };
                execute(app, target.json, work, run_id, false).await
            }
        }
        RunCommand::Load {
            target,
            cell,
            corpus,
            arrivals,
            duration,
            concurrency,
            drain,
            only,
        } => {
            let only = strata_filter(&only)?;
            let study = app.study_by_name(&target.study).await?;
            crate::endpoint::key_from_env(app, &cell.endpoint)?;
            let input = LoadRunInput {
                study_id: study.id,
                cell: cell.cell.clone(),
                base_url: cell.endpoint.clone(),
                model: target.model.clone(),
                corpus_dir: corpus.map(|c| c.display().to_string()),
                arrivals,
                duration_s: duration,
                concurrency,
                seed: Some(target.seed),
                drain_s: Some(drain),
                startup_log: cell.startup_log.as_ref().map(|p| p.display().to_string()),
                scrape_interval_ms: Some(target.scrape_interval_ms),
                request_deadline_s: Some(target.request_deadline),
                only,
            };
            let work = async {
                app.run_load(&input, |e| progress.show(&e))
                    .await
                    .map(|s| vec![s])
            };
            execute(app, target.json, work, run_id, false).await
        }
        RunCommand::Sweep {
            target,
            cells,
            corpus,
            rates,
            duration,
            runs_per_point,
            only,
        } => {
            let only = strata_filter(&only)?;
            let study = app.study_by_name(&target.study).await?;
            let mut sweep_cells = Vec::new();
            for (cell, endpoint, startup_log) in cell_targets(&cells)? {
                crate::endpoint::key_from_env(app, &endpoint)?;
                sweep_cells.push(SweepCell {
                    cell,
                    base_url: endpoint,
                    startup_log,
                });
            }
            let input = SweepInput {
                study_id: study.id,
                cells: sweep_cells,
                rates,
                duration_s: duration,
                runs_per_point,
                seed: target.seed,
                model: target.model.clone(),
                corpus_dir: corpus.display().to_string(),
                scrape_interval_ms: Some(target.scrape_interval_ms),
                request_deadline_s: Some(target.request_deadline),
                only,
            };
            let work = app.run_sweep(&input, |e| progress.show(&e));
            execute(app, target.json, work, run_id, true).await
        }
        RunCommand::List { study, json } => {
            let study = app.study_by_name(&study).await?;
            let runs = app.list_runs(study.id).await?;
            if json {
                print_json(&runs)?;
            } else if runs.is_empty() {
                println!("no runs in study {:?}", study.name);
            } else {
                for r in &runs {
                    print_summary(r);
                }
            }
            Ok(Outcome::Success)
        }
        RunCommand::Export { id, out } => {
            let text = app.export_run(id).await?;
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&out)
                .map_err(|e| {
                    AppError::new(
                        kvgate_app::ErrorCode::InvalidInput,
                        format!("--out {}: cannot create it: {e}", out.display()),
                    )
                })?;
            file.write_all(text.as_bytes())
                .map_err(|e| AppError::storage(format!("{}: cannot write: {e}", out.display())))?;
            println!(
                "wrote run {id} to {} ({} lines, sha256 {})",
                out.display(),
                text.lines().count(),
                kvgate_app::domain::canonical::sha256_hex(text.as_bytes())
            );
            Ok(Outcome::Success)
        }
        RunCommand::Import { study, file } => {
            let study = app.study_by_name(&study).await?;
            let text = std::fs::read_to_string(&file).map_err(|e| {
                AppError::new(
                    kvgate_app::ErrorCode::InvalidInput,
                    format!("{}: cannot read it: {e}", file.display()),
                )
            })?;
            let name = file.display().to_string();
            let summary = app
                .import_run_file(
                    study.id,
                    &name,
                    &text,
                    kvgate_app::domain::run::RunProvenance::Imported,
                )
                .await?;
            print_summary(&summary);
            Ok(Outcome::Success)
        }
        RunCommand::Show { id, json } => {
            let detail = app.run_detail(id).await?;
            if json {
                print_json(&detail)?;
            } else {
                print_summary(&detail.run);
                if let Some(m) = &detail.corpus_mismatch {
                    println!(
                        "  CORPUS MISMATCH: the run's corpus {} is not its manifest's evaluation corpus {}",
                        m.run_corpus_sha256, m.manifest_corpus_sha256
                    );
                }
                print_method(&detail.run);
                print_verdicts(&detail);
                for e in &detail.evidence {
                    println!(
                        "  evidence {} {} ({} bytes) sha256 {}",
                        e.kind, e.source_name, e.bytes, e.sha256
                    );
                }
            }
            Ok(Outcome::Success)
        }
    }
}

/// `KEY=VALUE` pairs as a strata filter; the keys and values a policy segment accepts.
pub(crate) fn strata_filter(pairs: &[String]) -> Result<Option<SegmentFilter>, AppError> {
    if pairs.is_empty() {
        return Ok(None);
    }
    let mut map = serde_json::Map::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(AppError::new(
                ErrorCode::InvalidInput,
                format!("--only: expected KEY=VALUE, found {pair:?}"),
            ));
        };
        // A team label, as the analysis names its stratum: `label.language=de`.
        let repeated = match key.strip_prefix("label.") {
            Some(label) => map
                .entry("labels")
                .or_insert_with(|| serde_json::Value::Object(Default::default()))
                .as_object_mut()
                .is_some_and(|labels| labels.insert(label.into(), value.into()).is_some()),
            None => map.insert(key.to_string(), value.into()).is_some(),
        };
        if repeated {
            return Err(AppError::new(
                ErrorCode::InvalidInput,
                format!("--only: expected each key once, found {key:?} again"),
            ));
        }
    }
    serde_json::from_value(serde_json::Value::Object(map))
        .map(Some)
        .map_err(|e| AppError::new(ErrorCode::InvalidInput, format!("--only: {e}")))
}

#[cfg(test)]
mod tests {
    use super::strata_filter;

    fn pairs(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn label_keys_fill_the_labels_filter_and_a_key_twice_is_refused() {
        let f = strata_filter(&pairs(&[
            "label.language=de",
            "label.task=x",
            "language=en",
        ]))
        .unwrap()
        .unwrap();
        let labels = f.labels.unwrap();
        assert_eq!(labels["language"], "de");
        assert_eq!(labels["task"], "x");
        assert_eq!(f.language.map(|l| l.as_str()), Some("en"));
        for bad in [
            &["label.language=de", "label.language=en"][..],
            &["language=de", "language=en"][..],
            &["label.language"][..],
            &["colour=red"][..],
        ] {
            assert!(strata_filter(&pairs(bad)).is_err(), "{bad:?}");
        }
        assert_eq!(strata_filter(&[]).unwrap(), None);
    }
}
