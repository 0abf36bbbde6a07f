use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use crate::{now_rfc3339, Store, StoreError};

/// A stored manifest: a draft (editable) or frozen (immutable, with its digest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestRecord {
    pub id: i64,
    pub study_id: i64,
    pub cell: String,
    /// As authored for a draft; the canonical JSON the digest covers once frozen.
    pub text: String,
    pub digest: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub frozen_at: Option<String>,
}

impl ManifestRecord {
    pub fn is_frozen(&self) -> bool {
        self.frozen_at.is_some()
    }
}

macro_rules! columns {
    () => {
        "id, study_id, cell, text, digest, created_at, updated_at, frozen_at"
    };
}

fn record_from_row(row: &SqliteRow) -> Result<ManifestRecord, StoreError> {
    Ok(ManifestRecord {
        id: row.try_get("id")?,
        study_id: row.try_get("study_id")?,
        cell: row.try_get("cell")?,
        text: row.try_get("text")?,
        digest: row.try_get("digest")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        frozen_at: row.try_get("frozen_at")?,
    })
}

/// Maps the freeze triggers' refusal to a typed error naming the cell.
fn frozen_or(err: sqlx::Error, cell: &str) -> StoreError {
    match &err {
        sqlx::Error::Database(db) if db.message().contains("manifest is frozen") => {
            StoreError::Frozen {
                entity: "manifest",
                key: format!("cell {cell}"),
            }
        }
        _ => err.into(),
    }
}

impl Store {
    /// Creates or replaces the draft of `cell` in a study. Refused when that cell is frozen.
    pub async fn save_manifest_draft(
        &self,
        study_id: i64,
        cell: &str,
        text: &str,
    ) -> Result<ManifestRecord, StoreError> {
        let sql = concat!(
            "INSERT INTO manifests (study_id, cell, text, created_at, updated_at) ",
            "VALUES (?, ?, ?, ?, ?) ",
            "ON CONFLICT (study_id, cell) DO UPDATE SET text = excluded.text, ",
            "updated_at = excluded.updated_at RETURNING ",
            columns!()
        );
        self.insert_draft(sql, study_id, cell, text).await
    }

    /// Inserts a new draft; a conflict when the cell already has a manifest in the study.
    pub async fn insert_manifest_draft(
        &self,
        study_id: i64,
        cell: &str,
        text: &str,
    ) -> Result<ManifestRecord, StoreError> {
        let sql = concat!(
            "INSERT INTO manifests (study_id, cell, text, created_at, updated_at) ",
            "VALUES (?, ?, ?, ?, ?) RETURNING ",
            columns!()
        );
        self.insert_draft(sql, study_id, cell, text).await
    }

    async fn insert_draft(
        &self,
        sql: &'static str,
        study_id: i64,
        cell: &str,
        text: &str,
    ) -> Result<ManifestRecord, StoreError> {
        let now = now_rfc3339();
        let row = sqlx::query(sql)
            .bind(study_id)
            .bind(cell)
            .bind(text)
            .bind(&now)
            .bind(&now)
            .fetch_one(&self.pool)
            .await
            .map_err(|err| {
                if StoreError::is_unique_violation(&err) {
                    StoreError::Conflict {
                        entity: "manifest",
                        field: "cell",
                        value: cell.to_owned(),
                    }
                } else {
                    frozen_or(err, cell)
                }
            })?;
        record_from_row(&row)
    }

    /// Freezes the draft of `cell`: stores its canonical text and digest, once and for all.
    pub async fn freeze_manifest(
        &self,
        study_id: i64,
        cell: &str,
        canonical_text: &str,
        digest: &str,
    ) -> Result<ManifestRecord, StoreError> {
        let now = now_rfc3339();
        let sql = concat!(
            "UPDATE manifests SET text = ?, digest = ?, frozen_at = ?, updated_at = ? ",
            "WHERE study_id = ? AND cell = ? RETURNING ",
            columns!()
        );
        let row = sqlx::query(sql)
            .bind(canonical_text)
            .bind(digest)
            .bind(&now)
            .bind(&now)
            .bind(study_id)
            .bind(cell)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| frozen_or(e, cell))?;
        match row {
            Some(row) => record_from_row(&row),
            None => Err(StoreError::NotFound {
                entity: "manifest",
                key: format!("cell {cell}"),
            }),
        }
    }

    /// Deletes the draft of `cell`; a frozen manifest is refused by the database.
    pub async fn delete_manifest_draft(&self, study_id: i64, cell: &str) -> Result<(), StoreError> {
        let done = sqlx::query("DELETE FROM manifests WHERE study_id = ? AND cell = ?")
            .bind(study_id)
            .bind(cell)
            .execute(&self.pool)
            .await
            .map_err(|e| frozen_or(e, cell))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound {
                entity: "manifest",
                key: format!("cell {cell}"),
            });
        }
        Ok(())
    }

    /// The manifest of `cell` in a study, if any.
    pub async fn manifest(
        &self,
        study_id: i64,
        cell: &str,
    ) -> Result<Option<ManifestRecord>, StoreError> {
        let sql = concat!(
            "SELECT ",
            columns!(),
            " FROM manifests WHERE study_id = ? AND cell = ?"
        );
        let row = sqlx::query(sql)
            .bind(study_id)
            .bind(cell)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(record_from_row).transpose()
    }

    /// Every manifest of a study, in creation order.
    pub async fn list_manifests(&self, study_id: i64) -> Result<Vec<ManifestRecord>, StoreError> {
        let sql = concat!(
            "SELECT ",
            columns!(),
            " FROM manifests WHERE study_id = ? ORDER BY id"
        );
        let rows = sqlx::query(sql)
            .bind(study_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(record_from_row).collect()
    }
}
