use std::path::PathBuf;

/// A storage failure, naming the file and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open database {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: sqlx::Error,
    },
    #[error("cannot migrate database {path}: {source}")]
    Migrate {
        path: PathBuf,
        #[source]
        source: sqlx::migrate::MigrateError,
    },
    #[error("{entity} with {field} {value:?} already exists")]
    Conflict {
        entity: &'static str,
        field: &'static str,
        value: String,
    },
    /// A version whose text is the latest one's: nothing new to store.
    #[error(
        "this {entity} is already version {version} (sha256 {sha256}): nothing changed, so no new version was made"
    )]
    Unchanged {
        entity: &'static str,
        version: i64,
        sha256: String,
    },
    #[error("{entity} {key} not found")]
    NotFound { entity: &'static str, key: String },
    #[error(
        "{entity} {key} is frozen: a frozen record never changes; save the change as a new one"
    )]
    Frozen { entity: &'static str, key: String },
    #[error("{entity} {key} is a draft: only a frozen {entity} can be run; freeze it first")]
    NotFrozen { entity: &'static str, key: String },
    #[error("{entity} {key}: {reason}")]
    Invalid {
        entity: &'static str,
        key: String,
        reason: String,
    },
    #[error("table {table}, row {row}, column {column}: expected {expected}, found {found:?}")]
    Corrupt {
        table: &'static str,
        row: i64,
        column: &'static str,
        expected: &'static str,
        found: String,
    },
    #[error("cancelled: nothing of it was stored")]
    Cancelled,
    /// The rows of a streamed import stopped coming before all were read; the source names why.
    #[error("the source stopped before all its rows were read: nothing of it was stored")]
    SourceStopped,
    #[error("database error: {0}")]
    Sqlx(#[from] sqlx::Error),
    /// An error SQLite reported on a statement stepped directly.
    #[error("database error: {0}")]
    Sqlite(String),
}

impl StoreError {
    /// True when a UNIQUE constraint rejected the write.
    pub(crate) fn is_unique_violation(err: &sqlx::Error) -> bool {
        matches!(err, sqlx::Error::Database(db) if db.is_unique_violation())
    }
}
