//! `make bench`: runs each benchmark and its anchor in the same run and prints one table with
//! the ratio, so figures are always compared under the same machine load.
//!
//! Anchors that need Python run with the interpreter named by `KVGATE_BENCH_PYTHON` (the
//! Makefile points it at the project's venv in `.llm/`, where it installs the anchor packages).

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

// The programs' allocator, so the in-process figures are the CLI's: large buffers on huge
// pages (see `kvgate_app::huge_pages`).
#[global_allocator]
static ALLOCATOR: kvgate_app::huge_pages::LargeOnHugePages =
    kvgate_app::huge_pages::LargeOnHugePages;

mod analyze;
mod dispatch;
mod envelope;
mod import;
mod review;

use kvgate_core::fixtures::{generate_corpus, FixtureOptions, Preset, Split, TokenCounter};
use kvgate_formats::tokenizer::PinnedTokenizer;

/// One measured row of the table.
struct Row {
    benchmark: String,
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

/// How a target row reads: "met", or "MISSED" to stand out in the table.
fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

/// One benchmark: the rows it measured, or why it could not run.
type Bench = fn() -> Result<Vec<Row>, String>;

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// Tokens per second of the pinned tokenizer over a generated corpus, encoded as a batch on every
/// core, against the Python `tokenizers` package on the same file and prompts (one encode per
/// prompt, as its anchor script does).
fn tokenization() -> Result<Row, String> {
    let tokenizer_path = root().join("fixtures/tokenizers/smollm2-135m-instruct/tokenizer.json");
    let bytes = std::fs::read(&tokenizer_path).map_err(|e| e.to_string())?;
    let tokenizer =
        PinnedTokenizer::from_bytes("tokenizer.json", &bytes).map_err(|e| e.to_string())?;
    let options = FixtureOptions {
        split: Split::Evaluation,
        per_stratum: 4,
        ..FixtureOptions::default()
    };
    let corpus =
        generate_corpus(&tokenizer, 1, Preset::Test2k, &options).map_err(|e| e.to_string())?;
    let texts: Vec<&str> = corpus
        .items
        .iter()
        .map(|i| i.prompt_text.as_str())
        .collect();

    // Batch encoding on every core (`PinnedTokenizer::count_batch`), the same counts as one
    // encode per prompt: checked here before timing.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let single: Vec<usize> = texts
        .iter()
        .map(|t| tokenizer.count(t))
        .collect::<Result<_, _>>()?;
    if tokenizer.count_batch(&texts, None)? != single {
        return Err("batch counts differ from one encode per prompt".into());
    }
    let rounds = 5;
    let mut best = f64::INFINITY;
    let mut tokens = 0usize;
    for _ in 0..rounds {
        let start = Instant::now();
        let n: usize = tokenizer.count_batch(&texts, None)?.iter().sum();
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
        benchmark: format!("tokenize 288 test-2k prompts (batch, {threads} threads)"),
        figure,
        unit: "tokens/s",
        anchor: anchor_name,
        anchor_figure,
        higher_is_better: true,
    })
}

/// Weights-digest throughput on a synthetic 2 GiB bf16 safetensors checkpoint against
/// `sha256sum` of the same file (the physical limit here), both reading from the page cache.
fn weights_hashing() -> Result<Row, String> {
    use kvgate_formats::weights::fs::open_checkpoint;
    use kvgate_formats::weights::{digest_checkpoint, HashOptions};
    use std::sync::atomic::AtomicBool;

    let dir = std::env::temp_dir().join(format!("kvgate-bench-weights-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join("model.safetensors");
    let tensors = 32u64;
    let tensor_bytes = 64u64 << 20;
    let mut header = serde_json::Map::new();
    for i in 0..tensors {
        header.insert(
            format!("model.layers.{i}.mlp.weight"),
            serde_json::json!({"dtype": "BF16", "shape": [tensor_bytes / 2],
                               "data_offsets": [i * tensor_bytes, (i + 1) * tensor_bytes]}),
        );
    }
    let header = serde_json::to_vec(&header).map_err(|e| e.to_string())?;
    {
        let mut f =
            std::io::BufWriter::new(std::fs::File::create(&file).map_err(|e| e.to_string())?);
        f.write_all(&(header.len() as u64).to_le_bytes())
            .map_err(|e| e.to_string())?;
        f.write_all(&header).map_err(|e| e.to_string())?;
        let mut block = vec![0u8; 1 << 20];
        let mut x = 0x9e3779b97f4a7c15u64;
        for _ in 0..(tensors * tensor_bytes) >> 20 {
            for b in block.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            f.write_all(&block).map_err(|e| e.to_string())?;
        }
    }
    let total_gb = (tensors * tensor_bytes) as f64 / 1e9;
    let result = (|| {
        // Warm the page cache once so neither side pays for the disk.
        Command::new("sha256sum")
            .arg(&file)
            .output()
            .map_err(|e| e.to_string())?;
        let start = Instant::now();
        let out = Command::new("sha256sum")
            .arg(&file)
            .output()
            .map_err(|e| e.to_string())?;
        let anchor = start.elapsed().as_secs_f64();
        if !out.status.success() {
            return Err("sha256sum failed".to_string());
        }
        let (source, layout) = open_checkpoint(&dir).map_err(|e| e.to_string())?;
        let start = Instant::now();
        digest_checkpoint(
            &source,
            &layout,
            &HashOptions::default(),
            &|_, _| {},
            &AtomicBool::new(false),
        )
        .map_err(|e| e.to_string())?;
        let ours = start.elapsed().as_secs_f64();
        Ok(Row {
            benchmark: "weights digest, 2.15 GB safetensors".into(),
            figure: total_gb / ours,
            unit: "GB/s",
            anchor: "sha256sum of the same file".into(),
            anchor_figure: Some(total_gb / anchor),
            higher_is_better: true,
        })
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<36} {:>14} {:<9} {:<40} {:>14} {:>8}",
        "benchmark", "figure", "unit", "anchor", "anchor figure", "ratio"
    );
    for r in rows {
        let anchor_figure = r
            .anchor_figure
            .map(figure)
            .unwrap_or_else(|| "absent".into());
        let ratio = r
            .ratio()
            .map(|x| format!("{x:.2}x"))
            .unwrap_or_else(|| "-".into());
        println!(
            "{:<36} {:>14} {:<9} {:<40} {:>14} {:>8}",
            r.benchmark,
            figure(r.figure),
            r.unit,
            r.anchor,
            anchor_figure,
            ratio
        );
    }
}

/// Whole numbers for large figures, three decimals for small ones (GB/s).
fn figure(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(import::MEASURE_ARG) {
        import::measure_child_main(&args[2..]);
    }
    let mut rows = Vec::new();
    let mut failed = false;
    // `KVGATE_BENCH_ONLY=import` (or tokenize, weights, dispatch, analyze, envelope, review;
    // comma-separated) runs only those.
    let only = std::env::var("KVGATE_BENCH_ONLY").ok();
    let benches: [(&str, Bench); 7] = [
        ("tokenize", || tokenization().map(|r| vec![r])),
        ("weights", || weights_hashing().map(|r| vec![r])),
        ("dispatch", dispatch::dispatch_benchmark),
        ("import", import::import_benchmark),
        ("analyze", analyze::analyze_benchmark),
        ("envelope", envelope::envelope_benchmark),
        ("review", review::review_benchmark),
    ];
    for (name, bench) in benches {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|x| x.trim() == name))
        {
            continue;
        }
        match bench() {
            Ok(more) => rows.extend(more),
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
