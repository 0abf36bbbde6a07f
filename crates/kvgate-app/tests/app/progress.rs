//! A study's progress and next step, step by step over real recorded runs (llama.cpp on CPU,
//! Qwen2.5-Coder-0.5B, f16 KV against q8_0 KV with three real disagreements), and the database
//! stamp the window's file watch compares: reads never change it, another process's write does.

use kvgate_app::imports::ImportInput;
use kvgate_app::recovery::RecordRecoveryInput;
use kvgate_app::review::{LabelInput, ReviewFilter};
use kvgate_app::signoff::{Check, DecideInput, DecisionOutcome, SignInput};
use kvgate_app::{App, DbLocation};
use kvgate_core::review::ReviewLabel;
use kvgate_core::study::{NewStudy, StudyStep};
use kvgate_formats::import::ImportFormat;

use crate::{lock_demo_policy, ROOT};

async fn import(app: &App, study_id: i64, cell: &str, file: &str) {
    app.import_file(
        ImportInput {
            study_id,
            cell: cell.into(),
            format: ImportFormat::Jsonl,
            path: format!("{ROOT}fixtures/disagreements/runs/{file}.kvgate-run.jsonl"),
            mapping: None,
            job: None,
            companion: None,
        },
        |_| {},
    )
    .await
    .unwrap_or_else(|e| panic!("{file}: {}", e.message));
}

async fn freeze(app: &App, study_id: i64, file: &str) {
    let text = std::fs::read_to_string(format!("{ROOT}fixtures/manifests/{file}")).unwrap();
    let draft = app.save_manifest_draft(study_id, &text).await.unwrap();
    let digest = kvgate_core::manifest::Manifest::from_json(&text)
        .unwrap()
        .digest()
        .unwrap();
    app.freeze_manifest(study_id, &draft.cell, &digest)
        .await
        .unwrap();
}

async fn next(app: &App, study_id: i64) -> StudyStep {
    app.study_progress(study_id).await.unwrap().next
}

#[tokio::test]
async fn the_next_step_follows_the_study_from_manifests_to_export() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let sid = app
        .create_study(NewStudy {
            name: "progress".into(),
            description: String::new(),
        })
        .await
        .unwrap()
        .id;
    let p = app.study_progress(sid).await.unwrap();
    assert_eq!(p.next, StudyStep::Manifests);
    assert_eq!((p.baseline_frozen, p.policy_version), (false, None));

    // A candidate alone, or a B0 draft, is not enough.
    freeze(&app, sid, "qwen25-coder-05b-cpu-q8.json").await;
    let b0 = std::fs::read_to_string(format!(
        "{ROOT}fixtures/manifests/qwen25-coder-05b-cpu-b0.json"
    ))
    .unwrap();
    app.save_manifest_draft(sid, &b0).await.unwrap();
    let p = app.study_progress(sid).await.unwrap();
    assert_eq!(
        (p.next, p.candidates_frozen, p.drafts),
        (StudyStep::Manifests, 1, 1)
    );
    freeze(&app, sid, "qwen25-coder-05b-cpu-b0.json").await;
    assert_eq!(next(&app, sid).await, StudyStep::LockPolicy);

    lock_demo_policy(&app, sid).await;
    assert_eq!(next(&app, sid).await, StudyStep::RunOrImport);

    // The candidate's run alone pairs nothing.
    import(&app, sid, "Q8", "qwen-q8-q8_0").await;
    let p = app.study_progress(sid).await.unwrap();
    assert_eq!(
        (p.next, p.cells_with_runs, p.baseline_has_runs),
        (StudyStep::RunOrImport, 1, false)
    );
    import(&app, sid, "B0", "qwen-b0-f16").await;
    let p = app.study_progress(sid).await.unwrap();
    assert_eq!(
        (p.next, p.disagreements, p.disagreements_labelled),
        (StudyStep::Review, Some(3), Some(0))
    );

    let queue = app
        .review_queue(sid, ReviewFilter::default())
        .await
        .unwrap();
    for (i, pair) in queue.pairs.iter().enumerate() {
        assert_eq!(next(&app, sid).await, StudyStep::Review, "before label {i}");
        app.label_pair(LabelInput {
            pair_id: pair.pair_id.clone(),
            // Blind: the side the validator rejected is the wrong one.
            label: if pair.a.accepted {
                ReviewLabel::ACorrectBWrong
            } else {
                ReviewLabel::BCorrectAWrong
            },
            note: String::new(),
            by: "reviewer".into(),
        })
        .await
        .unwrap();
    }
    let p = app.study_progress(sid).await.unwrap();
    assert_eq!(
        (p.next, p.disagreements_labelled, p.checks_signed),
        (StudyStep::SignOff, Some(3), 0)
    );

    app.record_recovery_plan(RecordRecoveryInput {
        study_id: sid,
        plan_json: std::fs::read_to_string(format!("{ROOT}fixtures/recovery/demo-cpu.json"))
            .unwrap(),
        by: "owner".into(),
    })
    .await
    .unwrap();
    for check in [
        Check::Compatibility,
        Check::Quality,
        Check::Operations,
        Check::Recovery,
    ] {
        app.sign_check(SignInput {
            study_id: sid,
            check,
            by: "architect".into(),
            expected_sha256: None,
            // Stated for every check: the quality evidence may show a failed protected floor.
            reason: "three protected answers flipped: signed to record the rollback".into(),
        })
        .await
        .unwrap();
    }
    let p = app.study_progress(sid).await.unwrap();
    assert_eq!(
        (p.next, p.checks_signed, p.candidates_decided),
        (StudyStep::SignOff, 4, 0)
    );
    app.decide(DecideInput {
        study_id: sid,
        candidate: "Q8".into(),
        outcome: DecisionOutcome::Rollback,
        by: "architect".into(),
        rationale: "three protected answers flipped".into(),
        override_gate: false,
    })
    .await
    .unwrap();
    let p = app.study_progress(sid).await.unwrap();
    assert_eq!((p.next, p.candidates_decided), (StudyStep::Export, 1));

    // A label changed later voids the quality signature: sign-off is open again.
    app.label_pair(LabelInput {
        pair_id: queue.pairs[0].pair_id.clone(),
        label: ReviewLabel::BothAcceptable,
        note: String::new(),
        by: "reviewer".into(),
    })
    .await
    .unwrap();
    let p = app.study_progress(sid).await.unwrap();
    assert_eq!((p.next, p.checks_signed), (StudyStep::SignOff, 3));
}

#[tokio::test]
async fn progress_of_a_missing_study_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let err = app.study_progress(42).await.unwrap_err();
    assert_eq!(err.code, kvgate_app::ErrorCode::NotFound);
}

/// The window reloads its lists when the stamp changes: a read that wrote (even the same value)
/// would make it reload forever.
#[tokio::test]
async fn reads_leave_the_database_stamp_alone_and_another_process_changes_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.sqlite");
    let app = App::open(DbLocation::Path(path.clone())).await.unwrap();
    let demo = app.open_demo().await.unwrap();
    // First reads may record what is recorded once (the review queue's blind-order seed).
    app.review_queue(demo.id, ReviewFilter::default())
        .await
        .unwrap();
    let before = app.db_stamp();
    for _ in 0..2 {
        app.list_studies().await.unwrap();
        app.last_opened_study().await.unwrap();
        app.open_study(demo.id).await.unwrap();
        app.list_manifests(demo.id).await.unwrap();
        app.policy_status(demo.id).await.unwrap();
        app.list_runs(demo.id).await.unwrap();
        app.review_queue(demo.id, ReviewFilter::default())
            .await
            .unwrap();
        app.verify_audit(demo.id).await.unwrap();
        app.analyze(demo.id).await.unwrap();
        app.checklist(demo.id).await.unwrap();
        app.study_progress(demo.id).await.unwrap();
    }
    assert_eq!(app.db_stamp(), before, "reading changed the database files");

    // Another process (the CLI) writes to the same file: the stamp changes.
    let cli = App::open(DbLocation::Path(path)).await.unwrap();
    cli.create_study(NewStudy {
        name: "from the command line".into(),
        description: String::new(),
    })
    .await
    .unwrap();
    assert_ne!(app.db_stamp(), before);
    cli.close().await;
}

/// A label the window gave is shown from its outcome: the watch does not report it, so the
/// window does not read a long review list again. Anyone else's write is reported, also one
/// that lands in the same period as the window's label.
#[tokio::test]
async fn the_watch_reports_writes_of_others_and_not_the_windows_own_label() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.sqlite");
    let app = App::open(DbLocation::Path(path.clone())).await.unwrap();
    let demo = app.open_demo().await.unwrap();
    let queue = app
        .review_queue(demo.id, ReviewFilter::default())
        .await
        .unwrap();
    assert!(queue.pairs.len() >= 2, "the demo has disagreements");
    let label = |pair: usize, by: &str| LabelInput {
        pair_id: queue.pairs[pair].pair_id.clone(),
        label: ReviewLabel::BothWrong,
        note: String::new(),
        by: by.into(),
    };
    let mut last = app.db_stamp();
    assert!(!app.changed_by_others(&mut last), "nothing was written");

    app.label_pair(label(0, "window")).await.unwrap();
    assert!(!app.changed_by_others(&mut last), "the window's own label");
    assert_eq!(last, app.db_stamp());

    // The CLI labels another pair: reported once.
    let cli = App::open(DbLocation::Path(path)).await.unwrap();
    cli.label_pair(label(1, "cli")).await.unwrap();
    assert!(app.changed_by_others(&mut last), "the CLI's label");
    assert!(!app.changed_by_others(&mut last), "reported once");

    // The window labels, then the CLI writes before the watch looks: reported.
    app.label_pair(label(0, "window")).await.unwrap();
    cli.create_study(NewStudy {
        name: "from the command line".into(),
        description: String::new(),
    })
    .await
    .unwrap();
    assert!(
        app.changed_by_others(&mut last),
        "a write after the window's label"
    );

    // The CLI writes, then the window labels before the watch looks: reported.
    cli.create_study(NewStudy {
        name: "from the command line, again".into(),
        description: String::new(),
    })
    .await
    .unwrap();
    app.label_pair(label(1, "window")).await.unwrap();
    assert!(
        app.changed_by_others(&mut last),
        "a write before the window's label"
    );

    // Several labels of the window between two looks: not reported.
    for (pair, by) in [(0, "window"), (1, "window"), (0, "window again")] {
        app.label_pair(label(pair, by)).await.unwrap();
    }
    assert!(
        !app.changed_by_others(&mut last),
        "three labels of the window"
    );
    cli.close().await;
}

/// Opening a study records it as the one to reopen, and the first read of a study's review
/// queue records its blind order seed: both are writes the window makes for what it shows, so
/// the watch does not report them (a study with 100,000 pairs would have its queue read twice).
/// Another process doing the same is reported.
#[tokio::test]
async fn the_watch_does_not_report_the_window_opening_a_study_or_recording_its_seed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.sqlite");
    let app = App::open(DbLocation::Path(path.clone())).await.unwrap();
    let demo = app.open_demo().await.unwrap();
    let other = app
        .create_study(NewStudy {
            name: "another".into(),
            description: String::new(),
        })
        .await
        .unwrap();
    let seed_of = |app: &App| {
        let store = app.store().clone();
        async move { store.recorded_review_seed(demo.id).await.unwrap() }
    };
    assert_eq!(seed_of(&app).await, None, "no queue read yet");
    let mut last = app.db_stamp();

    // The window opens the other study, then the demo again: each changes what is recorded.
    app.open_study(other.id).await.unwrap();
    assert_ne!(app.db_stamp(), last, "the study to reopen was written");
    app.open_study(demo.id).await.unwrap();
    assert!(
        !app.changed_by_others(&mut last),
        "the window opening studies"
    );

    // The first read of the demo's queue records its seed.
    let queue = app
        .review_index(demo.id, ReviewFilter::default())
        .await
        .unwrap();
    let seed = seed_of(&app).await.expect("recorded by the first read");
    assert_eq!(queue.seed, seed);
    assert_ne!(app.db_stamp(), last, "the seed was written");
    assert!(!app.changed_by_others(&mut last), "the window's first read");
    // Read again: the same seed, nothing written.
    let again = app
        .review_index(demo.id, ReviewFilter::default())
        .await
        .unwrap();
    assert_eq!(again.seed, seed);
    assert_eq!(app.db_stamp(), last, "a second read writes nothing");

    // The CLI opens the other study: reported.
    let cli = App::open(DbLocation::Path(path)).await.unwrap();
    cli.open_study(other.id).await.unwrap();
    assert!(app.changed_by_others(&mut last), "the CLI opening a study");
    cli.close().await;
}
