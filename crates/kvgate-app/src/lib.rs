//! The service layer: one async function per user action (create a study, list studies, …),
//! called by both shells, the `kvgate` CLI and the Tauri desktop app, so an action behaves the
//! same whichever shell triggers it.
//!
//! It opens the workspace database, validates input with `kvgate-core`, calls the store and
//! returns IPC-ready types and errors. It must not print, parse command lines, know about Tauri,
//! or implement a rule of the product (rules live in `kvgate-core`).

pub mod analysis;
pub mod charts;
pub mod contract;
pub mod credentials;
mod error;
mod evidence;
pub mod files;
pub mod fixtures;
pub mod huge_pages;
pub mod imports;
pub mod interventions;
pub mod llm;
mod location;
pub mod manifests;
mod markup;
pub mod packet;
pub mod recovery;
pub mod review;
pub mod runs;
pub mod signing;
pub mod signoff;
mod studies;
pub mod weights;

pub use error::{AppError, ErrorCode, Problem, ProblemCode};

/// The domain types and rules the shells name and pass through: the shells depend on this crate
/// alone, and every rule stays in `kvgate-core`.
pub use kvgate_core as domain;
/// The outside formats the shells name (import formats, weight-scale patterns, startup logs).
pub use kvgate_formats as formats;
pub use location::{default_db_path, DbLocation, DATA_DIR_ENV, DB_ENV};

use std::path::PathBuf;

use kvgate_store::Store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What the shells show about the running workbench.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct AppInfo {
    pub version: String,
    pub db_path: String,
    pub db_is_default: bool,
}

/// Own writes kept for the watch between two of its looks (a label each).
const MAX_OWN_WRITES: usize = 256;

/// See [`App::db_stamp`]: compared, never read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbStamp([Option<(u64, Option<std::time::SystemTime>)>; 2]);

/// An open workbench: the workspace database and where it lives.
#[derive(Debug, Clone)]
pub struct App {
    store: Store,
    db_path: PathBuf,
    db_is_default: bool,
    servers: llm::LocalServers,
    runs: runs::ActiveRuns,
    imports: imports::ActiveImports,
    session_keys: credentials::SessionKeys,
    analyses: analysis::AnalysisCache,
    review_corpus: review::ReviewCorpus,
    /// Writes of this process that the window shows at once (a label), as the database stamp
    /// just before and just after each: the watch does not report them as changes.
    own_writes: std::sync::Arc<std::sync::Mutex<Vec<(DbStamp, DbStamp)>>>,
}

impl App {
    /// Opens the workspace database, creating and migrating it if needed. The default database
    /// is seeded with the synthetic demo study the first time it is created.
    pub async fn open(location: DbLocation) -> Result<App, AppError> {
        let (db_path, db_is_default) = match location {
            DbLocation::Default => (default_db_path()?, true),
            DbLocation::Path(path) => (path, false),
        };
        if let Some(parent) = db_path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                AppError::storage(format!(
                    "cannot create the database folder {}: {e}",
                    parent.display()
                ))
            })?;
        }
        create_private(&db_path)?;
        let store = Store::open(&db_path).await?;
        let app = App {
            store,
            db_path,
            db_is_default,
            servers: Default::default(),
            runs: Default::default(),
            imports: Default::default(),
            session_keys: Default::default(),
            analyses: Default::default(),
            review_corpus: Default::default(),
            own_writes: Default::default(),
        };
        app.mark_interrupted_runs().await?;
        if db_is_default {
            app.seed_demo_once().await?;
        }
        Ok(app)
    }

    /// Version and database location, for the window header and `kvgate --version` style output.
    pub fn info(&self) -> AppInfo {
        AppInfo {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            db_path: self.db_path.display().to_string(),
            db_is_default: self.db_is_default,
        }
    }

    /// A cheap fingerprint of the database files (size and modification time of the file and
    /// its write-ahead log): it changes when anyone commits to the database, this process or
    /// another one (the CLI), and stays the same while everyone only reads. Two `stat` calls.
    pub fn db_stamp(&self) -> DbStamp {
        let mut wal = self.db_path.clone().into_os_string();
        wal.push("-wal");
        let stat = |p: &std::path::Path| {
            std::fs::metadata(p)
                .ok()
                .map(|m| (m.len(), m.modified().ok()))
        };
        DbStamp([stat(&self.db_path), stat(std::path::Path::new(&wal))])
    }

    /// Runs a write of this process whose result the window shows at once (a label, the study it
    /// opened, the review seed its queue was read with), noting the database stamp before and
    /// after it, so [`App::changed_by_others`] does not report it. A write by another process
    /// that lands between the two stamps is taken for this one's.
    pub(crate) async fn own_write<T>(
        &self,
        write: impl std::future::Future<Output = Result<T, AppError>>,
    ) -> Result<T, AppError> {
        let before = self.db_stamp();
        let out = write.await?;
        let after = self.db_stamp();
        if after == before {
            // Nothing was written (a record already there): nothing to take for this one's.
            return Ok(out);
        }
        let mut own = self.own_writes.lock().unwrap_or_else(|e| e.into_inner());
        if own.len() >= MAX_OWN_WRITES {
            own.remove(0);
        }
        own.push((before, after));
        Ok(out)
    }

    /// Whether the database changed since `last` (which becomes the current stamp) by anything
    /// but this process's own noted writes: from `last`, those lead to the current stamp.
    pub fn changed_by_others(&self, last: &mut DbStamp) -> bool {
        let now = self.db_stamp();
        if &now == last {
            return false;
        }
        let mut own = self.own_writes.lock().unwrap_or_else(|e| e.into_inner());
        let mut at = last.clone();
        for _ in 0..own.len() {
            match own.iter().find(|(before, _)| before == &at) {
                Some((_, after)) => at = after.clone(),
                None => break,
            }
            if at == now {
                break;
            }
        }
        own.clear();
        *last = now;
        at != *last
    }

    /// The store, for tests and tools that inspect the database directly.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Closes the database cleanly.
    pub async fn close(&self) {
        self.store.close().await;
    }
}

/// A new database file is created readable by its owner only (0600); SQLite gives its WAL and
/// shared-memory files the same mode. An existing file keeps the mode it has.
fn create_private(path: &std::path::Path) -> Result<(), AppError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(AppError::storage(format!(
            "cannot create the database file {}: {e}",
            path.display()
        ))),
    }
}
