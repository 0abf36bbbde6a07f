//! What a study's progress is counted from, read in one cheap query each.

use crate::{Store, StoreError};

impl Store {
    /// The cells of a study that have at least one run holding a measured (non-warm-up) request
    /// or a tool aggregate, sorted: the cells with results. Aggregates of evidence-only runs
    /// (nvidia-smi memory readings) are evidence, not results.
    pub async fn cells_with_results(&self, study_id: i64) -> Result<Vec<String>, StoreError> {
        let cells = sqlx::query_scalar::<_, String>(
            "SELECT DISTINCT r.cell FROM run_records r WHERE r.study_id = ? AND (\
             EXISTS (SELECT 1 FROM run_requests q WHERE q.run_id = r.id AND q.warmup = 0) \
             OR (r.granularity <> 'evidence' \
             AND EXISTS (SELECT 1 FROM run_aggregates a WHERE a.run_id = r.id))) ORDER BY r.cell",
        )
        .bind(study_id)
        .fetch_all(&self.pool)
        .await?;
        Ok(cells)
    }
}
