use std::path::PathBuf;

use clap::{Args, Subcommand};
use kvgate_app::domain::display;
use kvgate_app::domain::policy::LockedPolicy;
use kvgate_app::{App, AppError};

use crate::{print_json, Outcome};

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Lock the acceptance policy of a study (a change locks the next version); prints its sha256
    Lock {
        /// Name of the study
        #[arg(long)]
        study: String,
        /// The policy JSON (schemas/policy.schema.json)
        #[arg(long)]
        file: PathBuf,
        /// Who locks it
        #[arg(long)]
        by: String,
        /// Print the locked policy as JSON
        #[arg(long)]
        json: bool,
    },
    /// Show the study's locked policy and every earlier version
    Show {
        #[arg(long)]
        study: String,
        #[arg(long)]
        json: bool,
    },
    /// Check a policy file without locking it
    Check { file: PathBuf },
}

fn print_version(v: &LockedPolicy) {
    println!(
        "version {}  sha256 {}  locked {} by {}  ({} runs with results existed)",
        v.version, v.sha256, v.locked_at, v.locked_by, v.runs_at_lock
    );
    if v.changed_after_results {
        println!("  CHANGED AFTER RESULTS EXISTED: this version replaced an earlier one");
    }
    if v.first_lock_after_results {
        println!(
            "  FIRST LOCKED AFTER RESULTS EXISTED: the floors were not set before results could be read"
        );
    }
}

pub async fn run(app: &App, cmd: PolicyCommand) -> Result<Outcome, AppError> {
    match cmd {
        PolicyCommand::Lock {
            study,
            file,
            by,
            json,
        } => {
            let study = app.study_by_name(&study).await?;
            let text = crate::read_document(&file, "policy")?;
            let locked = app
                .lock_policy(kvgate_app::analysis::LockPolicyInput {
                    study_id: study.id,
                    policy_json: text,
                    locked_by: by,
                })
                .await
                .map_err(|e| AppError::new(e.code, format!("{}: {}", file.display(), e.message)))?;
            if json {
                print_json(&locked)?;
            } else {
                println!("{}", locked.sha256);
                print_version(&locked);
            }
            Ok(Outcome::Success)
        }
        PolicyCommand::Show { study, json } => {
            let study = app.study_by_name(&study).await?;
            let status = app.policy_status(study.id).await?;
            if json {
                print_json(&status)?;
                return Ok(Outcome::Success);
            }
            match &status.current {
                None => println!(
                    "study `{}` has no locked policy: its results stay hidden until one is locked",
                    study.name
                ),
                Some(current) => {
                    println!("{}", current.policy.canonical_json());
                    for v in &status.versions {
                        print_version(v);
                    }
                }
            }
            Ok(Outcome::Success)
        }
        PolicyCommand::Check { file } => {
            let problems = app.check_policy(&crate::read_document(&file, "policy")?);
            Ok(crate::report_problems(&file, "policy", &problems))
        }
    }
}

/// `kvgate analyze`
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Name of the study
    #[arg(long)]
    study: String,
    /// Print the whole analysis as one JSON document (schemas/analysis.schema.json)
    #[arg(long)]
    json: bool,
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(
        || "absent".into(),
        |x| {
            format!("{x:.6}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_owned()
        },
    )
}

pub async fn analyze(app: &App, args: AnalyzeArgs) -> Result<Outcome, AppError> {
    let study = app.study_by_name(&args.study).await?;
    let a = app.analyze(study.id).await?;
    if args.json {
        print_json(&a)?;
        return Ok(Outcome::Success);
    }
    println!("study {} ({})", a.study_name, a.provenance_label);
    println!(
        "policy version {} sha256 {} locked {} by {}",
        a.policy_version, a.policy_sha256, a.policy_locked_at, a.policy_locked_by
    );
    if a.policy_changed_after_results {
        println!("WARNING: the policy changed after results existed");
    }
    if a.policy_first_lock_after_results {
        println!("WARNING: the policy was first locked after results existed");
    }
    if let Some(nf) = &a.body.noise_floor {
        println!(
            "noise floor (B0 vs B0): n {} flips {} ({})",
            nf.n,
            nf.b + nf.c,
            num(Some(nf.flip_rate))
        );
    }
    for c in &a.body.cells {
        println!();
        println!("cell {}  manifest {}", c.cell, c.manifest_sha256);
        let r = &c.requests;
        let accepted = match (r.accepted, r.validated) {
            (Some(a), Some(v)) => format!(" accepted {a}/{v}"),
            _ => String::new(),
        };
        println!(
            "  requests offered {} completed {} failed {} refused {} timeout {} unfinished {}{accepted}",
            r.offered, r.completed, r.failed, r.refused, r.timeout, r.unfinished
        );
        if !c.valid {
            println!(
                "  INVALID: no score. {}",
                c.decision.table_decision.as_deref().unwrap_or_default()
            );
            for reason in &c.invalid_reasons {
                println!("    {reason}");
            }
        }
        for (class, l) in &c.latency {
            println!(
                "  {class}: n {}  TTFT p50/p90/p99 {}/{}/{} ms  ITL (network chunks) p50 {} ms  e2e p99 {} ms",
                l.count,
                num(l.ttft_ms.p50),
                num(l.ttft_ms.p90),
                num(l.ttft_ms.p99),
                num(l.itl_ms.p50),
                num(l.e2e_ms.p99)
            );
            if l.client_delay_ms.count > 0 || l.engine_itl_ms.count > 0 {
                println!(
                    "  {class}: client delay p50/p99 {}/{} ms over {}  engine time per token p50 {} ms over {}",
                    num(l.client_delay_ms.p50),
                    num(l.client_delay_ms.p99),
                    l.client_delay_ms.count,
                    num(l.engine_itl_ms.p50),
                    l.engine_itl_ms.count
                );
            }
        }
        for k in &c.contracts {
            println!("  contract {}", k.describe());
        }
        for m in &c.corpus_mismatches {
            println!(
                "  CORPUS MISMATCH run {}: corpus {} is not the manifest's evaluation corpus {}",
                m.run, m.run_corpus_sha256, m.manifest_corpus_sha256
            );
        }
        if let Some(point) = &c.operating_point {
            println!("  goodput at {}", point.describe());
        }
        for other in &c.other_points {
            println!(
                "  not averaged in (another operating point, {}): runs {:?}",
                other.point.describe(),
                other.runs
            );
        }
        if let Some(cmp) = c.goodput_comparable.as_ref().filter(|g| !g.comparable) {
            println!(
                "  goodput NOT COMPARED with B0: {}",
                cmp.reason.as_deref().unwrap_or_default()
            );
        }
        for (class, g) in &c.goodput {
            println!(
                "  goodput {class}: {}{}  good {} of cohort {} (unfinished {}, failed {}, refused {})",
                display::rate(g.per_s, "good/s"),
                if g.slo_only { " (SLO-only)" } else { "" },
                g.good,
                g.cohort,
                g.unfinished,
                g.failed,
                g.refused
            );
        }
        for e in &c.envelope {
            let mut point = e.offered_rps.map_or_else(
                || "a point without an offered rate".to_owned(),
                |r| display::rate(Some(r), "req/s"),
            );
            if let Some(cap) = e.client_concurrency {
                point.push_str(&format!(" (client cap {cap} in flight)"));
            }
            println!(
                "  envelope {point} {}: good {} of {} ({}), within TTFT/ITL/e2e SLO {}/{}/{}, goodput {} over {} run(s){}{}",
                e.class,
                e.good,
                e.cohort,
                display::share(e.good_share),
                display::share(e.slo_share.ttft),
                display::share(e.slo_share.itl),
                display::share(e.slo_share.e2e),
                display::rate(e.goodput_per_s.mean, "good/s"),
                e.repeats,
                if e.slo_only { " (SLO-only)" } else { "" },
                e.cost_per_good_response
                    .map(|x| format!(", cost {} per good response", display::figure(Some(x))))
                    .unwrap_or_default()
            );
        }
        if let Some(knee) = c.knee_rps {
            println!("  knee {}", display::rate(Some(knee), "req/s"));
        }
        // Allocated memory beside usable KV capacity: a flat pool can hold more tokens.
        let cap = &c.capacity;
        if cap.engine_kv_tokens.is_some() || cap.engine_kv_mib.is_some() {
            println!(
                "  engine KV capacity: {} tokens, {}",
                cap.engine_kv_tokens
                    .map(display::count)
                    .unwrap_or_else(|| "absent".into()),
                cap.engine_kv_mib
                    .map(kvgate_app::domain::device_memory::size_mib)
                    .unwrap_or_else(|| "size absent".into())
            );
        }
        if let Some(memory) = &cap.device_memory {
            println!("  device memory: {}", memory.describe());
            for d in &memory.differences {
                println!("    differs: {d}");
            }
        }
        for p in c
            .paired
            .iter()
            .filter(|p| p.kind != kvgate_app::domain::analysis::StratumKind::Marginal)
        {
            println!(
                "  paired {}{}: n {} b {} c {} Δ {} p {} [{}, {}] margin {} → {:?}",
                p.stratum,
                if p.protected { " (protected)" } else { "" },
                p.n,
                p.b,
                p.c,
                num(p.delta),
                num(Some(p.mcnemar_p)),
                num(p.ci_low),
                num(p.ci_high),
                p.margin,
                p.verdict
            );
        }
        if !c.unpaired.is_empty() {
            println!("  unpaired: {}", c.unpaired.len());
            for u in &c.unpaired {
                println!("    {}: {}", u.key, u.detail);
            }
        }
        for g in &c.decision.goodput_by_class {
            println!(
                "  goodput gate {}: {} — {}",
                g.class,
                serde_json::to_value(g.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                g.reason
            );
        }
        for f in &c.decision.uncontrolled_findings {
            println!(
                "  UNCONTROLLED against {}: {} ({} → {})",
                f.against,
                f.path,
                f.reference_value.as_deref().unwrap_or("absent"),
                f.candidate_value.as_deref().unwrap_or("absent")
            );
        }
        for f in &c.decision.accepted_findings {
            println!(
                "  accepted by intervention (event {}, {}): {} against {} — {}",
                f.event, f.by, f.finding.path, f.finding.against, f.why
            );
        }
        println!("  decision: {}", c.decision.headline);
        for rule in &c.decision.rules {
            println!("    - {rule}");
        }
    }
    Ok(Outcome::Success)
}
