use kvgate_app::domain::policy::PolicyProblem;
use kvgate_app::recovery::{RecordRecoveryInput, RecordedRecoveryPlan, RecoveryStatus};
use kvgate_app::review::{
    AuditReport, LabelInput, LabelOutcome, ReviewFilter, ReviewIndexColumns, ReviewPair,
    ReviewQueue,
};
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

/// The review list: one row per pair, without answers (the window reads them pair by pair),
/// column by column.
#[tauri::command]
pub async fn review_index(
    app: State<'_, App>,
    study_id: i64,
    filter: ReviewFilter,
) -> Result<ReviewIndexColumns, AppError> {
    app.review_index(study_id, filter)
        .await
        .map(ReviewIndexColumns::from)
}

#[tauri::command]
pub async fn review_pair(app: State<'_, App>, pair_id: String) -> Result<ReviewPair, AppError> {
    app.review_pair(&pair_id).await
}

#[tauri::command]
pub async fn label_pair(app: State<'_, App>, input: LabelInput) -> Result<LabelOutcome, AppError> {
    app.label_pair(input).await
}

#[tauri::command]
pub async fn verify_audit(app: State<'_, App>, study_id: i64) -> Result<AuditReport, AppError> {
    app.verify_audit(study_id).await
}

#[tauri::command]
pub async fn checklist(
    app: State<'_, App>,
    study_id: i64,
) -> Result<kvgate_app::signoff::Checklist, AppError> {
    app.checklist(study_id).await
}

#[tauri::command]
pub async fn sign_check(
    app: State<'_, App>,
    input: kvgate_app::signoff::SignInput,
) -> Result<kvgate_app::domain::review::AuditEvent, AppError> {
    app.sign_check(input).await
}

#[tauri::command]
pub async fn decide(
    app: State<'_, App>,
    input: kvgate_app::signoff::DecideInput,
) -> Result<kvgate_app::domain::review::AuditEvent, AppError> {
    app.decide(input).await
}

#[tauri::command]
pub async fn record_intervention(
    app: State<'_, App>,
    input: kvgate_app::interventions::InterventionInput,
) -> Result<kvgate_app::domain::review::AuditEvent, AppError> {
    app.record_intervention(input).await
}

#[tauri::command]
pub fn check_recovery_plan(app: State<'_, App>, plan_json: String) -> Vec<PolicyProblem> {
    app.check_recovery_plan(&plan_json)
}

#[tauri::command]
pub async fn record_recovery_plan(
    app: State<'_, App>,
    input: RecordRecoveryInput,
) -> Result<RecordedRecoveryPlan, AppError> {
    app.record_recovery_plan(input).await
}

#[tauri::command]
pub async fn recovery_status(
    app: State<'_, App>,
    study_id: i64,
) -> Result<RecoveryStatus, AppError> {
    app.recovery_status(study_id).await
}
