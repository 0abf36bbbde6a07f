//! User actions on studies.

use kvgate_core::study::{NewStudy, Provenance, Study};
use kvgate_store::{RunProvenance, Setting};

use crate::{App, AppError};

/// The demo study seeded into the default database on first start: real recorded runs.
pub(crate) const DEMO_STUDY_NAME: &str = "Demo: q8_0 KV cache on llama.cpp (recorded on CPU)";
const DEMO_STUDY_DESCRIPTION: &str = "Recorded demo: llama.cpp on CPU, q8_0 KV as an 8-bit \
stand-in (not FP8, not a GPU measurement). Real runs of SmolLM2-135M-Instruct by KV Gate: B0 = f16 KV, \
Q8 = q8_0 KV, the same 24 items of the synthetic fixture corpus (test-2k preset, seed 7) sent to \
both, every response validated, the servers' startup logs kept as compatibility evidence. \
Recorded with scripts/record-demo.sh on a 2-core CPU shared with other work, both cells at once: \
its latencies show the shape of the data, not a benchmark. The run files are fixtures/demo/runs/.";

/// The demo's frozen manifests and recorded runs, shipped inside the binary.
const DEMO_MANIFESTS: [&str; 2] = [
    include_str!("../../../fixtures/manifests/smollm2-135m-cpu-b0.json"),
    include_str!("../../../fixtures/manifests/smollm2-135m-cpu-q8.json"),
];
/// The demo's acceptance policy, locked when the demo is seeded, before its runs are imported.
const DEMO_POLICY: &str = include_str!("../../../fixtures/policies/demo-cpu.json");
const DEMO_RUNS: [(&str, &str); 2] = [
    (
        "fixtures/demo/runs/b0-f16.kvgate-run.jsonl",
        include_str!("../../../fixtures/demo/runs/b0-f16.kvgate-run.jsonl"),
    ),
    (
        "fixtures/demo/runs/q8-q8_0.kvgate-run.jsonl",
        include_str!("../../../fixtures/demo/runs/q8-q8_0.kvgate-run.jsonl"),
    ),
];

impl App {
    /// Creates a study from user input.
    pub async fn create_study(&self, input: NewStudy) -> Result<Study, AppError> {
        let input = input.validate()?;
        Ok(self.store.insert_study(&input, Provenance::User).await?)
    }

    /// Every study in the workspace, oldest first.
    pub async fn list_studies(&self) -> Result<Vec<Study>, AppError> {
        Ok(self.store.list_studies().await?)
    }

    /// Opens a study by id and remembers it, so the next start reopens it.
    pub async fn open_study(&self, id: i64) -> Result<Study, AppError> {
        let study = self
            .store
            .study(id)
            .await?
            .ok_or_else(|| AppError::not_found(format!("no study with id {id}")))?;
        self.store
            .set_setting(Setting::LastOpenedStudy, &id.to_string())
            .await?;
        Ok(study)
    }

    /// The study opened last, if it still exists.
    pub async fn last_opened_study(&self) -> Result<Option<Study>, AppError> {
        let Some(value) = self.store.setting(Setting::LastOpenedStudy).await? else {
            return Ok(None);
        };
        let Ok(id) = value.parse::<i64>() else {
            return Ok(None);
        };
        Ok(self.store.study(id).await?)
    }

    /// The study with this name (case-insensitive), as the CLI's `--study NAME` resolves it.
    pub async fn study_by_name(&self, name: &str) -> Result<Study, AppError> {
        self.store
            .study_by_name(name.trim())
            .await?
            .ok_or_else(|| AppError::not_found(format!("no study named {:?}", name.trim())))
    }

    /// Seeds the recorded demo study once per database: its two frozen manifests and the two
    /// recorded runs, each run checked against its manifest digest on import.
    pub(crate) async fn seed_demo_once(&self) -> Result<(), AppError> {
        if self.store.setting(Setting::DemoSeeded).await?.is_some() {
            return Ok(());
        }
        if self.store.study_by_name(DEMO_STUDY_NAME).await?.is_none() {
            let demo = NewStudy {
                name: DEMO_STUDY_NAME.into(),
                description: DEMO_STUDY_DESCRIPTION.into(),
            };
            let study = self
                .store
                .insert_study(&demo, Provenance::RecordedDemo)
                .await?;
            for text in DEMO_MANIFESTS {
                let draft = self.save_manifest_draft(study.id, text).await?;
                let digest = crate::manifests::parse_valid_manifest(text, "demo manifest")?
                    .digest()
                    .map_err(|e| AppError::new(crate::ErrorCode::Internal, e.to_string()))?;
                self.freeze_manifest(study.id, &draft.cell, &digest).await?;
            }
            self.lock_policy(crate::analysis::LockPolicyInput {
                study_id: study.id,
                policy_json: DEMO_POLICY.into(),
                locked_by: "KV Gate demo seed".into(),
            })
            .await?;
            for (name, text) in DEMO_RUNS {
                self.import_run_file(study.id, name, text, RunProvenance::Recorded)
                    .await?;
            }
        }
        self.store.set_setting(Setting::DemoSeeded, "1").await?;
        Ok(())
    }
}
