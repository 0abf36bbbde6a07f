//! User actions on studies.

use std::collections::BTreeSet;

use kvgate_core::study::{NewStudy, ProgressCounts, Provenance, Study, StudyProgress};
use kvgate_store::{RunProvenance, Setting};

use crate::manifests::ManifestStatus;
use crate::{App, AppError, ErrorCode};
use kvgate_core::checklist::SignatureState;

/// The demo study seeded into the default database on first start: real recorded runs.
pub(crate) const DEMO_STUDY_NAME: &str = "Demo: q8_0 KV cache on llama.cpp (recorded on CPU)";
const DEMO_STUDY_DESCRIPTION: &str = "Recorded demo: llama.cpp on CPU, q8_0 KV as an 8-bit \
stand-in (not FP8, not a GPU measurement). Real runs of Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) by KV \
Gate, greedy decoding: B0 = f16 KV, Q8 = q8_0 KV, the same 72 short items of the synthetic fixture \
corpus (test-2k preset, seed 11) sent to both, every response validated, the servers' startup logs \
kept as compatibility evidence. Three answers flipped from the KV precision alone: they wait in the \
Review queue. The set holds no long-context item, so the long-context floor has no evidence. The \
policy's floors are the demo's, set for a 0.5B model before the runs were imported. Recorded with \
scripts/record-demo.sh on a 2-core CPU shared with other work: its latencies show the shape of the \
data, not a benchmark. The run files are fixtures/disagreements/runs/. An offered-load sweep of both \
cells (0.02 and 0.08 requests/s, two runs each, the short present items, open-loop Poisson arrivals, \
recorded with scripts/record-sweep.sh) gives each cell its operating envelope on the Results screen: \
twelve requests at a point are too few for the goodput gate to decide. Its run files are \
fixtures/sweep/runs/.";

/// The demo's frozen manifests and recorded runs, shipped inside the binary.
const DEMO_MANIFESTS: [&str; 2] = [
    include_str!("../../../fixtures/manifests/qwen25-coder-05b-cpu-b0.json"),
    include_str!("../../../fixtures/manifests/qwen25-coder-05b-cpu-q8.json"),
];
/// The demo's acceptance policy, locked when the demo is seeded, before its runs are imported.
const DEMO_POLICY: &str = include_str!("../../../fixtures/policies/demo-qwen-cpu.json");
/// A recorded run file shipped in the binary, with the path it is named by on import.
macro_rules! demo_run {
    ($path:literal) => {
        ($path, include_str!(concat!("../../../", $path)))
    };
}
/// The two quality passes with the real disagreements, then the offered-load sweep.
const DEMO_RUNS: [(&str, &str); 10] = [
    demo_run!("fixtures/disagreements/runs/qwen-b0-f16.kvgate-run.jsonl"),
    demo_run!("fixtures/disagreements/runs/qwen-q8-q8_0.kvgate-run.jsonl"),
    demo_run!("fixtures/sweep/runs/b0-0.02ps-r1.kvgate-run.jsonl"),
    demo_run!("fixtures/sweep/runs/b0-0.02ps-r2.kvgate-run.jsonl"),
    demo_run!("fixtures/sweep/runs/b0-0.08ps-r1.kvgate-run.jsonl"),
    demo_run!("fixtures/sweep/runs/b0-0.08ps-r2.kvgate-run.jsonl"),
    demo_run!("fixtures/sweep/runs/q8-0.02ps-r1.kvgate-run.jsonl"),
    demo_run!("fixtures/sweep/runs/q8-0.02ps-r2.kvgate-run.jsonl"),
    demo_run!("fixtures/sweep/runs/q8-0.08ps-r1.kvgate-run.jsonl"),
    demo_run!("fixtures/sweep/runs/q8-0.08ps-r2.kvgate-run.jsonl"),
];

/// The second recorded demo study: the long set, real paired results with long-context strata.
pub(crate) const LONG_DEMO_STUDY_NAME: &str =
    "Demo: long context, q8_0 and q4_0 KV at 4k (recorded on CPU)";
const LONG_DEMO_STUDY_DESCRIPTION: &str = "Recorded demo, the long set: llama.cpp on CPU, \
Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) at a 4,096-token context, B0 = f16 KV against two candidates: \
Q8 = q8_0 KV (an 8-bit integer stand-in for FP8) and Q4 = q4_0 KV (4-bit, a stronger perturbation); \
neither is FP8, and this is not a GPU measurement. The same 48 items of the synthetic 4k-preset \
corpus (seed 21; prompts rendered with Qwen's own chat template and counted with its tokenizer: \
short up to 1,023 tokens, medium to 2,047, long to 3,583) sent to all three by KV Gate, greedy \
decoding, every response validated, the servers' startup logs kept as compatibility evidence. Recorded with scripts/record-long.sh in parts of eight items that resume \
after an interruption, on a 2-core CPU shared with other work: its latencies are not a benchmark. \
The run files are fixtures/long/runs/.";

/// The long set's frozen manifests and recorded parts, shipped inside the binary.
const LONG_DEMO_MANIFESTS: [&str; 3] = [
    include_str!("../../../fixtures/manifests/qwen25-coder-05b-cpu-4k-b0.json"),
    include_str!("../../../fixtures/manifests/qwen25-coder-05b-cpu-4k-q8.json"),
    include_str!("../../../fixtures/manifests/qwen25-coder-05b-cpu-4k-q4.json"),
];

/// Each cell's six recorded parts of eight items.
const LONG_DEMO_RUNS: [(&str, &str); 18] = [
    demo_run!("fixtures/long/runs/b0-f16-part01.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/b0-f16-part02.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/b0-f16-part03.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/b0-f16-part04.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/b0-f16-part05.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/b0-f16-part06.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/q4-q4_0-part01.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/q4-q4_0-part02.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/q4-q4_0-part03.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/q4-q4_0-part04.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/q4-q4_0-part05.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/q4-q4_0-part06.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/q8-q8_0-part01.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/q8-q8_0-part02.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/q8-q8_0-part03.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/q8-q8_0-part04.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/q8-q8_0-part05.kvgate-run.jsonl"),
    demo_run!("fixtures/long/runs/q8-q8_0-part06.kvgate-run.jsonl"),
];

/// One recorded demo study: its name, description, manifests, policy and runs.
struct DemoStudy {
    name: &'static str,
    description: &'static str,
    manifests: &'static [&'static str],
    runs: &'static [(&'static str, &'static str)],
}

const MAIN_DEMO: DemoStudy = DemoStudy {
    name: DEMO_STUDY_NAME,
    description: DEMO_STUDY_DESCRIPTION,
    manifests: &DEMO_MANIFESTS,
    runs: &DEMO_RUNS,
};

const LONG_DEMO: DemoStudy = DemoStudy {
    name: LONG_DEMO_STUDY_NAME,
    description: LONG_DEMO_STUDY_DESCRIPTION,
    manifests: &LONG_DEMO_MANIFESTS,
    runs: &LONG_DEMO_RUNS,
};

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
        // Written when it changes, as the window's own write: the window shows the study it
        // opened, so the watch does not report it.
        let value = id.to_string();
        if self
            .store
            .setting(Setting::LastOpenedStudy)
            .await?
            .as_deref()
            != Some(value.as_str())
        {
            self.own_write(async {
                Ok(self
                    .store
                    .set_setting(Setting::LastOpenedStudy, &value)
                    .await?)
            })
            .await?;
        }
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
            self.seed_demo(&MAIN_DEMO).await?;
        }
        if self
            .store
            .study_by_name(LONG_DEMO_STUDY_NAME)
            .await?
            .is_none()
        {
            self.seed_demo(&LONG_DEMO).await?;
        }
        self.store.set_setting(Setting::DemoSeeded, "1").await?;
        Ok(())
    }

    /// Opens the recorded demo study of this database, seeding it first when the database has
    /// none (any database, not only the default one): the "open the demo" of an empty workbench.
    /// A demo already there is opened as it is, even renamed; a study of the user's that holds
    /// the demo's name is never replaced (conflict).
    pub async fn open_demo(&self) -> Result<Study, AppError> {
        let existing = self
            .store
            .list_studies()
            .await?
            .into_iter()
            .find(|s| s.provenance == Provenance::RecordedDemo);
        let study = match existing {
            Some(study) => study,
            None => {
                if let Some(taken) = self.store.study_by_name(DEMO_STUDY_NAME).await? {
                    return Err(AppError::new(
                        ErrorCode::Conflict,
                        format!(
                            "the demo cannot be added here: your study {:?} (id {}) already has the demo's name; open the demo in another database (--db)",
                            taken.name, taken.id
                        ),
                    ));
                }
                let study = self.seed_demo(&MAIN_DEMO).await?;
                self.store.set_setting(Setting::DemoSeeded, "1").await?;
                study
            }
        };
        // The long set beside it, once, where no study holds its name.
        if self
            .store
            .study_by_name(LONG_DEMO_STUDY_NAME)
            .await?
            .is_none()
        {
            self.seed_demo(&LONG_DEMO).await?;
        }
        self.open_study(study.id).await
    }

    async fn seed_demo(&self, seed: &DemoStudy) -> Result<Study, AppError> {
        let demo = NewStudy {
            name: seed.name.into(),
            description: seed.description.into(),
        };
        let study = self
            .store
            .insert_study(&demo, Provenance::RecordedDemo)
            .await?;
        for &text in seed.manifests {
            let draft = self.save_manifest_draft(study.id, text).await?;
            let digest = crate::manifests::parse_valid_manifest(text, "demo manifest")?
                .digest()
                .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))?;
            self.freeze_manifest(study.id, &draft.cell, &digest).await?;
        }
        self.lock_policy(crate::analysis::LockPolicyInput {
            study_id: study.id,
            policy_json: DEMO_POLICY.into(),
            locked_by: "KV Gate demo seed".into(),
        })
        .await?;
        for &(name, text) in seed.runs {
            self.import_run_file(study.id, name, text, RunProvenance::Recorded)
                .await?;
        }
        Ok(study)
    }

    /// Where a study stands and its next step, for the Studies screen. Reads only: the counts
    /// come from the manifests, the policy, the runs, the review queue and, once a policy is
    /// locked, the checklist (signatures count only while their evidence is unchanged).
    pub async fn study_progress(&self, study_id: i64) -> Result<StudyProgress, AppError> {
        self.store
            .study(study_id)
            .await?
            .ok_or_else(|| AppError::not_found(format!("no study with id {study_id}")))?;
        let manifests = self.list_manifests(study_id).await?;
        let frozen: BTreeSet<&str> = manifests
            .iter()
            .filter(|m| m.status == ManifestStatus::Frozen)
            .map(|m| m.cell.as_str())
            .collect();
        let with_results = self.store.cells_with_results(study_id).await?;
        let policy = self.store.policy_versions(study_id).await?;
        let policy_version = policy
            .last()
            .map(|p| u32::try_from(p.version).unwrap_or(u32::MAX));
        // Disagreements are results: absent, not 0, until the policy is locked.
        let queue = match kvgate_core::policy::results_withheld(policy.len()) {
            None => Some(self.review_counts(study_id).await?),
            Some(_) => None,
        };
        let (checks_signed, candidates_decided) = if policy_version.is_some() {
            let list = self.checklist(study_id).await?;
            let signed = list
                .checks
                .iter()
                .filter(|c| c.state == SignatureState::Signed)
                .count();
            let decided: BTreeSet<&str> = list
                .decisions
                .iter()
                .map(|d| d.event.subject.as_str())
                .filter(|c| list.candidates.iter().any(|k| k == c))
                .collect();
            (signed, decided.len())
        } else {
            (0, 0)
        };
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Ok(ProgressCounts {
            baseline_frozen: frozen.contains("B0"),
            candidates_frozen: count(frozen.iter().filter(|c| **c != "B0").count()),
            drafts: count(manifests.len() - frozen.len()),
            policy_version,
            cells_with_runs: count(
                with_results
                    .iter()
                    .filter(|c| frozen.contains(c.as_str()))
                    .count(),
            ),
            baseline_has_runs: with_results.iter().any(|c| c == "B0"),
            disagreements: queue.map(|q| count(q.disagreements as usize)),
            disagreements_labelled: queue.map(|q| count(q.labelled as usize)),
            checks_signed: count(checks_signed),
            candidates_decided: count(candidates_decided),
        }
        .into_progress(study_id))
    }
}
