//! Imports whose request rows are read while they are stored: a vLLM result laid out by
//! [`vllm_bench::stream::scan`], its columns read side by side into the one import transaction
//! in bounded batches, so memory does not grow with the file. The file is hashed again while
//! its rows are read: a file that changed since it was read is refused and nothing is stored.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use kvgate_formats::import::vllm_bench::stream::{RowsRead, StreamedFile};
use kvgate_formats::import::ImportWarning;
use kvgate_store::{
    ImportRecord, ImportedRequest, ImportedRun, NewImport, RunRecord, StoreError, StreamedRows,
};
use sha2::{Digest, Sha256};

use super::{import_error, ImportRunPreview};
use crate::{App, AppError, ErrorCode};

/// Rows handed to the store at a time.
const ROWS_PER_BATCH: usize = 4096;
/// Batches waiting for the store.
const BATCHES_WAITING: usize = 4;

/// Reads every row of the file, keeping none: how many failed per run, and the warnings the
/// rows add. A row the rules refuse is refused here, as the commit would refuse it.
pub(super) async fn check_rows(
    file: Box<StreamedFile>,
    path: &str,
    checked: Arc<AtomicU64>,
) -> Result<(Box<StreamedFile>, Vec<RowsRead>), AppError> {
    let path = PathBuf::from(path);
    tokio::task::spawn_blocking(move || {
        let mut reads = Vec::with_capacity(file.import.runs.len());
        for k in 0..file.import.runs.len() {
            let mut rows = file.rows(k, &path).map_err(import_error)?;
            let mut since = 0u64;
            for row in rows.by_ref() {
                row.map_err(import_error)?;
                since += 1;
                if since == ROWS_PER_BATCH as u64 {
                    checked.fetch_add(since, Ordering::Relaxed);
                    since = 0;
                }
            }
            checked.fetch_add(since, Ordering::Relaxed);
            reads.push(rows.finish().map_err(import_error)?);
        }
        Ok((file, reads))
    })
    .await
    .map_err(|e| AppError::new(ErrorCode::Internal, format!("reading the rows failed: {e}")))?
}

/// A run's preview from its laid-out header and its checked rows.
pub(super) fn run_preview(file: &StreamedFile, k: usize, read: &RowsRead) -> ImportRunPreview {
    let run = &file.import.runs[k];
    let rows = file.rows_of(k);
    ImportRunPreview {
        label: run.label.clone(),
        granularity: run.granularity,
        requests: rows,
        ok: rows - read.failed,
        failed: read.failed,
        aggregates: run.aggregates.len() as u64,
        scrapes: run.scrapes.len() as u64,
        evidence: run.evidence.len() as u64,
        elapsed_ms: run.elapsed_ms,
        figures: super::figures(run),
    }
}

/// Stores the runs (`runs[k]` is run `k` of the file, without rows), their rows read from the
/// file at `path` while they are written. `added` are warnings the import adds to the file's
/// own (anchors), `sha256` what the file hashed to when it was read.
#[allow(clippy::too_many_arguments)]
pub(super) async fn store(
    app: &App,
    new: NewImport,
    file: StreamedFile,
    runs: Vec<ImportedRun<ImportedRequest>>,
    path: &str,
    sha256: &str,
    added: Vec<ImportWarning>,
    keep_going: &(dyn Fn(u64) -> bool + Send + Sync),
) -> Result<(ImportRecord, Vec<RunRecord>), AppError> {
    let path = PathBuf::from(path);
    let mut senders = Vec::with_capacity(runs.len());
    let mut streamed = Vec::with_capacity(runs.len());
    for (k, run) in runs.into_iter().enumerate() {
        let rows = file.rows_of(k);
        if rows == 0 {
            senders.push(None);
            streamed.push((run, None));
        } else {
            let (tx, rx) = tokio::sync::mpsc::channel(BATCHES_WAITING);
            senders.push(Some(tx));
            streamed.push((run, Some(StreamedRows { rows, batches: rx })));
        }
    }
    // Why the rows stopped, when they did.
    let failure: Arc<Mutex<Option<AppError>>> = Arc::new(Mutex::new(None));
    // Both run below the store's inserting thread, the import's slowest, and so do the column
    // readers the producer starts.
    let producer = {
        let path = path.clone();
        feeder("import rows", move || produce(file, &path, senders))
    };
    let hasher = {
        let path = path.clone();
        feeder("import hash", move || hash_file(&path))
    };
    let finish = {
        let failure = failure.clone();
        let expected = sha256.to_owned();
        async move {
            let fail = |e: AppError| {
                *failure.lock().expect("import failure") = Some(e);
                StoreError::SourceStopped
            };
            let produced = producer.await;
            let now = hasher.await.map_err(fail)?;
            // A file that changed is named as such, whatever its rows then looked like.
            if now != expected {
                return Err(fail(AppError::new(
                    ErrorCode::Conflict,
                    format!(
                        "{}: the file changed since it was read (sha256 {expected}, now {now}); nothing was stored: read it again",
                        new_name(&path)
                    ),
                )));
            }
            let (file, reads) = produced.map_err(fail)?;
            let mut warnings = file.warnings(&reads);
            warnings.extend(added);
            Ok(serde_json::to_string(&warnings).unwrap_or_else(|_| "[]".into()))
        }
    };
    let stored = app
        .store
        .insert_streamed_import(&new, streamed, finish, keep_going)
        .await;
    match stored {
        Ok(done) => Ok(done),
        Err(StoreError::SourceStopped) => Err(failure
            .lock()
            .expect("import failure")
            .take()
            .unwrap_or_else(|| AppError::storage("the rows stopped coming"))),
        Err(e) => Err(e.into()),
    }
}

/// Starts `work` now on a thread of its own that yields to the store's inserts
/// ([`kvgate_store::yield_to_inserts`]; a pool's thread could not be given its priority back):
/// its result, or why it gave none.
fn feeder<T: Send + 'static>(
    name: &'static str,
    work: impl FnOnce() -> Result<T, AppError> + Send + 'static,
) -> impl std::future::Future<Output = Result<T, AppError>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let started = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            kvgate_store::yield_to_inserts();
            // Nobody waits any more when the import stopped first.
            let _ = tx.send(work());
        });
    async move {
        started
            .map_err(|e| AppError::new(ErrorCode::Internal, format!("cannot start {name}: {e}")))?;
        rx.await.map_err(|_| {
            AppError::new(
                ErrorCode::Internal,
                format!("reading the rows failed: {name} ended without a result"),
            )
        })?
    }
}

fn new_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// Reads the rows of each run into its channel, in order; the warnings they add at the end.
fn produce(
    file: StreamedFile,
    path: &Path,
    senders: Vec<Option<tokio::sync::mpsc::Sender<Vec<ImportedRequest>>>>,
) -> Result<(StreamedFile, Vec<RowsRead>), AppError> {
    let mut reads = Vec::with_capacity(senders.len());
    for (k, tx) in senders.into_iter().enumerate() {
        let mut rows = file.rows(k, path).map_err(import_error)?;
        let mut batch = Vec::with_capacity(ROWS_PER_BATCH);
        for row in rows.by_ref() {
            batch.push(ImportedRequest {
                record: row.map_err(import_error)?,
                warmup: false,
                verdict: None,
                reference: None,
            });
            if batch.len() == ROWS_PER_BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(ROWS_PER_BATCH));
                if let Some(tx) = &tx {
                    if tx.blocking_send(full).is_err() {
                        // The store stopped (cancelled or refused): it says why.
                        return Err(AppError::new(ErrorCode::Cancelled, "the import stopped"));
                    }
                }
            }
        }
        if let Some(tx) = &tx {
            if !batch.is_empty() && tx.blocking_send(batch).is_err() {
                return Err(AppError::new(ErrorCode::Cancelled, "the import stopped"));
            }
        }
        drop(tx);
        reads.push(rows.finish().map_err(import_error)?);
    }
    Ok((file, reads))
}

/// The file's sha256 now.
fn hash_file(path: &Path) -> Result<String, AppError> {
    let mut file = std::fs::File::open(path)
        .map_err(|e| AppError::storage(format!("cannot open {}: {e}", path.display())))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)
        .map_err(|e| AppError::storage(format!("cannot read {}: {e}", path.display())))?;
    Ok(kvgate_core::canonical::hex(&hasher.finalize()))
}
