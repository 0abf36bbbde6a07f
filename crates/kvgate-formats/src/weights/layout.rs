//! Which files of a model directory hold the checkpoint, and the tensor inventory read from them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::safetensors::json_kind;
use super::{
    gguf, safetensors, CheckpointFormat, TensorEntry, TensorInventory, TensorSource, WeightsError,
};

/// The index file of a sharded safetensors checkpoint (`weight_map`: tensor name → shard file).
pub const SAFETENSORS_INDEX_FILE: &str = "model.safetensors.index.json";

/// Largest index file read.
const MAX_INDEX_BYTES: u64 = 64 << 20;

/// The files that make up one checkpoint, as plain file names the [`TensorSource`] resolves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointLayout {
    /// One or more safetensors files without an index; together they are the checkpoint
    /// (what vLLM loads from a directory without an index).
    Safetensors { files: Vec<String> },
    /// A safetensors index; the shard files are the ones its `weight_map` names.
    ShardedSafetensors { index: String },
    /// One GGUF file.
    Gguf { file: String },
}

impl CheckpointLayout {
    /// Picks the checkpoint files from a directory listing (file names only, as the caller read
    /// them): the safetensors index if there is one, else every `.safetensors` file, else the one
    /// `.gguf` file. Mixed or ambiguous directories are an error asking for one file.
    pub fn detect(file_names: &[String]) -> Result<Self, WeightsError> {
        let mut names: Vec<&String> = file_names.iter().collect();
        names.sort();
        let indexes: Vec<&String> = names
            .iter()
            .copied()
            .filter(|n| n.ends_with(".safetensors.index.json"))
            .collect();
        let shards: Vec<String> = names
            .iter()
            .filter(|n| n.ends_with(".safetensors"))
            .map(|n| n.to_string())
            .collect();
        let ggufs: Vec<String> = names
            .iter()
            .filter(|n| n.ends_with(".gguf"))
            .map(|n| n.to_string())
            .collect();
        let listing = || {
            let shown: Vec<&str> = names.iter().take(12).map(|s| s.as_str()).collect();
            let more = names.len().saturating_sub(shown.len());
            let mut s = format!("[{}]", shown.join(", "));
            if more > 0 {
                s.push_str(&format!(" and {more} more"));
            }
            s
        };
        if (!indexes.is_empty() || !shards.is_empty()) && !ggufs.is_empty() {
            return Err(WeightsError::Layout {
                expected: "safetensors or GGUF files, not both (name one file)".into(),
                found: listing(),
            });
        }
        if names.iter().any(|n| n.as_str() == SAFETENSORS_INDEX_FILE) {
            return Ok(CheckpointLayout::ShardedSafetensors {
                index: SAFETENSORS_INDEX_FILE.into(),
            });
        }
        match indexes.as_slice() {
            [one] => {
                return Ok(CheckpointLayout::ShardedSafetensors {
                    index: one.to_string(),
                })
            }
            [] => {}
            _ => {
                return Err(WeightsError::Layout {
                    expected: "at most one `*.safetensors.index.json` (name one file)".into(),
                    found: listing(),
                })
            }
        }
        if !shards.is_empty() {
            return Ok(CheckpointLayout::Safetensors { files: shards });
        }
        match ggufs.len() {
            1 => Ok(CheckpointLayout::Gguf {
                file: ggufs[0].clone(),
            }),
            0 => Err(WeightsError::Layout {
                expected: format!(
                    "`{SAFETENSORS_INDEX_FILE}`, `.safetensors` files or one `.gguf` file"
                ),
                found: listing(),
            }),
            _ => Err(WeightsError::Layout {
                expected: "one `.gguf` file (name one file)".into(),
                found: listing(),
            }),
        }
    }

    /// The layout for one file named by the user: by its extension.
    pub fn for_file(file_name: &str) -> Result<Self, WeightsError> {
        if file_name.ends_with(".safetensors.index.json") {
            Ok(CheckpointLayout::ShardedSafetensors {
                index: file_name.into(),
            })
        } else if file_name.ends_with(".safetensors") {
            Ok(CheckpointLayout::Safetensors {
                files: vec![file_name.into()],
            })
        } else if file_name.ends_with(".gguf") {
            Ok(CheckpointLayout::Gguf {
                file: file_name.into(),
            })
        } else {
            Err(WeightsError::Layout {
                expected: "a `.safetensors`, `.safetensors.index.json` or `.gguf` file".into(),
                found: format!("`{file_name}`"),
            })
        }
    }
}

/// Reads the headers of the checkpoint's files (no tensor data) into one inventory.
pub fn read_inventory(
    source: &dyn TensorSource,
    layout: &CheckpointLayout,
) -> Result<TensorInventory, WeightsError> {
    let mut notes = Vec::new();
    let (format, files, per_file) = match layout {
        CheckpointLayout::Safetensors { files } => {
            let mut files = files.clone();
            files.sort();
            files.dedup();
            let mut per_file = Vec::new();
            for f in &files {
                per_file.push(safetensors::read_header(source, f)?);
            }
            (CheckpointFormat::Safetensors, files, per_file)
        }
        CheckpointLayout::ShardedSafetensors { index } => {
            let weight_map = read_index(source, index)?;
            let files: Vec<String> = weight_map
                .values()
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let mut per_file = Vec::new();
            for f in &files {
                let tensors = safetensors::read_header(source, f)?;
                for t in &tensors {
                    match weight_map.get(&t.name) {
                        None => notes.push(format!(
                            "tensor `{}` is in `{f}` but not in the weight_map of `{index}`; \
                             it is included, as loaders read whole shard files",
                            t.name
                        )),
                        Some(mapped) if mapped != f => notes.push(format!(
                            "tensor `{}` is in `{f}` but the weight_map of `{index}` maps it \
                             to `{mapped}`",
                            t.name
                        )),
                        Some(_) => {}
                    }
                }
                per_file.push(tensors);
            }
            for (name, file) in &weight_map {
                let i = files.binary_search(file).expect("files come from the map");
                if !per_file[i].iter().any(|t| &t.name == name) {
                    return Err(WeightsError::malformed(
                        index,
                        Some(name),
                        "weight_map",
                        format!("the tensor in `{file}`"),
                        "no tensor of that name in that file",
                    ));
                }
            }
            (CheckpointFormat::Safetensors, files, per_file)
        }
        CheckpointLayout::Gguf { file } => (
            CheckpointFormat::Gguf,
            vec![file.clone()],
            vec![gguf::read_gguf(source, file)?],
        ),
    };

    let mut by_name: BTreeMap<String, TensorEntry> = BTreeMap::new();
    for tensor in per_file.into_iter().flatten() {
        if let Some(c) = tensor.name.chars().find(|c| c.is_control()) {
            return Err(WeightsError::malformed(
                &tensor.file,
                Some(&tensor.name.escape_debug().to_string()),
                "name",
                "a tensor name without control characters",
                format!("{:?}", c),
            ));
        }
        if let Some(first) = by_name.get(&tensor.name) {
            return Err(WeightsError::malformed(
                &tensor.file,
                Some(&tensor.name),
                "name",
                "each tensor in one file only",
                format!("it in `{}` and in `{}`", first.file, tensor.file),
            ));
        }
        by_name.insert(tensor.name.clone(), tensor);
    }
    if by_name.is_empty() {
        return Err(WeightsError::Layout {
            expected: "at least one tensor".into(),
            found: format!("none in [{}]", files.join(", ")),
        });
    }
    Ok(TensorInventory {
        format,
        files,
        tensors: by_name.into_values().collect(),
        notes,
    })
}

/// The `weight_map` of a safetensors index: tensor name → shard file name.
fn read_index(
    source: &dyn TensorSource,
    index: &str,
) -> Result<BTreeMap<String, String>, WeightsError> {
    let len = source
        .file_len(index)
        .map_err(|e| WeightsError::io(index, 0, 0, e))?;
    if len > MAX_INDEX_BYTES {
        return Err(WeightsError::malformed(
            index,
            None,
            "(file)",
            format!("an index of at most {MAX_INDEX_BYTES} bytes"),
            format!("{len} bytes"),
        ));
    }
    let mut bytes = vec![0u8; len as usize];
    source
        .read_at(index, 0, &mut bytes)
        .map_err(|e| WeightsError::io(index, 0, len, e))?;
    let text = std::str::from_utf8(&bytes).map_err(|e| {
        WeightsError::malformed(
            index,
            None,
            "(file)",
            "UTF-8 JSON text",
            format!("invalid UTF-8 at byte {}", e.valid_up_to()),
        )
    })?;
    let value = kvgate_core::canonical::parse_strict(text).map_err(|e| {
        WeightsError::malformed(index, None, "(file)", "a JSON object", e.to_string())
    })?;
    let Some(Value::Object(map)) = value.get("weight_map") else {
        return Err(WeightsError::malformed(
            index,
            None,
            "weight_map",
            "an object of tensor name → file name",
            value.get("weight_map").map_or("nothing", json_kind),
        ));
    };
    let mut weight_map = BTreeMap::new();
    for (name, file) in map {
        let Value::String(file) = file else {
            return Err(WeightsError::malformed(
                index,
                Some(name),
                "weight_map",
                "a file name string",
                json_kind(file),
            ));
        };
        let plain = !file.is_empty()
            && file != "."
            && file != ".."
            && !file.contains(['/', '\\'])
            && !file.chars().any(char::is_control);
        if !plain {
            return Err(WeightsError::malformed(
                index,
                Some(name),
                "weight_map",
                "a plain file name in the index's directory",
                format!("{file:?}"),
            ));
        }
        weight_map.insert(name.clone(), file.clone());
    }
    if weight_map.is_empty() {
        return Err(WeightsError::malformed(
            index,
            None,
            "weight_map",
            "at least one tensor",
            "an empty object",
        ));
    }
    Ok(weight_map)
}
