//! The review benchmark: a study with about 100,000 paired disagreements (B0 accepts every
//! answered item, the candidate none; `KVGATE_BENCH_REVIEW_ITEMS` scales it), opened in the real
//! app window (release build, Xvfb, WebKitWebDriver) by the bench journey
//! `tests/e2e/bench/review-scale.mjs`, which measures inside the page: the Review screen's first
//! paint (from the click on Review to the first pair's answers drawn) once the opened study's
//! progress is shown, and just after the study opens (while the app computes that progress on
//! both cores), label → next pair (a label
//! key, its reveal, then `j` and the next pair's answers drawn) over 20 pairs, and the peak RSS of
//! the app's process and of its web view's. The anchors are the targets of the issue that asked
//! for them; a ratio above 1 meets it.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

use crate::analyze::{items, write_run, RunSpec, POLICY};
use crate::import::{
    count_name, import_run_file, kvgate_binary, lock_policy, study_with_cells, TWO_CELLS,
};
use crate::{root, Row};

const DEFAULT_ITEMS: usize = 101_000;
const STUDY: &str = "review-bench";

fn build(kvgate: &Path, db: &Path, dir: &Path, n: usize) -> Result<(), String> {
    let started = Instant::now();
    let digests = study_with_cells(kvgate, db, STUDY, &TWO_CELLS)?;
    let all = items(n);
    for (k, (cell, candidate)) in [("B0", false), ("Q8", true)].into_iter().enumerate() {
        let spec = RunSpec {
            cell,
            candidate,
            kind: "quality",
            requests: n,
            rate: 8.0,
            judged: true,
            pass: 0,
            seed: 90 + k as u64,
            accept: Some(!candidate),
        };
        let file = dir.join(format!("review-{cell}.kvgate-run.jsonl"));
        write_run(&file, &spec, &digests[k], &all)?;
        import_run_file(kvgate, db, STUDY, cell, &file)?;
        let _ = std::fs::remove_file(&file);
    }
    let policy = dir.join("policy.json");
    std::fs::write(&policy, POLICY).map_err(|e| e.to_string())?;
    lock_policy(kvgate, db, STUDY, &policy)?;
    eprintln!(
        "review benchmark: {n} items per cell generated and imported in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

pub fn review_benchmark() -> Result<Vec<Row>, String> {
    let n =
        match std::env::var("KVGATE_BENCH_REVIEW_ITEMS") {
            Ok(v) => v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                format!("KVGATE_BENCH_REVIEW_ITEMS: expected a count, found {v:?}")
            })?,
            Err(_) => DEFAULT_ITEMS,
        };
    let kvgate = kvgate_binary()?;
    let app = kvgate.with_file_name("kvgate-desktop");
    if !app.exists() {
        return Err(format!(
            "{} not found: `make bench` builds it (cargo build --release -p kvgate-desktop)",
            app.display()
        ));
    }
    let dir = std::env::temp_dir().join(format!("kvgate-bench-review-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = (|| {
        let db = dir.join("review.sqlite");
        build(&kvgate, &db, &dir, n)?;
        let out = dir.join("figures.json");
        let status = Command::new("node")
            .arg(root().join("tests/e2e/run.mjs"))
            .arg("--bench")
            .arg("review-scale")
            .env("KVGATE_APP", &app)
            .env("KVGATE_CLI", &kvgate)
            .env("KVGATE_BENCH_REVIEW_DB", &db)
            .env("KVGATE_BENCH_REVIEW_STUDY", STUDY)
            .env("KVGATE_BENCH_OUT", &out)
            .status()
            .map_err(|e| format!("node: {e}"))?;
        if !status.success() {
            return Err(format!("the review bench journey failed ({status})"));
        }
        let text = std::fs::read_to_string(&out).map_err(|e| e.to_string())?;
        let v: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        let figure = |key: &str| {
            v[key]
                .as_f64()
                .ok_or_else(|| format!("the journey's figures lack {key}: {text}"))
        };
        let pairs = v["pairs"].as_u64().unwrap_or(0);
        let listed = count_name(pairs as usize);
        let row = |benchmark: String, figure: f64, unit, anchor: &str, target: f64| Row {
            benchmark,
            figure,
            unit,
            anchor: anchor.to_owned(),
            anchor_figure: Some(target),
            higher_is_better: false,
        };
        Ok(vec![
            row(
                format!("review first paint, {listed} disagreements"),
                figure("first_paint_ms")?,
                "ms",
                "target (issue 23): < 1 s",
                1000.0,
            ),
            row(
                "review first paint, just after the study opens".into(),
                figure("first_paint_after_open_ms")?,
                "ms",
                "target (issue 23): < 1 s",
                1000.0,
            ),
            row(
                "review label → next pair, worst of 20".into(),
                figure("label_next_worst_ms")?,
                "ms",
                "target (issue 23): < 50 ms",
                50.0,
            ),
            row(
                "review label → next pair, median of 20".into(),
                figure("label_next_median_ms")?,
                "ms",
                "target (issue 23): < 50 ms",
                50.0,
            ),
            row(
                format!("app peak RSS, review of {listed}"),
                figure("app_rss_mib")?,
                "MiB",
                "target (issue 23): < 400 MB",
                400.0 * 1e6 / (1 << 20) as f64,
            ),
            row(
                format!("web view peak RSS, review of {listed}"),
                figure("web_rss_mib")?,
                "MiB",
                "target (issue 23): < 400 MB",
                400.0 * 1e6 / (1 << 20) as f64,
            ),
        ])
    })();
    if std::env::var_os("KVGATE_BENCH_KEEP").is_some() {
        eprintln!("review benchmark files kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}
