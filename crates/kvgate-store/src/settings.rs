use crate::{Store, StoreError};

/// Keys of the `settings` table, in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// Id of the study the user opened last, reopened at start.
    LastOpenedStudy,
    /// Set once the demo study has been seeded, so deleting it never brings it back.
    DemoSeeded,
}

impl Setting {
    fn key(self) -> &'static str {
        match self {
            Setting::LastOpenedStudy => "last_opened_study",
            Setting::DemoSeeded => "demo_seeded",
        }
    }
}

impl Store {
    pub async fn setting(&self, setting: Setting) -> Result<Option<String>, StoreError> {
        let value = sqlx::query_scalar::<_, String>("SELECT value FROM settings WHERE key = ?")
            .bind(setting.key())
            .fetch_optional(&self.pool)
            .await?;
        Ok(value)
    }

    pub async fn set_setting(&self, setting: Setting, value: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO settings (key, value) VALUES (?, ?) \
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        )
        .bind(setting.key())
        .bind(value)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
