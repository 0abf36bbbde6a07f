//! User actions on studies.

use kvgate_core::study::{NewStudy, Provenance, Study};
use kvgate_store::Setting;

use crate::{App, AppError};

/// The demo study seeded into the default database on first start.
pub(crate) const DEMO_STUDY_NAME: &str = "Demo: FP8 KV cache for a chat service";
const DEMO_STUDY_DESCRIPTION: &str = "Synthetic demo: generated data, not a recorded run. \
It shows the shape of a KV-precision review (B0 f16 KV against 8-bit KV candidates) \
and carries no measurement of any model or accelerator.";

impl App {
    /// Creates a study from user input.
    pub async fn create_study(&self, input: NewStudy) -> Result<Study, AppError> {
        let input = input.validate()?;
        Ok(self.store.insert_study(&input, Provenance::User).await?)
    }

    /// Every study in the workspace, oldest first.
    pub async fn list_studies(&self) -> Result<Vec<Study>, AppError> {
        Ok(self.store.list_studies().await?)
    }

    /// Opens a study by id and remembers it, so the next start reopens it.
    pub async fn open_study(&self, id: i64) -> Result<Study, AppError> {
        let study = self
            .store
            .study(id)
            .await?
            .ok_or_else(|| AppError::not_found(format!("no study with id {id}")))?;
        self.store
            .set_setting(Setting::LastOpenedStudy, &id.to_string())
            .await?;
        Ok(study)
    }

    /// The study opened last, if it still exists.
    pub async fn last_opened_study(&self) -> Result<Option<Study>, AppError> {
        let Some(value) = self.store.setting(Setting::LastOpenedStudy).await? else {
            return Ok(None);
        };
        let Ok(id) = value.parse::<i64>() else {
            return Ok(None);
        };
        Ok(self.store.study(id).await?)
    }

    /// The study with this name (case-insensitive), as the CLI's `--study NAME` resolves it.
    pub async fn study_by_name(&self, name: &str) -> Result<Study, AppError> {
        self.store
            .study_by_name(name.trim())
            .await?
            .ok_or_else(|| AppError::not_found(format!("no study named {:?}", name.trim())))
    }

    /// Seeds the labelled synthetic demo study once per database.
    pub(crate) async fn seed_demo_once(&self) -> Result<(), AppError> {
        if self.store.setting(Setting::DemoSeeded).await?.is_some() {
            return Ok(());
        }
        if self.store.study_by_name(DEMO_STUDY_NAME).await?.is_none() {
            let demo = NewStudy {
                name: DEMO_STUDY_NAME.into(),
                description: DEMO_STUDY_DESCRIPTION.into(),
            };
            self.store
                .insert_study(&demo, Provenance::SyntheticDemo)
                .await?;
        }
        self.store.set_setting(Setting::DemoSeeded, "1").await?;
        Ok(())
    }
}
