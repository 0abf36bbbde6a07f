//! Endpoint API keys: the key goes in once and never comes back to the webview; only where it
//! is kept does.

use kvgate_app::credentials::{EndpointKeyInput, EndpointKeyStatus};
use kvgate_app::{App, AppError};
use tauri::State;

#[tauri::command]
pub async fn set_endpoint_key(
    app: State<'_, App>,
    input: EndpointKeyInput,
) -> Result<EndpointKeyStatus, AppError> {
    app.set_endpoint_key(input).await
}

#[tauri::command]
pub async fn endpoint_key_status(
    app: State<'_, App>,
    url: String,
) -> Result<EndpointKeyStatus, AppError> {
    app.endpoint_key_status(&url).await
}

#[tauri::command]
pub async fn forget_endpoint_key(
    app: State<'_, App>,
    url: String,
) -> Result<EndpointKeyStatus, AppError> {
    app.forget_endpoint_key(&url).await
}
