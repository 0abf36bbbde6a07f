//! `kvgate policy` and `kvgate analyze` on the demo's recorded llama.cpp runs.

use crate::{cpu_study, import_demo_runs, kvgate, stderr, stdout};

const POLICY: &str = r#"{"classes": [{"name": "short", "max_input_tokens": 1023, "slo": {"ttft_ms": 5000}},
                                    {"name": "long", "max_input_tokens": 2047, "slo": {"e2e_ms": 90000}}],
  "goodput": {"interval_s": 600, "drain_s": 60}, "alpha": 0.05,
  "segments": [{"name": "de", "filter": {"language": "de"}, "floor": 0.1, "margin": 0.1, "protected": true}]}"#;

#[test]
fn policy_lock_then_analyze_prints_one_json_document() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    cpu_study(&db);
    import_demo_runs(&db);
    // The synthetic nvidia-smi file of two GPUs, as Q8's allocated memory: evidence, not a result.
    let smi = crate::repo("fixtures/imports/nvidia-smi/synthetic-two-gpus.csv");
    let out = kvgate(
        &db,
        &[
            "import",
            "--study",
            "cpu",
            "--cell",
            "Q8",
            "--format",
            "nvidia-smi",
            smi.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));

    // Before a lock: no result, and the reason.
    let out = kvgate(&db, &["analyze", "--study", "cpu", "--json"]);
    assert!(!out.status.success());
    assert!(
        stdout(&out).is_empty(),
        "no partial output: {}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("no locked acceptance policy"),
        "{}",
        stderr(&out)
    );

    // A bad file is refused naming the file and the JSON path.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, POLICY.replace("\"alpha\": 0.05", "\"alpha\": 0")).unwrap();
    let out = kvgate(
        &db,
        &[
            "policy",
            "lock",
            "--study",
            "cpu",
            "--file",
            bad.to_str().unwrap(),
            "--by",
            "owner",
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("bad.json") && stderr(&out).contains("alpha: expected"),
        "{}",
        stderr(&out)
    );

    let file = dir.path().join("policy.json");
    std::fs::write(&file, POLICY).unwrap();
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
    let sha = stdout(&out).lines().next().unwrap().to_owned();
    assert_eq!(
        sha,
        kvgate_app::domain::policy::Policy::from_json_text(POLICY)
            .unwrap()
            .sha256()
    );
    let out = kvgate(&db, &["policy", "show", "--study", "cpu"]);
    assert!(stdout(&out).contains(&sha), "{}", stdout(&out));
    // Results existed at the lock (the runs were imported first): recorded, not hidden. The
    // nvidia-smi run holds aggregates but no requests: it is not counted among them.
    assert!(
        stdout(&out).contains("(2 runs with results existed)"),
        "{}",
        stdout(&out)
    );
    // A first lock made once results existed is marked so, like a change after results.
    assert!(
        stdout(&out).contains("FIRST LOCKED AFTER RESULTS EXISTED"),
        "{}",
        stdout(&out)
    );

    let out = kvgate(&db, &["analyze", "--study", "cpu", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["policy_sha256"], sha.as_str());
    assert_eq!(v["policy_first_lock_after_results"], true);
    assert_eq!(v["policy_changed_after_results"], false);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for c in cells {
        for key in [
            "cell",
            "manifest_sha256",
            "requests",
            "latency",
            "goodput",
            "paired",
            "decision",
        ] {
            assert!(c.get(key).is_some(), "{key} missing in {c}");
        }
        for key in ["offered", "completed", "failed", "timeout", "unfinished"] {
            assert!(c["requests"][key].is_u64(), "{key}");
        }
    }
    let q8 = &cells[1];
    assert_eq!(q8["cell"], "Q8");
    let overall = &q8["paired"][0];
    assert_eq!(overall["stratum"], "overall");
    for key in [
        "n",
        "b",
        "c",
        "delta",
        "mcnemar_p",
        "ci_low",
        "ci_high",
        "verdict",
    ] {
        assert!(overall.get(key).is_some(), "{key} missing in {overall}");
    }
    let short = &q8["latency"]["short"];
    assert!(
        short["ttft_ms"]["p50"].is_number() && short["count"].is_u64(),
        "{short}"
    );
    let g = &q8["goodput"]["short"];
    for key in ["per_s", "good", "cohort", "unfinished", "slo_only"] {
        assert!(g.get(key).is_some(), "{key} missing in {g}");
    }

    // Device memory from the recorded startup logs: the weights stay 92.10 MiB while the KV
    // buffer falls 45.00 → 23.91 MiB; no CUDA graphs on a CPU server (absent, not 0).
    let memory = |c: &serde_json::Value, key: &str| c["capacity"]["device_memory"][key].clone();
    assert_eq!(memory(&cells[0], "weights_mib"), 92.1);
    assert_eq!(memory(&cells[1], "weights_mib"), 92.1);
    assert_eq!(memory(&cells[0], "kv_cache_mib"), 45.0);
    assert_eq!(memory(&cells[1], "kv_cache_mib"), 23.91);
    // GPU 0 peaks at 62670 MiB, GPU 1 at 62001: 124671 MiB over 2 GPUs, on Q8 alone.
    assert_eq!(memory(&cells[1], "allocated_mib"), 124671.0);
    assert_eq!(memory(&cells[1], "allocated_gpus"), 2);
    assert!(memory(&cells[0], "allocated_mib").is_null());
    assert!(memory(&cells[0], "cuda_graph_mib").is_null());

    // The human form names the policy and the decision.
    let out = kvgate(&db, &["analyze", "--study", "cpu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&sha) && text.contains("decision:"), "{text}");
    assert!(
        text.contains(
            "device memory: weights 92.10 MiB · KV cache 23.91 MiB · compute 16.86 MiB \
             (not stated: CUDA graphs, recurrent state) · allocated (nvidia-smi) 121.75 GiB \
             over 2 GPUs"
        ),
        "{text}"
    );
}

/// Study `cpu` with B0 and a Q8 whose weights differ from B0's: a held-constant finding.
fn study_with_changed_weights(dir: &std::path::Path, db: &std::path::Path) {
    assert!(kvgate(db, &["study", "create", "cpu"]).status.success());
    let q8 = std::fs::read_to_string(crate::repo("fixtures/manifests/smollm2-135m-cpu-q8.json"))
        .unwrap();
    let mut q8: serde_json::Value = serde_json::from_str(&q8).unwrap();
    q8["weights_digest"] = "e".repeat(64).into();
    let changed = dir.join("q8-changed-weights.json");
    std::fs::write(&changed, q8.to_string()).unwrap();
    let b0 = crate::repo("fixtures/manifests/smollm2-135m-cpu-b0.json");
    for path in [b0.as_path(), changed.as_path()] {
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

fn analyze_json(db: &std::path::Path) -> serde_json::Value {
    let out = kvgate(db, &["analyze", "--study", "cpu", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_weights_change_is_uncontrolled_until_a_named_intervention_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    study_with_changed_weights(dir.path(), &db);
    // The recorded runs, Q8's bound to this manifest (its digest in place of the recorded one).
    let digest = |file: &std::path::Path| {
        let out = kvgate(&db, &["manifest", "digest", file.to_str().unwrap()]);
        stdout(&out).trim().to_owned()
    };
    let recorded = digest(&crate::repo("fixtures/manifests/smollm2-135m-cpu-q8.json"));
    let changed = digest(&dir.path().join("q8-changed-weights.json"));
    let run = std::fs::read_to_string(crate::repo("fixtures/demo/runs/q8-q8_0.kvgate-run.jsonl"))
        .unwrap()
        .replace(&recorded, &changed);
    // Its header's config names the manifest too: its digest follows.
    let (head, rest) = run.split_once('\n').unwrap();
    let mut head: serde_json::Value = serde_json::from_str(head).unwrap();
    head["config_sha256"] = kvgate_app::domain::canonical::canonical_sha256(&head["config"]).into();
    let run = format!("{head}\n{rest}");
    let q8_run = dir.path().join("q8.kvgate-run.jsonl");
    std::fs::write(&q8_run, run).unwrap();
    for (cell, path) in [
        (
            "B0",
            crate::repo("fixtures/demo/runs/b0-f16.kvgate-run.jsonl"),
        ),
        ("Q8", q8_run),
    ] {
        let out = kvgate(
            &db,
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
    crate::lock_demo_policy(&db);

    let v = analyze_json(&db);
    let d = &v["cells"][1]["decision"];
    assert_eq!(d["outcome"], "uncontrolled", "{d}");
    let found = d["uncontrolled_findings"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{d}");
    assert_eq!(found[0]["path"], "weights_digest");
    assert_eq!(found[0]["against"], "B0");
    assert!(
        d["headline"]
            .as_str()
            .unwrap()
            .starts_with("uncontrolled comparison"),
        "{d}"
    );
    assert!(d["goodput_by_class"].is_array(), "{d}");
    // B0 itself holds nothing against itself.
    assert_eq!(
        v["cells"][0]["decision"]["uncontrolled_findings"],
        serde_json::json!([])
    );
    let text = stdout(&kvgate(&db, &["analyze", "--study", "cpu"]));
    assert!(
        text.contains("UNCONTROLLED against B0: weights_digest"),
        "{text}"
    );

    // Accepting what is not a finding is refused, naming the findings there are.
    let out = kvgate(
        &db,
        &[
            "manifest",
            "intervention",
            "--study",
            "cpu",
            "--candidate",
            "Q8",
            "--accept",
            "decoding.temperature",
            "--by",
            "architect",
            "--why",
            "no reason",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`decoding.temperature` is not a held-constant finding of Q8")
            && stderr(&out).contains("weights_digest"),
        "{}",
        stderr(&out)
    );

    let out = kvgate(
        &db,
        &[
            "manifest",
            "intervention",
            "--study",
            "cpu",
            "--candidate",
            "Q8",
            "--accept",
            "weights_digest",
            "--by",
            "architect",
            "--why",
            "the Q8 bundle ships its own GGUF; compared as a deployment bundle",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("intervention recorded for Q8 by architect")
            && stdout(&out).contains("weights_digest (against B0)"),
        "{}",
        stdout(&out)
    );
    let v = analyze_json(&db);
    let d = &v["cells"][1]["decision"];
    assert_eq!(d["uncontrolled_findings"], serde_json::json!([]), "{d}");
    assert_ne!(d["outcome"], "uncontrolled", "{d}");
    let accepted = &d["accepted_findings"][0];
    assert_eq!(accepted["finding"]["path"], "weights_digest");
    assert_eq!(accepted["by"], "architect");
    // The chain still verifies with the intervention in it.
    let out = kvgate(&db, &["audit", "verify", "--study", "cpu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // `manifest diff` keeps its exit code: 2 on the red finding, intervention or not.
    let out = kvgate(
        &db,
        &[
            "manifest",
            "diff",
            crate::repo("fixtures/manifests/smollm2-135m-cpu-b0.json")
                .to_str()
                .unwrap(),
            dir.path().join("q8-changed-weights.json").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_demo_headline_says_what_the_gates_say() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    cpu_study(&db);
    import_demo_runs(&db);
    crate::lock_demo_policy(&db);
    let v = analyze_json(&db);
    let d = &v["cells"][1]["decision"];
    let headline = d["headline"].as_str().unwrap();
    if d["quality_qualifies"].is_null() {
        assert_eq!(d["outcome"], "collect_more_evidence", "{d}");
        assert!(headline.starts_with("collect more evidence"), "{headline}");
    }
    if d["quality_qualifies"] != true {
        assert!(!headline.contains("quality holds"), "{headline}");
    }
    let text = stdout(&kvgate(&db, &["analyze", "--study", "cpu"]));
    assert!(text.contains(&format!("decision: {headline}")), "{text}");
}
