fn main() {
    // Declaring the app's commands makes each one need an explicit permission in
    // capabilities/: the webview can call exactly what is granted there, nothing else.
    let manifest = tauri_build::AppManifest::new().commands(&[
        "app_info",
        "list_studies",
        "create_study",
        "open_study",
        "last_opened_study",
    ]);
    tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest))
        .expect("tauri build script failed");
}
