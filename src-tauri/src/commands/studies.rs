use kvgate_app::domain::study::{NewStudy, Study, StudyProgress};
use kvgate_app::{App, AppError};
use tauri::State;

#[tauri::command]
pub async fn list_studies(app: State<'_, App>) -> Result<Vec<Study>, AppError> {
    app.list_studies().await
}

#[tauri::command]
pub async fn create_study(app: State<'_, App>, input: NewStudy) -> Result<Study, AppError> {
    app.create_study(input).await
}

#[tauri::command]
pub async fn open_study(app: State<'_, App>, id: i64) -> Result<Study, AppError> {
    app.open_study(id).await
}

#[tauri::command]
pub async fn last_opened_study(app: State<'_, App>) -> Result<Option<Study>, AppError> {
    app.last_opened_study().await
}

#[tauri::command]
pub async fn open_demo(app: State<'_, App>) -> Result<Study, AppError> {
    app.open_demo().await
}

#[tauri::command]
pub async fn study_progress(app: State<'_, App>, study_id: i64) -> Result<StudyProgress, AppError> {
    app.study_progress(study_id).await
}
