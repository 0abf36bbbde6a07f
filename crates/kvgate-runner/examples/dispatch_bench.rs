//! Open-loop dispatch precision: how late does the runner send each request behind its planned
//! arrival, at a high constant rate against a fast local SSE server in another process?
//!
//! ```text
//! cargo run --release -p kvgate-runner --example dispatch_bench              # 2,000 req/s, 10 s
//! cargo run --release -p kvgate-runner --example dispatch_bench -- --rate 500 --seconds 5
//! target/release/examples/dispatch_bench serve --seconds 60   # the server alone (for the Python bench)
//! target/release/examples/dispatch_bench timers --seconds 2   # timer wake-up lag alone, no HTTP
//! ```
//! Loopback only; bounded in rate and time; the server process it starts is ended by its PID.

#[allow(dead_code)]
#[path = "../tests/runner/server.rs"]
mod server;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use kvgate_runner::{
    run_open_loop, Api, Arrivals, CancellationToken, Client, Endpoint, OpenLoop, PlannedRequest,
    RequestStatus,
};

struct Args {
    serve: bool,
    timers: bool,
    rate: f64,
    seconds: f64,
    url: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        serve: false,
        timers: false,
        rate: 2000.0,
        seconds: 10.0,
        url: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "serve" => args.serve = true,
            "timers" => args.timers = true,
            "--rate" => {
                args.rate = value("--rate")?
                    .parse()
                    .map_err(|e| format!("--rate: {e}"))?
            }
            "--seconds" => {
                args.seconds = value("--seconds")?
                    .parse()
                    .map_err(|e| format!("--seconds: {e}"))?
            }
            "--url" => args.url = Some(value("--url")?),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    let in_range = |x: f64, max: f64| x > 0.0 && x <= max;
    if !(in_range(args.rate, 20_000.0) && in_range(args.seconds, 600.0)) {
        return Err("expected 0 < --rate ≤ 20000 and 0 < --seconds ≤ 600".into());
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("dispatch_bench: {e}");
            std::process::exit(2);
        }
    };
    if args.serve {
        serve(args.seconds);
    } else if args.timers {
        timers(args.rate, args.seconds);
    } else {
        bench(&args);
    }
}

/// Serves the fast SSE mode on 127.0.0.1 for `seconds`, printing the base URL first.
fn serve(seconds: f64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = server::start().await;
        println!("{}", server.base("fast"));
        tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    });
}

/// Wake-up lag behind absolute targets at `rate` per second: tokio's `sleep_until` (a timer
/// wheel with 1 ms ticks) against `std::thread::sleep` (the dispatcher's choice).
fn timers(rate: f64, seconds: f64) {
    let n = (rate * seconds) as usize;
    let gap = Duration::from_secs_f64(1.0 / rate);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let tokio_lags = runtime.block_on(async move {
        let start = tokio::time::Instant::now();
        let mut lags = Vec::with_capacity(n);
        for i in 0..n as u32 {
            let target = start + gap * i;
            tokio::time::sleep_until(target).await;
            lags.push((tokio::time::Instant::now() - target).as_secs_f64() * 1e3);
        }
        lags
    });
    let start = std::time::Instant::now();
    let mut thread_lags = Vec::with_capacity(n);
    for i in 0..n as u32 {
        let target = start + gap * i;
        let now = std::time::Instant::now();
        if target > now {
            std::thread::sleep(target - now);
        }
        thread_lags.push((std::time::Instant::now() - target).as_secs_f64() * 1e3);
    }
    for (name, lags) in [
        ("tokio::time::sleep_until", tokio_lags),
        ("std::thread::sleep", thread_lags),
    ] {
        let (p50, p99, max) = percentiles(lags);
        println!(
            "{}",
            serde_json::json!({"timer": name, "rate": rate, "wakeups": n,
                               "lag_ms": {"p50": p50, "p99": p99, "max": max}})
        );
    }
}

/// p50, p99 and max by nearest rank.
fn percentiles(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let rank =
        |p: f64| values[((p * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
    (rank(0.50), rank(0.99), rank(1.0))
}

fn bench(args: &Args) {
    let mut child = None;
    let url = match &args.url {
        Some(url) => url.clone(),
        None => {
            let mut server = Command::new(std::env::current_exe().unwrap())
                .args(["serve", "--seconds", &(args.seconds + 60.0).to_string()])
                .stdout(Stdio::piped())
                .spawn()
                .expect("starting the server process");
            let mut line = String::new();
            BufReader::new(server.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            child = Some(server);
            line.trim().to_owned()
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcome = runtime.block_on(async {
        let client = Client::new(Endpoint {
            base_url: url.clone(),
            api: Api::Chat,
            model: "bench".into(),
            api_key: None,
        })
        .unwrap();
        let request = PlannedRequest::new(
            None,
            serde_json::json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}),
        )
        .unwrap();
        let plan = OpenLoop {
            arrivals: Arrivals::Constant { rate: args.rate },
            duration: Duration::from_secs_f64(args.seconds),
            drain: Duration::from_secs(10),
            request_deadline: Duration::from_secs(10),
        };
        run_open_loop(
            &client,
            &[request],
            &plan,
            |_| {},
            &CancellationToken::new(),
        )
        .await
        .unwrap()
    });
    if let Some(mut server) = child {
        let _ = server.kill();
        let _ = server.wait();
    }

    let lags: Vec<f64> = outcome
        .records
        .iter()
        .filter_map(|r| r.client_delay_ms)
        .collect();
    let (p50, p99, max) = percentiles(lags);
    let ok = outcome
        .records
        .iter()
        .filter(|r| r.status == RequestStatus::Ok)
        .count();
    println!(
        "{}",
        serde_json::json!({
            "client": "kvgate-runner (tokio + reqwest, dispatcher thread)",
            "url": url,
            "rate": args.rate,
            "seconds": args.seconds,
            "planned": outcome.records.len(),
            "ok": ok,
            "lag_ms": {"p50": p50, "p99": p99, "max": max},
        })
    );
}
