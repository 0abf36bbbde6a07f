//! The import benchmark: a generated `vllm bench serve --save-result --save-detailed` result of
//! 1,000,000 requests (`KVGATE_BENCH_IMPORT_REQUESTS` scales it) imported by `kvgate import`
//! into a fresh database, against (a) the sqlite3 shell's `.import` of the same rows as CSV and
//! (b) a plain Python `json` + `sqlite3` script. Each is one child process, timed whole, with
//! its peak RSS; afterwards the three databases must hold the same rows.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use kvgate_core::prng::SplitMix64;

use crate::{root, Row};

const DEFAULT_REQUESTS: usize = 1_000_000;
const SEED: u64 = 0x6b76_6761_7465_0001;

/// The synthetic measurements' draws, from KV Gate's one generator (SplitMix64).
pub(crate) struct Rng(SplitMix64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        self.0.next_f64()
    }

    pub(crate) fn exp(&mut self, mean: f64) -> f64 {
        mean * self.0.exponential()
    }

    /// Uniform in lo..=hi.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        self.0.between(lo, hi)
    }
}

/// One request as vLLM's benchmark client records it (seconds, `time.perf_counter()`).
struct Request {
    input_len: u64,
    output_len: u64,
    ttft: f64,
    itls: Vec<f64>,
    latency: f64,
    start: f64,
    queue: f64,
    text: String,
    error: String,
}

const WORDS: &[&str] = &[
    "the",
    "cache",
    "of",
    "keys",
    "and",
    "values",
    "is",
    "quantized",
    "to",
    "eight",
    "bits",
    "which",
    "halves",
    "its",
    "memory",
    "so",
    "more",
    "sequences",
    "fit",
    "in",
    "a",
    "batch",
    "while",
    "quality",
    "stays",
    "within",
    "the",
    "gate",
    "answer",
    "is",
    "42",
    "because",
    "throughput",
    "rises",
    "when",
    "latency",
    "falls",
    "model",
    "token",
    "request",
];

const ERRORS: &[&str] = &[
    "Traceback (most recent call last):\n  File \"/usr/lib/python3.12/site-packages/vllm/benchmarks/lib/endpoint_request_func.py\", line 148, in async_request_openai_completions\n    async for chunk_bytes in response.content:\naiohttp.client_exceptions.ClientPayloadError: Response payload is not completed\n",
    "Traceback (most recent call last):\n  File \"/usr/lib/python3.12/site-packages/aiohttp/client.py\", line 703, in _request\n    conn = await self._connector.connect(\naiohttp.client_exceptions.ServerDisconnectedError: Server disconnected\n",
    "Bad Request",
];

/// The requests of a run at 100 requests/s with up to 256 in flight: 4–32 output tokens each
/// (so the detailed file stays a few hundred MB), about 0.5% failed the way vLLM records a
/// failure (0 placeholders, empty text, the exception text).
fn generate(n: usize) -> Vec<Request> {
    let mut rng = Rng::new(SEED);
    let mut clock = 81_234.5 + rng.unit();
    let mut requests = Vec::with_capacity(n);
    for _ in 0..n {
        clock += rng.exp(0.01);
        let queue = if rng.unit() < 0.2 { rng.exp(0.03) } else { 0.0 };
        let input_len = rng.range(32, 2048);
        let failed = rng.unit() < 0.005;
        let request = if failed {
            Request {
                input_len,
                output_len: 0,
                ttft: 0.0,
                itls: Vec::new(),
                latency: 0.0,
                start: clock + queue,
                queue,
                text: String::new(),
                error: ERRORS[rng.range(0, ERRORS.len() as u64 - 1) as usize].to_owned(),
            }
        } else {
            let output_len = rng.range(4, 32);
            let ttft = 0.015 + rng.exp(0.06);
            let itls: Vec<f64> = (1..output_len)
                .map(|_| {
                    let spike = if rng.unit() < 0.01 {
                        rng.exp(0.05)
                    } else {
                        0.0
                    };
                    0.006 + rng.exp(0.003) + spike
                })
                .collect();
            let latency = ttft + itls.iter().sum::<f64>() + rng.exp(0.0005);
            let mut text = String::new();
            for w in 0..1 + output_len / 2 {
                if w > 0 {
                    text.push(' ');
                }
                text.push_str(WORDS[rng.range(0, WORDS.len() as u64 - 1) as usize]);
            }
            match rng.range(0, 99) {
                0 => text.push_str(" \"quoted\", with a comma"),
                1 => text.push_str("\n\nSecond paragraph: café, naïve, 東京 — ✓"),
                _ => {}
            }
            Request {
                input_len,
                output_len,
                ttft,
                itls,
                latency,
                start: clock + queue,
                queue,
                text,
                error: String::new(),
            }
        };
        requests.push(request);
    }
    requests
}

/// A float as Python's `json.dumps` and serde_json write it: shortest round trip.
fn num(out: &mut Vec<u8>, x: f64) {
    serde_json::to_writer(&mut *out, &x).expect("a finite float");
}

/// A string as Python's `json.dumps` writes it (`ensure_ascii`: non-ASCII as \uXXXX).
fn py_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    write!(out, "\\u{u:04x}").expect("write to a Vec");
                }
            }
            c => out.push(c as u8),
        }
    }
    out.push(b'"');
}

/// mean, median, std, p99 (numpy's linear interpolation) of a sample.
fn stats(mut v: Vec<f64>) -> [f64; 4] {
    if v.is_empty() {
        return [0.0; 4];
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let std = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let mut quantile = |q: f64| {
        let pos = q * (v.len() - 1) as f64;
        let k = pos.floor() as usize;
        let (_, lo, upper) = v.select_nth_unstable_by(k, f64::total_cmp);
        let lo = *lo;
        let hi = upper.iter().copied().min_by(f64::total_cmp).unwrap_or(lo);
        lo + (hi - lo) * (pos - k as f64)
    };
    let median = quantile(0.5);
    let p99 = quantile(0.99);
    [mean, median, std, p99]
}

/// Writes the detailed result the way `vllm bench serve --save-result --save-detailed` does:
/// one line, `json.dump`'s `", "` / `": "` separators, the header, the per-request arrays in
/// the middle and the statistics after them.
fn write_result(path: &Path, requests: &[Request]) -> std::io::Result<()> {
    let ok: Vec<&Request> = requests.iter().filter(|r| r.error.is_empty()).collect();
    let first = requests
        .iter()
        .map(|r| r.start)
        .fold(f64::INFINITY, f64::min);
    let last = requests
        .iter()
        .map(|r| r.start + r.latency)
        .fold(f64::NEG_INFINITY, f64::max);
    let duration = last - first;
    let total_input: u64 = requests.iter().map(|r| r.input_len).sum();
    let total_output: u64 = ok.iter().map(|r| r.output_len).sum();
    // Tokens per wall second and requests in flight, as vLLM reports their maxima.
    let mut per_second = vec![0u64; duration.ceil() as usize + 1];
    let mut events = Vec::with_capacity(requests.len() * 2);
    let last_second = per_second.len() - 1;
    for r in &ok {
        let mut at = r.start + r.ttft;
        per_second[((at - first) as usize).min(last_second)] += 1;
        for gap in &r.itls {
            at += gap;
            per_second[((at - first) as usize).min(last_second)] += 1;
        }
        events.push((r.start, 1i64));
        events.push((r.start + r.latency, -1i64));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut in_flight, mut max_in_flight) = (0i64, 0i64);
    for (_, d) in events {
        in_flight += d;
        max_in_flight = max_in_flight.max(in_flight);
    }
    let ms = |v: Vec<f64>| stats(v.into_iter().map(|x| x * 1000.0).collect());
    let ttft = ms(ok.iter().map(|r| r.ttft).collect());
    let tpot = ms(ok
        .iter()
        .filter(|r| r.output_len > 1)
        .map(|r| (r.latency - r.ttft) / (r.output_len - 1) as f64)
        .collect());
    let itl = ms(ok.iter().flat_map(|r| r.itls.iter().copied()).collect());
    let e2el = ms(ok.iter().map(|r| r.latency).collect());

    let mut f = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(
        b"{\"date\": \"20260115-103000\", \"endpoint_type\": \"openai\", \"backend\": \"vllm\", \
          \"label\": null, \"model_id\": \"meta-llama/Llama-3.1-8B-Instruct\", \
          \"tokenizer_id\": \"meta-llama/Llama-3.1-8B-Instruct\", ",
    );
    let completed = ok.len();
    let failed = requests.len() - completed;
    write!(
        out,
        "\"num_prompts\": {}, \"request_rate\": 100.0, \"burstiness\": 1.0, \
         \"max_concurrency\": 256, \"duration\": ",
        requests.len()
    )?;
    num(&mut out, duration);
    write!(out, ", \"completed\": {completed}, \"failed\": {failed}, \"total_input_tokens\": {total_input}, \"total_output_tokens\": {total_output}, \"request_throughput\": ")?;
    num(&mut out, completed as f64 / duration);
    out.extend_from_slice(b", \"request_goodput\": null, \"output_throughput\": ");
    num(&mut out, total_output as f64 / duration);
    out.extend_from_slice(b", \"total_token_throughput\": ");
    num(&mut out, (total_input + total_output) as f64 / duration);
    out.extend_from_slice(b", \"max_output_tokens_per_s\": ");
    num(
        &mut out,
        per_second.iter().copied().max().unwrap_or(0) as f64,
    );
    write!(out, ", \"max_concurrent_requests\": {max_in_flight}")?;

    // One column at a time; `out` is flushed to the file as it fills.
    let column = |name: &str,
                  out: &mut Vec<u8>,
                  f: &mut BufWriter<File>,
                  each: &dyn Fn(&mut Vec<u8>, &Request)|
     -> std::io::Result<()> {
        write!(out, ", \"{name}\": [")?;
        for (i, r) in requests.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            each(out, r);
            if out.len() > 1 << 15 {
                f.write_all(out)?;
                out.clear();
            }
        }
        out.push(b']');
        Ok(())
    };
    column("input_lens", &mut out, &mut f, &|o, r| {
        write!(o, "{}", r.input_len).expect("write to a Vec")
    })?;
    column("output_lens", &mut out, &mut f, &|o, r| {
        write!(o, "{}", r.output_len).expect("write to a Vec")
    })?;
    column("ttfts", &mut out, &mut f, &|o, r| num(o, r.ttft))?;
    column("itls", &mut out, &mut f, &|o, r| {
        o.push(b'[');
        for (j, gap) in r.itls.iter().enumerate() {
            if j > 0 {
                o.extend_from_slice(b", ");
            }
            num(o, *gap);
        }
        o.push(b']');
    })?;
    column("latencies", &mut out, &mut f, &|o, r| num(o, r.latency))?;
    column("generated_texts", &mut out, &mut f, &|o, r| {
        py_string(o, &r.text)
    })?;
    column("errors", &mut out, &mut f, &|o, r| py_string(o, &r.error))?;
    for (metric, [mean, median, std, p99]) in
        [("ttft", ttft), ("tpot", tpot), ("itl", itl), ("e2el", e2el)]
    {
        for (stat, value) in [
            ("mean", mean),
            ("median", median),
            ("std", std),
            ("p99", p99),
        ] {
            write!(out, ", \"{stat}_{metric}_ms\": ")?;
            num(&mut out, value);
        }
    }
    column("start_times", &mut out, &mut f, &|o, r| num(o, r.start))?;
    column("queue_times", &mut out, &mut f, &|o, r| num(o, r.queue))?;
    out.push(b'}');
    f.write_all(&out)?;
    f.flush()
}

/// The columns of `run_requests`, in table order.
const CSV_HEADER: &str = "run_id,warmup,idx,repeat,item_id,status,planned_arrival_ms,dispatch_ms,\
client_delay_ms,first_token_ms,finish_ms,http_status,prompt_tokens,completion_tokens,\
cached_prompt_tokens,finish_reason,error,output_text,chunk_times_json,engine_timings_json,\
verdict_accepted,verdict_reasons_json,verdict_json\n";

fn csv_text(out: &mut Vec<u8>, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push(b'"');
        out.extend_from_slice(s.replace('"', "\"\"").as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(s.as_bytes());
    }
}

/// The rows `run_requests` holds after `kvgate import` of that result, as CSV: times in ms on
/// the run clock (zero = the earliest send), computed as the parser computes them; NULL is an
/// empty field (the anchor's view turns it back into NULL).
fn write_csv(path: &Path, requests: &[Request]) -> std::io::Result<()> {
    let zero = requests
        .iter()
        .map(|r| r.start)
        .fold(f64::INFINITY, f64::min);
    let mut f = BufWriter::with_capacity(1 << 20, File::create(path)?);
    f.write_all(CSV_HEADER.as_bytes())?;
    let mut out = Vec::with_capacity(1 << 16);
    let mut chunks = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let start_ms = (r.start - zero) * 1000.0;
        let queue_ms = r.queue * 1000.0;
        let ok = r.error.is_empty();
        write!(out, "1,0,{i},0,,{},", if ok { "ok" } else { "error" })?;
        num(&mut out, start_ms - queue_ms);
        out.push(b',');
        num(&mut out, start_ms);
        out.push(b',');
        num(&mut out, queue_ms);
        out.push(b',');
        if ok {
            let first = start_ms + r.ttft * 1000.0;
            chunks.clear();
            chunks.push(first);
            let mut at = first;
            for gap in &r.itls {
                at += gap * 1000.0;
                chunks.push(at);
            }
            num(&mut out, first);
            out.push(b',');
            num(&mut out, start_ms + r.latency * 1000.0);
            write!(out, ",,{},{},,,", r.input_len, r.output_len)?;
        } else {
            write!(out, ",,,{},,,,", r.input_len)?;
            csv_text(&mut out, &r.error);
            chunks.clear();
        }
        out.push(b',');
        csv_text(&mut out, &r.text);
        out.extend_from_slice(b",\"");
        serde_json::to_writer(&mut out, &chunks)?;
        out.extend_from_slice(b"\",,,,\n");
        if out.len() > 1 << 15 {
            f.write_all(&out)?;
            out.clear();
        }
    }
    f.write_all(&out)?;
    f.flush()
}

/// What one child process took.
pub(crate) struct Measured {
    pub(crate) seconds: f64,
    pub(crate) peak_rss_mib: f64,
}

/// The argument that makes this binary the launcher of one measured command.
pub const MEASURE_ARG: &str = "--measure-child";

/// Runs `program args…` to its end (stdio inherited) and writes "seconds max_rss_kib" to
/// `out`; exits with the command's status. `make bench` measures every command through this
/// small, freshly started process: a child's peak RSS (`ru_maxrss`) includes the RSS of the
/// process that spawned it, and the harness itself holds hundreds of MB by then.
pub fn measure_child_main(args: &[String]) -> ! {
    let [out, program, rest @ ..] = args else {
        eprintln!("usage: kvgate-bench {MEASURE_ARG} OUT PROGRAM [ARGS…]");
        std::process::exit(2)
    };
    let start = Instant::now();
    let child = match Command::new(program).args(rest).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("{program}: {e}");
            std::process::exit(127)
        }
    };
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `rusage` is plain data that wait4 fills in; the child is ours and waited for here
    // only (std's `Child` is dropped without waiting).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            eprintln!("wait4: {err}");
            std::process::exit(125)
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    drop(child);
    // Linux reports ru_maxrss in KiB.
    if let Err(e) = std::fs::write(out, format!("{seconds} {}", usage.ru_maxrss)) {
        eprintln!("{out}: {e}");
        std::process::exit(125)
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    std::process::exit(code)
}

/// Waits until every file written so far is on the disk (`sync`).
pub(crate) fn settle() -> Result<(), String> {
    let status = Command::new("sync")
        .status()
        .map_err(|e| format!("sync: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("sync: {status}"))
    }
}

/// Runs a command to its end through [`measure_child_main`], stdout/stderr in files under
/// `dir` (named `name`): its whole wall time and its peak RSS. Every command starts with what
/// was written before it (generated inputs, an earlier command's database) already on the
/// disk, so no command is timed while the kernel writes back another's gigabyte.
pub(crate) fn measure(command: &Command, dir: &Path, name: &str) -> Result<Measured, String> {
    settle()?;
    let stdout = File::create(dir.join(format!("{name}.stdout"))).map_err(|e| e.to_string())?;
    let stderr_path = dir.join(format!("{name}.stderr"));
    let stderr = File::create(&stderr_path).map_err(|e| e.to_string())?;
    let figures = dir.join(format!("{name}.measured"));
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut launcher = Command::new(exe);
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => launcher.env(key, value),
            None => launcher.env_remove(key),
        };
    }
    let status = launcher
        .arg(MEASURE_ARG)
        .arg(&figures)
        .arg(command.get_program())
        .args(command.get_args())
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .status()
        .map_err(|e| format!("{name}: {e}"))?;
    if !status.success() {
        let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        return Err(format!(
            "{name} failed ({status}): {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    let figures = std::fs::read_to_string(&figures).map_err(|e| e.to_string())?;
    let parsed: Vec<f64> = figures
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    match parsed[..] {
        [seconds, max_rss_kib] => Ok(Measured {
            seconds,
            peak_rss_mib: max_rss_kib / 1024.0,
        }),
        _ => Err(format!("{name}: unreadable measurement {figures:?}")),
    }
}

pub(crate) fn run_ok(command: &mut Command) -> Result<String, String> {
    let out = command
        .output()
        .map_err(|e| format!("{:?}: {e}", command.get_program()))?;
    if !out.status.success() {
        return Err(format!(
            "{:?} failed: {}",
            command.get_program(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The `kvgate` binary next to this one (`make bench` builds both), or `KVGATE_BENCH_KVGATE`.
/// `kvgate --db DB ARGS…`, never on the user's `KVGATE_DB`.
pub(crate) fn kv_command(kvgate: &Path, db: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(kvgate);
    c.arg("--db").arg(db).args(args).env_remove("KVGATE_DB");
    c
}

/// The two cells of the analysis and review benchmarks: B0 and the Q8 candidate.
pub(crate) const TWO_CELLS: [&str; 2] = ["smollm2-135m-cpu-b0.json", "smollm2-135m-cpu-q8.json"];

/// `kvgate import --format jsonl` of a `kvgate-run` file into a cell.
pub(crate) fn import_run_file(
    kvgate: &Path,
    db: &Path,
    study: &str,
    cell: &str,
    file: &Path,
) -> Result<String, String> {
    let mut import = kv_command(
        kvgate,
        db,
        &[
            "import", "--study", study, "--cell", cell, "--format", "jsonl",
        ],
    );
    import.arg(file);
    run_ok(&mut import)
}

/// `kvgate policy lock` of the policy file at `policy`, by "bench".
pub(crate) fn lock_policy(
    kvgate: &Path,
    db: &Path,
    study: &str,
    policy: &Path,
) -> Result<String, String> {
    run_ok(&mut kv_command(
        kvgate,
        db,
        &[
            "policy",
            "lock",
            "--study",
            study,
            "--file",
            policy.to_str().ok_or("non-UTF-8 path")?,
            "--by",
            "bench",
        ],
    ))
}

/// A new study at `db` with each of `manifests` (in `fixtures/manifests`) frozen: their digests,
/// in order.
pub(crate) fn study_with_cells(
    kvgate: &Path,
    db: &Path,
    study: &str,
    manifests: &[&str],
) -> Result<Vec<String>, String> {
    run_ok(&mut kv_command(kvgate, db, &["study", "create", study]))?;
    let mut digests = Vec::new();
    for file in manifests {
        let manifest = root().join("fixtures/manifests").join(file);
        let out = run_ok(&mut kv_command(
            kvgate,
            db,
            &[
                "manifest",
                "freeze",
                "--study",
                study,
                manifest.to_str().ok_or("non-UTF-8 path")?,
            ],
        ))?;
        digests.push(out.trim().to_owned());
    }
    Ok(digests)
}

pub(crate) fn kvgate_binary() -> Result<PathBuf, String> {
    if let Ok(path) = std::env::var("KVGATE_BENCH_KVGATE") {
        return Ok(path.into());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let path = exe.with_file_name("kvgate");
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} is missing: build it with `cargo build --release -p kvgate-cli` (make bench does)",
            path.display()
        ))
    }
}

/// What a database holds, summed: equal across the three when they did the same work.
fn fingerprint(sqlite3: &str, db: &Path) -> Result<Vec<f64>, String> {
    let out = run_ok(Command::new(sqlite3).arg(db).arg(
        "SELECT count(*), sum(status = 'ok'), sum(error IS NULL), sum(first_token_ms IS NULL), \
         sum(json_array_length(chunk_times_json)), sum(length(output_text)), \
         total(length(error)), total(prompt_tokens), total(completion_tokens), \
         total(planned_arrival_ms), total(client_delay_ms), total(finish_ms), \
         total(json_extract(chunk_times_json, '$[#-1]')) FROM run_requests",
    ))?;
    out.trim()
        .split('|')
        .map(|v| v.parse::<f64>().map_err(|e| format!("{v:?}: {e}")))
        .collect()
}

fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0))
}

pub(crate) fn count_name(n: usize) -> String {
    if n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n.is_multiple_of(1_000) {
        format!("{}k", n / 1_000)
    } else {
        n.to_string()
    }
}

/// How much larger the second file is (`KVGATE_BENCH_IMPORT_SCALE`; 1 leaves it out).
const DEFAULT_SCALE: usize = 4;

/// `kvgate import` of a vLLM result into a fresh database at `db` (a study and a frozen manifest
/// first), timed whole with its peak RSS.
fn kvgate_import(
    kvgate: &Path,
    db: &Path,
    json: &Path,
    dir: &Path,
    name: &str,
) -> Result<Measured, String> {
    study_with_cells(kvgate, db, "bench", &["smollm2-135m-cpu-b0.json"])?;
    let kv = |args: &[&str]| kv_command(kvgate, db, args);
    let mut import = kv(&[
        "import",
        "--study",
        "bench",
        "--cell",
        "B0",
        "--format",
        "vllm-bench",
    ]);
    import.arg(json);
    measure(&import, dir, name)
}

/// Rows: time against each anchor, then peak RSS against each; then the same import of a file
/// `scale` times as large.
pub fn import_benchmark() -> Result<Vec<Row>, String> {
    let n = match std::env::var("KVGATE_BENCH_IMPORT_REQUESTS") {
        Ok(v) => v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
            format!("KVGATE_BENCH_IMPORT_REQUESTS: expected a count, found {v:?}")
        })?,
        Err(_) => DEFAULT_REQUESTS,
    };
    let scale = match std::env::var("KVGATE_BENCH_IMPORT_SCALE") {
        Ok(v) => v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
            format!("KVGATE_BENCH_IMPORT_SCALE: expected a whole factor ≥ 1, found {v:?}")
        })?,
        Err(_) => DEFAULT_SCALE,
    };
    let kvgate = kvgate_binary()?;
    let sqlite3 = std::env::var("KVGATE_BENCH_SQLITE3").unwrap_or_else(|_| "sqlite3".into());
    let python = std::env::var("KVGATE_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let sqlite_version = run_ok(Command::new(&sqlite3).arg("--version"))
        .map_err(|e| format!("{e} (install the sqlite3 shell: scripts/setup.sh does)"))?;
    let sqlite_version = sqlite_version
        .split_whitespace()
        .next()
        .unwrap_or("?")
        .to_owned();
    let python_version = run_ok(
        Command::new(&python)
            .arg("-c")
            .arg("import platform, sqlite3; print(platform.python_version())"),
    )?;

    let dir = std::env::temp_dir().join(format!("kvgate-bench-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = (|| {
        let json = dir.join("vllm-bench-detailed.json");
        let csv = dir.join("run_requests.csv");
        {
            let requests = generate(n);
            write_result(&json, &requests).map_err(|e| e.to_string())?;
            write_csv(&csv, &requests).map_err(|e| e.to_string())?;
        }
        let json_mb = std::fs::metadata(&json).map_err(|e| e.to_string())?.len() as f64 / 1e6;
        let csv_mb = std::fs::metadata(&csv).map_err(|e| e.to_string())?.len() as f64 / 1e6;
        // Everyone reads from the page cache.
        for f in [&json, &csv] {
            std::io::copy(
                &mut File::open(f).map_err(|e| e.to_string())?,
                &mut std::io::sink(),
            )
            .map_err(|e| e.to_string())?;
        }

        // KV Gate: a fresh database with a study and a frozen manifest, then `kvgate import`.
        let kv_db = dir.join("kvgate.sqlite");
        let ours = kvgate_import(&kvgate, &kv_db, &json, &dir, "kvgate")?;

        // (a) The sqlite3 shell: `.import` of the CSV in one transaction, through a view whose
        // trigger turns empty fields back into NULL (the shell reads every CSV field as text).
        let schema = root().join("crates/kvgate-bench/anchors/run_requests.sql");
        let read_schema = format!(".read '{}'", schema.to_str().ok_or("non-UTF-8 path")?);
        let a_db = dir.join("sqlite3.sqlite");
        run_ok(
            Command::new(&sqlite3)
                .arg(&a_db)
                .arg(&read_schema)
                .arg(CSV_VIEW),
        )?;
        let csv_path = csv.to_str().ok_or("non-UTF-8 path")?;
        let mut shell = Command::new(&sqlite3);
        shell
            .arg("-bail")
            .arg(&a_db)
            .arg("PRAGMA synchronous = NORMAL")
            .arg("BEGIN")
            .arg(format!(
                ".import --csv --skip 1 '{csv_path}' run_requests_csv"
            ))
            .arg("COMMIT");
        let a = measure(&shell, &dir, "sqlite3")?;

        // (b) Plain Python: json.load, rows, executemany, one transaction.
        let b_db = dir.join("python.sqlite");
        run_ok(Command::new(&sqlite3).arg(&b_db).arg(&read_schema))?;
        let mut script = Command::new(&python);
        script
            .arg(root().join("crates/kvgate-bench/anchors/import_python.py"))
            .arg(&json)
            .arg(&b_db);
        let b = measure(&script, &dir, "python")?;

        let ours_rows = fingerprint(&sqlite3, &kv_db)?;
        for (name, db) in [("sqlite3 .import", &a_db), ("the Python script", &b_db)] {
            let theirs = fingerprint(&sqlite3, db)?;
            if !same(&ours_rows, &theirs) || ours_rows.first() != Some(&(n as f64)) {
                return Err(format!(
                    "{name} stored other rows than kvgate import ({theirs:?} vs {ours_rows:?}): not the same work"
                ));
            }
        }

        let count = count_name(n);
        let mut what = String::new();
        write!(what, "import {count} vllm-bench reqs ({json_mb:.0} MB)").expect("a String");
        let anchor_a = format!("sqlite3 {sqlite_version} .import, {csv_mb:.0} MB CSV");
        let anchor_b = format!("Python {} json + sqlite3", python_version.trim());
        let row = |benchmark: &str, figure, unit, anchor: &str, anchor_figure| Row {
            benchmark: benchmark.to_owned(),
            figure,
            unit,
            anchor: anchor.to_owned(),
            anchor_figure: Some(anchor_figure),
            higher_is_better: false,
        };
        let rss = format!("peak RSS, {count} reqs ({json_mb:.0} MB)");
        let mut rows = vec![
            row(&what, ours.seconds, "s", &anchor_a, a.seconds),
            row(&what, ours.seconds, "s", &anchor_b, b.seconds),
            row(&rss, ours.peak_rss_mib, "MiB", &anchor_a, a.peak_rss_mib),
            row(&rss, ours.peak_rss_mib, "MiB", &anchor_b, b.peak_rss_mib),
        ];
        let ratio = b.seconds / ours.seconds;
        rows.push(Row {
            benchmark: format!(
                "target >= 5x Python, {count} reqs: {}",
                crate::met(ratio >= TARGET_RATIO)
            ),
            figure: ratio,
            unit: "x",
            anchor: "the issue: 5x".into(),
            anchor_figure: Some(TARGET_RATIO),
            higher_is_better: true,
        });
        let mut peak = ours.peak_rss_mib;

        // Memory must not grow with the file: the same import of a result `scale` times as
        // large, against the first (its time against `scale` times the first's).
        if scale > 1 {
            for f in [&json, &csv, &kv_db, &a_db, &b_db] {
                let _ = std::fs::remove_file(f);
            }
            let big = dir.join("vllm-bench-detailed-scaled.json");
            write_result(&big, &generate(n * scale)).map_err(|e| e.to_string())?;
            let big_mb = std::fs::metadata(&big).map_err(|e| e.to_string())?.len() as f64 / 1e6;
            let scaled = kvgate_import(
                &kvgate,
                &dir.join("kvgate-scaled.sqlite"),
                &big,
                &dir,
                "kvgate-scaled",
            )?;
            let big_count = count_name(n * scale);
            let anchor = format!("kvgate import, {count} reqs");
            rows.push(Row {
                benchmark: format!("import {big_count} vllm-bench reqs ({big_mb:.0} MB)"),
                figure: scaled.seconds,
                unit: "s",
                anchor: format!("{anchor} × {scale}"),
                anchor_figure: Some(ours.seconds * scale as f64),
                higher_is_better: false,
            });
            rows.push(Row {
                benchmark: format!("peak RSS, {big_count} reqs ({big_mb:.0} MB)"),
                figure: scaled.peak_rss_mib,
                unit: "MiB",
                anchor,
                anchor_figure: Some(ours.peak_rss_mib),
                higher_is_better: false,
            });
            peak = peak.max(scaled.peak_rss_mib);
        }
        rows.push(Row {
            benchmark: format!(
                "target peak RSS <= 256 MiB, every size: {}",
                crate::met(peak <= TARGET_RSS_MIB)
            ),
            figure: peak,
            unit: "MiB",
            anchor: "the issue: 256 MiB".into(),
            anchor_figure: Some(TARGET_RSS_MIB),
            higher_is_better: false,
        });
        Ok(rows)
    })();
    // `KVGATE_BENCH_KEEP=1` keeps the files and databases to look at (or profile) afterwards.
    if std::env::var_os("KVGATE_BENCH_KEEP").is_some() {
        eprintln!("import benchmark files kept in {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

/// The issue's targets: this many times faster than the Python script, and a peak memory that
/// does not grow with the file, below this at every size measured.
const TARGET_RATIO: f64 = 5.0;
const TARGET_RSS_MIB: f64 = 256.0;

/// The shell's `.import` reads every CSV field as text, and an empty field is '' (which a STRICT
/// REAL or INTEGER column refuses): the view takes the rows and its trigger stores '' in a
/// nullable column as NULL. `output_text` is NOT NULL and keeps ''.
const CSV_VIEW: &str = "CREATE VIEW run_requests_csv AS SELECT * FROM run_requests;
CREATE TRIGGER run_requests_csv_insert INSTEAD OF INSERT ON run_requests_csv BEGIN
  INSERT INTO run_requests VALUES (
    NEW.run_id, NEW.warmup, NEW.idx, NEW.repeat, NULLIF(NEW.item_id, ''), NEW.status,
    NEW.planned_arrival_ms, NULLIF(NEW.dispatch_ms, ''), NULLIF(NEW.client_delay_ms, ''),
    NULLIF(NEW.first_token_ms, ''), NULLIF(NEW.finish_ms, ''), NULLIF(NEW.http_status, ''),
    NULLIF(NEW.prompt_tokens, ''), NULLIF(NEW.completion_tokens, ''),
    NULLIF(NEW.cached_prompt_tokens, ''), NULLIF(NEW.finish_reason, ''), NULLIF(NEW.error, ''),
    NEW.output_text, NEW.chunk_times_json, NULLIF(NEW.engine_timings_json, ''),
    NULLIF(NEW.verdict_accepted, ''), NULLIF(NEW.verdict_reasons_json, ''),
    NULLIF(NEW.verdict_json, ''));
END;
";
