//! `kvgate`: the workbench's actions from the command line, for CI pipelines and scripts.
//! Each subcommand parses its arguments, calls one `kvgate-app` action and prints the result.

mod endpoint;
mod evidence;
mod fixtures;
mod imports;
mod kv_capacity;
mod llm;
mod manifests;
mod packet;
mod policy;
mod recovery;
mod review;
mod runs;
mod stats;
mod studies;
mod validate;
mod weights;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kvgate_app::{App, AppError, DbLocation};

// Large buffers on huge pages (see `kvgate_app::huge_pages`).
#[global_allocator]
static ALLOCATOR: kvgate_app::huge_pages::LargeOnHugePages =
    kvgate_app::huge_pages::LargeOnHugePages;

#[derive(Debug, Parser)]
#[command(
    name = "kvgate",
    version,
    about = "KV Gate: decide whether a lower-precision KV cache may go to production, on frozen, paired, hashed evidence"
)]
struct Cli {
    /// Database file to use (default: kvgate.sqlite in the OS data directory, seeded with a synthetic demo study)
    #[arg(long, global = true, env = "KVGATE_DB", value_name = "PATH")]
    db: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create, list and show studies
    #[command(subcommand)]
    Study(studies::StudyCommand),
    /// Validate, hash, freeze, compare and export manifests of deployment bundles
    #[command(subcommand)]
    Manifest(manifests::ManifestCommand),
    /// The KV memory model: payload bytes and the optional terms, token capacity for a budget
    KvCapacity(kv_capacity::KvCapacityArgs),
    /// Paired statistics from counts: Δ, exact McNemar p, Tango's interval, non-inferiority verdict
    #[command(subcommand)]
    Stats(stats::StatsCommand),
    /// Generate, show and cross-check paired quality fixture corpora (synthetic)
    #[command(subcommand)]
    Fixtures(fixtures::FixturesCommand),
    /// Validate one response against one fixture item's approved answer
    Validate(validate::ValidateArgs),
    /// Weights digest of a checkpoint (scale tensors excluded) and base/candidate comparison
    #[command(subcommand)]
    Weights(weights::WeightsCommand),
    /// Compatibility evidence: what the engine actually ran, read from its startup log
    #[command(subcommand)]
    Evidence(evidence::EvidenceCommand),
    /// Run a paired-quality pass or a load run against a cell's server; list and show runs
    #[command(subcommand)]
    Run(runs::RunCommand),
    /// Endpoint API keys in the OS keyring (never in the database, a log or a packet)
    #[command(subcommand)]
    Endpoint(endpoint::EndpointCommand),
    /// Local llama.cpp servers (the CPU analogue of B0 and the candidate)
    #[command(subcommand)]
    Llm(llm::LlmCommand),
    /// Import files other tools wrote (vLLM bench, GuideLLM, AIPerf, inference-perf,
    /// Prometheus, startup logs, KV Gate JSONL, CSV/Parquet) into one cell, atomically
    Import(imports::ImportArgs),
    /// The acceptance policy: lock it before results, show its versions, check a file
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// The recovery plan (check 4): canary route, breach rule, drain deadline, dated rehearsal
    #[command(subcommand)]
    Recovery(recovery::RecoveryCommand),
    /// The architecture-review packet: export it, verify it
    #[command(subcommand)]
    Packet(packet::PacketCommand),
    /// Analyze a study under its locked policy: latency, useful goodput, paired statistics, decision
    Analyze(policy::AnalyzeArgs),
    /// The blind review queue of paired disagreements; label pairs (audited)
    #[command(subcommand)]
    Review(review::ReviewCommand),
    /// The audit chain of labels, sign-offs and decisions
    #[command(subcommand)]
    Audit(review::AuditCommand),
    /// Sign one acceptance check over the sha256 of its current evidence
    Signoff(review::SignoffArgs),
    /// Record the decision for a candidate: retain, calibrate or rollback
    Decide(review::DecideArgs),
}

/// How a command ended when it did not fail outright.
pub enum Outcome {
    Success,
    /// A verdict that is not an error: e.g. an invalid manifest, a red diff finding.
    Failure(u8),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Failure(code)) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {}", e.message);
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<Outcome, AppError> {
    // Commands on files alone never open (or create) a database.
    let command = match cli.command {
        Command::KvCapacity(args) => return kv_capacity::run(args),
        Command::Stats(cmd) => return stats::run(cmd),
        Command::Fixtures(cmd) => return fixtures::run(cmd),
        Command::Validate(args) => return validate::run(args),
        Command::Weights(cmd) => return weights::run(cmd),
        Command::Evidence(cmd) => return evidence::run(cmd),
        Command::Endpoint(cmd) => return endpoint::run(cmd).await,
        Command::Manifest(cmd) => match manifests::run_offline(cmd) {
            Ok(done) => return done,
            Err(cmd) => Command::Manifest(cmd),
        },
        Command::Packet(cmd) => match packet::run_offline(cmd).await {
            Ok(done) => return done,
            Err(cmd) => Command::Packet(cmd),
        },
        other => other,
    };
    let app = App::open(DbLocation::from_option(cli.db)).await?;
    let result = match command {
        Command::Study(cmd) => studies::run(&app, cmd).await.map(|()| Outcome::Success),
        Command::Manifest(cmd) => manifests::run(&app, cmd).await,
        Command::KvCapacity(args) => kv_capacity::run(args),
        Command::Stats(cmd) => stats::run(cmd),
        Command::Fixtures(cmd) => fixtures::run(cmd),
        Command::Validate(args) => validate::run(args),
        Command::Weights(cmd) => weights::run(cmd),
        Command::Evidence(cmd) => evidence::run(cmd),
        Command::Endpoint(cmd) => endpoint::run(cmd).await,
        Command::Run(cmd) => runs::run(&app, cmd).await,
        Command::Llm(cmd) => llm::run(&app, cmd).await,
        Command::Import(args) => imports::run(&app, args).await,
        Command::Policy(cmd) => policy::run(&app, cmd).await,
        Command::Analyze(args) => policy::analyze(&app, args).await,
        Command::Recovery(cmd) => recovery::run(&app, cmd).await,
        Command::Packet(cmd) => packet::run(&app, cmd).await,
        Command::Review(cmd) => review::run(&app, cmd).await,
        Command::Audit(cmd) => review::audit(&app, cmd).await,
        Command::Signoff(args) => review::signoff(&app, args).await,
        Command::Decide(args) => review::decide(&app, args).await,
    };
    app.close().await;
    result
}

/// Prints a value as pretty JSON on stdout.
/// A JSON document the user points at (a policy, a recovery plan), read whole.
fn read_document(file: &std::path::Path, what: &str) -> Result<String, AppError> {
    std::fs::read_to_string(file).map_err(|e| {
        AppError::new(
            kvgate_app::ErrorCode::InvalidInput,
            format!("{}: cannot read the {what} file: {e}", file.display()),
        )
    })
}

/// `check FILE`: "a valid …" and exit 0, or one line per problem (path, expected, found) and 1.
fn report_problems(
    file: &std::path::Path,
    what: &str,
    problems: &[kvgate_app::domain::policy::PolicyProblem],
) -> Outcome {
    if problems.is_empty() {
        println!("{}: a valid {what}", file.display());
        return Outcome::Success;
    }
    for p in problems {
        println!("{}: {p}", file.display());
    }
    Outcome::Failure(1)
}

fn print_json<T: serde::Serialize>(value: &T) -> Result<(), AppError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| AppError::new(kvgate_app::ErrorCode::Internal, e.to_string()))?;
    println!("{text}");
    Ok(())
}
