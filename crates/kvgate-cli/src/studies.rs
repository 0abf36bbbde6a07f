use clap::Subcommand;
use kvgate_app::domain::study::{NewStudy, Study, StudyProgress, StudyStep};
use kvgate_app::{App, AppError};

use crate::print_json;

#[derive(Debug, Subcommand)]
pub enum StudyCommand {
    /// Create a study
    Create {
        /// Name of the study (unique in the workspace, case-insensitive)
        name: String,
        /// What the study reviews
        #[arg(long, default_value = "")]
        description: String,
        /// Print the created study as JSON
        #[arg(long)]
        json: bool,
    },
    /// List every study, oldest first
    List {
        /// Print JSON instead of a table
        #[arg(long)]
        json: bool,
    },
    /// Show one study
    Show {
        /// Name of the study
        name: String,
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Where a study stands (manifests, policy, runs, review, sign-off) and its next step
    Progress {
        /// Name of the study
        name: String,
        /// Print JSON instead of text
        #[arg(long)]
        json: bool,
    },
    /// Add the recorded demo study to this database (once) and open it
    Demo {
        /// Print the demo study as JSON
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(app: &App, cmd: StudyCommand) -> Result<(), AppError> {
    match cmd {
        StudyCommand::Create {
            name,
            description,
            json,
        } => {
            let study = app.create_study(NewStudy { name, description }).await?;
            if json {
                print_json(&study)
            } else {
                println!("created study {} (id {})", study.name, study.id);
                Ok(())
            }
        }
        StudyCommand::List { json } => {
            let studies = app.list_studies().await?;
            if json {
                print_json(&studies)
            } else {
                print_table(&studies);
                Ok(())
            }
        }
        StudyCommand::Show { name, json } => {
            let study = app.study_by_name(&name).await?;
            if json {
                print_json(&study)
            } else {
                println!("id:          {}", study.id);
                println!("name:        {}", study.name);
                println!("provenance:  {}", study.provenance.label());
                println!("created_at:  {}", study.created_at);
                println!("description: {}", study.description);
                Ok(())
            }
        }
        StudyCommand::Progress { name, json } => {
            let study = app.study_by_name(&name).await?;
            let progress = app.study_progress(study.id).await?;
            if json {
                print_json(&progress)
            } else {
                print_progress(&progress);
                Ok(())
            }
        }
        StudyCommand::Demo { json } => {
            let study = app.open_demo().await?;
            if json {
                print_json(&study)
            } else {
                println!("opened the demo study {} (id {})", study.name, study.id);
                println!("{}", study.provenance.label());
                Ok(())
            }
        }
    }
}

fn print_progress(p: &StudyProgress) {
    let yes = |b: bool| if b { "frozen" } else { "not frozen" };
    println!("B0:             {}", yes(p.baseline_frozen));
    println!(
        "candidates:     {} frozen, {} drafts",
        p.candidates_frozen, p.drafts
    );
    match p.policy_version {
        Some(v) => println!("policy:         version {v} locked"),
        None => println!("policy:         not locked"),
    }
    println!(
        "runs:           {} cells with measured requests{}",
        p.cells_with_runs,
        if p.baseline_has_runs {
            ""
        } else {
            ", none of B0"
        }
    );
    match (p.disagreements_labelled, p.disagreements) {
        (Some(labelled), Some(all)) => {
            println!("review:         {labelled} of {all} disagreements labelled")
        }
        _ => println!("review:         withheld until the policy is locked (policy_not_locked)"),
    }
    println!(
        "sign-off:       {} of 4 checks signed, {} of {} candidates decided",
        p.checks_signed, p.candidates_decided, p.candidates_frozen
    );
    let next = match p.next {
        StudyStep::Manifests => "author and freeze B0 and a candidate (kvgate manifest freeze)",
        StudyStep::LockPolicy => "lock the acceptance policy (kvgate policy lock)",
        StudyStep::RunOrImport => {
            "run B0 and a candidate, or import their results (kvgate run quality, kvgate import)"
        }
        StudyStep::Review => "label the paired disagreements (kvgate review label)",
        StudyStep::SignOff => "sign the four checks and decide (kvgate signoff, kvgate decide)",
        StudyStep::Export => "export the packet (kvgate packet export)",
    };
    println!("next:           {next}");
}

fn print_table(studies: &[Study]) {
    if studies.is_empty() {
        println!("no studies");
        return;
    }
    let width = studies
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    println!(
        "{:>4}  {:<width$}  {:<14}  CREATED",
        "ID", "NAME", "PROVENANCE"
    );
    for s in studies {
        println!(
            "{:>4}  {:<width$}  {:<14}  {}",
            s.id,
            s.name,
            s.provenance.label(),
            s.created_at
        );
    }
}
