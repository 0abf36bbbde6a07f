//! The app and the CLI on one database at once: WAL and the busy timeout let an import, study
//! creation from two CLI processes and writes of the app's own service all land, with no error
//! and no lost write.

use std::io::Write;
use std::process::{Command, Stdio};

use kvgate_app::domain::study::NewStudy;
use kvgate_app::{App, DbLocation};

use crate::{cpu_study, kvgate, stderr};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_and_cli_write_the_same_database_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    cpu_study(&db);

    // A large import, long enough to overlap everything below.
    let demo = std::fs::read_to_string(format!("{ROOT}fixtures/demo/runs/b0-f16.kvgate-run.jsonl"))
        .unwrap();
    let mut first: serde_json::Value = serde_json::from_str(demo.lines().nth(1).unwrap()).unwrap();
    let mut record = first["request"]["record"].take();
    let file = dir.path().join("requests.jsonl");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    for i in 0..20_000u32 {
        record["index"] = i.into();
        serde_json::to_writer(&mut w, &record).unwrap();
        w.write_all(b"\n").unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let cli = env!("CARGO_BIN_EXE_kvgate");
    let mut import = Command::new(cli)
        .arg("--db")
        .arg(&db)
        .args([
            "import", "--study", "cpu", "--cell", "B0", "--format", "jsonl",
        ])
        .arg(&file)
        .env_remove("KVGATE_DB")
        .env("KVGATE_PROGRESS_INTERVAL_MS", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Everything below starts once the import writes its rows, inside its transaction.
    crate::crash::wait_for_stderr(&mut import, "storing ", std::time::Duration::from_secs(120));
    // Two CLI processes creating studies in a loop.
    let creators: Vec<_> = (0..2)
        .map(|p| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..12 {
                    let out = kvgate(&db, &["study", "create", &format!("cli {p}-{i}")]);
                    assert!(out.status.success(), "cli {p}-{i}: {}", stderr(&out));
                }
            })
        })
        .collect();
    // The app's service, in this process, writing at the same time.
    let app = App::open(DbLocation::Path(db.clone())).await.unwrap();
    for i in 0..12 {
        app.create_study(NewStudy {
            name: format!("app {i}"),
            description: String::new(),
        })
        .await
        .unwrap_or_else(|e| panic!("app {i}: {}", e.message));
    }
    for c in creators {
        c.join().unwrap();
    }
    let status = import.wait().unwrap();
    assert!(status.success(), "import: {status}");

    let studies = app.list_studies().await.unwrap();
    assert_eq!(studies.len(), 1 + 12 + 2 * 12, "no study lost");
    let runs = app.list_runs(studies[0].id).await.unwrap();
    assert_eq!(runs.len(), 1);
    let detail = app.run_detail(runs[0].id).await.unwrap();
    assert_eq!(detail.requests.len(), 20_000, "the import whole");
    let check = Command::new("sqlite3")
        .arg(&db)
        .arg("PRAGMA integrity_check;")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&check.stdout).trim(), "ok");
}
