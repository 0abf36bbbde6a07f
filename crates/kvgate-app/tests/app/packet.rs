//! The architecture-review packet, exported from the recorded llama.cpp runs: every file listed
//! with its digest, byte-identical on a second export, verification naming each changed, missing
//! or unexpected file, and a trace that carries no text of the evaluation corpus.

use std::collections::BTreeSet;
use std::path::Path;

use kvgate_app::packet::{open_packet, verify_packet, PacketExportInput, PacketIndex};
use kvgate_app::recovery::RecordRecoveryInput;
use kvgate_app::{App, ErrorCode};
use kvgate_core::fixtures::FixtureItem;
use kvgate_core::validator::ExpectedAnswer;

use crate::{locked_demo_study, ROOT};

/// The recorded runs name their corpus relative to the repository, as `make run` starts there.
fn at_repository_root() {
    std::env::set_current_dir(ROOT).unwrap();
}

async fn demo(dir: &tempfile::TempDir) -> (App, i64) {
    at_repository_root();
    let (app, sid) = locked_demo_study(dir).await;
    app.record_recovery_plan(RecordRecoveryInput {
        study_id: sid,
        plan_json: std::fs::read_to_string(format!("{ROOT}fixtures/recovery/demo-cpu.json"))
            .unwrap(),
        by: "owner".into(),
    })
    .await
    .unwrap();
    (app, sid)
}

fn export(sid: i64, out: &Path, zip: bool) -> PacketExportInput {
    PacketExportInput {
        study_id: sid,
        out: out.display().to_string(),
        zip,
        representative: None,
        sign: false,
    }
}

fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn a_packet_lists_every_file_exports_identically_and_verify_names_each_change() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = demo(&dir).await;
    let first = dir.path().join("packet-1");
    let e = app.export_packet(export(sid, &first, false)).await.unwrap();
    let paths: BTreeSet<&str> = e.files.iter().map(|f| f.path.as_str()).collect();
    for expected in [
        "report.html",
        "manifests/B0.json",
        "manifests/Q8.json",
        "policy/policy.json",
        "policy/limits.json",
        "trace/arrivals.csv",
        "trace/arrivals.parquet",
        "requests/representative.jsonl",
        "results/paired.csv",
        "results/paired.parquet",
        "results/goodput.csv",
        "charts/paired-delta.svg",
        "review/audit-chain.jsonl",
        "review/checklist.json",
        "review/recovery-plan.json",
    ] {
        assert!(
            paths.contains(expected),
            "{expected} missing from {paths:?}"
        );
    }
    assert!(paths
        .iter()
        .any(|p| p.starts_with("evidence/") && p.ends_with("startup_log.txt")));
    assert!(e.warnings.is_empty(), "{:?}", e.warnings);
    assert_eq!(e.representative.len(), 12, "the default balanced sample");

    // index.json lists every other file with its digest and size.
    let index: PacketIndex =
        serde_json::from_slice(&std::fs::read(first.join("index.json")).unwrap()).unwrap();
    assert_eq!(index.files.len() + 1, tree(&first).len());
    // The export lists what index.json lists, and verification checks as many.
    assert_eq!(e.files, index.files);
    assert!(!paths.contains("index.json"));
    assert_eq!(
        e.index_sha256,
        kvgate_core::canonical::sha256_hex(&std::fs::read(first.join("index.json")).unwrap())
    );
    for f in &index.files {
        let bytes = std::fs::read(first.join(&f.path)).unwrap();
        assert_eq!(f.size, bytes.len() as u64);
        assert_eq!(
            f.sha256,
            kvgate_core::canonical::sha256_hex(&bytes),
            "{}",
            f.path
        );
    }
    let v = verify_packet(&first);
    assert!(v.verified, "{v:?}");
    assert_eq!(v.files_checked, index.files.len() as u64);

    // The same study exported again: byte-identical, as a folder and as a zip.
    let second = dir.path().join("packet-2");
    let e2 = app
        .export_packet(export(sid, &second, false))
        .await
        .unwrap();
    assert_eq!(e2.index_sha256, e.index_sha256);
    assert_eq!(tree(&first), tree(&second));
    let zip1 = dir.path().join("p1.zip");
    let zip2 = dir.path().join("p2.zip");
    app.export_packet(export(sid, &zip1, true)).await.unwrap();
    app.export_packet(export(sid, &zip2, true)).await.unwrap();
    assert_eq!(std::fs::read(&zip1).unwrap(), std::fs::read(&zip2).unwrap());
    assert!(verify_packet(&zip1).verified);

    // One byte changed, one file removed, one added: each is named.
    let csv = second.join("results/paired.csv");
    let mut bytes = std::fs::read(&csv).unwrap();
    bytes[10] ^= 0x01;
    std::fs::write(&csv, bytes).unwrap();
    std::fs::remove_file(second.join("charts/goodput.svg")).unwrap();
    std::fs::write(second.join("notes.txt"), "added later").unwrap();
    let v = verify_packet(&second);
    assert!(!v.verified);
    assert_eq!(v.modified.len(), 1, "{v:?}");
    assert!(v.modified[0].starts_with("results/paired.csv: expected sha256 "));
    assert_eq!(v.missing, vec!["charts/goodput.svg".to_owned()]);
    assert_eq!(v.unexpected, vec!["notes.txt".to_owned()]);
    // A byte changed inside the zip is named too.
    let mut z = std::fs::read(&zip2).unwrap();
    let at = z
        .windows(b"<!DOCTYPE html>".len())
        .position(|w| w == b"<!DOCTYPE html>")
        .unwrap();
    z[at + 2] = b'd';
    std::fs::write(&zip2, z).unwrap();
    let v = verify_packet(&zip2);
    assert!(!v.verified);
    assert!(
        v.modified.iter().any(|m| m.starts_with("report.html: ")) || v.problem.is_some(),
        "{v:?}"
    );

    // Never written over: a non-empty folder or an existing zip is refused.
    let err = app
        .export_packet(export(sid, &first, false))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    let err = app
        .export_packet(export(sid, &zip1, true))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(
        verify_packet(&first).verified,
        "the refused export changed nothing"
    );
}

fn corpus() -> Vec<FixtureItem> {
    std::fs::read_to_string(format!("{ROOT}fixtures/demo/corpus/items.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn the_arrival_trace_carries_no_text_of_the_evaluation_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = demo(&dir).await;
    let out = dir.path().join("packet");
    app.export_packet(export(sid, &out, false)).await.unwrap();
    let trace_files: Vec<(String, Vec<u8>)> = tree(&out)
        .into_iter()
        .filter(|(p, _)| p.starts_with("trace/"))
        .collect();
    assert_eq!(trace_files.len(), 2, "csv and parquet");
    let items = corpus();
    let mut secrets: Vec<String> = Vec::new();
    for item in &items {
        secrets.push(item.prompt_text.clone());
        for m in &item.messages {
            secrets.push(m.content.clone());
        }
        secrets.extend(item.evidence.iter().cloned());
        secrets.extend(item.distractors.iter().map(|d| d.text.clone()));
        secrets.push(item.asked_asset.clone());
        if let ExpectedAnswer::Answer(a) = &item.expected {
            secrets.push(a.asset.clone());
            secrets.push(serde_json::to_string(&item.expected).unwrap());
        }
    }
    // The answers the servers gave, too.
    for run in app.list_runs(sid).await.unwrap() {
        for r in app.run_detail(run.id).await.unwrap().requests {
            if r.record.output_text.len() >= 8 {
                secrets.push(r.record.output_text.clone());
            }
        }
    }
    assert!(secrets.len() > 500);
    for (path, bytes) in &trace_files {
        let text = String::from_utf8_lossy(bytes);
        for s in &secrets {
            assert!(
                !text.contains(s.as_str()),
                "{path} carries corpus text {s:?}"
            );
        }
    }
    // Every field of the CSV is what its column allows: numbers, a 64-hex digest, a policy
    // class, a cell, a run kind or a status. No other text can be there.
    let csv = String::from_utf8(std::fs::read(out.join("trace/arrivals.csv")).unwrap()).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let policy: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{ROOT}fixtures/policies/demo-cpu.json")).unwrap(),
    )
    .unwrap();
    let mut classes: Vec<&str> = policy["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    classes.push("(unclassified)");
    let mut rows = 0;
    for line in lines {
        rows += 1;
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), header.len(), "{line}");
        for (name, v) in header.iter().zip(&fields) {
            let ok = match *name {
                "cell" => ["B0", "Q8"].contains(v),
                "kind" => ["quality", "load"].contains(v),
                "class" => classes.contains(v),
                "status" => ["ok", "error", "timeout", "rejected", "unfinished"].contains(v),
                "prompt_sha256" => v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()),
                _ => v.is_empty() || v.parse::<f64>().is_ok(),
            };
            assert!(ok, "{name} = {v:?} in {line}");
        }
    }
    assert_eq!(rows, 48, "24 measured requests per cell");
    // The hashes are those of the prompts: a reviewer holding the corpus can join them.
    let hashes: BTreeSet<String> = items
        .iter()
        .map(|i| kvgate_core::canonical::sha256_hex(i.prompt_text.as_bytes()))
        .collect();
    let last = header.len() - 1;
    assert!(csv
        .lines()
        .skip(1)
        .all(|l| hashes.contains(l.split(',').nth(last).unwrap())));
}

#[tokio::test]
async fn the_report_is_self_contained_labels_the_stand_in_and_reads_back_from_the_packet() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = demo(&dir).await;
    let out = dir.path().join("packet.zip");
    let chosen = vec![
        "evaluation-7-en-short-middle-literal-present-000".to_owned(),
        "evaluation-7-de-short-begin-literal-present-000".to_owned(),
    ];
    let mut input = export(sid, &out, true);
    input.representative = Some(chosen.clone());
    let e = app.export_packet(input.clone()).await.unwrap();
    let mut sorted = chosen.clone();
    sorted.sort();
    assert_eq!(e.representative, sorted);
    let view = open_packet(&out);
    assert!(view.verification.verified);
    let html = view.report_html.unwrap();
    assert!(html.contains(
        "Q8: llama.cpp q8_0 KV on CPU, an 8-bit stand-in — not FP8, not a GPU measurement"
    ));
    assert!(html.contains("recorded") || html.contains("user"));
    assert!(!html.contains("<script"), "no script");
    for remote in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(remote), "remote asset: {remote}");
    }
    assert!(html.contains("<svg"), "charts inline");
    assert!(html.contains("Recovery plan") && html.contains("2026-11-30"));

    // Unknown representative ids: refused, nothing written.
    let bad = dir.path().join("bad.zip");
    input.out = bad.display().to_string();
    input.representative = Some(vec!["evaluation-7-xx".into()]);
    let err = app.export_packet(input).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    assert!(err.message.contains("evaluation-7-xx"), "{}", err.message);
    assert!(!bad.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A folder that is not a packet is not read.
    let view = open_packet(dir.path());
    assert!(view.report_html.is_none());
    assert!(view.verification.problem.is_some());
}

#[tokio::test]
async fn only_a_verified_packet_s_report_is_given_to_the_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = demo(&dir).await;
    let folder = dir.path().join("packet");
    let zip = dir.path().join("packet.zip");
    app.export_packet(export(sid, &folder, false))
        .await
        .unwrap();
    let e = app.export_packet(export(sid, &zip, true)).await.unwrap();

    // A folder: its own report.html.
    assert_eq!(
        app.packet_report_file(&folder).unwrap(),
        folder.join("report.html")
    );
    // A zip: the verified bytes, copied beside the workspace database under the packet's name.
    let copy = app.packet_report_file(&zip).unwrap();
    assert_eq!(
        copy,
        dir.path()
            .join("packet-reports")
            .join(&e.index_sha256)
            .join("report.html")
    );
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(folder.join("report.html")).unwrap()
    );

    // A packet whose author rewrote the report without KV Gate's policy, and its index to
    // match: it verifies, yet its report is not handed to a browser.
    let crafted = dir.path().join("crafted");
    app.export_packet(export(sid, &crafted, false))
        .await
        .unwrap();
    let html = std::fs::read_to_string(crafted.join("report.html"))
        .unwrap()
        .replacen("Content-Security-Policy", "X-Nothing", 1)
        .replacen("<body>", "<body><script>alert(1)</script>", 1);
    std::fs::write(crafted.join("report.html"), &html).unwrap();
    let mut index: PacketIndex =
        serde_json::from_slice(&std::fs::read(crafted.join("index.json")).unwrap()).unwrap();
    let entry = index
        .files
        .iter_mut()
        .find(|f| f.path == "report.html")
        .unwrap();
    entry.sha256 = kvgate_core::canonical::sha256_hex(html.as_bytes());
    entry.size = html.len() as u64;
    std::fs::write(
        crafted.join("index.json"),
        serde_json::to_vec_pretty(&index).unwrap(),
    )
    .unwrap();
    assert!(verify_packet(&crafted).verified);
    let err = app.packet_report_file(&crafted).unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(err.message.contains("allows no script"), "{}", err.message);

    // One changed byte in the report: refused, and nothing is handed on.
    let report = folder.join("report.html");
    let mut bytes = std::fs::read(&report).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&report, bytes).unwrap();
    let err = app.packet_report_file(&folder).unwrap_err();
    assert_eq!(err.code, ErrorCode::Conflict);
    assert!(
        err.message.contains("does not match its index.json"),
        "{}",
        err.message
    );
    let err = app
        .packet_report_file(&dir.path().join("nothing"))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidInput);
    // A folder with no index.json is not a packet at all.
    let err = app
        .packet_report_file(&dir.path().join("packet-reports"))
        .unwrap_err();
    assert!(err.message.contains("not a packet: "), "{}", err.message);
    // A folder with no index.json is not a packet at all.
    let err = app.packet_report_file(dir.path().join("packet-reports").as_path());
    assert!(err.unwrap_err().message.contains("not a packet: "));
}

/// The seeded demo's packet carries its recorded sweep as the envelope's goodput and cost
/// against offered load, each cell's engine load over time, and its report lists the short
/// class's contracts as checked.
#[tokio::test]
async fn the_demo_packet_carries_the_envelope_charts_and_the_class_contracts() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::open(kvgate_app::DbLocation::Path(dir.path().join("demo.sqlite")))
        .await
        .unwrap();
    let demo = app.open_demo().await.unwrap();
    let out = dir.path().join("packet");
    let e = app
        .export_packet(export(demo.id, &out, false))
        .await
        .unwrap();
    let paths: BTreeSet<&str> = e.files.iter().map(|f| f.path.as_str()).collect();
    for chart in [
        "charts/envelope-short-goodput.svg",
        "charts/envelope-short-cost.svg",
        "charts/load-b0.svg",
        "charts/load-q8.svg",
    ] {
        assert!(paths.contains(chart), "{chart} missing from {paths:?}");
    }
    let svg = std::fs::read_to_string(out.join("charts/envelope-short-goodput.svg")).unwrap();
    assert!(svg.contains("knee B0 0.0800 req/s"), "the knee is marked");
    assert!(
        svg.contains("target 0.0200 req/s"),
        "the target load is marked"
    );
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        report.contains("Q8: completion rate of class `short`: 100.0% (12 of 12) meets the contract of at least 95.0%"),
        "the contracts are listed"
    );
}
