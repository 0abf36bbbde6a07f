use std::path::PathBuf;

use clap::Subcommand;
use kvgate_app::packet::{verify_packet, PacketExportInput};
use kvgate_app::{App, AppError};

use crate::{print_json, Outcome};

#[derive(Debug, Subcommand)]
pub enum PacketCommand {
    /// Export the architecture-review packet of a study: manifests, locked policy and limits,
    /// redacted arrival trace, representative requests, results (CSV, Parquet), charts (SVG),
    /// evidence, adjudications, sign-offs, decisions, report.html and index.json
    Export {
        /// Name of the study
        #[arg(long)]
        study: String,
        /// Folder to create (absent or empty), or with --zip the zip file to create
        #[arg(long)]
        out: PathBuf,
        /// Write one zip file instead of a folder
        #[arg(long)]
        zip: bool,
        /// Item ids of the representative held-out requests (comma-separated); default a
        /// balanced sample of 12 across the strata
        #[arg(long, value_delimiter = ',')]
        items: Option<Vec<String>>,
        #[arg(long)]
        json: bool,
    },
    /// Check every file of a packet folder or zip against its index.json; exits 1 naming each
    /// modified, missing or unexpected file
    Verify {
        /// The packet folder or zip file
        target: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

/// "33 files listed in index.json": how export and verify both count a packet's files (index.json
/// names the rest and is not listed in itself).
fn listed(n: u64) -> String {
    format!(
        "{n} {} listed in index.json",
        if n == 1 { "file" } else { "files" }
    )
}

pub async fn run(app: &App, cmd: PacketCommand) -> Result<Outcome, AppError> {
    match cmd {
        PacketCommand::Export {
            study,
            out,
            zip,
            items,
            json,
        } => {
            let study = app.study_by_name(&study).await?;
            let export = app
                .export_packet(PacketExportInput {
                    study_id: study.id,
                    out: out.display().to_string(),
                    zip,
                    representative: items,
                })
                .await?;
            if json {
                print_json(&export)?;
            } else {
                let bytes: u64 = export.files.iter().map(|f| f.size).sum();
                println!(
                    "exported {} ({bytes} bytes) and index.json itself to {}; index.json sha256 {}",
                    listed(export.files.len() as u64),
                    export.out,
                    export.index_sha256
                );
                for w in &export.warnings {
                    eprintln!("warning: {w}");
                }
            }
            Ok(Outcome::Success)
        }
        PacketCommand::Verify { target, json } => {
            let v = verify_packet(&target);
            if json {
                print_json(&v)?;
            } else if v.verified {
                let matches = if v.files_checked == 1 {
                    "matches its"
                } else {
                    "match their"
                };
                println!(
                    "verified: {} {matches} sha256 and size",
                    listed(v.files_checked)
                );
            } else {
                if let Some(p) = &v.problem {
                    println!("not verified: {p}");
                }
                for m in &v.modified {
                    println!("modified: {m}");
                }
                for m in &v.missing {
                    println!("missing: {m}");
                }
                for m in &v.unexpected {
                    println!("unexpected: {m}");
                }
            }
            Ok(if v.verified {
                Outcome::Success
            } else {
                Outcome::Failure(1)
            })
        }
    }
}
