use std::path::{Path, PathBuf};

use clap::Subcommand;
use kvgate_app::domain::manifest::{diff, Severity};
use kvgate_app::manifests::{
    check_manifest, classify_diff, parse_valid_manifest, ManifestDiff, ManifestStatus,
};
use kvgate_app::{App, AppError, ErrorCode};

use crate::{print_json, Outcome};

#[derive(Debug, Subcommand)]
pub enum ManifestCommand {
    /// Check a manifest file; exit 0 when valid, else one line per problem naming the field
    Validate { file: PathBuf },
    /// Print the manifest digest: the 64-hex sha256 of its canonical JSON (RFC 8785), nothing else
    Digest { file: PathBuf },
    /// Store a valid manifest in a study and freeze it (immutable from then on); print its digest
    Freeze {
        file: PathBuf,
        /// Name of the study
        #[arg(long)]
        study: String,
    },
    /// Compare a candidate with B0 (or C1 with C2): every differing field, classified.
    /// Exits 2 when a held-constant field differs (red finding)
    Diff {
        b0_file: PathBuf,
        candidate_file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// List the manifests of a study
    List {
        #[arg(long)]
        study: String,
        #[arg(long)]
        json: bool,
    },
    /// Print the stored JSON of one cell's manifest (canonical JSON once frozen)
    Export {
        #[arg(long)]
        study: String,
        #[arg(long)]
        cell: String,
    },
    /// Record a named intervention: accept held-constant findings of a candidate (who, why,
    /// which findings), as an audit event. Without it such a finding makes the comparison
    /// uncontrolled (never promoted)
    Intervention {
        #[arg(long)]
        study: String,
        /// The candidate cell
        #[arg(long)]
        candidate: String,
        /// Path of each accepted finding, as `kvgate analyze` names it (e.g. weights_digest)
        #[arg(long, num_args = 1.., required = true)]
        accept: Vec<String>,
        /// Who names the intervention
        #[arg(long)]
        by: String,
        /// Why the findings belong to the intervention
        #[arg(long)]
        why: String,
        #[arg(long)]
        json: bool,
    },
}

/// Runs a command that needs no database, or hands the command back.
pub fn run_offline(cmd: ManifestCommand) -> Result<Result<Outcome, AppError>, ManifestCommand> {
    match cmd {
        ManifestCommand::Validate { file } => Ok(validate(&file)),
        ManifestCommand::Digest { file } => Ok(digest(&file)),
        ManifestCommand::Diff {
            b0_file,
            candidate_file,
            json,
        } => Ok(diff_files(&b0_file, &candidate_file, json)),
        other => Err(other),
    }
}

pub async fn run(app: &App, cmd: ManifestCommand) -> Result<Outcome, AppError> {
    match cmd {
        ManifestCommand::Freeze { file, study } => {
            let text = read(&file)?;
            let manifest = parse_valid_manifest(&text, &file.display().to_string())?;
            let digest = manifest
                .digest()
                .map_err(|e| AppError::new(ErrorCode::InvalidInput, e.to_string()))?;
            let study = app.study_by_name(&study).await?;
            app.save_manifest_draft(study.id, &text).await?;
            let frozen = app
                .freeze_manifest(study.id, &manifest.cell, &digest)
                .await?;
            println!("{}", frozen.digest.unwrap_or_default());
            Ok(Outcome::Success)
        }
        ManifestCommand::List { study, json } => {
            let study = app.study_by_name(&study).await?;
            let manifests = app.list_manifests(study.id).await?;
            if json {
                print_json(&manifests)?;
            } else if manifests.is_empty() {
                println!("no manifests in study {}", study.name);
            } else {
                println!("{:<8}  {:<6}  {:<64}  PROBLEMS", "CELL", "STATUS", "DIGEST");
                for m in manifests {
                    let status = match m.status {
                        ManifestStatus::Draft => "draft",
                        ManifestStatus::Frozen => "frozen",
                    };
                    println!(
                        "{:<8}  {:<6}  {:<64}  {}",
                        m.cell,
                        status,
                        m.digest.as_deref().unwrap_or("-"),
                        m.problems.len()
                    );
                }
            }
            Ok(Outcome::Success)
        }
        ManifestCommand::Export { study, cell } => {
            let study = app.study_by_name(&study).await?;
            let m = app.manifest(study.id, &cell).await?;
            println!("{}", m.text);
            Ok(Outcome::Success)
        }
        ManifestCommand::Intervention {
            study,
            candidate,
            accept,
            by,
            why,
            json,
        } => {
            let study = app.study_by_name(&study).await?;
            let event = app
                .record_intervention(kvgate_app::interventions::InterventionInput {
                    study_id: study.id,
                    candidate,
                    accept,
                    by,
                    why,
                })
                .await?;
            if json {
                print_json(&event)?;
            } else {
                let accepted: Vec<String> = event.payload["accepts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|f| {
                        format!(
                            "{} (against {})",
                            f["path"].as_str().unwrap_or("?"),
                            f["against"].as_str().unwrap_or("?")
                        )
                    })
                    .collect();
                println!(
                    "intervention recorded for {} by {} (audit event {}): accepts {}",
                    event.subject,
                    event.actor,
                    event.seq,
                    accepted.join(", ")
                );
            }
            Ok(Outcome::Success)
        }
        ManifestCommand::Validate { file } => validate(&file),
        ManifestCommand::Digest { file } => digest(&file),
        ManifestCommand::Diff {
            b0_file,
            candidate_file,
            json,
        } => diff_files(&b0_file, &candidate_file, json),
    }
}

fn read(file: &Path) -> Result<String, AppError> {
    std::fs::read_to_string(file).map_err(|e| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!("{}: cannot read: {e}", file.display()),
        )
    })
}

fn validate(file: &Path) -> Result<Outcome, AppError> {
    let check = check_manifest(&read(file)?);
    if check.problems.is_empty() {
        println!("{}: valid", file.display());
        return Ok(Outcome::Success);
    }
    for p in &check.problems {
        println!("{}: {p}", file.display());
    }
    Ok(Outcome::Failure(1))
}

fn digest(file: &Path) -> Result<Outcome, AppError> {
    let check = check_manifest(&read(file)?);
    match check.digest {
        Some(d) => {
            println!("{d}");
            Ok(Outcome::Success)
        }
        None => Err(AppError::new(
            ErrorCode::InvalidInput,
            check
                .problems
                .iter()
                .map(|p| format!("{}: {p}", file.display()))
                .collect::<Vec<_>>()
                .join("\n"),
        )),
    }
}

fn diff_files(reference: &Path, candidate: &Path, json: bool) -> Result<Outcome, AppError> {
    let parse = |file: &Path| {
        kvgate_app::domain::manifest::Manifest::from_json(&read(file)?)
            .map_err(|p| AppError::new(ErrorCode::InvalidInput, format!("{}: {p}", file.display())))
    };
    let (a, b) = (parse(reference)?, parse(candidate)?);
    let mut result: ManifestDiff = classify_diff(&a.cell, &b.cell, diff(&a, &b));
    result.reference_digest = a.digest().ok();
    result.candidate_digest = b.digest().ok();
    if json {
        print_json(&result)?;
    } else {
        print_diff(&result);
    }
    Ok(if result.red > 0 {
        Outcome::Failure(2)
    } else {
        Outcome::Success
    })
}

fn print_diff(d: &ManifestDiff) {
    println!(
        "{} vs {}: {} red, {} amber, {} info",
        d.candidate_cell, d.reference_cell, d.red, d.amber, d.info
    );
    for f in &d.findings {
        let tag = match f.severity {
            Severity::Red => "RED  ",
            Severity::Amber => "AMBER",
            Severity::Info => "info ",
        };
        println!(
            "{tag} {}: {} -> {}  ({})",
            f.path,
            f.reference_value.as_deref().unwrap_or("absent"),
            f.candidate_value.as_deref().unwrap_or("absent"),
            f.message
        );
    }
    if let Some(w) = &d.coupling_warning {
        println!("warning: {w}");
    }
}
