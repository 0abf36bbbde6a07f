//! Recovery plans: one immutable row per version.

use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use crate::{now_rfc3339, Store, StoreError};

/// A recorded recovery plan version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryPlanRecord {
    pub study_id: i64,
    pub version: i64,
    /// The canonical JSON the digest covers.
    pub plan_json: String,
    pub sha256: String,
    pub recorded_at: String,
    pub recorded_by: String,
}

const COLUMNS: &str = "study_id, version, plan_json, sha256, recorded_at, recorded_by";

fn record_from_row(row: &SqliteRow) -> Result<RecoveryPlanRecord, StoreError> {
    Ok(RecoveryPlanRecord {
        study_id: row.try_get("study_id")?,
        version: row.try_get("version")?,
        plan_json: row.try_get("plan_json")?,
        sha256: row.try_get("sha256")?,
        recorded_at: row.try_get("recorded_at")?,
        recorded_by: row.try_get("recorded_by")?,
    })
}

impl Store {
    /// Records the next recovery plan version of a study. `plan_json` must be canonical JSON and
    /// `sha256` its digest; recording the same digest as the latest version is a conflict.
    pub async fn record_recovery_plan(
        &self,
        study_id: i64,
        plan_json: &str,
        sha256: &str,
        recorded_by: &str,
    ) -> Result<RecoveryPlanRecord, StoreError> {
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await?;
        let version = crate::versions::next_version(
            &mut tx,
            "recovery_plans",
            "recovery plan",
            study_id,
            sha256,
        )
        .await?;
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO recovery_plans (study_id, version, plan_json, sha256, recorded_at, \
             recorded_by) VALUES (?, ?, ?, ?, ?, ?) RETURNING {COLUMNS}"
        )))
        .bind(study_id)
        .bind(version)
        .bind(plan_json)
        .bind(sha256)
        .bind(now_rfc3339())
        .bind(recorded_by)
        .fetch_one(&mut *tx)
        .await?;
        let record = record_from_row(&row)?;
        tx.commit().await?;
        Ok(record)
    }

    /// Every recovery plan version of a study, oldest first.
    pub async fn recovery_plans(
        &self,
        study_id: i64,
    ) -> Result<Vec<RecoveryPlanRecord>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM recovery_plans WHERE study_id = ? ORDER BY version"
        )))
        .bind(study_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(record_from_row).collect()
    }
}
