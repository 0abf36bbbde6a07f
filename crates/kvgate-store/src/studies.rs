use kvgate_core::study::{NewStudy, Provenance, Study};
use sqlx::sqlite::SqliteRow;
use sqlx::Row;

use crate::{now_rfc3339, Store, StoreError};

/// The studies columns in the order `study_from_row` reads them, spliced into static SQL.
macro_rules! columns {
    () => {
        "id, name, description, provenance, created_at"
    };
}

fn study_from_row(row: &SqliteRow) -> Result<Study, StoreError> {
    let id: i64 = row.try_get("id")?;
    let provenance: String = row.try_get("provenance")?;
    let provenance = Provenance::parse(&provenance).ok_or(StoreError::Corrupt {
        table: "studies",
        row: id,
        column: "provenance",
        expected: "synthetic_demo, recorded_demo or user",
        found: provenance,
    })?;
    Ok(Study {
        id,
        name: row.try_get("name")?,
        description: row.try_get("description")?,
        provenance,
        created_at: row.try_get("created_at")?,
    })
}

impl Store {
    /// Inserts a study. The input must already be validated by `NewStudy::validate`.
    pub async fn insert_study(
        &self,
        new: &NewStudy,
        provenance: Provenance,
    ) -> Result<Study, StoreError> {
        let sql = concat!(
            "INSERT INTO studies (name, description, provenance, created_at) ",
            "VALUES (?, ?, ?, ?) RETURNING ",
            columns!()
        );
        let row = sqlx::query(sql)
            .bind(&new.name)
            .bind(&new.description)
            .bind(provenance.as_str())
            .bind(now_rfc3339())
            .fetch_one(&self.pool)
            .await
            .map_err(|err| {
                if StoreError::is_unique_violation(&err) {
                    StoreError::Conflict {
                        entity: "study",
                        field: "name",
                        value: new.name.clone(),
                    }
                } else {
                    err.into()
                }
            })?;
        study_from_row(&row)
    }

    /// Every study, oldest first.
    pub async fn list_studies(&self) -> Result<Vec<Study>, StoreError> {
        let sql = concat!("SELECT ", columns!(), " FROM studies ORDER BY id");
        let rows = sqlx::query(sql).fetch_all(&self.pool).await?;
        rows.iter().map(study_from_row).collect()
    }

    /// The study with this id, if any.
    pub async fn study(&self, id: i64) -> Result<Option<Study>, StoreError> {
        let sql = concat!("SELECT ", columns!(), " FROM studies WHERE id = ?");
        let row = sqlx::query(sql).bind(id).fetch_optional(&self.pool).await?;
        row.as_ref().map(study_from_row).transpose()
    }

    /// The study with this name (names are unique regardless of case), if any.
    pub async fn study_by_name(&self, name: &str) -> Result<Option<Study>, StoreError> {
        let sql = concat!("SELECT ", columns!(), " FROM studies WHERE name = ?");
        let row = sqlx::query(sql)
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(study_from_row).transpose()
    }
}
