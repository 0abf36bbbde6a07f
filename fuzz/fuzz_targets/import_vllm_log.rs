#![no_main]
//! `kvgate import --format` VllmLog: any bytes give a parsed import or an error, never a panic.

use kvgate_formats::import::{parse, ImportFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse(ImportFormat::VllmLog, "vllm.log", data);
});
