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
