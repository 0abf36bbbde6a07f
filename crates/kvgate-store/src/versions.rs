//! Immutable, versioned documents of a study (the acceptance policy, the recovery plan): the
//! version a new document gets, checked inside the caller's write transaction.

use sqlx::SqliteConnection;

use crate::StoreError;

/// The next version of `table` for the study: refused when the study does not exist, and as a
/// conflict when `sha256` equals the latest version's (nothing changed). `table` is one of this
/// crate's own table names, never user input.
pub(crate) async fn next_version(
    conn: &mut SqliteConnection,
    table: &'static str,
    entity: &'static str,
    study_id: i64,
    sha256: &str,
) -> Result<i64, StoreError> {
    let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM studies WHERE id = ?")
        .bind(study_id)
        .fetch_optional(&mut *conn)
        .await?;
    if exists.is_none() {
        return Err(StoreError::NotFound {
            entity: "study",
            key: study_id.to_string(),
        });
    }
    let latest: Option<(i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT version, sha256 FROM {table} WHERE study_id = ? ORDER BY version DESC LIMIT 1"
    )))
    .bind(study_id)
    .fetch_optional(&mut *conn)
    .await?;
    match latest {
        Some((version, digest)) if digest == sha256 => Err(StoreError::Unchanged {
            entity,
            version,
            sha256: sha256.to_owned(),
        }),
        Some((version, _)) => Ok(version + 1),
        None => Ok(1),
    }
}
