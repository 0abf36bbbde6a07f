//! The architecture-review packet: everything a review needs, as files listed with their sha256
//! in `index.json`, exported as a folder or a zip, and verified against that index.
//!
//! Exporting the same study twice gives byte-identical files: no time appears but recorded ones,
//! every list is in a stable order, the zip carries fixed entry times.

pub mod report;
mod tables;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use kvgate_core::canonical::sha256_hex;
use kvgate_core::fixtures::CorpusItem;
use kvgate_core::policy::ItemStrata;
use kvgate_core::table::Table;
use kvgate_store::RunKind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use ts_rs::TS;

use crate::fixtures::open_run_corpus;
use crate::{App, AppError, ErrorCode};

/// The name of the packet's index file.
pub const INDEX_FILE: &str = "index.json";
/// `format` of the index.
pub const PACKET_FORMAT: &str = "kvgate-packet";
pub const PACKET_VERSION: u32 = 1;
/// Representative requests chosen when the reviewer chose none: a balanced sample of this size.
pub const DEFAULT_REPRESENTATIVE: usize = 12;

/// What exporting a packet takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct PacketExportInput {
    pub study_id: i64,
    /// A folder to create (absent or empty), or with `zip` the zip file to create.
    pub out: String,
    #[serde(default)]
    pub zip: bool,
    /// Item ids of the representative held-out requests, as the reviewer chose them; default a
    /// balanced sample across the strata.
    #[serde(default)]
    pub representative: Option<Vec<String>>,
    /// Sign `index.json` with the packet signing key kept in the OS keyring (minisign format,
    /// written as `index.json.minisig` beside it); refused, writing nothing, without a keyring.
    #[serde(default)]
    #[ts(as = "Option<bool>", optional)]
    pub sign: bool,
}

/// One file of a packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub struct PacketFile {
    pub path: String,
    pub sha256: String,
    pub size: u64,
}

/// `index.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PacketIndex {
    pub format: String,
    pub version: u32,
    pub study: String,
    pub provenance_label: String,
    pub files: Vec<PacketFile>,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct PacketExport {
    pub out: String,
    pub zip: bool,
    /// sha256 of `index.json`: names the whole packet.
    pub index_sha256: String,
    /// The files `index.json` lists, as it lists them: every file of the packet but
    /// `index.json` itself, so an export and a verification count the same files.
    pub files: Vec<PacketFile>,
    /// The representative items included.
    pub representative: Vec<String>,
    /// What the packet could not include, and why (also in the report).
    pub warnings: Vec<String>,
    /// The signing key, when the packet was signed.
    pub signed_by: Option<crate::signing::PacketKey>,
}

/// What verifying a packet found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct PacketVerification {
    pub target: String,
    pub verified: bool,
    /// The files `index.json` lists that were found and hashed (`index.json` itself is not one).
    pub files_checked: u64,
    /// Files whose bytes differ from the index (path, with expected and found digests).
    pub modified: Vec<String>,
    /// Files the index lists that are not there.
    pub missing: Vec<String>,
    /// Files that are there but not in the index.
    pub unexpected: Vec<String>,
    /// Why the index itself could not be read, when it could not.
    pub problem: Option<String>,
    /// The signature of `index.json` (`index.json.minisig`): unsigned, an untrusted key id (no
    /// public key given), verified, or what is wrong with it. A packet verifies only when its
    /// files match and its signature, if checked, holds.
    pub signature: crate::signing::PacketSignature,
}

fn invalid(message: impl Into<String>) -> AppError {
    AppError::new(ErrorCode::InvalidInput, message)
}

fn io(path: &Path, what: &str, e: std::io::Error) -> AppError {
    AppError::new(
        ErrorCode::InvalidInput,
        format!("{}: {what}: {e}", path.display()),
    )
}

fn pretty(v: &impl Serialize) -> Vec<u8> {
    let mut s = serde_json::to_string_pretty(v).expect("packet JSON serializes");
    s.push('\n');
    s.into_bytes()
}

/// A text field of the redacted trace: numbers, hashes, names of cells, classes and states only.
fn trace_table(rows: &[TraceRow]) -> Table {
    use kvgate_core::table::Values;
    Table::new()
        .with(
            "run",
            Values::Int(rows.iter().map(|r| Some(r.run)).collect()),
        )
        .with(
            "cell",
            Values::Text(rows.iter().map(|r| Some(r.cell.clone())).collect()),
        )
        .with(
            "kind",
            Values::Text(rows.iter().map(|r| Some(r.kind.to_owned())).collect()),
        )
        .with(
            "repeat",
            Values::Int(rows.iter().map(|r| Some(i64::from(r.repeat))).collect()),
        )
        .with(
            "index",
            Values::Int(rows.iter().map(|r| Some(i64::from(r.index))).collect()),
        )
        .with(
            "planned_arrival_ms",
            Values::Float(rows.iter().map(|r| Some(r.planned_arrival_ms)).collect()),
        )
        .with(
            "dispatch_ms",
            Values::Float(rows.iter().map(|r| r.dispatch_ms).collect()),
        )
        .with(
            "class",
            Values::Text(rows.iter().map(|r| Some(r.class.clone())).collect()),
        )
        .with(
            "prompt_tokens",
            Values::Int(rows.iter().map(|r| r.prompt_tokens).collect()),
        )
        .with(
            "completion_tokens",
            Values::Int(rows.iter().map(|r| r.completion_tokens).collect()),
        )
        .with(
            "status",
            Values::Text(rows.iter().map(|r| Some(r.status.to_owned())).collect()),
        )
        .with(
            "prompt_sha256",
            Values::Text(rows.iter().map(|r| r.prompt_sha256.clone()).collect()),
        )
}

struct TraceRow {
    run: i64,
    cell: String,
    kind: &'static str,
    repeat: u32,
    index: u32,
    planned_arrival_ms: f64,
    dispatch_ms: Option<f64>,
    class: String,
    prompt_tokens: Option<i64>,
    completion_tokens: Option<i64>,
    status: &'static str,
    prompt_sha256: Option<String>,
}

/// One judged answer of a representative item.
#[derive(Serialize)]
struct Answer {
    cell: String,
    run: i64,
    repeat: u32,
    status: &'static str,
    output_text: String,
    accepted: Option<bool>,
    verdict: Option<Value>,
}

/// A file set under construction, kept sorted by path.
#[derive(Default)]
struct Files(BTreeMap<String, Vec<u8>>);

impl Files {
    fn add(&mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) {
        let path = path.into();
        let previous = self.0.insert(path.clone(), bytes.into());
        assert!(previous.is_none(), "packet file {path} written twice");
    }

    fn table(&mut self, stem: &str, table: &Table) -> Result<(), AppError> {
        self.add(format!("{stem}.csv"), table.to_csv());
        let parquet = kvgate_tabular::table_parquet(table)
            .map_err(|e| AppError::storage(format!("writing {stem}.parquet: {e}")))?;
        self.add(format!("{stem}.parquet"), parquet);
        Ok(())
    }

    fn listed(&self) -> Vec<PacketFile> {
        self.0
            .iter()
            .map(|(path, bytes)| PacketFile {
                path: path.clone(),
                sha256: sha256_hex(bytes),
                size: bytes.len() as u64,
            })
            .collect()
    }
}

impl App {
    /// Builds every file of the packet in memory, sorted by path.
    async fn packet_files(
        &self,
        input: &PacketExportInput,
    ) -> Result<(Files, PacketIndex, Vec<String>, Vec<String>), AppError> {
        let study_id = input.study_id;
        let analysis = self.analyze(study_id).await?;
        let checklist = self.checklist(study_id).await?;
        let mut files = Files::default();

        // Frozen manifests.
        let mut manifests = Vec::new();
        let mut origin = Vec::new();
        for m in self.store.list_manifests(study_id).await? {
            let Some(digest) = m.digest.clone().filter(|_| m.is_frozen()) else {
                continue;
            };
            let value: Value = serde_json::from_str(&m.text).unwrap_or(Value::Null);
            origin.push(kvgate_core::manifest::data_origin(&m.cell, &value));
            files.add(format!("manifests/{}.json", m.cell), m.text.clone());
            manifests.push((
                m.cell.clone(),
                digest,
                value["label"].as_str().unwrap_or("").to_owned(),
            ));
        }

        // Policy and per-class limits.
        let policy = self.policy_status(study_id).await?;
        let current = policy
            .current
            .as_ref()
            .expect("the analysis ran, so a policy is locked");
        files.add("policy/policy.json", current.policy.canonical_json());
        let versions: Vec<Value> = policy
            .versions
            .iter()
            .map(|v| {
                json!({"version": v.version, "sha256": v.sha256, "locked_at": v.locked_at,
                       "locked_by": v.locked_by, "runs_at_lock": v.runs_at_lock,
                       "changed_after_results": v.changed_after_results,
                       "first_lock_after_results": v.first_lock_after_results})
            })
            .collect();
        files.add("policy/versions.json", pretty(&versions));
        let p = &current.policy;
        let limits = json!({
            "policy_sha256": current.sha256,
            "classes": p.classes,
            "goodput": p.goodput,
            "alpha": p.alpha,
            "gate_alpha": p.gate_alpha(),
            "target_offered_load_rps": p.target_offered_load_rps,
            "segments": p.segments,
        });
        files.add("policy/limits.json", pretty(&limits));

        // Runs: the redacted trace, the evidence, and the judged answers for the sample.
        let runs = self.store.list_runs(study_id).await?;
        let mut corpora: HashMap<(String, String), Option<HashMap<String, CorpusItem>>> =
            HashMap::new();
        let mut trace = Vec::new();
        let mut answers: BTreeMap<String, Vec<Answer>> = BTreeMap::new();
        let mut items: BTreeMap<String, CorpusItem> = BTreeMap::new();
        for run in &runs {
            for (seq, e) in self.store.run_evidence(run.id).await?.iter().enumerate() {
                use kvgate_core::evidence::EvidenceKind as K;
                let ext = match K::parse(&e.kind) {
                    Some(K::Compatibility | K::Metrics) => "json",
                    _ => "txt",
                };
                files.add(
                    format!("evidence/run-{}-{seq:02}-{}.{ext}", run.id, e.kind),
                    e.text.clone(),
                );
            }
            let config: Value = serde_json::from_str(&run.config_json).unwrap_or(Value::Null);
            let corpus_key = config["corpus"]["dir"]
                .as_str()
                .zip(config["corpus"]["items_sha256"].as_str())
                .map(|(d, s)| (d.to_owned(), s.to_owned()));
            let corpus = match corpus_key {
                None => None,
                Some(key) => corpora
                    .entry(key.clone())
                    .or_insert_with(|| {
                        open_run_corpus(Path::new(&key.0))
                            .ok()
                            .filter(|c| c.meta.items_sha256 == key.1)
                            .map(|c| {
                                c.items
                                    .into_iter()
                                    .map(|i| (i.id().to_owned(), i))
                                    .collect()
                            })
                    })
                    .as_ref(),
            };
            let kind = match run.kind {
                RunKind::Quality => "quality",
                RunKind::Load => "load",
            };
            let mut requests = self.store.run_requests(run.id).await?;
            requests.retain(|r| !r.warmup);
            requests.sort_by_key(|r| (r.repeat, r.record.index));
            for r in requests {
                let rec = &r.record;
                let item = rec
                    .item_id
                    .as_deref()
                    .and_then(|id| corpus.and_then(|c| c.get(id)));
                let class = p.class_of(rec.prompt_tokens, None).map_or_else(
                    || "(unclassified)".to_owned(),
                    |i| p.classes[i].name.clone(),
                );
                trace.push(TraceRow {
                    run: run.id,
                    cell: run.cell.clone(),
                    kind,
                    repeat: r.repeat,
                    index: rec.index,
                    planned_arrival_ms: rec.planned_arrival_ms,
                    dispatch_ms: rec.dispatch_ms,
                    class,
                    prompt_tokens: rec.prompt_tokens.and_then(|t| i64::try_from(t).ok()),
                    completion_tokens: rec.completion_tokens.and_then(|t| i64::try_from(t).ok()),
                    status: rec.status.as_str(),
                    prompt_sha256: item.map(|i| sha256_hex(i.prompt_text().as_bytes())),
                });
                if run.kind == RunKind::Quality {
                    if let (Some(item), Some(v)) = (item, &r.verdict) {
                        let list = answers.entry(item.id().to_owned()).or_default();
                        // The first pass per cell: lowest run id, then repeat (runs come in id order).
                        if !list.iter().any(|a| a.cell == run.cell) {
                            list.push(Answer {
                                cell: run.cell.clone(),
                                run: run.id,
                                repeat: r.repeat,
                                status: rec.status.as_str(),
                                output_text: rec.output_text.clone(),
                                accepted: Some(v.accepted),
                                verdict: serde_json::to_value(v).ok(),
                            });
                        }
                        items
                            .entry(item.id().to_owned())
                            .or_insert_with(|| item.clone());
                    }
                }
            }
        }
        files.table("trace/arrivals", &trace_table(&trace))?;
        let mut warnings: Vec<String> = corpora
            .iter()
            .filter(|(_, c)| c.is_none())
            .map(|((dir, sha), _)| {
                format!(
                    "corpus {dir} (items sha256 {sha}) is not at hand: its runs' prompt hashes are \
                     absent from the trace and its items are not among the representative requests"
                )
            })
            .collect();
        warnings.sort();

        // Representative held-out requests: chosen, or a balanced sample of the items judged on
        // B0 and at least one candidate.
        let paired_items: Vec<CorpusItem> = items
            .values()
            .filter(|i| {
                let a = &answers[i.id()];
                a.iter().any(|x| x.cell == "B0") && a.iter().any(|x| x.cell != "B0")
            })
            .cloned()
            .collect();
        let chosen: Vec<&CorpusItem> = match &input.representative {
            Some(ids) => {
                let unknown: Vec<&String> =
                    ids.iter().filter(|id| !items.contains_key(*id)).collect();
                if !unknown.is_empty() {
                    return Err(invalid(format!(
                        "representative: expected item ids judged in this study's quality runs, found {} that are not: {}",
                        unknown.len(),
                        unknown
                            .iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
                let set: BTreeSet<&String> = ids.iter().collect();
                items
                    .values()
                    .filter(|i| set.contains(&i.id().to_owned()))
                    .collect()
            }
            None => {
                let mut sample = CorpusItem::balanced_subset(&paired_items, DEFAULT_REPRESENTATIVE);
                sample.sort_by(|a, b| a.id().cmp(b.id()));
                sample
            }
        };
        let mut lines = String::new();
        for item in &chosen {
            let line = match item {
                CorpusItem::Generated(item) => json!({
                    "item_id": item.id,
                    "synthetic": item.synthetic,
                    "strata": ItemStrata::from_item_id(&item.id),
                    "prompt_sha256": sha256_hex(item.prompt_text.as_bytes()),
                    "messages": item.messages,
                    "expected": item.expected,
                    "evidence": item.evidence,
                    "answers": answers[&item.id],
                }),
                // A team's own prompt: its labels and check in place of strata and answer.
                CorpusItem::Team(item) => json!({
                    "item_id": item.id,
                    "synthetic": false,
                    "labels": item.labels,
                    "prompt_sha256": sha256_hex(item.prompt_text.as_bytes()),
                    "messages": item.messages,
                    "check": item.check,
                    "evidence": item.evidence,
                    "answers": answers[&item.id],
                }),
            };
            lines.push_str(&serde_json::to_string(&line).expect("a line serializes"));
            lines.push('\n');
        }
        files.add("requests/representative.jsonl", lines);
        let representative: Vec<String> = chosen.iter().map(|i| i.id().to_owned()).collect();
        if representative.is_empty() {
            warnings.push(
                "no representative held-out request: no item was judged on B0 and a candidate \
                 with its corpus at hand"
                    .to_owned(),
            );
        }

        // Results: the whole analysis, and its tables.
        files.add("results/analysis.json", pretty(&analysis));
        files.table("results/cells", &tables::cells(&analysis))?;
        files.table("results/paired", &tables::paired(&analysis))?;
        files.table("results/floors", &tables::floors(&analysis))?;
        files.table("results/latency", &tables::latency(&analysis))?;
        files.table("results/goodput", &tables::goodput(&analysis))?;
        let chart_list = crate::charts::packet_charts(&analysis);
        for (path, chart) in &chart_list {
            files.add(path.clone(), chart.svg.clone());
        }

        // Review: adjudications, the audit chain, the checklist, the recovery plan.
        let adjudications: Vec<Value> = self
            .store
            .adjudications(study_id)
            .await?
            .into_iter()
            .map(|a| {
                json!({"pair_id": a.pair_id, "label": a.label, "note": a.note,
                       "labelled_by": a.labelled_by, "labelled_at": a.labelled_at,
                       "event_seq": a.event_seq, "unblinded": a.unblinded})
            })
            .collect();
        let mut label_counts: BTreeMap<String, u64> = BTreeMap::new();
        for a in &adjudications {
            *label_counts
                .entry(a["label"].as_str().unwrap_or("?").to_owned())
                .or_default() += 1;
        }
        files.add("review/adjudications.json", pretty(&adjudications));
        let mut audit = String::new();
        for e in self.store.audit_events(study_id).await? {
            audit.push_str(&serde_json::to_string(&e).expect("an event serializes"));
            audit.push('\n');
        }
        files.add("review/audit-chain.jsonl", audit);
        files.add("review/checklist.json", pretty(&checklist));
        let recovery = checklist
            .checks
            .iter()
            .find_map(|c| match &c.evidence {
                crate::signoff::CheckEvidence::Recovery { evidence, .. } => evidence.plan.as_ref(),
                _ => None,
            })
            .map(|plan| serde_json::to_value(plan).expect("a recovery plan serializes"));
        if let Some(plan) = &recovery {
            files.add("review/recovery-plan.json", pretty(plan));
        }

        // The report, drawn from the files above, then the index of everything.
        let listed: Vec<(String, String, u64)> = files
            .listed()
            .into_iter()
            .map(|f| (f.path, f.sha256, f.size))
            .collect();
        let labels: Vec<(String, u64)> = label_counts.into_iter().collect();
        let charts_inline: Vec<(String, String)> = chart_list
            .iter()
            .map(|(path, chart)| (format!("{} ({path})", chart.note), chart.svg.clone()))
            .collect();
        origin.extend(warnings.iter().map(|w| format!("Not included: {w}")));
        let html = report::render(&report::ReportInput {
            analysis: &analysis,
            origin: &origin,
            manifests: &manifests,
            checklist: &checklist,
            recovery: recovery.as_ref(),
            labels: &labels,
            representative: &representative,
            charts: &charts_inline,
            files: &listed,
        });
        files.add("report.html", html);
        let index = PacketIndex {
            format: PACKET_FORMAT.to_owned(),
            version: PACKET_VERSION,
            study: analysis.study_name.clone(),
            provenance_label: analysis.provenance_label.clone(),
            files: files.listed(),
        };
        Ok((files, index, representative, warnings))
    }

    /// Exports the study's packet to a new folder or zip file. Nothing is left behind on error:
    /// the files are written beside the target and moved into place at the end.
    pub async fn export_packet(&self, input: PacketExportInput) -> Result<PacketExport, AppError> {
        let out = PathBuf::from(input.out.trim());
        if input.out.trim().is_empty() {
            return Err(invalid(
                "out: expected a folder or zip file path, found nothing",
            ));
        }
        if input.zip {
            if out.exists() {
                return Err(AppError::new(
                    ErrorCode::Conflict,
                    format!(
                        "{}: already exists; a packet is never written over a file",
                        out.display()
                    ),
                ));
            }
        } else if out.exists() {
            let empty = std::fs::read_dir(&out)
                .map_err(|e| io(&out, "cannot read the folder", e))?
                .next()
                .is_none();
            if !empty {
                return Err(AppError::new(
                    ErrorCode::Conflict,
                    format!(
                        "{}: the folder is not empty; export into a new or empty folder",
                        out.display()
                    ),
                ));
            }
        }
        let parent = out
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(invalid(format!(
                "{}: expected an existing folder to export into, found none",
                parent.display()
            )));
        }
        let (files, index, representative, warnings) = self.packet_files(&input).await?;
        let index_bytes = pretty(&index);
        let index_sha256 = sha256_hex(&index_bytes);
        // Signed before anything is written: without a keyring nothing is.
        let signature = if input.sign {
            Some(crate::signing::sign_index(index_bytes.clone(), index.study.clone()).await?)
        } else {
            None
        };
        let extra: Vec<(String, Vec<u8>)> = signature
            .iter()
            .map(|(sig, _)| {
                (
                    crate::signing::SIGNATURE_FILE.to_owned(),
                    sig.as_bytes().to_vec(),
                )
            })
            .collect();
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "packet".into());
        // Staged beside the target (same file system, so the rename is atomic); a staging file or
        // folder left by a failure, or a panic, is removed when it drops.
        let prefix = format!(".{name}.partial-");
        let staging_err = |e| io(parent, "cannot create the staging area", e);
        if input.zip {
            let staging = tempfile::Builder::new()
                .prefix(&prefix)
                .tempfile_in(parent)
                .map_err(staging_err)?;
            write_zip(staging.path(), &files, &index_bytes, &extra)?;
            // tempfile creates the file 0600; a packet is for reading by others.
            #[cfg(unix)]
            set_mode(staging.path(), 0o644)?;
            staging
                .persist_noclobber(&out)
                .map_err(|e| io(&out, "cannot move the packet into place", e.error))?;
        } else {
            let staging = tempfile::Builder::new()
                .prefix(&prefix)
                .tempdir_in(parent)
                .map_err(staging_err)?;
            for (path, bytes) in files
                .0
                .iter()
                .chain([(&INDEX_FILE.to_owned(), &index_bytes)])
                .chain(extra.iter().map(|(p, b)| (p, b)))
            {
                let target = staging.path().join(path);
                if let Some(dir) = target.parent() {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| io(dir, "cannot create the folder", e))?;
                }
                std::fs::write(&target, bytes).map_err(|e| io(&target, "cannot write", e))?;
            }
            // tempfile creates the folder 0700; a packet is for reading by others.
            #[cfg(unix)]
            set_mode(staging.path(), 0o755)?;
            if out.exists() {
                std::fs::remove_dir(&out)
                    .map_err(|e| io(&out, "cannot replace the empty folder", e))?;
            }
            std::fs::rename(staging.path(), &out)
                .map_err(|e| io(&out, "cannot move the packet into place", e))?;
            // Moved: nothing is left to remove.
            let _ = staging.keep();
        }
        Ok(PacketExport {
            out: out.display().to_string(),
            zip: input.zip,
            index_sha256,
            files: index.files,
            representative,
            warnings,
            signed_by: signature.map(|(_, key)| key),
        })
    }
}

/// A zip with stored entries in path order and fixed entry times: the same files give the same
/// bytes.
#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<(), AppError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| io(path, "cannot set permissions", e))
}

fn write_zip(
    path: &Path,
    files: &Files,
    index: &[u8],
    extra: &[(String, Vec<u8>)],
) -> Result<(), AppError> {
    use zip::write::SimpleFileOptions;
    let file = std::fs::File::create(path).map_err(|e| io(path, "cannot create", e))?;
    let mut zip = zip::ZipWriter::new(std::io::BufWriter::new(file));
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .last_modified_time(zip::DateTime::default())
        .unix_permissions(0o644);
    let err = |e: zip::result::ZipError| {
        AppError::storage(format!("{}: writing the zip: {e}", path.display()))
    };
    for (name, bytes) in files
        .0
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .chain([(INDEX_FILE, index)])
        .chain(extra.iter().map(|(n, b)| (n.as_str(), b.as_slice())))
    {
        zip.start_file(name, options).map_err(err)?;
        zip.write_all(bytes)
            .map_err(|e| io(path, "writing the zip", e))?;
    }
    let mut inner = zip.finish().map_err(err)?;
    inner.flush().map_err(|e| io(path, "writing the zip", e))?;
    Ok(())
}

/// Every file of a packet folder or zip, by relative path with `/` separators.
fn read_packet(target: &Path) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    if target.is_dir() {
        let mut stack = vec![target.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            for entry in entries {
                let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let rel = path
                        .strip_prefix(target)
                        .expect("walked under the target")
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/");
                    let bytes =
                        std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                    out.insert(rel, bytes);
                }
            }
        }
    } else {
        let file = std::fs::File::open(target).map_err(|e| format!("{}: {e}", target.display()))?;
        let mut zip = zip::ZipArchive::new(file)
            .map_err(|e| format!("{}: not a packet folder or zip: {e}", target.display()))?;
        for i in 0..zip.len() {
            let mut entry = zip
                .by_index(i)
                .map_err(|e| format!("{}: entry {i}: {e}", target.display()))?;
            if entry.is_dir() {
                continue;
            }
            let name = entry.name().to_owned();
            let mut bytes = Vec::new();
            entry
                .read_to_end(&mut bytes)
                .map_err(|e| format!("{}: entry {name}: {e}", target.display()))?;
            out.insert(name, bytes);
        }
    }
    Ok(out)
}

impl PacketVerification {
    fn new(target: &Path, problem: Option<String>) -> PacketVerification {
        PacketVerification {
            target: target.display().to_string(),
            verified: false,
            files_checked: 0,
            modified: Vec::new(),
            missing: Vec::new(),
            unexpected: Vec::new(),
            problem,
            signature: crate::signing::check_signature(b"", None, None),
        }
    }
}

/// Checks every file of a packet folder or zip against its `index.json`; a signature is read
/// and its key id reported, but not checked without a public key.
pub fn verify_packet(target: &Path) -> PacketVerification {
    verify_packet_with_key(target, None)
}

/// Checks every file of a packet against its `index.json`, and its signature against `pubkey`
/// when one is given (a packet without a signature then fails).
pub fn verify_packet_with_key(
    target: &Path,
    pubkey: Option<&minisign::PublicKey>,
) -> PacketVerification {
    match read_packet(target) {
        Ok(mut files) => verify_signed_files(target, &mut files, pubkey),
        Err(e) => PacketVerification::new(target, Some(e)),
    }
}

fn verify_files(target: &Path, files: &mut BTreeMap<String, Vec<u8>>) -> PacketVerification {
    verify_signed_files(target, files, None)
}

/// Checks files read from a packet against its index; the listed files are taken out of `files`,
/// what is left is unexpected (but the signature of the index, which it cannot list).
fn verify_signed_files(
    target: &Path,
    files: &mut BTreeMap<String, Vec<u8>>,
    pubkey: Option<&minisign::PublicKey>,
) -> PacketVerification {
    let mut v = PacketVerification::new(target, None);
    let signature = files.remove(crate::signing::SIGNATURE_FILE);
    let Some(index_bytes) = files.remove(INDEX_FILE) else {
        v.problem = Some(format!("{}: no {INDEX_FILE}", target.display()));
        return v;
    };
    let index: PacketIndex = match serde_json::from_slice(&index_bytes) {
        Ok(i) => i,
        Err(e) => {
            v.problem = Some(format!("{INDEX_FILE}: not a packet index: {e}"));
            return v;
        }
    };
    if index.format != PACKET_FORMAT || index.version != PACKET_VERSION {
        v.problem = Some(format!(
            "{INDEX_FILE}: expected format {PACKET_FORMAT} version {PACKET_VERSION}, found {} version {}",
            index.format, index.version
        ));
        return v;
    }
    for f in &index.files {
        match files.remove(&f.path) {
            None => v.missing.push(f.path.clone()),
            Some(bytes) => {
                v.files_checked += 1;
                let digest = sha256_hex(&bytes);
                if digest != f.sha256 || bytes.len() as u64 != f.size {
                    v.modified.push(format!(
                        "{}: expected sha256 {} ({} bytes), found {} ({} bytes)",
                        f.path,
                        f.sha256,
                        f.size,
                        digest,
                        bytes.len()
                    ));
                }
            }
        }
    }
    v.unexpected = std::mem::take(files).into_keys().collect();
    v.signature = crate::signing::check_signature(&index_bytes, signature.as_deref(), pubkey);
    v.verified = v.modified.is_empty()
        && v.missing.is_empty()
        && v.unexpected.is_empty()
        && v.signature.passes();
    v
}

impl App {
    /// The report of a verified packet as a file a browser may open: the packet's own
    /// `report.html` for a folder, a copy beside the workspace database (under
    /// `packet-reports/<sha256 of index.json>/`) for a zip. Refused unless every file matches
    /// the index and the report begins with [`report::REPORT_HEAD`] (its policy forbids every
    /// script): any other report is read in the window only, without scripts.
    pub fn packet_report_file(&self, target: &Path) -> Result<PathBuf, AppError> {
        let mut files = read_packet(target).map_err(invalid)?;
        let index_sha256 = files.get(INDEX_FILE).map(|b| sha256_hex(b));
        let report = files.get("report.html").cloned();
        let verification = verify_files(target, &mut files);
        if let Some(problem) = verification.problem {
            return Err(invalid(format!("not a packet: {problem}")));
        }
        if !verification.verified {
            return Err(AppError::new(
                ErrorCode::Conflict,
                format!(
                    "{}: the packet does not match its index.json, so its report opens only in \
                     this window, without scripts (Verify and open)",
                    target.display()
                ),
            ));
        }
        let (Some(report), Some(index_sha256)) = (report, index_sha256) else {
            return Err(AppError::new(
                ErrorCode::NotFound,
                format!("{}: the packet holds no report.html", target.display()),
            ));
        };
        // A packet verifies against an index its author wrote: only a report that opens with the
        // policy KV Gate writes (no script, no outside load) is handed to a browser.
        if !report.starts_with(report::REPORT_HEAD.as_bytes()) {
            return Err(AppError::new(
                ErrorCode::Conflict,
                format!(
                    "{}: its report.html does not begin as KV Gate writes it (a policy that allows \
                     no script), so it opens only in this window, without scripts",
                    target.display()
                ),
            ));
        }
        if target.is_dir() {
            return Ok(target.join("report.html"));
        }
        let dir = self
            .db_path
            .parent()
            .unwrap_or(Path::new("."))
            .join("packet-reports")
            .join(index_sha256);
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, "cannot create the folder", e))?;
        let path = dir.join("report.html");
        crate::files::save_file(&path, &report)?;
        Ok(path)
    }
}

/// A packet opened for reading in the app: its verification and, when it is a packet at all,
/// its report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct PacketView {
    pub verification: PacketVerification,
    /// `report.html` as stored; absent when the target is not a readable packet or has none.
    pub report_html: Option<String>,
}

/// Verifies a packet and reads its report. Only a folder or zip with a readable packet index is
/// read from, and only its `report.html`.
pub fn open_packet(target: &Path) -> PacketView {
    // Read once: the check and the report come from the same bytes.
    let mut files = match read_packet(target) {
        Ok(f) => f,
        Err(e) => {
            return PacketView {
                verification: PacketVerification::new(target, Some(e)),
                report_html: None,
            }
        }
    };
    let report = files.get("report.html").cloned();
    let verification = verify_files(target, &mut files);
    let report_html = if verification.problem.is_some() {
        None
    } else {
        report.and_then(|b| String::from_utf8(b).ok())
    };
    PacketView {
        verification,
        report_html,
    }
}
