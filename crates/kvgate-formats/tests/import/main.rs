//! Importers over real and synthetic files: what the real tools wrote against the real
//! llama.cpp servers (`fixtures/real-tools/`), the files real users published
//! (`../shared/realdata/`, skipped visibly where absent), and the synthetic GuideLLM and AIPerf
//! fixtures with their malformed variants.

mod aiperf;
mod field;
mod guidellm;
mod inference_perf;
mod points;
mod real_tools;

use std::path::PathBuf;

use kvgate_formats::import::{self, Aggregate, ImportError, ImportFormat, ParsedImport, ParsedRun};

/// `fixtures/imports/…` of the repository.
pub fn fixture(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/imports")
        .join(relative)
}

pub fn read_fixture(relative: &str) -> String {
    let path = fixture(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A path under `../shared/realdata/` (public data kept beside the repository, never in it),
/// or `None` with a visible line when it is absent (a user's clone has no `../shared/`). The
/// line goes straight to stderr: the test harness captures `eprintln!` of passing tests.
pub fn shared_data(test: &str, relative: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/realdata")
        .join(relative);
    if path.exists() {
        return Some(path);
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "{test}: skipped: shared field data not present ({})",
        path.display()
    );
    None
}

/// Parses text the way the app does, under a file name.
pub fn parse_text(
    format: ImportFormat,
    name: &str,
    text: &str,
) -> Result<ParsedImport, ImportError> {
    import::parse(format, name, text.as_bytes())
}

/// The one aggregate with this name and statistic.
pub fn aggregate<'a>(run: &'a ParsedRun, name: &str, stat: &str) -> &'a Aggregate {
    let found: Vec<&Aggregate> = run
        .aggregates
        .iter()
        .filter(|a| a.name == name && a.stat == stat)
        .collect();
    assert_eq!(found.len(), 1, "{name} {stat} in {}", run.label);
    found[0]
}

/// A cancelled read ends every parse with `Cancelled`, promptly: std's readers retry
/// `ErrorKind::Interrupted` forever, so this guards against a hang with a deadline.
#[test]
fn cancelled_reads_stop_each_parser() {
    use std::sync::mpsc;
    use std::time::Duration;

    for (format, name, text) in [
        (
            ImportFormat::Guidellm,
            "report-v2.json",
            read_fixture("guidellm/report-v2.json"),
        ),
        (
            ImportFormat::Aiperf,
            "profile_export.jsonl",
            read_fixture("aiperf/profile_export.jsonl"),
        ),
        (
            ImportFormat::InferencePerf,
            "summary_lifecycle_metrics.json",
            "{}".to_owned(),
        ),
    ] {
        let progress = import::ReadProgress::new();
        progress.cancel();
        let (done, result) = mpsc::channel();
        std::thread::spawn(move || {
            let parsed = import::parse(format, name, progress.reader(text.as_bytes()));
            let _ = done.send(parsed.map(|_| ()));
        });
        match result.recv_timeout(Duration::from_secs(10)) {
            Ok(outcome) => assert_eq!(outcome, Err(ImportError::Cancelled), "{format}"),
            Err(_) => panic!("{format}: a cancelled read did not stop the parse within 10 s"),
        }
    }
}
