//! User actions on the acceptance policy and the analysis: validate, lock and show the policy;
//! analyze a study under its locked policy, and show it with its charts.
//!
//! Floors before results: no result of a study is shown before its policy is locked (the rule is
//! `kvgate_core::policy::results_withheld`). [`App::require_locked_policy`] enforces it for every
//! action that reads results: [`App::analyze`], the run detail's verdicts, the review queue, a
//! label, a run file and the packet refuse with [`ErrorCode::PolicyNotLocked`], and the screens
//! say why.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use kvgate_core::analysis::{analyze, reading_order, AnalysisBody, PairedRow};
use kvgate_core::policy::{lock_marks, results_withheld, LockedPolicy, Policy, PolicyProblem};
use kvgate_core::study::Provenance;
use kvgate_store::PolicyRecord;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::charts::{study_charts, StudyCharts};
use crate::{App, AppError, ErrorCode, Problem, ProblemCode};

/// Longest signer name accepted, in characters.
pub const MAX_AUTHOR_CHARS: usize = 120;

/// What locking a policy takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct LockPolicyInput {
    pub study_id: i64,
    /// The policy JSON as authored (schemas/policy.schema.json).
    pub policy_json: String,
    /// Who locks it.
    pub locked_by: String,
}

/// The policy state of a study: every locked version, newest last.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct PolicyStatus {
    pub study_id: i64,
    /// The version in force (the newest), if any.
    pub current: Option<LockedPolicy>,
    pub versions: Vec<LockedPolicy>,
    /// True when any version replaced another after results existed; shown permanently.
    pub changed_after_results: bool,
    /// True when the first version was locked after results existed; shown permanently.
    pub first_lock_after_results: bool,
}

/// The analysis of a study, with the policy and evidence it was computed from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct StudyAnalysis {
    pub study_id: i64,
    pub study_name: String,
    pub provenance: Provenance,
    /// "synthetic" / stand-in label of the study's data, shown with every figure.
    pub provenance_label: String,
    pub policy_version: i64,
    pub policy_sha256: String,
    pub policy_locked_at: String,
    pub policy_locked_by: String,
    pub policy_changed_after_results: bool,
    /// The study's first policy version was locked after results existed.
    #[serde(default)]
    pub policy_first_lock_after_results: bool,
    /// Measured requests read.
    pub measured_requests: u64,
    /// Reviewers' labels on pairs of this study.
    pub adjudicated_labels: u64,
    /// Per candidate, the paired rows recomputed on the blind labels (labelled pairs count as
    /// labelled, ambiguous ones are left out; a pair relabelled after the reveal counts as the
    /// validator judged it), beside the automatic rows; empty without labels.
    pub adjudicated: std::collections::BTreeMap<String, Vec<kvgate_core::analysis::PairedRow>>,
    /// Labels given after the reveal (relabels): counted apart, never in `adjudicated`.
    #[serde(default)]
    pub adjudicated_unblinded_labels: u64,
    /// Per candidate with such labels, the paired rows recomputed on every label, the unblinded
    /// ones included: read beside `adjudicated`, never instead of it.
    #[serde(default)]
    pub adjudicated_unblinded:
        std::collections::BTreeMap<String, Vec<kvgate_core::analysis::PairedRow>>,
    #[serde(flatten)]
    pub body: AnalysisBody,
}

/// What the Results screen shows: the analysis and every chart drawn from it, one snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct StudyResults {
    /// The analysis with each candidate's paired rows in [`reading_order`] (the analysis itself
    /// keeps the order its quality evidence is signed in).
    pub analysis: StudyAnalysis,
    pub charts: StudyCharts,
}

fn in_reading_order(rows: &mut Vec<PairedRow>) {
    let order = reading_order(rows);
    let mut slots: Vec<Option<PairedRow>> = std::mem::take(rows).into_iter().map(Some).collect();
    rows.extend(order.into_iter().filter_map(|i| slots[i].take()));
}

fn problems_message(problems: &[PolicyProblem]) -> String {
    let lines: Vec<String> = problems.iter().map(|p| format!("- {p}")).collect();
    format!("the policy cannot be locked:\n{}", lines.join("\n"))
}

fn locked(record: PolicyRecord) -> Result<LockedPolicy, AppError> {
    let policy: Policy = serde_json::from_str(&record.policy_json).map_err(|e| {
        AppError::storage(format!(
            "policy version {} of study {} cannot be read back: {e}",
            record.version, record.study_id
        ))
    })?;
    Ok(LockedPolicy {
        study_id: record.study_id,
        version: record.version,
        policy,
        sha256: record.sha256,
        locked_at: record.locked_at,
        locked_by: record.locked_by,
        first_lock_after_results: lock_marks(record.version, record.runs_at_lock)
            .first_lock_after_results,
        runs_at_lock: record.runs_at_lock,
        changed_after_results: record.changed_after_results,
    })
}

/// The refusal of an action that would show results before the study's policy is locked. The
/// message begins with the reason's code, so a script reading `kvgate`'s error line can match it.
pub(crate) fn policy_not_locked(study_name: &str, what: &str) -> AppError {
    AppError::new(
        ErrorCode::PolicyNotLocked,
        format!(
            "policy_not_locked: study `{study_name}` has no locked acceptance policy: results \
             stay hidden until the service owner locks one, so {what} (floors come before \
             results; Policy screen, or `kvgate policy lock`)"
        ),
    )
}

impl App {
    /// Whether the study's results are withheld (`kvgate_core::policy::results_withheld`): why,
    /// or `None` once a policy version is locked.
    pub async fn results_withheld(
        &self,
        study_id: i64,
    ) -> Result<Option<kvgate_core::policy::Withheld>, AppError> {
        Ok(results_withheld(
            self.store.policy_versions(study_id).await?.len(),
        ))
    }

    /// The policy in force, or the refusal [`ErrorCode::PolicyNotLocked`] saying `what` is
    /// refused (a clause: "its analysis is not shown"): every action that shows or exports
    /// results asks this first. Reads only.
    pub async fn require_locked_policy(
        &self,
        study_id: i64,
        what: &str,
    ) -> Result<LockedPolicy, AppError> {
        let mut versions = self.store.policy_versions(study_id).await?;
        match (results_withheld(versions.len()), versions.pop()) {
            (None, Some(current)) => locked(current),
            _ => {
                let study =
                    self.store.study(study_id).await?.ok_or_else(|| {
                        AppError::not_found(format!("no study with id {study_id}"))
                    })?;
                Err(policy_not_locked(&study.name, what))
            }
        }
    }

    /// Checks a policy as authored; every problem with its JSON path, empty when it may be locked.
    pub fn check_policy(&self, policy_json: &str) -> Vec<PolicyProblem> {
        match Policy::from_json_text(policy_json) {
            Ok(_) => Vec::new(),
            Err(problems) => problems,
        }
    }

    /// Locks the study's next policy version: canonical JSON, sha256, time and author.
    pub async fn lock_policy(&self, input: LockPolicyInput) -> Result<LockedPolicy, AppError> {
        self.open_study(input.study_id).await?;
        let by = input.locked_by.trim();
        if by.is_empty() || by.chars().count() > MAX_AUTHOR_CHARS {
            return Err(AppError::new(
                ErrorCode::InvalidInput,
                format!(
                    "field `locked_by`: expected a name of 1 to {MAX_AUTHOR_CHARS} characters, found {:?}",
                    input.locked_by
                ),
            ));
        }
        let policy = Policy::from_json_text(&input.policy_json).map_err(|p| {
            AppError::new(ErrorCode::InvalidInput, problems_message(&p)).with_problems(
                p.iter()
                    .map(|p| Problem::new(ProblemCode::Policy, &p.path, &p.expected, &p.found)),
            )
        })?;
        let record = self
            .store
            .lock_policy(
                input.study_id,
                &policy.canonical_json(),
                &policy.sha256(),
                by,
            )
            .await?;
        locked(record)
    }

    /// Every locked policy version of a study.
    pub async fn policy_status(&self, study_id: i64) -> Result<PolicyStatus, AppError> {
        self.open_study(study_id).await?;
        let versions = self
            .store
            .policy_versions(study_id)
            .await?
            .into_iter()
            .map(locked)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PolicyStatus {
            study_id,
            current: versions.last().cloned(),
            changed_after_results: versions.iter().any(|v| v.changed_after_results),
            first_lock_after_results: versions.iter().any(|v| v.first_lock_after_results),
            versions,
        })
    }

    /// The study's analysis with its charts, for the Results screen; refused until a policy is
    /// locked, as [`App::analyze`] is.
    pub async fn results(&self, study_id: i64) -> Result<StudyResults, AppError> {
        let mut analysis = self.analyze(study_id).await?;
        let charts = study_charts(&analysis);
        for cell in &mut analysis.body.cells {
            in_reading_order(&mut cell.paired);
        }
        for rows in analysis
            .adjudicated
            .values_mut()
            .chain(analysis.adjudicated_unblinded.values_mut())
        {
            in_reading_order(rows);
        }
        Ok(StudyResults { analysis, charts })
    }

    /// Analyzes the study under its locked policy; refused until a policy is locked.
    ///
    /// The result is kept per study under the digest of everything it read
    /// ([`kvgate_store::Store::study_revision`], taken before the inputs are loaded, so a change
    /// made while they load only makes the next call compute again): a later call with the same
    /// revision returns it without loading a request; any change to a run, import, manifest,
    /// policy, label or other audit event, by this process or another, computes it again. An
    /// analysis that had to read a corpus folder and could not is never kept (the folder may
    /// appear).
    pub async fn analyze(&self, study_id: i64) -> Result<StudyAnalysis, AppError> {
        let revision = self.store.study_revision(study_id).await?;
        if let Some(kept) = self.analyses.get(study_id, &revision) {
            return Ok(kept);
        }
        let _one_at_a_time = self.analyses.computing.lock().await;
        // Kept by the call this one waited for, unless something changed meanwhile.
        let revision = self.store.study_revision(study_id).await?;
        if let Some(kept) = self.analyses.get(study_id, &revision) {
            return Ok(kept);
        }
        let (analysis, complete) = self.compute_analysis(study_id).await?;
        self.analyses.computed.fetch_add(1, Ordering::Relaxed);
        if complete {
            self.analyses.put(study_id, revision, &analysis);
        }
        Ok(analysis)
    }

    /// How many times this process computed an analysis (a kept one returned is not counted).
    pub fn analyses_computed(&self) -> u64 {
        self.analyses.computed.load(Ordering::Relaxed)
    }

    async fn compute_analysis(&self, study_id: i64) -> Result<(StudyAnalysis, bool), AppError> {
        let study = self.open_study(study_id).await?;
        let status = self.policy_status(study_id).await?;
        let current = self
            .require_locked_policy(study_id, "its analysis is not shown")
            .await?;
        let mut corpus_missing = false;
        let mut corpora = |corpus: &kvgate_store::study_input::CorpusRef| {
            let items = crate::fixtures::corpus_for_digests(corpus);
            corpus_missing |= items.is_err();
            items
        };
        // The cells' KV capacity from their manifests, before the load: read after it, at a
        // million requests, the same few parses took 33 ms, in the allocator reclaiming what
        // the load freed.
        let mut capacities = std::collections::HashMap::new();
        for m in self.store.list_manifests(study_id).await? {
            if m.is_frozen() {
                let capacity = self.manifest_capacity(study_id, &m.cell).await;
                capacities.insert(m.cell, capacity);
            }
        }
        let input = kvgate_store::study_input::load_study(&self.store, study_id, &mut corpora)
            .await
            .map_err(|e| match e {
                kvgate_store::study_input::LoadError::Store(s) => AppError::from(s),
                other => AppError::new(ErrorCode::InvalidInput, other.to_string()),
            })?;
        let mut input = input;
        for cell in &mut input.cells {
            let capacity = match capacities.remove(&cell.cell) {
                Some(found) => found,
                None => self.manifest_capacity(study_id, &cell.cell).await,
            };
            match capacity {
                Ok(m) => {
                    cell.capacity.model_kv_tokens = m.capacity.map(|c| c.positions);
                    cell.capacity.rollback_fit = m.rollback_fit;
                    cell.capacity.model_note = m.rollback_fit_missing;
                }
                Err(e) => cell.capacity.model_note = Some(e.message),
            }
        }
        let measured_requests = input
            .cells
            .iter()
            .flat_map(|c| &c.runs)
            .map(|r| r.requests.len() as u64)
            .sum();
        let body = analyze(&current.policy, &input);
        let labels = self.store.adjudications(study_id).await?;
        type Labels = std::collections::BTreeMap<
            String,
            std::collections::HashMap<String, Option<(bool, bool)>>,
        >;
        // Blind labels alone; and every label, for the candidates with an unblinded one.
        let mut blind: Labels = Default::default();
        let mut all: Labels = Default::default();
        let mut with_unblinded = std::collections::BTreeSet::new();
        for l in &labels {
            let parsed = kvgate_core::review::parse_pair_id(&l.pair_id);
            let label = kvgate_core::review::AdjudicationLabel::parse(&l.label);
            if let (Some((_, cell, item)), Some(label)) = (parsed, label) {
                let acceptance = label.adjudicated_acceptance();
                if l.unblinded {
                    with_unblinded.insert(cell.to_owned());
                } else {
                    blind
                        .entry(cell.to_owned())
                        .or_default()
                        .insert(item.to_owned(), acceptance);
                }
                all.entry(cell.to_owned())
                    .or_default()
                    .insert(item.to_owned(), acceptance);
            }
        }
        let recount = |labels: &Labels| {
            labels
                .iter()
                .map(|(cell, map)| {
                    let rows = kvgate_core::analysis::adjudicated_paired(
                        &current.policy,
                        &input,
                        cell,
                        map,
                    );
                    (cell.clone(), rows)
                })
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        let adjudicated = recount(&blind);
        all.retain(|cell, _| with_unblinded.contains(cell));
        let adjudicated_unblinded = recount(&all);
        let analysis = StudyAnalysis {
            study_id,
            study_name: study.name,
            provenance: study.provenance,
            provenance_label: study.provenance.label().to_owned(),
            policy_version: current.version,
            policy_sha256: current.sha256,
            policy_locked_at: current.locked_at,
            policy_locked_by: current.locked_by,
            policy_changed_after_results: status.changed_after_results,
            policy_first_lock_after_results: status.first_lock_after_results,
            measured_requests,
            adjudicated_labels: labels.len() as u64,
            adjudicated_unblinded_labels: labels.iter().filter(|l| l.unblinded).count() as u64,
            adjudicated,
            adjudicated_unblinded,
            body,
        };
        // A million requests' input is freed on another thread: the caller has its analysis.
        std::thread::spawn(move || drop(input));
        Ok((analysis, !corpus_missing))
    }
}

/// The last analysis of each study, under the revision it was computed at.
#[derive(Debug, Clone, Default)]
pub(crate) struct AnalysisCache {
    kept: Arc<Mutex<HashMap<i64, (String, StudyAnalysis)>>>,
    computed: Arc<AtomicU64>,
    /// Held while an analysis is computed: screens that ask at once (the overview's progress,
    /// Sign-off's checklist and analysis) wait for one computation instead of each running
    /// their own, side by side, in memory and on the same cores.
    computing: Arc<tokio::sync::Mutex<()>>,
}

impl AnalysisCache {
    fn get(&self, study_id: i64, revision: &str) -> Option<StudyAnalysis> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.get(&study_id)
            .filter(|(at, _)| at == revision)
            .map(|(_, analysis)| analysis.clone())
    }

    fn put(&self, study_id: i64, revision: String, analysis: &StudyAnalysis) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.insert(study_id, (revision, analysis.clone()));
    }
}
