//! `kvgate import`: a summary with rows and sha256 on success; a malformed file exits non-zero
//! with the parser's message on stderr and leaves the database as it was.

use std::path::{Path, PathBuf};

use kvgate_app::{App, DbLocation};

use crate::{kvgate, stderr, stdout};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");

fn repo(rel: &str) -> PathBuf {
    Path::new(ROOT).join(rel)
}

fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn study_with_cells(db: &Path) {
    assert!(kvgate(db, &["study", "create", "cpu"]).status.success());
    for file in ["smollm2-135m-cpu-b0.json", "smollm2-135m-cpu-q8.json"] {
        let path = repo(&format!("fixtures/manifests/{file}"));
        let out = kvgate(db, &["manifest", "freeze", "--study", "cpu", arg(&path)]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
}

/// Rows in every table an import writes, read through the service layer.
fn row_counts(db: &Path) -> [i64; 6] {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let app = App::open(DbLocation::Path(db.to_path_buf())).await.unwrap();
        let counts = app.store().import_row_counts().await.unwrap();
        app.close().await;
        counts
    })
}

fn sha256(path: &Path) -> String {
    kvgate_app::domain::canonical::sha256_hex(&std::fs::read(path).unwrap())
}

#[test]
fn import_prints_a_summary_and_a_malformed_file_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    study_with_cells(&db);
    assert_eq!(row_counts(&db), [0; 6]);

    // Per-request rows: AIPerf's export, 4 requests.
    let aiperf = repo("fixtures/imports/aiperf/profile_export.jsonl");
    let out = kvgate(
        &db,
        &[
            "import",
            "--study",
            "cpu",
            "--cell",
            "B0",
            "--format",
            "aiperf",
            arg(&aiperf),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("import 1 · aiperf · cell B0 · profile_export.jsonl ("),
        "{text}"
    );
    assert!(
        text.contains(&format!("sha256 {}", sha256(&aiperf))),
        "{text}"
    );
    assert!(text.contains("1 run(s) [1], 4 request rows"), "{text}");
    assert!(text.contains("written by aiperf"), "{text}");
    assert!(text.contains("  warning $: "), "{text}");

    // Aggregates only: two reports inference-perf 0.7.0 wrote against the local llama.cpp
    // server, in one call, each its own import.
    let real = repo("fixtures/real-tools/inference-perf-0.7.0/f16/out");
    let stage = real.join("stage_0_lifecycle_metrics.json");
    let summary = real.join("summary_lifecycle_metrics.json");
    let out = kvgate(
        &db,
        &[
            "import",
            "--study",
            "cpu",
            "--cell",
            "Q8",
            "--format",
            "inference-perf",
            arg(&stage),
            arg(&summary),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("import 2 · inference-perf · cell Q8 · stage_0_lifecycle_metrics.json"),
        "{text}"
    );
    assert!(
        text.contains("import 3 · inference-perf · cell Q8 · summary_lifecycle_metrics.json"),
        "{text}"
    );
    assert!(
        text.contains(&format!("sha256 {}", sha256(&stage))),
        "{text}"
    );
    assert!(
        text.contains(&format!("sha256 {}", sha256(&summary))),
        "{text}"
    );
    assert!(text.contains(", 0 request rows, "), "{text}");
    let stored = row_counts(&db);
    assert_eq!(stored[..3], [3, 3, 4], "imports, runs, request rows");

    // A malformed file: non-zero exit, the parser's message on stderr, nothing stored.
    let bad = repo("tests/imports/malformed/vllm-bench/negative-latency.json");
    let out = kvgate(
        &db,
        &[
            "import",
            "--study",
            "cpu",
            "--cell",
            "B0",
            "--format",
            "vllm-bench",
            arg(&bad),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim(),
        "error: negative-latency.json, $.latencies[1], field `latencies`: expected a finite, \
         non-negative number of seconds, found -0.3"
    );
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert_eq!(row_counts(&db), stored);

    // A good file then a malformed one: the first is stored whole, the second not at all.
    let guidellm = repo("fixtures/imports/guidellm/report-v2.json");
    let truncated = repo("tests/imports/malformed/guidellm/truncated.json");
    let out = kvgate(
        &db,
        &[
            "import",
            "--study",
            "cpu",
            "--cell",
            "B0",
            "--format",
            "guidellm",
            arg(&guidellm),
            arg(&truncated),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("import 4 · guidellm · cell B0 · report-v2.json"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains(
            "error: truncated.json, line 52, column 6, $.benchmarks[0].requests.successful[0]: \
             expected the rest of the JSON document"
        ),
        "{}",
        stderr(&out)
    );
    let after = row_counts(&db);
    assert_eq!(
        after[..3],
        [4, 4, 9],
        "the report's 5 rows, nothing of the truncated file"
    );

    // The same file again: refused, naming the first import.
    let out = kvgate(
        &db,
        &[
            "import",
            "--study",
            "cpu",
            "--cell",
            "Q8",
            "--format",
            "aiperf",
            arg(&aiperf),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("already in the study as import 1 into cell B0"),
        "{}",
        stderr(&out)
    );
    assert_eq!(row_counts(&db), after);

    // A CSV needs its column mapping.
    let csv = repo("tests/imports/malformed/csv/negative-e2e.csv");
    let out = kvgate(
        &db,
        &[
            "import",
            "--study",
            "cpu",
            "--cell",
            "B0",
            "--format",
            "csv",
            "--map",
            "dispatch=start_s,ttft=ttft_s,e2e=latency_s,status=ok,unit=s",
            arg(&csv),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "negative-e2e.csv, line 3, row 2, column `latency_s`, field `e2e`: expected a \
             non-negative duration, found -0.75"
        ),
        "{}",
        stderr(&out)
    );
    let out = kvgate(
        &db,
        &[
            "import",
            "--study",
            "cpu",
            "--cell",
            "B0",
            "--format",
            "xlsx",
            arg(&csv),
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("expected one of vllm-bench, guidellm"),
        "{}",
        stderr(&out)
    );
    assert_eq!(row_counts(&db), after);

    // --json prints the stored imports: inference-perf 0.7's per-request file, 15 rows.
    let prom = real.join("per_request_lifecycle_metrics.json");
    let out = kvgate(
        &db,
        &[
            "import",
            "--study",
            "cpu",
            "--cell",
            "B0",
            "--format",
            "inference-perf",
            "--json",
            arg(&prom),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let imports: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(imports[0]["sha256"], sha256(&prom));
    assert_eq!(imports[0]["format"], "inference-perf");
    assert_eq!(imports[0]["requests"], 15);
    assert_eq!(imports[0]["runs"], 1);
}

/// A synthetic `vllm bench serve` result at `rate` with the sweep's keys (`run_number`,
/// `max_num_seqs`), two requests, the second good or not by `tag` (so each file differs).
fn sweep_result(rate: &str, run: u32, tag: &str) -> String {
    format!(
        r#"{{"date": "20260818-021333", "backend": "openai", "num_prompts": 2, "request_rate": {rate}, "max_concurrency": 2,
            "duration": 1.0, "completed": 2, "failed": 0, "start_times": [10.0, 10.5], "ttfts": [0.1, 0.2],
            "latencies": [0.4, 0.5], "errors": ["", ""], "generated_texts": ["a", "{tag}"], "run_number": {run}, "max_num_seqs": 4}}"#
    )
}

/// A `vllm bench sweep` output folder (synthetic, laid out as vLLM 0.25.1 writes it): every
/// `run=N.json` of every combination is one import, in repeat order; `summary.json` is not
/// read. A folder with one malformed result stores nothing; a folder is refused for other
/// formats and when it holds no result.
#[test]
fn a_sweep_folder_imports_each_result_and_a_bad_one_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    study_with_cells(&db);
    let sweep = dir.path().join("sweep/20260818-021333");
    let combo = |rate: &str| {
        let d = sweep.join(format!(
            "SERVE--max_num_seqs=4-BENCH--max_concurrency=2-request_rate={rate}"
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let (one, inf) = (combo("1"), combo("inf"));
    std::fs::write(one.join("run=0.json"), sweep_result("1.0", 0, "b")).unwrap();
    std::fs::write(one.join("run=1.json"), sweep_result("1.0", 1, "c")).unwrap();
    std::fs::write(inf.join("run=0.json"), sweep_result("\"inf\"", 0, "d")).unwrap();
    // The combination's summary repeats its runs: not a result of its own.
    std::fs::write(one.join("summary.json"), "[]").unwrap();
    let import = |cell: &str, format: &str, path: &Path| {
        kvgate(
            &db,
            &[
                "import",
                "--study",
                "cpu",
                "--cell",
                cell,
                "--format",
                format,
                "--json",
                arg(path),
            ],
        )
    };

    let out = import("B0", "vllm-bench", &dir.path().join("sweep"));
    assert!(out.status.success(), "{}", stderr(&out));
    let stored: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<String> = stored
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source_name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        ["run=0.json", "run=1.json", "run=0.json"],
        "{stored}"
    );
    assert_eq!(row_counts(&db)[0], 3, "three imports");

    // One malformed result: the whole folder is refused before anything is stored.
    let before = row_counts(&db);
    let bad = dir.path().join("bad/SERVE--x-BENCH--request_rate=2");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("run=0.json"), sweep_result("2.0", 0, "e")).unwrap();
    std::fs::write(bad.join("run=1.json"), r#"{"request_rate": true}"#).unwrap();
    let out = import("Q8", "vllm-bench", &dir.path().join("bad"));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("run=1.json, $.request_rate, field `request_rate`"),
        "{}",
        stderr(&out)
    );
    assert_eq!(row_counts(&db), before, "nothing of the folder stored");

    let out = import("Q8", "guidellm", &dir.path().join("bad"));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("expected a file, found a folder"),
        "{}",
        stderr(&out)
    );
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = import("Q8", "vllm-bench", &empty);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("run=N.json results, found none"),
        "{}",
        stderr(&out)
    );
}
