//! A tiny safetensors writer and a small model checkpoint (bf16 weights, a few layers) to vary.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use kvgate_formats::weights::fs::open_checkpoint;
use kvgate_formats::weights::{digest_checkpoint, CheckpointDigest, HashOptions, WeightsError};
use serde_json::json;

pub const LAYERS: usize = 3;
pub const HIDDEN: u64 = 16;
pub const KV_HEADS: u64 = 2;

/// One tensor to write: name, safetensors dtype, shape, raw little-endian bytes.
#[derive(Debug, Clone)]
pub struct Tensor {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

impl Tensor {
    pub fn new(name: &str, dtype: &str, shape: &[u64], data: Vec<u8>) -> Self {
        Tensor {
            name: name.into(),
            dtype: dtype.into(),
            shape: shape.to_vec(),
            data,
        }
    }

    pub fn f32(name: &str, shape: &[u64], values: &[f32]) -> Self {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Tensor::new(name, "F32", shape, data)
    }

    pub fn bf16(name: &str, shape: &[u64], values: &[f32]) -> Self {
        let data = values
            .iter()
            .flat_map(|v| ((v.to_bits() >> 16) as u16).to_le_bytes())
            .collect();
        Tensor::new(name, "BF16", shape, data)
    }
}

/// Bytes of a safetensors file holding `tensors` in the given order, header padded with spaces.
pub fn safetensors_bytes(tensors: &[Tensor]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".into(), json!({"format": "pt"}));
    let mut offset = 0u64;
    for t in tensors {
        let end = offset + t.data.len() as u64;
        header.insert(
            t.name.clone(),
            json!({"dtype": t.dtype, "shape": t.shape, "data_offsets": [offset, end]}),
        );
        offset = end;
    }
    let mut text = serde_json::to_string(&header).unwrap().into_bytes();
    while !text.len().is_multiple_of(8) {
        text.push(b' ');
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&text);
    for t in tensors {
        out.extend_from_slice(&t.data);
    }
    out
}

pub fn write_safetensors(dir: &Path, file: &str, tensors: &[Tensor]) {
    std::fs::write(dir.join(file), safetensors_bytes(tensors)).unwrap();
}

/// A sharded checkpoint: each shard file with its tensors, plus `model.safetensors.index.json`.
pub fn write_sharded(dir: &Path, shards: &[(&str, Vec<Tensor>)]) {
    let mut weight_map = BTreeMap::new();
    let mut total = 0usize;
    for (file, tensors) in shards {
        write_safetensors(dir, file, tensors);
        for t in tensors {
            weight_map.insert(t.name.clone(), file.to_string());
            total += t.data.len();
        }
    }
    let index = json!({"metadata": {"total_size": total}, "weight_map": weight_map});
    std::fs::write(
        dir.join("model.safetensors.index.json"),
        serde_json::to_vec_pretty(&index).unwrap(),
    )
    .unwrap();
}

/// Deterministic pseudo-random values in [-1, 1).
fn values(seed: u64, n: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn bf16_weight(name: &str, shape: &[u64]) -> Tensor {
    let seed = name
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    Tensor::bf16(name, shape, &values(seed, shape.iter().product()))
}

/// The base model (B0): embeddings, `LAYERS` decoder layers, final norm, LM head; all bf16.
pub fn base_model() -> Vec<Tensor> {
    let h = HIDDEN;
    let kv = KV_HEADS * 4;
    let mut t = vec![bf16_weight("model.embed_tokens.weight", &[64, h])];
    for l in 0..LAYERS {
        let p = format!("model.layers.{l}");
        for (name, shape) in [
            ("self_attn.q_proj.weight", vec![h, h]),
            ("self_attn.k_proj.weight", vec![kv, h]),
            ("self_attn.v_proj.weight", vec![kv, h]),
            ("self_attn.o_proj.weight", vec![h, h]),
            ("mlp.gate_proj.weight", vec![2 * h, h]),
            ("mlp.up_proj.weight", vec![2 * h, h]),
            ("mlp.down_proj.weight", vec![h, 2 * h]),
            ("input_layernorm.weight", vec![h]),
            ("post_attention_layernorm.weight", vec![h]),
        ] {
            t.push(bf16_weight(&format!("{p}.{name}"), &shape));
        }
    }
    t.push(bf16_weight("model.norm.weight", &[h]));
    t.push(bf16_weight("lm_head.weight", &[64, h]));
    t
}

/// Per-tensor k/v scales (one F32 element each) for every layer, as llm-compressor names them.
pub fn per_tensor_scales() -> Vec<Tensor> {
    (0..LAYERS)
        .flat_map(|l| {
            [
                Tensor::f32(
                    &format!("model.layers.{l}.self_attn.k_scale"),
                    &[],
                    &[0.25 + l as f32],
                ),
                Tensor::f32(
                    &format!("model.layers.{l}.self_attn.v_scale"),
                    &[],
                    &[0.5 + l as f32],
                ),
            ]
        })
        .collect()
}

/// Per-head k/v scales (`[KV_HEADS]`, bf16) for every layer.
pub fn per_head_scales() -> Vec<Tensor> {
    (0..LAYERS)
        .flat_map(|l| {
            [
                Tensor::bf16(
                    &format!("model.layers.{l}.self_attn.k_scale"),
                    &[KV_HEADS],
                    &[0.125, 2.0],
                ),
                Tensor::bf16(
                    &format!("model.layers.{l}.self_attn.v_scale"),
                    &[KV_HEADS],
                    &[0.5, 1.5],
                ),
            ]
        })
        .collect()
}

/// A temp directory holding `tensors` as one `model.safetensors`.
pub fn single_file_dir(tensors: &[Tensor]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_safetensors(dir.path(), "model.safetensors", tensors);
    dir
}

pub fn try_digest(path: &Path) -> Result<CheckpointDigest, WeightsError> {
    let (source, layout) = open_checkpoint(path)?;
    digest_checkpoint(
        &source,
        &layout,
        &HashOptions::default(),
        &|_, _| {},
        &AtomicBool::new(false),
    )
}

pub fn digest(path: &Path) -> CheckpointDigest {
    try_digest(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The error message digesting `path` gives.
pub fn error_of(path: &Path) -> String {
    match try_digest(path) {
        Ok(d) => panic!("expected an error, got digest {}", d.weights_digest),
        Err(e) => e.to_string(),
    }
}
