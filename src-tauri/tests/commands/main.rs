//! The desktop commands on Tauri's mock runtime: each command is called through the real IPC
//! path (argument decoding, the app's capabilities, the service layer, a real SQLite file).

use kvgate_app::{App, DbLocation};
use kvgate_desktop::SaveDialogs;
use serde_json::{json, Value};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{mock_builder, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::WebviewWindow;

struct Harness {
    _dir: tempfile::TempDir,
    _app: tauri::App<MockRuntime>,
    window: WebviewWindow<MockRuntime>,
    /// Where the save dialogs answer: the suggested file name in this folder.
    saved: std::path::PathBuf,
}

/// The real app configuration (window label, capabilities, CSP) on the mock runtime; only the
/// save dialog's answer is given (the suggested name in `saved`), as in an automated window.
fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("saved");
    std::fs::create_dir(&saved).unwrap();
    let service =
        tauri::async_runtime::block_on(App::open(DbLocation::Path(dir.path().join("ws.sqlite"))))
            .unwrap();
    let app = kvgate_desktop::build_app_with(
        mock_builder(),
        service,
        SaveDialogs::AnswerIn(saved.clone()),
    )
    .build(tauri::generate_context!())
    .unwrap();
    let window = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .unwrap();
    Harness {
        _dir: dir,
        _app: app,
        window,
        saved,
    }
}

fn invoke_as(window: &WebviewWindow<MockRuntime>, cmd: &str, args: Value) -> Result<Value, Value> {
    tauri::test::get_ipc_response(
        window,
        InvokeRequest {
            cmd: cmd.into(),
            callback: CallbackFn(0),
            error: CallbackFn(1),
            url: "tauri://localhost".parse().unwrap(),
            body: InvokeBody::Json(args),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        },
    )
    .map(|body| body.deserialize::<Value>().unwrap())
}

fn invoke(h: &Harness, cmd: &str, args: Value) -> Result<Value, Value> {
    invoke_as(&h.window, cmd, args)
}

#[test]
fn create_list_open_and_last_opened() {
    let h = harness();
    assert_eq!(invoke(&h, "list_studies", json!({})), Ok(json!([])));
    assert_eq!(invoke(&h, "last_opened_study", json!({})), Ok(Value::Null));

    let created = invoke(
        &h,
        "create_study",
        json!({"input": {"name": "FP8 KV chat", "description": "C1 vs B0"}}),
    )
    .unwrap();
    assert_eq!(created["name"], "FP8 KV chat");
    assert_eq!(created["provenance"], "user");

    let listed = invoke(&h, "list_studies", json!({})).unwrap();
    assert_eq!(listed, json!([created.clone()]));

    let opened = invoke(&h, "open_study", json!({"id": created["id"]})).unwrap();
    assert_eq!(opened, created);
    assert_eq!(invoke(&h, "last_opened_study", json!({})), Ok(created));
}

#[test]
fn open_demo_seeds_an_empty_database_and_progress_names_the_next_step() {
    let h = harness();
    assert_eq!(invoke(&h, "list_studies", json!({})), Ok(json!([])));
    let demo = invoke(&h, "open_demo", json!({})).unwrap();
    assert_eq!(demo["provenance"], "recorded_demo");
    assert_eq!(invoke(&h, "last_opened_study", json!({})), Ok(demo.clone()));
    // The same demo again, not a second one; the long set beside it, once.
    assert_eq!(invoke(&h, "open_demo", json!({})), Ok(demo.clone()));
    assert_eq!(
        invoke(&h, "list_studies", json!({}))
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let progress = invoke(&h, "study_progress", json!({"studyId": demo["id"]})).unwrap();
    assert_eq!(progress["study_id"], demo["id"]);
    assert_eq!(progress["baseline_frozen"], true);
    assert_eq!(progress["policy_version"], 1);
    assert_eq!(progress["cells_with_runs"], 2);
    assert!(
        ["review", "sign_off"].contains(&progress["next"].as_str().unwrap()),
        "{progress}"
    );
    let missing = invoke(&h, "study_progress", json!({"studyId": 999})).unwrap_err();
    assert_eq!(missing["code"], "not_found");
}

/// Another process writes to the database: the window hears of it once, and not while
/// everyone only reads.
#[test]
fn the_database_watch_reports_a_write_by_another_process() {
    use std::sync::mpsc;
    use std::time::Duration;
    use tauri::Listener;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ws.sqlite");
    let service =
        tauri::async_runtime::block_on(App::open(DbLocation::Path(path.clone()))).unwrap();
    let app = kvgate_desktop::build_app(mock_builder(), service.clone())
        .build(tauri::generate_context!())
        .unwrap();
    let (tx, rx) = mpsc::channel();
    app.listen(kvgate_desktop::watch::DB_CHANGED_EVENT, move |_| {
        let _ = tx.send(());
    });
    let _watch = kvgate_desktop::watch::watch_database(
        app.handle().clone(),
        service.clone(),
        Duration::from_millis(20),
    );

    tauri::async_runtime::block_on(service.list_studies()).unwrap();
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "a read was reported as a change"
    );

    let cli = tauri::async_runtime::block_on(App::open(DbLocation::Path(path))).unwrap();
    tauri::async_runtime::block_on(cli.create_study(kvgate_app::domain::study::NewStudy {
        name: "from the command line".into(),
        description: String::new(),
    }))
    .unwrap();
    rx.recv_timeout(Duration::from_secs(5))
        .expect("the write is reported");
    tauri::async_runtime::block_on(cli.close());
}

#[test]
fn errors_reach_the_ui_as_code_and_message() {
    let h = harness();
    let err = invoke(
        &h,
        "create_study",
        json!({"input": {"name": "  ", "description": ""}}),
    )
    .unwrap_err();
    assert_eq!(err["code"], "invalid_input");
    assert!(err["message"].as_str().unwrap().contains("`name`"), "{err}");

    let err = invoke(&h, "open_study", json!({"id": 404})).unwrap_err();
    assert_eq!(err["code"], "not_found");

    // A malformed argument is rejected by the IPC layer before any action runs.
    let err = invoke(&h, "open_study", json!({"id": "one"})).unwrap_err();
    assert!(err.to_string().contains("id"), "{err}");
}

#[test]
fn app_info_names_the_database() {
    let h = harness();
    let info = invoke(&h, "app_info", json!({})).unwrap();
    assert_eq!(info["db_is_default"], false);
    assert!(info["db_path"].as_str().unwrap().ends_with("ws.sqlite"));
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn commands_not_granted_to_a_window_are_refused() {
    let h = harness();
    // Capabilities grant the commands to the window labelled "main" only.
    let other = tauri::WebviewWindowBuilder::new(&h._app, "other", Default::default())
        .build()
        .unwrap();
    let err = invoke_as(&other, "list_studies", json!({})).unwrap_err();
    assert!(err.to_string().contains("not allowed"), "{err}");
    // An unknown command is refused too.
    let err = invoke(&h, "shell_execute", json!({})).unwrap_err();
    assert!(!err.is_null());
}

/// GL compositing is turned off only where no GPU can render, and never against the user's
/// own setting.
#[test]
fn compositing_is_off_only_without_a_gpu_render_node() {
    use kvgate_desktop::compositing_off;
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // No /dev/dri at all (a container, a CI machine): software GL, compositing off.
    assert!(compositing_off(false, &[]));
    // A display device without a render node (a virtual machine's framebuffer): still off.
    assert!(compositing_off(false, &names(&["card0", "by-path"])));
    // A GPU: its render node keeps the compositing on, whatever else is listed.
    assert!(!compositing_off(false, &names(&["card0", "renderD128"])));
    assert!(!compositing_off(
        false,
        &names(&["by-path", "card1", "renderD129"])
    ));
    // A name that merely contains it is not a render node.
    assert!(compositing_off(false, &names(&["xrenderD128"])));
    // The user's own setting, either way, is left as it is.
    assert!(!compositing_off(true, &[]));
    assert!(!compositing_off(true, &names(&["renderD128"])));
}

#[test]
fn db_location_prefers_the_command_line() {
    use std::path::PathBuf;
    let loc = kvgate_desktop::db_location_from(["--db".to_string(), "/tmp/x.sqlite".to_string()]);
    assert_eq!(loc, DbLocation::Path(PathBuf::from("/tmp/x.sqlite")));
    let loc = kvgate_desktop::db_location_from(["--db=/tmp/y.sqlite".to_string()]);
    assert_eq!(loc, DbLocation::Path(PathBuf::from("/tmp/y.sqlite")));
}

#[test]
fn manifest_commands_take_camel_case_arguments() {
    let h = harness();
    let study = invoke(
        &h,
        "create_study",
        json!({"input": {"name": "S", "description": ""}}),
    )
    .unwrap();
    let b0 = include_str!("../../../fixtures/manifests/smollm2-135m-cpu-b0.json");
    let check = invoke(&h, "validate_manifest", json!({"text": b0})).unwrap();
    assert_eq!(check["problems"], json!([]));
    let digest = check["digest"].as_str().unwrap().to_owned();

    let saved = invoke(
        &h,
        "save_manifest_draft",
        json!({"studyId": study["id"], "text": b0}),
    )
    .unwrap();
    assert_eq!(saved["status"], "draft");
    let frozen = invoke(
        &h,
        "freeze_manifest",
        json!({"studyId": study["id"], "cell": "B0", "expectedDigest": digest}),
    )
    .unwrap();
    assert_eq!(frozen["digest"], digest.as_str());
    let derived = invoke(
        &h,
        "derive_candidate",
        json!({"studyId": study["id"], "fromCell": "B0", "cell": "Q8"}),
    )
    .unwrap();
    assert_eq!(derived["cell"], "Q8");
    let diff = invoke(
        &h,
        "diff_manifests",
        json!({"studyId": study["id"], "referenceCell": "B0", "candidateCell": "Q8"}),
    )
    .unwrap();
    assert_eq!(diff["red"], 0);
    let cap = invoke(
        &h,
        "manifest_capacity",
        json!({"studyId": study["id"], "cell": "B0"}),
    )
    .unwrap();
    assert_eq!(cap["per_token"]["total_bytes"], 2 * 30 * 3 * 64 * 2);
    let vocab = invoke(&h, "manifest_vocabulary", json!({})).unwrap();
    assert!(vocab["engines"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["engine"] == "llama.cpp"));
    let err = invoke(
        &h,
        "delete_manifest_draft",
        json!({"studyId": study["id"], "cell": "B0"}),
    )
    .unwrap_err();
    assert_eq!(err["code"], "conflict");
}

#[test]
fn fixtures_generate_open_and_check() {
    let h = harness();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("eval");
    let corpus = invoke(
        &h,
        "generate_fixtures",
        json!({"request": {"seed": 3, "preset": "test-2k", "split": "evaluation",
                           "per_stratum": 1, "out_dir": out.to_str().unwrap()}}),
    )
    .unwrap();
    assert_eq!(corpus["meta"]["item_count"], 72);
    assert_eq!(corpus["items"].as_array().unwrap().len(), 72);
    let opened = invoke(&h, "open_corpus", json!({"dir": out.to_str().unwrap()})).unwrap();
    assert_eq!(opened["meta"], corpus["meta"]);
    let report = invoke(
        &h,
        "check_corpora",
        json!({"a": out.to_str().unwrap(), "b": out.to_str().unwrap()}),
    )
    .unwrap();
    assert_eq!(report["shared_items"].as_array().unwrap().len(), 72);
    let err = invoke(
        &h,
        "open_corpus",
        json!({"dir": dir.path().join("none").to_str().unwrap()}),
    )
    .unwrap_err();
    assert_eq!(err["code"], "storage");
}

#[test]
fn weights_digest_of_a_checkpoint_directory() {
    let h = harness();
    let dir = tempfile::tempdir().unwrap();
    let header = br#"{"model.layers.0.self_attn.k_scale":{"dtype":"F32","shape":[],"data_offsets":[8,12]},"model.layers.0.mlp.weight":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}}"#;
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header);
    file.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    file.extend_from_slice(&0.5f32.to_le_bytes());
    std::fs::write(dir.path().join("model.safetensors"), file).unwrap();

    let digest = invoke(
        &h,
        "digest_weights",
        json!({"path": dir.path().to_str().unwrap()}),
    )
    .unwrap();
    assert_eq!(digest["weight_tensor_count"], 1);
    assert_eq!(digest["scale_tensor_count"], 1);
    assert_eq!(digest["scale_granularity"], "per_tensor");
    assert_eq!(digest["weights_digest"].as_str().unwrap().len(), 64);
    assert_eq!(
        invoke(&h, "cancel_weights_digest", json!({})),
        Ok(json!(false))
    );
    let err = invoke(
        &h,
        "digest_weights",
        json!({"path": dir.path().join("nope").to_str().unwrap()}),
    )
    .unwrap_err();
    assert_eq!(err["code"], "storage");
}

#[test]
fn weights_compare_lists_the_differing_tensor() {
    let h = harness();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, last: u8| {
        let header =
            br#"{"model.layers.0.mlp.weight":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}}"#;
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(header);
        file.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, last]);
        let path = dir.path().join(name);
        std::fs::write(&path, file).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let (a, b) = (write("a.safetensors", 8), write("b.safetensors", 9));
    let result = invoke(&h, "compare_weights", json!({"base": a, "candidate": b})).unwrap();
    let verdict = &result["comparison"]["verdict"];
    assert_eq!(verdict["kind"], "weights_differ");
    assert_eq!(
        verdict["differences"][0]["name"],
        "model.layers.0.mlp.weight"
    );
    assert_eq!(verdict["differences"][0]["what"], "bytes");
}

#[test]
fn import_sniff_preview_commit_list_and_refuse_a_second_time() {
    let h = harness();
    let study = invoke(
        &h,
        "create_study",
        json!({"input": {"name": "Imports", "description": ""}}),
    )
    .unwrap();
    let b0 = include_str!("../../../fixtures/manifests/smollm2-135m-cpu-b0.json");
    let digest = invoke(&h, "validate_manifest", json!({"text": b0})).unwrap()["digest"].clone();
    invoke(
        &h,
        "save_manifest_draft",
        json!({"studyId": study["id"], "text": b0}),
    )
    .unwrap();
    invoke(
        &h,
        "freeze_manifest",
        json!({"studyId": study["id"], "cell": "B0", "expectedDigest": digest}),
    )
    .unwrap();
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/imports/aiperf/profile_export.jsonl"
    );

    assert_eq!(
        invoke(&h, "sniff_import_format", json!({"path": file})),
        Ok(json!("aiperf"))
    );
    let input = json!({"study_id": study["id"], "cell": "B0", "format": "aiperf", "path": file, "job": "j1"});
    let preview = invoke(&h, "preview_import", json!({"input": input})).unwrap();
    assert_eq!(preview["format"], "aiperf");
    assert_eq!(preview["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(preview["runs"][0]["granularity"], "per_request");
    assert_eq!(preview["already_imported"], Value::Null);
    assert_eq!(
        invoke(&h, "list_imports", json!({"studyId": study["id"]})),
        Ok(json!([]))
    );

    let summary = invoke(&h, "commit_import", json!({"token": preview["token"]})).unwrap();
    assert_eq!(summary["sha256"], preview["sha256"]);
    let listed = invoke(&h, "list_imports", json!({"studyId": study["id"]})).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let runs = invoke(&h, "list_runs", json!({"studyId": study["id"]})).unwrap();
    assert_eq!(runs[0]["provenance"], "imported");
    assert_eq!(runs[0]["import_id"], summary["id"]);

    // The same bytes again: the preview says so, and committing is refused.
    let again = invoke(&h, "preview_import", json!({"input": input})).unwrap();
    assert_eq!(again["already_imported"]["id"], summary["id"]);
    let err = invoke(&h, "commit_import", json!({"token": again["token"]})).unwrap_err();
    assert_eq!(err["code"], "conflict");
    // A token is used once; an unknown job cannot be cancelled.
    let err = invoke(&h, "commit_import", json!({"token": again["token"]})).unwrap_err();
    assert_eq!(err["code"], "not_found");
    let err = invoke(&h, "cancel_import", json!({"job": "nope"})).unwrap_err();
    assert_eq!(err["code"], "not_found");
    let err = invoke(&h, "sniff_import_format", json!({"path": "/no/such/file"})).unwrap_err();
    assert_eq!(err["code"], "invalid_input");

    // The run saved through the save dialog: its kvgate-run file, under the suggested name. It
    // carries the verdicts, so it is refused until the study's policy is locked.
    let run_id = runs[0]["id"].as_i64().unwrap();
    let refused = invoke(&h, "export_run_file", json!({"runId": run_id})).unwrap_err();
    assert_eq!(refused["code"], "policy_not_locked");
    let policy = include_str!("../../../fixtures/policies/demo-cpu.json");
    invoke(
        &h,
        "lock_policy",
        json!({"input": {"study_id": study["id"], "policy_json": policy, "locked_by": "owner"}}),
    )
    .unwrap();
    let saved = invoke(&h, "export_run_file", json!({"runId": run_id})).unwrap();
    let path = h.saved.join(format!("run-{run_id}-b0.kvgate-run.jsonl"));
    assert_eq!(saved["path"], path.display().to_string());
    let text = std::fs::read_to_string(&path).unwrap();
    let header = text.lines().next().unwrap();
    assert!(header.contains("\"format\":\"kvgate-run\""), "{header}");
    assert_eq!(saved["size"], text.len());
}

#[test]
fn policy_check_lock_status_analyze_and_plan() {
    let h = harness();
    let study = invoke(&h, "create_study", json!({"input": {"name": "policy"}})).unwrap();
    let sid = study["id"].clone();
    let refused = invoke(&h, "analyze_study", json!({"studyId": sid})).unwrap_err();
    assert_eq!(refused["code"], "policy_not_locked");
    let refused = invoke(&h, "study_results", json!({"studyId": sid})).unwrap_err();
    assert_eq!(refused["code"], "policy_not_locked");

    let policy = include_str!("../../../fixtures/policies/demo-cpu.json");
    assert_eq!(
        invoke(&h, "check_policy", json!({"policyJson": policy})),
        Ok(json!([]))
    );
    let problems = invoke(
        &h,
        "check_policy",
        json!({"policyJson": policy.replace("\"alpha\": 0.05", "\"alpha\": 1")}),
    )
    .unwrap();
    assert_eq!(problems[0]["path"], "alpha");

    let locked = invoke(
        &h,
        "lock_policy",
        json!({"input": {"study_id": sid, "policy_json": policy, "locked_by": "owner"}}),
    )
    .unwrap();
    assert_eq!(locked["version"], 1);
    assert_eq!(locked["sha256"].as_str().unwrap().len(), 64);
    let status = invoke(&h, "policy_status", json!({"studyId": sid})).unwrap();
    assert_eq!(status["current"]["sha256"], locked["sha256"]);

    // No frozen cell yet: the analysis is empty, not invented.
    let analysis = invoke(&h, "analyze_study", json!({"studyId": sid})).unwrap();
    assert_eq!(analysis["cells"], json!([]));
    assert_eq!(analysis["policy_sha256"], locked["sha256"]);
    // The Results screen's content: the same analysis, with its charts drawn from it.
    let results = invoke(&h, "study_results", json!({"studyId": sid})).unwrap();
    assert_eq!(results["analysis"]["policy_sha256"], locked["sha256"]);
    let goodput = results["charts"]["goodput"]["svg"].as_str().unwrap();
    assert!(
        goodput.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{goodput}"
    );
    assert_eq!(results["charts"]["forest"], json!([]));

    let plan = invoke(
        &h,
        "plan_pairs",
        json!({"margin": 0.05, "discordanceRate": 0.1, "alpha": 0.025, "power": 0.8}),
    )
    .unwrap();
    assert!(plan["pairs"].as_u64().unwrap() > 100, "{plan}");
    let bad = invoke(
        &h,
        "plan_pairs",
        json!({"margin": 0, "discordanceRate": 0.1, "alpha": 0.025, "power": 0.8}),
    )
    .unwrap_err();
    assert_eq!(bad["code"], "invalid_input");
}

#[test]
fn recovery_plan_check_record_and_status() {
    let h = harness();
    let study = invoke(&h, "create_study", json!({"input": {"name": "recovery"}})).unwrap();
    let sid = study["id"].clone();
    let plan = include_str!("../../../fixtures/recovery/demo-cpu.json");
    assert_eq!(
        invoke(&h, "check_recovery_plan", json!({"planJson": plan})),
        Ok(json!([]))
    );
    let problems = invoke(
        &h,
        "check_recovery_plan",
        json!({"planJson": plan.replace("\"share_percent\": 5", "\"share_percent\": 150")}),
    )
    .unwrap();
    assert_eq!(problems[0]["path"], "canary.share_percent");
    let empty = invoke(&h, "recovery_status", json!({"studyId": sid})).unwrap();
    assert_eq!(empty["current"], Value::Null);
    let recorded = invoke(
        &h,
        "record_recovery_plan",
        json!({"input": {"study_id": sid, "plan_json": plan, "by": "owner"}}),
    )
    .unwrap();
    assert_eq!(recorded["version"], 1);
    assert_eq!(recorded["plan"]["rehearsal"]["date"], "2026-11-30");
    let status = invoke(&h, "recovery_status", json!({"studyId": sid})).unwrap();
    assert_eq!(status["current"]["sha256"], recorded["sha256"]);
    let again = invoke(
        &h,
        "record_recovery_plan",
        json!({"input": {"study_id": sid, "plan_json": plan, "by": "owner"}}),
    )
    .unwrap_err();
    assert_eq!(again["code"], "conflict");
}

#[test]
fn packet_export_verify_and_open() {
    let h = harness();
    let study = invoke(&h, "create_study", json!({"input": {"name": "packet"}})).unwrap();
    let sid = study["id"].clone();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("packet");
    let refused = invoke(
        &h,
        "export_packet",
        json!({"input": {"study_id": sid, "out": out.display().to_string()}}),
    )
    .unwrap_err();
    assert_eq!(refused["code"], "policy_not_locked");
    let policy = include_str!("../../../fixtures/policies/demo-cpu.json");
    invoke(
        &h,
        "lock_policy",
        json!({"input": {"study_id": sid, "policy_json": policy, "locked_by": "owner"}}),
    )
    .unwrap();
    let export = invoke(
        &h,
        "export_packet",
        json!({"input": {"study_id": sid, "out": out.display().to_string()}}),
    )
    .unwrap();
    assert_eq!(export["index_sha256"].as_str().unwrap().len(), 64);
    let target = json!({"target": out.display().to_string()});
    let verified = invoke(&h, "verify_packet", target.clone()).unwrap();
    assert_eq!(verified["verified"], true, "{verified}");
    let view = invoke(&h, "open_packet", target).unwrap();
    assert!(view["report_html"]
        .as_str()
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
    let elsewhere = invoke(
        &h,
        "open_packet",
        json!({"target": dir.path().display().to_string()}),
    )
    .unwrap();
    assert_eq!(elsewhere["report_html"], Value::Null);
}

#[test]
fn endpoint_keys_go_in_and_never_come_back() {
    let h = harness();
    let url = "http://127.0.0.1:9/v1";
    let bad = invoke(
        &h,
        "set_endpoint_key",
        json!({"input": {"url": url, "key": "  ", "session_fallback": true}}),
    )
    .unwrap_err();
    assert_eq!(bad["code"], "invalid_input");
    assert!(
        bad["message"].as_str().unwrap().starts_with("key: "),
        "{bad}"
    );
    let bad_url = invoke(&h, "endpoint_key_status", json!({"url": "ftp://x"})).unwrap_err();
    assert_eq!(bad_url["code"], "invalid_input");

    let secret = "sk-tauri-command-test-7f3a";
    let set = invoke(
        &h,
        "set_endpoint_key",
        json!({"input": {"url": url, "key": secret, "session_fallback": true}}),
    )
    .unwrap();
    assert!(!set.to_string().contains(secret), "{set}");
    assert_eq!(set["origin"], "http://127.0.0.1:9");
    // Wherever this machine keeps it, the answer says so consistently: the OS keyring when one
    // answers, else the session with its warning.
    if set["keyring"]["available"] == true {
        assert_eq!(set["stored_in"], "os_keyring", "{set}");
        assert_eq!(set["warning"], Value::Null);
    } else {
        assert_eq!(set["stored_in"], "session", "{set}");
        assert!(set["warning"]
            .as_str()
            .unwrap()
            .contains("lost when the process ends"));
    }
    let status = invoke(&h, "endpoint_key_status", json!({"url": url})).unwrap();
    assert_eq!(status["stored_in"], set["stored_in"], "{status}");
    assert!(!status.to_string().contains(secret));
    let forgotten = invoke(&h, "forget_endpoint_key", json!({"url": url})).unwrap();
    assert_eq!(forgotten["stored_in"], Value::Null, "{forgotten}");
    let after = invoke(&h, "endpoint_key_status", json!({"url": url})).unwrap();
    assert_eq!(after["stored_in"], Value::Null, "{after}");
}

#[test]
fn the_window_shows_only_the_apps_own_pages() {
    let ok = [
        "tauri://localhost/",
        "tauri://localhost/index.html#/runs",
        "http://tauri.localhost/",
        "about:srcdoc",
        "about:blank",
    ];
    for url in ok {
        assert!(kvgate_desktop::is_app_url(&url.parse().unwrap()), "{url}");
    }
    let refused = [
        "https://example.com/",
        "http://127.0.0.1:8080/",
        "tauri://example.com/",
        "file:///etc/passwd",
        "data:text/html,<script>1</script>",
        "javascript:alert(1)",
        "about:config",
    ];
    for url in refused {
        assert!(!kvgate_desktop::is_app_url(&url.parse().unwrap()), "{url}");
    }
}

#[test]
fn a_chart_saved_through_the_save_dialog_is_the_chart_shown() {
    let h = harness();
    let study = invoke(
        &h,
        "create_study",
        json!({"input": {"name": "Chart export"}}),
    )
    .unwrap();
    let sid = study["id"].clone();
    let goodput = json!({"chart": "goodput"});
    // Refused before any dialog while results are hidden; nothing is written.
    let refused = invoke(
        &h,
        "export_chart",
        json!({"studyId": sid, "spec": goodput, "format": "svg"}),
    )
    .unwrap_err();
    assert_eq!(refused["code"], "policy_not_locked");
    let refused = invoke(
        &h,
        "choose_packet_out",
        json!({"studyId": sid, "zip": true}),
    )
    .unwrap_err();
    assert_eq!(refused["code"], "policy_not_locked");
    assert_eq!(std::fs::read_dir(&h.saved).unwrap().count(), 0);

    let policy = include_str!("../../../fixtures/policies/demo-cpu.json");
    invoke(
        &h,
        "lock_policy",
        json!({"input": {"study_id": sid, "policy_json": policy, "locked_by": "owner"}}),
    )
    .unwrap();
    let shown = invoke(&h, "study_results", json!({"studyId": sid})).unwrap();
    let saved = invoke(
        &h,
        "export_chart",
        json!({"studyId": sid, "spec": goodput, "format": "svg"}),
    )
    .unwrap();
    let path = h.saved.join("chart-export_goodput.svg");
    assert_eq!(saved["path"], path.display().to_string());
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        shown["charts"]["goodput"]["svg"].as_str().unwrap()
    );
    let saved = invoke(
        &h,
        "export_chart",
        json!({"studyId": sid, "spec": {"chart": "latency", "metric": "ttft"}, "format": "png"}),
    )
    .unwrap();
    let png = std::fs::read(h.saved.join("chart-export_latency-ttft.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert_eq!(saved["size"], png.len());

    // The packet's place is asked for; the export stays the Export button's.
    let out = invoke(
        &h,
        "choose_packet_out",
        json!({"studyId": sid, "zip": true}),
    )
    .unwrap();
    assert_eq!(
        out,
        json!(h
            .saved
            .join("chart-export-packet.zip")
            .display()
            .to_string())
    );
    let out = invoke(
        &h,
        "choose_packet_out",
        json!({"studyId": sid, "zip": false}),
    )
    .unwrap();
    assert_eq!(
        out,
        json!(h.saved.join("chart-export-packet").display().to_string())
    );
    assert!(!h.saved.join("chart-export-packet").exists());
}

#[test]
fn the_plugins_commands_are_not_granted_to_the_webview() {
    let h = harness();
    for cmd in [
        "plugin:dialog|open",
        "plugin:dialog|save",
        "plugin:dialog|message",
        "plugin:opener|open_url",
        "plugin:opener|open_path",
        "plugin:opener|reveal_item_in_dir",
    ] {
        let err = invoke(&h, cmd, json!({"path": "/", "url": "https://example.org"})).unwrap_err();
        assert!(err.to_string().contains("not allowed"), "{cmd}: {err}");
    }
}

#[test]
fn save_dialogs_are_answered_without_a_person_only_in_an_automated_window() {
    use std::ffi::OsString;
    let dir = || Some(OsString::from("/tmp/saved"));
    let yes = || Some(OsString::from("true"));
    assert_eq!(
        SaveDialogs::from_vars(yes(), dir()),
        SaveDialogs::AnswerIn("/tmp/saved".into())
    );
    assert_eq!(SaveDialogs::from_vars(None, dir()), SaveDialogs::Native);
    assert_eq!(
        SaveDialogs::from_vars(Some(OsString::from("1")), dir()),
        SaveDialogs::Native
    );
    assert_eq!(SaveDialogs::from_vars(yes(), None), SaveDialogs::Native);
    assert_eq!(
        SaveDialogs::from_vars(yes(), Some(OsString::new())),
        SaveDialogs::Native
    );
}

#[test]
fn a_packet_report_opens_in_the_browser_only_when_the_packet_verifies() {
    let h = harness();
    let dir = tempfile::tempdir().unwrap();
    // Not a packet: refused before any browser is asked.
    let err = invoke(
        &h,
        "open_packet_report",
        json!({"target": dir.path().display().to_string()}),
    )
    .unwrap_err();
    assert_eq!(err["code"], "invalid_input");
    let err = invoke(&h, "show_in_folder", json!({"path": "/no/such/file"})).unwrap_err();
    assert_eq!(err["code"], "internal");
    assert!(
        err["message"].as_str().unwrap().contains("/no/such/file"),
        "{err}"
    );
}
