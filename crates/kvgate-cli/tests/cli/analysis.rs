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
    // Results existed at the lock (the runs were imported first): recorded, not hidden.
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

    // The human form names the policy and the decision.
    let out = kvgate(&db, &["analyze", "--study", "cpu"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&sha) && text.contains("decision:"), "{text}");
}
