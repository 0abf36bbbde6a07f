use std::path::PathBuf;

use kvgate_app::packet::{PacketExport, PacketExportInput, PacketVerification, PacketView};
use kvgate_app::{App, AppError};
use tauri::State;

#[tauri::command]
pub async fn export_packet(
    app: State<'_, App>,
    input: PacketExportInput,
) -> Result<PacketExport, AppError> {
    app.export_packet(input).await
}

#[tauri::command]
pub async fn verify_packet(target: String) -> PacketVerification {
    let path = PathBuf::from(target);
    tauri::async_runtime::spawn_blocking(move || kvgate_app::packet::verify_packet(&path))
        .await
        .expect("verifying a packet does not panic")
}

#[tauri::command]
pub async fn open_packet(target: String) -> PacketView {
    let path = PathBuf::from(target);
    tauri::async_runtime::spawn_blocking(move || kvgate_app::packet::open_packet(&path))
        .await
        .expect("opening a packet does not panic")
}
