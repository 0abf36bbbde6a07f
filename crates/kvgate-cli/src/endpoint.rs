//! `kvgate endpoint key …`: an endpoint's API key in the OS keyring. The key is read from
//! standard input, never from the command line (where `ps` and shell history would show it),
//! and never printed.

use std::io::{BufRead, IsTerminal};

use clap::Subcommand;
use kvgate_app::credentials::{
    keyring_forget, keyring_set, keyring_status, EndpointKeyStatus, KeyStore,
};
use kvgate_app::{App, AppError, ErrorCode};

use crate::{print_json, Outcome};

/// The fallback when no OS keyring answers: a key for the runs of this one process.
pub const API_KEY_ENV: &str = "KVGATE_API_KEY";

#[derive(Debug, Subcommand)]
pub enum EndpointCommand {
    /// An endpoint's API key, kept in the OS keyring under the server's origin
    #[command(subcommand)]
    Key(KeyCommand),
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Keep a key for the server (read from standard input, one line) in the OS keyring; runs
    /// against that server send it as a Bearer token. Without an OS keyring, use KVGATE_API_KEY
    Set {
        /// Server root or its /v1 prefix, e.g. https://llm.example:8443
        #[arg(long)]
        url: String,
    },
    /// Whether a key is kept for the server, and whether the OS keyring answers (never the key)
    Status {
        #[arg(long)]
        url: String,
        #[arg(long)]
        json: bool,
    },
    /// Remove the server's key from the OS keyring
    Forget {
        #[arg(long)]
        url: String,
    },
}

fn read_key() -> Result<String, AppError> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprintln!("API key (one line, not echoed to any log; end with Enter):");
    }
    let mut line = String::new();
    stdin.lock().read_line(&mut line).map_err(|e| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!("standard input: cannot read the key: {e}"),
        )
    })?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

fn describe(s: &EndpointKeyStatus) -> String {
    let kept = match s.stored_in {
        Some(KeyStore::OsKeyring) => "a key is kept in the OS keyring",
        Some(KeyStore::Session) => "a key is held in memory for this process",
        None => "no key is kept",
    };
    let keyring = if s.keyring.available {
        "the OS keyring answers".to_owned()
    } else {
        format!(
            "no OS keyring answers ({})",
            s.keyring.detail.as_deref().unwrap_or("no reason given")
        )
    };
    format!("{}: {kept}; {keyring}", s.origin)
}

pub async fn run(cmd: EndpointCommand) -> Result<Outcome, AppError> {
    let EndpointCommand::Key(cmd) = cmd;
    match cmd {
        KeyCommand::Set { url } => {
            let key = read_key()?;
            match keyring_set(&url, &key).await {
                Ok(status) => {
                    println!("{}", describe(&status));
                    Ok(Outcome::Success)
                }
                Err(e) if e.code == ErrorCode::Storage => Err(AppError::new(
                    e.code,
                    format!(
                        "{}. Fallback: export {API_KEY_ENV} in the shell that runs `kvgate run`; it \
                         is used for that process only and never stored",
                        e.message
                    ),
                )),
                Err(e) => Err(e),
            }
        }
        KeyCommand::Status { url, json } => {
            let status = keyring_status(&url).await?;
            if json {
                print_json(&status)?;
            } else {
                println!("{}", describe(&status));
            }
            Ok(Outcome::Success)
        }
        KeyCommand::Forget { url } => {
            let status = keyring_forget(&url).await?;
            println!("{}", describe(&status));
            Ok(Outcome::Success)
        }
    }
}

/// `KVGATE_API_KEY`, when set, is the key of this process's runs against `url`: held in memory,
/// said on stderr, never stored. It comes before a key in the OS keyring.
pub fn key_from_env(app: &App, url: &str) -> Result<(), AppError> {
    let Ok(key) = std::env::var(API_KEY_ENV) else {
        return Ok(());
    };
    let origin = app
        .keep_session_key(url, &key)
        .map_err(|e| AppError::new(e.code, format!("{API_KEY_ENV}: {}", e.message)))?;
    eprintln!(
        "warning: using {API_KEY_ENV} for {origin}: the fallback, not the OS keyring; it is held \
         in memory for this run only and never stored"
    );
    Ok(())
}
