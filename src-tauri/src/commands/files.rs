//! Files: every export through the native save dialog, every Browse button through the open
//! dialog, and the system's file manager and browser for what was saved. The dialogs are opened
//! here, by the commands: the webview is granted none of the dialog or opener plugins' own
//! commands, and a chart or run file is written from the bytes `kvgate-app` produced, to the
//! path the person chose.

use std::ffi::OsString;
use std::path::PathBuf;

use kvgate_app::charts::ChartSpec;
use kvgate_app::files::{save_file, ChartFormat, FileFilter, FileToSave, PathKind, SavedFile};
use kvgate_app::{App, AppError, ErrorCode};
use tauri::{Runtime, State, WebviewWindow};
use tauri_plugin_dialog::DialogExt;
use tauri_plugin_opener::OpenerExt;

/// The folder an automated window saves into instead of asking (see [`SaveDialogs::from_env`]).
pub const SAVE_DIR_ENV: &str = "KVGATE_E2E_SAVE_DIR";

/// Who answers the window's save dialogs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SaveDialogs {
    /// The person, in the native dialog.
    #[default]
    Native,
    /// Nobody: the suggested file name in this folder. Only the dialog is replaced; the file is
    /// written as the person's choice would be.
    AnswerIn(PathBuf),
}

impl SaveDialogs {
    /// `$KVGATE_E2E_SAVE_DIR`, honoured only in a window driven over WebDriver
    /// (`TAURI_WEBVIEW_AUTOMATION=true`), so the end-to-end tests can save without a person;
    /// otherwise the native dialog.
    pub fn from_env() -> SaveDialogs {
        SaveDialogs::from_vars(
            std::env::var_os("TAURI_WEBVIEW_AUTOMATION"),
            std::env::var_os(SAVE_DIR_ENV),
        )
    }

    /// [`SaveDialogs::from_env`] on the values of `TAURI_WEBVIEW_AUTOMATION` and
    /// `$KVGATE_E2E_SAVE_DIR`.
    pub fn from_vars(automation: Option<OsString>, save_dir: Option<OsString>) -> SaveDialogs {
        match save_dir {
            Some(dir) if automation.is_some_and(|v| v == "true") && !dir.is_empty() => {
                SaveDialogs::AnswerIn(PathBuf::from(dir))
            }
            _ => SaveDialogs::Native,
        }
    }
}

fn internal(message: String) -> AppError {
    AppError::new(ErrorCode::Internal, message)
}

/// A path from a dialog as the webview's text fields hold paths.
fn utf8(path: PathBuf) -> Result<String, AppError> {
    path.into_os_string().into_string().map_err(|p| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "{}: the path is not valid UTF-8; rename it or type another",
                PathBuf::from(p).display()
            ),
        )
    })
}

/// Asks where to save: the native save dialog over the window, or the automated answer. `None`
/// when the person cancelled.
async fn ask_save_path<R: Runtime>(
    window: &WebviewWindow<R>,
    dialogs: &SaveDialogs,
    title: &'static str,
    file_name: String,
    filter: Option<FileFilter>,
) -> Option<PathBuf> {
    if let SaveDialogs::AnswerIn(dir) = dialogs {
        return Some(dir.join(file_name));
    }
    let window = window.clone();
    tauri::async_runtime::spawn_blocking(move || {
        let mut dialog = window
            .dialog()
            .file()
            .set_parent(&window)
            .set_title(title)
            .set_file_name(file_name);
        if let Some(f) = filter {
            dialog = dialog.add_filter(f.name, f.extensions);
        }
        dialog.blocking_save_file()?.into_path().ok()
    })
    .await
    .ok()
    .flatten()
}

/// Asks where to save `file`, then writes it there whole. `None`: the person cancelled.
async fn save_as<R: Runtime>(
    window: &WebviewWindow<R>,
    dialogs: &SaveDialogs,
    title: &'static str,
    file: FileToSave,
) -> Result<Option<SavedFile>, AppError> {
    let Some(path) = ask_save_path(window, dialogs, title, file.file_name, Some(file.filter)).await
    else {
        return Ok(None);
    };
    tauri::async_runtime::spawn_blocking(move || save_file(&path, &file.bytes))
        .await
        .map_err(|e| internal(e.to_string()))?
        .map(Some)
}

/// Saves one chart of the study as SVG or PNG where the person chooses. Refused (before any
/// dialog) as the results are, until the policy is locked.
#[tauri::command]
pub async fn export_chart<R: Runtime>(
    window: WebviewWindow<R>,
    app: State<'_, App>,
    dialogs: State<'_, SaveDialogs>,
    study_id: i64,
    spec: ChartSpec,
    format: ChartFormat,
) -> Result<Option<SavedFile>, AppError> {
    let file = app.chart_file(study_id, &spec, format).await?;
    save_as(&window, &dialogs, "Save the chart", file).await
}

/// Saves a finished run as its `kvgate-run` file where the person chooses.
#[tauri::command]
pub async fn export_run_file<R: Runtime>(
    window: WebviewWindow<R>,
    app: State<'_, App>,
    dialogs: State<'_, SaveDialogs>,
    run_id: i64,
) -> Result<Option<SavedFile>, AppError> {
    let file = app.run_file(run_id).await?;
    save_as(&window, &dialogs, "Save the run file", file).await
}

/// Asks where a packet of the study goes: a new folder, or with `zip` a new .zip file. Only the
/// path is returned: the export itself stays the Export button's (`export_packet`). Refused
/// before any dialog while the study has no locked policy.
#[tauri::command]
pub async fn choose_packet_out<R: Runtime>(
    window: WebviewWindow<R>,
    app: State<'_, App>,
    dialogs: State<'_, SaveDialogs>,
    study_id: i64,
    zip: bool,
) -> Result<Option<String>, AppError> {
    let name = app.packet_save_name(study_id, zip).await?;
    let title = if zip {
        "Export the packet as a .zip file"
    } else {
        "Export the packet into a new folder"
    };
    let filter = kvgate_app::files::packet_filter(zip);
    ask_save_path(&window, &dialogs, title, name, filter)
        .await
        .map(utf8)
        .transpose()
}

/// The open dialog a path field's Browse button shows; the chosen path, or `None`.
#[tauri::command]
pub async fn choose_path<R: Runtime>(
    window: WebviewWindow<R>,
    kind: PathKind,
) -> Result<Option<String>, AppError> {
    let spec = kind.dialog();
    let chosen = tauri::async_runtime::spawn_blocking(move || {
        let mut dialog = window
            .dialog()
            .file()
            .set_parent(&window)
            .set_title(spec.title);
        for f in &spec.filters {
            dialog = dialog.add_filter(f.name, f.extensions);
        }
        if spec.folder {
            dialog
                .set_can_create_directories(true)
                .blocking_pick_folder()
        } else {
            dialog.blocking_pick_file()
        }
    })
    .await
    .map_err(|e| internal(e.to_string()))?;
    chosen
        .and_then(|p| p.into_path().ok())
        .map(utf8)
        .transpose()
}

/// Shows a saved file or folder in the system's file manager.
#[tauri::command]
pub async fn show_in_folder<R: Runtime>(
    window: WebviewWindow<R>,
    path: String,
) -> Result<(), AppError> {
    tauri::async_runtime::spawn_blocking(move || {
        window.opener().reveal_item_in_dir(&path).map_err(|e| {
            internal(format!(
                "the file manager could not show {path}: {e}; the file is there, open it by hand"
            ))
        })
    })
    .await
    .map_err(|e| internal(e.to_string()))?
}

/// Opens the report of a verified packet in the system browser; returns the file opened.
#[tauri::command]
pub async fn open_packet_report<R: Runtime>(
    window: WebviewWindow<R>,
    app: State<'_, App>,
    target: String,
) -> Result<String, AppError> {
    let app = app.inner().clone();
    tauri::async_runtime::spawn_blocking(move || {
        let report = utf8(app.packet_report_file(std::path::Path::new(&target))?)?;
        window
            .opener()
            .open_path(report.as_str(), None::<&str>)
            .map_err(|e| {
                internal(format!(
                    "no browser could be opened: {e}; the report is {report}"
                ))
            })?;
        Ok(report)
    })
    .await
    .map_err(|e| internal(e.to_string()))?
}
