//! Importing files other tools wrote: read and recognise a file (nothing stored), show what was
//! recognised, then store it atomically, bound to one cell of one study.
//!
//! A file is read once, streaming, while its sha256 is computed from the same bytes. What was
//! read is kept until it is committed or dropped, so the preview and the stored rows are the
//! same reading. The same file (by sha256) is imported into a study once.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use kvgate_core::canonical::{canonical_json, hex, sha256_hex};
use kvgate_core::compat::ObservedEngine;
use kvgate_core::evidence::EvidenceKind;
use kvgate_core::harness::approved::{ApprovedCorpora, ApprovedItem, ExportCheck};
use kvgate_core::manifest::Manifest;
use kvgate_core::metrics::{normalize, summarize, EngineProfile, MetricPoint};
use kvgate_core::run::RequestStatus;
use kvgate_formats::import::mapping::ColumnMapping;
use kvgate_formats::import::{
    self, aiperf, jsonl, Granularity, ImportError, ImportFormat, ImportWarning, ParsedImport,
    ParsedRun, ReadProgress,
};
use kvgate_formats::prometheus::{observed_from_cache_config_info, parse_exposition};
use kvgate_formats::run_file::parse_run_file;
use kvgate_formats::startup_log::parse_startup_log;
use kvgate_store::{
    rfc3339_from_unix_ms, AggregateRow, ImportRecord, ImportedRequest, ImportedRun,
    MetricScrapeRow, NewImport, NewRun, RunEvidence, RunKind, RunProvenance, RunState,
    StoredRequest,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use ts_rs::TS;

use crate::evidence::EvidenceSet;
use crate::{App, AppError, ErrorCode, Problem, ProblemCode};

mod streamed;

/// A file to import into one cell of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct ImportInput {
    pub study_id: i64,
    /// The cell the file measured; its manifest must be frozen.
    pub cell: String,
    #[schemars(with = "String")]
    pub format: ImportFormat,
    /// Path of the file on this machine.
    pub path: String,
    /// CSV / Parquet: which column holds which field.
    #[serde(default)]
    #[schemars(skip)]
    pub mapping: Option<ColumnMapping>,
    /// A name the caller picks to follow progress and cancel (`cancel_import`).
    #[serde(default)]
    pub job: Option<String>,
    /// lm-eval samples: its results file (default: `results_<date>.json` beside it, when there).
    #[serde(default)]
    pub companion: Option<String>,
}

/// Where an import stands, for progress bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ImportPhase {
    Reading,
    /// A preview reads the rows of a file whose rows are read when they are stored (a vLLM
    /// result): `rows_stored` counts the rows checked, none kept.
    Checking,
    Storing,
    Done,
}

/// A progress report of an import.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ImportEvent {
    pub job: Option<String>,
    pub phase: ImportPhase,
    pub bytes_read: u64,
    pub total_bytes: u64,
    /// Rows stored (or, while checking, rows checked).
    pub rows_stored: u64,
    pub total_rows: u64,
}

/// One run recognised in a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ImportRunPreview {
    pub label: String,
    pub granularity: Granularity,
    pub requests: u64,
    pub ok: u64,
    /// Requests that did not end `ok` (errors, timeouts, rejected, unfinished): kept, counted.
    pub failed: u64,
    pub aggregates: u64,
    pub scrapes: u64,
    pub evidence: u64,
    pub elapsed_ms: Option<f64>,
    /// Up to a dozen of the tool's own figures, as reported, for a first look.
    pub figures: Vec<ImportFigure>,
}

/// One tool-reported figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ImportFigure {
    pub name: String,
    pub stat: String,
    pub value: f64,
    pub unit: String,
}

/// What a file was recognised as, before anything is stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ImportPreview {
    /// Pass to `commit_import` to store exactly this reading.
    pub token: String,
    pub study_id: i64,
    pub cell: String,
    pub format: String,
    pub parser_version: String,
    pub tool: Option<String>,
    pub source_name: String,
    pub sha256: String,
    pub bytes: u64,
    pub runs: Vec<ImportRunPreview>,
    pub warnings: Vec<WarningInfo>,
    /// Set when this file is already in the study: committing would be refused.
    pub already_imported: Option<ImportSummary>,
}

/// A warning as shown and stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct WarningInfo {
    pub at: String,
    pub message: String,
    pub rows: u64,
}

/// A stored import.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ImportSummary {
    pub id: i64,
    pub study_id: i64,
    pub cell: String,
    pub format: String,
    pub parser_version: String,
    pub tool: Option<String>,
    pub source_name: String,
    pub sha256: String,
    pub bytes: i64,
    pub imported_at: String,
    pub runs: i64,
    pub requests: i64,
    pub aggregates: i64,
    pub scrapes: i64,
    pub evidence: i64,
    pub warnings: Vec<WarningInfo>,
    /// The runs it created (filled right after an import; empty in listings).
    pub run_ids: Vec<i64>,
}

fn summary_of(record: ImportRecord, run_ids: Vec<i64>) -> ImportSummary {
    let warnings = serde_json::from_str::<Vec<ImportWarning>>(&record.warnings_json)
        .unwrap_or_default()
        .into_iter()
        .map(warning_info)
        .collect();
    ImportSummary {
        id: record.id,
        study_id: record.study_id,
        cell: record.cell,
        format: record.format,
        parser_version: record.parser_version,
        tool: record.tool,
        source_name: record.source_name,
        sha256: record.source_sha256,
        bytes: record.source_bytes,
        imported_at: record.imported_at,
        runs: record.runs,
        requests: record.requests,
        aggregates: record.aggregates,
        scrapes: record.scrapes,
        evidence: record.evidence,
        warnings,
        run_ids,
    }
}

fn warning_info(w: ImportWarning) -> WarningInfo {
    WarningInfo {
        at: w.at,
        message: w.message,
        rows: w.rows,
    }
}

/// Imports being read or waiting for their commit, by job and by token.
#[derive(Debug, Clone, Default)]
pub(crate) struct ActiveImports {
    jobs: Arc<Mutex<HashMap<String, ReadProgress>>>,
    pending: Arc<Mutex<HashMap<String, ReadFile>>>,
    next: Arc<AtomicU64>,
}

/// A file as read: what it is, where it goes, and what it holds.
#[derive(Debug)]
struct ReadFile {
    input: ImportInput,
    source_name: String,
    sha256: String,
    bytes: u64,
    /// Unix ms of the file's modification time: the anchor of runs whose source has no clock.
    modified_unix_ms: Option<i64>,
    content: Content,
}

#[derive(Debug)]
enum Content {
    Parsed(ParsedImport),
    /// A file laid out, its rows read when they are stored.
    Streamed(Box<import::vllm_bench::stream::StreamedFile>),
    /// A whole `kvgate-run` file (jsonl with its header).
    RunFile(String),
}

impl Content {
    /// What was read of a file of another tool: everything but rows still to read.
    fn parsed(&self) -> Option<&ParsedImport> {
        match self {
            Content::Parsed(p) => Some(p),
            Content::Streamed(f) => Some(&f.import),
            Content::RunFile(_) => None,
        }
    }
}

/// Bytes handed to the hashing thread at a time.
const HASH_CHUNK: usize = 1 << 20;

/// A reader that hashes every byte it hands out. The hashing runs on a thread of its own, a
/// megabyte at a time, so that on a large file it overlaps with the parsing instead of adding
/// to it; at most a few megabytes wait for it.
struct HashingReader<R> {
    inner: R,
    /// Bytes read and not yet handed to the hashing thread.
    chunk: Vec<u8>,
    to_hasher: Option<mpsc::SyncSender<Vec<u8>>>,
    hasher: Option<std::thread::JoinHandle<Sha256>>,
}

impl<R> HashingReader<R> {
    fn new(inner: R) -> Result<HashingReader<R>, AppError> {
        let (to_hasher, chunks) = mpsc::sync_channel::<Vec<u8>>(4);
        let hasher = std::thread::Builder::new()
            .name("kvgate-import-sha256".into())
            .spawn(move || {
                let mut hasher = Sha256::new();
                for chunk in chunks {
                    hasher.update(&chunk);
                }
                hasher
            })
            .map_err(|e| {
                AppError::new(ErrorCode::Internal, format!("cannot start hashing: {e}"))
            })?;
        Ok(HashingReader {
            inner,
            chunk: Vec::with_capacity(2 * HASH_CHUNK),
            to_hasher: Some(to_hasher),
            hasher: Some(hasher),
        })
    }

    /// The lowercase hex SHA-256 of every byte read.
    fn finish(mut self) -> Result<String, AppError> {
        if let Some(to_hasher) = self.to_hasher.take() {
            let _ = to_hasher.send(std::mem::take(&mut self.chunk));
        }
        let hasher = self
            .hasher
            .take()
            .and_then(|h| h.join().ok())
            .ok_or_else(|| AppError::new(ErrorCode::Internal, "hashing the file failed"))?;
        Ok(hex(&hasher.finalize()))
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.chunk.extend_from_slice(&buf[..n]);
        if self.chunk.len() >= HASH_CHUNK {
            let full = std::mem::replace(&mut self.chunk, Vec::with_capacity(2 * HASH_CHUNK));
            if let Some(to_hasher) = &self.to_hasher {
                // The thread only ends once the sender is dropped.
                let _ = to_hasher.send(full);
            }
        }
        Ok(n)
    }
}

fn invalid(message: impl Into<String>) -> AppError {
    AppError::new(ErrorCode::InvalidInput, message)
}

fn import_error(err: ImportError) -> AppError {
    match err {
        ImportError::Cancelled => AppError::new(ErrorCode::Cancelled, err.to_string()),
        ImportError::Io { .. } => AppError::storage(err.to_string()),
        ImportError::Invalid(ref e) => {
            let problem = Problem {
                path: e.path.clone().unwrap_or_else(|| "$".to_owned()),
                field: e.field.clone(),
                expected: e.expected.clone(),
                found: e.found.clone(),
                code: ProblemCode::ImportFile,
            };
            invalid(err.to_string()).with_problems([problem])
        }
    }
}

/// AIPerf's per-request export records no load settings; its run summary, written beside it,
/// does: when that file is there, each run's point is read from it (a malformed one is an error
/// naming it, never skipped silently).
fn attach_aiperf_summary(export: &Path, parsed: &mut ParsedImport) -> Result<(), AppError> {
    let Some(summary) = export
        .parent()
        .map(|dir| dir.join(aiperf::SUMMARY_FILE))
        .filter(|p| p.is_file())
    else {
        return Ok(());
    };
    let name = summary.display().to_string();
    let bytes = std::fs::read(&summary).map_err(|e| invalid(format!("cannot read {name}: {e}")))?;
    let text = String::from_utf8_lossy(&bytes);
    let config =
        aiperf::summary_input_config(&import::Source::new(&name), &text).map_err(import_error)?;
    aiperf::attach_summary(parsed, aiperf::SUMMARY_FILE, &sha256_hex(&bytes), &config);
    Ok(())
}

/// lm-eval writes `results_<date>.json` beside each run's samples files: the harness version,
/// the task's version, group and generation settings come from it. Named explicitly
/// (`companion`), it must exist; found beside, it is read; absent, the import says so.
fn attach_lm_eval_results(
    samples: &Path,
    companion: Option<&str>,
    parsed: &mut ParsedImport,
) -> Result<(), AppError> {
    let beside = samples
        .file_name()
        .and_then(|n| import::lm_eval::results_file_name(&n.to_string_lossy()))
        .and_then(|name| samples.parent().map(|dir| dir.join(name)))
        .filter(|p| p.is_file());
    let results = match companion {
        Some(path) => Some(Path::new(path).to_path_buf()),
        None => beside,
    };
    let Some(results) = results else {
        parsed.warnings.push(ImportWarning::new(
            "$",
            "no results_<date>.json beside the samples file: the harness version, task version, group and generation settings are not recorded",
            0,
        ));
        return Ok(());
    };
    let name = results.display().to_string();
    let bytes = std::fs::read(&results).map_err(|e| invalid(format!("cannot read {name}: {e}")))?;
    let text = String::from_utf8(bytes.clone())
        .map_err(|_| invalid(format!("{name}: expected UTF-8 JSON, found other bytes")))?;
    import::lm_eval::attach_results(
        parsed,
        &import::Source::new(&name),
        &sha256_hex(&bytes),
        &text,
    )
    .map_err(import_error)
}

/// Reads (and hashes) one file. Blocking: called on a blocking thread.
fn read_file(input: ImportInput, progress: &ReadProgress) -> Result<ReadFile, AppError> {
    let path = Path::new(&input.path);
    let source_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| input.path.clone());
    let file = File::open(path).map_err(|e| invalid(format!("cannot open {}: {e}", input.path)))?;
    let meta = file
        .metadata()
        .map_err(|e| invalid(format!("cannot read {}: {e}", input.path)))?;
    if !meta.is_file() {
        return Err(invalid(format!(
            "{}: expected a file, found a folder or device",
            input.path
        )));
    }
    let modified_unix_ms = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64);
    let mut reader = HashingReader::new(progress.reader(file))?;
    let content = match input.format {
        ImportFormat::Csv | ImportFormat::Parquet => {
            // polars reads the file by path; hash it first, streaming.
            io::copy(&mut reader, &mut io::sink())
                .map_err(|e| import_error(import::Source::new(&source_name).io(e)))?;
            let mapping = input.mapping.clone().ok_or_else(|| {
                invalid(format!(
                    "{source_name}: a {} import needs a column mapping (dispatch=…, ttft=…, e2e=…, unit=s)",
                    input.format
                ))
            })?;
            let parsed =
                kvgate_tabular::read_tabular(input.format, path, &source_name, &mapping, progress)
                    .map_err(import_error)?;
            Content::Parsed(parsed)
        }
        ImportFormat::Jsonl => {
            // The whole first line (a run file's header names its selected items, so it can be
            // long), up to 1 MiB: enough to tell a run file's header from a request record.
            let mut head = Vec::new();
            while !head.contains(&b'\n') && head.len() < (1 << 20) {
                let n = (&mut reader)
                    .take(4096)
                    .read_to_end(&mut head)
                    .map_err(|e| import_error(import::Source::new(&source_name).io(e)))?;
                if n == 0 {
                    break;
                }
            }
            if jsonl::is_run_file(&head) {
                let mut rest = Vec::new();
                reader
                    .read_to_end(&mut rest)
                    .map_err(|e| import_error(import::Source::new(&source_name).io(e)))?;
                head.extend_from_slice(&rest);
                let text = String::from_utf8(head).map_err(|e| {
                    invalid(format!("{source_name}: expected UTF-8 text, found a byte that is not UTF-8 at offset {}", e.utf8_error().valid_up_to()))
                })?;
                Content::RunFile(text)
            } else {
                let chained = io::Cursor::new(head).chain(&mut reader);
                let parsed =
                    import::parse(input.format, &source_name, chained).map_err(import_error)?;
                Content::Parsed(parsed)
            }
        }
        ImportFormat::LmEvalSamples | ImportFormat::Inspect => {
            // The context-length stratum of a harness item without a configured length is its
            // prompt's token count by the pinned tokenizer.
            let tokenizer = kvgate_formats::tokenizer::PinnedTokenizer::from_bytes(
                crate::fixtures::PINNED_TOKENIZER_NAME,
                crate::fixtures::PINNED_TOKENIZER,
            )
            .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))?;
            let count =
                |text: &str| kvgate_core::fixtures::TokenCounter::count(&tokenizer, text).ok();
            let source = import::Source::new(&source_name);
            let buffered = io::BufReader::with_capacity(1 << 20, &mut reader);
            let parsed = if input.format == ImportFormat::Inspect {
                import::inspect::parse_counting(&source, buffered, &count)
            } else {
                import::lm_eval::parse(&source, buffered, &count)
            }
            .map_err(import_error)?;
            Content::Parsed(parsed)
        }
        ImportFormat::VllmBench => {
            // Laid out in one pass; the rows are read when they are stored, so memory does not
            // grow with the file.
            let source = import::Source::new(&source_name);
            let buffered = io::BufReader::with_capacity(1 << 20, &mut reader);
            match import::vllm_bench::stream::scan(&source, buffered).map_err(import_error)? {
                Some(file) => Content::Streamed(Box::new(file)),
                None => {
                    // Not a sequence of well-formed results: the whole-file parser names what
                    // is wrong (the scan read and hashed every byte).
                    let again = File::open(path)
                        .map_err(|e| invalid(format!("cannot open {}: {e}", input.path)))?;
                    let parsed = import::parse(
                        ImportFormat::VllmBench,
                        &source_name,
                        io::BufReader::with_capacity(1 << 20, again),
                    )
                    .map_err(import_error)?;
                    Content::Parsed(parsed)
                }
            }
        }
        format => {
            let parsed = import::parse(format, &source_name, &mut reader).map_err(import_error)?;
            Content::Parsed(parsed)
        }
    };
    let mut content = content;
    if let Content::Parsed(parsed) = &mut content {
        if input.format == ImportFormat::Aiperf {
            attach_aiperf_summary(path, parsed)?;
        }
        if input.format == ImportFormat::LmEvalSamples {
            attach_lm_eval_results(path, input.companion.as_deref(), parsed)?;
        }
        import::note_unknown_points(parsed, &source_name);
    }
    if let Content::Streamed(file) = &mut content {
        file.note_unknown_points();
    }
    // Whatever the parser did not need still belongs to the file's digest.
    io::copy(&mut reader, &mut io::sink())
        .map_err(|e| import_error(import::Source::new(&source_name).io(e)))?;
    let sha256 = reader.finish()?;
    Ok(ReadFile {
        bytes: progress.bytes_read(),
        input,
        source_name,
        sha256,
        modified_unix_ms,
        content,
    })
}

/// One imported scrape: its run-clock time, its normalized values (or why it has none) and the
/// `cache_config_info` facts it carries with their lines.
type ReadScrape = (f64, Result<Value, String>, Option<(ObservedEngine, String)>);

fn figures(run: &ParsedRun) -> Vec<ImportFigure> {
    // Prefer the headline figures: counts, rates, then latency percentiles.
    let rank = |a: &import::Aggregate| -> u8 {
        let n = a.name.as_str();
        let s = a.stat.as_str();
        if n.ends_with("count") || s == "count" || n == "completed" || n == "failed" {
            0
        } else if n.contains("rate") || n.contains("throughput") || n == "duration" {
            1
        } else if s == "median" || s == "p99" || s == "mean" {
            2
        } else {
            3
        }
    };
    let mut all: Vec<&import::Aggregate> = run.aggregates.iter().collect();
    all.sort_by_key(|a| rank(a));
    all.into_iter()
        .take(12)
        .map(|a| ImportFigure {
            name: a.name.clone(),
            stat: a.stat.clone(),
            value: a.value,
            unit: a.unit.clone(),
        })
        .collect()
}

fn run_preview(run: &ParsedRun) -> ImportRunPreview {
    // Counted as the store counts them: warm-up and cool-down rows are not measured.
    let unmeasured: std::collections::HashSet<u32> = run.unmeasured.iter().copied().collect();
    let measured = || {
        run.requests
            .iter()
            .enumerate()
            .filter(|(i, _)| !unmeasured.contains(&(*i as u32)))
            .map(|(_, r)| r)
    };
    let ok = measured().filter(|r| r.status == RequestStatus::Ok).count() as u64;
    let measured = measured().count() as u64;
    ImportRunPreview {
        label: run.label.clone(),
        granularity: run.granularity,
        requests: run.requests.len() as u64,
        ok,
        failed: measured - ok,
        aggregates: run.aggregates.len() as u64,
        scrapes: run.scrapes.len() as u64,
        evidence: run.evidence.len() as u64,
        elapsed_ms: run.elapsed_ms,
        figures: figures(run),
    }
}

/// The binding of a file to the cell: `manifest_sha256` / `cell` metadata must name this cell's
/// frozen manifest.
fn check_binding(read: &ReadFile, cell: &str, digest: &str) -> Result<(), AppError> {
    let Some(parsed) = read.content.parsed() else {
        return Ok(());
    };
    for (i, run) in parsed.runs.iter().enumerate() {
        let at = if parsed.runs.len() > 1 {
            format!("result {}: ", i + 1)
        } else {
            String::new()
        };
        if let Some(found) = run.metadata.get("manifest_sha256") {
            if found.as_str() != Some(digest) {
                return Err(invalid(format!(
                    "{}, {at}$.manifest_sha256: expected the frozen manifest of cell {cell} ({digest}), found {found}",
                    read.source_name
                )));
            }
        }
        if let Some(found) = run.metadata.get("cell") {
            if found.as_str() != Some(cell) {
                return Err(invalid(format!(
                    "{}, {at}$.cell: expected {cell} (the cell chosen for this import), found {found}",
                    read.source_name
                )));
            }
        }
    }
    Ok(())
}

/// The binding of a whole `kvgate-run` file: its header must name the chosen cell and that
/// cell's frozen manifest.
fn check_run_file_binding(
    read: &ReadFile,
    h: &kvgate_formats::run_file::RunFileHeader,
    digest: Option<&str>,
) -> Result<(), AppError> {
    if h.cell != read.input.cell {
        return Err(invalid(format!(
            "{} line 1, $.cell: expected {} (the cell chosen for this import), found {}",
            read.source_name, read.input.cell, h.cell
        )));
    }
    if digest != Some(h.manifest_sha256.as_str()) {
        return Err(invalid(format!(
            "{} line 1, $.manifest_sha256: expected the frozen manifest of cell {} ({}), found {}",
            read.source_name,
            h.cell,
            digest.unwrap_or("a draft, not frozen"),
            h.manifest_sha256
        )));
    }
    Ok(())
}

/// Evidence rows for a run: its startup logs and scrapes as read, `cache_config_info`, the metric
/// summary, and the compatibility check against the manifest when there is engine evidence.
/// Evidence of another kind is kept verbatim, as found.
fn evidence_rows(manifest: &Manifest, run: &ParsedRun, scrapes: &[ReadScrape]) -> Vec<RunEvidence> {
    let mut set = EvidenceSet::default();
    let mut other = Vec::new();
    for e in &run.evidence {
        match EvidenceKind::parse(&e.kind) {
            // Read once by the parser; a log it did not read is read here.
            Some(EvidenceKind::StartupLog) => set.startup_log(
                e.source_name.clone(),
                e.text.clone(),
                &e.startup
                    .clone()
                    .unwrap_or_else(|| parse_startup_log(&e.text)),
            ),
            _ => other.push(RunEvidence {
                kind: e.kind.clone(),
                source_name: e.source_name.clone(),
                sha256: sha256_hex(e.text.as_bytes()),
                text: e.text.clone(),
                parsed_json: None,
            }),
        }
    }
    if let Some((at_ms, _, Some((from_metrics, excerpt)))) =
        scrapes.iter().find(|(_, _, c)| c.is_some())
    {
        set.cache_config(
            format!("scrape at {at_ms} ms"),
            from_metrics.clone(),
            excerpt.clone(),
        );
    }
    if !scrapes.is_empty() {
        let points: Vec<MetricPoint> = scrapes
            .iter()
            .filter_map(|(at_ms, values, _)| {
                let values = values.as_ref().ok()?.get("values")?.clone();
                Some(MetricPoint {
                    at_ms: *at_ms,
                    values: serde_json::from_value(values).ok()?,
                })
            })
            .collect();
        set.metrics(
            format!("{} imported scrape(s)", scrapes.len()),
            &summarize(&points),
        );
    }
    let (mut rows, _) = set.check(manifest, false);
    rows.extend(other);
    rows
}

impl App {
    /// Reads a file and says what it holds, storing nothing. The reading is kept under the
    /// returned token for [`App::commit_import`].
    pub async fn preview_import(
        &self,
        input: ImportInput,
        on_event: impl Fn(ImportEvent) + Send + Sync + 'static,
    ) -> Result<ImportPreview, AppError> {
        let stored = self.manifest(input.study_id, &input.cell).await?;
        let digest = stored.digest.clone().ok_or_else(|| {
            AppError::new(
                ErrorCode::Conflict,
                format!(
                    "cell {} is a draft: freeze its manifest before importing runs of it",
                    input.cell
                ),
            )
        })?;
        let on_event: Arc<dyn Fn(ImportEvent) + Send + Sync> = Arc::new(on_event);
        let mut read = self.read_with_progress(input, on_event.clone()).await?;
        check_binding(&read, &read.input.cell, &digest)?;
        // Rows read while they are stored are read once now, keeping none: a row the commit
        // would refuse is refused here, and the preview counts them.
        let mut checked = None;
        if let Content::Streamed(_) = &read.content {
            let Content::Streamed(file) =
                std::mem::replace(&mut read.content, Content::RunFile(String::new()))
            else {
                unreachable!("matched above")
            };
            let checked_rows = Arc::new(AtomicU64::new(0));
            let (job, bytes, total) = (read.input.job.clone(), read.bytes, file.request_count());
            let checking = move |rows: u64| ImportEvent {
                job: job.clone(),
                phase: ImportPhase::Checking,
                bytes_read: bytes,
                total_bytes: bytes,
                rows_stored: rows,
                total_rows: total,
            };
            let ticker = {
                let checked_rows = checked_rows.clone();
                let on_event = on_event.clone();
                let checking = checking.clone();
                tokio::spawn(async move {
                    loop {
                        on_event(checking(checked_rows.load(Ordering::Relaxed)));
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                })
            };
            let result = streamed::check_rows(file, &read.input.path, checked_rows.clone()).await;
            ticker.abort();
            // Stopped before the last count is told, so nothing older follows it.
            let _ = ticker.await;
            let (file, reads) = result?;
            on_event(checking(checked_rows.load(Ordering::Relaxed)));
            read.content = Content::Streamed(file);
            checked = Some(reads);
        }
        let already = self
            .store
            .find_import(read.input.study_id, &read.sha256)
            .await?
            .map(|r| summary_of(r, Vec::new()));
        // Harness rows are judged now, as the commit would judge them: a file it would refuse
        // is refused here, with the same message.
        if let Content::Parsed(p) = &read.content {
            if p.runs.iter().any(|r| !r.harness.is_empty()) {
                let policy = self.locked_policy_of(read.input.study_id).await?;
                let answers = self.exported_answers(read.input.study_id, &p.runs).await?;
                let mut ignored = Vec::new();
                for run in &p.runs {
                    harness_verdicts(&read, run, policy.as_ref(), &answers, &mut ignored)?;
                }
            }
        }
        let (format, parser_version, tool, runs, warnings) = match &read.content {
            Content::Streamed(file) => {
                let reads = checked.unwrap_or_default();
                let p = &file.import;
                (
                    p.format.as_str().to_owned(),
                    p.format.parser_version(),
                    p.tool.clone(),
                    reads
                        .iter()
                        .enumerate()
                        .map(|(k, r)| streamed::run_preview(file, k, r))
                        .collect(),
                    file.warnings(&reads)
                        .into_iter()
                        .map(warning_info)
                        .collect(),
                )
            }
            Content::Parsed(p) => (
                p.format.as_str().to_owned(),
                p.format.parser_version(),
                p.tool.clone(),
                p.runs.iter().map(run_preview).collect(),
                p.warnings.iter().cloned().map(warning_info).collect(),
            ),
            Content::RunFile(text) => {
                let file =
                    parse_run_file(&read.source_name, text).map_err(|e| invalid(e.to_string()))?;
                // Refused now, as the commit would refuse it.
                check_run_file_binding(&read, &file.header, Some(&digest))?;
                let ok = file
                    .requests
                    .iter()
                    .filter(|r| !r.warmup && r.record.status == RequestStatus::Ok)
                    .count() as u64;
                let measured = file.requests.iter().filter(|r| !r.warmup).count() as u64;
                (
                    "jsonl".to_owned(),
                    ImportFormat::Jsonl.parser_version(),
                    Some("kvgate".to_owned()),
                    vec![ImportRunPreview {
                        label: file.header.label.clone(),
                        granularity: Granularity::PerRequest,
                        requests: file.requests.len() as u64,
                        ok,
                        failed: measured - ok,
                        aggregates: 0,
                        scrapes: file.scrapes.len() as u64,
                        evidence: file.evidence.len() as u64,
                        elapsed_ms: file.header.elapsed_ms,
                        figures: Vec::new(),
                    }],
                    Vec::new(),
                )
            }
        };
        let token = format!(
            "import-{}",
            self.imports.next.fetch_add(1, Ordering::Relaxed) + 1
        );
        let preview = ImportPreview {
            token: token.clone(),
            study_id: read.input.study_id,
            cell: read.input.cell.clone(),
            format,
            parser_version,
            tool,
            source_name: read.source_name.clone(),
            sha256: read.sha256.clone(),
            bytes: read.bytes,
            runs,
            warnings,
            already_imported: already,
        };
        let mut pending = self.imports.pending.lock().expect("pending imports");
        // One reading waits at a time per workbench: a new preview replaces older ones.
        pending.clear();
        pending.insert(token, read);
        Ok(preview)
    }

    /// Stores a previewed reading. The token is used once.
    pub async fn commit_import(
        &self,
        token: &str,
        on_event: impl Fn(ImportEvent) + Send + Sync + 'static,
    ) -> Result<ImportSummary, AppError> {
        let read = self
            .imports
            .pending
            .lock()
            .expect("pending imports")
            .remove(token)
            .ok_or_else(|| {
                AppError::not_found(format!(
                    "no previewed import {token}: preview the file again"
                ))
            })?;
        let progress = ReadProgress::new();
        if let Some(job) = &read.input.job {
            self.imports
                .jobs
                .lock()
                .expect("import jobs")
                .insert(job.clone(), progress.clone());
        }
        let job = read.input.job.clone();
        let result = self.store_read(read, &progress, Arc::new(on_event)).await;
        if let Some(job) = &job {
            self.imports.jobs.lock().expect("import jobs").remove(job);
        }
        result
    }

    /// Reads and stores a file in one go (the CLI's `kvgate import`).
    pub async fn import_file(
        &self,
        input: ImportInput,
        on_event: impl Fn(ImportEvent) + Send + Sync + 'static,
    ) -> Result<ImportSummary, AppError> {
        let stored = self.manifest(input.study_id, &input.cell).await?;
        let digest = stored.digest.clone().ok_or_else(|| {
            AppError::new(
                ErrorCode::Conflict,
                format!(
                    "cell {} is a draft: freeze its manifest before importing runs of it",
                    input.cell
                ),
            )
        })?;
        let on_event = Arc::new(on_event);
        let read = self.read_with_progress(input, on_event.clone()).await?;
        check_binding(&read, &read.input.cell, &digest)?;
        let progress = ReadProgress::new();
        if let Some(job) = &read.input.job {
            self.imports
                .jobs
                .lock()
                .expect("import jobs")
                .insert(job.clone(), progress.clone());
        }
        let job = read.input.job.clone();
        let result = self.store_read(read, &progress, on_event).await;
        if let Some(job) = &job {
            self.imports.jobs.lock().expect("import jobs").remove(job);
        }
        result
    }

    /// Asks a running import to stop; it stores nothing.
    pub fn cancel_import(&self, job: &str) -> Result<(), AppError> {
        match self.imports.jobs.lock().expect("import jobs").get(job) {
            Some(progress) => {
                progress.cancel();
                Ok(())
            }
            None => Err(AppError::not_found(format!("no import {job} is running"))),
        }
    }

    /// Every import of a study, oldest first.
    pub async fn list_imports(&self, study_id: i64) -> Result<Vec<ImportSummary>, AppError> {
        let imports = self.store.list_imports(study_id).await?;
        let runs = self.store.list_runs(study_id).await?;
        Ok(imports
            .into_iter()
            .map(|i| {
                let ids = runs
                    .iter()
                    .filter(|r| r.import_id == Some(i.id))
                    .map(|r| r.id)
                    .collect();
                summary_of(i, ids)
            })
            .collect())
    }

    async fn read_with_progress(
        &self,
        input: ImportInput,
        on_event: Arc<dyn Fn(ImportEvent) + Send + Sync>,
    ) -> Result<ReadFile, AppError> {
        let total_bytes = std::fs::metadata(&input.path).map(|m| m.len()).unwrap_or(0);
        let progress = ReadProgress::new();
        let job = input.job.clone();
        if let Some(job) = &job {
            self.imports
                .jobs
                .lock()
                .expect("import jobs")
                .insert(job.clone(), progress.clone());
        }
        let reading = {
            let progress = progress.clone();
            tokio::task::spawn_blocking(move || read_file(input, &progress))
        };
        let ticker = {
            let progress = progress.clone();
            let on_event = on_event.clone();
            let job = job.clone();
            tokio::spawn(async move {
                loop {
                    on_event(ImportEvent {
                        job: job.clone(),
                        phase: ImportPhase::Reading,
                        bytes_read: progress.bytes_read(),
                        total_bytes,
                        rows_stored: 0,
                        total_rows: 0,
                    });
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            })
        };
        let read = reading.await;
        ticker.abort();
        if let Some(job) = &job {
            self.imports.jobs.lock().expect("import jobs").remove(job);
        }
        let read = read.map_err(|e| {
            AppError::new(ErrorCode::Internal, format!("reading the file failed: {e}"))
        })??;
        on_event(ImportEvent {
            job,
            phase: ImportPhase::Reading,
            bytes_read: read.bytes,
            total_bytes: read.bytes,
            rows_stored: 0,
            total_rows: 0,
        });
        Ok(read)
    }

    async fn store_read(
        &self,
        mut read: ReadFile,
        progress: &ReadProgress,
        on_event: Arc<dyn Fn(ImportEvent) + Send + Sync>,
    ) -> Result<ImportSummary, AppError> {
        let input = &read.input;
        let stored = self.manifest(input.study_id, &input.cell).await?;
        let manifest: Manifest = serde_json::from_str(&stored.text).map_err(|e| {
            AppError::new(
                ErrorCode::Internal,
                format!("stored manifest of cell {}: {e}", input.cell),
            )
        })?;
        if let Some(existing) = self.store.find_import(input.study_id, &read.sha256).await? {
            return Err(AppError::new(
                ErrorCode::Conflict,
                format!(
                    "{}: this file (sha256 {}) is already in the study as import {} into cell {}, imported {}; nothing was stored",
                    read.source_name, read.sha256, existing.id, existing.cell, existing.imported_at
                ),
            ));
        }
        let job = input.job.clone();
        let keep_going = {
            let progress = progress.clone();
            let on_event = on_event.clone();
            let job = job.clone();
            let total = match &read.content {
                Content::Parsed(p) => p.request_count(),
                Content::Streamed(f) => f.request_count(),
                Content::RunFile(_) => 0,
            };
            let bytes = read.bytes;
            move |rows: u64| {
                on_event(ImportEvent {
                    job: job.clone(),
                    phase: ImportPhase::Storing,
                    bytes_read: bytes,
                    total_bytes: bytes,
                    rows_stored: rows,
                    total_rows: total,
                });
                !progress.is_cancelled()
            }
        };
        let content = std::mem::replace(&mut read.content, Content::RunFile(String::new()));
        let (record, runs) = match content {
            Content::Parsed(mut parsed) => {
                let new = NewImport {
                    study_id: input.study_id,
                    manifest_id: stored.id,
                    format: parsed.format.as_str().to_owned(),
                    parser_version: parsed.format.parser_version(),
                    tool: parsed.tool.clone(),
                    source_name: read.source_name.clone(),
                    source_sha256: read.sha256.clone(),
                    source_bytes: read.bytes as i64,
                    options_json: input
                        .mapping
                        .as_ref()
                        .and_then(|m| serde_json::to_string(m).ok()),
                    warnings_json: "[]".into(),
                };
                let mut warnings = parsed.warnings.clone();
                let policy = self.locked_policy_of(input.study_id).await?;
                let answers = self.exported_answers(input.study_id, &parsed.runs).await?;
                let runs = self.imported_runs(
                    &read,
                    &mut parsed,
                    stored.id,
                    &manifest,
                    Judging {
                        policy: policy.as_ref(),
                        answers: &answers,
                    },
                    &mut warnings,
                )?;
                let new = NewImport {
                    warnings_json: serde_json::to_string(&warnings).unwrap_or_else(|_| "[]".into()),
                    ..new
                };
                self.store.insert_import(&new, &runs, &keep_going).await?
            }
            Content::Streamed(mut file) => {
                let new = NewImport {
                    study_id: input.study_id,
                    manifest_id: stored.id,
                    format: file.import.format.as_str().to_owned(),
                    parser_version: file.import.format.parser_version(),
                    tool: file.import.tool.clone(),
                    source_name: read.source_name.clone(),
                    source_sha256: read.sha256.clone(),
                    source_bytes: read.bytes as i64,
                    options_json: None,
                    // Known once the last row was read.
                    warnings_json: "[]".into(),
                };
                let mut added = Vec::new();
                let runs = self.imported_runs(
                    &read,
                    &mut file.import,
                    stored.id,
                    &manifest,
                    Judging {
                        policy: None,
                        answers: &ApprovedCorpora::default(),
                    },
                    &mut added,
                )?;
                streamed::store(
                    self,
                    new,
                    *file,
                    runs,
                    &input.path,
                    &read.sha256,
                    added,
                    &keep_going,
                )
                .await?
            }
            Content::RunFile(text) => {
                let (new, runs) = self.run_file_import(&read, &text, stored.id, &stored.digest)?;
                self.store.insert_import(&new, &runs, &keep_going).await?
            }
        };
        on_event(ImportEvent {
            job,
            phase: ImportPhase::Done,
            bytes_read: read.bytes,
            total_bytes: read.bytes,
            rows_stored: record.requests as u64,
            total_rows: record.requests as u64,
        });
        Ok(summary_of(record, runs.iter().map(|r| r.id).collect()))
    }

    /// The study's policy in force, if one is locked: the harness imports read its `metrics`.
    async fn locked_policy_of(
        &self,
        study_id: i64,
    ) -> Result<Option<kvgate_core::policy::Policy>, AppError> {
        Ok(match self.store.policy_versions(study_id).await?.pop() {
            Some(record) => Some(serde_json::from_str(&record.policy_json).map_err(|e| {
                AppError::storage(format!(
                    "policy version {} of study {study_id} cannot be read back: {e}",
                    record.version
                ))
            })?),
            None => None,
        })
    }

    /// The runs of a parsed file as the store takes them.
    fn imported_runs(
        &self,
        read: &ReadFile,
        parsed: &mut ParsedImport,
        manifest_id: i64,
        manifest: &Manifest,
        judging: Judging<'_>,
        warnings: &mut Vec<ImportWarning>,
    ) -> Result<Vec<ImportedRun<ImportedRequest>>, AppError> {
        let profile = EngineProfile::for_engine(&manifest.engine);
        let mut runs = Vec::with_capacity(parsed.runs.len());
        let count = parsed.runs.len();
        for (i, run) in parsed.runs.iter_mut().enumerate() {
            let anchor = match run
                .wall_anchor_unix_ms
                .or_else(|| run.scrapes.first().and_then(|s| s.unix_ms))
            {
                Some(anchor) => anchor,
                None => {
                    let anchor = read.modified_unix_ms.unwrap_or(0);
                    warnings.push(ImportWarning::new(
                        if count > 1 { format!("run {}", i + 1) } else { "$".into() },
                        "the file records no wall-clock time: the run is anchored at the file's modification time",
                        0,
                    ));
                    anchor
                }
            };
            let started_at = rfc3339_from_unix_ms(anchor).ok_or_else(|| {
                invalid(format!(
                    "{}: wall-clock anchor {anchor} ms is outside years 0–9999",
                    read.source_name
                ))
            })?;
            let finished_at = rfc3339_from_unix_ms(anchor + run.elapsed_ms.unwrap_or(0.0) as i64)
                .unwrap_or_else(|| started_at.clone());
            let judged = harness_verdicts(read, run, judging.policy, judging.answers, warnings)?;
            let mut config = json!({
                "import": {
                    "format": parsed.format.as_str(),
                    "parser_version": parsed.format.parser_version(),
                    "tool": parsed.tool,
                    "source_name": read.source_name,
                    "source_sha256": read.sha256,
                    "run": i,
                    "granularity": run.granularity.as_str(),
                    "clocked": run.clocked,
                    "unmeasured_rows": run.unmeasured.len(),
                },
                "source_config": run.config,
                "metadata": run.metadata,
            });
            if let (Some(j), Value::Object(c)) = (&judged, &mut config) {
                c.insert("harness_metrics".into(), json!(j.decided));
            }
            let config_json = canonical_json(&config);
            let scrapes: Vec<ReadScrape> = run
                .scrapes
                .iter()
                .map(|s| {
                    let parsed = parse_exposition(&s.text);
                    let cache = parsed.as_ref().ok().and_then(|exp| {
                        let observed = observed_from_cache_config_info(exp)?;
                        let lines: Vec<&str> = s.text.lines().filter(|l| l.contains("cache_config_info")).collect();
                        Some((observed, lines.join("\n")))
                    });
                    let values = match (parsed, profile) {
                        (Err(e), _) => Err(e.to_string()),
                        (Ok(_), None) => Err("no metric profile for this engine".to_owned()),
                        (Ok(exp), Some(profile)) => Ok(json!({
                            "values": normalize(profile, exp.samples.iter().map(|s| (s.name.as_str(), &s.labels, s.value)))
                        })),
                    };
                    (s.at_ms, values, cache)
                })
                .collect();
            let evidence = evidence_rows(manifest, run, &scrapes);
            let scrape_rows = scrapes
                .iter()
                .map(|(at_ms, values, _)| MetricScrapeRow {
                    at_ms: *at_ms,
                    values_json: match values {
                        Ok(v) => v.to_string(),
                        Err(e) => json!({ "error": e }).to_string(),
                    },
                })
                .collect();
            let note = match run.granularity {
                Granularity::Aggregate => {
                    Some("aggregates only: the source publishes no per-request rows".to_owned())
                }
                Granularity::Evidence => Some("evidence only: no requests".to_owned()),
                Granularity::PerRequest if !run.clocked => Some(
                    "unclocked: the source gives no send times; rows feed latency percentiles and pairs, never goodput"
                        .to_owned(),
                ),
                Granularity::PerRequest => None,
            };
            let mut unmeasured = vec![false; run.requests.len()];
            for &i in &run.unmeasured {
                if let Some(flag) = unmeasured.get_mut(i as usize) {
                    *flag = true;
                }
            }
            let kind = if judged.is_some() {
                RunKind::Quality
            } else {
                RunKind::Load
            };
            let verdicts: Vec<Option<Option<kvgate_core::validator::Verdict>>> = match &judged {
                Some(j) => j.verdicts.clone(),
                None => vec![Some(None); run.requests.len()],
            };
            runs.push(ImportedRun {
                run: NewRun {
                    study_id: read.input.study_id,
                    manifest_id,
                    kind,
                    label: run.label.clone(),
                    provenance: RunProvenance::Imported,
                    config_sha256: sha256_hex(config_json.as_bytes()),
                    config_json,
                    wall_anchor_unix_ms: anchor,
                    started_at,
                    owner_pid: None,
                },
                granularity: run.granularity,
                state: RunState::Completed,
                finished_at,
                elapsed_ms: run.elapsed_ms,
                planned: run.planned,
                note,
                // Moved, not copied: a million-request file is held once.
                // A harness row of another filter than the deciding one is not stored.
                requests: {
                    // A harness run has one reference per request; other runs none.
                    let mut references = run.harness.iter().map(|h| h.reference.clone());
                    std::mem::take(&mut run.requests)
                        .into_iter()
                        .zip(unmeasured)
                        .zip(verdicts)
                        .filter_map(|((record, warmup), verdict)| {
                            let reference = references.next();
                            verdict.map(|verdict| ImportedRequest {
                                record,
                                warmup,
                                verdict,
                                reference,
                            })
                        })
                        .collect()
                },
                evidence,
                scrapes: scrape_rows,
                aggregates: run
                    .aggregates
                    .iter()
                    .map(|a| AggregateRow {
                        name: a.name.clone(),
                        stat: a.stat.clone(),
                        value: a.value,
                        unit: a.unit.clone(),
                    })
                    .collect(),
            });
        }
        Ok(runs)
    }

    /// A whole `kvgate-run` file as one imported run, digest-bound to the cell's manifest.
    fn run_file_import(
        &self,
        read: &ReadFile,
        text: &str,
        manifest_id: i64,
        digest: &Option<String>,
    ) -> Result<(NewImport, Vec<ImportedRun<StoredRequest>>), AppError> {
        let file = parse_run_file(&read.source_name, text).map_err(|e| invalid(e.to_string()))?;
        let h = &file.header;
        check_run_file_binding(read, h, digest.as_deref())?;
        let kind = RunKind::parse(&h.kind).ok_or_else(|| {
            invalid(format!(
                "{} line 1, $.kind: expected quality or load, found {:?}",
                read.source_name, h.kind
            ))
        })?;
        let state = RunState::parse(&h.state).filter(|s| *s != RunState::Running).ok_or_else(|| {
            invalid(format!(
                "{} line 1, $.state: expected completed, cancelled, interrupted or failed, found {:?}",
                read.source_name, h.state
            ))
        })?;
        let requests = file
            .requests
            .iter()
            .map(|r| StoredRequest {
                record: r.record.clone(),
                repeat: r.repeat,
                warmup: r.warmup,
                verdict: r.verdict.clone(),
            })
            .collect();
        let run = ImportedRun {
            run: NewRun {
                study_id: read.input.study_id,
                manifest_id,
                kind,
                label: h.label.clone(),
                provenance: RunProvenance::Imported,
                config_json: canonical_json(&h.config),
                config_sha256: h.config_sha256.clone(),
                wall_anchor_unix_ms: h.wall_anchor_unix_ms,
                started_at: h.started_at.clone(),
                owner_pid: None,
            },
            granularity: Granularity::PerRequest,
            state,
            finished_at: h
                .finished_at
                .clone()
                .unwrap_or_else(kvgate_store::now_rfc3339),
            elapsed_ms: h.elapsed_ms,
            planned: h.planned,
            note: h.note.clone(),
            requests,
            evidence: file
                .evidence
                .iter()
                .map(|e| RunEvidence {
                    kind: e.kind.clone(),
                    source_name: e.source_name.clone(),
                    sha256: e.sha256.clone(),
                    text: e.text.clone(),
                    parsed_json: e.parsed_json.clone(),
                })
                .collect(),
            scrapes: file
                .scrapes
                .iter()
                .map(|s| MetricScrapeRow {
                    at_ms: s.at_ms,
                    values_json: s.values.to_string(),
                })
                .collect(),
            aggregates: Vec::new(),
        };
        let new = NewImport {
            study_id: read.input.study_id,
            manifest_id,
            format: "jsonl".into(),
            parser_version: ImportFormat::Jsonl.parser_version(),
            tool: Some("kvgate".into()),
            source_name: read.source_name.clone(),
            source_sha256: read.sha256.clone(),
            source_bytes: read.bytes as i64,
            options_json: None,
            warnings_json: "[]".into(),
        };
        Ok((new, vec![run]))
    }
}

/// What a harness run's rows are judged by: the locked policy (its `metrics`) and the approved
/// answers and chats of the corpora the exported items came from, as far as they are found.
#[derive(Clone, Copy)]
pub(crate) struct Judging<'a> {
    policy: Option<&'a kvgate_core::policy::Policy>,
    answers: &'a ApprovedCorpora,
}

impl App {
    /// The corpora a parsed harness file's exported items may have come from: those shipped
    /// inside the binary and the folders the study's runs name.
    async fn exported_answers(
        &self,
        study_id: i64,
        runs: &[ParsedRun],
    ) -> Result<ApprovedCorpora, AppError> {
        let rows = || {
            runs.iter()
                .flat_map(|r| &r.harness)
                .filter(|h| h.expected.is_some())
        };
        if rows().next().is_none() {
            return Ok(ApprovedCorpora::default());
        }
        // The corpus folders the study's runs name, by digest.
        let mut refs: Vec<kvgate_store::study_input::CorpusRef> = Vec::new();
        for run in self.store.list_runs(study_id).await? {
            let config: Value = serde_json::from_str(&run.config_json).unwrap_or(Value::Null);
            if let Some(sha) = config["corpus"]["items_sha256"].as_str() {
                if !refs.iter().any(|r| r.items_sha256 == sha) {
                    refs.push(kvgate_store::study_input::CorpusRef {
                        dir: config["corpus"]["dir"].as_str().map(str::to_owned),
                        items_sha256: sha.to_owned(),
                        seed: config["seed"].as_u64(),
                    });
                }
            }
        }
        let mut wanted: Vec<String> = rows().filter_map(|h| h.corpus_sha256.clone()).collect();
        if rows().any(|h| h.corpus_sha256.is_none()) {
            wanted.extend(refs.iter().map(|r| r.items_sha256.clone()));
            wanted.extend(crate::fixtures::embedded_corpus_digests());
        }
        wanted.sort();
        wanted.dedup();
        let mut out = ApprovedCorpora::default();
        for digest in wanted {
            let corpus = refs
                .iter()
                .find(|r| r.items_sha256 == digest)
                .cloned()
                .unwrap_or(kvgate_store::study_input::CorpusRef {
                    dir: None,
                    items_sha256: digest.clone(),
                    seed: None,
                });
            if let Ok(items) = crate::fixtures::corpus_for_digests(&corpus) {
                // Only KV Gate's generated items are exported to a harness.
                let items = items.into_iter().filter_map(|i| match i {
                    kvgate_core::fixtures::CorpusItem::Generated(g) => Some(g),
                    kvgate_core::fixtures::CorpusItem::Team(_) => None,
                });
                out.add(
                    digest,
                    items.map(|i| {
                        // Written as the harness's own chat is read, by the same code.
                        let messages = serde_json::to_value(&i.messages).unwrap_or_default();
                        let prompt =
                            kvgate_formats::import::HarnessReference::from_values(&messages, None)
                                .prompt;
                        let approved = ApprovedItem {
                            expected: i.expected,
                            prompt,
                        };
                        (i.id, approved)
                    }),
                );
            }
        }
        Ok(out)
    }
}

/// The verdicts of a harness run's rows and the metric that decided each task.
struct HarnessJudgement {
    decided: Vec<kvgate_core::harness::DecisiveMetric>,
    /// Per row: `None` when the row is not stored (another filter), else its verdict.
    verdicts: Vec<Option<Option<kvgate_core::validator::Verdict>>>,
}

/// Judges the rows of an evaluation harness's run: an item KV Gate exported by KV Gate's
/// validator against its approved answer; any other by the metric deciding its task (the locked
/// policy's `metrics`, else the task's first scoring metric; `kvgate_core::harness`). `None` for
/// a run of another format.
fn harness_verdicts(
    read: &ReadFile,
    run: &ParsedRun,
    policy: Option<&kvgate_core::policy::Policy>,
    answers: &ApprovedCorpora,
    warnings: &mut Vec<ImportWarning>,
) -> Result<Option<HarnessJudgement>, AppError> {
    use kvgate_core::validator::{validate, ResponseOutcome, ValidatorPolicy};
    if run.harness.is_empty() {
        return Ok(None);
    }
    let rows: Vec<kvgate_core::harness::ScoredRow> =
        run.harness.iter().map(|h| h.scored.clone()).collect();
    let exported = run.harness.iter().all(|h| h.expected.is_some());
    let decided = if exported {
        Vec::new()
    } else {
        kvgate_core::harness::decisive_metrics(&rows, |task| {
            policy.and_then(|p| p.metrics.as_ref()?.get(task).cloned())
        })
        .map_err(|e| invalid(format!("{}: {e}", read.source_name)))?
    };
    let mut verdicts = Vec::with_capacity(rows.len());
    let mut other_filter = 0u64;
    let mut unchecked = 0u64;
    for (h, record) in run.harness.iter().zip(&run.requests) {
        if let (Some(expected), Some(item)) = (&h.expected, &record.item_id) {
            match answers.check(
                h.corpus_sha256.as_deref(),
                item,
                expected,
                &h.reference.prompt,
            ) {
                ExportCheck::Matches => {}
                ExportCheck::Unchecked => unchecked += 1,
                ExportCheck::Differs(what) => {
                    return Err(invalid(format!("{}, {}, {what}", read.source_name, h.at)));
                }
            }
        }
        let verdict = match &h.expected {
            Some(expected) => {
                // One row per document for an exported task: the first filter's.
                let first_filter = &run.harness[0].scored.filter;
                if &h.scored.filter != first_filter {
                    None
                } else {
                    let text = h
                        .filtered
                        .clone()
                        .unwrap_or_else(|| record.output_text.clone());
                    let outcome = if text.is_empty() {
                        ResponseOutcome::Empty
                    } else {
                        ResponseOutcome::Completed { text }
                    };
                    Some(Some(validate(
                        expected,
                        &outcome,
                        ValidatorPolicy::default(),
                    )))
                }
            }
            None => kvgate_core::harness::row_verdict(&h.scored, &decided).map_err(|e| {
                let metric = decided
                    .iter()
                    .find(|d| d.task == h.scored.task)
                    .map_or("", |d| d.metric.as_str());
                invalid(format!(
                    "{}, {}, field `{metric}`: {e} (the metric deciding task {})",
                    read.source_name, h.at, h.scored.task
                ))
            })?,
        };
        if verdict.is_none() {
            other_filter += 1;
        }
        verdicts.push(verdict);
    }
    if unchecked > 0 {
        warnings.push(ImportWarning::new(
            "$.doc.expected_answer",
            "approved answers taken from the file: the corpus they were exported from was not found (neither shipped with KV Gate nor named by a run of this study), so they could not be checked against it",
            unchecked,
        ));
    }
    if other_filter > 0 {
        warnings.push(ImportWarning::new(
            "$.filter",
            "rows of another filter than the one deciding their task are not stored: one row per document",
            other_filter,
        ));
    }
    Ok(Some(HarnessJudgement { decided, verdicts }))
}

/// How much of a file [`sniff_import_format`] reads.
const SNIFF_BYTES: u64 = 64 * 1024;

/// A guess of a file's format from its name and first 64 KiB, for preselecting the format on the
/// import screen; `None` when nothing matched. The user confirms the format before any preview.
pub fn sniff_import_format(path: &str) -> Result<Option<ImportFormat>, AppError> {
    let path_ref = Path::new(path);
    let file = File::open(path_ref).map_err(|e| invalid(format!("cannot open {path}: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| invalid(format!("cannot read {path}: {e}")))?;
    if !meta.is_file() {
        return Err(invalid(format!(
            "{path}: expected a file, found a folder or device"
        )));
    }
    let mut head = Vec::new();
    file.take(SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(|e| invalid(format!("cannot read {path}: {e}")))?;
    let name = path_ref
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(ImportFormat::sniff(&name, &head))
}
