//! Hashing throughput on a large checkpoint, measured by hand (issue 11: ≥ 0.8× `sha256sum`):
//! `KVGATE_WEIGHTS_BENCH=/path/to/dir-or-file cargo test -p kvgate-formats --release \
//!  --test weights -- --ignored throughput --nocapture`

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use kvgate_formats::weights::fs::open_checkpoint;
use kvgate_formats::weights::{digest_checkpoint, HashOptions};

#[test]
#[ignore = "manual measurement: needs KVGATE_WEIGHTS_BENCH pointing at a multi-GB checkpoint"]
fn throughput() {
    let Ok(path) = std::env::var("KVGATE_WEIGHTS_BENCH") else {
        println!("skipped: set KVGATE_WEIGHTS_BENCH to a checkpoint directory or file");
        return;
    };
    let (source, layout) = open_checkpoint(std::path::Path::new(&path)).unwrap();
    for workers in [1, 2] {
        let options = HashOptions {
            workers,
            ..HashOptions::default()
        };
        let start = Instant::now();
        let d = digest_checkpoint(
            &source,
            &layout,
            &options,
            &|_, _| {},
            &AtomicBool::new(false),
        )
        .unwrap();
        let secs = start.elapsed().as_secs_f64();
        let bytes = (d.weight_bytes + d.scale_bytes) as f64;
        println!(
            "{workers} worker(s): {:.2} GB in {secs:.2} s = {:.3} GB/s ({} tensors, digest {})",
            bytes / 1e9,
            bytes / 1e9 / secs,
            d.weight_tensor_count + d.scale_tensor_count,
            d.weights_digest
        );
    }
}
