//! Weights digest and comparison over real files in temp directories, through the `fs` adapter.

mod checkpoint;
mod compare;
mod gguf;
mod layout;
mod malformed;
mod progress;
mod safetensors;
mod throughput;
