//! Inspect AI eval logs: the JSON log (`eval`, `plan`, `results`, `samples`) or the binary
//! `.eval` archive (a zip of `header.json` and `samples/<id>_epoch_<n>.json`).
//!
//! Each sample of the first epoch becomes one request of a quality run: its item id (a harness
//! item, `inspect:{group/}{task}{@length}:{id}`, the task's registry name split at its last `/`
//! into group and task), its prompt digest (harness, task, the sha256 of the input and choices as
//! sent, the model's generation settings), the completion and each scorer's value. Scores read
//! as Inspect reads them: `C` is 1, `I` and `N` (no answer) are 0, `P` (partial) is 0.5, which is
//! not a pass/fail score. Later epochs are not paired (one answer per item) and are counted in a
//! warning. A sample that ended in an error is an error row, in every denominator.

use std::io::{BufRead, Cursor, Read};

use kvgate_core::canonical::canonical_sha256;
use kvgate_core::harness::{
    counted_context_length, harness_prompt_sha256, HarnessStrata, ScoredRow,
};
use kvgate_core::run::{RequestRecord, RequestStatus};
use serde_json::{json, Value};

use super::{
    Granularity, HarnessReference, HarnessRow, ImportError, ImportFormat, ImportWarning,
    ParsedImport, ParsedRun, Source, StrictValue,
};

/// What the harness calls itself in item ids and prompt digests.
pub const HARNESS: &str = "inspect";

/// A larger archive or log is not an eval log this tool reads in memory.
pub const MAX_LOG_BYTES: u64 = 1 << 30;

/// One scorer value as a number: `C` 1, `I` and `N` 0, `P` 0.5; numbers and booleans as they are.
fn score_value(v: &Value) -> Result<Option<f64>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Bool(b) => Ok(Some(if *b { 1.0 } else { 0.0 })),
        Value::Number(n) => Ok(n.as_f64()),
        Value::String(s) => match s.as_str() {
            "C" => Ok(Some(1.0)),
            "I" | "N" => Ok(Some(0.0)),
            "P" => Ok(Some(0.5)),
            other => Err(format!("a score C, I, P, N or a number, found {other:?}")),
        },
        other => Err(format!(
            "a score C, I, P, N or a number, found {}",
            if other.is_object() {
                "an object"
            } else {
                "an array"
            }
        )),
    }
}

/// The text of a completion: `output.completion`, else the first choice's message content
/// (text, or the text parts of a content list).
fn completion(output: Option<&Value>) -> String {
    let Some(o) = output else {
        return String::new();
    };
    if let Some(c) = o.get("completion").and_then(Value::as_str) {
        return c.to_owned();
    }
    match o.pointer("/choices/0/message/content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The words of an input to count: text, or the contents of a messages list.
fn input_words(input: &Value) -> String {
    match input {
        Value::String(s) => s.clone(),
        Value::Array(messages) => messages
            .iter()
            .filter_map(|m| match m.get("content") {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Array(parts)) => Some(
                    parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join(""),
                ),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Unix milliseconds of an RFC 3339 time as Inspect writes it (`2026-12-04T22:55:48+00:00`,
/// fractions and `Z` allowed); `None` for anything else.
pub fn unix_ms_of_rfc3339(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| t.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &t[19..];
    let mut ms = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        let f = &frac[..digits];
        ms = format!("{:0<3}", &f[..f.len().min(3)]).parse().ok()?;
        rest = &frac[digits..];
    }
    let offset_min = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) && &o[3..4] == ":" => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (o[1..3].parse::<i64>().ok()? * 60 + o[4..6].parse::<i64>().ok()?)
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let (yy, m) = if mo <= 2 {
        (y - 1, mo + 9)
    } else {
        (y, mo - 3)
    };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + mi * 60 + s - offset_min * 60) * 1000) + ms)
}

/// Reads a log from `reader`: the archive when it starts as a zip, else the JSON log.
pub fn parse(source: &Source, reader: impl BufRead) -> Result<ParsedImport, ImportError> {
    parse_counting(source, reader, &|_| None)
}

/// [`parse`] with a token counter for the context-length stratum (the importer passes the pinned
/// tokenizer).
pub fn parse_counting(
    source: &Source,
    reader: impl BufRead,
    count_tokens: &dyn Fn(&str) -> Option<usize>,
) -> Result<ParsedImport, ImportError> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_LOG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| source.io(e))?;
    if bytes.len() as u64 > MAX_LOG_BYTES {
        return Err(source.at(
            "$",
            None,
            format!("an eval log of at most {MAX_LOG_BYTES} bytes"),
            "a larger file",
        ));
    }
    let (header, samples) = if bytes.starts_with(b"PK\x03\x04") {
        read_archive(source, &bytes)?
    } else {
        let StrictValue(log) = serde_json::from_slice(&bytes).map_err(|e| source.json(e, None))?;
        let samples = match log.get("samples") {
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, s)| (format!("$.samples[{i}]"), s.clone()))
                .collect(),
            None | Some(Value::Null) => Vec::new(),
            Some(_) => {
                return Err(source.at(
                    "$.samples",
                    Some("samples"),
                    "an array of samples",
                    "another value",
                ))
            }
        };
        (log, samples)
    };
    build(source, &header, samples, count_tokens)
}

type Samples = Vec<(String, Value)>;

fn read_archive(source: &Source, bytes: &[u8]) -> Result<(Value, Samples), ImportError> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| {
        source.at(
            "$",
            None,
            "an Inspect .eval archive (zip)",
            format!("an unreadable zip: {e}"),
        )
    })?;
    let mut read = |name: &str| -> Result<Value, ImportError> {
        let mut entry = zip.by_name(name).map_err(|e| {
            source.at(
                name,
                None,
                format!("the archive entry {name}"),
                e.to_string(),
            )
        })?;
        let mut text = Vec::new();
        entry
            .read_to_end(&mut text)
            .map_err(|e| source.at(name, None, format!("a readable {name}"), e.to_string()))?;
        let StrictValue(v) =
            serde_json::from_slice(&text).map_err(|e| source.json(e, Some(name.to_owned())))?;
        Ok(v)
    };
    let header = read("header.json")?;
    let mut names: Vec<String> = zip
        .file_names()
        .filter(|n| n.starts_with("samples/") && n.ends_with(".json"))
        .map(str::to_owned)
        .collect();
    names.sort();
    let mut samples = Vec::new();
    for name in names {
        let mut entry = zip.by_name(&name).map_err(|e| {
            source.at(
                &name,
                None,
                format!("the archive entry {name}"),
                e.to_string(),
            )
        })?;
        let mut text = Vec::new();
        entry
            .read_to_end(&mut text)
            .map_err(|e| source.at(&name, None, format!("a readable {name}"), e.to_string()))?;
        let StrictValue(v) =
            serde_json::from_slice(&text).map_err(|e| source.json(e, Some(name.clone())))?;
        samples.push((name, v));
    }
    Ok((header, samples))
}

fn build(
    source: &Source,
    header: &Value,
    samples: Samples,
    count_tokens: &dyn Fn(&str) -> Option<usize>,
) -> Result<ParsedImport, ImportError> {
    let eval = header.get("eval").ok_or_else(|| {
        source.at(
            "$.eval",
            Some("eval"),
            "the eval's header (task, model, dataset)",
            "no such field",
        )
    })?;
    let full_task = eval
        .get("task_registry_name")
        .or_else(|| eval.get("task"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| source.at("$.eval.task", Some("task"), "the task's name", "none"))?;
    let (group, task) = match full_task.rsplit_once('/') {
        Some((g, t)) => (Some(g.to_owned()), t.to_owned()),
        None => (None, full_task.to_owned()),
    };
    // The generation settings: the model's (`eval.model_generate_config`) and the task's own
    // (`plan.config`: a task's GenerateConfig, e.g. max_tokens and temperature).
    let generation = json!({
        "model": eval.get("model_generate_config").cloned().unwrap_or(Value::Null),
        "task": header.pointer("/plan/config").cloned().unwrap_or(Value::Null),
    });
    let version = eval
        .pointer("/packages/inspect_ai")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let scorer_order: Vec<String> = eval
        .get("scorers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut run = ParsedRun::new(format!("inspect · {full_task}"), Granularity::PerRequest);
    run.clocked = false;
    let mut later_epochs = 0u64;
    let mut errors = 0u64;
    let mut seen = std::collections::BTreeMap::new();
    for (at, sample) in samples {
        let path = |field: &str| format!("{at}.{field}");
        let id = match sample.get("id") {
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            other => {
                return Err(source.at(
                    path("id"),
                    Some("id"),
                    "the sample's id (number or text)",
                    format!("{other:?}"),
                ))
            }
        };
        let epoch = sample.get("epoch").and_then(Value::as_u64).unwrap_or(1);
        if epoch > 1 {
            later_epochs += 1;
            continue;
        }
        if let Some(first) = seen.insert(id.clone(), at.clone()) {
            return Err(source.at(
                path("id"),
                Some("id"),
                format!("each sample once per epoch (id {id} is at {first})"),
                "it again",
            ));
        }
        let input = sample.get("input").cloned().unwrap_or(Value::Null);
        if !(input.is_string() || input.is_array()) {
            return Err(source.at(
                path("input"),
                Some("input"),
                "the sample's input (text or messages)",
                "another value",
            ));
        }
        let choices = sample.get("choices").cloned().unwrap_or(Value::Null);
        // What was sent: each message's role and content (Inspect gives every message a random
        // id per run, which is not part of the prompt).
        let sent = match &input {
            Value::Array(messages) => Value::Array(
                messages
                    .iter()
                    .map(|m| json!({"role": m.get("role"), "content": m.get("content")}))
                    .collect(),
            ),
            other => other.clone(),
        };
        let prompt = canonical_sha256(&json!({"input": sent, "choices": choices}));
        let context_length = count_tokens(&input_words(&input)).map(counted_context_length);
        let mut scores = Vec::new();
        if let Some(Value::Object(map)) = sample.get("scores") {
            let mut names: Vec<&String> = map.keys().collect();
            names.sort_by_key(|n| {
                scorer_order
                    .iter()
                    .position(|o| o == *n)
                    .unwrap_or(usize::MAX)
            });
            for name in names {
                let value = map[name].get("value").unwrap_or(&Value::Null);
                let value = score_value(value).map_err(|e| {
                    let (expected, found) = e.split_once(", found ").unwrap_or((&e, ""));
                    source.at(
                        path(&format!("scores.{name}.value")),
                        Some(name),
                        expected.to_owned(),
                        found.to_owned(),
                    )
                })?;
                scores.push((name.clone(), value));
            }
        }
        let error = sample.get("error").filter(|e| !e.is_null()).map(|e| {
            e.get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| e.to_string())
        });
        if error.is_some() {
            errors += 1;
        }
        // A task KV Gate exported names its fixture item and approved answer in the metadata.
        let kvgate = sample
            .pointer("/metadata/kvgate_item")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let expected = match (&kvgate, sample.pointer("/metadata/expected_answer")) {
            (Some(_), Some(e)) => Some(
                serde_json::from_value::<kvgate_core::validator::ExpectedAnswer>(e.clone())
                    .map_err(|e| {
                        source.at(
                            path("metadata.expected_answer"),
                            Some("expected_answer"),
                            "an approved answer object as KV Gate exported it",
                            e.to_string(),
                        )
                    })?,
            ),
            (Some(_), None) => {
                return Err(source.at(
                    path("metadata.expected_answer"),
                    Some("expected_answer"),
                    "the approved answer of the KV Gate item",
                    "none",
                ))
            }
            _ => None,
        };
        let item_id = match &kvgate {
            Some(item) => item.clone(),
            None => HarnessStrata {
                harness: HARNESS.into(),
                task: task.clone(),
                group: group.clone(),
                context_length,
            }
            .item_id(&id),
        };
        let index = run.requests.len() as u32;
        run.requests.push(RequestRecord {
            index,
            item_id: Some(item_id),
            prompt_sha256: Some(harness_prompt_sha256(
                HARNESS,
                full_task,
                &prompt,
                &generation,
            )),
            planned_arrival_ms: 0.0,
            dispatch_ms: None,
            client_delay_ms: None,
            first_token_ms: None,
            chunk_times_ms: Vec::new(),
            finish_ms: None,
            status: if error.is_some() {
                RequestStatus::Error
            } else {
                RequestStatus::Ok
            },
            http_status: None,
            error,
            output_text: completion(sample.get("output")),
            prompt_tokens: sample
                .pointer("/output/usage/input_tokens")
                .and_then(Value::as_u64),
            completion_tokens: sample
                .pointer("/output/usage/output_tokens")
                .and_then(Value::as_u64),
            cached_prompt_tokens: None,
            finish_reason: sample
                .pointer("/output/choices/0/stop_reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
            engine_timings: None,
        });
        let corpus_sha256 = kvgate
            .as_ref()
            .and(sample.pointer("/metadata/corpus_items_sha256"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        run.harness.push(HarnessRow {
            at: at.clone(),
            scored: ScoredRow {
                task: task.clone(),
                filter: "none".into(),
                scores,
            },
            expected,
            corpus_sha256,
            filtered: None,
            reference: HarnessReference::from_values(&input, sample.get("target")),
        });
    }
    if run.requests.is_empty() {
        return Err(source.at(
            "$.samples",
            Some("samples"),
            "at least one sample of the first epoch (was the log written with log_samples?)",
            "none",
        ));
    }
    let mut warnings = Vec::new();
    if later_epochs > 0 {
        warnings.push(ImportWarning::new(
            "$.samples[].epoch",
            "samples of epochs after the first are not imported: a pair takes one answer per item",
            later_epochs,
        ));
    }
    if errors > 0 {
        warnings.push(ImportWarning::new(
            "$.samples[].error",
            "samples that ended in an error are error rows, in every denominator",
            errors,
        ));
    }
    run.planned = Some(run.requests.len() as i64);
    // The log's start time anchors the run.
    run.wall_anchor_unix_ms = header
        .pointer("/stats/started_at")
        .or_else(|| eval.get("created"))
        .and_then(Value::as_str)
        .and_then(unix_ms_of_rfc3339);
    run.config = json!({
        "harness": HARNESS,
        "task": task,
        "group": group,
        "task_registry_name": full_task,
        "task_version": eval.get("task_version"),
        "model": eval.get("model"),
        "generation": generation,
        "dataset": eval.get("dataset"),
        "eval_config": eval.get("config"),
        "inspect_ai_version": version,
        "status": header.get("status"),
    });
    let mut parsed = ParsedImport::new(ImportFormat::Inspect);
    parsed.tool = Some(match version {
        Some(v) => format!("inspect_ai {v}"),
        None => "inspect_ai".into(),
    });
    parsed.runs.push(run);
    parsed.warnings = warnings;
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_read_with_their_offset() {
        assert_eq!(unix_ms_of_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            unix_ms_of_rfc3339("2026-12-04T22:55:48+00:00"),
            Some(1_796_424_948_000)
        );
        // The same instant two hours east.
        assert_eq!(
            unix_ms_of_rfc3339("2026-12-05T00:55:48.250+02:00"),
            Some(1_796_424_948_250)
        );
        assert_eq!(unix_ms_of_rfc3339("2026-12-04 22:55:48"), None);
        assert_eq!(unix_ms_of_rfc3339("2026-13-04T22:55:48Z"), None);
        assert_eq!(
            unix_ms_of_rfc3339("2026-12-04T22:55:48"),
            None,
            "no offset, no instant"
        );
    }
}
