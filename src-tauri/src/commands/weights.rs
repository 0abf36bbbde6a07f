use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kvgate_app::formats::weights::CheckpointDigest;
use kvgate_app::weights::{CheckpointComparison, ProgressThrottle, WeightsProgress};
use kvgate_app::{weights, AppError, ErrorCode};
use tauri::{AppHandle, Emitter, Runtime, State};

/// The cancellation flag of the checkpoint hashing under way (one at a time).
#[derive(Default)]
pub struct WeightsJob {
    cancel: std::sync::Mutex<Option<Arc<AtomicBool>>>,
}

/// Runs `work` off the async threads as the one hashing job, emitting throttled
/// `weights-progress` events; `cancel_weights_digest` stops it.
async fn hashing_job<R: Runtime, T: Send + 'static>(
    app: AppHandle<R>,
    job: &WeightsJob,
    work: impl FnOnce(&(dyn Fn(u64, u64) + Sync), &AtomicBool) -> Result<T, AppError> + Send + 'static,
) -> Result<T, AppError> {
    let cancel = Arc::new(AtomicBool::new(false));
    {
        let mut current = job.cancel.lock().expect("weights job lock");
        if current.is_some() {
            return Err(AppError::new(
                ErrorCode::Conflict,
                "a checkpoint is already being hashed; cancel it or wait",
            ));
        }
        *current = Some(cancel.clone());
    }
    let flag = cancel.clone();
    let result = tauri::async_runtime::spawn_blocking(move || {
        // The hashing threads call this after every chunk: at most ten events a second.
        let throttle = ProgressThrottle::new(100);
        let progress = |done: u64, total: u64| {
            if !throttle.pass(done, total) {
                return;
            }
            let _ = app.emit(
                "weights-progress",
                WeightsProgress {
                    bytes_hashed: done,
                    bytes_total: total,
                },
            );
        };
        work(&progress, &flag)
    })
    .await
    .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()));
    *job.cancel.lock().expect("weights job lock") = None;
    result?
}

#[tauri::command]
pub async fn digest_weights<R: Runtime>(
    app: AppHandle<R>,
    job: State<'_, WeightsJob>,
    path: String,
) -> Result<CheckpointDigest, AppError> {
    hashing_job(app, &job, move |progress, cancel| {
        weights::digest_weights(&PathBuf::from(path), progress, cancel)
    })
    .await
}

#[tauri::command]
pub async fn compare_weights<R: Runtime>(
    app: AppHandle<R>,
    job: State<'_, WeightsJob>,
    base: String,
    candidate: String,
) -> Result<CheckpointComparison, AppError> {
    hashing_job(app, &job, move |progress, cancel| {
        weights::compare_weights(
            &PathBuf::from(base),
            &PathBuf::from(candidate),
            progress,
            cancel,
        )
    })
    .await
}

#[tauri::command]
pub fn cancel_weights_digest(job: State<'_, WeightsJob>) -> bool {
    match job.cancel.lock().expect("weights job lock").as_ref() {
        Some(flag) => {
            flag.store(true, Ordering::Relaxed);
            true
        }
        None => false,
    }
}
