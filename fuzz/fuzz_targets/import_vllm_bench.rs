#![no_main]
//! `kvgate import --format` VllmBench: any bytes give a parsed import or an error, never a panic.
//! The format's parser is called on the bytes directly (a `&[u8]` is its reader).

use kvgate_formats::import::{vllm_bench, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let source = Source::new("result.json");
    let _ = vllm_bench::parse(&source, data);
});
