#![no_main]
//! `kvgate import --format` Guidellm: any bytes give a parsed import or an error, never a panic.
//! The format's parser is called on the bytes directly (a `&[u8]` is its reader).

use kvgate_formats::import::{guidellm, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let source = Source::new("report.json");
    let _ = guidellm::parse(&source, data);
});
