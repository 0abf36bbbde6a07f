//! A finished run's measured requests as columns, written once in the transaction that finishes
//! the run (its own or an import's) and read by the analysis instead of the rows.
//!
//! The rows stay the record; the columns are a derived copy that the load reads without stepping
//! a million SQLite rows or hashing a million item ids and prompt digests. A run's columns are a
//! dictionary (part `-1`: the run's distinct item ids and prompt digests, in the order its rows
//! first name them, and how many rows and parts follow) and parts `0, 1, …` of at most
//! [`PART_ROWS`] rows each, so neither writing nor reading holds more than one part of a run of
//! any size. Each part carries the sha256 of its bytes, checked when read; the rows counted must
//! be the run's measured requests (`ok + failed`). Triggers keep a finished run's columns
//! unchanged, as they keep its rows.
//!
//! A run finished before the columns existed (and a run a restart marked interrupted) has none:
//! the analysis reads its rows, which give the same input.
//!
//! Layout of a row part of `n` rows, little-endian, one column after another: item, prompt (u32
//! dictionary indices, `u32::MAX` none), repeat (u32), status (u8), accepted (u8: 0, 1, 2 none),
//! planned arrival, dispatch, first token, finish, client delay, engine ITL (f64 ms; NaN none:
//! SQLite stores no NaN, so none is never a value), prompt and completion tokens (u64;
//! `u64::MAX` none: stored counts are non-negative 64-bit integers).

use std::collections::HashMap;

use kvgate_core::canonical::sha256_hex;
use kvgate_core::run::RequestStatus;
use std::os::raw::c_int;

use libsqlite3_sys as ffi;
use sqlx::{Sqlite, Transaction};

use crate::measured::{measured_row, step_on, MeasuredRequest, RUN_MEASURED_PAGE_SQL};
use crate::{Store, StoreError};

/// Rows per part.
pub const PART_ROWS: usize = 65_536;
/// The layout's version, first in the dictionary.
const VERSION: u32 = 1;
/// The dictionary's part number.
const DICTIONARY: i64 = -1;
const NONE_U32: u32 = u32::MAX;
const NONE_U64: u64 = u64::MAX;
const NONE_ACCEPTED: u8 = 2;
/// Bytes per row of a part.
const ROW_BYTES: usize = 4 * 3 + 2 + 8 * 6 + 8 * 2;

const STATUSES: [RequestStatus; 5] = [
    RequestStatus::Ok,
    RequestStatus::Error,
    RequestStatus::Timeout,
    RequestStatus::Rejected,
    RequestStatus::Unfinished,
];

fn status_code(status: RequestStatus) -> u8 {
    STATUSES.iter().position(|s| *s == status).unwrap_or(0) as u8
}

/// Strings numbered in the order first seen.
#[derive(Default)]
struct Numbered {
    list: Vec<String>,
    index: HashMap<String, u32>,
}

impl Numbered {
    fn number(&mut self, text: Option<&str>) -> u32 {
        let Some(text) = text else {
            return NONE_U32;
        };
        if let Some(&n) = self.index.get(text) {
            return n;
        }
        let n = self.list.len() as u32;
        self.list.push(text.to_owned());
        self.index.insert(text.to_owned(), n);
        n
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.list.len() as u32).to_le_bytes());
        for s in &self.list {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
    }
}

/// One part's columns, filled row by row.
#[derive(Default)]
struct PartWriter {
    item: Vec<u8>,
    prompt: Vec<u8>,
    repeat: Vec<u8>,
    status: Vec<u8>,
    accepted: Vec<u8>,
    times: [Vec<u8>; 6],
    tokens: [Vec<u8>; 2],
    rows: usize,
}

impl PartWriter {
    fn push(&mut self, q: &MeasuredRequest<'_>, items: &mut Numbered, prompts: &mut Numbered) {
        self.item
            .extend_from_slice(&items.number(q.item_id).to_le_bytes());
        self.prompt
            .extend_from_slice(&prompts.number(q.prompt_sha256).to_le_bytes());
        self.repeat.extend_from_slice(&q.repeat.to_le_bytes());
        self.status.push(status_code(q.status));
        self.accepted
            .push(q.accepted.map_or(NONE_ACCEPTED, |a| a as u8));
        let times = [
            Some(q.planned_arrival_ms),
            q.dispatch_ms,
            q.first_token_ms,
            q.finish_ms,
            q.client_delay_ms,
            q.engine_itl_ms,
        ];
        for (column, v) in self.times.iter_mut().zip(times) {
            column.extend_from_slice(&v.unwrap_or(f64::NAN).to_le_bytes());
        }
        for (column, v) in self
            .tokens
            .iter_mut()
            .zip([q.prompt_tokens, q.completion_tokens])
        {
            column.extend_from_slice(&v.unwrap_or(NONE_U64).to_le_bytes());
        }
        self.rows += 1;
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.rows * ROW_BYTES);
        for column in [
            &self.item,
            &self.prompt,
            &self.repeat,
            &self.status,
            &self.accepted,
        ]
        .into_iter()
        .chain(&self.times)
        .chain(&self.tokens)
        {
            out.extend_from_slice(column);
        }
        out
    }
}

async fn insert_part(
    tx: &mut Transaction<'_, Sqlite>,
    run_id: i64,
    part: i64,
    rows: u64,
    data: &[u8],
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO run_columns (run_id, part, rows, sha256, data) VALUES (?, ?, ?, ?, ?)",
    )
    .bind(run_id)
    .bind(part)
    .bind(rows as i64)
    .bind(sha256_hex(data))
    .bind(data)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A time as SQLite hands it back once stored: a REAL with no fraction is stored as an integer,
/// so `-0.0` reads back as `0.0`.
fn as_stored(v: f64) -> f64 {
    if v == 0.0 {
        0.0
    } else {
        v
    }
}

/// The columns of a run being written, built from its measured requests as they are written
/// when they come in plan order; when one does not (or the run had rows before), they are read
/// back from the stored rows at the end instead. Either way the same bytes: a test holds the
/// two to each other. Full parts are written as they fill, so it holds one part at a time.
pub(crate) struct RunColumns {
    run_id: i64,
    items: Numbered,
    prompts: Numbered,
    part: PartWriter,
    /// Parts filled and not yet written.
    full: Vec<PartWriter>,
    parts: i64,
    total: u64,
    ok: u64,
    last_idx: Option<i64>,
    /// The rows are read back at the end.
    read_back: bool,
}

impl RunColumns {
    /// For run `run_id`, which has no rows yet.
    pub(crate) fn new(run_id: i64) -> RunColumns {
        RunColumns {
            run_id,
            items: Numbered::default(),
            prompts: Numbered::default(),
            part: PartWriter::default(),
            full: Vec::new(),
            parts: 0,
            total: 0,
            ok: 0,
            last_idx: None,
            read_back: false,
        }
    }

    /// For run `run_id`, whose columns are read back from its rows at the end (it may hold rows
    /// written before).
    pub(crate) fn read_back(run_id: i64) -> RunColumns {
        RunColumns {
            read_back: true,
            ..RunColumns::new(run_id)
        }
    }

    /// A measured (not warm-up) request just written to the run.
    pub(crate) fn push(&mut self, q: &MeasuredRequest<'_>) {
        if self.read_back {
            return;
        }
        if self.last_idx.is_some_and(|last| q.idx <= last) {
            // Out of plan order: read back at the end; what was built is dropped.
            self.read_back = true;
            self.items = Numbered::default();
            self.prompts = Numbered::default();
            self.part = PartWriter::default();
            self.full.clear();
            return;
        }
        self.last_idx = Some(q.idx);
        let stored = MeasuredRequest {
            planned_arrival_ms: as_stored(q.planned_arrival_ms),
            dispatch_ms: q.dispatch_ms.map(as_stored),
            first_token_ms: q.first_token_ms.map(as_stored),
            finish_ms: q.finish_ms.map(as_stored),
            client_delay_ms: q.client_delay_ms.map(as_stored),
            engine_itl_ms: q.engine_itl_ms.map(as_stored),
            ..q.clone()
        };
        self.part.push(&stored, &mut self.items, &mut self.prompts);
        self.total += 1;
        self.ok += u64::from(q.status == RequestStatus::Ok);
        if self.part.rows == PART_ROWS {
            self.full.push(std::mem::take(&mut self.part));
        }
    }

    /// Writes the parts filled so far.
    pub(crate) async fn write_full(
        &mut self,
        tx: &mut Transaction<'_, Sqlite>,
    ) -> Result<(), StoreError> {
        for part in std::mem::take(&mut self.full) {
            insert_part(tx, self.run_id, self.parts, part.rows as u64, &part.bytes()).await?;
            self.parts += 1;
        }
        Ok(())
    }

    /// Writes the rest of the columns, called in the transaction that finishes the run just
    /// before its final state: its measured requests, and how many of them are ok.
    pub(crate) async fn finish(
        mut self,
        tx: &mut Transaction<'_, Sqlite>,
    ) -> Result<(u64, u64), StoreError> {
        if self.read_back {
            // Parts built before a row came out of order are not the run's.
            sqlx::query("DELETE FROM run_columns WHERE run_id = ?")
                .bind(self.run_id)
                .execute(&mut **tx)
                .await?;
            return write_run_columns(tx, self.run_id).await;
        }
        if self.part.rows > 0 {
            self.full.push(std::mem::take(&mut self.part));
        }
        self.write_full(tx).await?;
        insert_dictionary(
            tx,
            self.run_id,
            self.total,
            self.parts,
            &self.items,
            &self.prompts,
        )
        .await?;
        Ok((self.total, self.ok))
    }
}

async fn insert_dictionary(
    tx: &mut Transaction<'_, Sqlite>,
    run_id: i64,
    total: u64,
    parts: i64,
    items: &Numbered,
    prompts: &Numbered,
) -> Result<(), StoreError> {
    let mut dictionary = Vec::new();
    dictionary.extend_from_slice(&VERSION.to_le_bytes());
    dictionary.extend_from_slice(&total.to_le_bytes());
    dictionary.extend_from_slice(&(parts as u32).to_le_bytes());
    items.write(&mut dictionary);
    prompts.write(&mut dictionary);
    insert_part(tx, run_id, DICTIONARY, total, &dictionary).await
}

/// Writes the columns of run `run_id`'s measured requests as stored so far, read back from its
/// rows: its measured requests, and how many of them are ok.
async fn write_run_columns(
    tx: &mut Transaction<'_, Sqlite>,
    run_id: i64,
) -> Result<(u64, u64), StoreError> {
    let mut items = Numbered::default();
    let mut prompts = Numbered::default();
    let mut after = i64::MIN;
    let mut parts = 0i64;
    let mut total = 0u64;
    let mut ok = 0u64;
    loop {
        let mut part = PartWriter::default();
        let mut last = after;
        step_on(
            tx,
            RUN_MEASURED_PAGE_SQL,
            "the measured requests of a finished run",
            &[run_id, after, PART_ROWS as i64],
            |s| {
                // SAFETY: `s` holds a row of the page query; what it borrows is used here.
                let q = unsafe { measured_row(s) }?;
                last = q.idx;
                ok += u64::from(q.status == RequestStatus::Ok);
                part.push(&q, &mut items, &mut prompts);
                Ok(())
            },
        )
        .await?;
        if part.rows == 0 {
            break;
        }
        insert_part(tx, run_id, parts, part.rows as u64, &part.bytes()).await?;
        parts += 1;
        total += part.rows as u64;
        after = last;
        if part.rows < PART_ROWS {
            break;
        }
    }
    insert_dictionary(tx, run_id, total, parts, &items, &prompts).await?;
    Ok((total, ok))
}

/// A run's dictionary: its distinct item ids and prompt digests, in one text (a string apiece
/// would be a million allocations at a million rows).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ColumnsDictionary {
    text: String,
    items: Vec<(u32, u32)>,
    prompts: Vec<(u32, u32)>,
    /// Rows in all parts.
    pub rows: u64,
    parts: u32,
    /// The stored sha256 of the dictionary's bytes, which they were checked against.
    sha256: String,
}

impl ColumnsDictionary {
    /// The sha256 of the dictionary's bytes: two runs with the same one name the same entries
    /// in the same order.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Distinct item ids.
    pub fn item_count(&self) -> usize {
        self.items.len()
    }

    /// Distinct prompt digests.
    pub fn prompt_count(&self) -> usize {
        self.prompts.len()
    }

    /// Item id `k` (< [`ColumnsDictionary::item_count`]; every index a part holds is checked).
    pub fn item(&self, k: u32) -> &str {
        let (from, to) = self.items[k as usize];
        &self.text[from as usize..to as usize]
    }

    /// Prompt digest `k`.
    pub fn prompt(&self, k: u32) -> &str {
        let (from, to) = self.prompts[k as usize];
        &self.text[from as usize..to as usize]
    }
}

/// One part of a run's columns, read.
#[derive(Debug)]
pub struct ColumnsPart<'a> {
    rows: usize,
    data: &'a [u8],
}

/// One row of a part; item and prompt are indices into the run's [`ColumnsDictionary`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColumnsRow {
    pub item: Option<u32>,
    pub prompt: Option<u32>,
    pub repeat: u32,
    pub status: RequestStatus,
    pub accepted: Option<bool>,
    pub planned_arrival_ms: f64,
    pub dispatch_ms: Option<f64>,
    pub first_token_ms: Option<f64>,
    pub finish_ms: Option<f64>,
    pub client_delay_ms: Option<f64>,
    pub engine_itl_ms: Option<f64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

impl ColumnsPart<'_> {
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Why a row of the part cannot be read against `dict`, if one cannot: a status or verdict
    /// code that is none, an item or prompt the dictionary does not hold.
    fn check(&self, dict: &ColumnsDictionary) -> Result<(), String> {
        let n = self.rows;
        let (statuses, accepted) = self.data[12 * n..14 * n].split_at(n);
        if let Some(i) = statuses.iter().position(|&c| c as usize >= STATUSES.len()) {
            return Err(format!("row {i}: status code {}", statuses[i]));
        }
        if let Some(i) = accepted.iter().position(|&c| c > NONE_ACCEPTED) {
            return Err(format!("row {i}: verdict code {}", accepted[i]));
        }
        for i in 0..n {
            let r = self.row(i);
            if r.item.is_some_and(|k| k as usize >= dict.items.len())
                || r.prompt.is_some_and(|k| k as usize >= dict.prompts.len())
            {
                return Err(format!("row {i} names no stored item or prompt"));
            }
        }
        Ok(())
    }

    fn at<const N: usize>(&self, start: usize, width: usize, i: usize) -> [u8; N] {
        let from = start + i * width;
        self.data[from..from + N].try_into().expect("a fixed width")
    }

    /// Row `i` (< [`ColumnsPart::rows`]).
    pub fn row(&self, i: usize) -> ColumnsRow {
        let n = self.rows;
        let u32_at = |column: usize| u32::from_le_bytes(self.at(column * 4 * n, 4, i));
        let opt_u32 = |v: u32| (v != NONE_U32).then_some(v);
        let bytes_start = 12 * n;
        let times_start = bytes_start + 2 * n;
        let time = |k: usize| f64::from_le_bytes(self.at(times_start + k * 8 * n, 8, i));
        let opt_time = |k: usize| Some(time(k)).filter(|v| !v.is_nan());
        let tokens_start = times_start + 6 * 8 * n;
        let tokens = |k: usize| {
            let v = u64::from_le_bytes(self.at(tokens_start + k * 8 * n, 8, i));
            (v != NONE_U64).then_some(v)
        };
        let status = self.data[bytes_start + i];
        let accepted = self.data[bytes_start + n + i];
        ColumnsRow {
            item: opt_u32(u32_at(0)),
            prompt: opt_u32(u32_at(1)),
            repeat: u32_at(2),
            status: STATUSES[status as usize],
            accepted: (accepted != NONE_ACCEPTED).then_some(accepted == 1),
            planned_arrival_ms: time(0),
            dispatch_ms: opt_time(1),
            first_token_ms: opt_time(2),
            finish_ms: opt_time(3),
            client_delay_ms: opt_time(4),
            engine_itl_ms: opt_time(5),
            prompt_tokens: tokens(0),
            completion_tokens: tokens(1),
        }
    }
}

/// Reads `u32`-length-prefixed strings and fixed-width numbers from a dictionary.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// Length-prefixed strings appended to `text`: where each stands in it.
    fn strings(&mut self, text: &mut String) -> Option<Vec<(u32, u32)>> {
        let n = self.u32()? as usize;
        let mut out = Vec::with_capacity(n.min(self.bytes.len() / 4));
        for _ in 0..n {
            let len = self.u32()? as usize;
            let from = u32::try_from(text.len()).ok()?;
            text.push_str(std::str::from_utf8(self.take(len)?).ok()?);
            out.push((from, u32::try_from(text.len()).ok()?));
        }
        Some(out)
    }
}

fn read_dictionary(data: &[u8]) -> Option<ColumnsDictionary> {
    let mut r = Reader { bytes: data };
    if r.u32()? != VERSION {
        return None;
    }
    let rows = r.u64()?;
    let parts = r.u32()?;
    let mut text = String::with_capacity(data.len());
    let items = r.strings(&mut text)?;
    let prompts = r.strings(&mut text)?;
    r.bytes.is_empty().then_some(ColumnsDictionary {
        text,
        items,
        prompts,
        rows,
        parts,
        sha256: String::new(),
    })
}

/// A part that does not read as written: the columns are not used.
fn broken(run_id: i64, part: i64, what: String) -> StoreError {
    StoreError::Corrupt {
        table: "run_columns",
        row: run_id,
        column: if part == DICTIONARY {
            "dictionary"
        } else {
            "data"
        },
        expected: "the columns written when the run finished",
        found: format!("run {run_id}, part {part}: {what}"),
    }
}

impl Store {
    /// Whether run `run_id` has stored columns.
    pub async fn has_run_columns(&self, run_id: i64) -> Result<bool, StoreError> {
        let n: i64 =
            sqlx::query_scalar("SELECT count(*) FROM run_columns WHERE run_id = ? AND part = -1")
                .bind(run_id)
                .fetch_one(&self.pool)
                .await?;
        Ok(n > 0)
    }

    /// Reads run `run_id`'s columns: `Ok(None)` when it has none; else calls `part` with its
    /// dictionary and each part in order, and returns the dictionary. `measured` is the run's measured request
    /// count (`ok + failed`): columns counting other rows, a part whose bytes are not their
    /// sha256, or one that does not read as written fail the read with [`StoreError::Corrupt`],
    /// named by run and part (rows handed out before it was found are the caller's to drop).
    pub async fn read_run_columns(
        &self,
        run_id: i64,
        measured: u64,
        mut part: impl FnMut(&ColumnsDictionary, &ColumnsPart<'_>),
    ) -> Result<Option<ColumnsDictionary>, StoreError> {
        let mut dict: Option<ColumnsDictionary> = None;
        let mut next = DICTIONARY;
        let mut seen = 0u64;
        let mut conn = self.pool.acquire().await?;
        // Each part's bytes are read into one buffer, kept from part to part: SQLite would
        // allocate each part's megabytes afresh (`length(data)` reads no byte of them).
        let mut bytes = BlobReader::default();
        step_on(
            &mut conn,
            "SELECT part, rows, sha256, id, length(data) FROM run_columns \
             WHERE run_id = ? ORDER BY part",
            "the columns of a run",
            &[run_id],
            |s| {
                // SAFETY: `s` holds a row of the query; its text is used before the next step.
                let (n, count, sha256, id, len) = unsafe {
                    (
                        ffi::sqlite3_column_int64(s, 0),
                        ffi::sqlite3_column_int64(s, 1),
                        blob(s, 2),
                        ffi::sqlite3_column_int64(s, 3),
                        ffi::sqlite3_column_int64(s, 4),
                    )
                };
                if n != next {
                    return Err(broken(run_id, next, "missing".into()));
                }
                // SAFETY: the connection `s` was prepared on, locked for this thread.
                let data = unsafe { bytes.read(ffi::sqlite3_db_handle(s), id, len) }
                    .map_err(|why| broken(run_id, n, why))?;
                next += 1;
                let Some(dict) = &dict else {
                    // The digest on the other core while the dictionary is read; it is checked
                    // before anything read is used.
                    let (same, read) = std::thread::scope(|scope| {
                        let digest = scope.spawn(|| sha256_hex(data));
                        let read = read_dictionary(data);
                        (digest.join().map(|d| d.as_bytes() == sha256), read)
                    });
                    if !matches!(same, Ok(true)) {
                        return Err(broken(run_id, n, "its bytes are not its sha256".into()));
                    }
                    let mut read = read
                        .ok_or_else(|| broken(run_id, n, "does not read as a dictionary".into()))?;
                    read.sha256 = String::from_utf8_lossy(sha256).into_owned();
                    if read.rows != measured {
                        return Err(broken(
                            run_id,
                            n,
                            format!(
                                "counts {} rows, the run has {measured} measured requests",
                                read.rows
                            ),
                        ));
                    }
                    dict = Some(read);
                    return Ok(());
                };
                let count = usize::try_from(count).unwrap_or(usize::MAX);
                if n >= i64::from(dict.parts)
                    || count == 0
                    || count > PART_ROWS
                    || data.len() != count * ROW_BYTES
                {
                    return Err(broken(
                        run_id,
                        n,
                        format!("{} bytes for {count} rows", data.len()),
                    ));
                }
                let read = ColumnsPart { rows: count, data };
                read.check(dict).map_err(|why| broken(run_id, n, why))?;
                seen += count as u64;
                // The digest is computed on the other core while the rows are handed out; a
                // part that is not its digest fails the read, so nothing read from it is kept.
                let same = std::thread::scope(|scope| {
                    let digest = scope.spawn(|| sha256_hex(data));
                    part(dict, &read);
                    digest.join().map(|d| d.as_bytes() == sha256)
                });
                if !matches!(same, Ok(true)) {
                    return Err(broken(run_id, n, "its bytes are not its sha256".into()));
                }
                Ok(())
            },
        )
        .await?;
        let Some(dict) = dict else {
            return match next {
                DICTIONARY => Ok(None),
                _ => Err(broken(run_id, DICTIONARY, "missing".into())),
            };
        };
        if next != i64::from(dict.parts) || seen != dict.rows {
            return Err(broken(
                run_id,
                DICTIONARY,
                format!(
                    "counts {} rows in {} parts, {seen} rows in {next} parts are stored",
                    dict.rows, dict.parts
                ),
            ));
        }
        Ok(Some(dict))
    }
}

/// Reads `run_columns.data` of one row after another into one buffer.
#[derive(Default)]
struct BlobReader {
    buffer: Vec<u8>,
}

/// Closes a blob handle however its read ends.
struct Blob(*mut ffi::sqlite3_blob);

impl Drop for Blob {
    fn drop(&mut self) {
        // SAFETY: opened on a handle still locked by the caller, closed once (null: no-op).
        unsafe { ffi::sqlite3_blob_close(self.0) };
    }
}

impl BlobReader {
    /// The `len` bytes of `data` of row `id`; else SQLite's refusal.
    ///
    /// SAFETY: `db` is a valid handle, locked for this thread.
    unsafe fn read(&mut self, db: *mut ffi::sqlite3, id: i64, len: i64) -> Result<&[u8], String> {
        let refused = || {
            let message = std::ffi::CStr::from_ptr(ffi::sqlite3_errmsg(db));
            format!("its bytes cannot be read: {}", message.to_string_lossy())
        };
        let Some(n) = c_int::try_from(len).ok().filter(|n| *n >= 0) else {
            return Err(format!("{len} bytes"));
        };
        let mut blob = Blob(std::ptr::null_mut());
        let rc = ffi::sqlite3_blob_open(
            db,
            c"main".as_ptr(),
            c"run_columns".as_ptr(),
            c"data".as_ptr(),
            id,
            0,
            &mut blob.0,
        );
        if rc != ffi::SQLITE_OK {
            return Err(refused());
        }
        let held = ffi::sqlite3_blob_bytes(blob.0);
        if held != n {
            return Err(format!("{held} bytes where {n} were listed"));
        }
        self.buffer.resize(n as usize, 0);
        if ffi::sqlite3_blob_read(blob.0, self.buffer.as_mut_ptr().cast(), n, 0) != ffi::SQLITE_OK {
            return Err(refused());
        }
        Ok(&self.buffer)
    }
}

/// Column `i` of the row `s` holds, as bytes (text or blob; empty for NULL).
///
/// SAFETY: `s` holds a row; the bytes are valid until the next step.
unsafe fn blob<'a>(s: *mut ffi::sqlite3_stmt, i: c_int) -> &'a [u8] {
    let ptr = ffi::sqlite3_column_blob(s, i).cast::<u8>();
    let len = ffi::sqlite3_column_bytes(s, i);
    if ptr.is_null() || len <= 0 {
        return &[];
    }
    std::slice::from_raw_parts(ptr, len as usize)
}
