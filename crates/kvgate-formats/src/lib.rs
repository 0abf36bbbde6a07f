//! Parsers of the formats KV Gate reads from outside tools (vLLM bench JSON, GuideLLM, AIPerf,
//! inference-perf, Prometheus text, vLLM and llama.cpp startup logs) into `kvgate-core` types.
//!
//! This crate must stay pure: it reads from byte slices or readers handed to it, never opens
//! sockets, never touches the database, and holds no rules of the product (those belong to
//! `kvgate-core`). One exception, kept small and separate: `weights::fs`, the positioned-read
//! adapter that lets multi-GB checkpoints be hashed in place instead of loaded. Each parser turns an unknown shape into an error that names
//! the file, the line or JSON path, the field, what was expected and what was found.

/// The parsers of this crate and the version recorded with every import they produce.
pub const PARSER_VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod chat_template;
#[cfg(test)]
mod field_data;
pub mod import;
pub mod prometheus;
pub mod run_file;
pub mod startup_log;
pub mod tokenizer;
pub mod weights;
