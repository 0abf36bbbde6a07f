use kvgate_app::review::{AuditReport, LabelInput, LabelOutcome, ReviewFilter, ReviewQueue};
use kvgate_app::{App, AppError};
use tauri::State;

#[tauri::command]
pub async fn review_queue(
    app: State<'_, App>,
    study_id: i64,
    filter: ReviewFilter,
) -> Result<ReviewQueue, AppError> {
    app.review_queue(study_id, filter).await
}

#[tauri::command]
pub async fn label_pair(app: State<'_, App>, input: LabelInput) -> Result<LabelOutcome, AppError> {
    app.label_pair(input).await
}

#[tauri::command]
pub async fn verify_audit(app: State<'_, App>, study_id: i64) -> Result<AuditReport, AppError> {
    app.verify_audit(study_id).await
}
