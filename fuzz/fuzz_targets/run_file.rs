#![no_main]
//! A `kvgate-run` file: any text gives a run file or an error, never a panic.

use kvgate_formats::run_file::parse_run_file;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_run_file("fuzz.kvgate-run.jsonl", text);
    }
});
