//! Locked acceptance policies: one immutable row per version.

use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use crate::{now_rfc3339, Store, StoreError};

/// A locked policy version as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRecord {
    pub id: i64,
    pub study_id: i64,
    pub version: i64,
    /// The canonical JSON the digest covers.
    pub policy_json: String,
    pub sha256: String,
    pub locked_at: String,
    pub locked_by: String,
    pub runs_at_lock: i64,
    pub changed_after_results: bool,
}

macro_rules! columns {
    () => {
        "id, study_id, version, policy_json, sha256, locked_at, locked_by, runs_at_lock, \
         changed_after_results"
    };
}

fn record_from_row(row: &SqliteRow) -> Result<PolicyRecord, StoreError> {
    Ok(PolicyRecord {
        id: row.try_get("id")?,
        study_id: row.try_get("study_id")?,
        version: row.try_get("version")?,
        policy_json: row.try_get("policy_json")?,
        sha256: row.try_get("sha256")?,
        locked_at: row.try_get("locked_at")?,
        locked_by: row.try_get("locked_by")?,
        runs_at_lock: row.try_get("runs_at_lock")?,
        changed_after_results: row.try_get::<i64, _>("changed_after_results")? != 0,
    })
}

/// Runs of a study that hold at least one measured request or tool aggregate: its results.
/// Aggregates of evidence-only runs (nvidia-smi memory readings) are not results.
const RESULT_RUNS: &str = "SELECT count(*) FROM runs r WHERE r.study_id = ? AND (\
     EXISTS (SELECT 1 FROM run_requests q WHERE q.run_id = r.id AND q.warmup = 0) \
     OR (r.granularity <> 'evidence' \
     AND EXISTS (SELECT 1 FROM run_aggregates a WHERE a.run_id = r.id)))";

impl Store {
    /// Locks the next policy version of a study. `policy_json` must be the canonical JSON and
    /// `sha256` its digest. Locking the same digest as the latest version is refused as a
    /// conflict (nothing changed); a later version records whether results existed.
    pub async fn lock_policy(
        &self,
        study_id: i64,
        policy_json: &str,
        sha256: &str,
        locked_by: &str,
    ) -> Result<PolicyRecord, StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let version =
            crate::versions::next_version(&mut tx, "policies", "policy", study_id, sha256).await?;
        let runs_at_lock: i64 = sqlx::query_scalar(RESULT_RUNS)
            .bind(study_id)
            .fetch_one(&mut *tx)
            .await?;
        let changed_after_results =
            kvgate_core::policy::lock_marks(version, runs_at_lock).changed_after_results;
        let sql = concat!(
            "INSERT INTO policies (study_id, version, policy_json, sha256, locked_at, locked_by, ",
            "runs_at_lock, changed_after_results) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING ",
            columns!()
        );
        let row = sqlx::query(sql)
            .bind(study_id)
            .bind(version)
            .bind(policy_json)
            .bind(sha256)
            .bind(now_rfc3339())
            .bind(locked_by)
            .bind(runs_at_lock)
            .bind(i64::from(changed_after_results))
            .fetch_one(&mut *tx)
            .await?;
        let record = record_from_row(&row)?;
        tx.commit().await?;
        Ok(record)
    }

    /// Every locked policy version of a study, oldest first.
    pub async fn policy_versions(&self, study_id: i64) -> Result<Vec<PolicyRecord>, StoreError> {
        let sql = concat!(
            "SELECT ",
            columns!(),
            " FROM policies WHERE study_id = ? ORDER BY version"
        );
        let rows = sqlx::query(sql)
            .bind(study_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(record_from_row).collect()
    }
}
