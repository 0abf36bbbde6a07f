//! Loads a study's stored runs, evidence and measured requests into the analysis input of
//! `kvgate-core` (which decides everything from it).
//!
//! Cells are the study's frozen manifests; what their evidence decides (the invalid-cell rule,
//! the capacity roll-up) is `kvgate_core::evidence`. Runs still in progress are left out; every
//! other run, whatever its end, counts.
//!
//! Every request row carries the sha256 of the prompt it sent. Rows stored before that digest was
//! recorded get it recomputed here, from the run's corpus (found by the caller's
//! [`CorpusSource`]) and the cell's manifest, with `kvgate_core::pairing::item_prompt_sha256`;
//! when the corpus cannot be found the rows keep none, and the run says why.

use std::collections::HashMap;
use std::hash::BuildHasher;

/// The hash of the load's interning tables (item ids, prompt digests): foldhash, which reads 8
/// bytes a step (a byte-at-a-time hash was a fifth of the load at a million rows). Keys are still
/// compared whole: two digests are the same prompt only when equal.
type FastHash = foldhash::fast::RandomState;

use hashbrown::hash_table::{Entry, HashTable};

use crate::{MeasuredRequest, RunState, Store, StoreError};
use kvgate_core::analysis::{
    CapacityEvidence, CellInput, Intervention, RequestRow, RunInput, StudyInput,
};
use kvgate_core::device_memory::DeviceMemory;
use kvgate_core::evidence::{CellEvidence, EvidenceKind};
use kvgate_core::fixtures::{ApprovedPrompt, CorpusItem};
use kvgate_core::manifest::Manifest;
use kvgate_core::metrics::{run_series, CanonicalMetric, MetricPoint};
use kvgate_core::operating_point::RunArrivals;
use kvgate_core::pairing::item_prompt_sha256;
use kvgate_core::policy::ItemStrata;
use kvgate_core::review::AuditKind;
use kvgate_core::test_cell::TestCell;
use kvgate_formats::startup_log::parse_startup_log;
use serde_json::Value;

/// Why a study could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("manifest of cell `{cell}`: {reason}")]
    Manifest { cell: String, reason: String },
}

/// The corpus a run was sent from, as its configuration names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CorpusRef {
    /// `corpus.dir` of the run's configuration (a folder, or how an in-memory corpus was made).
    pub dir: Option<String>,
    /// `corpus.items_sha256`: the items the run was sent from.
    pub items_sha256: String,
    /// The run's seed (an in-memory corpus is generated from it).
    pub seed: Option<u64>,
}

/// Finds a corpus by its reference: its items when their digest is the one named, else why not
/// (in words, shown with the rows it leaves unpaired).
pub type CorpusSource<'a> = dyn FnMut(&CorpusRef) -> Result<Vec<CorpusItem>, String> + Send + 'a;

/// A corpus source that finds nothing: every row stored without a prompt digest stays without.
pub fn no_corpora(corpus: &CorpusRef) -> Result<Vec<CorpusItem>, String> {
    Err(format!("corpus {} was not looked up", corpus.items_sha256))
}

/// What the loader keeps per run to recompute prompt digests.
struct RunPrompts {
    corpus: Option<CorpusRef>,
    manifest: Option<usize>,
    /// Item id → prompt index, computed on the first row without a digest.
    recomputed: Option<Result<HashMap<String, u32>, String>>,
    /// Item id → the item's input token count, read on the first row without its own count.
    tokens: Option<HashMap<String, u64>>,
}

/// Strings numbered in the order they are first given. They are kept one after another in one
/// buffer, so a look-up that finds its key reads the index (numbers only), where the number's
/// string starts, and the string: no copy per key (200,000 allocations at a million rows, and
/// their frees), and one fewer read from far memory than a list of strings. Keys are compared
/// whole: two strings have one number only when equal.
struct Numbering {
    bytes: String,
    /// Where each number's string starts in `bytes`, and after the last where it ends.
    starts: Vec<usize>,
    index: HashTable<u32>,
    hasher: FastHash,
}

/// The string numbered `n` in a [`Numbering`]'s buffer, borrowed apart from its index (which a
/// look-up or insertion borrows at the same time).
fn key_in<'b>(bytes: &'b str, starts: &[usize], n: u32) -> &'b str {
    let n = n as usize;
    &bytes[starts[n]..starts[n + 1]]
}

impl Default for Numbering {
    fn default() -> Numbering {
        Numbering {
            bytes: String::new(),
            starts: vec![0],
            index: HashTable::new(),
            hasher: FastHash::default(),
        }
    }
}

impl Numbering {
    fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// The string numbered `n`.
    fn key(&self, n: u32) -> &str {
        key_in(&self.bytes, &self.starts, n)
    }

    /// Room for `n` more numbers (the buffer grows as strings come).
    fn reserve(&mut self, n: usize) {
        self.starts.reserve(n);
        let hasher = &self.hasher;
        let (bytes, starts) = (&self.bytes, &self.starts);
        self.index
            .reserve(n, |&i| hasher.hash_one(key_in(bytes, starts, i)));
    }

    /// The number of `key`, when it has one.
    fn get(&self, key: &str) -> Option<u32> {
        self.index
            .find(self.hasher.hash_one(key), |&i| self.key(i) == key)
            .copied()
    }

    /// The number of `key`, given now if it has none.
    fn intern(&mut self, key: &str) -> u32 {
        let hasher = &self.hasher;
        let (bytes, starts) = (&self.bytes, &self.starts);
        let at = |i: u32| key_in(bytes, starts, i);
        let entry = self.index.entry(
            hasher.hash_one(key),
            |&i| at(i) == key,
            |&i| hasher.hash_one(at(i)),
        );
        match entry {
            Entry::Occupied(found) => *found.get(),
            Entry::Vacant(free) => {
                let i = u32::try_from(starts.len() - 1).expect("fewer than 2^32 strings");
                free.insert(i);
                self.bytes.push_str(key);
                self.starts.push(self.bytes.len());
                i
            }
        }
    }

    /// The strings in number order.
    fn into_list(self) -> Vec<String> {
        (0..self.len() as u32)
            .map(|n| self.key(n).to_owned())
            .collect()
    }

    /// [`Numbering::intern`] for a row of an item: an item's rows mostly send the same prompt,
    /// so the digest its last row sent (`last`) is compared first, byte for byte.
    fn intern_for(&mut self, digest: &str, last: &mut Option<u32>) -> u32 {
        if let Some(i) = *last {
            if self.key(i) == digest {
                return i;
            }
        }
        let i = self.intern(digest);
        *last = Some(i);
        i
    }
}

/// The allocated device memory of a run imported from an nvidia-smi CSV: the highest
/// `memory.used` of each GPU (`gpu.<key>.memory.used`, stat `max`) summed over the GPUs that have
/// one. `None` for runs of other sources, and for a file with no reading at all.
async fn allocated_memory(
    store: &Store,
    run: &crate::RunRecord,
) -> Result<Option<DeviceMemory>, LoadError> {
    let config = serde_json::from_str::<Value>(&run.config_json).unwrap_or(Value::Null);
    if config["import"]["format"].as_str() != Some("nvidia-smi") {
        return Ok(None);
    }
    let peaks: Vec<f64> = store
        .run_aggregates(run.id)
        .await?
        .into_iter()
        .filter(|a| {
            a.stat == "max"
                && a.unit == "MiB"
                && a.name.starts_with("gpu.")
                && a.name.ends_with(".memory.used")
        })
        .map(|a| a.value)
        .collect();
    if peaks.is_empty() {
        return Ok(None);
    }
    let sum: f64 = peaks.iter().sum();
    let file = config["import"]["source_name"].as_str().unwrap_or("file");
    Ok(Some(DeviceMemory {
        allocated_mib: Some((sum * 100.0).round() / 100.0),
        allocated_gpus: Some(peaks.len() as u32),
        sources: vec![format!(
            "allocated_mib: nvidia-smi {file}, highest memory.used of {} GPU(s) summed",
            peaks.len()
        )],
        ..DeviceMemory::default()
    }))
}

/// Reads every frozen cell of a study with its finished runs, evidence and measured requests;
/// `corpora` finds the corpora of runs stored without prompt digests.
pub async fn load_study(
    store: &Store,
    study_id: i64,
    corpora: &mut CorpusSource<'_>,
) -> Result<StudyInput, LoadError> {
    let manifests = store.list_manifests(study_id).await?;
    let runs = store.list_runs(study_id).await?;
    let mut cells: Vec<CellInput> = Vec::new();
    let mut parsed: Vec<Option<Manifest>> = Vec::new();
    let mut cell_of_manifest: HashMap<i64, usize> = HashMap::new();
    for m in manifests.iter().filter(|m| m.is_frozen()) {
        let test_cell = TestCell::from_name(&m.cell).map_err(|e| LoadError::Manifest {
            cell: m.cell.clone(),
            reason: e.to_string(),
        })?;
        // A frozen manifest passed validation when it was frozen; one that no longer reads
        // back only loses what is derived from it here (admission limit, corpus, digests).
        let manifest = Manifest::from_json(&m.text).ok();
        cell_of_manifest.insert(m.id, cells.len());
        cells.push(CellInput {
            cell: m.cell.clone(),
            test_cell,
            manifest_sha256: m.digest.clone().unwrap_or_default(),
            invalid_reasons: Vec::new(),
            runs: Vec::new(),
            capacity: CapacityEvidence::default(),
            evaluation_corpus_sha256: manifest
                .as_ref()
                .map(|m| m.evaluation_corpus_sha256.clone()),
            admission_limit: manifest.as_ref().map(|m| m.scheduler.max_num_seqs),
            manifest: manifest.clone(),
            interventions: Vec::new(),
        });
        parsed.push(manifest);
    }
    let mut run_prompts: Vec<RunPrompts> = Vec::new();
    let mut prompt_slot: HashMap<i64, usize> = HashMap::new();
    let mut evidence: Vec<CellEvidence> = cells.iter().map(|_| CellEvidence::default()).collect();
    let mut run_slot: HashMap<i64, (usize, usize)> = HashMap::new();
    for run in runs.iter().filter(|r| r.state != RunState::Running) {
        let Some(&ci) = cell_of_manifest.get(&run.manifest_id) else {
            continue;
        };
        let cell = &mut cells[ci];
        for e in store.run_evidence(run.id).await? {
            // Kinds this version does not know carry nothing for the analysis.
            if let Some(kind) = EvidenceKind::parse(&e.kind) {
                evidence[ci].absorb(cell, run.id, kind, &e.source_name, &e.text);
            }
            // Read from the verbatim log (older runs included), beside the KV capacity.
            if EvidenceKind::parse(&e.kind) == Some(EvidenceKind::StartupLog) {
                let memory = parse_startup_log(&e.text).device_memory();
                if !memory.is_empty() {
                    let cell_memory = cell
                        .capacity
                        .device_memory
                        .get_or_insert_with(Default::default);
                    cell_memory.fold(run.id, memory);
                }
            }
        }
        if let Some(memory) = allocated_memory(store, run).await? {
            cell.capacity
                .device_memory
                .get_or_insert_with(Default::default)
                .fold(run.id, memory);
        }
        let points: Vec<MetricPoint> = store
            .run_scrapes(run.id)
            .await?
            .into_iter()
            // A failed scrape (`{"error": …}`) carries no values: a gap, not zeros.
            .filter_map(|s| {
                let read: Value = serde_json::from_str(&s.values_json).ok()?;
                // A name this version does not know is skipped, not the whole scrape.
                let values = read["values"]
                    .as_object()?
                    .iter()
                    .filter_map(|(k, v)| {
                        let metric: CanonicalMetric =
                            serde_json::from_value(Value::String(k.clone())).ok()?;
                        Some((metric, v.as_f64()?))
                    })
                    .collect();
                Some(MetricPoint {
                    at_ms: s.at_ms,
                    values,
                })
            })
            .collect();
        if !points.is_empty() {
            cell.capacity
                .metric_series
                .push(run_series(run.id, &points));
        }
        let kind = run.kind;
        run_slot.insert(run.id, (ci, cell.runs.len()));
        let config = serde_json::from_str::<Value>(&run.config_json).unwrap_or(Value::Null);
        // Imports record whether their rows sit on one clock; KV Gate's own runs always do.
        let clocked = config["import"]["clocked"].as_bool().unwrap_or(true);
        let corpus_sha256 = config["corpus"]["items_sha256"].as_str().map(str::to_owned);
        prompt_slot.insert(run.id, run_prompts.len());
        run_prompts.push(RunPrompts {
            corpus: corpus_sha256.clone().map(|items_sha256| CorpusRef {
                dir: config["corpus"]["dir"].as_str().map(str::to_owned),
                items_sha256,
                seed: config["seed"].as_u64(),
            }),
            manifest: Some(ci),
            recomputed: None,
            tokens: None,
        });
        cell.runs.push(RunInput {
            run_id: run.id,
            kind,
            clocked,
            requests: Vec::new(),
            arrivals: RunArrivals::from_config(kind, &config),
            corpus_sha256,
            prompt_note: None,
        });
    }

    for (cell, evidence) in cells.iter_mut().zip(evidence) {
        evidence.close(cell);
    }
    let mut rows = Rows {
        items: Numbering::default(),
        strata: Vec::new(),
        item_prompt: Vec::new(),
        prompts: Numbering::default(),
        corpus_cache: HashMap::new(),
        run_prompts,
        manifests: &parsed,
        corpora,
    };
    // Runs in id order, as the rows are numbered: each from its columns when it has them, else
    // from its rows; both hand the same requests to the same `Rows::row`, in the same order.
    let mut loaded: Vec<(&crate::RunRecord, (usize, usize))> = runs
        .iter()
        .filter_map(|r| run_slot.get(&r.id).map(|&slot| (r, slot)))
        .collect();
    loaded.sort_by_key(|(r, _)| r.id);
    // The study's numbers of a dictionary's entries, by its sha256: runs sent from one corpus
    // in one order (each cell's quality run) have one dictionary, looked up once.
    let mut numbered: HashMap<String, (Found, Found)> = HashMap::new();
    for (run, (ci, ri)) in loaded {
        let pi = prompt_slot[&run.id];
        let requests = &mut cells[ci].runs[ri].requests;
        let measured = u64::try_from(run.ok + run.failed).unwrap_or(0);
        let mut item_of: Vec<Option<u32>> = Vec::new();
        let mut prompt_of: Vec<Option<u32>> = Vec::new();
        let columns = store
            .read_run_columns(run.id, measured, |dictionary, part| {
                if item_of.is_empty() && prompt_of.is_empty() {
                    // The numbers the study already has for the run's items and digests, found
                    // on both cores; the others are given on their first row, as from the rows.
                    (item_of, prompt_of) =
                        numbered.remove(dictionary.sha256()).unwrap_or_else(|| {
                            (
                                known(dictionary.item_count(), &rows.items, |k| dictionary.item(k)),
                                known(dictionary.prompt_count(), &rows.prompts, |k| {
                                    dictionary.prompt(k)
                                }),
                            )
                        });
                    requests.reserve(dictionary.rows as usize);
                    // The first run numbers all its entries: room for them at once, not by
                    // doubling and rehashing (later runs mostly name entries already numbered).
                    if rows.items.len() == 0 {
                        rows.reserve_items(dictionary.item_count());
                    }
                    if rows.prompts.len() == 0 {
                        rows.prompts.reserve(dictionary.prompt_count());
                    }
                }
                for i in 0..part.rows() {
                    let c = part.row(i);
                    // `Rows::row` reads the item's id only to recompute a missing digest or to
                    // take the item's token count: read from the dictionary on every row, it
                    // would be a cache miss each.
                    let needs_id = c.prompt.is_none() || c.prompt_tokens.is_none();
                    let item_id = c.item.filter(|_| needs_id).map(|k| dictionary.item(k));
                    // First the run's own numbering: a string is looked up once per run.
                    let item = c.item.map(|k| {
                        *item_of[k as usize].get_or_insert_with(|| rows.item(dictionary.item(k)))
                    });
                    let prompt = c.prompt.map(|k| {
                        *prompt_of[k as usize]
                            .get_or_insert_with(|| rows.prompts.intern(dictionary.prompt(k)))
                    });
                    let q = MeasuredRequest {
                        run_id: run.id,
                        idx: 0,
                        repeat: c.repeat,
                        item_id,
                        status: c.status,
                        planned_arrival_ms: c.planned_arrival_ms,
                        dispatch_ms: c.dispatch_ms,
                        first_token_ms: c.first_token_ms,
                        finish_ms: c.finish_ms,
                        prompt_tokens: c.prompt_tokens,
                        completion_tokens: c.completion_tokens,
                        accepted: c.accepted,
                        // Known by its number (`prompt`).
                        prompt_sha256: None,
                        client_delay_ms: c.client_delay_ms,
                        engine_itl_ms: c.engine_itl_ms,
                    };
                    requests.push(rows.row(pi, &q, Some((item, prompt))));
                }
            })
            .await?;
        if let Some(dictionary) = columns {
            numbered.insert(dictionary.sha256().to_owned(), (item_of, prompt_of));
        } else {
            store
                .for_each_measured_request_of_run(run.id, |q| {
                    requests.push(rows.row(pi, &q, None));
                })
                .await?;
        }
    }
    let Rows {
        items,
        strata,
        prompts,
        run_prompts,
        ..
    } = rows;
    // Say why rows that name an item have no digest: the recomputation failed, or the item is
    // not in the corpus found.
    for (run_id, &(ci, ri)) in &run_slot {
        let run = &mut cells[ci].runs[ri];
        let missing = run
            .requests
            .iter()
            .any(|r| r.item.is_some() && r.prompt.is_none());
        if !missing {
            continue;
        }
        run.prompt_note = Some(match &run_prompts[prompt_slot[run_id]].recomputed {
            Some(Err(why)) => why.clone(),
            _ => "some items it sent are not in its corpus, so their prompts cannot be recomputed"
                .to_owned(),
        });
    }
    // Named interventions, from the audit chain, to the cell each names.
    for e in store.audit_events(study_id).await? {
        if e.kind != AuditKind::Intervention {
            continue;
        }
        let Some(cell) = cells.iter_mut().find(|c| c.cell == e.subject) else {
            continue;
        };
        // An event whose payload does not read accepts nothing.
        let accepts = serde_json::from_value(e.payload["accepts"].clone()).unwrap_or_default();
        cell.interventions.push(Intervention {
            event: e.seq,
            why: e.payload["why"].as_str().unwrap_or_default().to_owned(),
            by: e.actor,
            at: e.at,
            accepts,
        });
    }
    Ok(StudyInput {
        items: items.into_list().into_iter().zip(strata).collect(),
        prompts: prompts.into_list(),
        cells,
    })
}

/// Per entry of a run's dictionary, the study's number for it, once known.
type Found = Vec<Option<u32>>;

/// The numbers `index` holds for entries `0..count` of a run's dictionary (`entry`), `None` for
/// those it does not hold yet: read-only, the two halves on the two cores. A string a study has
/// already numbered is most of a large study's look-ups (every run after the first sends the
/// same items), and each is a cache miss or two.
fn known<'d>(count: usize, index: &Numbering, entry: impl Fn(u32) -> &'d str + Sync) -> Found {
    const SERIAL: usize = 4096;
    let find =
        |ks: std::ops::Range<usize>| -> Found { ks.map(|k| index.get(entry(k as u32))).collect() };
    if index.len() == 0 {
        return vec![None; count];
    }
    if count < SERIAL {
        return find(0..count);
    }
    let half = count / 2;
    std::thread::scope(|scope| {
        let upper = scope.spawn(|| find(half..count));
        let mut out = find(0..half);
        out.extend(upper.join().expect("look-ups do not panic"));
        out
    })
}

/// The load's numbering of items and prompts, and what it recomputes per run, shared by the two
/// ways a run's requests are read (its columns, its rows).
struct Rows<'a, 'c> {
    /// Item ids, which repeat once per cell and pass: looked up by the borrowed row text.
    items: Numbering,
    /// Per item: its strata, read from its id.
    strata: Vec<Option<ItemStrata>>,
    /// Per item: the prompt its last row sent.
    item_prompt: Vec<Option<u32>>,
    prompts: Numbering,
    corpus_cache: HashMap<String, Result<Vec<CorpusItem>, String>>,
    run_prompts: Vec<RunPrompts>,
    manifests: &'a [Option<Manifest>],
    corpora: &'a mut CorpusSource<'c>,
}

impl Rows<'_, '_> {
    fn reserve_items(&mut self, n: usize) {
        self.items.reserve(n);
        self.strata.reserve(n);
        self.item_prompt.reserve(n);
    }

    /// The study's number of item `id`.
    fn item(&mut self, id: &str) -> u32 {
        let i = self.items.intern(id);
        if i as usize == self.strata.len() {
            self.strata.push(ItemStrata::from_item_id(id));
            self.item_prompt.push(None);
        }
        i
    }

    /// Request `q` of the run whose prompts are `run_prompts[pi]`, as the analysis reads it.
    /// `known`: its item's and its digest's numbers when the caller has them already.
    fn row(
        &mut self,
        pi: usize,
        q: &MeasuredRequest<'_>,
        known: Option<(Option<u32>, Option<u32>)>,
    ) -> RequestRow {
        let (item, digest) = match known {
            Some(found) => found,
            None => {
                let item = q.item_id.map(|id| self.item(id));
                let digest = q.prompt_sha256.map(|digest| match item {
                    Some(i) => self
                        .prompts
                        .intern_for(digest, &mut self.item_prompt[i as usize]),
                    None => self.prompts.intern(digest),
                });
                (item, digest)
            }
        };
        let prompt = match (digest, q.item_id) {
            (Some(p), _) => Some(p),
            (None, None) => None,
            (None, Some(id)) => {
                let rp = &mut self.run_prompts[pi];
                if rp.recomputed.is_none() {
                    let found = recompute(
                        rp,
                        self.manifests,
                        &mut self.corpus_cache,
                        self.corpora,
                        &mut self.prompts,
                    );
                    rp.recomputed = Some(found);
                }
                rp.recomputed
                    .as_ref()
                    .and_then(|r| r.as_ref().ok())
                    .and_then(|m| m.get(id).copied())
            }
        };
        // A request without its own input token count takes its fixture item's.
        let item_input_tokens = match (q.prompt_tokens, q.item_id) {
            (None, Some(id)) => {
                let rp = &mut self.run_prompts[pi];
                if rp.tokens.is_none() {
                    rp.tokens = Some(item_tokens(rp, &mut self.corpus_cache, self.corpora));
                }
                rp.tokens.as_ref().and_then(|m| m.get(id).copied())
            }
            _ => None,
        };
        RequestRow {
            item,
            prompt,
            repeat: q.repeat,
            status: q.status,
            planned_ms: q.planned_arrival_ms,
            dispatch_ms: q.dispatch_ms.into(),
            first_token_ms: q.first_token_ms.into(),
            finish_ms: q.finish_ms.into(),
            prompt_tokens: q.prompt_tokens.into(),
            completion_tokens: q.completion_tokens.into(),
            accepted: q.accepted,
            item_input_tokens: item_input_tokens.into(),
            client_delay_ms: q.client_delay_ms.into(),
            engine_itl_ms: q.engine_itl_ms.into(),
        }
    }
}

/// The input token count of each item of a run's corpus (by the pinned tokenizer, as the corpus
/// recorded it); empty when the corpus is not found.
fn item_tokens(
    run: &RunPrompts,
    cache: &mut HashMap<String, Result<Vec<CorpusItem>, String>>,
    corpora: &mut CorpusSource<'_>,
) -> HashMap<String, u64> {
    let Some(corpus) = &run.corpus else {
        return HashMap::new();
    };
    match cache
        .entry(corpus.items_sha256.clone())
        .or_insert_with(|| corpora(corpus))
    {
        Ok(items) => items
            .iter()
            .map(|i| (i.id().to_owned(), i.prompt_tokens() as u64))
            .collect(),
        Err(_) => HashMap::new(),
    }
}

/// The prompt digests of a run stored without them: each item of its corpus as sent under its
/// cell's manifest. An error says why they cannot be recomputed.
fn recompute(
    run: &RunPrompts,
    manifests: &[Option<Manifest>],
    cache: &mut HashMap<String, Result<Vec<CorpusItem>, String>>,
    corpora: &mut CorpusSource<'_>,
    prompts: &mut Numbering,
) -> Result<HashMap<String, u32>, String> {
    let Some(corpus) = &run.corpus else {
        return Err(
            "the run stored no prompt digests and names no corpus to recompute them from".into(),
        );
    };
    let Some(manifest) = run.manifest.and_then(|m| manifests[m].as_ref()) else {
        return Err("its manifest cannot be read back to recompute prompt digests".into());
    };
    let items = cache
        .entry(corpus.items_sha256.clone())
        .or_insert_with(|| corpora(corpus))
        .as_ref()
        .map_err(|why| {
            format!(
                "the run stored no prompt digests and its corpus (items sha256 {}) was not found to recompute them: {why}",
                corpus.items_sha256
            )
        })?;
    Ok(items
        .iter()
        .map(|item| {
            let digest = item_prompt_sha256(item, manifest);
            (item.id().to_owned(), prompts.intern(&digest))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::Numbering;

    /// The shortcut by an item's last prompt never makes two digests one prompt, nor one digest
    /// two: an item whose rows alternate between prompts, and another item sending one of them.
    #[test]
    fn an_items_last_prompt_is_a_shortcut_never_a_match() {
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        let mut prompts = Numbering::default();
        let (mut first, mut second) = (None, None);
        let got: Vec<u32> = [&a, &b, &a, &a, &b]
            .into_iter()
            .map(|d| prompts.intern_for(d, &mut first))
            .collect();
        assert_eq!(got, [0, 1, 0, 0, 1]);
        assert_eq!(prompts.intern_for(&a, &mut second), 0);
        assert_eq!(prompts.intern_for(&"c".repeat(64), &mut second), 2);
        assert_eq!(prompts.intern(&b), 1);
        assert_eq!(prompts.into_list(), [a, b, "c".repeat(64)]);
    }

    /// Strings kept one after another are still told apart where one ends: a string and its
    /// prefixes, two that are one when joined, and the empty string each have their own number;
    /// a string not given has none, even when it is in the buffer across two.
    #[test]
    fn strings_kept_end_to_end_are_numbered_whole() {
        let given = ["ab", "abc", "", "c", "a", "bc", "abcabc"];
        let mut numbers = Numbering::default();
        // Enough that the index grows and places every number again by its string.
        let more: Vec<String> = (0..1000).map(|k| format!("k{k}")).collect();
        for (n, key) in given.iter().enumerate() {
            assert_eq!(numbers.intern(key), n as u32, "{key:?}");
        }
        for (n, key) in more.iter().enumerate() {
            assert_eq!(numbers.intern(key), (given.len() + n) as u32);
        }
        for (n, key) in given.iter().enumerate() {
            assert_eq!(numbers.get(key), Some(n as u32), "{key:?}");
            assert_eq!(numbers.intern(key), n as u32, "{key:?}");
        }
        // "abc" + "" + "c" is "abcc" in the buffer; "bca" crosses "abc" and "abcabc".
        for absent in ["abcc", "bca", "cab", "b", "k1000", "a "] {
            assert_eq!(numbers.get(absent), None, "{absent:?}");
        }
        let list = numbers.into_list();
        assert_eq!(list.len(), given.len() + more.len());
        assert_eq!(&list[..given.len()], given);
        assert_eq!(&list[given.len()..], more);
    }
}
