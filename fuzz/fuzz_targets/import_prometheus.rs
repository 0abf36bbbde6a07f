#![no_main]
//! `kvgate import --format` Prometheus: any bytes give a parsed import or an error, never a panic.
//! The format's parser is called on the bytes directly (a `&[u8]` is its reader).

use kvgate_formats::import::{prom_series, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let source = Source::new("metrics.prom");
    let _ = prom_series::parse(&source, data);
});
