//! Python's `json.dumps` writes the non-standard tokens `NaN`, `Infinity` and `-Infinity` for
//! floats it cannot represent (its default `allow_nan=True`); benchmark tools write statistics of
//! empty samples that way. [`PyJsonReader`] turns each such token outside a string into `null`,
//! so the value reads as absent (never 0), and counts how many it replaced.

use std::io::{self, BufRead, BufReader, Read};

use serde_json::Value;

use super::{ImportError, ImportWarning, Source, StrictValue};

/// Reads one whole JSON document (keys never repeated, Python's tokens read as absent): the
/// value and the NaN warning, or an error naming where it broke; an empty file is named as
/// such, `what` saying what was expected.
pub fn read_document(
    source: &Source,
    reader: impl BufRead,
    what: &str,
) -> Result<(Value, Option<ImportWarning>), ImportError> {
    let mut py = PyJsonReader::new(reader);
    match serde_json::from_reader(BufReader::new(&mut py)) {
        Ok(StrictValue(value)) => Ok((value, py.nan_warning())),
        Err(e) if e.is_eof() && !py.saw_content() => {
            Err(source.at("$", None, what, "an empty file"))
        }
        Err(e) => Err(source.json(e, None)),
    }
}

/// Replaces `NaN`, `Infinity` and `-Infinity` outside strings with `null`, streaming.
pub struct PyJsonReader<R> {
    inner: R,
    buf: Vec<u8>,
    pending: Vec<u8>,
    /// Bytes of `pending` already handed out.
    pos: usize,
    in_string: bool,
    escaped: bool,
    replaced: u64,
    eof: bool,
    /// Whether anything but whitespace went through.
    content: bool,
}

impl<R: Read> PyJsonReader<R> {
    pub fn new(inner: R) -> PyJsonReader<R> {
        PyJsonReader {
            inner,
            buf: Vec::with_capacity(64 * 1024),
            pending: Vec::new(),
            pos: 0,
            in_string: false,
            escaped: false,
            replaced: 0,
            eof: false,
            content: false,
        }
    }

    /// Whether anything but whitespace was read so far: an input without is an empty file, not
    /// a truncated one.
    pub fn saw_content(&self) -> bool {
        self.content
    }

    /// How many non-standard tokens were replaced so far.
    pub fn replaced(&self) -> u64 {
        self.replaced
    }

    /// The warning a JSON document's import gives when it held such tokens.
    pub fn nan_warning(&self) -> Option<ImportWarning> {
        (self.replaced > 0).then(|| {
            ImportWarning::new(
                "$",
                format!(
                    "{} NaN/Infinity value(s) (Python's non-standard JSON) read as absent, not 0",
                    self.replaced
                ),
                self.replaced,
            )
        })
    }

    fn fill(&mut self) -> io::Result<()> {
        // Keep reading until `pending` holds something or the input ends. A token may straddle
        // two reads, so an unfinished candidate at the end of `buf` waits for the next read.
        let mut chunk = [0u8; 64 * 1024];
        while self.pending.is_empty() && !(self.eof && self.buf.is_empty()) {
            if !self.eof {
                let n = self.inner.read(&mut chunk)?;
                if n == 0 {
                    self.eof = true;
                } else {
                    self.buf.extend_from_slice(&chunk[..n]);
                }
            }
            let mut i = 0;
            let buf = std::mem::take(&mut self.buf);
            // Runs of bytes that need no decision are copied whole.
            while i < buf.len() {
                if self.in_string {
                    if self.escaped {
                        self.escaped = false;
                        self.pending.push(buf[i]);
                        i += 1;
                        continue;
                    }
                    match buf[i..].iter().position(|&b| b == b'"' || b == b'\\') {
                        None => {
                            self.pending.extend_from_slice(&buf[i..]);
                            i = buf.len();
                        }
                        Some(k) => {
                            self.pending.extend_from_slice(&buf[i..=i + k]);
                            if buf[i + k] == b'\\' {
                                self.escaped = true;
                            } else {
                                self.in_string = false;
                            }
                            i += k + 1;
                        }
                    }
                    continue;
                }
                let plain = buf[i..]
                    .iter()
                    .position(|&b| matches!(b, b'"' | b'N' | b'I' | b'-'))
                    .unwrap_or(buf.len() - i);
                let run = &buf[i..i + plain];
                if !self.content && run.iter().any(|b| !b.is_ascii_whitespace()) {
                    self.content = true;
                }
                self.pending.extend_from_slice(run);
                i += plain;
                let Some(&b) = buf.get(i) else { break };
                self.content = true;
                if b == b'"' {
                    self.in_string = true;
                    self.pending.push(b);
                    i += 1;
                    continue;
                }
                let rest = &buf[i..];
                let token: &[u8] = match b {
                    b'N' => b"NaN",
                    b'I' => b"Infinity",
                    _ => b"-Infinity",
                };
                if rest.len() < token.len() && token.starts_with(rest) && !self.eof {
                    // Could be the start of a token cut by the read: wait for more.
                    self.buf = rest.to_vec();
                    break;
                }
                if rest.starts_with(token) {
                    self.pending.extend_from_slice(b"null");
                    self.replaced += 1;
                    i += token.len();
                } else {
                    self.pending.push(b);
                    i += 1;
                }
            }
            if self.eof && i >= buf.len() {
                self.buf.clear();
            }
        }
        Ok(())
    }
}

impl<R: Read> Read for PyJsonReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.pending.len() {
            self.pending.clear();
            self.pos = 0;
            self.fill()?;
        }
        let available = &self.pending[self.pos..];
        let n = out.len().min(available.len());
        out[..n].copy_from_slice(&available[..n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(input: &str) -> (String, u64) {
        let mut reader = PyJsonReader::new(input.as_bytes());
        let mut out = String::new();
        reader.read_to_string(&mut out).unwrap();
        (out, reader.replaced())
    }

    #[test]
    fn replaces_tokens_outside_strings_only() {
        let (out, n) =
            convert(r#"{"a": NaN, "b": [Infinity, -Infinity, -1.5], "c": "NaN Infinity"}"#);
        assert_eq!(
            out,
            r#"{"a": null, "b": [null, null, -1.5], "c": "NaN Infinity"}"#
        );
        assert_eq!(n, 3);
    }

    #[test]
    fn escaped_quotes_keep_string_state() {
        let (out, n) = convert(r#"["a\"NaN", NaN]"#);
        assert_eq!(out, r#"["a\"NaN", null]"#);
        assert_eq!(n, 1);
    }

    #[test]
    fn tokens_split_across_reads_are_found() {
        // A reader that hands out one byte at a time.
        struct OneByte<'a>(&'a [u8]);
        impl Read for OneByte<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                if self.0.is_empty() || out.is_empty() {
                    return Ok(0);
                }
                out[0] = self.0[0];
                self.0 = &self.0[1..];
                Ok(1)
            }
        }
        let mut reader = PyJsonReader::new(OneByte(b"[Infinity,-Infinity,NaN,-2]"));
        let mut out = String::new();
        reader.read_to_string(&mut out).unwrap();
        assert_eq!(out, "[null,null,null,-2]");
        assert_eq!(reader.replaced(), 3);
    }
}
