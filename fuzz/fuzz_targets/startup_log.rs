#![no_main]
//! A server's startup log read as compatibility evidence.

use kvgate_formats::startup_log::parse_startup_log;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = parse_startup_log(&String::from_utf8_lossy(data));
});
