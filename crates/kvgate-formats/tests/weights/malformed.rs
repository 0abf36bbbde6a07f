//! Broken files get errors naming the file, the tensor, the field, what was expected and found.

use std::collections::BTreeMap;

use kvgate_formats::weights::{read_inventory, CheckpointLayout, WeightsError};
use serde_json::json;

use crate::checkpoint::*;

/// A safetensors file whose header is exactly `header` (no padding) followed by `data` bytes.
fn raw_file(header: &str, data: usize) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend(std::iter::repeat_n(0u8, data));
    out
}

fn error_for(bytes: Vec<u8>) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.safetensors"), bytes).unwrap();
    error_of(dir.path())
}

#[test]
fn truncated_header_length() {
    let e = error_for(vec![1, 2, 3, 4, 5]);
    assert_eq!(
        e,
        "file `model.safetensors`, field `header length`: expected an 8-byte little-endian \
         header length, found a file of 5 bytes"
    );
}

#[test]
fn header_length_past_the_end_of_the_file() {
    let mut bytes = raw_file(
        r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
        4,
    );
    bytes[..8].copy_from_slice(&1000u64.to_le_bytes());
    let e = error_for(bytes);
    assert!(
        e.starts_with("file `model.safetensors`, field `header length`: expected at most 58 bytes"),
        "{e}"
    );
    assert!(e.ends_with("found 1000"), "{e}");
}

#[test]
fn bad_json() {
    let e = error_for(raw_file(r#"{"a": {"dtype": "F32", "#, 0));
    assert!(
        e.starts_with("file `model.safetensors`, field `header`: expected a JSON object, found "),
        "{e}"
    );
    let e = error_for(raw_file("[1, 2]", 0));
    assert!(e.ends_with("expected a JSON object, found an array"), "{e}");
}

#[test]
fn duplicate_tensor_names_in_one_header() {
    let h = r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#;
    let e = error_for(raw_file(h, 8));
    assert!(
        e.contains("field `header`") && e.contains("duplicate"),
        "{e}"
    );
}

#[test]
fn offsets_past_the_end_of_the_file() {
    let h = r#"{"w":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}}"#;
    let e = error_for(raw_file(h, 6));
    assert_eq!(
        e,
        "file `model.safetensors`, tensor `w`, field `data_offsets`: expected a range inside \
         the data section of 6 bytes (file of 69 bytes), found [0, 8], past the end of the file"
    );
}

#[test]
fn overlapping_tensors() {
    let h = json!({
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
    })
    .to_string();
    let e = error_for(raw_file(&h, 12));
    assert_eq!(
        e,
        "file `model.safetensors`, tensor `b`, field `data_offsets`: expected bytes not shared \
         with any other tensor (`a` ends at 8), found [4, 12], overlapping `a`"
    );
}

#[test]
fn size_not_matching_dtype_and_shape() {
    let h = r#"{"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,8]}}"#;
    let e = error_for(raw_file(h, 8));
    assert_eq!(
        e,
        "file `model.safetensors`, tensor `w`, field `data_offsets`: expected 12 bytes \
         (BF16 × [2,3]), found [0, 8] = 8 bytes"
    );
}

#[test]
fn unknown_dtype_and_bad_fields() {
    let e = error_for(raw_file(
        r#"{"w":{"dtype":"F12","shape":[1],"data_offsets":[0,2]}}"#,
        2,
    ));
    assert!(
        e.starts_with("file `model.safetensors`, tensor `w`, field `dtype`: expected one of F4,"),
        "{e}"
    );
    assert!(e.ends_with("found `F12`"), "{e}");
    let e = error_for(raw_file(
        r#"{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}"#,
        4,
    ));
    assert!(
        e.contains("field `shape`: expected an array of non-negative integers, found [-1]"),
        "{e}"
    );
    let e = error_for(raw_file(r#"{"w":{"dtype":"F32","shape":[1]}}"#, 4));
    assert!(
        e.contains("field `data_offsets`: expected [begin, end], found nothing (field missing)"),
        "{e}"
    );
    let e = error_for(raw_file(
        r#"{"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}"#,
        4,
    ));
    assert!(
        e.contains("expected [begin, end] with 0 <= begin <= end, found [4,0]"),
        "{e}"
    );
    let e = error_for(raw_file(r#"{"__metadata__":{"n":1}}"#, 0));
    assert!(
        e.contains("field `__metadata__.n`: expected a string, found a number"),
        "{e}"
    );
}

#[test]
fn an_empty_checkpoint_is_an_error() {
    let e = error_for(raw_file(r#"{"__metadata__":{}}"#, 0));
    assert!(
        e.starts_with("checkpoint: expected at least one tensor"),
        "{e}"
    );
}

#[test]
fn index_problems_name_the_index_and_the_tensor() {
    let model = base_model();
    let dir = tempfile::tempdir().unwrap();
    write_sharded(dir.path(), &[("a.safetensors", model[..4].to_vec())]);
    // The index claims a tensor the shard does not hold.
    let index = json!({"weight_map": {
        "model.embed_tokens.weight": "a.safetensors",
        "ghost.weight": "a.safetensors",
    }});
    std::fs::write(
        dir.path().join("model.safetensors.index.json"),
        index.to_string(),
    )
    .unwrap();
    let e = error_of(dir.path());
    assert_eq!(
        e,
        "file `model.safetensors.index.json`, tensor `ghost.weight`, field `weight_map`: \
         expected the tensor in `a.safetensors`, found no tensor of that name in that file"
    );

    // A path instead of a file name never reaches the file system.
    let index = json!({"weight_map": {"model.embed_tokens.weight": "../a.safetensors"}});
    std::fs::write(
        dir.path().join("model.safetensors.index.json"),
        index.to_string(),
    )
    .unwrap();
    let e = error_of(dir.path());
    assert!(
        e.contains(
            "expected a plain file name in the index's directory, found \"../a.safetensors\""
        ),
        "{e}"
    );

    let index = json!({"weight_map": {"x": "missing.safetensors"}});
    std::fs::write(
        dir.path().join("model.safetensors.index.json"),
        index.to_string(),
    )
    .unwrap();
    let e = error_of(dir.path());
    assert!(e.starts_with("file `missing.safetensors`: "), "{e}");
}

#[test]
fn unindexed_shard_tensors_are_kept_and_noted() {
    let model = base_model();
    let dir = tempfile::tempdir().unwrap();
    write_sharded(dir.path(), &[("a.safetensors", model.clone())]);
    let index = json!({"weight_map": {"model.embed_tokens.weight": "a.safetensors"}});
    std::fs::write(
        dir.path().join("model.safetensors.index.json"),
        index.to_string(),
    )
    .unwrap();
    let d = digest(dir.path());
    assert_eq!(d.weight_tensor_count as usize, model.len());
    assert_eq!(d.notes.len(), model.len() - 1);
    assert!(
        d.notes[0].contains("not in the weight_map"),
        "{:?}",
        d.notes
    );
}

#[test]
fn a_tensor_in_two_files_is_an_error() {
    let model = base_model();
    let dir = tempfile::tempdir().unwrap();
    write_safetensors(dir.path(), "a.safetensors", &model[..3]);
    write_safetensors(dir.path(), "b.safetensors", &model[2..5]);
    let e = error_of(dir.path());
    assert_eq!(
        e,
        format!(
            "file `b.safetensors`, tensor `{}`, field `name`: expected each tensor in one file \
             only, found it in `a.safetensors` and in `b.safetensors`",
            model[2].name
        )
    );
}

#[test]
fn in_memory_sources_work_without_files() {
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    files.insert("m.safetensors".into(), safetensors_bytes(&base_model()));
    let layout = CheckpointLayout::for_file("m.safetensors").unwrap();
    let inv = read_inventory(&files, &layout).unwrap();
    assert_eq!(inv.tensors.len(), base_model().len());
    files.insert("m.safetensors".into(), vec![0; 3]);
    let err = read_inventory(&files, &layout).unwrap_err();
    assert!(matches!(err, WeightsError::Malformed { ref field, .. } if field == "header length"));
}
