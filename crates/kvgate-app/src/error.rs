use kvgate_core::study::StudyError;
use kvgate_store::StoreError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The kind of failure, so a shell can choose how to present it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The input was rejected; the message names the field, what was expected and what was found.
    InvalidInput,
    NotFound,
    Conflict,
    Storage,
    /// The user cancelled the action; nothing of it was stored.
    Cancelled,
    /// The study has no locked acceptance policy, so its results stay hidden.
    PolicyNotLocked,
    Internal,
}

/// An error as both shells report it: a code and a message a person can act on, and the
/// problems of the input one by one when the backend knows them, so a shell places each at its
/// field without reading the message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema, thiserror::Error)]
#[error("{message}")]
pub struct AppError {
    pub code: ErrorCode,
    pub message: String,
    /// Every problem of the input the message lists; absent when there are none to place.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(optional, as = "Option<Vec<Problem>>")]
    pub problems: Vec<Problem>,
}

/// Which input a problem is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProblemCode {
    Policy,
    RecoveryPlan,
    Manifest,
    ImportFile,
}

/// One problem of an input: where, what was expected and what was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct Problem {
    /// JSON path, e.g. `canary.share_percent` or `classes[1].slo.ttft_ms`; `$` for the whole input.
    pub path: String,
    /// The field the path ends in, when it names one.
    pub field: Option<String>,
    pub expected: String,
    pub found: String,
    pub code: ProblemCode,
}

impl Problem {
    pub fn new(
        code: ProblemCode,
        path: impl Into<String>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        let path = path.into();
        let last = path.rsplit('.').next().unwrap_or("");
        let field = last.split('[').next().unwrap_or("");
        let field = (!field.is_empty() && field != "$").then(|| field.to_owned());
        Problem {
            path,
            field,
            expected: expected.into(),
            found: found.into(),
            code,
        }
    }
}

impl AppError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AppError {
            code,
            message: message.into(),
            problems: Vec::new(),
        }
    }

    /// The same error with the problems its message lists.
    pub fn with_problems(mut self, problems: impl IntoIterator<Item = Problem>) -> Self {
        self.problems.extend(problems);
        self
    }

    pub fn storage(message: impl Into<String>) -> Self {
        AppError::new(ErrorCode::Storage, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        AppError::new(ErrorCode::NotFound, message)
    }
}

impl From<StoreError> for AppError {
    fn from(err: StoreError) -> Self {
        let code = match err {
            StoreError::Conflict { .. }
            | StoreError::Unchanged { .. }
            | StoreError::Frozen { .. }
            | StoreError::NotFrozen { .. } => ErrorCode::Conflict,
            StoreError::Invalid { .. } => ErrorCode::InvalidInput,
            StoreError::NotFound { .. } => ErrorCode::NotFound,
            StoreError::Cancelled => ErrorCode::Cancelled,
            _ => ErrorCode::Storage,
        };
        AppError::new(code, err.to_string())
    }
}

impl From<StudyError> for AppError {
    fn from(err: StudyError) -> Self {
        AppError::new(ErrorCode::InvalidInput, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_names_the_field_its_path_ends_in() {
        let field = |path: &str| Problem::new(ProblemCode::Policy, path, "e", "f").field;
        assert_eq!(
            field("canary.share_percent").as_deref(),
            Some("share_percent")
        );
        assert_eq!(field("classes[1].slo.ttft_ms").as_deref(), Some("ttft_ms"));
        assert_eq!(field("classes[1]").as_deref(), Some("classes"));
        assert_eq!(field("breach_rule").as_deref(), Some("breach_rule"));
        assert_eq!(field("$"), None);
        assert_eq!(field(""), None);
    }

    #[test]
    fn problems_travel_only_when_there_are_some() {
        let plain = AppError::new(ErrorCode::Conflict, "x");
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            serde_json::json!({"code": "conflict", "message": "x"})
        );
        let placed = AppError::new(ErrorCode::InvalidInput, "y").with_problems([Problem::new(
            ProblemCode::RecoveryPlan,
            "rehearsal.date",
            "a calendar day written YYYY-MM-DD",
            "\"x\"",
        )]);
        let v = serde_json::to_value(&placed).unwrap();
        assert_eq!(v["problems"][0]["path"], "rehearsal.date");
        assert_eq!(v["problems"][0]["field"], "date");
        assert_eq!(v["problems"][0]["code"], "recovery_plan");
        let back: AppError = serde_json::from_value(v).unwrap();
        assert_eq!(back, placed);
    }
}
