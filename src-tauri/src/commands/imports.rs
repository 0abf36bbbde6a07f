use kvgate_app::formats::import::ImportFormat;
use kvgate_app::imports::{
    sniff_import_format as sniff, ImportInput, ImportPreview, ImportSummary,
};
use kvgate_app::{App, AppError};
use tauri::{AppHandle, Emitter, Runtime, State};

/// The event carrying an import's progress (`ImportEvent`).
pub const IMPORT_PROGRESS_EVENT: &str = "import-progress";

#[tauri::command]
pub async fn preview_import<R: Runtime>(
    handle: AppHandle<R>,
    app: State<'_, App>,
    input: ImportInput,
) -> Result<ImportPreview, AppError> {
    app.preview_import(input, move |e| {
        let _ = handle.emit(IMPORT_PROGRESS_EVENT, e);
    })
    .await
}

#[tauri::command]
pub async fn commit_import<R: Runtime>(
    handle: AppHandle<R>,
    app: State<'_, App>,
    token: String,
) -> Result<ImportSummary, AppError> {
    app.commit_import(&token, move |e| {
        let _ = handle.emit(IMPORT_PROGRESS_EVENT, e);
    })
    .await
}

#[tauri::command]
pub async fn cancel_import(app: State<'_, App>, job: String) -> Result<(), AppError> {
    app.cancel_import(&job)
}

#[tauri::command]
pub async fn list_imports(
    app: State<'_, App>,
    study_id: i64,
) -> Result<Vec<ImportSummary>, AppError> {
    app.list_imports(study_id).await
}

#[tauri::command]
pub async fn sniff_import_format(path: String) -> Result<Option<ImportFormat>, AppError> {
    sniff(&path)
}
