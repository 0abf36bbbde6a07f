//! Incremental Server-Sent Events decoding: bytes arrive in arbitrary network pieces, events
//! leave whole. Only `data` fields matter to the runner; comments and other fields are skipped.

use std::fmt;

/// A line longer than this without a terminator is treated as a broken stream, not buffered.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SseError {
    InvalidUtf8 { line: usize },
    LineTooLong { line: usize },
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::InvalidUtf8 { line } => write!(f, "SSE line {line} is not valid UTF-8"),
            SseError::LineTooLong { line } => {
                write!(f, "SSE line {line} exceeds {MAX_LINE_BYTES} bytes")
            }
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    buf: Vec<u8>,
    /// Bytes of `buf` already consumed as complete lines.
    consumed: usize,
    /// Joined `data` values of the event being assembled.
    data: Option<String>,
    lines_seen: usize,
}

impl SseDecoder {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if self.consumed > 0 && self.consumed * 2 >= self.buf.len() {
            self.buf.drain(..self.consumed);
            self.consumed = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete event's data, if the bytes so far hold one.
    pub(crate) fn next_event(&mut self) -> Option<Result<String, SseError>> {
        loop {
            let line = match self.next_line(false) {
                None => return None,
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(line)) => line,
            };
            if let Some(data) = self.take_line(line) {
                return Some(Ok(data));
            }
        }
    }

    /// At end of stream: the remaining events, including a last one that lacked its blank line
    /// (servers that close right after `data: [DONE]` are accepted).
    pub(crate) fn finish(&mut self) -> Option<Result<String, SseError>> {
        loop {
            match self.next_line(true) {
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(line)) => {
                    if let Some(data) = self.take_line(line) {
                        return Some(Ok(data));
                    }
                }
                None => return self.data.take().map(Ok),
            }
        }
    }

    /// Applies one line; returns an event's data when the line is the blank dispatch line.
    fn take_line(&mut self, line: String) -> Option<String> {
        if line.is_empty() {
            return self.data.take();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        if field == "data" {
            match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        }
        None
    }

    /// The next line without its terminator (`\r\n`, `\n` or `\r`). A trailing `\r` waits for
    /// the next piece unless the stream has ended, since a `\n` may follow it.
    fn next_line(&mut self, at_end: bool) -> Option<Result<String, SseError>> {
        let rest = &self.buf[self.consumed..];
        let (len, terminator) = match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            Some(i) if rest[i] == b'\n' => (i, 1),
            Some(i) if i + 1 < rest.len() => (i, if rest[i + 1] == b'\n' { 2 } else { 1 }),
            Some(i) if at_end => (i, 1),
            Some(_) => return None,
            None if at_end && !rest.is_empty() => (rest.len(), 0),
            None => {
                if rest.len() > MAX_LINE_BYTES {
                    return Some(Err(SseError::LineTooLong {
                        line: self.lines_seen + 1,
                    }));
                }
                return None;
            }
        };
        self.lines_seen += 1;
        let line = std::str::from_utf8(&rest[..len])
            .map(str::to_owned)
            .map_err(|_| SseError::InvalidUtf8 {
                line: self.lines_seen,
            });
        self.consumed += len + terminator;
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(bytes: &[u8], piece: usize) -> Vec<String> {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for chunk in bytes.chunks(piece) {
            decoder.push(chunk);
            while let Some(event) = decoder.next_event() {
                events.push(event.unwrap());
            }
        }
        while let Some(event) = decoder.finish() {
            events.push(event.unwrap());
        }
        events
    }

    const STREAM: &str = ": keep-alive comment\r\nevent: message\r\nid: 7\r\ndata: {\"a\":\"é\"}\r\n\r\nretry: 10\ndata:{\"b\":2}\n\ndata: line one\rdata: line two\r\rdata: [DONE]\n\n";

    #[test]
    fn events_survive_any_split_of_the_byte_stream() {
        let expected = vec![
            "{\"a\":\"é\"}".to_owned(),
            "{\"b\":2}".to_owned(),
            "line one\nline two".to_owned(),
            "[DONE]".to_owned(),
        ];
        for piece in 1..=STREAM.len() {
            assert_eq!(
                decode_in_pieces(STREAM.as_bytes(), piece),
                expected,
                "{piece}"
            );
        }
    }

    #[test]
    fn a_last_event_without_blank_line_is_kept_at_end_of_stream() {
        assert_eq!(
            decode_in_pieces(b"data: x\n\ndata: [DONE]", 4),
            vec!["x".to_owned(), "[DONE]".to_owned()]
        );
        assert_eq!(decode_in_pieces(b"data: [DONE]\r", 3), vec!["[DONE]"]);
    }

    #[test]
    fn blank_lines_without_data_dispatch_nothing() {
        assert!(decode_in_pieces(b"\n\n: hi\n\nevent: ping\n\n", 2).is_empty());
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let mut decoder = SseDecoder::new();
        decoder.push(b"data: ok\n\ndata: \xff\xfe\n\n");
        assert_eq!(decoder.next_event(), Some(Ok("ok".into())));
        assert_eq!(
            decoder.next_event(),
            Some(Err(SseError::InvalidUtf8 { line: 3 }))
        );
    }
}
