use kvgate_core::study::{NewStudy, Provenance};
use kvgate_store::{Store, StoreError};

use crate::fresh;

const DIGEST: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

async fn study(store: &Store) -> i64 {
    let new = NewStudy {
        name: "s".into(),
        description: String::new(),
    };
    store.insert_study(&new, Provenance::User).await.unwrap().id
}

#[tokio::test]
async fn drafts_are_editable_until_frozen() {
    let (_dir, store) = fresh().await;
    let sid = study(&store).await;
    let first = store
        .save_manifest_draft(sid, "B0", r#"{"cell":"B0"}"#)
        .await
        .unwrap();
    assert!(!first.is_frozen());
    let second = store
        .save_manifest_draft(sid, "B0", r#"{"cell":"B0","label":"x"}"#)
        .await
        .unwrap();
    assert_eq!(second.id, first.id);
    assert_eq!(second.text, r#"{"cell":"B0","label":"x"}"#);

    let frozen = store
        .freeze_manifest(sid, "B0", r#"{"cell":"B0"}"#, DIGEST)
        .await
        .unwrap();
    assert_eq!(frozen.digest.as_deref(), Some(DIGEST));
    assert!(frozen.is_frozen());

    let err = store
        .save_manifest_draft(sid, "B0", r#"{"cell":"B0","label":"y"}"#)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Frozen { .. }), "{err:?}");
    let err = store
        .freeze_manifest(sid, "B0", "{}", DIGEST)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Frozen { .. }), "{err:?}");
    let err = store.delete_manifest_draft(sid, "B0").await.unwrap_err();
    assert!(matches!(err, StoreError::Frozen { .. }), "{err:?}");
    assert_eq!(store.manifest(sid, "B0").await.unwrap(), Some(frozen));
}

#[tokio::test]
async fn raw_sql_cannot_change_or_delete_a_frozen_manifest() {
    let (_dir, store) = fresh().await;
    let sid = study(&store).await;
    store.save_manifest_draft(sid, "B0", "{}").await.unwrap();
    store
        .freeze_manifest(sid, "B0", r#"{"cell":"B0"}"#, DIGEST)
        .await
        .unwrap();
    for sql in [
        "UPDATE manifests SET text = '{\"cell\":\"B0\",\"kv_dtype\":\"fp8\"}' WHERE cell = 'B0'",
        "UPDATE manifests SET digest = NULL, frozen_at = NULL WHERE cell = 'B0'",
        "DELETE FROM manifests WHERE cell = 'B0'",
    ] {
        let err = sqlx::query(sql).execute(store.pool()).await.unwrap_err();
        assert!(
            err.to_string().contains("manifest is frozen"),
            "{sql}: {err}"
        );
    }
    let kept = store.manifest(sid, "B0").await.unwrap().unwrap();
    assert_eq!(kept.text, r#"{"cell":"B0"}"#);
}

#[tokio::test]
async fn database_checks_digest_shape_and_freeze_consistency() {
    let (_dir, store) = fresh().await;
    let sid = study(&store).await;
    store.save_manifest_draft(sid, "C1", "{}").await.unwrap();
    let bad_digest = store.freeze_manifest(sid, "C1", "{}", "ABC").await;
    assert!(bad_digest.is_err());
    let half_frozen = sqlx::query("UPDATE manifests SET frozen_at = 'now' WHERE cell = 'C1'")
        .execute(store.pool())
        .await;
    assert!(
        half_frozen.is_err(),
        "frozen_at without digest must be refused"
    );
    assert!(!store
        .manifest(sid, "C1")
        .await
        .unwrap()
        .unwrap()
        .is_frozen());
}

#[tokio::test]
async fn cells_are_unique_per_study_and_need_a_study() {
    let (_dir, store) = fresh().await;
    let sid = study(&store).await;
    store.insert_manifest_draft(sid, "C1", "{}").await.unwrap();
    let err = store
        .insert_manifest_draft(sid, "C1", "{}")
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Conflict { field: "cell", .. }),
        "{err:?}"
    );
    let orphan = store.save_manifest_draft(sid + 100, "B0", "{}").await;
    assert!(orphan.is_err(), "foreign key must refuse a missing study");
    store.delete_manifest_draft(sid, "C1").await.unwrap();
    assert!(store.list_manifests(sid).await.unwrap().is_empty());
    let err = store.delete_manifest_draft(sid, "C1").await.unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
}
