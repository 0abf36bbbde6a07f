//! vLLM and llama.cpp startup logs as import sources: the log is kept verbatim as the cell's
//! compatibility evidence. A file in which no line of the named engine is recognised is refused
//! (it is probably not that engine's startup log).

use std::io::{BufRead, Read};

use super::{
    Granularity, ImportError, ImportFormat, ParsedEvidence, ParsedImport, ParsedRun, Source,
};
use crate::startup_log::{parse_startup_log, StartupEvidence};

/// Startup logs larger than this are refused: a startup log is kilobytes, a file this large is
/// a whole server log and should be cut to its startup first.
pub const MAX_LOG_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    Vllm,
    LlamaCpp,
}

/// The whole file as text: at most `max` bytes (`expected` and `found` say so when larger),
/// UTF-8 (the first byte that is not is named by line and offset).
pub(super) fn read_bounded_text(
    source: &Source,
    reader: impl Read,
    max: u64,
    expected: String,
    found: &str,
) -> Result<String, ImportError> {
    let mut bytes = Vec::new();
    reader
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| source.io(e))?;
    if bytes.len() as u64 > max {
        return Err(source.at("$", None, expected, found));
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..valid]
            .iter()
            .filter(|b| **b == b'\n')
            .count() as u64
            + 1;
        source.line(
            line,
            None,
            None,
            "UTF-8 text",
            format!("a byte that is not UTF-8 at offset {valid}"),
        )
    })
}

/// The whole log as text, at most [`MAX_LOG_BYTES`].
fn read_text(source: &Source, reader: impl Read) -> Result<String, ImportError> {
    read_bounded_text(
        source,
        reader,
        MAX_LOG_BYTES,
        format!("a startup log of at most {} MiB", MAX_LOG_BYTES >> 20),
        "a larger file: cut the server log to its startup lines",
    )
}

/// A startup log of either engine given as a run's evidence: read as an import reads one, and
/// refused unless at least one of its lines is recognised. Returns the text and what was
/// recognised in it.
pub fn read_startup_log(
    source: &Source,
    reader: impl Read,
) -> Result<(String, StartupEvidence), ImportError> {
    let text = read_text(source, reader)?;
    let evidence = parse_startup_log(&text);
    one_start(source, &evidence)?;
    if evidence == StartupEvidence::default() {
        return Err(source.at(
            "$",
            None,
            "a vLLM or llama.cpp startup log",
            format!(
                "no line of one in its {} line(s) (e.g. `llama_kv_cache: size = …` or `Using fp8 \
                 data type to store kv cache`)",
                text.lines().count()
            ),
        ));
    }
    Ok((text, evidence))
}

/// A log holding several server starts (a file appended to across restarts) cannot say which
/// start a run talked to: refused, naming the starts, never read as its first.
fn one_start(source: &Source, evidence: &StartupEvidence) -> Result<(), ImportError> {
    if evidence.starts.len() <= 1 {
        return Ok(());
    }
    let lines: Vec<String> = evidence.starts.iter().map(usize::to_string).collect();
    Err(source.line(
        evidence.starts[1] as u64,
        None,
        None,
        "the log of one server start",
        format!(
            "{} server starts (`system_info:` at lines {}): cut the log to the start the run \
             talked to",
            evidence.starts.len(),
            lines.join(", ")
        ),
    ))
}

pub fn parse(
    source: &Source,
    reader: impl BufRead,
    kind: LogKind,
) -> Result<ParsedImport, ImportError> {
    let text = read_text(source, reader)?;
    let evidence = parse_startup_log(&text);
    one_start(source, &evidence)?;
    // Lines only llama.cpp prints, and lines only vLLM prints: a log of the other engine is
    // refused by name rather than read as this one (llama.cpp's `flash_attn = enabled` would
    // otherwise pass for a vLLM attention backend).
    let llama_line = evidence
        .llama_kv_cache
        .as_ref()
        .map(|f| f.line)
        .or(evidence.flash_attention.as_ref().map(|f| f.line));
    let vllm_line = evidence
        .available_kv_cache_gib
        .as_ref()
        .map(|f| f.line)
        .or(evidence.kv_cache_tokens.as_ref().map(|f| f.line))
        .or(evidence.max_concurrency.as_ref().map(|f| f.line))
        .or(evidence.engine_version.as_ref().map(|f| f.line))
        .or(evidence
            .startup_failure
            .as_ref()
            .filter(|_| llama_line.is_none())
            .map(|f| f.line))
        .or(evidence
            .attention_backend
            .as_ref()
            .filter(|_| llama_line.is_none())
            .map(|f| f.line))
        .or(evidence
            .kv_cache_dtype
            .as_ref()
            .filter(|_| llama_line.is_none())
            .map(|f| f.line));
    let (format, engine, other) = match kind {
        LogKind::Vllm => (
            ImportFormat::VllmLog,
            "vLLM",
            llama_line.map(|l| (l, "llama.cpp", ImportFormat::LlamacppLog)),
        ),
        LogKind::LlamaCpp => (
            ImportFormat::LlamacppLog,
            "llama.cpp",
            vllm_line.map(|l| (l, "vLLM", ImportFormat::VllmLog)),
        ),
    };
    let recognised = match kind {
        LogKind::Vllm => vllm_line.is_some() && llama_line.is_none(),
        LogKind::LlamaCpp => llama_line.is_some(),
    };
    if !recognised {
        let lines = text.lines().count();
        let expected = format!(
            "a {engine} startup log (attention backend, KV cache dtype or KV cache size lines)"
        );
        return Err(match other {
            Some((line, other, other_format)) => source.line(
                line as u64,
                None,
                None,
                expected,
                format!("a {other} startup line: import this log as {other_format}"),
            ),
            None => source.at(
                "$",
                None,
                expected,
                format!("{lines} line(s), none of them a {engine} startup line KV Gate recognises"),
            ),
        });
    }
    let mut import = ParsedImport::new(format);
    import.tool = Some(engine.to_owned());
    let mut run = ParsedRun::new(format!("{engine} startup log"), Granularity::Evidence);
    run.config = serde_json::json!({ "source": format.as_str() });
    run.evidence.push(ParsedEvidence {
        kind: "startup_log".to_owned(),
        source_name: source.file.clone(),
        text,
        startup: Some(evidence),
    });
    import.runs.push(run);
    Ok(import)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_startup_log_of_either_engine_is_read_and_anything_else_refused() {
        let source = Source::new("server.log");
        let llama = "llama_context: flash_attn = enabled\n";
        let (text, parsed) = read_startup_log(&source, llama.as_bytes()).unwrap();
        assert_eq!(text, llama);
        assert_eq!(parsed.flash_attention.map(|f| f.value), Some(true));
        let vllm = "INFO [cache.py:1] Using fp8 data type to store kv cache.\n";
        assert!(read_startup_log(&source, vllm.as_bytes()).is_ok());
        let err = read_startup_log(&source, "[package]\nname = \"x\"\n".as_bytes()).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "server.log, $: expected a vLLM or llama.cpp startup log, found no line of one \
                 in its 2 line(s)"
            ),
            "{err}"
        );
        let err = read_startup_log(&source, &b"ok\n\xff"[..]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "server.log, line 2: expected UTF-8 text, found a byte that is not UTF-8 at offset 3"
        );
    }

    #[test]
    fn a_llama_log_is_kept_verbatim() {
        let text = "llama_context: flash_attn    = disabled\nllama_kv_cache: size =   45.00 MiB (  2048 cells,  30 layers,  1/1 seqs), K (f16):   22.50 MiB, V (f16):   22.50 MiB\n";
        let import = parse(&Source::new("b0.log"), text.as_bytes(), LogKind::LlamaCpp).unwrap();
        assert_eq!(import.runs[0].evidence[0].text, text);
        assert_eq!(import.runs[0].granularity, Granularity::Evidence);
    }

    #[test]
    fn an_unrelated_file_is_refused() {
        let err = parse(
            &Source::new("notes.txt"),
            &b"hello\nworld\n"[..],
            LogKind::Vllm,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "notes.txt, $: expected a vLLM startup log (attention backend, KV cache dtype or KV cache size lines), found 2 line(s), none of them a vLLM startup line KV Gate recognises"
        );
    }

    #[test]
    fn a_log_of_the_other_engine_is_named() {
        let llama = "llama_context: flash_attn    = enabled\n";
        let err = parse(&Source::new("b0.log"), llama.as_bytes(), LogKind::Vllm).unwrap_err();
        assert_eq!(
            err.to_string(),
            "b0.log, line 1: expected a vLLM startup log (attention backend, KV cache dtype or KV cache size lines), found a llama.cpp startup line: import this log as llamacpp-log"
        );
        let vllm = "INFO x\nINFO [gpu_worker.py:298] Available KV cache memory: 12.5 GiB\n";
        let err = parse(&Source::new("v.log"), vllm.as_bytes(), LogKind::LlamaCpp).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("v.log, line 2: expected a llama.cpp startup log"),
            "{err}"
        );
        assert!(
            err.to_string().ends_with("import this log as vllm-log"),
            "{err}"
        );
    }

    #[test]
    fn several_server_starts_are_refused_by_their_lines() {
        // Synthetic: a llama-server log appended to across restarts.
        let start = "system_info: n_threads = 8\nllama_context: flash_attn    = enabled\n\
                     llama_kv_cache: size = 1088.00 MiB ( 65536 cells,   8 layers,  4/1 seqs), K (q8_0):  544.00 MiB, V (q8_0):  544.00 MiB\n";
        let text = format!("{start}srv log line\n{start}");
        let err = parse(
            &Source::new("server.log"),
            text.as_bytes(),
            LogKind::LlamaCpp,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "server.log, line 5: expected the log of one server start, found 2 server starts \
             (`system_info:` at lines 1, 5): cut the log to the start the run talked to"
        );
        assert!(read_startup_log(&Source::new("server.log"), text.as_bytes()).is_err());
        assert!(parse(&Source::new("one.log"), start.as_bytes(), LogKind::LlamaCpp).is_ok());
    }

    #[test]
    fn a_failed_vllm_start_is_still_a_vllm_log() {
        // Synthetic: vLLM on CPU failing before any backend or capacity line.
        let text = "INFO [core.py:114] Initializing a V1 LLM engine (v0.25.1) with config: model='facebook/opt-125m'\n\
                    ERROR [core.py:1231] EngineCore failed to start.\n";
        let import = parse(&Source::new("v.log"), text.as_bytes(), LogKind::Vllm).unwrap();
        assert_eq!(import.runs[0].evidence[0].text, text);
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let err = parse(&Source::new("x.log"), &b"ok\n\xff\n"[..], LogKind::Vllm).unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.log, line 2: expected UTF-8 text, found a byte that is not UTF-8 at offset 3"
        );
    }
}
