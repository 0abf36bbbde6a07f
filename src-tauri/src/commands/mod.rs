//! Tauri commands grouped by user task; each forwards to one `kvgate-app` action.

pub mod analysis;
pub mod app;
pub mod endpoint;
pub mod files;
pub mod fixtures;
pub mod imports;
pub mod manifests;
pub mod packet;
pub mod review;
pub mod runs;
pub mod studies;
pub mod weights;
