//! Floors before results: over the demo's recorded llama.cpp runs imported before any policy is
//! locked, no verdict, accepted count, queue, label or run file is given out, and a first lock
//! made once those results existed is marked so, everywhere and for good.

use kvgate_app::packet::PacketExportInput;
use kvgate_app::review::{LabelInput, ReviewFilter};
use kvgate_app::signoff::Check;
use kvgate_app::{App, DbLocation, ErrorCode};
use kvgate_core::policy::Withheld;
use kvgate_core::review::ReviewLabel;
use kvgate_core::study::StudyStep;
use serde_json::Value;

use crate::{import_demo, lock_demo_policy, locked_demo_study, study_with_demo_runs, ROOT};

/// Every key of a JSON value, at any depth.
fn keys(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                out.push(k.clone());
                keys(x, out);
            }
        }
        Value::Array(xs) => xs.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

fn result_keys(v: &Value) -> Vec<String> {
    let mut all = Vec::new();
    keys(v, &mut all);
    all.retain(|k| ["verdict", "accepted", "rejected", "unvalidated"].contains(&k.as_str()));
    all
}

fn refused(err: kvgate_app::AppError) {
    assert_eq!(err.code, ErrorCode::PolicyNotLocked, "{}", err.message);
    assert!(
        err.message.starts_with("policy_not_locked: "),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn before_the_lock_no_verdict_count_queue_label_or_run_file_is_given_out() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = study_with_demo_runs(&dir).await;
    import_demo(&app, sid).await;
    let runs = app.list_runs(sid).await.unwrap();
    assert_eq!(runs.len(), 2);
    let listed = serde_json::to_value(&runs).unwrap();
    assert_eq!(result_keys(&listed), Vec::<String>::new(), "{listed}");

    for run in &runs {
        let detail = app.run_detail(run.id).await.unwrap();
        assert_eq!(detail.withheld, Some(Withheld::PolicyNotLocked));
        assert_eq!(
            (detail.accepted, detail.rejected, detail.unvalidated),
            (None, None, None)
        );
        let measured = detail.requests.iter().filter(|r| !r.warmup).count();
        assert_eq!(measured, 24, "the requests themselves are listed");
        assert!(detail.requests.iter().all(|r| r.verdict.is_none()));
        let v = serde_json::to_value(&detail).unwrap();
        // Absent, not 0 and not null: the keys are not there at all.
        assert_eq!(result_keys(&v), Vec::<String>::new());
        assert_eq!(v["withheld"], "policy_not_locked");
        refused(app.export_run(run.id).await.unwrap_err());
        refused(app.run_file(run.id).await.unwrap_err());
    }
    refused(
        app.review_queue(sid, ReviewFilter::default())
            .await
            .unwrap_err(),
    );
    // A pair id that exists once the policy is locked: still refused before it.
    let pair = format!("{sid}:Q8/evaluation-7-en-short-begin-literal-present-000");
    refused(
        app.label_pair(LabelInput {
            pair_id: pair,
            label: ReviewLabel::BothAcceptable,
            note: String::new(),
            by: "reviewer".into(),
        })
        .await
        .unwrap_err(),
    );
    refused(app.analyze(sid).await.unwrap_err());
    let p = app.study_progress(sid).await.unwrap();
    assert_eq!(p.next, StudyStep::LockPolicy);
    assert_eq!((p.disagreements, p.disagreements_labelled), (None, None));
    assert_eq!(p.cells_with_runs, 2, "that runs exist is no result");

    // Locking another study's policy unlocks nothing here.
    let other = app
        .create_study(kvgate_core::study::NewStudy {
            name: "another".into(),
            description: String::new(),
        })
        .await
        .unwrap();
    lock_demo_policy(&app, other.id).await;
    let detail = app.run_detail(runs[0].id).await.unwrap();
    assert_eq!(detail.withheld, Some(Withheld::PolicyNotLocked));
    refused(
        app.review_queue(sid, ReviewFilter::default())
            .await
            .unwrap_err(),
    );

    // Once this study's policy is locked, every one of them is given.
    lock_demo_policy(&app, sid).await;
    let detail = app.run_detail(runs[0].id).await.unwrap();
    assert_eq!(detail.withheld, None);
    assert_eq!(
        detail.accepted.unwrap() + detail.rejected.unwrap() + detail.unvalidated.unwrap(),
        24
    );
    assert!(detail
        .requests
        .iter()
        .filter(|r| !r.warmup)
        .all(|r| r.verdict.is_some()));
    app.review_queue(sid, ReviewFilter::default())
        .await
        .unwrap();
    app.export_run(runs[0].id).await.unwrap();
    let p = app.study_progress(sid).await.unwrap();
    assert!(p.disagreements.is_some() && p.disagreements_labelled.is_some());
}

#[tokio::test]
async fn a_first_lock_after_results_is_marked_everywhere_and_for_good() {
    std::env::set_current_dir(ROOT).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = study_with_demo_runs(&dir).await;
    import_demo(&app, sid).await;
    // Nothing changed (version 1), yet the floors were set with results on the table.
    lock_demo_policy(&app, sid).await;
    let status = app.policy_status(sid).await.unwrap();
    assert_eq!(status.versions.len(), 1);
    assert_eq!(status.versions[0].runs_at_lock, 2);
    assert!(status.versions[0].first_lock_after_results);
    assert!(status.first_lock_after_results);
    assert!(
        !status.changed_after_results,
        "a first lock is not a change"
    );
    let a = app.analyze(sid).await.unwrap();
    assert!(a.policy_first_lock_after_results);
    assert!(!a.policy_changed_after_results);

    // The checklist's quality check names it in the evidence it signs.
    let list = app.checklist(sid).await.unwrap();
    let quality = list
        .checks
        .iter()
        .find(|c| c.check() == Check::Quality)
        .unwrap();
    let evidence = serde_json::to_value(&quality.evidence).unwrap();
    assert_eq!(
        evidence["evidence"]["policy_first_lock_after_results"], true,
        "{}",
        evidence["evidence"]
    );

    // The packet's report and its versions file say so.
    let out = dir.path().join("packet");
    app.export_packet(PacketExportInput {
        study_id: sid,
        out: out.display().to_string(),
        zip: false,
        representative: None,
        sign: false,
    })
    .await
    .unwrap();
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        report.contains("The policy was first locked after results existed"),
        "the packet's report names the late first lock"
    );
    let versions: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("policy/versions.json")).unwrap())
            .unwrap();
    assert_eq!(versions[0]["first_lock_after_results"], true);

    // A later version does not wash it out, and the mark survives reopening the database.
    let changed = std::fs::read_to_string(format!("{ROOT}fixtures/policies/demo-cpu.json"))
        .unwrap()
        .replace("\"alpha\": 0.05", "\"alpha\": 0.025");
    app.lock_policy(kvgate_app::analysis::LockPolicyInput {
        study_id: sid,
        policy_json: changed,
        locked_by: "owner".into(),
    })
    .await
    .unwrap();
    app.close().await;
    let again = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let status = again.policy_status(sid).await.unwrap();
    assert!(status.first_lock_after_results && status.changed_after_results);
    assert!(!status.versions[1].first_lock_after_results);
    assert!(
        again
            .analyze(sid)
            .await
            .unwrap()
            .policy_first_lock_after_results
    );
}

#[tokio::test]
async fn a_lock_before_the_results_carries_no_mark() {
    std::env::set_current_dir(ROOT).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = locked_demo_study(&dir).await;
    let status = app.policy_status(sid).await.unwrap();
    assert!(!status.first_lock_after_results && !status.changed_after_results);
    assert!(
        !app.analyze(sid)
            .await
            .unwrap()
            .policy_first_lock_after_results
    );
    let list = app.checklist(sid).await.unwrap();
    let quality = list
        .checks
        .iter()
        .find(|c| c.check() == Check::Quality)
        .unwrap();
    let evidence = serde_json::to_value(&quality.evidence).unwrap();
    // Left out when false, so the evidence digest of a study locked in time is what it was.
    assert!(evidence["evidence"]
        .get("policy_first_lock_after_results")
        .is_none());
    assert!(evidence["evidence"]
        .get("policy_changed_after_results")
        .is_none());
}
