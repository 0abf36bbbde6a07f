use std::process::{Command, Output};

use crate::{stderr, stdout};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kvgate"))
        .args(args)
        .env_remove("KVGATE_DB")
        .output()
        .unwrap()
}

fn generate(dir: &std::path::Path, name: &str, seed: &str, split: &str) -> std::path::PathBuf {
    let out = dir.join(name);
    let o = run(&[
        "fixtures",
        "generate",
        "--seed",
        seed,
        "--preset",
        "test-2k",
        "--out",
        out.to_str().unwrap(),
        "--split",
        split,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

#[test]
fn same_seed_same_bytes_and_splits_are_disjoint() {
    let dir = tempfile::tempdir().unwrap();
    let a = generate(dir.path(), "a", "5", "evaluation");
    let b = generate(dir.path(), "b", "5", "evaluation");
    let c = generate(dir.path(), "c", "5", "calibration");
    let bytes = |p: &std::path::Path| std::fs::read(p.join("items.jsonl")).unwrap();
    assert_eq!(bytes(&a), bytes(&b));
    assert_eq!(
        std::fs::read(a.join("corpus.json")).unwrap(),
        std::fs::read(b.join("corpus.json")).unwrap()
    );

    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(a.join("corpus.json")).unwrap()).unwrap();
    assert_eq!(meta["synthetic"], true);
    assert_eq!(
        meta["tokenizer_sha256"],
        "32082c3cd8e6c6069cbd90b292f26f723aa7361e490f51c58bb33fa916635262"
    );
    assert_eq!(meta["item_count"], 72);

    let disjoint = run(&[
        "fixtures",
        "check",
        a.to_str().unwrap(),
        c.to_str().unwrap(),
    ]);
    assert!(disjoint.status.success(), "{}", stdout(&disjoint));
    let same = run(&[
        "fixtures",
        "check",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert_eq!(same.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_str(&stdout(&same)).unwrap();
    assert_eq!(report["shared_items"].as_array().unwrap().len(), 72);
}

#[test]
fn a_corpus_is_never_overwritten_and_tampering_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let a = generate(dir.path(), "a", "9", "evaluation");
    let before = std::fs::read(a.join("items.jsonl")).unwrap();
    let o = run(&[
        "fixtures",
        "generate",
        "--seed",
        "10",
        "--preset",
        "test-2k",
        "--out",
        a.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("never overwritten"), "{}", stderr(&o));
    assert_eq!(std::fs::read(a.join("items.jsonl")).unwrap(), before);

    let shown = run(&["fixtures", "show", a.to_str().unwrap()]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let mut tampered = before.clone();
    let pos = tampered.iter().position(|&b| b == b'5').unwrap();
    tampered[pos] = b'6';
    std::fs::write(a.join("items.jsonl"), tampered).unwrap();
    let o = run(&["fixtures", "show", a.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("items.jsonl: expected sha256"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn validate_prints_a_verdict_for_every_response() {
    let dir = tempfile::tempdir().unwrap();
    let item = dir.path().join("item.json");
    std::fs::write(
        &item,
        r#"{"expected": {"asset": "AX-104", "revision": "B", "nominal_torque": 12.5, "unit": "N.m"}}"#,
    )
    .unwrap();
    let verdict = |response: &str, extra: &[&str]| {
        let path = dir.path().join("response.txt");
        std::fs::write(&path, response).unwrap();
        let mut args = vec!["validate", "--item", item.to_str().unwrap(), "--response"];
        args.push(path.to_str().unwrap());
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str::<serde_json::Value>(&stdout(&o)).unwrap()
    };
    let ok = verdict(
        r#" {"asset": "AX-104", "revision": "B", "nominal_torque": 12.50, "unit": "N.m"} "#,
        &[],
    );
    assert_eq!(ok["accepted"], true);
    let ten = verdict(
        r#"{"asset": "AX-104", "revision": "B", "nominal_torque": 125, "unit": "N.m"}"#,
        &[],
    );
    assert_eq!(ten["accepted"], false);
    assert_eq!(ten["reasons"], serde_json::json!(["factor_of_ten"]));
    let fenced = "```json\n{\"asset\": \"AX-104\", \"revision\": \"B\", \"nominal_torque\": 12.5, \"unit\": \"N.m\"}\n```";
    assert_eq!(verdict(fenced, &[])["accepted"], false);
    let allowed = verdict(fenced, &["--allow-fence"]);
    assert_eq!(allowed["accepted"], true);
    assert_eq!(allowed["fenced"], true);
    let empty = verdict("", &[]);
    assert_eq!(empty["accepted"], false);

    std::fs::write(&item, r#"{"id": "x"}"#).unwrap();
    let o = run(&[
        "validate",
        "--item",
        item.to_str().unwrap(),
        "--response",
        dir.path().join("response.txt").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("expected a field `expected`"),
        "{}",
        stderr(&o)
    );

    // A team's item is judged by its check; a check that cannot judge is named.
    std::fs::write(
        &item,
        r#"{"id": "t", "check": {"kind": "number", "value": 0.3, "tolerance": 0.1}}"#,
    )
    .unwrap();
    assert_eq!(verdict(" 0.4 ", &[])["accepted"], true);
    let far = verdict("0.41", &[]);
    assert_eq!(far["reasons"], serde_json::json!(["wrong_value"]));
    std::fs::write(&item, r#"{"check": {"kind": "regex", "pattern": "(a"}}"#).unwrap();
    let o = run(&[
        "validate",
        "--item",
        item.to_str().unwrap(),
        "--response",
        dir.path().join("response.txt").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("check.pattern"), "{}", stderr(&o));
}

#[test]
fn variable_tracking_at_8k_is_chosen_by_name_and_counted_with_the_real_tokenizer() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tracked");
    let o = run(&[
        "fixtures",
        "generate",
        "--seed",
        "3",
        "--preset",
        "8k",
        "--task-types",
        "variable_tracking",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("corpus.json")).unwrap()).unwrap();
    assert_eq!(meta["task_types"], serde_json::json!(["variable_tracking"]));
    assert_eq!(meta["preset"], "8k");
    assert_eq!(meta["item_count"], 18);
    let items: Vec<serde_json::Value> = std::fs::read_to_string(out.join("items.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for item in &items {
        let tokens = item["token_count"].as_u64().unwrap();
        let (min, max) = match item["length_class"].as_str().unwrap() {
            "short" => (0, 2047),
            "medium" => (2048, 4095),
            _ => (4096, 7167),
        };
        assert!((min..=max).contains(&tokens), "{}: {tokens}", item["id"]);
        let user = item["messages"][3]["content"].as_str().unwrap();
        if let Some(asset) = item["expected"]["asset"].as_str() {
            // The answer is the number the asked asset was renumbered to last.
            assert_ne!(asset, item["asked_asset"]);
            assert!(
                user.contains(&format!(" became {asset}\n"))
                    || user.contains(&format!(" wurde zu {asset}\n")),
                "{}",
                item["id"]
            );
        }
    }

    // Task types named twice, or a name that is none: refused, nothing written.
    let twice = dir.path().join("twice");
    let with_types = |types: &str| {
        run(&[
            "fixtures",
            "generate",
            "--seed",
            "3",
            "--preset",
            "test-2k",
            "--task-types",
            types,
            "--out",
            twice.to_str().unwrap(),
        ])
    };
    let o = with_types("literal,literal");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(
            "option `task_types`: expected one or more distinct task types, found [literal, literal]"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!twice.exists(), "nothing written");
    let o = with_types("multi_hop");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("variable_tracking"),
        "the names offered: {}",
        stderr(&o)
    );
    assert!(!twice.exists());
}

/// `kvgate fixtures import`: a team's file with bad lines exits non-zero naming each, writing
/// nothing; the good file imports, `show` reads it back as the team's data, and `--only` with a
/// label selects from it.
#[test]
fn a_teams_file_is_imported_whole_or_not_at_all_and_shown_as_the_teams() {
    let dir = tempfile::tempdir().unwrap();
    let line = |id: &str, lang: &str, check: &str| {
        format!(
            r#"{{"id":"{id}","messages":[{{"role":"user","content":"Question {id}?"}}],"labels":{{"language":"{lang}"}},"check":{check}}}"#
        )
    };
    let good = [
        line("a", "en", r#"{"kind":"exact_text","text":"A"}"#),
        line(
            "b",
            "de",
            r#"{"kind":"number","value":2.5,"tolerance":0.1}"#,
        ),
        line("c", "de", r#"{"kind":"refusal"}"#),
    ]
    .join("\n");
    let bad = [
        line("a", "en", r#"{"kind":"exact_text","text":"A"}"#),
        line("a", "de", r#"{"kind":"refusal"}"#),
        line("b", "de", r#"{"kind":"number","value":2.5,"tolerance":-1}"#),
    ]
    .join("\n");
    std::fs::write(dir.path().join("good.jsonl"), good).unwrap();
    std::fs::write(dir.path().join("bad.jsonl"), bad).unwrap();
    let out = dir.path().join("team");
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let import = |file: &str| {
        run(&[
            "fixtures",
            "import",
            &path(&dir.path().join(file)),
            "--split",
            "evaluation",
            "--out",
            &path(&out),
        ])
    };
    let o = import("bad.jsonl");
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("2 problems; nothing was written"), "{err}");
    assert!(err.contains("line 2, $.id"), "{err}");
    assert!(err.contains("line 3, $.check.tolerance"), "{err}");
    assert!(!out.exists());

    let o = import("good.jsonl");
    assert!(o.status.success(), "{}", stderr(&o));
    let said = stdout(&o);
    assert!(
        said.contains("the team's own data, not synthetic"),
        "{said}"
    );
    assert!(said.contains("label language: de 2, en 1"), "{said}");
    let shown = run(&["fixtures", "show", &path(&out), "--json"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let meta: serde_json::Value = serde_json::from_str(&stdout(&shown)).unwrap();
    assert_eq!(
        (meta["kind"].as_str(), meta["synthetic"].as_bool()),
        (Some("team"), Some(false))
    );
    assert_eq!(meta["checks"]["number"], 1);
    // Imported again into the same folder: refused, never overwritten.
    let again = import("good.jsonl");
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("never overwritten"),
        "{}",
        stderr(&again)
    );
}
