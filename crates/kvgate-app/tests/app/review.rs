//! The blind review queue over real quality runs (an answering server: B0 answers every item,
//! the candidate every other one), labels in the audit chain, and edits made outside the app.

use std::collections::HashMap;

use kvgate_app::fixtures::open_corpus;
use kvgate_app::review::{LabelInput, ReviewFilter};
use kvgate_app::runs::QualityRunInput;
use kvgate_app::{App, DbLocation, ErrorCode};
use kvgate_core::review::{AdjudicationLabel, ReviewLabel};
use kvgate_core::study::NewStudy;

use crate::{answer_server, queued_items, QWEN_FLIPPED_ITEMS};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");

fn path(rel: &str) -> String {
    format!("{ROOT}{rel}")
}

fn quality(study_id: i64, cell: &str, base_url: String, log: &str) -> QualityRunInput {
    QualityRunInput {
        study_id,
        cell: cell.into(),
        base_url,
        model: None,
        corpus_dir: path("fixtures/demo/corpus"),
        repeats: Some(1),
        seed: Some(3),
        limit: Some(12),
        only: None,
        resume: None,
        at_most: None,
        warmup: Some(0),
        concurrency: Some(2),
        startup_log: Some(path(log)),
        scrape_interval_ms: None,
        request_deadline_s: Some(10.0),
    }
}

/// Approved answers for every item (`all`) or for the items at even positions of the corpus.
fn answers(all: bool) -> (HashMap<String, String>, HashMap<String, bool>) {
    let corpus = open_corpus(std::path::Path::new(&path("fixtures/demo/corpus"))).unwrap();
    let (mut answers, mut answered) = (HashMap::new(), HashMap::new());
    for (i, item) in corpus.items.iter().enumerate() {
        let good = all || i % 2 == 0;
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

async fn study_with_disagreements(dir: &tempfile::TempDir) -> (App, i64, HashMap<String, bool>) {
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let study = app
        .create_study(NewStudy {
            name: "review".into(),
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
    // Floors before results: the queue is read only under a locked policy.
    crate::lock_demo_policy(&app, study.id).await;
    let (all, _) = answers(true);
    let (some, answered) = answers(false);
    let b0 = answer_server::start(all).await;
    let q8 = answer_server::start(some).await;
    app.run_quality(
        &quality(
            study.id,
            "B0",
            b0.base(),
            "fixtures/evidence/llamacpp-f16-startup.log",
        ),
        |_| {},
    )
    .await
    .unwrap();
    app.run_quality(
        &quality(
            study.id,
            "Q8",
            q8.base(),
            "fixtures/evidence/llamacpp-q8_0-startup.log",
        ),
        |_| {},
    )
    .await
    .unwrap();
    (app, study.id, answered)
}

#[tokio::test]
async fn the_queue_is_blind_labels_are_audited_and_outside_edits_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid, answered) = study_with_disagreements(&dir).await;
    let queue = app
        .review_queue(sid, ReviewFilter::default())
        .await
        .unwrap();
    let expected: Vec<String> = {
        let mut ids: Vec<String> = queue.pairs.iter().map(|p| p.item_id.clone()).collect();
        ids.sort();
        ids
    };
    // Exactly the items the candidate's server did not answer are disagreements.
    assert!(!queue.pairs.is_empty());
    assert!(
        queue
            .pairs
            .iter()
            .all(|p| p.disagreement && !answered[&p.item_id]),
        "{expected:?}"
    );
    assert_eq!(queue.disagreements["Q8"], queue.pairs.len() as u64);
    assert_eq!(queue.seed.len(), 64);
    for p in &queue.pairs {
        assert_eq!(p.candidate, "Q8");
        assert!(p.pair_id.starts_with(&format!("{sid}:Q8/")));
        // One side accepted, one rejected; which is the candidate is not said before a label.
        assert_ne!(p.a.accepted, p.b.accepted);
        assert_eq!(p.candidate_is_a, None);
        let item = p
            .item
            .as_ref()
            .expect("the corpus is found by its recorded digest");
        assert_eq!(item.id, p.item_id);
    }
    // Both orders occur over enough pairs, and the order is stable.
    let again = app
        .review_queue(sid, ReviewFilter::default())
        .await
        .unwrap();
    assert_eq!(again.seed, queue.seed);
    let a_accepted: Vec<bool> = queue.pairs.iter().map(|p| p.a.accepted).collect();
    assert_eq!(
        a_accepted,
        again.pairs.iter().map(|p| p.a.accepted).collect::<Vec<_>>()
    );
    // Agreeing pairs only on request.
    let with = app
        .review_queue(
            sid,
            ReviewFilter {
                agreeing_sample: 2,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(with.pairs.len(), queue.pairs.len() + 2);
    assert!(with
        .pairs
        .iter()
        .filter(|p| !p.disagreement)
        .all(|p| p.a.accepted == p.b.accepted));

    // A role label cannot be given blind: it names the candidate, which is not yet revealed.
    let err = app
        .label_pair(LabelInput {
            pair_id: queue.pairs[0].pair_id.clone(),
            label: ReviewLabel::CandidateRegression,
            note: String::new(),
            by: "reviewer one".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput, "{}", err.message);
    assert!(err.message.contains("label the sides"), "{}", err.message);
    assert!(app.audit_events(sid).await.unwrap().is_empty());

    // Label three pairs blind, by their sides: the side the validator rejected is the wrong one.
    // Each label reveals the sides and maps to a candidate regression, consistent with the
    // verdicts, whichever side the candidate was shown on.
    let mut seqs = Vec::new();
    for p in queue.pairs.iter().take(3) {
        let side = if p.a.accepted {
            ReviewLabel::ACorrectBWrong
        } else {
            ReviewLabel::BCorrectAWrong
        };
        let out = app
            .label_pair(LabelInput {
                pair_id: p.pair_id.clone(),
                label: side,
                note: "wrong value".into(),
                by: "reviewer one".into(),
            })
            .await
            .unwrap();
        let candidate_side = if out.candidate_is_a { &p.a } else { &p.b };
        assert!(
            !candidate_side.accepted,
            "the candidate is the side its server did not answer"
        );
        assert_eq!(out.label, AdjudicationLabel::CandidateRegression);
        assert!(!out.unblinded);
        assert_eq!(out.event.payload["label"], "candidate_regression");
        assert_eq!(out.event.payload["given"], side.as_str());
        assert_eq!(out.event.payload["unblinded"], false);
        assert_eq!(out.event.previous, None);
        seqs.push(out.event.seq);
    }
    assert_eq!(seqs, [1, 2, 3]);
    // Both sides shown in both orders among the labelled pairs would be luck; the mapping
    // itself is proven per order in kvgate-core. Here: a relabel after the reveal records what
    // it replaced, and is unblinded, even with a side label.
    let relabel = app
        .label_pair(LabelInput {
            pair_id: queue.pairs[0].pair_id.clone(),
            label: ReviewLabel::AmbiguousItem,
            note: "two assets match".into(),
            by: "reviewer two".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        relabel.event.previous.as_ref().unwrap()["label"],
        "candidate_regression"
    );
    assert!(relabel.unblinded);
    assert_eq!(relabel.event.payload["unblinded"], true);
    let listed = app
        .review_queue(sid, ReviewFilter::default())
        .await
        .unwrap();
    assert_eq!(listed.labelled, 3);
    assert_eq!(
        listed.pairs[0].label,
        Some(AdjudicationLabel::AmbiguousItem)
    );
    assert!(listed.pairs[0].unblinded, "shown on the pair");
    assert!(!listed.pairs[1].unblinded);
    assert!(
        listed.pairs[0].candidate_is_a.is_some(),
        "revealed once labelled"
    );

    let report = app.verify_audit(sid).await.unwrap();
    assert!(report.intact, "{report:?}");
    assert_eq!(report.events, 4);

    // Bad input changes nothing.
    let err = app
        .label_pair(LabelInput {
            pair_id: format!("{sid}:Q8/no-such-item"),
            label: ReviewLabel::BothWrong,
            note: String::new(),
            by: "reviewer".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound, "{}", err.message);
    let err = app
        .label_pair(LabelInput {
            pair_id: "Q8/x".into(),
            label: ReviewLabel::BothWrong,
            note: String::new(),
            by: "reviewer".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert_eq!(app.audit_events(sid).await.unwrap().len(), 4);

    // An edit of a label row with raw SQL is named.
    let pool = app.store().pool();
    let edited = &queue.pairs[1].pair_id;
    sqlx::query("UPDATE adjudications SET label = 'baseline_error' WHERE pair_id = ?")
        .bind(edited)
        .execute(pool)
        .await
        .unwrap();
    let report = app.verify_audit(sid).await.unwrap();
    assert!(!report.intact);
    assert_eq!(report.chain_break, None);
    assert_eq!(report.tampered.len(), 1, "{report:?}");
    assert!(
        report.tampered[0].contains(edited.as_str())
            && report.tampered[0].contains("edited outside")
    );
    // So is a relabel made after the reveal passed off as blind.
    sqlx::query("UPDATE adjudications SET unblinded = 0 WHERE pair_id = ?")
        .bind(&queue.pairs[0].pair_id)
        .execute(pool)
        .await
        .unwrap();
    let report = app.verify_audit(sid).await.unwrap();
    assert_eq!(report.tampered.len(), 2, "{report:?}");
    assert!(
        report
            .tampered
            .iter()
            .any(|t| t.contains(&queue.pairs[0].pair_id)
                && t.contains("the audit chain says after the reveal")),
        "{report:?}"
    );

    // The chain refuses edits; one forced past the trigger breaks the chain at that event.
    let e = sqlx::query("UPDATE audit_events SET actor = 'mallory' WHERE seq = 2")
        .execute(pool)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("append-only"), "{e}");
    sqlx::query("DROP TRIGGER audit_events_no_update")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("UPDATE audit_events SET actor = 'mallory' WHERE seq = 2")
        .execute(pool)
        .await
        .unwrap();
    let report = app.verify_audit(sid).await.unwrap();
    let b = report.chain_break.expect("the chain is broken");
    assert_eq!(b.seq, 2);
    assert!(b.reason.contains("edited"), "{}", b.reason);
}

/// The recorded llama.cpp runs with real disagreements (fixtures/disagreements): imported whole
/// (their header lines are longer than 4 KiB), the queue is exactly the three flipped items.
#[tokio::test]
async fn real_llamacpp_disagreements_are_the_queue() {
    std::env::set_current_dir(ROOT).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (app, study_id) = crate::study_with_cells(
        &dir,
        &[
            "qwen25-coder-05b-cpu-b0.json",
            "qwen25-coder-05b-cpu-q8.json",
        ],
    )
    .await;
    crate::lock_demo_policy(&app, study_id).await;
    for (cell, file) in [("B0", "qwen-b0-f16"), ("Q8", "qwen-q8-q8_0")] {
        app.import_file(
            kvgate_app::imports::ImportInput {
                study_id,
                cell: cell.into(),
                format: kvgate_formats::import::ImportFormat::Jsonl,
                path: format!("{ROOT}fixtures/disagreements/runs/{file}.kvgate-run.jsonl"),
                mapping: None,
                job: None,
                companion: None,
            },
            |_| {},
        )
        .await
        .unwrap_or_else(|e| panic!("{file}: {}", e.message));
    }
    let queue = app
        .review_queue(study_id, ReviewFilter::default())
        .await
        .unwrap();
    assert_eq!(queue.disagreements["Q8"], 3);
    assert_eq!(queue.disagreements_total, 3, "every candidate together");
    assert_eq!(queued_items(&app, study_id).await, QWEN_FLIPPED_ITEMS);
    let value = queue
        .pairs
        .iter()
        .find(|p| p.item_id.ends_with("numeric-present-003"))
        .unwrap();
    assert!(value.item.is_some(), "{:?}", value.item_note);
    let outputs = [value.a.output_text.as_str(), value.b.output_text.as_str()];
    assert!(outputs
        .iter()
        .any(|o| o.contains("\"nominal_torque\": 0.22")));
    assert!(outputs
        .iter()
        .any(|o| o.contains("\"nominal_torque\": 0.17")));
    assert_eq!(
        [value.a.accepted, value.b.accepted]
            .iter()
            .filter(|a| **a)
            .count(),
        1
    );
}

/// The window lists the queue's rows (no answer text) and reads the pair it shows alone: the
/// rows are the whole queue's pairs, in the same blind order, with the same labels and reveals,
/// under every filter; each pair read alone is the queue's pair; a pair that is not one is not
/// found, named.
/// The CLI's list reads the sides of many pairs at once: each pair is the one read alone,
/// whatever the number read at a time, and comes from each cell's first run even when a later
/// run of the cell answered otherwise.
#[tokio::test]
async fn pairs_read_many_at_once_are_the_pairs_read_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid, _) = study_with_disagreements(&dir).await;
    let first: HashMap<String, i64> = app
        .store()
        .list_runs(sid)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.cell, r.id))
        .collect();
    // A second run in each cell, every answer right.
    let (all, _) = answers(true);
    let server = answer_server::start(all).await;
    for (cell, log) in [
        ("B0", "fixtures/evidence/llamacpp-f16-startup.log"),
        ("Q8", "fixtures/evidence/llamacpp-q8_0-startup.log"),
    ] {
        app.run_quality(&quality(sid, cell, server.base(), log), |_| {})
            .await
            .unwrap();
    }
    let index = app
        .review_index(
            sid,
            ReviewFilter {
                agreeing_sample: 1000,
                ..ReviewFilter::default()
            },
        )
        .await
        .unwrap();
    assert!(index.rows.iter().any(|r| r.disagreement));
    assert!(index.rows.len() > 6, "{}", index.rows.len());
    for per_read in [1, 2, 5, 500] {
        let mut pairs = Vec::new();
        app.for_each_review_pair_read_by(&index, per_read, |p| {
            pairs.push(p);
            Ok(())
        })
        .await
        .unwrap();
        assert_eq!(pairs.len(), index.rows.len(), "{per_read}");
        for (p, r) in pairs.iter().zip(&index.rows) {
            assert_eq!(p.pair_id, r.pair_id, "{per_read}");
            assert_eq!(&app.review_pair(&p.pair_id).await.unwrap(), p, "{per_read}");
            for side in [&p.a, &p.b] {
                assert!(
                    side.run_id == first["B0"] || side.run_id == first["Q8"],
                    "{per_read}: {} from run {}",
                    p.pair_id,
                    side.run_id
                );
            }
        }
    }
}

#[tokio::test]
async fn the_review_list_is_the_queue_without_answers_and_each_pair_reads_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid, _) = study_with_disagreements(&dir).await;
    let same = |rows: &[kvgate_app::review::ReviewRow],
                pairs: &[kvgate_app::review::ReviewPair]| {
        assert_eq!(rows.len(), pairs.len());
        for (r, p) in rows.iter().zip(pairs) {
            assert_eq!(
                (
                    &r.pair_id,
                    &r.candidate,
                    &r.item_id,
                    &r.strata,
                    r.disagreement
                ),
                (
                    &p.pair_id,
                    &p.candidate,
                    &p.item_id,
                    &p.strata,
                    p.disagreement
                )
            );
            assert_eq!(
                (&r.label, &r.note, r.candidate_is_a, r.unblinded),
                (&p.label, &p.note, p.candidate_is_a, p.unblinded)
            );
        }
    };
    let queue = app
        .review_queue(sid, ReviewFilter::default())
        .await
        .unwrap();
    assert!(!queue.pairs.is_empty());
    // A reason some rejected side gave, as the filter names it.
    let rejected = [&queue.pairs[0].a, &queue.pairs[0].b]
        .into_iter()
        .find(|s| !s.accepted)
        .expect("a disagreement has a rejected side");
    let reason = serde_json::to_value(rejected.verdict.reasons[0]).unwrap();
    let filters = [
        ReviewFilter::default(),
        ReviewFilter {
            agreeing_sample: 3,
            ..ReviewFilter::default()
        },
        ReviewFilter {
            candidate: Some("Q8".into()),
            reason: Some(reason.as_str().unwrap().to_owned()),
            ..ReviewFilter::default()
        },
        ReviewFilter {
            reason: Some("factor_of_ten".into()),
            ..ReviewFilter::default()
        },
    ];
    // One pair labelled: its row and its read both carry the label and the reveal.
    let first = queue.pairs[0].pair_id.clone();
    app.label_pair(LabelInput {
        pair_id: first.clone(),
        label: ReviewLabel::BothWrong,
        note: "neither".into(),
        by: "rev".into(),
    })
    .await
    .unwrap();
    for filter in filters {
        let index = app.review_index(sid, filter.clone()).await.unwrap();
        let queue = app.review_queue(sid, filter.clone()).await.unwrap();
        assert_eq!(
            (
                &index.seed,
                &index.disagreements,
                index.disagreements_total,
                index.labelled
            ),
            (
                &queue.seed,
                &queue.disagreements,
                queue.disagreements_total,
                queue.labelled
            ),
            "{filter:?}"
        );
        same(&index.rows, &queue.pairs);
        // The window's form gives back the same rows, in fewer bytes.
        let columns = kvgate_app::review::ReviewIndexColumns::from(index.clone());
        assert_eq!(columns.rows(), index.rows, "{filter:?}");
        let wire = serde_json::to_vec(&columns).unwrap().len();
        let whole = serde_json::to_vec(&index).unwrap().len();
        assert!(
            index.rows.len() < 3 || wire < whole,
            "{filter:?}: {wire} bytes against {whole}"
        );
        for p in &queue.pairs {
            assert_eq!(&app.review_pair(&p.pair_id).await.unwrap(), p);
        }
    }
    // The overview's counts are the list's disagreements and its labelled ones; a label on an
    // agreeing pair is not a labelled disagreement.
    let counted = |index: &kvgate_app::review::ReviewIndex| kvgate_app::review::ReviewCounts {
        disagreements: index.rows.iter().filter(|r| r.disagreement).count() as u64,
        labelled: index
            .rows
            .iter()
            .filter(|r| r.disagreement && r.label.is_some())
            .count() as u64,
    };
    let with_agreeing = ReviewFilter {
        agreeing_sample: 3,
        ..ReviewFilter::default()
    };
    let index = app.review_index(sid, with_agreeing.clone()).await.unwrap();
    let counts = app.review_counts(sid).await.unwrap();
    assert_eq!(counts, counted(&index));
    assert_eq!(counts.labelled, 1);
    assert_eq!(counts.disagreements, index.disagreements_total);
    let agreeing = index
        .rows
        .iter()
        .find(|r| !r.disagreement)
        .expect("an agreeing pair in the sample");
    app.label_pair(LabelInput {
        pair_id: agreeing.pair_id.clone(),
        label: ReviewLabel::BothAcceptable,
        note: String::new(),
        by: "rev".into(),
    })
    .await
    .unwrap();
    let index = app.review_index(sid, with_agreeing).await.unwrap();
    assert_eq!(index.labelled, 2);
    assert_eq!(app.review_counts(sid).await.unwrap(), counted(&index));
    assert_eq!(app.review_counts(sid).await.unwrap().labelled, 1);

    let labelled = app.review_pair(&first).await.unwrap();
    assert_eq!(labelled.label, Some(AdjudicationLabel::BothWrong));
    assert_eq!(labelled.note.as_deref(), Some("neither"));
    assert!(labelled.candidate_is_a.is_some());
    assert!(labelled.item.is_some(), "{:?}", labelled.item_note);

    // Not pairs: the baseline as a candidate, an item nobody judged, a cell without runs, a
    // malformed id, another study.
    let item = &labelled.item_id;
    for (id, code) in [
        (format!("{sid}:B0/{item}"), ErrorCode::NotFound),
        (format!("{sid}:Q8/no-such-item"), ErrorCode::NotFound),
        (format!("{sid}:Q4/{item}"), ErrorCode::NotFound),
        ("Q8/no-study".to_owned(), ErrorCode::InvalidInput),
        (format!("{}:Q8/{item}", sid + 100), ErrorCode::NotFound),
    ] {
        let err = app.review_pair(&id).await.unwrap_err();
        assert_eq!(err.code, code, "{id}: {}", err.message);
    }
}
