use crate::{queued_items, QWEN_FLIPPED_ITEMS};
use kvgate_app::{App, DbLocation, ErrorCode};
use kvgate_core::run::RunProvenance;
use kvgate_core::study::{NewStudy, Provenance};

fn input(name: &str) -> NewStudy {
    NewStudy {
        name: name.into(),
        description: String::new(),
    }
}

#[tokio::test]
async fn create_list_and_reopen_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("ws.sqlite");
    let app = App::open(DbLocation::Path(path.clone())).await.unwrap();
    let info = app.info();
    assert!(!info.db_is_default);
    assert_eq!(info.db_path, path.display().to_string());
    // An explicit database is never seeded.
    assert!(app.list_studies().await.unwrap().is_empty());
    assert_eq!(app.last_opened_study().await.unwrap(), None);

    let created = app
        .create_study(input("  FP8 KV, chat route "))
        .await
        .unwrap();
    assert_eq!(created.name, "FP8 KV, chat route");
    assert_eq!(created.provenance, Provenance::User);
    app.open_study(created.id).await.unwrap();
    app.close().await;

    let again = App::open(DbLocation::Path(path)).await.unwrap();
    assert_eq!(again.list_studies().await.unwrap(), vec![created.clone()]);
    assert_eq!(
        again.last_opened_study().await.unwrap(),
        Some(created.clone())
    );
    assert_eq!(
        again.study_by_name("fp8 kv, chat route").await.unwrap(),
        created
    );
}

#[tokio::test]
async fn invalid_and_duplicate_input_are_clear_errors_that_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let blank = app.create_study(input(" ")).await.unwrap_err();
    assert_eq!(blank.code, ErrorCode::InvalidInput);
    assert!(blank.message.contains("`name`"), "{}", blank.message);

    app.create_study(input("A")).await.unwrap();
    let dup = app.create_study(input("a")).await.unwrap_err();
    assert_eq!(dup.code, ErrorCode::Conflict);
    assert!(dup.message.contains("\"a\""), "{}", dup.message);
    assert_eq!(app.list_studies().await.unwrap().len(), 1);

    let missing = app.open_study(999).await.unwrap_err();
    assert_eq!(missing.code, ErrorCode::NotFound);
    let missing = app.study_by_name("nope").await.unwrap_err();
    assert_eq!(missing.code, ErrorCode::NotFound);
}

/// The default database lives in `$KVGATE_DATA_DIR`; this is the only test that sets it.
#[tokio::test]
async fn default_database_is_seeded_once_with_the_labelled_recorded_demo() {
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: no other test in this binary reads or writes this variable.
    unsafe { std::env::set_var(kvgate_app::DATA_DIR_ENV, dir.path()) };
    let app = App::open(DbLocation::Default).await.unwrap();
    let info = app.info();
    assert!(info.db_is_default);
    assert_eq!(
        info.db_path,
        dir.path().join("kvgate.sqlite").display().to_string()
    );
    let studies = app.list_studies().await.unwrap();
    assert_eq!(studies.len(), 2, "the demo and the long set");
    let demo = &studies[0];
    assert_eq!(studies[1].provenance, Provenance::RecordedDemo);
    assert!(studies[1].name.starts_with("Demo: long context"));
    assert_eq!(demo.provenance, Provenance::RecordedDemo);
    assert!(
        demo.description
            .starts_with("Recorded demo: llama.cpp on CPU, q8_0 KV as an 8-bit stand-in"),
        "{}",
        demo.description
    );
    // Both cells frozen, both recorded runs imported with their evidence and verdicts.
    let manifests = app.list_manifests(demo.id).await.unwrap();
    let cells: Vec<&str> = manifests.iter().map(|m| m.cell.as_str()).collect();
    assert_eq!(cells, ["B0", "Q8"]);
    assert!(manifests.iter().all(|m| m.frozen_at.is_some()));
    let runs = app.list_runs(demo.id).await.unwrap();
    assert_eq!(runs.len(), 10);
    // The offered-load sweep: each cell at two rates, two repeats each, valid, recorded.
    let sweep: Vec<_> = runs.iter().filter(|r| r.kind.as_str() == "load").collect();
    assert_eq!(sweep.len(), 8);
    for run in &sweep {
        assert_eq!(run.state.as_str(), "completed", "run {}", run.label);
        assert_eq!(run.provenance, RunProvenance::Recorded);
        assert_eq!(run.config["sweep"]["repeats"], 2, "run {}", run.label);
        let detail = app.run_detail(run.id).await.unwrap();
        assert_eq!(
            detail.validity.as_ref().map(|v| v.valid),
            Some(true),
            "run {}",
            run.label
        );
    }
    let mut kv_sizes = Vec::new();
    for run in runs.iter().filter(|r| r.kind.as_str() == "quality") {
        assert_eq!(run.state.as_str(), "completed");
        assert_eq!(run.provenance, RunProvenance::Recorded);
        let detail = app.run_detail(run.id).await.unwrap();
        let measured = detail.requests.iter().filter(|r| !r.warmup).count();
        assert_eq!(measured, 72, "run {}", run.label);
        assert_eq!(
            (detail.accepted.unwrap() + detail.rejected.unwrap()) as usize,
            measured,
            "every measured request has a verdict"
        );
        assert_eq!(detail.validity.as_ref().map(|v| v.valid), Some(true));
        let kv = detail.startup.unwrap().llama_kv_cache.unwrap().value;
        kv_sizes.push((run.cell.clone(), format!("{:.2}", kv.size_mib), kv.k_type));
    }
    kv_sizes.sort();
    assert_eq!(
        kv_sizes,
        [
            ("B0".to_owned(), "24.00".to_owned(), "f16".to_owned()),
            ("Q8".to_owned(), "12.75".to_owned(), "q8_0".to_owned())
        ]
    );
    // Its policy was locked before the runs were imported, so the analysis is shown and the
    // policy is not marked as changed after results.
    let policy = app.policy_status(demo.id).await.unwrap();
    assert_eq!(policy.versions.len(), 1);
    assert_eq!(policy.versions[0].runs_at_lock, 0);
    assert!(!policy.changed_after_results);
    assert!(!policy.first_lock_after_results, "locked before its runs");
    let analysis = app.analyze(demo.id).await.unwrap();
    // 144 in the two quality passes, 96 in the sweep.
    assert_eq!(analysis.measured_requests, 240);
    // The sweep is each cell's envelope: two rates, two runs at each.
    for cell in &analysis.body.cells {
        let short: Vec<(Option<f64>, u64)> = cell
            .envelope
            .iter()
            .filter(|p| p.class == "short")
            .map(|p| (p.offered_rps, p.repeats))
            .collect();
        assert_eq!(short, [(Some(0.02), 2), (Some(0.08), 2)], "{}", cell.cell);
        assert!(cell
            .envelope
            .iter()
            .filter(|p| p.cohort > 0)
            .all(|p| p.cost_per_good_response.is_some()));
    }
    // The demo's point: real disagreements between B0 and Q8 wait for review (B0 right on one
    // item, Q8 right on two), and they are in the review queue.
    assert_eq!(queued_items(&app, demo.id).await, QWEN_FLIPPED_ITEMS);
    assert!(analysis.provenance_label.contains("stand-in"));
    assert!(analysis.body.cells.iter().all(|c| c.valid));
    app.close().await;

    // Reopening does not seed again, even when the demo was renamed.
    let app = App::open(DbLocation::Default).await.unwrap();
    assert_eq!(app.list_studies().await.unwrap().len(), 2);
    sqlx::query("UPDATE studies SET name = 'renamed demo' WHERE id = ?")
        .bind(demo.id)
        .execute(app.store().pool())
        .await
        .unwrap();
    app.close().await;
    let app = App::open(DbLocation::Default).await.unwrap();
    let studies = app.list_studies().await.unwrap();
    assert_eq!(studies.len(), 2);
    assert_eq!(studies[0].name, "renamed demo");
}

#[cfg(unix)]
#[tokio::test]
async fn a_new_database_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("private.sqlite");
    let app = App::open(DbLocation::Path(path.clone())).await.unwrap();
    app.create_study(NewStudy {
        name: "written".into(),
        description: String::new(),
    })
    .await
    .unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    let wal = dir.path().join("private.sqlite-wal");
    assert!(wal.exists(), "WAL mode writes a -wal file");
    assert_eq!(mode(&wal), 0o600);
    app.close().await;

    // An existing file keeps its mode: the owner chose it.
    let shared = dir.path().join("shared.sqlite");
    std::fs::write(&shared, b"").unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o640)).unwrap();
    let app = App::open(DbLocation::Path(shared.clone())).await.unwrap();
    assert_eq!(mode(&shared), 0o640);
    app.close().await;
}

#[tokio::test]
async fn open_demo_seeds_an_empty_database_once_and_opens_it() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::open(DbLocation::Path(dir.path().join("empty.sqlite")))
        .await
        .unwrap();
    assert!(app.list_studies().await.unwrap().is_empty());
    let demo = app.open_demo().await.unwrap();
    assert_eq!(demo.provenance, Provenance::RecordedDemo);
    assert_eq!(app.last_opened_study().await.unwrap(), Some(demo.clone()));
    let cells: Vec<String> = app
        .list_manifests(demo.id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.cell)
        .collect();
    assert_eq!(cells, ["B0", "Q8"]);
    assert_eq!(
        app.list_runs(demo.id).await.unwrap().len(),
        10,
        "two quality passes and the eight sweep runs"
    );
    assert!(app.policy_status(demo.id).await.unwrap().current.is_some());

    // Asked again, even after the user renamed it and opened another study: the same demo.
    let other = app.create_study(input("mine")).await.unwrap();
    app.open_study(other.id).await.unwrap();
    sqlx::query("UPDATE studies SET name = 'renamed demo' WHERE id = ?")
        .bind(demo.id)
        .execute(app.store().pool())
        .await
        .unwrap();
    let again = app.open_demo().await.unwrap();
    assert_eq!((again.id, again.name.as_str()), (demo.id, "renamed demo"));
    assert_eq!(
        app.list_studies().await.unwrap().len(),
        3,
        "the demo, the long set and the user's"
    );
    assert_eq!(app.last_opened_study().await.unwrap(), Some(again));
}

#[tokio::test]
async fn open_demo_never_takes_over_a_users_study_of_the_same_name() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let name = "Demo: q8_0 KV cache on llama.cpp (recorded on CPU)";
    let mine = app.create_study(input(name)).await.unwrap();
    let refused = app.open_demo().await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert!(refused.message.contains(name), "{}", refused.message);
    // Nothing changed: no demo study, no manifest in the user's study, nothing opened.
    assert_eq!(app.list_studies().await.unwrap(), vec![mine.clone()]);
    assert!(app.list_manifests(mine.id).await.unwrap().is_empty());
    assert_eq!(app.last_opened_study().await.unwrap(), None);
}

#[tokio::test]
async fn the_long_demo_pairs_48_items_with_their_length_strata_and_real_disagreements() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    app.open_demo().await.unwrap();
    let long = app
        .list_studies()
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.name.starts_with("Demo: long context"))
        .expect("the long set beside the demo");
    assert_eq!(long.provenance, Provenance::RecordedDemo);
    let runs = app.list_runs(long.id).await.unwrap();
    assert_eq!(runs.len(), 18, "six parts of eight items per cell");
    assert!(runs
        .iter()
        .all(|r| r.kind.as_str() == "quality" && r.provenance == RunProvenance::Recorded));
    let analysis = app.analyze(long.id).await.unwrap();
    let q4 = analysis.body.cells.iter().find(|c| c.cell == "Q4").unwrap();
    assert!(q4.valid, "{:?}", q4.invalid_reasons);
    assert!(q4.unpaired.is_empty(), "{:?}", q4.unpaired);
    let row = |s: &str| {
        let r = q4.paired.iter().find(|p| p.stratum == s).unwrap();
        (r.n, r.b, r.c)
    };
    // The table of fixtures/long/README.md, counted there from the run files.
    assert_eq!(row("overall"), (48, 7, 1));
    assert_eq!(row("length_class=short"), (16, 1, 0));
    assert_eq!(row("length_class=medium"), (16, 4, 1));
    assert_eq!(row("length_class=long"), (16, 2, 0));
    assert_eq!(row("language=de"), (24, 0, 0));
    // Q8 (q8_0 KV): every answer B0 got right kept, one German short item gained.
    let q8 = analysis.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    assert!(q8.valid, "{:?}", q8.invalid_reasons);
    assert!(q8.unpaired.is_empty(), "{:?}", q8.unpaired);
    let row = |s: &str| {
        let r = q8.paired.iter().find(|p| p.stratum == s).unwrap();
        (r.n, r.b, r.c)
    };
    assert_eq!(row("overall"), (48, 0, 1));
    assert_eq!(row("length_class=short"), (16, 0, 1));
    assert_eq!(row("length_class=medium"), (16, 0, 0));
    assert_eq!(row("length_class=long"), (16, 0, 0));
    assert_eq!(row("language=de"), (24, 0, 1));
    // The nine disagreements (eight of Q4, one of Q8) wait for review.
    assert_eq!(queued_items(&app, long.id).await.len(), 9);
}
