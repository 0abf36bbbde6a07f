//! Service-layer tests against real SQLite files.

mod contract;
mod manifests;
mod studies;
