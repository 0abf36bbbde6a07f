use kvgate_app::analysis::{LockPolicyInput, PolicyStatus, StudyAnalysis, StudyResults};
use kvgate_app::domain::policy::{LockedPolicy, PolicyProblem};
use kvgate_app::domain::stats::{required_pairs, PairsPlan};
use kvgate_app::{App, AppError, ErrorCode};
use tauri::State;

#[tauri::command]
pub fn check_policy(app: State<'_, App>, policy_json: String) -> Vec<PolicyProblem> {
    app.check_policy(&policy_json)
}

#[tauri::command]
pub async fn lock_policy(
    app: State<'_, App>,
    input: LockPolicyInput,
) -> Result<LockedPolicy, AppError> {
    app.lock_policy(input).await
}

#[tauri::command]
pub async fn policy_status(app: State<'_, App>, study_id: i64) -> Result<PolicyStatus, AppError> {
    app.policy_status(study_id).await
}

#[tauri::command]
pub async fn analyze_study(app: State<'_, App>, study_id: i64) -> Result<StudyAnalysis, AppError> {
    app.analyze(study_id).await
}

#[tauri::command]
pub async fn study_results(app: State<'_, App>, study_id: i64) -> Result<StudyResults, AppError> {
    app.results(study_id).await
}

#[tauri::command]
pub fn plan_pairs(
    margin: f64,
    discordance_rate: f64,
    alpha: f64,
    power: f64,
) -> Result<PairsPlan, AppError> {
    let pairs = required_pairs(margin, discordance_rate, alpha, power)
        .map_err(|e| AppError::new(ErrorCode::InvalidInput, e.to_string()))?;
    Ok(PairsPlan {
        margin,
        discordance_rate,
        alpha,
        power,
        pairs,
    })
}
