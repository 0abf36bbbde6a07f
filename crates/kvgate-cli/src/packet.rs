use std::path::PathBuf;

use clap::Subcommand;
use kvgate_app::packet::{verify_packet_with_key, PacketExportInput, PacketVerification};
use kvgate_app::signing::{packet_key, parse_public_key, PacketSignatureState};
use kvgate_app::{App, AppError, ErrorCode};

use crate::{print_json, Outcome};

#[derive(Debug, Subcommand)]
pub enum PacketCommand {
    /// Export the architecture-review packet of a study: manifests, locked policy and limits,
    /// redacted arrival trace, representative requests, results (CSV, Parquet), charts (SVG),
    /// evidence, adjudications, sign-offs, decisions, report.html and index.json
    Export {
        /// Name of the study
        #[arg(long)]
        study: String,
        /// Folder to create (absent or empty), or with --zip the zip file to create
        #[arg(long)]
        out: PathBuf,
        /// Write one zip file instead of a folder
        #[arg(long)]
        zip: bool,
        /// Item ids of the representative held-out requests (comma-separated); default a
        /// balanced sample of 12 across the strata
        #[arg(long, value_delimiter = ',')]
        items: Option<Vec<String>>,
        /// Sign index.json with the packet signing key kept in the OS keyring (minisign format,
        /// index.json.minisig); exits 1, writing nothing, when no keyring answers
        #[arg(long)]
        sign: bool,
        #[arg(long)]
        json: bool,
    },
    /// Check every file of a packet folder or zip against its index.json, and its signature;
    /// exits 1 naming each modified, missing or unexpected file, a bad signature, or a key
    /// that is not the given one
    Verify {
        /// The packet folder or zip file
        target: PathBuf,
        /// The public key the packet must be signed with: minisign's base64 line (as `kvgate
        /// packet key show` prints it), or a minisign .pub file
        #[arg(long)]
        pubkey: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// The packet signing key
    Key {
        #[command(subcommand)]
        cmd: KeyCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Print the public key of the packet signing key in minisign's format (usable as
    /// `minisign -V -P KEY`); the key is created in the OS keyring if none is kept yet
    Show {
        #[arg(long)]
        json: bool,
    },
}

/// The signature line of a verification.
fn signature_line(v: &PacketVerification) -> String {
    let s = &v.signature;
    let id = s.key_id.as_deref().unwrap_or("?");
    match s.state {
        PacketSignatureState::Unsigned => {
            "unsigned: the packet carries no index.json.minisig".to_owned()
        }
        PacketSignatureState::UntrustedKey => format!(
            "signed by untrusted key id {id}: the signature is not checked without --pubkey KEY"
        ),
        PacketSignatureState::Verified => format!(
            "signature verified: index.json is signed by key id {id}{}",
            s.trusted_comment
                .as_deref()
                .map(|c| format!(" (trusted comment: {c})"))
                .unwrap_or_default()
        ),
        PacketSignatureState::WrongKey
        | PacketSignatureState::Bad
        | PacketSignatureState::MissingSignature => format!(
            "signature not verified: {}",
            s.problem.as_deref().unwrap_or("?")
        ),
    }
}

/// "33 files listed in index.json": how export and verify both count a packet's files (index.json
/// names the rest and is not listed in itself).
fn listed(n: u64) -> String {
    format!(
        "{n} {} listed in index.json",
        if n == 1 { "file" } else { "files" }
    )
}

/// `packet verify` and `packet key show` read files and the keyring only: they run without
/// opening (or migrating) a database. `Err` gives back `export`, which needs one.
pub async fn run_offline(cmd: PacketCommand) -> Result<Result<Outcome, AppError>, PacketCommand> {
    match cmd {
        PacketCommand::Export { .. } => Err(cmd),
        other => Ok(files(other).await),
    }
}

pub async fn run(app: &App, cmd: PacketCommand) -> Result<Outcome, AppError> {
    match cmd {
        PacketCommand::Export {
            study,
            out,
            zip,
            items,
            sign,
            json,
        } => {
            let study = app.study_by_name(&study).await?;
            let export = app
                .export_packet(PacketExportInput {
                    study_id: study.id,
                    out: out.display().to_string(),
                    zip,
                    representative: items,
                    sign,
                })
                .await?;
            if json {
                print_json(&export)?;
            } else {
                let bytes: u64 = export.files.iter().map(|f| f.size).sum();
                println!(
                    "exported {} ({bytes} bytes) and index.json itself to {}; index.json sha256 {}",
                    listed(export.files.len() as u64),
                    export.out,
                    export.index_sha256
                );
                if let Some(key) = &export.signed_by {
                    println!(
                        "signed index.json with key id {} (index.json.minisig){}",
                        key.key_id,
                        if key.created {
                            "; the key was created now in the OS keyring"
                        } else {
                            ""
                        }
                    );
                }
                for w in &export.warnings {
                    eprintln!("warning: {w}");
                }
            }
            Ok(Outcome::Success)
        }
        other => files(other).await,
    }
}

async fn files(cmd: PacketCommand) -> Result<Outcome, AppError> {
    match cmd {
        PacketCommand::Export { .. } => unreachable!("export opens a database: `run` takes it"),
        PacketCommand::Verify {
            target,
            pubkey,
            json,
        } => {
            let pubkey = match pubkey {
                None => None,
                Some(given) => {
                    // A path to a .pub file, or the key itself.
                    let text = if std::path::Path::new(&given).is_file() {
                        std::fs::read_to_string(&given).map_err(|e| {
                            AppError::new(ErrorCode::InvalidInput, format!("--pubkey {given}: {e}"))
                        })?
                    } else {
                        given
                    };
                    Some(
                        parse_public_key(&text)
                            .map_err(|e| AppError::new(ErrorCode::InvalidInput, e))?,
                    )
                }
            };
            let v = verify_packet_with_key(&target, pubkey.as_ref());
            if json {
                print_json(&v)?;
            } else if v.verified {
                let matches = if v.files_checked == 1 {
                    "matches its"
                } else {
                    "match their"
                };
                println!(
                    "verified: {} {matches} sha256 and size",
                    listed(v.files_checked)
                );
                println!("{}", signature_line(&v));
            } else {
                if let Some(p) = &v.problem {
                    println!("not verified: {p}");
                }
                for m in &v.modified {
                    println!("modified: {m}");
                }
                for m in &v.missing {
                    println!("missing: {m}");
                }
                for m in &v.unexpected {
                    println!("unexpected: {m}");
                }
                if v.problem.is_none() {
                    println!("{}", signature_line(&v));
                }
            }
            Ok(if v.verified {
                Outcome::Success
            } else {
                Outcome::Failure(1)
            })
        }
        PacketCommand::Key {
            cmd: KeyCommand::Show { json },
        } => {
            let key = packet_key().await?;
            if json {
                print_json(&key)?;
            } else {
                // minisign's public key file: its comment line names the key id, the second
                // line is what `minisign -V -P` takes.
                print!("{}", key.public_key_file);
                if key.created {
                    eprintln!(
                        "created the packet signing key {} in the OS keyring",
                        key.key_id
                    );
                }
            }
            Ok(Outcome::Success)
        }
    }
}
