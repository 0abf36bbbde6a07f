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
    // Verdicts are shown, and runs exported, only under a locked policy.
    crate::lock_demo_policy(db);
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

/// Every key of a JSON value, at any depth, that carries a result.
fn result_keys(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, x) in map {
                if ["verdict", "accepted", "rejected", "unvalidated"].contains(&k.as_str()) {
                    out.push(k.clone());
                }
                result_keys(x, out);
            }
        }
        serde_json::Value::Array(xs) => xs.iter().for_each(|x| result_keys(x, out)),
        _ => {}
    }
}

#[test]
fn before_the_lock_runs_carry_no_verdicts_and_the_queue_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    crate::cpu_study(&db);
    crate::import_demo_runs(&db);

    let out = kvgate(&db, &["run", "list", "--study", "cpu", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut found = Vec::new();
    result_keys(&runs, &mut found);
    assert_eq!(found, Vec::<String>::new());
    let id = runs[0]["id"].to_string();

    // `run show --json`: no verdict and no count, the keys absent (not 0, not null).
    let out = kvgate(&db, &["run", "show", &id, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let detail: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut found = Vec::new();
    result_keys(&detail, &mut found);
    assert_eq!(found, Vec::<String>::new(), "{detail}");
    assert_eq!(detail["withheld"], "policy_not_locked");
    assert!(!detail["requests"].as_array().unwrap().is_empty());
    let out = kvgate(&db, &["run", "show", &id]);
    assert!(
        stdout(&out).contains("verdicts withheld (policy_not_locked)"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("accepted"), "{}", stdout(&out));

    // `review list` exits 1 naming the reason; a label and a run file are refused the same way.
    let out = kvgate(&db, &["review", "list", "--study", "cpu"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("policy_not_locked"),
        "{}",
        stderr(&out)
    );
    let out = kvgate(
        &db,
        &[
            "review",
            "label",
            "--pair",
            "1:Q8/evaluation-7-en-short-begin-literal-present-000",
            "--label",
            "both_acceptable",
            "--by",
            "reviewer",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("policy_not_locked"),
        "{}",
        stderr(&out)
    );
    let file = dir.path().join("run.jsonl");
    let out = kvgate(
        &db,
        &["run", "export", &id, "--out", file.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("policy_not_locked"),
        "{}",
        stderr(&out)
    );
    assert!(!file.exists(), "nothing written");
    let out = kvgate(&db, &["study", "progress", "cpu", "--json"]);
    let progress: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(progress.get("disagreements").is_none(), "{progress}");
    assert!(
        progress.get("disagreements_labelled").is_none(),
        "{progress}"
    );

    // Locked: the verdicts are there, and the late first lock is on record.
    crate::lock_demo_policy(&db);
    let out = kvgate(&db, &["run", "show", &id, "--json"]);
    let detail: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(detail.get("withheld").is_none());
    let counted = ["accepted", "rejected", "unvalidated"]
        .iter()
        .map(|k| detail[*k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(counted, 24);
    let out = kvgate(&db, &["review", "list", "--study", "cpu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = kvgate(&db, &["policy", "show", "--study", "cpu"]);
    assert!(
        stdout(&out).contains("FIRST LOCKED AFTER RESULTS EXISTED"),
        "{}",
        stdout(&out)
    );
}

/// `run quality --cells` against a port nothing listens on: every request fails quickly, and
/// the runs are stored in the recorded order.
fn series(db: &Path, seed: &str, cells: &str) -> Vec<serde_json::Value> {
    let corpus = format!("{ROOT}fixtures/demo/corpus");
    let args = [
        "run",
        "quality",
        "--study",
        "cpu",
        "--cells",
        cells,
        "--endpoint",
        "B0=http://127.0.0.1:9",
        "--endpoint",
        "Q8=http://127.0.0.1:9/v1",
        "--corpus",
        &corpus,
        "--limit",
        "2",
        "--warmup",
        "1",
        "--scrape-interval-ms",
        "0",
        "--seed",
        seed,
        "--json",
    ];
    let out = kvgate(db, &args);
    // No startup log: the cells are not shown valid, so exit 2, every run stored.
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    runs.as_array().unwrap().clone()
}

#[test]
fn several_cells_run_one_after_another_in_a_seeded_recorded_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    study_with_cells(&db);
    let names = ["B0".to_owned(), "Q8".to_owned()];
    let mut firsts = std::collections::BTreeSet::new();
    for seed in 1..=6u64 {
        let order = kvgate_app::domain::run::cell_order(&names, seed);
        let runs = series(&db, &seed.to_string(), "B0,Q8");
        let cells: Vec<&str> = runs
            .iter()
            .map(|r| r["run"]["cell"].as_str().unwrap())
            .collect();
        assert_eq!(cells, order, "seed {seed}");
        for (i, r) in runs.iter().enumerate() {
            assert_eq!(
                r["run"]["config"]["cell_order"],
                serde_json::json!({"seed": seed, "order": order, "position": i})
            );
            // The warm-up item is recorded, and is not one of the measured items.
            let warm = r["run"]["config"]["warmup"]["items"].as_array().unwrap();
            assert_eq!(warm.len(), 1);
            let selected = r["run"]["config"]["corpus"]["selected"].as_array().unwrap();
            assert!(!selected.contains(&warm[0]), "{warm:?} in {selected:?}");
        }
        // The same seed with the cells listed the other way: the same order.
        let again = series(&db, &seed.to_string(), "Q8,B0");
        let cells_again: Vec<&str> = again
            .iter()
            .map(|r| r["run"]["cell"].as_str().unwrap())
            .collect();
        assert_eq!(cells_again, cells, "seed {seed}");
        firsts.insert(cells[0].to_owned());
    }
    assert_eq!(
        firsts.len(),
        2,
        "over six seeds, each cell ran first at least once"
    );

    // What is refused, before anything is sent or stored.
    let corpus = format!("{ROOT}fixtures/demo/corpus");
    let before = kvgate(&db, &["run", "list", "--study", "cpu", "--json"]);
    for (args, says) in [
        (
            vec!["--cells", "B0,Q8", "--endpoint", "http://127.0.0.1:9"],
            "expected CELL=VALUE with --cells",
        ),
        (
            vec!["--cells", "B0,Q8", "--endpoint", "B0=http://127.0.0.1:9"],
            "found none for Q8",
        ),
        (
            vec![
                "--cells",
                "B0,Q8",
                "--endpoint",
                "B0=http://127.0.0.1:9",
                "--endpoint",
                "C1=http://127.0.0.1:9",
            ],
            "expected one of the cells B0, Q8, found C1",
        ),
        (
            vec!["--cells", "B0,B0", "--endpoint", "B0=http://127.0.0.1:9"],
            "expected each cell once",
        ),
    ] {
        let mut all = vec!["run", "quality", "--study", "cpu", "--corpus", &corpus];
        all.extend(args);
        let out = kvgate(&db, &all);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
    let after = kvgate(&db, &["run", "list", "--study", "cpu", "--json"]);
    assert_eq!(before.stdout, after.stdout, "nothing stored");
}

/// `kvgate run sweep`: every cell at every rate, the runs-per-point repeats, each run's place
/// recorded; a duration shorter than the policy's goodput interval plus drain is refused with
/// both figures, before anything is stored; `--help` says what the sweep does.
#[test]
fn a_sweep_runs_each_cell_at_each_rate_and_a_short_duration_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    study_with_cells(&db);
    let text = std::fs::read_to_string(format!("{ROOT}fixtures/policies/demo-cpu.json")).unwrap();
    let mut policy: serde_json::Value = serde_json::from_str(&text).unwrap();
    policy["goodput"] = serde_json::json!({"interval_s": 0.3, "drain_s": 0.2});
    let file = dir.path().join("policy.json");
    std::fs::write(&file, policy.to_string()).unwrap();
    let out = kvgate(
        &db,
        &[
            "policy",
            "lock",
            "--study",
            "cpu",
            "--file",
            file.to_str().unwrap(),
            "--by",
            "owner",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let corpus = format!("{ROOT}fixtures/demo/corpus");
    let sweep = |duration: &str| {
        kvgate(
            &db,
            &[
                "run",
                "sweep",
                "--study",
                "cpu",
                "--cells",
                "B0,Q8",
                "--endpoint",
                "B0=http://127.0.0.1:9",
                "--endpoint",
                "Q8=http://127.0.0.1:9",
                "--corpus",
                &corpus,
                "--rates",
                "5,10",
                "--runs-per-point",
                "2",
                "--duration",
                duration,
                "--scrape-interval-ms",
                "0",
                "--seed",
                "4",
                "--json",
            ],
        )
    };
    let out = sweep("0.4");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("0.3 s + 0.2 s = 0.5 s") && stderr(&out).contains("found 0.4 s"),
        "{}",
        stderr(&out)
    );
    let listed = kvgate(&db, &["run", "list", "--study", "cpu", "--json"]);
    assert_eq!(stdout(&listed).trim(), "[]");

    // Nothing answers on port 9: every request fails and is stored as such; no startup log, so
    // the cells are not shown valid (exit 2), every run of the plan stored.
    let out = sweep("0.5");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 8);
    for r in runs {
        let place = &r["run"]["config"]["sweep"];
        let rates: Vec<f64> = place["rates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_f64().unwrap())
            .collect();
        assert_eq!(rates, [5.0, 10.0]);
        assert_eq!(place["repeats"], 2);
        assert_eq!(r["run"]["config"]["seed"], place["arrival_seed"]);
        assert!(r["run"]["label"].as_str().unwrap().contains("sweep repeat"));
    }
    let help = stdout(&kvgate(&db, &["run", "sweep", "--help"]));
    for words in [
        "--rates",
        "--runs-per-point",
        "goodput interval",
        "drain deadline",
    ] {
        assert!(help.contains(words), "{words}: {help}");
    }
}
