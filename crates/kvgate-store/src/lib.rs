//! The store: one SQLite file per workspace, opened through sqlx with WAL, foreign keys and a
//! busy timeout, migrated at open from the plain `.sql` files in `migrations/`.
//!
//! It persists and retrieves `kvgate-core` types and enforces integrity in the database itself:
//! constraints, and triggers that refuse any change to a frozen manifest, a finished run or an
//! audit event, and keep the audit chain append-only. It must not hold
//! rules of the product beyond integrity, must not parse outside formats, and uses runtime-checked
//! queries only, so builds never need a database.

mod error;
mod feeders;
mod imports;
mod manifests;
mod measured;
mod policies;
mod progress;
mod recovery;
mod review;
mod revision;
mod run_columns;
mod runs;
mod settings;
mod studies;
pub mod study_input;
mod versions;

pub use error::StoreError;
pub use feeders::yield_to_inserts;
pub use imports::{AggregateRow, ImportRecord, ImportedRun, NewImport, StreamedRows};
pub use manifests::ManifestRecord;
pub use measured::{
    JudgedRequest, MeasuredRequest, MEASURED_REQUESTS_SQL, RUN_MEASURED_REQUESTS_SQL,
};
pub use policies::PolicyRecord;
pub use recovery::RecoveryPlanRecord;
pub use review::AdjudicationRow;
pub use run_columns::{ColumnsDictionary, ColumnsPart, ColumnsRow, PART_ROWS};
pub use runs::{
    Granularity, HarnessReference, ImportedRequest, MetricScrapeRow, NewRun, RequestRowSource,
    RunEvidence, RunKind, RunProvenance, RunRecord, RunState, StoredRequest,
};
pub use settings::Setting;

use std::os::raw::c_int;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::Sqlite;

/// The page size of a database this store creates (an existing file keeps its own). A run's
/// requests fill a fourth of the pages SQLite's default of 4 KiB would, so a large import writes
/// a fourth of the log frames, and of the pages copied from the log into the file at its commit.
/// `kvgate analyze` of a million requests took as long at either size (`make bench`, analyze).
const PAGE_SIZE: u32 = 16_384;

/// How long a writer waits for another connection's lock before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Turns off SQLite's count of the memory it holds, before its first connection in this
/// process. With the count on, every allocation and free of SQLite's takes one process-wide
/// mutex: an import of a million requests took about 500 of 7,200 samples of its inserting
/// thread in `pthread_mutex_lock` and `unlock` (`perf record`, `make bench`'s import). The count
/// serves `sqlite3_memory_used` and a soft heap limit, neither of which the store uses.
///
/// `sqlite3_config` may only be called before SQLite is initialized; once it is (by an earlier
/// open in this process, or by another library), the call is refused with `SQLITE_MISUSE` and
/// changes nothing, which is harmless: the count only costs time.
fn without_memory_count() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: a configuration call with its documented argument (an int: 0 is off); SQLite
        // refuses it, changing nothing, once initialized.
        unsafe {
            libsqlite3_sys::sqlite3_config(libsqlite3_sys::SQLITE_CONFIG_MEMSTATUS, 0 as c_int);
        }
    });
}

/// An open workspace database.
#[derive(Clone, Debug)]
pub struct Store {
    pool: SqlitePool,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if missing) the database file at `path` and applies pending migrations.
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        without_memory_count();
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .page_size(PAGE_SIZE)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(|source| StoreError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|source| StoreError::Migrate {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Store {
            pool,
            path: path.to_path_buf(),
        })
    }

    /// A connection for one large write transaction (an import): SQLite keeps a journal of the
    /// pages each statement changes, so that it can undo that statement alone, and past 64 KiB
    /// it keeps it in a temporary file, which every statement writing a batch of
    /// requests would then write to. With temporary storage in memory it stays in memory; it is
    /// emptied after each statement. Give it back with [`Store::release_bulk`].
    pub(crate) async fn bulk_connection(&self) -> Result<PoolConnection<Sqlite>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        sqlx::query("PRAGMA temp_store = MEMORY")
            .execute(&mut *conn)
            .await?;
        Ok(conn)
    }

    /// Gives back a connection of [`Store::bulk_connection`] as the pool's others are; one that
    /// cannot be set back is closed instead. (One whose transaction was dropped half-way goes
    /// back as it is: its temporary storage stays in memory, which changes no result.)
    pub(crate) async fn release_bulk(mut conn: PoolConnection<Sqlite>) {
        let reset = sqlx::query("PRAGMA temp_store = DEFAULT")
            .execute(&mut *conn)
            .await;
        if reset.is_err() {
            conn.close_on_drop();
        }
    }

    /// The database file this store writes to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The connection pool, for tests and tools that inspect the file directly.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Waits for pending work and closes every connection (checkpointing the WAL).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// The current time as RFC 3339 UTC with millisecond precision, the format of every stored timestamp.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    now.format(&format).expect("a UTC timestamp always formats")
}

/// Unix milliseconds as RFC 3339 UTC with millisecond precision; `None` outside the years
/// 0000–9999.
pub fn rfc3339_from_unix_ms(unix_ms: i64) -> Option<String> {
    let nanos = i128::from(unix_ms) * 1_000_000;
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(nanos).ok()?;
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    at.format(&format).ok()
}

#[cfg(test)]
mod tests {
    use super::Store;

    /// The first open in this test binary comes before SQLite's initialization, so the count is
    /// off: SQLite then reports no memory held, whatever it allocated. (Opened elsewhere first,
    /// the count would be on and this would fail: no other test of this binary opens SQLite.)
    #[tokio::test]
    async fn sqlite_keeps_no_count_of_the_memory_it_holds() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&dir.path().join("w.sqlite"))
            .await
            .expect("open");
        let studies: i64 = sqlx::query_scalar("SELECT count(*) FROM studies")
            .fetch_one(store.pool())
            .await
            .expect("query");
        assert_eq!(studies, 0);
        // SAFETY: a read of SQLite's process-wide statistics.
        let used = unsafe { libsqlite3_sys::sqlite3_memory_used() };
        assert_eq!(
            used, 0,
            "SQLite counted {used} bytes: its memory count is on"
        );
        store.close().await;
    }
}
