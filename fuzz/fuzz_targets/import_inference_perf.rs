#![no_main]
//! `kvgate import --format` InferencePerf: any bytes give a parsed import or an error, never a panic.

use kvgate_formats::import::{parse, ImportFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse(
        ImportFormat::InferencePerf,
        "stage_0_lifecycle_metrics.json",
        data,
    );
});
