//! Round trips through the real `kvgate` binary against temporary database files.

mod analysis;
mod concurrency;
mod crash;
mod evidence;
mod fixtures;
mod imports;
mod keys;
mod manifests;
mod packet;
mod review;
mod runs;
mod signing;
mod stats;
mod weights;

use std::path::Path;
use std::process::{Command, Output};

pub fn kvgate(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvgate"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("KVGATE_DB")
        .output()
        .expect("run kvgate")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_lists_the_subcommands() {
    let out = Command::new(env!("CARGO_BIN_EXE_kvgate"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.contains("study"), "{text}");
    assert!(text.contains("--db"), "{text}");

    let out = Command::new(env!("CARGO_BIN_EXE_kvgate"))
        .args(["study", "--help"])
        .output()
        .unwrap();
    let text = stdout(&out);
    for sub in ["create", "list", "show", "progress", "demo"] {
        assert!(text.contains(sub), "missing {sub}: {text}");
    }
}

#[test]
fn create_then_list_as_table_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");

    let out = kvgate(&db, &["study", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "no studies");

    let out = kvgate(
        &db,
        &[
            "study",
            "create",
            "FP8 KV chat",
            "--description",
            "C1 vs B0",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("created study FP8 KV chat"));

    let out = kvgate(&db, &["study", "list"]);
    let table = stdout(&out);
    assert!(
        table.contains("FP8 KV chat") && table.contains("user"),
        "{table}"
    );

    let out = kvgate(&db, &["study", "list", "--json"]);
    let studies: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(studies.as_array().unwrap().len(), 1);
    assert_eq!(studies[0]["name"], "FP8 KV chat");
    assert_eq!(studies[0]["description"], "C1 vs B0");
    assert_eq!(studies[0]["provenance"], "user");

    let out = kvgate(&db, &["study", "show", "fp8 kv chat", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(shown, studies[0]);
}

#[test]
fn errors_exit_non_zero_with_a_clear_message_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    assert!(kvgate(&db, &["study", "create", "A"]).status.success());

    let dup = kvgate(&db, &["study", "create", "a"]);
    assert!(!dup.status.success());
    assert!(stderr(&dup).contains("already exists"), "{}", stderr(&dup));

    let blank = kvgate(&db, &["study", "create", "  "]);
    assert!(!blank.status.success());
    assert!(
        stderr(&blank).contains("field `name`"),
        "{}",
        stderr(&blank)
    );

    let missing = kvgate(&db, &["study", "show", "nope"]);
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("no study named"),
        "{}",
        stderr(&missing)
    );

    let out = kvgate(&db, &["study", "list", "--json"]);
    let studies: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(studies.as_array().unwrap().len(), 1);
}

#[test]
fn explicit_database_is_not_seeded_but_default_is() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kvgate"))
        .args(["study", "list", "--json"])
        .env_remove("KVGATE_DB")
        .env("KVGATE_DATA_DIR", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let studies: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        studies.as_array().unwrap().len(),
        2,
        "the demo and the long set"
    );
    assert_eq!(studies[0]["provenance"], "recorded_demo");
    assert_eq!(studies[1]["provenance"], "recorded_demo");
    assert!(dir.path().join("kvgate.sqlite").exists());

    let explicit = dir.path().join("other.sqlite");
    let out = kvgate(&explicit, &["study", "list", "--json"]);
    assert_eq!(stdout(&out).trim(), "[]");
}

/// A path inside the repository.
pub fn repo(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// Study `cpu` with the CPU cells B0 and Q8 frozen.
pub fn cpu_study(db: &Path) {
    assert!(kvgate(db, &["study", "create", "cpu"]).status.success());
    for file in ["smollm2-135m-cpu-b0.json", "smollm2-135m-cpu-q8.json"] {
        let path = repo(&format!("fixtures/manifests/{file}"));
        let out = kvgate(
            db,
            &[
                "manifest",
                "freeze",
                "--study",
                "cpu",
                path.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

/// The demo's acceptance policy locked on study `cpu` by `owner`.
pub fn lock_demo_policy(db: &Path) {
    let policy = repo("fixtures/policies/demo-cpu.json");
    let out = kvgate(
        db,
        &[
            "policy",
            "lock",
            "--study",
            "cpu",
            "--file",
            policy.to_str().unwrap(),
            "--by",
            "owner",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
}

/// The demo's recorded llama.cpp runs imported into B0 and Q8 of study `cpu`.
pub fn import_demo_runs(db: &Path) {
    for (cell, file) in [("B0", "b0-f16"), ("Q8", "q8-q8_0")] {
        let path = repo(&format!("fixtures/demo/runs/{file}.kvgate-run.jsonl"));
        let out = kvgate(
            db,
            &[
                "import",
                "--study",
                "cpu",
                "--cell",
                cell,
                "--format",
                "jsonl",
                path.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

#[test]
fn demo_is_added_to_an_empty_database_once_and_its_progress_shown() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    let out = kvgate(&db, &["study", "demo", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let demo: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(demo["provenance"], "recorded_demo");
    let out = kvgate(&db, &["study", "demo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("8-bit stand-in"), "{}", stdout(&out));
    let list = kvgate(&db, &["study", "list", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&stdout(&list)).unwrap();
    assert_eq!(
        list.as_array().unwrap().len(),
        2,
        "the demo and the long set, seeded once: {list}"
    );

    let name = demo["name"].as_str().unwrap();
    let out = kvgate(&db, &["study", "progress", name, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let p: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (p["baseline_frozen"].as_bool(), p["policy_version"].as_u64()),
        (Some(true), Some(1))
    );
    let out = kvgate(&db, &["study", "progress", name]);
    assert!(stdout(&out).contains("next:"), "{}", stdout(&out));

    let fresh = kvgate(&db, &["study", "create", "fresh"]);
    assert!(fresh.status.success());
    let out = kvgate(&db, &["study", "progress", "fresh", "--json"]);
    let p: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(p["next"], "manifests");
}
