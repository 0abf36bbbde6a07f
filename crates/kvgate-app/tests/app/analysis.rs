//! The acceptance policy and the analysis over real recorded runs (the demo's llama.cpp f16 and
//! q8_0 quality passes), against an independent count made from the run details.

use std::collections::HashMap;

use kvgate_app::analysis::LockPolicyInput;
use kvgate_app::ErrorCode;

use crate::{import_demo, study_with_demo_runs};
use kvgate_core::analysis::{StratumKind, SuggestedOutcome};
use kvgate_core::policy::Policy;
use kvgate_core::stats::PairedVerdict;

const POLICY: &str = r#"{
  "classes": [{"name": "short", "max_input_tokens": 1023, "slo": {"ttft_ms": 5000, "e2e_ms": 60000}},
              {"name": "long", "max_input_tokens": 2047, "slo": {"e2e_ms": 90000}}],
  "goodput": {"interval_s": 600, "drain_s": 60},
  "alpha": 0.05,
  "segments": [{"name": "de", "filter": {"language": "de"}, "floor": 0.1, "margin": 0.1, "protected": true},
               {"name": "numeric", "filter": {"task_type": "numeric"}, "margin": 0.1, "protected": true},
               {"name": "absent", "filter": {"answer_kind": "absent"}, "margin": 0.2, "protected": false}]
}"#;

fn lock(study_id: i64, text: &str) -> LockPolicyInput {
    LockPolicyInput {
        study_id,
        policy_json: text.into(),
        locked_by: "service owner".into(),
    }
}

#[tokio::test]
async fn results_stay_hidden_until_the_policy_is_locked_and_a_later_change_is_marked() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = study_with_demo_runs(&dir).await;
    let err = app.analyze(sid).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::PolicyNotLocked, "{}", err.message);
    assert!(
        err.message.contains("results stay hidden"),
        "{}",
        err.message
    );

    // A bad policy is refused with every path, and nothing is locked.
    let bad = POLICY
        .replace("\"alpha\": 0.05", "\"alpha\": 0.7")
        .replace("1023", "-1");
    let err = app.lock_policy(lock(sid, &bad)).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(err.message.contains("max_input_tokens"), "{}", err.message);
    let bad = POLICY.replace("\"alpha\": 0.05", "\"alpha\": 0.7");
    let err = app.lock_policy(lock(sid, &bad)).await.unwrap_err();
    assert!(
        err.message
            .contains("alpha: expected a significance level in (0, 0.5), found 0.7"),
        "{}",
        err.message
    );
    // The same problem, structured, for a shell to place without reading the message.
    let alpha = err
        .problems
        .iter()
        .find(|p| p.path.ends_with("alpha"))
        .unwrap();
    assert_eq!(alpha.code, kvgate_app::ProblemCode::Policy);
    assert_eq!(alpha.field.as_deref(), Some("alpha"));
    assert_eq!(alpha.found, "0.7");
    assert!(app.policy_status(sid).await.unwrap().versions.is_empty());

    let v1 = app.lock_policy(lock(sid, POLICY)).await.unwrap();
    assert_eq!(v1.version, 1);
    assert_eq!(v1.sha256, Policy::from_json_text(POLICY).unwrap().sha256());
    assert_eq!(v1.runs_at_lock, 0);
    assert!(!v1.changed_after_results);
    // Locking the same policy again changes nothing.
    let err = app.lock_policy(lock(sid, POLICY)).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict, "{}", err.message);
    assert!(
        err.message
            .starts_with("this policy is already version 1 (sha256 ")
            && err
                .message
                .ends_with("nothing changed, so no new version was made"),
        "said in the user's words: {}",
        err.message
    );

    import_demo(&app, sid).await;
    let a = app.analyze(sid).await.unwrap();
    assert_eq!(a.policy_version, 1);
    assert!(!a.policy_changed_after_results);

    // A change after results exist is a new version, marked for good.
    let changed = POLICY.replace(
        "\"margin\": 0.1, \"protected\": true}",
        "\"margin\": 0.3, \"protected\": true}",
    );
    let v2 = app.lock_policy(lock(sid, &changed)).await.unwrap();
    assert_eq!(v2.version, 2);
    assert_eq!(v2.runs_at_lock, 2);
    assert!(v2.changed_after_results);
    let status = app.policy_status(sid).await.unwrap();
    assert_eq!(status.versions.len(), 2);
    assert!(status.changed_after_results);
    assert_eq!(status.current.unwrap().version, 2);
    let a = app.analyze(sid).await.unwrap();
    assert_eq!(a.policy_version, 2);
    assert!(a.policy_changed_after_results);

    // The database itself refuses to alter or remove a locked version.
    let pool = app.store().pool();
    let e = sqlx::query("UPDATE policies SET locked_by = 'someone else' WHERE version = 1")
        .execute(pool)
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("a locked policy never changes"),
        "{e}"
    );
    let e = sqlx::query("DELETE FROM policies WHERE version = 2")
        .execute(pool)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("never deleted"), "{e}");
}

#[tokio::test]
async fn the_analysis_of_the_recorded_runs_agrees_with_an_independent_count() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = study_with_demo_runs(&dir).await;
    app.lock_policy(lock(sid, POLICY)).await.unwrap();
    import_demo(&app, sid).await;
    let a = app.analyze(sid).await.unwrap();
    assert_eq!(a.body.classes, ["short", "long"]);
    let cells: Vec<&str> = a.body.cells.iter().map(|c| c.cell.as_str()).collect();
    assert_eq!(cells, ["B0", "Q8"]);

    // Independent count from the run details: first verdict per item per cell.
    let mut first: HashMap<String, HashMap<String, bool>> = HashMap::new();
    let mut offered: HashMap<String, u64> = HashMap::new();
    let mut measured = 0u64;
    for run in app.list_runs(sid).await.unwrap() {
        let detail = app.run_detail(run.id).await.unwrap();
        let per_item = first.entry(run.cell.clone()).or_default();
        let mut rows: Vec<_> = detail.requests.iter().filter(|r| !r.warmup).collect();
        rows.sort_by_key(|r| (r.repeat, r.record.index));
        for r in rows {
            measured += 1;
            *offered.entry(run.cell.clone()).or_default() += 1;
            if let (Some(item), Some(v)) = (&r.record.item_id, &r.verdict) {
                per_item.entry(item.clone()).or_insert(v.accepted);
            }
        }
    }
    assert_eq!(a.measured_requests, measured);
    let (b0, q8) = (&first["B0"], &first["Q8"]);
    let (mut n, mut b, mut c) = (0u64, 0u64, 0u64);
    let (mut n_de, mut b_de, mut c_de) = (0u64, 0u64, 0u64);
    for (item, &x) in b0 {
        let Some(&y) = q8.get(item) else { continue };
        n += 1;
        b += u64::from(x && !y);
        c += u64::from(!x && y);
        if item.split('-').nth(2) == Some("de") {
            n_de += 1;
            b_de += u64::from(x && !y);
            c_de += u64::from(!x && y);
        }
    }
    assert!(n > 0);
    let q8_cell = &a.body.cells[1];
    assert_eq!(q8_cell.requests.offered, offered["Q8"]);
    assert!(q8_cell.valid, "{:?}", q8_cell.invalid_reasons);
    let overall = &q8_cell.paired[0];
    assert_eq!(
        (overall.stratum.as_str(), overall.kind),
        ("overall", StratumKind::Overall)
    );
    assert_eq!((overall.n, overall.b, overall.c), (n, b, c));
    let de = q8_cell.paired.iter().find(|p| p.stratum == "de").unwrap();
    assert!(de.protected);
    assert_eq!((de.n, de.b, de.c), (n_de, b_de, c_de));
    // Bonferroni over the two protected segments, Holm on their p-values.
    assert_eq!(de.alpha, 0.025);
    assert!((de.level - 0.95).abs() < 1e-12);
    assert!(de.mcnemar_p_holm.unwrap() >= de.mcnemar_p);
    let absent = q8_cell
        .paired
        .iter()
        .find(|p| p.stratum == "absent")
        .unwrap();
    assert!(!absent.protected && absent.mcnemar_p_holm.is_none());
    assert_eq!(absent.alpha, 0.05);
    for p in &q8_cell.paired {
        let expected = match (p.ci_low, p.ci_high) {
            (Some(lo), _) if lo > -p.margin => PairedVerdict::NonInferior,
            (_, Some(hi)) if hi < -p.margin => PairedVerdict::Inferior,
            _ => PairedVerdict::CollectMoreEvidence,
        };
        assert_eq!(p.verdict, expected, "{}", p.stratum);
    }
    // B0 is the rollback target; Q8 is a named intervention judged by the gates.
    assert_eq!(a.body.cells[0].decision.outcome, SuggestedOutcome::Baseline);
    assert!(a.body.cells[0].paired.is_empty());
    assert!(q8_cell.decision.table_decision.is_none());
    assert_ne!(q8_cell.decision.outcome, SuggestedOutcome::Baseline);
    assert!(!q8_cell.decision.rules.is_empty());
    // Latency counts only `ok` requests of the class, and every class bucket is accounted for.
    let ok_total: u64 = q8_cell.latency.values().map(|l| l.count).sum();
    assert_eq!(ok_total, q8_cell.requests.completed);
    let cohort: u64 = q8_cell.goodput.values().map(|g| g.cohort).sum();
    assert!(cohort <= q8_cell.requests.offered && cohort > 0);
    for g in q8_cell.goodput.values() {
        assert!(!g.slo_only, "quality runs carry verdicts");
        assert!(g.good <= g.cohort);
    }
}

/// The Results screen reads the same analysis, its paired rows in reading order, and its charts
/// are drawn from it; the analysis itself (CLI, packet, signed evidence) keeps its order.
#[tokio::test]
async fn the_results_screen_reads_the_analysis_in_reading_order_with_its_charts() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = study_with_demo_runs(&dir).await;
    let refused = app.results(sid).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::PolicyNotLocked);
    app.lock_policy(lock(sid, POLICY)).await.unwrap();
    import_demo(&app, sid).await;
    let a = app.analyze(sid).await.unwrap();
    let r = app.results(sid).await.unwrap();
    let names = |rows: &[kvgate_core::analysis::PairedRow]| -> Vec<String> {
        rows.iter().map(|p| p.stratum.clone()).collect()
    };
    let stored = names(&a.body.cells[1].paired);
    let read = names(&r.analysis.body.cells[1].paired);
    assert_eq!(stored[..2], ["overall", "answer_kind=absent"]);
    assert_eq!(read[..4], ["overall", "de", "numeric", "absent"]);
    assert_eq!(read[4..6], ["language=en", "language=de"]);
    let (mut s, mut t) = (stored.clone(), read.clone());
    s.sort();
    t.sort();
    assert_eq!(s, t, "the same rows");
    // Apart from the order, the same analysis.
    let mut reordered = r.analysis.clone();
    reordered.body.cells[1].paired = a.body.cells[1].paired.clone();
    assert_eq!(reordered, a);
    // The charts: a forest plot of Q8 read in the same order, and each variant the screen offers.
    assert_eq!(r.charts.forest.len(), 1);
    let forest: Vec<String> = r.charts.forest[0]
        .marginals
        .marks
        .iter()
        .filter_map(|m| m.stratum.clone())
        .collect();
    assert_eq!(forest, read);
    assert_eq!(r.charts.latency.len(), 3);
    assert_eq!(r.charts.cdf.len(), 2 * a.body.classes.len());
    assert_eq!(r.charts.capacity.len(), 2);
}

/// Screens that ask for the analysis at once (Sign-off asks for its checklist and the analysis
/// side by side, the overview its progress) share one computation.
#[tokio::test]
async fn analyses_asked_for_at_once_are_computed_once() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = crate::locked_demo_study(&dir).await;
    let (a, list, results, b) = tokio::join!(
        app.analyze(sid),
        app.checklist(sid),
        app.results(sid),
        app.analyze(sid)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    list.unwrap();
    results.unwrap();
    assert_eq!(a, b);
    assert_eq!(app.analyses_computed(), 1);
}

/// The analysis is computed once per state of what it reads: repeated loads (the Results and
/// Sign-off screens, a decision) reuse it, and a label written by another process, a new policy
/// version, a newly frozen cell or a new run each computes it again, equal to a fresh
/// computation on a second connection.
#[tokio::test]
async fn the_analysis_is_kept_until_anything_it_read_changes() {
    use kvgate_app::review::{LabelInput, ReviewFilter};
    use kvgate_app::{App, DbLocation};
    use kvgate_core::review::ReviewLabel;

    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = crate::locked_demo_study(&dir).await;
    let db = dir.path().join("ws.sqlite");
    let fresh = || {
        let db = db.clone();
        async move {
            let other = App::open(DbLocation::Path(db)).await.unwrap();
            let analysis = other.analyze(sid).await.unwrap();
            assert_eq!(other.analyses_computed(), 1);
            other.close().await;
            analysis
        }
    };
    let first = app.analyze(sid).await.unwrap();
    assert_eq!(app.analyses_computed(), 1);
    assert_eq!(app.analyze(sid).await.unwrap(), first);
    app.results(sid).await.unwrap();
    app.checklist(sid).await.unwrap();
    assert_eq!(
        app.analyses_computed(),
        1,
        "repeated loads reuse the analysis"
    );
    assert_eq!(fresh().await, first);

    // A label written by another process.
    let other = App::open(DbLocation::Path(db.clone())).await.unwrap();
    // The SmolLM2 recording has no disagreement (neither side answers right): an agreeing pair.
    let queue = other
        .review_queue(
            sid,
            ReviewFilter {
                agreeing_sample: 1,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let pair = &queue.pairs[0];
    assert!(!pair.a.accepted && !pair.b.accepted);
    other
        .label_pair(LabelInput {
            pair_id: pair.pair_id.clone(),
            label: ReviewLabel::BothWrong,
            note: String::new(),
            by: "reviewer".into(),
        })
        .await
        .unwrap();
    other.close().await;
    let labelled = app.analyze(sid).await.unwrap();
    assert_eq!(app.analyses_computed(), 2);
    assert_eq!(labelled.adjudicated_labels, first.adjudicated_labels + 1);
    assert_eq!(labelled, fresh().await);
    assert_eq!(app.analyze(sid).await.unwrap(), labelled);
    assert_eq!(app.analyses_computed(), 2);

    // A new policy version.
    let text = std::fs::read_to_string(format!("{}fixtures/policies/demo-cpu.json", crate::ROOT))
        .unwrap()
        .replace("\"alpha\": 0.05", "\"alpha\": 0.1");
    app.lock_policy(lock(sid, &text)).await.unwrap();
    let relocked = app.analyze(sid).await.unwrap();
    assert_eq!(app.analyses_computed(), 3);
    assert_eq!(relocked.policy_version, 2);
    assert_ne!(relocked.body, labelled.body);
    assert_eq!(relocked, fresh().await);

    // A newly frozen cell (the Q8 manifest again, as cell Q8-again).
    let c1 = std::fs::read_to_string(format!(
        "{}fixtures/manifests/smollm2-135m-cpu-q8.json",
        crate::ROOT
    ))
    .unwrap()
    .replace("\"cell\": \"Q8\"", "\"cell\": \"Q8-again\"")
    .replace("\"smollm2-135m-cpu-q8\"", "\"smollm2-135m-cpu-q8-again\"");
    assert_eq!(crate::freeze_text(&app, sid, &c1).await, "Q8-again");
    let three_cells = app.analyze(sid).await.unwrap();
    assert_eq!(app.analyses_computed(), 4);
    assert_eq!(three_cells.body.cells.len(), relocked.body.cells.len() + 1);
    assert_eq!(three_cells, fresh().await);

    // A new run in that cell (an AIPerf export).
    app.import_file(
        kvgate_app::imports::ImportInput {
            study_id: sid,
            cell: "Q8-again".into(),
            format: kvgate_formats::import::ImportFormat::Aiperf,
            path: format!(
                "{}fixtures/imports/aiperf/profile_export.jsonl",
                crate::ROOT
            ),
            mapping: None,
            job: None,
            companion: None,
        },
        |_| {},
    )
    .await
    .unwrap_or_else(|e| panic!("import into Q8-again: {}", e.message));
    let with_run = app.analyze(sid).await.unwrap();
    assert_eq!(app.analyses_computed(), 5);
    assert!(with_run.measured_requests > three_cells.measured_requests);
    assert_eq!(with_run, fresh().await);
}
