use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use clap::Subcommand;
use kvgate_app::formats::weights::SCALE_TENSOR_PATTERNS;
use kvgate_app::weights::{compare_weights, digest_weights, ProgressThrottle};
use kvgate_app::AppError;

use crate::{print_json, Outcome};

#[derive(Debug, Subcommand)]
pub enum WeightsCommand {
    /// The weights digest of a checkpoint (safetensors directory, sharded index or GGUF file),
    /// over the weight tensors only: KV/attention scale tensors are listed, not hashed into it
    Digest {
        path: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Compare a candidate checkpoint with its base; exits 1 when the weights differ
    Compare {
        base: PathBuf,
        candidate: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

/// A progress line on stderr (bytes hashed / total), at most a few times a second.
struct ProgressLine {
    throttle: ProgressThrottle,
    show: bool,
}

impl ProgressLine {
    fn new() -> Self {
        ProgressLine {
            throttle: ProgressThrottle::new(200),
            show: std::io::stderr().is_terminal(),
        }
    }

    fn update(&self, done: u64, total: u64) {
        if !self.show || !self.throttle.pass(done, total) {
            return;
        }
        let mib = |b: u64| b as f64 / 1048576.0;
        let pct = if total == 0 {
            100.0
        } else {
            done as f64 * 100.0 / total as f64
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\rhashed {:.1} / {:.1} MiB ({pct:.0}%)   ",
            mib(done),
            mib(total)
        );
        if done >= total {
            let _ = writeln!(err);
        }
    }
}

pub fn run(cmd: WeightsCommand) -> Result<Outcome, AppError> {
    let progress = ProgressLine::new();
    let cancel = AtomicBool::new(false);
    let update = |done, total| progress.update(done, total);
    match cmd {
        WeightsCommand::Digest { path, json } => {
            let d = digest_weights(&path, &update, &cancel)?;
            if json {
                print_json(&d)?;
                return Ok(Outcome::Success);
            }
            println!("weights digest  {}", d.weights_digest);
            println!("scheme          {}", d.digest_scheme);
            println!(
                "weight tensors  {} ({} bytes) in {} file(s)",
                d.weight_tensor_count,
                d.weight_bytes,
                d.files.len()
            );
            println!(
                "scale tensors   {} ({} bytes)",
                d.scale_tensor_count, d.scale_bytes
            );
            if let Some(s) = &d.scales_digest {
                println!("scales digest   {s}");
            }
            for s in &d.scale_tensors {
                println!(
                    "  {}  layer {}  {:?}  {:?}  {}  range [{}, {}]",
                    s.tensor.name,
                    s.layer.map(|l| l.to_string()).unwrap_or_else(|| "?".into()),
                    s.kind,
                    s.granularity,
                    s.tensor.dtype,
                    s.min.map(|v| v.to_string()).unwrap_or_else(|| "?".into()),
                    s.max.map(|v| v.to_string()).unwrap_or_else(|| "?".into()),
                );
            }
            let patterns: Vec<&str> = SCALE_TENSOR_PATTERNS.iter().map(|p| p.pattern).collect();
            println!("scale patterns  {}", patterns.join(", "));
            for note in &d.notes {
                println!("note: {note}");
            }
            Ok(Outcome::Success)
        }
        WeightsCommand::Compare {
            base,
            candidate,
            json,
        } => {
            let result = compare_weights(&base, &candidate, &update, &cancel)?;
            if json {
                print_json(&result)?;
            } else {
                println!("{}", result.comparison);
            }
            Ok(if result.comparison.weights_identical() {
                Outcome::Success
            } else {
                Outcome::Failure(1)
            })
        }
    }
}
