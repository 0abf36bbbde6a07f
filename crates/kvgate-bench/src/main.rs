//! `make bench`: runs each benchmark and its anchor in the same run and prints one table with
//! the ratio, so figures are always compared under the same machine load.
//!
//! Anchors that need Python run with the interpreter named by `KVGATE_BENCH_PYTHON` (the
//! Makefile points it at the project's venv in `.llm/`, where it installs the anchor packages).

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use kvgate_core::fixtures::{generate_corpus, FixtureOptions, Preset, Split, TokenCounter};
use kvgate_formats::tokenizer::PinnedTokenizer;

/// One measured row of the table.
struct Row {
    benchmark: &'static str,
    figure: f64,
    unit: &'static str,
    anchor: String,
    anchor_figure: Option<f64>,
    /// True when a larger figure is better (throughput), false for times.
    higher_is_better: bool,
}

impl Row {
    /// How many times better than the anchor (> 1 is better).
    fn ratio(&self) -> Option<f64> {
        let a = self.anchor_figure?;
        Some(if self.higher_is_better {
            self.figure / a
        } else {
            a / self.figure
        })
    }
}

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Tokens per second of the pinned tokenizer over a generated corpus, one encode per prompt,
/// against the Python `tokenizers` package on the same file and prompts.
fn tokenization() -> Result<Row, String> {
    let tokenizer_path = root().join("fixtures/tokenizers/smollm2-135m-instruct/tokenizer.json");
    let bytes = std::fs::read(&tokenizer_path).map_err(|e| e.to_string())?;
    let tokenizer =
        PinnedTokenizer::from_bytes("tokenizer.json", &bytes).map_err(|e| e.to_string())?;
    let options = FixtureOptions {
        split: Split::Evaluation,
        per_stratum: 4,
    };
    let corpus =
        generate_corpus(&tokenizer, 1, Preset::Test2k, &options).map_err(|e| e.to_string())?;
    let texts: Vec<&str> = corpus
        .items
        .iter()
        .map(|i| i.prompt_text.as_str())
        .collect();

    let rounds = 5;
    let mut best = f64::INFINITY;
    let mut tokens = 0usize;
    for _ in 0..rounds {
        let start = Instant::now();
        let mut n = 0;
        for t in &texts {
            n += tokenizer.count(t)?;
        }
        best = best.min(start.elapsed().as_secs_f64());
        tokens = n;
    }
    let figure = tokens as f64 / best;

    let items =
        std::env::temp_dir().join(format!("kvgate-bench-items-{}.jsonl", std::process::id()));
    std::fs::File::create(&items)
        .and_then(|mut f| f.write_all(&corpus.items_jsonl()))
        .map_err(|e| e.to_string())?;
    let python = std::env::var("KVGATE_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let anchor = Command::new(&python)
        .arg(root().join("crates/kvgate-bench/anchors/tokenize.py"))
        .arg(&tokenizer_path)
        .arg(&items)
        .arg(rounds.to_string())
        .output();
    let _ = std::fs::remove_file(&items);
    let (anchor_name, anchor_figure) = match anchor {
        Ok(out) if out.status.success() => {
            let v: serde_json::Value =
                serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
            let anchor_tokens = v["tokens"].as_u64().unwrap_or(0) as usize;
            if anchor_tokens != tokens {
                return Err(format!(
                    "the anchor counted {anchor_tokens} tokens, KV Gate {tokens}: not the same work"
                ));
            }
            (
                format!("Python tokenizers {}", v["version"].as_str().unwrap_or("?")),
                v["seconds"].as_f64().map(|s| tokens as f64 / s),
            )
        }
        Ok(out) => (
            format!(
                "Python tokenizers: failed ({})",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            None,
        ),
        Err(e) => (format!("Python tokenizers: {python}: {e}"), None),
    };
    Ok(Row {
        benchmark: "tokenize 288 test-2k prompts",
        figure,
        unit: "tokens/s",
        anchor: anchor_name,
        anchor_figure,
        higher_is_better: true,
    })
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<34} {:>14} {:<9} {:<40} {:>14} {:>8}",
        "benchmark", "figure", "unit", "anchor", "anchor figure", "ratio"
    );
    for r in rows {
        let anchor_figure = r
            .anchor_figure
            .map(|a| format!("{a:.0}"))
            .unwrap_or_else(|| "absent".into());
        let ratio = r
            .ratio()
            .map(|x| format!("{x:.2}x"))
            .unwrap_or_else(|| "-".into());
        println!(
            "{:<34} {:>14.0} {:<9} {:<40} {:>14} {:>8}",
            r.benchmark, r.figure, r.unit, r.anchor, anchor_figure, ratio
        );
    }
}

fn main() {
    let mut rows = Vec::new();
    let mut failed = false;
    for bench in [tokenization] {
        match bench() {
            Ok(row) => rows.push(row),
            Err(e) => {
                eprintln!("benchmark failed: {e}");
                failed = true;
            }
        }
    }
    print_table(&rows);
    if failed {
        std::process::exit(1);
    }
}
