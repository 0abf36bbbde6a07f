//! Endpoint API keys against a real Secret Service (a private D-Bus session bus and
//! gnome-keyring-daemon, both started here): the key goes into the OS keyring, every request to
//! that server carries it, and it is in neither the database, the output, a run export nor a
//! packet. Without any keyring, `key set` refuses and `KVGATE_API_KEY` is the warned fallback.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{cpu_study, lock_demo_policy, repo, stderr, stdout};

const SERVICE: &str = "dev.kvgate.workbench endpoint API key";

/// A private session bus with an unlocked gnome-keyring on it, in a temporary home. Both
/// processes end, by PID, when it drops.
pub(crate) struct SecretService {
    home: tempfile::TempDir,
    bus: String,
    dbus: Child,
    keyring: Child,
}

impl SecretService {
    pub(crate) fn start() -> SecretService {
        let home = tempfile::tempdir().unwrap();
        for d in ["data", "run", "config"] {
            std::fs::create_dir(home.path().join(d)).unwrap();
        }
        let socket = home.path().join("run/bus");
        let mut dbus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .arg(format!("--address=unix:path={}", socket.display()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon is installed by scripts/setup.sh");
        let mut address = String::new();
        BufReader::new(dbus.stdout.take().unwrap())
            .read_line(&mut address)
            .unwrap();
        let bus = address.trim().to_owned();
        assert!(bus.starts_with("unix:path="), "dbus-daemon printed {bus:?}");
        let mut keyring = Command::new("gnome-keyring-daemon")
            .args(["--foreground", "--unlock", "--components=secrets"])
            .envs(env_for(home.path(), Some(&bus)))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gnome-keyring-daemon is installed by scripts/setup.sh");
        // The new login keyring's password, then end of input: it is created unlocked.
        let mut stdin = keyring.stdin.take().unwrap();
        stdin.write_all(b"test-login-password").unwrap();
        drop(stdin);
        let service = SecretService {
            home,
            bus,
            dbus,
            keyring,
        };
        // Ready when KV Gate's own keyring access answers: a search alone can succeed before
        // the daemon has created its login collection (the default alias), and a lookup made
        // then fails with "no result found".
        let probe_db = service.home.path().join("data/probe.sqlite");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = kvgate_in(
                &service.env(),
                &probe_db,
                &["endpoint", "key", "status", "--url", "http://127.0.0.1:9"],
                None,
            );
            if stdout(&out).contains("the OS keyring answers") || Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        service
    }

    pub(crate) fn env(&self) -> Vec<(String, String)> {
        env_for(self.home.path(), Some(&self.bus))
    }

    fn secret_tool(&self, args: &[&str]) -> Output {
        Command::new("secret-tool")
            .args(args)
            .envs(self.env())
            .output()
            .expect("secret-tool is installed by scripts/setup.sh")
    }

    /// The key under `origin` as the Secret Service itself gives it, independent of KV Gate.
    fn lookup(&self, origin: &str) -> String {
        stdout(&self.secret_tool(&["lookup", "service", SERVICE, "username", origin]))
    }
}

impl Drop for SecretService {
    fn drop(&mut self) {
        let _ = self.keyring.kill();
        let _ = self.keyring.wait();
        let _ = self.dbus.kill();
        let _ = self.dbus.wait();
    }
}

/// A process environment with its own home and runtime folder: with `bus`, that session bus;
/// without, no bus at all (nothing to autolaunch, no display).
pub(crate) fn env_for(home: &Path, bus: Option<&str>) -> Vec<(String, String)> {
    let p = |rel: &str| home.join(rel).display().to_string();
    let mut env = vec![
        ("HOME".into(), p("")),
        ("XDG_DATA_HOME".into(), p("data")),
        ("XDG_CONFIG_HOME".into(), p("config")),
        ("XDG_RUNTIME_DIR".into(), p("run")),
        ("KVGATE_PROGRESS_INTERVAL_MS".into(), "0".into()),
    ];
    env.push((
        "DBUS_SESSION_BUS_ADDRESS".into(),
        bus.map(str::to_owned)
            .unwrap_or_else(|| format!("unix:path={}", p("run/no-bus-here"))),
    ));
    env
}

/// `kvgate` with exactly the given environment (plus PATH), optional standard input.
fn kvgate_in(env: &[(String, String)], db: &Path, args: &[&str], input: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvgate"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k, v)))
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run kvgate");
    let mut stdin = child.stdin.take().unwrap();
    if let Some(text) = input {
        stdin.write_all(text.as_bytes()).unwrap();
    }
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// An OpenAI-style server that records the `Authorization` header of every POST and streams
/// one short answer.
fn recording_server() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let record = record.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    return;
                }
                let mut headers = HashMap::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
                    }
                }
                let length: usize = headers
                    .get("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                if !request_line.starts_with("POST") {
                    let _ = stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                    return;
                }
                record
                    .lock()
                    .unwrap()
                    .push(headers.get("authorization").cloned());
                let events = concat!(
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"12.5\"}}]}\n\n",
                    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],",
                    "\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2}}\n\n",
                    "data: [DONE]\n\n"
                );
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{events}",
                    events.len()
                );
            });
        }
    });
    (url, seen)
}

/// A quality run's exit: 2, since these runs give no startup log, so the cell's compatibility is
/// not shown; every request is still sent and stored.
fn assert_run_completed(run: &Output) {
    assert_eq!(run.status.code(), Some(2), "{}", stderr(run));
    assert!(stdout(run).contains("completed"), "{}", stdout(run));
}

fn quality_run(env: &[(String, String)], db: &Path, url: &str) -> Output {
    let corpus = repo("fixtures/demo/corpus");
    kvgate_in(
        env,
        db,
        &[
            "run",
            "quality",
            "--study",
            "cpu",
            "--cell",
            "B0",
            "--endpoint",
            url,
            "--corpus",
            corpus.to_str().unwrap(),
            "--limit",
            "3",
            "--warmup",
            "0",
            "--scrape-interval-ms",
            "0",
        ],
        None,
    )
}

/// Every file under `dir` (recursively) whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
            {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn a_key_in_the_os_keyring_is_sent_and_stored_nowhere_else() {
    let keyring = SecretService::start();
    let env = keyring.env();
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("ws.sqlite");
    cpu_study(&db);
    lock_demo_policy(&db);
    let (url, seen) = recording_server();
    let origin = url.clone();
    let key = "sk-kvgate-test-4b1d9e7c0a";

    let status = kvgate_in(
        &env,
        &db,
        &["endpoint", "key", "status", "--url", &url],
        None,
    );
    assert_eq!(
        stdout(&status).trim(),
        format!("{origin}: no key is kept; the OS keyring answers"),
        "{}",
        stderr(&status)
    );
    let set_url = format!("{url}/v1");
    let set = kvgate_in(
        &env,
        &db,
        &["endpoint", "key", "set", "--url", &set_url],
        Some(&format!("{key}\n")),
    );
    assert!(set.status.success(), "{}", stderr(&set));
    assert_eq!(
        stdout(&set).trim(),
        format!("{origin}: a key is kept in the OS keyring; the OS keyring answers")
    );
    // The Secret Service holds it, under the server's origin.
    assert_eq!(keyring.lookup(&origin), key);

    let run = quality_run(&env, &db, &url);
    assert_run_completed(&run);
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 3, "{seen:?}");
        let bearer = format!("Bearer {key}");
        assert!(seen.iter().all(|h| h.as_deref() == Some(bearer.as_str())));
    }

    // Nowhere else: not in the database (nor its WAL), the output, a run export or a packet.
    let export = work.path().join("run.jsonl");
    let exported = kvgate_in(
        &env,
        &db,
        &["run", "export", "1", "--out", export.to_str().unwrap()],
        None,
    );
    assert!(exported.status.success(), "{}", stderr(&exported));
    let packet = work.path().join("packet");
    let packed = kvgate_in(
        &env,
        &db,
        &[
            "packet",
            "export",
            "--study",
            "cpu",
            "--out",
            packet.to_str().unwrap(),
        ],
        None,
    );
    assert!(packed.status.success(), "{}", stderr(&packed));
    assert!(packet.join("index.json").is_file());
    assert_eq!(files_containing(work.path(), key), Vec::<PathBuf>::new());
    for out in [&set, &run, &exported, &packed] {
        assert!(!stdout(out).contains(key) && !stderr(out).contains(key));
    }

    let forgotten = kvgate_in(
        &env,
        &db,
        &["endpoint", "key", "forget", "--url", &url],
        None,
    );
    assert!(forgotten.status.success(), "{}", stderr(&forgotten));
    assert_eq!(keyring.lookup(&origin), "");
    let run = quality_run(&env, &db, &url);
    assert_run_completed(&run);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 6);
    assert!(seen[3..].iter().all(Option::is_none), "{seen:?}");
}

#[test]
fn without_a_keyring_a_key_is_refused_and_the_environment_is_the_warned_fallback() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("run")).unwrap();
    let env = env_for(home.path(), None);
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("ws.sqlite");
    cpu_study(&db);
    let (url, seen) = recording_server();
    let key = "sk-kvgate-fallback-93e2";

    let set = kvgate_in(
        &env,
        &db,
        &["endpoint", "key", "set", "--url", &url],
        Some(key),
    );
    assert_eq!(set.status.code(), Some(1));
    let err = stderr(&set);
    assert!(err.starts_with("error: no OS keyring answered ("), "{err}");
    assert!(
        err.contains(&format!("the key for {url} was not kept")),
        "{err}"
    );
    assert!(err.contains("export KVGATE_API_KEY"), "{err}");
    assert!(!err.contains(key));
    let status = kvgate_in(
        &env,
        &db,
        &["endpoint", "key", "status", "--url", &url, "--json"],
        None,
    );
    let status: serde_json::Value = serde_json::from_str(&stdout(&status)).unwrap();
    assert_eq!(status["keyring"]["available"], false, "{status}");
    assert_eq!(status["stored_in"], serde_json::Value::Null);

    let mut with_key = env.clone();
    with_key.push(("KVGATE_API_KEY".into(), key.into()));
    let run = quality_run(&with_key, &db, &url);
    assert_run_completed(&run);
    assert!(
        stderr(&run).contains(&format!(
            "warning: using KVGATE_API_KEY for {url}: the fallback, not the OS keyring"
        )),
        "{}",
        stderr(&run)
    );
    let bearer = format!("Bearer {key}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|h| h.as_deref() == Some(bearer.as_str())));
    assert_eq!(files_containing(work.path(), key), Vec::<PathBuf>::new());
    assert!(!stdout(&run).contains(key) && !stderr(&run).contains(key));

    // Never in clear text to another machine.
    let remote = quality_run(&with_key, &db, "http://192.0.2.1:8000");
    assert_eq!(remote.status.code(), Some(1));
    assert!(
        stderr(&remote).contains("a key is sent only over https, or over http to this machine"),
        "{}",
        stderr(&remote)
    );
}
