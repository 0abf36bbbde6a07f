use clap::{Args, Subcommand};
use kvgate_app::domain::stats::{paired_stats, PairedStats};
use kvgate_app::{AppError, ErrorCode};

use crate::{print_json, Outcome};

#[derive(Debug, Subcommand)]
pub enum StatsCommand {
    /// Paired comparison of a candidate with the baseline from its discordant counts: Δ, the
    /// exact McNemar p-value, Tango's score interval at level 1 − 2·alpha and the
    /// non-inferiority verdict against the margin
    Paired(PairedArgs),
    /// How many paired items a non-inferiority margin needs at a discordance rate (share of
    /// pairs where exactly one side is accepted), assuming no true difference
    Plan(PlanArgs),
}

/// The planner's inputs
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Non-inferiority margin on Δ, e.g. 0.02 (0 < margin < 1)
    #[arg(long, allow_negative_numbers = true)]
    margin: f64,
    /// Expected share of discordant pairs, e.g. 0.1; the B0-vs-B0 flip rate is a floor for it
    #[arg(long, allow_negative_numbers = true)]
    discordance: f64,
    /// One-sided significance level (the gate's, after Bonferroni)
    #[arg(long, allow_negative_numbers = true)]
    alpha: f64,
    /// Wanted power, e.g. 0.8
    #[arg(long, default_value_t = 0.8, allow_negative_numbers = true)]
    power: f64,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

/// Counts of one paired quality comparison, candidate against baseline
#[derive(Debug, Args)]
pub struct PairedArgs {
    /// Items the baseline accepted and the candidate rejected
    #[arg(long)]
    b: u64,
    /// Items the baseline rejected and the candidate accepted
    #[arg(long)]
    c: u64,
    /// Paired items in all (at least b + c)
    #[arg(long)]
    n: u64,
    /// Non-inferiority margin on Δ = (c − b)/n, e.g. 0.02 (0 <= margin < 1)
    #[arg(long, allow_negative_numbers = true)]
    margin: f64,
    /// One-sided significance level; the interval is at 1 − 2·alpha (0 < alpha < 0.5)
    #[arg(long, allow_negative_numbers = true)]
    alpha: f64,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: StatsCommand) -> Result<Outcome, AppError> {
    match cmd {
        StatsCommand::Paired(args) => paired(args),
        StatsCommand::Plan(args) => plan(args),
    }
}

fn plan(args: PlanArgs) -> Result<Outcome, AppError> {
    let plan = kvgate_app::domain::stats::pairs_plan(
        args.margin,
        args.discordance,
        args.alpha,
        args.power,
    )
    .map_err(|e| AppError::new(ErrorCode::InvalidInput, e.to_string()))?;
    if args.json {
        print_json(&plan)?;
    } else {
        println!(
            "{} paired items for margin {} at discordance {}, one-sided alpha {}, power {}",
            plan.pairs, plan.margin, plan.discordance_rate, plan.alpha, plan.power
        );
    }
    Ok(Outcome::Success)
}

fn paired(args: PairedArgs) -> Result<Outcome, AppError> {
    let stats = paired_stats(args.b, args.c, args.n, args.margin, args.alpha)
        .map_err(|e| AppError::new(ErrorCode::InvalidInput, e.to_string()))?;
    if args.json {
        print_json(&stats)?;
    } else {
        print_table(&stats);
    }
    Ok(Outcome::Success)
}

fn print_table(s: &PairedStats) {
    let level = percent(s.level);
    let interval = match (s.ci_low, s.ci_high) {
        (Some(low), Some(high)) => format!("[{low:.4}, {high:.4}]  (Tango score, {level})"),
        _ => format!("none: no pairs  (Tango score, {level})"),
    };
    let delta = s
        .delta
        .map(|d| format!("{d:.4}"))
        .unwrap_or_else(|| "none: no pairs".into());
    let rows = [
        ("n", s.n.to_string()),
        (
            "b",
            format!("{}  (baseline accepted, candidate rejected)", s.b),
        ),
        (
            "c",
            format!("{}  (baseline rejected, candidate accepted)", s.c),
        ),
        ("Δ = (c − b)/n", delta),
        (
            "McNemar p",
            format!("{}  (exact, two-sided)", p_value(s.mcnemar_p)),
        ),
        ("interval", interval),
        (
            "margin",
            format!(
                "{}  (non-inferior when the lower bound > {})",
                s.margin,
                // + 0.0 turns −0 into 0 for a zero margin.
                -s.margin + 0.0
            ),
        ),
        ("verdict", s.verdict.as_text().to_owned()),
    ];
    for (name, value) in rows {
        println!("{name:<14} {value}");
    }
}

fn p_value(p: f64) -> String {
    if p >= 1e-4 || p == 0.0 {
        format!("{p:.4}")
    } else {
        format!("{p:.3e}")
    }
}

/// 0.9 → "90%", 0.975 → "97.5%".
fn percent(level: f64) -> String {
    let text = format!("{:.4}", level * 100.0);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}
