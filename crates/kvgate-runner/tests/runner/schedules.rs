//! Open and closed loops: every planned request is accounted for, the open-loop dispatcher
//! keeps its schedule whatever the server does, drain deadlines and cancellation are recorded.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kvgate_runner::schedule::CANCELLED_BEFORE_DISPATCH;
use kvgate_runner::{
    run_closed_loop, run_open_loop, Api, Arrivals, CancellationToken, ClosedLoop, ClosedLoopLimit,
    OpenLoop, PlannedRequest, RequestStatus, RunOutcome, RunProgress, ScheduleError,
};

use crate::server::{self, FaultServer};
use crate::{chat_request, client, quantile, DEADLINE};

fn requests(n: usize) -> Vec<PlannedRequest> {
    (0..n).map(|i| chat_request(&format!("item-{i}"))).collect()
}

fn open(rate: f64, duration_ms: u64, drain_ms: u64) -> OpenLoop {
    OpenLoop {
        arrivals: Arrivals::Constant { rate },
        duration: Duration::from_millis(duration_ms),
        drain: Duration::from_millis(drain_ms),
        request_deadline: DEADLINE,
    }
}

type Log = Arc<Mutex<Vec<RunProgress>>>;

fn progress_log() -> (Log, impl FnMut(RunProgress) + Send) {
    let log: Log = Arc::default();
    let sink = log.clone();
    (log, move |p| sink.lock().unwrap().push(p))
}

async fn open_loop(
    server: &FaultServer,
    mode: &str,
    plan: &OpenLoop,
    cancel: &CancellationToken,
) -> (RunOutcome, Vec<RunProgress>) {
    let client = client(server.base(mode), Api::Chat);
    let (log, progress) = progress_log();
    let outcome = run_open_loop(&client, &requests(3), plan, progress, cancel)
        .await
        .unwrap();
    let log = log.lock().unwrap().clone();
    (outcome, log)
}

fn delays(outcome: &RunOutcome) -> Vec<f64> {
    outcome
        .records
        .iter()
        .filter_map(|r| r.client_delay_ms)
        .collect()
}

fn assert_every_index_once(outcome: &RunOutcome, planned: usize) {
    assert_eq!(outcome.records.len(), planned);
    for (i, r) in outcome.records.iter().enumerate() {
        assert_eq!(r.index as usize, i);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_accounts_for_every_request_and_keeps_its_schedule() {
    let server = server::start().await;
    let plan = open(200.0, 1000, 2000);
    let (outcome, log) = open_loop(&server, "fast", &plan, &CancellationToken::new()).await;

    assert_every_index_once(&outcome, 200);
    assert!(!outcome.cancelled);
    for (i, r) in outcome.records.iter().enumerate() {
        assert_eq!(r.status, RequestStatus::Ok, "{r:?}");
        assert_eq!(r.planned_arrival_ms, i as f64 * 5.0);
        assert_eq!(
            r.item_id.as_deref(),
            Some(format!("item-{}", i % 3).as_str())
        );
        // Each record carries the digest of the body it sent.
        assert_eq!(
            r.prompt_sha256.as_deref(),
            Some(requests(3)[i % 3].prompt_sha256.as_str())
        );
        assert!(r.client_delay_ms.unwrap() >= 0.0);
    }
    // How closely dispatch keeps the schedule is a figure of `make bench` (dispatch lag p50/p99/max
    // at 2,000 req/s beside Python asyncio), not a timed assertion that a loaded machine breaks.
    assert_eq!(server.stats.requests.load(Ordering::SeqCst), 200);

    let last = log.last().unwrap();
    assert_eq!(
        (last.planned, last.sent, last.finished, last.failed),
        (Some(200), 200, 200, 0)
    );
    // Throttled: at most one report per 100 ms, plus the first and the last.
    let allowed = (outcome.elapsed_ms / 100.0).ceil() as usize + 2;
    assert!(
        log.len() <= allowed,
        "{} reports in {} ms",
        log.len(),
        outcome.elapsed_ms
    );
    assert!(log.windows(2).all(|w| w[0].finished <= w[1].finished));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dispatcher_never_waits_on_slow_responses() {
    let server = server::start().await;
    // Each response takes 400 ms; a dispatcher that waited would fall 380 ms behind per request.
    let plan = open(50.0, 500, 3000);
    let (outcome, _) = open_loop(&server, "slow-400", &plan, &CancellationToken::new()).await;
    assert_every_index_once(&outcome, 25);
    assert!(outcome
        .records
        .iter()
        .all(|r| r.status == RequestStatus::Ok && r.e2e_ms().unwrap() >= 400.0));
    // A dispatcher that waited for an answer would put request k at least 380·k ms behind its
    // planned arrival, and never have more than one request in flight.
    let worst = quantile(&delays(&outcome), 1.0);
    assert!(worst < 380.0, "dispatch lag max {worst} ms");
    assert!(server.stats.max_in_flight.load(Ordering::SeqCst) >= 15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_running_at_the_drain_deadline_are_unfinished_with_partial_data() {
    let server = server::start().await;
    let started = Instant::now();
    let (outcome, log) = open_loop(
        &server,
        "stall",
        &open(20.0, 250, 300),
        &CancellationToken::new(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_every_index_once(&outcome, 5);
    for r in &outcome.records {
        assert_eq!(r.status, RequestStatus::Unfinished, "{r:?}");
        assert_eq!(r.finish_ms, None);
        assert_eq!(r.output_text, "Hello");
        assert_eq!(r.chunk_times_ms.len(), 1);
        assert!(r.dispatch_ms.is_some());
        assert!(r.error.as_deref().unwrap().contains("drain deadline"));
    }
    let last = log.last().unwrap();
    assert_eq!((last.finished, last.failed), (5, 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_requests_past_the_drain_deadline_are_unfinished() {
    let server = server::start().await;
    // Arrivals at 0, 200, …, 800 ms; 400 ms responses; drain deadline at 1100 ms.
    let (outcome, _) = open_loop(
        &server,
        "slow-400",
        &open(5.0, 1000, 100),
        &CancellationToken::new(),
    )
    .await;
    let statuses: Vec<RequestStatus> = outcome.records.iter().map(|r| r.status).collect();
    use RequestStatus::{Ok, Unfinished};
    assert_eq!(statuses, vec![Ok, Ok, Ok, Ok, Unfinished]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_marks_undispatched_requests_and_abandons_running_ones() {
    let server = server::start().await;
    let client = client(server.base("stall"), Api::Chat);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let started = Instant::now();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let (log, progress) = progress_log();
    let plan = open(20.0, 10_000, 1000);
    let outcome = run_open_loop(&client, &requests(3), &plan, progress, &cancel)
        .await
        .unwrap();
    let log = log.lock().unwrap().clone();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(outcome.cancelled);
    assert_every_index_once(&outcome, 200);
    let sent: Vec<_> = outcome
        .records
        .iter()
        .filter(|r| r.dispatch_ms.is_some())
        .collect();
    assert!((4..=9).contains(&sent.len()), "{} sent", sent.len());
    for r in &sent {
        assert_eq!(r.status, RequestStatus::Unfinished);
        assert_eq!(r.error.as_deref(), Some("cancelled while in flight"));
        // The partial text is kept (the last one may have been cut before its first token).
        assert!(
            r.output_text == "Hello" || r.dispatch_ms.unwrap() > 240.0,
            "{r:?}"
        );
    }
    for r in outcome.records.iter().filter(|r| r.dispatch_ms.is_none()) {
        assert_eq!(r.status, RequestStatus::Rejected);
        assert_eq!(r.error.as_deref(), Some(CANCELLED_BEFORE_DISPATCH));
        assert_eq!((r.client_delay_ms, r.http_status), (None, None));
        // Never sent, but planned with its prompt: the digest names what would have gone.
        assert!(r.prompt_sha256.is_some(), "{r:?}");
        assert!(r.planned_arrival_ms >= 250.0, "{r:?}");
    }
    // The last report counts every planned request as finished, the undispatched as failed.
    let last = log.last().unwrap();
    assert_eq!(last.sent as usize, sent.len());
    assert_eq!((last.finished, last.failed), (200, 200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_once_keeps_concurrency_and_order() {
    let server = server::start().await;
    let client = client(server.base("slow-100"), Api::Chat);
    let plan = ClosedLoop {
        concurrency: 3,
        limit: ClosedLoopLimit::Once,
        request_deadline: DEADLINE,
    };
    let (log, progress) = progress_log();
    let outcome = run_closed_loop(
        &client,
        &requests(12),
        &plan,
        progress,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_every_index_once(&outcome, 12);
    for (i, r) in outcome.records.iter().enumerate() {
        assert_eq!(r.status, RequestStatus::Ok);
        assert_eq!(r.item_id.as_deref(), Some(format!("item-{i}").as_str()));
        assert!(r.client_delay_ms.unwrap() < 5.0, "{r:?}");
    }
    assert_eq!(server.stats.max_in_flight.load(Ordering::SeqCst), 3);
    // 12 requests of ≥ 100 ms over 3 workers: at least 400 ms.
    assert!(outcome.elapsed_ms >= 400.0, "{}", outcome.elapsed_ms);
    let last = *log.lock().unwrap().last().unwrap();
    assert_eq!((last.planned, last.finished), (Some(12), 12));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_for_a_duration_cycles_requests_and_drains() {
    let server = server::start().await;
    let client = client(server.base("normal"), Api::Chat);
    let plan = ClosedLoop {
        concurrency: 2,
        limit: ClosedLoopLimit::For {
            duration: Duration::from_millis(500),
            drain: Duration::from_millis(1000),
        },
        request_deadline: DEADLINE,
    };
    let (log, progress) = progress_log();
    let outcome = run_closed_loop(
        &client,
        &requests(3),
        &plan,
        progress,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let n = outcome.records.len();
    assert!(n >= 6, "{n} requests in 500 ms");
    assert_every_index_once(&outcome, n);
    assert!(outcome
        .records
        .iter()
        .all(|r| r.status == RequestStatus::Ok));
    assert!(outcome.records.iter().all(|r| r.planned_arrival_ms < 500.0));
    let last = *log.lock().unwrap().last().unwrap();
    assert_eq!((last.planned, last.finished as usize), (None, n));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_cancel_accounts_for_the_rest() {
    let server = server::start().await;
    let client = client(server.base("slow-200"), Api::Chat);
    let plan = ClosedLoop {
        concurrency: 2,
        limit: ClosedLoopLimit::Once,
        request_deadline: DEADLINE,
    };
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let outcome = run_closed_loop(&client, &requests(20), &plan, |_| {}, &cancel)
        .await
        .unwrap();
    assert!(outcome.cancelled);
    assert_every_index_once(&outcome, 20);
    let count = |s: RequestStatus| outcome.records.iter().filter(|r| r.status == s).count();
    assert_eq!(count(RequestStatus::Ok), 2, "{:?}", outcome.records);
    assert_eq!(count(RequestStatus::Unfinished), 2);
    assert_eq!(count(RequestStatus::Rejected), 16);
}

#[tokio::test]
async fn empty_or_impossible_plans_are_refused() {
    let server = server::start().await;
    let client = client(server.base("fast"), Api::Chat);
    let cancel = CancellationToken::new();
    let err = run_open_loop(&client, &[], &open(1.0, 100, 0), |_| {}, &cancel).await;
    assert_eq!(err.unwrap_err(), ScheduleError::NoRequests);
    let plan = ClosedLoop {
        concurrency: 0,
        limit: ClosedLoopLimit::Once,
        request_deadline: DEADLINE,
    };
    let err = run_closed_loop(&client, &requests(1), &plan, |_| {}, &cancel).await;
    assert_eq!(err.unwrap_err(), ScheduleError::ZeroConcurrency);
    assert_eq!(server.stats.requests.load(Ordering::SeqCst), 0);
}
