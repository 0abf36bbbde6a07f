//! Running many requests: the open-loop dispatcher (requests leave at planned arrival times,
//! whatever the server does) and the closed loop (N workers, each sends its next request when
//! its previous one ends). Every planned request comes back as exactly one record.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kvgate_core::run::{RequestRecord, RequestStatus, RunProgress, RunTiming};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::arrivals::{Arrivals, ScheduleError};
use crate::client::{not_dispatched, Attempt, Client, PlannedRequest};
use crate::clock::RunClock;

/// Progress is reported at most this often.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);
/// Longest single sleep of the dispatcher, so a cancellation is seen promptly.
const DISPATCH_POLL: Duration = Duration::from_millis(10);
/// If request tasks have not all reported this long after the drain deadline, stop waiting.
const STRAGGLER_GRACE: Duration = Duration::from_secs(5);

/// The note on a planned request that was never sent because the run was cancelled. Such a
/// request is recorded `rejected` with `dispatch_ms: None`: offered demand keeps it, and it
/// cannot be mistaken for a request the server refused (those have an `http_status`).
pub const CANCELLED_BEFORE_DISPATCH: &str = "cancelled before dispatch";

/// An open-loop load run.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenLoop {
    pub arrivals: Arrivals,
    /// Arrivals are planned in `[0, duration)`.
    pub duration: Duration,
    /// Grace after `duration` for requests still running; those left at `duration + drain` are
    /// recorded `unfinished` with what they had received.
    pub drain: Duration,
    /// Per-request deadline from dispatch; past it a request is recorded `timeout`.
    pub request_deadline: Duration,
}

/// When a closed loop stops starting requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClosedLoopLimit {
    /// Each planned request once (a quality run); no drain deadline, only request deadlines.
    Once,
    /// Cycle through the requests for `duration`; at `duration + drain` requests still running
    /// are recorded `unfinished`.
    For { duration: Duration, drain: Duration },
}

/// A closed-loop run: `concurrency` workers.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedLoop {
    pub concurrency: u32,
    pub limit: ClosedLoopLimit,
    pub request_deadline: Duration,
}

/// What a run produced: one record per planned request, ordered by index.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub timing: RunTiming,
    pub records: Vec<RequestRecord>,
    /// The cancellation token fired during the run: a labelled partial run.
    pub cancelled: bool,
    /// Run clock at the end of the run.
    pub elapsed_ms: f64,
}

enum Event {
    Dispatched { index: u32, dispatch_ms: f64 },
    Finished(Box<RequestRecord>),
    DispatcherDone,
}

/// Sends `requests` (cycled in order) at the arrival times of `plan`. The dispatcher is a
/// dedicated thread sleeping to absolute instants (tokio's timer has 1 ms granularity, too
/// coarse for sub-millisecond dispatch); each request is a task on the current runtime, so the
/// dispatcher never waits on a response. Must be called inside a tokio runtime.
pub async fn run_open_loop(
    client: &Client,
    requests: &[PlannedRequest],
    plan: &OpenLoop,
    progress: impl FnMut(RunProgress) + Send,
    cancel: &CancellationToken,
) -> Result<RunOutcome, ScheduleError> {
    if requests.is_empty() {
        return Err(ScheduleError::NoRequests);
    }
    let offsets = plan.arrivals.offsets_ms(plan.duration)?;
    let bodies: Arc<[Bytes]> = requests.iter().map(|r| client.encode_body(r)).collect();
    let item_ids: Arc<[Option<String>]> = requests.iter().map(|r| r.item_id.clone()).collect();
    let prompts: Vec<&str> = requests.iter().map(|r| r.prompt_sha256.as_str()).collect();
    let planned = offsets.len();
    let clock = RunClock::start();
    let drain_at = clock.started_at() + plan.duration + plan.drain;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let sent = Arc::new(Sent::new(planned));
    let spawned = Arc::new(Mutex::new(Vec::with_capacity(planned)));

    let dispatcher = Dispatcher {
        runtime: tokio::runtime::Handle::current(),
        client: client.clone(),
        offsets: offsets.clone(),
        bodies,
        item_ids: item_ids.clone(),
        deadline: plan.request_deadline,
        drain_at,
        cancel: cancel.clone(),
        clock,
        tx,
        sent: sent.clone(),
        spawned: spawned.clone(),
    };
    std::thread::Builder::new()
        .name("kvgate-dispatch".into())
        .spawn(move || dispatcher.run())
        .map_err(|e| ScheduleError::Dispatcher(e.to_string()))?;

    let mut reporter = Reporter::new(progress, Some(planned as u32), clock);
    let mut records: Vec<Option<RequestRecord>> = vec![None; planned];
    // The tasks spawned, once the dispatcher is done.
    let mut all_spawned: Option<usize> = None;
    let mut finished = 0usize;
    let give_up = tokio::time::Instant::from_std(drain_at + STRAGGLER_GRACE);
    let mut tick = tokio::time::interval(PROGRESS_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

    while all_spawned != Some(finished) {
        tokio::select! {
            event = rx.recv() => match event {
                Some(Event::Finished(record)) => {
                    finished += 1;
                    reporter.sent = sent.count();
                    reporter.finish(&record);
                    let index = record.index as usize;
                    records[index] = Some(*record);
                }
                Some(Event::DispatcherDone) => {
                    all_spawned = Some(spawned.lock().expect("spawned tasks").len());
                }
                Some(Event::Dispatched { .. }) => {}
                None => break,
            },
            _ = tick.tick() => {
                let now = sent.count();
                if now != reporter.sent {
                    reporter.sent = now;
                    reporter.changed();
                } else {
                    reporter.tick();
                }
            }
            _ = tokio::time::sleep_until(give_up) => break,
        }
    }
    for abort in spawned.lock().expect("spawned tasks").iter() {
        abort.abort();
    }
    let dispatched: Vec<Option<f64>> = (0..planned).map(|i| sent.at(i)).collect();
    let records = account_for_all(records, &dispatched, &offsets, &item_ids, &prompts);
    reporter.emit_final(&records);
    Ok(RunOutcome {
        timing: clock.timing(),
        records,
        cancelled: cancel.is_cancelled(),
        elapsed_ms: clock.now_ms(),
    })
}

struct Dispatcher {
    runtime: tokio::runtime::Handle,
    client: Client,
    offsets: Vec<f64>,
    bodies: Arc<[Bytes]>,
    item_ids: Arc<[Option<String>]>,
    deadline: Duration,
    drain_at: Instant,
    cancel: CancellationToken,
    clock: RunClock,
    tx: mpsc::UnboundedSender<Event>,
    sent: Arc<Sent>,
    spawned: Arc<Mutex<Vec<AbortHandle>>>,
}

/// When each request of an open loop left, written by its task. The collecting task is not
/// woken for it: at thousands of requests a second, each wake-up is CPU that the dispatcher and
/// the request tasks wait for on a small machine.
struct Sent {
    /// Run-clock milliseconds as `f64` bits; [`Sent::NONE`] until the request leaves.
    at: Box<[AtomicU64]>,
    count: AtomicU32,
}

impl Sent {
    /// A NaN, which no dispatch time is.
    const NONE: u64 = u64::MAX;

    fn new(planned: usize) -> Sent {
        Sent {
            at: (0..planned).map(|_| AtomicU64::new(Sent::NONE)).collect(),
            count: AtomicU32::new(0),
        }
    }

    fn record(&self, index: u32, dispatch_ms: f64) {
        self.at[index as usize].store(dispatch_ms.to_bits(), Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn at(&self, index: usize) -> Option<f64> {
        let bits = self.at[index].load(Ordering::Relaxed);
        (bits != Sent::NONE).then(|| f64::from_bits(bits))
    }

    fn count(&self) -> u32 {
        self.count.load(Ordering::Relaxed)
    }
}

/// Asks the kernel to wake this thread from its sleeps as close to the asked time as it can. By
/// default Linux may let a sleep run up to 50 µs long, to wake several threads at once; behind
/// every one of thousands of arrivals a second, that slack is lag.
fn precise_wake_ups() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK changes only the calling thread's timer slack (in ns); it
    // reads no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

impl Dispatcher {
    fn run(self) {
        precise_wake_ups();
        let kinds = self.bodies.len();
        for (i, &planned_ms) in self.offsets.iter().enumerate() {
            if !self.wait_until(self.clock.instant_at(planned_ms)) {
                break;
            }
            let attempt = Attempt {
                index: i as u32,
                item_id: self.item_ids[i % kinds].clone(),
                planned_ms: Some(planned_ms),
                body: self.bodies[i % kinds].clone(),
                deadline: self.deadline,
                drain_at: Some(self.drain_at),
                cancel: Some(self.cancel.clone()),
            };
            let task = self.runtime.spawn(open_request_task(
                self.client.clone(),
                attempt,
                self.clock,
                self.tx.clone(),
                self.sent.clone(),
            ));
            self.spawned
                .lock()
                .expect("spawned tasks")
                .push(task.abort_handle());
        }
        let _ = self.tx.send(Event::DispatcherDone);
    }

    /// Sleeps to the absolute instant `target`; false if the run was cancelled first.
    fn wait_until(&self, target: Instant) -> bool {
        loop {
            if self.cancel.is_cancelled() {
                return false;
            }
            let now = Instant::now();
            if now >= target {
                return true;
            }
            std::thread::sleep((target - now).min(DISPATCH_POLL));
        }
    }
}

/// A request of the open loop: its dispatch time goes to `sent`, its record to `tx`.
async fn open_request_task(
    client: Client,
    attempt: Attempt,
    clock: RunClock,
    tx: mpsc::UnboundedSender<Event>,
    sent: Arc<Sent>,
) {
    let index = attempt.index;
    let on_dispatch = move || sent.record(index, clock.now_ms());
    let record = client.execute(attempt, &clock, on_dispatch).await;
    let _ = tx.send(Event::Finished(Box::new(record)));
}

/// Runs `requests` with `plan.concurrency` workers. Must be called inside a tokio runtime.
pub async fn run_closed_loop(
    client: &Client,
    requests: &[PlannedRequest],
    plan: &ClosedLoop,
    progress: impl FnMut(RunProgress) + Send,
    cancel: &CancellationToken,
) -> Result<RunOutcome, ScheduleError> {
    if requests.is_empty() {
        return Err(ScheduleError::NoRequests);
    }
    if plan.concurrency == 0 {
        return Err(ScheduleError::ZeroConcurrency);
    }
    let bodies: Arc<[Bytes]> = requests.iter().map(|r| client.encode_body(r)).collect();
    let item_ids: Arc<[Option<String>]> = requests.iter().map(|r| r.item_id.clone()).collect();
    let prompts: Vec<&str> = requests.iter().map(|r| r.prompt_sha256.as_str()).collect();
    let clock = RunClock::start();
    let (stop_starting_at, drain_at, planned) = match plan.limit {
        ClosedLoopLimit::Once => (None, None, Some(requests.len() as u32)),
        ClosedLoopLimit::For { duration, drain } => {
            let end = clock.started_at() + duration;
            (Some(end), Some(end + drain), None)
        }
    };
    let next = Arc::new(AtomicU32::new(0));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut workers = JoinSet::new();
    for _ in 0..plan.concurrency {
        let worker = Worker {
            client: client.clone(),
            bodies: bodies.clone(),
            item_ids: item_ids.clone(),
            next: next.clone(),
            once: planned,
            stop_starting_at,
            drain_at,
            deadline: plan.request_deadline,
            cancel: cancel.clone(),
            clock,
            tx: tx.clone(),
        };
        workers.spawn(worker.run());
    }
    drop(tx);

    let mut reporter = Reporter::new(progress, planned, clock);
    let mut records: Vec<Option<RequestRecord>> = Vec::new();
    let mut dispatched: Vec<Option<f64>> = Vec::new();
    let mut tick = tokio::time::interval(PROGRESS_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            event = rx.recv() => match event {
                Some(Event::Dispatched { index, dispatch_ms }) => {
                    let index = index as usize;
                    if dispatched.len() <= index {
                        dispatched.resize(index + 1, None);
                    }
                    dispatched[index] = Some(dispatch_ms);
                    reporter.sent += 1;
                    reporter.changed();
                }
                Some(Event::Finished(record)) => {
                    reporter.finish(&record);
                    let index = record.index as usize;
                    if records.len() <= index {
                        records.resize(index + 1, None);
                    }
                    records[index] = Some(*record);
                }
                Some(Event::DispatcherDone) => {}
                None => break,
            },
            _ = tick.tick() => reporter.tick(),
        }
    }
    workers.abort_all();
    let planned_total = match planned {
        Some(n) => n as usize,
        None => records.len().max(dispatched.len()),
    };
    records.resize(planned_total, None);
    dispatched.resize(planned_total, None);
    // A closed loop has no schedule: a request never started counts as planned for "now".
    let end_ms = clock.now_ms();
    let starts: Vec<f64> = records
        .iter()
        .zip(&dispatched)
        .map(|(r, d)| {
            r.as_ref()
                .map(|r| r.planned_arrival_ms)
                .or(*d)
                .unwrap_or(end_ms)
        })
        .collect();
    let records = account_for_all(records, &dispatched, &starts, &item_ids, &prompts);
    reporter.emit_final(&records);
    Ok(RunOutcome {
        timing: clock.timing(),
        records,
        cancelled: cancel.is_cancelled(),
        elapsed_ms: clock.now_ms(),
    })
}

struct Worker {
    client: Client,
    bodies: Arc<[Bytes]>,
    item_ids: Arc<[Option<String>]>,
    next: Arc<AtomicU32>,
    /// `Some(n)`: stop after index `n − 1`.
    once: Option<u32>,
    stop_starting_at: Option<Instant>,
    drain_at: Option<Instant>,
    deadline: Duration,
    cancel: CancellationToken,
    clock: RunClock,
    tx: mpsc::UnboundedSender<Event>,
}

impl Worker {
    async fn run(self) {
        let kinds = self.bodies.len();
        loop {
            if self.cancel.is_cancelled() {
                return;
            }
            if self.stop_starting_at.is_some_and(|t| Instant::now() >= t) {
                return;
            }
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            if self.once.is_some_and(|n| index >= n) {
                return;
            }
            let i = index as usize;
            let attempt = Attempt {
                index,
                item_id: self.item_ids[i % kinds].clone(),
                planned_ms: Some(self.clock.now_ms()),
                body: self.bodies[i % kinds].clone(),
                deadline: self.deadline,
                drain_at: self.drain_at,
                cancel: Some(self.cancel.clone()),
            };
            let clock = self.clock;
            let tx = self.tx.clone();
            let on_dispatch = move || {
                let dispatch_ms = clock.now_ms();
                let _ = tx.send(Event::Dispatched { index, dispatch_ms });
            };
            let record = self.client.execute(attempt, &self.clock, on_dispatch).await;
            let _ = self.tx.send(Event::Finished(Box::new(record)));
        }
    }
}

/// One record per planned index: a request never sent is `rejected` (cancelled before
/// dispatch); one sent whose task vanished without reporting is `unfinished`.
fn account_for_all(
    records: Vec<Option<RequestRecord>>,
    dispatched: &[Option<f64>],
    planned_ms: &[f64],
    item_ids: &[Option<String>],
    prompts: &[&str],
) -> Vec<RequestRecord> {
    records
        .into_iter()
        .enumerate()
        .map(|(i, record)| {
            let mut record = record.unwrap_or_else(|| {
                let item_id = item_ids[i % item_ids.len()].clone();
                let mut record =
                    not_dispatched(i as u32, item_id, planned_ms[i], CANCELLED_BEFORE_DISPATCH);
                if let Some(dispatch_ms) = dispatched[i] {
                    record.status = RequestStatus::Unfinished;
                    record.dispatch_ms = Some(dispatch_ms);
                    record.client_delay_ms = Some(dispatch_ms - planned_ms[i]);
                    record.error = Some("request task ended without a record".into());
                }
                record
            });
            // Request i sends body i mod the bodies given: what was sent, by its digest.
            record.prompt_sha256 = Some(prompts[i % prompts.len()].to_owned());
            record
        })
        .collect()
}

/// Counts and throttled progress callbacks (at most one per [`PROGRESS_INTERVAL`], plus a
/// last one at the end).
struct Reporter<F> {
    callback: F,
    planned: Option<u32>,
    sent: u32,
    finished: u32,
    failed: u32,
    clock: RunClock,
    last_emit: Option<Instant>,
    dirty: bool,
}

impl<F: FnMut(RunProgress)> Reporter<F> {
    fn new(callback: F, planned: Option<u32>, clock: RunClock) -> Self {
        Reporter {
            callback,
            planned,
            sent: 0,
            finished: 0,
            failed: 0,
            clock,
            last_emit: None,
            dirty: false,
        }
    }

    fn finish(&mut self, record: &RequestRecord) {
        self.finished += 1;
        if record.status != RequestStatus::Ok {
            self.failed += 1;
        }
        self.changed();
    }

    fn changed(&mut self) {
        self.dirty = true;
        self.tick();
    }

    fn tick(&mut self) {
        if self.dirty
            && self
                .last_emit
                .is_none_or(|t| t.elapsed() >= PROGRESS_INTERVAL)
        {
            self.emit();
        }
    }

    /// The last report, recounted from the complete records: every planned request finished.
    fn emit_final(&mut self, records: &[RequestRecord]) {
        self.sent = records.iter().filter(|r| r.dispatch_ms.is_some()).count() as u32;
        self.finished = records.len() as u32;
        self.failed = records
            .iter()
            .filter(|r| r.status != RequestStatus::Ok)
            .count() as u32;
        self.emit();
    }

    fn emit(&mut self) {
        self.dirty = false;
        self.last_emit = Some(Instant::now());
        (self.callback)(RunProgress {
            planned: self.planned,
            sent: self.sent,
            finished: self.finished,
            failed: self.failed,
            elapsed_ms: self.clock.now_ms(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::Sent;

    #[test]
    fn a_request_has_a_dispatch_time_only_once_it_left() {
        let sent = Sent::new(3);
        assert_eq!((sent.at(0), sent.at(2), sent.count()), (None, None, 0));
        // Zero is a time (the run's first instant), not "not sent".
        sent.record(0, 0.0);
        sent.record(2, 12.5);
        assert_eq!(
            (sent.at(0), sent.at(1), sent.at(2), sent.count()),
            (Some(0.0), None, Some(12.5), 2)
        );
    }
}
