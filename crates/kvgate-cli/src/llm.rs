use clap::Subcommand;
use kvgate_app::{App, AppError};

use crate::Outcome;

#[derive(Debug, Subcommand)]
pub enum LlmCommand {
    /// Start a local llama.cpp server (SmolLM2-135M, 1 thread) with the given KV-cache type and
    /// keep it running until Ctrl-C; its startup log is the compatibility evidence of runs
    Serve {
        /// KV-cache type: f16 (the B0 analogue) or q8_0 (the 8-bit candidate stand-in)
        #[arg(long, value_parser = ["f16", "q8_0", "q4_0", "bf16"])]
        kv: String,
        /// Port on 127.0.0.1 (default: a free one)
        #[arg(long)]
        port: Option<u16>,
        /// Sequences admitted at once (llama.cpp slots, 1 to 8; default 1), each with a context
        /// of 2048: the admission limit a cell's manifest freezes as scheduler.max_num_seqs and
        /// the startup log confirms (n_seq_max)
        #[arg(long)]
        slots: Option<u32>,
    },
}

pub async fn run(app: &App, cmd: LlmCommand) -> Result<Outcome, AppError> {
    match cmd {
        LlmCommand::Serve { kv, port, slots } => {
            let server = app.start_local_server(&kv, port, slots).await?;
            println!(
                "{}",
                serde_json::json!({
                    "event": "ready",
                    "url": server.url,
                    "pid": server.pid,
                    "kv": server.kv,
                    "slots": server.slots,
                    "log": server.log_path,
                    "model_sha256": server.model_sha256,
                })
            );
            eprintln!(
                "llama.cpp ({} KV) serving at {} (PID {}); startup log {}; Ctrl-C stops it",
                server.kv, server.url, server.pid, server.log_path
            );
            wait_for_stop().await;
            app.stop_local_server(server.pid).await?;
            eprintln!("stopped PID {}", server.pid);
            Ok(Outcome::Success)
        }
    }
}

/// Ctrl-C, or SIGTERM on Unix: either way the server is stopped by its PID before exiting.
async fn wait_for_stop() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
