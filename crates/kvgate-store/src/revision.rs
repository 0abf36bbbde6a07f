//! A study's revision: one sha256 over everything its analysis reads from the database, so a
//! derived result (the analysis) can be kept while the revision stays the same and is computed
//! again the moment anything it reads changes, in this process or another one.

use kvgate_core::canonical::sha256_hex;
use sqlx::Row;

use crate::{Store, StoreError};

impl Store {
    /// The digest of the study's analysis inputs: the study row; every manifest (text, digest,
    /// frozen time); every run's identity, state, configuration digest and counts (a finished
    /// run's requests, evidence and scrapes never change, and a running run is not analyzed);
    /// every import; every locked policy version; the head of the audit chain (labels,
    /// interventions, sign-offs) and the current labels' count and sequence sums.
    ///
    /// Read in one transaction, so the parts agree with one another. Cheap: a few rows per run
    /// and manifest, aggregates for labels.
    pub async fn study_revision(&self, study_id: i64) -> Result<String, StoreError> {
        let mut tx = self.pool.begin().await?;
        let mut text = String::new();
        let mut push = |fields: Vec<String>| {
            text.push_str(&fields.join("\u{1f}"));
            text.push('\n');
        };
        let text_of =
            |row: &sqlx::sqlite::SqliteRow, n: usize| -> Result<Vec<String>, StoreError> {
                (0..n)
                    .map(|i| {
                        let v: Option<String> = row.try_get(i)?;
                        Ok(v.unwrap_or_else(|| "\u{0}".to_owned()))
                    })
                    .collect()
            };
        let queries: [(&str, usize); 6] = [
            (
                "SELECT 'study', name, provenance FROM studies WHERE id = ?",
                3,
            ),
            (
                "SELECT 'manifest', CAST(id AS TEXT), cell, text, digest, frozen_at, updated_at \
                 FROM manifests WHERE study_id = ? ORDER BY id",
                7,
            ),
            (
                "SELECT 'run', CAST(id AS TEXT), CAST(manifest_id AS TEXT), kind, state, label, \
                 config_sha256, finished_at, CAST(ok AS TEXT), CAST(failed AS TEXT), note \
                 FROM runs WHERE study_id = ? ORDER BY id",
                11,
            ),
            (
                "SELECT 'import', CAST(id AS TEXT), source_sha256, CAST(manifest_id AS TEXT) \
                 FROM imports WHERE study_id = ? ORDER BY id",
                4,
            ),
            (
                "SELECT 'policy', CAST(version AS TEXT), sha256, locked_at, locked_by, \
                 CAST(runs_at_lock AS TEXT), CAST(changed_after_results AS TEXT) \
                 FROM policies WHERE study_id = ? ORDER BY version",
                7,
            ),
            (
                // Every label the app sets is an audit event (the chain head below); these sums
                // also move when a label row is edited outside the app.
                "SELECT 'labels', CAST(count(*) AS TEXT), CAST(total(event_seq) AS TEXT), \
                 CAST(total(event_seq * length(label)) AS TEXT) \
                 FROM adjudications WHERE study_id = ?",
                4,
            ),
        ];
        for (sql, n) in queries {
            for row in sqlx::query(sql).bind(study_id).fetch_all(&mut *tx).await? {
                push(text_of(&row, n)?);
            }
        }
        let head = sqlx::query(
            "SELECT 'audit', CAST(seq AS TEXT), hash FROM audit_events \
             WHERE study_id = ? ORDER BY seq DESC LIMIT 1",
        )
        .bind(study_id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = head {
            push(text_of(&row, 3)?);
        }
        tx.commit().await?;
        Ok(sha256_hex(text.as_bytes()))
    }
}
