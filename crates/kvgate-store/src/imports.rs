//! Imported files and the runs they created, written in one transaction: an import that fails
//! anywhere (a bad row, a duplicate file, a cancellation) leaves nothing behind.

use kvgate_core::run::{Granularity, RequestRecord};
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, Sqlite, Transaction};

use crate::run_columns::RunColumns;
use crate::runs::{
    final_state_refusal, insert_run_with, write_evidence, write_final_state, write_requests,
    write_scrapes,
};
use crate::{
    now_rfc3339, MetricScrapeRow, NewRun, RequestRowSource, RunEvidence, RunRecord, RunState,
    Store, StoreError,
};

/// The file being imported and how it was read.
#[derive(Debug, Clone, PartialEq)]
pub struct NewImport {
    pub study_id: i64,
    /// A frozen manifest of that study: the cell the file measured.
    pub manifest_id: i64,
    /// `vllm-bench`, `guidellm`, … (the `--format` name).
    pub format: String,
    pub parser_version: String,
    pub tool: Option<String>,
    /// The file name as given, without directories.
    pub source_name: String,
    pub source_sha256: String,
    pub source_bytes: i64,
    /// Reading options (a CSV column mapping), as JSON.
    pub options_json: Option<String>,
    /// Every correction the parser made, a JSON array.
    pub warnings_json: String,
}

/// One tool-reported number about a run.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateRow {
    pub name: String,
    pub stat: String,
    pub value: f64,
    pub unit: String,
}

/// A run read from the file, ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedRun<R = RequestRecord> {
    /// `provenance` should be `imported`; `owner_pid` `None`.
    pub run: NewRun,
    pub granularity: Granularity,
    pub state: RunState,
    pub finished_at: String,
    pub elapsed_ms: Option<f64>,
    pub planned: Option<i64>,
    pub note: Option<String>,
    pub requests: Vec<R>,
    pub evidence: Vec<RunEvidence>,
    pub scrapes: Vec<MetricScrapeRow>,
    pub aggregates: Vec<AggregateRow>,
}

/// A stored import.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportRecord {
    pub id: i64,
    pub study_id: i64,
    pub manifest_id: i64,
    pub cell: String,
    pub format: String,
    pub parser_version: String,
    pub tool: Option<String>,
    pub source_name: String,
    pub source_sha256: String,
    pub source_bytes: i64,
    pub imported_at: String,
    pub options_json: Option<String>,
    pub runs: i64,
    pub requests: i64,
    pub aggregates: i64,
    pub scrapes: i64,
    pub evidence: i64,
    pub warnings_json: String,
}

/// `SELECT … FROM imports i JOIN manifests m …` with every column `import_from_row` reads.
macro_rules! select_imports {
    ($where:literal) => {
        concat!(
            "SELECT i.id, i.study_id, i.manifest_id, m.cell, i.format, i.parser_version, i.tool, ",
            "i.source_name, i.source_sha256, i.source_bytes, i.imported_at, i.options_json, ",
            "i.runs, i.requests, i.aggregates, i.scrapes, i.evidence, i.warnings_json ",
            "FROM imports i JOIN manifests m ON m.id = i.manifest_id ",
            $where
        )
    };
}

fn import_from_row(row: &SqliteRow) -> Result<ImportRecord, StoreError> {
    Ok(ImportRecord {
        id: row.try_get("id")?,
        study_id: row.try_get("study_id")?,
        manifest_id: row.try_get("manifest_id")?,
        cell: row.try_get("cell")?,
        format: row.try_get("format")?,
        parser_version: row.try_get("parser_version")?,
        tool: row.try_get("tool")?,
        source_name: row.try_get("source_name")?,
        source_sha256: row.try_get("source_sha256")?,
        source_bytes: row.try_get("source_bytes")?,
        imported_at: row.try_get("imported_at")?,
        options_json: row.try_get("options_json")?,
        runs: row.try_get("runs")?,
        requests: row.try_get("requests")?,
        aggregates: row.try_get("aggregates")?,
        scrapes: row.try_get("scrapes")?,
        evidence: row.try_get("evidence")?,
        warnings_json: row.try_get("warnings_json")?,
    })
}

async fn write_aggregates(
    tx: &mut Transaction<'_, Sqlite>,
    run_id: i64,
    aggregates: &[AggregateRow],
) -> Result<(), StoreError> {
    let sql = "INSERT INTO run_aggregates (run_id, seq, name, stat, value, unit) \
               VALUES (?, ?, ?, ?, ?, ?)";
    for (seq, a) in (0_i64..).zip(aggregates) {
        if !a.value.is_finite() {
            return Err(StoreError::Invalid {
                entity: "run",
                key: format!("run {run_id}"),
                reason: format!(
                    "aggregate {} {}: must be a finite number, found {}",
                    a.name, a.stat, a.value
                ),
            });
        }
        sqlx::query(sql)
            .bind(run_id)
            .bind(seq)
            .bind(&a.name)
            .bind(&a.stat)
            .bind(a.value)
            .bind(&a.unit)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// Commits what was written, or rolls all of it back on an error.
async fn settle<T>(
    tx: Transaction<'_, Sqlite>,
    written: Result<T, StoreError>,
) -> Result<T, StoreError> {
    match written {
        Ok(done) => {
            tx.commit().await?;
            Ok(done)
        }
        Err(err) => {
            let _ = tx.rollback().await;
            Err(err)
        }
    }
}

/// A run's request rows as they are read: how many there are, and the batches.
pub struct StreamedRows<R> {
    pub rows: u64,
    pub batches: tokio::sync::mpsc::Receiver<Vec<R>>,
}

/// Refuses a second import of the same file into the study.
async fn refuse_same_file(
    tx: &mut Transaction<'_, Sqlite>,
    import: &NewImport,
) -> Result<(), StoreError> {
    let existing: Option<(i64, String, String)> = sqlx::query_as(
        "SELECT i.id, m.cell, i.imported_at FROM imports i JOIN manifests m ON m.id = i.manifest_id \
         WHERE i.study_id = ? AND i.source_sha256 = ?",
    )
    .bind(import.study_id)
    .bind(&import.source_sha256)
    .fetch_optional(&mut **tx)
    .await?;
    match existing {
        Some((id, cell, at)) => Err(StoreError::Conflict {
            entity: "import",
            field: "source sha256",
            value: format!(
                "{} (already imported as import {id} into cell {cell} at {at})",
                import.source_sha256
            ),
        }),
        None => Ok(()),
    }
}

/// Counts of what an import wrote, for its row.
struct Written {
    runs: i64,
    requests: i64,
    aggregates: i64,
    scrapes: i64,
    evidence: i64,
}

/// Writes the import row (with `id` when given, else the next one): `id`.
async fn insert_import_row(
    tx: &mut Transaction<'_, Sqlite>,
    import: &NewImport,
    id: Option<i64>,
    written: &Written,
    warnings_json: &str,
) -> Result<i64, StoreError> {
    let sql = "INSERT INTO imports (id, study_id, manifest_id, format, parser_version, tool, \
               source_name, source_sha256, source_bytes, imported_at, options_json, runs, \
               requests, aggregates, scrapes, evidence, warnings_json) \
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id";
    sqlx::query_scalar(sql)
        .bind(id)
        .bind(import.study_id)
        .bind(import.manifest_id)
        .bind(&import.format)
        .bind(&import.parser_version)
        .bind(&import.tool)
        .bind(&import.source_name)
        .bind(&import.source_sha256)
        .bind(import.source_bytes)
        .bind(now_rfc3339())
        .bind(&import.options_json)
        .bind(written.runs)
        .bind(written.requests)
        .bind(written.aggregates)
        .bind(written.scrapes)
        .bind(written.evidence)
        .bind(warnings_json)
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.message().contains("frozen manifest") => {
                StoreError::NotFrozen {
                    entity: "manifest",
                    key: format!("id {}", import.manifest_id),
                }
            }
            _ => e.into(),
        })
}

/// Refuses a final state the run cannot have, inserts the run and writes the rows it carries
/// (counted on from `rows_before`): its id, and its columns so far.
async fn start_run<R: RequestRowSource + Sync>(
    tx: &mut Transaction<'_, Sqlite>,
    r: &ImportedRun<R>,
    import_id: i64,
    rows_before: &mut u64,
    keep_going: &(dyn Fn(u64) -> bool + Send + Sync),
) -> Result<(i64, RunColumns), StoreError> {
    if let Some(reason) = final_state_refusal(r.state, r.elapsed_ms) {
        return Err(StoreError::Invalid {
            entity: "run",
            key: r.run.label.clone(),
            reason,
        });
    }
    let run_id = insert_run_with(tx, &r.run, Some(import_id), r.granularity).await?;
    let mut columns = RunColumns::new(run_id);
    let base = *rows_before;
    write_requests(
        tx,
        run_id,
        &r.requests,
        &|n| keep_going(base + n),
        &mut columns,
    )
    .await?;
    *rows_before += r.requests.len() as u64;
    Ok((run_id, columns))
}

/// Writes a run's evidence, scrapes and aggregates and its final state.
async fn finish_run<R>(
    tx: &mut Transaction<'_, Sqlite>,
    r: &ImportedRun<R>,
    run_id: i64,
    columns: RunColumns,
) -> Result<RunRecord, StoreError> {
    write_evidence(tx, run_id, &r.evidence).await?;
    write_scrapes(tx, run_id, &r.scrapes).await?;
    write_aggregates(tx, run_id, &r.aggregates).await?;
    write_final_state(
        tx,
        run_id,
        columns,
        r.state,
        &r.finished_at,
        r.elapsed_ms,
        r.planned,
        r.note.as_deref(),
    )
    .await
}

async fn write_streamed_import<R, F>(
    tx: &mut Transaction<'_, Sqlite>,
    import: &NewImport,
    runs: Vec<(ImportedRun<R>, Option<StreamedRows<R>>)>,
    finish: F,
    keep_going: &(dyn Fn(u64) -> bool + Send + Sync),
) -> Result<(ImportRecord, Vec<RunRecord>), StoreError>
where
    R: RequestRowSource + Sync + Send + 'static,
    F: std::future::Future<Output = Result<String, StoreError>> + Send,
{
    refuse_same_file(tx, import).await?;
    // The runs point at the import row written last; SQLite checks that at commit.
    sqlx::query("PRAGMA defer_foreign_keys = ON")
        .execute(&mut **tx)
        .await?;
    let import_id: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) + 1 FROM imports")
        .fetch_one(&mut **tx)
        .await?;
    let mut written = Written {
        runs: runs.len() as i64,
        requests: 0,
        aggregates: 0,
        scrapes: 0,
        evidence: 0,
    };
    let mut stored = Vec::with_capacity(runs.len());
    let mut rows_before = 0u64;
    let mut short = false;
    for (r, rows) in runs {
        let (run_id, mut columns) =
            start_run(tx, &r, import_id, &mut rows_before, keep_going).await?;
        if let Some(mut rows) = rows {
            let mut got = 0u64;
            while let Some(batch) = rows.batches.recv().await {
                let base = rows_before;
                write_requests(tx, run_id, &batch, &|n| keep_going(base + n), &mut columns).await?;
                rows_before += batch.len() as u64;
                got += batch.len() as u64;
                // Freed beside the insert: a batch's outputs and chunk times are thousands of
                // allocations, and this thread is the import's slowest.
                tokio::task::spawn_blocking(move || drop(batch));
            }
            if got != rows.rows {
                short = true;
                break;
            }
        }
        written.aggregates += r.aggregates.len() as i64;
        written.scrapes += r.scrapes.len() as i64;
        written.evidence += r.evidence.len() as i64;
        let record = finish_run(tx, &r, run_id, columns).await?;
        stored.push(record);
    }
    // The source says why it stopped, or what its rows warned of.
    let warnings_json = finish.await?;
    if short {
        return Err(StoreError::SourceStopped);
    }
    written.requests = rows_before as i64;
    insert_import_row(tx, import, Some(import_id), &written, &warnings_json).await?;
    let row = sqlx::query(select_imports!("WHERE i.id = ?"))
        .bind(import_id)
        .fetch_one(&mut **tx)
        .await?;
    Ok((import_from_row(&row)?, stored))
}

async fn write_import<R: RequestRowSource + Sync>(
    tx: &mut Transaction<'_, Sqlite>,
    import: &NewImport,
    runs: &[ImportedRun<R>],
    keep_going: &(dyn Fn(u64) -> bool + Send + Sync),
) -> Result<(ImportRecord, Vec<RunRecord>), StoreError> {
    refuse_same_file(tx, import).await?;
    let count = |f: fn(&ImportedRun<R>) -> usize| runs.iter().map(f).sum::<usize>() as i64;
    let written = Written {
        runs: runs.len() as i64,
        requests: count(|r| r.requests.len()),
        aggregates: count(|r| r.aggregates.len()),
        scrapes: count(|r| r.scrapes.len()),
        evidence: count(|r| r.evidence.len()),
    };
    let import_id = insert_import_row(tx, import, None, &written, &import.warnings_json).await?;
    let mut stored = Vec::with_capacity(runs.len());
    let mut rows_before = 0u64;
    for r in runs {
        let (run_id, columns) = start_run(tx, r, import_id, &mut rows_before, keep_going).await?;
        let record = finish_run(tx, r, run_id, columns).await?;
        stored.push(record);
    }
    let row = sqlx::query(select_imports!("WHERE i.id = ?"))
        .bind(import_id)
        .fetch_one(&mut **tx)
        .await?;
    Ok((import_from_row(&row)?, stored))
}

impl Store {
    /// Stores an import and every run it read, in one transaction. `keep_going(rows stored)` is
    /// asked as request rows are written; `false` cancels and nothing is stored. The same file
    /// (by sha256) imported twice into a study is a `Conflict` naming the first import.
    pub async fn insert_import<R: RequestRowSource + Sync>(
        &self,
        import: &NewImport,
        runs: &[ImportedRun<R>],
        keep_going: &(dyn Fn(u64) -> bool + Send + Sync),
    ) -> Result<(ImportRecord, Vec<RunRecord>), StoreError> {
        let mut conn = self.bulk_connection().await?;
        let done = async {
            let mut tx = sqlx::Connection::begin_with(&mut *conn, "BEGIN IMMEDIATE").await?;
            let written = write_import(&mut tx, import, runs, keep_going).await;
            settle(tx, written).await
        }
        .await;
        Store::release_bulk(conn).await;
        done
    }

    /// Stores an import whose request rows arrive while it is written: each run's rows come in
    /// batches from `rows` (a run of aggregates has none), and `finish`, awaited once every
    /// batch is written, gives the import's warnings (known only once the last row was read).
    /// All of it is one transaction, as with [`Store::insert_import`]: a source that stops
    /// early (its channel closes before `rows` rows came, or `finish` fails), a refused row or a
    /// cancellation stores nothing. The import row is written last, with the counts of what was
    /// written; foreign keys to it are checked at commit.
    pub async fn insert_streamed_import<R, F>(
        &self,
        import: &NewImport,
        runs: Vec<(ImportedRun<R>, Option<StreamedRows<R>>)>,
        finish: F,
        keep_going: &(dyn Fn(u64) -> bool + Send + Sync),
    ) -> Result<(ImportRecord, Vec<RunRecord>), StoreError>
    where
        R: RequestRowSource + Sync + Send + 'static,
        F: std::future::Future<Output = Result<String, StoreError>> + Send,
    {
        let mut conn = self.bulk_connection().await?;
        let done = async {
            let mut tx = sqlx::Connection::begin_with(&mut *conn, "BEGIN IMMEDIATE").await?;
            let written = write_streamed_import(&mut tx, import, runs, finish, keep_going).await;
            settle(tx, written).await
        }
        .await;
        Store::release_bulk(conn).await;
        done
    }

    /// The import of this file into the study, if there is one.
    pub async fn find_import(
        &self,
        study_id: i64,
        source_sha256: &str,
    ) -> Result<Option<ImportRecord>, StoreError> {
        let row = sqlx::query(select_imports!(
            "WHERE i.study_id = ? AND i.source_sha256 = ?"
        ))
        .bind(study_id)
        .bind(source_sha256)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(import_from_row).transpose()
    }

    /// Every import of a study, oldest first.
    pub async fn list_imports(&self, study_id: i64) -> Result<Vec<ImportRecord>, StoreError> {
        let rows = sqlx::query(select_imports!("WHERE i.study_id = ? ORDER BY i.id"))
            .bind(study_id)
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(import_from_row).collect()
    }

    /// The import with this id; `NotFound` when absent.
    pub async fn get_import(&self, import_id: i64) -> Result<ImportRecord, StoreError> {
        let row = sqlx::query(select_imports!("WHERE i.id = ?"))
            .bind(import_id)
            .fetch_optional(&self.pool)
            .await?;
        match row {
            Some(row) => import_from_row(&row),
            None => Err(StoreError::NotFound {
                entity: "import",
                key: format!("import {import_id}"),
            }),
        }
    }

    /// The tool-reported aggregates of a run, in the order given.
    pub async fn run_aggregates(&self, run_id: i64) -> Result<Vec<AggregateRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT name, stat, value, unit FROM run_aggregates WHERE run_id = ? ORDER BY seq",
        )
        .bind(run_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(AggregateRow {
                    name: row.try_get("name")?,
                    stat: row.try_get("stat")?,
                    value: row.try_get("value")?,
                    unit: row.try_get("unit")?,
                })
            })
            .collect()
    }

    /// Counts of rows in the tables an import writes, for checks that a failed import left
    /// nothing behind.
    pub async fn import_row_counts(&self) -> Result<[i64; 6], StoreError> {
        let (a, b, c, d, e, f): (i64, i64, i64, i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM imports), (SELECT count(*) FROM runs), \
             (SELECT count(*) FROM run_requests), (SELECT count(*) FROM run_evidence), \
             (SELECT count(*) FROM run_metric_scrapes), (SELECT count(*) FROM run_aggregates)",
        )
        .fetch_one(&self.pool)
        .await?;
        Ok([a, b, c, d, e, f])
    }
}
