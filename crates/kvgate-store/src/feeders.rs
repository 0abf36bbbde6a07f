//! Threads that feed rows to a write transaction run below the thread that inserts them.
//!
//! A large import is as fast as its inserting thread: SQLite's inserts run on that one thread,
//! while the threads that read, check and convert the rows keep ahead of it with time to spare.
//! On two cores, at equal priority, the inserting thread of a million-request import waited
//! 1.3–1.9 s of about 9 s to run while those threads ran instead (`run` and `runq-wait` of
//! `/proc/<pid>/task/<tid>/schedstat`); with them at a lower priority it waited 0.9–1.2 s, and
//! the import took 1.5–5 % less time (`make bench`'s file, `kvgate import`, three runs of each
//! build alternating, twice).

/// The nice increment of a thread that feeds rows to an inserting thread: a weight about a
/// tenth of a thread at the default priority's, so it runs beside the inserting thread, on
/// another core, rather than instead of it.
#[cfg(target_os = "linux")]
const FEEDER_NICE: i32 = 10;

/// Lowers the calling thread's scheduling priority (its nice value, by [`FEEDER_NICE`]) for the
/// rest of its life; the threads it starts afterwards inherit it. For a thread of its own that
/// only feeds rows to a write transaction: an unprivileged thread cannot raise its priority back,
/// so never call it on a pool's thread. Does nothing where threads have no priority of their own
/// (outside Linux), or if the system refuses.
pub fn yield_to_inserts() {
    #[cfg(target_os = "linux")]
    if let Some(now) = own_nice() {
        // SAFETY: a system call on the calling thread's own id, with no memory handed over; a
        // refusal changes nothing.
        unsafe {
            libc::setpriority(
                libc::PRIO_PROCESS,
                libc::gettid() as libc::id_t,
                now + FEEDER_NICE,
            );
        }
    }
}

/// The calling thread's nice value; `None` if the system does not say.
#[cfg(target_os = "linux")]
fn own_nice() -> Option<i32> {
    // SAFETY: reads the calling thread's own priority. `getpriority` may return -1 as a value,
    // so errno, cleared before, tells a failure apart.
    unsafe {
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t);
        (*libc::__errno_location() == 0).then_some(now)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::{own_nice, yield_to_inserts};

    fn nice() -> i32 {
        own_nice().expect("getpriority of this thread")
    }

    #[test]
    fn a_feeding_thread_and_the_threads_it_starts_run_below_the_others() {
        let before = nice();
        let (feeder, started) = std::thread::spawn(|| {
            yield_to_inserts();
            let feeder = nice();
            (
                feeder,
                std::thread::spawn(nice).join().expect("started thread"),
            )
        })
        .join()
        .expect("feeding thread");
        // At most 19: a thread already near the bottom stays at the bottom.
        assert_eq!(feeder, (before + 10).min(19));
        assert_eq!(started, feeder);
        // Only the thread that asked: this one, and threads it starts, keep their priority.
        assert_eq!(nice(), before);
        assert_eq!(
            std::thread::spawn(nice).join().expect("other thread"),
            before
        );
    }
}
