use std::path::PathBuf;

use clap::Subcommand;
use kvgate_app::recovery::{RecordRecoveryInput, RecordedRecoveryPlan};
use kvgate_app::{App, AppError};

use crate::{print_json, Outcome};

#[derive(Debug, Subcommand)]
pub enum RecoveryCommand {
    /// Record the study's recovery plan (a change records the next version); prints its sha256
    Record {
        /// Name of the study
        #[arg(long)]
        study: String,
        /// The plan JSON (schemas/recovery-plan.schema.json): canary route and share, breach
        /// rule, drain deadline, admission before restore, dated rehearsal
        #[arg(long)]
        file: PathBuf,
        /// Who records it
        #[arg(long)]
        by: String,
        #[arg(long)]
        json: bool,
    },
    /// Show the study's recovery plan and every earlier version
    Show {
        #[arg(long)]
        study: String,
        #[arg(long)]
        json: bool,
    },
    /// Check a plan file without recording it
    Check { file: PathBuf },
}

fn print_version(v: &RecordedRecoveryPlan) {
    let r = &v.plan.rehearsal;
    println!(
        "version {}  sha256 {}  recorded {} by {}",
        v.version, v.sha256, v.recorded_at, v.recorded_by
    );
    println!(
        "  canary {} at {}%  drain {} s  rehearsal {}: restart {:?}, cache loss {:?}, warm-up {:?}",
        v.plan.canary.route,
        v.plan.canary.share_percent,
        v.plan.drain_deadline_s,
        r.date,
        r.restart,
        r.cache_loss,
        r.warm_up
    );
}

pub async fn run(app: &App, cmd: RecoveryCommand) -> Result<Outcome, AppError> {
    match cmd {
        RecoveryCommand::Record {
            study,
            file,
            by,
            json,
        } => {
            let study = app.study_by_name(&study).await?;
            let recorded = app
                .record_recovery_plan(RecordRecoveryInput {
                    study_id: study.id,
                    plan_json: crate::read_document(&file, "recovery plan")?,
                    by,
                })
                .await
                .map_err(|e| AppError::new(e.code, format!("{}: {}", file.display(), e.message)))?;
            if json {
                print_json(&recorded)?;
            } else {
                println!("{}", recorded.sha256);
                print_version(&recorded);
            }
            Ok(Outcome::Success)
        }
        RecoveryCommand::Show { study, json } => {
            let study = app.study_by_name(&study).await?;
            let status = app.recovery_status(study.id).await?;
            if json {
                print_json(&status)?;
                return Ok(Outcome::Success);
            }
            match &status.current {
                None => println!(
                    "study `{}` has no recovery plan: the recovery check cannot be signed yet",
                    study.name
                ),
                Some(current) => {
                    println!("{}", current.plan.canonical_json());
                    for v in &status.versions {
                        print_version(v);
                    }
                }
            }
            Ok(Outcome::Success)
        }
        RecoveryCommand::Check { file } => {
            let problems = app.check_recovery_plan(&crate::read_document(&file, "recovery plan")?);
            Ok(crate::report_problems(&file, "recovery plan", &problems))
        }
    }
}
