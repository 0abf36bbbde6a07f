use kvgate_core::run::{RequestRecord, RequestStatus};
use kvgate_core::study::{NewStudy, Provenance};
use kvgate_store::{
    AggregateRow, ImportedRun, MetricScrapeRow, NewImport, NewRun, RunEvidence, RunKind, RunState,
    Store, StoreError,
};
use kvgate_store::{Granularity, RunProvenance};

use crate::fresh;

const DIGEST: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const FILE_SHA: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const CONFIG_SHA: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

async fn study(store: &Store) -> (i64, i64) {
    let new = NewStudy {
        name: "imports".into(),
        description: String::new(),
    };
    let sid = store.insert_study(&new, Provenance::User).await.unwrap().id;
    store.save_manifest_draft(sid, "C1", "{}").await.unwrap();
    let frozen = store
        .freeze_manifest(sid, "C1", r#"{"cell":"C1"}"#, DIGEST)
        .await
        .unwrap();
    (sid, frozen.id)
}

fn new_import(study_id: i64, manifest_id: i64) -> NewImport {
    NewImport {
        study_id,
        manifest_id,
        format: "vllm-bench".into(),
        parser_version: "kvgate-formats 0.1.0 vllm-bench".into(),
        tool: Some("vllm bench serve".into()),
        source_name: "result.json".into(),
        source_sha256: FILE_SHA.into(),
        source_bytes: 1234,
        options_json: None,
        warnings_json: r#"[{"at":"$.errors","message":"1 failed","rows":1}]"#.into(),
    }
}

fn record(index: u32, status: RequestStatus) -> RequestRecord {
    RequestRecord {
        index,
        item_id: None,
        prompt_sha256: None,
        planned_arrival_ms: f64::from(index),
        dispatch_ms: Some(f64::from(index)),
        client_delay_ms: None,
        first_token_ms: (status == RequestStatus::Ok).then_some(f64::from(index) + 5.0),
        chunk_times_ms: vec![],
        finish_ms: (status == RequestStatus::Ok).then_some(f64::from(index) + 9.0),
        status,
        http_status: None,
        error: (status != RequestStatus::Ok).then(|| "boom".into()),
        output_text: String::new(),
        prompt_tokens: Some(10),
        completion_tokens: None,
        cached_prompt_tokens: None,
        finish_reason: None,
        engine_timings: None,
    }
}

fn imported(study_id: i64, manifest_id: i64, granularity: &str, n: u32) -> ImportedRun {
    ImportedRun {
        run: NewRun {
            study_id,
            manifest_id,
            kind: RunKind::Load,
            label: format!("vllm bench · {n}"),
            provenance: RunProvenance::Imported,
            config_json: "{}".into(),
            config_sha256: CONFIG_SHA.into(),
            wall_anchor_unix_ms: 1_780_000_000_000,
            started_at: "2026-05-28T20:26:40.000Z".into(),
            owner_pid: None,
        },
        granularity: Granularity::parse(granularity).unwrap(),
        state: RunState::Completed,
        finished_at: "2026-05-28T20:27:40.000Z".into(),
        elapsed_ms: Some(60_000.0),
        planned: Some(i64::from(n)),
        note: None,
        requests: (0..n)
            .map(|i| {
                let status = if i % 10 == 9 {
                    RequestStatus::Error
                } else {
                    RequestStatus::Ok
                };
                record(i, status)
            })
            .collect(),
        evidence: vec![RunEvidence {
            kind: "startup_log".into(),
            source_name: "vllm.log".into(),
            sha256: DIGEST.into(),
            text: "INFO Using FLASH_ATTN attention backend".into(),
            parsed_json: None,
        }],
        scrapes: vec![MetricScrapeRow {
            at_ms: 0.0,
            values_json: r#"{"values":{}}"#.into(),
        }],
        aggregates: vec![AggregateRow {
            name: "ttft".into(),
            stat: "p99".into(),
            value: 123.5,
            unit: "ms".into(),
        }],
    }
}

#[tokio::test]
async fn an_import_stores_its_runs_rows_and_counts_at_once() {
    let (_dir, store) = fresh().await;
    let (sid, mid) = study(&store).await;
    let runs = vec![
        imported(sid, mid, "per_request", 70),
        imported(sid, mid, "aggregate", 0),
    ];
    let (import, stored) = store
        .insert_import(&new_import(sid, mid), &runs, &|_| true)
        .await
        .unwrap();
    assert_eq!(import.cell, "C1");
    assert_eq!(
        (import.runs, import.requests, import.aggregates),
        (2, 70, 2)
    );
    assert_eq!((import.scrapes, import.evidence), (2, 2));
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0].import_id, Some(import.id));
    assert_eq!(stored[0].granularity, Granularity::PerRequest);
    assert_eq!(stored[1].granularity, Granularity::Aggregate);
    assert_eq!((stored[0].ok, stored[0].failed), (63, 7));
    assert_eq!(stored[0].state, RunState::Completed);
    assert_eq!(store.run_requests(stored[0].id).await.unwrap().len(), 70);
    let aggregates = store.run_aggregates(stored[1].id).await.unwrap();
    assert_eq!(aggregates[0].value, 123.5);
    assert_eq!(store.list_imports(sid).await.unwrap(), vec![import.clone()]);
    assert_eq!(
        store.find_import(sid, FILE_SHA).await.unwrap(),
        Some(import)
    );
}

#[tokio::test]
async fn the_same_file_twice_is_a_conflict_and_stores_nothing() {
    let (_dir, store) = fresh().await;
    let (sid, mid) = study(&store).await;
    let runs = vec![imported(sid, mid, "per_request", 3)];
    store
        .insert_import(&new_import(sid, mid), &runs, &|_| true)
        .await
        .unwrap();
    let before = store.import_row_counts().await.unwrap();
    let err = store
        .insert_import(&new_import(sid, mid), &runs, &|_| true)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Conflict {
                entity: "import",
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("already imported as import 1 into cell C1"),
        "{err}"
    );
    assert_eq!(store.import_row_counts().await.unwrap(), before);
}

#[tokio::test]
async fn a_bad_row_or_a_cancellation_leaves_nothing() {
    let (_dir, store) = fresh().await;
    let (sid, mid) = study(&store).await;
    let before = store.import_row_counts().await.unwrap();
    // A duplicate request index in the second run: the first run must be undone too.
    let mut bad = imported(sid, mid, "per_request", 3);
    bad.requests[2].index = 0;
    let runs = vec![imported(sid, mid, "per_request", 5), bad];
    let err = store
        .insert_import(&new_import(sid, mid), &runs, &|_| true)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Conflict {
                entity: "request",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(store.import_row_counts().await.unwrap(), before);
    // A non-finite aggregate.
    let mut nan = imported(sid, mid, "aggregate", 0);
    nan.aggregates[0].value = f64::NAN;
    let err = store
        .insert_import(&new_import(sid, mid), &[nan], &|_| true)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("must be a finite number"), "{err}");
    assert_eq!(store.import_row_counts().await.unwrap(), before);
    // Cancelled while request rows are written.
    let big = vec![imported(sid, mid, "per_request", 5000)];
    let err = store
        .insert_import(&new_import(sid, mid), &big, &|rows| rows < 2048)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Cancelled), "{err}");
    assert_eq!(store.import_row_counts().await.unwrap(), before);
}

#[tokio::test]
async fn imports_and_what_they_created_never_change() {
    let (_dir, store) = fresh().await;
    let (sid, mid) = study(&store).await;
    let runs = vec![imported(sid, mid, "per_request", 2)];
    let (import, stored) = store
        .insert_import(&new_import(sid, mid), &runs, &|_| true)
        .await
        .unwrap();
    let pool = store.pool();
    for sql in [
        format!("UPDATE imports SET source_name = 'x' WHERE id = {}", import.id),
        format!("DELETE FROM imports WHERE id = {}", import.id),
        format!("UPDATE runs SET granularity = 'aggregate' WHERE id = {}", stored[0].id),
        format!("UPDATE run_aggregates SET value = 1 WHERE run_id = {}", stored[0].id),
        format!(
            "INSERT INTO run_aggregates (run_id, seq, name, stat, value, unit) VALUES ({}, 9, 'x', 'y', 1, '')",
            stored[0].id
        ),
        format!("DELETE FROM run_aggregates WHERE run_id = {}", stored[0].id),
    ] {
        let err = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .execute(pool)
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("never changes")
                || message.contains("never deleted")
                || message.contains("run is finished")
                || message.contains("identity cannot change"),
            "{sql}: {message}"
        );
    }
}

#[tokio::test]
async fn an_import_needs_a_frozen_manifest_of_its_study() {
    let (_dir, store) = fresh().await;
    let (sid, _) = study(&store).await;
    let draft = store.save_manifest_draft(sid, "C2", "{}").await.unwrap();
    let err = store
        .insert_import(
            &new_import(sid, draft.id),
            &[imported(sid, draft.id, "evidence", 0)],
            &|_| true,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFrozen { .. }), "{err}");
    assert_eq!(store.import_row_counts().await.unwrap(), [0, 0, 0, 0, 0, 0]);
}

#[tokio::test]
async fn the_format_rebuilds_keep_imports_their_runs_and_triggers_and_admit_nvidia_smi_and_harnesses(
) {
    let (_dir, store) = fresh().await;
    let (sid, mid) = study(&store).await;
    let runs = vec![imported(sid, mid, "per_request", 3)];
    let (import, stored) = store
        .insert_import(&new_import(sid, mid), &runs, &|_| true)
        .await
        .unwrap();
    // The migration once more, now over a stored import: its rows must come through unchanged.
    let rebuild = include_str!("../../migrations/20261204210000_import_format_nvidia_smi.sql");
    let mut conn = store.pool().acquire().await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(rebuild))
        .execute(&mut *conn)
        .await
        .unwrap();
    let dangling: Vec<(String,)> = sqlx::query_as("SELECT \"table\" FROM pragma_foreign_key_check")
        .fetch_all(&mut *conn)
        .await
        .unwrap();
    assert!(dangling.is_empty(), "{dangling:?}");
    drop(conn);
    assert_eq!(store.list_imports(sid).await.unwrap(), vec![import.clone()]);
    let run = store.get_run(stored[0].id).await.unwrap();
    assert_eq!(run.import_id, Some(import.id));
    let err = sqlx::query("DELETE FROM imports")
        .execute(store.pool())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("never deleted"), "{err}");

    // An nvidia-smi file: an evidence-only run whose aggregates are readings, not results.
    let mut smi = new_import(sid, mid);
    smi.format = "nvidia-smi".into();
    smi.source_sha256 = "b".repeat(64);
    let mut reading = imported(sid, mid, "evidence", 0);
    reading.evidence.clear();
    reading.scrapes.clear();
    reading.aggregates = vec![AggregateRow {
        name: "gpu.0.memory.used".into(),
        stat: "max".into(),
        value: 62670.0,
        unit: "MiB".into(),
    }];
    store
        .insert_import(&smi, &[reading.clone()], &|_| true)
        .await
        .unwrap();
    // A study whose only run is an nvidia-smi reading has no cell with results.
    let other = NewStudy {
        name: "smi only".into(),
        description: String::new(),
    };
    let sid2 = store
        .insert_study(&other, Provenance::User)
        .await
        .unwrap()
        .id;
    store.save_manifest_draft(sid2, "C1", "{}").await.unwrap();
    let mid2 = store
        .freeze_manifest(sid2, "C1", r#"{"cell":"C1"}"#, DIGEST)
        .await
        .unwrap()
        .id;
    let mut smi2 = smi.clone();
    (smi2.study_id, smi2.manifest_id) = (sid2, mid2);
    (reading.run.study_id, reading.run.manifest_id) = (sid2, mid2);
    store
        .insert_import(&smi2, &[reading], &|_| true)
        .await
        .unwrap();
    assert!(store.cells_with_results(sid2).await.unwrap().is_empty());
    assert_eq!(store.cells_with_results(sid).await.unwrap(), vec!["C1"]);

    // The harness rebuild, replayed over the stored imports, keeps them and admits harness files.
    let before = store.list_imports(sid).await.unwrap();
    let rebuild = include_str!("../../migrations/20261205000000_import_format_harness.sql");
    let mut conn = store.pool().acquire().await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(rebuild))
        .execute(&mut *conn)
        .await
        .unwrap();
    drop(conn);
    assert_eq!(store.list_imports(sid).await.unwrap(), before);
    for (format, sha) in [("lm-eval-samples", "c"), ("inspect", "d")] {
        let mut harness = new_import(sid, mid);
        harness.format = format.into();
        harness.source_sha256 = sha.repeat(64);
        store
            .insert_import(&harness, &[imported(sid, mid, "per_request", 2)], &|_| true)
            .await
            .unwrap();
    }
    let mut unknown = new_import(sid, mid);
    unknown.format = "lm-eval".into();
    unknown.source_sha256 = "e".repeat(64);
    let err = store
        .insert_import(&unknown, &[imported(sid, mid, "per_request", 1)], &|_| true)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("CHECK constraint failed"), "{err}");
}
