//! User actions on manifests: author drafts, derive candidates, freeze, diff, KV capacity.

use kvgate_core::kv_capacity::{
    admission_of, kv_bytes, rollback_fit, shape_for_manifest, token_capacity, KvBytesBreakdown,
    RollbackFit, TokenCapacity, NOT_FOR_LATENT_OR_HYBRID,
};
use kvgate_core::manifest::{
    calibration_coupling_warning, diff, validate_frozen_set, Engine, Finding, Manifest,
    ManifestProblem, Severity, C1_C2_COUPLING_WARNING,
};
use kvgate_core::test_cell::{DecisionTableRow, TestCell, DECISION_TABLE};
use kvgate_formats::weights::{ScaleTensorPattern, SCALE_TENSOR_PATTERNS};
use kvgate_store::ManifestRecord;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::{App, AppError, ErrorCode, Problem, ProblemCode};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ManifestStatus {
    Draft,
    Frozen,
}

/// A manifest as stored in a study, with what the UI shows beside it.
#[derive(Debug, Clone, PartialEq, Serialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct StoredManifest {
    pub id: i64,
    pub study_id: i64,
    pub cell: String,
    pub status: ManifestStatus,
    /// The digest of the frozen canonical JSON; absent for drafts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// As authored for a draft; the canonical JSON once frozen.
    pub text: String,
    pub created_at: String,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frozen_at: Option<String>,
    /// What stands between a draft and freezing; empty once frozen.
    pub problems: Vec<ManifestProblem>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_row: Option<DecisionTableRow>,
}

/// The result of checking manifest JSON text.
#[derive(Debug, Clone, PartialEq, Serialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct ManifestCheck {
    pub problems: Vec<ManifestProblem>,
    /// sha256 of the canonical JSON, whenever the text parses as a manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_row: Option<DecisionTableRow>,
}

/// The values a manifest form offers, from the rules in `kvgate-core`.
#[derive(Debug, Clone, PartialEq, Serialize, TS, JsonSchema)]
pub struct ManifestVocabulary {
    pub engines: Vec<EngineVocabulary>,
    pub decision_table: Vec<DecisionTableRow>,
    pub kv_capacity_caveat: String,
    pub coupling_warning: String,
    /// Tensor names recognised as KV/attention scale metadata, kept out of the weights digest.
    pub scale_tensor_patterns: Vec<ScaleTensorPattern>,
}

#[derive(Debug, Clone, PartialEq, Serialize, TS, JsonSchema)]
pub struct EngineVocabulary {
    pub engine: Engine,
    pub kv_dtypes: Vec<String>,
}

/// The classified differences between two manifests of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct ManifestDiff {
    pub reference_cell: String,
    pub candidate_cell: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate_digest: Option<String>,
    pub findings: Vec<Finding>,
    pub red: u32,
    pub amber: u32,
    pub info: u32,
    /// The guide's warning, present when the comparison couples kernel or backend changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coupling_warning: Option<String>,
}

/// The KV memory model for one manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct ManifestCapacity {
    pub cell: String,
    /// Bytes of one retained position across all layers, term by term (no block rounding:
    /// that depends on how positions split into sequences, see `full_context_sequence`).
    pub per_token: KvBytesBreakdown,
    /// One sequence at the manifest's context limit, block rounding included.
    pub full_context_sequence: KvBytesBreakdown,
    /// Positions the manifest's fixed KV budget holds; absent without `kv_cache_memory_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<TokenCapacity>,
    /// For a candidate: whether the study's B0 representation still holds this candidate's
    /// admission limit (max_num_seqs sequences at the context limit) within its KV budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_fit: Option<RollbackFit>,
    /// Why `rollback_fit` is absent, when it is for a candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_fit_missing: Option<String>,
    pub caveat: String,
}

/// The rules' vocabulary for the manifest form.
pub fn manifest_vocabulary() -> ManifestVocabulary {
    let engines = [Engine::Vllm, Engine::LlamaCpp, Engine::Other]
        .into_iter()
        .map(|engine| EngineVocabulary {
            engine,
            kv_dtypes: engine
                .kv_dtypes()
                .unwrap_or_default()
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        })
        .collect();
    ManifestVocabulary {
        engines,
        decision_table: DECISION_TABLE.to_vec(),
        kv_capacity_caveat: NOT_FOR_LATENT_OR_HYBRID.to_owned(),
        coupling_warning: C1_C2_COUPLING_WARNING.to_owned(),
        scale_tensor_patterns: SCALE_TENSOR_PATTERNS.to_vec(),
    }
}

/// Parses and validates manifest text: every problem, and the digest whenever it parses.
pub fn check_manifest(text: &str) -> ManifestCheck {
    match Manifest::from_json(text) {
        Err(problem) => ManifestCheck {
            problems: vec![problem],
            digest: None,
            cell: cell_name_of(text),
            decision_row: cell_name_of(text).and_then(|c| decision_row_of(&c)),
        },
        Ok(manifest) => {
            let mut problems = manifest.validate();
            let digest = match manifest.digest() {
                Ok(d) => Some(d),
                Err(e) => {
                    problems.push(ManifestProblem {
                        path: "$".into(),
                        expected: "a manifest with a canonical JSON form".into(),
                        found: e.to_string(),
                    });
                    None
                }
            };
            ManifestCheck {
                problems,
                digest,
                decision_row: decision_row_of(&manifest.cell),
                cell: Some(manifest.cell),
            }
        }
    }
}

/// A valid manifest, or an `invalid_input` error listing every problem.
pub fn parse_valid_manifest(text: &str, what: &str) -> Result<Manifest, AppError> {
    let manifest = Manifest::from_json(text).map_err(|p| problems_error(what, &[p]))?;
    let problems = manifest.validate();
    if !problems.is_empty() {
        return Err(problems_error(what, &problems));
    }
    Ok(manifest)
}

fn problems_error(what: &str, problems: &[ManifestProblem]) -> AppError {
    let lines: Vec<String> = problems.iter().map(|p| format!("{what}: {p}")).collect();
    AppError::new(ErrorCode::InvalidInput, lines.join("\n")).with_problems(
        problems
            .iter()
            .map(|p| Problem::new(ProblemCode::Manifest, &p.path, &p.expected, &p.found)),
    )
}

fn cell_name_of(text: &str) -> Option<String> {
    let value: Value = serde_json::from_str(text).ok()?;
    value.get("cell")?.as_str().map(str::to_owned)
}

fn decision_row_of(cell: &str) -> Option<DecisionTableRow> {
    TestCell::from_name(cell)
        .ok()
        .and_then(|c| c.decision_row().copied())
}

/// Counts findings per severity and attaches the guide's warning to a C1↔C2 comparison that
/// also changes backend, kernel or attention precision.
pub fn classify_diff(
    reference_cell: &str,
    candidate_cell: &str,
    findings: Vec<Finding>,
) -> ManifestDiff {
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count() as u32;
    let coupling_warning =
        calibration_coupling_warning(reference_cell, candidate_cell, &findings).map(str::to_owned);
    ManifestDiff {
        reference_cell: reference_cell.to_owned(),
        candidate_cell: candidate_cell.to_owned(),
        reference_digest: None,
        candidate_digest: None,
        red: count(Severity::Red),
        amber: count(Severity::Amber),
        info: count(Severity::Info),
        coupling_warning,
        findings,
    }
}

/// The per-token KV model and the budget's capacity for one manifest.
pub fn capacity_of(manifest: &Manifest) -> Result<ManifestCapacity, AppError> {
    let invalid = |e: kvgate_core::kv_capacity::KvCapacityError| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!("manifest {}: {e}", manifest.cell),
        )
    };
    let shape = shape_for_manifest(manifest).map_err(invalid)?;
    let unblocked = kvgate_core::kv_capacity::KvShape {
        block_size: None,
        ..shape.clone()
    };
    let per_token = kv_bytes(&unblocked, &[1]).map_err(invalid)?;
    let full_context_sequence =
        kv_bytes(&shape, &[u64::from(manifest.context_limit)]).map_err(invalid)?;
    let capacity = match manifest
        .memory_budget
        .as_ref()
        .and_then(|b| b.kv_cache_memory_bytes)
    {
        Some(budget) => Some(token_capacity(&shape, budget).map_err(invalid)?),
        None => None,
    };
    Ok(ManifestCapacity {
        cell: manifest.cell.clone(),
        per_token,
        full_context_sequence,
        capacity,
        rollback_fit: None,
        rollback_fit_missing: None,
        caveat: NOT_FOR_LATENT_OR_HYBRID.to_owned(),
    })
}

/// Whether `b0`'s KV representation holds `candidate`'s admission limit within the candidate's
/// KV budget, or why that cannot be said yet.
pub fn rollback_fit_of(b0: &Manifest, candidate: &Manifest) -> Result<RollbackFit, String> {
    let budget = candidate
        .memory_budget
        .as_ref()
        .and_then(|b| b.kv_cache_memory_bytes)
        .ok_or_else(|| {
            format!(
                "rollback fit needs the KV budget of {}: memory_budget.kv_cache_memory_bytes \
                 (or the engine's reported KV memory once its startup evidence is imported)",
                candidate.cell
            )
        })?;
    let shape = shape_for_manifest(b0).map_err(|e| format!("manifest B0: {e}"))?;
    rollback_fit(&shape, &admission_of(candidate), budget).map_err(|e| e.to_string())
}

impl App {
    fn stored(&self, record: ManifestRecord) -> StoredManifest {
        let (problems, decision_row) = if record.is_frozen() {
            (Vec::new(), decision_row_of(&record.cell))
        } else {
            let check = check_manifest(&record.text);
            (check.problems, decision_row_of(&record.cell))
        };
        StoredManifest {
            id: record.id,
            study_id: record.study_id,
            status: if record.is_frozen() {
                ManifestStatus::Frozen
            } else {
                ManifestStatus::Draft
            },
            cell: record.cell,
            digest: record.digest,
            text: record.text,
            created_at: record.created_at,
            updated_at: record.updated_at,
            frozen_at: record.frozen_at,
            problems,
            decision_row,
        }
    }

    async fn require_study(&self, study_id: i64) -> Result<(), AppError> {
        match self.store.study(study_id).await? {
            Some(_) => Ok(()),
            None => Err(AppError::not_found(format!("no study with id {study_id}"))),
        }
    }

    async fn manifest_record(&self, study_id: i64, cell: &str) -> Result<ManifestRecord, AppError> {
        self.require_study(study_id).await?;
        self.store.manifest(study_id, cell).await?.ok_or_else(|| {
            AppError::not_found(format!("no manifest for cell {cell:?} in this study"))
        })
    }

    /// Every manifest of a study, drafts with their open problems.
    pub async fn list_manifests(&self, study_id: i64) -> Result<Vec<StoredManifest>, AppError> {
        self.require_study(study_id).await?;
        let records = self.store.list_manifests(study_id).await?;
        Ok(records.into_iter().map(|r| self.stored(r)).collect())
    }

    /// One manifest of a study by cell.
    pub async fn manifest(&self, study_id: i64, cell: &str) -> Result<StoredManifest, AppError> {
        Ok(self.stored(self.manifest_record(study_id, cell).await?))
    }

    /// Saves draft text for the cell it names. The text may still have problems (nothing
    /// typed is lost) but must be a JSON object with a valid `cell`.
    pub async fn save_manifest_draft(
        &self,
        study_id: i64,
        text: &str,
    ) -> Result<StoredManifest, AppError> {
        self.require_study(study_id).await?;
        let value: Value = serde_json::from_str(text).map_err(|e| {
            AppError::new(
                ErrorCode::InvalidInput,
                format!(
                    "manifest JSON, line {} column {}: expected valid JSON, found an error: {e}",
                    e.line(),
                    e.column()
                ),
            )
        })?;
        let cell = match value.get("cell") {
            Some(Value::String(cell)) => cell.clone(),
            Some(other) => {
                return Err(AppError::new(
                    ErrorCode::InvalidInput,
                    format!("cell: expected a cell name such as \"B0\" or \"C1\", found {other}"),
                ))
            }
            None if value.is_object() => {
                return Err(AppError::new(
                    ErrorCode::InvalidInput,
                    "cell: expected a cell name such as \"B0\" or \"C1\", found nothing",
                ))
            }
            None => {
                return Err(AppError::new(
                    ErrorCode::InvalidInput,
                    "$: expected a JSON object, found another JSON value",
                ))
            }
        };
        TestCell::from_name(&cell)
            .map_err(|e| AppError::new(ErrorCode::InvalidInput, e.to_string()))?;
        let record = self
            .store
            .save_manifest_draft(study_id, &cell, text)
            .await?;
        Ok(self.stored(record))
    }

    /// A new draft for `cell` copied from `from_cell`, without the source's candidate id (a
    /// candidate names its own bundle).
    pub async fn derive_candidate(
        &self,
        study_id: i64,
        from_cell: &str,
        cell: &str,
    ) -> Result<StoredManifest, AppError> {
        let cell = cell.trim();
        TestCell::from_name(cell)
            .map_err(|e| AppError::new(ErrorCode::InvalidInput, e.to_string()))?;
        let source = self.manifest_record(study_id, from_cell).await?;
        let mut value: Value = serde_json::from_str(&source.text).map_err(|e| {
            AppError::new(
                ErrorCode::InvalidInput,
                format!("manifest {from_cell}: expected JSON to derive from, found: {e}"),
            )
        })?;
        let Some(object) = value.as_object_mut() else {
            return Err(AppError::new(
                ErrorCode::InvalidInput,
                format!("manifest {from_cell}: expected a JSON object, found another JSON value"),
            ));
        };
        object.insert("cell".into(), Value::String(cell.to_owned()));
        object.remove("candidate_id");
        let text = serde_json::to_string_pretty(&value)
            .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))?;
        let record = self
            .store
            .insert_manifest_draft(study_id, cell, &text)
            .await?;
        Ok(self.stored(record))
    }

    /// Freezes the draft of `cell` after the user confirmed `expected_digest`. Refused when the
    /// draft has problems, does not fit the study's other manifests, or hashes differently now.
    pub async fn freeze_manifest(
        &self,
        study_id: i64,
        cell: &str,
        expected_digest: &str,
    ) -> Result<StoredManifest, AppError> {
        let record = self.manifest_record(study_id, cell).await?;
        if let Some(digest) = &record.digest {
            return Err(AppError::new(
                ErrorCode::Conflict,
                format!("manifest {cell} is already frozen with digest {digest}"),
            ));
        }
        let manifest = parse_valid_manifest(&record.text, &format!("manifest {cell}"))?;
        let mut set = Vec::new();
        for other in self.store.list_manifests(study_id).await? {
            if other.is_frozen() {
                set.push(parse_valid_manifest(
                    &other.text,
                    &format!("manifest {}", other.cell),
                )?);
            }
        }
        set.push(manifest.clone());
        let set_problems = validate_frozen_set(&set);
        if !set_problems.is_empty() {
            return Err(problems_error("study manifests", &set_problems));
        }
        let canonical = manifest
            .canonical_json()
            .map_err(|e| AppError::new(ErrorCode::InvalidInput, e.to_string()))?;
        let digest = kvgate_core::canonical::sha256_hex(canonical.as_bytes());
        if digest != expected_digest.trim() {
            return Err(AppError::new(
                ErrorCode::Conflict,
                format!(
                    "manifest {cell}: expected digest {} (the one confirmed), found {digest}; \
                     the draft changed since it was confirmed",
                    expected_digest.trim()
                ),
            ));
        }
        let record = self
            .store
            .freeze_manifest(study_id, cell, &canonical, &digest)
            .await?;
        Ok(self.stored(record))
    }

    /// Deletes a draft; frozen manifests stay forever.
    pub async fn delete_manifest_draft(&self, study_id: i64, cell: &str) -> Result<(), AppError> {
        self.require_study(study_id).await?;
        Ok(self.store.delete_manifest_draft(study_id, cell).await?)
    }

    /// Classified differences of `candidate_cell` against `reference_cell`.
    pub async fn diff_manifests(
        &self,
        study_id: i64,
        reference_cell: &str,
        candidate_cell: &str,
    ) -> Result<ManifestDiff, AppError> {
        let reference = self.manifest_record(study_id, reference_cell).await?;
        let candidate = self.manifest_record(study_id, candidate_cell).await?;
        let parse = |r: &ManifestRecord| {
            Manifest::from_json(&r.text)
                .map_err(|p| problems_error(&format!("manifest {}", r.cell), &[p]))
        };
        let findings = diff(&parse(&reference)?, &parse(&candidate)?);
        let mut result = classify_diff(reference_cell, candidate_cell, findings);
        result.reference_digest = reference.digest;
        result.candidate_digest = candidate.digest;
        Ok(result)
    }

    /// The KV memory model for one stored manifest.
    pub async fn manifest_capacity(
        &self,
        study_id: i64,
        cell: &str,
    ) -> Result<ManifestCapacity, AppError> {
        let record = self.manifest_record(study_id, cell).await?;
        let manifest = Manifest::from_json(&record.text)
            .map_err(|p| problems_error(&format!("manifest {cell}"), &[p]))?;
        let mut capacity = capacity_of(&manifest)?;
        if cell != "B0" {
            let b0 = match self.store.manifest(study_id, "B0").await? {
                None => Err("rollback fit needs the study's B0 manifest".to_owned()),
                Some(r) => Manifest::from_json(&r.text).map_err(|p| format!("manifest B0: {p}")),
            };
            match b0.and_then(|b0| rollback_fit_of(&b0, &manifest)) {
                Ok(fit) => capacity.rollback_fit = Some(fit),
                Err(why) => capacity.rollback_fit_missing = Some(why),
            }
        }
        Ok(capacity)
    }
}
