//! The acceptance checklist: signatures over evidence digests, voided when the evidence
//! changes; decisions recorded in the audit chain with the outcome the table suggested.

use kvgate_app::recovery::RecordRecoveryInput;
use kvgate_app::review::{LabelInput, ReviewFilter};
use kvgate_app::signoff::{
    Check, CheckEvidence, CheckStatus, Checklist, DecideInput, DecisionOutcome, DecisionRecord,
    SignBlocker, SignInput, SignatureState,
};
use kvgate_app::{ErrorCode, ProblemCode};
use kvgate_core::checklist::RecoveryEvidence;
use kvgate_core::recovery::{RecoveryFinding, RecoveryFindingKind};
use serde_json::{json, Value};

use crate::{locked_demo_study, ROOT};
use kvgate_core::review::ReviewLabel;

/// The recovery check's evidence and its findings.
fn recovery(list: &Checklist) -> (&CheckStatus, &RecoveryEvidence, &[RecoveryFinding]) {
    let status = &list.checks[3];
    match &status.evidence {
        CheckEvidence::Recovery { evidence, findings } => (status, evidence, findings),
        other => panic!("the fourth check is not recovery: {:?}", other.check()),
    }
}

#[tokio::test]
async fn signatures_hold_until_their_evidence_changes_and_decisions_are_chained() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = locked_demo_study(&dir).await;
    let list = app.checklist(sid).await.unwrap();
    assert_eq!(list.checks.len(), 4);
    assert!(list.checks.iter().all(|c| c.signed.is_none() && !c.valid));
    // The digest is stable while nothing changes.
    let again = app.checklist(sid).await.unwrap();
    for (a, b) in list.checks.iter().zip(&again.checks) {
        assert_eq!(a.evidence_sha256, b.evidence_sha256);
    }
    // Recovery cannot be signed before its plan is recorded; the evidence says why.
    let (status, evidence, findings) = recovery(&list);
    assert_eq!(status.check(), Check::Recovery);
    assert_eq!(status.blocker, Some(SignBlocker::NoRecoveryPlan));
    assert!(list.checks[..3].iter().all(|c| c.blocker.is_none()));
    assert!(evidence.plan.is_none());
    assert!(evidence.findings[0].starts_with("no recovery plan recorded"));
    assert_eq!(findings[0].kind, RecoveryFindingKind::NoPlan);
    assert_eq!(list.candidates, vec!["Q8".to_owned()]);
    let refused = app
        .sign_check(SignInput {
            study_id: sid,
            check: Check::Recovery,
            by: "architect".into(),
            expected_sha256: None,
            reason: String::new(),
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
    let (status, evidence, findings) = recovery(&list);
    assert_eq!(status.blocker, None);
    let recorded = evidence.plan.as_ref().unwrap();
    assert_eq!(recorded.sha256, plan.sha256);
    assert_eq!(recorded.plan.canary.share_percent, 5.0);
    // The plan drains as long as the policy; the CPU manifests carry no capacity model, so the
    // rollback fit is unknown, and said so.
    assert_eq!(evidence.findings, vec!["rollback fit of Q8 unknown"]);
    assert_eq!(findings[0].kind, RecoveryFindingKind::RollbackFitUnknown);
    // The recorded demo's answers are rejected on both sides: its quality evidence shows failed
    // protected floors, so signing it takes a stated reason, recorded with the signature.
    let quality = list
        .checks
        .iter()
        .find(|c| c.check() == Check::Quality)
        .unwrap();
    assert!(
        quality
            .failures
            .iter()
            .any(|f| f.contains("protected floor") && f.contains("failed")),
        "{:?}",
        quality.failures
    );
    let refused = app
        .sign_check(SignInput {
            study_id: sid,
            check: Check::Quality,
            by: "architect".into(),
            expected_sha256: Some(quality.evidence_sha256.clone()),
            reason: "  ".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert!(
        refused.message.contains("needs a stated reason"),
        "{}",
        refused.message
    );
    for c in &list.checks {
        let reason = if c.failures.is_empty() {
            String::new()
        } else {
            "the demo answers no item: signed to record the rollback".to_owned()
        };
        let e = app
            .sign_check(SignInput {
                study_id: sid,
                check: c.check(),
                by: "architect".into(),
                expected_sha256: Some(c.evidence_sha256.clone()),
                reason: reason.clone(),
            })
            .await
            .unwrap();
        assert_eq!(e.payload["evidence_sha256"], c.evidence_sha256.as_str());
        if reason.is_empty() {
            assert!(e.payload.get("reason").is_none(), "{}", e.payload);
        } else {
            assert_eq!(e.payload["reason"], reason.as_str());
            assert_eq!(e.payload["failures"], json!(c.failures));
        }
    }
    let list = app.checklist(sid).await.unwrap();
    for c in &list.checks {
        assert_eq!(c.state, SignatureState::Signed);
        assert_eq!(c.signed_sha256.as_ref(), Some(&c.evidence_sha256));
        assert_eq!(c.signed_reason.is_some(), !c.failures.is_empty());
    }
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
        label: ReviewLabel::BothWrong,
        note: String::new(),
        by: "reviewer".into(),
    })
    .await
    .unwrap();
    let list = app.checklist(sid).await.unwrap();
    for c in &list.checks {
        assert_eq!(c.valid, c.check() != Check::Quality, "{:?}", c.check());
        let state = if c.valid {
            SignatureState::Signed
        } else {
            SignatureState::Void
        };
        assert_eq!(c.state, state);
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
    // The same problem, structured: a shell places it without reading the message.
    assert_eq!(bad.problems.len(), 1, "{:?}", bad.problems);
    assert_eq!(bad.problems[0].path, "drain_deadline_s");
    assert_eq!(bad.problems[0].code, ProblemCode::RecoveryPlan);
    assert_eq!(bad.problems[0].found, "-1");
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
        let holds = !matches!(c.check(), Check::Quality | Check::Recovery);
        assert_eq!(c.valid, holds, "{:?}", c.check());
    }
    let (_, evidence, findings) = recovery(&list);
    assert_eq!(evidence.plan.as_ref().unwrap().version, 2);
    assert!(evidence.findings[0].contains("warm_up failed"));
    assert_eq!(findings[0].kind, RecoveryFindingKind::RehearsalStepFailed);
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
    assert_eq!(analysis.adjudicated_unblinded_labels, 0);
    assert!(analysis.adjudicated_unblinded.is_empty());
    // A relabel after the reveal, naming the roles, is unblinded: counted apart, never in the
    // blind statistics (which now leave that pair as the validator judged it).
    let relabelled = app
        .label_pair(LabelInput {
            pair_id: queue.pairs[0].pair_id.clone(),
            label: ReviewLabel::CandidateRegression,
            note: "seen after the reveal".into(),
            by: "reviewer".into(),
        })
        .await
        .unwrap();
    assert!(relabelled.unblinded);
    let analysis = app.analyze(sid).await.unwrap();
    assert_eq!(analysis.adjudicated_labels, 1);
    assert_eq!(analysis.adjudicated_unblinded_labels, 1);
    assert!(
        !analysis.adjudicated.contains_key("Q8"),
        "{:?}",
        analysis.adjudicated
    );
    let automatic = &analysis
        .body
        .cells
        .iter()
        .find(|c| c.cell == "Q8")
        .unwrap()
        .paired;
    assert_ne!(&analysis.adjudicated_unblinded["Q8"], automatic);
    let list = app.checklist(sid).await.unwrap();
    let quality = list
        .checks
        .iter()
        .find(|c| c.check() == Check::Quality)
        .unwrap();
    let CheckEvidence::Quality { evidence } = &quality.evidence else {
        panic!("quality evidence");
    };
    assert!(evidence.adjudications[0].unblinded);
    let quality = list
        .checks
        .iter()
        .find(|c| c.check() == Check::Quality)
        .unwrap();
    assert!(quality.void_reason.as_ref().unwrap().contains("void"));
    // Signing against a digest that is no longer current is refused.
    let stale = app
        .sign_check(SignInput {
            study_id: sid,
            check: Check::Quality,
            by: "architect".into(),
            expected_sha256: Some("0".repeat(64)),
            reason: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(stale.code, ErrorCode::Conflict);

    // A decision over void signatures is refused, naming them, and records nothing.
    let refused = app
        .decide(DecideInput {
            study_id: sid,
            candidate: "Q8".into(),
            outcome: DecisionOutcome::Promote,
            by: "architect".into(),
            rationale: "no answer accepted on either side".into(),
            override_gate: false,
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert!(
        refused.message.contains("quality (void")
            && refused.message.contains("recovery (void")
            && !refused.message.contains("compatibility")
            && refused.message.contains("--override"),
        "{}",
        refused.message
    );
    // An override needs a rationale.
    let refused = app
        .decide(DecideInput {
            study_id: sid,
            candidate: "Q8".into(),
            outcome: DecisionOutcome::Retain,
            by: "architect".into(),
            rationale: " ".into(),
            override_gate: true,
        })
        .await
        .unwrap_err();
    assert!(
        refused.message.contains("needs a rationale"),
        "{}",
        refused.message
    );

    // The decision, as an override, records the suggestion, the state of every check and
    // what it overrode.
    let e = app
        .decide(DecideInput {
            study_id: sid,
            candidate: "Q8".into(),
            outcome: DecisionOutcome::Retain,
            by: "architect".into(),
            rationale: "no answer accepted on either side".into(),
            override_gate: true,
        })
        .await
        .unwrap();
    assert_eq!(e.payload["outcome"], "retain");
    assert!(e.payload["suggested"].is_string());
    assert_eq!(e.payload["checks"].as_array().unwrap().len(), 4);
    assert_eq!(e.payload["overridden"], true);
    assert_eq!(
        e.payload["overridden_checks"],
        json!([{"check": "quality", "state": "void"}, {"check": "recovery", "state": "void"}])
    );
    let err = app
        .decide(DecideInput {
            study_id: sid,
            candidate: "B0".into(),
            outcome: DecisionOutcome::Retain,
            by: "architect".into(),
            rationale: String::new(),
            override_gate: false,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    let decisions = app.checklist(sid).await.unwrap().decisions;
    assert_eq!(decisions.len(), 1);
    let record = decisions[0].record.as_ref().unwrap();
    assert_eq!(record.outcome, DecisionOutcome::Retain);
    assert_eq!(record.rationale, "no answer accepted on either side");
    assert!(record.overridden);
    assert_eq!(decisions[0].event.subject, "Q8");
    let report = app.verify_audit(sid).await.unwrap();
    assert!(report.intact, "{report:?}");
    assert_eq!(report.events, 7);
}

/// The checks of the fixture, by name, with `recorded_at` of a recovery plan set as it was now.
fn golden(recorded_at: Option<&str>) -> (Vec<(String, Value, String)>, Value) {
    let text =
        std::fs::read_to_string(format!("{ROOT}fixtures/signoff/demo-evidence.json")).unwrap();
    let golden: Value = serde_json::from_str(&text).unwrap();
    let checks = golden["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let mut evidence = c["evidence"].clone();
            let mut sha = c["sha256"].as_str().unwrap().to_owned();
            if let (Some(at), false) = (recorded_at, evidence["plan"].is_null()) {
                if evidence.get("plan").is_some() {
                    evidence["plan"]["recorded_at"] = json!(at);
                    sha = kvgate_core::canonical::canonical_sha256(&evidence);
                }
            }
            (c["name"].as_str().unwrap().to_owned(), evidence, sha)
        })
        .collect();
    (checks, golden["decision_payload"].clone())
}

fn evidence_of(list: &Checklist, check: Check) -> (Value, String) {
    let c = list.checks.iter().find(|c| c.check() == check).unwrap();
    (c.evidence.evidence_json(), c.evidence_sha256.clone())
}

/// The typed evidence of the demo study is the evidence the checklist signed before it was
/// typed (fixtures/signoff/demo-evidence.json), byte for byte once canonical: every signature
/// made then still holds. Only the time a recovery plan was recorded differs between runs.
#[tokio::test]
async fn the_demo_study_signs_the_evidence_it_signed_before_the_evidence_was_typed() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = locked_demo_study(&dir).await;
    let (want, _) = golden(None);
    let want = |name: &str| want.iter().find(|(n, _, _)| n == name).unwrap().clone();
    let same = |list: &Checklist, check: Check, name: &str| {
        let (_, evidence, sha) = want(name);
        let (have, have_sha) = evidence_of(list, check);
        assert_eq!(have, evidence, "{name}");
        assert_eq!(have_sha, sha, "{name}");
    };
    let list = app.checklist(sid).await.unwrap();
    same(&list, Check::Compatibility, "compatibility");
    same(&list, Check::Quality, "quality");
    same(&list, Check::Operations, "operations");
    same(&list, Check::Recovery, "recovery without a plan");

    // The pair the fixture's label is on (the review queue samples agreeing pairs at random).
    let (_, labelled, _) = want("quality with a label");
    app.label_pair(LabelInput {
        pair_id: labelled["adjudications"][0]["pair"]
            .as_str()
            .unwrap()
            .to_owned(),
        label: ReviewLabel::BothWrong,
        note: String::new(),
        by: "reviewer".into(),
    })
    .await
    .unwrap();
    let plan_json =
        std::fs::read_to_string(format!("{ROOT}fixtures/recovery/demo-cpu.json")).unwrap();
    let first = app
        .record_recovery_plan(RecordRecoveryInput {
            study_id: sid,
            plan_json: plan_json.clone(),
            by: "owner".into(),
        })
        .await
        .unwrap();
    let list = app.checklist(sid).await.unwrap();
    same(&list, Check::Quality, "quality with a label");
    let (checks, _) = golden(Some(&first.recorded_at));
    let (_, evidence, sha) = checks
        .into_iter()
        .find(|(n, _, _)| n == "recovery with a plan")
        .unwrap();
    assert_eq!(evidence_of(&list, Check::Recovery), (evidence, sha));

    let second = plan_json
        .replace("\"warm_up\": \"passed\"", "\"warm_up\": \"failed\"")
        .replace(
            "\"drain_deadline_s\": 600,",
            "\"drain_deadline_s\": 45.5,\n  \"admission_before_restore\": 64,",
        );
    let second = app
        .record_recovery_plan(RecordRecoveryInput {
            study_id: sid,
            plan_json: second,
            by: "owner".into(),
        })
        .await
        .unwrap();
    let list = app.checklist(sid).await.unwrap();
    let (checks, mut payload) = golden(Some(&second.recorded_at));
    let (_, evidence, sha) = checks
        .into_iter()
        .find(|(n, _, _)| n.starts_with("recovery with a failed step"))
        .unwrap();
    assert_eq!(evidence_of(&list, Check::Recovery), (evidence, sha.clone()));

    // A decision records the same payload as before, now built from a typed record.
    let e = app
        .decide(DecideInput {
            study_id: sid,
            candidate: "Q8".into(),
            outcome: DecisionOutcome::Calibrate,
            by: "architect".into(),
            rationale: "golden".into(),
            // Not every check is signed here: the override is what lets it through.
            override_gate: true,
        })
        .await
        .unwrap();
    payload["checks"][3]["evidence_sha256"] = json!(sha);
    let mut recorded = e.payload.clone();
    let fields = recorded.as_object_mut().unwrap();
    assert_eq!(fields.remove("overridden"), Some(json!(true)));
    assert!(fields.remove("overridden_checks").is_some());
    assert_eq!(recorded, payload);
    let typed: DecisionRecord = serde_json::from_value(payload.clone()).unwrap();
    assert_eq!(serde_json::to_value(typed).unwrap(), payload);
}

/// A plan as the Sign-off form sends it before anything is filled in: the backend names every
/// problem at once, each at the path of its field.
#[tokio::test]
async fn the_recovery_plan_check_names_every_problem_of_a_form_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = locked_demo_study(&dir).await;
    let empty = json!({
        "canary": {"route": "", "share_percent": null},
        "breach_rule": "",
        "drain_deadline_s": null,
        "rehearsal": {"date": "", "restart": null, "cache_loss": null, "warm_up": null, "notes": ""}
    })
    .to_string();
    let paths: Vec<String> = app
        .check_recovery_plan(&empty)
        .into_iter()
        .map(|p| p.path)
        .collect();
    assert_eq!(
        paths,
        [
            "canary.route",
            "canary.share_percent",
            "breach_rule",
            "drain_deadline_s",
            "rehearsal.date",
            "rehearsal.restart",
            "rehearsal.cache_loss",
            "rehearsal.warm_up"
        ]
    );
    let refused = app
        .record_recovery_plan(RecordRecoveryInput {
            study_id: sid,
            plan_json: empty,
            by: "owner".into(),
        })
        .await
        .unwrap_err();
    let placed: Vec<&str> = refused.problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(placed, paths);
    assert!(refused
        .problems
        .iter()
        .all(|p| refused.message.contains(&format!(
            "- {}: expected {}, found {}",
            p.path, p.expected, p.found
        ))));
}
