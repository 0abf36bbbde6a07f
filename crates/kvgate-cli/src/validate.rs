use std::path::PathBuf;

use clap::Args;
use kvgate_app::domain::validator::{AnswerCheck, ExpectedAnswer, ValidatorPolicy};
use kvgate_app::fixtures::{judge_response, validate_response};
use kvgate_app::{AppError, ErrorCode};

use crate::{print_json, Outcome};

/// Validate one response against one fixture item (or a team item's check); prints the verdict
/// as JSON and exits 0
/// whenever a verdict was produced (accepted or not)
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// A fixture item (one line of items.jsonl) or any JSON object with an `expected` answer; or
    /// a team's item, judged by its `check`
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
    let response = read(&args.response)?;
    let policy = ValidatorPolicy {
        allow_code_fence: args.allow_fence,
    };
    // A team's item (a line of a team corpus, or of the file imported) names its check.
    if let Some(check) = item.get("check").cloned() {
        let check: AnswerCheck = serde_json::from_value(check).map_err(|e| {
            AppError::new(
                ErrorCode::InvalidInput,
                format!("{}: field `check`: {e}", args.item.display()),
            )
        })?;
        if let Some((path, expected, found)) = check.problems().into_iter().next() {
            return Err(AppError::new(
                ErrorCode::InvalidInput,
                format!(
                    "{}: field `{path}`: expected {expected}, found {found}",
                    args.item.display()
                ),
            ));
        }
        print_json(&judge_response(&check, &response, policy))?;
        return Ok(Outcome::Success);
    }
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
    let verdict = validate_response(&expected, &response, policy);
    print_json(&verdict)?;
    Ok(Outcome::Success)
}
