//! User actions on model checkpoints: the weights digest (scale tensors excluded) and the
//! comparison of a candidate checkpoint with its base.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use kvgate_formats::weights::fs::open_checkpoint;
use kvgate_formats::weights::{
    compare, digest_checkpoint, CheckpointDigest, HashOptions, WeightsComparison, WeightsError,
};

use schemars::JsonSchema;
use serde::Serialize;
use ts_rs::TS;

use crate::{AppError, ErrorCode};

/// Progress of hashing a checkpoint, as the desktop's `weights-progress` event carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS, JsonSchema)]
pub struct WeightsProgress {
    pub bytes_hashed: u64,
    pub bytes_total: u64,
}

fn weights_error(err: WeightsError) -> AppError {
    let code = match err {
        WeightsError::Cancelled => ErrorCode::Conflict,
        WeightsError::Io { .. } => ErrorCode::Storage,
        _ => ErrorCode::InvalidInput,
    };
    AppError::new(code, err.to_string())
}

/// Hashes a checkpoint (a directory of safetensors shards or one `.safetensors`/`.gguf` file)
/// in place. `progress(bytes_hashed, bytes_total)` is called from the hashing threads.
/// Decides which of the hashing threads' per-chunk progress calls reach a person: at most one
/// every `interval_ms`, and always the last (`done == total`). Shared by both shells.
#[derive(Debug)]
pub struct ProgressThrottle {
    started: std::time::Instant,
    interval_ms: u64,
    last_ms: std::sync::atomic::AtomicU64,
}

impl ProgressThrottle {
    pub fn new(interval_ms: u64) -> ProgressThrottle {
        ProgressThrottle {
            started: std::time::Instant::now(),
            interval_ms,
            // None shown yet.
            last_ms: std::sync::atomic::AtomicU64::new(u64::MAX),
        }
    }

    /// Whether this update is shown; called from any hashing thread.
    pub fn pass(&self, done: u64, total: u64) -> bool {
        use std::sync::atomic::Ordering;
        let now = self.started.elapsed().as_millis() as u64;
        let last = self.last_ms.load(Ordering::Relaxed);
        if done < total && last != u64::MAX && now < last.saturating_add(self.interval_ms) {
            return false;
        }
        self.last_ms.store(now, Ordering::Relaxed);
        true
    }
}

pub fn digest_weights(
    path: &Path,
    progress: &(dyn Fn(u64, u64) + Sync),
    cancel: &AtomicBool,
) -> Result<CheckpointDigest, AppError> {
    let (source, layout) = open_checkpoint(path).map_err(weights_error)?;
    digest_checkpoint(&source, &layout, &HashOptions::default(), progress, cancel)
        .map_err(weights_error)
}

/// Both checkpoints' digests and what differs between them.
#[derive(Debug, Clone, PartialEq, Serialize, TS, JsonSchema)]
pub struct CheckpointComparison {
    pub base: CheckpointDigest,
    pub candidate: CheckpointDigest,
    pub comparison: WeightsComparison,
}

/// Compares a candidate checkpoint with its base: identical, identical with scales added, or
/// which tensors differ.
pub fn compare_weights(
    base: &Path,
    candidate: &Path,
    progress: &(dyn Fn(u64, u64) + Sync),
    cancel: &AtomicBool,
) -> Result<CheckpointComparison, AppError> {
    let base = digest_weights(base, progress, cancel)?;
    let candidate = digest_weights(candidate, progress, cancel)?;
    let comparison = compare(&base, &candidate);
    Ok(CheckpointComparison {
        base,
        candidate,
        comparison,
    })
}

#[cfg(test)]
mod tests {
    use super::ProgressThrottle;

    #[test]
    fn the_throttle_passes_the_first_the_last_and_little_between() {
        let t = ProgressThrottle::new(60_000);
        assert!(t.pass(1, 100), "the first update");
        assert!(!t.pass(2, 100), "within the interval");
        assert!(!t.pass(99, 100));
        assert!(t.pass(100, 100), "the last update always");
        let every = ProgressThrottle::new(0);
        assert!(every.pass(1, 10) && every.pass(2, 10));
    }
}
