//! Model checkpoints (safetensors, sharded safetensors, GGUF) read tensor by tensor: per-tensor
//! sha256 digests, the KV/attention scale tensors found, and the **weights digest** that stays the
//! same when only scale tensors are added.
//!
//! The guide's rule: "a model directory containing new scale metadata must be compared against the
//! original tensors so a hidden weight change does not enter the experiment". A file hash cannot
//! tell "scales added" from "weights re-exported"; a digest over the weight tensors alone can.
//!
//! This module opens no files. The caller implements [`TensorSource`] (file length and positional
//! reads of files it names) and picks the files through [`CheckpointLayout::detect`] from a listing
//! it made. The [`fs`] submodule is the one small `std::fs` adapter, kept apart for the shells.
//!
//! Flow: [`CheckpointLayout`] → [`read_inventory`] (headers only) → [`digest_inventory`] (tensor
//! bytes hashed in place, in parallel, with progress and cancellation) → [`CheckpointDigest`];
//! two digests → [`compare`] → [`WeightsComparison`].

use std::collections::BTreeMap;
use std::io;

use kvgate_core::manifest::ScaleGranularity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use ts_rs::TS;

mod compare;
pub mod fs;
mod gguf;
mod hash;
mod layout;
mod safetensors;
mod scale;

pub use compare::{compare, DifferenceKind, TensorDifference, WeightsComparison, WeightsVerdict};
pub use gguf::{ggml_type_layout, GgmlTypeLayout, GGUF_DEFAULT_ALIGNMENT};
pub use hash::{digest_checkpoint, digest_inventory, HashOptions, DEFAULT_CHUNK_BYTES};
pub use layout::{read_inventory, CheckpointLayout, SAFETENSORS_INDEX_FILE};
pub use safetensors::{safetensors_dtype_bits, MAX_SAFETENSORS_HEADER_BYTES};
pub use scale::{
    classify_scale_tensor, layer_index, scale_granularity, ScaleKind, ScaleTensorPattern,
    MAX_SCALE_DECODE_BYTES, SCALE_TENSOR_PATTERNS,
};

/// Name of the canonical serialization the weights digest and the scales digest are computed over.
///
/// The digest is the lowercase hex sha256 of the UTF-8 text
/// `"kvgate-weights-v1\n"` followed by one line per tensor, sorted by name (byte order):
/// `name \t dtype \t shape \t sha256 \n`, where `shape` is `[d0,d1,…]` without spaces (`[]` for a
/// scalar) and `sha256` is the lowercase hex digest of the tensor's data bytes. Byte counts are not
/// in the line: dtype and shape determine them, and parsing checked they agree.
pub const WEIGHTS_DIGEST_SCHEME: &str = "kvgate-weights-v1";

/// Where tensor bytes come from. The caller opens the files; this module only asks for lengths and
/// byte ranges of files named by the checkpoint layout (plain file names, never paths).
///
/// `read_at` is called from several hashing threads at once, hence `Sync`.
pub trait TensorSource: Sync {
    /// Length in bytes of `file`.
    fn file_len(&self, file: &str) -> io::Result<u64>;
    /// Fills all of `buf` with the bytes of `file` starting at `offset`; fewer bytes is an error.
    fn read_at(&self, file: &str, offset: u64, buf: &mut [u8]) -> io::Result<()>;
}

/// Files held in memory by name: for tests and for callers that already have the bytes.
impl TensorSource for BTreeMap<String, Vec<u8>> {
    fn file_len(&self, file: &str) -> io::Result<u64> {
        self.get(file)
            .map(|b| b.len() as u64)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no file `{file}`")))
    }

    fn read_at(&self, file: &str, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let bytes = self
            .get(file)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no file `{file}`")))?;
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let end = start.saturating_add(buf.len());
        let slice = bytes.get(start..end).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end of the file",
            )
        })?;
        buf.copy_from_slice(slice);
        Ok(())
    }
}

/// Why a checkpoint could not be read or digested. Messages name the file, the tensor, the field,
/// what was expected and what was found.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    #[error("{}", io_message(file, *offset, *len, source))]
    Io {
        file: String,
        offset: u64,
        len: u64,
        #[source]
        source: io::Error,
    },
    #[error("{}", malformed_message(file, tensor.as_deref(), field, expected, found))]
    Malformed {
        file: String,
        tensor: Option<String>,
        field: String,
        expected: String,
        found: String,
    },
    #[error("checkpoint: expected {expected}, found {found}")]
    Layout { expected: String, found: String },
    #[error("hashing cancelled: no digest was produced")]
    Cancelled,
}

fn io_message(file: &str, offset: u64, len: u64, source: &io::Error) -> String {
    if len == 0 {
        format!("file `{file}`: {source}")
    } else {
        format!("file `{file}`: reading {len} bytes at offset {offset} failed: {source}")
    }
}

fn malformed_message(
    file: &str,
    tensor: Option<&str>,
    field: &str,
    expected: &str,
    found: &str,
) -> String {
    match tensor {
        Some(t) => {
            format!(
                "file `{file}`, tensor `{t}`, field `{field}`: expected {expected}, found {found}"
            )
        }
        None => format!("file `{file}`, field `{field}`: expected {expected}, found {found}"),
    }
}

impl WeightsError {
    pub(crate) fn malformed(
        file: &str,
        tensor: Option<&str>,
        field: &str,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        WeightsError::Malformed {
            file: file.to_owned(),
            tensor: tensor.map(str::to_owned),
            field: field.to_owned(),
            expected: expected.into(),
            found: found.into(),
        }
    }

    pub(crate) fn io(file: &str, offset: u64, len: u64, source: io::Error) -> Self {
        WeightsError::Io {
            file: file.to_owned(),
            offset,
            len,
            source,
        }
    }
}

/// The container format of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointFormat {
    Safetensors,
    Gguf,
}

/// One tensor as its file header describes it: where its bytes are, not the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorEntry {
    pub name: String,
    /// The format's own type name: safetensors dtype (`BF16`) or ggml type (`Q4_1`).
    pub dtype: String,
    /// Safetensors: row-major, outermost first. GGUF: ggml `ne` order, innermost first.
    pub shape: Vec<u64>,
    pub file: String,
    /// Absolute byte offset of the tensor's data in `file`.
    pub offset: u64,
    pub bytes: u64,
}

/// Every tensor of a checkpoint, sorted by name, each name once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInventory {
    pub format: CheckpointFormat,
    /// The files read, sorted.
    pub files: Vec<String>,
    pub tensors: Vec<TensorEntry>,
    /// Oddities that do not stop the digest (e.g. a shard tensor missing from the index).
    pub notes: Vec<String>,
}

impl TensorInventory {
    /// Sum of all tensors' data bytes: the `bytes_total` of progress reports.
    pub fn total_bytes(&self) -> u64 {
        self.tensors.iter().map(|t| t.bytes).sum()
    }
}

/// The digest of one tensor's data bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct TensorDigest {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub bytes: u64,
    /// Lowercase hex sha256 of the tensor's data bytes.
    pub sha256: String,
}

impl TensorDigest {
    /// The tensor's line in the canonical serialization (see [`WEIGHTS_DIGEST_SCHEME`]).
    pub fn canonical_line(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\n",
            self.name,
            self.dtype,
            shape_text(&self.shape),
            self.sha256
        )
    }
}

/// `[d0,d1,…]`, the shape as written in canonical lines and messages.
pub fn shape_text(shape: &[u64]) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}]", dims.join(","))
}

/// The digest over `tensors` as [`WEIGHTS_DIGEST_SCHEME`] defines it (sorts a copy by name).
pub fn tensors_digest(tensors: &[&TensorDigest]) -> String {
    let mut sorted: Vec<&TensorDigest> = tensors.to_vec();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut hasher = Sha256::new();
    hasher.update(WEIGHTS_DIGEST_SCHEME.as_bytes());
    hasher.update(b"\n");
    for t in sorted {
        hasher.update(t.canonical_line().as_bytes());
    }
    hex(&hasher.finalize())
}

pub(crate) use kvgate_core::canonical::hex;

/// One tensor recognised as KV/attention scale metadata by [`SCALE_TENSOR_PATTERNS`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct ScaleTensor {
    #[serde(flatten)]
    pub tensor: TensorDigest,
    /// The pattern that matched, as listed in [`SCALE_TENSOR_PATTERNS`].
    pub pattern: String,
    pub kind: ScaleKind,
    /// From `layers.N.` (or `blk.N.`, `layer.N.`, `h.N.`) in the name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<u32>,
    /// `per_tensor` for one element, `per_head` for a vector; absent when the shape says neither.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub granularity: Option<ScaleGranularity>,
    /// Smallest finite value; absent when the dtype is not decoded or the tensor is too large.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// NaN and infinite elements (a scale like that breaks the cache); absent when not decoded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub non_finite: Option<u64>,
}

/// What a checkpoint holds: the weights digest, the weight tensors and the scale tensors found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct CheckpointDigest {
    pub format: CheckpointFormat,
    /// The files read, sorted.
    pub files: Vec<String>,
    /// Always [`WEIGHTS_DIGEST_SCHEME`] for digests made by this version.
    pub digest_scheme: String,
    /// The manifest's `weights_digest`: over the weight tensors only (scale tensors excluded).
    pub weights_digest: String,
    pub weight_tensor_count: u64,
    pub weight_bytes: u64,
    pub scale_tensor_count: u64,
    pub scale_bytes: u64,
    /// The same scheme over the scale tensors: a candidate for `scale_artifact_sha256` when the
    /// scales come with the checkpoint. Absent when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scales_digest: Option<String>,
    /// The granularity all scale tensors share; absent when there are none or they disagree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_granularity: Option<ScaleGranularity>,
    /// Weight tensors, sorted by name.
    pub tensors: Vec<TensorDigest>,
    /// Scale tensors, sorted by name.
    pub scale_tensors: Vec<ScaleTensor>,
    pub notes: Vec<String>,
}
