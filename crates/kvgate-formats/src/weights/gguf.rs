//! GGUF v2/v3: header, metadata (skipped value by value, `general.alignment` kept), tensor infos,
//! the aligned start of the data section, and each tensor's byte size from its ggml type.

use std::collections::HashSet;

use super::safetensors::check_no_overlap;
use super::{TensorEntry, TensorSource, WeightsError};

/// Alignment of the data section and of tensor offsets when `general.alignment` is absent.
pub const GGUF_DEFAULT_ALIGNMENT: u64 = 32;

/// Longest key or tensor name accepted; ggml itself limits tensor names to 64 bytes.
const MAX_NAME_BYTES: u64 = 64 * 1024;
/// ggml tensors have at most four dimensions.
const MAX_DIMS: u32 = 4;
/// Bytes fetched per header read.
const READ_BLOCK: u64 = 1 << 20;
/// Arrays of arrays are legal; deeper nesting than this is taken as corruption.
const MAX_ARRAY_DEPTH: u32 = 8;

/// How a ggml type packs elements: `block_size` elements in `type_size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GgmlTypeLayout {
    pub id: u32,
    pub name: &'static str,
    pub block_size: u64,
    pub type_size: u64,
}

const fn t(id: u32, name: &'static str, block_size: u64, type_size: u64) -> GgmlTypeLayout {
    GgmlTypeLayout {
        id,
        name,
        block_size,
        type_size,
    }
}

/// The ggml types a GGUF file may hold, with their block layout (ggml-common.h). Ids 4, 5 and
/// 31–33, 36–38 were removed from ggml; ids past 39 are too new to size confidently here.
const GGML_TYPES: &[GgmlTypeLayout] = &[
    t(0, "F32", 1, 4),
    t(1, "F16", 1, 2),
    t(2, "Q4_0", 32, 18),
    t(3, "Q4_1", 32, 20),
    t(6, "Q5_0", 32, 22),
    t(7, "Q5_1", 32, 24),
    t(8, "Q8_0", 32, 34),
    t(9, "Q8_1", 32, 36),
    t(10, "Q2_K", 256, 84),
    t(11, "Q3_K", 256, 110),
    t(12, "Q4_K", 256, 144),
    t(13, "Q5_K", 256, 176),
    t(14, "Q6_K", 256, 210),
    t(15, "Q8_K", 256, 292),
    t(16, "IQ2_XXS", 256, 66),
    t(17, "IQ2_XS", 256, 74),
    t(18, "IQ3_XXS", 256, 98),
    t(19, "IQ1_S", 256, 50),
    t(20, "IQ4_NL", 32, 18),
    t(21, "IQ3_S", 256, 110),
    t(22, "IQ2_S", 256, 82),
    t(23, "IQ4_XS", 256, 136),
    t(24, "I8", 1, 1),
    t(25, "I16", 1, 2),
    t(26, "I32", 1, 4),
    t(27, "I64", 1, 8),
    t(28, "F64", 1, 8),
    t(29, "IQ1_M", 256, 56),
    t(30, "BF16", 1, 2),
    t(34, "TQ1_0", 256, 54),
    t(35, "TQ2_0", 256, 66),
    t(39, "MXFP4", 32, 17),
];

/// The layout of ggml type `id`, if this module knows it.
pub fn ggml_type_layout(id: u32) -> Option<GgmlTypeLayout> {
    GGML_TYPES.iter().copied().find(|l| l.id == id)
}

/// The tensors of one GGUF file, offsets made absolute and checked.
pub(crate) fn read_gguf(
    source: &dyn TensorSource,
    file: &str,
) -> Result<Vec<TensorEntry>, WeightsError> {
    let mut r = Reader::new(source, file)?;
    let magic = r.take(4, None, "magic")?.to_vec();
    if magic != b"GGUF" {
        return Err(r.bad(
            None,
            "magic",
            "the bytes `GGUF`",
            format!("{:?}", String::from_utf8_lossy(&magic)),
        ));
    }
    let version = r.u32(None, "version")?;
    if version != 2 && version != 3 {
        let found = if matches!(version.swap_bytes(), 2 | 3) {
            format!("{version} (a big-endian GGUF file, which is not supported)")
        } else {
            version.to_string()
        };
        return Err(r.bad(None, "version", "2 or 3", found));
    }
    let tensor_count = r.u64(None, "tensor_count")?;
    let kv_count = r.u64(None, "metadata_kv_count")?;

    let mut alignment = GGUF_DEFAULT_ALIGNMENT;
    for _ in 0..kv_count {
        let key = r.string(None, "metadata key")?;
        let field = key.as_str();
        let value_type = r.u32(None, field)?;
        if key == "general.alignment" {
            if value_type != TYPE_U32 {
                return Err(r.bad(
                    None,
                    field,
                    "a uint32 value (type 4)",
                    format!("value type {value_type}"),
                ));
            }
            let a = u64::from(r.u32(None, field)?);
            if a == 0 || !a.is_power_of_two() {
                return Err(r.bad(None, field, "a power of two", a.to_string()));
            }
            alignment = a;
        } else {
            r.skip_value(value_type, field, 0)?;
        }
    }

    struct Info {
        name: String,
        dims: Vec<u64>,
        ggml_type: u32,
        offset: u64,
    }
    let mut infos = Vec::with_capacity(tensor_count.min(1 << 16) as usize);
    for _ in 0..tensor_count {
        let name = r.string(None, "tensor name")?;
        let n_dims = r.u32(Some(&name), "n_dims")?;
        if n_dims > MAX_DIMS {
            return Err(r.bad(
                Some(&name),
                "n_dims",
                &format!("at most {MAX_DIMS}"),
                n_dims.to_string(),
            ));
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(r.u64(Some(&name), "dims")?);
        }
        let ggml_type = r.u32(Some(&name), "type")?;
        let offset = r.u64(Some(&name), "offset")?;
        infos.push(Info {
            name,
            dims,
            ggml_type,
            offset,
        });
    }
    let data_start = r.pos.div_ceil(alignment) * alignment;
    let file_len = r.file_len;

    let mut seen = HashSet::with_capacity(infos.len());
    let mut tensors = Vec::with_capacity(infos.len());
    for info in infos {
        let name = Some(info.name.as_str());
        if !seen.insert(info.name.clone()) {
            return Err(r.bad(name, "name", "each tensor name once", "it twice".into()));
        }
        let layout = ggml_type_layout(info.ggml_type).ok_or_else(|| {
            let known: Vec<String> = GGML_TYPES
                .iter()
                .map(|l| format!("{} ({})", l.id, l.name))
                .collect();
            r.bad(
                name,
                "type",
                &format!("a ggml type of known size: {}", known.join(", ")),
                info.ggml_type.to_string(),
            )
        })?;
        let shape = super::shape_text(&info.dims);
        let ne0 = info.dims.first().copied().unwrap_or(1);
        if ne0 % layout.block_size != 0 {
            return Err(r.bad(
                name,
                "dims",
                &format!(
                    "a first dimension divisible by the {} block size {}",
                    layout.name, layout.block_size
                ),
                shape,
            ));
        }
        let bytes = info
            .dims
            .iter()
            .skip(1)
            .try_fold((ne0 / layout.block_size) * layout.type_size, |acc, &d| {
                acc.checked_mul(d)
            })
            .ok_or_else(|| r.bad(name, "dims", "a size that fits in 64 bits", shape.clone()))?;
        if info.offset % alignment != 0 {
            return Err(r.bad(
                name,
                "offset",
                &format!("a multiple of the alignment {alignment}"),
                info.offset.to_string(),
            ));
        }
        let end = data_start
            .checked_add(info.offset)
            .and_then(|s| s.checked_add(bytes));
        if end.is_none_or(|e| e > file_len) {
            return Err(r.bad(
                name,
                "offset",
                &format!(
                    "{bytes} bytes ({} × {shape}) inside the data section of {} bytes",
                    layout.name,
                    file_len.saturating_sub(data_start)
                ),
                format!("offset {}, past the end of the file", info.offset),
            ));
        }
        tensors.push(TensorEntry {
            name: info.name,
            dtype: layout.name.to_owned(),
            shape: info.dims,
            file: file.to_owned(),
            offset: data_start + info.offset,
            bytes,
        });
    }
    check_no_overlap(file, &tensors, data_start, "offset")?;
    Ok(tensors)
}

const TYPE_U32: u32 = 4;
const TYPE_STRING: u32 = 8;
const TYPE_ARRAY: u32 = 9;

/// Bytes of a fixed-size GGUF metadata value type.
fn fixed_size(value_type: u32) -> Option<u64> {
    match value_type {
        0 | 1 | 7 => Some(1), // uint8, int8, bool
        2 | 3 => Some(2),     // uint16, int16
        4..=6 => Some(4),     // uint32, int32, float32
        10..=12 => Some(8),   // uint64, int64, float64
        _ => None,
    }
}

/// Sequential reads of a file through positional reads, a block at a time.
struct Reader<'a> {
    source: &'a dyn TensorSource,
    file: &'a str,
    file_len: u64,
    pos: u64,
    buf: Vec<u8>,
    buf_start: u64,
}

impl<'a> Reader<'a> {
    fn new(source: &'a dyn TensorSource, file: &'a str) -> Result<Self, WeightsError> {
        let file_len = source
            .file_len(file)
            .map_err(|e| WeightsError::io(file, 0, 0, e))?;
        Ok(Reader {
            source,
            file,
            file_len,
            pos: 0,
            buf: Vec::new(),
            buf_start: 0,
        })
    }

    fn bad(
        &self,
        tensor: Option<&str>,
        field: &str,
        expected: &str,
        found: String,
    ) -> WeightsError {
        WeightsError::malformed(self.file, tensor, field, expected, found)
    }

    fn ensure(&self, n: u64, tensor: Option<&str>, what: &str) -> Result<(), WeightsError> {
        if self
            .pos
            .checked_add(n)
            .is_none_or(|end| end > self.file_len)
        {
            return Err(self.bad(
                tensor,
                what,
                &format!("{n} bytes at offset {}", self.pos),
                format!("the end of the file at {}", self.file_len),
            ));
        }
        Ok(())
    }

    fn take(&mut self, n: u64, tensor: Option<&str>, what: &str) -> Result<&[u8], WeightsError> {
        self.ensure(n, tensor, what)?;
        let buf_end = self.buf_start + self.buf.len() as u64;
        if self.pos < self.buf_start || self.pos + n > buf_end {
            let len = n.max(READ_BLOCK.min(self.file_len - self.pos));
            self.buf.resize(len as usize, 0);
            self.source
                .read_at(self.file, self.pos, &mut self.buf)
                .map_err(|e| WeightsError::io(self.file, self.pos, len, e))?;
            self.buf_start = self.pos;
        }
        let start = (self.pos - self.buf_start) as usize;
        self.pos += n;
        Ok(&self.buf[start..start + n as usize])
    }

    fn skip(&mut self, n: u64, what: &str) -> Result<(), WeightsError> {
        self.ensure(n, None, what)?;
        self.pos += n;
        Ok(())
    }

    fn u32(&mut self, tensor: Option<&str>, what: &str) -> Result<u32, WeightsError> {
        let b = self.take(4, tensor, what)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    fn u64(&mut self, tensor: Option<&str>, what: &str) -> Result<u64, WeightsError> {
        let b = self.take(8, tensor, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn string(&mut self, tensor: Option<&str>, what: &str) -> Result<String, WeightsError> {
        let len = self.u64(tensor, what)?;
        if len > MAX_NAME_BYTES {
            return Err(self.bad(
                tensor,
                what,
                &format!("a string of at most {MAX_NAME_BYTES} bytes"),
                format!("a length of {len} at offset {}", self.pos - 8),
            ));
        }
        let at = self.pos;
        let bytes = self.take(len, tensor, what)?.to_vec();
        String::from_utf8(bytes).map_err(|_| {
            self.bad(
                tensor,
                what,
                "UTF-8 text",
                format!("invalid UTF-8 at offset {at}"),
            )
        })
    }

    fn skip_value(&mut self, value_type: u32, what: &str, depth: u32) -> Result<(), WeightsError> {
        if let Some(size) = fixed_size(value_type) {
            return self.skip(size, what);
        }
        match value_type {
            TYPE_STRING => {
                let len = self.u64(None, what)?;
                self.skip(len, what)
            }
            TYPE_ARRAY if depth < MAX_ARRAY_DEPTH => {
                let element_type = self.u32(None, what)?;
                let count = self.u64(None, what)?;
                if let Some(size) = fixed_size(element_type) {
                    let total = count.checked_mul(size).ok_or_else(|| {
                        self.bad(
                            None,
                            what,
                            "an array that fits in the file",
                            count.to_string(),
                        )
                    })?;
                    return self.skip(total, what);
                }
                if element_type != TYPE_STRING && element_type != TYPE_ARRAY {
                    return Err(self.bad(
                        None,
                        what,
                        "an array element type 0–12",
                        element_type.to_string(),
                    ));
                }
                for _ in 0..count {
                    self.skip_value(element_type, what, depth + 1)?;
                }
                Ok(())
            }
            TYPE_ARRAY => Err(self.bad(
                None,
                what,
                &format!("arrays nested at most {MAX_ARRAY_DEPTH} deep"),
                "deeper nesting".into(),
            )),
            other => Err(self.bad(None, what, "a metadata value type 0–12", other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_layouts_match_ggml_bits_per_weight() {
        // Bits per weight as ggml documents them: Q4_0 4.5, Q4_1 5, Q8_0 8.5, Q4_K 4.5, Q6_K 6.5625.
        let bpw = |id| {
            let l = ggml_type_layout(id).unwrap();
            (l.type_size * 8) as f64 / l.block_size as f64
        };
        assert_eq!(bpw(2), 4.5);
        assert_eq!(bpw(3), 5.0);
        assert_eq!(bpw(8), 8.5);
        assert_eq!(bpw(12), 4.5);
        assert_eq!(bpw(14), 6.5625);
        assert_eq!(bpw(16), 2.0625);
        assert!(ggml_type_layout(4).is_none());
        assert!(ggml_type_layout(40).is_none());
    }
}
