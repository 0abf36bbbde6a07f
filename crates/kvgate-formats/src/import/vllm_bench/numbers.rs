//! A numeric column of a vLLM result read straight from the file's bytes.
//!
//! Most of a result's bytes are its per-request numbers (`ttfts`, `itls`, …). Read through
//! [`crate::import::pyjson::PyJsonReader`] and serde_json's reader, each byte is copied twice
//! and each number is parsed with its line and column counted. [`numbers`] and [`gaps`] read
//! the array's bytes once and take only what JSON allows there, plus Python's `NaN`,
//! `Infinity` and `-Infinity` (absent, counted as the reader would count them): numbers by
//! JSON's grammar, `null`, whitespace, commas and brackets. At the first byte they do not take
//! they stop, having sent only whole entries, and say how many: the caller reads the array
//! again with serde_json, skipping those, so that whatever is wrong is named exactly as before.
//!
//! A number reads as the nearest `f64`, as serde_json's `float_roundtrip` reads it (Rust's own
//! parser, correctly rounded; whole numbers of up to 15 digits are exact and read directly).

use std::io::{self, Read};

use super::stream::{word_byte, BATCH};

/// What a fast read of a column ended with.
#[derive(Debug, PartialEq)]
pub(super) enum Fast {
    /// The whole array was read: the Python tokens it held.
    Read(u64),
    /// Stopped at a byte it does not take, after sending this many entries.
    Unsure(usize),
    /// The receiver of the entries is gone.
    Unwanted,
}

/// The longest word taken (a number or token); a longer one is left to serde_json.
const LONGEST_WORD: usize = 256;

/// The bytes of an array, read a buffer at a time.
struct Bytes<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    eof: bool,
}

impl<R: Read> Bytes<R> {
    fn new(inner: R, capacity: usize) -> Bytes<R> {
        Bytes {
            inner,
            buf: vec![0; capacity.max(2 * LONGEST_WORD)].into_boxed_slice(),
            pos: 0,
            end: 0,
            eof: false,
        }
    }

    /// Keeps the unread bytes, moved to the front, and reads more after them: false at the end
    /// of the input.
    fn refill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The next byte that is not JSON whitespace, not consumed; `None` at the end.
    fn peek(&mut self) -> io::Result<Option<u8>> {
        loop {
            while self.pos < self.end {
                let b = self.buf[self.pos];
                if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                    return Ok(Some(b));
                }
                self.pos += 1;
            }
            if !self.refill()? {
                return Ok(None);
            }
        }
    }

    /// The word (letters, digits, `-`, `+`, `.`) at the current byte, consumed; `None` if it
    /// is longer than [`LONGEST_WORD`].
    fn word(&mut self) -> io::Result<Option<&[u8]>> {
        let mut scanned = self.pos;
        loop {
            while scanned < self.end && word_byte(self.buf[scanned]) {
                scanned += 1;
            }
            if scanned - self.pos > LONGEST_WORD {
                return Ok(None);
            }
            if scanned < self.end {
                break;
            }
            let from = scanned - self.pos;
            if !self.refill()? {
                scanned = self.end;
                break;
            }
            scanned = self.pos + from;
        }
        let start = self.pos;
        self.pos = scanned;
        Ok(Some(&self.buf[start..scanned]))
    }
}

/// One entry of a numeric array: a number, or absent (`null`, or a Python token).
#[derive(Debug, PartialEq)]
enum Word {
    Number(f64),
    Null,
}

/// The entry `word` is; a Python token (`NaN`, `Infinity`, `-Infinity`) reads as `null` and is
/// counted in `python`, as [`crate::import::pyjson::PyJsonReader`] counts it.
fn read_word(word: &[u8], python: &mut u64) -> Option<Word> {
    match word {
        b"null" => Some(Word::Null),
        b"NaN" | b"Infinity" | b"-Infinity" => {
            *python += 1;
            Some(Word::Null)
        }
        _ => number(word).map(Word::Number),
    }
}

/// A JSON number as the nearest finite `f64`; `None` for anything JSON's grammar refuses, or
/// out of range.
fn number(word: &[u8]) -> Option<f64> {
    let digits_from = |mut i: usize| {
        while word.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let negative = word.first() == Some(&b'-');
    let int_start = usize::from(negative);
    let int_end = match word.get(int_start)? {
        b'0' => int_start + 1,
        b'1'..=b'9' => digits_from(int_start + 1),
        _ => return None,
    };
    let mut i = int_end;
    if word.get(i) == Some(&b'.') {
        let end = digits_from(i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
    }
    if matches!(word.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(word.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits_from(i);
        if end == i {
            return None;
        }
        i = end;
    }
    if i != word.len() {
        return None;
    }
    if i == int_end && int_end - int_start <= 15 {
        // A whole number below 10^15 is exact in an f64.
        let whole = word[int_start..int_end]
            .iter()
            .fold(0u64, |v, &d| v * 10 + u64::from(d - b'0'));
        let value = whole as f64;
        return Some(if negative { -value } else { value });
    }
    let value: f64 = std::str::from_utf8(word).ok()?.parse().ok()?;
    value.is_finite().then_some(value)
}

/// The number, `null` or Python token at the current byte, consumed (a Python token counted in
/// `python`); `None`: not taken.
fn scalar<R: Read>(bytes: &mut Bytes<R>, python: &mut u64) -> io::Result<Option<Word>> {
    match bytes.peek()? {
        Some(b) if word_byte(b) => Ok(bytes.word()?.and_then(|w| read_word(w, python))),
        _ => Ok(None),
    }
}

/// Reads `[e, e, …]` at the current byte, each entry by `entry` (false: not taken); false at
/// the first byte not taken.
fn array<R: Read>(
    bytes: &mut Bytes<R>,
    mut entry: impl FnMut(&mut Bytes<R>) -> io::Result<bool>,
) -> io::Result<bool> {
    if bytes.peek()? != Some(b'[') {
        return Ok(false);
    }
    bytes.pos += 1;
    if bytes.peek()? == Some(b']') {
        bytes.pos += 1;
        return Ok(true);
    }
    loop {
        if !entry(bytes)? {
            return Ok(false);
        }
        match bytes.peek()? {
            Some(b',') => bytes.pos += 1,
            Some(b']') => {
                bytes.pos += 1;
                return Ok(true);
            }
            _ => return Ok(false),
        }
    }
}

/// Reads a column, each entry by `read` (given the count of Python tokens to add to; `None`:
/// not taken), sending the entries in batches of [`BATCH`] to `send` (false: nobody reads them
/// any more).
fn column<R: Read, T>(
    input: R,
    capacity: usize,
    mut read: impl FnMut(&mut Bytes<R>, &mut u64) -> io::Result<Option<T>>,
    mut send: impl FnMut(Vec<T>) -> bool,
) -> io::Result<Fast> {
    let mut bytes = Bytes::new(input, capacity);
    let mut batch = Vec::with_capacity(BATCH);
    let mut sent = 0usize;
    let mut python = 0u64;
    let mut unwanted = false;
    let whole = array(&mut bytes, |bytes| {
        let Some(value) = read(bytes, &mut python)? else {
            return Ok(false);
        };
        batch.push(value);
        if batch.len() == BATCH {
            sent += BATCH;
            if !send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH))) {
                unwanted = true;
                return Ok(false);
            }
        }
        Ok(true)
    })?;
    let read = sent + batch.len();
    if unwanted || !send(batch) {
        return Ok(Fast::Unwanted);
    }
    Ok(if whole {
        Fast::Read(python)
    } else {
        Fast::Unsure(read)
    })
}

/// Reads a column of numbers (`[1.5, null, NaN, …]`; `null` and Python's tokens are absent).
pub(super) fn numbers(
    input: impl Read,
    capacity: usize,
    send: impl FnMut(Vec<Option<f64>>) -> bool,
) -> io::Result<Fast> {
    let entry = |bytes: &mut Bytes<_>, python: &mut u64| {
        Ok(scalar(bytes, python)?.map(|word| match word {
            Word::Number(v) => Some(v),
            Word::Null => None,
        }))
    };
    column(input, capacity, entry, send)
}

/// Reads `itls`, a column of arrays of numbers (`[[0.01, 0.02], [], null, …]`): a `null` entry
/// (or a Python token) is no gaps; a `null` or Python token among the gaps is NaN.
pub(super) fn gaps(
    input: impl Read,
    capacity: usize,
    send: impl FnMut(Vec<Vec<f64>>) -> bool,
) -> io::Result<Fast> {
    let entry = |bytes: &mut Bytes<_>, python: &mut u64| {
        if bytes.peek()? != Some(b'[') {
            return Ok(match scalar(bytes, python)? {
                Some(Word::Null) => Some(Vec::new()),
                _ => None,
            });
        }
        let mut gaps = Vec::new();
        let whole = array(bytes, |bytes| {
            gaps.push(match scalar(bytes, python)? {
                Some(Word::Number(v)) => v,
                Some(Word::Null) => f64::NAN,
                None => return Ok(false),
            });
            Ok(true)
        })?;
        Ok(whole.then_some(gaps))
    };
    column(input, capacity, entry, send)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvgate_core::prng::SplitMix64;

    /// serde_json's reading of a number (the workspace builds it with `float_roundtrip`).
    fn serde(word: &str) -> Option<f64> {
        serde_json::from_str::<f64>(word).ok()
    }

    #[test]
    fn a_number_reads_as_serde_json_reads_it_and_nothing_else_is_a_number() {
        let mut words: Vec<String> = [
            "0",
            "-0",
            "1",
            "-1",
            "0.5",
            "-0.0",
            "1e5",
            "1E5",
            "1e+5",
            "1e-5",
            "1.5e300",
            "1e308",
            "1.7976931348623157e308",
            "5e-324",
            "2.4703282292062327e-324",
            "1e-400",
            "0e999999",
            "123456789012345",
            "1234567890123456",
            "9007199254740993",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "0.1",
            "0.30000000000000004",
            "100.5",
            "2.5e-3",
            "0.012345678901234567",
            "1e400",
            "-1e400",
            "01",
            "-01",
            "1.",
            ".5",
            "+1",
            "-",
            "1e",
            "1e+",
            "1.e5",
            "--1",
            "1-",
            "0x10",
            "1_000",
            "inf",
            "NaN",
            "Infinity",
            "e5",
            "1.5.5",
            "1e5e5",
            "00",
            "-.5",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut rng = SplitMix64::new(0x6e75_6d62_6572_7301);
        for _ in 0..20_000 {
            let bits = rng.next_u64();
            let x = f64::from_bits(bits);
            if x.is_finite() {
                words.push(format!("{x}"));
                words.push(format!("{x:e}"));
                words.push(format!("{x:.3e}"));
            }
            // Many digits, any exponent: the cases a fast path gets wrong.
            let digits = 1 + rng.between(0, 30) as usize;
            let mut w: String = (0..digits)
                .map(|k| {
                    let d = rng.between(0, 9) as u8;
                    char::from(b'0' + if k == 0 { d.max(1) } else { d })
                })
                .collect();
            if rng.between(0, 1) == 1 {
                let at = rng.between(1, digits as u64) as usize;
                if at < w.len() {
                    w.insert(at, '.');
                }
            }
            w.push_str(&format!("e{}", rng.between(0, 700) as i64 - 350));
            words.push(w);
            words.push(format!("{}", rng.next_u64() >> rng.between(0, 63)));
        }
        for w in &words {
            let ours = number(w.as_bytes());
            let theirs = serde(w);
            assert_eq!(
                ours.map(f64::to_bits),
                theirs.map(f64::to_bits),
                "{w:?}: ours {ours:?}, serde_json {theirs:?}"
            );
        }
    }

    /// Hands out `step` bytes a read.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    /// Everything `read` sends from `text` handed out `step` bytes a read, and how it ended.
    fn read_with<T>(
        text: &str,
        step: usize,
        read: impl FnOnce(Trickle<'_>, &mut dyn FnMut(Vec<T>) -> bool) -> io::Result<Fast>,
    ) -> (Fast, Vec<T>) {
        let mut got = Vec::new();
        let input = Trickle {
            bytes: text.as_bytes(),
            step,
        };
        let fast = read(input, &mut |batch| {
            got.extend(batch);
            true
        })
        .unwrap();
        (fast, got)
    }

    fn read_numbers(text: &str, step: usize) -> (Fast, Vec<Option<f64>>) {
        read_with(text, step, |input, send| numbers(input, 0, send))
    }

    fn read_gaps(text: &str, step: usize) -> (Fast, Vec<Vec<f64>>) {
        read_with(text, step, |input, send| gaps(input, 0, send))
    }

    #[test]
    fn a_column_reads_alike_however_its_bytes_are_cut_into_reads() {
        let mut rng = SplitMix64::new(7);
        let mut numbers_text = String::from("[");
        let mut gaps_text = String::from("[");
        for i in 0..3000 {
            let sep = ["", " ", "\n    ", "\t", "\r\n"][i % 5];
            if i > 0 {
                numbers_text.push(',');
                gaps_text.push(',');
            }
            numbers_text.push_str(sep);
            gaps_text.push_str(sep);
            match i % 13 {
                0 => numbers_text.push_str("NaN"),
                1 => numbers_text.push_str("null"),
                2 => numbers_text.push_str("-Infinity"),
                _ => numbers_text
                    .push_str(&format!("{}", rng.next_f64() * 10f64.powi((i % 9) as i32))),
            }
            match i % 7 {
                0 => gaps_text.push_str("null"),
                1 => gaps_text.push_str("[]"),
                2 => gaps_text.push_str("[0.01, null, Infinity]"),
                _ => gaps_text.push_str(&format!("[{}, {}]", rng.next_f64(), i)),
            }
        }
        numbers_text.push_str(" ]");
        gaps_text.push(']');
        let whole = read_numbers(&numbers_text, usize::MAX);
        assert_eq!(whole.0, Fast::Read(2 * 231));
        assert_eq!(whole.1.len(), 3000);
        let parsed: Vec<Option<f64>> = serde_json::from_str(
            &numbers_text
                .replace("-Infinity", "null")
                .replace("NaN", "null"),
        )
        .unwrap();
        assert_eq!(whole.1, parsed);
        let whole_gaps = read_gaps(&gaps_text, usize::MAX);
        assert_eq!(whole_gaps.0, Fast::Read(3000 / 7 + 1));
        assert_eq!(whole_gaps.1.len(), 3000);
        assert!(whole_gaps.1[2][1].is_nan() && whole_gaps.1[2][2].is_nan());
        assert_eq!(whole_gaps.1[3].len(), 2);
        for step in [1, 2, 3, 7, 511, 4096] {
            assert_eq!(
                read_numbers(&numbers_text, step),
                whole,
                "{step} bytes a read"
            );
            let cut = read_gaps(&gaps_text, step);
            assert_eq!(cut.0, whole_gaps.0, "{step} bytes a read");
            let bits = |g: &Vec<Vec<f64>>| {
                g.iter()
                    .map(|e| e.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(&cut.1), bits(&whole_gaps.1), "{step} bytes a read");
        }
    }

    #[test]
    fn it_stops_after_the_whole_entries_before_what_it_does_not_take() {
        let long = "1".repeat(LONGEST_WORD + 1);
        for (text, entries) in [
            ("[]", None),
            ("[ ]", None),
            ("[1, 2]", None),
            ("", Some(0)),
            ("7", Some(0)),
            ("{}", Some(0)),
            ("[1, \"x\"]", Some(1)),
            ("[1, 2,]", Some(2)),
            ("[1,, 2]", Some(1)),
            ("[, 1]", Some(0)),
            ("[1 2]", Some(1)),
            ("[1, 2", Some(2)),
            ("[1, 01]", Some(1)),
            ("[1, 1e400]", Some(1)),
            ("[NaN, NaNx]", Some(1)),
            ("[true]", Some(0)),
            ("[1, [2]]", Some(1)),
            (&format!("[1, {long}]"), Some(1)),
        ] {
            for step in [1, usize::MAX] {
                let (fast, got) = read_numbers(text, step);
                match entries {
                    None => assert!(matches!(fast, Fast::Read(_)), "{text:?}: {fast:?}"),
                    Some(n) => {
                        assert_eq!(fast, Fast::Unsure(n), "{text:?}");
                        assert_eq!(got.len(), n, "{text:?}: the entries sent");
                    }
                }
            }
        }
        for (text, entries) in [
            ("[[1], null, NaN, []]", None),
            ("[[1], 2]", Some(1)),
            ("[[1], [2, true]]", Some(1)),
            ("[[1], [2,]]", Some(1)),
            ("[[1], [[2]]]", Some(1)),
            ("[[1], nul]", Some(1)),
        ] {
            let (fast, got) = read_gaps(text, 1);
            match entries {
                None => assert!(matches!(fast, Fast::Read(_)), "{text:?}: {fast:?}"),
                Some(n) => {
                    assert_eq!(fast, Fast::Unsure(n), "{text:?}");
                    assert_eq!(got.len(), n, "{text:?}: the entries sent");
                }
            }
        }
    }

    #[test]
    fn a_receiver_gone_stops_the_read() {
        let text = format!("[{}1]", "1, ".repeat(3 * BATCH));
        let mut batches = 0;
        let fast = numbers(text.as_bytes(), 0, |_| {
            batches += 1;
            batches < 2
        })
        .unwrap();
        assert_eq!((fast, batches), (Fast::Unwanted, 2));
    }
}
