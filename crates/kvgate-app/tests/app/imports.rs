//! Imports through the service layer: every file of the malformed corpus
//! (`tests/imports/malformed/cases.json`) is refused with a message that names the file, where it
//! breaks, what was expected and what was found, and leaves the database exactly as it was; real
//! and generated files import whole, once, and can be previewed and cancelled.

use kvgate_core::run::{Granularity, RunProvenance};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kvgate_app::imports::{ImportEvent, ImportInput, ImportPhase};
use kvgate_app::{App, AppError, DbLocation, ErrorCode, ProblemCode};
use kvgate_core::run::RequestStatus;
use kvgate_core::study::NewStudy;
use kvgate_formats::import::mapping::ColumnMapping;
use kvgate_formats::import::ImportFormat;
use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");

fn repo(rel: &str) -> PathBuf {
    Path::new(ROOT).join(rel)
}

/// The real inference-perf results of the KubeCon NA 2025 demo (kept beside the repository,
/// never in it), or `None` with a visible line where `../shared` is absent.
fn realdata(test: &str) -> Option<PathBuf> {
    let dir = repo("../shared/realdata/inference-perf-kubecon-na-2025");
    if dir.is_dir() {
        return Some(dir);
    }
    let _ = writeln!(
        std::io::stderr(),
        "{test}: skipped: shared field data not present ({})",
        dir.display()
    );
    None
}

/// What a real tool wrote against the local llama.cpp servers (`fixtures/real-tools/`).
fn recorded(rel: &str) -> PathBuf {
    repo("fixtures/real-tools").join(rel)
}

/// A workspace with one study whose cells B0 and Q8 are frozen.
async fn study(name: &str) -> (tempfile::TempDir, App, i64) {
    let dir = tempfile::tempdir().unwrap();
    let app = App::open(DbLocation::Path(dir.path().join("ws.sqlite")))
        .await
        .unwrap();
    let study = app
        .create_study(NewStudy {
            name: name.into(),
            description: String::new(),
        })
        .await
        .unwrap();
    for file in ["smollm2-135m-cpu-b0.json", "smollm2-135m-cpu-q8.json"] {
        let text = std::fs::read_to_string(repo(&format!("fixtures/manifests/{file}"))).unwrap();
        let draft = app.save_manifest_draft(study.id, &text).await.unwrap();
        let digest = kvgate_core::manifest::Manifest::from_json(&text)
            .unwrap()
            .digest()
            .unwrap();
        app.freeze_manifest(study.id, &draft.cell, &digest)
            .await
            .unwrap();
    }
    (dir, app, study.id)
}

fn input(study_id: i64, cell: &str, format: ImportFormat, path: &Path) -> ImportInput {
    ImportInput {
        study_id,
        cell: cell.into(),
        format,
        path: path.to_string_lossy().into_owned(),
        mapping: None,
        job: None,
        companion: None,
    }
}

async fn counts(app: &App) -> [i64; 6] {
    app.store().import_row_counts().await.unwrap()
}

fn sha256_of(path: &Path) -> String {
    kvgate_core::canonical::sha256_hex(&std::fs::read(path).unwrap())
}

/// One entry of `cases.json`.
struct Case {
    file: String,
    format: ImportFormat,
    cell: String,
    mapping: Option<ColumnMapping>,
    expect: String,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(repo("tests/imports/malformed/cases.json")).unwrap();
    let cases: Vec<Value> = serde_json::from_str(&text).unwrap();
    cases
        .iter()
        .map(|c| {
            let field = |k: &str| c[k].as_str().map(str::to_owned);
            let format = field("format").unwrap();
            Case {
                file: field("file").unwrap(),
                format: ImportFormat::parse(&format)
                    .unwrap_or_else(|| panic!("cases.json: unknown format {format}")),
                cell: field("cell").unwrap_or_else(|| "B0".into()),
                mapping: field("map").map(|m| ColumnMapping::parse_spec(&m).unwrap()),
                expect: field("expect").unwrap(),
            }
        })
        .collect()
}

/// What is wrong with how a malformed file was refused, if anything.
fn judge(case: &Case, outcome: Result<String, AppError>) -> Option<String> {
    let name = Path::new(&case.file).file_name().unwrap().to_string_lossy();
    let err = match outcome {
        Ok(what) => return Some(format!("{}: accepted ({what})", case.file)),
        Err(err) => err,
    };
    let mut wrong = Vec::new();
    if err.code != ErrorCode::InvalidInput {
        wrong.push(format!("code {:?}, not InvalidInput", err.code));
    }
    if !err.message.contains(&case.expect) {
        wrong.push(format!("does not contain {:?}", case.expect));
    }
    if !err.message.contains(name.as_ref()) {
        wrong.push("does not name the file".to_owned());
    }
    if !(err.message.contains("expected ") && err.message.contains(", found ")) {
        wrong.push("does not say what was expected and what was found".to_owned());
    }
    // Problems the error carries are the ones its message states, for a shell to place.
    for p in &err.problems {
        if p.code != ProblemCode::ImportFile
            || !err
                .message
                .contains(&format!("expected {}, found {}", p.expected, p.found))
        {
            wrong.push(format!(
                "carries a problem its message does not state: {p:?}"
            ));
        }
    }
    (!wrong.is_empty()).then(|| {
        format!(
            "{} ({}): {}\n    message: {}",
            case.file,
            case.format,
            wrong.join("; "),
            err.message
        )
    })
}

#[tokio::test]
async fn every_malformed_file_is_refused_clearly_and_stores_nothing() {
    let (_dir, app, sid) = study("malformed").await;
    let cases = cases();
    assert!(cases.len() >= 45, "{} cases", cases.len());
    for format in ImportFormat::ALL {
        assert!(
            cases.iter().any(|c| c.format == format),
            "no malformed {format} file"
        );
    }
    let mut problems = Vec::new();
    let mut placed = 0;
    for case in &cases {
        let before = counts(&app).await;
        let mut input = input(
            sid,
            &case.cell,
            case.format,
            &repo("tests/imports/malformed").join(&case.file),
        );
        input.mapping = case.mapping.clone();
        // The preview reads the same way and must refuse the file the same way.
        let previewed = app
            .preview_import(input.clone(), |_| {})
            .await
            .map(|p| format!("previewed: {} run(s)", p.runs.len()));
        let imported = app
            .import_file(input, |_| {})
            .await
            .map(|s| format!("imported: {} run(s), {} rows", s.runs, s.requests));
        if let Some(problem) = judge(case, imported.clone()) {
            problems.push(problem);
        }
        if imported.as_ref().is_err_and(|e| !e.problems.is_empty()) {
            placed += 1;
        }
        match (&previewed, &imported) {
            (Err(p), Err(i)) if p.message != i.message => problems.push(format!(
                "{}: preview and import refuse it differently\n    preview: {}\n    import:  {}",
                case.file, p.message, i.message
            )),
            (Ok(p), Err(_)) => problems.push(format!(
                "{}: the preview accepts what the import refuses ({p})",
                case.file
            )),
            _ => {}
        }
        let after = counts(&app).await;
        if after != before {
            problems.push(format!(
                "{}: left rows behind: {before:?} → {after:?}",
                case.file
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} cases:\n{}",
        problems.len(),
        cases.len(),
        problems.join("\n")
    );
    assert!(
        placed * 2 > cases.len(),
        "only {placed} of {} refusals carry their problem",
        cases.len()
    );
}

/// The aggregate with this name and statistic, as `run_detail` shows it.
fn figure(detail: &kvgate_app::runs::RunDetail, name: &str, stat: &str) -> (f64, String) {
    let found: Vec<_> = detail
        .aggregates
        .iter()
        .filter(|a| a.name == name && a.stat == stat)
        .collect();
    assert_eq!(found.len(), 1, "{name} {stat} in {}", detail.run.label);
    (found[0].value, found[0].unit.clone())
}

#[tokio::test]
async fn every_real_inference_perf_report_imports_with_its_aggregates() {
    let Some(realdata) = realdata("every_real_inference_perf_report_imports_with_its_aggregates")
    else {
        return;
    };
    let realdata = |rel: &str| realdata.join(rel);
    let (_dir, app, sid) = study("inference-perf").await;
    let mut names: Vec<String> = (0..7)
        .flat_map(|n| {
            [
                format!("stage_{n}_lifecycle_metrics.json"),
                format!("stage_{n}_prometheus_metrics.json"),
            ]
        })
        .collect();
    names.push("summary_lifecycle_metrics.json".into());
    names.push("summary_prometheus_metrics.json".into());
    assert_eq!(names.len(), 16);

    let mut runs = std::collections::HashMap::new();
    for (folder, cell) in [("vllm", "B0"), ("vllm+quantization", "Q8")] {
        for name in &names {
            let path = realdata(&format!("{folder}/{name}"));
            let summary = app
                .import_file(input(sid, cell, ImportFormat::InferencePerf, &path), |_| {})
                .await
                .unwrap_or_else(|e| panic!("{folder}/{name}: {}", e.message));
            assert_eq!(summary.runs, 1, "{folder}/{name}");
            assert_eq!(summary.requests, 0, "{folder}/{name}: aggregates only");
            assert!(summary.aggregates > 0, "{folder}/{name}");
            assert_eq!(summary.sha256, sha256_of(&path));
            assert_eq!(summary.cell, cell);
            assert_eq!(summary.run_ids.len(), 1);
            runs.insert(format!("{folder}/{name}"), summary.run_ids[0]);
        }
    }
    assert_eq!(counts(&app).await[..3], [32, 32, 0]);
    assert_eq!(app.list_imports(sid).await.unwrap().len(), 32);
    assert_eq!(app.list_runs(sid).await.unwrap().len(), 32);

    let detail = |key: &str| {
        let id = runs[key];
        let app = app.clone();
        async move { app.run_detail(id).await.unwrap() }
    };

    // Client side, baseline, stage 0 (1 rps requested).
    let d = detail("vllm/stage_0_lifecycle_metrics.json").await;
    assert_eq!(d.run.granularity, Granularity::Aggregate);
    assert_eq!(d.run.provenance, RunProvenance::Imported);
    assert_eq!(d.run.cell, "B0");
    assert_eq!(d.run.state.as_str(), "completed");
    assert_eq!((d.run.ok, d.run.failed), (0, 0), "no rows: nothing counted");
    assert!(d.requests.is_empty());
    assert_eq!(d.run.label, "inference-perf · stage 0 · 1.0 rps requested");
    assert_eq!(d.run.planned, Some(60));
    assert_eq!(d.run.elapsed_ms, Some(58510.01774193719));
    assert_eq!(
        figure(&d, "successes.latency.request_latency", "median"),
        (0.4796094944467768, "s".into())
    );
    assert_eq!(
        figure(&d, "successes.latency.time_to_first_token", "p99"),
        (0.039696927970508104, "s".into())
    );
    assert_eq!(figure(&d, "successes", "count"), (60.0, "requests".into()));
    assert_eq!(figure(&d, "failures", "count"), (0.0, "requests".into()));
    assert_eq!(
        figure(&d, "load_summary.requested_rate", "value"),
        (1.0, "1/s".into())
    );
    assert_eq!(
        figure(&d, "successes.throughput.output_tokens_per_sec", "value"),
        (64.23350089997027, "tokens/s".into())
    );
    assert_eq!(
        figure(&d, "load_summary.schedule_delay", "min"),
        (-0.0006079088198021054, "s".into()),
        "a schedule delay may be negative"
    );
    assert_eq!(
        figure(&d, "successes.prompt_len", "max"),
        (212.0, "tokens".into())
    );

    // Server side, baseline, stage 0.
    let d = detail("vllm/stage_0_prometheus_metrics.json").await;
    assert_eq!(d.run.label, "inference-perf · stage 0 · server metrics");
    assert_eq!(figure(&d, "successes", "count"), (937.0, "requests".into()));
    assert_eq!(
        figure(&d, "successes.time_to_first_token", "p99"),
        (4.955306, "s".into())
    );
    assert_eq!(
        figure(&d, "successes.kv_cache_usage_percentage", "mean"),
        (0.0, "ratio".into())
    );

    // The quantized bundle, summary of all stages.
    let d = detail("vllm+quantization/summary_lifecycle_metrics.json").await;
    assert_eq!(d.run.cell, "Q8");
    assert_eq!(d.run.label, "inference-perf · summary");
    let text =
        std::fs::read_to_string(realdata("vllm+quantization/summary_lifecycle_metrics.json"))
            .unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let successes = json["successes"]["count"].as_f64().unwrap();
    assert!(successes > 0.0);
    assert_eq!(
        figure(&d, "successes", "count"),
        (successes, "requests".into())
    );
    let median = json["successes"]["latency"]["request_latency"]["median"]
        .as_f64()
        .unwrap();
    assert_eq!(
        figure(&d, "successes.latency.request_latency", "median"),
        (median, "s".into())
    );
    // Every number of the file is there, nothing else.
    fn numbers(v: &Value) -> usize {
        match v {
            Value::Number(_) => 1,
            Value::Object(m) => m.values().map(numbers).sum(),
            _ => 0,
        }
    }
    assert_eq!(d.aggregates.len(), numbers(&json));
}

/// A `vllm bench serve --save-detailed` result with `n` requests: request 2 failed (vLLM's 0
/// placeholders), request 3 has a NaN TTFT (read as absent, not 0).
fn vllm_bench_detailed(n: usize, metadata: &str) -> String {
    let mut out = String::with_capacity(n * 120 + 1024);
    out.push_str(&format!(
        r#"{{"date": "20260115-103000", "endpoint_type": "openai-chat", "backend": "openai-chat",
 "label": null, "model_id": "m", "tokenizer_id": "m", "num_prompts": {n}, "request_rate": "inf",
 "burstiness": 1.0, "max_concurrency": null, {metadata} "duration": {}, "completed": {}, "failed": 1,
 "request_throughput": 1.5, "mean_ttft_ms": 150.0, "p99_ttft_ms": 199.0"#,
        n as f64 * 0.25 + 1.0,
        n - 1
    ));
    let column = |out: &mut String, key: &str, f: &dyn Fn(usize) -> String| {
        out.push_str(&format!(",\n \"{key}\": ["));
        for i in 0..n {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&f(i));
        }
        out.push(']');
    };
    let failed = |i: usize| i == 2;
    column(&mut out, "input_lens", &|_| "10".into());
    column(&mut out, "output_lens", &|i| {
        if failed(i) {
            "0".into()
        } else {
            "3".into()
        }
    });
    column(&mut out, "ttfts", &|i| match i {
        _ if failed(i) => "0.0".into(),
        3 => "NaN".into(),
        _ => "0.125".into(),
    });
    column(&mut out, "itls", &|i| {
        if failed(i) {
            "[]".into()
        } else {
            "[0.0625, 0.0625]".into()
        }
    });
    column(&mut out, "latencies", &|i| {
        if failed(i) {
            "0.0".into()
        } else {
            "0.5".into()
        }
    });
    // Binary-exact send times: 0.25 s apart.
    column(&mut out, "start_times", &|i| {
        format!("{:?}", 1000.0 + i as f64 * 0.25)
    });
    column(&mut out, "generated_texts", &|i| {
        if failed(i) {
            "\"\"".into()
        } else {
            "\"a b c\"".into()
        }
    });
    column(&mut out, "errors", &|i| {
        if failed(i) {
            "\"Traceback (most recent call last): ClientConnectorError\"".into()
        } else {
            "\"\"".into()
        }
    });
    out.push_str("}\n");
    out
}

#[tokio::test]
async fn vllm_bench_failures_stay_in_the_rows_and_a_second_import_is_refused() {
    let (dir, app, sid) = study("vllm-bench").await;
    let path = dir.path().join("bench-detailed.json");
    std::fs::write(&path, vllm_bench_detailed(6, "")).unwrap();
    let summary = app
        .import_file(input(sid, "B0", ImportFormat::VllmBench, &path), |_| {})
        .await
        .unwrap();
    assert_eq!((summary.runs, summary.requests), (1, 6));
    assert!(
        summary
            .warnings
            .iter()
            .any(|w| w.message.contains("0 placeholders") && w.rows == 1),
        "{:?}",
        summary.warnings
    );
    assert!(
        summary.warnings.iter().any(|w| w.message.contains("1 NaN")),
        "{:?}",
        summary.warnings
    );
    let detail = app.run_detail(summary.run_ids[0]).await.unwrap();
    assert_eq!(detail.run.granularity, Granularity::PerRequest);
    assert_eq!(detail.run.import_id, Some(summary.id));
    assert_eq!((detail.run.ok, detail.run.failed), (5, 1));
    assert_eq!(detail.run.planned, Some(6));
    assert_eq!(
        detail.requests.len(),
        6,
        "the failure is a row, not dropped"
    );
    let failed = &detail.requests[2];
    assert_eq!(failed.record.status, RequestStatus::Error);
    assert_eq!(
        failed.record.error.as_deref(),
        Some("Traceback (most recent call last): ClientConnectorError")
    );
    assert_eq!(
        failed.record.first_token_ms, None,
        "vLLM's 0 TTFT is no measurement"
    );
    assert_eq!(failed.record.finish_ms, None);
    assert_eq!(failed.ttft_ms, None);
    assert_eq!(failed.record.dispatch_ms, Some(500.0));
    let nan = &detail.requests[3];
    assert_eq!(nan.record.status, RequestStatus::Ok);
    assert_eq!(
        nan.record.first_token_ms, None,
        "NaN reads as absent, never 0"
    );
    assert_eq!(nan.ttft_ms, None);
    assert_eq!(nan.e2e_ms, Some(500.0));
    let ok = &detail.requests[1];
    assert_eq!(ok.record.dispatch_ms, Some(250.0));
    assert_eq!(ok.ttft_ms, Some(125.0));
    assert_eq!(ok.e2e_ms, Some(500.0));
    assert_eq!(ok.record.chunk_times_ms, vec![375.0, 437.5, 500.0]);
    assert_eq!(ok.record.finish_ms, Some(750.0));
    assert_eq!(figure(&detail, "ttft", "p99"), (199.0, "ms".into()));

    // The same bytes again, under another name: refused, naming the first import.
    let before = counts(&app).await;
    let copy = dir.path().join("copy-of-bench.json");
    std::fs::copy(&path, &copy).unwrap();
    let err = app
        .import_file(input(sid, "Q8", ImportFormat::VllmBench, &copy), |_| {})
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict, "{}", err.message);
    assert!(
        err.message.contains(&format!("import {}", summary.id))
            && err.message.contains(&summary.sha256)
            && err.message.contains("cell B0")
            && err.message.contains("copy-of-bench.json"),
        "{}",
        err.message
    );
    assert_eq!(counts(&app).await, before);
    let preview = app
        .preview_import(input(sid, "B0", ImportFormat::VllmBench, &path), |_| {})
        .await
        .unwrap();
    assert_eq!(preview.already_imported.map(|s| s.id), Some(summary.id));
    let err = app.commit_import(&preview.token, |_| {}).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict, "{}", err.message);
    assert_eq!(counts(&app).await, before);
}

#[tokio::test]
async fn a_preview_stores_nothing_and_its_commit_stores_exactly_what_was_previewed() {
    let (dir, app, sid) = study("preview").await;
    let before = counts(&app).await;
    let path = dir.path().join("bench.json");
    std::fs::write(&path, vllm_bench_detailed(40, r#""cell": "B0","#)).unwrap();
    let mut events = Vec::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let preview = app
        .preview_import(input(sid, "B0", ImportFormat::VllmBench, &path), move |e| {
            let _ = tx.send(e);
        })
        .await
        .unwrap();
    events.extend(rx.try_iter());
    assert_eq!(counts(&app).await, before, "a preview stores nothing");
    // Read, then its rows checked (a vLLM result's rows are read again when stored).
    assert!(events
        .iter()
        .all(|e| matches!(e.phase, ImportPhase::Reading | ImportPhase::Checking)));
    let last = events.last().unwrap();
    assert_eq!(
        (last.phase, last.rows_stored, last.total_rows),
        (ImportPhase::Checking, 40, 40)
    );
    assert_eq!(preview.format, "vllm-bench");
    assert_eq!(
        preview.parser_version,
        ImportFormat::VllmBench.parser_version()
    );
    assert_eq!(preview.sha256, sha256_of(&path));
    assert_eq!(preview.source_name, "bench.json");
    assert_eq!(preview.runs.len(), 1);
    let run = &preview.runs[0];
    assert_eq!((run.requests, run.ok, run.failed), (40, 39, 1));
    assert!(preview.already_imported.is_none());

    // The file changes on disk after the preview: its rows are read again when they are
    // stored, so the commit refuses it, names both digests and stores nothing.
    let shown = std::fs::read(&path).unwrap();
    std::fs::write(&path, vllm_bench_detailed(3, "")).unwrap();
    let err = app.commit_import(&preview.token, |_| {}).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict, "{}", err.message);
    assert!(
        err.message.contains("changed since it was read")
            && err.message.contains(&preview.sha256)
            && err.message.contains(&sha256_of(&path)),
        "{}",
        err.message
    );
    assert_eq!(
        counts(&app).await,
        before,
        "a refused commit stores nothing"
    );
    // The same bytes again: the commit stores exactly what the preview showed.
    std::fs::write(&path, &shown).unwrap();
    let preview = app
        .preview_import(input(sid, "B0", ImportFormat::VllmBench, &path), |_| {})
        .await
        .unwrap();
    let summary = app.commit_import(&preview.token, |_| {}).await.unwrap();
    assert_eq!(summary.sha256, preview.sha256);
    assert_eq!(summary.bytes as u64, preview.bytes);
    assert_eq!((summary.runs, summary.requests), (1, 40));
    assert_eq!(summary.aggregates as u64, run.aggregates);
    assert_eq!(
        summary.warnings.len(),
        preview.warnings.len(),
        "{:?} vs {:?}",
        summary.warnings,
        preview.warnings
    );
    let after = counts(&app).await;
    assert_eq!(after[0] - before[0], 1, "one import");
    assert_eq!(after[1] - before[1], 1, "one run");
    assert_eq!(after[2] - before[2], 40, "every previewed row");
    let detail = app.run_detail(summary.run_ids[0]).await.unwrap();
    assert_eq!(
        (detail.run.ok, detail.run.failed),
        (run.ok as i64, run.failed as i64)
    );
    assert_eq!(detail.run.label, run.label);

    // A token is used once.
    let err = app.commit_import(&preview.token, |_| {}).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound, "{}", err.message);
    assert!(err.message.contains(&preview.token), "{}", err.message);
    let err = app.commit_import("import-999", |_| {}).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
    assert_eq!(counts(&app).await, after);
}

/// Imports a large generated vllm-bench file under a job and cancels it from another task as soon
/// as a progress event of `phase` arrives.
async fn cancel_during(phase: ImportPhase) {
    let (dir, app, sid) = study("cancel").await;
    let path = dir.path().join("large.json");
    {
        let file = std::fs::File::create(&path).unwrap();
        let mut w = std::io::BufWriter::new(file);
        w.write_all(vllm_bench_detailed(200_000, "").as_bytes())
            .unwrap();
        w.flush().unwrap();
    }
    let before = counts(&app).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ImportEvent>();
    let canceller = {
        let app = app.clone();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if event.phase == phase {
                    app.cancel_import("big").unwrap();
                    return Some(event);
                }
            }
            None
        })
    };
    let mut job = input(sid, "B0", ImportFormat::VllmBench, &path);
    job.job = Some("big".into());
    let started = Instant::now();
    let result = app
        .import_file(job, move |e| {
            let _ = tx.send(e);
        })
        .await;
    let event = canceller.await.unwrap();
    assert!(event.is_some(), "no {phase:?} event arrived");
    let err = result.expect_err("the import was cancelled");
    assert_eq!(err.code, ErrorCode::Cancelled, "{}", err.message);
    assert!(
        err.message.contains("cancelled") && err.message.contains("stored"),
        "{}",
        err.message
    );
    assert_eq!(counts(&app).await, before, "nothing partial");
    assert!(app.list_imports(sid).await.unwrap().is_empty());
    // The job is gone once the import ended.
    assert_eq!(
        app.cancel_import("big").unwrap_err().code,
        ErrorCode::NotFound
    );
    eprintln!("cancelled during {phase:?} after {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_while_reading_stores_nothing() {
    cancel_during(ImportPhase::Reading).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_while_storing_rolls_everything_back() {
    cancel_during(ImportPhase::Storing).await;
}

#[tokio::test]
async fn list_imports_shows_digest_format_parser_version_and_row_counts() {
    let (_dir, app, sid) = study("list").await;
    let guidellm = repo("fixtures/imports/guidellm/report-v2.json");
    let aiperf = repo("fixtures/imports/aiperf/profile_export.jsonl");
    let prom = recorded("inference-perf-0.7.0/f16/out/summary_lifecycle_metrics.json");
    let a = app
        .import_file(input(sid, "B0", ImportFormat::Guidellm, &guidellm), |_| {})
        .await
        .unwrap();
    let b = app
        .import_file(input(sid, "Q8", ImportFormat::Aiperf, &aiperf), |_| {})
        .await
        .unwrap();
    let c = app
        .import_file(input(sid, "B0", ImportFormat::InferencePerf, &prom), |_| {})
        .await
        .unwrap();
    let listed = app.list_imports(sid).await.unwrap();
    assert_eq!(listed.len(), 3);
    for (row, stored, path, format, requests) in [
        (&listed[0], &a, &guidellm, ImportFormat::Guidellm, 5),
        (&listed[1], &b, &aiperf, ImportFormat::Aiperf, 4),
        (&listed[2], &c, &prom, ImportFormat::InferencePerf, 0),
    ] {
        assert_eq!(row.id, stored.id);
        assert_eq!(row.sha256, sha256_of(path));
        assert_eq!(row.bytes as u64, std::fs::metadata(path).unwrap().len());
        assert_eq!(row.format, format.as_str());
        assert_eq!(row.parser_version, format.parser_version());
        assert_eq!(row.source_name, path.file_name().unwrap().to_string_lossy());
        assert_eq!(row.runs, 1);
        assert_eq!(row.requests, requests, "{format}");
        assert_eq!(
            (row.aggregates, row.scrapes, row.evidence),
            (stored.aggregates, stored.scrapes, stored.evidence)
        );
        assert_eq!(row.warnings, stored.warnings);
        assert_eq!(row.run_ids, stored.run_ids);
    }
    assert_eq!(listed[0].cell, "B0");
    assert_eq!(listed[1].cell, "Q8");
    assert!(listed[2].aggregates > 0);
    assert_eq!(listed[0].tool.as_deref(), Some("guidellm 0.7.1"));
}

#[tokio::test]
async fn rows_a_tool_did_not_measure_are_warmup_and_unclocked_runs_say_so() {
    let (dir, app, sid) = study("measured").await;
    // Synthetic, after GuideLLM 0.5 reports that keep warm-up and cool-down rows: one row before
    // the measured window, two inside, one after.
    let row = |id: &str, start: f64, end: f64| {
        format!(
            r#"{{"request_id": "{id}", "output": "x", "info": {{"timings": {{"targeted_start": {start}, "request_start": {start}, "first_token_iteration": {start}, "request_end": {end}}}}}}}"#
        )
    };
    let rows = [
        row("warm", 100.0, 109.0),
        row("a", 110.0, 111.0),
        row("b", 112.0, 113.0),
        row("cool", 121.0, 122.0),
    ]
    .join(",");
    let report = format!(
        r#"{{"metadata": {{"version": 1, "guidellm_version": "0.5.0"}}, "benchmarks": [{{"config": {{"strategy": {{"type_": "synchronous"}}}},
           "scheduler_metrics": {{"measure_start_time": 110.0, "measure_end_time": 120.0}},
           "metrics": {{"request_totals": {{"successful": 2, "incomplete": 0, "errored": 0, "total": 2}}}},
           "requests": {{"successful": [{rows}], "incomplete": [], "errored": []}}}}]}}"#
    );
    let path = dir.path().join("benchmarks.json");
    std::fs::write(&path, report).unwrap();
    let preview = app
        .preview_import(input(sid, "B0", ImportFormat::Guidellm, &path), |_| {})
        .await
        .unwrap();
    assert_eq!((preview.runs[0].ok, preview.runs[0].failed), (2, 0));
    let stored = app
        .import_file(input(sid, "B0", ImportFormat::Guidellm, &path), |_| {})
        .await
        .unwrap();
    let d = app.run_detail(stored.run_ids[0]).await.unwrap();
    assert_eq!((d.run.ok, d.run.failed), (2, 0), "the tool measured two");
    let warmups = d.requests.iter().filter(|r| r.warmup).count();
    assert_eq!((d.requests.len(), warmups), (4, 2), "nothing dropped");

    // Per-request arrays without send times: rows, said to be unclocked.
    let bench = dir.path().join("old-bench.json");
    std::fs::write(
        &bench,
        r#"{"date": "20240907-082731", "backend": "vllm", "num_prompts": 2, "request_rate": "inf", "duration": 1.0, "completed": 2,
            "ttfts": [0.1, 0.2], "itls": [[0.01], [0.02]], "input_lens": [5, 6], "output_lens": [2, 2], "errors": ["", ""], "generated_texts": ["a", "b"]}"#,
    )
    .unwrap();
    let stored = app
        .import_file(input(sid, "B0", ImportFormat::VllmBench, &bench), |_| {})
        .await
        .unwrap();
    let d = app.run_detail(stored.run_ids[0]).await.unwrap();
    assert_eq!(d.run.granularity, Granularity::PerRequest);
    assert!(
        d.run.note.as_deref().unwrap().starts_with("unclocked:"),
        "{:?}",
        d.run.note
    );
    assert_eq!((d.run.ok, d.run.failed), (2, 0));
}

/// The process's peak resident memory (VmHWM), in bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A sparse file of `len` bytes that starts like a vllm-bench result and continues with holes
/// (zero bytes): each reader must refuse it quickly, without holding the file in memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_sparse_file_is_refused_quickly_without_reading_it_into_memory() {
    const LEN: u64 = (2 << 30) + 17;
    let (dir, app, sid) = study("huge").await;
    let before = counts(&app).await;
    let mut problems = Vec::new();
    for (format, name) in [
        (ImportFormat::VllmBench, "huge.json"),
        (ImportFormat::Guidellm, "huge-report.json"),
        (
            ImportFormat::InferencePerf,
            "summary_lifecycle_metrics.json",
        ),
        (ImportFormat::Aiperf, "profile_export.jsonl"),
        (ImportFormat::Jsonl, "huge.jsonl"),
        (ImportFormat::Prometheus, "huge.prom"),
        // llamacpp-log goes through the same reader (logs::parse).
        (ImportFormat::VllmLog, "huge-vllm.log"),
    ] {
        let path = dir.path().join(name);
        {
            let mut file = std::fs::File::create(&path).unwrap();
            file.write_all(br#"{"ttfts": ["#).unwrap();
            file.set_len(LEN).unwrap();
        }
        let started = Instant::now();
        let outcome = app
            .import_file(input(sid, "B0", format, &path), |_| {})
            .await;
        let took = started.elapsed();
        std::fs::remove_file(&path).unwrap();
        let peak = peak_rss();
        eprintln!(
            "{format} {name}: {took:?}, peak RSS so far {} MiB: {}",
            peak.unwrap_or(0) >> 20,
            outcome
                .as_ref()
                .map(|s| format!("imported {} rows", s.requests))
                .unwrap_or_else(|e| e.message.clone())
        );
        match outcome {
            Ok(_) => problems.push(format!("{format}: a file of zeros was imported")),
            Err(err) => {
                if err.code != ErrorCode::InvalidInput || !err.message.contains(name) {
                    problems.push(format!("{format}: {:?} {}", err.code, err.message));
                }
            }
        }
        if took > Duration::from_secs(30) {
            problems.push(format!("{format}: took {took:?}"));
        }
    }
    assert_eq!(counts(&app).await, before);
    // Nothing read the 2 GiB into memory.
    if let Some(peak) = peak_rss() {
        assert!(peak < 1 << 30, "peak RSS {} MiB", peak >> 20);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// An AIPerf export lands on the point its run summary beside it states (AIPerf 0.13.0,
/// `--concurrency 2`: a closed loop of 2), the summary's sha256 kept with the run; the same
/// export alone lands on an unknown point, and the import says so before it is committed.
#[tokio::test]
async fn an_aiperf_export_reads_its_point_from_the_summary_beside_it() {
    use kvgate_core::operating_point::{OfferedLoad, RunArrivals};
    use kvgate_core::run::RunKind;
    use kvgate_formats::import::UNKNOWN_POINT;
    let (dir, app, sid) = study("aiperf-point").await;
    let export = recorded("aiperf-0.13.0/f16/out/profile_export.jsonl");
    let stored = app
        .import_file(input(sid, "B0", ImportFormat::Aiperf, &export), |_| {})
        .await
        .unwrap();
    assert!(
        stored
            .warnings
            .iter()
            .all(|w| !w.message.contains(UNKNOWN_POINT)),
        "{:?}",
        stored.warnings
    );
    let summary_sha = sha256_of(&export.with_file_name("profile_export_aiperf.json"));
    assert!(stored
        .warnings
        .iter()
        .any(|w| w.at == "$.input_config" && w.message.contains(&summary_sha)));
    for id in &stored.run_ids {
        let run = app.store().get_run(*id).await.unwrap();
        let config: Value = serde_json::from_str(&run.config_json).unwrap();
        assert_eq!(
            config["source_config"]["aiperf_summary"]["sha256"],
            summary_sha.as_str()
        );
        let arrivals = RunArrivals::from_config(RunKind::Load, &config);
        assert_eq!(arrivals.offered, OfferedLoad::Concurrency { requests: 2 });
        assert_eq!(arrivals.client_concurrency, None);
    }

    // The export alone, in a folder of its own: an unknown point, said per phase, in the preview.
    let alone = dir.path().join("alone");
    std::fs::create_dir(&alone).unwrap();
    let copy = alone.join("profile_export.jsonl");
    std::fs::copy(&export, &copy).unwrap();
    let preview = app
        .preview_import(input(sid, "Q8", ImportFormat::Aiperf, &copy), |_| {})
        .await
        .unwrap();
    let noted: Vec<&str> = preview
        .warnings
        .iter()
        .filter(|w| w.message.contains(UNKNOWN_POINT))
        .map(|w| w.message.as_str())
        .collect();
    assert_eq!(noted.len(), 2, "{:?}", preview.warnings);
    assert!(
        noted[1].starts_with("profile_export.jsonl, aiperf · profiling"),
        "{}",
        noted[1]
    );
}

/// A vLLM result's rows are read while they are stored, in batches: what is stored is row for
/// row what the whole-file parser reads, and a row refused after thousands were written leaves
/// nothing behind.
#[tokio::test]
async fn a_vllm_result_streamed_into_the_store_is_the_whole_file_parse_row_for_row() {
    let (dir, app, sid) = study("streamed").await;
    let n = 5_000;
    let text = vllm_bench_detailed(n, r#""cell": "B0","#);
    let path = dir.path().join("bench.json");
    std::fs::write(&path, &text).unwrap();
    let parsed =
        kvgate_formats::import::parse(ImportFormat::VllmBench, "bench.json", text.as_bytes())
            .unwrap();
    // Laid out by the scan, so its rows are read while they are stored.
    let source = kvgate_formats::import::Source::new("bench.json");
    let scanned = kvgate_formats::import::vllm_bench::stream::scan(&source, text.as_bytes());
    assert!(matches!(scanned, Ok(Some(_))), "the scan lays the file out");
    let summary = app
        .import_file(input(sid, "B0", ImportFormat::VllmBench, &path), |_| {})
        .await
        .unwrap();
    assert_eq!(summary.requests as usize, n);
    let stored = app.store().run_requests(summary.run_ids[0]).await.unwrap();
    let records: Vec<_> = stored.into_iter().map(|r| r.record).collect();
    assert_eq!(records.len(), parsed.runs[0].requests.len());
    for (got, want) in records.iter().zip(&parsed.runs[0].requests) {
        // The store keeps what it measures; compared field by field where it keeps them all.
        assert_eq!(
            (
                got.index,
                got.status,
                got.dispatch_ms,
                got.first_token_ms,
                got.finish_ms
            ),
            (
                want.index,
                want.status,
                want.dispatch_ms,
                want.first_token_ms,
                want.finish_ms
            )
        );
        assert_eq!(
            got.chunk_times_ms, want.chunk_times_ms,
            "row {}",
            want.index
        );
        assert_eq!(
            (
                &got.output_text,
                &got.error,
                got.prompt_tokens,
                got.completion_tokens
            ),
            (
                &want.output_text,
                &want.error,
                want.prompt_tokens,
                want.completion_tokens
            )
        );
    }
    let warnings: Vec<String> = summary.warnings.iter().map(|w| w.message.clone()).collect();
    let expected: Vec<String> = parsed.warnings.iter().map(|w| w.message.clone()).collect();
    assert_eq!(warnings, expected);

    // The same file with one row near its end refused (TTFT after its latency).
    let before = counts(&app).await;
    let marker = "\"latencies\": [";
    let at = text.find(marker).unwrap() + marker.len();
    let mut values: Vec<String> = text[at..at + text[at..].find(']').unwrap()]
        .split(", ")
        .map(str::to_owned)
        .collect();
    values[4_900] = "0.0625".into();
    let broken = format!(
        "{}{}{}",
        &text[..at],
        values.join(", "),
        &text[at + text[at..].find(']').unwrap()..]
    );
    let broken_path = dir.path().join("broken.json");
    std::fs::write(&broken_path, broken).unwrap();
    let err = app
        .import_file(
            input(sid, "B0", ImportFormat::VllmBench, &broken_path),
            |_| {},
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput, "{}", err.message);
    assert!(
        err.message.contains("broken.json") && err.message.contains("$.ttfts[4900]"),
        "{}",
        err.message
    );
    assert_eq!(counts(&app).await, before, "nothing of it was stored");
}
