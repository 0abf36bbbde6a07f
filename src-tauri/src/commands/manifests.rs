use kvgate_app::manifests::{
    check_manifest, manifest_vocabulary as vocabulary, ManifestCapacity, ManifestCheck,
    ManifestDiff, ManifestVocabulary, StoredManifest,
};
use kvgate_app::{App, AppError};
use tauri::State;

#[tauri::command]
pub fn manifest_vocabulary() -> ManifestVocabulary {
    vocabulary()
}

#[tauri::command]
pub fn validate_manifest(text: String) -> ManifestCheck {
    check_manifest(&text)
}

#[tauri::command]
pub async fn list_manifests(
    app: State<'_, App>,
    study_id: i64,
) -> Result<Vec<StoredManifest>, AppError> {
    app.list_manifests(study_id).await
}

#[tauri::command]
pub async fn save_manifest_draft(
    app: State<'_, App>,
    study_id: i64,
    text: String,
) -> Result<StoredManifest, AppError> {
    app.save_manifest_draft(study_id, &text).await
}

#[tauri::command]
pub async fn derive_candidate(
    app: State<'_, App>,
    study_id: i64,
    from_cell: String,
    cell: String,
) -> Result<StoredManifest, AppError> {
    app.derive_candidate(study_id, &from_cell, &cell).await
}

#[tauri::command]
pub async fn freeze_manifest(
    app: State<'_, App>,
    study_id: i64,
    cell: String,
    expected_digest: String,
) -> Result<StoredManifest, AppError> {
    app.freeze_manifest(study_id, &cell, &expected_digest).await
}

#[tauri::command]
pub async fn delete_manifest_draft(
    app: State<'_, App>,
    study_id: i64,
    cell: String,
) -> Result<(), AppError> {
    app.delete_manifest_draft(study_id, &cell).await
}

#[tauri::command]
pub async fn diff_manifests(
    app: State<'_, App>,
    study_id: i64,
    reference_cell: String,
    candidate_cell: String,
) -> Result<ManifestDiff, AppError> {
    app.diff_manifests(study_id, &reference_cell, &candidate_cell)
        .await
}

#[tauri::command]
pub async fn manifest_capacity(
    app: State<'_, App>,
    study_id: i64,
    cell: String,
) -> Result<ManifestCapacity, AppError> {
    app.manifest_capacity(study_id, &cell).await
}
