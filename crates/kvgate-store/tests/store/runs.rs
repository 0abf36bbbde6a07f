use kvgate_core::run::{RequestRecord, RequestStatus};
use kvgate_core::study::{NewStudy, Provenance};
use kvgate_core::validator::{ExtractedField, JsonKind, ReasonCode, ReasonDetail, Verdict};
use kvgate_store::RunProvenance;
use kvgate_store::{
    MetricScrapeRow, NewRun, RunEvidence, RunKind, RunRecord, RunState, Store, StoreError,
    StoredRequest,
};
use serde_json::json;

use crate::fresh;

const DIGEST: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const CONFIG_SHA: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

/// A study named `name` with a frozen manifest for cell C1 and a draft for cell C2.
async fn study(store: &Store, name: &str) -> (i64, i64, i64) {
    let new = NewStudy {
        name: name.into(),
        description: String::new(),
    };
    let sid = store.insert_study(&new, Provenance::User).await.unwrap().id;
    store.save_manifest_draft(sid, "C1", "{}").await.unwrap();
    let frozen = store
        .freeze_manifest(sid, "C1", r#"{"cell":"C1"}"#, DIGEST)
        .await
        .unwrap();
    let draft = store.save_manifest_draft(sid, "C2", "{}").await.unwrap();
    (sid, frozen.id, draft.id)
}

fn new_run(study_id: i64, manifest_id: i64, started_at: &str) -> NewRun {
    NewRun {
        study_id,
        manifest_id,
        kind: RunKind::Quality,
        label: "quality · C1 · 3 items × 1".into(),
        provenance: RunProvenance::Recorded,
        config_json: r#"{"endpoint":"http://127.0.0.1:8000/v1","seed":7}"#.into(),
        config_sha256: CONFIG_SHA.into(),
        wall_anchor_unix_ms: 1_780_000_000_123,
        started_at: started_at.into(),
        owner_pid: None,
    }
}

fn record(index: u32) -> RequestRecord {
    RequestRecord {
        index,
        item_id: Some(format!("item-{index}")),
        prompt_sha256: None,
        planned_arrival_ms: 10.0 * f64::from(index),
        dispatch_ms: Some(10.0 * f64::from(index) + 0.25),
        client_delay_ms: Some(0.25),
        first_token_ms: Some(40.5 + f64::from(index)),
        chunk_times_ms: vec![40.5, 52.0, 61.125],
        finish_ms: Some(70.0 + f64::from(index)),
        status: RequestStatus::Ok,
        http_status: Some(200),
        error: None,
        output_text: r#"{"asset":"P-1","revision":"B","nominal_torque":12.5,"unit":"N.m"}"#.into(),
        prompt_tokens: Some(812),
        completion_tokens: Some(21),
        cached_prompt_tokens: Some(0),
        finish_reason: Some("stop".into()),
        engine_timings: Some(
            json!({"predicted_n": 21, "prompt_ms": 12.75, "predicted_per_token_ms": 14.25,
                "nested": {"a": [1, null]}}),
        ),
    }
}

fn accepted() -> Verdict {
    Verdict {
        accepted: true,
        reasons: vec![],
        fenced: false,
        extracted: Some(vec![ExtractedField {
            key: "nominal_torque".into(),
            kind: JsonKind::Number,
            json: "12.50".into(),
        }]),
        detail: vec![],
    }
}

fn rejected() -> Verdict {
    Verdict {
        accepted: false,
        reasons: vec![ReasonCode::WrongType, ReasonCode::Timeout],
        fenced: true,
        extracted: None,
        detail: vec![ReasonDetail {
            reason: ReasonCode::WrongType,
            field: Some("nominal_torque".into()),
            expected: Some("12.5".into()),
            found: Some("\"12.5\"".into()),
            text: "nominal_torque is a string".into(),
        }],
    }
}

fn stored(record: RequestRecord, warmup: bool, verdict: Option<Verdict>) -> StoredRequest {
    StoredRequest {
        record,
        repeat: 0,
        warmup,
        verdict,
    }
}

/// A warmup, two judged requests and one never sent, given out of order.
fn requests() -> Vec<StoredRequest> {
    let never_sent = RequestRecord {
        index: 2,
        item_id: None,
        prompt_sha256: None,
        planned_arrival_ms: 20.0,
        dispatch_ms: None,
        client_delay_ms: None,
        first_token_ms: None,
        chunk_times_ms: vec![],
        finish_ms: None,
        status: RequestStatus::Rejected,
        http_status: None,
        error: None,
        output_text: String::new(),
        prompt_tokens: None,
        completion_tokens: None,
        cached_prompt_tokens: None,
        finish_reason: None,
        engine_timings: None,
    };
    let timed_out = RequestRecord {
        status: RequestStatus::Timeout,
        finish_ms: None,
        http_status: Some(200),
        error: Some("deadline of 30000 ms passed".into()),
        output_text: "{\"asset\":".into(),
        prompt_tokens: None,
        completion_tokens: Some(0),
        cached_prompt_tokens: None,
        finish_reason: None,
        engine_timings: Some(serde_json::Value::Null),
        ..record(1)
    };
    vec![
        stored(timed_out, false, Some(rejected())),
        stored(never_sent, false, None),
        stored(record(0), false, Some(accepted())),
        StoredRequest {
            repeat: 3,
            ..stored(record(0), true, None)
        },
    ]
}

fn evidence() -> Vec<RunEvidence> {
    vec![
        RunEvidence {
            kind: "startup_log".into(),
            source_name: "server.log".into(),
            sha256: DIGEST.into(),
            text: "INFO kv_cache_dtype=fp8\r\n\ttrailing  \n".into(),
            parsed_json: Some(r#"{"kv_cache_dtype":"fp8"}"#.into()),
        },
        RunEvidence {
            kind: "metrics".into(),
            source_name: "GET /metrics".into(),
            sha256: CONFIG_SHA.into(),
            text: "# HELP x\nx 1\n".into(),
            parsed_json: None,
        },
    ]
}

fn scrapes() -> Vec<MetricScrapeRow> {
    vec![
        MetricScrapeRow {
            at_ms: 0.0,
            values_json: r#"{"kv_usage":0.0}"#.into(),
        },
        MetricScrapeRow {
            at_ms: 1000.125,
            values_json: r#"{"kv_usage":0.42}"#.into(),
        },
    ]
}

async fn finish(store: &Store, run_id: i64) -> RunRecord {
    store
        .finish_run(
            run_id,
            RunState::Completed,
            Some(1234.5),
            Some(3),
            Some("all done"),
            &requests(),
            &evidence(),
            &scrapes(),
        )
        .await
        .unwrap()
}

async fn count(store: &Store, table: &str, run_id: i64) -> i64 {
    let sql = match table {
        "run_requests" => "SELECT count(*) FROM run_requests WHERE run_id = ?",
        "run_evidence" => "SELECT count(*) FROM run_evidence WHERE run_id = ?",
        "run_metric_scrapes" => "SELECT count(*) FROM run_metric_scrapes WHERE run_id = ?",
        _ => unreachable!("{table}"),
    };
    sqlx::query_scalar(sql)
        .bind(run_id)
        .fetch_one(store.pool())
        .await
        .unwrap()
}

async fn children(store: &Store, run_id: i64) -> [i64; 3] {
    [
        count(store, "run_requests", run_id).await,
        count(store, "run_evidence", run_id).await,
        count(store, "run_metric_scrapes", run_id).await,
    ]
}

#[tokio::test]
async fn run_created_running_with_its_cell() {
    let (_dir, store) = fresh().await;
    let (sid, mid, _) = study(&store, "s").await;
    let run = store
        .create_run(&new_run(sid, mid, "2026-12-01T10:00:00.000Z"))
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Running);
    assert_eq!(run.cell, "C1");
    assert_eq!(run.kind, RunKind::Quality);
    assert_eq!(run.study_id, sid);
    assert_eq!(run.manifest_id, mid);
    assert_eq!(run.wall_anchor_unix_ms, 1_780_000_000_123);
    assert_eq!(run.started_at, "2026-12-01T10:00:00.000Z");
    assert_eq!(
        (
            run.finished_at.clone(),
            run.elapsed_ms,
            run.planned,
            run.note.clone()
        ),
        (None, None, None, None)
    );
    assert_eq!((run.ok, run.failed), (0, 0));
    assert_eq!(store.get_run(run.id).await.unwrap(), run);
}

#[tokio::test]
async fn run_round_trips_requests_with_missing_measurements_and_verdicts() {
    let (dir, store) = fresh().await;
    let (sid, mid, _) = study(&store, "s").await;
    let run = store
        .create_run(&new_run(sid, mid, "2026-12-01T10:00:00.000Z"))
        .await
        .unwrap();
    let finished = finish(&store, run.id).await;
    assert_eq!(finished.state, RunState::Completed);
    assert_eq!(finished.elapsed_ms, Some(1234.5));
    assert_eq!(finished.planned, Some(3));
    assert_eq!(finished.note.as_deref(), Some("all done"));
    assert!(finished.finished_at.as_deref().unwrap().ends_with('Z'));
    // The warmup counts in neither: one measured request ok, two not.
    assert_eq!((finished.ok, finished.failed), (1, 2));
    store.close().await;

    let store = Store::open(&dir.path().join("kvgate.sqlite"))
        .await
        .unwrap();
    assert_eq!(store.get_run(run.id).await.unwrap(), finished);
    let mut expected = requests();
    expected.sort_by_key(|r| (!r.warmup, r.record.index));
    let back = store.run_requests(run.id).await.unwrap();
    assert_eq!(back, expected);
    assert!(back[0].warmup && back[0].repeat == 3);
    assert_eq!(back[2].record.engine_timings, Some(serde_json::Value::Null));
    assert_eq!(store.run_evidence(run.id).await.unwrap(), evidence());
    assert_eq!(store.run_scrapes(run.id).await.unwrap(), scrapes());

    // Missing measurements are NULL in the file, not 0; a reported 0 stays 0.
    let types: String = sqlx::query_scalar(
        "SELECT json_array(typeof(item_id), typeof(dispatch_ms), typeof(client_delay_ms), \
         typeof(first_token_ms), typeof(finish_ms), typeof(http_status), typeof(prompt_tokens), \
         typeof(completion_tokens), typeof(cached_prompt_tokens), typeof(finish_reason), \
         typeof(error), typeof(engine_timings_json), typeof(verdict_accepted), \
         typeof(verdict_reasons_json), typeof(verdict_json)) \
         FROM run_requests WHERE run_id = ? AND idx = 2",
    )
    .bind(run.id)
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(types, format!("[{}]", vec!["\"null\""; 15].join(",")));
    let (completion, accepted, reasons): (Option<i64>, Option<i64>, Option<String>) =
        sqlx::query_as(
            "SELECT completion_tokens, verdict_accepted, verdict_reasons_json FROM run_requests \
             WHERE run_id = ? AND warmup = 0 AND idx = 1",
        )
        .bind(run.id)
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(completion, Some(0));
    assert_eq!(accepted, Some(0));
    assert_eq!(reasons.as_deref(), Some(r#"["wrong_type","timeout"]"#));
}

#[tokio::test]
async fn finish_run_stores_nothing_when_one_request_is_refused() {
    let (_dir, store) = fresh().await;
    let (sid, mid, _) = study(&store, "s").await;
    let run = store
        .create_run(&new_run(sid, mid, "2026-12-01T10:00:00.000Z"))
        .await
        .unwrap();

    let duplicate = vec![
        stored(record(0), false, None),
        stored(record(0), false, None),
    ];
    let err = store
        .finish_run(
            run.id,
            RunState::Completed,
            Some(10.0),
            Some(2),
            None,
            &duplicate,
            &evidence(),
            &scrapes(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Conflict { entity: "request", field: "index", value } if value == "0"),
        "{err:?}"
    );
    assert_eq!(store.get_run(run.id).await.unwrap(), run);
    assert_eq!(children(&store, run.id).await, [0, 0, 0]);

    // Refused by the database after every request went in: bad evidence digest.
    let mut bad_evidence = evidence();
    bad_evidence[1].sha256 = "ABC".into();
    let err = store
        .finish_run(
            run.id,
            RunState::Completed,
            Some(10.0),
            None,
            None,
            &requests(),
            &bad_evidence,
            &scrapes(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Sqlx(_)), "{err:?}");
    assert_eq!(store.get_run(run.id).await.unwrap(), run);
    assert_eq!(children(&store, run.id).await, [0, 0, 0]);

    // Refused before SQLite could lose it: a NaN would come back as NULL.
    let mut nan = requests();
    nan[3].record.dispatch_ms = Some(f64::NAN);
    let err = store
        .finish_run(
            run.id,
            RunState::Completed,
            Some(10.0),
            None,
            None,
            &nan,
            &[],
            &[],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Invalid { entity: "run", reason, .. } if reason.contains("warmup request 0: dispatch_ms")),
        "{err:?}"
    );
    let mut huge = requests();
    huge[0].record.prompt_tokens = Some(u64::MAX);
    let err = store
        .finish_run(
            run.id,
            RunState::Completed,
            Some(10.0),
            None,
            None,
            &huge,
            &[],
            &[],
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid { .. }), "{err:?}");
    let err = store
        .finish_run(
            run.id,
            RunState::Running,
            Some(10.0),
            None,
            None,
            &[],
            &[],
            &[],
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid { .. }), "{err:?}");
    assert_eq!(store.get_run(run.id).await.unwrap(), run);
    assert_eq!(children(&store, run.id).await, [0, 0, 0]);

    // Nothing was left half-written: the same run still finishes.
    let finished = finish(&store, run.id).await;
    assert_eq!(finished.state, RunState::Completed);
    assert_eq!(children(&store, run.id).await, [4, 2, 2]);
}

#[tokio::test]
async fn finished_run_and_everything_under_it_is_frozen() {
    let (_dir, store) = fresh().await;
    let (sid, mid, _) = study(&store, "s").await;
    let run = store
        .create_run(&new_run(sid, mid, "2026-12-01T10:00:00.000Z"))
        .await
        .unwrap();
    let finished = finish(&store, run.id).await;

    let err = store
        .finish_run(
            run.id,
            RunState::Failed,
            Some(1.0),
            None,
            None,
            &[],
            &[],
            &[],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Frozen { entity: "run", key } if *key == format!("run {}", run.id)),
        "{err:?}"
    );

    let id = run.id;
    let statements = [
        format!("UPDATE runs SET note = 'edited' WHERE id = {id}"),
        format!("UPDATE runs SET state = 'running', finished_at = NULL WHERE id = {id}"),
        format!("DELETE FROM runs WHERE id = {id}"),
        format!("UPDATE run_requests SET status = 'ok' WHERE run_id = {id}"),
        format!("DELETE FROM run_requests WHERE run_id = {id}"),
        format!(
            "INSERT INTO run_requests (run_id, warmup, idx, repeat, status, planned_arrival_ms, \
             output_text, chunk_times_json) VALUES ({id}, 0, 99, 0, 'ok', 0, '', '[]')"
        ),
        format!("UPDATE run_evidence SET text = 'forged' WHERE run_id = {id}"),
        format!("DELETE FROM run_evidence WHERE run_id = {id}"),
        format!(
            "INSERT INTO run_evidence (run_id, seq, kind, source_name, sha256, text) \
             VALUES ({id}, 9, 'metrics', 'x', '{DIGEST}', 'x')"
        ),
        format!("UPDATE run_metric_scrapes SET at_ms = 1 WHERE run_id = {id}"),
        format!("DELETE FROM run_metric_scrapes WHERE run_id = {id}"),
        format!(
            "INSERT INTO run_metric_scrapes (run_id, seq, at_ms, values_json) \
             VALUES ({id}, 9, 0, '{{}}')"
        ),
    ];
    for sql in statements {
        let err = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .execute(store.pool())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("run is finished"), "{sql}: {err}");
    }
    assert_eq!(store.get_run(id).await.unwrap(), finished);
    assert_eq!(children(&store, id).await, [4, 2, 2]);
    assert_eq!(store.mark_interrupted_runs(|_| false).await.unwrap(), 0);
    assert_eq!(store.get_run(id).await.unwrap(), finished);
}

#[tokio::test]
async fn run_needs_a_frozen_manifest_of_its_study() {
    let (_dir, store) = fresh().await;
    let (sid, frozen, draft) = study(&store, "s").await;
    let (other_sid, other_frozen, _) = study(&store, "other").await;
    let at = "2026-12-01T10:00:00.000Z";

    let err = store
        .create_run(&new_run(sid, draft, at))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::NotFrozen { entity: "manifest", key } if *key == format!("id {draft}")),
        "{err:?}"
    );
    assert!(err.to_string().contains("draft"), "{err}");
    let err = store
        .create_run(&new_run(sid, other_frozen, at))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Invalid { entity: "manifest", reason, .. }
            if reason.contains(&format!("study {other_sid}"))),
        "{err:?}"
    );
    let err = store
        .create_run(&new_run(sid, frozen + 100, at))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::NotFound {
                entity: "manifest",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(store.list_runs(sid).await.unwrap().is_empty());

    // The database refuses the same by itself, and refuses a run that does not start running.
    let insert = concat!(
        "INSERT INTO runs (study_id, manifest_id, kind, state, label, provenance, config_json, ",
        "config_sha256, wall_anchor_unix_ms, started_at, finished_at) ",
        "VALUES (?, ?, 'load', ?, 'x', 'recorded', '{}', ?, 0, '2026-12-01T10:00:00Z', ?)"
    );
    for (manifest, state, finished_at, refusal) in [
        (draft, "running", None, "run needs a frozen manifest"),
        (other_frozen, "running", None, "run needs a frozen manifest"),
        (frozen, "completed", Some(at), "run starts running"),
    ] {
        let err = sqlx::query(insert)
            .bind(sid)
            .bind(manifest)
            .bind(state)
            .bind(CONFIG_SHA)
            .bind(finished_at)
            .execute(store.pool())
            .await
            .unwrap_err();
        assert!(err.to_string().contains(refusal), "{err}");
    }

    // Other integrity checks: provenance, digest shape, JSON configuration, timestamp.
    // The type allows no other provenance; the table refuses one written around it.
    let err = sqlx::query(
        "INSERT INTO runs (study_id, manifest_id, kind, state, label, provenance, config_json, \
         config_sha256, wall_anchor_unix_ms, started_at) \
         VALUES (?, ?, 'load', 'running', 'x', 'user', '{}', ?, 0, ?)",
    )
    .bind(sid)
    .bind(frozen)
    .bind(CONFIG_SHA)
    .bind(at)
    .execute(store.pool())
    .await
    .unwrap_err();
    assert!(err.to_string().contains("CHECK"), "{err}");
    let mut bad = new_run(sid, frozen, at);
    bad.config_sha256 = DIGEST.to_uppercase();
    assert!(store.create_run(&bad).await.is_err());
    let mut bad = new_run(sid, frozen, at);
    bad.config_json = "{not json".into();
    assert!(store.create_run(&bad).await.is_err());
    let mut bad = new_run(sid, frozen, at);
    bad.started_at = "yesterday".into();
    assert!(store.create_run(&bad).await.is_err());
    assert!(store.list_runs(sid).await.unwrap().is_empty());
}

#[tokio::test]
async fn running_run_keeps_its_identity() {
    let (_dir, store) = fresh().await;
    let (sid, mid, _) = study(&store, "s").await;
    let run = store
        .create_run(&new_run(sid, mid, "2026-12-01T10:00:00.000Z"))
        .await
        .unwrap();
    for sql in [
        "UPDATE runs SET config_json = '{\"seed\":8}'",
        "UPDATE runs SET started_at = '2026-12-02T00:00:00Z'",
        "UPDATE runs SET kind = 'load'",
    ] {
        let err = sqlx::query(sql).execute(store.pool()).await.unwrap_err();
        assert!(
            err.to_string().contains("run identity cannot change"),
            "{sql}: {err}"
        );
    }
    assert_eq!(store.get_run(run.id).await.unwrap(), run);
}

#[tokio::test]
async fn runs_left_running_are_marked_interrupted() {
    let (_dir, store) = fresh().await;
    let (sid, mid, _) = study(&store, "s").await;
    let early = store
        .create_run(&new_run(sid, mid, "2026-12-01T10:00:00.000Z"))
        .await
        .unwrap();
    let late = store
        .create_run(&new_run(sid, mid, "2026-12-01T12:00:00+01:00"))
        .await
        .unwrap();
    let done = store
        .create_run(&new_run(sid, mid, "2026-12-01T09:00:00.000Z"))
        .await
        .unwrap();
    let done = finish(&store, done.id).await;

    assert_eq!(store.mark_interrupted_runs(|_| false).await.unwrap(), 2);
    for run in [&early, &late] {
        let interrupted = store.get_run(run.id).await.unwrap();
        assert_eq!(interrupted.state, RunState::Interrupted);
        assert!(interrupted.finished_at.is_some());
        assert_eq!(interrupted.elapsed_ms, None);
        assert!(
            interrupted.note.as_deref().unwrap().contains("interrupted"),
            "{interrupted:?}"
        );
        assert_eq!(
            RunRecord {
                state: RunState::Running,
                finished_at: None,
                note: None,
                ..interrupted
            },
            *run
        );
    }
    assert_eq!(store.get_run(done.id).await.unwrap(), done);
    assert_eq!(store.mark_interrupted_runs(|_| false).await.unwrap(), 0);

    // An interrupted run is finished: nothing can be stored for it any more.
    let err = store
        .finish_run(
            early.id,
            RunState::Completed,
            Some(1.0),
            None,
            None,
            &requests(),
            &[],
            &[],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Frozen { entity: "run", .. }),
        "{err:?}"
    );
    assert_eq!(children(&store, early.id).await, [0, 0, 0]);
}

#[tokio::test]
async fn runs_are_listed_per_study_and_missing_ones_are_not_found() {
    let (_dir, store) = fresh().await;
    let (sid, mid, _) = study(&store, "s").await;
    let (other_sid, other_mid, _) = study(&store, "other").await;
    let at = "2026-12-01T10:00:00.000Z";
    let first = store.create_run(&new_run(sid, mid, at)).await.unwrap();
    let other = store
        .create_run(&new_run(other_sid, other_mid, at))
        .await
        .unwrap();
    let mut load = new_run(sid, mid, at);
    load.kind = RunKind::Load;
    load.provenance = RunProvenance::SyntheticDemo;
    let second = store.create_run(&load).await.unwrap();
    let second = store
        .finish_run(
            second.id,
            RunState::Cancelled,
            Some(5.0),
            None,
            None,
            &[],
            &[],
            &[],
        )
        .await
        .unwrap();
    assert_eq!(second.kind, RunKind::Load);
    assert_eq!((second.ok, second.failed), (0, 0));

    assert_eq!(
        store.list_runs(sid).await.unwrap(),
        vec![first.clone(), second.clone()]
    );
    assert_eq!(store.list_runs(other_sid).await.unwrap(), vec![other]);
    assert!(store.list_runs(other_sid + 100).await.unwrap().is_empty());

    // A run with nothing stored has empty lists; a missing run is not found.
    assert!(store.run_requests(first.id).await.unwrap().is_empty());
    assert!(store.run_evidence(second.id).await.unwrap().is_empty());
    assert!(store.run_scrapes(second.id).await.unwrap().is_empty());
    let missing = second.id + 100;
    let key = format!("run {missing}");
    for err in [
        store.get_run(missing).await.unwrap_err(),
        store.run_requests(missing).await.unwrap_err(),
        store.run_evidence(missing).await.unwrap_err(),
        store.run_scrapes(missing).await.unwrap_err(),
        store
            .finish_run(
                missing,
                RunState::Completed,
                Some(1.0),
                None,
                None,
                &[],
                &[],
                &[],
            )
            .await
            .unwrap_err(),
    ] {
        assert!(
            matches!(&err, StoreError::NotFound { entity: "run", key: k } if *k == key),
            "{err:?}"
        );
    }
}

#[tokio::test]
async fn finish_run_stores_many_requests() {
    let (_dir, store) = fresh().await;
    let (sid, mid, _) = study(&store, "s").await;
    let run = store
        .create_run(&new_run(sid, mid, "2026-12-01T10:00:00.000Z"))
        .await
        .unwrap();
    // Not a multiple of any batch size, warmups mixed in, verdicts on some.
    let mut many: Vec<StoredRequest> = (0..20_003)
        .map(|i| {
            let mut r = record(i);
            if i % 10 == 0 {
                r.status = RequestStatus::Error;
                r.prompt_tokens = None;
            }
            let verdict = (i % 3 == 0).then(accepted);
            StoredRequest {
                repeat: i % 4,
                ..stored(r, false, verdict)
            }
        })
        .collect();
    many.extend((0..5).map(|i| stored(record(i), true, None)));
    let finished = store
        .finish_run(
            run.id,
            RunState::Completed,
            Some(1.0),
            Some(20_003),
            None,
            &many,
            &[],
            &[],
        )
        .await
        .unwrap();
    assert_eq!((finished.ok, finished.failed), (18_002, 2_001));
    let mut expected = many;
    expected.sort_by_key(|r| (!r.warmup, r.record.index));
    assert_eq!(store.run_requests(run.id).await.unwrap(), expected);
}

/// A measured request `idx` of run `run_id`, stored by hand.
async fn insert_row(store: &Store, run_id: i64, idx: i64) {
    sqlx::query(
        "INSERT INTO run_requests (run_id, warmup, idx, repeat, status, planned_arrival_ms, \
         output_text, chunk_times_json) VALUES (?, 0, ?, 0, 'ok', 0, '', '[]')",
    )
    .bind(run_id)
    .bind(idx)
    .execute(store.pool())
    .await
    .unwrap();
}

#[tokio::test]
async fn request_already_stored_for_a_running_run_is_named_and_nothing_is_kept() {
    let (_dir, store) = fresh().await;
    let (sid, mid, _) = study(&store, "s").await;
    let run = store
        .create_run(&new_run(sid, mid, "2026-12-01T10:00:00.000Z"))
        .await
        .unwrap();
    insert_row(&store, run.id, 17).await;
    let many: Vec<StoredRequest> = (0..40).map(|i| stored(record(i), false, None)).collect();
    let err = store
        .finish_run(
            run.id,
            RunState::Completed,
            Some(1.0),
            None,
            None,
            &many,
            &evidence(),
            &[],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Conflict { entity: "request", value, .. } if value == "17"),
        "{err:?}"
    );
    assert_eq!(store.get_run(run.id).await.unwrap(), run);
    assert_eq!(children(&store, run.id).await, [1, 0, 0]);
}

/// A run's requests are inserted with the connection's triggers off, the run's state looked up
/// once instead of on every row. However the write ends (stored, or refused half-way), every
/// connection of the store refuses a row under a finished run again, and the write itself is
/// refused once its run is finished.
#[tokio::test]
async fn every_connection_refuses_rows_under_a_finished_run_after_requests_are_written() {
    let (_dir, store) = fresh().await;
    let (sid, mid, _) = study(&store, "s").await;
    let start = "2026-12-01T10:00:00.000Z";
    let closed = store.create_run(&new_run(sid, mid, start)).await.unwrap();
    finish(&store, closed.id).await;
    // More rows than one batched statement holds, with a short batch after.
    let many: Vec<StoredRequest> = (0..600).map(|i| stored(record(i), false, None)).collect();
    let written = store.create_run(&new_run(sid, mid, start)).await.unwrap();
    let finish_many = |id| {
        let many = &many;
        let store = &store;
        async move {
            store
                .finish_run(
                    id,
                    RunState::Completed,
                    Some(1.0),
                    None,
                    None,
                    many,
                    &evidence(),
                    &[],
                )
                .await
        }
    };
    finish_many(written.id).await.unwrap();
    assert_eq!(children(&store, written.id).await, [600, 2, 0]);
    let refused = store.create_run(&new_run(sid, mid, start)).await.unwrap();
    insert_row(&store, refused.id, 300).await;
    let err = finish_many(refused.id).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Conflict { value, .. } if value == "300"),
        "{err:?}"
    );
    // The write refused once its run is finished, before any row.
    let err = finish_many(written.id).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Frozen { entity: "run", .. }),
        "{err:?}"
    );
    assert_eq!(children(&store, written.id).await, [600, 2, 0]);

    // Every connection the pool holds (at most four), the writer's among them.
    let mut connections = Vec::new();
    for _ in 0..4 {
        connections.push(store.pool().acquire().await.unwrap());
    }
    for (n, connection) in connections.iter_mut().enumerate() {
        for id in [closed.id, written.id] {
            let err = sqlx::query(
                "INSERT INTO run_requests (run_id, warmup, idx, repeat, status, \
                 planned_arrival_ms, output_text, chunk_times_json) \
                 VALUES (?, 0, 9999, 0, 'ok', 0, '', '[]')",
            )
            .bind(id)
            .execute(&mut **connection)
            .await
            .unwrap_err();
            assert!(
                err.to_string().contains("run is finished"),
                "connection {n}, run {id}: {err}"
            );
        }
    }
    drop(connections);
    assert_eq!(children(&store, closed.id).await, [4, 2, 2]);
}

#[tokio::test]
async fn finished_run_from_elsewhere_is_stored_whole_or_not_at_all() {
    let (_dir, store) = fresh().await;
    let (sid, mid, draft) = study(&store, "s").await;
    let mut imported = new_run(sid, mid, "2026-11-30T08:00:00.000Z");
    imported.provenance = RunProvenance::Imported;
    let finished_at = "2026-11-30T08:05:00.250Z";

    let duplicate = vec![
        stored(record(4), false, None),
        stored(record(4), false, None),
    ];
    let err = store
        .insert_finished_run(
            &imported,
            RunState::Completed,
            finished_at,
            Some(300_250.0),
            Some(2),
            None,
            &duplicate,
            &evidence(),
            &scrapes(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err:?}");
    assert!(store.list_runs(sid).await.unwrap().is_empty());
    let stray: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM runs) + (SELECT count(*) FROM run_requests) \
         + (SELECT count(*) FROM run_evidence) + (SELECT count(*) FROM run_metric_scrapes)",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(stray, 0);

    let err = store
        .insert_finished_run(
            &new_run(sid, draft, "2026-11-30T08:00:00.000Z"),
            RunState::Completed,
            finished_at,
            Some(1.0),
            None,
            None,
            &[],
            &[],
            &[],
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFrozen { .. }), "{err:?}");
    let err = store
        .insert_finished_run(
            &imported,
            RunState::Running,
            finished_at,
            Some(1.0),
            None,
            None,
            &[],
            &[],
            &[],
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Invalid { .. }), "{err:?}");

    let run = store
        .insert_finished_run(
            &imported,
            RunState::Cancelled,
            finished_at,
            Some(300_250.0),
            Some(3),
            Some("cancelled"),
            &requests(),
            &evidence(),
            &scrapes(),
        )
        .await
        .unwrap();
    assert_eq!(run.state, RunState::Cancelled);
    assert_eq!(run.provenance, RunProvenance::Imported);
    assert_eq!(run.started_at, "2026-11-30T08:00:00.000Z");
    assert_eq!(run.finished_at.as_deref(), Some(finished_at));
    assert_eq!(run.elapsed_ms, Some(300_250.0));
    assert_eq!((run.ok, run.failed), (1, 2));
    assert_eq!(store.list_runs(sid).await.unwrap(), vec![run.clone()]);
    let mut expected = requests();
    expected.sort_by_key(|r| (!r.warmup, r.record.index));
    assert_eq!(store.run_requests(run.id).await.unwrap(), expected);
    let err = sqlx::query("DELETE FROM runs")
        .execute(store.pool())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("run is finished"), "{err}");
}

#[test]
fn kinds_and_states_round_trip_as_strings() {
    for kind in RunKind::ALL {
        assert_eq!(RunKind::parse(kind.as_str()), Some(kind));
    }
    for state in RunState::ALL {
        assert_eq!(RunState::parse(state.as_str()), Some(state));
        assert_eq!(state.is_finished(), state != RunState::Running);
    }
    assert_eq!(RunKind::parse("Quality"), None);
    assert_eq!(RunState::parse("done"), None);
}

#[tokio::test]
async fn runs_of_a_live_owner_are_not_marked_interrupted() {
    let (_dir, store) = fresh().await;
    let (sid, manifest_id, _) = study(&store, "s").await;
    let mut live = new_run(sid, manifest_id, "2026-12-01T08:00:00.000Z");
    live.owner_pid = Some(4242);
    let live = store.create_run(&live).await.unwrap();
    let mut dead = new_run(sid, manifest_id, "2026-12-01T08:00:01.000Z");
    dead.owner_pid = Some(4343);
    let dead = store.create_run(&dead).await.unwrap();
    let marked = store
        .mark_interrupted_runs(|pid| pid == 4242)
        .await
        .unwrap();
    assert_eq!(marked, 1);
    assert_eq!(
        store.get_run(live.id).await.unwrap().state,
        RunState::Running
    );
    assert_eq!(
        store.get_run(dead.id).await.unwrap().state,
        RunState::Interrupted
    );
}

/// The measured read of a study (for runs stored before their columns existed) walks the runs
/// and the requests' primary key in order, never sorting every row in a temporary B-tree; the
/// covering index it once read is gone, so no import writes it.
#[tokio::test]
async fn the_measured_read_walks_the_primary_key_in_order() {
    let (_dir, store) = fresh().await;
    let plan: Vec<(i64, i64, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "EXPLAIN QUERY PLAN {}",
        kvgate_store::MEASURED_REQUESTS_SQL
    )))
    .bind(1_i64)
    .fetch_all(store.pool())
    .await
    .unwrap();
    let steps: Vec<&str> = plan.iter().map(|p| p.3.as_str()).collect();
    assert!(
        steps
            .iter()
            .any(|s| s.contains("USING INDEX sqlite_autoindex_run_requests_1")),
        "{steps:?}"
    );
    assert!(
        !steps.iter().any(|s| s.contains("TEMP B-TREE")),
        "{steps:?}"
    );
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'run_requests' \
         ORDER BY name",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(
        indexes,
        [
            "run_requests_judged_by_item",
            "sqlite_autoindex_run_requests_1"
        ]
    );
}

/// Rows stored before the engine's per-token time had its own column get it from their stored
/// timings when the database is migrated (a number only), and finished runs stay frozen after.
#[tokio::test]
async fn the_migration_derives_the_engine_time_of_stored_rows_and_keeps_runs_frozen() {
    let (_dir, store) = fresh().await;
    let (sid, mid, _) = study(&store, "s").await;
    let run = store
        .create_run(&new_run(sid, mid, "2026-12-01T10:00:00.000Z"))
        .await
        .unwrap();
    let text_timing = RequestRecord {
        engine_timings: Some(json!({"predicted_per_token_ms": "14.25"})),
        ..record(1)
    };
    let array_timing = RequestRecord {
        engine_timings: Some(json!([14.25])),
        ..record(2)
    };
    store
        .finish_run(
            run.id,
            RunState::Completed,
            Some(1.0),
            Some(3),
            None,
            &[
                stored(record(0), false, None),
                stored(text_timing, false, None),
                stored(array_timing, false, None),
            ],
            &[],
            &[],
        )
        .await
        .unwrap();
    let read = |store: Store| async move {
        let mut engine = Vec::new();
        store
            .for_each_measured_request(sid, |q| engine.push(q.engine_itl_ms))
            .await
            .unwrap();
        engine
    };
    let written = read(store.clone()).await;
    assert_eq!(written, [Some(14.25), None, None]);
    // As a database stored before the column: the column empty (the freeze lifted for that).
    let migration = include_str!("../../migrations/20261205010000_measured_index_queueing.sql");
    let start = migration.find("CREATE TRIGGER").unwrap();
    let end = start + migration[start..].find("END;").unwrap() + "END;".len();
    let trigger = &migration[start..end];
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP TRIGGER run_requests_finished_no_update; \
         UPDATE run_requests SET engine_itl_ms = NULL; {trigger}"
    )))
    .execute(store.pool())
    .await
    .unwrap();
    assert_eq!(read(store.clone()).await, [None, None, None]);
    // The migration without its ALTER (the column is there) and without dropping the index the
    // later migration dropped, then that later one: the same values come back.
    let mut rest = migration.to_owned();
    for left_out in [
        "ALTER TABLE run_requests ADD COLUMN engine_itl_ms REAL;",
        "DROP INDEX run_requests_measured;",
    ] {
        assert!(rest.contains(left_out), "{left_out}");
        rest = rest.replacen(left_out, "", 1);
    }
    let dropped = include_str!("../../migrations/20261207000000_measured_index_dropped.sql");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("{rest}\n{dropped}")))
        .execute(store.pool())
        .await
        .unwrap();
    assert_eq!(read(store.clone()).await, written);
    let err = sqlx::query("UPDATE run_requests SET engine_itl_ms = 1 WHERE run_id = ?")
        .bind(run.id)
        .execute(store.pool())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("run is finished"), "{err}");
}

#[tokio::test]
async fn measured_requests_come_back_exactly_with_absent_values_absent() {
    let (_dir, store) = fresh().await;
    let (sid, mid, _) = study(&store, "s").await;
    let run = store
        .create_run(&new_run(sid, mid, "2026-12-01T10:00:00.000Z"))
        .await
        .unwrap();
    finish(&store, run.id).await;
    let mut seen = Vec::new();
    let n = store
        .for_each_measured_request(sid, |q| {
            seen.push((
                (
                    q.run_id,
                    q.idx,
                    q.repeat,
                    q.item_id.map(str::to_owned),
                    q.status,
                    q.planned_arrival_ms,
                    q.dispatch_ms,
                    q.first_token_ms,
                    q.finish_ms,
                    q.prompt_tokens,
                    q.completion_tokens,
                    q.accepted,
                ),
                (q.client_delay_ms, q.engine_itl_ms),
            ))
        })
        .await
        .unwrap();
    // The warm-up is not measured; the others come in plan order, straight from the records.
    let mut expected: Vec<StoredRequest> = requests().into_iter().filter(|r| !r.warmup).collect();
    expected.sort_by_key(|r| r.record.index);
    assert_eq!(n, 3);
    let want: Vec<_> = expected
        .iter()
        .map(|s| {
            let r = &s.record;
            (
                (
                    run.id,
                    i64::from(r.index),
                    s.repeat,
                    r.item_id.clone(),
                    r.status,
                    r.planned_arrival_ms,
                    r.dispatch_ms,
                    r.first_token_ms,
                    r.finish_ms,
                    r.prompt_tokens,
                    r.completion_tokens,
                    s.verdict.as_ref().map(|v| v.accepted),
                ),
                (
                    r.client_delay_ms,
                    r.engine_timings
                        .as_ref()
                        .and_then(|t| t["predicted_per_token_ms"].as_f64()),
                ),
            )
        })
        .collect();
    assert_eq!(seen, want);
    // The engine's per-token time: read where it is a number, absent where the timings are null.
    assert_eq!(seen[0].1, (Some(0.25), Some(14.25)));
    assert_eq!(seen[1].1, (Some(0.25), None));
    // A per-token time given as text is no measurement (SQLite would read it as 0).
    let texted = store
        .create_run(&new_run(sid, mid, "2026-12-01T11:00:00.000Z"))
        .await
        .unwrap();
    let text_timing = RequestRecord {
        engine_timings: Some(json!({"predicted_per_token_ms": "14.25"})),
        ..record(0)
    };
    store
        .finish_run(
            texted.id,
            RunState::Completed,
            Some(1.0),
            Some(1),
            None,
            &[stored(text_timing, false, None)],
            &[],
            &[],
        )
        .await
        .unwrap();
    let mut engine = Vec::new();
    store
        .for_each_measured_request(sid, |q| {
            if q.run_id == texted.id {
                engine.push(q.engine_itl_ms);
            }
        })
        .await
        .unwrap();
    assert_eq!(engine, [None]);
    // The never-sent request: every measurement absent, not 0.
    assert_eq!(seen[2].0 .6, None);
    assert_eq!(seen[2].0 .9, None);
    assert_eq!(seen[2].0 .11, None);
    assert_eq!(seen[2].1, (None, None));
    // Another study's requests are not read.
    let (other, _, _) = study(&store, "other").await;
    assert_eq!(
        store
            .for_each_measured_request(other, |_| {})
            .await
            .unwrap(),
        0
    );
}
