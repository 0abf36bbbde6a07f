#![no_main]
//! `kvgate import --format` InferencePerf: any bytes give a parsed import or an error, never a panic.
//! The format's parser is called on the bytes directly (a `&[u8]` is its reader).

use kvgate_formats::import::{inference_perf, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let source = Source::new("stage_0_lifecycle_metrics.json");
    let _ = inference_perf::parse(&source, data);
});
