//! Progress reports and cancellation while hashing.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use kvgate_formats::weights::fs::open_checkpoint;
use kvgate_formats::weights::{digest_checkpoint, HashOptions, WeightsError};

use crate::checkpoint::*;

/// A checkpoint of a few MiB so that small chunks give many progress calls.
fn larger_model() -> Vec<Tensor> {
    (0..6)
        .map(|i| {
            let data: Vec<u8> = (0..(1u32 << 19) + i * 4096)
                .map(|j| (j.wrapping_mul(2654435761) >> 24) as u8)
                .collect();
            let n = data.len() as u64 / 2;
            Tensor::new(
                &format!("model.layers.{i}.mlp.up_proj.weight"),
                "BF16",
                &[n],
                data,
            )
        })
        .collect()
}

#[test]
fn progress_reaches_the_total_and_results_do_not_depend_on_workers_or_chunks() {
    let model = larger_model();
    let total: u64 = model.iter().map(|t| t.data.len() as u64).sum();
    let dir = single_file_dir(&model);
    let (source, layout) = open_checkpoint(dir.path()).unwrap();

    let mut digests = Vec::new();
    for (workers, chunk_bytes) in [(1, 1 << 20), (2, 64 << 10), (4, 4 << 20)] {
        let calls = AtomicUsize::new(0);
        let max_seen = AtomicU64::new(0);
        let d = digest_checkpoint(
            &source,
            &layout,
            &HashOptions {
                workers,
                chunk_bytes,
            },
            &|done, all| {
                assert_eq!(all, total);
                assert!(done <= all);
                calls.fetch_add(1, Ordering::Relaxed);
                max_seen.fetch_max(done, Ordering::Relaxed);
            },
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!(max_seen.load(Ordering::Relaxed), total);
        let min_calls = total.div_ceil(chunk_bytes as u64) as usize;
        assert!(calls.load(Ordering::Relaxed) > min_calls.min(model.len()));
        digests.push(d);
    }
    assert!(digests.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn cancelling_returns_an_error_and_no_digest() {
    let model = larger_model();
    let dir = single_file_dir(&model);
    let (source, layout) = open_checkpoint(dir.path()).unwrap();
    let options = HashOptions {
        workers: 2,
        chunk_bytes: 64 << 10,
    };

    let cancel = AtomicBool::new(true);
    let r = digest_checkpoint(&source, &layout, &options, &|_, _| {}, &cancel);
    assert!(matches!(r, Err(WeightsError::Cancelled)));

    // Cancelled from the progress callback after the first chunk, as a UI button would.
    let cancel = AtomicBool::new(false);
    let last = AtomicU64::new(0);
    let r = digest_checkpoint(
        &source,
        &layout,
        &options,
        &|done, _| {
            last.fetch_max(done, Ordering::Relaxed);
            if done > 0 {
                cancel.store(true, Ordering::Relaxed);
            }
        },
        &cancel,
    );
    let err = r.unwrap_err();
    assert!(matches!(err, WeightsError::Cancelled));
    assert_eq!(err.to_string(), "hashing cancelled: no digest was produced");
    let total: u64 = model.iter().map(|t| t.data.len() as u64).sum();
    assert!(last.load(Ordering::Relaxed) < total, "stopped early");
}
