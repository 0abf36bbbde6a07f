use clap::Subcommand;
use kvgate_app::domain::study::{NewStudy, Study};
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
    }
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
