//! Runs of a frozen manifest against a server, and everything they measured.
//!
//! A run is created `running`. When it ends, [`Store::finish_run`] writes its requests, evidence
//! and metric scrapes and then its final state in one transaction; from then on the database
//! refuses any change to the run or anything under it. A run left `running` by a process that
//! died is marked `interrupted` by [`Store::mark_interrupted_runs`].

use std::sync::LazyLock;

use kvgate_core::run::{RequestRecord, RequestStatus};
use kvgate_core::validator::Verdict;
use std::os::raw::c_int;

use libsqlite3_sys as ffi;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, Sqlite, Transaction};

use crate::measured::{prepare, sqlite_error, MeasuredRequest};
use crate::run_columns::RunColumns;
use crate::{now_rfc3339, Store, StoreError};

pub use kvgate_core::run::{Granularity, RunKind, RunProvenance, RunState};

/// A run about to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRun {
    pub study_id: i64,
    /// A frozen manifest of that study; a draft is refused.
    pub manifest_id: i64,
    pub kind: RunKind,
    /// For people, e.g. "quality · Q8 · 24 items × 1".
    pub label: String,
    pub provenance: RunProvenance,
    /// Canonical JSON of the run's configuration (endpoint without key, seed, arrivals, corpus
    /// digest, …).
    pub config_json: String,
    /// Lowercase hex SHA-256 of `config_json`.
    pub config_sha256: String,
    /// Unix milliseconds of the run clock's zero.
    pub wall_anchor_unix_ms: i64,
    /// RFC 3339.
    pub started_at: String,
    /// The process executing the run, so a later process can tell a run in progress elsewhere
    /// from one whose process died; `None` for imported runs.
    pub owner_pid: Option<i64>,
}

/// A stored run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub id: i64,
    pub study_id: i64,
    pub manifest_id: i64,
    /// The cell of the manifest it ran.
    pub cell: String,
    pub kind: RunKind,
    pub state: RunState,
    pub label: String,
    pub provenance: RunProvenance,
    pub config_json: String,
    pub config_sha256: String,
    pub wall_anchor_unix_ms: i64,
    pub started_at: String,
    /// When the final state was stored; `None` while running.
    pub finished_at: Option<String>,
    /// Run-clock milliseconds from start to end; `None` while running and for interrupted runs.
    pub elapsed_ms: Option<f64>,
    /// Requests in the plan, when known in advance.
    pub planned: Option<i64>,
    /// Measured (non-warmup) requests that ended `ok`.
    pub ok: i64,
    /// Measured (non-warmup) requests that ended with any other status.
    pub failed: i64,
    pub note: Option<String>,
    /// The import that created the run; `None` for runs KV Gate executed.
    pub import_id: Option<i64>,
    pub granularity: Granularity,
}

/// One request of a run as stored: the client's record, which repeat of the plan it belongs to,
/// whether it was a warmup, and the validator's verdict when the run judged responses.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRequest {
    pub record: RequestRecord,
    pub repeat: u32,
    pub warmup: bool,
    pub verdict: Option<Verdict>,
}

/// Server-side evidence captured for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEvidence {
    /// `startup_log`, `cache_config_info`, `metrics` or `compatibility`.
    pub kind: String,
    pub source_name: String,
    /// Lowercase hex SHA-256 of the evidence as captured.
    pub sha256: String,
    /// The evidence text exactly as captured.
    pub text: String,
    /// What was read from it, as JSON, when it was parsed.
    pub parsed_json: Option<String>,
}

/// One scrape of the server's metrics during a run.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricScrapeRow {
    /// Run-clock milliseconds.
    pub at_ms: f64,
    pub values_json: String,
}

/// The `run_records` view's columns in the order `run_from_row` reads them.
macro_rules! columns {
    () => {
        "id, study_id, manifest_id, cell, kind, state, label, provenance, config_json, \
         config_sha256, wall_anchor_unix_ms, started_at, finished_at, elapsed_ms, planned, ok, \
         failed, note, import_id, granularity"
    };
}

/// The `run_requests` columns a [`StoredRequest`] is read from (`request_from_row`), and the
/// first ones written per request, in bind order.
macro_rules! request_columns {
    () => {
        "warmup, idx, repeat, item_id, status, planned_arrival_ms, dispatch_ms, client_delay_ms, \
         first_token_ms, finish_ms, http_status, prompt_tokens, completion_tokens, \
         cached_prompt_tokens, finish_reason, error, output_text, chunk_times_json, \
         engine_timings_json, verdict_accepted, verdict_reasons_json, verdict_json, prompt_sha256"
    };
}

/// Every column written per request, in bind order: the read ones, then those derived for the
/// analysis's index and a harness row's prompt and target (read by their own queries only).
macro_rules! written_request_columns {
    () => {
        concat!(
            request_columns!(),
            ", engine_itl_ms, harness_prompt, harness_target"
        )
    };
}

/// `INSERT INTO run_requests` of `rows` requests: `run_id` and the written columns each.
fn insert_requests_sql(rows: usize) -> String {
    let per_row = 1 + written_request_columns!().split(',').count();
    let one = format!("({})", vec!["?"; per_row].join(", "));
    format!(
        "INSERT INTO run_requests (run_id, {}) VALUES {}",
        written_request_columns!(),
        vec![one; rows].join(", ")
    )
}

static INSERT_REQUEST: LazyLock<String> = LazyLock::new(|| insert_requests_sql(1));

/// Requests written per statement by `INSERT_REQUEST_BATCH` (27 × 256 = 6,912 placeholders;
/// SQLite allows 32,766), and converted at a time on another thread ahead of the ones being
/// written. SQLite keeps a statement journal of the pages each statement changes, so that it can
/// undo the statement alone: one statement per row would write each page to it once per row.
const REQUEST_BATCH: usize = 256;

static INSERT_REQUEST_BATCH: LazyLock<String> =
    LazyLock::new(|| insert_requests_sql(REQUEST_BATCH));

/// `keep_going` is asked every this many rows.
const PROGRESS_EVERY: u64 = 2048;

const SELECT_RUN: &str = concat!("SELECT ", columns!(), " FROM run_records WHERE id = ?");

/// The note of a run found `running` with nobody left to finish it.
const INTERRUPTED_NOTE: &str =
    "interrupted: the process running it ended before it finished; nothing it measured was stored";

fn run_key(id: i64) -> String {
    format!("run {id}")
}

fn not_found(id: i64) -> StoreError {
    StoreError::NotFound {
        entity: "run",
        key: run_key(id),
    }
}

fn frozen(id: i64) -> StoreError {
    StoreError::Frozen {
        entity: "run",
        key: run_key(id),
    }
}

fn invalid(id: i64, reason: String) -> StoreError {
    StoreError::Invalid {
        entity: "run",
        key: run_key(id),
        reason,
    }
}

/// Whether SQLite's `message` is the immutability triggers' refusal of a change to a finished
/// run (the migrations' `RAISE(ABORT, 'run is finished: …')`).
fn is_finished_refusal(message: &str) -> bool {
    message.contains("run is finished")
}

/// Maps the immutability triggers' refusal to a typed error naming the run.
fn frozen_or(err: sqlx::Error, run_id: i64) -> StoreError {
    match &err {
        sqlx::Error::Database(db) if is_finished_refusal(db.message()) => frozen(run_id),
        _ => err.into(),
    }
}

fn corrupt(
    table: &'static str,
    row: i64,
    column: &'static str,
    expected: &'static str,
    found: impl ToString,
) -> StoreError {
    StoreError::Corrupt {
        table,
        row,
        column,
        expected,
        found: found.to_string(),
    }
}

/// A word column of `runs` read back as its enum; any other word is a corrupt row, named.
fn enum_column<T>(
    row: &SqliteRow,
    id: i64,
    column: &'static str,
    expected: &'static str,
    parse: fn(&str) -> Option<T>,
) -> Result<T, StoreError> {
    let word: String = row.try_get(column)?;
    parse(&word).ok_or_else(|| corrupt("runs", id, column, expected, &word))
}

fn run_from_row(row: &SqliteRow) -> Result<RunRecord, StoreError> {
    let id: i64 = row.try_get("id")?;
    let kind = enum_column(row, id, "kind", "quality or load", RunKind::parse)?;
    let state = enum_column(
        row,
        id,
        "state",
        "running, completed, cancelled, interrupted or failed",
        RunState::parse,
    )?;
    let provenance = enum_column(
        row,
        id,
        "provenance",
        "recorded, imported or synthetic_demo",
        RunProvenance::parse,
    )?;
    let granularity = enum_column(
        row,
        id,
        "granularity",
        "per_request, aggregate or evidence",
        Granularity::parse,
    )?;
    Ok(RunRecord {
        id,
        study_id: row.try_get("study_id")?,
        manifest_id: row.try_get("manifest_id")?,
        cell: row.try_get("cell")?,
        kind,
        state,
        label: row.try_get("label")?,
        provenance,
        config_json: row.try_get("config_json")?,
        config_sha256: row.try_get("config_sha256")?,
        wall_anchor_unix_ms: row.try_get("wall_anchor_unix_ms")?,
        started_at: row.try_get("started_at")?,
        finished_at: row.try_get("finished_at")?,
        elapsed_ms: row.try_get("elapsed_ms")?,
        planned: row.try_get("planned")?,
        ok: row.try_get("ok")?,
        failed: row.try_get("failed")?,
        note: row.try_get("note")?,
        import_id: row.try_get("import_id")?,
        granularity,
    })
}

/// An integer column converted to its Rust type, or a `Corrupt` error naming the row.
fn int<T: TryFrom<i64>>(
    row: &SqliteRow,
    row_id: i64,
    column: &'static str,
    expected: &'static str,
) -> Result<T, StoreError> {
    let value: i64 = row.try_get(column)?;
    T::try_from(value).map_err(|_| corrupt("run_requests", row_id, column, expected, value))
}

fn opt_int<T: TryFrom<i64>>(
    row: &SqliteRow,
    row_id: i64,
    column: &'static str,
    expected: &'static str,
) -> Result<Option<T>, StoreError> {
    let value: Option<i64> = row.try_get(column)?;
    value
        .map(|v| T::try_from(v).map_err(|_| corrupt("run_requests", row_id, column, expected, v)))
        .transpose()
}

fn request_from_row(row: &SqliteRow) -> Result<StoredRequest, StoreError> {
    let row_id: i64 = row.try_get("row_id")?;
    let status: String = row.try_get("status")?;
    let status = RequestStatus::parse(&status).ok_or_else(|| {
        corrupt(
            "run_requests",
            row_id,
            "status",
            "ok, error, timeout, rejected or unfinished",
            &status,
        )
    })?;
    let chunk_times: String = row.try_get("chunk_times_json")?;
    let chunk_times_ms = serde_json::from_str(&chunk_times).map_err(|_| {
        corrupt(
            "run_requests",
            row_id,
            "chunk_times_json",
            "a JSON array of numbers",
            &chunk_times,
        )
    })?;
    let engine_timings: Option<String> = row.try_get("engine_timings_json")?;
    let engine_timings = engine_timings
        .map(|text| {
            serde_json::from_str(&text)
                .map_err(|_| corrupt("run_requests", row_id, "engine_timings_json", "JSON", &text))
        })
        .transpose()?;
    let verdict: Option<String> = row.try_get("verdict_json")?;
    let verdict = verdict
        .map(|text| {
            serde_json::from_str(&text).map_err(|_| {
                corrupt(
                    "run_requests",
                    row_id,
                    "verdict_json",
                    "a validator verdict",
                    &text,
                )
            })
        })
        .transpose()?;
    let warmup: i64 = row.try_get("warmup")?;
    Ok(StoredRequest {
        record: RequestRecord {
            index: int(row, row_id, "idx", "an index from 0 to 4294967295")?,
            item_id: row.try_get("item_id")?,
            prompt_sha256: row.try_get("prompt_sha256")?,
            planned_arrival_ms: row.try_get("planned_arrival_ms")?,
            dispatch_ms: row.try_get("dispatch_ms")?,
            client_delay_ms: row.try_get("client_delay_ms")?,
            first_token_ms: row.try_get("first_token_ms")?,
            chunk_times_ms,
            finish_ms: row.try_get("finish_ms")?,
            status,
            http_status: opt_int(row, row_id, "http_status", "an HTTP status code")?,
            error: row.try_get("error")?,
            output_text: row.try_get("output_text")?,
            prompt_tokens: opt_int(row, row_id, "prompt_tokens", "a token count")?,
            completion_tokens: opt_int(row, row_id, "completion_tokens", "a token count")?,
            cached_prompt_tokens: opt_int(row, row_id, "cached_prompt_tokens", "a token count")?,
            finish_reason: row.try_get("finish_reason")?,
            engine_timings,
        },
        repeat: int(row, row_id, "repeat", "a repeat from 0 to 4294967295")?,
        warmup: warmup != 0,
        verdict,
    })
}

/// A request as the store writes it: its record, and (for runs KV Gate executed) its repeat,
/// warm-up flag and verdict. An imported record is repeat 0; a harness row has a verdict.
pub trait RequestRowSource {
    fn record(&self) -> &RequestRecord;
    fn repeat(&self) -> u32;
    fn warmup(&self) -> bool;
    fn verdict(&self) -> Option<&Verdict>;
    /// An evaluation harness's prompt and target for the row, when it came from one.
    fn reference(&self) -> Option<&HarnessReference> {
        None
    }
}

pub use kvgate_formats::import::HarnessReference;

impl RequestRowSource for StoredRequest {
    fn record(&self) -> &RequestRecord {
        &self.record
    }
    fn repeat(&self) -> u32 {
        self.repeat
    }
    fn warmup(&self) -> bool {
        self.warmup
    }
    fn verdict(&self) -> Option<&Verdict> {
        self.verdict.as_ref()
    }
}

/// A request read from another tool's file, and whether that tool measured it: warm-up and
/// cool-down rows a tool keeps are stored as warm-up rows, outside every measured count. An
/// evaluation harness's row carries the verdict its score (or KV Gate's validator) gave.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedRequest {
    pub record: RequestRecord,
    pub warmup: bool,
    pub verdict: Option<Verdict>,
    /// For a row of an evaluation harness: its prompt and target.
    pub reference: Option<HarnessReference>,
}

impl RequestRowSource for ImportedRequest {
    fn record(&self) -> &RequestRecord {
        &self.record
    }
    fn repeat(&self) -> u32 {
        0
    }
    fn warmup(&self) -> bool {
        self.warmup
    }
    fn verdict(&self) -> Option<&Verdict> {
        self.verdict.as_ref()
    }
    fn reference(&self) -> Option<&HarnessReference> {
        self.reference.as_ref()
    }
}

impl RequestRowSource for RequestRecord {
    fn record(&self) -> &RequestRecord {
        self
    }
    fn repeat(&self) -> u32 {
        0
    }
    fn warmup(&self) -> bool {
        false
    }
    fn verdict(&self) -> Option<&Verdict> {
        None
    }
}

/// One request converted to the values bound into `INSERT_REQUEST`, checked for what SQLite
/// cannot keep exactly (a NaN becomes NULL, an infinity has no JSON form, a count above
/// `i64::MAX` does not fit).
struct RequestRow {
    prompt_tokens: Option<i64>,
    completion_tokens: Option<i64>,
    cached_prompt_tokens: Option<i64>,
    chunk_times_json: String,
    engine_timings_json: Option<String>,
    verdict_accepted: Option<bool>,
    verdict_reasons_json: Option<String>,
    verdict_json: Option<String>,
}

impl RequestRow {
    fn new(run_id: i64, request: &impl RequestRowSource) -> Result<RequestRow, StoreError> {
        let r = request.record();
        let which = || {
            let warmup = if request.warmup() { "warmup " } else { "" };
            format!("{warmup}request {}", r.index)
        };
        let times = [
            ("planned_arrival_ms", Some(r.planned_arrival_ms)),
            ("dispatch_ms", r.dispatch_ms),
            ("client_delay_ms", r.client_delay_ms),
            ("first_token_ms", r.first_token_ms),
            ("finish_ms", r.finish_ms),
        ];
        for (name, value) in times {
            if let Some(value) = value.filter(|v| !v.is_finite()) {
                return Err(invalid(
                    run_id,
                    format!("{}: {name} must be a finite number, found {value}", which()),
                ));
            }
        }
        if let Some(value) = r.chunk_times_ms.iter().find(|v| !v.is_finite()) {
            return Err(invalid(
                run_id,
                format!(
                    "{}: chunk_times_ms must hold finite numbers, found {value}",
                    which()
                ),
            ));
        }
        if let Some(found) = r
            .prompt_sha256
            .as_deref()
            .filter(|d| !kvgate_core::canonical::is_sha256_hex(d))
        {
            return Err(invalid(
                run_id,
                format!(
                    "{}: prompt_sha256 must be 64 lowercase hex digits, found {found:?}",
                    which()
                ),
            ));
        }
        let count = |name: &str, value: Option<u64>| -> Result<Option<i64>, StoreError> {
            value
                .map(|v| {
                    i64::try_from(v).map_err(|_| {
                        invalid(
                            run_id,
                            format!("{}: {name} {v} exceeds {}", which(), i64::MAX),
                        )
                    })
                })
                .transpose()
        };
        let json = |name: &str, result: serde_json::Result<String>| {
            result.map_err(|e| invalid(run_id, format!("{}: {name}: {e}", which())))
        };
        let verdict = request.verdict();
        Ok(RequestRow {
            prompt_tokens: count("prompt_tokens", r.prompt_tokens)?,
            completion_tokens: count("completion_tokens", r.completion_tokens)?,
            cached_prompt_tokens: count("cached_prompt_tokens", r.cached_prompt_tokens)?,
            chunk_times_json: json("chunk_times_ms", serde_json::to_string(&r.chunk_times_ms))?,
            engine_timings_json: r
                .engine_timings
                .as_ref()
                .map(|v| json("engine_timings", serde_json::to_string(v)))
                .transpose()?,
            verdict_accepted: verdict.map(|v| v.accepted),
            verdict_reasons_json: verdict
                .map(|v| json("verdict", serde_json::to_string(&v.reasons)))
                .transpose()?,
            verdict_json: verdict
                .map(|v| json("verdict", serde_json::to_string(v)))
                .transpose()?,
        })
    }
}

/// What a measured request stores, for its run's columns.
fn measured<'r>(
    run_id: i64,
    request: &'r impl RequestRowSource,
    row: &RequestRow,
) -> MeasuredRequest<'r> {
    let r = request.record();
    MeasuredRequest {
        run_id,
        idx: i64::from(r.index),
        repeat: request.repeat(),
        item_id: r.item_id.as_deref(),
        status: r.status,
        planned_arrival_ms: r.planned_arrival_ms,
        dispatch_ms: r.dispatch_ms,
        first_token_ms: r.first_token_ms,
        finish_ms: r.finish_ms,
        prompt_tokens: row.prompt_tokens.map(|v| v as u64),
        completion_tokens: row.completion_tokens.map(|v| v as u64),
        accepted: request.verdict().map(|v| v.accepted),
        prompt_sha256: r.prompt_sha256.as_deref(),
        client_delay_ms: r.client_delay_ms,
        engine_itl_ms: engine_itl_ms(r.engine_timings.as_ref()),
    }
}

/// Binds a statement's parameters in order, keeping the first failure.
struct Binder {
    stmt: *mut ffi::sqlite3_stmt,
    next: c_int,
    rc: c_int,
}

/// Where an empty text is bound from: SQLite is handed a real, terminated buffer.
static EMPTY: &[u8] = b"\0";

impl Binder {
    fn done(&mut self, rc: c_int) {
        if self.rc == ffi::SQLITE_OK {
            self.rc = rc;
        }
        self.next += 1;
    }

    /// SAFETY (every binder): `stmt` is a prepared statement of a locked handle with a
    /// parameter `next`; a bound text must stay where it is until the statement is stepped.
    unsafe fn int(&mut self, v: i64) {
        let rc = ffi::sqlite3_bind_int64(self.stmt, self.next, v);
        self.done(rc);
    }

    unsafe fn opt_int(&mut self, v: Option<i64>) {
        match v {
            Some(v) => self.int(v),
            None => self.null(),
        }
    }

    unsafe fn real(&mut self, v: f64) {
        let rc = ffi::sqlite3_bind_double(self.stmt, self.next, v);
        self.done(rc);
    }

    unsafe fn opt_real(&mut self, v: Option<f64>) {
        match v {
            Some(v) => self.real(v),
            None => self.null(),
        }
    }

    unsafe fn text(&mut self, v: &str) {
        let ptr = if v.is_empty() {
            EMPTY.as_ptr()
        } else {
            v.as_ptr()
        };
        let rc = ffi::sqlite3_bind_text64(
            self.stmt,
            self.next,
            ptr.cast(),
            v.len() as ffi::sqlite3_uint64,
            ffi::SQLITE_STATIC(),
            ffi::SQLITE_UTF8 as u8,
        );
        self.done(rc);
    }

    unsafe fn opt_text(&mut self, v: Option<&str>) {
        match v {
            Some(v) => self.text(v),
            None => self.null(),
        }
    }

    unsafe fn null(&mut self) {
        let rc = ffi::sqlite3_bind_null(self.stmt, self.next);
        self.done(rc);
    }
}

/// Binds one request's values next, in the order of `written_request_columns!()`, its texts
/// where they lie.
///
/// SAFETY: `b` binds a statement of `insert_requests_sql` prepared on a locked handle;
/// `request` and `row` stay where they are until it is stepped.
unsafe fn bind_request(
    b: &mut Binder,
    run_id: i64,
    request: &impl RequestRowSource,
    row: &RequestRow,
) {
    let r = request.record();
    let reference = request.reference();
    b.int(run_id);
    b.int(i64::from(request.warmup()));
    b.int(i64::from(r.index));
    b.int(i64::from(request.repeat()));
    b.opt_text(r.item_id.as_deref());
    b.text(r.status.as_str());
    b.real(r.planned_arrival_ms);
    b.opt_real(r.dispatch_ms);
    b.opt_real(r.client_delay_ms);
    b.opt_real(r.first_token_ms);
    b.opt_real(r.finish_ms);
    b.opt_int(r.http_status.map(i64::from));
    b.opt_int(row.prompt_tokens);
    b.opt_int(row.completion_tokens);
    b.opt_int(row.cached_prompt_tokens);
    b.opt_text(r.finish_reason.as_deref());
    b.opt_text(r.error.as_deref());
    b.text(&r.output_text);
    b.text(&row.chunk_times_json);
    b.opt_text(row.engine_timings_json.as_deref());
    b.opt_int(row.verdict_accepted.map(i64::from));
    b.opt_text(row.verdict_reasons_json.as_deref());
    b.opt_text(row.verdict_json.as_deref());
    b.opt_text(r.prompt_sha256.as_deref());
    b.opt_real(engine_itl_ms(r.engine_timings.as_ref()));
    b.opt_text(reference.map(|h| h.prompt.as_str()));
    b.opt_text(reference.map(|h| h.target.as_str()));
}

/// Binds `requests` into `stmt` (a statement of `insert_requests_sql(requests.len())`), steps
/// it and resets it: SQLite's result code.
///
/// SAFETY: `stmt` was prepared on the locked handle of a write transaction.
unsafe fn insert_rows<R: RequestRowSource>(
    stmt: *mut ffi::sqlite3_stmt,
    run_id: i64,
    requests: &[R],
    rows: &[RequestRow],
) -> c_int {
    let mut b = Binder {
        stmt,
        next: 1,
        rc: ffi::SQLITE_OK,
    };
    for (request, row) in requests.iter().zip(rows) {
        bind_request(&mut b, run_id, request, row);
    }
    debug_assert_eq!(b.next - 1, ffi::sqlite3_bind_parameter_count(stmt));
    let rc = if b.rc == ffi::SQLITE_OK {
        ffi::sqlite3_step(stmt)
    } else {
        b.rc
    };
    ffi::sqlite3_reset(stmt);
    rc
}

/// Why SQLite refused request `request` of run `run_id`: a second row of its index is a
/// `Conflict`, a finished run `Frozen`, anything else SQLite's own message, naming the row.
///
/// SAFETY: `db` is the locked handle the refused statement ran on.
unsafe fn refused(
    db: *mut ffi::sqlite3,
    run_id: i64,
    request: &impl RequestRowSource,
) -> StoreError {
    let code = ffi::sqlite3_extended_errcode(db);
    let message = std::ffi::CStr::from_ptr(ffi::sqlite3_errmsg(db)).to_string_lossy();
    let which = if request.warmup() {
        "warmup request"
    } else {
        "request"
    };
    if code == ffi::SQLITE_CONSTRAINT_PRIMARYKEY || code == ffi::SQLITE_CONSTRAINT_UNIQUE {
        return StoreError::Conflict {
            entity: which,
            field: "index",
            value: request.record().index.to_string(),
        };
    }
    if is_finished_refusal(&message) {
        return frozen(run_id);
    }
    StoreError::Sqlite(format!(
        "run {run_id}, {which} {}: {message}",
        request.record().index
    ))
}

/// The engine's own per-token time out of its timings object (llama.cpp's
/// `predicted_per_token_ms`), read only when a number: a text or another shape is no
/// measurement. Stored beside the timings, and in the run's columns, so the analysis reads it
/// without parsing them.
pub(crate) fn engine_itl_ms(timings: Option<&serde_json::Value>) -> Option<f64> {
    timings?
        .get("predicted_per_token_ms")
        .filter(|v| v.is_number())
        .and_then(serde_json::Value::as_f64)
}

/// The state of a run inside a transaction: `NotFound` when absent, `Frozen` once finished.
async fn require_running(tx: &mut Transaction<'_, Sqlite>, run_id: i64) -> Result<(), StoreError> {
    let state: Option<String> = sqlx::query_scalar("SELECT state FROM runs WHERE id = ?")
        .bind(run_id)
        .fetch_optional(&mut **tx)
        .await?;
    match state.as_deref() {
        None => Err(not_found(run_id)),
        Some("running") => Ok(()),
        Some(_) => Err(frozen(run_id)),
    }
}

async fn run_in(tx: &mut Transaction<'_, Sqlite>, run_id: i64) -> Result<RunRecord, StoreError> {
    let row = sqlx::query(SELECT_RUN)
        .bind(run_id)
        .fetch_optional(&mut **tx)
        .await?;
    match row {
        Some(row) => run_from_row(&row),
        None => Err(not_found(run_id)),
    }
}

/// Why a run cannot end this way, if it cannot.
pub(crate) fn final_state_refusal(state: RunState, elapsed_ms: Option<f64>) -> Option<String> {
    if !state.is_finished() {
        return Some("a run can only be finished with a final state, not running".into());
    }
    elapsed_ms
        .filter(|e| !e.is_finite() || *e < 0.0)
        .map(|e| format!("elapsed_ms must be a finite number ≥ 0, found {e}"))
}

/// Inserts a `running` run after checking its manifest: `NotFound` when absent, `Invalid` when
/// it belongs to another study, `NotFrozen` for a draft.
async fn insert_run(tx: &mut Transaction<'_, Sqlite>, run: &NewRun) -> Result<i64, StoreError> {
    insert_run_with(tx, run, None, Granularity::PerRequest).await
}

/// [`insert_run`] for a run an import creates: its import and granularity are fixed at creation.
pub(crate) async fn insert_run_with(
    tx: &mut Transaction<'_, Sqlite>,
    run: &NewRun,
    import_id: Option<i64>,
    granularity: Granularity,
) -> Result<i64, StoreError> {
    let manifest: Option<(i64, Option<String>)> =
        sqlx::query_as("SELECT study_id, frozen_at FROM manifests WHERE id = ?")
            .bind(run.manifest_id)
            .fetch_optional(&mut **tx)
            .await?;
    let manifest_key = format!("id {}", run.manifest_id);
    match manifest {
        None => {
            return Err(StoreError::NotFound {
                entity: "manifest",
                key: manifest_key,
            })
        }
        Some((study_id, _)) if study_id != run.study_id => {
            return Err(StoreError::Invalid {
                entity: "manifest",
                key: manifest_key,
                reason: format!("belongs to study {study_id}, not to study {}", run.study_id),
            })
        }
        Some((_, None)) => {
            return Err(StoreError::NotFrozen {
                entity: "manifest",
                key: manifest_key,
            })
        }
        Some((_, Some(_))) => {}
    }
    let sql = concat!(
        "INSERT INTO runs (study_id, manifest_id, kind, state, label, provenance, config_json, ",
        "config_sha256, wall_anchor_unix_ms, started_at, owner_pid, import_id, granularity) ",
        "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id"
    );
    let id = sqlx::query_scalar(sql)
        .bind(run.study_id)
        .bind(run.manifest_id)
        .bind(run.kind.as_str())
        .bind(&run.label)
        .bind(run.provenance.as_str())
        .bind(&run.config_json)
        .bind(&run.config_sha256)
        .bind(run.wall_anchor_unix_ms)
        .bind(&run.started_at)
        .bind(run.owner_pid)
        .bind(import_id)
        .bind(granularity.as_str())
        .fetch_one(&mut **tx)
        .await?;
    Ok(id)
}

/// Commits what `written` stored, or rolls it all back and returns its error.
async fn commit_or_rollback(
    tx: Transaction<'_, Sqlite>,
    written: Result<RunRecord, StoreError>,
) -> Result<RunRecord, StoreError> {
    match written {
        Ok(record) => {
            tx.commit().await?;
            Ok(record)
        }
        Err(err) => {
            // The refusal matters more than a failed rollback, which still ends the
            // transaction when the connection goes back to the pool.
            let _ = tx.rollback().await;
            Err(err)
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn write_finish(
    tx: &mut Transaction<'_, Sqlite>,
    run_id: i64,
    state: RunState,
    finished_at: &str,
    elapsed_ms: Option<f64>,
    planned: Option<i64>,
    note: Option<&str>,
    requests: &[StoredRequest],
    evidence: &[RunEvidence],
    scrapes: &[MetricScrapeRow],
) -> Result<RunRecord, StoreError> {
    require_running(tx, run_id).await?;
    // Rows stored before (none are, but the store does not rely on it) are read back.
    let earlier: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM run_requests WHERE run_id = ?)")
            .bind(run_id)
            .fetch_one(&mut **tx)
            .await?;
    let mut columns = if earlier {
        RunColumns::read_back(run_id)
    } else {
        RunColumns::new(run_id)
    };
    write_requests(tx, run_id, requests, &|_| true, &mut columns).await?;
    write_evidence(tx, run_id, evidence).await?;
    write_scrapes(tx, run_id, scrapes).await?;
    write_final_state(
        tx,
        run_id,
        columns,
        state,
        finished_at,
        elapsed_ms,
        planned,
        note,
    )
    .await
}

/// Writes requests; every `PROGRESS_EVERY` rows `keep_going(rows written so far)` decides
/// whether to go on (`false` → [`StoreError::Cancelled`]; the caller rolls back). The measured
/// ones are handed to `columns`.
///
/// A prepared statement of `REQUEST_BATCH` rows is stepped through SQLite's own API, each text
/// bound where it lies, while another thread, below this one in priority
/// ([`crate::yield_to_inserts`]), converts the rows ahead (checks, chunk times and verdict to
/// JSON): through sqlx every value would be copied into its arguments, and each statement would
/// cross to the connection's thread and back.
pub(crate) async fn write_requests<R: RequestRowSource + Sync>(
    tx: &mut Transaction<'_, Sqlite>,
    run_id: i64,
    requests: &[R],
    keep_going: &(dyn Fn(u64) -> bool + Send + Sync),
    columns: &mut RunColumns,
) -> Result<(), StoreError> {
    if !requests.is_empty() {
        // Once for all the rows: the rows are written without the per-row trigger that checks it
        // (see `TriggersOff`).
        require_running(tx, run_id).await?;
        let mut handle = tx.lock_handle().await?;
        let db = handle.as_raw_handle().as_ptr();
        // SAFETY: `db` is a valid handle, locked for this thread until `handle` is dropped, and
        // the transaction holds the write lock; every statement is finalized before that.
        unsafe { write_locked(db, run_id, requests, keep_going, columns) }?;
    }
    columns.write_full(tx).await?;
    if !keep_going(requests.len() as u64) {
        return Err(StoreError::Cancelled);
    }
    Ok(())
}

/// [`write_requests`] on the locked handle `db`.
///
/// SAFETY: `db` is a valid handle locked for this thread, inside a write transaction.
unsafe fn write_locked<R: RequestRowSource + Sync>(
    db: *mut ffi::sqlite3,
    run_id: i64,
    requests: &[R],
    keep_going: &(dyn Fn(u64) -> bool + Send + Sync),
    columns: &mut RunColumns,
) -> Result<(), StoreError> {
    // Declared before the statements, so dropped after they are finalized.
    let _triggers = TriggersOff::off(db)?;
    let what = "preparing the requests' insert";
    let one = prepare(db, INSERT_REQUEST.as_str(), what)?;
    let batch = match requests.len() >= REQUEST_BATCH {
        true => Some(prepare(db, INSERT_REQUEST_BATCH.as_str(), what)?),
        false => None,
    };
    std::thread::scope(|scope| {
        let (converted, rows) = std::sync::mpsc::sync_channel(2);
        scope.spawn(move || {
            crate::yield_to_inserts();
            for chunk in requests.chunks(REQUEST_BATCH) {
                let rows: Result<Vec<RequestRow>, StoreError> = chunk
                    .iter()
                    .map(|request| RequestRow::new(run_id, request))
                    .collect();
                let failed = rows.is_err();
                // Stopped when the writer returned: it dropped the receiver.
                if converted.send(rows).is_err() || failed {
                    break;
                }
            }
        });
        let mut written = 0u64;
        for (chunk, rows) in requests.chunks(REQUEST_BATCH).zip(rows.iter()) {
            let rows = rows?;
            let whole = match &batch {
                Some(stmt) if chunk.len() == REQUEST_BATCH => {
                    let rc = insert_rows(stmt.0, run_id, chunk, &rows);
                    if rc != ffi::SQLITE_DONE && ffi::sqlite3_get_autocommit(db) != 0 {
                        // SQLite ended the transaction itself (a full disk, an I/O error):
                        // nothing more may be written outside it.
                        let (first, last) = (&chunk[0], &chunk[chunk.len() - 1]);
                        return Err(sqlite_error(
                            db,
                            &format!(
                                "run {run_id}, requests {} to {}",
                                first.record().index,
                                last.record().index
                            ),
                        ));
                    }
                    rc == ffi::SQLITE_DONE
                }
                _ => false,
            };
            if !whole {
                // A short chunk, or SQLite undid the whole statement: one by one, a refusal
                // names the request.
                for (request, row) in chunk.iter().zip(&rows) {
                    let rc = insert_rows(
                        one.0,
                        run_id,
                        std::slice::from_ref(request),
                        std::slice::from_ref(row),
                    );
                    if rc != ffi::SQLITE_DONE {
                        return Err(refused(db, run_id, request));
                    }
                }
            }
            for (request, row) in chunk.iter().zip(&rows) {
                if !request.warmup() {
                    columns.push(&measured(run_id, request, row));
                }
            }
            let before = written;
            written += chunk.len() as u64;
            if written / PROGRESS_EVERY > before / PROGRESS_EVERY && !keep_going(written) {
                return Err(StoreError::Cancelled);
            }
        }
        Ok(())
    })
}

/// Turns the triggers of connection `db` off, or back on: SQLite's answer, whether they are on.
///
/// SAFETY: `db` is a valid handle locked for this thread.
unsafe fn set_triggers(db: *mut ffi::sqlite3, on: bool) -> (c_int, bool) {
    let mut now: c_int = -1;
    let rc = ffi::sqlite3_db_config(
        db,
        ffi::SQLITE_DBCONFIG_ENABLE_TRIGGER,
        c_int::from(on),
        &mut now as *mut c_int,
    );
    (rc, now == 1)
}

/// The triggers of one connection, off while a run's requests are inserted on it, and on again
/// however that ends.
///
/// On every row, `run_requests_finished_no_insert` looks up the state of the row's run: about a
/// sixth of the inserting thread's time at a million rows. Every row [`write_locked`] inserts
/// belongs to one run, which [`write_requests`] found running in the same write transaction;
/// no other connection can write before it commits, and nothing else runs on this one while the
/// rows are inserted. So that lookup is made once, not once per row. The statements prepared
/// while the triggers are off (the inserts) are finalized before they are on again; turning them
/// on or off makes SQLite prepare every other statement of the connection again before its next
/// use, so none of them runs without its triggers. The other connections keep theirs throughout,
/// and the foreign key to the run and every CHECK still hold on each row.
struct TriggersOff(*mut ffi::sqlite3);

impl TriggersOff {
    /// SAFETY: `db` is a valid handle, locked for this thread until the value is dropped.
    unsafe fn off(db: *mut ffi::sqlite3) -> Result<TriggersOff, StoreError> {
        match set_triggers(db, false) {
            (ffi::SQLITE_OK, false) => Ok(TriggersOff(db)),
            _ => {
                set_triggers(db, true);
                Err(sqlite_error(db, "turning the connection's triggers off"))
            }
        }
    }
}

impl Drop for TriggersOff {
    fn drop(&mut self) {
        // SAFETY: the handle is still locked for this thread (see `off`).
        if unsafe { set_triggers(self.0, true) } != (ffi::SQLITE_OK, true) {
            // A connection must never go back to the pool without its triggers.
            eprintln!("kvgate: SQLite did not turn a connection's triggers back on; stopping");
            std::process::abort();
        }
    }
}

pub(crate) async fn write_evidence(
    tx: &mut Transaction<'_, Sqlite>,
    run_id: i64,
    evidence: &[RunEvidence],
) -> Result<(), StoreError> {
    let insert_evidence = concat!(
        "INSERT INTO run_evidence (run_id, seq, kind, source_name, sha256, text, parsed_json) ",
        "VALUES (?, ?, ?, ?, ?, ?, ?)"
    );
    for (seq, item) in (0_i64..).zip(evidence) {
        sqlx::query(insert_evidence)
            .bind(run_id)
            .bind(seq)
            .bind(item.kind.as_str())
            .bind(item.source_name.as_str())
            .bind(item.sha256.as_str())
            .bind(item.text.as_str())
            .bind(item.parsed_json.as_deref())
            .execute(&mut **tx)
            .await
            .map_err(|e| frozen_or(e, run_id))?;
    }

    Ok(())
}

pub(crate) async fn write_scrapes(
    tx: &mut Transaction<'_, Sqlite>,
    run_id: i64,
    scrapes: &[MetricScrapeRow],
) -> Result<(), StoreError> {
    let insert_scrape =
        "INSERT INTO run_metric_scrapes (run_id, seq, at_ms, values_json) VALUES (?, ?, ?, ?)";
    for (seq, scrape) in (0_i64..).zip(scrapes) {
        if !scrape.at_ms.is_finite() {
            return Err(invalid(
                run_id,
                format!(
                    "metric scrape {seq}: at_ms must be a finite number, found {}",
                    scrape.at_ms
                ),
            ));
        }
        sqlx::query(insert_scrape)
            .bind(run_id)
            .bind(seq)
            .bind(scrape.at_ms)
            .bind(scrape.values_json.as_str())
            .execute(&mut **tx)
            .await
            .map_err(|e| frozen_or(e, run_id))?;
    }

    Ok(())
}

/// Sets the final state, counts, `elapsed_ms`, `planned`, `finished_at` and note: from here on
/// the triggers refuse any change to the run.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn write_final_state(
    tx: &mut Transaction<'_, Sqlite>,
    run_id: i64,
    columns: RunColumns,
    state: RunState,
    finished_at: &str,
    elapsed_ms: Option<f64>,
    planned: Option<i64>,
    note: Option<&str>,
) -> Result<RunRecord, StoreError> {
    // The measured requests as columns for the analysis, and how many of them are ok.
    let (measured, ok) = columns.finish(tx).await?;
    // The final state last: from here on the triggers refuse any change to the run.
    let finish = concat!(
        "UPDATE runs SET state = ?, finished_at = ?, elapsed_ms = ?, planned = ?, note = ?, ",
        "ok = ?, failed = ? WHERE id = ? AND state = 'running'"
    );
    let done = sqlx::query(finish)
        .bind(state.as_str())
        .bind(finished_at)
        .bind(elapsed_ms)
        .bind(planned)
        .bind(note)
        .bind(ok as i64)
        .bind((measured - ok) as i64)
        .bind(run_id)
        .execute(&mut **tx)
        .await
        .map_err(|e| frozen_or(e, run_id))?;
    if done.rows_affected() != 1 {
        return Err(frozen(run_id));
    }
    run_in(tx, run_id).await
}

impl Store {
    /// Starts a run of a frozen manifest of the study: stored `running`, with no counts.
    pub async fn create_run(&self, run: &NewRun) -> Result<RunRecord, StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let id = insert_run(&mut tx, run).await?;
        let record = run_in(&mut tx, id).await?;
        tx.commit().await?;
        Ok(record)
    }

    /// One transaction: all requests, evidence, scrapes, then the final state, counts,
    /// `elapsed_ms`, `planned`, `finished_at` and note. Any error → nothing of it stored and the
    /// run stays running.
    ///
    /// `ok` and `failed` count the stored non-warmup requests. `state` must be final; a run that
    /// is already finished is `Frozen`, a missing one `NotFound`.
    #[allow(clippy::too_many_arguments)]
    pub async fn finish_run(
        &self,
        run_id: i64,
        state: RunState,
        elapsed_ms: Option<f64>,
        planned: Option<i64>,
        note: Option<&str>,
        requests: &[StoredRequest],
        evidence: &[RunEvidence],
        scrapes: &[MetricScrapeRow],
    ) -> Result<RunRecord, StoreError> {
        if let Some(reason) = final_state_refusal(state, elapsed_ms) {
            return Err(invalid(run_id, reason));
        }
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let finished_at = now_rfc3339();
        let written = write_finish(
            &mut tx,
            run_id,
            state,
            &finished_at,
            elapsed_ms,
            planned,
            note,
            requests,
            evidence,
            scrapes,
        )
        .await;
        commit_or_rollback(tx, written).await
    }

    /// A run that already ended elsewhere (an imported run file), stored in one transaction:
    /// created as [`Store::create_run`] does, then finished as [`Store::finish_run`] does but
    /// with the given `finished_at` (RFC 3339). Any error → nothing of it stored.
    #[allow(clippy::too_many_arguments)]
    pub async fn insert_finished_run(
        &self,
        run: &NewRun,
        state: RunState,
        finished_at: &str,
        elapsed_ms: Option<f64>,
        planned: Option<i64>,
        note: Option<&str>,
        requests: &[StoredRequest],
        evidence: &[RunEvidence],
        scrapes: &[MetricScrapeRow],
    ) -> Result<RunRecord, StoreError> {
        if let Some(reason) = final_state_refusal(state, elapsed_ms) {
            return Err(StoreError::Invalid {
                entity: "run",
                key: format!("started at {}", run.started_at),
                reason,
            });
        }
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let written = match insert_run(&mut tx, run).await {
            Ok(run_id) => {
                write_finish(
                    &mut tx,
                    run_id,
                    state,
                    finished_at,
                    elapsed_ms,
                    planned,
                    note,
                    requests,
                    evidence,
                    scrapes,
                )
                .await
            }
            Err(err) => Err(err),
        };
        commit_or_rollback(tx, written).await
    }

    /// Runs left `running` by a process that died: marked `interrupted` with a note saying so;
    /// returns how many. The app calls it when it opens the workspace, before it starts any run
    /// of its own. A run whose owner process `is_alive` says is still running is left alone.
    pub async fn mark_interrupted_runs(
        &self,
        is_alive: impl Fn(i64) -> bool,
    ) -> Result<u64, StoreError> {
        let running: Vec<(i64, Option<i64>)> =
            sqlx::query_as("SELECT id, owner_pid FROM runs WHERE state = 'running' ORDER BY id")
                .fetch_all(&self.pool)
                .await?;
        let mut marked = 0;
        for (id, owner) in running {
            if owner.is_some_and(&is_alive) {
                continue;
            }
            let sql = concat!(
                "UPDATE runs SET state = 'interrupted', finished_at = ?, note = ? ",
                "WHERE id = ? AND state = 'running'"
            );
            let done = sqlx::query(sql)
                .bind(now_rfc3339())
                .bind(INTERRUPTED_NOTE)
                .bind(id)
                .execute(&self.pool)
                .await?;
            marked += done.rows_affected();
        }
        Ok(marked)
    }

    /// Every run of a study, in creation order.
    pub async fn list_runs(&self, study_id: i64) -> Result<Vec<RunRecord>, StoreError> {
        let sql = concat!(
            "SELECT ",
            columns!(),
            " FROM run_records WHERE study_id = ? ORDER BY id"
        );
        let rows = sqlx::query(sql)
            .bind(study_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(run_from_row).collect()
    }

    /// The run with this id; `NotFound` when absent.
    pub async fn get_run(&self, run_id: i64) -> Result<RunRecord, StoreError> {
        let row = sqlx::query(SELECT_RUN)
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(row) => run_from_row(&row),
            None => Err(not_found(run_id)),
        }
    }

    /// The (item id, prompt sha256) of every measured request that ended, whatever its status,
    /// in the study's finished quality runs (completed or cancelled) of one frozen manifest: what a
    /// resumed quality run of that cell need not send again. A request left `unfinished` by a
    /// cancelled run, and rows without an item or a prompt digest, are not in it.
    pub async fn answered_prompts(
        &self,
        study_id: i64,
        manifest_id: i64,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT DISTINCT q.item_id, q.prompt_sha256 FROM run_requests q \
             JOIN runs r ON r.id = q.run_id \
             WHERE r.study_id = ? AND r.manifest_id = ? AND r.kind = 'quality' \
               AND r.state IN ('completed', 'cancelled') AND q.warmup = 0 \
               AND q.status <> 'unfinished' \
               AND q.item_id IS NOT NULL AND q.prompt_sha256 IS NOT NULL \
             ORDER BY q.item_id, q.prompt_sha256",
        )
        .bind(study_id)
        .bind(manifest_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows)
    }

    /// The first judged measured request of `item_id` in run `run_id` (lowest repeat, then
    /// index), whole, with the harness prompt and target it carries.
    pub async fn judged_request(
        &self,
        run_id: i64,
        item_id: &str,
    ) -> Result<Option<(StoredRequest, Option<HarnessReference>)>, StoreError> {
        Ok(self
            .judged_requests(run_id, &[item_id])
            .await?
            .remove(item_id))
    }

    /// [`Store::judged_request`] for many items of one run at once (one query per 500 items):
    /// each item's first judged pass, by item id; an item the run did not judge is absent.
    pub async fn judged_requests(
        &self,
        run_id: i64,
        items: &[&str],
    ) -> Result<
        std::collections::HashMap<String, (StoredRequest, Option<HarnessReference>)>,
        StoreError,
    > {
        let mut out = std::collections::HashMap::with_capacity(items.len());
        for chunk in items.chunks(500) {
            let sql = format!(
                concat!(
                    "SELECT rowid AS row_id, ",
                    request_columns!(),
                    ", harness_prompt, harness_target FROM run_requests \
                     WHERE run_id = ? AND item_id IN ({}) AND verdict_accepted IS NOT NULL \
                     AND warmup = 0 ORDER BY item_id, repeat, idx"
                ),
                vec!["?"; chunk.len()].join(", ")
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(run_id);
            for item in chunk {
                query = query.bind(*item);
            }
            for row in query.fetch_all(&self.pool).await? {
                let item: String = row.try_get("item_id")?;
                if out.contains_key(&item) {
                    continue;
                }
                let prompt: Option<String> = row.try_get("harness_prompt")?;
                let target: Option<String> = row.try_get("harness_target")?;
                let reference = prompt
                    .zip(target)
                    .map(|(prompt, target)| HarnessReference { prompt, target });
                out.insert(item, (request_from_row(&row)?, reference));
            }
        }
        Ok(out)
    }

    /// The requests of a run: warmups first, then by index. `NotFound` when the run is absent.
    /// The harness prompt and target of each measured row of a run that came from an evaluation
    /// harness, by item id (first row of an item); empty for every other run.
    pub async fn harness_references(
        &self,
        run_id: i64,
    ) -> Result<std::collections::HashMap<String, HarnessReference>, StoreError> {
        let rows: Vec<(String, String, String)> = sqlx::query_as(
            "SELECT item_id, harness_prompt, harness_target FROM run_requests \
             WHERE run_id = ? AND warmup = 0 AND item_id IS NOT NULL AND harness_prompt IS NOT NULL \
             ORDER BY idx",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        let mut out = std::collections::HashMap::new();
        for (item, prompt, target) in rows {
            out.entry(item)
                .or_insert(HarnessReference { prompt, target });
        }
        Ok(out)
    }

    pub async fn run_requests(&self, run_id: i64) -> Result<Vec<StoredRequest>, StoreError> {
        let sql = concat!(
            "SELECT rowid AS row_id, ",
            request_columns!(),
            " FROM run_requests WHERE run_id = ? ORDER BY warmup DESC, idx"
        );
        let rows = sqlx::query(sql).bind(run_id).fetch_all(&self.pool).await?;
        if rows.is_empty() {
            self.require_run(run_id).await?;
        }
        rows.iter().map(request_from_row).collect()
    }

    /// The evidence of a run, in the order it was given. `NotFound` when the run is absent.
    pub async fn run_evidence(&self, run_id: i64) -> Result<Vec<RunEvidence>, StoreError> {
        let sql = concat!(
            "SELECT kind, source_name, sha256, text, parsed_json FROM run_evidence ",
            "WHERE run_id = ? ORDER BY seq"
        );
        let rows = sqlx::query(sql).bind(run_id).fetch_all(&self.pool).await?;
        if rows.is_empty() {
            self.require_run(run_id).await?;
        }
        rows.iter()
            .map(|row| {
                Ok(RunEvidence {
                    kind: row.try_get("kind")?,
                    source_name: row.try_get("source_name")?,
                    sha256: row.try_get("sha256")?,
                    text: row.try_get("text")?,
                    parsed_json: row.try_get("parsed_json")?,
                })
            })
            .collect()
    }

    /// The metric scrapes of a run, in the order they were given. `NotFound` when the run is
    /// absent.
    pub async fn run_scrapes(&self, run_id: i64) -> Result<Vec<MetricScrapeRow>, StoreError> {
        let sql = "SELECT at_ms, values_json FROM run_metric_scrapes WHERE run_id = ? ORDER BY seq";
        let rows = sqlx::query(sql).bind(run_id).fetch_all(&self.pool).await?;
        if rows.is_empty() {
            self.require_run(run_id).await?;
        }
        rows.iter()
            .map(|row| {
                Ok(MetricScrapeRow {
                    at_ms: row.try_get("at_ms")?,
                    values_json: row.try_get("values_json")?,
                })
            })
            .collect()
    }

    async fn require_run(&self, run_id: i64) -> Result<(), StoreError> {
        let found: Option<i64> = sqlx::query_scalar("SELECT id FROM runs WHERE id = ?")
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await?;
        found.map(|_| ()).ok_or_else(|| not_found(run_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvgate_core::study::{NewStudy, Provenance};

    /// The rows go in with the triggers off, so the one lookup of the run's state is all that
    /// stands between them and a finished run: a run finished earlier in the same transaction
    /// gets none of them, and its transaction can still commit what it wrote before.
    #[tokio::test]
    async fn requests_are_refused_under_a_run_finished_in_the_same_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("w.sqlite")).await.unwrap();
        let new = NewStudy {
            name: "s".into(),
            description: String::new(),
        };
        let sid = store.insert_study(&new, Provenance::User).await.unwrap().id;
        store.save_manifest_draft(sid, "C1", "{}").await.unwrap();
        let digest = "0".repeat(64);
        let mid = store
            .freeze_manifest(sid, "C1", r#"{"cell":"C1"}"#, &digest)
            .await
            .unwrap()
            .id;
        let run = NewRun {
            study_id: sid,
            manifest_id: mid,
            kind: RunKind::Load,
            label: "load".into(),
            provenance: RunProvenance::Recorded,
            config_json: "{}".into(),
            config_sha256: digest.clone(),
            wall_anchor_unix_ms: 0,
            started_at: "2026-12-01T10:00:00.000Z".into(),
            owner_pid: None,
        };
        let requests: Vec<StoredRequest> = (0..300)
            .map(|index| StoredRequest {
                record: RequestRecord {
                    index,
                    item_id: None,
                    prompt_sha256: None,
                    planned_arrival_ms: f64::from(index),
                    dispatch_ms: None,
                    client_delay_ms: None,
                    first_token_ms: None,
                    chunk_times_ms: Vec::new(),
                    finish_ms: None,
                    status: RequestStatus::Unfinished,
                    http_status: None,
                    error: None,
                    output_text: String::new(),
                    prompt_tokens: None,
                    completion_tokens: None,
                    cached_prompt_tokens: None,
                    finish_reason: None,
                    engine_timings: None,
                },
                repeat: 0,
                warmup: false,
                verdict: None,
            })
            .collect();
        let mut tx = store.pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
        let run_id = insert_run(&mut tx, &run).await.unwrap();
        let mut columns = RunColumns::new(run_id);
        write_requests(&mut tx, run_id, &requests[..100], &|_| true, &mut columns)
            .await
            .unwrap();
        write_final_state(
            &mut tx,
            run_id,
            columns,
            RunState::Cancelled,
            "2026-12-01T10:01:00.000Z",
            Some(1.0),
            None,
            None,
        )
        .await
        .unwrap();
        let mut more = RunColumns::new(run_id);
        let err = write_requests(&mut tx, run_id, &requests[100..], &|_| true, &mut more)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::Frozen { entity: "run", .. }),
            "{err:?}"
        );
        tx.commit().await.unwrap();
        let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM run_requests WHERE run_id = ?")
            .bind(run_id)
            .fetch_one(&store.pool)
            .await
            .unwrap();
        assert_eq!(rows, 100);
    }

    #[test]
    fn insert_statements_have_one_placeholder_per_written_column() {
        let columns = written_request_columns!().split(',').count() + 1;
        assert_eq!(columns, 27);
        assert_eq!(INSERT_REQUEST.matches('?').count(), columns);
        assert_eq!(
            INSERT_REQUEST_BATCH.matches('?').count(),
            columns * REQUEST_BATCH
        );
    }
}
