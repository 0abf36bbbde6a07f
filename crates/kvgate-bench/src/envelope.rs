//! The operating-envelope benchmark: one study of two frozen cells (B0, Llama 3.1 8B with a BF16
//! KV cache, and the FP8 candidate C1, both on one H100 with an admission limit of 64) measured
//! open loop at 20 offered rates each, 2 to 40 requests/s, two repeats per rate. A **point** is
//! one cell at one offered rate (its admission limit is the manifest's): 2 × 20 = 40 points, 80
//! load runs, 1,000,000 measured requests in all (`KVGATE_BENCH_ENVELOPE_REQUESTS` scales it),
//! each run's size proportional to its rate so every run spans the same time. Both cells replay
//! the same Poisson arrivals (and prompts) at a rate and repeat.
//!
//! The synthetic engine: below its saturation rate (B0 26/s, C1 34/s: the FP8 cache holds twice
//! the KV tokens, so fewer admitted requests wait for KV blocks) the queue wait is exponential
//! with mean 120 ms·ρ/(1 − ρ); above it the backlog grows through the run, requests time out
//! after 30 s and some are refused. Inter-token latency grows with the load; the validator
//! accepts fewer long-context answers from C1. So every class's good share falls with the rate,
//! the knee lies inside the range, and it differs between cells and classes. Every request's
//! prompt tokens fall in a policy class: one unclassified request would keep its point out of
//! the knee (it is never good).
//!
//! Timed: `kvgate analyze --study envelope --json` as a whole process (best of 3, peak RSS),
//! its in-process split, and the anchor `anchors/envelope_pandas.py`, which reads the same
//! SQLite file with pandas and computes the same envelope (per cell, rate and class: goodput
//! mean, sd and Student-t interval over the repeats, good share and its interval, good and
//! cohort, the share within each SLO, TTFT and end-to-end p50/p90/p99, cost per good response;
//! the knee per cell). Every
//! figure must agree or the benchmark fails. `kvgate analyze` computes more than the envelope
//! (the cell's latency table, pairs, the decision), so its ratio understates the envelope's
//! alone.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use kvgate_core::canonical::{canonical_json, sha256_hex};
use kvgate_core::compat::{CellValidity, ObservedEngine};
use kvgate_core::evidence::CompatibilityRecord;
use kvgate_core::run::{RequestRecord, RequestStatus};
use kvgate_core::validator::ReasonCode;
use kvgate_formats::run_file::{RunFileEvidence, RunFileHeader, RunFileRequest, RUN_FILE_FORMAT};
use serde_json::{json, Value};

use crate::analyze::{best_of, in_process, verdict};
use crate::import::{
    count_name, kv_command, kvgate_binary, lock_policy, run_ok, study_with_cells, Rng,
};
use crate::{root, Row};

const DEFAULT_REQUESTS: usize = 1_000_000;
const STUDY: &str = "envelope";
/// Offered rates per cell: 2, 4, …, 40 requests/s.
const RATES: usize = 20;
const RATE_STEP: f64 = 2.0;
const REPEATS: usize = 2;
/// The policy's envelope bar and cost rate (an H100 hour).
const MIN_GOOD_SHARE: f64 = 0.9;
const PER_INSTANCE_HOUR: f64 = 4.0;
/// Queue wait scale of the synthetic engine, ms.
const SERVICE_MS: f64 = 120.0;
/// The client's request deadline, ms: a longer wait is a timeout.
const DEADLINE_MS: f64 = 30_000.0;

/// One cell of the study and how its synthetic engine behaves.
struct CellModel {
    cell: &'static str,
    manifest: &'static str,
    /// Offered rate at which the engine saturates: above it the queue grows without bound.
    capacity_rps: f64,
    /// Chance the validator accepts an `ok` answer, per class (short, medium, long).
    accept: [f64; 3],
    kv_dtype: &'static str,
    kv_cache_tokens: u64,
}

const CELLS: [CellModel; 2] = [
    CellModel {
        cell: "B0",
        manifest: "llama31-8b-h100-b0.json",
        capacity_rps: 26.0,
        accept: [0.985, 0.975, 0.96],
        kv_dtype: "auto",
        kv_cache_tokens: 452_656,
    },
    CellModel {
        cell: "C1",
        manifest: "llama31-8b-h100-c1.json",
        capacity_rps: 34.0,
        accept: [0.98, 0.97, 0.935],
        kv_dtype: "fp8_e4m3",
        kv_cache_tokens: 905_312,
    },
];

fn rate(i: usize) -> f64 {
    RATE_STEP * (i + 1) as f64
}

/// The locked policy: classes and SLOs as the analyze benchmark's, the goodput interval 3/4 of
/// a run's span, the envelope bar and the cost rate.
fn policy_text(interval_s: f64) -> String {
    let v = json!({
        "classes": [
            {"name": "short", "max_input_tokens": 1023, "slo": {"ttft_ms": 400, "itl_ms": 25, "e2e_ms": 2500}},
            {"name": "medium", "max_input_tokens": 2047, "slo": {"ttft_ms": 800, "itl_ms": 30, "e2e_ms": 4000}},
            {"name": "long", "max_input_tokens": 4095, "slo": {"ttft_ms": 1500, "e2e_ms": 6000}}
        ],
        "goodput": {"interval_s": interval_s, "drain_s": 30},
        "alpha": 0.05,
        "segments": [
            {"name": "long", "filter": {"length_class": "long"}, "floor": 0.85, "margin": 0.03, "protected": true}
        ],
        "target_offered_load_rps": 16.0,
        "envelope": {"min_good_share": MIN_GOOD_SHARE},
        "cost": {"per_instance_hour": PER_INSTANCE_HOUR}
    });
    serde_json::to_string_pretty(&v).expect("a JSON value")
}

/// One load run: a cell at rate `i`, repeat `repeat`, of `requests` arrivals.
struct RunSpec {
    model: usize,
    rate: usize,
    repeat: usize,
    requests: usize,
}

impl RunSpec {
    /// The arrival seed: the same for both cells at a rate and repeat (the same arrivals).
    fn arrival_seed(&self) -> u64 {
        1000 + 10 * self.rate as u64 + self.repeat as u64
    }
}

/// The requests of one run: arrivals and prompts from the arrival seed (shared by the cells),
/// the engine's behaviour from the cell's own draws.
fn requests(spec: &RunSpec) -> Vec<RunFileRequest> {
    let model = &CELLS[spec.model];
    let rate = rate(spec.rate);
    let rho = rate / model.capacity_rps;
    let mut arrivals = Rng::new(0x656e_7665_6c6f_7065 ^ spec.arrival_seed());
    let mut engine =
        Rng::new(0x6b76_6761_7465_0200 ^ (spec.arrival_seed() << 4) ^ spec.model as u64);
    let mut clock = 0.0;
    let mut out = Vec::with_capacity(spec.requests);
    for index in 0..spec.requests {
        clock += arrivals.exp(1000.0 / rate);
        let u = arrivals.unit();
        let (class, prompt_tokens) = if u < 0.5 {
            (0, arrivals.range(150, 1023))
        } else if u < 0.8 {
            (1, arrivals.range(1024, 2047))
        } else {
            (2, arrivals.range(2048, 4095))
        };
        out.push(request(
            &mut engine,
            model,
            rho,
            index as u32,
            clock,
            class,
            prompt_tokens,
        ));
    }
    out
}

/// One request planned at `planned` ms into the run, under load `rho` of the cell's capacity.
fn request(
    rng: &mut Rng,
    model: &CellModel,
    rho: f64,
    index: u32,
    planned: f64,
    class: usize,
    prompt_tokens: u64,
) -> RunFileRequest {
    let delay = if rng.unit() < 0.01 {
        rng.exp(40.0)
    } else {
        rng.exp(0.3)
    };
    let dispatch = planned + delay;
    // Below saturation an M/M/1-like wait; above it the backlog grows with the run's clock.
    let wait = if rho < 1.0 {
        rng.exp(SERVICE_MS * rho / (1.0 - rho))
    } else {
        (rho - 1.0) * planned + rng.exp(SERVICE_MS * 20.0)
    };
    let refuse = if rho > 1.0 {
        (0.3 * (rho - 1.0)).min(0.3)
    } else {
        0.0
    };
    let fail = 0.003 + 0.01 * rho.min(1.5);
    let mut record = RequestRecord {
        index,
        item_id: None,
        prompt_sha256: None,
        planned_arrival_ms: planned,
        dispatch_ms: Some(dispatch),
        client_delay_ms: Some(delay),
        first_token_ms: None,
        chunk_times_ms: Vec::new(),
        finish_ms: None,
        status: RequestStatus::Ok,
        http_status: Some(200),
        error: None,
        output_text: String::new(),
        prompt_tokens: Some(prompt_tokens),
        completion_tokens: None,
        cached_prompt_tokens: Some(0),
        finish_reason: None,
        engine_timings: None,
    };
    let u = rng.unit();
    let reason;
    if u < refuse {
        record.status = RequestStatus::Rejected;
        record.http_status = Some(429);
        record.finish_ms = Some(dispatch + 1.0 + rng.exp(2.0));
        record.error = Some("HTTP 429: too many requests waiting".into());
        reason = ReasonCode::Error;
    } else if u < refuse + fail {
        record.status = RequestStatus::Error;
        record.http_status = Some(500);
        record.finish_ms = Some(dispatch + rng.exp(150.0));
        record.error = Some("HTTP 500: {\"object\":\"error\",\"message\":\"engine error\"}".into());
        reason = ReasonCode::Error;
    } else if wait > DEADLINE_MS {
        record.status = RequestStatus::Timeout;
        record.http_status = None;
        record.error = Some("request deadline of 30000 ms passed".into());
        reason = ReasonCode::Timeout;
    } else {
        let ttft = 15.0 + prompt_tokens as f64 * 0.05 + wait;
        let completion = if rng.unit() < 0.02 {
            1
        } else {
            rng.range(12, 72)
        };
        // Bigger batches decode slower.
        let itl = (7.0 + rng.exp(3.0)) * (1.0 + 0.6 * rho.min(1.5));
        let first = dispatch + ttft;
        let mut chunks = Vec::with_capacity(completion as usize);
        let mut at = first;
        chunks.push(at);
        for _ in 1..completion {
            at += itl * (0.5 + rng.unit());
            chunks.push((at * 1000.0).round() / 1000.0);
        }
        if rng.unit() < 0.0005 {
            // The stream's first chunk went unrecorded: the SLOs cannot be checked.
            chunks.clear();
        } else {
            record.first_token_ms = Some(first);
        }
        record.finish_ms = Some(at + 0.3 + rng.exp(0.5));
        record.chunk_times_ms = chunks;
        record.completion_tokens = Some(completion);
        record.finish_reason = Some("stop".into());
        record.output_text = format!(
            "{{\"asset\": \"LJ-{}\", \"revision\": \"F\"}}",
            200 + index % 700
        );
        reason = ReasonCode::WrongValue;
    }
    let accepted = record.status == RequestStatus::Ok && rng.unit() < model.accept[class];
    RunFileRequest {
        record,
        repeat: 0,
        warmup: false,
        verdict: Some(verdict(accepted, reason)),
    }
}

/// The compatibility evidence of a valid cell, as the importer stores it.
fn compatibility(model: &CellModel) -> RunFileEvidence {
    let text = CompatibilityRecord {
        observed: Some(ObservedEngine {
            attention_backend: Some("FLASH_ATTN".into()),
            kv_cache_dtype: Some(model.kv_dtype.into()),
            kv_cache_tokens: Some(model.kv_cache_tokens),
            skipped_layers: Some(Vec::new()),
            sources: vec!["kv_cache_dtype, KV cache tokens: startup log".into()],
            ..ObservedEngine::default()
        }),
        validity: CellValidity {
            valid: true,
            problems: Vec::new(),
        },
    }
    .to_text();
    RunFileEvidence {
        kind: "compatibility".into(),
        source_name: format!("cell {} manifest vs observed engine", model.cell),
        sha256: sha256_hex(text.as_bytes()),
        text,
        parsed_json: None,
    }
}

/// Writes one run as a `kvgate-run` file: an open-loop Poisson run at its rate and seed.
fn write_run(path: &Path, spec: &RunSpec, digest: &str, serial: i64) -> Result<(), String> {
    let model = &CELLS[spec.model];
    let requests = requests(spec);
    let elapsed = requests
        .iter()
        .filter_map(|r| r.record.finish_ms)
        .fold(0.0, f64::max);
    let seed = spec.arrival_seed();
    let rate = rate(spec.rate);
    let config = json!({"kind": "load", "requests": spec.requests, "seed": seed,
                        "mode": {"open_loop": {"kind": "poisson", "rate": rate, "seed": seed}},
                        "synthetic": true});
    let header = RunFileHeader {
        format: RUN_FILE_FORMAT.into(),
        version: 1,
        kind: "load".into(),
        cell: model.cell.into(),
        manifest_sha256: digest.into(),
        label: format!(
            "load · {} · {rate} req/s · repeat {} · {} requests",
            model.cell,
            spec.repeat + 1,
            spec.requests
        ),
        provenance: "synthetic_demo".into(),
        config_sha256: sha256_hex(canonical_json(&config).as_bytes()),
        config,
        wall_anchor_unix_ms: 1_796_117_098_603 + serial * 10_000_000,
        started_at: "2026-12-02T09:00:00.000Z".into(),
        finished_at: Some("2026-12-02T09:30:00.000Z".into()),
        state: "completed".into(),
        elapsed_ms: Some(elapsed),
        planned: Some(spec.requests as i64),
        note: None,
    };
    let evidence = compatibility(model);
    let io = |e: std::io::Error| format!("{}: {e}", path.display());
    let json = |e: serde_json::Error| e.to_string();
    let mut f = BufWriter::with_capacity(1 << 20, File::create(path).map_err(io)?);
    serde_json::to_writer(&mut f, &header).map_err(json)?;
    f.write_all(b"\n").map_err(io)?;
    for r in &requests {
        f.write_all(b"{\"request\":").map_err(io)?;
        serde_json::to_writer(&mut f, r).map_err(json)?;
        f.write_all(b"}\n").map_err(io)?;
    }
    f.write_all(b"{\"evidence\":").map_err(io)?;
    serde_json::to_writer(&mut f, &evidence).map_err(json)?;
    f.write_all(b"}\n").map_err(io)?;
    f.flush().map_err(io)
}

/// The runs of the study: requests split over them in proportion to their rate (every run spans
/// the same time), the same count for both cells at a rate and repeat (the same arrivals),
/// exactly `n` (even) in all; and that span in seconds.
fn plan(n: usize) -> (Vec<RunSpec>, f64) {
    let rate_sum: f64 = (0..RATES).map(rate).sum();
    let span_s = n as f64 / (rate_sum * (CELLS.len() * REPEATS) as f64);
    let mut counts: Vec<usize> = (0..RATES * REPEATS)
        .map(|i| (span_s * rate(i / REPEATS)) as usize)
        .collect();
    let short = n / CELLS.len() - counts.iter().sum::<usize>();
    for c in counts.iter_mut().take(short) {
        *c += 1;
    }
    let specs = (0..CELLS.len())
        .flat_map(|model| {
            counts
                .iter()
                .enumerate()
                .map(move |(i, &requests)| RunSpec {
                    model,
                    rate: i / REPEATS,
                    repeat: i % REPEATS,
                    requests,
                })
        })
        .collect();
    (specs, span_s)
}

/// The goodput interval: three quarters of a run's span, in whole tenths of a second.
fn interval_s(span_s: f64) -> f64 {
    ((span_s * 0.75 * 10.0).floor() / 10.0).max(0.1)
}

/// A fresh workspace at `db`: the study, both frozen cells, the 80 runs imported with
/// `kvgate import` and the policy locked with `kvgate policy lock`.
fn build_workspace(kvgate: &Path, db: &Path, dir: &Path, n: usize) -> Result<(), String> {
    let kv = |args: &[&str]| kv_command(kvgate, db, args);
    let started = Instant::now();
    let manifests: Vec<&str> = CELLS.iter().map(|m| m.manifest).collect();
    let digests = study_with_cells(kvgate, db, STUDY, &manifests)?;
    let (specs, span_s) = plan(n);
    for (serial, spec) in specs.iter().enumerate() {
        let file = dir.join(format!("run-{serial}.kvgate-run.jsonl"));
        write_run(&file, spec, &digests[spec.model], serial as i64)?;
        let mut import = kv(&[
            "import",
            "--study",
            STUDY,
            "--cell",
            CELLS[spec.model].cell,
            "--format",
            "jsonl",
        ]);
        import.arg(&file);
        run_ok(&mut import)?;
        let _ = std::fs::remove_file(&file);
    }
    let policy = dir.join("policy.json");
    std::fs::write(&policy, policy_text(interval_s(span_s))).map_err(|e| e.to_string())?;
    lock_policy(kvgate, db, STUDY, &policy)?;
    let db_mb = std::fs::metadata(db).map_err(|e| e.to_string())?.len() as f64 / 1e6;
    eprintln!(
        "envelope benchmark: {n} requests over {} runs in {:.0} MB generated and imported in {:.0} s",
        specs.len(),
        db_mb,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The fields of an envelope point the check knows (`offered` is compared as `offered_rps`).
const ENVELOPE_FIELDS: [&str; 17] = [
    "offered_rps",
    "offered",
    "admission_limit",
    "client_concurrency",
    "class",
    "repeats",
    "runs",
    "goodput_per_s",
    "good_share",
    "good_share_repeats",
    "good",
    "cohort",
    "slo_share",
    "ttft_ms",
    "e2e_ms",
    "slo_only",
    "cost_per_good_response",
];

/// Compares the anchor's envelope with KV Gate's: the same points, every count equal, every
/// rate, share, interval and cost equal to 1e-9 relative, the same knee per cell. Returns how
/// many figures were compared.
fn check(ours: &Value, theirs: &Value) -> Result<usize, String> {
    if ours["measured_requests"] != theirs["measured_requests"] {
        return Err(format!(
            "measured requests: kvgate {}, pandas {}",
            ours["measured_requests"], theirs["measured_requests"]
        ));
    }
    let close = |a: &Value, b: &Value| match (a, b) {
        (Value::Number(_), Value::Number(_)) => {
            let (x, y) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        }
        _ => a == b,
    };
    let mut problems: Vec<String> = Vec::new();
    let mut compared = 0usize;
    let mut same = |problems: &mut Vec<String>, what: String, a: &Value, b: &Value| {
        compared += 1;
        if !close(a, b) {
            problems.push(format!("{what}: kvgate {a}, pandas {b}"));
        }
    };
    let cells = ours["cells"].as_array().ok_or("kvgate: no cells")?;
    let points = theirs["envelope"].as_array().ok_or("pandas: no envelope")?;
    // A figure kvgate's envelope gained since is one the anchor does not compute: said, not skipped.
    let unknown: std::collections::BTreeSet<&str> = cells
        .iter()
        .filter_map(|c| c["envelope"].as_array())
        .flatten()
        .filter_map(Value::as_object)
        .flat_map(|row| row.keys())
        .map(String::as_str)
        .filter(|k| !ENVELOPE_FIELDS.contains(k))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "kvgate's envelope has figures the pandas anchor does not compute: {}; extend \
             anchors/envelope_pandas.py and this check",
            unknown.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let summary = ["n", "mean", "sd", "ci_low", "ci_high"];
    let mut ours_rows = 0;
    for cell in cells {
        let name = cell["cell"].as_str().unwrap_or("?");
        let rows = cell["envelope"].as_array().ok_or("kvgate: no envelope")?;
        ours_rows += rows.len();
        same(
            &mut problems,
            format!("{name} knee_rps"),
            // An absent knee is left out of kvgate's JSON; the anchor writes null.
            cell.get("knee_rps").unwrap_or(&Value::Null),
            &theirs["knee_rps"][name],
        );
        for p in rows {
            let at = |v: &Value| {
                v["cell"] == cell["cell"]
                    && close(&v["offered_rps"], &p["offered_rps"])
                    && v["class"] == p["class"]
            };
            let what = format!("{name} at {} req/s, {}", p["offered_rps"], p["class"]);
            let Some(t) = points.iter().find(|v| at(v)) else {
                problems.push(format!("{what}: a point kvgate has, pandas has not"));
                continue;
            };
            for field in [
                "admission_limit",
                "client_concurrency",
                "repeats",
                "good",
                "cohort",
                "good_share",
                "slo_only",
                "cost_per_good_response",
            ] {
                same(
                    &mut problems,
                    format!("{what} {field}"),
                    &p[field],
                    &t[field],
                );
            }
            let sorted = |v: &Value| {
                let mut ids: Vec<i64> = v
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_i64).collect())
                    .unwrap_or_default();
                ids.sort_unstable();
                json!(ids)
            };
            same(
                &mut problems,
                format!("{what} runs"),
                &sorted(&p["runs"]),
                &sorted(&t["runs"]),
            );
            for group in ["goodput_per_s", "good_share_repeats"] {
                for field in summary {
                    same(
                        &mut problems,
                        format!("{what} {group}.{field}"),
                        &p[group][field],
                        &t[group][field],
                    );
                }
            }
            for slo in ["ttft", "itl", "e2e"] {
                same(
                    &mut problems,
                    format!("{what} slo_share.{slo}"),
                    &p["slo_share"][slo],
                    &t["slo_share"][slo],
                );
            }
            for metric in ["ttft_ms", "e2e_ms"] {
                for field in ["p50", "p90", "p99", "count"] {
                    same(
                        &mut problems,
                        format!("{what} {metric}.{field}"),
                        &p[metric][field],
                        &t[metric][field],
                    );
                }
            }
        }
    }
    if ours_rows != points.len() {
        problems.push(format!(
            "envelope rows: kvgate {ours_rows}, pandas {}",
            points.len()
        ));
    }
    if problems.is_empty() {
        Ok(compared)
    } else {
        let n = problems.len();
        problems.truncate(12);
        Err(format!(
            "the pandas anchor and kvgate analyze disagree on {n} of {compared} envelope figures, not the same work; first:\n  {}",
            problems.join("\n  ")
        ))
    }
}

/// The knees must lie inside the offered range and differ between the cells, or the study
/// would not exercise what the benchmark claims to compare.
fn check_shape(ours: &Value) -> Result<String, String> {
    let top = rate(RATES - 1);
    let mut knees = Vec::new();
    for cell in ours["cells"].as_array().ok_or("kvgate: no cells")? {
        let name = cell["cell"].as_str().unwrap_or("?");
        let knee = cell["knee_rps"].as_f64();
        match knee {
            Some(k) if k < top => knees.push(format!("{name} {k}/s")),
            _ => {
                return Err(format!(
                    "the generated study's knee of {name} is {knee:?}, not inside 2–{top} req/s: \
                     the benchmark would not exercise the knee"
                ))
            }
        }
    }
    let distinct: std::collections::BTreeSet<String> = ours["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["knee_rps"].to_string())
        .collect();
    if distinct.len() < 2 {
        return Err(format!(
            "the generated study's cells share one knee ({}): the benchmark would not tell them apart",
            knees.join(", ")
        ));
    }
    Ok(knees.join(", "))
}

pub fn envelope_benchmark() -> Result<Vec<Row>, String> {
    let n = match std::env::var("KVGATE_BENCH_ENVELOPE_REQUESTS") {
        Ok(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 10_000 && n % 2 == 0)
            .ok_or_else(|| {
                format!(
                    "KVGATE_BENCH_ENVELOPE_REQUESTS: expected an even count ≥ 10000, found {v:?}"
                )
            })?,
        Err(_) => DEFAULT_REQUESTS,
    };
    let kvgate = kvgate_binary()?;
    let python = std::env::var("KVGATE_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let dir = std::env::temp_dir().join(format!("kvgate-bench-envelope-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = (|| {
        // `KVGATE_BENCH_ENVELOPE_DB` names a workspace an earlier run kept (KVGATE_BENCH_KEEP=1):
        // no generation, for profiling. The anchor reads the policy locked in it.
        let db = match std::env::var_os("KVGATE_BENCH_ENVELOPE_DB") {
            Some(db) => std::path::PathBuf::from(db),
            None => {
                let db = dir.join("kvgate.sqlite");
                build_workspace(&kvgate, &db, &dir, n)?;
                db
            }
        };
        let kv = |args: &[&str]| {
            let mut c = Command::new(&kvgate);
            c.arg("--db").arg(&db).args(args).env_remove("KVGATE_DB");
            c
        };
        // Everyone reads from the page cache.
        std::io::copy(
            &mut File::open(&db).map_err(|e| e.to_string())?,
            &mut std::io::sink(),
        )
        .map_err(|e| e.to_string())?;

        let (ours, ours_json) = best_of(
            &kv(&["analyze", "--study", STUDY, "--json"]),
            &dir,
            "kvgate",
        )?;
        let [load_s, compute_s, json_s, _, _] = in_process(&db, STUDY)?;
        let mut script = Command::new(&python);
        script
            .arg(root().join("crates/kvgate-bench/anchors/envelope_pandas.py"))
            .arg(&db)
            .arg(STUDY);
        let (theirs, theirs_json) = best_of(&script, &dir, "pandas")?;

        let ours_v: Value =
            serde_json::from_str(&ours_json).map_err(|e| format!("kvgate analyze --json: {e}"))?;
        let theirs_v: Value =
            serde_json::from_str(&theirs_json).map_err(|e| format!("the pandas anchor: {e}"))?;
        let compared = check(&ours_v, &theirs_v)?;
        let knees = check_shape(&ours_v)?;
        let points = theirs_v["points"].as_u64().unwrap_or(0);
        eprintln!(
            "envelope benchmark: kvgate and pandas agree on {compared} figures over {points} \
             points ({} rows); knees {knees}; pandas {} scipy {}: import {:.2} s, read_sql {:.2} s, \
             compute {:.2} s",
            theirs_v["envelope"].as_array().map_or(0, Vec::len),
            theirs_v["pandas"].as_str().unwrap_or("?"),
            theirs_v["scipy"].as_str().unwrap_or("?"),
            theirs_v["seconds"]["import"].as_f64().unwrap_or(f64::NAN),
            theirs_v["seconds"]["read"].as_f64().unwrap_or(f64::NAN),
            theirs_v["seconds"]["compute"].as_f64().unwrap_or(f64::NAN),
        );

        let n = ours_v["measured_requests"].as_u64().unwrap_or(0) as usize;
        let anchor = format!(
            "pandas {} (same envelope)",
            theirs_v["pandas"].as_str().unwrap_or("?")
        );
        let row = |benchmark: String, figure, unit, anchor: String, anchor_figure| Row {
            benchmark,
            figure,
            unit,
            anchor,
            anchor_figure,
            higher_is_better: false,
        };
        Ok(vec![
            row(
                format!("envelope {} reqs / {points} points", count_name(n)),
                ours.seconds,
                "s",
                anchor.clone(),
                Some(theirs.seconds),
            ),
            row(
                format!("peak RSS, envelope {} reqs", count_name(n)),
                ours.peak_rss_mib,
                "MiB",
                anchor,
                Some(theirs.peak_rss_mib),
            ),
            row(
                "  in-process: load from SQLite".into(),
                load_s,
                "s",
                "pandas read_sql".into(),
                theirs_v["seconds"]["read"].as_f64(),
            ),
            row(
                "  in-process: analyze() (all of it)".into(),
                compute_s,
                "s",
                "pandas envelope computations".into(),
                theirs_v["seconds"]["compute"].as_f64(),
            ),
            row("  in-process: JSON".into(), json_s, "s", "-".into(), None),
        ])
    })();
    if std::env::var_os("KVGATE_BENCH_KEEP").is_some() {
        eprintln!("envelope benchmark files kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan's figures by hand: Σ rates = 2 + 4 + … + 40 = 420; 4 runs per rate (2 cells ×
    /// 2 repeats) so a run spans n / 1680 s and holds span × rate requests.
    #[test]
    fn the_plan_splits_the_requests_over_40_points_in_proportion_to_their_rate() {
        let (specs, span) = plan(1_000_000);
        assert_eq!(specs.len(), 80);
        assert!((span - 1_000_000.0 / 1680.0).abs() < 1e-9, "{span}");
        assert_eq!(specs.iter().map(|s| s.requests).sum::<usize>(), 1_000_000);
        // 595.238… s = 1190 + 10/21 s per 2/s: rate 2k holds 1190k + ⌊10k/21⌋ and leaves
        // (10k mod 21)/21, which over k = 1…20 sums to 210/21 = 10 per repeat, so 20 per cell:
        // one more request for each of the 20 runs of the ten lowest rates.
        assert_eq!(specs[0].requests, 1191);
        assert_eq!(specs[19].requests, 11_904 + 1);
        assert_eq!(specs[20].requests, 13_095);
        assert_eq!(specs[79].requests, 23_809);
        for (b0, c1) in specs[..40].iter().zip(&specs[40..]) {
            assert_eq!(
                (b0.rate, b0.repeat, b0.requests),
                (c1.rate, c1.repeat, c1.requests)
            );
        }
        let points: std::collections::BTreeSet<(usize, usize)> =
            specs.iter().map(|s| (s.model, s.rate)).collect();
        assert_eq!(points.len(), 40);
        assert_eq!(interval_s(span), 446.4);
    }

    #[test]
    fn both_cells_replay_the_same_arrivals_and_prompts_at_a_rate_and_repeat() {
        let spec = |model| RunSpec {
            model,
            rate: 5,
            repeat: 1,
            requests: 200,
        };
        let (b0, c1) = (requests(&spec(0)), requests(&spec(1)));
        for (a, b) in b0.iter().zip(&c1) {
            assert_eq!(a.record.planned_arrival_ms, b.record.planned_arrival_ms);
            assert_eq!(a.record.prompt_tokens, b.record.prompt_tokens);
        }
        assert_ne!(
            b0.iter().map(|r| r.record.dispatch_ms).collect::<Vec<_>>(),
            c1.iter().map(|r| r.record.dispatch_ms).collect::<Vec<_>>(),
            "each engine draws its own service"
        );
    }

    /// One cell with one envelope row, as kvgate writes it and as the anchor writes it.
    fn pair() -> (Value, Value) {
        let summary = json!({"n": 2, "mean": 1.5, "sd": 0.5, "ci_low": -2.99, "ci_high": 5.99});
        let row = json!({"offered_rps": 12.0, "admission_limit": 64, "class": "short",
            "repeats": 2, "runs": [3, 4], "goodput_per_s": summary, "good_share": 0.95,
            "good_share_repeats": summary, "good": 900, "cohort": 947, "slo_only": false,
            "slo_share": {"ttft": 0.97, "itl": 0.99, "e2e": null},
            "ttft_ms": {"p50": 180.5, "p90": 402.25, "p99": 911.0, "count": 930},
            "e2e_ms": {"p50": null, "p90": null, "p99": null, "count": 0},
            "cost_per_good_response": 0.0012});
        let mut theirs_row = row.clone();
        theirs_row["cell"] = json!("B0");
        theirs_row["runs"] = json!([4, 3]);
        let ours = json!({"measured_requests": 5000,
            "cells": [{"cell": "B0", "knee_rps": 12.0, "envelope": [row]}]});
        let theirs = json!({"measured_requests": 5000, "envelope": [theirs_row],
            "knee_rps": {"B0": 12.0}});
        (ours, theirs)
    }

    #[test]
    fn the_check_counts_agreeing_figures_and_names_the_first_that_differs() {
        let (ours, theirs) = pair();
        // 8 fields, the runs, 2 × 5 summary figures, 3 SLO shares, 2 × 4 latency figures, the
        // knee.
        assert_eq!(check(&ours, &theirs), Ok(31));
        let mut off = theirs.clone();
        off["envelope"][0]["good_share_repeats"]["ci_high"] = json!(5.99 + 1e-6);
        let err = check(&ours, &off).unwrap_err();
        assert!(err.contains("1 of 31"), "{err}");
        let mut slower = theirs.clone();
        slower["envelope"][0]["ttft_ms"]["p99"] = json!(911.5);
        assert!(check(&ours, &slower)
            .unwrap_err()
            .contains("ttft_ms.p99: kvgate 911.0, pandas 911.5"));
        assert!(err.contains("good_share_repeats.ci_high"), "{err}");
        let mut absent = theirs.clone();
        absent["envelope"][0]["cost_per_good_response"] = Value::Null;
        assert!(check(&ours, &absent)
            .unwrap_err()
            .contains("cost_per_good_response: kvgate 0.0012, pandas null"));
        let mut no_knee = ours.clone();
        no_knee["cells"][0]
            .as_object_mut()
            .unwrap()
            .remove("knee_rps");
        assert!(check(&no_knee, &theirs).unwrap_err().contains("knee_rps"));
        let mut newer = ours.clone();
        newer["cells"][0]["envelope"][0]["itl_ms"] = json!({"p50": 9.0});
        assert!(check(&newer, &theirs)
            .unwrap_err()
            .contains("figures the pandas anchor does not compute: itl_ms"));
        let mut extra = theirs.clone();
        let mut row = extra["envelope"][0].clone();
        row["class"] = json!("long");
        extra["envelope"].as_array_mut().unwrap().push(row);
        assert!(check(&ours, &extra)
            .unwrap_err()
            .contains("envelope rows: kvgate 1, pandas 2"));
    }

    #[test]
    fn a_study_whose_knee_is_outside_the_range_or_shared_is_refused() {
        let cells = |a: Value, b: Value| json!({"cells": [{"cell": "B0", "knee_rps": a}, {"cell": "C1", "knee_rps": b}]});
        assert_eq!(
            check_shape(&cells(json!(12.0), json!(16.0))),
            Ok("B0 12/s, C1 16/s".into())
        );
        assert!(check_shape(&cells(Value::Null, json!(16.0))).is_err());
        assert!(check_shape(&cells(json!(12.0), json!(40.0))).is_err());
        assert!(check_shape(&cells(json!(12.0), json!(12.0))).is_err());
    }
}
