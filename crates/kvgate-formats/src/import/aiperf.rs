//! AIPerf's per-request export `profile_export.jsonl`: one JSON object per line with
//! `metadata` (ids and wall-clock nanosecond timestamps), `metrics` (`{tag: {value, unit}}`) and
//! `error` (`{code, type, message}` or null).
//!
//! Read line by line. Each benchmark phase (`profiling`, and `warmup` when AIPerf exported it)
//! becomes one run; its clock zero is its earliest credit issue or request start. Cancelled
//! requests are `unfinished`, errored ones `error` (`timeout` when the error type says so): none
//! is dropped. The file holds no response text and no run configuration.

use std::collections::HashMap;
use std::io::BufRead;

use kvgate_core::run::{RequestRecord, RequestStatus};
use serde_json::{Map, Value};

use super::pyjson::PyJsonReader;
use super::{
    read_line, Granularity, ImportError, ImportFormat, ImportWarning, ParsedImport, ParsedRun,
    Source, StrictValue,
};

/// Slack for comparing times converted from different units (one microsecond, in ms).
const TOLERANCE_MS: f64 = 1e-3;

pub fn parse(source: &Source, mut reader: impl BufRead) -> Result<ParsedImport, ImportError> {
    let mut rows: Vec<Row> = Vec::new();
    let mut ids: HashMap<String, u64> = HashMap::new();
    let mut nan_tokens = 0u64;
    let mut nan_lines = 0u64;
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        if read_line(source, &mut reader, line + 1, &mut buf)? == 0 {
            break;
        }
        line += 1;
        let mut bytes = buf.as_slice();
        if line == 1 {
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        }
        while let [rest @ .., b'\n' | b'\r'] = bytes {
            bytes = rest;
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if rows.is_empty() && bytes.trim_ascii() == b"{" {
            return Err(summary_given(source, line, &mut reader));
        }
        let mut py = PyJsonReader::new(bytes);
        let StrictValue(value) = serde_json::from_reader(&mut py)
            .map_err(|err| source.json_line(err, line, Some("$".to_owned())))?;
        if py.replaced() > 0 {
            nan_tokens += py.replaced();
            nan_lines += 1;
        }
        let row = Row::read(source, line, &value)?;
        if let Some(id) = &row.request_id {
            if let Some(first) = ids.get(id) {
                return Err(source.line(
                    line,
                    Some("$.metadata.x_request_id".to_owned()),
                    Some("x_request_id"),
                    "a request id unique in the file",
                    format!("{}, already on line {first}", Value::String(id.clone())),
                ));
            }
            ids.insert(id.clone(), line);
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(source.at(
            "$",
            None,
            "at least one request record (one JSON object per line)",
            "no records",
        ));
    }

    let mut import = ParsedImport::new(ImportFormat::Aiperf);
    import.tool = Some("aiperf".to_owned());
    import.warnings.push(ImportWarning::new(
        "$",
        "profile_export.jsonl carries no run configuration and no aggregates (AIPerf writes \
         those to profile_export_aiperf.json)",
        0,
    ));
    if nan_tokens > 0 {
        import.warnings.push(ImportWarning::new(
            "$",
            format!(
                "{nan_tokens} NaN/Infinity value(s) (Python's non-standard JSON) on {nan_lines} \
                 line(s) read as absent, not 0"
            ),
            nan_lines,
        ));
    }
    let ok = rows
        .iter()
        .filter(|r| r.status == RequestStatus::Ok)
        .count() as u64;
    if ok > 0 {
        import.warnings.push(ImportWarning::new(
            "$",
            "AIPerf exports no response text: the content of these responses cannot be validated",
            ok,
        ));
    }
    let unchained = rows.iter().filter(|r| r.chunks_dropped).count() as u64;
    if unchained > 0 {
        import.warnings.push(ImportWarning::new(
            "$.metrics.inter_chunk_latency",
            "chunk arrival times were not rebuilt where time_to_first_token plus the \
             inter-chunk latencies ran past the request's end",
            unchained,
        ));
    }

    // One run per benchmark phase, in the order phases first appear.
    let mut phases: Vec<(String, Vec<Row>)> = Vec::new();
    for row in rows {
        match phases.iter_mut().find(|(phase, _)| *phase == row.phase) {
            Some((_, group)) => group.push(row),
            None => phases.push((row.phase.clone(), vec![row])),
        }
    }
    for (phase, group) in phases {
        import.runs.push(build_run(source, phase, group)?);
    }
    Ok(import)
}

/// The name AIPerf gives its run summary, written beside `profile_export.jsonl`.
pub const SUMMARY_FILE: &str = "profile_export_aiperf.json";

/// The load settings (`input_config`) of AIPerf's run summary: what the per-request export does
/// not record, the rate, concurrency and request-rate mode each phase was offered.
pub fn summary_input_config(source: &Source, text: &str) -> Result<Value, ImportError> {
    let value: Value = serde_json::from_str(text).map_err(|e| source.json(e, None))?;
    match value.get("input_config") {
        Some(config @ Value::Object(_)) => Ok(config.clone()),
        Some(other) => Err(source.at(
            "$.input_config",
            Some("input_config"),
            "an object (AIPerf's run configuration)",
            describe(Some(other)),
        )),
        None => Err(source.at(
            "$.input_config",
            Some("input_config"),
            "AIPerf's run configuration",
            "no `input_config` key",
        )),
    }
}

/// Gives every run of an AIPerf import the summary's load settings, and records which file
/// (and its sha256) they came from: the point is read from that file, not from the export.
pub fn attach_summary(import: &mut ParsedImport, file: &str, sha256: &str, input_config: &Value) {
    for run in &mut import.runs {
        if let Value::Object(config) = &mut run.config {
            config.insert("input_config".to_owned(), input_config.clone());
            config.insert(
                "aiperf_summary".to_owned(),
                serde_json::json!({ "file": file, "sha256": sha256 }),
            );
        }
    }
    import.warnings.push(ImportWarning::new(
        "$.input_config",
        format!("the offered load of each phase is read from {file} beside the export (sha256 {sha256})"),
        0,
    ));
}

/// A file whose first record line is a lone `{` is one pretty-printed JSON document, not JSON
/// lines: AIPerf's summary (`profile_export_aiperf.json`, `records` and `input_config`) is named
/// as such, with the file to import instead.
fn summary_given(source: &Source, line: u64, reader: &mut impl BufRead) -> ImportError {
    let mut next = Vec::new();
    let _ = read_line(source, reader, line + 1, &mut next);
    let key = String::from_utf8_lossy(&next);
    let key = key.trim();
    if ["\"records\"", "\"input_config\"", "\"error_summary\""]
        .iter()
        .any(|k| key.starts_with(k))
    {
        return source.line(
            line,
            Some("$".to_owned()),
            None,
            "AIPerf's per-request records, profile_export.jsonl (one JSON object per line)",
            "AIPerf's run summary (profile_export_aiperf.json: aggregates only, no request rows): \
             import profile_export.jsonl from the same artifacts folder",
        );
    }
    source.line(
        line,
        Some("$".to_owned()),
        None,
        "AIPerf's per-request records, one JSON object per line",
        "a pretty-printed JSON document (its first line is a lone `{`)",
    )
}

#[derive(Debug)]
struct Row {
    line: u64,
    phase: String,
    request_id: Option<String>,
    /// `credit_issued_ns`: when the rate limiter released the request.
    credit_ns: Option<u64>,
    start_ns: u64,
    /// `request_end_ns`, or start + `request_latency` (AIPerf 0.1 wrote no end time); absent
    /// for a request that never answered.
    end_ns: Option<u64>,
    /// From request start.
    first_token_ms: Option<f64>,
    /// From request start, one per chunk with text.
    chunks_ms: Vec<f64>,
    chunks_dropped: bool,
    status: RequestStatus,
    http_status: Option<u16>,
    error: Option<String>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

/// A JSON value as an error message shows it.
fn describe(value: Option<&Value>) -> String {
    match value {
        None => "no value".to_owned(),
        Some(Value::Array(_)) => "an array".to_owned(),
        Some(Value::Object(_)) => "an object".to_owned(),
        Some(Value::String(s)) if s.chars().count() > 60 => {
            let short: String = s.chars().take(60).collect();
            format!("{}…", Value::String(short))
        }
        Some(other) => other.to_string(),
    }
}

impl Row {
    fn read(source: &Source, line: u64, value: &Value) -> Result<Row, ImportError> {
        let bad = |path: &str, field: Option<&str>, expected: &str, found: String| {
            source.line(line, Some(path.to_owned()), field, expected, found)
        };
        let Value::Object(record) = value else {
            return Err(bad(
                "$",
                None,
                "a request record object",
                describe(Some(value)),
            ));
        };
        let metadata = match record.get("metadata") {
            Some(Value::Object(m)) => m,
            other => {
                return Err(bad(
                    "$.metadata",
                    Some("metadata"),
                    "an object with the request's ids and timestamps",
                    describe(other),
                ))
            }
        };

        let nanos = |key: &str, required: bool| -> Result<Option<u64>, ImportError> {
            let v = metadata.get(key);
            match v {
                Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
                None | Some(Value::Null) if !required => Ok(None),
                Some(Value::Null) => Err(bad(
                    &format!("$.metadata.{key}"),
                    Some(key),
                    "a Unix time in whole nanoseconds (a non-negative integer)",
                    "null or NaN".to_owned(),
                )),
                _ => Err(bad(
                    &format!("$.metadata.{key}"),
                    Some(key),
                    "a Unix time in whole nanoseconds (a non-negative integer)",
                    describe(v),
                )),
            }
        };
        // AIPerf 0.1 (before its 2025-10 rename) wrote `timestamp_ns` for the request start
        // and no end time.
        let legacy =
            !metadata.contains_key("request_start_ns") && metadata.contains_key("timestamp_ns");
        let start_key = if legacy {
            "timestamp_ns"
        } else {
            "request_start_ns"
        };
        let start_ns = nanos(start_key, true)?.unwrap_or_default();
        let end_ns = if legacy {
            nanos("request_end_ns", false)?
        } else {
            nanos("request_end_ns", true)?
        };
        let credit_ns = nanos("credit_issued_ns", false)?;
        if let Some(end_ns) = end_ns.filter(|e| *e < start_ns) {
            return Err(bad(
                "$.metadata.request_end_ns",
                Some("request_end_ns"),
                &format!("a time ≥ {start_key} ({start_ns})"),
                format!(
                    "{end_ns}: the request would end {} ms before it started",
                    (start_ns - end_ns) as f64 / 1e6
                ),
            ));
        }

        let string = |key: &str| -> Result<Option<String>, ImportError> {
            match metadata.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                other => Err(bad(
                    &format!("$.metadata.{key}"),
                    Some(key),
                    "a string or null",
                    describe(other),
                )),
            }
        };
        let request_id = string("x_request_id")?;
        let phase = match string("phase_name")? {
            Some(name) => name,
            None => match string("benchmark_phase")? {
                Some(name) => name,
                None => string("credit_phase")?.unwrap_or_else(|| "profiling".to_owned()),
            },
        };
        let cancelled = match metadata.get("was_cancelled") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            other => {
                return Err(bad(
                    "$.metadata.was_cancelled",
                    Some("was_cancelled"),
                    "true or false",
                    describe(other),
                ))
            }
        };

        let empty = Map::new();
        let metrics = match record.get("metrics") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(m)) => m,
            other => {
                return Err(bad(
                    "$.metrics",
                    Some("metrics"),
                    "an object of {value, unit} by metric tag, or null",
                    describe(other),
                ))
            }
        };
        let metric = |tag: &str| -> Result<Option<(&Value, Option<&str>)>, ImportError> {
            match metrics.get(tag) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Object(m)) => match m.get("value") {
                    None | Some(Value::Null) => Ok(None),
                    Some(v) => Ok(Some((v, m.get("unit").and_then(Value::as_str)))),
                },
                other => Err(bad(
                    &format!("$.metrics.{tag}"),
                    Some(tag),
                    "an object {value, unit}",
                    describe(other),
                )),
            }
        };
        let duration = |tag: &str, value: &Value, unit: Option<&str>| -> Result<f64, ImportError> {
            let Some(factor) = unit.and_then(ms_per_unit) else {
                return Err(bad(
                    &format!("$.metrics.{tag}.unit"),
                    Some("unit"),
                    "a time unit: ns, us, ms or s",
                    describe(metrics.get(tag).and_then(|m| m.get("unit"))),
                ));
            };
            match value.as_f64() {
                Some(x) if x.is_finite() && x >= 0.0 => Ok(x * factor),
                _ => Err(bad(
                    &format!("$.metrics.{tag}.value"),
                    Some("value"),
                    "a finite, non-negative duration",
                    describe(Some(value)),
                )),
            }
        };

        // The end of the response is AIPerf's own `request_latency` after the start (its last
        // response chunk; `request_end_ns` is later, when the connection's work ended), so the
        // rows give the tool's own latency figures; `request_end_ns` when the metric is absent.
        let end_ns = match metric("request_latency")? {
            Some((value, unit)) => {
                let ms = duration("request_latency", value, unit)?;
                Some(start_ns.saturating_add((ms * 1e6).round() as u64))
            }
            None => end_ns,
        };
        let duration_ms = end_ns.map_or(f64::INFINITY, |end| (end - start_ns) as f64 / 1e6);
        // The tag was `ttft` in AIPerf 0.1, `time_to_first_token` later.
        let ttft_tag = if metrics.contains_key("time_to_first_token") {
            "time_to_first_token"
        } else {
            "ttft"
        };
        let first_token_ms = match metric(ttft_tag)? {
            Some((value, unit)) => {
                let ttft = duration(ttft_tag, value, unit)?;
                if ttft > duration_ms + TOLERANCE_MS {
                    return Err(bad(
                        &format!("$.metrics.{ttft_tag}.value"),
                        Some("value"),
                        &format!(
                            "at most the request's duration ({duration_ms} ms, \
                             request_end_ns − request_start_ns)"
                        ),
                        format!(
                            "{} {}: the first token would arrive after the request ended",
                            describe(Some(value)),
                            unit.unwrap_or_default()
                        ),
                    ));
                }
                Some(ttft)
            }
            None => None,
        };

        // Chunk arrivals: the first at TTFT, then one inter-chunk latency apart.
        let mut chunks_ms = Vec::new();
        let mut chunks_dropped = false;
        if let (Some(first), Some((value, unit))) = (first_token_ms, metric("inter_chunk_latency")?)
        {
            let gaps: Vec<&Value> = match value {
                Value::Array(items) => items.iter().collect(),
                single => vec![single],
            };
            if !gaps.iter().any(|g| g.is_null()) {
                chunks_ms.push(first);
                let mut at = first;
                for gap in gaps {
                    at += duration("inter_chunk_latency", gap, unit)?;
                    chunks_ms.push(at);
                }
                if at > duration_ms + TOLERANCE_MS {
                    chunks_ms.clear();
                    chunks_dropped = true;
                }
            }
        }

        let tokens = |tags: &[&str]| -> Result<Option<u64>, ImportError> {
            for tag in tags {
                let Some((value, _)) = metric(tag)? else {
                    continue;
                };
                if let Some(n) = value.as_u64() {
                    return Ok(Some(n));
                }
                return match value.as_f64() {
                    Some(x) if x >= 0.0 && x.fract() == 0.0 && x < 9.0e15 => Ok(Some(x as u64)),
                    _ => Err(bad(
                        &format!("$.metrics.{tag}.value"),
                        Some("value"),
                        "a non-negative whole number of tokens",
                        describe(Some(value)),
                    )),
                };
            }
            Ok(None)
        };
        let prompt_tokens = tokens(&["input_sequence_length", "error_isl"])?;
        let completion_tokens = tokens(&["output_sequence_length", "output_token_count"])?;

        let error = match record.get("error") {
            None | Some(Value::Null) => None,
            Some(Value::Object(e)) => Some(e),
            other => {
                return Err(bad(
                    "$.error",
                    Some("error"),
                    "an object {code, type, message} or null",
                    describe(other),
                ))
            }
        };
        let (code, kind, message) = match error {
            Some(e) => {
                let text = |key: &str| -> Result<Option<String>, ImportError> {
                    match e.get(key) {
                        None | Some(Value::Null) => Ok(None),
                        Some(Value::String(s)) => Ok(Some(s.clone())),
                        other => Err(bad(
                            &format!("$.error.{key}"),
                            Some(key),
                            "a string or null",
                            describe(other),
                        )),
                    }
                };
                let code = match e.get("code") {
                    None | Some(Value::Null) => None,
                    Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
                    other => {
                        return Err(bad(
                            "$.error.code",
                            Some("code"),
                            "an integer code or null",
                            describe(other),
                        ))
                    }
                };
                (code, text("type")?, text("message")?)
            }
            None => (None, None, None),
        };
        let error_text = match (&kind, &message) {
            (Some(k), Some(m)) => Some(format!("{k}: {m}")),
            (Some(k), None) => Some(k.clone()),
            (None, Some(m)) => Some(m.clone()),
            (None, None) => code.map(|c| format!("error code {c}")),
        };

        // AIPerf's own cancellations (`--request-cancellation-rate`): never answered, by design.
        let cancelled = cancelled
            || kind
                .as_deref()
                .is_some_and(|k| k == "RequestCancellationError");
        let (status, http_status, error_text) = if cancelled {
            (
                RequestStatus::Unfinished,
                None,
                Some(error_text.unwrap_or_else(|| "cancelled by AIPerf".to_owned())),
            )
        } else if error.is_some() {
            let http = code
                .filter(|c| (100..=599).contains(c))
                .and_then(|c| u16::try_from(c).ok());
            let timeout = kind
                .as_deref()
                .is_some_and(|k| k.to_ascii_lowercase().contains("timeout"));
            let status = if timeout {
                RequestStatus::Timeout
            } else {
                RequestStatus::Error
            };
            (status, http, error_text)
        } else {
            (RequestStatus::Ok, None, None)
        };

        Ok(Row {
            line,
            phase,
            request_id,
            credit_ns,
            start_ns,
            end_ns,
            first_token_ms,
            chunks_ms,
            chunks_dropped,
            status,
            http_status,
            error: error_text,
            prompt_tokens,
            completion_tokens,
        })
    }

    fn planned_ns(&self) -> u64 {
        self.credit_ns.unwrap_or(self.start_ns)
    }
}

/// Milliseconds per one of AIPerf's time units.
fn ms_per_unit(unit: &str) -> Option<f64> {
    match unit {
        "ns" => Some(1e-6),
        "us" | "µs" => Some(1e-3),
        "ms" => Some(1.0),
        "s" | "sec" => Some(1e3),
        _ => None,
    }
}

fn build_run(source: &Source, phase: String, mut rows: Vec<Row>) -> Result<ParsedRun, ImportError> {
    let mut run = ParsedRun::new(format!("aiperf · {phase}"), Granularity::PerRequest);
    // The phase names the load settings of `profile_export_aiperf.json` the run was offered.
    run.config = serde_json::json!({ "phase": phase });
    let zero = rows
        .iter()
        .map(|r| r.planned_ns().min(r.start_ns))
        .min()
        .unwrap_or_default();
    run.wall_anchor_unix_ms = i64::try_from(zero / 1_000_000).ok();
    // `zero` is the minimum, so no subtraction below underflows.
    let clock = |ns: u64| ns.saturating_sub(zero) as f64 / 1e6;
    rows.sort_by_key(|r| (r.planned_ns(), r.start_ns, r.line));
    for (index, row) in rows.into_iter().enumerate() {
        let index = u32::try_from(index).map_err(|_| {
            source.at(
                "$",
                None,
                "at most 4294967295 requests in one phase",
                "more",
            )
        })?;
        let planned = clock(row.planned_ns());
        let dispatch = clock(row.start_ns);
        let finish = match row.status {
            RequestStatus::Ok | RequestStatus::Error | RequestStatus::Rejected => {
                row.end_ns.map(clock)
            }
            RequestStatus::Timeout | RequestStatus::Unfinished => None,
        };
        run.requests.push(RequestRecord {
            index,
            item_id: None,
            prompt_sha256: None,
            planned_arrival_ms: planned,
            dispatch_ms: Some(dispatch),
            client_delay_ms: row.credit_ns.map(|_| dispatch - planned),
            first_token_ms: row.first_token_ms.map(|t| dispatch + t),
            chunk_times_ms: row.chunks_ms.iter().map(|t| dispatch + t).collect(),
            finish_ms: finish,
            status: row.status,
            http_status: row.http_status,
            error: row.error,
            output_text: String::new(),
            prompt_tokens: row.prompt_tokens,
            completion_tokens: row.completion_tokens,
            cached_prompt_tokens: None,
            finish_reason: None,
            engine_timings: None,
        });
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = r#"{"metadata": {"session_num": 0, "x_request_id": "a", "request_start_ns": 1000000000, "request_end_ns": 1500000000, "benchmark_phase": "profiling", "was_cancelled": false}, "metrics": {"time_to_first_token": {"value": 100.0, "unit": "ms"}, "inter_chunk_latency": {"value": [50.0, 50.0], "unit": "ms"}, "input_sequence_length": {"value": 20, "unit": "tokens"}, "output_sequence_length": {"value": 3, "unit": "tokens"}}, "error": null}"#;

    fn run(text: &str) -> Result<ParsedImport, ImportError> {
        parse(&Source::new("p.jsonl"), text.as_bytes())
    }

    #[test]
    fn aiperf_0_1_records_are_read() {
        // Synthetic, after AIPerf 0.1.1's example artifacts: `timestamp_ns`, no end time, the
        // `ttft` tag, `credit_phase`, and its own cancellations as errors.
        let ok = r#"{"metadata": {"x_request_id": "a", "timestamp_ns": 1000000000, "credit_phase": "profiling"}, "metrics": {"ttft": {"value": 100.0, "unit": "ms"}, "request_latency": {"value": 400.0, "unit": "ms"}, "inter_chunk_latency": {"value": [100.0, 100.0], "unit": "ms"}, "output_sequence_length": {"value": 3, "unit": "tokens"}}, "error": null}"#;
        let cancelled = r#"{"metadata": {"x_request_id": "b", "timestamp_ns": 1000000000, "credit_phase": "profiling"}, "metrics": {"error_request_count": {"value": 1, "unit": "requests"}}, "error": {"code": 499, "type": "RequestCancellationError", "message": "Request was cancelled after 0.000 seconds"}}"#;
        let import = run(&format!("{ok}\n{cancelled}\n")).unwrap();
        let r = &import.runs[0];
        assert_eq!(r.label, "aiperf · profiling");
        assert_eq!(r.requests[0].ttft_ms(), Some(100.0));
        assert_eq!(r.requests[0].e2e_ms(), Some(400.0));
        assert_eq!(r.requests[0].chunk_times_ms, [100.0, 200.0, 300.0]);
        assert_eq!(r.requests[1].status, RequestStatus::Unfinished);
        assert_eq!(r.requests[1].finish_ms, None);
        assert!(r.requests[1]
            .error
            .as_deref()
            .unwrap()
            .contains("RequestCancellationError"));
    }

    #[test]
    fn the_summary_is_named_with_the_file_to_use() {
        // Synthetic: the first lines of profile_export_aiperf.json.
        let text = "{\n  \"records\": {\n    \"ttft\": {\"avg\": 1.0}\n  }\n}\n";
        let err = run(text).unwrap_err().to_string();
        assert!(
            err.starts_with("p.jsonl, line 1, $: expected AIPerf's per-request records"),
            "{err}"
        );
        assert!(err.contains("import profile_export.jsonl"), "{err}");
        let err = run("{\n  \"other\": 1\n}\n").unwrap_err().to_string();
        assert!(err.contains("a pretty-printed JSON document"), "{err}");
    }

    #[test]
    fn a_line_becomes_a_record() {
        let import = run(OK).unwrap();
        let r = &import.runs[0].requests[0];
        assert_eq!(import.runs[0].label, "aiperf · profiling");
        assert_eq!(import.runs[0].wall_anchor_unix_ms, Some(1000));
        assert_eq!(r.dispatch_ms, Some(0.0));
        assert_eq!(r.first_token_ms, Some(100.0));
        assert_eq!(r.chunk_times_ms, vec![100.0, 150.0, 200.0]);
        assert_eq!(r.finish_ms, Some(500.0));
        assert_eq!(r.client_delay_ms, None);
        assert_eq!((r.prompt_tokens, r.completion_tokens), (Some(20), Some(3)));
        assert_eq!(r.status, RequestStatus::Ok);
    }

    #[test]
    fn nanosecond_ttft_converts_and_unknown_units_fail() {
        let ns = OK.replace(
            r#"{"value": 100.0, "unit": "ms"}"#,
            r#"{"value": 100000000, "unit": "ns"}"#,
        );
        assert_eq!(
            run(&ns).unwrap().runs[0].requests[0].first_token_ms,
            Some(100.0)
        );
        let furlongs = OK.replace(
            r#""unit": "ms"}, "inter"#,
            r#""unit": "fortnights"}, "inter"#,
        );
        assert_eq!(
            run(&furlongs).unwrap_err().to_string(),
            "p.jsonl, line 1, $.metrics.time_to_first_token.unit, field `unit`: expected a time \
             unit: ns, us, ms or s, found \"fortnights\""
        );
    }

    #[test]
    fn timeout_errors_are_timeouts() {
        let line = OK.replace(
            r#""error": null"#,
            r#""error": {"code": 504, "type": "aiohttp.ServerTimeoutError", "message": "slow"}"#,
        );
        let r = &run(&line).unwrap().runs[0].requests[0];
        assert_eq!(r.status, RequestStatus::Timeout);
        assert_eq!(r.finish_ms, None);
        assert_eq!(r.http_status, Some(504));
        assert_eq!(r.error.as_deref(), Some("aiohttp.ServerTimeoutError: slow"));
    }

    #[test]
    fn warmup_rows_make_their_own_run() {
        let warm = OK
            .replace("\"profiling\"", "\"warmup\"")
            .replace("\"a\"", "\"w\"");
        let import = run(&format!("{warm}\n{OK}\n")).unwrap();
        let labels: Vec<&str> = import.runs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["aiperf · warmup", "aiperf · profiling"]);
    }

    #[test]
    fn hostile_lines_do_not_panic() {
        for line in [
            "[]",
            "{}",
            r#"{"metadata": {"request_start_ns": 18446744073709551615, "request_end_ns": 18446744073709551615}}"#,
            r#"{"metadata": {"request_start_ns": 0, "request_end_ns": 1}, "metrics": {"time_to_first_token": {"value": 1e308, "unit": "s"}}}"#,
            r#"{"metadata": {"request_start_ns": 0, "request_end_ns": 1}, "metrics": {"inter_chunk_latency": {"value": [1e308, 1e308], "unit": "s"}, "time_to_first_token": {"value": 0, "unit": "s"}}}"#,
            r#"{"metadata": {"request_start_ns": -1, "request_end_ns": 1}}"#,
            r#"{"metadata": {"request_start_ns": 0, "request_end_ns": 1}, "error": {"code": 99999999999999}}"#,
        ] {
            let _ = run(line);
        }
        assert!(run("").is_err());
        assert!(run("\n\n").is_err());
    }
}
