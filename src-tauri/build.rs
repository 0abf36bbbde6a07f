fn main() {
    // Declaring the app's commands makes each one need an explicit permission in
    // capabilities/: the webview can call exactly what is granted there, nothing else.
    let manifest = tauri_build::AppManifest::new().commands(&[
        "app_info",
        "list_studies",
        "create_study",
        "open_study",
        "last_opened_study",
        "manifest_vocabulary",
        "validate_manifest",
        "list_manifests",
        "save_manifest_draft",
        "derive_candidate",
        "freeze_manifest",
        "delete_manifest_draft",
        "diff_manifests",
        "manifest_capacity",
        "generate_fixtures",
        "open_corpus",
        "check_corpora",
        "digest_weights",
        "cancel_weights_digest",
        "compare_weights",
        "run_quality",
        "run_load",
        "cancel_run",
        "list_runs",
        "run_detail",
        "start_local_server",
        "stop_local_server",
        "local_servers",
        "sniff_import_format",
        "preview_import",
        "commit_import",
        "cancel_import",
        "list_imports",
    ]);
    tauri_build::try_build(tauri_build::Attributes::new().app_manifest(manifest))
        .expect("tauri build script failed");
}
