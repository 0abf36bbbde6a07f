//! `kvgate import`: files other tools wrote, into one cell of a study, atomically.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::Args;
use kvgate_app::formats::import::mapping::ColumnMapping;
use kvgate_app::formats::import::ImportFormat;
use kvgate_app::imports::{ImportEvent, ImportInput, ImportPhase, ImportSummary};
use kvgate_app::{App, AppError, ErrorCode};

use crate::{print_json, Outcome};

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Study name
    #[arg(long)]
    study: String,
    /// Cell whose frozen manifest the file measured (e.g. B0, C1)
    #[arg(long)]
    cell: String,
    /// vllm-bench, guidellm, aiperf, inference-perf, prometheus, vllm-log, llamacpp-log,
    /// nvidia-smi, jsonl, lm-eval-samples, inspect, csv or parquet
    #[arg(long, value_parser = parse_format)]
    format: ImportFormat,
    /// CSV / Parquet column mapping, e.g. dispatch=start_s,ttft=ttft_s,e2e=latency_s,unit=s
    #[arg(long)]
    map: Option<String>,
    /// Print the stored imports as JSON instead of summary lines
    #[arg(long)]
    json: bool,
    /// Files to import; each is one atomic import. With vllm-bench, a `vllm bench sweep` output
    /// folder stands for its `run=N.json` results: all are read first, none stored if one fails.
    /// With lm-eval-samples, SAMPLES.jsonl [RESULTS.json]: the results file of the same lm-eval
    /// run (default: the results_<date>.json beside the samples file). Harness results are quality
    /// runs: each row's verdict comes from the metric the locked policy names for its task
    /// (`metrics`), else the task's first scoring metric; tasks KV Gate exported are judged by
    /// KV Gate's validator
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

fn parse_format(s: &str) -> Result<ImportFormat, String> {
    ImportFormat::parse(s).ok_or_else(|| {
        let names: Vec<&str> = ImportFormat::ALL.iter().map(|f| f.as_str()).collect();
        format!("expected one of {}, found {s:?}", names.join(", "))
    })
}

/// Progress on stderr: one redrawn line on a terminal, a line every 5 s otherwise;
/// `KVGATE_PROGRESS_INTERVAL_MS` sets another interval (0: every update, from the start).
fn progress_printer(name: String) -> impl Fn(ImportEvent) + Send + Sync + 'static {
    let tty = std::io::stderr().is_terminal();
    let started = Instant::now();
    let last: Mutex<Option<Instant>> = Mutex::new(None);
    let chosen = std::env::var("KVGATE_PROGRESS_INTERVAL_MS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_millis);
    let every = chosen.unwrap_or(if tty {
        Duration::from_millis(200)
    } else {
        Duration::from_secs(5)
    });
    // Quick imports print nothing but their summary, unless an interval was chosen.
    let quiet = if chosen.is_some() {
        Duration::ZERO
    } else {
        Duration::from_secs(1)
    };
    move |e: ImportEvent| {
        let mut last = last.lock().expect("progress");
        if e.phase != ImportPhase::Done
            && (started.elapsed() < quiet || last.is_some_and(|t| t.elapsed() < every))
        {
            return;
        }
        if e.phase == ImportPhase::Done && last.is_none() {
            return;
        }
        *last = Some(Instant::now());
        let line = match e.phase {
            ImportPhase::Reading => format!(
                "{name}: reading {:.1} / {:.1} MiB",
                e.bytes_read as f64 / 1048576.0,
                e.total_bytes as f64 / 1048576.0
            ),
            ImportPhase::Checking => format!(
                "{name}: checking {} / {} request rows",
                e.rows_stored, e.total_rows
            ),
            ImportPhase::Storing => format!(
                "{name}: storing {} / {} request rows",
                e.rows_stored, e.total_rows
            ),
            ImportPhase::Done => format!("{name}: stored"),
        };
        let mut err = std::io::stderr();
        if tty {
            let _ = write!(err, "\r\x1b[2K{line}");
            if e.phase == ImportPhase::Done {
                let _ = writeln!(err);
            }
        } else {
            let _ = writeln!(err, "{line}");
        }
    }
}

fn print_summary(s: &ImportSummary) {
    println!(
        "import {} · {} · cell {} · {} ({} bytes) sha256 {}",
        s.id, s.format, s.cell, s.source_name, s.bytes, s.sha256
    );
    println!(
        "  {} run(s) {:?}, {} request rows, {} aggregates, {} scrapes, {} evidence · {}{}",
        s.runs,
        s.run_ids,
        s.requests,
        s.aggregates,
        s.scrapes,
        s.evidence,
        s.parser_version,
        s.tool
            .as_deref()
            .map(|t| format!(" · written by {t}"))
            .unwrap_or_default()
    );
    for w in &s.warnings {
        let rows = if w.rows > 0 {
            format!(" ({} rows)", w.rows)
        } else {
            String::new()
        };
        println!("  warning {}: {}{rows}", w.at, w.message);
    }
}

/// A `vllm bench sweep` result: `run=N.json` (N the repeat), beside the combination's
/// `summary.json`, which repeats the runs and is not read.
fn sweep_run_number(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix("run=")?
        .strip_suffix(".json")?
        .parse()
        .ok()
}

fn collect_sweep(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), AppError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!("cannot read {}: {e}", dir.display()),
        )
    })?;
    for entry in entries {
        let path = entry
            .map_err(|e| {
                AppError::new(
                    ErrorCode::InvalidInput,
                    format!("cannot read {}: {e}", dir.display()),
                )
            })?
            .path();
        if path.is_dir() {
            collect_sweep(&path, out)?;
        } else if sweep_run_number(&path).is_some() {
            out.push(path);
        }
    }
    Ok(())
}

/// The files a folder stands for: a `vllm bench sweep` output's results, each combination's
/// runs in repeat order; any other format takes files only.
fn expand_folder(dir: &Path, format: ImportFormat) -> Result<Vec<PathBuf>, AppError> {
    if format != ImportFormat::VllmBench {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "{}: expected a file, found a folder (a folder is read only as a `vllm bench sweep` output, with --format vllm-bench)",
                dir.display()
            ),
        ));
    }
    let mut files = Vec::new();
    collect_sweep(dir, &mut files)?;
    if files.is_empty() {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "{}: expected a `vllm bench sweep` output folder with run=N.json results, found none",
                dir.display()
            ),
        ));
    }
    files.sort_by(|a, b| (a.parent(), sweep_run_number(a)).cmp(&(b.parent(), sweep_run_number(b))));
    Ok(files)
}

pub async fn run(app: &App, args: ImportArgs) -> Result<Outcome, AppError> {
    let study = app.study_by_name(&args.study).await?;
    let mapping = args
        .map
        .as_deref()
        .map(ColumnMapping::parse_spec)
        .transpose()
        .map_err(|e| AppError::new(ErrorCode::InvalidInput, format!("--map: {e}")))?;
    // lm-eval: a results_<date>.json given with samples files is their results file.
    let is_results = |p: &PathBuf| {
        args.format == ImportFormat::LmEvalSamples
            && p.file_name()
                .map(|n| n.to_string_lossy())
                .is_some_and(|n| n.starts_with("results_") && n.ends_with(".json"))
    };
    let companions: Vec<&PathBuf> = args.files.iter().filter(|p| is_results(p)).collect();
    if companions.len() > 1 {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "expected at most one results_<date>.json with the samples files, found {}",
                companions.len()
            ),
        ));
    }
    let companion = companions.first().map(|p| p.display().to_string());
    let input = |path: &Path| ImportInput {
        study_id: study.id,
        cell: args.cell.clone(),
        format: args.format,
        path: path.display().to_string(),
        mapping: mapping.clone(),
        job: None,
        companion: companion.clone(),
    };
    let mut done = Vec::new();
    for file in args.files.iter().filter(|p| !is_results(p)) {
        if file.is_dir() {
            // A sweep is read whole before any of it is stored: a bad result stores nothing.
            // (The workbench keeps one previewed reading at a time, so each is read again to
            // store it.)
            let files = expand_folder(file, args.format)?;
            for path in &files {
                let name = path.display().to_string();
                let preview = app
                    .preview_import(input(path), progress_printer(name))
                    .await?;
                if let Some(first) = &preview.already_imported {
                    return Err(AppError::new(
                        ErrorCode::InvalidInput,
                        format!(
                            "{}: already imported as import {} ({}); nothing of {} was stored",
                            path.display(),
                            first.id,
                            first.source_name,
                            file.display()
                        ),
                    ));
                }
            }
            for path in &files {
                let name = path.display().to_string();
                let summary = app.import_file(input(path), progress_printer(name)).await?;
                if !args.json {
                    print_summary(&summary);
                }
                done.push(summary);
            }
            continue;
        }
        let name = file.display().to_string();
        let summary = app.import_file(input(file), progress_printer(name)).await?;
        if !args.json {
            print_summary(&summary);
        }
        done.push(summary);
    }
    if args.json {
        print_json(&done)?;
    }
    Ok(Outcome::Success)
}
