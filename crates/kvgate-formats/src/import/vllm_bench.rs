//! `vllm bench serve --save-result [--save-detailed]` JSON, and the `--append-result` form (one
//! result object after another, newline-separated). Older `benchmarks/benchmark_serving.py`
//! files read the same way.
//!
//! The document is read in one streaming pass: per-request arrays go straight into typed
//! columns (no JSON tree of the whole file), every other key is kept verbatim as the run's
//! configuration. The columns are index-aligned: request *i* is element *i* of each.
//!
//! How a result becomes request records (times in ms on the run clock, zero = the earliest
//! `start_times` entry, which is `time.perf_counter()` — a monotonic clock, not Unix time):
//! - `dispatch_ms` = start; `client_delay_ms` = `queue_times[i]` (time spent waiting in the
//!   client for a concurrency slot) and `planned_arrival_ms` = dispatch − that delay; without
//!   `queue_times` the planned arrival is the send time and the client delay is absent;
//! - `first_token_ms` = start + `ttfts[i]`; chunk times = first token + running sum of
//!   `itls[i]` (one entry per SSE chunk after the first); `finish_ms` = start + `latencies[i]`;
//! - `errors[i]` = `""` → `ok`; anything else → `error` with that text. vLLM leaves TTFT,
//!   latency and output length of a failed request at their 0 defaults: those are not
//!   measurements and are stored absent;
//! - `input_lens` / `output_lens` → prompt / completion tokens (counted by vLLM's client);
//!   `generated_texts` → output text.
//!
//! Without `start_times` (no `--save-detailed`, or an old version) there is no send time to put
//! requests on a clock: the result is stored as an aggregate run with the tool's statistics, and
//! a warning says how many per-request values were not stored as rows.

use std::collections::BTreeMap;
use std::fmt;
use std::io::BufRead;

use kvgate_core::run::{RequestRecord, RequestStatus};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

mod numbers;
pub mod stream;

use super::pyjson::PyJsonReader;
use super::ImportFormat;
use super::{plain_found, strip_location};
use super::{Aggregate, Granularity, ImportError, ImportWarning, ParsedImport, ParsedRun, Source};

/// Keys vLLM writes itself; every other top-level key came from `--metadata KEY=VALUE`.
const KNOWN_KEYS: &[&str] = &[
    "date",
    "endpoint_type",
    "backend",
    "label",
    "model_id",
    "tokenizer_id",
    "num_prompts",
    "request_rate",
    "burstiness",
    "max_concurrency",
    "ramp_up_strategy",
    "ramp_up_start_rps",
    "ramp_up_end_rps",
    "duration",
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "request_goodput",
    "request_goodput:",
    "output_throughput",
    "total_token_throughput",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
    "rps_change_events",
    // vLLM 0.2x: real-time factor of audio benchmarks.
    "rtfx",
    // `vllm bench sweep` adds the run's repeat number and the server's `max_num_seqs`.
    "run_number",
    "max_num_seqs",
    // benchmark_serving.py (vLLM ≈ 0.6).
    "input_throughput",
    "best_of",
    "use_beam_search",
];

/// Statistics a result writes as 0.0 when no request completed: placeholders, not figures.
fn placeholder_when_none_completed(key: &str) -> bool {
    statistic(key).is_some()
        || matches!(
            key,
            "request_throughput"
                | "output_throughput"
                | "total_token_throughput"
                | "max_output_tokens_per_s"
                | "input_throughput"
                | "rtfx"
        )
}

/// The per-request columns, as read.
#[derive(Default)]
struct Columns {
    input_lens: Option<Vec<Option<f64>>>,
    output_lens: Option<Vec<Option<f64>>>,
    ttfts: Option<Vec<Option<f64>>>,
    itls: Option<Gaps>,
    latencies: Option<Vec<Option<f64>>>,
    start_times: Option<Vec<Option<f64>>>,
    queue_times: Option<Vec<Option<f64>>>,
    generated_texts: Option<Vec<Option<String>>>,
    errors: Option<Vec<Option<String>>>,
}

/// One result object: its columns and every other key verbatim.
struct Document {
    columns: Columns,
    header: BTreeMap<String, Value>,
}

/// Why element `index` of a column could not be read: a wrong value is named by its path; the
/// file's structure breaking (a missing comma, the end of the file: a truncation stays a
/// truncation) stays serde_json's own error.
fn element_error<E: de::Error>(column: &str, index: usize, expected: &str, err: E) -> E {
    let message = strip_location(&err.to_string());
    let found = match message.as_str() {
        // Already named by an inner column (`$.itls[3][1]: …`).
        m if m.starts_with("$.") => return err,
        m if m.starts_with("invalid type: ") || m.starts_with("invalid value: ") => message.clone(),
        "number out of range" | "invalid number" => message.clone(),
        "expected value" => "a character that cannot start a JSON value".to_owned(),
        _ => return err,
    };
    de::Error::custom(format!("$.{column}[{index}]: expected {expected}, {found}"))
}

/// A numeric column: numbers or `null` (Python's NaN after [`PyJsonReader`]).
struct NumberColumn<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for NumberColumn<'_> {
    type Value = Vec<Option<f64>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for NumberColumn<'_> {
    type Value = Vec<Option<f64>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an array of numbers at $.{}", self.0)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        loop {
            match seq.next_element::<Option<f64>>() {
                Ok(Some(v)) => out.push(v),
                Ok(None) => return Ok(out),
                Err(e) => return Err(element_error(self.0, out.len(), "a number", e)),
            }
        }
    }
}

/// A text column: strings or `null`.
struct TextColumn<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for TextColumn<'_> {
    type Value = Vec<Option<String>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for TextColumn<'_> {
    type Value = Vec<Option<String>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an array of strings at $.{}", self.0)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        loop {
            match seq.next_element::<Option<String>>() {
                Ok(Some(v)) => out.push(v),
                Ok(None) => return Ok(out),
                Err(e) => return Err(element_error(self.0, out.len(), "a string", e)),
            }
        }
    }
}

/// `itls`, flat: request *i*'s gaps are `values[ends[i - 1]..ends[i]]`, one allocation for the
/// whole column instead of one per request. NaN stands for `null` (JSON has no NaN, and
/// [`PyJsonReader`] turns Python's into `null`).
#[derive(Default)]
struct Gaps {
    values: Vec<f64>,
    ends: Vec<usize>,
}

impl Gaps {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: usize) -> &[f64] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.values[start..self.ends[i]]
    }
}

/// Element `index` of `itls` (an array of numbers), appended to the flat column.
struct GapsOf<'a> {
    values: &'a mut Vec<f64>,
    index: usize,
}

impl<'de> DeserializeSeed<'de> for GapsOf<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for GapsOf<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an array of numbers at $.itls[{}]", self.index)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let start = self.values.len();
        loop {
            match seq.next_element::<Option<f64>>() {
                Ok(Some(v)) => self.values.push(v.unwrap_or(f64::NAN)),
                Ok(None) => return Ok(()),
                Err(e) => {
                    let column = format!("itls[{}]", self.index);
                    return Err(element_error(
                        &column,
                        self.values.len() - start,
                        "a number",
                        e,
                    ));
                }
            }
        }
    }
}

/// `itls`: an array of arrays of numbers.
struct NestedColumn;

impl<'de> DeserializeSeed<'de> for NestedColumn {
    type Value = Gaps;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for NestedColumn {
    type Value = Gaps;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of arrays of numbers at $.itls")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Gaps::default();
        loop {
            let index = out.ends.len();
            let seed = GapsOf {
                values: &mut out.values,
                index,
            };
            // A `null` element reads as no gaps.
            match seq.next_element_seed(OptionalSeed(seed)) {
                Ok(Some(_)) => out.ends.push(out.values.len()),
                Ok(None) => return Ok(out),
                Err(e) => return Err(element_error("itls", index, "an array of numbers", e)),
            }
        }
    }
}

/// `null` or what the inner seed reads.
struct OptionalSeed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for OptionalSeed<S> {
    type Value = Option<S::Value>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for OptionalSeed<S> {
    type Value = Option<S::Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array or null")
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(d).map(Some)
    }
}

struct DocumentVisitor;

impl<'de> Visitor<'de> for DocumentVisitor {
    type Value = Document;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a vllm bench result object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document, A::Error> {
        let mut columns = Columns::default();
        let mut header = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            let duplicate = |present: bool| -> Result<(), A::Error> {
                if present {
                    Err(de::Error::custom(format!(
                        "$.{key}: expected each key once, `{key}` twice"
                    )))
                } else {
                    Ok(())
                }
            };
            macro_rules! column {
                ($field:ident, $seed:expr) => {{
                    duplicate(columns.$field.is_some())?;
                    columns.$field = map.next_value_seed(OptionalSeed($seed))?;
                }};
            }
            match key.as_str() {
                "input_lens" => column!(input_lens, NumberColumn("input_lens")),
                "output_lens" => column!(output_lens, NumberColumn("output_lens")),
                "ttfts" => column!(ttfts, NumberColumn("ttfts")),
                "latencies" => column!(latencies, NumberColumn("latencies")),
                "start_times" => column!(start_times, NumberColumn("start_times")),
                "queue_times" => column!(queue_times, NumberColumn("queue_times")),
                "itls" => column!(itls, NestedColumn),
                "generated_texts" => column!(generated_texts, TextColumn("generated_texts")),
                "errors" => column!(errors, TextColumn("errors")),
                _ => {
                    duplicate(header.contains_key(&key))?;
                    let value: Value = map.next_value()?;
                    header.insert(key, value);
                }
            }
        }
        Ok(Document { columns, header })
    }
}

impl<'de> de::Deserialize<'de> for Document {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Document, D::Error> {
        d.deserialize_map(DocumentVisitor)
    }
}

/// Reads one result, or every result of an `--append-result` file.
pub fn parse(source: &Source, reader: impl BufRead) -> Result<ParsedImport, ImportError> {
    let mut py = PyJsonReader::new(reader);
    let mut documents = Vec::new();
    {
        let buffered = std::io::BufReader::with_capacity(1 << 20, &mut py);
        // One result after another until only whitespace is left: a result cut off anywhere,
        // the first or a later one, is an error, never the quiet end of the file.
        let stream = serde_json::Deserializer::from_reader(buffered).into_iter::<Document>();
        for doc in stream {
            match doc {
                Ok(doc) => documents.push(doc),
                Err(e) => return Err(json_error(source, e, documents_path(documents.len()))),
            }
        }
    }
    if documents.is_empty() {
        return Err(source.at("$", None, "a vllm bench result object", "an empty file"));
    }
    let mut import = ParsedImport::new(ImportFormat::VllmBench);
    import.tool = Some("vllm bench serve".to_owned());
    import.warnings.extend(py.nan_warning());
    let many = documents.len() > 1;
    for (n, doc) in documents.into_iter().enumerate() {
        let run = to_run(
            source,
            doc,
            if many { Some(n) } else { None },
            &mut import.warnings,
        )?;
        import.runs.push(run);
    }
    Ok(import)
}

fn documents_path(n: usize) -> Option<String> {
    (n > 0).then(|| format!("result {} of the appended results", n + 1))
}

/// A serde_json error whose message may start with our own `$.path: ` prefix, or end with the
/// ` at $.path` of a column's `expecting`.
fn json_error(source: &Source, err: serde_json::Error, context: Option<String>) -> ImportError {
    let message = strip_location(&err.to_string());
    let located = |path: &str, expected: String, found: String| {
        let field = path.split(['[', '.']).next().unwrap_or(path).to_owned();
        let mut path = format!("$.{path}");
        if let Some(context) = &context {
            path = format!("{context}: {path}");
        }
        ImportError::Invalid(Box::new(super::InvalidInput {
            file: source.file.clone(),
            line: Some(err.line() as u64),
            column: Some(err.column() as u64),
            path: Some(path),
            field: Some(field),
            expected,
            found,
        }))
    };
    if err.is_data() {
        if let Some(rest) = message.strip_prefix("$.") {
            if let Some((path, detail)) = rest.split_once(": ") {
                let (expected, found) = split_ours(detail);
                return located(path, expected, found);
            }
        }
        // "invalid type: map, expected an array of numbers at $.latencies"
        if let Some((found, expected)) = message.split_once(", expected ") {
            if let Some((expected, path)) = expected.rsplit_once(" at $.") {
                let found = found
                    .trim_start_matches("invalid type: ")
                    .trim_start_matches("invalid value: ");
                return located(path, expected.to_owned(), plain_found(found));
            }
        }
    }
    source.json(err, context)
}

/// "expected a number, invalid type: string \"x\", expected f64" → ("a number", "string \"x\"").
fn split_ours(detail: &str) -> (String, String) {
    let detail = detail.strip_prefix("expected ").unwrap_or(detail);
    match detail.split_once(", ") {
        Some((expected, found)) => {
            let found = found
                .split(", expected ")
                .next()
                .unwrap_or(found)
                .trim_start_matches("invalid type: ")
                .trim_start_matches("invalid value: ");
            (expected.to_owned(), plain_found(found))
        }
        None => (
            "a value of the documented shape".to_owned(),
            detail.to_owned(),
        ),
    }
}

fn number(header: &BTreeMap<String, Value>, key: &str) -> Option<f64> {
    header.get(key).and_then(Value::as_f64)
}

/// `%Y%m%d-%H%M%S` → Unix ms, read as UTC.
fn parse_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 15 || b[8] != b'-' || !s.is_char_boundary(8) {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse().ok() };
    let (y, m, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (hh, mm, ss) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400) + hh * 3600 + mm * 60 + ss) * 1000)
}

/// Unit of a top-level number vLLM writes.
fn unit_of(key: &str) -> &'static str {
    match key {
        "duration" => "s",
        "completed" | "failed" | "num_prompts" | "max_concurrent_requests" | "max_concurrency" => {
            "requests"
        }
        "total_input_tokens" | "total_output_tokens" => "tokens",
        "request_throughput" | "request_goodput" | "request_rate" | "ramp_up_start_rps"
        | "ramp_up_end_rps" => "1/s",
        "output_throughput" | "total_token_throughput" | "max_output_tokens_per_s" => "tokens/s",
        _ if key.ends_with("_ms") => "ms",
        _ => "",
    }
}

/// `p99.9_ttft_ms` → (`ttft`, `p99.9`); `mean_e2el_ms` → (`e2el`, `mean`).
fn statistic(key: &str) -> Option<(String, String)> {
    let body = key.strip_suffix("_ms")?;
    let (stat, metric) = body.split_once('_')?;
    let known = matches!(stat, "mean" | "median" | "std")
        || (stat.len() > 1
            && stat.starts_with('p')
            && stat[1..].chars().all(|c| c.is_ascii_digit() || c == '.'));
    known.then(|| (metric.to_owned(), stat.to_owned()))
}

/// The per-request columns in the order they are checked for alignment.
pub(super) const COLUMN_NAMES: [&str; 9] = [
    "input_lens",
    "output_lens",
    "ttfts",
    "itls",
    "latencies",
    "start_times",
    "queue_times",
    "generated_texts",
    "errors",
];

impl Columns {
    /// `(column, entries)` of each column present, in [`COLUMN_NAMES`] order.
    fn lengths(&self) -> Vec<(&'static str, usize)> {
        [
            self.input_lens.as_ref().map(Vec::len),
            self.output_lens.as_ref().map(Vec::len),
            self.ttfts.as_ref().map(Vec::len),
            self.itls.as_ref().map(Gaps::len),
            self.latencies.as_ref().map(Vec::len),
            self.start_times.as_ref().map(Vec::len),
            self.queue_times.as_ref().map(Vec::len),
            self.generated_texts.as_ref().map(Vec::len),
            self.errors.as_ref().map(Vec::len),
        ]
        .into_iter()
        .zip(COLUMN_NAMES)
        .filter_map(|(n, k)| n.map(|n| (k, n)))
        .collect()
    }
}

/// The path of a key of result `position` (`None`: the file's only result).
fn path_at(position: Option<usize>, path: &str) -> String {
    match position {
        Some(n) => format!("result {}: $.{path}", n + 1),
        None => format!("$.{path}"),
    }
}

/// What a result's header and the lengths of its columns decide before any row is read: the run
/// (label, configuration, aggregates, clock), its number of rows and which columns it has.
pub(super) struct RunPlan {
    pub(super) run: ParsedRun,
    /// Rows to read; 0 for a run of aggregates only.
    pub(super) rows: usize,
    /// Present per-request columns.
    pub(super) present: Vec<&'static str>,
}

impl RunPlan {
    /// Whether rows are read: per-request timing on a clock, or unclocked timings.
    pub(super) fn reads_rows(&self) -> bool {
        self.run.granularity == Granularity::PerRequest
    }
}

/// Plans one result from its header (every key but the per-request columns) and the lengths of
/// the columns it holds (`lengths` in [`COLUMN_NAMES`] order).
pub(super) fn plan_run(
    source: &Source,
    mut header: BTreeMap<String, Value>,
    lengths: &[(&'static str, usize)],
    position: Option<usize>,
    warnings: &mut Vec<ImportWarning>,
) -> Result<RunPlan, ImportError> {
    let at = |path: &str| path_at(position, path);
    // The older key with a colon means the same thing.
    if let Some(old) = header.remove("request_goodput:") {
        if header.contains_key("request_goodput") {
            return Err(source.at(
                at("request_goodput:"),
                Some("request_goodput:"),
                "either `request_goodput` or the older `request_goodput:`, not both",
                "both",
            ));
        }
        header.insert("request_goodput".to_owned(), old);
        warnings.push(ImportWarning::new(
            at("request_goodput:"),
            "older `request_goodput:` key (benchmark_serving.py) read as `request_goodput`",
            0,
        ));
    }
    // `request_rate` is a number or the string "inf".
    match header.get("request_rate") {
        None | Some(Value::Null) | Some(Value::Number(_)) => {}
        Some(Value::String(s)) if s == "inf" => {}
        Some(other) => {
            return Err(source.at(
                at("request_rate"),
                Some("request_rate"),
                "a number or \"inf\"",
                other.to_string(),
            ))
        }
    }
    let mut aggregates = Vec::new();
    let none_completed = header.get("completed").and_then(Value::as_f64) == Some(0.0);
    let mut placeholders: Vec<&str> = Vec::new();
    for (key, value) in &header {
        let Some(v) = value.as_f64() else { continue };
        if !v.is_finite() {
            continue;
        }
        if none_completed && v == 0.0 && placeholder_when_none_completed(key) {
            placeholders.push(key);
            continue;
        }
        if let Some((metric, stat)) = statistic(key) {
            aggregates.push(Aggregate {
                name: metric,
                stat,
                value: v,
                unit: "ms".to_owned(),
            });
        } else if KNOWN_KEYS.contains(&key.as_str()) {
            aggregates.push(Aggregate {
                name: key.clone(),
                stat: "value".to_owned(),
                value: v,
                unit: unit_of(key).to_owned(),
            });
        }
    }
    if !placeholders.is_empty() {
        let failed = header.get("failed").and_then(Value::as_f64).unwrap_or(0.0);
        warnings.push(ImportWarning::new(
            at("completed"),
            format!(
                "no request completed ({failed} failed): the tool's 0.0 for {} statistic(s) over \
                 zero requests ({}) stored as absent, not as measurements",
                placeholders.len(),
                placeholders.join(", ")
            ),
            0,
        ));
    }
    let metadata: BTreeMap<String, Value> = header
        .iter()
        .filter(|(k, _)| !KNOWN_KEYS.contains(&k.as_str()) && statistic(k).is_none())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let rate = match header.get("request_rate") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "?".to_owned(),
    };
    let label = match header.get("label").and_then(Value::as_str) {
        Some(l) if !l.is_empty() => format!("vllm bench · {l}"),
        _ => format!("vllm bench serve · rate {rate}"),
    };
    let duration = number(&header, "duration");
    if let Some(d) = duration {
        super::check_duration(source, || at("duration"), d)?;
    }

    if let Some(&(first, n)) = lengths.first() {
        if let Some(&(other, m)) = lengths.iter().find(|(_, m)| *m != n) {
            return Err(source.at(
                at(other),
                Some(other),
                format!("{n} entries, index-aligned with `{first}`"),
                format!("{m} entries"),
            ));
        }
    }
    let n = lengths.first().map(|(_, n)| *n).unwrap_or(0);
    let present: Vec<&'static str> = lengths.iter().map(|(k, _)| *k).collect();
    let has = |column: &str| present.contains(&column);

    let mut config = Value::Object(header.into_iter().collect());
    if let Value::Object(map) = &mut config {
        map.insert(
            "kvgate_columns".to_owned(),
            Value::Array(
                present
                    .iter()
                    .map(|k| Value::String((*k).to_owned()))
                    .collect(),
            ),
        );
    }
    let wall_date = config
        .get("date")
        .and_then(Value::as_str)
        .and_then(parse_date);
    let mut run = ParsedRun::new(label, Granularity::PerRequest);
    run.planned = config.get("num_prompts").and_then(Value::as_i64);
    run.elapsed_ms = duration.map(|d| d * 1000.0);
    run.metadata = metadata;
    run.aggregates = aggregates;
    if let Some(date) = wall_date {
        // `date` is when the result was saved, in the benchmark machine's local time.
        run.wall_anchor_unix_ms = Some(date - duration.map(|d| (d * 1000.0) as i64).unwrap_or(0));
        warnings.push(ImportWarning::new(
            at("date"),
            "wall clock taken from `date` (the save time, time zone not recorded: read as UTC) minus `duration`",
            0,
        ));
    }

    let per_request = has("ttfts") || has("latencies");
    let unclocked = !has("start_times");
    if unclocked && !(per_request && n > 0) {
        run.granularity = Granularity::Aggregate;
        run.config = config;
        if n > 0 {
            warnings.push(ImportWarning::new(
                at("start_times"),
                format!(
                    "no `start_times`, `ttfts` or `latencies`: the {n} per-request values hold no timing, so no rows are stored; the tool's statistics are stored as aggregates"
                ),
                n as u64,
            ));
        }
        return Ok(RunPlan {
            run,
            rows: 0,
            present,
        });
    }
    if n > u32::MAX as usize {
        return Err(source.at(
            at("start_times"),
            None,
            "at most 4294967295 requests",
            n.to_string(),
        ));
    }
    if unclocked {
        // Per-request arrays without a clock (no `--save-detailed`, or benchmark_serving.py
        // before `start_times`): each row's timings are relative to its own send, so they
        // feed percentiles and pairs, but arrivals are unknown and goodput is not computed.
        run.clocked = false;
        warnings.push(ImportWarning::new(
            at("start_times"),
            format!(
                "no `start_times`: the {n} requests are stored unclocked (each timed from its own send, at 0 ms): they feed latency percentiles and pairs, never goodput, which needs arrival times"
            ),
            n as u64,
        ));
    }
    run.config = config;
    Ok(RunPlan {
        run,
        rows: n,
        present,
    })
}

/// The run clock's zero: the earliest send. Every send time must be a number.
pub(super) fn earliest_send(
    source: &Source,
    position: Option<usize>,
    start_times: impl IntoIterator<Item = Result<Option<f64>, ImportError>>,
) -> Result<f64, ImportError> {
    let mut zero = f64::INFINITY;
    for (i, s) in start_times.into_iter().enumerate() {
        match s? {
            Some(s) if s.is_finite() => zero = zero.min(s),
            _ => {
                return Err(source.at(
                    path_at(position, &format!("start_times[{i}]")),
                    Some("start_times"),
                    "a number (perf_counter seconds)",
                    "null or NaN",
                ))
            }
        }
    }
    Ok(zero)
}

/// One request's values, one from each column (absent where the column is).
#[derive(Default)]
pub(super) struct RowValues {
    pub(super) start: Option<f64>,
    pub(super) queue: Option<f64>,
    pub(super) ttft: Option<f64>,
    pub(super) latency: Option<f64>,
    pub(super) input_len: Option<f64>,
    pub(super) output_len: Option<f64>,
    pub(super) text: Option<String>,
    pub(super) error: Option<String>,
}

/// How each row of a planned run becomes a request record, counting what the run's warnings say.
pub(super) struct RowRules {
    source: Source,
    position: Option<usize>,
    zero: f64,
    has_ttfts: bool,
    has_latencies: bool,
    failed_placeholders: u64,
    absent_values: u64,
    failed: usize,
    rows: usize,
}

impl RowRules {
    pub(super) fn new(
        source: Source,
        position: Option<usize>,
        present: &[&str],
        zero: f64,
    ) -> RowRules {
        RowRules {
            source,
            position,
            zero,
            has_ttfts: present.contains(&"ttfts"),
            has_latencies: present.contains(&"latencies"),
            failed_placeholders: 0,
            absent_values: 0,
            failed: 0,
            rows: 0,
        }
    }

    /// Request `i`: its values and its inter-token gaps (NaN where the file has `null`).
    pub(super) fn row(
        &mut self,
        i: usize,
        v: RowValues,
        gaps: &[f64],
    ) -> Result<RequestRecord, ImportError> {
        let source = &self.source;
        let position = self.position;
        let at = |path: &str| path_at(position, path);
        let start_ms = (v.start.unwrap_or(self.zero) - self.zero) * 1000.0;
        let error = v.error;
        let ok = error.as_deref().is_none_or(str::is_empty);
        let text = v.text;
        let duration_ms = |name: &str, v: Option<f64>| -> Result<Option<f64>, ImportError> {
            match v {
                None => Ok(None),
                Some(v) if v.is_finite() && v >= 0.0 => Ok(Some(v * 1000.0)),
                Some(v) => Err(source.at(
                    at(&format!("{name}[{i}]")),
                    Some(name),
                    "a finite, non-negative number of seconds",
                    format!("{v}"),
                )),
            }
        };
        let queue = duration_ms("queue_times", v.queue)?;
        let ttft = duration_ms("ttfts", v.ttft)?;
        let latency = duration_ms("latencies", v.latency)?;
        let tokens = |name: &str, v: Option<f64>| -> Result<Option<u64>, ImportError> {
            match v {
                None => Ok(None),
                Some(v) if v >= 0.0 && v.fract() == 0.0 && v < 9.0e15 => Ok(Some(v as u64)),
                Some(v) => Err(source.at(
                    at(&format!("{name}[{i}]")),
                    Some(name),
                    "a non-negative whole number of tokens",
                    format!("{v}"),
                )),
            }
        };
        let prompt_tokens = tokens("input_lens", v.input_len)?;
        let output_tokens = tokens("output_lens", v.output_len)?;
        if let (Some(t), Some(l)) = (ttft, latency) {
            if ok && t > l {
                return Err(source.at(
                    at(&format!("ttfts[{i}]")),
                    Some("ttfts"),
                    format!(
                        "a time to first token ≤ the request's latency ({} s)",
                        l / 1000.0
                    ),
                    format!("{} s", t / 1000.0),
                ));
            }
        }
        self.rows += 1;
        let record = if ok {
            if (self.has_ttfts && ttft.is_none()) || (self.has_latencies && latency.is_none()) {
                self.absent_values += 1;
            }
            let first_token_ms = ttft.map(|t| start_ms + t);
            let mut chunk_times_ms = Vec::with_capacity(gaps.len() + 1);
            if let Some(first) = first_token_ms {
                chunk_times_ms.push(first);
                let mut at_ms = first;
                for (j, &gap) in gaps.iter().enumerate() {
                    if gap.is_finite() && gap >= 0.0 {
                        at_ms += gap * 1000.0;
                        chunk_times_ms.push(at_ms);
                    } else {
                        // NaN is a `null` (or Python's NaN) in the file.
                        let found = if gap.is_nan() {
                            "null or NaN".to_owned()
                        } else {
                            gap.to_string()
                        };
                        return Err(source.at(
                            at(&format!("itls[{i}][{j}]")),
                            Some("itls"),
                            "a finite, non-negative number of seconds",
                            found,
                        ));
                    }
                }
            }
            RequestRecord {
                index: i as u32,
                item_id: None,
                prompt_sha256: None,
                planned_arrival_ms: start_ms - queue.unwrap_or(0.0),
                dispatch_ms: Some(start_ms),
                client_delay_ms: queue,
                first_token_ms,
                chunk_times_ms,
                finish_ms: latency.map(|l| start_ms + l),
                status: RequestStatus::Ok,
                http_status: None,
                error: None,
                output_text: text.unwrap_or_default(),
                prompt_tokens,
                completion_tokens: output_tokens,
                cached_prompt_tokens: None,
                finish_reason: None,
                engine_timings: None,
            }
        } else {
            self.failed += 1;
            if ttft.is_some_and(|t| t == 0.0) || latency.is_some_and(|l| l == 0.0) {
                self.failed_placeholders += 1;
            }
            RequestRecord {
                index: i as u32,
                item_id: None,
                prompt_sha256: None,
                planned_arrival_ms: start_ms - queue.unwrap_or(0.0),
                dispatch_ms: Some(start_ms),
                client_delay_ms: queue,
                first_token_ms: None,
                chunk_times_ms: Vec::new(),
                finish_ms: None,
                status: RequestStatus::Error,
                http_status: None,
                error,
                output_text: text.unwrap_or_default(),
                prompt_tokens,
                completion_tokens: None,
                cached_prompt_tokens: None,
                finish_reason: None,
                engine_timings: None,
            }
        };
        Ok(record)
    }

    /// Failed requests so far.
    pub(super) fn failed(&self) -> usize {
        self.failed
    }

    /// The warnings of the run's rows, once all were read.
    pub(super) fn finish(
        self,
        present: &[&str],
        config: &Value,
        warnings: &mut Vec<ImportWarning>,
    ) {
        let at = |path: &str| path_at(self.position, path);
        let n = self.rows;
        if self.failed_placeholders > 0 {
            warnings.push(ImportWarning::new(
                at("errors"),
                format!("{} failed request(s): vLLM's 0 placeholders for their TTFT, latency and output length are not measurements and are stored absent", self.failed_placeholders),
                self.failed_placeholders,
            ));
        }
        if self.absent_values > 0 {
            warnings.push(ImportWarning::new(
                at("ttfts"),
                format!("{} successful request(s) without a TTFT or latency value (null/NaN): stored absent", self.absent_values),
                self.absent_values,
            ));
        }
        if !present.contains(&"latencies") {
            warnings.push(ImportWarning::new(
                at("latencies"),
                "no `latencies`: end-to-end latency and finish time absent (the last chunk's arrival \
                 is not the end of the response)",
                n as u64,
            ));
        }
        if !present.contains(&"queue_times") {
            warnings.push(ImportWarning::new(
                at("queue_times"),
                "no `queue_times`: planned arrival taken as the send time; client delay absent",
                n as u64,
            ));
        }
        let failed = self.failed;
        for (key, count) in [("completed", n - failed), ("failed", failed)] {
            if let Some(reported) = config.get(key).and_then(Value::as_u64) {
                if reported != count as u64 {
                    warnings.push(ImportWarning::new(
                        at(key),
                        format!("the file says {key} = {reported}; its per-request rows give {count}: the rows are stored as they are"),
                        0,
                    ));
                }
            }
        }
    }
}

fn to_run(
    source: &Source,
    doc: Document,
    position: Option<usize>,
    warnings: &mut Vec<ImportWarning>,
) -> Result<ParsedRun, ImportError> {
    let Document { columns, header } = doc;
    let mut plan = plan_run(source, header, &columns.lengths(), position, warnings)?;
    if !plan.reads_rows() {
        return Ok(plan.run);
    }
    let n = plan.rows;
    let zero = match &columns.start_times {
        Some(times) => earliest_send(source, position, times.iter().map(|t| Ok(*t)))?,
        None => 0.0,
    };
    let column = |c: &Option<Vec<Option<f64>>>, i: usize| c.as_ref().and_then(|v| v[i]);
    let mut rules = RowRules::new(source.clone(), position, &plan.present, zero);
    let mut requests = Vec::with_capacity(n);
    let mut texts = columns.generated_texts.map(Vec::into_iter);
    let mut errors = columns.errors.map(Vec::into_iter);
    for i in 0..n {
        let values = RowValues {
            // Unclocked rows are each timed from their own send, at 0.
            start: Some(column(&columns.start_times, i).unwrap_or(0.0)),
            queue: column(&columns.queue_times, i),
            ttft: column(&columns.ttfts, i),
            latency: column(&columns.latencies, i),
            input_len: column(&columns.input_lens, i),
            output_len: column(&columns.output_lens, i),
            text: texts.as_mut().and_then(Iterator::next).flatten(),
            error: errors.as_mut().and_then(Iterator::next).flatten(),
        };
        let gaps = columns.itls.as_ref().map_or(&[][..], |g| g.get(i));
        requests.push(rules.row(i, values, gaps)?);
    }
    rules.finish(&plan.present, &plan.run.config, warnings);
    plan.run.requests = requests;
    Ok(plan.run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<ParsedImport, ImportError> {
        parse(&Source::new("bench.json"), text.as_bytes())
    }

    const DETAILED: &str = r#"{
        "date": "20260115-103000", "endpoint_type": "openai-chat", "backend": "openai-chat",
        "label": null, "model_id": "m", "tokenizer_id": "m", "num_prompts": 3,
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": null,
        "manifest_sha256": "ab", "cell": "C1",
        "duration": 2.5, "completed": 2, "failed": 1,
        "total_input_tokens": 30, "total_output_tokens": 7,
        "request_throughput": 0.8, "request_goodput:": null, "output_throughput": 2.8,
        "mean_ttft_ms": 150.0, "p99.9_ttft_ms": 199.0, "median_tpot_ms": 10.0,
        "input_lens": [10, 10, 10], "output_lens": [4, 3, 0],
        "ttfts": [0.1, 0.2, 0.0], "itls": [[0.01, 0.02, 0.03], [0.01, 0.01], []],
        "latencies": [0.2, 0.3, 0.0], "start_times": [100.5, 100.0, 101.0],
        "generated_texts": ["a b c d", "x y z", ""], "errors": ["", "", "Traceback: boom"]
    }"#;

    #[test]
    fn detailed_result_becomes_request_records() {
        let import = parse_str(DETAILED).unwrap();
        assert_eq!(import.runs.len(), 1);
        let run = &import.runs[0];
        assert_eq!(run.granularity, Granularity::PerRequest);
        assert_eq!(run.planned, Some(3));
        assert_eq!(run.elapsed_ms, Some(2500.0));
        assert_eq!(
            run.metadata.get("manifest_sha256"),
            Some(&Value::String("ab".into()))
        );
        assert_eq!(run.metadata.get("cell"), Some(&Value::String("C1".into())));
        assert!(!run.metadata.contains_key("duration"));
        // 2026-01-15 10:30:00 UTC = 1768473000 s, minus the 2.5 s duration.
        assert_eq!(run.wall_anchor_unix_ms, Some(1_768_473_000_000 - 2500));
        let r0 = &run.requests[0];
        assert_eq!(r0.dispatch_ms, Some(500.0));
        assert_eq!(r0.first_token_ms, Some(600.0));
        let chunks: Vec<i64> = r0.chunk_times_ms.iter().map(|t| t.round() as i64).collect();
        assert_eq!(chunks, vec![600, 610, 630, 660]);
        assert_eq!(r0.finish_ms, Some(700.0));
        assert_eq!(r0.prompt_tokens, Some(10));
        assert_eq!(r0.completion_tokens, Some(4));
        assert_eq!(r0.output_text, "a b c d");
        let r1 = &run.requests[1];
        assert_eq!(r1.dispatch_ms, Some(0.0));
        let failed = &run.requests[2];
        assert_eq!(failed.status, RequestStatus::Error);
        assert_eq!(failed.error.as_deref(), Some("Traceback: boom"));
        assert_eq!(failed.first_token_ms, None);
        assert_eq!(failed.finish_ms, None);
        assert_eq!(failed.completion_tokens, None);
        assert_eq!(failed.prompt_tokens, Some(10));
        let stat = |name: &str, stat: &str| {
            run.aggregates
                .iter()
                .find(|a| a.name == name && a.stat == stat)
                .map(|a| (a.value, a.unit.clone()))
        };
        assert_eq!(stat("ttft", "p99.9"), Some((199.0, "ms".into())));
        assert_eq!(stat("tpot", "median"), Some((10.0, "ms".into())));
        assert_eq!(stat("duration", "value"), Some((2.5, "s".into())));
        assert_eq!(stat("request_goodput", "value"), None, "null stays absent");
        assert!(import
            .warnings
            .iter()
            .any(|w| w.message.contains("request_goodput:")));
        assert!(import
            .warnings
            .iter()
            .any(|w| w.message.contains("0 placeholders") && w.rows == 1));
    }

    #[test]
    fn statistics_over_zero_completed_requests_are_absent() {
        // Synthetic, after vLLM 0.25.1's all-failed result: every statistic written as 0.0.
        let text = r#"{"date": "20260818-041350", "request_rate": "inf", "num_prompts": 8, "duration": 0.005,
            "completed": 0, "failed": 8, "request_throughput": 0.0, "output_throughput": 0.0,
            "mean_ttft_ms": 0.0, "p99_itl_ms": 0.0, "max_concurrent_requests": 0, "run_number": 0, "max_num_seqs": 4}"#;
        let import = parse_str(text).unwrap();
        let run = &import.runs[0];
        let has = |n: &str, s: &str| run.aggregates.iter().any(|a| a.name == n && a.stat == s);
        assert!(!has("ttft", "mean") && !has("itl", "p99") && !has("request_throughput", "value"));
        assert!(has("failed", "value") && has("completed", "value") && has("duration", "value"));
        assert!(import.warnings.iter().any(|w| w.at == "$.completed"
            && w.message.contains("no request completed (8 failed)")
            && w.message.contains("4 statistic(s)")));
        // The sweep's own keys are configuration, not `--metadata`.
        assert!(run.metadata.is_empty(), "{:?}", run.metadata);
        assert!(has("max_num_seqs", "value"));
    }

    #[test]
    fn appended_results_are_separate_runs() {
        let text = format!(
            "{}\n{}\n",
            r#"{"request_rate": 1.5, "duration": 1.0, "completed": 1, "latencies": [0.5], "queue_times": [0.0]}"#,
            r#"{"request_rate": "inf", "duration": 2.0, "completed": 2, "request_goodput": 1.0}"#
        );
        let import = parse_str(&text).unwrap();
        assert_eq!(import.runs.len(), 2);
        // Latencies without send times: one unclocked row; no per-request arrays: aggregates.
        assert_eq!(import.runs[0].granularity, Granularity::PerRequest);
        assert!(!import.runs[0].clocked);
        assert_eq!(import.runs[0].requests[0].e2e_ms(), Some(500.0));
        assert_eq!(import.runs[1].granularity, Granularity::Aggregate);
        assert!(import.runs[1].clocked);
        assert!(import
            .warnings
            .iter()
            .any(|w| w.at == "result 1: $.start_times"
                && w.rows == 1
                && w.message.contains("unclocked")));
    }

    #[test]
    fn python_nan_reads_as_absent() {
        let import = parse_str(
            r#"{"std_itl_ms": NaN, "start_times": [1.0], "ttfts": [NaN], "latencies": [0.5], "errors": [""]}"#,
        )
        .unwrap();
        let run = &import.runs[0];
        assert!(run.aggregates.iter().all(|a| a.name != "itl"));
        assert_eq!(run.requests[0].first_token_ms, None);
        assert_eq!(run.requests[0].finish_ms, Some(500.0));
        assert!(import.warnings.iter().any(|w| w.message.contains("2 NaN")));
    }

    fn error_of(text: &str) -> String {
        parse_str(text).unwrap_err().to_string()
    }

    #[test]
    fn malformed_results_name_where_and_what() {
        assert_eq!(
            error_of(r#"{"start_times": [1.0, 2.0], "ttfts": [0.1]}"#),
            "bench.json, $.start_times, field `start_times`: expected 1 entries, index-aligned with `ttfts`, found 2 entries"
        );
        assert_eq!(
            error_of(r#"{"start_times": [1.0], "latencies": [-0.5]}"#),
            "bench.json, $.latencies[0], field `latencies`: expected a finite, non-negative number of seconds, found -0.5"
        );
        assert_eq!(
            error_of(r#"{"ttfts": [0.1, "fast"]}"#),
            "bench.json, line 1, column 23, $.ttfts[1], field `ttfts`: expected a number, found string \"fast\""
        );
        assert_eq!(
            error_of(r#"{"request_rate": true}"#),
            "bench.json, $.request_rate, field `request_rate`: expected a number or \"inf\", found true"
        );
        assert!(error_of(r#"{"start_times": [1.0, 2.0"#).contains("truncated"));
        assert_eq!(
            error_of(""),
            "bench.json, $: expected a vllm bench result object, found an empty file"
        );
        assert!(error_of("{\"completed\": 1}\n{\"completed\": 1, \"dur")
            .contains("result 2 of the appended results: expected the rest of the JSON document"));
        assert_eq!(
            error_of(r#"{"ttfts": [1], "ttfts": [2]}"#),
            "bench.json, line 1, column 23, $.ttfts, field `ttfts`: expected each key once, found `ttfts` twice"
        );
        assert_eq!(
            error_of("{\"ttfts\": [0.1, \0\0\0"),
            "bench.json, line 1, column 17, $.ttfts[1], field `ttfts`: expected a number, found a character that cannot start a JSON value"
        );
        assert_eq!(
            error_of("{\"ttfts\": [0.1 0.2]}"),
            "bench.json, line 1, column 16: expected `,` or `]`, found another character"
        );
        assert_eq!(
            error_of(r#"{"latencies": {"0": 0.5}}"#),
            "bench.json, line 1, column 15, $.latencies, field `latencies`: expected an array of numbers, found an object"
        );
        assert_eq!(
            error_of(r#"{"start_times": [1.0], "ttfts": [0.9], "latencies": [0.5], "errors": [""]}"#),
            "bench.json, $.ttfts[0], field `ttfts`: expected a time to first token ≤ the request's latency (0.5 s), found 0.9 s"
        );
        assert_eq!(
            error_of("[1, 2]"),
            "bench.json, line 1, column 1: expected a vllm bench result object, found an array"
        );
    }

    #[test]
    fn dates_read_as_utc() {
        assert_eq!(parse_date("19700101-000000"), Some(0));
        assert_eq!(parse_date("20000301-000001"), Some(951_868_801_000));
        assert_eq!(parse_date("2000-03-01"), None);
        assert_eq!(parse_date("20001301-000000"), None);
    }

    #[test]
    fn statistic_keys_split() {
        assert_eq!(
            statistic("p99.9_ttft_ms"),
            Some(("ttft".into(), "p99.9".into()))
        );
        assert_eq!(
            statistic("mean_e2el_including_client_queue_ms"),
            Some(("e2el_including_client_queue".into(), "mean".into()))
        );
        assert_eq!(statistic("total_ms"), None);
    }
}
