//! The acceptance checklist: signatures over evidence digests, voided when the evidence
//! changes; decisions recorded in the audit chain with the outcome the table suggested.

use kvgate_app::analysis::LockPolicyInput;
use kvgate_app::recovery::RecordRecoveryInput;
use kvgate_app::review::{LabelInput, ReviewFilter};
use kvgate_app::signoff::{Check, DecideInput, DecisionOutcome, SignInput};
use kvgate_app::{App, ErrorCode};

use crate::{import_demo, study_with_demo_runs, ROOT};
use kvgate_core::review::AdjudicationLabel;

async fn demo_study(dir: &tempfile::TempDir) -> (App, i64) {
    // The policy is locked before the runs are imported.
    let (app, sid) = study_with_demo_runs(dir).await;
    app.lock_policy(LockPolicyInput {
        study_id: sid,
        policy_json: std::fs::read_to_string(format!("{ROOT}fixtures/policies/demo-cpu.json"))
            .unwrap(),
        locked_by: "owner".into(),
    })
    .await
    .unwrap();
    import_demo(&app, sid).await;
    (app, sid)
}

#[tokio::test]
async fn signatures_hold_until_their_evidence_changes_and_decisions_are_chained() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = demo_study(&dir).await;
    let list = app.checklist(sid).await.unwrap();
    assert_eq!(list.checks.len(), 4);
    assert!(list.checks.iter().all(|c| c.signed.is_none() && !c.valid));
    // The digest is stable while nothing changes.
    let again = app.checklist(sid).await.unwrap();
    for (a, b) in list.checks.iter().zip(&again.checks) {
        assert_eq!(a.evidence_sha256, b.evidence_sha256);
    }
    // Recovery cannot be signed before its plan is recorded; the evidence says why.
    let recovery = &list.checks[3];
    assert_eq!(recovery.check, Check::Recovery);
    assert!(recovery.evidence["plan"].is_null());
    assert!(recovery.evidence["findings"][0]
        .as_str()
        .unwrap()
        .starts_with("no recovery plan recorded"));
    let refused = app
        .sign_check(SignInput {
            study_id: sid,
            check: Check::Recovery,
            by: "architect".into(),
            expected_sha256: None,
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert!(
        refused.message.contains("recovery plan"),
        "{}",
        refused.message
    );
    let plan_json =
        std::fs::read_to_string(format!("{ROOT}fixtures/recovery/demo-cpu.json")).unwrap();
    let plan = app
        .record_recovery_plan(RecordRecoveryInput {
            study_id: sid,
            plan_json: plan_json.clone(),
            by: "owner".into(),
        })
        .await
        .unwrap();
    assert_eq!(plan.version, 1);
    let list = app.checklist(sid).await.unwrap();
    let recovery = &list.checks[3];
    assert_eq!(recovery.evidence["plan"]["sha256"], plan.sha256.as_str());
    assert_eq!(
        recovery.evidence["plan"]["plan"]["canary"]["share_percent"],
        5.0
    );
    // The plan drains as long as the policy; the CPU manifests carry no capacity model, so the
    // rollback fit is unknown, and said so.
    assert_eq!(
        recovery.evidence["findings"],
        serde_json::json!(["rollback fit of Q8 unknown"])
    );
    for c in &list.checks {
        let e = app
            .sign_check(SignInput {
                study_id: sid,
                check: c.check,
                by: "architect".into(),
                expected_sha256: Some(c.evidence_sha256.clone()),
            })
            .await
            .unwrap();
        assert_eq!(e.payload["evidence_sha256"], c.evidence_sha256.as_str());
    }
    let list = app.checklist(sid).await.unwrap();
    assert!(
        list.checks.iter().all(|c| c.valid),
        "{:?}",
        list.checks
            .iter()
            .map(|c| &c.void_reason)
            .collect::<Vec<_>>()
    );

    // A label changes the quality evidence: that signature is void, the others hold.
    let queue = app
        .review_queue(
            sid,
            ReviewFilter {
                agreeing_sample: 1,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    app.label_pair(LabelInput {
        pair_id: queue.pairs[0].pair_id.clone(),
        label: AdjudicationLabel::BothWrong,
        note: String::new(),
        by: "reviewer".into(),
    })
    .await
    .unwrap();
    let list = app.checklist(sid).await.unwrap();
    for c in &list.checks {
        assert_eq!(c.valid, c.check != Check::Quality, "{:?}", c.check);
    }
    // A new plan version (a failed warm-up rehearsal) voids the recovery signature only, and is
    // named in the findings; a bad plan is refused and changes nothing.
    let bad = app
        .record_recovery_plan(RecordRecoveryInput {
            study_id: sid,
            plan_json: plan_json.replace("\"drain_deadline_s\": 600", "\"drain_deadline_s\": -1"),
            by: "owner".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code, ErrorCode::InvalidInput);
    assert!(
        bad.message.contains("drain_deadline_s: expected"),
        "{}",
        bad.message
    );
    assert_eq!(app.recovery_status(sid).await.unwrap().versions.len(), 1);
    app.record_recovery_plan(RecordRecoveryInput {
        study_id: sid,
        plan_json: plan_json.replace("\"warm_up\": \"passed\"", "\"warm_up\": \"failed\""),
        by: "owner".into(),
    })
    .await
    .unwrap();
    let list = app.checklist(sid).await.unwrap();
    for c in &list.checks {
        let holds = !matches!(c.check, Check::Quality | Check::Recovery);
        assert_eq!(c.valid, holds, "{:?}", c.check);
    }
    assert_eq!(list.checks[3].evidence["plan"]["version"], 2);
    assert!(list.checks[3].evidence["findings"][0]
        .as_str()
        .unwrap()
        .contains("warm_up failed"));
    // Statistics on the labels sit beside the automatic ones: the pair was rejected on both
    // sides and labelled both wrong, so the counts agree.
    let analysis = app.analyze(sid).await.unwrap();
    assert_eq!(analysis.adjudicated_labels, 1);
    let automatic = &analysis
        .body
        .cells
        .iter()
        .find(|c| c.cell == "Q8")
        .unwrap()
        .paired;
    assert_eq!(&analysis.adjudicated["Q8"], automatic);
    let quality = list
        .checks
        .iter()
        .find(|c| c.check == Check::Quality)
        .unwrap();
    assert!(quality.void_reason.as_ref().unwrap().contains("void"));
    // Signing against a digest that is no longer current is refused.
    let stale = app
        .sign_check(SignInput {
            study_id: sid,
            check: Check::Quality,
            by: "architect".into(),
            expected_sha256: Some("0".repeat(64)),
        })
        .await
        .unwrap_err();
    assert_eq!(stale.code, ErrorCode::Conflict);

    // The decision records the suggestion and the state of every check.
    let e = app
        .decide(DecideInput {
            study_id: sid,
            candidate: "Q8".into(),
            outcome: DecisionOutcome::Retain,
            by: "architect".into(),
            rationale: "no answer accepted on either side".into(),
        })
        .await
        .unwrap();
    assert_eq!(e.payload["outcome"], "retain");
    assert!(e.payload["suggested"].is_string());
    assert_eq!(e.payload["checks"].as_array().unwrap().len(), 4);
    let err = app
        .decide(DecideInput {
            study_id: sid,
            candidate: "B0".into(),
            outcome: DecisionOutcome::Retain,
            by: "architect".into(),
            rationale: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert_eq!(app.checklist(sid).await.unwrap().decisions.len(), 1);
    let report = app.verify_audit(sid).await.unwrap();
    assert!(report.intact, "{report:?}");
    assert_eq!(report.events, 6);
}
