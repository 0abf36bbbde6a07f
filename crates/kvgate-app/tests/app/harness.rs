//! Evaluation-harness results as paired evidence, through the service layer: the lm-eval samples
//! recorded against the real llama.cpp servers (`fixtures/real-tools/lm-eval-0.4.13/`, a task KV
//! Gate exported) pair by fixture item and are judged by KV Gate's validator; a prompt that
//! differs is unpaired with the reason; a harness task's verdicts follow the metric the locked
//! policy names; a partial score is refused, storing nothing.

use std::path::{Path, PathBuf};

use kvgate_app::imports::ImportInput;
use kvgate_app::App;
use kvgate_core::pairing::UnpairedReason;
use kvgate_core::validator::ReasonCode;
use kvgate_formats::import::ImportFormat;
use serde_json::Value;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");

fn repo(rel: &str) -> PathBuf {
    Path::new(ROOT).join(rel)
}

fn recorded(kv: &str) -> PathBuf {
    repo("fixtures/real-tools/lm-eval-0.4.13").join(kv)
}

/// The files of a recorded folder whose names start with `prefix`, sorted.
fn files(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    out.sort();
    out
}

/// B0 and Q8 frozen, `policy_json` locked.
async fn study(policy_json: &str) -> (tempfile::TempDir, App, i64) {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = crate::study_with_demo_runs(&dir).await;
    app.lock_policy(kvgate_app::analysis::LockPolicyInput {
        study_id: sid,
        policy_json: policy_json.to_owned(),
        locked_by: "owner".into(),
    })
    .await
    .unwrap();
    (dir, app, sid)
}

fn demo_policy() -> String {
    std::fs::read_to_string(repo("fixtures/policies/demo-cpu.json")).unwrap()
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

async fn import(app: &App, sid: i64, cell: &str, format: ImportFormat, path: &Path) {
    app.import_file(input(sid, cell, format, path), |_| {})
        .await
        .unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message));
}

/// Startup logs and samples of both recorded cells; `q8_samples` replaces Q8's samples files.
async fn import_recorded(app: &App, sid: i64, q8_samples: Option<Vec<PathBuf>>) {
    for (cell, kv) in [("B0", "f16"), ("Q8", "q8_0")] {
        let dir = recorded(kv);
        import(
            app,
            sid,
            cell,
            ImportFormat::LlamacppLog,
            &dir.join(format!("server-{kv}.log")),
        )
        .await;
        let samples = match (&q8_samples, cell) {
            (Some(files), "Q8") => files.clone(),
            _ => files(&dir, "samples_"),
        };
        for f in samples {
            import(app, sid, cell, ImportFormat::LmEvalSamples, &f).await;
        }
    }
}

fn overall(analysis: &kvgate_app::analysis::StudyAnalysis) -> (u64, u64, u64) {
    let q8 = analysis.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    let o = q8.paired.iter().find(|p| p.stratum == "overall").unwrap();
    (o.n, o.b, o.c)
}

#[tokio::test]
async fn exported_items_run_by_lm_eval_pair_by_fixture_item_under_kv_gates_validator() {
    let (_dir, app, sid) = study(&demo_policy()).await;
    import_recorded(&app, sid, None).await;
    let analysis = app.analyze(sid).await.unwrap();
    // Six items per cell (three per language), every one paired, counted independently below.
    assert_eq!(overall(&analysis).0, 6);
    let q8 = analysis.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    assert!(q8.valid, "{:?}", q8.invalid_reasons);
    assert!(q8.unpaired.is_empty(), "{:?}", q8.unpaired);
    // The fixture strata, as KV Gate's own runs have them.
    assert!(q8
        .paired
        .iter()
        .any(|p| p.stratum == "language=de" && p.n == 3));
    assert!(q8
        .paired
        .iter()
        .any(|p| p.stratum == "length_class=short" && p.n == 6));
    // Verdicts by KV Gate's validator (its reason codes), never the harness's exact_match.
    let runs = app.list_runs(sid).await.unwrap();
    let quality: Vec<_> = runs
        .iter()
        .filter(|r| r.kind.as_str() == "quality")
        .collect();
    assert_eq!(
        quality.len(),
        4,
        "two samples files (one per language) per cell"
    );
    let mut judged = 0;
    for r in &quality {
        assert_eq!(r.config["import"]["format"], "lm-eval-samples");
        assert_eq!(r.config["source_config"]["lm_eval_version"], "0.4.13");
        let detail = app.run_detail(r.id).await.unwrap();
        for q in &detail.requests {
            let v = q.verdict.as_ref().unwrap();
            assert!(!v.reasons.contains(&ReasonCode::HarnessScore));
            judged += 1;
        }
    }
    assert_eq!(judged, 12);
    // Counted independently: the samples' own answers, judged again here by the validator.
    let mut expected_flips = (0u64, 0u64);
    let verdict = |kv: &str| -> Vec<(String, bool)> {
        let mut out = Vec::new();
        for f in files(&recorded(kv), "samples_") {
            for line in std::fs::read_to_string(f).unwrap().lines() {
                let row: Value = serde_json::from_str(line).unwrap();
                let expected: kvgate_core::validator::ExpectedAnswer =
                    serde_json::from_value(row["doc"]["expected_answer"].clone()).unwrap();
                let text = row["filtered_resps"][0].as_str().unwrap().to_owned();
                let v = kvgate_core::validator::validate(
                    &expected,
                    &kvgate_core::validator::ResponseOutcome::Completed { text },
                    Default::default(),
                );
                out.push((
                    row["doc"]["kvgate_item"].as_str().unwrap().to_owned(),
                    v.accepted,
                ));
            }
        }
        out.sort();
        out
    };
    for ((a, x), (b, y)) in verdict("f16").into_iter().zip(verdict("q8_0")) {
        assert_eq!(a, b);
        match (x, y) {
            (true, false) => expected_flips.0 += 1,
            (false, true) => expected_flips.1 += 1,
            _ => {}
        }
    }
    assert_eq!((overall(&analysis).1, overall(&analysis).2), expected_flips);
    // The reviewer reads each pair's prompt as lm-eval sent it (its chat messages) and its target.
    let queue = app
        .review_queue(
            sid,
            kvgate_app::review::ReviewFilter {
                agreeing_sample: 6,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(queue.pairs.len(), 6);
    for f in files(&recorded("f16"), "samples_") {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let row: Value = serde_json::from_str(line).unwrap();
            let item = row["doc"]["kvgate_item"].as_str().unwrap();
            let pair = queue.pairs.iter().find(|p| p.item_id == item).unwrap();
            let h = pair
                .harness
                .as_ref()
                .expect("the harness's prompt and target");
            let user = row["doc"]["user"].as_str().unwrap();
            assert!(h.prompt.starts_with("system:\n"), "{item}: {}", h.prompt);
            assert!(h.prompt.ends_with(&format!("user:\n{user}")), "{item}");
            assert_eq!(h.target, row["target"].as_str().unwrap(), "{item}");
            // The target of an exported task is the approved answer: the diff's expected column.
            let approved: kvgate_core::validator::ExpectedAnswer =
                serde_json::from_value(row["doc"]["expected_answer"].clone()).unwrap();
            assert_eq!(h.expected.as_ref(), Some(&approved), "{item}");
        }
    }
}

#[tokio::test]
async fn a_sample_whose_prompt_differs_is_not_a_pair_and_is_named() {
    let (dir, app, sid) = study(&demo_policy()).await;
    // Q8's English samples with one row's prompt hash changed, as a harness run over another
    // prompt (another template or few-shot) would write it.
    let mut changed = Vec::new();
    let mut item = String::new();
    for f in files(&recorded("q8_0"), "samples_") {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let mut text = std::fs::read_to_string(&f).unwrap();
        if name.contains("_en_") {
            let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let mut row: Value = serde_json::from_str(&lines[0]).unwrap();
            item = row["doc"]["kvgate_item"].as_str().unwrap().to_owned();
            row["prompt_hash"] = Value::String("0".repeat(64));
            lines[0] = row.to_string();
            text = lines.join("\n") + "\n";
        }
        let out = dir.path().join(&name);
        std::fs::write(&out, text).unwrap();
        changed.push(out);
    }
    import_recorded(&app, sid, Some(changed)).await;
    let analysis = app.analyze(sid).await.unwrap();
    assert_eq!(overall(&analysis).0, 5, "the changed prompt is not a pair");
    let q8 = analysis.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    let unpaired: Vec<_> = q8
        .unpaired
        .iter()
        .filter(|u| u.reason == UnpairedReason::PromptDiffers)
        .collect();
    assert_eq!(unpaired.len(), 1, "{:?}", q8.unpaired);
    assert_eq!(unpaired[0].key, item);
}

/// A samples file of task `t` (metrics `a` then `b`) for four documents, in a temp folder.
fn samples_of_t(dir: &Path, a: [f64; 4], b: [f64; 4]) -> PathBuf {
    let path = dir.join("samples_t_2026-12-04T10-00-00.000000.jsonl");
    let mut text = String::new();
    for i in 0..4 {
        let row = serde_json::json!({
            "doc_id": i, "doc": {"q": i}, "target": "x",
            "arguments": {"gen_args_0": {"arg_0": format!("question {i}"), "arg_1": {"temperature": 0.0}}},
            "resps": [[format!("answer {i}")]], "filtered_resps": [format!("answer {i}")],
            "filter": "none", "metrics": ["a", "b"],
            "doc_hash": "d", "prompt_hash": format!("p{i}"), "target_hash": "t",
            "a": a[i], "b": b[i],
        });
        text.push_str(&row.to_string());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn a_harness_tasks_verdicts_follow_the_metric_the_policy_names() {
    let mut policy: Value = serde_json::from_str(&demo_policy()).unwrap();
    policy["metrics"] = serde_json::json!({"t": "b"});
    let (dir, app, sid) = study(&policy.to_string()).await;
    for (cell, kv) in [("B0", "f16"), ("Q8", "q8_0")] {
        let log = recorded(kv).join(format!("server-{kv}.log"));
        import(&app, sid, cell, ImportFormat::LlamacppLog, &log).await;
    }
    // Metric `a` says both sides agree everywhere; `b`, which the policy names, has Q8 lose two.
    let b0 = dir.path().join("b0");
    let q8 = dir.path().join("q8");
    std::fs::create_dir_all(&b0).unwrap();
    std::fs::create_dir_all(&q8).unwrap();
    import(
        &app,
        sid,
        "B0",
        ImportFormat::LmEvalSamples,
        &samples_of_t(&b0, [1.0; 4], [1.0; 4]),
    )
    .await;
    import(
        &app,
        sid,
        "Q8",
        ImportFormat::LmEvalSamples,
        &samples_of_t(&q8, [1.0; 4], [1.0, 0.0, 0.0, 1.0]),
    )
    .await;
    let analysis = app.analyze(sid).await.unwrap();
    assert_eq!(overall(&analysis), (4, 2, 0));
    let q8_cell = analysis.body.cells.iter().find(|c| c.cell == "Q8").unwrap();
    assert!(q8_cell
        .paired
        .iter()
        .any(|p| p.stratum == "task=t" && p.n == 4));
    // The deciding metric is recorded with the run.
    let runs = app.list_runs(sid).await.unwrap();
    let run = runs.iter().find(|r| r.kind.as_str() == "quality").unwrap();
    assert_eq!(run.config["harness_metrics"][0]["metric"], "b");
    assert_eq!(run.config["harness_metrics"][0]["chosen_by"], "policy");
    // The reviewer reads each disagreement's prompt and target as lm-eval recorded them.
    let queue = app
        .review_queue(sid, kvgate_app::review::ReviewFilter::default())
        .await
        .unwrap();
    let mut seen: Vec<(String, String, String, Vec<String>)> = queue
        .pairs
        .iter()
        .map(|p| {
            let h = p
                .harness
                .as_ref()
                .expect("a harness pair carries its prompt");
            assert!(p.item.is_none());
            assert_eq!(h.expected, None, "a foreign target is no approved answer");
            assert!(
                p.item_note
                    .as_deref()
                    .unwrap_or("")
                    .contains("evaluation harness"),
                "{:?}",
                p.item_note
            );
            (
                p.item_id.clone(),
                h.prompt.clone(),
                h.target.clone(),
                h.needles.clone(),
            )
        })
        .collect();
    seen.sort();
    let want: Vec<(String, String, String, Vec<String>)> = [1, 2]
        .iter()
        .map(|i| {
            (
                seen.iter()
                    .find(|s| s.0.ends_with(&format!(":{i}")))
                    .map(|s| s.0.clone())
                    .unwrap_or_default(),
                format!("question {i}"),
                "x".to_owned(),
                vec!["x".to_owned()],
            )
        })
        .collect();
    assert_eq!(seen, want);

    // A partial score under the deciding metric is refused, and nothing is stored.
    let before = app.list_runs(sid).await.unwrap().len();
    let partial = dir.path().join("partial");
    std::fs::create_dir_all(&partial).unwrap();
    let err = app
        .import_file(
            input(
                sid,
                "Q8",
                ImportFormat::LmEvalSamples,
                &samples_of_t(&partial, [1.0; 4], [1.0, 0.5, 1.0, 1.0]),
            ),
            |_| {},
        )
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains("line 2, field `b`: expected a pass/fail score")
            && err.message.contains("found 0.5"),
        "{}",
        err.message
    );
    assert_eq!(app.list_runs(sid).await.unwrap().len(), before);
}

#[tokio::test]
async fn exported_items_run_by_inspect_pair_by_fixture_item_under_kv_gates_validator() {
    let (_dir, app, sid) = study(&demo_policy()).await;
    let root = repo("fixtures/real-tools/inspect-ai-0.3.285");
    for (cell, kv) in [("B0", "f16"), ("Q8", "q8_0")] {
        let dir = root.join(kv);
        import(
            &app,
            sid,
            cell,
            ImportFormat::LlamacppLog,
            &dir.join(format!("server-{kv}.log")),
        )
        .await;
        for log in files(&dir, "20") {
            import(&app, sid, cell, ImportFormat::Inspect, &log).await;
        }
    }
    let analysis = app.analyze(sid).await.unwrap();
    assert_eq!(
        overall(&analysis).0,
        6,
        "the six exported items pair across the two logs"
    );
    let runs = app.list_runs(sid).await.unwrap();
    for r in runs.iter().filter(|r| r.kind.as_str() == "quality") {
        assert_eq!(r.config["source_config"]["task"], "kvgate_live");
        assert_eq!(
            r.config["source_config"]["generation"]["task"]["max_tokens"],
            256
        );
        let detail = app.run_detail(r.id).await.unwrap();
        assert_eq!(detail.requests.len(), 6);
        for q in &detail.requests {
            let v = q.verdict.as_ref().unwrap();
            assert!(
                !v.reasons.contains(&ReasonCode::HarnessScore),
                "KV Gate's validator judged"
            );
            assert!(q
                .record
                .item_id
                .as_deref()
                .unwrap()
                .starts_with("evaluation-7-"));
        }
    }
}

/// Q8's recorded English samples file: its path and its rows.
fn q8_english_samples() -> (PathBuf, Vec<Value>) {
    let source = files(&recorded("q8_0"), "samples_")
        .into_iter()
        .find(|f| f.to_string_lossy().contains("_en_"))
        .unwrap();
    let rows = std::fs::read_to_string(&source)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (source, rows)
}

/// Writes `rows` as a samples file named like `source` into `dir`.
fn write_samples(dir: &Path, source: &Path, rows: &[Value]) -> PathBuf {
    let path = dir.join(source.file_name().unwrap());
    let text: String = rows.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn a_list_answer_exported_to_lm_eval_is_judged_element_by_element() {
    let (dir, app, sid) = study(&demo_policy()).await;
    // Q8's English samples, their first two documents turned into several-key items as KV Gate
    // exports them: the approved answer `{"answers": [A, B]}`. The first response gives the two
    // answers in the wrong order, the second in the right one.
    let (source, mut lines) = q8_english_samples();
    let a = serde_json::json!({"asset": "AX-104", "revision": "B", "nominal_torque": 12.5, "unit": "N.m"});
    let b = serde_json::json!({"asset": "KL-233", "revision": "D", "nominal_torque": 8.75, "unit": "kN.m"});
    let mut items = Vec::new();
    // A corpus KV Gate cannot find: the file's answers are used, and the import says so.
    let unknown = "0".repeat(64);
    for (i, response) in [
        serde_json::json!({"answers": [b.clone(), a.clone()]}),
        serde_json::json!({"answers": [a.clone(), b.clone()]}),
    ]
    .into_iter()
    .enumerate()
    {
        lines[i]["doc"]["expected_answer"] = serde_json::json!({"answers": [a.clone(), b.clone()]});
        lines[i]["doc"]["corpus_items_sha256"] = Value::String(unknown.clone());
        lines[i]["filtered_resps"] = serde_json::json!([response.to_string()]);
        items.push(lines[i]["doc"]["kvgate_item"].as_str().unwrap().to_owned());
    }
    let path = write_samples(dir.path(), &source, &lines);
    let summary = app
        .import_file(input(sid, "Q8", ImportFormat::LmEvalSamples, &path), |_| {})
        .await
        .unwrap();
    let unchecked = summary
        .warnings
        .iter()
        .find(|w| w.at == "$.doc.expected_answer")
        .expect("the unchecked answers are named");
    assert_eq!(unchecked.rows, 2, "{unchecked:?}");

    let run = app
        .list_runs(sid)
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.kind.as_str() == "quality")
        .unwrap();
    let detail = app.run_detail(run.id).await.unwrap();
    let verdict = |item: &str| {
        detail
            .requests
            .iter()
            .find(|q| q.record.item_id.as_deref() == Some(item))
            .and_then(|q| q.verdict.clone())
            .unwrap()
    };
    let swapped = verdict(&items[0]);
    assert!(!swapped.accepted);
    assert!(swapped.reasons.contains(&ReasonCode::WrongAsset));
    assert!(
        swapped
            .detail
            .iter()
            .any(|d| d.field.as_deref() == Some("answers[0].asset")),
        "{swapped:?}"
    );
    assert!(verdict(&items[1]).accepted, "{:?}", verdict(&items[1]));
}

#[tokio::test]
async fn an_exported_items_answer_changed_in_the_harness_file_is_refused() {
    let (dir, app, sid) = study(&demo_policy()).await;
    // lm-eval's samples of KV Gate's exported demo items, one approved answer edited (as a doc
    // edited between export and the harness run would carry it): the corpus it names is shipped
    // with KV Gate, so its own answer is known.
    let (source, mut lines) = q8_english_samples();
    let item = lines[1]["doc"]["kvgate_item"].as_str().unwrap().to_owned();
    let forged = serde_json::json!({"error": "not_found"});
    let original = lines[1]["doc"]["expected_answer"].clone();
    let forged = if original == forged {
        serde_json::json!({"asset": "AX-104", "revision": "B", "nominal_torque": 12.5, "unit": "N.m"})
    } else {
        forged
    };
    lines[1]["doc"]["expected_answer"] = forged;
    let path = write_samples(dir.path(), &source, &lines);
    let approved: kvgate_core::validator::ExpectedAnswer =
        serde_json::from_value(original.clone()).unwrap();
    let approved = serde_json::to_string(&approved).unwrap();
    let runs_before = app.list_runs(sid).await.unwrap().len();
    for attempt in [
        app.preview_import(input(sid, "Q8", ImportFormat::LmEvalSamples, &path), |_| {})
            .await
            .map(|_| ()),
        app.import_file(input(sid, "Q8", ImportFormat::LmEvalSamples, &path), |_| {})
            .await
            .map(|_| ()),
    ] {
        let e = attempt.expect_err("a forged approved answer is refused");
        assert!(
            e.message.contains("line 2, field `expected_answer`")
                && e.message.contains(&format!("item {item} in corpus "))
                && e.message.contains(&approved),
            "{}",
            e.message
        );
    }
    assert_eq!(
        app.list_runs(sid).await.unwrap().len(),
        runs_before,
        "nothing stored"
    );
    // The answer as exported, and the chat the harness sent edited, in the worked example's
    // question or in the item's own: not the approved prompt.
    lines[1]["doc"]["expected_answer"] = original.clone();
    let sent = lines[1]["arguments"]["gen_args_0"]["arg_0"].clone();
    let whole = sent.to_string();
    for at in [
        whole.find("Question: ").unwrap(),
        whole.rfind("Question: ").unwrap(),
    ] {
        let mut edited = whole.clone();
        edited.replace_range(at..at + "Question: ".len(), "Question (edited): ");
        lines[1]["arguments"]["gen_args_0"]["arg_0"] = serde_json::from_str(&edited).unwrap();
        write_samples(dir.path(), &source, &lines);
        let e = app
            .import_file(input(sid, "Q8", ImportFormat::LmEvalSamples, &path), |_| {})
            .await
            .expect_err("an edited chat is refused");
        assert!(
            e.message
                .contains("line 2, prompt: expected the chat messages of item")
                && e.message.contains(&item),
            "{}",
            e.message
        );
        assert_eq!(app.list_runs(sid).await.unwrap().len(), runs_before);
    }
    // The same file as exported and run imports.
    lines[1]["arguments"]["gen_args_0"]["arg_0"] = sent;
    write_samples(dir.path(), &source, &lines);
    let summary = app
        .import_file(input(sid, "Q8", ImportFormat::LmEvalSamples, &path), |_| {})
        .await
        .unwrap();
    assert!(
        summary
            .warnings
            .iter()
            .all(|w| w.at != "$.doc.expected_answer"),
        "checked against the corpus: {:?}",
        summary.warnings
    );
}
