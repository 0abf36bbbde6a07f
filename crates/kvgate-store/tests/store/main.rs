//! Store tests against real SQLite files in temporary directories.

mod imports;
mod manifests;
mod runs;
mod studies;
mod study_input;

use kvgate_store::Store;
use tempfile::TempDir;

/// A fresh database file in its own temporary directory (removed on drop).
pub async fn fresh() -> (TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&dir.path().join("kvgate.sqlite"))
        .await
        .expect("open fresh store");
    (dir, store)
}
