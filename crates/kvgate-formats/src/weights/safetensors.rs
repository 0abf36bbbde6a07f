//! The safetensors header: an 8-byte little-endian length N, N bytes of JSON, then the data.
//! Only the header is read here; tensor bytes stay in the file until they are hashed.

use serde_json::Value;

use super::{TensorEntry, TensorSource, WeightsError};

/// Largest header accepted, as the reference implementation does (100 MB).
pub const MAX_SAFETENSORS_HEADER_BYTES: u64 = 100_000_000;

/// Bits per element of a safetensors dtype; `None` for a name the format does not define.
pub fn safetensors_dtype_bits(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "F4" => 4,
        "F6_E2M3" | "F6_E3M2" => 6,
        "BOOL" | "U8" | "I8" | "F8_E5M2" | "F8_E4M3" | "F8_E8M0" | "F8_E4M3FNUZ"
        | "F8_E5M2FNUZ" => 8,
        "I16" | "U16" | "F16" | "BF16" => 16,
        "I32" | "U32" | "F32" => 32,
        "I64" | "U64" | "F64" | "C64" => 64,
        _ => return None,
    })
}

const KNOWN_DTYPES: &str = "F4, F6_E2M3, F6_E3M2, BOOL, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, \
                            I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64, C64";

/// The tensors of one safetensors file, in header order, offsets made absolute and checked:
/// inside the file, sized as dtype × shape says, not overlapping.
pub(crate) fn read_header(
    source: &dyn TensorSource,
    file: &str,
) -> Result<Vec<TensorEntry>, WeightsError> {
    let bad = |tensor: Option<&str>, field: &str, expected: &str, found: String| {
        WeightsError::malformed(file, tensor, field, expected, found)
    };
    let file_len = source
        .file_len(file)
        .map_err(|e| WeightsError::io(file, 0, 0, e))?;
    if file_len < 8 {
        return Err(bad(
            None,
            "header length",
            "an 8-byte little-endian header length",
            format!("a file of {file_len} bytes"),
        ));
    }
    let mut len_bytes = [0u8; 8];
    source
        .read_at(file, 0, &mut len_bytes)
        .map_err(|e| WeightsError::io(file, 0, 8, e))?;
    let header_len = u64::from_le_bytes(len_bytes);
    let available = file_len - 8;
    if header_len > MAX_SAFETENSORS_HEADER_BYTES || header_len > available {
        return Err(bad(
            None,
            "header length",
            &format!(
                "at most {} bytes (the rest of the file, limit {MAX_SAFETENSORS_HEADER_BYTES})",
                available.min(MAX_SAFETENSORS_HEADER_BYTES)
            ),
            format!("{header_len}"),
        ));
    }
    let mut header = vec![0u8; header_len as usize];
    source
        .read_at(file, 8, &mut header)
        .map_err(|e| WeightsError::io(file, 8, header_len, e))?;
    let text = std::str::from_utf8(&header).map_err(|e| {
        bad(
            None,
            "header",
            "UTF-8 JSON text",
            format!("invalid UTF-8 at byte {}", e.valid_up_to()),
        )
    })?;
    let value = kvgate_core::canonical::parse_strict(text)
        .map_err(|e| bad(None, "header", "a JSON object", e.to_string()))?;
    let Value::Object(members) = value else {
        return Err(bad(
            None,
            "header",
            "a JSON object",
            json_kind(&value).to_owned(),
        ));
    };

    let data_start = 8 + header_len;
    let data_len = file_len - data_start;
    let mut tensors = Vec::with_capacity(members.len());
    for (name, info) in &members {
        if name == "__metadata__" {
            check_metadata(file, info)?;
            continue;
        }
        let t = Some(name.as_str());
        let Value::Object(info) = info else {
            return Err(bad(
                t,
                "(tensor info)",
                "an object with dtype, shape, data_offsets",
                json_kind(info).to_owned(),
            ));
        };
        let dtype = match info.get("dtype") {
            Some(Value::String(s)) => s.clone(),
            other => {
                return Err(bad(t, "dtype", "a string", found_text(other)));
            }
        };
        let bits = safetensors_dtype_bits(&dtype).ok_or_else(|| {
            bad(
                t,
                "dtype",
                &format!("one of {KNOWN_DTYPES}"),
                format!("`{dtype}`"),
            )
        })?;
        let shape = match info.get("shape") {
            Some(Value::Array(dims)) => dims
                .iter()
                .map(Value::as_u64)
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| {
                    bad(
                        t,
                        "shape",
                        "an array of non-negative integers",
                        Value::Array(dims.clone()).to_string(),
                    )
                })?,
            other => {
                return Err(bad(
                    t,
                    "shape",
                    "an array of non-negative integers",
                    found_text(other),
                ));
            }
        };
        let (begin, end) = match info.get("data_offsets") {
            Some(Value::Array(pair)) if pair.len() == 2 => {
                match (pair[0].as_u64(), pair[1].as_u64()) {
                    (Some(b), Some(e)) if b <= e => (b, e),
                    _ => {
                        return Err(bad(
                            t,
                            "data_offsets",
                            "[begin, end] with 0 <= begin <= end",
                            Value::Array(pair.clone()).to_string(),
                        ));
                    }
                }
            }
            other => {
                return Err(bad(t, "data_offsets", "[begin, end]", found_text(other)));
            }
        };
        let expected_bytes = shape
            .iter()
            .try_fold(bits, |acc, &d| acc.checked_mul(d))
            .filter(|total_bits| total_bits % 8 == 0)
            .map(|total_bits| total_bits / 8)
            .ok_or_else(|| {
                bad(
                    t,
                    "shape",
                    &format!("a whole number of bytes of {dtype} ({bits} bits each)"),
                    super::shape_text(&shape),
                )
            })?;
        if end - begin != expected_bytes {
            return Err(bad(
                t,
                "data_offsets",
                &format!(
                    "{expected_bytes} bytes ({dtype} × {})",
                    super::shape_text(&shape)
                ),
                format!("[{begin}, {end}] = {} bytes", end - begin),
            ));
        }
        if end > data_len {
            return Err(bad(
                t,
                "data_offsets",
                &format!("a range inside the data section of {data_len} bytes (file of {file_len} bytes)"),
                format!("[{begin}, {end}], past the end of the file"),
            ));
        }
        tensors.push(TensorEntry {
            name: name.clone(),
            dtype,
            shape,
            file: file.to_owned(),
            offset: data_start + begin,
            bytes: expected_bytes,
        });
    }
    check_no_overlap(file, &tensors, data_start, "data_offsets")?;
    Ok(tensors)
}

/// Rejects two non-empty tensors sharing a byte: each weight must own its bytes.
pub(crate) fn check_no_overlap(
    file: &str,
    tensors: &[TensorEntry],
    data_start: u64,
    field: &str,
) -> Result<(), WeightsError> {
    let mut ranges: Vec<&TensorEntry> = tensors.iter().filter(|t| t.bytes > 0).collect();
    ranges.sort_by_key(|t| (t.offset, t.offset + t.bytes));
    for pair in ranges.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if a.offset + a.bytes > b.offset {
            return Err(WeightsError::malformed(
                file,
                Some(&b.name),
                field,
                format!(
                    "bytes not shared with any other tensor (`{}` ends at {})",
                    a.name,
                    a.offset + a.bytes - data_start
                ),
                format!(
                    "[{}, {}], overlapping `{}`",
                    b.offset - data_start,
                    b.offset + b.bytes - data_start,
                    a.name
                ),
            ));
        }
    }
    Ok(())
}

fn check_metadata(file: &str, info: &Value) -> Result<(), WeightsError> {
    let Value::Object(map) = info else {
        return Err(WeightsError::malformed(
            file,
            None,
            "__metadata__",
            "an object of string values",
            json_kind(info),
        ));
    };
    if let Some((key, v)) = map.iter().find(|(_, v)| !v.is_string()) {
        return Err(WeightsError::malformed(
            file,
            None,
            &format!("__metadata__.{key}"),
            "a string",
            json_kind(v),
        ));
    }
    Ok(())
}

pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn found_text(v: Option<&Value>) -> String {
    match v {
        None => "nothing (field missing)".to_owned(),
        Some(v) => v.to_string(),
    }
}
