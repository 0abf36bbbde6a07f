use std::process::Command;

use crate::{stderr, stdout};

fn evidence(file: &str) -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/evidence/").to_owned() + file;
    let o = Command::new(env!("CARGO_BIN_EXE_kvgate"))
        .args(["evidence", "log", &path])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

#[test]
fn real_llama_cpp_logs_show_the_kv_cache_halving() {
    let f16 = evidence("llamacpp-f16-startup.log");
    let q8 = evidence("llamacpp-q8_0-startup.log");
    assert_eq!(f16["llama_kv_cache"]["value"]["size_mib"], 45.0);
    assert_eq!(f16["kv_cache_dtype"]["value"], "f16");
    assert_eq!(q8["llama_kv_cache"]["value"]["size_mib"], 23.91);
    assert_eq!(q8["llama_kv_cache"]["value"]["v_type"], "q8_0");
    for ev in [&f16, &q8] {
        assert_eq!(ev["attention_backend"]["value"], "flash_attn");
        assert_eq!(ev["llama_kv_cache"]["value"]["cells"], 2048);
        assert!(ev["llama_kv_cache"]["line"].as_u64().unwrap() > 1);
        assert_eq!(ev["default_scale_lines"], serde_json::json!([]));
    }
}
