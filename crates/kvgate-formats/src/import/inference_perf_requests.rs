//! inference-perf's per-request file (`per_request_lifecycle_metrics.json`, inference-perf 0.7):
//! a JSON array with one object per request: `start_time` and `end_time` (the client's
//! monotonic clock, seconds), `info.response_metrics.chunk_times` (each streamed chunk's
//! arrival), the response chunks themselves, token counts (the client's and the server's
//! `usage`) and `error`.
//!
//! One run of rows on the file's own clock (zero = the earliest start). The file does not say
//! which stage each request belongs to, nor when the schedule wanted it sent: the run spans
//! every stage and the planned arrival is the send time, both said in warnings. Failed requests
//! stay as `error` rows.

use std::io::BufRead;

use kvgate_core::run::{RequestRecord, RequestStatus};
use serde_json::{Map, Value};

use super::pyjson::read_document;
use super::{
    Granularity, ImportError, ImportFormat, ImportWarning, ParsedImport, ParsedRun, Source,
};

pub fn parse(source: &Source, reader: impl BufRead) -> Result<ParsedImport, ImportError> {
    let (value, nan_warning) = read_document(source, reader, "an array of request records")?;
    let Value::Array(items) = value else {
        return Err(source.at(
            "$",
            None,
            "an array of request records (inference-perf's per-request file)",
            kind(&value),
        ));
    };
    if items.is_empty() {
        return Err(source.at("$", None, "at least one request record", "an empty array"));
    }
    let mut rows = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        rows.push(Row::read(source, i, item)?);
    }
    let zero = rows.iter().map(|r| r.start).fold(f64::INFINITY, f64::min);
    rows.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.at.cmp(&b.at)));
    let ms = |t: f64| (t - zero) * 1000.0;

    let mut run = ParsedRun::new("inference-perf · per request", Granularity::PerRequest);
    let end = rows.iter().filter_map(|r| r.end).fold(zero, f64::max);
    run.elapsed_ms = Some(ms(end));
    run.planned = i64::try_from(rows.len()).ok();
    run.config = serde_json::json!({ "report": "per_request_lifecycle" });
    let mut textless = 0u64;
    for (index, row) in rows.into_iter().enumerate() {
        let dispatch = ms(row.start);
        if row.error.is_none() && row.text.is_empty() {
            textless += 1;
        }
        run.requests.push(RequestRecord {
            index: index as u32,
            item_id: None,
            prompt_sha256: None,
            planned_arrival_ms: dispatch,
            dispatch_ms: Some(dispatch),
            client_delay_ms: None,
            first_token_ms: row.chunks.first().map(|t| ms(*t)),
            chunk_times_ms: row.chunks.iter().map(|t| ms(*t)).collect(),
            finish_ms: row.end.map(ms),
            status: if row.error.is_some() {
                RequestStatus::Error
            } else {
                RequestStatus::Ok
            },
            http_status: None,
            error: row.error,
            output_text: row.text,
            prompt_tokens: row.prompt_tokens,
            completion_tokens: row.completion_tokens,
            cached_prompt_tokens: row.cached_tokens,
            finish_reason: row.finish_reason,
            engine_timings: None,
        });
    }

    let mut import = ParsedImport::new(ImportFormat::InferencePerf);
    import.tool = Some("inference-perf".to_owned());
    import.warnings.push(ImportWarning::new(
        "$",
        "the per-request file does not say which stage each request belongs to: the run spans \
         every stage's offered load (the stage_N_lifecycle_metrics.json files give each stage's \
         aggregates)",
        0,
    ));
    import.warnings.push(ImportWarning::new(
        "$[*].start_time",
        "no scheduled send time per request: planned arrival taken as the send time; client \
         delay absent",
        run.requests.len() as u64,
    ));
    if textless > 0 {
        import.warnings.push(ImportWarning::new(
            "$[*].info.response_metrics.response_chunks",
            "successful request(s) without response text: their content cannot be validated",
            textless,
        ));
    }
    import.warnings.extend(nan_warning);
    import.runs.push(run);
    Ok(import)
}

/// One request as read, in the file's seconds.
struct Row {
    at: usize,
    start: f64,
    end: Option<f64>,
    chunks: Vec<f64>,
    error: Option<String>,
    text: String,
    finish_reason: Option<String>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    cached_tokens: Option<u64>,
}

fn kind(value: &Value) -> String {
    match value {
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
        Value::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

impl Row {
    fn read(source: &Source, i: usize, item: &Value) -> Result<Row, ImportError> {
        let at = |path: &str| format!("$[{i}]{path}");
        let Value::Object(record) = item else {
            return Err(source.at(at(""), None, "a request record object", kind(item)));
        };
        let time = |key: &str, required: bool| -> Result<Option<f64>, ImportError> {
            match record.get(key) {
                Some(v) => match v.as_f64() {
                    Some(t) if t.is_finite() && t >= 0.0 => Ok(Some(t)),
                    _ if v.is_null() && !required => Ok(None),
                    _ => Err(source.at(
                        at(&format!(".{key}")),
                        Some(key),
                        "a non-negative number of seconds",
                        kind(v),
                    )),
                },
                None if !required => Ok(None),
                None => Err(source.at(
                    at(&format!(".{key}")),
                    Some(key),
                    "the request's send time (seconds)",
                    "no value",
                )),
            }
        };
        let start = time("start_time", true)?.unwrap_or_default();
        let end = time("end_time", false)?;
        if let Some(end) = end.filter(|e| *e < start) {
            return Err(source.at(
                at(".end_time"),
                Some("end_time"),
                format!("a time ≥ start_time ({start})"),
                format!("{end}: the request would end before it started"),
            ));
        }
        let empty = Map::new();
        let info = record
            .get("info")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let response = info
            .get("response_metrics")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut chunks = Vec::new();
        if let Some(times) = response.get("chunk_times") {
            let Value::Array(times) = times else {
                return Err(source.at(
                    at(".info.response_metrics.chunk_times"),
                    Some("chunk_times"),
                    "an array of arrival times (seconds)",
                    kind(times),
                ));
            };
            for (j, t) in times.iter().enumerate() {
                match t.as_f64() {
                    Some(t) if t.is_finite() && t >= start => chunks.push(t),
                    _ => {
                        return Err(source.at(
                            at(&format!(".info.response_metrics.chunk_times[{j}]")),
                            Some("chunk_times"),
                            format!("an arrival time ≥ start_time ({start})"),
                            kind(t),
                        ))
                    }
                }
            }
        }
        let mut text = String::new();
        let mut finish_reason = None;
        if let Some(Value::Array(parts)) = response.get("response_chunks") {
            for part in parts {
                let chunk: Value = match part {
                    Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
                    other => other.clone(),
                };
                let choice = &chunk["choices"][0];
                for piece in [&choice["text"], &choice["delta"]["content"]] {
                    if let Some(s) = piece.as_str() {
                        text.push_str(s);
                    }
                }
                if let Some(reason) = choice["finish_reason"].as_str() {
                    finish_reason = Some(reason.to_owned());
                }
            }
        }
        let count = |v: Option<&Value>| v.and_then(Value::as_u64);
        let usage = response.get("server_usage");
        let error = match record.get("error") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Object(e)) => Some(
                ["error_msg", "message", "error_type", "type"]
                    .iter()
                    .find_map(|k| e.get(*k).and_then(Value::as_str))
                    .map(str::to_owned)
                    .unwrap_or_else(|| Value::Object(e.clone()).to_string()),
            ),
            Some(other) => Some(other.to_string()),
        };
        Ok(Row {
            at: i,
            start,
            end,
            chunks,
            error,
            text,
            finish_reason,
            // The server's counts first, as KV Gate's own runner records them.
            prompt_tokens: count(usage.and_then(|u| u.get("prompt_tokens")))
                .or(count(info.get("input_tokens"))),
            completion_tokens: count(usage.and_then(|u| u.get("completion_tokens")))
                .or(count(response.get("output_tokens"))),
            cached_tokens: count(
                usage
                    .and_then(|u| u.get("prompt_tokens_details"))
                    .and_then(|d| d.get("cached_tokens")),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Synthetic, in the shape inference-perf 0.7.0 writes (fixtures/real-tools/ holds its own).
    const OK: &str = r#"{"start_time": 10.0, "end_time": 10.5, "request": "{}", "response": "",
        "info": {"input_tokens": 12, "response_metrics": {"output_tokens": 2,
          "server_usage": {"prompt_tokens": 13, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}},
          "response_chunks": ["{\"choices\":[{\"text\":\"Hi\",\"finish_reason\":null}]}", "{\"choices\":[{\"text\":\" there\",\"finish_reason\":\"length\"}]}"],
          "chunk_times": [10.2, 10.4]}}, "error": null}"#;

    fn run(text: &str) -> Result<ParsedImport, ImportError> {
        parse(
            &Source::new("per_request_lifecycle_metrics.json"),
            text.as_bytes(),
        )
    }

    #[test]
    fn rows_on_the_files_clock() {
        let failed = r#"{"start_time": 9.0, "end_time": 9.1, "info": {}, "error": {"error_type": "ClientConnectorError", "error_msg": "refused"}}"#;
        let import = run(&format!("[{OK}, {failed}]")).unwrap();
        let r = &import.runs[0];
        assert_eq!(r.requests.len(), 2);
        let (first, second) = (&r.requests[0], &r.requests[1]);
        assert_eq!(first.status, RequestStatus::Error);
        assert_eq!(first.error.as_deref(), Some("refused"));
        assert_eq!(second.dispatch_ms, Some(1000.0));
        assert!((second.ttft_ms().unwrap() - 200.0).abs() < 1e-9);
        assert!((second.e2e_ms().unwrap() - 500.0).abs() < 1e-9);
        assert_eq!(second.output_text, "Hi there");
        assert_eq!(second.finish_reason.as_deref(), Some("length"));
        assert_eq!(
            (second.prompt_tokens, second.completion_tokens),
            (Some(13), Some(2))
        );
        assert_eq!(second.cached_prompt_tokens, Some(4));
        assert!(import.warnings[0].message.contains("spans every stage"));
    }

    #[test]
    fn bad_records_are_named() {
        let err = run(r#"[{"end_time": 1.0}]"#).unwrap_err().to_string();
        assert_eq!(
            err,
            "per_request_lifecycle_metrics.json, $[0].start_time, field `start_time`: expected \
             the request's send time (seconds), found no value"
        );
        let err = run(r#"[{"start_time": 2.0, "end_time": 1.0}]"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("$[0].end_time"), "{err}");
        let err = run(r#"{"start_time": 2.0}"#).unwrap_err().to_string();
        assert!(
            err.contains("expected an array of request records"),
            "{err}"
        );
    }
}
