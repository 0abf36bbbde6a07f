use kvgate_core::study::{NewStudy, Provenance};
use kvgate_store::{Setting, Store, StoreError};

use crate::fresh;

fn new(name: &str) -> NewStudy {
    NewStudy {
        name: name.into(),
        description: "why".into(),
    }
}

#[tokio::test]
async fn opens_with_wal_foreign_keys_and_busy_timeout() {
    let (_dir, store) = fresh().await;
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    let fk: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(fk, 1);
    let busy: i64 = sqlx::query_scalar("PRAGMA busy_timeout")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(busy, 10_000);
}

#[tokio::test]
async fn created_study_is_listed_and_survives_reopen() {
    let (dir, store) = fresh().await;
    let created = store
        .insert_study(&new("FP8 KV for chat"), Provenance::User)
        .await
        .unwrap();
    assert_eq!(created.name, "FP8 KV for chat");
    assert_eq!(created.provenance, Provenance::User);
    assert!(created.created_at.ends_with('Z'), "{}", created.created_at);
    store.close().await;

    let reopened = Store::open(&dir.path().join("kvgate.sqlite"))
        .await
        .unwrap();
    let listed = reopened.list_studies().await.unwrap();
    assert_eq!(listed, vec![created.clone()]);
    assert_eq!(
        reopened.study(created.id).await.unwrap(),
        Some(created.clone())
    );
    assert_eq!(
        reopened.study_by_name("fp8 kv for chat").await.unwrap(),
        Some(created)
    );
}

#[tokio::test]
async fn duplicate_name_is_a_conflict_regardless_of_case() {
    let (_dir, store) = fresh().await;
    store
        .insert_study(&new("Chat"), Provenance::User)
        .await
        .unwrap();
    let err = store
        .insert_study(&new("CHAT"), Provenance::User)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Conflict { field: "name", value, .. } if value == "CHAT"),
        "{err:?}"
    );
    assert_eq!(store.list_studies().await.unwrap().len(), 1);
}

#[tokio::test]
async fn database_rejects_unknown_provenance_and_blank_names() {
    let (_dir, store) = fresh().await;
    let bad_provenance = sqlx::query(
        "INSERT INTO studies (name, provenance, created_at) VALUES ('x', 'imported', 'now')",
    )
    .execute(store.pool())
    .await;
    assert!(bad_provenance.is_err());
    let blank = sqlx::query(
        "INSERT INTO studies (name, provenance, created_at) VALUES ('  ', 'user', 'now')",
    )
    .execute(store.pool())
    .await;
    assert!(blank.is_err());
    assert!(store.list_studies().await.unwrap().is_empty());
}

#[tokio::test]
async fn missing_study_is_none() {
    let (_dir, store) = fresh().await;
    assert_eq!(store.study(42).await.unwrap(), None);
    assert_eq!(store.study_by_name("nope").await.unwrap(), None);
}

#[tokio::test]
async fn settings_upsert() {
    let (_dir, store) = fresh().await;
    assert_eq!(store.setting(Setting::LastOpenedStudy).await.unwrap(), None);
    store
        .set_setting(Setting::LastOpenedStudy, "1")
        .await
        .unwrap();
    store
        .set_setting(Setting::LastOpenedStudy, "2")
        .await
        .unwrap();
    assert_eq!(
        store
            .setting(Setting::LastOpenedStudy)
            .await
            .unwrap()
            .as_deref(),
        Some("2")
    );
}

#[tokio::test]
async fn migrations_are_idempotent_across_opens() {
    let (dir, store) = fresh().await;
    store.close().await;
    let path = dir.path().join("kvgate.sqlite");
    for _ in 0..3 {
        let s = Store::open(&path).await.unwrap();
        s.close().await;
    }
    let s = Store::open(&path).await.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(s.pool())
        .await
        .unwrap();
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sql")
        })
        .count() as i64;
    assert_eq!(applied, files);
}

#[tokio::test]
async fn open_names_the_file_when_it_cannot_be_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("kvgate.sqlite");
    let err = Store::open(&path).await.unwrap_err();
    assert!(err.to_string().contains("no-such-dir"), "{err}");
}
