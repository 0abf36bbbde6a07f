//! Named interventions: a held-constant finding between B0 (or C1) and a candidate makes the
//! comparison uncontrolled until someone names the complete intervention, says why, and accepts
//! the findings it covers. The intervention is an event of the study's audit chain; the analysis
//! reads it back (`kvgate_core::analysis`), and Check 1 and the packet show it.

use kvgate_core::analysis::{held_constant_findings, HeldConstantFinding};
use kvgate_core::review::{AuditEvent, AuditKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::{App, AppError, ErrorCode};

/// Longest reason accepted, in characters.
pub const MAX_WHY_CHARS: usize = 2000;

/// What recording a named intervention takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct InterventionInput {
    pub study_id: i64,
    /// The candidate cell.
    pub candidate: String,
    /// Paths of the held-constant findings it accepts, e.g. `weights_digest`.
    pub accept: Vec<String>,
    /// Who names the intervention.
    pub by: String,
    /// Why the findings are part of the intervention.
    pub why: String,
}

fn invalid(message: String) -> AppError {
    AppError::new(ErrorCode::InvalidInput, message)
}

impl App {
    /// The held-constant findings of a candidate against B0 (and C1), before any intervention.
    pub async fn held_constant_findings(
        &self,
        study_id: i64,
        candidate: &str,
    ) -> Result<Vec<HeldConstantFinding>, AppError> {
        self.open_study(study_id).await?;
        let input = kvgate_store::study_input::load_study(
            &self.store,
            study_id,
            &mut kvgate_store::study_input::no_corpora,
        )
        .await
        .map_err(|e| match e {
            kvgate_store::study_input::LoadError::Store(s) => AppError::from(s),
            other => invalid(other.to_string()),
        })?;
        let Some(cell) = input
            .cells
            .iter()
            .find(|c| c.cell == candidate && c.test_cell.is_candidate())
        else {
            return Err(AppError::not_found(format!(
                "candidate {candidate} not found among the study's frozen cells (B0 is the baseline, not a candidate)"
            )));
        };
        Ok(held_constant_findings(&input, cell))
    }

    /// Records a named intervention accepting held-constant findings of a candidate, as an
    /// audit event. Refused for a path that is not one of the candidate's findings.
    pub async fn record_intervention(
        &self,
        input: InterventionInput,
    ) -> Result<AuditEvent, AppError> {
        let by = input.by.trim();
        if by.is_empty() || by.chars().count() > crate::analysis::MAX_AUTHOR_CHARS {
            return Err(invalid(format!(
                "field `by`: expected the name of who names the intervention, found {:?}",
                input.by
            )));
        }
        let why = input.why.trim();
        if why.is_empty() || why.chars().count() > MAX_WHY_CHARS {
            return Err(invalid(format!(
                "field `why`: expected the reason for the intervention (1 to {MAX_WHY_CHARS} characters), found {:?}",
                input.why
            )));
        }
        if input.accept.is_empty() {
            return Err(invalid(
                "field `accept`: expected at least one finding path (e.g. `weights_digest`), found none"
                    .into(),
            ));
        }
        let findings = self
            .held_constant_findings(input.study_id, &input.candidate)
            .await?;
        let mut accepts: Vec<HeldConstantFinding> = Vec::new();
        for path in &input.accept {
            let matched: Vec<&HeldConstantFinding> =
                findings.iter().filter(|f| &f.path == path).collect();
            if matched.is_empty() {
                let current: Vec<&str> = findings.iter().map(|f| f.path.as_str()).collect();
                return Err(invalid(format!(
                    "field `accept`: `{path}` is not a held-constant finding of {}; its findings are: {}",
                    input.candidate,
                    if current.is_empty() {
                        "none (the comparison is held constant)".to_owned()
                    } else {
                        current.join(", ")
                    }
                )));
            }
            for f in matched {
                if !accepts.contains(f) {
                    accepts.push(f.clone());
                }
            }
        }
        let payload = serde_json::json!({"why": why, "accepts": accepts});
        Ok(self
            .store
            .append_audit_event(
                input.study_id,
                by,
                AuditKind::Intervention,
                &input.candidate,
                &payload,
            )
            .await?)
    }
}
