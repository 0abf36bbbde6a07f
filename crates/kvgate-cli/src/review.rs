use clap::Subcommand;
use kvgate_app::domain::review::ReviewLabel;
use kvgate_app::review::{LabelInput, ReviewFilter};
use kvgate_app::{App, AppError, ErrorCode};

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Mutex;

use kvgate_app::review::{ReviewIndex, ReviewPair};
use serde::ser::{Error as _, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::{print_json, Outcome};

#[derive(Debug, Subcommand)]
pub enum ReviewCommand {
    /// List the paired disagreements between B0 and each candidate (blind: sides A and B)
    List {
        #[arg(long)]
        study: String,
        /// One candidate cell only
        #[arg(long)]
        candidate: Option<String>,
        /// Also list this many agreeing pairs
        #[arg(long, default_value_t = 0)]
        agreeing: u32,
        #[arg(long)]
        json: bool,
    },
    /// Label a pair blind, by its sides: a_correct_b_wrong, b_correct_a_wrong, both_acceptable,
    /// both_wrong or ambiguous_item; appended to the study's audit chain, then the sides are
    /// revealed with the label they map to. A relabel (after the reveal) may also name
    /// candidate_regression or baseline_error, and is recorded as unblinded
    Label {
        /// The pair id as listed, STUDY:CELL/ITEM_ID
        #[arg(long)]
        pair: String,
        #[arg(long)]
        label: String,
        #[arg(long, default_value = "")]
        note: String,
        /// Who labels (defaults to the login name)
        #[arg(long, env = "USER")]
        by: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Verify the study's audit chain and the labels against it; exit 0 when intact
    Verify {
        #[arg(long)]
        study: String,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(app: &App, cmd: ReviewCommand) -> Result<Outcome, AppError> {
    match cmd {
        ReviewCommand::List {
            study,
            candidate,
            agreeing,
            json,
        } => {
            let study = app.study_by_name(&study).await?;
            let index = app
                .review_index(
                    study.id,
                    ReviewFilter {
                        candidate,
                        agreeing_sample: agreeing,
                        ..Default::default()
                    },
                )
                .await?;
            if json {
                print_queue_json(app, index).await?;
                return Ok(Outcome::Success);
            }
            for (cell, n) in &index.disagreements {
                println!("{cell}: {n} disagreements with B0");
            }
            println!("{} labelled", index.labelled);
            let side = |s: &kvgate_app::review::ReviewSide| {
                if s.accepted {
                    "accepted"
                } else {
                    "rejected"
                }
            };
            let mut out = std::io::stdout().lock();
            app.for_each_review_pair(&index, |p| {
                writeln!(
                    out,
                    "{}  A {}  B {}  {}{}",
                    p.pair_id,
                    side(&p.a),
                    side(&p.b),
                    p.label.map_or("unlabelled", |l| l.as_str()),
                    if p.unblinded { " (unblinded)" } else { "" }
                )
                .map_err(written)
            })
            .await?;
            Ok(Outcome::Success)
        }
        ReviewCommand::Label {
            pair,
            label,
            note,
            by,
            json,
        } => {
            let label = ReviewLabel::parse(&label).ok_or_else(|| {
                AppError::new(
                    ErrorCode::InvalidInput,
                    format!(
                        "--label: expected one of a_correct_b_wrong, b_correct_a_wrong, \
                         both_acceptable, both_wrong, ambiguous_item (or, for a revealed pair, \
                         candidate_regression, baseline_error), found {label:?}"
                    ),
                )
            })?;
            let outcome = app
                .label_pair(LabelInput {
                    pair_id: pair,
                    label,
                    note,
                    by,
                })
                .await?;
            if json {
                print_json(&outcome)?;
            } else {
                println!(
                    "labelled {} as {}{} (audit event {}); revealed: A = {}, B = {}: {}{}",
                    outcome.event.subject,
                    label.as_str(),
                    if outcome.unblinded {
                        " after the reveal"
                    } else {
                        " blind"
                    },
                    outcome.event.seq,
                    if outcome.candidate_is_a {
                        outcome.candidate.as_str()
                    } else {
                        "B0"
                    },
                    if outcome.candidate_is_a {
                        "B0"
                    } else {
                        outcome.candidate.as_str()
                    },
                    outcome.label.as_str(),
                    if outcome.unblinded {
                        " (unblinded: counted apart from the blind labels)"
                    } else {
                        ""
                    },
                );
            }
            Ok(Outcome::Success)
        }
    }
}

pub async fn audit(app: &App, cmd: AuditCommand) -> Result<Outcome, AppError> {
    match cmd {
        AuditCommand::Verify { study, json } => {
            let study = app.study_by_name(&study).await?;
            let report = app.verify_audit(study.id).await?;
            if json {
                print_json(&report)?;
            } else if report.intact {
                println!(
                    "intact: {} audit events, every label matches the chain",
                    report.events
                );
            } else {
                if let Some(b) = &report.chain_break {
                    println!("broken at event {}: {}", b.seq, b.reason);
                }
                for t in &report.tampered {
                    println!("tampered: {t}");
                }
            }
            Ok(if report.intact {
                Outcome::Success
            } else {
                Outcome::Failure(1)
            })
        }
    }
}

/// `kvgate signoff`
#[derive(Debug, clap::Args)]
pub struct SignoffArgs {
    #[arg(long)]
    study: String,
    /// compatibility, quality, operations or recovery
    #[arg(long)]
    check: String,
    #[arg(long)]
    by: String,
    /// Why the check is signed although its evidence shows a failure (an invalid cell, a
    /// failed protected floor); required then, recorded with the signature
    #[arg(long, default_value = "")]
    reason: String,
    #[arg(long)]
    json: bool,
}

/// `kvgate decide`
#[derive(Debug, clap::Args)]
pub struct DecideArgs {
    #[arg(long)]
    study: String,
    /// The candidate cell
    #[arg(long)]
    candidate: String,
    /// retain, calibrate, rollback or promote
    #[arg(long)]
    outcome: String,
    #[arg(long, env = "USER")]
    by: String,
    #[arg(long, default_value = "")]
    rationale: String,
    /// Record the decision although checks are unsigned or void (needs --rationale): an audit
    /// event shown in red on the Sign-off screen and in the packet
    #[arg(long = "override")]
    override_gate: bool,
    #[arg(long)]
    json: bool,
}

pub async fn signoff(app: &App, args: SignoffArgs) -> Result<Outcome, AppError> {
    use kvgate_app::signoff::{Check, SignInput};
    let check = Check::parse(&args.check).ok_or_else(|| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "--check: expected compatibility, quality, operations or recovery, found {:?}",
                args.check
            ),
        )
    })?;
    let study = app.study_by_name(&args.study).await?;
    let event = app
        .sign_check(SignInput {
            study_id: study.id,
            check,
            by: args.by,
            expected_sha256: None,
            reason: args.reason,
        })
        .await?;
    if args.json {
        print_json(&event)?;
    } else {
        println!(
            "signed {} over evidence {} (audit event {})",
            event.subject,
            event.payload["evidence_sha256"]
                .as_str()
                .unwrap_or_default(),
            event.seq
        );
    }
    Ok(Outcome::Success)
}

pub async fn decide(app: &App, args: DecideArgs) -> Result<Outcome, AppError> {
    use kvgate_app::signoff::{DecideInput, DecisionOutcome};
    let outcome = DecisionOutcome::parse(&args.outcome).ok_or_else(|| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "--outcome: expected retain, calibrate, rollback or promote, found {:?}",
                args.outcome
            ),
        )
    })?;
    let study = app.study_by_name(&args.study).await?;
    let event = app
        .decide(DecideInput {
            study_id: study.id,
            candidate: args.candidate,
            outcome,
            by: args.by,
            rationale: args.rationale,
            override_gate: args.override_gate,
        })
        .await?;
    if args.json {
        print_json(&event)?;
    } else {
        println!(
            "decided {} for {} (suggested {}; audit event {})",
            args.outcome, event.subject, event.payload["suggested"], event.seq
        );
        if event.payload["overridden"] == true {
            println!(
                "OVERRIDE: recorded past checks not signed over their current evidence ({}); \
                 rationale: {}",
                event.payload["overridden_checks"]
                    .as_array()
                    .map(|a| a
                        .iter()
                        .map(|o| format!(
                            "{} {}",
                            o["check"].as_str().unwrap_or("?"),
                            o["state"].as_str().unwrap_or("?")
                        ))
                        .collect::<Vec<_>>()
                        .join(", "))
                    .unwrap_or_default(),
                event.payload["rationale"].as_str().unwrap_or_default()
            );
        }
    }
    Ok(Outcome::Success)
}

fn written(e: std::io::Error) -> AppError {
    AppError::new(ErrorCode::Internal, format!("standard output: {e}"))
}

/// The queue as `print_json` writes a `ReviewQueue` (same keys, same order), each pair written
/// as it is read: a list of 100,000 pairs is never held whole.
#[derive(Serialize)]
struct QueueOut {
    study_id: i64,
    seed: String,
    pairs: Streamed,
    disagreements: BTreeMap<String, u64>,
    disagreements_total: u64,
    labelled: u64,
}

/// The pairs, as they arrive; an error ends the output unfinished (not valid JSON), never as
/// a shorter list.
struct Streamed(Mutex<Option<Receiver<Result<ReviewPair, String>>>>);

impl Serialize for Streamed {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let rx = self
            .0
            .lock()
            .map_err(|_| S::Error::custom("pairs already written"))?
            .take()
            .ok_or_else(|| S::Error::custom("pairs already written"))?;
        let mut seq = serializer.serialize_seq(None)?;
        for pair in rx {
            seq.serialize_element(&pair.map_err(S::Error::custom)?)?;
        }
        seq.end()
    }
}

async fn print_queue_json(app: &App, index: ReviewIndex) -> Result<(), AppError> {
    let (tx, rx) = sync_channel::<Result<ReviewPair, String>>(256);
    let out = QueueOut {
        study_id: index.study_id,
        seed: index.seed.clone(),
        pairs: Streamed(Mutex::new(Some(rx))),
        disagreements: index.disagreements.clone(),
        disagreements_total: index.disagreements_total,
        labelled: index.labelled,
    };
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut stdout, &out)?;
        writeln!(stdout)?;
        stdout.flush()
    });
    let read = app
        .for_each_review_pair(&index, |pair| {
            tx.send(Ok(pair))
                .map_err(|_| AppError::new(ErrorCode::Internal, "standard output closed"))
        })
        .await;
    if let Err(e) = &read {
        let _ = tx.send(Err(e.message.clone()));
    }
    drop(tx);
    let wrote = writer
        .join()
        .map_err(|_| AppError::new(ErrorCode::Internal, "the JSON writer stopped"))?;
    read?;
    wrote.map_err(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pair that could not be read fails the whole output: it is never a shorter list.
    #[test]
    fn an_error_among_the_pairs_fails_the_json_instead_of_ending_the_list() {
        let out = |items: Vec<Result<ReviewPair, String>>| {
            let (tx, rx) = sync_channel(items.len().max(1));
            for item in items {
                tx.send(item).unwrap();
            }
            drop(tx);
            serde_json::to_string_pretty(&QueueOut {
                study_id: 1,
                seed: "s".into(),
                pairs: Streamed(Mutex::new(Some(rx))),
                disagreements: BTreeMap::from([("Q8".to_owned(), 0)]),
                disagreements_total: 0,
                labelled: 0,
            })
        };
        let empty = out(Vec::new()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&empty).unwrap();
        assert_eq!(v["pairs"], serde_json::json!([]));
        let err = out(vec![Err("pair 1:Q8/x not found".into())]).unwrap_err();
        assert!(err.to_string().contains("pair 1:Q8/x not found"), "{err}");
    }
}
