use kvgate_core::run::RunProvenance;
use std::collections::HashMap;

use kvgate_app::fixtures::open_corpus;
use kvgate_app::runs::{LoadRunInput, QualityRunInput, RunPhase, SweepCell, SweepInput};
use kvgate_app::{App, DbLocation, ErrorCode};
use kvgate_core::study::NewStudy;

use crate::answer_server;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");

fn path(rel: &str) -> String {
    format!("{ROOT}{rel}")
}

/// B0 and Q8 frozen and the demo policy locked: verdicts are shown only once it is.
async fn app_with_cells(name: &str) -> (tempfile::TempDir, App, i64) {
    let policy = std::fs::read_to_string(path("fixtures/policies/demo-cpu.json")).unwrap();
    app_with_cells_under(name, &policy).await
}

/// B0 and Q8 frozen and `policy_json` locked.
async fn app_with_cells_under(name: &str, policy_json: &str) -> (tempfile::TempDir, App, i64) {
    let dir = tempfile::tempdir().unwrap();
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let study = app
        .create_study(NewStudy {
            name: name.into(),
            description: String::new(),
        })
        .await
        .unwrap();
    for file in ["smollm2-135m-cpu-b0.json", "smollm2-135m-cpu-q8.json"] {
        let text = std::fs::read_to_string(path(&format!("fixtures/manifests/{file}"))).unwrap();
        let draft = app.save_manifest_draft(study.id, &text).await.unwrap();
        let digest = kvgate_core::manifest::Manifest::from_json(&text)
            .unwrap()
            .digest()
            .unwrap();
        app.freeze_manifest(study.id, &draft.cell, &digest)
            .await
            .unwrap();
    }
    app.lock_policy(kvgate_app::analysis::LockPolicyInput {
        study_id: study.id,
        policy_json: policy_json.to_owned(),
        locked_by: "owner".into(),
    })
    .await
    .unwrap();
    (dir, app, study.id)
}

/// Answers: the approved answer for every item whose index in the corpus is even.
fn answers() -> (HashMap<String, String>, HashMap<String, bool>) {
    let corpus = open_corpus(std::path::Path::new(&path("fixtures/demo/corpus"))).unwrap();
    let mut answers = HashMap::new();
    let mut answered = HashMap::new();
    for (i, item) in corpus.items.iter().enumerate() {
        let good = i % 2 == 0;
        if good {
            answers.insert(
                item.user_turn().to_owned(),
                serde_json::to_string(&item.expected).unwrap(),
            );
        }
        answered.insert(item.id.clone(), good);
    }
    (answers, answered)
}

fn quality(study_id: i64, cell: &str, base_url: String, log: Option<&str>) -> QualityRunInput {
    QualityRunInput {
        study_id,
        cell: cell.into(),
        base_url,
        model: None,
        corpus_dir: path("fixtures/demo/corpus"),
        repeats: Some(2),
        seed: Some(3),
        limit: Some(8),
        only: None,
        resume: None,
        at_most: None,
        warmup: Some(1),
        concurrency: Some(2),
        startup_log: log.map(path),
        scrape_interval_ms: Some(50),
        request_deadline_s: Some(10.0),
    }
}

#[tokio::test]
async fn quality_run_stores_every_request_with_its_verdict_and_evidence() {
    let (_dir, app, sid) = app_with_cells("quality").await;
    let (answers, answered) = answers();
    let server = answer_server::start(answers).await;
    let mut events = Vec::new();
    let input = quality(
        sid,
        "B0",
        server.base(),
        Some("fixtures/evidence/llamacpp-f16-startup.log"),
    );
    let summary = app.run_quality(&input, |e| events.push(e)).await.unwrap();
    assert_eq!(summary.state.as_str(), "completed");
    assert_eq!(summary.kind.as_str(), "quality");
    assert_eq!(summary.planned, Some(16), "8 items × 2 repeats");
    assert_eq!((summary.ok, summary.failed), (16, 0));
    assert_eq!(summary.provenance, RunProvenance::Recorded);
    assert!(events.iter().any(|e| e.phase == RunPhase::Warmup));
    assert!(events.iter().any(|e| e.phase == RunPhase::Measured));
    let last = events.last().unwrap();
    assert_eq!(last.phase, RunPhase::Finished);
    assert_eq!(last.state.as_deref(), Some("completed"));
    assert_eq!(last.progress.finished, 16);

    let detail = app.run_detail(summary.id).await.unwrap();
    assert_eq!(detail.requests.len(), 17, "one warm-up + 16 measured");
    assert_eq!(detail.requests.iter().filter(|r| r.warmup).count(), 1);
    let expected_accepted = detail
        .requests
        .iter()
        .filter(|r| !r.warmup && answered[r.record.item_id.as_deref().unwrap()])
        .count() as u32;
    assert!(expected_accepted > 0 && expected_accepted < 16);
    assert_eq!(detail.accepted, Some(expected_accepted));
    assert_eq!(detail.rejected, Some(16 - expected_accepted));
    for r in detail.requests.iter().filter(|r| !r.warmup) {
        // Latencies come from the record's own rule, measured from actual dispatch.
        assert_eq!(r.ttft_ms, r.record.ttft_ms());
        assert_eq!(r.e2e_ms, r.record.e2e_ms());
        assert!(r.ttft_ms.is_some() && r.e2e_ms >= r.ttft_ms);
        let v = r
            .verdict
            .as_ref()
            .expect("every measured request has a verdict");
        assert_eq!(v.accepted, answered[r.record.item_id.as_deref().unwrap()]);
    }
    // Each repeat is a complete pass over the same 8 items.
    for repeat in 0..2 {
        let mut ids: Vec<&str> = detail
            .requests
            .iter()
            .filter(|r| !r.warmup && r.repeat == repeat)
            .map(|r| r.record.item_id.as_deref().unwrap())
            .collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 8, "repeat {repeat}");
    }
    // Compatibility: the f16 startup log matches B0's manifest.
    let validity = detail.validity.unwrap();
    assert!(validity.valid, "{:?}", validity.problems);
    let kv = detail.startup.unwrap().llama_kv_cache.unwrap().value;
    assert_eq!(format!("{:.2}", kv.size_mib), "45.00");
    let kinds: Vec<&str> = detail.evidence.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["startup_log", "metrics", "compatibility"]);
    let metrics = detail.metrics.unwrap();
    assert!(metrics.scrapes >= 1);
    // The configuration is recorded and hashed.
    assert_eq!(summary.config["seed"], 3);
    assert_eq!(summary.config["corpus"]["synthetic"], true);
    assert_eq!(summary.config_sha256.len(), 64);
}

/// The measured item ids of a stored run.
async fn measured_items(app: &App, run: i64) -> Vec<String> {
    let detail = app.run_detail(run).await.unwrap();
    let mut ids: Vec<String> = detail
        .requests
        .iter()
        .filter(|r| !r.warmup)
        .map(|r| r.record.item_id.clone().unwrap())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn a_resumed_quality_run_sends_only_what_is_left_and_its_runs_cover_the_selection_once() {
    let (_dir, app, sid) = app_with_cells("resume").await;
    let (answers, _) = answers();
    let server = answer_server::start(answers).await;
    let whole = QualityRunInput {
        repeats: Some(1),
        ..quality(
            sid,
            "B0",
            server.base(),
            Some("fixtures/evidence/llamacpp-f16-startup.log"),
        )
    };
    // The selection a single run would send.
    let once = app.run_quality(&whole, |_| {}).await.unwrap();
    let selected = measured_items(&app, once.id).await;
    assert_eq!(selected.len(), 8);
    let warmed: Vec<String> = once.config["warmup"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();

    // The same selection on Q8, resumed three at a time.
    let resumed = QualityRunInput {
        cell: "Q8".into(),
        startup_log: Some(path("fixtures/evidence/llamacpp-q8_0-startup.log")),
        resume: Some(true),
        at_most: Some(3),
        ..whole.clone()
    };
    let left = app.quality_left(&resumed).await.unwrap();
    assert_eq!((left.selected, left.answered, left.to_send), (8, 0, 3));
    let mut sent: Vec<Vec<String>> = Vec::new();
    for expected in [3usize, 3, 2] {
        assert_eq!(
            app.quality_left(&resumed).await.unwrap().to_send as usize,
            expected
        );
        let run = app.run_quality(&resumed, |_| {}).await.unwrap();
        let items = measured_items(&app, run.id).await;
        assert_eq!(items.len(), expected);
        assert_eq!(run.config["sent"]["answered_before"], 3 * sent.len());
        // No measured item of the selection is a warm-up item of any run.
        for w in run.config["warmup"]["items"].as_array().unwrap() {
            assert!(!selected.contains(&w.as_str().unwrap().to_owned()), "{w}");
        }
        sent.push(items);
    }
    let mut all: Vec<String> = sent.concat();
    all.sort();
    assert_eq!(
        all, selected,
        "the resumed runs send the selection, each item once"
    );
    assert!(warmed.iter().all(|w| !all.contains(w)));
    let left = app.quality_left(&resumed).await.unwrap();
    assert_eq!((left.answered, left.to_send), (8, 0));
    let err = app.run_quality(&resumed, |_| {}).await.unwrap_err();
    assert!(
        err.message.contains("nothing is left to send"),
        "{}",
        err.message
    );
    assert_eq!(
        app.list_runs(sid).await.unwrap().len(),
        4,
        "the refusal stored nothing"
    );

    // B0 answered all 8 in one run: resuming it has nothing left either.
    let b0 = QualityRunInput {
        resume: Some(true),
        ..whole.clone()
    };
    assert_eq!(app.quality_left(&b0).await.unwrap().to_send, 0);
    // Without resume the selection is sent again, whole.
    assert_eq!(app.quality_left(&whole).await.unwrap().to_send, 8);
    // Four runs of Q8 and B0 pair like one: eight pairs.
    let analysis = app.analyze(sid).await.unwrap();
    let q8 = analysis.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    let overall = q8.paired.iter().find(|p| p.stratum == "overall").unwrap();
    assert_eq!(overall.n, 8);
}

/// The long set's corpus was counted with the Qwen tokenizer and template; the SmolLM2 cell's
/// manifest binds SmolLM2's tokenizer.json by its sha256, so the corpus's length classes and
/// context guard are not that cell's: refused, both digests named, nothing sent or stored.
#[tokio::test]
async fn a_corpus_counted_with_another_tokenizer_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = crate::study_with_demo_runs(&dir).await;
    let server = answer_server::start(HashMap::new()).await;
    let input = QualityRunInput {
        corpus_dir: path("fixtures/long/corpus"),
        limit: Some(2),
        ..quality(sid, "B0", server.base(), None)
    };
    let err = app.run_quality(&input, |_| {}).await.unwrap_err();
    assert_eq!(
        err.code,
        kvgate_app::ErrorCode::InvalidInput,
        "{}",
        err.message
    );
    for needle in [
        "its token counts are not cell B0's",
        // The corpus's (Qwen) and the manifest's (SmolLM2) tokenizer.json digests.
        "3bcb6141c5309ea3be60099f44d2833672f4015f9db84bff5ea0024cc385b6f5",
        "32082c3cd8e6c6069cbd90b292f26f723aa7361e490f51c58bb33fa916635262",
        "nothing was sent",
    ] {
        assert!(err.message.contains(needle), "{needle}: {}", err.message);
    }
    assert!(app.list_runs(sid).await.unwrap().is_empty());
    assert_eq!(server.requests(), 0, "nothing was sent");
    // The demo corpus, counted with SmolLM2's tokenizer, is that cell's.
    let demo = QualityRunInput {
        limit: Some(2),
        ..quality(sid, "B0", server.base(), None)
    };
    app.run_quality(&demo, |_| {}).await.unwrap();
    assert_eq!(app.list_runs(sid).await.unwrap().len(), 1);
}

#[tokio::test]
async fn an_item_too_long_for_the_cells_context_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let study = app
        .create_study(NewStudy {
            name: "context".into(),
            description: String::new(),
        })
        .await
        .unwrap();
    let text = std::fs::read_to_string(path("fixtures/manifests/smollm2-135m-cpu-b0.json"))
        .unwrap()
        .replace("\"context_limit\": 2048", "\"context_limit\": 1500");
    crate::freeze_text(&app, study.id, &text).await;
    let server = answer_server::start(HashMap::new()).await;
    let corpus = open_corpus(std::path::Path::new(&path("fixtures/demo/corpus"))).unwrap();
    // Long items of the demo corpus: more than 1,500 − 256 tokens each.
    let long = QualityRunInput {
        only: Some(kvgate_core::policy::SegmentFilter {
            length_class: Some(kvgate_core::fixtures::LengthClass::Long),
            ..Default::default()
        }),
        limit: Some(2),
        ..quality(study.id, "B0", server.base(), None)
    };
    let err = app.run_quality(&long, |_| {}).await.unwrap_err();
    let first = corpus
        .items
        .iter()
        .filter(|i| i.token_count + 256 > 1500)
        .map(|i| i.id.as_str())
        .collect::<Vec<_>>();
    assert!(
        err.message.contains("do not fit cell B0's context"),
        "{}",
        err.message
    );
    assert!(
        err.message
            .contains("+ output cap 256 > context limit 1500"),
        "{}",
        err.message
    );
    assert!(
        first.iter().any(|id| err.message.contains(id)),
        "{}",
        err.message
    );
    assert!(app.list_runs(study.id).await.unwrap().is_empty());
    assert_eq!(server.requests(), 0, "nothing was sent");
    // Short items fit and run.
    let short = QualityRunInput {
        only: Some(kvgate_core::policy::SegmentFilter {
            length_class: Some(kvgate_core::fixtures::LengthClass::Short),
            ..Default::default()
        }),
        ..long.clone()
    };
    let ran = app.run_quality(&short, |_| {}).await.unwrap();
    assert_eq!(ran.planned, Some(4));
}

#[tokio::test]
async fn mismatched_or_missing_evidence_makes_the_cell_invalid_with_the_reason() {
    let (_dir, app, sid) = app_with_cells("evidence").await;
    let server = answer_server::start(HashMap::new()).await;
    // B0 (f16) served by an engine whose log says q8_0.
    let input = quality(
        sid,
        "B0",
        server.base(),
        Some("fixtures/evidence/llamacpp-q8_0-startup.log"),
    );
    let summary = app.run_quality(&input, |_| {}).await.unwrap();
    let note = summary.note.unwrap();
    assert!(note.contains("cell invalid"), "{note}");
    let detail = app.run_detail(summary.id).await.unwrap();
    let validity = detail.validity.unwrap();
    assert!(!validity.valid);
    assert!(
        validity
            .problems
            .iter()
            .any(|p| p.field.contains("kv_dtype")
                && p.expected.contains("f16")
                && p.found.contains("q8_0")),
        "{:?}",
        validity.problems
    );
    // No evidence at all: invalid, never silently accepted.
    let input = quality(sid, "Q8", server.base(), None);
    let summary = app.run_quality(&input, |_| {}).await.unwrap();
    let detail = app.run_detail(summary.id).await.unwrap();
    let validity = detail.validity.unwrap();
    assert!(!validity.valid);
    assert!(
        validity
            .problems
            .iter()
            .any(|p| p.reason.contains("missing")),
        "{:?}",
        validity.problems
    );
}

#[tokio::test]
async fn failed_requests_stay_in_the_run_with_a_rejecting_verdict() {
    let (_dir, app, sid) = app_with_cells("failures").await;
    let server = answer_server::start(HashMap::new()).await;
    let mut input = quality(sid, "B0", format!("{}/fail", server.base()), None);
    input.repeats = Some(1);
    input.limit = Some(4);
    input.scrape_interval_ms = Some(0);
    let summary = app.run_quality(&input, |_| {}).await.unwrap();
    assert_eq!(summary.state.as_str(), "completed");
    assert_eq!((summary.ok, summary.failed), (0, 4));
    let detail = app.run_detail(summary.id).await.unwrap();
    assert_eq!((detail.accepted, detail.rejected), (Some(0), Some(4)));
    for r in detail.requests.iter().filter(|r| !r.warmup) {
        assert_eq!(r.record.http_status, Some(500));
        let v = r.verdict.as_ref().unwrap();
        assert_eq!(
            v.reasons,
            [kvgate_core::validator::ReasonCode::Error],
            "{:?}",
            v.detail
        );
    }
    assert!(detail.metrics.is_none(), "scraping was off");
}

#[tokio::test]
async fn runs_need_a_frozen_manifest_and_valid_input() {
    let (_dir, app, sid) = app_with_cells("refusals").await;
    let server = answer_server::start(HashMap::new()).await;
    let text = std::fs::read_to_string(path("fixtures/manifests/smollm2-135m-cpu-q8.json"))
        .unwrap()
        .replace("\"cell\": \"Q8\"", "\"cell\": \"Q4\"");
    app.save_manifest_draft(sid, &text).await.unwrap();
    let err = app
        .run_quality(&quality(sid, "Q4", server.base(), None), |_| {})
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(err.message.contains("draft"), "{}", err.message);

    let mut bad = quality(sid, "B0", server.base(), None);
    bad.repeats = Some(0);
    let err = app.run_quality(&bad, |_| {}).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(err.message.contains("repeats"), "{}", err.message);

    let mut bad = quality(sid, "B0", "ftp://nowhere".into(), None);
    bad.limit = Some(1);
    let err = app.run_quality(&bad, |_| {}).await.unwrap_err();
    assert!(err.message.contains("base_url"), "{}", err.message);

    let bad = quality(
        sid,
        "B0",
        server.base(),
        Some("fixtures/evidence/absent.log"),
    );
    let err = app.run_quality(&bad, |_| {}).await.unwrap_err();
    assert!(err.message.contains("startup_log"), "{}", err.message);
    // Any other file is not evidence: it is refused, not stored (nor copied into a packet).
    let bad = quality(sid, "B0", server.base(), Some("Cargo.toml"));
    let err = app.run_quality(&bad, |_| {}).await.unwrap_err();
    assert!(
        err.message.starts_with("startup_log ")
            && err
                .message
                .contains("expected a vLLM or llama.cpp startup log, found no line of one"),
        "{}",
        err.message
    );

    let load = LoadRunInput {
        study_id: sid,
        cell: "B0".into(),
        base_url: server.base(),
        model: None,
        corpus_dir: Some(path("fixtures/demo/corpus")),
        arrivals: Some("weibull:3".into()),
        duration_s: 1.0,
        concurrency: None,
        seed: None,
        drain_s: None,
        startup_log: None,
        scrape_interval_ms: None,
        request_deadline_s: None,
        only: None,
    };
    let err = app.run_load(&load, |_| {}).await.unwrap_err();
    assert!(err.message.contains("expected poisson"), "{}", err.message);
    // Nothing was stored by any refusal.
    assert!(app.list_runs(sid).await.unwrap().is_empty());
}

#[tokio::test]
async fn open_loop_load_run_accounts_for_every_planned_request() {
    let (_dir, app, sid) = app_with_cells("load").await;
    let (answers, _) = answers();
    let server = answer_server::start(answers).await;
    let load = LoadRunInput {
        study_id: sid,
        cell: "B0".into(),
        base_url: server.base(),
        model: None,
        corpus_dir: None,
        arrivals: Some("constant:40".into()),
        duration_s: 0.5,
        concurrency: None,
        seed: Some(9),
        drain_s: Some(2.0),
        startup_log: Some(path("fixtures/evidence/llamacpp-f16-startup.log")),
        scrape_interval_ms: Some(100),
        request_deadline_s: Some(5.0),
        only: None,
    };
    let summary = app.run_load(&load, |_| {}).await.unwrap();
    assert_eq!(summary.kind.as_str(), "load");
    assert_eq!(summary.planned, Some(20), "40/s for 0.5 s");
    assert_eq!(summary.ok + summary.failed, 20);
    let detail = app.run_detail(summary.id).await.unwrap();
    assert_eq!(detail.requests.len(), 20);
    assert_eq!(detail.accepted.unwrap() + detail.rejected.unwrap(), 20);
    assert_eq!(summary.config["mode"]["open_loop"]["kind"], "constant");
    // No corpus given: the test-2k evaluation corpus generated from the seed, labelled so.
    assert_eq!(summary.config["corpus"]["item_count"], 72);
    assert_eq!(summary.config["corpus"]["synthetic"], true);
    assert!(summary.config["corpus"]["dir"]
        .as_str()
        .unwrap()
        .starts_with("(generated in memory"));
}

#[tokio::test]
async fn exported_run_imports_elsewhere_once_and_tampering_is_named() {
    let (_dir, app, sid) = app_with_cells("export").await;
    let (answers, _) = answers();
    let server = answer_server::start(answers).await;
    let mut input = quality(
        sid,
        "B0",
        server.base(),
        Some("fixtures/evidence/llamacpp-f16-startup.log"),
    );
    input.limit = Some(3);
    input.repeats = Some(1);
    let run = app.run_quality(&input, |_| {}).await.unwrap();
    let text = app.export_run(run.id).await.unwrap();

    let (_dir2, other, sid2) = app_with_cells("import").await;
    let imported = other
        .import_run_file(
            sid2,
            "b0.jsonl",
            &text,
            kvgate_core::run::RunProvenance::Imported,
        )
        .await
        .unwrap();
    assert_eq!(imported.provenance, RunProvenance::Imported);
    assert_eq!(imported.config_sha256, run.config_sha256);
    assert_eq!((imported.ok, imported.failed), (run.ok, run.failed));
    let a = app.run_detail(run.id).await.unwrap();
    let b = other.run_detail(imported.id).await.unwrap();
    assert_eq!(
        a.requests, b.requests,
        "records and verdicts round-trip exactly"
    );
    assert_eq!(a.validity, b.validity);
    assert_eq!(
        other.export_run(imported.id).await.unwrap().lines().count(),
        text.lines().count()
    );

    let again = other
        .import_run_file(
            sid2,
            "b0.jsonl",
            &text,
            kvgate_core::run::RunProvenance::Imported,
        )
        .await
        .unwrap_err();
    assert_eq!(again.code, ErrorCode::Conflict);
    assert!(
        again.message.contains("already in the study"),
        "{}",
        again.message
    );

    let tampered = text.replacen("\"status\":\"ok\"", "\"status\":\"great\"", 1);
    let err = other
        .import_run_file(
            sid2,
            "t.jsonl",
            &tampered,
            kvgate_core::run::RunProvenance::Imported,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(err.message.starts_with("t.jsonl line "), "{}", err.message);
    // Bound to the wrong cell's manifest: refused, naming the digest.
    let wrong = text.replacen("\"cell\":\"B0\"", "\"cell\":\"Q8\"", 1);
    let err = other
        .import_run_file(
            sid2,
            "w.jsonl",
            &wrong,
            kvgate_core::run::RunProvenance::Imported,
        )
        .await
        .unwrap_err();
    assert!(err.message.contains("manifest_sha256"), "{}", err.message);
    assert_eq!(
        other.list_runs(sid2).await.unwrap().len(),
        1,
        "nothing partial stored"
    );
}

#[tokio::test]
async fn cancelled_run_is_stored_labelled_with_every_planned_request() {
    let (_dir, app, sid) = app_with_cells("cancel").await;
    let server = answer_server::start(HashMap::new()).await;
    let mut input = quality(sid, "B0", format!("{}/slow", server.base()), None);
    input.warmup = Some(0);
    input.concurrency = Some(1);
    input.scrape_interval_ms = Some(0);
    let mut asked = false;
    let summary = app
        .run_quality(&input, |e| {
            if !asked && e.phase == RunPhase::Measured {
                asked = true;
                app.cancel_run(e.run_id).unwrap();
            }
        })
        .await
        .unwrap();
    assert!(asked);
    assert_eq!(summary.state.as_str(), "cancelled");
    assert_eq!(summary.planned, Some(16));
    let note = summary.note.unwrap();
    assert!(note.starts_with("cancelled: a partial run"), "{note}");
    let detail = app.run_detail(summary.id).await.unwrap();
    assert_eq!(
        detail.requests.len(),
        16,
        "every planned request is in the record"
    );
    let never_sent = detail
        .requests
        .iter()
        .filter(|r| r.record.dispatch_ms.is_none())
        .count();
    assert!(never_sent >= 14, "{never_sent} never sent");
    assert_eq!(detail.accepted, Some(0));
    assert_eq!(
        detail.rejected,
        Some(16),
        "failures stay in the denominator"
    );
    let err = app.cancel_run(summary.id).unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
}

#[tokio::test]
async fn a_quality_run_may_be_limited_to_strata() {
    let (_dir, app, sid) = app_with_cells("only").await;
    let (answers, _) = answers();
    let server = answer_server::start(answers).await;
    let mut input = quality(sid, "B0", server.base(), None);
    input.repeats = Some(1);
    input.limit = None;
    input.only = Some(
        serde_json::from_value(serde_json::json!({"language": "de", "length_class": "short"}))
            .unwrap(),
    );
    let summary = app.run_quality(&input, |_| {}).await.unwrap();
    // The demo corpus has one item per language × length × position × task: 12 German short ones.
    assert_eq!(summary.planned, Some(12));
    let detail = app.run_detail(summary.id).await.unwrap();
    for r in detail.requests.iter().filter(|r| !r.warmup) {
        let id = r.record.item_id.as_deref().unwrap();
        assert!(id.contains("-de-short-"), "{id}");
    }
    // Nothing matches: refused before anything is sent or stored.
    input.only = Some(
        serde_json::from_value(serde_json::json!({"language": "de", "task_type": "literal",
            "answer_kind": "absent", "length_class": "short", "position": "begin"}))
        .unwrap(),
    );
    let runs_before = app.list_runs(sid).await.unwrap().len();
    let err = app.run_quality(&input, |_| {}).await.unwrap_err();
    assert!(
        err.message.starts_with("only: expected strata matching"),
        "{}",
        err.message
    );
    assert_eq!(app.list_runs(sid).await.unwrap().len(), runs_before);
}

#[tokio::test]
async fn warm_up_items_are_never_measured_items() {
    let (_dir, app, sid) = app_with_cells("warm-up").await;
    let (answers, _) = answers();
    let server = answer_server::start(answers).await;
    let mut input = quality(sid, "B0", server.base(), None);
    input.warmup = Some(3);
    input.scrape_interval_ms = Some(0);
    let summary = app.run_quality(&input, |_| {}).await.unwrap();
    let detail = app.run_detail(summary.id).await.unwrap();
    let item = |r: &kvgate_app::runs::RunRequest| r.record.item_id.clone().unwrap();
    let mut warm: Vec<String> = detail
        .requests
        .iter()
        .filter(|r| r.warmup)
        .map(item)
        .collect();
    let measured: std::collections::BTreeSet<String> = detail
        .requests
        .iter()
        .filter(|r| !r.warmup)
        .map(item)
        .collect();
    assert_eq!((warm.len(), measured.len()), (3, 8));
    for id in &warm {
        assert!(
            !measured.contains(id),
            "{id} was sent to warm up and then measured"
        );
    }
    // The run's config records the warm-up items, as sent.
    let recorded: Vec<String> =
        serde_json::from_value(summary.config["warmup"]["items"].clone()).unwrap();
    assert_eq!(summary.config["warmup"]["requested"], 3);
    assert!(summary.config["warmup"].get("shortfall").is_none());
    let mut recorded_sorted = recorded.clone();
    recorded_sorted.sort();
    warm.sort();
    assert_eq!(recorded_sorted, warm);
    // Warm-up answers are judged, and stored apart from the measured ones.
    assert!(detail
        .requests
        .iter()
        .filter(|r| r.warmup)
        .all(|r| r.verdict.is_some()));

    // Every item of the corpus measured: nothing is left to warm up with, so nothing is sent,
    // and the config says why (a measured item is never used instead).
    input.limit = None;
    input.repeats = Some(1);
    input.warmup = Some(1);
    let summary = app.run_quality(&input, |_| {}).await.unwrap();
    let detail = app.run_detail(summary.id).await.unwrap();
    assert_eq!(detail.requests.iter().filter(|r| r.warmup).count(), 0);
    assert_eq!(detail.requests.len(), 72);
    assert_eq!(summary.config["warmup"]["items"], serde_json::json!([]));
    let why = summary.config["warmup"]["shortfall"].as_str().unwrap();
    assert!(why.contains("never sent as warm-up"), "{why}");
}

#[tokio::test]
async fn cells_run_one_after_another_in_the_seeded_recorded_order() {
    let (_dir, app, sid) = app_with_cells("series").await;
    let (answers, _) = answers();
    let server = answer_server::start(answers).await;
    let cell = |name: &str| {
        let mut q = quality(sid, name, server.base(), None);
        q.repeats = Some(1);
        q.limit = Some(4);
        q.warmup = Some(0);
        q.scrape_interval_ms = Some(0);
        q
    };
    let names = ["B0".to_owned(), "Q8".to_owned()];
    // A seed whose order is not the order given (Q8 first), and one whose order is.
    let swapped = (0..100u64)
        .find(|s| kvgate_core::run::cell_order(&names, *s)[0] == "Q8")
        .unwrap();
    let kept = (0..100u64)
        .find(|s| kvgate_core::run::cell_order(&names, *s)[0] == "B0")
        .unwrap();
    for seed in [swapped, kept] {
        let order = kvgate_core::run::cell_order(&names, seed);
        let runs = app
            .run_quality_cells(&[cell("B0"), cell("Q8")], seed, |_| {})
            .await
            .unwrap();
        let cells: Vec<&str> = runs.iter().map(|r| r.cell.as_str()).collect();
        assert_eq!(cells, order, "seed {seed}");
        // One after another: the second starts once the first has finished.
        assert!(runs[0].id < runs[1].id);
        assert!(runs[0].finished_at.as_deref().unwrap() <= runs[1].started_at.as_str());
        for (i, r) in runs.iter().enumerate() {
            assert_eq!(r.state.as_str(), "completed");
            assert_eq!(
                r.config["cell_order"],
                serde_json::json!({"seed": seed, "order": order, "position": i}),
                "run {} records the order, its seed and its place",
                r.id
            );
        }
        // The same seed, the cells given the other way round: the same order.
        let again = app
            .run_quality_cells(&[cell("Q8"), cell("B0")], seed, |_| {})
            .await
            .unwrap();
        let cells: Vec<&str> = again.iter().map(|r| r.cell.as_str()).collect();
        assert_eq!(cells, order, "seed {seed}, cells listed the other way");
    }
    // A single run records no series.
    let one = app.run_quality(&cell("B0"), |_| {}).await.unwrap();
    assert!(one.config.get("cell_order").is_none());

    // Refused before anything is stored or sent: a cell twice, a cell without a manifest.
    let before = app.list_runs(sid).await.unwrap().len();
    let err = app
        .run_quality_cells(&[cell("B0"), cell("B0")], 1, |_| {})
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput, "{}", err.message);
    let err = app
        .run_quality_cells(&[cell("B0"), cell("C9")], 1, |_| {})
        .await
        .unwrap_err();
    assert!(err.message.contains("C9"), "{}", err.message);
    assert_eq!(app.list_runs(sid).await.unwrap().len(), before);
}

/// The demo policy with a goodput window short enough for a test sweep (0.4 s + 0.4 s) and an
/// envelope bar.
fn sweep_policy() -> String {
    let text = std::fs::read_to_string(path("fixtures/policies/demo-cpu.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["goodput"] = serde_json::json!({"interval_s": 0.4, "drain_s": 0.4});
    v["envelope"] = serde_json::json!({"min_good_share": 0.4});
    v.to_string()
}

fn sweep_input(sid: i64, base: &str, duration_s: f64) -> SweepInput {
    let cell = |name: &str, log: &str| SweepCell {
        cell: name.into(),
        base_url: base.to_owned(),
        startup_log: Some(path(&format!(
            "fixtures/evidence/llamacpp-{log}-startup.log"
        ))),
    };
    SweepInput {
        study_id: sid,
        cells: vec![cell("B0", "f16"), cell("Q8", "q8_0")],
        rates: vec![10.0, 20.0],
        duration_s,
        runs_per_point: 2,
        seed: 3,
        model: None,
        corpus_dir: path("fixtures/demo/corpus"),
        scrape_interval_ms: Some(0),
        request_deadline_s: Some(5.0),
        only: None,
    }
}

/// A sweep runs every cell at every rate twice, each (rate, repeat) on the same arrivals for
/// both cells in a recorded order, and the analysis reads it as the cells' envelope.
#[tokio::test]
async fn a_sweep_runs_every_cell_at_every_rate_on_the_same_arrivals_and_gives_the_envelope() {
    let (_dir, app, sid) = app_with_cells_under("sweep", &sweep_policy()).await;
    let (answers, _) = answers();
    let server = answer_server::start(answers).await;
    let runs = app
        .run_sweep(&sweep_input(sid, &server.base(), 0.8), |_| {})
        .await
        .unwrap();
    assert_eq!(runs.len(), 2 * 2 * 2);
    let mut seen = Vec::new();
    for r in &runs {
        let place = &r.config["sweep"];
        let key = (
            place["rate"].as_f64().unwrap(),
            place["repeat"].as_u64().unwrap(),
        );
        // The arrivals: Poisson at the point's rate, seeded by the repeat, for every cell.
        assert_eq!(
            r.config["mode"]["open_loop"]["kind"], "poisson",
            "{}",
            r.config
        );
        assert_eq!(r.config["seed"], 3 + key.1);
        assert_eq!(place["arrival_seed"], 3 + key.1);
        assert_eq!(r.config["drain_ms"], 400);
        let order = place["cell_order"]["order"].as_array().unwrap();
        let position = place["cell_order"]["position"].as_u64().unwrap() as usize;
        assert_eq!(order[position], r.cell.as_str());
        seen.push((key.0.to_bits(), key.1, r.cell.clone()));
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 8, "each cell once per rate and repeat");
    let a = app.analyze(sid).await.unwrap();
    for cell in &a.body.cells {
        let rates: Vec<Option<f64>> = cell
            .envelope
            .iter()
            .filter(|p| p.class == "short")
            .map(|p| p.offered_rps)
            .collect();
        assert_eq!(rates, [Some(10.0), Some(20.0)], "{}", cell.cell);
        assert!(cell.envelope.iter().all(|p| p.repeats == 2));
    }
    // The candidate's runs at a point are the same arrivals as B0's: goodput is compared.
    let q8 = a.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    assert!(
        q8.goodput_comparable.as_ref().is_some_and(|c| c.comparable),
        "{:?}",
        q8.goodput_comparable
    );
}

/// A sweep shorter than the policy's interval and drain, or before a policy is locked, is
/// refused before anything is sent or stored.
#[tokio::test]
async fn a_sweep_shorter_than_the_goodput_window_or_without_a_policy_is_refused() {
    let (_dir, app, sid) = app_with_cells_under("short sweep", &sweep_policy()).await;
    let (answers, _) = answers();
    let server = answer_server::start(answers).await;
    let err = app
        .run_sweep(&sweep_input(sid, &server.base(), 0.5), |_| {})
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(
        err.message.contains("0.4 s + 0.4 s = 0.8 s") && err.message.contains("found 0.5 s"),
        "{}",
        err.message
    );
    assert!(app.list_runs(sid).await.unwrap().is_empty());

    let dir = tempfile::tempdir().unwrap();
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let study = app
        .create_study(NewStudy {
            name: "no policy".into(),
            description: String::new(),
        })
        .await
        .unwrap();
    let err = app
        .run_sweep(&sweep_input(study.id, &server.base(), 10.0), |_| {})
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PolicyNotLocked, "{}", err.message);
}
