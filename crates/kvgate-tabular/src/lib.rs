//! Tabular files through polars, the one crate that depends on it: CSV and Parquet request
//! tables imported with a column mapping into the records KV Gate's own runner writes
//! ([`read_tabular`]), and the packet's tables written as Parquet ([`table_parquet`]).
//!
//! A parser like those of `kvgate-formats` (a bad file is an error naming the file, the column,
//! the row, what was expected and what was found), kept apart so polars compiles only where it
//! is needed. It must not decide anything or touch the store.

pub mod parquet_out;
pub mod tabular;

pub use parquet_out::table_parquet;
pub use tabular::read_tabular;
