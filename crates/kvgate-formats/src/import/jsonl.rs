//! KV Gate's own run records as JSON lines: one [`RequestRecord`] per line (the schema
//! `schemas/run-record.schema.json`). A whole `kvgate-run` file (header line first) is read by
//! [`crate::run_file`] instead; [`is_run_file`] tells them apart.

use std::collections::HashSet;
use std::io::BufRead;

use kvgate_core::run::{RequestRecord, RequestStatus};

use super::{read_line, Granularity, ImportError, ImportFormat, ParsedImport, ParsedRun, Source};

/// Whether the first line is a `kvgate-run` header.
pub fn is_run_file(head: &[u8]) -> bool {
    let first = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let first = String::from_utf8_lossy(first);
    first.contains("\"format\"") && first.contains("\"kvgate-run\"")
}

pub fn parse(source: &Source, mut reader: impl BufRead) -> Result<ParsedImport, ImportError> {
    let mut requests: Vec<RequestRecord> = Vec::new();
    let mut seen = HashSet::new();
    let mut buf = Vec::new();
    let mut number = 0u64;
    loop {
        if read_line(source, &mut reader, number + 1, &mut buf)? == 0 {
            break;
        }
        number += 1;
        let bytes = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if number == 1 && is_run_file(bytes) {
            return Err(source.line(
                1,
                Some("$.format".to_owned()),
                Some("format"),
                "one request record per line (a `kvgate-run` file is imported whole, as a run file)",
                "a `kvgate-run` header",
            ));
        }
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
        let shape = match first {
            Some(b'[') => Some("an array"),
            Some(b'"') => Some("a string"),
            Some(b'-' | b'0'..=b'9') => Some("a number"),
            Some(b't' | b'f') => Some("a boolean"),
            Some(b'n') => Some("null"),
            _ => None,
        };
        if let Some(shape) = shape {
            return Err(source.line(
                number,
                Some("$".to_owned()),
                None,
                "a request record object",
                shape,
            ));
        }
        let record: RequestRecord = serde_json::from_slice(bytes).map_err(|e| {
            let column = e.column();
            let data = e.is_data();
            let err = source.json_line(e, number, Some("$".to_owned()));
            match (err, key_before(bytes, column).filter(|_| data)) {
                // serde names no field when a value has the wrong type: the key before the
                // error's column does.
                (ImportError::Invalid(mut invalid), Some(key)) if invalid.field.is_none() => {
                    invalid.path = Some(format!("$.{key}"));
                    invalid.field = Some(key);
                    ImportError::Invalid(invalid)
                }
                (err, _) => err,
            }
        })?;
        let at = |field: &str| Some(format!("$.{field}"));
        if !seen.insert(record.index) {
            return Err(source.line(
                number,
                at("index"),
                Some("index"),
                "a unique request index",
                format!("index {} again", record.index),
            ));
        }
        let times = [
            ("planned_arrival_ms", Some(record.planned_arrival_ms)),
            ("dispatch_ms", record.dispatch_ms),
            ("first_token_ms", record.first_token_ms),
            ("finish_ms", record.finish_ms),
        ];
        for (field, value) in times {
            if let Some(v) = value {
                if !v.is_finite() || v < 0.0 {
                    return Err(source.line(
                        number,
                        at(field),
                        Some(field),
                        "a finite, non-negative time in ms on the run clock",
                        v.to_string(),
                    ));
                }
            }
        }
        if let (Some(d), Some(f)) = (record.dispatch_ms, record.finish_ms) {
            if f < d {
                return Err(source.line(
                    number,
                    at("finish_ms"),
                    Some("finish_ms"),
                    format!("a finish at or after dispatch ({d} ms)"),
                    format!("{f} ms"),
                ));
            }
        }
        if let (Some(d), Some(t)) = (record.dispatch_ms, record.first_token_ms) {
            if t < d {
                return Err(source.line(
                    number,
                    at("first_token_ms"),
                    Some("first_token_ms"),
                    format!("a first token at or after dispatch ({d} ms)"),
                    format!("{t} ms"),
                ));
            }
        }
        if record.status == RequestStatus::Ok && record.dispatch_ms.is_none() {
            return Err(source.line(
                number,
                at("dispatch_ms"),
                Some("dispatch_ms"),
                "a dispatch time for an `ok` request",
                "null",
            ));
        }
        requests.push(record);
    }
    if requests.is_empty() {
        return Err(source.at("$", None, "at least one request record line", "no records"));
    }
    let mut run = ParsedRun::new(
        format!("jsonl · {} requests", requests.len()),
        Granularity::PerRequest,
    );
    run.config = serde_json::json!({ "source": "jsonl", "records": requests.len() });
    run.planned = Some(requests.len() as i64);
    run.elapsed_ms = requests
        .iter()
        .filter_map(|r| r.finish_ms.or(r.first_token_ms).or(r.dispatch_ms))
        .fold(None, |acc: Option<f64>, t| {
            Some(acc.map_or(t, |a| a.max(t)))
        });
    run.requests = requests;
    let mut import = ParsedImport::new(ImportFormat::Jsonl);
    import.tool = Some("kvgate".to_owned());
    import.runs.push(run);
    Ok(import)
}

/// The fields of a [`RequestRecord`] line.
const FIELDS: [&str; 17] = [
    "index",
    "item_id",
    "planned_arrival_ms",
    "dispatch_ms",
    "client_delay_ms",
    "first_token_ms",
    "chunk_times_ms",
    "finish_ms",
    "status",
    "http_status",
    "error",
    "output_text",
    "prompt_tokens",
    "completion_tokens",
    "cached_prompt_tokens",
    "finish_reason",
    "engine_timings",
];

/// The last record field whose key (`"name":`) starts before `column` (1-based) of the line:
/// the field whose value serde refused there.
fn key_before(line: &[u8], column: usize) -> Option<String> {
    let line = &line[..column.min(line.len())];
    let mut found = None;
    let mut i = 0;
    while i < line.len() {
        if line[i] != b'"' {
            i += 1;
            continue;
        }
        // A string: up to the next quote that is not escaped.
        let start = i + 1;
        let mut j = start;
        while j < line.len() && line[j] != b'"' {
            j += if line[j] == b'\\' { 2 } else { 1 };
        }
        if j >= line.len() {
            break;
        }
        let key = &line[start..j];
        let next = line[j + 1..].iter().find(|b| !b.is_ascii_whitespace());
        if next == Some(&b':') {
            if let Some(field) = FIELDS.iter().find(|f| f.as_bytes() == key) {
                found = Some((*field).to_owned());
            }
        }
        i = j + 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"index":0,"item_id":null,"planned_arrival_ms":0.0,"dispatch_ms":1.0,"client_delay_ms":1.0,"first_token_ms":5.0,"chunk_times_ms":[5.0],"finish_ms":9.0,"status":"ok","http_status":200,"error":null,"output_text":"x","prompt_tokens":3,"completion_tokens":1,"cached_prompt_tokens":null,"finish_reason":"stop","engine_timings":null}"#;

    fn read(text: &str) -> Result<ParsedImport, ImportError> {
        parse(&Source::new("r.jsonl"), text.as_bytes())
    }

    #[test]
    fn records_read_line_by_line() {
        let second = LINE.replace("\"index\":0", "\"index\":1");
        let import = read(&format!("{LINE}\n\n{second}\n")).unwrap();
        assert_eq!(import.runs[0].requests.len(), 2);
        assert_eq!(import.runs[0].elapsed_ms, Some(9.0));
    }

    #[test]
    fn bad_lines_are_named() {
        let err = read(&format!("{LINE}\n{LINE}\n")).unwrap_err();
        assert_eq!(err.to_string(), "r.jsonl, line 2, $.index, field `index`: expected a unique request index, found index 0 again");
        let err = read(&LINE.replace("\"finish_ms\":9.0", "\"finish_ms\":0.5")).unwrap_err();
        assert_eq!(err.to_string(), "r.jsonl, line 1, $.finish_ms, field `finish_ms`: expected a finish at or after dispatch (1 ms), found 0.5 ms");
        let err = read(&LINE.replace("\"status\":\"ok\"", "\"status\":\"fine\"")).unwrap_err();
        assert!(
            err.to_string().starts_with("r.jsonl, line 1, column "),
            "{err}"
        );
        assert!(err.to_string().contains("fine"), "{err}");
        let err = read(&LINE.replace("\"output_text\":\"x\",", "")).unwrap_err();
        assert!(err.to_string().contains("output_text"), "{err}");
        let err = read(&LINE.replace("\"index\":0", "\"index\":\"zero\"")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "r.jsonl, line 1, column 15, $.index, field `index`: expected a non-negative whole number (u32), found string \"zero\""
        );
        let err = read(&format!("[{LINE}]")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "r.jsonl, line 1, $: expected a request record object, found an array"
        );
        let err = read(&format!("{LINE}\n{}", &LINE[..40])).unwrap_err();
        assert!(err.to_string().contains("line 2, column 40, $: expected the rest of the JSON object on this line, found the end of the line"), "{err}");
    }
}
