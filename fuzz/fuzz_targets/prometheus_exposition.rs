#![no_main]
//! One Prometheus scrape as the runner reads it from `/metrics`.

use kvgate_formats::prometheus::parse_exposition;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(exp) = parse_exposition(text) {
            let _ = kvgate_formats::prometheus::observed_from_cache_config_info(&exp);
        }
    }
});
