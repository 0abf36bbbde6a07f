use kvgate_app::manifests::{check_manifest, ManifestStatus};
use kvgate_app::{App, DbLocation, ErrorCode};
use kvgate_core::manifest::{FindingKind, Severity};
use kvgate_core::study::NewStudy;
use serde_json::Value;

fn fixture(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/manifests/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap()
}

async fn app_with_study() -> (tempfile::TempDir, App, i64) {
    let dir = tempfile::tempdir().unwrap();
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let study = app
        .create_study(NewStudy {
            name: "FP8 KV".into(),
            description: String::new(),
        })
        .await
        .unwrap();
    (dir, app, study.id)
}

fn with(text: &str, key: &str, value: Value) -> String {
    let mut v: Value = serde_json::from_str(text).unwrap();
    v[key] = value;
    serde_json::to_string_pretty(&v).unwrap()
}

#[tokio::test]
async fn author_derive_freeze_and_diff() {
    let (_dir, app, sid) = app_with_study().await;
    let b0 = app
        .save_manifest_draft(sid, &fixture("llama31-8b-h100-b0.json"))
        .await
        .unwrap();
    assert_eq!(b0.status, ManifestStatus::Draft);
    assert!(b0.problems.is_empty(), "{:?}", b0.problems);
    assert_eq!(
        b0.decision_row.unwrap().decision,
        "Retain as rollback target"
    );

    let digest = check_manifest(&b0.text).digest.unwrap();
    let frozen = app.freeze_manifest(sid, "B0", &digest).await.unwrap();
    assert_eq!(frozen.status, ManifestStatus::Frozen);
    assert_eq!(frozen.digest.as_deref(), Some(digest.as_str()));
    // What is stored once frozen is the canonical JSON the digest covers.
    assert_eq!(
        kvgate_core::canonical::sha256_hex(frozen.text.as_bytes()),
        digest
    );

    // Derive C1: the copy has no candidate id and problems until the intervention is set.
    let c1 = app.derive_candidate(sid, "B0", "C1").await.unwrap();
    assert_eq!(c1.status, ManifestStatus::Draft);
    assert!(!c1.problems.is_empty());
    let c1_text = fixture("llama31-8b-h100-c1.json");
    let c1 = app.save_manifest_draft(sid, &c1_text).await.unwrap();
    assert!(c1.problems.is_empty(), "{:?}", c1.problems);
    let c1_digest = check_manifest(&c1_text).digest.unwrap();
    app.freeze_manifest(sid, "C1", &c1_digest).await.unwrap();

    let d = app.diff_manifests(sid, "B0", "C1").await.unwrap();
    assert_eq!(d.red, 0);
    assert!(d.findings.iter().any(|f| f.path == "kv_dtype"
        && f.kind == FindingKind::Intervention
        && f.candidate_value.as_deref() == Some("\"fp8_e4m3\"")));
    assert_eq!(d.reference_digest.as_deref(), Some(digest.as_str()));
    assert_eq!(d.coupling_warning, None);

    let listed = app.list_manifests(sid).await.unwrap();
    assert_eq!(
        listed.iter().map(|m| m.cell.as_str()).collect::<Vec<_>>(),
        ["B0", "C1"]
    );
}

#[tokio::test]
async fn hidden_weight_change_is_a_red_finding() {
    let (_dir, app, sid) = app_with_study().await;
    app.save_manifest_draft(sid, &fixture("llama31-8b-h100-b0.json"))
        .await
        .unwrap();
    let c1 = with(
        &fixture("llama31-8b-h100-c1.json"),
        "weights_digest",
        Value::String("f".repeat(64)),
    );
    app.save_manifest_draft(sid, &c1).await.unwrap();
    let d = app.diff_manifests(sid, "B0", "C1").await.unwrap();
    let hidden = d
        .findings
        .iter()
        .find(|f| f.path == "weights_digest")
        .unwrap();
    assert_eq!(hidden.kind, FindingKind::HiddenWeightChange);
    assert_eq!(hidden.severity, Severity::Red);
    assert!(d.red >= 1);
}

#[tokio::test]
async fn freeze_refuses_problems_changed_drafts_and_second_freezes() {
    let (_dir, app, sid) = app_with_study().await;
    let bad = with(
        &fixture("llama31-8b-h100-b0.json"),
        "weights_digest",
        "xyz".into(),
    );
    app.save_manifest_draft(sid, &bad).await.unwrap();
    let err = app
        .freeze_manifest(sid, "B0", &"0".repeat(64))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(err.message.contains("weights_digest"), "{}", err.message);
    let digest = err
        .problems
        .iter()
        .find(|p| p.path == "weights_digest")
        .unwrap();
    assert_eq!(digest.code, kvgate_app::ProblemCode::Manifest);
    assert_eq!(digest.field.as_deref(), Some("weights_digest"));

    let good = fixture("llama31-8b-h100-b0.json");
    app.save_manifest_draft(sid, &good).await.unwrap();
    let stale = check_manifest(&bad).digest.unwrap();
    let err = app.freeze_manifest(sid, "B0", &stale).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(err.message.contains("changed since"), "{}", err.message);

    let digest = check_manifest(&good).digest.unwrap();
    app.freeze_manifest(sid, "B0", &digest).await.unwrap();
    let again = app.freeze_manifest(sid, "B0", &digest).await.unwrap_err();
    assert_eq!(again.code, ErrorCode::Conflict);
    let edit = app.save_manifest_draft(sid, &good).await.unwrap_err();
    assert_eq!(edit.code, ErrorCode::Conflict);
    assert!(edit.message.contains("frozen"), "{}", edit.message);
    let delete = app.delete_manifest_draft(sid, "B0").await.unwrap_err();
    assert_eq!(delete.code, ErrorCode::Conflict);
}

#[tokio::test]
async fn drafts_need_json_with_a_valid_cell() {
    let (_dir, app, sid) = app_with_study().await;
    let err = app
        .save_manifest_draft(sid, "{\"cell\": ")
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(err.message.contains("line 1"), "{}", err.message);
    let err = app.save_manifest_draft(sid, "{}").await.unwrap_err();
    assert!(err.message.starts_with("cell:"), "{}", err.message);
    let err = app.save_manifest_draft(sid, "[1]").await.unwrap_err();
    assert!(err.message.contains("JSON object"), "{}", err.message);
    let err = app
        .save_manifest_draft(sid, r#"{"cell": "b0"}"#)
        .await
        .unwrap_err();
    assert!(err.message.contains("B0"), "{}", err.message);
    // An incomplete draft is kept, with its problems listed, so nothing typed is lost.
    let draft = app
        .save_manifest_draft(sid, r#"{"cell": "B0"}"#)
        .await
        .unwrap();
    assert!(!draft.problems.is_empty());
    assert!(app.list_manifests(sid + 1).await.is_err());
}

#[tokio::test]
async fn capacity_beside_a_manifest() {
    let (_dir, app, sid) = app_with_study().await;
    app.save_manifest_draft(sid, &fixture("smollm2-135m-cpu-q8.json"))
        .await
        .unwrap();
    let stored = app.list_manifests(sid).await.unwrap();
    let cap = app.manifest_capacity(sid, &stored[0].cell).await.unwrap();
    // q8_0: 34 bytes per 32 elements; 2 × 30 layers × 3 heads × 64 dims per position.
    assert_eq!(cap.per_token.total_bytes, 2 * 30 * 3 * 64 * 34 / 32);
    // The full 2,048-cell cache: 23.91 MiB, as llama.cpp's startup log reports for q8_0.
    assert_eq!(cap.full_context_sequence.total_bytes, 25_067_520);
    assert_eq!(
        format!(
            "{:.2}",
            cap.full_context_sequence.total_bytes as f64 / 1048576.0
        ),
        "23.91"
    );
    assert!(cap.caveat.contains("latent-attention"));
}

#[tokio::test]
async fn c1_to_c2_with_a_kernel_switch_carries_the_coupling_warning() {
    let (_dir, app, sid) = app_with_study().await;
    app.save_manifest_draft(sid, &fixture("llama31-8b-h100-c1.json"))
        .await
        .unwrap();
    let c2 = with(
        &fixture("llama31-8b-h100-c2.json"),
        "kernel_revision",
        "another-kernel".into(),
    );
    app.save_manifest_draft(sid, &c2).await.unwrap();
    let d = app.diff_manifests(sid, "C1", "C2").await.unwrap();
    assert!(d
        .findings
        .iter()
        .any(|f| f.path == "kernel_revision" && f.kind == FindingKind::CoupledIntervention));
    assert!(d
        .coupling_warning
        .unwrap()
        .contains("Do not silently switch kernels"));
}

#[tokio::test]
async fn rollback_fit_beside_a_candidate() {
    let (_dir, app, sid) = app_with_study().await;
    let budget = |text: String, bytes: u64| {
        let mut v: Value = serde_json::from_str(&text).unwrap();
        v["memory_budget"] = serde_json::json!({"kv_cache_memory_bytes": bytes});
        serde_json::to_string(&v).unwrap()
    };
    app.save_manifest_draft(sid, &fixture("llama31-8b-h100-b0.json"))
        .await
        .unwrap();
    let c1 = fixture("llama31-8b-h100-c1.json");
    app.save_manifest_draft(sid, &c1).await.unwrap();
    let cap = app.manifest_capacity(sid, "C1").await.unwrap();
    assert!(cap.rollback_fit.is_none());
    assert!(cap
        .rollback_fit_missing
        .unwrap()
        .contains("kv_cache_memory_bytes"));

    // 64 sequences × 16,384 positions × 131,072 bytes (bf16 B0) = 128 GiB: a 16 GiB budget
    // that holds the candidate's fp8 cache for fewer sequences cannot hold B0's.
    app.save_manifest_draft(sid, &budget(c1, 16 << 30))
        .await
        .unwrap();
    let fit = app
        .manifest_capacity(sid, "C1")
        .await
        .unwrap()
        .rollback_fit
        .unwrap();
    assert!(!fit.fits);
    assert_eq!(fit.budget_bytes, 16 << 30);
    assert!(fit.shortfall_bytes.unwrap() > 0);
    assert!(fit.max_sequences_that_fit < 64);
    let b0 = app.manifest_capacity(sid, "B0").await.unwrap();
    assert!(b0.rollback_fit.is_none() && b0.rollback_fit_missing.is_none());
}
