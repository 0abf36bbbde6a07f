//! Importers of the files other tools write, into the records KV Gate's own runner writes.
//!
//! Every parser reads from a reader (never a path, never the whole file as one string when the
//! format allows streaming) and returns a [`ParsedImport`]: one or more runs, each with its
//! per-request [`RequestRecord`]s (or, for tools that only publish aggregates, the aggregates,
//! clearly marked so), metric scrapes and startup evidence, plus every correction the parser made
//! as a [`ImportWarning`]. A shape it does not know is an [`ImportError`] naming the file, the line
//! or JSON path, the field, what was expected and what was found; nothing is guessed.
//!
//! Times are milliseconds on each run's own clock (zero = the first request the tool sent), as the
//! runner records them.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, BufRead, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use kvgate_core::run::RequestRecord;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

pub mod aiperf;
pub mod guidellm;
pub mod inference_perf;
pub mod inference_perf_requests;
pub mod inspect;
pub mod jsonl;
pub mod lm_eval;
pub mod logs;
pub mod mapping;
pub mod nvidia_smi;
pub mod prom_series;
pub mod pyjson;
pub mod vllm_bench;

/// The formats `kvgate import --format` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
pub enum ImportFormat {
    /// `vllm bench serve --save-result [--save-detailed]`, or `--append-result` (one per line).
    #[serde(rename = "vllm-bench")]
    VllmBench,
    /// GuideLLM report, `metadata.version` 2.
    #[serde(rename = "guidellm")]
    Guidellm,
    /// AIPerf `profile_export.jsonl`.
    #[serde(rename = "aiperf")]
    Aiperf,
    /// inference-perf `*_lifecycle_metrics.json` / `*_prometheus_metrics.json` (aggregates), or
    /// `per_request_lifecycle_metrics.json` (one row per request, inference-perf 0.7).
    #[serde(rename = "inference-perf")]
    InferencePerf,
    /// Prometheus text exposition: one scrape, or a series of scrapes told apart by timestamps.
    #[serde(rename = "prometheus")]
    Prometheus,
    /// vLLM startup log (compatibility evidence).
    #[serde(rename = "vllm-log")]
    VllmLog,
    /// llama.cpp server startup log (compatibility evidence).
    #[serde(rename = "llamacpp-log")]
    LlamacppLog,
    /// `nvidia-smi --query-gpu=index,memory.used,… --format=csv` (allocated device memory).
    #[serde(rename = "nvidia-smi")]
    NvidiaSmi,
    /// KV Gate's own run records: a `kvgate-run` file, or one `RequestRecord` per line.
    #[serde(rename = "jsonl")]
    Jsonl,
    /// lm-evaluation-harness `--log_samples` output, `samples_<task>_<date>.jsonl` (with its
    /// `results_<date>.json`): per-item scores, paired like KV Gate's own quality runs.
    #[serde(rename = "lm-eval-samples")]
    LmEvalSamples,
    /// An Inspect AI eval log (`.json`, or the `.eval` archive): per-sample scores.
    #[serde(rename = "inspect")]
    Inspect,
    /// CSV with a column mapping (read through polars).
    #[serde(rename = "csv")]
    Csv,
    /// Parquet with a column mapping (read through polars).
    #[serde(rename = "parquet")]
    Parquet,
}

impl ImportFormat {
    pub const ALL: [ImportFormat; 13] = [
        ImportFormat::VllmBench,
        ImportFormat::Guidellm,
        ImportFormat::Aiperf,
        ImportFormat::InferencePerf,
        ImportFormat::Prometheus,
        ImportFormat::VllmLog,
        ImportFormat::LlamacppLog,
        ImportFormat::NvidiaSmi,
        ImportFormat::Jsonl,
        ImportFormat::LmEvalSamples,
        ImportFormat::Inspect,
        ImportFormat::Csv,
        ImportFormat::Parquet,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ImportFormat::VllmBench => "vllm-bench",
            ImportFormat::Guidellm => "guidellm",
            ImportFormat::Aiperf => "aiperf",
            ImportFormat::InferencePerf => "inference-perf",
            ImportFormat::Prometheus => "prometheus",
            ImportFormat::VllmLog => "vllm-log",
            ImportFormat::LlamacppLog => "llamacpp-log",
            ImportFormat::NvidiaSmi => "nvidia-smi",
            ImportFormat::Jsonl => "jsonl",
            ImportFormat::LmEvalSamples => "lm-eval-samples",
            ImportFormat::Inspect => "inspect",
            ImportFormat::Csv => "csv",
            ImportFormat::Parquet => "parquet",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// The version of this crate's parser of the format, recorded with every import.
    pub fn parser_version(self) -> String {
        format!("kvgate-formats {} {}", crate::PARSER_VERSION, self.as_str())
    }

    /// A guess from the file name and its first bytes, for the import screen's preselection.
    /// The user confirms the format; this never decides alone.
    pub fn sniff(file_name: &str, head: &[u8]) -> Option<ImportFormat> {
        let name = file_name.to_ascii_lowercase();
        let text = String::from_utf8_lossy(&head[..head.len().min(64 * 1024)]);
        if name.ends_with(".parquet") || head.starts_with(b"PAR1") {
            return Some(ImportFormat::Parquet);
        }
        if name.ends_with(".eval") && head.starts_with(b"PK\x03\x04") {
            return Some(ImportFormat::Inspect);
        }
        let start = text.trim_start_matches('\u{feff}').trim_start();
        if name.starts_with("samples_") && start.starts_with("{\"doc_id\"") {
            return Some(ImportFormat::LmEvalSamples);
        }
        if start.starts_with('{') && text.contains("\"eval\": {") && text.contains("\"samples\"") {
            return Some(ImportFormat::Inspect);
        }
        // nvidia-smi's header names its query fields, units in brackets.
        let first = text
            .trim_start_matches('\u{feff}')
            .lines()
            .next()
            .unwrap_or("");
        if first.contains("memory.used") || first.contains("memory.total [MiB]") {
            return Some(ImportFormat::NvidiaSmi);
        }
        if name.ends_with(".csv") {
            return Some(ImportFormat::Csv);
        }
        if name.contains("lifecycle_metrics") || name.contains("prometheus_metrics.json") {
            return Some(ImportFormat::InferencePerf);
        }
        if name.contains("profile_export") {
            return Some(ImportFormat::Aiperf);
        }
        if text.contains("\"kvgate-run\"") || text.starts_with("{\"index\"") {
            return Some(ImportFormat::Jsonl);
        }
        if text.contains("\"guidellm_version\"") || text.contains("\"benchmarks\"") {
            return Some(ImportFormat::Guidellm);
        }
        if text.contains("\"request_throughput\"")
            || text.contains("\"endpoint_type\"")
            || text.contains("\"num_prompts\"")
        {
            return Some(ImportFormat::VllmBench);
        }
        if text.contains("\"x_request_id\"") || text.contains("\"request_start_ns\"") {
            return Some(ImportFormat::Aiperf);
        }
        if text.contains("llama_context")
            || text.contains("llama_kv_cache")
            || text.contains("llama-server")
        {
            return Some(ImportFormat::LlamacppLog);
        }
        if text.contains("vllm") && (text.contains("INFO") || text.contains("WARNING")) {
            return Some(ImportFormat::VllmLog);
        }
        if text
            .lines()
            .any(|l| l.starts_with("# TYPE ") || l.starts_with("# HELP "))
        {
            return Some(ImportFormat::Prometheus);
        }
        None
    }
}

impl fmt::Display for ImportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

pub use kvgate_core::run::Granularity;

/// One number a tool reported about a whole run (or a stage), exactly as reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Aggregate {
    /// Where it sits in the source, dotted: `successes.latency.time_to_first_token`,
    /// `request_throughput`, …
    pub name: String,
    /// `value`, `count`, `mean`, `median`, `p99`, `p99.9`, `min`, `max`, `std`, …
    pub stat: String,
    pub value: f64,
    /// `s`, `ms`, `tokens`, `requests`, `1/s`, `tokens/s`, `ratio`, `percent`, or `""` when the
    /// tool does not say.
    pub unit: String,
}

/// One metrics scrape: its exposition text and when it was taken.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedScrape {
    /// Milliseconds on the run clock (zero = the first scrape when nothing else anchors it).
    pub at_ms: f64,
    /// Unix milliseconds of the scrape, when the source says.
    pub unix_ms: Option<i64>,
    /// The Prometheus text of this scrape alone.
    pub text: String,
}

/// Server-side evidence found in the file, text exactly as found.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedEvidence {
    /// `startup_log`, `cache_config_info` or `metrics`.
    pub kind: String,
    pub source_name: String,
    pub text: String,
    /// What was recognised in a startup log, read once by the parser.
    pub startup: Option<crate::startup_log::StartupEvidence>,
}

/// One run (or one stage of a staged benchmark) read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedRun {
    /// For people: `vllm bench serve · rate inf · 1000 prompts`, `stage 3 · 8.0 rps`.
    pub label: String,
    pub granularity: Granularity,
    /// The tool's own configuration and header, verbatim (per-request arrays removed).
    pub config: Value,
    /// Keys the user attached (`--metadata` of vllm bench); `manifest_sha256` is checked
    /// against the target cell.
    pub metadata: BTreeMap<String, Value>,
    /// Unix milliseconds of the run clock's zero, when the source gives a wall time.
    pub wall_anchor_unix_ms: Option<i64>,
    /// How long the run took on its own clock, when the source says.
    pub elapsed_ms: Option<f64>,
    /// Requests the tool planned, when it says.
    pub planned: Option<i64>,
    /// Whether the requests sit on one clock (send times known). Unclocked rows (per-request
    /// arrays without send times) are timed from each request's own send: they feed latency
    /// percentiles and pairs, never goodput.
    pub clocked: bool,
    /// Indices (into `requests`) of rows the tool kept but did not measure: warm-up and
    /// cool-down requests outside its measured window. Stored as warm-up rows.
    pub unmeasured: Vec<u32>,
    pub requests: Vec<RequestRecord>,
    /// Harness imports: one per request, its scores (empty for other formats).
    pub harness: Vec<HarnessRow>,
    pub aggregates: Vec<Aggregate>,
    pub scrapes: Vec<ParsedScrape>,
    pub evidence: Vec<ParsedEvidence>,
}

impl ParsedRun {
    pub fn new(label: impl Into<String>, granularity: Granularity) -> ParsedRun {
        ParsedRun {
            label: label.into(),
            granularity,
            config: Value::Object(Default::default()),
            metadata: BTreeMap::new(),
            wall_anchor_unix_ms: None,
            elapsed_ms: None,
            planned: None,
            clocked: true,
            unmeasured: Vec::new(),
            requests: Vec::new(),
            harness: Vec::new(),
            aggregates: Vec::new(),
            scrapes: Vec::new(),
            evidence: Vec::new(),
        }
    }
}

/// What an evaluation harness said of one request: its scores, and for items KV Gate exported
/// the approved answer and the response as the harness filtered it, for KV Gate's validator.
#[derive(Debug, Clone, PartialEq)]
pub struct HarnessRow {
    /// Where the row is in its file, as errors name it: `line 12`, `$.samples[3]`.
    pub at: String,
    pub scored: kvgate_core::harness::ScoredRow,
    pub expected: Option<kvgate_core::validator::ExpectedAnswer>,
    /// For an item KV Gate exported: the items sha256 of the corpus it came from, as the export
    /// wrote it (absent in exports made before it was written).
    pub corpus_sha256: Option<String>,
    pub filtered: Option<String>,
    /// What the harness sent and the answer it scored against, for the reviewer.
    pub reference: HarnessReference,
}

/// A harness item's prompt as sent (each chat message as `role:` and its text, blank-line
/// separated; a plain prompt as it is) and its target as the harness recorded it (text as it is,
/// any other value as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HarnessReference {
    pub prompt: String,
    pub target: String,
}

impl HarnessReference {
    /// From the harness's prompt (text, or chat messages whose content is text or text parts)
    /// and target value.
    pub fn from_values(prompt: &Value, target: Option<&Value>) -> HarnessReference {
        let text_of = |content: &Value| match content {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        let prompt = match prompt {
            Value::String(s) => match serde_json::from_str::<Value>(s) {
                Ok(v @ Value::Array(_)) if is_messages(&v) => messages_text(&v, text_of),
                _ => s.clone(),
            },
            v @ Value::Array(_) if is_messages(v) => messages_text(v, text_of),
            other => text_of(other),
        };
        let target = match target {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        };
        HarnessReference { prompt, target }
    }
}

fn is_messages(v: &Value) -> bool {
    v.as_array().is_some_and(|a| {
        !a.is_empty()
            && a.iter()
                .all(|m| m.get("role").is_some() && m.get("content").is_some())
    })
}

fn messages_text(v: &Value, text_of: impl Fn(&Value) -> String) -> String {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            format!(
                "{}:\n{}",
                m.get("role").and_then(Value::as_str).unwrap_or("?"),
                text_of(m.get("content").unwrap_or(&Value::Null))
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A correction the parser made, or something the user must know about what was read. Stored
/// with the import and shown before it is committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ImportWarning {
    /// JSON path, `line N` or column name the warning is about.
    pub at: String,
    pub message: String,
    /// How many rows it concerns (0 when it is about the file as a whole).
    pub rows: u64,
}

impl ImportWarning {
    pub fn new(at: impl Into<String>, message: impl Into<String>, rows: u64) -> ImportWarning {
        ImportWarning {
            at: at.into(),
            message: message.into(),
            rows,
        }
    }
}

/// What a parser read from one file.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedImport {
    pub format: ImportFormat,
    /// The tool that wrote the file and its version, when the file says (`guidellm 0.7.1`).
    pub tool: Option<String>,
    pub runs: Vec<ParsedRun>,
    pub warnings: Vec<ImportWarning>,
}

impl ParsedImport {
    pub fn new(format: ImportFormat) -> ParsedImport {
        ParsedImport {
            format,
            tool: None,
            runs: Vec::new(),
            warnings: Vec::new(),
        }
    }

    pub fn request_count(&self) -> u64 {
        self.runs.iter().map(|r| r.requests.len() as u64).sum()
    }
}

/// Why a file could not be imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImportError {
    /// The file is not what the format says: where, which field, expected vs found.
    Invalid(Box<InvalidInput>),
    /// Reading the file failed.
    Io { file: String, message: String },
    /// The user cancelled while the file was being read.
    Cancelled,
}

/// Where a file breaks its format, precisely enough to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidInput {
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<u64>,
    /// 1-based column, when known.
    pub column: Option<u64>,
    /// JSON path (`$.ttfts[12]`), CSV column or log line context, when known.
    pub path: Option<String>,
    /// The field concerned, when there is one.
    pub field: Option<String>,
    pub expected: String,
    pub found: String,
}

impl fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
            if let Some(column) = self.column {
                write!(f, ", column {column}")?;
            }
        }
        if let Some(path) = &self.path {
            write!(f, ", {path}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ", field `{field}`")?;
        }
        write!(f, ": expected {}, found {}", self.expected, self.found)
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::Invalid(invalid) => invalid.fmt(f),
            ImportError::Io { file, message } => write!(f, "{file}: cannot read: {message}"),
            ImportError::Cancelled => f.write_str("import cancelled; nothing was stored"),
        }
    }
}

impl std::error::Error for ImportError {}

/// Builder of [`ImportError::Invalid`] for one file.
#[derive(Debug, Clone)]
pub struct Source {
    pub file: String,
}

impl Source {
    pub fn new(file: impl Into<String>) -> Source {
        Source { file: file.into() }
    }

    /// An error at a JSON path (or column), with no line.
    pub fn at(
        &self,
        path: impl Into<String>,
        field: Option<&str>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> ImportError {
        ImportError::Invalid(Box::new(InvalidInput {
            file: self.file.clone(),
            line: None,
            column: None,
            path: Some(path.into()),
            field: field.map(str::to_owned),
            expected: expected.into(),
            found: found.into(),
        }))
    }

    /// An error on a line (1-based), optionally at a JSON path within it.
    pub fn line(
        &self,
        line: u64,
        path: Option<String>,
        field: Option<&str>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> ImportError {
        ImportError::Invalid(Box::new(InvalidInput {
            file: self.file.clone(),
            line: Some(line),
            column: None,
            path,
            field: field.map(str::to_owned),
            expected: expected.into(),
            found: found.into(),
        }))
    }

    /// A JSON syntax or type error from serde_json, with its line and column; a read failure
    /// caused by cancellation becomes [`ImportError::Cancelled`].
    pub fn json(&self, err: serde_json::Error, path: Option<String>) -> ImportError {
        if err.is_io() {
            let message = err.to_string();
            if message.contains(CANCELLED) {
                return ImportError::Cancelled;
            }
            return ImportError::Io {
                file: self.file.clone(),
                message,
            };
        }
        let (field, expected, found) = describe_json_error(&err);
        ImportError::Invalid(Box::new(InvalidInput {
            file: self.file.clone(),
            line: Some(err.line() as u64),
            column: Some(err.column() as u64),
            path,
            field,
            expected,
            found,
        }))
    }

    /// A JSON error in one line of a JSON-lines file: serde_json counted lines within that line
    /// alone, so the file's line number replaces its own, and a line that ends early is cut
    /// short (the file as a whole may go on).
    pub fn json_line(
        &self,
        err: serde_json::Error,
        line: u64,
        path: Option<String>,
    ) -> ImportError {
        let eof = err.is_eof();
        let message = strip_location(&err.to_string());
        match self.json(err, path) {
            ImportError::Invalid(mut invalid) => {
                invalid.line = Some(line);
                if eof {
                    invalid.expected = "the rest of the JSON object on this line".to_owned();
                    invalid.found =
                        format!("the end of the line ({message}): the line is cut short");
                }
                ImportError::Invalid(invalid)
            }
            other => other,
        }
    }

    pub fn io(&self, err: io::Error) -> ImportError {
        if err.to_string().contains(CANCELLED) {
            return ImportError::Cancelled;
        }
        ImportError::Io {
            file: self.file.clone(),
            message: err.to_string(),
        }
    }
}

/// serde_json appends " at line L column C"; the error carries them separately.
pub(crate) fn strip_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// What serde calls what it found (`sequence`, `map`, `unit value`), as a JSON user says it.
pub(crate) fn plain_found(found: &str) -> String {
    match found {
        "sequence" => "an array".to_owned(),
        "map" => "an object".to_owned(),
        "unit value" => "null".to_owned(),
        other => other.to_owned(),
    }
}

/// What serde expected (`u32`, `f64`, `a sequence`), as a JSON user says it.
pub(crate) fn plain_expected(expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => {
            format!("a non-negative whole number ({expected})")
        }
        "i8" | "i16" | "i32" | "i64" | "isize" => format!("a whole number ({expected})"),
        "f32" | "f64" => "a number".to_owned(),
        "a sequence" => "an array".to_owned(),
        "a map" => "an object".to_owned(),
        "unit" => "null".to_owned(),
        e if e.starts_with("struct ") => format!("an object ({})", &e["struct ".len()..]),
        other => other.to_owned(),
    }
}

/// Splits serde_json's message into the field concerned (when it names one), what was expected
/// and what was found.
fn describe_json_error(err: &serde_json::Error) -> (Option<String>, String, String) {
    let message = strip_location(&err.to_string());
    // serde's own field errors name the field between backquotes.
    let quoted = |prefix: &str| -> Option<String> {
        let rest = message.strip_prefix(prefix)?.strip_prefix('`')?;
        Some(rest[..rest.find('`')?].to_owned())
    };
    match err.classify() {
        serde_json::error::Category::Eof => (
            None,
            "the rest of the JSON document".to_owned(),
            format!("end of file ({message}): the file is truncated"),
        ),
        serde_json::error::Category::Syntax => {
            let (expected, found) = match message.as_str() {
                "expected value" => (
                    "a JSON value",
                    "a character that cannot start one (is this a JSON file?)".to_owned(),
                ),
                "expected ident" => ("`true`, `false` or `null`", "another word".to_owned()),
                "invalid unicode code point" => (
                    "UTF-8 text",
                    "bytes that are not UTF-8 (invalid unicode code point)".to_owned(),
                ),
                "trailing characters" => (
                    "the end of the JSON document",
                    "more text after it".to_owned(),
                ),
                "key must be a string" => (
                    "a key in double quotes",
                    "a key that is not a string".to_owned(),
                ),
                "recursion limit exceeded" => {
                    ("at most 128 levels of nesting", "deeper nesting".to_owned())
                }
                m => match m.strip_prefix("expected ") {
                    // "expected `,` or `]`", "expected `:`"
                    Some(what) => return (None, what.to_owned(), "another character".to_owned()),
                    None => ("valid JSON", m.to_owned()),
                },
            };
            (None, expected.to_owned(), found)
        }
        _ => {
            if let Some(field) = quoted("missing field ") {
                let expected = format!("the field `{field}`");
                return (Some(field), expected, "an object without it".to_owned());
            }
            if let Some(field) = quoted("duplicate field ") {
                let found = format!("`{field}` twice");
                return (Some(field), "each field once".to_owned(), found);
            }
            let field = quoted("unknown field ");
            // "invalid type: string \"x\", expected f64"
            if let Some((found, expected)) = message.split_once(", expected ") {
                let found = found
                    .trim_start_matches("invalid type: ")
                    .trim_start_matches("invalid value: ");
                (field, plain_expected(expected), plain_found(found))
            } else {
                (field, "a value of the documented shape".to_owned(), message)
            }
        }
    }
}

/// A JSON value read like [`Value`], except that a key twice in one object is an error:
/// serde_json keeps the last one silently, and a measurement file never repeats a key on
/// purpose (Python's `json.dumps` cannot).
pub struct StrictValue(pub Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<StrictValue, D::Error> {
        d.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> serde::de::Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        StrictValue::deserialize(d).map(|v| v.0)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(StrictValue(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(serde::de::Error::custom(format_args!(
                    "duplicate field `{key}`"
                )));
            }
            let StrictValue(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// The longest line a line-oriented format (JSON lines, Prometheus text) may have: a request
/// record or a sample is kilobytes; a longer "line" is a file of another kind, and is refused
/// before it fills memory.
pub const MAX_LINE_BYTES: u64 = 64 << 20;

/// Reads one line (with its `\n`, if any) into `buf`, refusing a line longer than
/// [`MAX_LINE_BYTES`]. Returns the bytes read; 0 at the end of the input.
pub(crate) fn read_line(
    source: &Source,
    reader: &mut impl BufRead,
    line: u64,
    buf: &mut Vec<u8>,
) -> Result<usize, ImportError> {
    buf.clear();
    let n = (&mut *reader)
        .take(MAX_LINE_BYTES + 1)
        .read_until(b'\n', buf)
        .map_err(|e| source.io(e))?;
    if n as u64 > MAX_LINE_BYTES && buf.last() != Some(&b'\n') {
        return Err(source.line(
            line,
            None,
            None,
            format!("a line of at most {} MiB", MAX_LINE_BYTES >> 20),
            format!(
                "no line break in the first {} MiB: not a line-oriented text file",
                MAX_LINE_BYTES >> 20
            ),
        ));
    }
    Ok(n)
}

const CANCELLED: &str = "kvgate: import cancelled";

/// Shared between a reader and whoever shows its progress or cancels it.
#[derive(Debug, Clone, Default)]
pub struct ReadProgress {
    bytes: Arc<AtomicU64>,
    cancel: Arc<AtomicBool>,
}

impl ReadProgress {
    pub fn new() -> ReadProgress {
        ReadProgress::default()
    }

    pub fn bytes_read(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Asks the reader to stop: its next read fails and the parser returns
    /// [`ImportError::Cancelled`].
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Wraps a reader so that it counts bytes and honours cancellation.
    pub fn reader<R: Read>(&self, inner: R) -> ProgressReader<R> {
        ProgressReader {
            inner,
            progress: self.clone(),
        }
    }
}

/// A reader that counts what it reads into a [`ReadProgress`] and fails once it is cancelled.
pub struct ProgressReader<R> {
    inner: R,
    progress: ReadProgress,
}

impl<R: Read> Read for ProgressReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.progress.is_cancelled() {
            return Err(io::Error::other(CANCELLED));
        }
        let n = self.inner.read(buf)?;
        self.progress.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Parses one file of a format that has a reader-based parser here. CSV and Parquet are read by
/// `kvgate-tabular` (polars) and are refused here.
pub fn parse(
    format: ImportFormat,
    file: &str,
    reader: impl Read,
) -> Result<ParsedImport, ImportError> {
    let source = Source::new(file);
    let mut reader = io::BufReader::with_capacity(1 << 20, reader);
    let head = reader.fill_buf().map_err(|e| source.io(e))?;
    if let Some(what) = foreign_file(head) {
        let own = if what.starts_with("lm-evaluation-harness per-sample") {
            Some(ImportFormat::LmEvalSamples)
        } else if what.contains("Inspect AI") {
            Some(ImportFormat::Inspect)
        } else {
            None
        };
        if own != Some(format) {
            let how = match own {
                Some(f) => format!("import it with --format {f}"),
                None if what.starts_with("lm-evaluation-harness results") => {
                    "give it with its samples file, --format lm-eval-samples".to_owned()
                }
                None => "KV Gate does not import this tool's files".to_owned(),
            };
            return Err(source.at(
                "$",
                None,
                format!("{format} input"),
                format!("{what}: {how}"),
            ));
        }
    }
    match format {
        ImportFormat::VllmBench => vllm_bench::parse(&source, reader),
        ImportFormat::Guidellm => guidellm::parse(&source, reader),
        ImportFormat::Aiperf => aiperf::parse(&source, reader),
        ImportFormat::InferencePerf => inference_perf::parse(&source, reader),
        ImportFormat::Prometheus => prom_series::parse(&source, reader),
        ImportFormat::VllmLog => logs::parse(&source, reader, logs::LogKind::Vllm),
        ImportFormat::LlamacppLog => logs::parse(&source, reader, logs::LogKind::LlamaCpp),
        ImportFormat::NvidiaSmi => nvidia_smi::parse(&source, reader),
        ImportFormat::Jsonl => jsonl::parse(&source, reader),
        ImportFormat::LmEvalSamples => lm_eval::parse(&source, reader, &|_| None),
        ImportFormat::Inspect => inspect::parse(&source, reader),
        ImportFormat::Csv | ImportFormat::Parquet => Err(source.at(
            "$",
            None,
            "a format read by this parser",
            format!("{format}: tabular files are read through polars with a column mapping"),
        )),
    }
}

/// What an import says of a run whose operating point its file does not record.
pub const UNKNOWN_POINT: &str =
    "offered load not recorded in the file: this run lands on an unknown point, never a knee";

/// Warns, for every run with request rows whose offered load the file does not state (no request
/// rate, no strategy, no load settings), that it lands on an unknown point: never a guessed rate.
/// Runs of aggregates only never enter goodput, so their point is not asked for.
pub fn note_unknown_points(import: &mut ParsedImport, file: &str) {
    let rows: Vec<u64> = import
        .runs
        .iter()
        .map(|r| r.requests.len() as u64)
        .collect();
    note_unknown_points_of(import, file, &rows);
}

/// [`note_unknown_points`] for runs whose rows are read later: `rows[i]` request rows in run `i`.
pub fn note_unknown_points_of(import: &mut ParsedImport, file: &str, rows: &[u64]) {
    let many = import.runs.len() > 1;
    let mut notes = Vec::new();
    for (i, run) in import.runs.iter().enumerate() {
        let n = rows.get(i).copied().unwrap_or(0);
        // A harness run measures quality, not load: it has no operating point to miss.
        if n == 0 || !run.harness.is_empty() {
            continue;
        }
        let point = kvgate_core::operating_point::imported_point(&run.config);
        if point.offered != kvgate_core::operating_point::OfferedLoad::Unknown {
            continue;
        }
        let at = match import.format {
            ImportFormat::VllmBench if many => format!("result {}: $.request_rate", i + 1),
            ImportFormat::VllmBench => "$.request_rate".to_owned(),
            ImportFormat::Guidellm => format!("$.benchmarks[{i}].config.strategy"),
            ImportFormat::Aiperf => format!("{}: input_config", aiperf::SUMMARY_FILE),
            _ => "$".to_owned(),
        };
        let hint = match import.format {
            ImportFormat::Aiperf => format!(
                " (AIPerf writes its load settings to {} beside the export: keep it there)",
                aiperf::SUMMARY_FILE
            ),
            _ => String::new(),
        };
        notes.push(ImportWarning::new(
            at,
            format!("{file}, {}: {UNKNOWN_POINT}{hint}", run.label),
            n,
        ));
    }
    import.warnings.extend(notes);
}

/// Files of evaluation harnesses KV Gate does not read, told apart by their first bytes, so a
/// user who picks one is told what it is instead of a parse error deep inside it.
pub fn foreign_file(head: &[u8]) -> Option<&'static str> {
    let text = String::from_utf8_lossy(&head[..head.len().min(64 * 1024)]);
    let start = text.trim_start_matches('\u{feff}').trim_start();
    if head.starts_with(b"PK\x03\x04") {
        let inspect = text.contains("header.json") || text.contains("_journal/");
        return Some(if inspect {
            "an Inspect AI log archive (.eval: a zip of header.json and samples/)"
        } else {
            "a zip archive"
        });
    }
    if start.starts_with("{\"doc_id\"") && text.contains("\"doc_hash\"") {
        return Some(
            "lm-evaluation-harness per-sample results (samples_<task>_<date>.jsonl, written by \
             --log_samples)",
        );
    }
    if start.starts_with('{') && text.contains("\"lm_eval_version\"") {
        return Some("lm-evaluation-harness results (results_<date>.json)");
    }
    if start.starts_with('{')
        && text.contains("\"eval\": {")
        && (text.contains("\"inspect_ai\"") || text.contains("\"task_id\""))
    {
        return Some("an Inspect AI log (JSON: eval, plan, results, samples)");
    }
    None
}

/// A finite, non-negative number of seconds (or ms) as a checked value.
pub fn check_duration(
    source: &Source,
    path: impl FnOnce() -> String,
    value: f64,
) -> Result<f64, ImportError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(source.at(
            path(),
            None,
            "a finite, non-negative duration",
            format!("{value}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_harness_reference_reads_text_chat_messages_and_any_target() {
        use serde_json::json;
        // lm-eval's chat prompt: the messages list serialised as a JSON string.
        let chat = json!(
            r#"[{"role": "system", "content": "Answer."}, {"role": "user", "content": "Which number?"}]"#
        );
        let r = HarnessReference::from_values(&chat, Some(&json!(["3336625"])));
        assert_eq!(r.prompt, "system:\nAnswer.\n\nuser:\nWhich number?");
        assert_eq!(r.target, r#"["3336625"]"#);
        // Inspect: messages whose content is text parts; a text target.
        let parts = json!([{"role": "user", "content": [{"type": "text", "text": "Is it "}, {"type": "text", "text": "yes?"}]}]);
        let r = HarnessReference::from_values(&parts, Some(&json!(" Yes")));
        assert_eq!(
            (r.prompt.as_str(), r.target.as_str()),
            ("user:\nIs it yes?", " Yes")
        );
        // A plain prompt, even one that reads as JSON but is no message list, stays as sent.
        let r = HarnessReference::from_values(&json!("[1, 2] and then?"), None);
        assert_eq!(
            (r.prompt.as_str(), r.target.as_str()),
            ("[1, 2] and then?", "")
        );
        let r = HarnessReference::from_values(&json!("[1, 2]"), Some(&json!(3)));
        assert_eq!((r.prompt.as_str(), r.target.as_str()), ("[1, 2]", "3"));
    }

    #[test]
    fn formats_round_trip_their_names() {
        for format in ImportFormat::ALL {
            assert_eq!(ImportFormat::parse(format.as_str()), Some(format));
            assert_eq!(
                serde_json::to_value(format).unwrap(),
                Value::String(format.as_str().into())
            );
        }
        assert_eq!(ImportFormat::parse("vllm"), None);
    }

    #[test]
    fn cancelled_reader_stops_the_parse() {
        let progress = ReadProgress::new();
        progress.cancel();
        let err = parse(
            ImportFormat::VllmBench,
            "x.json",
            progress.reader(&b"{\"completed\": 1}"[..]),
        )
        .unwrap_err();
        assert_eq!(err, ImportError::Cancelled);
    }

    #[test]
    fn progress_counts_bytes() {
        let progress = ReadProgress::new();
        let mut reader = progress.reader(&b"hello world"[..]);
        let mut out = String::new();
        reader.read_to_string(&mut out).unwrap();
        assert_eq!(progress.bytes_read(), 11);
    }

    #[test]
    fn invalid_input_names_everything() {
        let source = Source::new("bench.json");
        let err = source.at("$.ttfts[3]", Some("ttfts"), "a number", "\"abc\"");
        assert_eq!(
            err.to_string(),
            "bench.json, $.ttfts[3], field `ttfts`: expected a number, found \"abc\""
        );
    }

    #[test]
    fn harness_files_are_named_whatever_format_is_picked() {
        // Synthetic first bytes of lm-evaluation-harness and Inspect AI files.
        let samples = br#"{"doc_id": 16, "doc": {"question": "q"}, "target": "3", "filtered_resps": ["3"], "doc_hash": "ab", "prompt_hash": "cd"}"#;
        let results = b"{\n  \"results\": {\"gsm8k\": {}},\n  \"lm_eval_version\": \"0.4.9.1\"\n}";
        let inspect = b"{\n  \"version\": 2,\n  \"status\": \"success\",\n  \"eval\": {\n    \"task_id\": \"x\"\n  }\n}";
        let eval = b"PK\x03\x04\x14\x00\x00\x00_journal/start.json";
        for (bytes, what, how) in [
            (
                &samples[..],
                "lm-evaluation-harness per-sample results",
                "import it with --format lm-eval-samples",
            ),
            (
                &results[..],
                "lm-evaluation-harness results",
                "give it with its samples file, --format lm-eval-samples",
            ),
            (
                &inspect[..],
                "an Inspect AI log (JSON",
                "import it with --format inspect",
            ),
            (
                &eval[..],
                "an Inspect AI log archive",
                "import it with --format inspect",
            ),
        ] {
            for format in [
                ImportFormat::Jsonl,
                ImportFormat::VllmBench,
                ImportFormat::Aiperf,
            ] {
                let err = parse(format, "f", bytes).unwrap_err().to_string();
                assert!(
                    err.starts_with(&format!("f, $: expected {format} input, found {what}")),
                    "{err}"
                );
                assert!(err.ends_with(how), "{err}");
            }
        }
        assert_eq!(
            foreign_file(br#"{"date": "20250101-000000", "completed": 1}"#),
            None
        );
    }

    #[test]
    fn sniff_guesses_common_files() {
        assert_eq!(
            ImportFormat::sniff("stage_0_lifecycle_metrics.json", b"{}"),
            Some(ImportFormat::InferencePerf)
        );
        assert_eq!(
            ImportFormat::sniff(
                "r.json",
                br#"{"date": "20250101-000000", "endpoint_type": "openai"}"#
            ),
            Some(ImportFormat::VllmBench)
        );
        assert_eq!(
            ImportFormat::sniff("m.txt", b"# HELP x y\n# TYPE x gauge\nx 1\n"),
            Some(ImportFormat::Prometheus)
        );
        // An nvidia-smi CSV is told from a request table by its header, not its extension.
        assert_eq!(
            ImportFormat::sniff("smi.csv", b"index, memory.used [MiB]\n0, 5 MiB\n"),
            Some(ImportFormat::NvidiaSmi)
        );
        assert_eq!(
            ImportFormat::sniff("r.csv", b"start_s,ttft_s\n0,1\n"),
            Some(ImportFormat::Csv)
        );
    }
}
