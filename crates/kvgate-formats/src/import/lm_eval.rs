//! lm-evaluation-harness `--log_samples` output: `samples_<task>_<date>.jsonl`, one row per
//! document and filter, with the `results_<date>.json` written beside it in the same run.
//!
//! Each row becomes one request of a quality run: its item id (a harness item,
//! `lm-eval:{group/}{task}{@length}:{doc_id}`, or the fixture item id of a task KV Gate exported),
//! its prompt digest (harness, task, `prompt_hash`, generation settings: `arguments.gen_args_0.
//! arg_1`), the response (`resps[0][0]`) and its scores. Which metric decides a task, and so each
//! verdict, is the importer's rule (`kvgate_core::harness`), not the parser's. Rows carry no
//! timing: the run is unclocked, feeding pairs only.
//!
//! The task name is the file's (`samples_<task>_<date>.jsonl`); the results file adds the
//! harness version, each task's version, group and generation settings.

use std::collections::BTreeMap;
use std::io::BufRead;

use kvgate_core::harness::{
    counted_context_length, harness_prompt_sha256, HarnessStrata, ScoredRow,
};
use kvgate_core::run::{RequestRecord, RequestStatus};
use kvgate_core::validator::ExpectedAnswer;
use serde_json::{json, Value};

use super::{
    Granularity, HarnessReference, HarnessRow, ImportError, ImportFormat, ImportWarning,
    ParsedImport, ParsedRun, Source, StrictValue,
};

/// What the harness calls itself in item ids and prompt digests.
pub const HARNESS: &str = "lm-eval";

/// The task of a samples file, from its name: `samples_<task>_<YYYY-MM-DDTHH-MM-SS.ffffff>.jsonl`.
pub fn task_of_file_name(name: &str) -> Option<(String, String)> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let stem = base.strip_prefix("samples_")?.strip_suffix(".jsonl")?;
    // The date is the last `_`-separated part and starts with four digits and a dash.
    let (task, date) = stem.rsplit_once('_')?;
    let looks_like_date = date.len() >= 10
        && date[..4].bytes().all(|b| b.is_ascii_digit())
        && date.as_bytes()[4] == b'-';
    (looks_like_date && !task.is_empty()).then(|| (task.to_owned(), date.to_owned()))
}

/// The name of the results file lm-eval writes with a samples file.
pub fn results_file_name(samples_name: &str) -> Option<String> {
    task_of_file_name(samples_name).map(|(_, date)| format!("results_{date}.json"))
}

/// The text of a prompt as the harness sent it: `arg_0` is a string (a chat-messages list is
/// serialised as JSON), or a list whose first element is that string.
fn prompt_text(arg0: &Value) -> Option<String> {
    match arg0 {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => a.first().and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

/// The words of a prompt to count: a chat-messages list's contents, else the text itself.
fn prompt_words(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(messages)) => messages
            .iter()
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => text.to_owned(),
    }
}

fn doc_id_text(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// Parses a samples file. `count_tokens` counts a prompt's tokens for the context-length stratum
/// of tasks that configure no length (the importer passes the pinned tokenizer).
pub fn parse(
    source: &Source,
    mut reader: impl BufRead,
    count_tokens: &dyn Fn(&str) -> Option<usize>,
) -> Result<ParsedImport, ImportError> {
    let Some((task, date)) = task_of_file_name(&source.file) else {
        return Err(source.at(
            "$",
            None,
            "a file named samples_<task>_<date>.jsonl, as lm-eval --log_samples writes it (the task is read from the name)",
            format!("{:?}", source.file),
        ));
    };
    let mut run = ParsedRun::new(format!("lm-eval · {task}"), Granularity::PerRequest);
    run.clocked = false;
    let mut warnings = Vec::new();
    let mut line = String::new();
    let mut number = 0u64;
    let mut seen: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut exported = 0u64;
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(|e| source.io(e))?;
        if n == 0 {
            break;
        }
        number += 1;
        if line.trim().is_empty() {
            continue;
        }
        let StrictValue(row) =
            serde_json::from_str(&line).map_err(|e| source.json_line(e, number, None))?;
        let at = |path: &str| Some(format!("$.{path}"));
        let field = |key: &str| row.get(key);
        let doc_id = field("doc_id").and_then(doc_id_text).ok_or_else(|| {
            source.line(
                number,
                at("doc_id"),
                Some("doc_id"),
                "a document id (number or text)",
                found(field("doc_id")),
            )
        })?;
        let filter = match field("filter") {
            Some(Value::String(f)) => f.clone(),
            None => "none".to_owned(),
            other => {
                return Err(source.line(
                    number,
                    at("filter"),
                    Some("filter"),
                    "the filter's name",
                    found(other),
                ))
            }
        };
        if let Some(first) = seen.insert((doc_id.clone(), filter.clone()), number) {
            return Err(source.line(
                number,
                at("doc_id"),
                Some("doc_id"),
                format!("each document once per filter (doc {doc_id}, filter {filter} is on line {first})"),
                "it again",
            ));
        }
        let prompt_hash = match field("prompt_hash") {
            Some(Value::String(h)) if !h.is_empty() => h.clone(),
            other => {
                return Err(source.line(
                    number,
                    at("prompt_hash"),
                    Some("prompt_hash"),
                    "the sha256 of the prompt lm-eval sent (lm-eval ≥ 0.4 writes it)",
                    found(other),
                ))
            }
        };
        let args = row
            .get("arguments")
            .and_then(|a| a.get("gen_args_0"))
            .ok_or_else(|| {
                source.line(
                    number,
                    at("arguments.gen_args_0"),
                    Some("arguments"),
                    "the request's arguments (generate_until tasks)",
                    found(field("arguments")),
                )
            })?;
        let prompt = args.get("arg_0").and_then(prompt_text).ok_or_else(|| {
            source.line(
                number,
                at("arguments.gen_args_0.arg_0"),
                Some("arg_0"),
                "the prompt text",
                found(args.get("arg_0")),
            )
        })?;
        let generation = args.get("arg_1").cloned().unwrap_or(Value::Null);
        if !(generation.is_object() || generation.is_null()) {
            return Err(source.line(
                number,
                at("arguments.gen_args_0.arg_1"),
                Some("arg_1"),
                "the generation settings object",
                found(Some(&generation)),
            ));
        }
        let response = match field("resps") {
            Some(Value::Array(outer)) => match outer.first() {
                Some(Value::Array(inner)) => {
                    inner.first().and_then(Value::as_str).map(str::to_owned)
                }
                Some(Value::String(s)) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        }
        .ok_or_else(|| {
            source.line(
                number,
                at("resps"),
                Some("resps"),
                "the model's response ([[\"text\"]])",
                found(field("resps")),
            )
        })?;
        let filtered = match field("filtered_resps") {
            Some(Value::Array(a)) => a.first().map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }),
            _ => None,
        };
        let metrics: Vec<String> = match field("metrics") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|m| m.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    source.line(
                        number,
                        at("metrics"),
                        Some("metrics"),
                        "the metric names (text)",
                        found(field("metrics")),
                    )
                })?,
            other => {
                return Err(source.line(
                    number,
                    at("metrics"),
                    Some("metrics"),
                    "the list of the task's metrics",
                    found(other),
                ))
            }
        };
        let mut scores = Vec::new();
        for m in &metrics {
            let value = match row.get(m) {
                None | Some(Value::Null) => None,
                Some(Value::Number(v)) => v.as_f64(),
                Some(Value::Bool(b)) => Some(if *b { 1.0 } else { 0.0 }),
                other => {
                    return Err(source.line(
                        number,
                        at(m),
                        Some(m),
                        "the metric's value (a number)",
                        found(other),
                    ))
                }
            };
            scores.push((m.clone(), value));
        }
        // The configured length of a long-context task (RULER's metric per sequence length):
        // the numeric metric this row was scored at; else the prompt's counted tokens.
        let configured = scores
            .iter()
            .filter(|(m, v)| m.parse::<u64>().is_ok() && v.is_some_and(|v| v != -1.0))
            .map(|(m, _)| m.clone())
            .next();
        let context_length =
            configured.or_else(|| count_tokens(&prompt_words(&prompt)).map(counted_context_length));
        let doc = field("doc");
        let kvgate = doc
            .and_then(|d| d.get("kvgate_item"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let expected = match (&kvgate, doc.and_then(|d| d.get("expected_answer"))) {
            (Some(_), Some(e)) => Some(
                serde_json::from_value::<ExpectedAnswer>(e.clone()).map_err(|e| {
                    source.line(
                        number,
                        at("doc.expected_answer"),
                        Some("expected_answer"),
                        "an approved answer object as KV Gate exported it",
                        e.to_string(),
                    )
                })?,
            ),
            (Some(_), None) => {
                return Err(source.line(
                    number,
                    at("doc.expected_answer"),
                    Some("expected_answer"),
                    "the approved answer of the KV Gate item",
                    "none",
                ))
            }
            _ => None,
        };
        let item_id = match &kvgate {
            Some(item) => {
                exported += 1;
                item.clone()
            }
            None => HarnessStrata {
                harness: HARNESS.into(),
                task: task.clone(),
                group: None,
                context_length,
            }
            .item_id(&doc_id),
        };
        let index = run.requests.len() as u32;
        run.requests.push(RequestRecord {
            index,
            item_id: Some(item_id),
            prompt_sha256: Some(harness_prompt_sha256(
                HARNESS,
                &task,
                &prompt_hash,
                &generation,
            )),
            planned_arrival_ms: 0.0,
            dispatch_ms: None,
            client_delay_ms: None,
            first_token_ms: None,
            chunk_times_ms: Vec::new(),
            finish_ms: None,
            status: RequestStatus::Ok,
            http_status: None,
            error: None,
            output_text: response,
            prompt_tokens: None,
            completion_tokens: None,
            cached_prompt_tokens: None,
            finish_reason: None,
            engine_timings: None,
        });
        let corpus_sha256 = kvgate
            .as_ref()
            .and(doc)
            .and_then(|d| d.get("corpus_items_sha256"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        run.harness.push(HarnessRow {
            at: format!("line {number}"),
            scored: ScoredRow {
                task: task.clone(),
                filter,
                scores,
            },
            expected,
            corpus_sha256,
            filtered,
            // `arg_0` as read above (a chat-messages list arrives as JSON text, maybe in a list).
            reference: HarnessReference::from_values(
                &Value::String(prompt.clone()),
                field("target"),
            ),
        });
    }
    if run.requests.is_empty() {
        return Err(source.at("$", None, "at least one sample row", "an empty file"));
    }
    if exported > 0 && exported < run.requests.len() as u64 {
        return Err(source.at(
            "$.doc.kvgate_item",
            Some("kvgate_item"),
            "every row of a KV Gate task to name its item",
            format!("{exported} of {} rows naming one", run.requests.len()),
        ));
    }
    if exported > 0 {
        warnings.push(ImportWarning::new(
            "$.doc.kvgate_item",
            "a task KV Gate exported: each response is judged by KV Gate's validator against the item's approved answer, not by the harness metric",
            exported,
        ));
    }
    run.config = json!({
        "harness": HARNESS,
        "task": task,
        "date": date,
        "rows": run.requests.len(),
        "kvgate_task": exported > 0,
    });
    run.planned = Some(run.requests.len() as i64);
    let mut parsed = ParsedImport::new(ImportFormat::LmEvalSamples);
    parsed.tool = Some("lm-eval".into());
    parsed.runs.push(run);
    parsed.warnings = warnings;
    Ok(parsed)
}

fn found(v: Option<&Value>) -> String {
    match v {
        None => "no such field".into(),
        Some(Value::Null) => "null".into(),
        Some(Value::String(s)) => format!("{:?}", truncate(s)),
        Some(other) => truncate(&other.to_string()),
    }
}

fn truncate(s: &str) -> String {
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s.to_owned()
    }
}

/// Adds what the results file says to a parsed samples file: the harness version (the import's
/// tool), the task's version, n-shot, generation settings and model configuration (into the
/// run's configuration, with the results file's name and sha256), and the task's group (into
/// each harness item id). A results file that does not hold the task is an error naming it.
pub fn attach_results(
    parsed: &mut ParsedImport,
    results: &Source,
    sha256: &str,
    text: &str,
) -> Result<(), ImportError> {
    let StrictValue(doc) = serde_json::from_str(text).map_err(|e| results.json(e, None))?;
    let version = doc.get("lm_eval_version").and_then(Value::as_str);
    if let Some(v) = version {
        parsed.tool = Some(format!("lm-eval {v}"));
    }
    for run in &mut parsed.runs {
        let task = run.config["task"].as_str().unwrap_or_default().to_owned();
        let config = doc.get("configs").and_then(|c| c.get(&task));
        if config.is_none() && doc.get("results").and_then(|r| r.get(&task)).is_none() {
            return Err(results.at(
                format!("$.configs.{task}"),
                Some(&task),
                format!("the task {task} of the samples file"),
                "a results file of other tasks (was it written by the same lm-eval run?)",
            ));
        }
        let group = doc
            .get("group_subtasks")
            .and_then(Value::as_object)
            .and_then(|groups| {
                groups.iter().find_map(|(g, tasks)| {
                    tasks
                        .as_array()?
                        .iter()
                        .any(|t| t.as_str() == Some(&task))
                        .then(|| g.clone())
                })
            });
        if let Some(group) = &group {
            for r in &mut run.requests {
                let Some(id) = r.item_id.as_deref() else {
                    continue;
                };
                if let Some(mut s) = HarnessStrata::from_item_id(id) {
                    let doc_id = id.splitn(3, ':').nth(2).unwrap_or_default().to_owned();
                    s.group = Some(group.clone());
                    r.item_id = Some(s.item_id(&doc_id));
                }
            }
        }
        // lm-eval's `date` is the run's start, in Unix seconds.
        if let Some(date) = doc
            .get("date")
            .and_then(Value::as_f64)
            .filter(|d| d.is_finite() && *d > 0.0)
        {
            run.wall_anchor_unix_ms = Some((date * 1000.0) as i64);
        }
        if let Value::Object(c) = &mut run.config {
            c.insert(
                "results_file".into(),
                json!({"name": results.file, "sha256": sha256}),
            );
            c.insert("lm_eval_version".into(), json!(version));
            c.insert("group".into(), json!(group));
            c.insert(
                "task_version".into(),
                doc.get("versions")
                    .and_then(|v| v.get(&task))
                    .cloned()
                    .unwrap_or(Value::Null),
            );
            c.insert(
                "n_shot".into(),
                doc.get("n-shot")
                    .and_then(|v| v.get(&task))
                    .cloned()
                    .unwrap_or(Value::Null),
            );
            c.insert(
                "generation_kwargs".into(),
                config
                    .and_then(|c| c.get("generation_kwargs"))
                    .cloned()
                    .unwrap_or(Value::Null),
            );
            c.insert(
                "model".into(),
                doc.get("config").cloned().unwrap_or(Value::Null),
            );
        }
    }
    Ok(())
}
