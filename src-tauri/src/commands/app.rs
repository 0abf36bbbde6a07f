use kvgate_app::{App, AppInfo};
use tauri::State;

#[tauri::command]
pub fn app_info(app: State<'_, App>) -> AppInfo {
    app.info()
}
