//! Service-layer tests against real SQLite files.

mod analysis;
mod answer_server;
mod contract;
mod files;
mod harness;
mod imports;
mod interventions;
mod load_series;
mod manifests;
mod packet;
mod pairs;
mod progress;
mod review;
mod runs;
mod signoff;
mod studies;
mod team;
mod withheld;

use kvgate_app::imports::ImportInput;
use kvgate_app::{App, DbLocation};
use kvgate_core::study::NewStudy;
use kvgate_formats::import::ImportFormat;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");

/// The three items whose answers flipped between the recorded Qwen2.5-Coder f16 and q8_0 runs
/// (`fixtures/disagreements`, also the demo's runs), sorted.
pub const QWEN_FLIPPED_ITEMS: [&str; 3] = [
    "evaluation-11-de-short-middle-numeric-present-002",
    "evaluation-11-de-short-middle-numeric-present-003",
    "evaluation-11-en-short-end-literal-present-000",
];

/// The item ids of a study's review queue (default filter), sorted.
pub async fn queued_items(app: &App, study_id: i64) -> Vec<String> {
    let queue = app
        .review_queue(study_id, kvgate_app::review::ReviewFilter::default())
        .await
        .unwrap();
    let mut items: Vec<String> = queue.pairs.into_iter().map(|p| p.item_id).collect();
    items.sort();
    items
}

/// A study with the cells of these manifests (under `fixtures/manifests/`) frozen.
pub async fn study_with_cells(dir: &tempfile::TempDir, manifests: &[&str]) -> (App, i64) {
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let study = app
        .create_study(NewStudy {
            name: "analysis".into(),
            description: String::new(),
        })
        .await
        .unwrap();
    for file in manifests {
        let text = std::fs::read_to_string(format!("{ROOT}fixtures/manifests/{file}")).unwrap();
        freeze_text(&app, study.id, &text).await;
    }
    (app, study.id)
}

/// Saves a manifest text as a draft and freezes it under its own digest; returns its cell.
pub async fn freeze_text(app: &App, study_id: i64, text: &str) -> String {
    let draft = app.save_manifest_draft(study_id, text).await.unwrap();
    let digest = kvgate_core::manifest::Manifest::from_json(text)
        .unwrap()
        .digest()
        .unwrap();
    app.freeze_manifest(study_id, &draft.cell, &digest)
        .await
        .unwrap();
    draft.cell
}

/// A study with the CPU cells B0 and Q8 frozen.
pub async fn study_with_demo_runs(dir: &tempfile::TempDir) -> (App, i64) {
    study_with_cells(
        dir,
        &["smollm2-135m-cpu-b0.json", "smollm2-135m-cpu-q8.json"],
    )
    .await
}

/// Locks the demo's CPU policy (`fixtures/policies/demo-cpu.json`) on a study, as its owner.
pub async fn lock_demo_policy(app: &App, study_id: i64) {
    app.lock_policy(kvgate_app::analysis::LockPolicyInput {
        study_id,
        policy_json: std::fs::read_to_string(format!("{ROOT}fixtures/policies/demo-cpu.json"))
            .unwrap(),
        locked_by: "owner".into(),
    })
    .await
    .unwrap();
}

/// B0 and Q8 frozen, the demo policy locked, then the demo's recorded runs imported.
pub async fn locked_demo_study(dir: &tempfile::TempDir) -> (App, i64) {
    let (app, sid) = study_with_demo_runs(dir).await;
    lock_demo_policy(&app, sid).await;
    import_demo(&app, sid).await;
    (app, sid)
}

/// The demo's recorded llama.cpp runs imported into B0 and Q8.
pub async fn import_demo(app: &App, study_id: i64) {
    for (cell, file) in [("B0", "b0-f16"), ("Q8", "q8-q8_0")] {
        app.import_file(
            ImportInput {
                study_id,
                cell: cell.into(),
                format: ImportFormat::Jsonl,
                path: format!("{ROOT}fixtures/demo/runs/{file}.kvgate-run.jsonl"),
                mapping: None,
                job: None,
                companion: None,
            },
            |_| {},
        )
        .await
        .unwrap_or_else(|e| panic!("{file}: {}", e.message));
    }
}
