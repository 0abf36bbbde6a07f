//! `kvgate import`: files other tools wrote, into one cell of a study, atomically.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
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
    /// vllm-bench, guidellm, aiperf, inference-perf, prometheus, vllm-log, llamacpp-log, jsonl,
    /// csv or parquet
    #[arg(long, value_parser = parse_format)]
    format: ImportFormat,
    /// CSV / Parquet column mapping, e.g. dispatch=start_s,ttft=ttft_s,e2e=latency_s,unit=s
    #[arg(long)]
    map: Option<String>,
    /// Print the stored imports as JSON instead of summary lines
    #[arg(long)]
    json: bool,
    /// Files to import; each is one atomic import
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

pub async fn run(app: &App, args: ImportArgs) -> Result<Outcome, AppError> {
    let study = app.study_by_name(&args.study).await?;
    let mapping = args
        .map
        .as_deref()
        .map(ColumnMapping::parse_spec)
        .transpose()
        .map_err(|e| AppError::new(ErrorCode::InvalidInput, format!("--map: {e}")))?;
    let mut done = Vec::new();
    for file in &args.files {
        let name = file.display().to_string();
        let input = ImportInput {
            study_id: study.id,
            cell: args.cell.clone(),
            format: args.format,
            path: name.clone(),
            mapping: mapping.clone(),
            job: None,
        };
        let summary = app.import_file(input, progress_printer(name)).await?;
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
