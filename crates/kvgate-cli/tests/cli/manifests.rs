use std::process::Command;

use crate::{kvgate, stderr, stdout};

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/manifests"
    ))
    .join(name)
}

fn offline(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kvgate"))
        .args(args)
        .env_remove("KVGATE_DB")
        .output()
        .unwrap()
}

#[test]
fn validate_digest_and_diff_the_example_set() {
    let b0 = fixture("llama31-8b-h100-b0.json");
    let c1 = fixture("llama31-8b-h100-c1.json");
    for name in [
        "llama31-8b-h100-b0.json",
        "llama31-8b-h100-c1.json",
        "llama31-8b-h100-c2.json",
        "llama31-8b-h100-c3.json",
        "smollm2-135m-cpu-b0.json",
        "smollm2-135m-cpu-q8.json",
    ] {
        let out = offline(&["manifest", "validate", fixture(name).to_str().unwrap()]);
        assert!(out.status.success(), "{name}: {}", stdout(&out));
    }

    let out = offline(&["manifest", "digest", b0.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let digest = stdout(&out);
    assert_eq!(digest.len(), 65, "64 hex and a newline only: {digest:?}");
    assert!(digest
        .trim()
        .chars()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));

    // Key order and whitespace do not change the digest; a value does.
    let dir = tempfile::tempdir().unwrap();
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&b0).unwrap()).unwrap();
    let compact = dir.path().join("compact.json");
    std::fs::write(&compact, serde_json::to_string(&value).unwrap()).unwrap();
    assert_eq!(
        stdout(&offline(&["manifest", "digest", compact.to_str().unwrap()])),
        digest
    );
    let mut changed = value.clone();
    changed["output_cap"] = serde_json::json!(value["output_cap"].as_u64().unwrap() + 1);
    let changed_path = dir.path().join("changed.json");
    std::fs::write(&changed_path, serde_json::to_string(&changed).unwrap()).unwrap();
    assert_ne!(
        stdout(&offline(&[
            "manifest",
            "digest",
            changed_path.to_str().unwrap()
        ])),
        digest
    );

    let out = offline(&[
        "manifest",
        "diff",
        b0.to_str().unwrap(),
        c1.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(d["red"], 0);
    assert!(d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["path"] == "kv_dtype"));

    // A held-constant change is red, and the diff exits 2.
    let mut c1_value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&c1).unwrap()).unwrap();
    c1_value["output_cap"] = serde_json::json!(17);
    let c1_changed = dir.path().join("c1.json");
    std::fs::write(&c1_changed, serde_json::to_string(&c1_value).unwrap()).unwrap();
    let out = offline(&[
        "manifest",
        "diff",
        b0.to_str().unwrap(),
        c1_changed.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout(&out).contains("RED   output_cap"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn validate_names_each_problem_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("llama31-8b-h100-b0.json")).unwrap())
            .unwrap();
    v["weights_digest"] = "not-a-digest".into();
    v["kv_dtype"] = "fp9".into();
    let path = dir.path().join("bad.json");
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let out = offline(&["manifest", "validate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "{text}");
    assert!(
        lines.iter().any(|l| l.contains("weights_digest: expected")),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l.contains("kv_dtype: expected")),
        "{text}"
    );
    assert!(
        lines.iter().all(|l| l.starts_with(path.to_str().unwrap())),
        "{text}"
    );

    let out = offline(&[
        "manifest",
        "validate",
        dir.path().join("missing.json").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));
}

#[test]
fn freeze_into_a_study_then_list_and_export() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    assert!(kvgate(&db, &["study", "create", "S"]).status.success());
    let b0 = fixture("smollm2-135m-cpu-b0.json");
    let out = kvgate(
        &db,
        &["manifest", "freeze", b0.to_str().unwrap(), "--study", "S"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let digest = stdout(&out).trim().to_owned();
    assert_eq!(
        digest,
        stdout(&offline(&["manifest", "digest", b0.to_str().unwrap()])).trim()
    );

    let again = kvgate(
        &db,
        &["manifest", "freeze", b0.to_str().unwrap(), "--study", "S"],
    );
    assert!(!again.status.success());
    assert!(stderr(&again).contains("frozen"), "{}", stderr(&again));

    let out = kvgate(&db, &["manifest", "list", "--study", "S", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(list[0]["status"], "frozen");
    assert_eq!(list[0]["digest"], digest.as_str());

    let out = kvgate(&db, &["manifest", "export", "--study", "S", "--cell", "B0"]);
    let exported = dir.path().join("b0.json");
    std::fs::write(&exported, stdout(&out)).unwrap();
    assert_eq!(
        stdout(&offline(&[
            "manifest",
            "digest",
            exported.to_str().unwrap()
        ]))
        .trim(),
        digest
    );
}

#[test]
fn kv_capacity_worked_examples() {
    let out = offline(&[
        "kv-capacity",
        "--layers",
        "32",
        "--kv-heads",
        "8",
        "--head-dim",
        "128",
        "--tokens",
        "1",
        "--bytes-per-element",
        "2",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["breakdown"]["payload_bytes"], 131_072);
    assert_eq!(v["breakdown"]["total_bytes"], 131_072);

    // llama.cpp q8_0: 1-byte payload plus a 2-byte scale per 32 elements → 23.91 MiB for 2048 cells.
    let out = offline(&[
        "kv-capacity",
        "--layers",
        "30",
        "--kv-heads",
        "3",
        "--head-dim",
        "64",
        "--tokens",
        "2048",
        "--bytes-per-element",
        "1",
        "--scale-block-elements",
        "32",
        "--scale-bytes",
        "2",
    ]);
    let text = stdout(&out);
    assert!(text.contains("23.91 MiB"), "{text}");
    assert!(text.contains("latent-attention"), "{text}");

    let out = offline(&[
        "kv-capacity",
        "--layers",
        "0",
        "--kv-heads",
        "8",
        "--head-dim",
        "128",
        "--tokens",
        "1",
        "--bytes-per-element",
        "2",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("expected at least 1"),
        "{}",
        stderr(&out)
    );
}
