use std::path::PathBuf;

use clap::Subcommand;
use kvgate_app::formats::startup_log::parse_startup_log;
use kvgate_app::{AppError, ErrorCode};

use crate::{print_json, Outcome};

#[derive(Debug, Subcommand)]
pub enum EvidenceCommand {
    /// Read a vLLM or llama.cpp startup log: effective backend, KV dtype, scale signatures and
    /// KV capacity, each with its line number
    Log { file: PathBuf },
}

pub fn run(cmd: EvidenceCommand) -> Result<Outcome, AppError> {
    match cmd {
        EvidenceCommand::Log { file } => {
            let bytes = std::fs::read(&file).map_err(|e| {
                AppError::new(
                    ErrorCode::InvalidInput,
                    format!("{}: cannot read: {e}", file.display()),
                )
            })?;
            // Logs may hold stray non-UTF-8 bytes from native code; they never carry evidence.
            let text = String::from_utf8_lossy(&bytes);
            print_json(&parse_startup_log(&text))?;
            Ok(Outcome::Success)
        }
    }
}
