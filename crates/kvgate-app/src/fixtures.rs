//! User actions on fixture corpora: generate one into a folder, open it (verifying its digest),
//! prove two corpora disjoint, and validate one response against an item.

use std::path::{Path, PathBuf};

use kvgate_core::fixtures::team::{
    import_team_items, OtherCorpus, TeamCorpusMeta, TeamItem, TEAM_CORPUS_KIND,
};
use kvgate_core::fixtures::{
    check_disjoint, generate_corpus, render_corpus_json, sha256_hex, ApprovedPrompt, CorpusItem,
    CorpusMeta, DisjointReport, FixtureItem, FixtureOptions, Preset, Split, TaskType, TokenCounter,
};
use kvgate_core::validator::{validate, ExpectedAnswer, ResponseOutcome, ValidatorPolicy, Verdict};
use kvgate_formats::tokenizer::PinnedTokenizer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::{AppError, ErrorCode};

/// The pinned tokenizer (SmolLM2-135M-Instruct), shipped inside the binary so a corpus can
/// always be generated and re-counted with exactly the file its digest names.
pub const PINNED_TOKENIZER: &[u8] =
    include_bytes!("../../../fixtures/tokenizers/smollm2-135m-instruct/tokenizer.json");
pub const PINNED_TOKENIZER_NAME: &str = "smollm2-135m-instruct/tokenizer.json (pinned)";

pub const ITEMS_FILE: &str = "items.jsonl";
pub const CORPUS_FILE: &str = "corpus.json";

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct GenerateFixtures {
    pub seed: u64,
    pub preset: Preset,
    pub split: Split,
    pub per_stratum: usize,
    /// The task types to generate (default: the four single extractions); the long-context
    /// types are `variable_tracking`, `multi_key`, `multi_value` and `aggregation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_types: Option<Vec<TaskType>>,
    /// A `tokenizer.json` to count with instead of the pinned one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer_path: Option<String>,
    /// The model's chat template (Jinja) to render prompts with instead of ChatML; its sha256 is
    /// recorded in the corpus metadata, as the manifest's `chat_template_sha256` names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_path: Option<String>,
    /// The corpus folder to create; it must not exist yet or be empty.
    pub out_dir: String,
}

/// A corpus on disk: its folder, metadata and items, its digest verified.
#[derive(Debug, Clone, PartialEq, Serialize, TS, JsonSchema)]
pub struct LoadedCorpus {
    pub dir: String,
    pub meta: CorpusMeta,
    pub items: Vec<FixtureItem>,
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> AppError {
    AppError::new(
        ErrorCode::Storage,
        format!("{}: cannot {what}: {e}", path.display()),
    )
}

/// Loads the pinned tokenizer, or the one at `path`.
pub fn load_tokenizer(path: Option<&Path>) -> Result<PinnedTokenizer, AppError> {
    let (name, bytes) = match path {
        None => (PINNED_TOKENIZER_NAME.to_owned(), PINNED_TOKENIZER.to_vec()),
        Some(p) => (
            p.display().to_string(),
            std::fs::read(p).map_err(|e| io_error(p, "read the tokenizer", e))?,
        ),
    };
    PinnedTokenizer::from_bytes(&name, &bytes)
        .map_err(|e| AppError::new(ErrorCode::InvalidInput, e.to_string()))
}

/// The default prompts of a load run given no corpus: the synthetic evaluation corpus of the
/// test-2k preset (one item per cell), generated in memory with the pinned tokenizer from `seed`.
pub fn default_load_corpus(seed: u64) -> Result<LoadedCorpus, AppError> {
    let tokenizer = load_tokenizer(None)?;
    let options = FixtureOptions::default();
    let corpus = generate_corpus(&tokenizer, seed, Preset::Test2k, &options)
        .map_err(|e| AppError::new(ErrorCode::Internal, e.to_string()))?;
    Ok(LoadedCorpus {
        dir: format!("(generated in memory: test-2k evaluation corpus, seed {seed})"),
        meta: corpus.meta,
        items: corpus.items,
    })
}

/// Generates a corpus into a new folder. Written to a temporary sibling and renamed into
/// place, so a failure or an interruption leaves no half-written corpus.
pub fn generate_fixtures(req: &GenerateFixtures) -> Result<LoadedCorpus, AppError> {
    let out = PathBuf::from(&req.out_dir);
    require_new_folder(&out)?;
    let counter = token_counter(
        req.tokenizer_path.as_deref(),
        req.chat_template_path.as_deref(),
    )?;
    let options = FixtureOptions {
        split: req.split,
        per_stratum: req.per_stratum,
        task_types: req
            .task_types
            .clone()
            .unwrap_or_else(kvgate_core::fixtures::extraction_task_types),
    };
    let corpus = generate_corpus(counter.as_ref(), req.seed, req.preset, &options)
        .map_err(|e| AppError::new(ErrorCode::InvalidInput, e.to_string()))?;

    write_corpus_folder(
        &out,
        &[
            (ITEMS_FILE, corpus.items_jsonl()),
            (CORPUS_FILE, render_corpus_json(&corpus.meta)),
        ],
    )?;
    Ok(LoadedCorpus {
        dir: out.display().to_string(),
        meta: corpus.meta,
        items: corpus.items,
    })
}

/// A corpus is never overwritten: its folder must be new or empty.
fn require_new_folder(out: &Path) -> Result<(), AppError> {
    if out.exists() {
        let empty = std::fs::read_dir(out)
            .map_err(|e| io_error(out, "read the output folder", e))?
            .next()
            .is_none();
        if !empty {
            return Err(AppError::new(
                ErrorCode::Conflict,
                format!(
                    "{}: expected a new or empty folder, found existing files; a corpus is never overwritten",
                    out.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Writes a corpus's files into a temporary sibling of `out` and renames it into place, so a
/// failure or an interruption leaves no half-written corpus.
fn write_corpus_folder(out: &Path, files: &[(&str, Vec<u8>)]) -> Result<(), AppError> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| io_error(parent, "create the folder", e))?;
    let staging = tempfile_dir_in(parent)?;
    for (name, bytes) in files {
        let path = staging.join(name);
        if let Err(e) = std::fs::write(&path, bytes) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(io_error(&path, "write", e));
        }
    }
    if out.exists() {
        std::fs::remove_dir(out).map_err(|e| io_error(out, "replace the empty folder", e))?;
    }
    std::fs::rename(&staging, out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staging);
        io_error(out, "move the corpus into place", e)
    })
}

/// The token counter a corpus is counted with: the pinned tokenizer or the one at
/// `tokenizer_path`, rendering with ChatML or the Jinja chat template at `chat_template_path`.
fn token_counter(
    tokenizer_path: Option<&str>,
    chat_template_path: Option<&str>,
) -> Result<Box<dyn TokenCounter>, AppError> {
    let tokenizer = load_tokenizer(tokenizer_path.map(Path::new))?;
    Ok(match chat_template_path {
        None => Box::new(tokenizer),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| io_error(Path::new(path), "read the chat template", e))?;
            let template = kvgate_formats::chat_template::ChatTemplate::new(path, &text)
                .map_err(|e| AppError::new(ErrorCode::InvalidInput, e))?;
            Box::new(kvgate_formats::chat_template::TemplatedTokenizer {
                tokenizer,
                template,
            })
        }
    })
}

/// What importing a team's own approved prompts takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct ImportFixtures {
    /// The team's JSONL file: one item per line (`id`, `messages`, `labels`, `check`,
    /// `evidence`).
    pub file: String,
    pub split: Split,
    /// The corpus folder to create; it must not exist yet or be empty.
    pub out_dir: String,
    /// Corpora (generated or a team's) the prompts must not overlap, e.g. the calibration set.
    #[serde(default)]
    pub disjoint_from: Vec<String>,
    /// A `tokenizer.json` to count with instead of the pinned one (the cell's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer_path: Option<String>,
    /// The model's chat template (Jinja) to render prompts with instead of ChatML.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_path: Option<String>,
}

/// Imports a team's own approved prompts into a new corpus folder. Every problem of the file is
/// reported at once, each with its line and JSON path; nothing is written unless all is well.
pub fn import_fixtures(req: &ImportFixtures) -> Result<LoadedTeamCorpus, AppError> {
    let out = PathBuf::from(&req.out_dir);
    require_new_folder(&out)?;
    let path = Path::new(&req.file);
    let bytes = std::fs::read(path).map_err(|e| io_error(path, "read", e))?;
    let counter = token_counter(
        req.tokenizer_path.as_deref(),
        req.chat_template_path.as_deref(),
    )?;
    let others: Vec<RunCorpus> = req
        .disjoint_from
        .iter()
        .map(|dir| open_run_corpus(Path::new(dir)))
        .collect::<Result<_, _>>()?;
    let others: Vec<OtherCorpus<'_>> = others
        .iter()
        .map(|c| OtherCorpus {
            items_sha256: c.meta.items_sha256.clone(),
            split: c.meta.split,
            prompts: c.items.iter().map(|i| (i.id(), i.messages())).collect(),
        })
        .collect();
    let name = path
        .file_name()
        .map_or_else(|| req.file.clone(), |n| n.to_string_lossy().into_owned());
    let corpus = import_team_items(&name, &bytes, req.split, counter.as_ref(), &others).map_err(
        |problems| {
            const SHOWN: usize = 20;
            let mut lines: Vec<String> = problems
                .iter()
                .take(SHOWN)
                .map(|p| format!("{}, {p}", path.display()))
                .collect();
            if problems.len() > SHOWN {
                lines.push(format!("… and {} more", problems.len() - SHOWN));
            }
            let count = match problems.len() {
                1 => "1 problem".to_owned(),
                n => format!("{n} problems"),
            };
            AppError::new(
                ErrorCode::InvalidInput,
                format!("{count}; nothing was written:\n{}", lines.join("\n")),
            )
        },
    )?;
    write_corpus_folder(
        &out,
        &[
            (ITEMS_FILE, corpus.items_jsonl()),
            (CORPUS_FILE, render_corpus_json(&corpus.meta)),
        ],
    )?;
    Ok(LoadedTeamCorpus {
        dir: out.display().to_string(),
        meta: corpus.meta,
        items: corpus.items,
    })
}

/// The harness a fixture export is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
pub enum ExportFormat {
    /// An lm-evaluation-harness task (YAML + JSONL), one per language, under one group.
    #[serde(rename = "lm-eval-task")]
    LmEvalTask,
    /// An Inspect AI task file (Python + JSONL).
    #[serde(rename = "inspect-task")]
    InspectTask,
}

/// What exporting a corpus's items to a harness takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[ts(optional_fields)]
pub struct ExportFixtures {
    pub format: ExportFormat,
    pub corpus_dir: String,
    /// The folder to create; it must not exist yet or be empty.
    pub out_dir: String,
    /// Task name (default `kvgate_{split}_{seed}`).
    #[serde(default)]
    pub name: Option<String>,
    /// Only the items of these strata (applied before `limit`).
    #[serde(default)]
    pub only: Option<kvgate_core::policy::SegmentFilter>,
    /// A balanced subset of this many items: the same items `kvgate run quality --limit` sends.
    #[serde(default)]
    pub limit: Option<u32>,
    /// A manifest whose output cap, temperature and stop strings the task sends (default: 256
    /// tokens, temperature 0, no stop strings).
    #[serde(default)]
    pub manifest_path: Option<String>,
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ExportedFixtures {
    pub dir: String,
    pub files: Vec<String>,
    pub items: u32,
    pub item_ids: Vec<String>,
}

/// Writes a corpus's items (or a balanced subset) as a harness task into a new folder, staged
/// and renamed into place like a corpus.
pub fn export_fixtures(req: &ExportFixtures) -> Result<ExportedFixtures, AppError> {
    use kvgate_core::harness::export::{inspect_task, lm_eval_task, Generation};
    if is_team_corpus(Path::new(&req.corpus_dir))? {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "corpus {}: a team's corpus is not exported as a harness task: its items are the \
                 team's own chats and checks, which the harness tasks KV Gate writes (its \
                 instruction, worked example and question per language, judged by its validator) \
                 cannot carry; run them with the team's own harness configuration, or with \
                 `kvgate run quality`",
                req.corpus_dir
            ),
        ));
    }
    let corpus = open_corpus(Path::new(&req.corpus_dir))?;
    let only = req.only.clone().unwrap_or_default();
    let eligible: Vec<FixtureItem> = corpus
        .items
        .iter()
        .filter(|i| {
            kvgate_core::policy::ItemStrata::from_item_id(&i.id).is_some_and(|s| only.matches(&s))
        })
        .cloned()
        .collect();
    if eligible.is_empty() {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            format!("only: no item of {} matches the filter", req.corpus_dir),
        ));
    }
    let limit = req.limit.map(|l| l as usize).unwrap_or(eligible.len());
    let items = kvgate_core::fixtures::balanced_subset(&eligible, limit);
    let generation = match &req.manifest_path {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).map_err(|e| io_error(Path::new(path), "read", e))?;
            let m = kvgate_core::manifest::Manifest::from_json(&text)
                .map_err(|p| AppError::new(ErrorCode::InvalidInput, format!("{path}: {p}")))?;
            Generation {
                max_tokens: m.output_cap,
                temperature: m.decoding.temperature,
                stop: m.stopping.stop.clone(),
            }
        }
        None => Generation {
            max_tokens: 256,
            temperature: 0.0,
            stop: Vec::new(),
        },
    };
    let out = PathBuf::from(&req.out_dir);
    if out.exists()
        && std::fs::read_dir(&out)
            .map_err(|e| io_error(&out, "read the output folder", e))?
            .next()
            .is_some()
    {
        return Err(AppError::new(
            ErrorCode::Conflict,
            format!(
                "{}: expected a new or empty folder, found existing files; an export is never overwritten",
                out.display()
            ),
        ));
    }
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| io_error(parent, "create the folder", e))?;
    let absolute = std::fs::canonicalize(parent)
        .map_err(|e| io_error(parent, "resolve the folder", e))?
        .join(out.file_name().unwrap_or_default());
    let name = req
        .name
        .clone()
        .unwrap_or_else(|| format!("kvgate_{}_{}", corpus.meta.split, corpus.meta.seed));
    let sha = &corpus.meta.items_sha256;
    let files = match req.format {
        ExportFormat::LmEvalTask => lm_eval_task(
            &name,
            &items,
            sha,
            &absolute.display().to_string(),
            &generation,
        ),
        ExportFormat::InspectTask => inspect_task(&name, &items, sha, &generation),
    }
    .map_err(|e| AppError::new(ErrorCode::InvalidInput, format!("{}: {e}", req.corpus_dir)))?;
    let staging = tempfile_dir_in(parent)?;
    for f in &files {
        let path = staging.join(&f.name);
        if let Err(e) = std::fs::write(&path, &f.text) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(io_error(&path, "write", e));
        }
    }
    if out.exists() {
        std::fs::remove_dir(&out).map_err(|e| io_error(&out, "replace the empty folder", e))?;
    }
    std::fs::rename(&staging, &out).map_err(|e| {
        let _ = std::fs::remove_dir_all(&staging);
        io_error(&out, "move the export into place", e)
    })?;
    Ok(ExportedFixtures {
        dir: out.display().to_string(),
        files: files.iter().map(|f| f.name.clone()).collect(),
        items: items.len() as u32,
        item_ids: items.iter().map(|i| i.id.clone()).collect(),
    })
}

fn tempfile_dir_in(parent: &Path) -> Result<PathBuf, AppError> {
    for attempt in 0..100u32 {
        let path = parent.join(format!(".kvgate-corpus-{}-{attempt}", std::process::id()));
        match std::fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error(&path, "create a staging folder", e)),
        }
    }
    Err(AppError::new(
        ErrorCode::Storage,
        format!("{}: no free staging folder name", parent.display()),
    ))
}

/// Reads `corpus.json` of a folder as `T`.
fn read_meta<T: serde::de::DeserializeOwned>(dir: &Path, what: &str) -> Result<T, AppError> {
    let meta_path = dir.join(CORPUS_FILE);
    let meta_text =
        std::fs::read_to_string(&meta_path).map_err(|e| io_error(&meta_path, "read", e))?;
    serde_json::from_str(&meta_text).map_err(|e| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "{}, line {} column {}: expected {what}, found: {e}",
                meta_path.display(),
                e.line(),
                e.column()
            ),
        )
    })
}

/// Reads `items.jsonl` of a folder, one `T` per line, after checking its bytes against the
/// digest `corpus.json` records.
fn read_items<T: serde::de::DeserializeOwned>(
    dir: &Path,
    items_sha256: &str,
    what: &str,
) -> Result<Vec<T>, AppError> {
    let items_path = dir.join(ITEMS_FILE);
    let bytes = std::fs::read(&items_path).map_err(|e| io_error(&items_path, "read", e))?;
    let found = sha256_hex(&bytes);
    if found != items_sha256 {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "{}: expected sha256 {items_sha256} (from corpus.json items_sha256), found {found}",
                items_path.display(),
            ),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        AppError::new(
            ErrorCode::InvalidInput,
            format!("{}: expected UTF-8, found: {e}", items_path.display()),
        )
    })?;
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let item: T = serde_json::from_str(line).map_err(|e| {
            AppError::new(
                ErrorCode::InvalidInput,
                format!(
                    "{}, line {}, column {}: expected {what}, found: {e}",
                    items_path.display(),
                    n + 1,
                    e.column()
                ),
            )
        })?;
        items.push(item);
    }
    Ok(items)
}

/// Whether a corpus folder holds a team's corpus (`corpus.json` says `"kind": "team"`).
fn is_team_corpus(dir: &Path) -> Result<bool, AppError> {
    let meta: serde_json::Value = read_meta(dir, "corpus metadata")?;
    Ok(meta.get("kind").and_then(|k| k.as_str()) == Some(TEAM_CORPUS_KIND))
}

/// Opens a corpus folder and checks `items.jsonl` against the digest in `corpus.json`.
pub fn open_corpus(dir: &Path) -> Result<LoadedCorpus, AppError> {
    if is_team_corpus(dir)? {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "{}: expected a corpus generated by KV Gate, found a team's corpus (kind team); \
                 this action reads generated items only",
                dir.join(CORPUS_FILE).display()
            ),
        ));
    }
    let meta: CorpusMeta = read_meta(dir, "corpus metadata")?;
    let items = read_items(dir, &meta.items_sha256, "a fixture item")?;
    Ok(LoadedCorpus {
        dir: dir.display().to_string(),
        meta,
        items,
    })
}

/// A team's corpus on disk: its folder, metadata and items, its digest verified.
#[derive(Debug, Clone, PartialEq, Serialize, TS, JsonSchema)]
pub struct LoadedTeamCorpus {
    pub dir: String,
    pub meta: TeamCorpusMeta,
    pub items: Vec<TeamItem>,
}

/// Opens a team's corpus folder (written by [`import_fixtures`]) and checks its digest.
pub fn open_team_corpus(dir: &Path) -> Result<LoadedTeamCorpus, AppError> {
    let meta: TeamCorpusMeta = read_meta(dir, "a team corpus's metadata")?;
    if meta.kind != TEAM_CORPUS_KIND || meta.synthetic {
        return Err(AppError::new(
            ErrorCode::InvalidInput,
            format!(
                "{}: expected kind \"team\" and synthetic false, found kind {:?}, synthetic {}",
                dir.join(CORPUS_FILE).display(),
                meta.kind,
                meta.synthetic
            ),
        ));
    }
    let items = read_items(dir, &meta.items_sha256, "a team item")?;
    Ok(LoadedTeamCorpus {
        dir: dir.display().to_string(),
        meta,
        items,
    })
}

/// What a run records of its corpus and checks against its cell, whichever kind it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCorpusMeta {
    pub tokenizer_sha256: String,
    pub chat_template: String,
    pub items_sha256: String,
    pub item_count: usize,
    pub synthetic: bool,
    pub split: Split,
}

/// A corpus a run sends: generated or a team's.
#[derive(Debug, Clone, PartialEq)]
pub struct RunCorpus {
    pub dir: String,
    pub meta: RunCorpusMeta,
    pub items: Vec<CorpusItem>,
}

impl From<LoadedCorpus> for RunCorpus {
    fn from(c: LoadedCorpus) -> Self {
        RunCorpus {
            dir: c.dir,
            meta: RunCorpusMeta {
                tokenizer_sha256: c.meta.tokenizer_sha256,
                chat_template: c.meta.chat_template,
                items_sha256: c.meta.items_sha256,
                item_count: c.meta.item_count,
                synthetic: c.meta.synthetic,
                split: c.meta.split,
            },
            items: c.items.into_iter().map(CorpusItem::Generated).collect(),
        }
    }
}

impl From<LoadedTeamCorpus> for RunCorpus {
    fn from(c: LoadedTeamCorpus) -> Self {
        RunCorpus {
            dir: c.dir,
            meta: RunCorpusMeta {
                tokenizer_sha256: c.meta.tokenizer_sha256,
                chat_template: c.meta.chat_template,
                items_sha256: c.meta.items_sha256,
                item_count: c.meta.item_count,
                synthetic: c.meta.synthetic,
                split: c.meta.split,
            },
            items: c.items.into_iter().map(CorpusItem::Team).collect(),
        }
    }
}

/// A corpus folder opened for the window: generated or a team's.
#[derive(Debug, Clone, PartialEq, Serialize, TS, JsonSchema)]
#[serde(tag = "kind", content = "corpus", rename_all = "snake_case")]
pub enum OpenedCorpus {
    Generated(LoadedCorpus),
    Team(LoadedTeamCorpus),
}

/// Opens a corpus folder of either kind, its digest verified.
pub fn open_any_corpus(dir: &Path) -> Result<OpenedCorpus, AppError> {
    if is_team_corpus(dir)? {
        open_team_corpus(dir).map(OpenedCorpus::Team)
    } else {
        open_corpus(dir).map(OpenedCorpus::Generated)
    }
}

/// Opens a corpus folder of either kind for a run.
pub fn open_run_corpus(dir: &Path) -> Result<RunCorpus, AppError> {
    if is_team_corpus(dir)? {
        open_team_corpus(dir).map(RunCorpus::from)
    } else {
        open_corpus(dir).map(RunCorpus::from)
    }
}

/// The corpora of the recorded runs shipped inside the binary (the demo study's, `kvgate fixtures
/// generate --seed 11 --preset test-2k --per-stratum 4`, and the earlier SmolLM2 recording's,
/// `--seed 7 --per-stratum 1`): those runs were recorded before prompt digests were, and theirs are
/// recomputed from these items wherever the app runs.
const EMBEDDED_CORPUS_ITEMS: [&str; 2] = [
    include_str!("../../../fixtures/disagreements/corpus/items.jsonl"),
    include_str!("../../../fixtures/demo/corpus/items.jsonl"),
];

/// The items sha256 of each corpus shipped inside the binary.
pub fn embedded_corpus_digests() -> Vec<String> {
    EMBEDDED_CORPUS_ITEMS
        .iter()
        .map(|items| sha256_hex(items.as_bytes()))
        .collect()
}

/// The items of a run's corpus, for the prompt digests of rows stored without them: an embedded
/// corpus, the in-memory corpus of a load run (regenerated from its seed), or the folder the
/// run names (as found from the working directory). Only items whose digest is the one the run
/// recorded; otherwise why not.
pub fn corpus_for_digests(
    corpus: &kvgate_store::study_input::CorpusRef,
) -> Result<Vec<CorpusItem>, String> {
    if let Some(items) = EMBEDDED_CORPUS_ITEMS
        .iter()
        .find(|items| sha256_hex(items.as_bytes()) == corpus.items_sha256)
    {
        return items
            .lines()
            .map(|line| {
                serde_json::from_str(line)
                    .map(CorpusItem::Generated)
                    .map_err(|e| e.to_string())
            })
            .collect();
    }
    let dir = corpus
        .dir
        .as_deref()
        .ok_or("the run names no corpus folder")?;
    let loaded: RunCorpus = if dir.starts_with("(generated in memory") {
        let seed = corpus
            .seed
            .ok_or("the run records no seed to regenerate it")?;
        default_load_corpus(seed).map_err(|e| e.message)?.into()
    } else {
        open_run_corpus(Path::new(dir))
            .map_err(|e| format!("corpus folder {dir}: {}", e.message))?
    };
    if loaded.meta.items_sha256 != corpus.items_sha256 {
        return Err(format!(
            "corpus folder {dir} now holds items sha256 {}, not the run's",
            loaded.meta.items_sha256
        ));
    }
    Ok(loaded.items)
}

/// Whether two corpora (e.g. calibration and evaluation) share an item or a protected answer.
/// Two generated corpora are checked by their user turns and answers ([`check_disjoint`]); where
/// either is a team's, by the normalized text of each prompt's non-system messages, as the
/// import checks it (a team's answers are not asset ids, so no answer can be said leaked).
pub fn check_corpora(a: &Path, b: &Path) -> Result<DisjointReport, AppError> {
    let (a, b) = (open_run_corpus(a)?, open_run_corpus(b)?);
    let generated = |c: &RunCorpus| -> Option<Vec<FixtureItem>> {
        c.items
            .iter()
            .map(|i| match i {
                CorpusItem::Generated(g) => Some(g.clone()),
                CorpusItem::Team(_) => None,
            })
            .collect()
    };
    if let (Some(x), Some(y)) = (generated(&a), generated(&b)) {
        return Ok(check_disjoint(&x, &y));
    }
    let digest = |i: &CorpusItem| kvgate_core::fixtures::team::prompt_overlap_sha256(i.messages());
    let mut theirs: std::collections::HashMap<String, Vec<&str>> = std::collections::HashMap::new();
    for i in &b.items {
        theirs.entry(digest(i)).or_default().push(i.id());
    }
    let mut report = DisjointReport::default();
    for i in &a.items {
        let d = digest(i);
        for other in theirs.get(&d).into_iter().flatten() {
            report.shared_items.push(kvgate_core::fixtures::SharedItem {
                a_id: i.id().to_owned(),
                b_id: (*other).to_owned(),
                normalized_sha256: d.clone(),
            });
        }
    }
    Ok(report)
}

/// One response text as the runner records it: empty, or completed with the text.
fn outcome_of(response: &str) -> ResponseOutcome {
    if response.trim().is_empty() {
        ResponseOutcome::Empty
    } else {
        ResponseOutcome::Completed {
            text: response.to_owned(),
        }
    }
}

/// The validator's verdict on one response text for one item's approved answer.
pub fn validate_response(
    expected: &ExpectedAnswer,
    response: &str,
    policy: ValidatorPolicy,
) -> Verdict {
    validate(expected, &outcome_of(response), policy)
}

/// The verdict on one response text by a team item's answer check.
pub fn judge_response(
    check: &kvgate_core::validator::AnswerCheck,
    response: &str,
    policy: ValidatorPolicy,
) -> Verdict {
    kvgate_core::validator::judge(check, &outcome_of(response), policy)
}
