//! The measured requests of a study in bulk, for the analysis: one pass over the rows, in
//! run and plan order, without building a row object per request.

use futures_util::TryStreamExt;
use kvgate_core::run::RequestStatus;
use sqlx::Row;

use crate::{Store, StoreError};

/// One measured (non-warm-up) request, reduced to what the analysis reads.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredRequest {
    pub run_id: i64,
    pub idx: i64,
    pub repeat: u32,
    pub item_id: Option<String>,
    pub status: RequestStatus,
    pub planned_arrival_ms: f64,
    pub dispatch_ms: Option<f64>,
    pub first_token_ms: Option<f64>,
    pub finish_ms: Option<f64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub accepted: Option<bool>,
}

// Ordered by `r.id` (equal to `q.run_id` by the join) so SQLite walks the runs index and the
// requests' primary key in order instead of sorting every row in a temporary B-tree.
const MEASURED: &str = "SELECT q.run_id, q.idx, q.repeat, q.item_id, q.status, \
     q.planned_arrival_ms, q.dispatch_ms, q.first_token_ms, q.finish_ms, q.prompt_tokens, \
     q.completion_tokens, q.verdict_accepted \
     FROM runs r JOIN run_requests q ON q.run_id = r.id AND q.warmup = 0 \
     WHERE r.study_id = ? ORDER BY r.id, q.idx";

fn non_negative(v: Option<i64>) -> Option<u64> {
    v.and_then(|v| u64::try_from(v).ok())
}

impl Store {
    /// Calls `each` with every measured request of the study's runs, in run and plan order.
    pub async fn for_each_measured_request(
        &self,
        study_id: i64,
        mut each: impl FnMut(MeasuredRequest),
    ) -> Result<u64, StoreError> {
        let mut rows = sqlx::query(MEASURED).bind(study_id).fetch(&self.pool);
        let mut n = 0;
        while let Some(row) = rows.try_next().await? {
            let run_id: i64 = row.try_get(0)?;
            let status: &str = row.try_get(4)?;
            let status = RequestStatus::parse(status).ok_or_else(|| StoreError::Corrupt {
                table: "run_requests",
                row: run_id,
                column: "status",
                expected: "ok, error, timeout, rejected or unfinished",
                found: status.to_owned(),
            })?;
            let repeat: i64 = row.try_get(2)?;
            each(MeasuredRequest {
                run_id,
                idx: row.try_get(1)?,
                repeat: u32::try_from(repeat).unwrap_or(u32::MAX),
                item_id: row.try_get(3)?,
                status,
                planned_arrival_ms: row.try_get(5)?,
                dispatch_ms: row.try_get(6)?,
                first_token_ms: row.try_get(7)?,
                finish_ms: row.try_get(8)?,
                prompt_tokens: non_negative(row.try_get(9)?),
                completion_tokens: non_negative(row.try_get(10)?),
                accepted: row.try_get::<Option<i64>, _>(11)?.map(|v| v != 0),
            });
            n += 1;
        }
        Ok(n)
    }
}
