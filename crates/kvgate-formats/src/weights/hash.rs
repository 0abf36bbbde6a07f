//! Tensor bytes hashed in place: fixed-size chunks read through the [`TensorSource`], tensors
//! spread over a few worker threads, progress after every chunk, cancellation between chunks.

use std::cmp::Reverse;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::scale::{self, classify_scale_tensor, MAX_SCALE_DECODE_BYTES};
use super::{
    hex, read_inventory, tensors_digest, CheckpointDigest, CheckpointLayout, ScaleTensor,
    TensorDigest, TensorInventory, TensorSource, WeightsError, WEIGHTS_DIGEST_SCHEME,
};

/// Bytes read per chunk: large enough that per-read overhead vanishes, small enough that
/// progress moves and cancellation answers within a few milliseconds.
pub const DEFAULT_CHUNK_BYTES: usize = 4 << 20;

/// How hashing runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashOptions {
    /// Worker threads; each hashes whole tensors (sha256 of one tensor is sequential).
    pub workers: usize,
    /// Bytes per read, one buffer of this size per worker.
    pub chunk_bytes: usize,
}

impl Default for HashOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        HashOptions {
            workers: cores.clamp(1, 4),
            chunk_bytes: DEFAULT_CHUNK_BYTES,
        }
    }
}

/// [`read_inventory`] then [`digest_inventory`].
pub fn digest_checkpoint(
    source: &dyn TensorSource,
    layout: &CheckpointLayout,
    options: &HashOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
    cancel: &AtomicBool,
) -> Result<CheckpointDigest, WeightsError> {
    let inventory = read_inventory(source, layout)?;
    digest_inventory(source, &inventory, options, progress, cancel)
}

struct Hashed {
    sha256: String,
    /// Decoded values of a small scale tensor.
    values: Option<Vec<f64>>,
}

/// Hashes every tensor of `inventory` and builds the [`CheckpointDigest`].
///
/// `progress(bytes_hashed, bytes_total)` is called after every chunk, from the worker threads.
/// `cancel` is checked between chunks; once set, the result is [`WeightsError::Cancelled`] and
/// nothing partial is returned.
pub fn digest_inventory(
    source: &dyn TensorSource,
    inventory: &TensorInventory,
    options: &HashOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
    cancel: &AtomicBool,
) -> Result<CheckpointDigest, WeightsError> {
    let tensors = &inventory.tensors;
    let total = inventory.total_bytes();
    let chunk = options.chunk_bytes.max(4096);
    let workers = options.workers.clamp(1, tensors.len().max(1));

    // Largest first, so the last tensor to finish is a small one.
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    order.sort_by_key(|&i| Reverse(tensors[i].bytes));

    let next = AtomicUsize::new(0);
    let hashed_bytes = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let first_error: Mutex<Option<WeightsError>> = Mutex::new(None);
    let results: Mutex<Vec<Option<Hashed>>> =
        Mutex::new((0..tensors.len()).map(|_| None).collect());

    if cancel.load(Ordering::Relaxed) {
        return Err(WeightsError::Cancelled);
    }
    progress(0, total);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let mut buf = vec![0u8; chunk];
                loop {
                    if cancel.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = order.get(k) else { return };
                    let entry = &tensors[i];
                    let keep = entry.bytes <= MAX_SCALE_DECODE_BYTES
                        && classify_scale_tensor(&entry.name).is_some();
                    let mut kept = Vec::new();
                    let mut hasher = Sha256::new();
                    let mut done = 0u64;
                    while done < entry.bytes {
                        if cancel.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                            stop.store(true, Ordering::Relaxed);
                            return;
                        }
                        let n = (entry.bytes - done).min(chunk as u64) as usize;
                        let at = entry.offset + done;
                        if let Err(e) = source.read_at(&entry.file, at, &mut buf[..n]) {
                            let mut slot = first_error.lock().expect("error slot");
                            slot.get_or_insert(WeightsError::io(&entry.file, at, n as u64, e));
                            stop.store(true, Ordering::Relaxed);
                            return;
                        }
                        hasher.update(&buf[..n]);
                        if keep {
                            kept.extend_from_slice(&buf[..n]);
                        }
                        done += n as u64;
                        let so_far = hashed_bytes.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
                        progress(so_far, total);
                    }
                    let values = keep
                        .then(|| scale::decode_floats(&entry.dtype, &kept))
                        .flatten();
                    results.lock().expect("results")[i] = Some(Hashed {
                        sha256: hex(&hasher.finalize()),
                        values,
                    });
                }
            });
        }
    });

    if let Some(e) = first_error.into_inner().expect("error slot") {
        return Err(e);
    }
    if cancel.load(Ordering::Relaxed) {
        return Err(WeightsError::Cancelled);
    }
    let results = results.into_inner().expect("results");

    let mut weights = Vec::new();
    let mut scales = Vec::new();
    for (entry, hashed) in tensors.iter().zip(results) {
        let hashed = hashed.expect("every tensor hashed when neither cancelled nor failed");
        let digest = TensorDigest {
            name: entry.name.clone(),
            dtype: entry.dtype.clone(),
            shape: entry.shape.clone(),
            bytes: entry.bytes,
            sha256: hashed.sha256,
        };
        match classify_scale_tensor(&entry.name) {
            None => weights.push(digest),
            Some(pattern) => {
                let (min, max, non_finite) = match &hashed.values {
                    Some(v) => {
                        let (min, max, bad) = scale::value_range(v);
                        (min, max, Some(bad))
                    }
                    None => (None, None, None),
                };
                scales.push(ScaleTensor {
                    pattern: pattern.pattern.to_owned(),
                    kind: pattern.kind,
                    layer: scale::layer_index(&entry.name),
                    granularity: scale::scale_granularity(&entry.shape),
                    min,
                    max,
                    non_finite,
                    tensor: digest,
                });
            }
        }
    }

    let weight_refs: Vec<&TensorDigest> = weights.iter().collect();
    let scale_refs: Vec<&TensorDigest> = scales.iter().map(|s| &s.tensor).collect();
    let scale_granularity = scales
        .first()
        .and_then(|s| s.granularity)
        .filter(|g| scales.iter().all(|s| s.granularity == Some(*g)));
    Ok(CheckpointDigest {
        format: inventory.format,
        files: inventory.files.clone(),
        digest_scheme: WEIGHTS_DIGEST_SCHEME.to_owned(),
        weights_digest: tensors_digest(&weight_refs),
        weight_tensor_count: weights.len() as u64,
        weight_bytes: weights.iter().map(|t| t.bytes).sum(),
        scale_tensor_count: scales.len() as u64,
        scale_bytes: scale_refs.iter().map(|t| t.bytes).sum(),
        scales_digest: (!scales.is_empty()).then(|| tensors_digest(&scale_refs)),
        scale_granularity,
        tensors: weights,
        scale_tensors: scales,
        notes: inventory.notes.clone(),
    })
}
