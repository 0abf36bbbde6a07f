use std::path::PathBuf;

use kvgate_app::domain::fixtures::DisjointReport;
use kvgate_app::fixtures::{
    self, GenerateFixtures, ImportFixtures, LoadedCorpus, LoadedTeamCorpus, OpenedCorpus,
};
use kvgate_app::{AppError, ErrorCode};

/// Runs blocking file and tokenizer work off the async runtime's threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, AppError> + Send + 'static,
) -> Result<T, AppError> {
    tauri::async_runtime::spawn_blocking(work)
        .await
        .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))?
}

#[tauri::command]
pub async fn generate_fixtures(request: GenerateFixtures) -> Result<LoadedCorpus, AppError> {
    blocking(move || fixtures::generate_fixtures(&request)).await
}

#[tauri::command]
pub async fn open_corpus(dir: String) -> Result<LoadedCorpus, AppError> {
    blocking(move || fixtures::open_corpus(&PathBuf::from(dir))).await
}

/// Opens a corpus folder of either kind: generated, or a team's own prompts.
#[tauri::command]
pub async fn open_any_corpus(dir: String) -> Result<OpenedCorpus, AppError> {
    blocking(move || fixtures::open_any_corpus(&PathBuf::from(dir))).await
}

#[tauri::command]
pub async fn import_fixtures(request: ImportFixtures) -> Result<LoadedTeamCorpus, AppError> {
    blocking(move || fixtures::import_fixtures(&request)).await
}

#[tauri::command]
pub async fn check_corpora(a: String, b: String) -> Result<DisjointReport, AppError> {
    blocking(move || fixtures::check_corpora(&PathBuf::from(a), &PathBuf::from(b))).await
}
