use kvgate_app::{App, DbLocation, ErrorCode};
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
async fn default_database_is_seeded_once_with_a_labelled_synthetic_demo() {
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
    assert_eq!(studies.len(), 1);
    let demo = &studies[0];
    assert_eq!(demo.provenance, Provenance::SyntheticDemo);
    assert!(demo.description.starts_with("Synthetic demo"));
    app.close().await;

    // Reopening neither duplicates it nor, once deleted, brings it back.
    let app = App::open(DbLocation::Default).await.unwrap();
    assert_eq!(app.list_studies().await.unwrap().len(), 1);
    sqlx_delete_all(&app).await;
    app.close().await;
    let app = App::open(DbLocation::Default).await.unwrap();
    assert!(app.list_studies().await.unwrap().is_empty());
}

async fn sqlx_delete_all(app: &App) {
    sqlx::query("DELETE FROM studies")
        .execute(app.store().pool())
        .await
        .unwrap();
}
