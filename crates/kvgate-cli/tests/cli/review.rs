//! `kvgate review` and `kvgate audit verify` on the demo's recorded llama.cpp runs.

use std::path::Path;

use kvgate_app::{App, DbLocation};

use crate::{cpu_study, import_demo_runs, kvgate, lock_demo_policy, repo, stderr, stdout};

fn sql(db: &Path, statement: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let app = App::open(DbLocation::Path(db.to_path_buf())).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(statement.to_owned()))
            .execute(app.store().pool())
            .await
            .unwrap();
        app.close().await;
    })
}

#[test]
fn label_pairs_then_verify_and_detect_an_outside_edit() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    cpu_study(&db);
    // Floors before results: the queue is listed only under a locked policy.
    lock_demo_policy(&db);
    import_demo_runs(&db);
    // The recorded SmolLM2 answers are rejected on both sides: no disagreement, so ask for
    // agreeing pairs to label.
    let out = kvgate(
        &db,
        &[
            "review",
            "list",
            "--study",
            "cpu",
            "--agreeing",
            "3",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let queue: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(queue["disagreements"]["Q8"], 0);
    let pairs = queue["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 3);
    for p in pairs {
        assert_eq!(p["disagreement"], false);
        assert_eq!(
            p["candidate_is_a"],
            serde_json::Value::Null,
            "blind before a label"
        );
    }
    let ids: Vec<&str> = pairs
        .iter()
        .map(|p| p["pair_id"].as_str().unwrap())
        .collect();
    // A role label names the candidate, which a blind reviewer does not know: refused before
    // the reveal, and nothing is recorded.
    let out = kvgate(
        &db,
        &[
            "review",
            "label",
            "--pair",
            ids[0],
            "--label",
            "candidate_regression",
            "--by",
            "rev",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("label the sides"), "{}", stderr(&out));
    // Blind labels name sides; the reveal prints the label they map to.
    for (i, id) in ids.iter().enumerate() {
        let side = if i == 0 {
            "a_correct_b_wrong"
        } else {
            "both_wrong"
        };
        let out = kvgate(
            &db,
            &[
                "review", "label", "--pair", id, "--label", side, "--note", "no JSON", "--by",
                "rev",
            ],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let said = stdout(&out);
        assert!(
            said.contains(&format!("as {side} blind (audit event ")),
            "{said}"
        );
        assert!(said.contains("revealed: A = "), "{said}");
        // A right and B wrong: B0 was wrong when the candidate is A, else the candidate was.
        let mapped = match side {
            "a_correct_b_wrong" if said.contains("A = Q8") => "baseline_error",
            "a_correct_b_wrong" => "candidate_regression",
            other => other,
        };
        assert!(said.trim_end().ends_with(&format!(": {mapped}")), "{said}");
    }
    // After the reveal a role label is accepted, recorded as unblinded and said so.
    let out = kvgate(
        &db,
        &[
            "review",
            "label",
            "--pair",
            ids[2],
            "--label",
            "candidate_regression",
            "--by",
            "rev",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("after the reveal")
            && stdout(&out).contains(": candidate_regression (unblinded: counted apart"),
        "{}",
        stdout(&out)
    );
    let out = kvgate(
        &db,
        &[
            "review",
            "list",
            "--study",
            "cpu",
            "--agreeing",
            "3",
            "--json",
        ],
    );
    let relisted: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let unblinded: Vec<&str> = relisted["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["unblinded"] == true)
        .map(|p| p["pair_id"].as_str().unwrap())
        .collect();
    assert_eq!(unblinded, [ids[2]]);
    // The list is written pair by pair as it is read: byte for byte what the whole queue
    // would print, and the text form's lines are those pairs.
    let whole = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let app = App::open(DbLocation::Path(db.clone())).await.unwrap();
        let study = app.study_by_name("cpu").await.unwrap();
        let queue = app
            .review_queue(
                study.id,
                kvgate_app::review::ReviewFilter {
                    agreeing_sample: 3,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        app.close().await;
        queue
    });
    assert_eq!(
        stdout(&out),
        format!("{}\n", serde_json::to_string_pretty(&whole).unwrap())
    );
    let out = kvgate(
        &db,
        &["review", "list", "--study", "cpu", "--agreeing", "3"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..2],
        ["Q8: 0 disagreements with B0", "3 labelled"],
        "{text}"
    );
    assert_eq!(lines.len(), 2 + whole.pairs.len(), "{text}");
    for (line, p) in lines[2..].iter().zip(&whole.pairs) {
        assert!(line.starts_with(&format!("{}  A ", p.pair_id)), "{line}");
        assert_eq!(line.ends_with("(unblinded)"), p.unblinded, "{line}");
    }
    let out = kvgate(
        &db,
        &[
            "review",
            "label",
            "--pair",
            ids[0],
            "--label",
            "equivalent",
            "--by",
            "rev",
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--label: expected one of"),
        "{}",
        stderr(&out)
    );

    let out = kvgate(&db, &["audit", "verify", "--study", "cpu"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("intact: 4 audit events"),
        "{}",
        stdout(&out)
    );

    sql(
        &db,
        &format!(
            "UPDATE adjudications SET note = 'fine' WHERE pair_id = '{}'",
            ids[1]
        ),
    );
    let out = kvgate(&db, &["audit", "verify", "--study", "cpu"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains(&format!("tampered: pair {}", ids[1])),
        "{}",
        stdout(&out)
    );

    sql(&db, "DROP TRIGGER audit_events_no_update");
    sql(&db, "UPDATE audit_events SET payload_json = '{\"label\":\"both_acceptable\",\"note\":\"no JSON\"}' WHERE seq = 2");
    let out = kvgate(&db, &["audit", "verify", "--study", "cpu"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("broken at event 2"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn signoff_and_decide_need_a_locked_policy_and_land_in_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    cpu_study(&db);
    let out = kvgate(
        &db,
        &[
            "signoff", "--study", "cpu", "--check", "quality", "--by", "arch",
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no locked acceptance policy"),
        "{}",
        stderr(&out)
    );
    lock_demo_policy(&db);
    // Recovery is refused until its plan is recorded.
    let out = kvgate(
        &db,
        &[
            "signoff", "--study", "cpu", "--check", "recovery", "--by", "arch",
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("needs a recorded recovery plan"),
        "{}",
        stderr(&out)
    );
    let plan = repo("fixtures/recovery/demo-cpu.json");
    let out = kvgate(&db, &["recovery", "check", plan.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stdout(&out));
    let bad = dir.path().join("bad-plan.json");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&plan)
            .unwrap()
            .replace("\"2026-11-30\"", "\"2026-11-31\""),
    )
    .unwrap();
    let out = kvgate(&db, &["recovery", "check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains(
            "rehearsal.date: expected a calendar day written YYYY-MM-DD, found \"2026-11-31\""
        ),
        "{}",
        stdout(&out)
    );
    let out = kvgate(
        &db,
        &[
            "recovery",
            "record",
            "--study",
            "cpu",
            "--file",
            plan.to_str().unwrap(),
            "--by",
            "owner",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let digest = stdout(&out).lines().next().unwrap().to_owned();
    assert_eq!(digest.len(), 64, "{digest}");
    let out = kvgate(&db, &["recovery", "show", "--study", "cpu"]);
    assert!(
        stdout(&out).contains(&format!("version 1  sha256 {digest}")),
        "{}",
        stdout(&out)
    );
    // A decision over unsigned checks is refused, naming them; an override needs a rationale,
    // and with one it is recorded, flagged.
    let decide = |extra: &[&str]| {
        let mut args = vec![
            "decide",
            "--study",
            "cpu",
            "--candidate",
            "Q8",
            "--by",
            "arch",
        ];
        args.extend_from_slice(extra);
        kvgate(&db, &args)
    };
    let out = decide(&["--outcome", "promote"]);
    assert_eq!(out.status.code(), Some(1));
    for check in ["compatibility", "quality", "operations", "recovery"] {
        assert!(
            stderr(&out).contains(&format!("{check} (unsigned)")),
            "{}",
            stderr(&out)
        );
    }
    let out = decide(&["--outcome", "promote", "--override"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("needs a rationale"),
        "{}",
        stderr(&out)
    );
    let out = decide(&[
        "--outcome",
        "rollback",
        "--override",
        "--rationale",
        "incident: back to B0 before review",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let event: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(event["payload"]["overridden"], true);
    assert_eq!(
        event["payload"]["overridden_checks"]
            .as_array()
            .unwrap()
            .len(),
        4
    );

    // No run carries startup evidence: both cells are invalid, so signing compatibility takes
    // a stated reason.
    let out = kvgate(
        &db,
        &[
            "signoff",
            "--study",
            "cpu",
            "--check",
            "compatibility",
            "--by",
            "arch",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cell B0 is invalid") && stderr(&out).contains("--reason"),
        "{}",
        stderr(&out)
    );
    for check in ["compatibility", "quality", "operations", "recovery"] {
        let out = kvgate(
            &db,
            &[
                "signoff",
                "--study",
                "cpu",
                "--check",
                check,
                "--by",
                "arch",
                "--reason",
                "no run yet: signed to exercise the gate",
            ],
        );
        assert!(out.status.success(), "{check}: {}", stderr(&out));
        assert!(
            stdout(&out).starts_with(&format!("signed {check} over evidence ")),
            "{}",
            stdout(&out)
        );
    }
    let out = kvgate(
        &db,
        &[
            "signoff", "--study", "cpu", "--check", "vibes", "--by", "arch",
        ],
    );
    assert!(
        stderr(&out).contains("--check: expected compatibility"),
        "{}",
        stderr(&out)
    );
    let out = kvgate(
        &db,
        &[
            "decide",
            "--study",
            "cpu",
            "--candidate",
            "Q8",
            "--outcome",
            "calibrate",
            "--by",
            "arch",
        ],
    );
    // All four signed and current: no override needed, none recorded.
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("OVERRIDE"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("decided calibrate for Q8"),
        "{}",
        stdout(&out)
    );
    let out = kvgate(
        &db,
        &[
            "decide",
            "--study",
            "cpu",
            "--candidate",
            "Q8",
            "--outcome",
            "ship",
            "--by",
            "arch",
        ],
    );
    assert!(!out.status.success());
    let out = kvgate(&db, &["audit", "verify", "--study", "cpu"]);
    assert!(out.status.success());
    assert!(
        stdout(&out).contains("intact: 6 audit events"),
        "{}",
        stdout(&out)
    );
    // The packet's report shows the override in red, and the reasons stated.
    let packet = dir.path().join("packet");
    let out = kvgate(
        &db,
        &[
            "packet",
            "export",
            "--study",
            "cpu",
            "--out",
            packet.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(packet.join("report.html")).unwrap();
    assert!(
        report.contains("<span class=\"void\">OVERRIDE: recorded although checks were not signed"),
        "{report}"
    );
    assert!(
        report.contains("signed over failures the evidence shows (cell B0 is invalid"),
        "{report}"
    );
}
