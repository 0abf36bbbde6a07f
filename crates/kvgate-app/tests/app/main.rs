//! Service-layer tests against real SQLite files.

mod analysis;
mod answer_server;
mod contract;
mod imports;
mod manifests;
mod review;
mod runs;
mod signoff;
mod studies;
