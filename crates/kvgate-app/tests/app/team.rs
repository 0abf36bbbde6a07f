//! A team's own approved prompts: imported from its file, sent by the runner, judged by each
//! item's check, paired and segmented by the team's labels, and shown to the reviewer with its
//! chat and check. The prompts below are written for this test (a team's file is its own data).

use std::collections::HashMap;
use std::path::Path;

use kvgate_app::fixtures::{import_fixtures, open_team_corpus, ImportFixtures};
use kvgate_app::runs::QualityRunInput;
use kvgate_app::ErrorCode;
use kvgate_core::fixtures::Split;

use crate::answer_server;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");

/// Eight evaluation prompts: (id, language, task, user turn, check, right answer, wrong answer).
const EVALUATION: [(&str, &str, &str, &str, &str, &str, &str); 8] = [
    (
        "n-1",
        "en",
        "notice",
        "Contract A: notice period is 30 days. How many days is the notice period?",
        r#"{"kind":"number","value":30,"tolerance":0}"#,
        "30",
        "60",
    ),
    (
        "n-2",
        "de",
        "notice",
        "Vertrag B: Kündigungsfrist 3 Monate. Wie viele Monate beträgt die Frist?",
        r#"{"kind":"number","value":3,"tolerance":0}"#,
        "3",
        "30",
    ),
    (
        "c-1",
        "en",
        "clause",
        "Contract C, clause 7.2 sets the penalty. Which clause sets the penalty?",
        r#"{"kind":"exact_text","text":"Clause 7.2"}"#,
        "Clause 7.2",
        "Clause 7.3",
    ),
    (
        "c-2",
        "de",
        "clause",
        "Vertrag D, Ziffer 9 regelt die Haftung. Welche Ziffer regelt die Haftung?",
        r#"{"kind":"regex","pattern":"(Ziffer )?9"}"#,
        "Ziffer 9",
        "Ziffer 8",
    ),
    (
        "j-1",
        "en",
        "extract",
        "Invoice E: total 1250.50 EUR, due 2026-03-01. Give total and currency as JSON.",
        r#"{"kind":"json_fields","expected":{"total":1250.5,"currency":"EUR"}}"#,
        r#"{"total": 1250.50, "currency": "EUR"}"#,
        r#"{"total": 12505, "currency": "EUR"}"#,
    ),
    (
        "j-2",
        "de",
        "extract",
        "Rechnung F: Summe 99 EUR. Summe und Währung als JSON.",
        r#"{"kind":"json_fields","expected":{"total":99,"currency":"EUR"}}"#,
        r#"{"total": 99, "currency": "EUR"}"#,
        r#"{"total": "99", "currency": "EUR"}"#,
    ),
    (
        "r-1",
        "en",
        "refusal",
        "Contract G has no arbitration clause. Which clause sets arbitration?",
        r#"{"kind":"refusal"}"#,
        r#"{"error": "not_found"}"#,
        "Clause 12",
    ),
    (
        "r-2",
        "de",
        "refusal",
        "Vertrag H nennt keinen Gerichtsstand. Wo ist der Gerichtsstand?",
        r#"{"kind":"refusal"}"#,
        r#"{"error": "not_found"}"#,
        "Berlin",
    ),
];

fn line(id: &str, labels: &str, user: &str, check: &str) -> String {
    format!(
        r#"{{"id":"{id}","messages":[{{"role":"system","content":"Answer from the text only."}},{{"role":"user","content":{}}}],"labels":{labels},"check":{check}}}"#,
        serde_json::Value::String(user.into())
    )
}

fn evaluation_file() -> String {
    EVALUATION
        .iter()
        .map(|(id, lang, task, user, check, _, _)| {
            line(
                id,
                &format!(r#"{{"language":"{lang}","task":"{task}"}}"#),
                user,
                check,
            ) + "\n"
        })
        .collect()
}

fn import(
    dir: &Path,
    name: &str,
    text: &str,
    split: Split,
    disjoint: &[&Path],
) -> Result<String, kvgate_app::AppError> {
    let file = dir.join(format!("{name}.jsonl"));
    std::fs::write(&file, text).unwrap();
    let out = dir.join(name);
    import_fixtures(&ImportFixtures {
        file: file.display().to_string(),
        split,
        out_dir: out.display().to_string(),
        disjoint_from: disjoint.iter().map(|p| p.display().to_string()).collect(),
        tokenizer_path: None,
        chat_template_path: None,
    })
    .map(|c| c.dir)
}

fn quality(
    study_id: i64,
    cell: &str,
    base_url: String,
    corpus: &str,
    log: &str,
) -> QualityRunInput {
    QualityRunInput {
        study_id,
        cell: cell.into(),
        base_url,
        model: None,
        corpus_dir: corpus.into(),
        repeats: Some(1),
        seed: Some(5),
        limit: None,
        only: None,
        resume: None,
        at_most: None,
        warmup: Some(0),
        concurrency: Some(2),
        startup_log: Some(format!("{ROOT}{log}")),
        scrape_interval_ms: None,
        request_deadline_s: Some(10.0),
    }
}

#[tokio::test]
async fn a_teams_prompts_are_run_judged_by_their_checks_paired_by_label_and_reviewed() {
    let dir = tempfile::tempdir().unwrap();
    // Calibration first; an evaluation set repeating one of its prompts (re-spaced, re-cased)
    // is refused and nothing is written.
    let (_, _, _, user, check, _, _) = EVALUATION[2];
    let calibration = import(
        dir.path(),
        "calibration",
        &(line(
            "cal-1",
            "{}",
            "A calibration question about clause 3?",
            r#"{"kind":"exact_text","text":"3"}"#,
        ) + "\n"
            + &line("cal-2", "{}", user, check)),
        Split::Calibration,
        &[],
    )
    .unwrap();
    let leaked = evaluation_file().replace(
        "Which clause sets the penalty",
        "which  clause SETS the penalty",
    );
    let err = import(
        dir.path(),
        "leaky",
        &leaked,
        Split::Evaluation,
        &[Path::new(&calibration)],
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(
        err.message.contains("line 3, $.messages"),
        "{}",
        err.message
    );
    assert!(err.message.contains("calibration"), "{}", err.message);
    assert!(!dir.path().join("leaky").exists(), "nothing written");
    // Without the shared prompt's twin in calibration, the evaluation set imports.
    std::fs::remove_dir_all(&calibration).unwrap();
    let calibration = import(
        dir.path(),
        "calibration",
        &line(
            "cal-1",
            "{}",
            "A calibration question about clause 3?",
            r#"{"kind":"exact_text","text":"3"}"#,
        ),
        Split::Calibration,
        &[],
    )
    .unwrap();
    let corpus = import(
        dir.path(),
        "evaluation",
        &evaluation_file(),
        Split::Evaluation,
        &[Path::new(&calibration)],
    )
    .unwrap();
    let team = open_team_corpus(Path::new(&corpus)).unwrap();
    assert!(!team.meta.synthetic);
    assert_eq!(team.meta.item_count, 8);
    assert_eq!(team.meta.disjoint_from.len(), 1);
    // Any corpus folder opens as what it is; the disjointness check reads a team corpus too.
    use kvgate_app::fixtures::{check_corpora, open_any_corpus, open_corpus, OpenedCorpus};
    let (c, e) = (Path::new(&corpus), Path::new(&calibration));
    assert!(matches!(open_any_corpus(c).unwrap(), OpenedCorpus::Team(t) if t.items.len() == 8));
    assert!(matches!(
        open_any_corpus(Path::new(&format!("{ROOT}fixtures/demo/corpus"))).unwrap(),
        OpenedCorpus::Generated(_)
    ));
    let err = open_corpus(c).unwrap_err();
    assert!(
        err.message.contains("found a team's corpus"),
        "{}",
        err.message
    );
    let err = kvgate_app::fixtures::export_fixtures(&kvgate_app::fixtures::ExportFixtures {
        format: kvgate_app::fixtures::ExportFormat::InspectTask,
        corpus_dir: corpus.clone(),
        out_dir: dir.path().join("export").display().to_string(),
        name: None,
        only: None,
        limit: None,
        manifest_path: None,
    })
    .unwrap_err();
    assert!(
        err.message.contains("not exported as a harness task"),
        "{}",
        err.message
    );
    assert!(!dir.path().join("export").exists());
    assert!(check_corpora(c, e).unwrap().is_disjoint());
    assert_eq!(check_corpora(c, c).unwrap().shared_items.len(), 8);
    assert!(
        check_corpora(c, Path::new(&format!("{ROOT}fixtures/demo/corpus")))
            .unwrap()
            .is_disjoint()
    );

    // B0 answers every prompt right (the English JSON total written 1250.50, equal as a
    // decimal); Q8 gets the English notice, the German clause and the German refusal wrong.
    let (mut right, mut q8) = (HashMap::new(), HashMap::new());
    for (_, _, _, user, _, good, _) in EVALUATION {
        right.insert(user.to_owned(), good.to_owned());
        q8.insert(user.to_owned(), good.to_owned());
    }
    for i in [0, 3, 7] {
        q8.insert(EVALUATION[i].3.to_owned(), EVALUATION[i].6.to_owned());
    }
    let (b0_server, q8_server) = (
        answer_server::start(right).await,
        answer_server::start(q8).await,
    );

    let (app, sid) = crate::study_with_demo_runs(&dir).await;
    let mut policy: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{ROOT}fixtures/policies/demo-cpu.json")).unwrap(),
    )
    .unwrap();
    policy["segments"].as_array_mut().unwrap().push(serde_json::json!(
        {"name": "team de", "filter": {"labels": {"language": "de"}}, "floor": 0.5, "margin": 0.1, "protected": false}
    ));
    app.lock_policy(kvgate_app::analysis::LockPolicyInput {
        study_id: sid,
        policy_json: policy.to_string(),
        locked_by: "owner".into(),
    })
    .await
    .unwrap();
    for (cell, server, log) in [
        (
            "B0",
            &b0_server,
            "fixtures/evidence/llamacpp-f16-startup.log",
        ),
        (
            "Q8",
            &q8_server,
            "fixtures/evidence/llamacpp-q8_0-startup.log",
        ),
    ] {
        let run = app
            .run_quality(&quality(sid, cell, server.base(), &corpus, log), |_| {})
            .await
            .unwrap();
        assert_eq!((run.planned, run.ok, run.failed), (Some(8), 8, 0), "{cell}");
    }
    let a = app.analyze(sid).await.unwrap();
    let q8 = a.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    let row = |name: &str| {
        q8.paired
            .iter()
            .find(|r| r.stratum == name)
            .map(|r| (r.n, r.b, r.c))
    };
    assert_eq!(row("overall"), Some((8, 3, 0)));
    assert_eq!(row("label.language=de"), Some((4, 2, 0)));
    assert_eq!(row("label.language=en"), Some((4, 1, 0)));
    assert_eq!(row("label.task=refusal"), Some((2, 1, 0)));
    assert_eq!(row("team de"), Some((4, 2, 0)));
    // The generated-corpus segments hold none of the team's prompts.
    assert_eq!(row("de"), Some((0, 0, 0)));
    let floor = q8.floors.iter().find(|f| f.segment == "team de").unwrap();
    assert_eq!((floor.n, floor.accepted), (4, 2));

    // The reviewer sees the three disagreements with the team's chat and check, no generated item.
    let queue = app
        .review_queue(sid, kvgate_app::review::ReviewFilter::default())
        .await
        .unwrap();
    let mut seen: Vec<(String, String)> = queue
        .pairs
        .iter()
        .map(|p| {
            let team = p.team.as_ref().expect("the team's item");
            assert!(p.item.is_none());
            assert_eq!(team.messages.len(), 2);
            (team.source_id.clone(), team.target.clone())
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            (
                "c-2".to_owned(),
                "text matching /(Ziffer )?9/ whole".to_owned()
            ),
            ("n-1".to_owned(), "one number within 0 of 30".to_owned()),
            (
                "r-2".to_owned(),
                "the refusal {\"error\": \"not_found\"}".to_owned()
            ),
        ]
    );

    // A labels filter lists the team's German prompts only, agreeing pairs included.
    let german = app
        .review_queue(
            sid,
            kvgate_app::review::ReviewFilter {
                strata: kvgate_core::policy::SegmentFilter {
                    labels: Some([("language".to_owned(), "de".to_owned())].into()),
                    ..Default::default()
                },
                agreeing_sample: 10,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let mut ids: Vec<String> = german
        .pairs
        .iter()
        .map(|p| p.team.as_ref().unwrap().source_id.clone())
        .collect();
    ids.sort();
    assert_eq!(ids, ["c-2", "j-2", "n-2", "r-2"]);

    // The architecture-review packet's representative requests are the team's prompts, with
    // their labels and checks, marked as not synthetic.
    let out = dir.path().join("packet");
    let e = app
        .export_packet(kvgate_app::packet::PacketExportInput {
            study_id: sid,
            out: out.display().to_string(),
            zip: false,
            representative: None,
            sign: false,
        })
        .await
        .unwrap();
    assert_eq!(e.representative.len(), 8);
    let lines = std::fs::read_to_string(out.join("requests/representative.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(first["synthetic"], false);
    assert!(first["check"]["kind"].is_string(), "{first}");
    assert!(first["labels"]["language"].is_string(), "{first}");
    assert_eq!(
        first["answers"].as_array().map(Vec::len),
        Some(2),
        "{first}"
    );
}
