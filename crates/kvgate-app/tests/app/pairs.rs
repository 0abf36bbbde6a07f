//! Pairs are the same prompts, proven: the committed recordings still pair as before, a run over
//! another corpus is flagged everywhere it is shown and its foreign items do not pair.

use kvgate_app::packet::PacketExportInput;
use kvgate_core::checklist::{Check, CheckEvidence};
use kvgate_core::fixtures::FixtureItem;
use kvgate_core::manifest::Manifest;
use kvgate_core::pairing::{item_prompt_sha256, UnpairedReason};
use kvgate_core::run::RunProvenance;
use serde_json::Value;

use crate::{import_demo, lock_demo_policy, study_with_cells, study_with_demo_runs, ROOT};

fn overall(a: &kvgate_app::analysis::StudyAnalysis, cell: &str) -> (u64, u64, u64) {
    let c = a.body.cells.iter().find(|c| c.cell == cell).unwrap();
    let r = c.paired.iter().find(|r| r.stratum == "overall").unwrap();
    (r.n, r.b, r.c)
}

/// The recordings were stored without prompt digests: the digests are recomputed from their
/// corpus and manifests, and they give the same pairs as before digests existed (24 for the
/// demo, 72 with 3 disagreements for the Qwen recording), with nothing left unpaired.
#[tokio::test]
async fn the_committed_recordings_give_the_same_pairs_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = study_with_demo_runs(&dir).await;
    lock_demo_policy(&app, sid).await;
    import_demo(&app, sid).await;
    let a = app.analyze(sid).await.unwrap();
    assert_eq!(overall(&a, "Q8"), (24, 0, 0));
    for c in &a.body.cells {
        assert!(c.unpaired.is_empty(), "{}: {:?}", c.cell, c.unpaired);
        assert!(c.corpus_mismatches.is_empty(), "{}", c.cell);
        assert!(c.other_points.is_empty(), "{}", c.cell);
    }
    let q8 = a.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    let cmp = q8.goodput_comparable.as_ref().unwrap();
    assert!(cmp.comparable, "{cmp:?}");

    // The Qwen recording names its corpus folder relative to the repository.
    std::env::set_current_dir(ROOT).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = study_with_cells(
        &dir,
        &[
            "qwen25-coder-05b-cpu-b0.json",
            "qwen25-coder-05b-cpu-q8.json",
        ],
    )
    .await;
    lock_demo_policy(&app, sid).await;
    for file in ["qwen-b0-f16", "qwen-q8-q8_0"] {
        let path = format!("{ROOT}fixtures/disagreements/runs/{file}.kvgate-run.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        app.import_run_file(sid, &path, &text, RunProvenance::Recorded)
            .await
            .unwrap();
    }
    let a = app.analyze(sid).await.unwrap();
    assert_eq!(overall(&a, "Q8"), (72, 1, 2));
    assert!(a.body.cells.iter().all(|c| c.unpaired.is_empty()));
}

/// A candidate run over another corpus (the same item ids, half of them with other prompts, as
/// another preset or tokenizer makes them) is flagged on the run, in the analysis, in Check 2's
/// evidence and in the packet; its foreign items are not paired but named.
#[tokio::test]
async fn a_candidate_run_over_another_corpus_is_flagged_and_its_foreign_items_not_paired() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = study_with_demo_runs(&dir).await;
    lock_demo_policy(&app, sid).await;
    import_demo(&app, sid).await;

    // The demo's Q8 run, re-sent from another corpus: each record carries the digest of what
    // it sent; the odd items' prompts differ from the demo corpus's.
    let q8 = Manifest::from_json(
        &std::fs::read_to_string(format!("{ROOT}fixtures/manifests/smollm2-135m-cpu-q8.json"))
            .unwrap(),
    )
    .unwrap();
    let items: Vec<FixtureItem> =
        std::fs::read_to_string(format!("{ROOT}fixtures/demo/corpus/items.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let text =
        std::fs::read_to_string(format!("{ROOT}fixtures/demo/runs/q8-q8_0.kvgate-run.jsonl"))
            .unwrap();
    let foreign_sha = "a".repeat(64);
    let mut changed = Vec::new();
    let mut n = 0;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if i == 0 {
            v["config"]["corpus"]["items_sha256"] = foreign_sha.clone().into();
            v["started_at"] = "2026-12-02T09:00:00.000Z".into();
            v["config_sha256"] = kvgate_core::canonical::canonical_sha256(&v["config"]).into();
        } else if let Some(record) = v.get_mut("request").map(|r| &mut r["record"]) {
            let id = record["item_id"].as_str().unwrap().to_owned();
            let mut item = items.iter().find(|i| i.id == id).unwrap().clone();
            if v["request"]["warmup"] == false {
                n += 1;
                if n % 2 == 1 {
                    item.messages
                        .last_mut()
                        .unwrap()
                        .content
                        .push_str(" (other preset)");
                    changed.push(id);
                }
            }
            v["request"]["record"]["prompt_sha256"] = item_prompt_sha256(&item, &q8).into();
        }
        lines.push(serde_json::to_string(&v).unwrap());
    }
    let run = app
        .import_run_file(
            sid,
            "foreign.kvgate-run.jsonl",
            &lines.join("\n"),
            RunProvenance::Imported,
        )
        .await
        .unwrap();

    // On the run.
    let detail = app.run_detail(run.id).await.unwrap();
    let m = detail.corpus_mismatch.expect("flagged on the run");
    assert_eq!(m.run_corpus_sha256, foreign_sha);
    // The demo runs are over their manifest's corpus.
    let first = app.list_runs(sid).await.unwrap()[0].id;
    assert!(app
        .run_detail(first)
        .await
        .unwrap()
        .corpus_mismatch
        .is_none());

    // In the analysis: the demo Q8 run still pairs all 24; the foreign run's changed items are
    // named as other prompts under the same id.
    let a = app.analyze(sid).await.unwrap();
    let c = a.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    assert_eq!(c.corpus_mismatches.len(), 1);
    assert_eq!(c.corpus_mismatches[0].run, run.id);
    assert_eq!(changed.len(), 12);
    let mut named: Vec<&str> = c.unpaired.iter().map(|u| u.key.as_str()).collect();
    named.sort();
    changed.sort();
    assert_eq!(named, changed);
    assert!(c
        .unpaired
        .iter()
        .all(|u| u.reason == UnpairedReason::CandidateOnly && u.detail.contains("not sent to B0")));
    assert_eq!(overall(&a, "Q8").0, 24);

    // In Check 2's evidence.
    let list = app.checklist(sid).await.unwrap();
    let quality = list
        .checks
        .iter()
        .find(|c| c.check() == Check::Quality)
        .unwrap();
    let CheckEvidence::Quality { evidence } = &quality.evidence else {
        panic!("quality evidence");
    };
    let cell = evidence.cells.iter().find(|c| c.cell == "Q8").unwrap();
    assert_eq!(cell.corpus_mismatches.len(), 1);
    assert_eq!(cell.unpaired.len(), 12);
    // B0's evidence is as before: the new fields are omitted when empty.
    let b0 = serde_json::to_value(evidence.cells.iter().find(|c| c.cell == "B0").unwrap()).unwrap();
    assert!(
        b0.get("unpaired").is_none() && b0.get("corpus_mismatches").is_none(),
        "{b0}"
    );
    // The output-length stratum is shown in the analysis but not signed.
    assert!(c
        .paired
        .iter()
        .any(|r| r.stratum.starts_with("output_length=")));
    assert!(cell
        .paired
        .iter()
        .all(|r| !r.stratum.starts_with("output_length=")));

    // In the packet.
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
        report.contains(&format!(
            "run {} was sent corpus <code>{foreign_sha}</code>",
            run.id
        )),
        "the packet names the mismatch"
    );
    assert!(report.contains("Q8: 12 left without a pair"));
}

/// A run file with each record's `prompt_sha256` as sent: the measured items whose position
/// `alter` picks were sent with another prompt (as another preset makes one under the same id).
fn with_digests(
    file: &str,
    manifest: &str,
    alter: impl Fn(usize) -> bool,
) -> (String, Vec<String>) {
    let m = Manifest::from_json(
        &std::fs::read_to_string(format!("{ROOT}fixtures/manifests/{manifest}")).unwrap(),
    )
    .unwrap();
    let items: Vec<FixtureItem> =
        std::fs::read_to_string(format!("{ROOT}fixtures/demo/corpus/items.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let text = std::fs::read_to_string(format!("{ROOT}fixtures/demo/runs/{file}")).unwrap();
    let (mut n, mut altered, mut lines) = (0, Vec::new(), Vec::new());
    for line in text.lines() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if v.get("request").is_some() {
            let id = v["request"]["record"]["item_id"]
                .as_str()
                .unwrap()
                .to_owned();
            let mut item = items.iter().find(|i| i.id == id).unwrap().clone();
            if v["request"]["warmup"] == false {
                if alter(n) {
                    item.messages
                        .last_mut()
                        .unwrap()
                        .content
                        .push_str(" (other preset)");
                    altered.push(id);
                }
                n += 1;
            }
            v["request"]["record"]["prompt_sha256"] = item_prompt_sha256(&item, &m).into();
        }
        lines.push(serde_json::to_string(&v).unwrap());
    }
    (lines.join("\n"), altered)
}

/// Both sides recorded their digests and five items went to Q8 with other prompts: those are not
/// pairs, in the analysis (named `prompt_differs`) nor in the review queue.
#[tokio::test]
async fn the_same_item_id_with_another_prompt_is_no_pair_in_the_analysis_or_the_review_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = study_with_demo_runs(&dir).await;
    lock_demo_policy(&app, sid).await;
    let (b0, _) = with_digests(
        "b0-f16.kvgate-run.jsonl",
        "smollm2-135m-cpu-b0.json",
        |_| false,
    );
    let (q8, mut altered) = with_digests(
        "q8-q8_0.kvgate-run.jsonl",
        "smollm2-135m-cpu-q8.json",
        |n| n < 5,
    );
    for (name, text) in [("b0", b0), ("q8", q8)] {
        app.import_run_file(sid, name, &text, RunProvenance::Imported)
            .await
            .unwrap();
    }
    let a = app.analyze(sid).await.unwrap();
    assert_eq!(overall(&a, "Q8").0, 19);
    let c = a.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    let mut named: Vec<&str> = c.unpaired.iter().map(|u| u.key.as_str()).collect();
    named.sort();
    altered.sort();
    assert_eq!(named, altered);
    assert!(c
        .unpaired
        .iter()
        .all(|u| u.reason == UnpairedReason::PromptDiffers));

    let queue = app
        .review_queue(
            sid,
            kvgate_app::review::ReviewFilter {
                agreeing_sample: 100,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(queue.pairs.len(), 19, "every pair, no other");
    assert!(queue.pairs.iter().all(|p| !altered.contains(&p.item_id)));
}
