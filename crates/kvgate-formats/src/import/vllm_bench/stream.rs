//! A vLLM result read with memory that does not grow with the file.
//!
//! The result is one JSON object of parallel arrays (request *i* is element *i* of each), so a
//! row needs every column. [`scan`] reads the file once (the caller hashes the same bytes): it
//! finds where each result's per-request arrays start and how many entries each holds, and
//! parses every other key. [`StreamedFile::rows`] then reads the columns side by side, one
//! reader (a thread and a file handle) per column, each parsing its array in batches into a
//! bounded channel, zipped row by row into request records by the rules of
//! [`super::RowRules`], the same rules the in-memory parser applies.
//!
//! A file the scan cannot lay out (anything but a sequence of well-formed objects at the top)
//! returns `None`: the caller reads it with [`super::parse`], which names what is wrong.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use kvgate_core::run::RequestRecord;
use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde_json::Value;

use super::numbers::{self, Fast};
use super::{
    documents_path, earliest_send, element_error, json_error, plan_run, Document, GapsOf,
    OptionalSeed, RowRules, RowValues, COLUMN_NAMES,
};
use crate::import::pyjson::PyJsonReader;
use crate::import::{ImportError, ImportFormat, ImportWarning, ParsedImport, Source};

/// Entries a column reader hands over at a time.
pub(super) const BATCH: usize = 1024;
/// Batches waiting per column.
const DEPTH: usize = 2;
/// A column reader's read buffer.
const READ_BUFFER: usize = 256 * 1024;

/// Where one per-request array of a result starts in the file, and how many entries it holds.
#[derive(Debug, Clone)]
struct ColumnAt {
    name: &'static str,
    /// Byte offset of the array's `[`.
    offset: u64,
    /// Byte offset just after its `]`.
    end: u64,
    /// 1-based line and column of that byte.
    line: u64,
    column: u64,
    entries: usize,
}

/// One result as the scan found it: its other keys, verbatim, and its columns.
#[derive(Default)]
struct RawDocument {
    /// `"key": value` pairs, each as written.
    header: Vec<(Vec<u8>, Vec<u8>)>,
    columns: Vec<ColumnAt>,
}

#[derive(Clone, Copy, PartialEq)]
enum Expect {
    Document,
    KeyOrEnd,
    Key,
    Colon,
    Value,
    AfterValue,
}

/// Where the scan is within an entry of an array being read.
#[derive(Clone, Copy, PartialEq)]
enum Entry {
    /// None yet since the `[` or the last comma.
    None,
    /// A number or word being read.
    Open,
    /// Finished: a comma or the end must follow.
    Done,
}

/// What the value being read is.
enum Reading {
    None,
    Column {
        name: &'static str,
        commas: usize,
        entries: bool,
        at: (u64, u64, u64),
    },
    /// A `null` column: the column is absent.
    NullColumn(Vec<u8>),
    Header(Vec<u8>),
}

/// The scan's state over the bytes of the file.
struct Scanner {
    offset: u64,
    line: u64,
    line_start: u64,
    expect: Expect,
    in_key: bool,
    key: Vec<u8>,
    reading: Reading,
    /// Nesting inside the value being read (0: a scalar, or before its first byte).
    depth: u32,
    in_string: bool,
    escaped: bool,
    started: bool,
    /// The entry at the array's own level (depth 1) being read.
    entry: Entry,
    current: RawDocument,
    documents: Vec<RawDocument>,
}

/// The scan gave up: the file is read by the parser that names what is wrong.
struct Unsure;

/// What a number, `true`, `false`, `null` or Python's `NaN` / `Infinity` is made of.
pub(super) const fn word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')
}

/// Bytes that continue an entry of a column's own level: the rest of its number or word.
static WORD_QUIET: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = word_byte(b as u8);
        b += 1;
    }
    t
};

/// Bytes inside a nested value of a column that the scan passes over: words, separators and
/// spaces other than a line end.
static NESTED_QUIET: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = word_byte(b as u8) || matches!(b as u8, b',' | b':' | b' ' | b'\t' | b'\r');
        b += 1;
    }
    t
};

impl Scanner {
    fn new() -> Scanner {
        Scanner {
            offset: 0,
            line: 1,
            line_start: 0,
            expect: Expect::Document,
            in_key: false,
            key: Vec::new(),
            reading: Reading::None,
            depth: 0,
            in_string: false,
            escaped: false,
            started: false,
            entry: Entry::None,
            current: RawDocument::default(),
            documents: Vec::new(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) -> Result<(), Unsure> {
        let mut i = 0;
        while i < bytes.len() {
            // Inside a string of a column: jump to the next quote or backslash.
            if self.in_string && !self.escaped && matches!(self.reading, Reading::Column { .. }) {
                match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    Some(k) => {
                        self.count_lines(&bytes[i..i + k], self.offset + i as u64);
                        i += k;
                    }
                    None => {
                        self.count_lines(&bytes[i..], self.offset + i as u64);
                        i = bytes.len();
                        continue;
                    }
                }
            }
            // Inside a column, outside a string: a run of bytes that changes nothing the scan
            // keeps (the rest of a number or word, or anything but a bracket, brace, quote or
            // line end inside a nested value) is passed over in one step.
            if let Some(quiet) = self.quiet_bytes() {
                i += bytes[i..]
                    .iter()
                    .position(|b| !quiet[*b as usize])
                    .unwrap_or(bytes.len() - i);
                if i == bytes.len() {
                    continue;
                }
            }
            let b = bytes[i];
            let at = self.offset + i as u64;
            self.byte(b, at)?;
            if b == b'\n' {
                self.line += 1;
                self.line_start = at + 1;
            }
            i += 1;
        }
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// The bytes that [`Scanner::byte`] would only pass over in the current state, where that is
    /// most bytes of a column: within an entry of the column's own level, the rest of a number or
    /// word; deeper, everything but brackets, braces, quotes (which change the nesting) and line
    /// ends (which the positions count). Every other byte takes the byte-by-byte path.
    fn quiet_bytes(&self) -> Option<&'static [bool; 256]> {
        if self.in_key || self.in_string || !matches!(self.reading, Reading::Column { .. }) {
            return None;
        }
        if self.depth >= 2 {
            Some(&NESTED_QUIET)
        } else if self.depth == 1 && self.entry == Entry::Open {
            Some(&WORD_QUIET)
        } else {
            None
        }
    }

    fn count_lines(&mut self, bytes: &[u8], at: u64) {
        for k in memchr::memchr_iter(b'\n', bytes) {
            self.line += 1;
            self.line_start = at + k as u64 + 1;
        }
    }

    fn byte(&mut self, b: u8, at: u64) -> Result<(), Unsure> {
        if self.in_key {
            self.key.push(b);
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_key = false;
                self.expect = Expect::Colon;
            }
            return Ok(());
        }
        if !matches!(self.reading, Reading::None) {
            return self.value_byte(b, at);
        }
        let space = matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        match self.expect {
            _ if space => Ok(()),
            Expect::Document if b == b'{' => {
                self.expect = Expect::KeyOrEnd;
                Ok(())
            }
            Expect::KeyOrEnd | Expect::Key if b == b'"' => {
                self.in_key = true;
                self.key.clear();
                self.key.push(b);
                Ok(())
            }
            Expect::KeyOrEnd | Expect::AfterValue if b == b'}' => {
                self.documents.push(std::mem::take(&mut self.current));
                self.expect = Expect::Document;
                Ok(())
            }
            Expect::AfterValue if b == b',' => {
                self.expect = Expect::Key;
                Ok(())
            }
            Expect::Colon if b == b':' => {
                self.expect = Expect::Value;
                Ok(())
            }
            Expect::Value => {
                let key: String = serde_json::from_slice(&self.key).map_err(|_| Unsure)?;
                self.reading = match COLUMN_NAMES.iter().find(|c| **c == key) {
                    Some(name) if b == b'[' => Reading::Column {
                        name,
                        commas: 0,
                        entries: false,
                        at: (at, self.line, at - self.line_start + 1),
                    },
                    Some(_) if b == b'n' => Reading::NullColumn(Vec::new()),
                    // Anything else where a column belongs: the parser names it.
                    Some(_) => return Err(Unsure),
                    None => Reading::Header(Vec::new()),
                };
                self.depth = 0;
                self.in_string = false;
                self.escaped = false;
                self.started = false;
                self.entry = Entry::None;
                self.value_byte(b, at)
            }
            _ => Err(Unsure),
        }
    }

    fn value_byte(&mut self, b: u8, at: u64) -> Result<(), Unsure> {
        if let Reading::Header(buf) | Reading::NullColumn(buf) = &mut self.reading {
            buf.push(b);
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.depth == 0 {
                    return self.end_value(false, b, at);
                }
                if self.depth == 1 {
                    self.entry = Entry::Done;
                }
            }
            return Ok(());
        }
        let first = !self.started;
        self.started = true;
        let column = matches!(self.reading, Reading::Column { .. });
        match b {
            b'"' => {
                self.start_entry()?;
                self.in_string = true;
            }
            b'[' | b'{' => {
                self.start_entry()?;
                self.depth += 1;
            }
            b']' | b'}' if self.depth > 0 => {
                self.depth -= 1;
                if self.depth == 0 {
                    // `[1,]`: a comma with no entry after it.
                    if column && self.entry == Entry::None && self.commas() > 0 {
                        return Err(Unsure);
                    }
                    return self.end_value(false, b, at);
                }
                if self.depth == 1 {
                    self.entry = Entry::Done;
                }
            }
            b',' | b']' | b'}' if self.depth == 0 => {
                if first {
                    return Err(Unsure);
                }
                return self.end_value(true, b, at);
            }
            b' ' | b'\t' | b'\n' | b'\r' if self.depth == 0 => {
                return self.end_value(true, b, at);
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                if self.depth == 1 && self.entry == Entry::Open {
                    self.entry = Entry::Done;
                }
            }
            b',' if self.depth == 1 => {
                if column && self.entry == Entry::None {
                    // `[,` or `,,`: an entry missing.
                    return Err(Unsure);
                }
                self.entry = Entry::None;
                if let Reading::Column { commas, .. } = &mut self.reading {
                    *commas += 1;
                }
            }
            // What a number, `true`, `false`, `null` or Python's `NaN` / `Infinity` is made of;
            // anything else outside a string is not JSON.
            _ if word_byte(b) => {
                if self.depth == 1 && self.entry == Entry::Open {
                    return Ok(());
                }
                self.start_entry()?;
            }
            // Inside a nested value; the parser checks where each stands.
            b':' | b',' if self.depth > 0 => {}
            _ => return Err(Unsure),
        }
        Ok(())
    }

    fn commas(&self) -> usize {
        match self.reading {
            Reading::Column { commas, .. } => commas,
            _ => 0,
        }
    }

    /// A byte that starts an entry (at the array's own level, when reading a column): after a
    /// finished entry only a comma or the end may come.
    fn start_entry(&mut self) -> Result<(), Unsure> {
        if self.depth != 1 {
            return Ok(());
        }
        if let Reading::Column { entries, .. } = &mut self.reading {
            if self.entry == Entry::Done {
                return Err(Unsure);
            }
            *entries = true;
        }
        self.entry = Entry::Open;
        Ok(())
    }

    /// The value ended at byte `b`; `after` when `b` is not part of it (a scalar's end).
    fn end_value(&mut self, after: bool, b: u8, at: u64) -> Result<(), Unsure> {
        let reading = std::mem::replace(&mut self.reading, Reading::None);
        let key = std::mem::take(&mut self.key);
        match reading {
            Reading::Column {
                name,
                commas,
                entries,
                at: (offset, line, column),
            } => self.current.columns.push(ColumnAt {
                name,
                offset,
                end: at + 1,
                line,
                column,
                entries: if entries { commas + 1 } else { 0 },
            }),
            Reading::NullColumn(mut raw) => {
                if after {
                    raw.pop();
                }
                if raw != b"null" {
                    return Err(Unsure);
                }
            }
            Reading::Header(mut raw) => {
                if after {
                    raw.pop();
                }
                self.current.header.push((key, raw));
            }
            Reading::None => return Err(Unsure),
        }
        self.expect = Expect::AfterValue;
        if after {
            // The byte that ended a scalar belongs to the object.
            self.byte(b, at)?;
        }
        Ok(())
    }

    fn finish(self) -> Result<Vec<RawDocument>, Unsure> {
        if self.expect == Expect::Document && !self.in_key && !self.documents.is_empty() {
            Ok(self.documents)
        } else {
            Err(Unsure)
        }
    }
}

/// A vLLM result laid out by [`scan`]: what its header says, each run planned, and where its
/// rows are.
pub struct StreamedFile {
    /// The file as the in-memory parser would give it, without request records: runs with
    /// their configuration, aggregates and clock; warnings of the headers.
    pub import: ParsedImport,
    source: Source,
    runs: Vec<RunLayout>,
    header_nan: u64,
}

struct RunLayout {
    position: Option<usize>,
    /// False for a run of aggregates only.
    reads_rows: bool,
    rows: usize,
    present: Vec<&'static str>,
    columns: Vec<ColumnAt>,
    warnings: Vec<ImportWarning>,
}

/// What reading a run's rows added: its warnings and the Python NaN tokens its columns held.
#[derive(Debug, Default)]
pub struct RowsRead {
    pub rows: u64,
    pub failed: u64,
    warnings: Vec<ImportWarning>,
    nan: u64,
}

/// Reads a whole vLLM result from `reader` (the caller hashes what it hands out), keeping no
/// per-request value: `Ok(None)` when the file is not a sequence of well-formed result objects,
/// to be read by [`super::parse`] for its error.
pub fn scan(
    source: &Source,
    mut reader: impl BufRead,
) -> Result<Option<StreamedFile>, ImportError> {
    let mut scanner = Scanner::new();
    loop {
        let buf = reader.fill_buf().map_err(|e| source.io(e))?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        let fed = scanner.feed(buf);
        reader.consume(n);
        if fed.is_err() {
            // The caller reads on (for the digest) and hands the file to the parser.
            return Ok(None);
        }
    }
    let Ok(documents) = scanner.finish() else {
        return Ok(None);
    };
    let mut import = ParsedImport::new(ImportFormat::VllmBench);
    import.tool = Some("vllm bench serve".to_owned());
    let many = documents.len() > 1;
    let mut runs = Vec::with_capacity(documents.len());
    let mut header_nan = 0;
    for (n, raw) in documents.into_iter().enumerate() {
        // The header alone, as one object, read by the in-memory parser's own reader.
        let mut text = vec![b'{'];
        for (k, (key, value)) in raw.header.iter().enumerate() {
            if k > 0 {
                text.push(b',');
            }
            text.extend_from_slice(key);
            text.push(b':');
            text.extend_from_slice(value);
        }
        text.push(b'}');
        let mut py = PyJsonReader::new(&text[..]);
        let document: Document = match serde_json::from_reader(BufReader::new(&mut py)) {
            Ok(d) => d,
            // Named with its line by the whole file's parse.
            Err(_) => return Ok(None),
        };
        header_nan += py.replaced();
        // A column named twice is named by the parser.
        let mut names: Vec<&str> = raw.columns.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        if names.len() != raw.columns.len() {
            return Ok(None);
        }
        let mut columns = raw.columns;
        columns.sort_by_key(|c| COLUMN_NAMES.iter().position(|n| *n == c.name));
        let lengths: Vec<(&'static str, usize)> =
            columns.iter().map(|c| (c.name, c.entries)).collect();
        let position = many.then_some(n);
        let mut warnings = Vec::new();
        let plan = plan_run(source, document.header, &lengths, position, &mut warnings)?;
        let rows = if plan.reads_rows() { plan.rows } else { 0 };
        runs.push(RunLayout {
            position,
            reads_rows: plan.reads_rows(),
            rows,
            present: plan.present,
            columns,
            warnings,
        });
        import.runs.push(plan.run);
    }
    Ok(Some(StreamedFile {
        import,
        source: source.clone(),
        runs,
        header_nan,
    }))
}

impl std::fmt::Debug for StreamedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("StreamedFile")
            .field("file", &self.source.file)
            .field("runs", &self.runs.len())
            .field("rows", &self.request_count())
            .finish()
    }
}

impl StreamedFile {
    /// Warns of runs whose offered load the file does not state, as
    /// [`crate::import::note_unknown_points`] does for a file read whole.
    pub fn note_unknown_points(&mut self) {
        let rows: Vec<u64> = self.runs.iter().map(|r| r.rows as u64).collect();
        let file = self.source.file.clone();
        crate::import::note_unknown_points_of(&mut self.import, &file, &rows);
    }

    /// Request rows of all runs.
    pub fn request_count(&self) -> u64 {
        self.runs.iter().map(|r| r.rows as u64).sum()
    }

    /// Request rows of run `run`.
    pub fn rows_of(&self, run: usize) -> u64 {
        self.runs.get(run).map_or(0, |r| r.rows as u64)
    }

    /// The rows of run `run`, read from the file at `path` (the file scanned).
    pub fn rows(&self, run: usize, path: &Path) -> Result<RowStream, ImportError> {
        let layout = &self.runs[run];
        let config = &self.import.runs[run].config;
        let column = |name: &str| layout.columns.iter().find(|c| c.name == name);
        let zero = match column("start_times") {
            Some(at) if layout.rows > 0 => {
                let mut reader = spawn(&self.source, path, at.clone(), layout.position);
                let times = std::iter::from_fn(|| match reader.next_number() {
                    Ok(Some(v)) => Some(Ok(v)),
                    Ok(None) => None,
                    Err(e) => Some(Err(e)),
                });
                // Its NaN tokens are counted when the rows read it again.
                earliest_send(&self.source, layout.position, times)?
            }
            _ => 0.0,
        };
        let readers = COLUMN_NAMES.map(|name| match column(name) {
            Some(at) if layout.rows > 0 => {
                Some(spawn(&self.source, path, at.clone(), layout.position))
            }
            _ => None,
        });
        Ok(RowStream {
            rules: Some(RowRules::new(
                self.source.clone(),
                layout.position,
                &layout.present,
                zero,
            )),
            readers,
            next: 0,
            rows: layout.rows,
            present: layout.present.clone(),
            reads_rows: layout.reads_rows,
            config: config.clone(),
            read: RowsRead::default(),
            stopped: false,
        })
    }

    /// The file's warnings once every run's rows were read, in the in-memory parser's order.
    pub fn warnings(&self, read: &[RowsRead]) -> Vec<ImportWarning> {
        let nan = self.header_nan + read.iter().map(|r| r.nan).sum::<u64>();
        let mut out: Vec<ImportWarning> = Vec::new();
        if nan > 0 {
            out.push(ImportWarning::new(
                "$",
                format!(
                    "{nan} NaN/Infinity value(s) (Python's non-standard JSON) read as absent, not 0"
                ),
                nan,
            ));
        }
        for (k, layout) in self.runs.iter().enumerate() {
            out.extend(layout.warnings.iter().cloned());
            if let Some(r) = read.get(k) {
                out.extend(r.warnings.iter().cloned());
            }
        }
        // Added after the scan (unknown operating points).
        out.extend(self.import.warnings.iter().cloned());
        out
    }
}

/// A run's request records, read from its columns side by side.
pub struct RowStream {
    rules: Option<RowRules>,
    readers: [Option<ColumnReader>; 9],
    next: usize,
    rows: usize,
    present: Vec<&'static str>,
    reads_rows: bool,
    config: Value,
    read: RowsRead,
    stopped: bool,
}

impl RowStream {
    fn reader(&mut self, name: &str) -> Option<&mut ColumnReader> {
        let k = COLUMN_NAMES.iter().position(|n| *n == name)?;
        self.readers[k].as_mut()
    }

    fn number(&mut self, name: &str) -> Result<Option<f64>, ImportError> {
        match self.reader(name) {
            Some(r) => match r.next_number()? {
                Some(value) => Ok(value),
                None => Err(r.missing()),
            },
            None => Ok(None),
        }
    }

    fn text(&mut self, name: &str) -> Result<Option<String>, ImportError> {
        match self.reader(name) {
            Some(r) => r.next_text(),
            None => Ok(None),
        }
    }

    fn row(&mut self) -> Result<RequestRecord, ImportError> {
        let i = self.next;
        let values = RowValues {
            start: Some(self.number("start_times")?.unwrap_or(0.0)),
            queue: self.number("queue_times")?,
            ttft: self.number("ttfts")?,
            latency: self.number("latencies")?,
            input_len: self.number("input_lens")?,
            output_len: self.number("output_lens")?,
            text: self.text("generated_texts")?,
            error: self.text("errors")?,
        };
        let gaps = match self.reader("itls") {
            Some(r) => r.next_gaps()?,
            None => Vec::new(),
        };
        let rules = self.rules.as_mut().expect("rules until finished");
        let record = rules.row(i, values, &gaps)?;
        self.next += 1;
        Ok(record)
    }

    /// Once every row was read: what reading them added to the run's warnings.
    pub fn finish(mut self) -> Result<RowsRead, ImportError> {
        if self.next != self.rows {
            return Err(ImportError::Io {
                file: String::new(),
                message: format!("{} of {} rows read", self.next, self.rows),
            });
        }
        for reader in self.readers.iter_mut().flatten() {
            self.read.nan += reader.end()?;
        }
        let rules = self.rules.take().expect("finished once");
        self.read.failed = rules.failed() as u64;
        self.read.rows = self.rows as u64;
        if self.reads_rows {
            rules.finish(&self.present, &self.config, &mut self.read.warnings);
        }
        Ok(self.read)
    }
}

impl Iterator for RowStream {
    type Item = Result<RequestRecord, ImportError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.stopped || self.next >= self.rows {
            return None;
        }
        let row = self.row();
        // Nothing follows a refusal.
        self.stopped = row.is_err();
        Some(row)
    }
}

/// A column reader's batch of entries.
enum Batch {
    Numbers(Vec<Option<f64>>),
    Texts(Vec<Option<String>>),
    Gaps(Vec<Vec<f64>>),
}

enum Message {
    Batch(Batch),
    /// The array ended; the NaN tokens it held.
    Done(u64),
    Failed(ImportError),
}

/// The receiving end of one column's reader.
struct ColumnReader {
    name: &'static str,
    source: Source,
    rx: Receiver<Message>,
    batch: Option<Batch>,
    at: usize,
    /// NaN tokens, once the array ended.
    nan: u64,
    ended: bool,
}

fn spawn(source: &Source, path: &Path, at: ColumnAt, position: Option<usize>) -> ColumnReader {
    let (tx, rx) = sync_channel(DEPTH);
    let name = at.name;
    let thread_source = source.clone();
    let path = path.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name(format!("column {name}"))
        .spawn(move || {
            let message = match read_column(&thread_source, &path, &at, position, &tx) {
                Ok(nan) => Message::Done(nan),
                Err(None) => return,
                Err(Some(e)) => Message::Failed(e),
            };
            let _ = tx.send(message);
        });
    let (rx, ended) = match spawned {
        Ok(_) => (rx, false),
        Err(e) => {
            let (tx, rx) = sync_channel(1);
            let _ = tx.send(Message::Failed(source.io(e)));
            (rx, false)
        }
    };
    ColumnReader {
        name,
        source: source.clone(),
        rx,
        batch: None,
        at: 0,
        nan: 0,
        ended,
    }
}

/// Why a column reader stopped early: `None` when the rows are no longer wanted.
type Stop = Option<ImportError>;

/// The reader stopped because nobody reads its batches any more.
const UNWANTED: &str = "kvgate: column no longer read";

fn read_column(
    source: &Source,
    path: &Path,
    at: &ColumnAt,
    position: Option<usize>,
    tx: &SyncSender<Message>,
) -> Result<u64, Stop> {
    let fast = match at.name {
        "generated_texts" | "errors" => None,
        "itls" => Some(numbers::gaps(
            open_array(source, path, at)?,
            READ_BUFFER,
            |b| tx.send(Message::Batch(Batch::Gaps(b))).is_ok(),
        )),
        _ => Some(numbers::numbers(
            open_array(source, path, at)?,
            READ_BUFFER,
            |b| tx.send(Message::Batch(Batch::Numbers(b))).is_ok(),
        )),
    };
    // What the fast read did not take is read again by serde_json, which names it.
    let skip = match fast.transpose().map_err(|e| Some(source.io(e)))? {
        Some(Fast::Read(nan)) => return Ok(nan),
        Some(Fast::Unwanted) => return Err(None),
        Some(Fast::Unsure(sent)) => sent,
        None => 0,
    };
    let array = open_array(source, path, at)?;
    let mut py = PyJsonReader::new(BufReader::with_capacity(READ_BUFFER, array));
    let result = {
        let buffered = BufReader::with_capacity(READ_BUFFER, &mut py);
        let mut de = serde_json::Deserializer::from_reader(buffered);
        ColumnSeed {
            name: at.name,
            tx,
            skip,
        }
        .deserialize(&mut de)
    };
    match result {
        Ok(()) => Ok(py.replaced()),
        Err(e) if e.to_string().contains(UNWANTED) => Err(None),
        Err(e) => {
            let mut error = json_error(source, e, documents_path(position.unwrap_or(0)));
            // serde_json counted from the array's `[`.
            if let ImportError::Invalid(invalid) = &mut error {
                if let (Some(line), Some(column)) = (invalid.line, invalid.column) {
                    invalid.column = Some(if line == 1 {
                        at.column + column - 1
                    } else {
                        column
                    });
                    invalid.line = Some(at.line + line - 1);
                }
            }
            Err(Some(error))
        }
    }
}

/// The bytes of the array at `at`, alone: nothing after it is read (or counted).
fn open_array(source: &Source, path: &Path, at: &ColumnAt) -> Result<io::Take<File>, Stop> {
    let mut file = File::open(path).map_err(|e| Some(source.io(e)))?;
    let len = file.metadata().map_err(|e| Some(source.io(e)))?.len();
    if len < at.end {
        return Err(Some(ImportError::Io {
            file: source.file.clone(),
            message: format!(
                "`{}` ends past the end of the file ({} bytes, {len} now): it changed while it was imported",
                at.name, at.end
            ),
        }));
    }
    file.seek(SeekFrom::Start(at.offset))
        .map_err(|e| Some(source.io(e)))?;
    Ok(file.take(at.end - at.offset))
}

struct ColumnSeed<'a> {
    name: &'static str,
    tx: &'a SyncSender<Message>,
    /// Entries read already (by the fast read): read again, not sent.
    skip: usize,
}

impl<'de> DeserializeSeed<'de> for ColumnSeed<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ColumnSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self.name {
            "itls" => f.write_str("an array of arrays of numbers at $.itls"),
            "generated_texts" | "errors" => write!(f, "an array of strings at $.{}", self.name),
            _ => write!(f, "an array of numbers at $.{}", self.name),
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let (name, skip) = (self.name, self.skip);
        match name {
            "itls" => in_batches(&mut seq, self.tx, skip, Batch::Gaps, |seq, index| {
                let mut values = Vec::new();
                let seed = GapsOf {
                    values: &mut values,
                    index,
                };
                // A `null` entry reads as no gaps.
                match seq.next_element_seed(OptionalSeed(seed)) {
                    Ok(found) => Ok(found.map(|_| values)),
                    Err(e) => Err(element_error("itls", index, "an array of numbers", e)),
                }
            }),
            "generated_texts" | "errors" => {
                in_batches(&mut seq, self.tx, skip, Batch::Texts, |seq, i| {
                    seq.next_element::<Option<String>>()
                        .map_err(|e| element_error(name, i, "a string", e))
                })
            }
            _ => in_batches(&mut seq, self.tx, skip, Batch::Numbers, |seq, i| {
                seq.next_element::<Option<f64>>()
                    .map_err(|e| element_error(name, i, "a number", e))
            }),
        }
    }
}

/// Reads entries with `next` (given each one's index) and sends them in batches of [`BATCH`],
/// all but the first `skip` (sent already); a receiver gone stops the read.
fn in_batches<'de, A: SeqAccess<'de>, T>(
    seq: &mut A,
    tx: &SyncSender<Message>,
    skip: usize,
    wrap: fn(Vec<T>) -> Batch,
    mut next: impl FnMut(&mut A, usize) -> Result<Option<T>, A::Error>,
) -> Result<(), A::Error> {
    let send = |batch: Vec<T>| {
        tx.send(Message::Batch(wrap(batch)))
            .map_err(|_| de::Error::custom(UNWANTED))
    };
    let mut batch = Vec::with_capacity(BATCH);
    let mut index = 0usize;
    while let Some(entry) = next(seq, index)? {
        if index >= skip {
            batch.push(entry);
        }
        index += 1;
        if batch.len() == BATCH {
            send(std::mem::replace(&mut batch, Vec::with_capacity(BATCH)))?;
        }
    }
    send(batch)
}

impl ColumnReader {
    /// The current batch, refilled from the reader when used up: `None` once the array ended.
    fn batch(&mut self) -> Result<Option<&Batch>, ImportError> {
        loop {
            let used = match &self.batch {
                Some(Batch::Numbers(v)) => self.at >= v.len(),
                Some(Batch::Texts(v)) => self.at >= v.len(),
                Some(Batch::Gaps(v)) => self.at >= v.len(),
                None => true,
            };
            if !used {
                return Ok(self.batch.as_ref());
            }
            if self.ended {
                return Ok(None);
            }
            match self.rx.recv() {
                Ok(Message::Batch(b)) => {
                    self.batch = Some(b);
                    self.at = 0;
                }
                Ok(Message::Done(nan)) => {
                    self.nan = nan;
                    self.ended = true;
                    self.batch = None;
                }
                Ok(Message::Failed(e)) => return Err(e),
                Err(_) => {
                    return Err(ImportError::Io {
                        file: self.source.file.clone(),
                        message: format!("the reader of `{}` stopped", self.name),
                    })
                }
            }
        }
    }

    /// An entry the scan counted and the reader did not find: the file changed under it.
    fn missing(&self) -> ImportError {
        ImportError::Io {
            file: self.source.file.clone(),
            message: format!(
                "`{}` holds fewer entries than when the file was read: it changed while it was imported",
                self.name
            ),
        }
    }

    fn next_number(&mut self) -> Result<Option<Option<f64>>, ImportError> {
        if self.batch()?.is_none() {
            return Ok(None);
        }
        let at = self.at;
        self.at += 1;
        match &self.batch {
            Some(Batch::Numbers(v)) => Ok(Some(v[at])),
            _ => unreachable!("a number column sends numbers"),
        }
    }

    fn next_text(&mut self) -> Result<Option<String>, ImportError> {
        if self.batch()?.is_none() {
            return Err(self.missing());
        }
        let at = self.at;
        self.at += 1;
        match &mut self.batch {
            Some(Batch::Texts(v)) => Ok(v[at].take()),
            _ => unreachable!("a text column sends texts"),
        }
    }

    fn next_gaps(&mut self) -> Result<Vec<f64>, ImportError> {
        if self.batch()?.is_none() {
            return Err(self.missing());
        }
        let at = self.at;
        self.at += 1;
        match &mut self.batch {
            Some(Batch::Gaps(v)) => Ok(std::mem::take(&mut v[at])),
            _ => unreachable!("itls sends gaps"),
        }
    }

    /// After the last row: the array must end here; its NaN tokens.
    fn end(&mut self) -> Result<u64, ImportError> {
        match self.batch()? {
            None => Ok(self.nan),
            Some(_) => Err(ImportError::Io {
                file: self.source.file.clone(),
                message: format!(
                    "`{}` holds more entries than when the file was read: it changed while it was imported",
                    self.name
                ),
            }),
        }
    }
}

/// Reads `reader` to its end (for a caller that needs every byte hashed).
pub fn drain(mut reader: impl Read) -> io::Result<u64> {
    io::copy(&mut reader, &mut io::sink())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::vllm_bench::parse;

    /// A file as read: its runs described, its records, its warnings.
    type Read = (Vec<String>, Vec<RequestRecord>, Vec<ImportWarning>);

    /// Everything one read gives: runs (records included) and warnings, or the error.
    fn in_memory(text: &[u8]) -> Result<Read, String> {
        let import = parse(&Source::new("bench.json"), text).map_err(|e| e.to_string())?;
        let runs = import.runs.iter().map(describe).collect();
        let records = import
            .runs
            .iter()
            .flat_map(|r| r.requests.clone())
            .collect();
        Ok((runs, records, import.warnings))
    }

    fn describe(run: &crate::import::ParsedRun) -> String {
        format!(
            "{} {:?} {} {:?} {:?} {:?} {} {:?} {:?}",
            run.label,
            run.granularity,
            run.config,
            run.metadata,
            run.wall_anchor_unix_ms,
            run.elapsed_ms,
            run.clocked,
            run.planned,
            run.aggregates
                .iter()
                .map(|a| format!("{} {} {} {}", a.name, a.stat, a.value, a.unit))
                .collect::<Vec<_>>()
        )
    }

    /// The same through the scan and the column readers; `None` when the scan gave up.
    fn streamed(text: &[u8]) -> Option<Result<Read, String>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.json");
        std::fs::write(&path, text).unwrap();
        let source = Source::new("bench.json");
        let file = match scan(&source, text) {
            Ok(Some(file)) => file,
            Ok(None) => return None,
            Err(e) => return Some(Err(e.to_string())),
        };
        let mut records = Vec::new();
        let mut read = Vec::new();
        for k in 0..file.import.runs.len() {
            let mut rows = match file.rows(k, &path) {
                Ok(rows) => rows,
                Err(e) => return Some(Err(e.to_string())),
            };
            for row in rows.by_ref() {
                match row {
                    Ok(r) => records.push(r),
                    Err(e) => return Some(Err(e.to_string())),
                }
            }
            match rows.finish() {
                Ok(r) => read.push(r),
                Err(e) => return Some(Err(e.to_string())),
            }
        }
        let runs = file.import.runs.iter().map(describe).collect();
        Some(Ok((runs, records, file.warnings(&read))))
    }

    const DETAILED: &str = r#"{
        "date": "20260115-103000", "endpoint_type": "openai-chat", "backend": "openai-chat",
        "label": null, "model_id": "m", "tokenizer_id": "m", "num_prompts": 3,
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": null,
        "manifest_sha256": "ab", "cell": "C1",
        "duration": 2.5, "completed": 2, "failed": 1,
        "total_input_tokens": 30, "total_output_tokens": 7,
        "request_throughput": 0.8, "request_goodput:": null, "output_throughput": 2.8,
        "mean_ttft_ms": 150.0, "p99.9_ttft_ms": NaN, "median_tpot_ms": 10.0,
        "input_lens": [10, 10, 10], "output_lens": [4, 3, 0],
        "ttfts": [0.1, NaN, 0.0], "itls": [[0.01, 0.02, 0.03], [0.01, 0.01], []],
        "latencies": [0.2, 0.3, 0.0], "start_times": [100.5, 100.0, 101.0],
        "queue_times": [0.0, 0.25, 0.5],
        "generated_texts": ["a \"b\" c, d]", "x\\ny [z]", null], "errors": ["", "", "Traceback: boom"]
    }"#;

    /// A generated result of `n` requests, written as vLLM's `json.dump` writes it.
    fn generated(n: usize, pretty: bool) -> String {
        generated_with(n, pretty, &|_, _, value| value)
    }

    /// The same, each entry as `edit(column, index, entry)` writes it.
    fn generated_with(
        n: usize,
        pretty: bool,
        edit: &dyn Fn(&str, usize, String) -> String,
    ) -> String {
        let mut columns: Vec<(&str, Vec<String>)> = Vec::new();
        let list = |f: &dyn Fn(usize) -> String| (0..n).map(f).collect::<Vec<_>>();
        columns.push(("input_lens", list(&|i| format!("{}", 10 + i % 7))));
        columns.push(("output_lens", list(&|i| format!("{}", i % 5))));
        columns.push(("ttfts", list(&|i| format!("{}", 0.01 * (1 + i % 9) as f64))));
        columns.push((
            "itls",
            list(&|i| {
                let gaps: Vec<String> = (0..i % 4)
                    .map(|j| format!("{}", 0.001 * (j + 1) as f64))
                    .collect();
                format!("[{}]", gaps.join(", "))
            }),
        ));
        columns.push((
            "latencies",
            list(&|i| format!("{}", 0.2 + 0.001 * i as f64)),
        ));
        columns.push((
            "start_times",
            list(&|i| format!("{}", 5000.0 + 0.01 * i as f64)),
        ));
        columns.push((
            "generated_texts",
            list(&|i| serde_json::to_string(&format!("answer {i}: \"q\" [{i}], {{x}}\n")).unwrap()),
        ));
        columns.push((
            "errors",
            list(&|i| {
                if i % 11 == 3 {
                    "\"HTTP 500\"".to_owned()
                } else {
                    "\"\"".to_owned()
                }
            }),
        ));
        let sep = if pretty { ",\n    " } else { ", " };
        let mut text = String::from("{\"date\": \"20260115-103000\", \"request_rate\": 4.0, \"duration\": 9.5, \"completed\": 1");
        for (name, values) in columns {
            let values: Vec<String> = values
                .into_iter()
                .enumerate()
                .map(|(i, v)| edit(name, i, v))
                .collect();
            text.push_str(&format!(", \"{name}\": [{}]", values.join(sep)));
        }
        text.push('}');
        text
    }

    #[test]
    fn the_streamed_read_gives_exactly_what_the_in_memory_read_gives() {
        let appended = format!("{DETAILED}\n{}\n", DETAILED.replace("\"C1\"", "\"C2\""));
        let unclocked = DETAILED.replace("\"start_times\": [100.5, 100.0, 101.0],", "");
        let aggregate = r#"{"duration": 1.0, "completed": 0, "failed": 0, "mean_ttft_ms": 0.0, "input_lens": [1, 2]}"#;
        let null_column =
            DETAILED.replace("\"queue_times\": [0.0, 0.25, 0.5]", "\"queue_times\": null");
        let empty_columns = r#"{"duration": 1.0, "ttfts": [], "latencies": [], "start_times": []}"#;
        let cases: Vec<(&str, String)> = vec![
            ("detailed", DETAILED.to_owned()),
            ("appended", appended),
            ("unclocked", unclocked),
            ("aggregate", aggregate.to_owned()),
            ("null column", null_column),
            ("empty columns", empty_columns.to_owned()),
            ("generated", generated(5000, false)),
            ("generated, one entry a line", generated(3000, true)),
        ];
        for (what, text) in cases {
            let expected = in_memory(text.as_bytes());
            assert!(expected.is_ok(), "{what}: {expected:?}");
            let got =
                streamed(text.as_bytes()).unwrap_or_else(|| panic!("{what}: the scan gave up"));
            assert_eq!(got, expected, "{what}");
        }
    }

    #[test]
    fn what_the_fast_read_does_not_take_is_read_and_named_as_before() {
        // Past the first batches, so that entries sent already are skipped, not sent again.
        // Valid JSON, longer than the fast read takes: 10 and 0.001.
        let long = format!("10.{}", "0".repeat(300));
        let long_gap = format!("0.001{}", "0".repeat(300));
        let cases: Vec<(&str, &str, usize, String)> = vec![
            (
                "a number too long for the fast read",
                "input_lens",
                2500,
                long.clone(),
            ),
            ("one in a gap", "itls", 2100, format!("[0.5, {long_gap}]")),
            ("a leading zero", "input_lens", 2500, "010".into()),
            ("out of range", "ttfts", 1500, "1e400".into()),
            ("a string", "latencies", 1024, "\"0.5\"".into()),
            ("not Python's token", "ttfts", 2047, "NaNx".into()),
            ("true in a gap", "itls", 1030, "[0.01, true]".into()),
            ("a nested array", "itls", 2999, "[[0.01]]".into()),
        ];
        for (what, column, index, entry) in cases {
            // Python tokens before and after, so that their count survives a second read. One
            // entry a line: the in-memory read counts columns after a `NaN` it read as `null`.
            let text = generated_with(3000, true, &|name, i, value| {
                if name == column && i == index {
                    entry.clone()
                } else if name == "ttfts" && i % 500 == 7 {
                    "NaN".into()
                } else {
                    value
                }
            });
            let expected = in_memory(text.as_bytes());
            let got = streamed(text.as_bytes()).unwrap_or_else(|| panic!("{what}: not laid out"));
            assert_eq!(got, expected, "{what}");
            if what.starts_with("a number") || what.starts_with("one") {
                let (_, _, warnings) = expected.expect("a long number is JSON");
                assert!(
                    warnings[0].message.starts_with("6 NaN/Infinity"),
                    "{what}: {warnings:?}"
                );
            }
        }
    }

    #[test]
    fn a_row_the_rules_refuse_is_refused_alike_with_its_path() {
        // Without the NaN: the in-memory parser counts columns after its `null`.
        let detailed = DETAILED.replace("[0.1, NaN, 0.0]", "[0.1, 0.15, 0.0]");
        for (what, from, to) in [
            ("ttft after latency", "\"ttfts\": [0.1,", "\"ttfts\": [0.9,"),
            (
                "null start",
                "[100.5, 100.0, 101.0]",
                "[100.5, null, 101.0]",
            ),
            ("negative gap", "[0.01, 0.02, 0.03]", "[0.01, -0.02, 0.03]"),
            (
                "fractional tokens",
                "\"input_lens\": [10, 10, 10]",
                "\"input_lens\": [10, 10.5, 10]",
            ),
            (
                "misaligned",
                "\"output_lens\": [4, 3, 0]",
                "\"output_lens\": [4, 3]",
            ),
            (
                "wrong type",
                "\"latencies\": [0.2, 0.3, 0.0]",
                "\"latencies\": [0.2, \"x\", 0.0]",
            ),
            ("wrong type in a nested gap", "[0.01, 0.01]", "[0.01, true]"),
            (
                "text column of numbers",
                "\"errors\": [\"\", \"\",",
                "\"errors\": [\"\", 7,",
            ),
        ] {
            let text = detailed.replace(from, to);
            assert_ne!(text, detailed, "{what}: the case changes the file");
            let expected = in_memory(text.as_bytes());
            let Err(expected) = expected else {
                panic!("{what}: the in-memory read accepts it")
            };
            let got = streamed(text.as_bytes()).expect("laid out");
            assert_eq!(got, Err(expected), "{what}");
        }
    }

    #[test]
    fn what_the_scan_cannot_lay_out_goes_to_the_parser_that_names_it() {
        for (what, text) in [
            ("empty", String::new()),
            (
                "truncated in a column",
                DETAILED[..DETAILED.find("101.0").unwrap()].to_owned(),
            ),
            ("truncated in a key", DETAILED[..40].to_owned()),
            ("an array", format!("[{DETAILED}]")),
            ("garbage after", format!("{DETAILED} x")),
            (
                "a column twice",
                DETAILED.replace("\"cell\": \"C1\",", "\"ttfts\": [1, 2, 3],"),
            ),
            (
                "a header key twice",
                DETAILED.replace("\"cell\": \"C1\",", "\"model_id\": \"n\","),
            ),
            (
                "a column of another type",
                DETAILED.replace("\"ttfts\": [0.1, NaN, 0.0]", "\"ttfts\": 7"),
            ),
            (
                "a missing comma",
                DETAILED.replace("\"duration\": 2.5,", "\"duration\": 2.5"),
            ),
            (
                "a missing comma in a column",
                DETAILED.replace("[10, 10, 10]", "[10, 10 10]"),
            ),
            (
                "a missing comma after a text",
                DETAILED.replace("\"\", \"\", \"Traceback", "\"\" \"\", \"Traceback"),
            ),
            ("two commas", DETAILED.replace("[4, 3, 0]", "[4,, 3, 0]")),
            (
                "a leading comma",
                DETAILED.replace("[4, 3, 0]", "[, 4, 3, 0]"),
            ),
            (
                "a trailing comma",
                DETAILED.replace("[4, 3, 0]", "[4, 3, 0,]"),
            ),
            ("zeros", format!("{{\"ttfts\": [{}", "\0".repeat(64))),
        ] {
            assert!(streamed(text.as_bytes()).is_none(), "{what}: laid out");
            assert!(
                in_memory(text.as_bytes()).is_err(),
                "{what}: the parser accepts it"
            );
        }
    }

    /// Where the scan found each run's columns, or that it gave up.
    fn layout(text: &[u8], chunk: Option<usize>) -> Option<String> {
        let source = Source::new("bench.json");
        let file = match chunk {
            None => scan(&source, text),
            Some(n) => scan(&source, BufReader::with_capacity(n, text)),
        }
        .expect("no read error")?;
        Some(format!(
            "{:?}",
            file.runs.iter().map(|r| &r.columns).collect::<Vec<_>>()
        ))
    }

    #[test]
    fn the_scan_finds_the_same_layout_however_the_file_is_cut_into_reads() {
        // The scan passes over most bytes of a column in runs: a read may end anywhere in one.
        let texts = [
            (DETAILED.to_owned(), true),
            (generated(40, false), true),
            (generated(30, true), true),
            (
                DETAILED.replace("[0.01, 0.02, 0.03]", "[0.01,\n 0.02 ,\r\n0.03]"),
                true,
            ),
            (
                DETAILED.replace("[0.01, 0.01]", "[0.01, {\"a\": [1, \"]\"]}]"),
                true,
            ),
            (DETAILED.replace("[4, 3, 0]", "[4,, 3, 0]"), false),
            (DETAILED.replace("[10, 10, 10]", "[10, 10 10]"), false),
            (DETAILED.replace("[0.01, 0.01]", "[0.01, 0.01 # ]"), false),
            (DETAILED.replace("[0.01, 0.01]", "[0.01, 0.01]]"), false),
        ];
        for (k, (text, laid_out)) in texts.iter().enumerate() {
            let whole = layout(text.as_bytes(), None);
            assert_eq!(whole.is_some(), *laid_out, "case {k}: {whole:?}");
            for chunk in [1, 2, 3, 5, 8, 13, 64] {
                assert_eq!(
                    layout(text.as_bytes(), Some(chunk)),
                    whole,
                    "case {k}, reads of {chunk} bytes"
                );
            }
        }
        // A column's position is that of its `[`, line ends inside other columns counted.
        let text = DETAILED.replace("[0.01, 0.02, 0.03]", "[0.01,\n 0.02,\n0.03]");
        let offset = text.find("[100.5").unwrap();
        let line_start = text[..offset].rfind('\n').unwrap() + 1;
        let expected = format!(
            "ColumnAt {{ name: \"start_times\", offset: {offset}, end: {}, line: {}, column: {}, entries: 3 }}",
            offset + "[100.5, 100.0, 101.0]".len(),
            text[..offset].matches('\n').count() + 1,
            offset - line_start + 1,
        );
        for chunk in [None, Some(3)] {
            let found = layout(text.as_bytes(), chunk).unwrap();
            assert!(found.contains(&expected), "{expected} in {found}");
        }
    }

    /// `text` written to a file in a new folder, and its scan.
    fn written(text: &str) -> (tempfile::TempDir, std::path::PathBuf, StreamedFile) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.json");
        std::fs::write(&path, text).unwrap();
        let file = scan(&Source::new("bench.json"), text.as_bytes())
            .unwrap()
            .expect("laid out");
        (dir, path, file)
    }

    #[test]
    fn a_file_that_changes_after_its_scan_is_refused_not_read_as_other_rows() {
        let text = generated(4000, false);
        let (_dir, path, file) = written(&text);
        // The texts column loses entries: the same bytes up to it, then fewer.
        let cut = text.find("\"generated_texts\": [").unwrap() + 20;
        let shorter = format!("{}\"only one\"], \"errors\": []}}", &text[..cut]);
        std::fs::write(&path, shorter).unwrap();
        let rows = file.rows(0, &path).unwrap();
        let errors: Vec<String> = rows
            .filter_map(Result::err)
            .map(|e| e.to_string())
            .collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].contains("changed while it was imported"),
            "{errors:?}"
        );
    }

    #[test]
    fn rows_no_longer_wanted_stop_their_readers() {
        let (_dir, path, file) = written(&generated(20_000, false));
        let mut rows = file.rows(0, &path).unwrap();
        assert!(rows.next().unwrap().is_ok());
        drop(rows);
        // Dropped mid-way, the readers end: a second read of the same rows is whole.
        let again = file.rows(0, &path).unwrap();
        assert_eq!(again.filter(Result::is_ok).count(), 20_000);
    }
}
