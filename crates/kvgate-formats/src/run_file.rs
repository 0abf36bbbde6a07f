//! KV Gate's own run-record file (`jsonl`): one finished run, written by `kvgate run export` and
//! read back by the importer and by the recorded demo study.
//!
//! Line 1 is the header (what was run, against which frozen manifest, its configuration and
//! outcome); every further line is one object with exactly one key: `request` (a
//! [`RequestRecord`] with its repeat, warm-up flag and verdict), `evidence` (raw evidence text
//! with its sha256) or `scrape` (one `/metrics` scrape, normalized). Reading checks every digest
//! and names the line, the JSON path, what was expected and what was found.

use kvgate_core::canonical::{canonical_json, sha256_hex};
use kvgate_core::run::RequestRecord;
use kvgate_core::validator::Verdict;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `format` of line 1.
pub const RUN_FILE_FORMAT: &str = "kvgate-run";
pub const RUN_FILE_VERSION: u32 = 1;

/// Line 1 of a run file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunFileHeader {
    /// Always `kvgate-run`.
    pub format: String,
    /// Always 1.
    pub version: u32,
    /// `quality` or `load`.
    pub kind: String,
    pub cell: String,
    /// Digest of the frozen manifest the run was bound to.
    pub manifest_sha256: String,
    pub label: String,
    /// `recorded` (run by KV Gate), `imported` or `synthetic_demo`.
    pub provenance: String,
    pub config: Value,
    /// sha256 of the canonical JSON of `config`.
    pub config_sha256: String,
    pub wall_anchor_unix_ms: i64,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// `completed`, `cancelled`, `interrupted` or `failed`.
    pub state: String,
    pub elapsed_ms: Option<f64>,
    pub planned: Option<i64>,
    pub note: Option<String>,
}

/// One request line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunFileRequest {
    pub record: RequestRecord,
    pub repeat: u32,
    pub warmup: bool,
    pub verdict: Option<Verdict>,
}

/// One evidence line: the raw text exactly as captured, and its sha256.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunFileEvidence {
    pub kind: String,
    pub source_name: String,
    pub sha256: String,
    pub text: String,
    pub parsed_json: Option<String>,
}

/// One scrape line: run-clock time and the normalized values (or the scrape's error).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunFileScrape {
    pub at_ms: f64,
    pub values: Value,
}

/// A whole run file.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFile {
    pub header: RunFileHeader,
    pub requests: Vec<RunFileRequest>,
    pub evidence: Vec<RunFileEvidence>,
    pub scrapes: Vec<RunFileScrape>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Request(Box<RunFileRequest>),
    Evidence(RunFileEvidence),
    Scrape(RunFileScrape),
}

/// Why a run file cannot be read. Lines count from 1.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{source_name} line {line}{}: expected {expected}, found {found}", path.as_deref().map(|p| format!(", {p}")).unwrap_or_default())]
pub struct RunFileError {
    pub source_name: String,
    pub line: usize,
    pub path: Option<String>,
    pub expected: String,
    pub found: String,
}

/// Renders a run file: header, then requests, evidence and scrapes, one JSON object per line.
pub fn render_run_file(file: &RunFile) -> String {
    let mut out = String::new();
    let mut push = |value: Value| {
        out.push_str(&serde_json::to_string(&value).expect("a JSON value always serializes"));
        out.push('\n');
    };
    push(serde_json::to_value(&file.header).expect("the header serializes"));
    for r in &file.requests {
        push(
            serde_json::to_value(Line::Request(Box::new(r.clone()))).expect("a request serializes"),
        );
    }
    for e in &file.evidence {
        push(serde_json::to_value(Line::Evidence(e.clone())).expect("evidence serializes"));
    }
    for s in &file.scrapes {
        push(serde_json::to_value(Line::Scrape(s.clone())).expect("a scrape serializes"));
    }
    out
}

/// Reads and checks a run file: the header's format and version, the configuration digest,
/// each evidence digest, unique request indexes, and every line's shape.
pub fn parse_run_file(source_name: &str, text: &str) -> Result<RunFile, RunFileError> {
    let err = |line: usize, path: Option<&str>, expected: &str, found: String| RunFileError {
        source_name: source_name.to_owned(),
        line,
        path: path.map(str::to_owned),
        expected: expected.to_owned(),
        found,
    };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((first, header_text)) = lines.next() else {
        return Err(err(
            1,
            None,
            "a kvgate-run header line",
            "an empty file".into(),
        ));
    };
    let header: RunFileHeader = serde_json::from_str(header_text)
        .map_err(|e| err(first, None, "the kvgate-run header object", e.to_string()))?;
    if header.format != RUN_FILE_FORMAT {
        return Err(err(
            first,
            Some("$.format"),
            &format!("{RUN_FILE_FORMAT:?}"),
            format!("{:?}", header.format),
        ));
    }
    if header.version != RUN_FILE_VERSION {
        return Err(err(
            first,
            Some("$.version"),
            &RUN_FILE_VERSION.to_string(),
            header.version.to_string(),
        ));
    }
    let config_sha = sha256_hex(canonical_json(&header.config).as_bytes());
    if config_sha != header.config_sha256 {
        return Err(err(
            first,
            Some("$.config_sha256"),
            &format!("the sha256 of the canonical config, {config_sha}"),
            header.config_sha256.clone(),
        ));
    }
    let mut file = RunFile {
        header,
        requests: Vec::new(),
        evidence: Vec::new(),
        scrapes: Vec::new(),
    };
    let mut seen = std::collections::HashSet::new();
    for (n, line) in lines {
        let parsed: Line = serde_json::from_str(line).map_err(|e| {
            err(
                n,
                None,
                "an object with one key: request, evidence or scrape",
                e.to_string(),
            )
        })?;
        match parsed {
            Line::Request(r) => {
                if !seen.insert((r.warmup, r.record.index)) {
                    return Err(err(
                        n,
                        Some("$.request.record.index"),
                        "an index not used before in this run",
                        format!("{} again", r.record.index),
                    ));
                }
                file.requests.push(*r);
            }
            Line::Evidence(e) => {
                let digest = sha256_hex(e.text.as_bytes());
                if digest != e.sha256 {
                    return Err(err(
                        n,
                        Some("$.evidence.sha256"),
                        &format!("the sha256 of the evidence text, {digest}"),
                        e.sha256,
                    ));
                }
                file.evidence.push(e);
            }
            Line::Scrape(s) => file.scrapes.push(s),
        }
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvgate_core::run::RequestStatus;

    fn sample() -> RunFile {
        let config = serde_json::json!({"kind": "quality", "seed": 1});
        RunFile {
            header: RunFileHeader {
                format: RUN_FILE_FORMAT.into(),
                version: 1,
                kind: "quality".into(),
                cell: "B0".into(),
                manifest_sha256: "a".repeat(64),
                label: "quality · B0".into(),
                provenance: "recorded".into(),
                config_sha256: sha256_hex(canonical_json(&config).as_bytes()),
                config,
                wall_anchor_unix_ms: 1_700_000_000_000,
                started_at: "2026-12-01T08:00:00.000Z".into(),
                finished_at: Some("2026-12-01T08:01:00.000Z".into()),
                state: "completed".into(),
                elapsed_ms: Some(60_000.0),
                planned: Some(1),
                note: None,
            },
            requests: vec![RunFileRequest {
                record: RequestRecord {
                    index: 0,
                    item_id: Some("i0".into()),
                    prompt_sha256: None,
                    planned_arrival_ms: 0.0,
                    dispatch_ms: Some(0.5),
                    client_delay_ms: Some(0.5),
                    first_token_ms: None,
                    chunk_times_ms: vec![],
                    finish_ms: None,
                    status: RequestStatus::Timeout,
                    http_status: Some(200),
                    error: None,
                    output_text: String::new(),
                    prompt_tokens: None,
                    completion_tokens: None,
                    cached_prompt_tokens: None,
                    finish_reason: None,
                    engine_timings: None,
                },
                repeat: 0,
                warmup: false,
                verdict: None,
            }],
            evidence: vec![RunFileEvidence {
                kind: "startup_log".into(),
                source_name: "f16.log".into(),
                sha256: sha256_hex(b"llama_kv_cache: size = 45.00 MiB"),
                text: "llama_kv_cache: size = 45.00 MiB".into(),
                parsed_json: None,
            }],
            scrapes: vec![RunFileScrape {
                at_ms: 1000.0,
                values: serde_json::json!({"values": {"requests_running": 1.0}}),
            }],
        }
    }

    #[test]
    fn run_file_round_trips_with_absent_measurements() {
        let text = render_run_file(&sample());
        assert_eq!(text.lines().count(), 4);
        assert!(text.contains("\"first_token_ms\":null"), "{text}");
        let back = parse_run_file("run.jsonl", &text).unwrap();
        assert_eq!(back, sample());
    }

    #[test]
    fn run_file_errors_name_line_path_expected_and_found() {
        let text = render_run_file(&sample());
        let tampered = text.replace("size = 45.00 MiB\"", "size = 23.91 MiB\"");
        let e = parse_run_file("run.jsonl", &tampered).unwrap_err();
        assert_eq!((e.line, e.path.as_deref()), (3, Some("$.evidence.sha256")));
        assert!(
            e.to_string()
                .starts_with("run.jsonl line 3, $.evidence.sha256: expected the sha256"),
            "{e}"
        );

        let tampered = text.replacen("\"seed\":1", "\"seed\":2", 1);
        let e = parse_run_file("run.jsonl", &tampered).unwrap_err();
        assert_eq!((e.line, e.path.as_deref()), (1, Some("$.config_sha256")));

        let mut lines: Vec<&str> = text.lines().collect();
        let dup = lines[1].to_owned();
        lines.insert(2, &dup);
        let e = parse_run_file("run.jsonl", &lines.join("\n")).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.to_string().contains("0 again"), "{e}");

        let e = parse_run_file("run.jsonl", &text.replace("\"repeat\":0", "\"repeat\":-1"))
            .unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e = parse_run_file("run.jsonl", &text.replace("kvgate-run", "other")).unwrap_err();
        assert_eq!(e.path.as_deref(), Some("$.format"));
        let e = parse_run_file("run.jsonl", "").unwrap_err();
        assert!(e.to_string().contains("an empty file"), "{e}");
        let e = parse_run_file("run.jsonl", &format!("{text}{{\"other\":1}}\n")).unwrap_err();
        assert_eq!(e.line, 5, "{e}");
    }
}
