//! Crash safety: the CLI killed with SIGKILL in the middle of a large import and of a run. The
//! database stays consistent (`PRAGMA integrity_check`), no part of the import is visible (the
//! same file then imports whole), and the interrupted run is marked `interrupted`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{cpu_study, kvgate, stderr, stdout};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");

fn spawn(db: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kvgate"))
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("KVGATE_DB")
        .env("KVGATE_PROGRESS_INTERVAL_MS", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kvgate")
}

fn sigkill(child: &mut Child) {
    // SIGKILL, as a power cut or the OOM killer would: no handler runs.
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
}

/// `PRAGMA integrity_check` through the sqlite3 shell, independent of KV Gate.
fn integrity(db: &Path) -> String {
    let out = Command::new("sqlite3")
        .arg(db)
        .arg("PRAGMA integrity_check;")
        .output()
        .expect("sqlite3 is installed by scripts/setup.sh");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn query(db: &Path, sql: &str) -> String {
    let out = Command::new("sqlite3").arg(db).arg(sql).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Waits until `stderr` of the child has printed a line containing `needle`.
pub fn wait_for_stderr(child: &mut Child, needle: &str, timeout: Duration) {
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(err);
        let mut buf = Vec::new();
        // Progress lines end with \r or \n.
        let mut byte = [0u8; 1];
        while reader.read(&mut byte).map(|n| n == 1).unwrap_or(false) {
            if byte[0] == b'\n' || byte[0] == b'\r' {
                let _ = tx.send(String::from_utf8_lossy(&buf).into_owned());
                buf.clear();
            } else {
                buf.push(byte[0]);
            }
        }
    });
    let deadline = Instant::now() + timeout;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return,
            Ok(line) => seen.push(line),
            Err(e) => panic!("no `{needle}` on stderr ({e}); it printed {seen:?}"),
        }
    }
}

#[test]
fn sigkill_in_the_middle_of_a_large_import_leaves_nothing_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    cpu_study(&db);
    // A large file of KV Gate request records: the demo's first record, repeated with new indexes.
    let demo = std::fs::read_to_string(format!("{ROOT}fixtures/demo/runs/b0-f16.kvgate-run.jsonl"))
        .unwrap();
    let mut record: serde_json::Value = serde_json::from_str(demo.lines().nth(1).unwrap()).unwrap();
    let mut record = record["request"]["record"].take();
    let file = dir.path().join("requests.jsonl");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&file).unwrap());
    for i in 0..60_000u32 {
        record["index"] = i.into();
        record["planned_arrival_ms"] = (f64::from(i) * 10.0).into();
        serde_json::to_writer(&mut w, &record).unwrap();
        w.write_all(b"\n").unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let path = file.to_str().unwrap();
    let args = [
        "import", "--study", "cpu", "--cell", "B0", "--format", "jsonl", path,
    ];
    let mut child = spawn(&db, &args);
    // Killed while it writes its rows, inside the import's transaction.
    wait_for_stderr(&mut child, "storing ", Duration::from_secs(120));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the import finished before it could be killed: make the file larger"
    );
    sigkill(&mut child);

    assert_eq!(integrity(&db), "ok");
    assert_eq!(query(&db, "SELECT count(*) FROM imports"), "0");
    assert_eq!(query(&db, "SELECT count(*) FROM runs"), "0");
    assert_eq!(query(&db, "SELECT count(*) FROM run_requests"), "0");
    // Nothing half-done blocks the same file: it imports whole.
    let out = kvgate(&db, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(query(&db, "SELECT count(*) FROM run_requests"), "60000");
    assert_eq!(integrity(&db), "ok");
}

/// A server that accepts requests and never answers a POST: a run against it stays in flight.
fn hanging_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                if line.starts_with("POST") {
                    // Hold the connection open, silent, until the client goes away.
                    std::thread::sleep(Duration::from_secs(120));
                } else {
                    let _ = stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                }
            });
        }
    });
    url
}

#[test]
fn sigkill_in_the_middle_of_a_run_marks_it_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ws.sqlite");
    cpu_study(&db);
    let url = hanging_server();
    let corpus = format!("{ROOT}fixtures/demo/corpus");
    let mut child = spawn(
        &db,
        &[
            "run",
            "quality",
            "--study",
            "cpu",
            "--cell",
            "B0",
            "--endpoint",
            &url,
            "--corpus",
            &corpus,
            "--limit",
            "4",
            "--warmup",
            "0",
            "--scrape-interval-ms",
            "0",
            "--request-deadline",
            "120",
        ],
    );
    wait_for_stderr(&mut child, "sent 1/4", Duration::from_secs(60));
    assert_eq!(query(&db, "SELECT state FROM runs"), "running");
    sigkill(&mut child);

    assert_eq!(integrity(&db), "ok");
    // The next start of KV Gate finds the run's process gone and says so.
    let out = kvgate(&db, &["run", "list", "--study", "cpu", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let runs: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    assert_eq!(runs[0]["state"], "interrupted", "{runs}");
    assert_eq!(integrity(&db), "ok");
}
