use kvgate_app::llm::LocalServer;
use kvgate_app::runs::{LoadRunInput, QualityRunInput, RunDetail, RunSummary, SweepInput};
use kvgate_app::{App, AppError};
use tauri::{AppHandle, Emitter, Runtime, State};

/// The event carrying a running run's progress (`RunEvent`).
pub const RUN_PROGRESS_EVENT: &str = "run-progress";

#[tauri::command]
pub async fn run_quality<R: Runtime>(
    handle: AppHandle<R>,
    app: State<'_, App>,
    input: QualityRunInput,
) -> Result<RunSummary, AppError> {
    app.run_quality(&input, |e| {
        let _ = handle.emit(RUN_PROGRESS_EVENT, e);
    })
    .await
}

#[tauri::command]
pub async fn run_load<R: Runtime>(
    handle: AppHandle<R>,
    app: State<'_, App>,
    input: LoadRunInput,
) -> Result<RunSummary, AppError> {
    app.run_load(&input, |e| {
        let _ = handle.emit(RUN_PROGRESS_EVENT, e);
    })
    .await
}

#[tauri::command]
pub async fn run_sweep<R: Runtime>(
    handle: AppHandle<R>,
    app: State<'_, App>,
    input: SweepInput,
) -> Result<Vec<RunSummary>, AppError> {
    app.run_sweep(&input, |e| {
        let _ = handle.emit(RUN_PROGRESS_EVENT, e);
    })
    .await
}

#[tauri::command]
pub async fn cancel_run(app: State<'_, App>, run_id: i64) -> Result<(), AppError> {
    app.cancel_run(run_id)
}

#[tauri::command]
pub async fn list_runs(app: State<'_, App>, study_id: i64) -> Result<Vec<RunSummary>, AppError> {
    app.list_runs(study_id).await
}

#[tauri::command]
pub async fn run_detail(app: State<'_, App>, run_id: i64) -> Result<RunDetail, AppError> {
    app.run_detail(run_id).await
}

#[tauri::command]
pub async fn start_local_server(app: State<'_, App>, kv: String) -> Result<LocalServer, AppError> {
    app.start_local_server(&kv, None, None).await
}

#[tauri::command]
pub async fn stop_local_server(app: State<'_, App>, pid: u32) -> Result<(), AppError> {
    app.stop_local_server(pid).await
}

#[tauri::command]
pub async fn local_servers(app: State<'_, App>) -> Result<Vec<LocalServer>, AppError> {
    Ok(app.local_servers())
}
