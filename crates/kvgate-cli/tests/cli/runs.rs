use std::path::Path;

use crate::{kvgate, stderr, stdout};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");

fn study_with_cells(db: &Path) {
    assert!(kvgate(db, &["study", "create", "cpu"]).status.success());
    for file in ["smollm2-135m-cpu-b0.json", "smollm2-135m-cpu-q8.json"] {
        let path = format!("{ROOT}fixtures/manifests/{file}");
        let out = kvgate(db, &["manifest", "freeze", "--study", "cpu", &path]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

#[test]
fn recorded_run_imports_lists_shows_and_is_refused_twice() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    study_with_cells(&db);
    let file = format!("{ROOT}fixtures/demo/runs/q8-q8_0.kvgate-run.jsonl");
    let out = kvgate(&db, &["run", "import", "--study", "cpu", &file]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("completed [quality] cell Q8: 24 planned"),
        "{}",
        stdout(&out)
    );

    let out = kvgate(&db, &["run", "list", "--study", "cpu", "--json"]);
    let runs: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1);
    assert_eq!(runs[0]["provenance"], "imported");
    let id = runs[0]["id"].to_string();

    let out = kvgate(&db, &["run", "show", &id, "--json"]);
    let detail: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let kv = &detail["startup"]["llama_kv_cache"]["value"];
    assert_eq!(kv["k_type"], "q8_0");
    assert_eq!(format!("{:.2}", kv["size_mib"].as_f64().unwrap()), "23.91");
    assert_eq!(detail["validity"]["valid"], true);

    let out = kvgate(&db, &["run", "import", "--study", "cpu", &file]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("already in the study"),
        "{}",
        stderr(&out)
    );

    // Export gives back the same lines.
    let copy = dir.path().join("copy.jsonl");
    let out = kvgate(
        &db,
        &["run", "export", &id, "--out", copy.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let original = std::fs::read_to_string(&file).unwrap();
    let exported = std::fs::read_to_string(&copy).unwrap();
    assert_eq!(exported.lines().count(), original.lines().count());
    let out = kvgate(
        &db,
        &["run", "export", &id, "--out", copy.to_str().unwrap()],
    );
    assert!(
        !out.status.success(),
        "an existing file is never overwritten"
    );
}

#[test]
fn quality_run_against_a_dead_endpoint_records_every_failure() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    study_with_cells(&db);
    let corpus = format!("{ROOT}fixtures/demo/corpus");
    let out = kvgate(
        &db,
        &[
            "run",
            "quality",
            "--study",
            "cpu",
            "--cell",
            "B0",
            "--endpoint",
            "http://127.0.0.1:9",
            "--corpus",
            &corpus,
            "--limit",
            "3",
            "--warmup",
            "0",
            "--scrape-interval-ms",
            "0",
        ],
    );
    // Completed with every request failed (data, not a command failure), but no startup evidence
    // was given, so the cell is invalid: exit 2.
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("3 planned, 0 ok, 3 not ok"), "{text}");
    assert!(text.contains("0 accepted, 3 rejected"), "{text}");
    assert!(text.contains("compatibility: INVALID cell"), "{text}");
    assert!(
        stderr(&out).contains("finished"),
        "progress is shown: {}",
        stderr(&out)
    );
}
