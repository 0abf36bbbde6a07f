//! Open-loop dispatch precision (the runner's benchmark): at 2,000 requests/s for 10 s against a
//! fast local SSE server in another process, how late is each request sent behind its planned
//! arrival? KV Gate's runner (`dispatch_bench`, an example of kvgate-runner built by `make
//! bench`) beside a Python asyncio + aiohttp client doing the same against the same server.
//! The runner is measured five times (`KVGATE_BENCH_DISPATCH_RUNS`): the target holds for the
//! worst p99 of the runs, not a quiet one; the table gives the best, median and worst.

use std::path::PathBuf;
use std::process::Command;

use crate::{root, Row};

const RATE: &str = "2000";
const SECONDS: &str = "10";
/// The target for the runner's p99 lag.
const TARGET_P99_MS: f64 = 1.0;

/// `dispatch_bench` beside this harness, in the same profile's `examples/`.
fn dispatch_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let bin = exe
        .parent()
        .ok_or("the harness has no folder")?
        .join("examples/dispatch_bench");
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "{} is missing: build it with `cargo build --release -p kvgate-runner --example \
             dispatch_bench` (make bench does)",
            bin.display()
        ))
    }
}

/// (client name, p50, p99, max, planned, ok) from a bench's JSON line.
fn lags(stdout: &[u8], who: &str) -> Result<(String, [f64; 3], u64, u64), String> {
    let text = String::from_utf8_lossy(stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| format!("{who}: printed no result line: {text}"))?;
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("{who}: {e}: {line}"))?;
    let ms = |k: &str| {
        v["lag_ms"][k]
            .as_f64()
            .ok_or_else(|| format!("{who}: no lag_ms.{k} in {line}"))
    };
    Ok((
        v["client"].as_str().unwrap_or(who).to_owned(),
        [ms("p50")?, ms("p99")?, ms("max")?],
        v["planned"].as_u64().unwrap_or(0),
        v["ok"].as_u64().unwrap_or(0),
    ))
}

/// Runs of the runner measured per `make bench`: the target is the worst p99 of these.
const DEFAULT_RUNS: usize = 5;

pub fn dispatch_benchmark() -> Result<Vec<Row>, String> {
    let bin = dispatch_binary()?;
    let runs = match std::env::var("KVGATE_BENCH_DISPATCH_RUNS") {
        Ok(v) => v.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
            format!("KVGATE_BENCH_DISPATCH_RUNS: expected a count >= 1, found {v:?}")
        })?,
        Err(_) => DEFAULT_RUNS,
    };
    let mut each: Vec<[f64; 3]> = Vec::with_capacity(runs);
    for run in 1..=runs {
        let ours = Command::new(&bin)
            .args(["--rate", RATE, "--seconds", SECONDS])
            .output()
            .map_err(|e| format!("{}: {e}", bin.display()))?;
        if !ours.status.success() {
            return Err(format!(
                "dispatch_bench failed: {}",
                String::from_utf8_lossy(&ours.stderr).trim()
            ));
        }
        let (_, l, planned, ok) = lags(&ours.stdout, "dispatch_bench")?;
        eprintln!(
            "dispatch benchmark: kvgate-runner run {run}/{runs}: planned {planned}, {ok} ok, \
             lag p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            l[0], l[1], l[2]
        );
        each.push(l);
    }
    // Per figure over the runs: (best, median, worst).
    let spread = |i: usize| {
        let mut v: Vec<f64> = each.iter().map(|l| l[i]).collect();
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() / 2], v[v.len() - 1])
    };
    let (_, p50_median, _) = spread(0);
    let (p99_best, p99_median, p99_worst) = spread(1);
    let (_, _, max_worst) = spread(2);

    let python = std::env::var("KVGATE_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let anchor = Command::new(&python)
        .arg(root().join("crates/kvgate-runner/bench/dispatch_asyncio.py"))
        .args(["--rate", RATE, "--seconds", SECONDS, "--server-bin"])
        .arg(&bin)
        .output();
    let (anchor_name, anchor_lags) = match anchor {
        Ok(out) if out.status.success() => {
            let (name, l, planned, ok) = lags(&out.stdout, "dispatch_asyncio.py")?;
            eprintln!("dispatch benchmark: the Python client planned {planned}, {ok} ok");
            (name, Some(l))
        }
        Ok(out) => (
            format!(
                "Python asyncio + aiohttp: failed ({})",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            None,
        ),
        Err(e) => (format!("Python asyncio + aiohttp: {python}: {e}"), None),
    };
    let row = |benchmark: String, figure: f64, i: usize| Row {
        benchmark,
        figure,
        unit: "ms",
        anchor: anchor_name.clone(),
        anchor_figure: anchor_lags.map(|l| l[i]),
        higher_is_better: false,
    };
    let what = format!("2,000 req/s x 10 s, {runs} runs");
    let mut rows = vec![
        row(
            format!("dispatch lag p50 (median run), {what}"),
            p50_median,
            0,
        ),
        row(
            format!("dispatch lag p99, best of {runs} runs"),
            p99_best,
            1,
        ),
        row(
            format!("dispatch lag p99, median of {runs} runs"),
            p99_median,
            1,
        ),
        row(
            format!("dispatch lag p99, worst of {runs} runs"),
            p99_worst,
            1,
        ),
        row(
            format!("dispatch lag max, worst of {runs} runs"),
            max_worst,
            2,
        ),
    ];
    rows.push(Row {
        benchmark: format!(
            "target worst p99 of {runs} runs <= 1 ms: {}",
            crate::met(p99_worst <= TARGET_P99_MS)
        ),
        figure: p99_worst,
        unit: "ms",
        anchor: "the issue: 1 ms".into(),
        anchor_figure: Some(TARGET_P99_MS),
        higher_is_better: false,
    });
    Ok(rows)
}
