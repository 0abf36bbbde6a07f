//! The measured requests of a study in bulk, for the analysis: one pass over the rows, in
//! run and plan order, without building a row object per request.

use std::os::raw::c_int;

use kvgate_core::run::RequestStatus;
use libsqlite3_sys as ffi;

use sqlx::SqliteConnection;

use crate::{Store, StoreError};

/// One measured (non-warm-up) request, reduced to what the analysis reads.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredRequest<'a> {
    pub run_id: i64,
    pub idx: i64,
    pub repeat: u32,
    /// Borrowed from the row: valid for the call it is handed to.
    pub item_id: Option<&'a str>,
    pub status: RequestStatus,
    pub planned_arrival_ms: f64,
    pub dispatch_ms: Option<f64>,
    pub first_token_ms: Option<f64>,
    pub finish_ms: Option<f64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub accepted: Option<bool>,
    /// The sha256 of what was sent; `None` for rows stored before it was recorded. Borrowed.
    pub prompt_sha256: Option<&'a str>,
    pub client_delay_ms: Option<f64>,
    /// The engine's `timings.predicted_per_token_ms` (llama.cpp), stored beside its timings
    /// when a number; `None` when the engine sent none.
    pub engine_itl_ms: Option<f64>,
}

// The rows are read through the requests' primary key. The analysis reads a finished run's
// columns instead (`run_columns`); these queries serve the runs finished before those existed,
// the columns' own writing when a run's rows came out of order, and tests. The engine's
// per-token time is its own column, written with the row (see `runs::engine_itl_ms`).
// Ordered by `r.id` (equal to `q.run_id` by the join) so SQLite walks the runs index and the
// requests' primary key in order instead of sorting every row in a temporary B-tree.
/// The columns of a measured request, in the order [`measured_row`] reads them.
macro_rules! measured_columns {
    () => {
        "q.run_id, q.idx, q.repeat, q.item_id, q.status, q.planned_arrival_ms, q.dispatch_ms, \
         q.first_token_ms, q.finish_ms, q.prompt_tokens, q.completion_tokens, \
         q.verdict_accepted, q.prompt_sha256, q.client_delay_ms, q.engine_itl_ms"
    };
}

/// The query of [`Store::for_each_measured_request`], public so that its plan can be checked.
pub const MEASURED_REQUESTS_SQL: &str = concat!(
    "SELECT ",
    measured_columns!(),
    " FROM runs r JOIN run_requests q ON q.run_id = r.id AND q.warmup = 0 \
     WHERE r.study_id = ? ORDER BY r.id, q.idx"
);

/// The measured requests of one run, in plan order (the same index, one run's range of it).
pub const RUN_MEASURED_REQUESTS_SQL: &str = concat!(
    "SELECT ",
    measured_columns!(),
    " FROM run_requests q WHERE q.run_id = ? AND q.warmup = 0 ORDER BY q.idx"
);

/// At most `?3` measured requests of run `?1` after plan index `?2`, in plan order.
pub(crate) const RUN_MEASURED_PAGE_SQL: &str = concat!(
    "SELECT ",
    measured_columns!(),
    " FROM run_requests q WHERE q.run_id = ?1 AND q.warmup = 0 AND q.idx > ?2 \
     ORDER BY q.idx LIMIT ?3"
);

fn non_negative(v: Option<i64>) -> Option<u64> {
    v.and_then(|v| u64::try_from(v).ok())
}

/// Finalizes the statement however the read or write ends.
pub(crate) struct Statement(pub(crate) *mut ffi::sqlite3_stmt);

impl Drop for Statement {
    fn drop(&mut self) {
        // SAFETY: the statement was prepared on a handle still locked by the caller and is
        // finalized exactly once.
        unsafe { ffi::sqlite3_finalize(self.0) };
    }
}

/// The error SQLite reports on `db`.
///
/// SAFETY: `db` must be a valid, locked handle.
pub(crate) unsafe fn sqlite_error(db: *mut ffi::sqlite3, what: &str) -> StoreError {
    let message = std::ffi::CStr::from_ptr(ffi::sqlite3_errmsg(db)).to_string_lossy();
    StoreError::Sqlite(format!("{what}: {message}"))
}

/// Prepares `sql` on `db`; a refusal is named `what`.
///
/// SAFETY: `db` is a valid handle locked for this thread.
pub(crate) unsafe fn prepare(
    db: *mut ffi::sqlite3,
    sql: &str,
    what: &str,
) -> Result<Statement, StoreError> {
    let mut raw = std::ptr::null_mut();
    let rc = ffi::sqlite3_prepare_v2(
        db,
        sql.as_ptr().cast(),
        sql.len() as c_int,
        &mut raw,
        std::ptr::null_mut(),
    );
    if rc != ffi::SQLITE_OK {
        return Err(sqlite_error(db, what));
    }
    Ok(Statement(raw))
}

/// SAFETY (all column readers): `stmt` holds a row and `i` is a column of the query.
unsafe fn opt_f64(stmt: *mut ffi::sqlite3_stmt, i: c_int) -> Option<f64> {
    (ffi::sqlite3_column_type(stmt, i) != ffi::SQLITE_NULL)
        .then(|| ffi::sqlite3_column_double(stmt, i))
}

unsafe fn opt_i64(stmt: *mut ffi::sqlite3_stmt, i: c_int) -> Option<i64> {
    (ffi::sqlite3_column_type(stmt, i) != ffi::SQLITE_NULL)
        .then(|| ffi::sqlite3_column_int64(stmt, i))
}

/// The column's text; `None` for NULL. The bytes stay valid until the next step.
unsafe fn opt_text<'a>(stmt: *mut ffi::sqlite3_stmt, i: c_int) -> Option<&'a [u8]> {
    if ffi::sqlite3_column_type(stmt, i) == ffi::SQLITE_NULL {
        return None;
    }
    let ptr = ffi::sqlite3_column_text(stmt, i);
    let len = ffi::sqlite3_column_bytes(stmt, i);
    if ptr.is_null() {
        return Some(&[]);
    }
    Some(std::slice::from_raw_parts(ptr, len as usize))
}

fn corrupt(run_id: i64, column: &'static str, expected: &'static str, found: &[u8]) -> StoreError {
    StoreError::Corrupt {
        table: "run_requests",
        row: run_id,
        column,
        expected,
        found: String::from_utf8_lossy(found).into_owned(),
    }
}

/// Steps `sql` (integer parameters `params`, bound in order) through SQLite's own API on
/// `conn`, calling `row` on each row: through sqlx each row would cross threads on its own, which
/// costs more than reading it. Blocks its thread while it reads. The number of rows.
pub(crate) async fn step_on(
    conn: &mut SqliteConnection,
    sql: &str,
    what: &str,
    params: &[i64],
    mut row: impl FnMut(*mut ffi::sqlite3_stmt) -> Result<(), StoreError>,
) -> Result<u64, StoreError> {
    let mut handle = conn.lock_handle().await?;
    let db = handle.as_raw_handle().as_ptr();
    let mut n = 0;
    // SAFETY: `db` is a valid handle, locked for this thread until `handle` is dropped; the
    // statement is prepared, stepped and finalized before that.
    unsafe {
        let stmt = prepare(db, sql, &format!("preparing {what}"))?;
        for (i, param) in params.iter().enumerate() {
            if ffi::sqlite3_bind_int64(stmt.0, i as c_int + 1, *param) != ffi::SQLITE_OK {
                return Err(sqlite_error(db, &format!("binding the query of {what}")));
            }
        }
        loop {
            match ffi::sqlite3_step(stmt.0) {
                ffi::SQLITE_ROW => {}
                ffi::SQLITE_DONE => break,
                _ => return Err(sqlite_error(db, &format!("reading {what}"))),
            }
            row(stmt.0)?;
            n += 1;
        }
    }
    Ok(n)
}

/// A row of a query selecting [`measured_columns`], as a measured request.
///
/// SAFETY: `s` holds a row of such a query; what is borrowed is valid until the next step.
pub(crate) unsafe fn measured_row<'a>(
    s: *mut ffi::sqlite3_stmt,
) -> Result<MeasuredRequest<'a>, StoreError> {
    let run_id = ffi::sqlite3_column_int64(s, 0);
    let status_text = opt_text(s, 4).unwrap_or_default();
    let status = std::str::from_utf8(status_text)
        .ok()
        .and_then(RequestStatus::parse)
        .ok_or_else(|| {
            corrupt(
                run_id,
                "status",
                "ok, error, timeout, rejected or unfinished",
                status_text,
            )
        })?;
    let item_id = match opt_text(s, 3) {
        None => None,
        Some(bytes) => Some(
            std::str::from_utf8(bytes)
                .map_err(|_| corrupt(run_id, "item_id", "UTF-8 text", bytes))?,
        ),
    };
    let prompt_sha256 = match opt_text(s, 12) {
        None => None,
        Some(bytes) => Some(
            std::str::from_utf8(bytes)
                .map_err(|_| corrupt(run_id, "prompt_sha256", "UTF-8 text", bytes))?,
        ),
    };
    let planned =
        opt_f64(s, 5).ok_or_else(|| corrupt(run_id, "planned_arrival_ms", "a number", b"NULL"))?;
    let repeat = ffi::sqlite3_column_int64(s, 2);
    Ok(MeasuredRequest {
        run_id,
        idx: ffi::sqlite3_column_int64(s, 1),
        repeat: u32::try_from(repeat).unwrap_or(u32::MAX),
        item_id,
        status,
        planned_arrival_ms: planned,
        dispatch_ms: opt_f64(s, 6),
        first_token_ms: opt_f64(s, 7),
        finish_ms: opt_f64(s, 8),
        prompt_tokens: non_negative(opt_i64(s, 9)),
        completion_tokens: non_negative(opt_i64(s, 10)),
        accepted: opt_i64(s, 11).map(|v| v != 0),
        prompt_sha256,
        client_delay_ms: opt_f64(s, 13),
        engine_itl_ms: opt_f64(s, 14),
    })
}

impl Store {
    /// [`step_on`] a connection of the pool.
    async fn step_rows(
        &self,
        sql: &str,
        what: &str,
        param: i64,
        row: impl FnMut(*mut ffi::sqlite3_stmt) -> Result<(), StoreError>,
    ) -> Result<u64, StoreError> {
        let mut conn = self.pool.acquire().await?;
        step_on(&mut conn, sql, what, &[param], row).await
    }

    /// Calls `each` with every measured request of the study's runs, in run and plan order.
    ///
    /// The rows are stepped through SQLite's own API on a connection locked out of the pool's
    /// worker: through sqlx each row would cross threads on its own, which costs more than
    /// reading it. The call blocks its thread while it reads.
    pub async fn for_each_measured_request(
        &self,
        study_id: i64,
        mut each: impl FnMut(MeasuredRequest<'_>),
    ) -> Result<u64, StoreError> {
        self.step_rows(
            MEASURED_REQUESTS_SQL,
            "the measured requests",
            study_id,
            // SAFETY: `s` holds a row of the query; what it borrows is used before the next step.
            |s| unsafe { measured_row(s) }.map(&mut each),
        )
        .await
    }

    /// [`Store::for_each_measured_request`] for the measured requests of one run.
    pub async fn for_each_measured_request_of_run(
        &self,
        run_id: i64,
        mut each: impl FnMut(MeasuredRequest<'_>),
    ) -> Result<u64, StoreError> {
        self.step_rows(
            RUN_MEASURED_REQUESTS_SQL,
            "the measured requests of a run",
            run_id,
            // SAFETY: as above.
            |s| unsafe { measured_row(s) }.map(&mut each),
        )
        .await
    }

    /// Calls `each` with every judged measured request of run `run_id` (item, pass, prompt
    /// digest, accepted; the verdict's reason codes when `with_reasons`), in plan order: what a
    /// review queue lists, stepped through SQLite's own API as the measured read is.
    pub async fn for_each_judged_request(
        &self,
        run_id: i64,
        with_reasons: bool,
        mut each: impl FnMut(JudgedRequest<'_>),
    ) -> Result<u64, StoreError> {
        let sql = if with_reasons {
            JUDGED_WITH_REASONS_SQL
        } else {
            JUDGED_SQL
        };
        self.step_rows(sql, "the judged requests", run_id, |s| {
            // SAFETY: `s` holds a row of the query; column pointers are used before the next step.
            unsafe {
                let text = |i: c_int, column: &'static str| -> Result<Option<&str>, StoreError> {
                    match opt_text(s, i) {
                        None => Ok(None),
                        Some(bytes) => std::str::from_utf8(bytes)
                            .map(Some)
                            .map_err(|_| corrupt(run_id, column, "UTF-8 text", bytes)),
                    }
                };
                let item_id = text(1, "item_id")?.unwrap_or_default();
                let repeat = ffi::sqlite3_column_int64(s, 0);
                each(JudgedRequest {
                    repeat: u32::try_from(repeat).unwrap_or(u32::MAX),
                    item_id,
                    prompt_sha256: text(2, "prompt_sha256")?,
                    accepted: ffi::sqlite3_column_int64(s, 3) != 0,
                    reasons_json: if with_reasons {
                        text(4, "verdict_reasons_json")?
                    } else {
                        None
                    },
                });
            }
            Ok(())
        })
        .await
    }
}

/// One judged measured request, reduced to what a review queue lists. Borrowed from the row:
/// valid for the call it is handed to.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgedRequest<'a> {
    pub repeat: u32,
    pub item_id: &'a str,
    pub prompt_sha256: Option<&'a str>,
    pub accepted: bool,
    /// The verdict's reason codes (a JSON array), when asked for.
    pub reasons_json: Option<&'a str>,
}

/// The judged requests of a run, from the measured index alone.
const JUDGED_SQL: &str = "SELECT repeat, item_id, prompt_sha256, verdict_accepted \
     FROM run_requests WHERE run_id = ? AND warmup = 0 AND item_id IS NOT NULL \
     AND verdict_accepted IS NOT NULL ORDER BY idx";

/// The same with the verdicts' reasons (read from the rows).
const JUDGED_WITH_REASONS_SQL: &str = "SELECT repeat, item_id, prompt_sha256, verdict_accepted, \
     verdict_reasons_json FROM run_requests WHERE run_id = ? AND warmup = 0 \
     AND item_id IS NOT NULL AND verdict_accepted IS NOT NULL ORDER BY idx";
