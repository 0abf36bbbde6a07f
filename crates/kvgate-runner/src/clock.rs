//! The run clock: one monotonic zero per run, read once against the wall clock.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kvgate_core::run::RunTiming;

/// Milliseconds since run start on the monotonic clock. The wall clock is read exactly once,
/// at [`RunClock::start`], so a wall-clock jump during a run cannot bend any interval.
///
/// `std::time::Instant` (not tokio's) so the dispatcher thread, outside the runtime, reads the
/// same clock; tokio's `Instant` wraps the same monotonic source.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    start: Instant,
    wall_anchor_unix_ms: i64,
}

impl RunClock {
    pub fn start() -> Self {
        let start = Instant::now();
        let wall_anchor_unix_ms = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(since) => i64::try_from(since.as_millis()).unwrap_or(i64::MAX),
            Err(before) => -i64::try_from(before.duration().as_millis()).unwrap_or(i64::MAX),
        };
        RunClock {
            start,
            wall_anchor_unix_ms,
        }
    }

    /// What the store keeps about this clock.
    pub fn timing(&self) -> RunTiming {
        RunTiming {
            wall_anchor_unix_ms: self.wall_anchor_unix_ms,
        }
    }

    /// The clock's zero.
    pub fn started_at(&self) -> Instant {
        self.start
    }

    pub fn now_ms(&self) -> f64 {
        self.ms_at(Instant::now())
    }

    /// An instant as milliseconds on this clock (negative before the start).
    pub fn ms_at(&self, t: Instant) -> f64 {
        match t.checked_duration_since(self.start) {
            Some(d) => d.as_secs_f64() * 1e3,
            None => -(self.start.duration_since(t).as_secs_f64() * 1e3),
        }
    }

    /// The instant `ms` milliseconds after the start (`ms` ≥ 0, finite).
    pub fn instant_at(&self, ms: f64) -> Instant {
        self.start + Duration::from_secs_f64(ms.max(0.0) / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_and_milliseconds_round_trip() {
        let clock = RunClock::start();
        let t = clock.instant_at(1234.5);
        assert!((clock.ms_at(t) - 1234.5).abs() < 1e-6);
        assert!(clock.now_ms() >= 0.0);
        assert!(clock.timing().wall_anchor_unix_ms > 1_600_000_000_000);
    }
}
