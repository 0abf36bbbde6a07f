//! Tauri commands grouped by user task; each forwards to one `kvgate-app` action.

pub mod app;
pub mod manifests;
pub mod studies;
