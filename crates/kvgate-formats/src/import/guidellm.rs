//! GuideLLM reports (`guidellm benchmark … --output-path report.json`, `metadata.version` 1 or 2):
//! one run per `benchmarks[]` entry, one row per request the report kept
//! (`requests.successful` → ok, `requests.incomplete` → unfinished, `requests.errored` → error),
//! and every statistic of `metrics` and `scheduler_metrics` as an aggregate.
//!
//! The report is read as a stream: each request row is parsed and checked as it arrives, so a
//! report with a hundred thousand rows never sits in memory as one JSON tree. GuideLLM times are
//! Unix seconds (floats); each run's clock zero is its earliest planned (`targeted_start`) or
//! actual (`request_start`) request start.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{BufRead, BufReader};

use kvgate_core::run::{RequestRecord, RequestStatus};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use serde_json::{Map, Value};

use super::pyjson::PyJsonReader;
use super::{
    Aggregate, Granularity, ImportError, ImportFormat, ImportWarning, ParsedImport, ParsedRun,
    Source, StrictValue,
};

/// The report schema versions whose request rows carry `info.timings` (GuideLLM 0.4 and later).
const VERSIONS: [u64; 2] = [1, 2];

/// Above this a "Unix time in seconds" is really milliseconds or nanoseconds (year 5138).
const MAX_UNIX_SECONDS: f64 = 1e11;

/// Keys of a GuideLLM `DistributionSummary` that are statistics of the metric they sit under.
const DISTRIBUTION_STATS: [&str; 9] = [
    "mean",
    "median",
    "mode",
    "variance",
    "std_dev",
    "min",
    "max",
    "count",
    "total_sum",
];

pub fn parse(source: &Source, reader: impl BufRead) -> Result<ParsedImport, ImportError> {
    let walk = Walk::new(source);
    let mut py = PyJsonReader::new(reader);
    let read = {
        let mut de = serde_json::Deserializer::from_reader(BufReader::new(&mut py));
        ReportSeed { walk: &walk }
            .deserialize(&mut de)
            .and_then(|report| de.end().map(|()| report))
    };
    let report = match read {
        Ok(report) => report,
        Err(err) => {
            if let Some(failure) = walk.failure.borrow_mut().take() {
                return Err(failure);
            }
            if err.is_eof() && !py.saw_content() {
                return Err(source.at("$", None, "a GuideLLM report object", "an empty file"));
            }
            return Err(source.json(err, Some(walk.path())));
        }
    };

    let Some(metadata) = report.header.get("metadata") else {
        return Err(source.at(
            "$.metadata",
            Some("metadata"),
            "a GuideLLM report with `metadata.version` 1 or 2",
            "no `metadata` (a report written before GuideLLM 0.4?)",
        ));
    };
    if report.benchmarks.is_empty() {
        return Err(source.at(
            "$.benchmarks",
            Some("benchmarks"),
            "at least one benchmark",
            "none",
        ));
    }

    let mut import = ParsedImport::new(ImportFormat::Guidellm);
    import.tool = Some(
        match metadata.get("guidellm_version").and_then(Value::as_str) {
            Some(version) => format!("guidellm {version}"),
            None => "guidellm".to_owned(),
        },
    );
    import.warnings.extend(py.nan_warning());
    for benchmark in report.benchmarks {
        let run = build_run(source, &report.header, benchmark, &mut import.warnings)?;
        import.runs.push(run);
    }
    Ok(import)
}

/// Where the stream is, and what a visitor found wrong: serde's own errors cannot carry an
/// [`ImportError`], so a visitor parks it here and aborts with a placeholder.
struct Walk<'a> {
    source: &'a Source,
    path: RefCell<Vec<Segment>>,
    failure: RefCell<Option<ImportError>>,
    /// request_id → JSON path of the row that first used it, within one benchmark.
    seen_ids: RefCell<HashMap<String, String>>,
}

enum Segment {
    Key(String),
    Index(usize),
}

impl<'a> Walk<'a> {
    fn new(source: &'a Source) -> Walk<'a> {
        Walk {
            source,
            path: RefCell::new(Vec::new()),
            failure: RefCell::new(None),
            seen_ids: RefCell::new(HashMap::new()),
        }
    }

    fn push_key(&self, key: &str) {
        self.path.borrow_mut().push(Segment::Key(key.to_owned()));
    }

    fn push_index(&self, index: usize) {
        self.path.borrow_mut().push(Segment::Index(index));
    }

    fn pop(&self) {
        self.path.borrow_mut().pop();
    }

    fn path(&self) -> String {
        let mut out = String::from("$");
        for segment in self.path.borrow().iter() {
            match segment {
                Segment::Key(key) => push_key(&mut out, key),
                Segment::Index(index) => out.push_str(&format!("[{index}]")),
            }
        }
        out
    }

    fn fail<E: de::Error>(&self, err: ImportError) -> E {
        *self.failure.borrow_mut() = Some(err);
        E::custom("kvgate: the report breaks its format")
    }
}

/// Refuses a key seen before in the same object (the walk's path ends at it): serde_json would
/// keep the last value, and two `benchmarks` or `requests` lists would be read as one.
fn once<E: de::Error>(walk: &Walk, seen: &mut HashSet<String>, key: &str) -> Result<(), E> {
    if seen.insert(key.to_owned()) {
        return Ok(());
    }
    Err(walk.fail(walk.source.at(
        walk.path(),
        Some(key),
        "each key once",
        format!("`{key}` twice"),
    )))
}

/// Appends `.key`, or `["key"]` when the key is not a plain identifier.
fn push_key(out: &mut String, key: &str) {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        out.push('.');
        out.push_str(key);
    } else {
        out.push('[');
        out.push_str(&serde_json::to_string(key).unwrap_or_default());
        out.push(']');
    }
}

/// A JSON value as an error message shows it: short, never the whole subtree.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => {
            let short: String = s.chars().take(60).collect();
            let quoted = serde_json::to_string(&short).unwrap_or_default();
            if short.len() < s.len() {
                format!("{quoted}…")
            } else {
                quoted
            }
        }
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

fn describe_opt(value: Option<&Value>) -> String {
    value.map_or_else(|| "no value".to_owned(), describe)
}

struct RawReport {
    /// Everything but `benchmarks`: `metadata`, `args` or `config`, verbatim.
    header: Map<String, Value>,
    benchmarks: Vec<RawBenchmark>,
}

struct RawBenchmark {
    /// JSON path of this benchmark, `$.benchmarks[0]`.
    at: String,
    /// Everything but `requests`, verbatim.
    header: Map<String, Value>,
    rows: Vec<Row>,
}

#[derive(Clone, Copy)]
struct ReportSeed<'w, 'a> {
    walk: &'w Walk<'a>,
}

impl<'de> DeserializeSeed<'de> for ReportSeed<'_, '_> {
    type Value = RawReport;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RawReport, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ReportSeed<'_, '_> {
    type Value = RawReport;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a GuideLLM report object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawReport, A::Error> {
        let mut header = Map::new();
        let mut benchmarks = Vec::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            self.walk.push_key(&key);
            once(self.walk, &mut seen, &key)?;
            if key == "benchmarks" {
                benchmarks.extend(map.next_value_seed(BenchmarksSeed { walk: self.walk })?);
            } else {
                let StrictValue(value) = map.next_value()?;
                if key == "metadata" {
                    check_metadata(self.walk.source, &value).map_err(|e| self.walk.fail(e))?;
                }
                header.insert(key, value);
            }
            self.walk.pop();
        }
        Ok(RawReport { header, benchmarks })
    }
}

fn check_metadata(source: &Source, metadata: &Value) -> Result<(), ImportError> {
    let Value::Object(metadata) = metadata else {
        return Err(source.at(
            "$.metadata",
            Some("metadata"),
            "an object with `version`",
            describe(metadata),
        ));
    };
    let version = metadata.get("version");
    match version.and_then(Value::as_u64) {
        Some(v) if VERSIONS.contains(&v) => Ok(()),
        _ => Err(source.at(
            "$.metadata.version",
            Some("version"),
            "1 or 2 (GuideLLM report schema from 0.4 on)",
            describe_opt(version),
        )),
    }
}

#[derive(Clone, Copy)]
struct BenchmarksSeed<'w, 'a> {
    walk: &'w Walk<'a>,
}

impl<'de> DeserializeSeed<'de> for BenchmarksSeed<'_, '_> {
    type Value = Vec<RawBenchmark>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for BenchmarksSeed<'_, '_> {
    type Value = Vec<RawBenchmark>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of benchmarks")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        loop {
            self.walk.push_index(out.len());
            self.walk.seen_ids.borrow_mut().clear();
            let Some(benchmark) = seq.next_element_seed(BenchmarkSeed { walk: self.walk })? else {
                self.walk.pop();
                break;
            };
            self.walk.pop();
            out.push(benchmark);
        }
        Ok(out)
    }
}

#[derive(Clone, Copy)]
struct BenchmarkSeed<'w, 'a> {
    walk: &'w Walk<'a>,
}

impl<'de> DeserializeSeed<'de> for BenchmarkSeed<'_, '_> {
    type Value = RawBenchmark;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RawBenchmark, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for BenchmarkSeed<'_, '_> {
    type Value = RawBenchmark;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a benchmark object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawBenchmark, A::Error> {
        let at = self.walk.path();
        let mut header = Map::new();
        let mut rows = Vec::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            self.walk.push_key(&key);
            once(self.walk, &mut seen, &key)?;
            if key == "requests" {
                rows.extend(map.next_value_seed(RequestsSeed { walk: self.walk })?);
            } else {
                let StrictValue(value) = map.next_value()?;
                header.insert(key, value);
            }
            self.walk.pop();
        }
        Ok(RawBenchmark { at, header, rows })
    }
}

#[derive(Clone, Copy)]
struct RequestsSeed<'w, 'a> {
    walk: &'w Walk<'a>,
}

impl<'de> DeserializeSeed<'de> for RequestsSeed<'_, '_> {
    type Value = Vec<Row>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Row>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RequestsSeed<'_, '_> {
    type Value = Vec<Row>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("request lists by status (successful, incomplete, errored)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<Row>, A::Error> {
        let mut rows = Vec::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            self.walk.push_key(&key);
            once(self.walk, &mut seen, &key)?;
            let kind = match key.as_str() {
                "successful" => Some(Kind::Successful),
                "incomplete" => Some(Kind::Incomplete),
                "errored" => Some(Kind::Errored),
                // `total` is null in reports (the three lists are the rows).
                _ => None,
            };
            match kind {
                Some(kind) => rows.extend(map.next_value_seed(RowsSeed {
                    walk: self.walk,
                    kind,
                })?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            self.walk.pop();
        }
        Ok(rows)
    }
}

#[derive(Clone, Copy)]
struct RowsSeed<'w, 'a> {
    walk: &'w Walk<'a>,
    kind: Kind,
}

impl<'de> DeserializeSeed<'de> for RowsSeed<'_, '_> {
    type Value = Vec<Row>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Row>, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for RowsSeed<'_, '_> {
    type Value = Vec<Row>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of request rows")
    }

    fn visit_none<E: de::Error>(self) -> Result<Vec<Row>, E> {
        Ok(Vec::new())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vec<Row>, E> {
        Ok(Vec::new())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Row>, D::Error> {
        deserializer.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Row>, A::Error> {
        let mut rows = Vec::new();
        loop {
            self.walk.push_index(rows.len());
            let Some(StrictValue(value)) = seq.next_element()? else {
                self.walk.pop();
                break;
            };
            let row = Row::read(self.walk, self.kind, &value).map_err(|e| self.walk.fail(e))?;
            self.walk.pop();
            rows.push(row);
        }
        Ok(rows)
    }
}

/// Which list of `requests` a row came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Successful,
    Incomplete,
    Errored,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Successful => "successful",
            Kind::Incomplete => "incomplete",
            Kind::Errored => "errored",
        }
    }
}

/// One request row, checked, with its times still in Unix seconds.
#[derive(Debug)]
struct Row {
    kind: Kind,
    /// `targeted_start`: when the schedule wanted it sent.
    targeted: Option<f64>,
    /// `request_start` (else `resolve_start`): when it was actually sent.
    dispatch: Option<f64>,
    /// `scheduled_at` or `queued`: the only time of a request that was never sent or targeted.
    fallback: Option<f64>,
    first_token: Option<f64>,
    /// `request_end` (else `resolve_end`).
    end: Option<f64>,
    output: Option<String>,
    error: Option<String>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

impl Row {
    fn planned(&self) -> f64 {
        self.targeted
            .or(self.dispatch)
            .or(self.fallback)
            .unwrap_or(0.0)
    }

    /// Checks one row in place: types, ranges, order of its timings, uniqueness of its id.
    fn read(walk: &Walk, kind: Kind, value: &Value) -> Result<Row, ImportError> {
        let source = walk.source;
        let at = walk.path();
        let Value::Object(row) = value else {
            return Err(source.at(at, None, "a request object", describe(value)));
        };

        let info = match row.get("info") {
            Some(Value::Object(info)) => info,
            other => {
                return Err(source.at(
                    format!("{at}.info"),
                    Some("info"),
                    "an object with the request's status and timings",
                    describe_opt(other),
                ))
            }
        };
        let empty = Map::new();
        let timings = match info.get("timings") {
            Some(Value::Object(timings)) => timings,
            None | Some(Value::Null) => &empty,
            Some(other) => {
                return Err(source.at(
                    format!("{at}.info.timings"),
                    Some("timings"),
                    "an object of Unix times",
                    describe(other),
                ))
            }
        };
        let timing_at = format!("{at}.info.timings");
        let time = |keys: &[&'static str]| -> Result<Option<(&'static str, f64)>, ImportError> {
            for &key in keys {
                if let Some(t) = unix_time(source, &timing_at, timings, key)? {
                    return Ok(Some((key, t)));
                }
            }
            Ok(None)
        };
        let targeted = time(&["targeted_start"])?;
        let dispatch = time(&["request_start", "resolve_start"])?;
        let fallback = time(&["scheduled_at", "queued"])?;
        let first_token = time(&["first_token_iteration", "first_token", "first_token_time"])?;
        let end = time(&["request_end", "resolve_end"])?;

        if kind == Kind::Successful {
            if dispatch.is_none() {
                return Err(missing_time(source, &timing_at, timings, "request_start"));
            }
            if end.is_none() {
                return Err(missing_time(source, &timing_at, timings, "request_end"));
            }
        }
        if targeted.is_none() && dispatch.is_none() && fallback.is_none() {
            return Err(source.at(
                timing_at,
                Some("targeted_start"),
                "at least one of targeted_start, request_start, resolve_start, scheduled_at, queued",
                "none of them",
            ));
        }
        if let (Some((dk, d)), Some((fk, f))) = (dispatch, first_token) {
            if f < d {
                return Err(source.at(
                    format!("{timing_at}.{fk}"),
                    Some(fk),
                    format!("a time ≥ {dk} ({d})"),
                    format!("{f}: a negative time to first token ({} ms)", ms(f - d)),
                ));
            }
        }
        if let (Some((dk, d)), Some((ek, e))) = (dispatch, end) {
            if e < d {
                return Err(source.at(
                    format!("{timing_at}.{ek}"),
                    Some(ek),
                    format!("a time ≥ {dk} ({d})"),
                    format!(
                        "{e}: the request would end {} ms before it started",
                        ms(d - e)
                    ),
                ));
            }
        }
        if let (Some((fk, f)), Some((ek, e))) = (first_token, end) {
            if e < f {
                return Err(source.at(
                    format!("{timing_at}.{ek}"),
                    Some(ek),
                    format!("a time ≥ {fk} ({f})"),
                    format!("{e}: the request would end before its first token"),
                ));
            }
        }

        let request_id = match row.get("request_id").or_else(|| info.get("request_id")) {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(id.clone()),
            Some(Value::Number(id)) => Some(id.to_string()),
            Some(other) => {
                return Err(source.at(
                    format!("{at}.request_id"),
                    Some("request_id"),
                    "a string",
                    describe(other),
                ))
            }
        };
        if let Some(id) = request_id {
            let mut seen = walk.seen_ids.borrow_mut();
            if let Some(first) = seen.get(&id) {
                return Err(source.at(
                    format!("{at}.request_id"),
                    Some("request_id"),
                    "a request_id unique within its benchmark",
                    format!("{}, already used at {first}", describe(&Value::String(id))),
                ));
            }
            seen.insert(id, at.clone());
        }

        let output = match row.get("output") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(other) => {
                return Err(source.at(
                    format!("{at}.output"),
                    Some("output"),
                    "the generated text (a string) or null",
                    describe(other),
                ))
            }
        };
        let error = match info.get("error") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(other) => {
                return Err(source.at(
                    format!("{at}.info.error"),
                    Some("error"),
                    "an error message (a string) or null",
                    describe(other),
                ))
            }
        };

        let prompt_tokens = first_count(
            source,
            &at,
            row,
            &[
                &["prompt_tokens"],
                &["input_metrics", "total_tokens"],
                &["input_metrics", "text_tokens"],
            ],
        )?;
        let completion_tokens = first_count(
            source,
            &at,
            row,
            &[
                &["output_metrics", "total_tokens"],
                &["output_metrics", "text_tokens"],
                &["output_tokens"],
            ],
        )?;

        Ok(Row {
            kind,
            targeted: targeted.map(|(_, t)| t),
            dispatch: dispatch.map(|(_, t)| t),
            fallback: fallback.map(|(_, t)| t),
            first_token: first_token.map(|(_, t)| t),
            end: end.map(|(_, t)| t),
            output,
            error,
            prompt_tokens,
            completion_tokens,
        })
    }
}

/// Milliseconds, rounded to the microsecond, for messages.
fn ms(seconds: f64) -> f64 {
    (seconds * 1e6).round() / 1e3
}

fn unix_time(
    source: &Source,
    at: &str,
    timings: &Map<String, Value>,
    key: &str,
) -> Result<Option<f64>, ImportError> {
    match timings.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            let t = n.as_f64().unwrap_or(f64::NAN);
            if t.is_finite() && (0.0..=MAX_UNIX_SECONDS).contains(&t) {
                Ok(Some(t))
            } else {
                Err(source.at(
                    format!("{at}.{key}"),
                    Some(key),
                    "a Unix time in seconds, between 0 and 1e11",
                    n.to_string(),
                ))
            }
        }
        Some(other) => Err(source.at(
            format!("{at}.{key}"),
            Some(key),
            "a Unix time in seconds (a number) or null",
            describe(other),
        )),
    }
}

fn missing_time(source: &Source, at: &str, timings: &Map<String, Value>, key: &str) -> ImportError {
    source.at(
        format!("{at}.{key}"),
        Some(key),
        "a Unix time in seconds: a successful request was sent and ended (NaN reads as null)",
        describe_opt(timings.get(key)),
    )
}

/// The first present token count among `paths` (each a key path inside the row).
fn first_count(
    source: &Source,
    at: &str,
    row: &Map<String, Value>,
    paths: &[&[&str]],
) -> Result<Option<u64>, ImportError> {
    for path in paths {
        let mut value: Option<&Value> = None;
        let mut object = Some(row);
        for key in path.iter() {
            value = object.and_then(|o| o.get(*key));
            object = value.and_then(Value::as_object);
        }
        let Some(value) = value else { continue };
        let field = path.last().copied().unwrap_or_default();
        let here = || format!("{at}.{}", path.join("."));
        match value {
            Value::Null => continue,
            Value::Number(n) => {
                if let Some(count) = n.as_u64() {
                    return Ok(Some(count));
                }
                let x = n.as_f64().unwrap_or(f64::NAN);
                if x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x < 9.0e15 {
                    return Ok(Some(x as u64));
                }
                return Err(source.at(
                    here(),
                    Some(field),
                    "a non-negative whole number of tokens",
                    n.to_string(),
                ));
            }
            other => {
                return Err(source.at(
                    here(),
                    Some(field),
                    "a number of tokens or null",
                    describe(other),
                ))
            }
        }
    }
    Ok(None)
}

fn build_run(
    source: &Source,
    report_header: &Map<String, Value>,
    benchmark: RawBenchmark,
    warnings: &mut Vec<ImportWarning>,
) -> Result<ParsedRun, ImportError> {
    let RawBenchmark {
        at,
        mut header,
        mut rows,
    } = benchmark;
    let mut run = ParsedRun::new(
        format!("guidellm · {}", strategy_label(header.get("config"))),
        Granularity::PerRequest,
    );

    // Aggregates: every statistic GuideLLM computed, as it computed it.
    for (key, value) in &header {
        match (key.as_str(), value) {
            ("metrics", _) => flatten(key, value, &metric_unit, &mut run.aggregates),
            ("scheduler_metrics", _) => flatten(key, value, &scheduler_unit, &mut run.aggregates),
            ("scheduler_state", Value::Object(state)) => {
                for (k, v) in state {
                    if let Some(x) = v.as_f64() {
                        run.aggregates.push(Aggregate {
                            name: format!("scheduler_state.{k}"),
                            stat: "value".to_owned(),
                            value: x,
                            unit: scheduler_unit(k).to_owned(),
                        });
                    }
                }
            }
            (_, Value::Number(n)) => {
                if let Some(x) = n.as_f64() {
                    let unit = if key.ends_with("time") || key.ends_with("duration") {
                        "s"
                    } else {
                        ""
                    };
                    run.aggregates.push(Aggregate {
                        name: key.clone(),
                        stat: "value".to_owned(),
                        value: x,
                        unit: unit.to_owned(),
                    });
                }
            }
            _ => {}
        }
    }

    let duration = header.get("duration").and_then(Value::as_f64).or_else(|| {
        let metrics = header.get("scheduler_metrics")?;
        Some(
            metrics.get("measure_end_time")?.as_f64()?
                - metrics.get("measure_start_time")?.as_f64()?,
        )
    });
    if let Some(duration) = duration {
        let duration = super::check_duration(source, || format!("{at}.duration"), duration)?;
        run.elapsed_ms = Some(duration * 1000.0);
    }

    // GuideLLM keeps its warm-up and cool-down requests among the rows but measures only
    // the requests that overlap `[measure_start_time, measure_end_time]` (both inclusive):
    // the others are stored as warm-up rows, outside every count.
    let window = header.get("scheduler_metrics").and_then(|m| {
        Some((
            m.get("measure_start_time")?.as_f64()?,
            m.get("measure_end_time")?.as_f64()?,
        ))
    });
    let measured = |r: &Row| match window {
        None => true,
        Some((from, to)) => {
            let start = r.dispatch.unwrap_or_else(|| r.planned());
            let end = r.end.unwrap_or(start);
            end >= from && start <= to
        }
    };
    let outside: Vec<&Row> = rows.iter().filter(|r| !measured(r)).collect();
    if let (false, Some((from, to))) = (outside.is_empty(), window) {
        let before = outside
            .iter()
            .filter(|r| r.end.unwrap_or_else(|| r.planned()) < from)
            .count();
        warnings.push(ImportWarning::new(
            format!("{at}.requests"),
            format!(
                "{} row(s) fall outside the measured window (scheduler_metrics.measure_start_time \
                 {from} to measure_end_time {to}): {before} warm-up, {} cool-down; kept as \
                 warm-up rows, not measured, as GuideLLM's own metrics leave them out",
                outside.len(),
                outside.len() - before,
            ),
            outside.len() as u64,
        ));
    }
    let measured_rows: Vec<&Row> = rows.iter().filter(|r| measured(r)).collect();
    sample_warnings(&at, &header, &measured_rows, warnings);
    let silent = rows
        .iter()
        .filter(|r| r.kind == Kind::Successful && r.output.is_none())
        .count();
    if silent > 0 {
        warnings.push(ImportWarning::new(
            format!("{at}.requests.successful"),
            format!(
                "{silent} successful request(s) carry no `output` text: their content cannot be \
                 validated"
            ),
            silent as u64,
        ));
    }

    // The run clock: zero at the earliest planned or actual start.
    let zero = rows
        .iter()
        .map(|r| r.planned().min(r.dispatch.unwrap_or(f64::INFINITY)))
        .fold(None, |acc: Option<f64>, t| {
            Some(acc.map_or(t, |a| a.min(t)))
        });
    if let Some(zero) = zero {
        run.wall_anchor_unix_ms = Some((zero * 1000.0).floor() as i64);
        rows.sort_by(|a, b| {
            a.planned().total_cmp(&b.planned()).then(
                a.dispatch
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&b.dispatch.unwrap_or(f64::INFINITY)),
            )
        });
        for (index, row) in rows.into_iter().enumerate() {
            let unmeasured = !measured(&row);
            let index = u32::try_from(index).map_err(|_| {
                source.at(
                    format!("{at}.requests"),
                    Some("requests"),
                    "at most 4294967295 requests in one benchmark",
                    "more",
                )
            })?;
            if unmeasured {
                run.unmeasured.push(index);
            }
            run.requests.push(record(index, zero, row));
        }
    }

    // The tool's configuration and header, verbatim: metrics are the aggregates above, the
    // request rows are the records.
    header.remove("metrics");
    let mut config = report_header.clone();
    config.insert("benchmark".to_owned(), Value::Object(header));
    run.config = Value::Object(config);
    Ok(run)
}

fn record(index: u32, zero: f64, row: Row) -> RequestRecord {
    let clock = |t: f64| (t - zero) * 1000.0;
    let planned = clock(row.planned());
    let dispatch = row.dispatch.map(clock);
    let (status, finish, error) = match row.kind {
        Kind::Successful => (RequestStatus::Ok, row.end.map(clock), row.error),
        Kind::Errored => (RequestStatus::Error, row.end.map(clock), row.error),
        // Never sent: GuideLLM stopped before dispatching it.
        Kind::Incomplete if dispatch.is_none() => (
            RequestStatus::Rejected,
            None,
            Some(
                row.error
                    .unwrap_or_else(|| "never sent: the benchmark ended first".to_owned()),
            ),
        ),
        Kind::Incomplete => (RequestStatus::Unfinished, None, row.error),
    };
    RequestRecord {
        index,
        item_id: None,
        prompt_sha256: None,
        planned_arrival_ms: planned,
        dispatch_ms: dispatch,
        // Only a real target makes a delay: without one it was not measured.
        client_delay_ms: match (row.targeted, dispatch) {
            (Some(_), Some(d)) => Some(d - planned),
            _ => None,
        },
        first_token_ms: row.first_token.map(clock),
        chunk_times_ms: Vec::new(),
        finish_ms: finish,
        status,
        http_status: None,
        error,
        output_text: row.output.unwrap_or_default(),
        prompt_tokens: row.prompt_tokens,
        completion_tokens: row.completion_tokens,
        cached_prompt_tokens: None,
        finish_reason: None,
        engine_timings: None,
    }
}

/// GuideLLM keeps a sample of the rows (`sample_requests`) and leaves warm-up and cool-down
/// requests out of them; the counts in `metrics.request_totals` cover every request.
fn sample_warnings(
    at: &str,
    header: &Map<String, Value>,
    rows: &[&Row],
    warnings: &mut Vec<ImportWarning>,
) {
    let Some(totals) = header
        .get("metrics")
        .and_then(|m| m.get("request_totals"))
        .and_then(Value::as_object)
    else {
        return;
    };
    for kind in [Kind::Successful, Kind::Incomplete, Kind::Errored] {
        let Some(total) = totals.get(kind.as_str()).and_then(Value::as_u64) else {
            continue;
        };
        let kept = rows.iter().filter(|r| r.kind == kind).count() as u64;
        if kept != total {
            warnings.push(ImportWarning::new(
                format!("{at}.requests.{}", kind.as_str()),
                format!(
                    "the report keeps {kept} of {total} {} requests (GuideLLM samples rows); \
                     its aggregates cover all {total}",
                    kind.as_str()
                ),
                kept,
            ));
        }
    }
}

/// `constant@4.0 rps`, `concurrent@8 streams`, `synchronous`, …
fn strategy_label(config: Option<&Value>) -> String {
    let strategy = config.and_then(|c| c.get("strategy"));
    let field = |key: &str| strategy.and_then(|s| s.get(key));
    let kind = field("type_")
        .or_else(|| field("type"))
        .and_then(Value::as_str)
        .unwrap_or("benchmark");
    if let Some(rate) = field("rate").and_then(Value::as_f64) {
        return format!("{kind}@{} rps", number(rate));
    }
    if let Some(streams) = field("streams").and_then(Value::as_u64) {
        return format!("{kind}@{streams} streams");
    }
    kind.to_owned()
}

/// `4.0`, `2.5`: whole numbers keep one decimal, others print as they are.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// Every number under `value`, named by its dotted path; a `DistributionSummary`'s statistics
/// and percentiles (`p001` → `p0.1`, `p999` → `p99.9`) name the metric they belong to.
fn flatten(
    name: &str,
    value: &Value,
    unit: &dyn Fn(&str) -> &'static str,
    out: &mut Vec<Aggregate>,
) {
    let Value::Object(map) = value else { return };
    for (key, child) in map {
        match child {
            // A sample of the distribution's shape, not a statistic.
            _ if key == "pdf" => {}
            Value::Number(n) => {
                let Some(x) = n.as_f64() else { continue };
                let (name, stat) = if DISTRIBUTION_STATS.contains(&key.as_str()) {
                    (name.to_owned(), key.clone())
                } else {
                    (format!("{name}.{key}"), "value".to_owned())
                };
                out.push(Aggregate {
                    unit: unit(&name).to_owned(),
                    name,
                    stat,
                    value: x,
                });
            }
            Value::Object(percentiles) if key == "percentiles" => {
                for (p, v) in percentiles {
                    if let Some(x) = v.as_f64() {
                        out.push(Aggregate {
                            name: name.to_owned(),
                            stat: percentile_stat(p),
                            value: x,
                            unit: unit(name).to_owned(),
                        });
                    }
                }
            }
            Value::Object(_) => flatten(&format!("{name}.{key}"), child, unit, out),
            _ => {}
        }
    }
}

/// GuideLLM's percentile keys: two digits are whole percents, three carry one decimal.
fn percentile_stat(key: &str) -> String {
    let Some(digits) = key.strip_prefix('p') else {
        return key.to_owned();
    };
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return key.to_owned();
    }
    let whole = |s: &str| s.trim_start_matches('0').to_owned();
    match digits.len() {
        2 => {
            let w = whole(digits);
            format!("p{}", if w.is_empty() { "0" } else { &w })
        }
        3 => {
            let w = whole(&digits[..2]);
            format!("p{}.{}", if w.is_empty() { "0" } else { &w }, &digits[2..])
        }
        _ => key.to_owned(),
    }
}

/// Units of `metrics.{name}…`, from GuideLLM's metric names.
fn metric_unit(name: &str) -> &'static str {
    let mut parts = name.split('.').skip(1);
    let metric = parts.next().unwrap_or_default();
    match metric {
        m if m.ends_with("_ms") => "ms",
        "request_latency" => "s",
        "requests_per_second" => "1/s",
        m if m.ends_with("tokens_per_second") => "tokens/s",
        "request_totals" | "request_concurrency" => "requests",
        m if m.ends_with("_token_count") => "tokens",
        "text" | "image" | "video" | "audio" => match (parts.next(), parts.next()) {
            (Some("tokens"), Some(view)) if view.ends_with("_per_second") => "tokens/s",
            (Some("tokens"), Some(view)) if !view.ends_with("_concurrency") => "tokens",
            _ => "",
        },
        _ => "",
    }
}

/// Units of `scheduler_metrics.{name}…` and `scheduler_state.{name}`.
fn scheduler_unit(name: &str) -> &'static str {
    let key = name
        .strip_prefix("scheduler_metrics.")
        .unwrap_or(name)
        .split('.')
        .next()
        .unwrap_or_default();
    match key {
        k if k.ends_with("_time") || k.ends_with("_avg") || k == "generation_delay" => "s",
        k if k == "requests_made" || k.ends_with("_requests") => "requests",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(rows: &str) -> String {
        format!(
            r#"{{"metadata": {{"version": 2, "guidellm_version": "0.7.1"}},
               "benchmarks": [{{"type_": "generative_benchmark",
                 "config": {{"strategy": {{"type_": "constant", "rate": 4.0}}}},
                 "duration": 2.5,
                 "metrics": {{"request_totals": {{"successful": 1, "incomplete": 0, "errored": 0, "total": 1}},
                              "time_to_first_token_ms": {{"successful": {{"mean": 50.0, "count": 1,
                                  "percentiles": {{"p001": 49.0, "p50": 50.0, "p999": 51.0}}, "pdf": null}}}}}},
                 "requests": {{"successful": [{rows}], "incomplete": [], "errored": null, "total": null}}}}]}}"#
        )
    }

    const ROW: &str = r#"{"request_id": "a", "output": "hi",
        "info": {"timings": {"targeted_start": 100.0, "request_start": 100.25,
                             "first_token_iteration": 100.3, "request_end": 100.5}},
        "input_metrics": {"text_tokens": 12, "total_tokens": 12},
        "output_metrics": {"text_tokens": 2, "total_tokens": 2}}"#;

    fn run(text: &str) -> Result<ParsedImport, ImportError> {
        parse(&Source::new("r.json"), text.as_bytes())
    }

    #[test]
    fn reads_one_row_on_the_run_clock() {
        let import = run(&report(ROW)).unwrap();
        assert_eq!(import.tool.as_deref(), Some("guidellm 0.7.1"));
        let run = &import.runs[0];
        assert_eq!(run.label, "guidellm · constant@4.0 rps");
        assert_eq!(run.wall_anchor_unix_ms, Some(100_000));
        assert_eq!(run.elapsed_ms, Some(2500.0));
        let r = &run.requests[0];
        assert_eq!(r.planned_arrival_ms, 0.0);
        assert_eq!(r.dispatch_ms, Some(250.0));
        assert_eq!(r.client_delay_ms, Some(250.0));
        assert!((r.first_token_ms.unwrap() - 300.0).abs() < 1e-6);
        assert_eq!(r.finish_ms, Some(500.0));
        assert_eq!(r.prompt_tokens, Some(12));
        assert_eq!(r.completion_tokens, Some(2));
        assert_eq!(r.output_text, "hi");
        assert!(run.config["benchmark"].get("metrics").is_none());
        assert_eq!(run.config["metadata"]["version"], 2);
    }

    #[test]
    fn rows_outside_the_measured_window_are_not_measured() {
        // Synthetic, after GuideLLM 0.5 (danielkorat's gpt-oss report): warm-up and cool-down
        // rows kept beside the measured ones; `measure_*_time` bound what the tool measured,
        // both bounds inclusive.
        let row = |id: &str, start: f64, end: f64| {
            format!(
                r#"{{"request_id": "{id}", "output": "x", "info": {{"timings": {{"targeted_start": {start}, "request_start": {start}, "first_token_iteration": {start}, "request_end": {end}}}}}}}"#
            )
        };
        let rows = [
            row("warm", 100.0, 109.0),
            row("edge-start", 105.0, 110.0),
            row("inside", 111.0, 115.0),
            row("edge-end", 120.0, 125.0),
            row("cool", 121.0, 126.0),
        ]
        .join(",");
        let text = report(&rows)
            .replace(r#""successful": 1, "incomplete""#, r#""successful": 3, "incomplete""#)
            .replace(
                r#""duration": 2.5,"#,
                r#""duration": 10.0, "scheduler_metrics": {"measure_start_time": 110.0, "measure_end_time": 120.0},"#,
            );
        let import = run(&text).unwrap();
        let r = &import.runs[0];
        assert_eq!(r.requests.len(), 5);
        assert_eq!(r.unmeasured, [0, 4]);
        let w: Vec<&str> = import.warnings.iter().map(|w| w.message.as_str()).collect();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("2 row(s) fall outside the measured window"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("1 warm-up, 1 cool-down"), "{}", w[0]);
    }

    #[test]
    fn percentiles_are_named_like_the_other_tools() {
        let import = run(&report(ROW)).unwrap();
        let stats: Vec<(&str, &str, &str)> = import.runs[0]
            .aggregates
            .iter()
            .filter(|a| a.name.starts_with("metrics.time_to_first_token_ms"))
            .map(|a| (a.name.as_str(), a.stat.as_str(), a.unit.as_str()))
            .collect();
        assert!(stats.contains(&("metrics.time_to_first_token_ms.successful", "p0.1", "ms")));
        assert!(stats.contains(&("metrics.time_to_first_token_ms.successful", "p99.9", "ms")));
        assert!(stats.contains(&("metrics.time_to_first_token_ms.successful", "count", "ms")));
        assert_eq!(percentile_stat("p05"), "p5");
        assert_eq!(percentile_stat("p50"), "p50");
        assert_eq!(percentile_stat("p001"), "p0.1");
        assert_eq!(percentile_stat("p99.9"), "p99.9");
    }

    #[test]
    fn wrong_type_names_the_path() {
        let bad = ROW.replace("\"request_end\": 100.5", "\"request_end\": \"late\"");
        let err = run(&report(&bad)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "r.json, $.benchmarks[0].requests.successful[0].info.timings.request_end, field \
             `request_end`: expected a Unix time in seconds (a number) or null, found \"late\""
        );
    }

    #[test]
    fn version_other_than_one_or_two_is_refused() {
        let text = report(ROW).replace("\"version\": 2", "\"version\": 3");
        let err = run(&text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "r.json, $.metadata.version, field `version`: expected 1 or 2 (GuideLLM report \
             schema from 0.4 on), found 3"
        );
    }

    #[test]
    fn truncated_report_names_where_it_stopped() {
        let text = report(ROW);
        let cut = &text[..text.find("\"output_metrics\"").unwrap()];
        let err = run(cut).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains(
                "$.benchmarks[0].requests.successful[0]: expected the rest of the JSON document"
            ),
            "{message}"
        );
        assert!(message.contains("the file is truncated"), "{message}");
    }

    #[test]
    fn empty_files_and_repeated_keys_are_named() {
        assert_eq!(
            run(" \n").unwrap_err().to_string(),
            "r.json, $: expected a GuideLLM report object, found an empty file"
        );
        let text = report(ROW);
        let twice = format!(
            "{}, \"benchmarks\": []}}",
            text.trim_end().trim_end_matches('}')
        );
        assert_eq!(
            run(&twice).unwrap_err().to_string(),
            "r.json, $.benchmarks, field `benchmarks`: expected each key once, found `benchmarks` twice"
        );
        let row = ROW.replace(
            "\"request_end\": 100.5",
            "\"request_end\": 100.5, \"request_end\": 100.6",
        );
        let err = run(&report(&row)).unwrap_err().to_string();
        assert!(
            err.contains("$.benchmarks[0].requests.successful[0], field `request_end`: expected each field once, found `request_end` twice"),
            "{err}"
        );
    }

    #[test]
    fn huge_and_hostile_numbers_do_not_panic() {
        for bad in ["1e400", "-0.0", "18446744073709551616", "1e11", "[1]"] {
            let row = ROW.replace("100.5", bad);
            let _ = run(&report(&row));
        }
        let row = ROW.replace("\"text_tokens\": 2", "\"text_tokens\": 1e300");
        let _ = run(&report(&row));
        let _ = run("[");
        let _ = run("null");
        let _ = run(&"[".repeat(10_000));
    }

    #[test]
    fn scheduler_units_follow_the_key() {
        assert_eq!(scheduler_unit("scheduler_metrics.request_start_time"), "s");
        assert_eq!(
            scheduler_unit("scheduler_metrics.requests_made"),
            "requests"
        );
        assert_eq!(scheduler_unit("processed_requests"), "requests");
        assert_eq!(
            metric_unit("metrics.text.tokens.output_per_second.successful"),
            "tokens/s"
        );
        assert_eq!(metric_unit("metrics.request_latency.total"), "s");
    }
}
