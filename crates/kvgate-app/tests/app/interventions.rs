//! Held constant, or named: a candidate whose weights differ from B0's is an uncontrolled
//! comparison until a named intervention, recorded in the audit chain, accepts the finding;
//! Check 1 and the packet show both.

use kvgate_app::interventions::InterventionInput;
use kvgate_app::packet::PacketExportInput;
use kvgate_app::signoff::CheckEvidence;
use kvgate_app::{App, DbLocation, ErrorCode};
use kvgate_core::analysis::SuggestedOutcome;
use kvgate_core::review::AuditKind;
use kvgate_core::study::NewStudy;

use kvgate_app::imports::ImportInput;
use kvgate_formats::import::ImportFormat;

use crate::{lock_demo_policy, ROOT};

/// B0 and a Q8 whose weights digest differs from B0's, the demo policy and runs.
async fn changed_weights(dir: &tempfile::TempDir) -> (App, i64) {
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let study = app
        .create_study(NewStudy {
            name: "weights".into(),
            description: String::new(),
        })
        .await
        .unwrap();
    let mut digests = Vec::new();
    for (file, weights) in [
        ("smollm2-135m-cpu-b0.json", None),
        ("smollm2-135m-cpu-q8.json", Some("e".repeat(64))),
    ] {
        let text = std::fs::read_to_string(format!("{ROOT}fixtures/manifests/{file}")).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        if let Some(w) = weights {
            v["weights_digest"] = w.into();
        }
        let text = v.to_string();
        let draft = app.save_manifest_draft(study.id, &text).await.unwrap();
        let digest = kvgate_core::manifest::Manifest::from_json(&text)
            .unwrap()
            .digest()
            .unwrap();
        app.freeze_manifest(study.id, &draft.cell, &digest)
            .await
            .unwrap();
        digests.push(digest);
    }
    lock_demo_policy(&app, study.id).await;
    // The recorded runs, each bound to its cell's frozen manifest: Q8's is the changed one.
    for ((cell, file), digest) in [("B0", "b0-f16"), ("Q8", "q8-q8_0")]
        .into_iter()
        .zip(&digests)
    {
        let path = format!("{ROOT}fixtures/demo/runs/{file}.kvgate-run.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        let (first, rest) = text.split_once('\n').unwrap();
        let header: serde_json::Value = serde_json::from_str(first).unwrap();
        let recorded = header["manifest_sha256"].as_str().unwrap();
        // The header names its manifest, in its config too, and the config's digest.
        let mut header: serde_json::Value =
            serde_json::from_str(&first.replace(recorded, digest)).unwrap();
        header["config_sha256"] =
            kvgate_core::canonical::canonical_sha256(&header["config"]).into();
        let bound = dir.path().join(format!("{file}.kvgate-run.jsonl"));
        std::fs::write(&bound, format!("{header}\n{rest}")).unwrap();
        app.import_file(
            ImportInput {
                study_id: study.id,
                cell: cell.into(),
                format: ImportFormat::Jsonl,
                path: bound.to_string_lossy().into_owned(),
                mapping: None,
                job: None,
                companion: None,
            },
            |_| {},
        )
        .await
        .unwrap_or_else(|e| panic!("{file}: {}", e.message));
    }
    (app, study.id)
}

fn compat_cell(
    list: &kvgate_app::signoff::Checklist,
    cell: &str,
) -> (String, kvgate_core::checklist::CompatibilityCell) {
    let status = list
        .checks
        .iter()
        .find(|c| matches!(c.evidence, CheckEvidence::Compatibility { .. }))
        .unwrap();
    let CheckEvidence::Compatibility { evidence } = &status.evidence else {
        unreachable!()
    };
    let c = evidence.cells.iter().find(|c| c.cell == cell).unwrap();
    (status.evidence_sha256.clone(), c.clone())
}

#[tokio::test]
async fn a_weights_change_is_uncontrolled_until_a_named_intervention_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = changed_weights(&dir).await;
    let a = app.analyze(sid).await.unwrap();
    let q8 = a.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    assert_eq!(q8.decision.outcome, SuggestedOutcome::Uncontrolled);
    assert_eq!(q8.decision.uncontrolled_findings[0].path, "weights_digest");
    let before = app.checklist(sid).await.unwrap();
    let (digest_before, cell) = compat_cell(&before, "Q8");
    assert_eq!(cell.uncontrolled_findings.len(), 1);
    assert!(cell.accepted_findings.is_empty());

    let input = |accept: &str, why: &str| InterventionInput {
        study_id: sid,
        candidate: "Q8".into(),
        accept: vec![accept.into()],
        by: "architect".into(),
        why: why.into(),
    };
    // No reason, or a path that is not a finding: refused, nothing recorded.
    let e = app
        .record_intervention(input("weights_digest", "  "))
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput);
    assert!(e.message.contains("field `why`"), "{}", e.message);
    let e = app
        .record_intervention(input("kv_dtype", "the KV change itself"))
        .await
        .unwrap_err();
    assert!(e.message.contains("weights_digest"), "{}", e.message);
    let (digest, _) = compat_cell(&app.checklist(sid).await.unwrap(), "Q8");
    assert_eq!(digest, digest_before, "nothing recorded");

    let event = app
        .record_intervention(input(
            "weights_digest",
            "the Q8 bundle ships its own checkpoint: compared as a deployment bundle",
        ))
        .await
        .unwrap();
    assert_eq!(event.kind, AuditKind::Intervention);
    assert_eq!(event.subject, "Q8");

    let a = app.analyze(sid).await.unwrap();
    let q8 = a.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    assert!(q8.decision.uncontrolled_findings.is_empty());
    assert_ne!(q8.decision.outcome, SuggestedOutcome::Uncontrolled);
    assert_eq!(q8.decision.accepted_findings[0].event, event.seq);

    // Check 1 shows the intervention, and its evidence changed (a signature over it is void).
    let after = app.checklist(sid).await.unwrap();
    let (digest_after, cell) = compat_cell(&after, "Q8");
    assert!(cell.uncontrolled_findings.is_empty());
    assert_eq!(cell.accepted_findings[0].by, "architect");
    assert_ne!(digest_before, digest_after);

    // The packet's report names it.
    let out = dir.path().join("packet");
    app.export_packet(PacketExportInput {
        study_id: sid,
        out: out.to_string_lossy().into_owned(),
        zip: false,
        representative: None,
        sign: false,
    })
    .await
    .unwrap();
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        report.contains("accepted by the named intervention of architect"),
        "the report names the intervention"
    );
}
