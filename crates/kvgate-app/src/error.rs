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

/// An error as both shells report it: a code and a message a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema, thiserror::Error)]
#[error("{message}")]
pub struct AppError {
    pub code: ErrorCode,
    pub message: String,
}

impl AppError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AppError {
            code,
            message: message.into(),
        }
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
