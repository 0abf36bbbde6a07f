use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Subcommand, ValueEnum};
use kvgate_app::domain::fixtures::{Preset, Split, TaskType};
use kvgate_app::fixtures::{
    check_corpora, export_fixtures, generate_fixtures, import_fixtures, open_corpus,
    open_team_corpus, ExportFixtures, ExportFormat, GenerateFixtures, ImportFixtures,
};
use kvgate_app::AppError;

use crate::{print_json, Outcome};

/// A preset by its name, the names offered being the core's.
pub fn preset_parser() -> impl TypedValueParser<Value = Preset> {
    PossibleValuesParser::new(Preset::ALL.iter().map(|p| p.as_str()))
        .map(|s| Preset::parse(&s).unwrap_or(Preset::Test2k))
}

/// A task type by its name, the names offered being the core's.
fn task_type_parser() -> impl TypedValueParser<Value = TaskType> {
    PossibleValuesParser::new(TaskType::ALL.iter().map(|t| t.as_str()))
        .map(|s| TaskType::parse(&s).unwrap_or(TaskType::Literal))
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SplitArg {
    Calibration,
    Evaluation,
}

impl From<SplitArg> for Split {
    fn from(s: SplitArg) -> Split {
        match s {
            SplitArg::Calibration => Split::Calibration,
            SplitArg::Evaluation => Split::Evaluation,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum FixturesCommand {
    /// Generate a synthetic, stratified corpus (items.jsonl + corpus.json) into a new folder
    Generate {
        /// Seed of the generator: the same seed gives a byte-identical corpus
        #[arg(long)]
        seed: u64,
        /// Length-class bounds (tokens of the rendered prompt)
        #[arg(long, value_parser = preset_parser())]
        preset: Preset,
        /// tokenizer.json to count tokens with (default: the pinned SmolLM2-135M-Instruct tokenizer)
        #[arg(long)]
        tokenizer: Option<PathBuf>,
        /// The model's chat template (Jinja, e.g. a GGUF's tokenizer.chat_template) to render the
        /// prompts with before counting (default: ChatML); its sha256 is recorded in corpus.json
        #[arg(long, value_name = "FILE")]
        chat_template: Option<PathBuf>,
        /// Folder to create (must not exist or be empty)
        #[arg(long)]
        out: PathBuf,
        /// Items per cell (language × length class × position × task type)
        #[arg(long, default_value_t = 1)]
        per_stratum: usize,
        #[arg(long, value_enum, default_value = "evaluation")]
        split: SplitArg,
        /// Task types to generate, comma-separated (default: literal, numeric, multi_document,
        /// business_rule); the long-context types are variable_tracking, multi_key, multi_value and
        /// aggregation
        #[arg(long, value_delimiter = ',', value_parser = task_type_parser())]
        task_types: Vec<TaskType>,
    },
    /// Import a team's own approved prompts (JSONL: one item per line with `id`, `messages`,
    /// `labels`, `check` and optional `evidence`) into a new corpus folder, counted with the
    /// cell's tokenizer and template. Checks: json_fields, exact_text, number (value, tolerance),
    /// regex (whole response), refusal. Every bad line is named; nothing is written unless all
    /// lines are good and no prompt overlaps a corpus given with --disjoint-from
    Import {
        /// The team's item file
        file: PathBuf,
        #[arg(long, value_enum)]
        split: SplitArg,
        /// Folder to create (must not exist or be empty)
        #[arg(long)]
        out: PathBuf,
        /// A corpus the prompts must not overlap (normalized text), e.g. the calibration set;
        /// repeatable
        #[arg(long, value_name = "DIR")]
        disjoint_from: Vec<PathBuf>,
        /// tokenizer.json to count tokens with (default: the pinned SmolLM2-135M-Instruct tokenizer)
        #[arg(long)]
        tokenizer: Option<PathBuf>,
        /// The model's chat template (Jinja) to render the prompts with (default: ChatML)
        #[arg(long, value_name = "FILE")]
        chat_template: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Show a corpus's metadata after checking items.jsonl against its digest
    Show {
        dir: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Prove two corpora (e.g. calibration and evaluation) share no item and no protected answer;
    /// exits 1 when they do
    Check { a: PathBuf, b: PathBuf },
    /// Write a corpus's items as a task of the harness a team runs (lm-eval-task: YAML + JSONL,
    /// one task per language under one group; inspect-task: a Python task file + JSONL), each
    /// item sent as KV Gate sends it. Import the harness's results with `kvgate import --format
    /// lm-eval-samples|inspect`: KV Gate's validator judges every answer
    Export {
        #[arg(long, value_parser = ["lm-eval-task", "inspect-task"])]
        format: String,
        /// Corpus folder (items.jsonl + corpus.json)
        #[arg(long)]
        corpus: PathBuf,
        /// Folder to create (must not exist or be empty)
        #[arg(long)]
        out: PathBuf,
        /// Task name (default kvgate_{split}_{seed})
        #[arg(long)]
        name: Option<String>,
        /// Only items of a stratum, e.g. `--only length_class=short` (applied before --limit)
        #[arg(long, value_name = "KEY=VALUE")]
        only: Vec<String>,
        /// A balanced subset of this many items: the items `kvgate run quality --limit` sends
        #[arg(long)]
        limit: Option<u32>,
        /// A manifest whose output cap, temperature and stop strings the task sends (default 256
        /// tokens, temperature 0)
        #[arg(long)]
        manifest: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: FixturesCommand) -> Result<Outcome, AppError> {
    match cmd {
        FixturesCommand::Generate {
            seed,
            preset,
            tokenizer,
            chat_template,
            out,
            per_stratum,
            split,
            task_types,
        } => {
            let corpus = generate_fixtures(&GenerateFixtures {
                seed,
                preset,
                split: split.into(),
                per_stratum,
                task_types: (!task_types.is_empty()).then_some(task_types),
                tokenizer_path: tokenizer.map(|p| p.display().to_string()),
                chat_template_path: chat_template.map(|p| p.display().to_string()),
                out_dir: out.display().to_string(),
            })?;
            println!(
                "generated {} synthetic items into {} (items.jsonl sha256 {}, tokenizer sha256 {})",
                corpus.meta.item_count,
                corpus.dir,
                corpus.meta.items_sha256,
                corpus.meta.tokenizer_sha256
            );
            Ok(Outcome::Success)
        }
        FixturesCommand::Import {
            file,
            split,
            out,
            disjoint_from,
            tokenizer,
            chat_template,
            json,
        } => {
            let corpus = import_fixtures(&ImportFixtures {
                file: file.display().to_string(),
                split: split.into(),
                out_dir: out.display().to_string(),
                disjoint_from: disjoint_from
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect(),
                tokenizer_path: tokenizer.map(|p| p.display().to_string()),
                chat_template_path: chat_template.map(|p| p.display().to_string()),
            })?;
            if json {
                print_json(&corpus.meta)?;
            } else {
                print_team_meta(&corpus.dir, &corpus.meta, "imported");
            }
            Ok(Outcome::Success)
        }
        FixturesCommand::Show { dir, json } if is_team(&dir) => {
            let corpus = open_team_corpus(&dir)?;
            if json {
                print_json(&corpus.meta)?;
            } else {
                print_team_meta(&corpus.dir, &corpus.meta, "verified");
            }
            Ok(Outcome::Success)
        }
        FixturesCommand::Show { dir, json } => {
            let corpus = open_corpus(&dir)?;
            if json {
                print_json(&corpus.meta)?;
            } else {
                let m = &corpus.meta;
                println!("corpus {} (synthetic)", corpus.dir);
                println!("items         {}", m.item_count);
                println!("seed          {}", m.seed);
                println!("items sha256  {} (verified)", m.items_sha256);
                println!("tokenizer     {}", m.tokenizer_sha256);
                println!(
                    "{}",
                    serde_json::to_string_pretty(&m.counts).unwrap_or_default()
                );
            }
            Ok(Outcome::Success)
        }
        FixturesCommand::Export {
            format,
            corpus,
            out,
            name,
            only,
            limit,
            manifest,
            json,
        } => {
            let format = match format.as_str() {
                "inspect-task" => ExportFormat::InspectTask,
                _ => ExportFormat::LmEvalTask,
            };
            let done = export_fixtures(&ExportFixtures {
                format,
                corpus_dir: corpus.display().to_string(),
                out_dir: out.display().to_string(),
                name,
                only: crate::runs::strata_filter(&only)?,
                limit,
                manifest_path: manifest.map(|p| p.display().to_string()),
            })?;
            if json {
                print_json(&done)?;
            } else {
                println!(
                    "exported {} synthetic items into {}: {}",
                    done.items,
                    done.dir,
                    done.files.join(", ")
                );
            }
            Ok(Outcome::Success)
        }
        FixturesCommand::Check { a, b } => {
            let report = check_corpora(&a, &b)?;
            print_json(&report)?;
            Ok(if report.is_disjoint() {
                Outcome::Success
            } else {
                Outcome::Failure(1)
            })
        }
    }
}

/// Whether a folder's corpus.json names a team's corpus.
fn is_team(dir: &std::path::Path) -> bool {
    std::fs::read_to_string(dir.join(kvgate_app::fixtures::CORPUS_FILE))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v["kind"] == "team")
}

fn print_team_meta(dir: &str, m: &kvgate_app::domain::fixtures::team::TeamCorpusMeta, how: &str) {
    println!(
        "corpus {dir} (the team's own data, not synthetic; {} split)",
        m.split
    );
    println!("items         {} ({how})", m.item_count);
    println!(
        "source        {} (sha256 {})",
        m.source_file, m.source_sha256
    );
    println!("items sha256  {}", m.items_sha256);
    println!("tokenizer     {}", m.tokenizer_sha256);
    println!("template      {}", m.chat_template);
    let checks: Vec<String> = m.checks.iter().map(|(k, n)| format!("{k} {n}")).collect();
    println!("checks        {}", checks.join(", "));
    for (key, values) in &m.labels {
        let values: Vec<String> = values.iter().map(|(v, n)| format!("{v} {n}")).collect();
        println!("label {key}: {}", values.join(", "));
    }
    for d in &m.disjoint_from {
        println!(
            "disjoint from the {} corpus {} ({} items): no prompt shared",
            d.split, d.items_sha256, d.item_count
        );
    }
}
