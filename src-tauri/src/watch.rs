//! The database file watch: lists in the window refresh when another process (the `kvgate` CLI,
//! a second window) writes to the workspace database.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kvgate_app::App;
use tauri::{AppHandle, Emitter, Runtime};

/// The event the UI listens to; it carries nothing: the UI reads again what it shows.
pub const DB_CHANGED_EVENT: &str = "db-changed";

/// How often the database files are looked at: two `stat` calls, no query.
pub const WATCH_PERIOD: Duration = Duration::from_secs(1);

/// Stops the watch when dropped.
pub struct DbWatch(Arc<AtomicBool>);

impl Drop for DbWatch {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Compares the database stamp every `period` and emits [`DB_CHANGED_EVENT`] once per change.
/// A label the window gave itself is not reported (the window shows it already, and reading a
/// review list of 100,000 pairs again is not cheap); other writes of the window are, and reads
/// never change the stamp, so a reload never triggers another one.
pub fn watch_database<R: Runtime>(handle: AppHandle<R>, app: App, period: Duration) -> DbWatch {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    std::thread::Builder::new()
        .name("kvgate-db-watch".into())
        .spawn(move || {
            let mut last = app.db_stamp();
            while !stopped.load(Ordering::Relaxed) {
                std::thread::sleep(period);
                if app.changed_by_others(&mut last) {
                    let _ = handle.emit(DB_CHANGED_EVENT, ());
                }
            }
        })
        .expect("the database watch thread starts");
    DbWatch(stop)
}
