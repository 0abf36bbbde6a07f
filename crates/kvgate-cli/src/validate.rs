use std::path::PathBuf;

use clap::Args;
use kvgate_app::domain::validator::{ExpectedAnswer, ValidatorPolicy};
use kvgate_app::fixtures::validate_response;
use kvgate_app::{AppError, ErrorCode};

use crate::{print_json, Outcome};

/// Validate one response against one fixture item; prints the verdict as JSON and exits 0
/// whenever a verdict was produced (accepted or not)
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// A fixture item (one line of items.jsonl) or any JSON object with an `expected` answer
    #[arg(long)]
    item: PathBuf,
    /// The model's response text
    #[arg(long)]
    response: PathBuf,
    /// Accept one markdown code fence around the JSON object (recorded as fenced)
    #[arg(long)]
    allow_fence: bool,
}

pub fn run(args: ValidateArgs) -> Result<Outcome, AppError> {
    let read = |p: &PathBuf| {
        std::fs::read_to_string(p).map_err(|e| {
            AppError::new(
                ErrorCode::InvalidInput,
                format!("{}: cannot read: {e}", p.display()),
            )
        })
    };
    let item_text = read(&args.item)?;
    let item: serde_json::Value = serde_json::from_str(&item_text).map_err(|e| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "{}, line {} column {}: expected a JSON object, found: {e}",
                args.item.display(),
                e.line(),
                e.column()
            ),
        )
    })?;
    let expected = item.get("expected").cloned().ok_or_else(|| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "{}: expected a field `expected`, found none",
                args.item.display()
            ),
        )
    })?;
    let expected: ExpectedAnswer = serde_json::from_value(expected).map_err(|e| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!("{}: field `expected`: {e}", args.item.display()),
        )
    })?;
    let response = read(&args.response)?;
    let verdict = validate_response(
        &expected,
        &response,
        ValidatorPolicy {
            allow_code_fence: args.allow_fence,
        },
    );
    print_json(&verdict)?;
    Ok(Outcome::Success)
}
