//! The recovery plan of a study: checked, recorded as an immutable version, and shown with what
//! the recovery check's signer must weigh.

use kvgate_core::policy::PolicyProblem;
use kvgate_core::recovery::RecoveryPlan;
use kvgate_store::RecoveryPlanRecord;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::{App, AppError, ErrorCode, Problem, ProblemCode};

/// What recording a recovery plan takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RecordRecoveryInput {
    pub study_id: i64,
    /// The plan JSON as authored (schemas/recovery-plan.schema.json).
    pub plan_json: String,
    pub by: String,
}

/// One recorded version of a study's recovery plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RecordedRecoveryPlan {
    pub study_id: i64,
    pub version: i64,
    pub plan: RecoveryPlan,
    pub sha256: String,
    pub recorded_at: String,
    pub recorded_by: String,
}

/// Every recorded version, newest last, and the one in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RecoveryStatus {
    pub study_id: i64,
    pub current: Option<RecordedRecoveryPlan>,
    pub versions: Vec<RecordedRecoveryPlan>,
}

/// Today's date in UTC, `YYYY-MM-DD`: the latest day a rehearsal may carry.
pub(crate) fn today() -> String {
    kvgate_store::now_rfc3339()[..10].to_owned()
}

fn recorded(record: RecoveryPlanRecord) -> Result<RecordedRecoveryPlan, AppError> {
    let plan: RecoveryPlan = serde_json::from_str(&record.plan_json).map_err(|e| {
        AppError::storage(format!(
            "recovery plan version {} of study {} cannot be read back: {e}",
            record.version, record.study_id
        ))
    })?;
    Ok(RecordedRecoveryPlan {
        study_id: record.study_id,
        version: record.version,
        plan,
        sha256: record.sha256,
        recorded_at: record.recorded_at,
        recorded_by: record.recorded_by,
    })
}

impl App {
    /// Checks a plan as authored; every problem with its JSON path, empty when it may be recorded.
    pub fn check_recovery_plan(&self, plan_json: &str) -> Vec<PolicyProblem> {
        match RecoveryPlan::from_json_text(plan_json, &today()) {
            Ok(_) => Vec::new(),
            Err(problems) => problems,
        }
    }

    /// Records the study's next recovery plan version: canonical JSON, sha256, time and author.
    pub async fn record_recovery_plan(
        &self,
        input: RecordRecoveryInput,
    ) -> Result<RecordedRecoveryPlan, AppError> {
        self.open_study(input.study_id).await?;
        let by = input.by.trim();
        if by.is_empty() || by.chars().count() > crate::analysis::MAX_AUTHOR_CHARS {
            return Err(AppError::new(
                ErrorCode::InvalidInput,
                format!(
                    "field `by`: expected a name of 1 to {} characters, found {:?}",
                    crate::analysis::MAX_AUTHOR_CHARS,
                    input.by
                ),
            ));
        }
        let plan =
            RecoveryPlan::from_json_text(&input.plan_json, &today()).map_err(|p| {
                let lines: Vec<String> = p.iter().map(|p| format!("- {p}")).collect();
                AppError::new(
                    ErrorCode::InvalidInput,
                    format!(
                        "the recovery plan cannot be recorded:\n{}",
                        lines.join("\n")
                    ),
                )
                .with_problems(p.iter().map(|p| {
                    Problem::new(ProblemCode::RecoveryPlan, &p.path, &p.expected, &p.found)
                }))
            })?;
        let record = self
            .store
            .record_recovery_plan(input.study_id, &plan.canonical_json(), &plan.sha256(), by)
            .await?;
        recorded(record)
    }

    /// The study's recovery plan versions.
    pub async fn recovery_status(&self, study_id: i64) -> Result<RecoveryStatus, AppError> {
        self.open_study(study_id).await?;
        let versions = self
            .store
            .recovery_plans(study_id)
            .await?
            .into_iter()
            .map(recorded)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RecoveryStatus {
            study_id,
            current: versions.last().cloned(),
            versions,
        })
    }
}
