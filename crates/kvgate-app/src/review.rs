//! User actions of the reviewer: the queue of paired disagreements between B0 and each
//! candidate (blind: the two answers are "A" and "B" in a seeded order recorded with the study),
//! labels appended to the audit chain, and the verification of that chain against the labels
//! the database holds.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use kvgate_core::fixtures::team::TeamItem;
use kvgate_core::fixtures::{CorpusItem, FixtureItem};
use kvgate_core::policy::{ItemStrata, SegmentFilter};
use kvgate_core::review::{
    candidate_is_a, map_label, pair_id, parse_pair_id, verify_chain, AdjudicationLabel, AuditEvent,
    AuditKind, ChainBreak, ReviewLabel,
};
use kvgate_core::validator::{ExpectedAnswer, Verdict};
use kvgate_store::RunKind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use ts_rs::TS;

use crate::{App, AppError, ErrorCode};

/// Longest note accepted with a label, in characters.
pub const MAX_NOTE_CHARS: usize = 4000;

/// Which pairs the queue lists.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ReviewFilter {
    /// One candidate cell; all candidates when absent.
    #[serde(default)]
    pub candidate: Option<String>,
    /// Items of these strata only.
    #[serde(default)]
    pub strata: SegmentFilter,
    /// Pairs where either side's validator gave this reason code (e.g. `factor_of_ten`).
    #[serde(default)]
    pub reason: Option<String>,
    /// Also list this many agreeing pairs, sampled in the blind order (0: disagreements only).
    #[serde(default)]
    pub agreeing_sample: u32,
}

/// One side of a pair as the reviewer sees it before the reveal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ReviewSide {
    pub output_text: String,
    pub status: String,
    pub accepted: bool,
    pub verdict: Verdict,
    pub ttft_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
    pub completion_tokens: Option<u64>,
    pub run_id: i64,
}

/// A pair in the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ReviewPair {
    pub pair_id: String,
    pub candidate: String,
    pub item_id: String,
    pub strata: Option<ItemStrata>,
    /// Exactly one side accepted.
    pub disagreement: bool,
    pub a: ReviewSide,
    pub b: ReviewSide,
    /// The fixture item (prompt, evidence, look-alikes, expected answer) when its corpus is
    /// found with the digest the run recorded.
    pub item: Option<FixtureItem>,
    /// Why `item` is absent, when it is.
    pub item_note: Option<String>,
    /// For an evaluation harness's item: the prompt it sent and its target, as it recorded them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub harness: Option<HarnessItem>,
    /// For a team's own prompt: its labels, chat, check and evidence, from its corpus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub team: Option<TeamReviewItem>,
    /// The current label, when labelled.
    pub label: Option<AdjudicationLabel>,
    pub note: Option<String>,
    /// Only once labelled: which side is the candidate.
    pub candidate_is_a: Option<bool>,
    /// The current label was given after the reveal (a relabel): counted apart.
    pub unblinded: bool,
}

/// An evaluation harness's item as the reviewer reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct HarnessItem {
    /// Each chat message as `role:` and its text; a plain prompt as sent.
    pub prompt: String,
    pub target: String,
    /// The answers the target names, to locate in the prompt
    /// (`kvgate_core::harness::target_needles`).
    pub needles: Vec<String>,
    /// The target read as KV Gate's approved answer, when it is one (a task KV Gate exported):
    /// the expected column of the reviewer's field diff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub expected: Option<ExpectedAnswer>,
}

/// A team's own prompt as the reviewer reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct TeamReviewItem {
    /// The id in the team's file.
    pub source_id: String,
    pub labels: std::collections::BTreeMap<String, String>,
    pub messages: Vec<kvgate_core::fixtures::ChatMessage>,
    pub token_count: usize,
    /// How an answer is judged, said for people (`AnswerCheck::describe`).
    pub target: String,
    pub check: kvgate_core::validator::AnswerCheck,
    /// The passages the answer comes from, when the team named them: located in the prompt.
    pub evidence: Vec<String>,
    /// The members the check expects, for the expected column of the field diff: a JSON
    /// check's object, the refusal object; absent for a check of the whole text.
    #[ts(type = "Record<string, unknown> | null")]
    pub expected_fields: Option<serde_json::Map<String, serde_json::Value>>,
}

impl From<&TeamItem> for TeamReviewItem {
    fn from(t: &TeamItem) -> Self {
        TeamReviewItem {
            source_id: t.source_id.clone(),
            labels: t.labels.clone(),
            messages: t.messages.clone(),
            token_count: t.token_count,
            target: t.check.describe(),
            check: t.check.clone(),
            evidence: t.evidence.clone(),
            expected_fields: t.check.expected_fields(),
        }
    }
}

/// The queue of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ReviewQueue {
    pub study_id: i64,
    /// The recorded seed of the blind order.
    pub seed: String,
    pub pairs: Vec<ReviewPair>,
    /// Disagreements per candidate over the whole study (before the filter).
    #[ts(type = "Record<string, number>")]
    pub disagreements: BTreeMap<String, u64>,
    /// Disagreements of every candidate together.
    pub disagreements_total: u64,
    pub labelled: u64,
}

/// What labelling a pair takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct LabelInput {
    /// `{study}:{candidate cell}/{fixture item id}`, as the queue lists it.
    pub pair_id: String,
    /// Before the reveal, a side label (`a_correct_b_wrong`, `b_correct_a_wrong`,
    /// `both_acceptable`, `both_wrong`, `ambiguous_item`); `candidate_regression` and
    /// `baseline_error` only for a pair already revealed.
    pub label: ReviewLabel,
    #[serde(default)]
    pub note: String,
    pub by: String,
}

/// The label recorded, and the reveal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct LabelOutcome {
    pub event: AuditEvent,
    pub candidate_is_a: bool,
    pub candidate: String,
    /// What the reviewer chose.
    pub given: ReviewLabel,
    /// What it maps to, now that the sides are revealed.
    pub label: AdjudicationLabel,
    /// Given after the reveal (a relabel): counted apart in the adjudicated statistics.
    pub unblinded: bool,
}

/// A verification of the study's audit chain and of the labels against it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct AuditReport {
    pub study_id: i64,
    pub events: u64,
    pub intact: bool,
    /// The first event whose link or content does not match.
    pub chain_break: Option<ChainBreak>,
    /// Labels in the database that differ from what the chain records (edited outside the app).
    pub tampered: Vec<String>,
}

/// A pair as the queue lists it: what the list shows, orders and filters by. Its answers, item
/// and prompt come with [`App::review_pair`], one pair at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ReviewRow {
    pub pair_id: String,
    pub candidate: String,
    pub item_id: String,
    pub strata: Option<ItemStrata>,
    /// Exactly one side accepted.
    pub disagreement: bool,
    /// The current label, when labelled.
    pub label: Option<AdjudicationLabel>,
    pub note: Option<String>,
    /// Only once labelled: which side is the candidate.
    pub candidate_is_a: Option<bool>,
    /// The current label was given after the reveal (a relabel): counted apart.
    pub unblinded: bool,
}

/// The queue of a study as the review list shows it: one row per pair, in the blind order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ReviewIndex {
    pub study_id: i64,
    /// The recorded seed of the blind order.
    pub seed: String,
    pub rows: Vec<ReviewRow>,
    /// Disagreements per candidate over the whole study (before the filter).
    #[ts(type = "Record<string, number>")]
    pub disagreements: BTreeMap<String, u64>,
    /// Disagreements of every candidate together.
    pub disagreements_total: u64,
    pub labelled: u64,
}

/// The review list as the window receives it: the rows of a [`ReviewIndex`] column by column,
/// each repeated value written once. At 100,000 rows it is about a fifth of the bytes of the rows
/// as objects, so the window reads and keeps far less. [`ReviewIndexColumns::rows`] gives the
/// rows back exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ReviewIndexColumns {
    pub study_id: i64,
    /// The recorded seed of the blind order.
    pub seed: String,
    /// Disagreements per candidate over the whole study (before the filter).
    #[ts(type = "Record<string, number>")]
    pub disagreements: BTreeMap<String, u64>,
    pub disagreements_total: u64,
    pub labelled: u64,
    /// The candidate cells the rows name.
    pub candidates: Vec<String>,
    /// Per candidate: the start of its pairs' ids. A row's pair id is its candidate's prefix
    /// followed by its item id.
    pub pair_prefixes: Vec<String>,
    /// The distinct strata the rows name.
    pub strata: Vec<ItemStrata>,
    /// Per row, in the list's order: its item id.
    pub item_ids: Vec<String>,
    /// Per row: its candidate, a position in `candidates`.
    pub candidate: Vec<u32>,
    /// Per row: its strata, a position in `strata`; null when the item id names none.
    pub stratum: Vec<Option<u32>>,
    /// The rows that are not disagreements (a sample of agreeing pairs), by position.
    pub agreeing_rows: Vec<u32>,
    /// The rows with a label, a note or a reveal, by position; every other row has none.
    pub labels: Vec<ReviewRowLabel>,
}

/// The label fields of one row of [`ReviewIndexColumns`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ReviewRowLabel {
    /// The row's position in the list.
    pub row: u32,
    pub label: Option<AdjudicationLabel>,
    pub note: Option<String>,
    pub candidate_is_a: Option<bool>,
    pub unblinded: bool,
}

impl From<ReviewIndex> for ReviewIndexColumns {
    fn from(index: ReviewIndex) -> Self {
        let n = index.rows.len();
        let mut candidates: Vec<String> = Vec::new();
        let mut pair_prefixes = Vec::new();
        let mut strata = Vec::new();
        let mut strata_at: HashMap<ItemStrata, u32> = HashMap::new();
        let mut out = ReviewIndexColumns {
            study_id: index.study_id,
            seed: index.seed,
            disagreements: index.disagreements,
            disagreements_total: index.disagreements_total,
            labelled: index.labelled,
            candidates: Vec::new(),
            pair_prefixes: Vec::new(),
            strata: Vec::new(),
            item_ids: Vec::with_capacity(n),
            candidate: Vec::with_capacity(n),
            stratum: Vec::with_capacity(n),
            agreeing_rows: Vec::new(),
            labels: Vec::new(),
        };
        for (at, row) in index.rows.into_iter().enumerate() {
            let at = at as u32;
            let c = match candidates.iter().position(|c| c == &row.candidate) {
                Some(c) => c,
                None => {
                    pair_prefixes.push(pair_id(index.study_id, &row.candidate, ""));
                    candidates.push(row.candidate);
                    candidates.len() - 1
                }
            };
            out.candidate.push(c as u32);
            out.stratum.push(row.strata.map(|s| {
                *strata_at.entry(s).or_insert_with(|| {
                    strata.push(s);
                    strata.len() as u32 - 1
                })
            }));
            if !row.disagreement {
                out.agreeing_rows.push(at);
            }
            if row.label.is_some()
                || row.note.is_some()
                || row.candidate_is_a.is_some()
                || row.unblinded
            {
                out.labels.push(ReviewRowLabel {
                    row: at,
                    label: row.label,
                    note: row.note,
                    candidate_is_a: row.candidate_is_a,
                    unblinded: row.unblinded,
                });
            }
            out.item_ids.push(row.item_id);
        }
        out.candidates = candidates;
        out.pair_prefixes = pair_prefixes;
        out.strata = strata;
        out
    }
}

impl ReviewIndexColumns {
    /// The rows as objects again, as [`ReviewIndex`] lists them.
    pub fn rows(&self) -> Vec<ReviewRow> {
        let mut rows: Vec<ReviewRow> = (0..self.item_ids.len())
            .map(|at| {
                let c = self.candidate[at] as usize;
                ReviewRow {
                    pair_id: format!("{}{}", self.pair_prefixes[c], self.item_ids[at]),
                    candidate: self.candidates[c].clone(),
                    item_id: self.item_ids[at].clone(),
                    strata: self.stratum[at].map(|s| self.strata[s as usize]),
                    disagreement: true,
                    label: None,
                    note: None,
                    candidate_is_a: None,
                    unblinded: false,
                }
            })
            .collect();
        for &at in &self.agreeing_rows {
            rows[at as usize].disagreement = false;
        }
        for l in &self.labels {
            let row = &mut rows[l.row as usize];
            row.label = l.label;
            row.note = l.note.clone();
            row.candidate_is_a = l.candidate_is_a;
            row.unblinded = l.unblinded;
        }
        rows
    }
}

/// The sha256 of a prompt as recorded: 32 bytes when it is 64 hex digits (no allocation per
/// row), else the text as stored.
#[derive(PartialEq)]
enum PromptDigest {
    Bytes([u8; 32]),
    Text(Box<str>),
}

impl PromptDigest {
    fn of(hex: &str) -> PromptDigest {
        let mut out = [0u8; 32];
        let b = hex.as_bytes();
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        if b.len() == 64 {
            let mut ok = true;
            for (k, o) in out.iter_mut().enumerate() {
                match (digit(b[2 * k]), digit(b[2 * k + 1])) {
                    (Some(h), Some(l)) => *o = h << 4 | l,
                    _ => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                return PromptDigest::Bytes(out);
            }
        }
        PromptDigest::Text(hex.into())
    }
}

/// A cell's first pass of an item (lowest run id, then repeat), as the queue lists it.
struct Pass {
    key: (i64, u32),
    prompt: Option<PromptDigest>,
    accepted: bool,
    /// Reason codes, when the filter asks for them.
    reasons: Vec<String>,
}

fn side_from(run_id: i64, s: kvgate_store::StoredRequest) -> Option<ReviewSide> {
    let verdict = s.verdict?;
    Some(ReviewSide {
        ttft_ms: s.record.ttft_ms(),
        e2e_ms: s.record.e2e_ms(),
        completion_tokens: s.record.completion_tokens,
        status: s.record.status.as_str().to_owned(),
        output_text: s.record.output_text,
        accepted: verdict.accepted,
        verdict,
        run_id,
    })
}

fn corpus_of(config_json: &str) -> Option<(String, String)> {
    let v: Value = serde_json::from_str(config_json).ok()?;
    let c = &v["corpus"];
    Some((
        c["dir"].as_str()?.to_owned(),
        c["items_sha256"].as_str()?.to_owned(),
    ))
}

/// Whether two passes were sent the same prompt: unknown (a digest not recorded) counts as the
/// same, as in the analysis.
fn same_prompt<T: PartialEq>(x: &Option<T>, y: &Option<T>) -> bool {
    match (x, y) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// B0's and a candidate's first passes of the same item, both lists sorted by item and walked
/// side by side. Not the same prompt (both digests recorded and different): not a pair, as in the
/// analysis, which lists it as unpaired.
fn paired<'a>(
    b0: &'a [(Box<str>, Pass)],
    cand: &'a [(Box<str>, Pass)],
) -> impl Iterator<Item = (&'a str, &'a Pass, &'a Pass)> + 'a {
    let mut b0_at = b0.iter().peekable();
    cand.iter().filter_map(move |(item, y)| {
        while b0_at.next_if(|(i, _)| i < item).is_some() {}
        let (_, x) = b0_at.next_if(|(i, _)| i == item)?;
        same_prompt(&x.prompt, &y.prompt).then_some((&**item, x, y))
    })
}

/// What the studies overview counts of a study's review: its disagreements and how many of
/// them carry a label. The same pairs as [`App::review_index`], without building its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReviewCounts {
    pub disagreements: u64,
    pub labelled: u64,
}

/// A corpus folder and the items digest a run recorded for it.
type CorpusKey = (String, String);

/// The items of a corpus folder by id, when its items digest is the one a run recorded.
type CorpusItems = Arc<HashMap<String, CorpusItem>>;

/// The last corpus a pair was shown from: consecutive pairs come from the same one.
#[derive(Clone, Default)]
pub(crate) struct ReviewCorpus(Arc<Mutex<Option<(CorpusKey, CorpusItems)>>>);

impl std::fmt::Debug for ReviewCorpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = self
            .0
            .lock()
            .map(|k| k.as_ref().map(|(key, _)| key.clone()));
        f.debug_tuple("ReviewCorpus")
            .field(&kept.ok().flatten())
            .finish()
    }
}

impl ReviewCorpus {
    fn items(&self, key: &(String, String)) -> Result<CorpusItems, String> {
        if let Some((k, items)) = self.0.lock().expect("review corpus").as_ref() {
            if k == key {
                return Ok(items.clone());
            }
        }
        let c = crate::fixtures::open_run_corpus(Path::new(&key.0))
            .map_err(|e| format!("corpus {} not readable: {}", key.0, e.message))?;
        if c.meta.items_sha256 != key.1 {
            return Err(format!(
                "corpus {} has items sha256 {}, the run recorded {}",
                key.0, c.meta.items_sha256, key.1
            ));
        }
        let items: CorpusItems = Arc::new(
            c.items
                .into_iter()
                .map(|i| (i.id().to_owned(), i))
                .collect(),
        );
        // An unreadable corpus is not kept: it is read again, in case it was put back.
        *self.0.lock().expect("review corpus") = Some((key.clone(), items.clone()));
        Ok(items)
    }
}

/// One side of a pair, whole: the run's first judged pass of the item.
#[derive(Clone)]
struct Judged {
    side: ReviewSide,
    prompt: Option<String>,
    corpus: Option<(String, String)>,
    reference: Option<kvgate_store::HarnessReference>,
}

impl App {
    /// The first pass per item of each cell's quality runs (lowest run id, then repeat), without
    /// texts; with the verdicts' reasons when `reasons` asks. Each cell's passes are sorted by
    /// item, so the pairs are a merge of two sorted lists (no hashing of 100,000s of ids).
    async fn first_passes(
        &self,
        study_id: i64,
        reasons: bool,
    ) -> Result<HashMap<String, Vec<(Box<str>, Pass)>>, AppError> {
        let mut out: HashMap<String, Vec<(Box<str>, Pass)>> = HashMap::new();
        for run in self.store.list_runs(study_id).await? {
            if run.kind != RunKind::Quality || run.state == kvgate_store::RunState::Running {
                continue;
            }
            let passes = out.entry(run.cell.clone()).or_default();
            self.store
                .for_each_judged_request(run.id, reasons, |r| {
                    let reasons = r
                        .reasons_json
                        .and_then(|j| serde_json::from_str(j).ok())
                        .unwrap_or_default();
                    passes.push((
                        r.item_id.into(),
                        Pass {
                            key: (run.id, r.repeat),
                            prompt: r.prompt_sha256.map(PromptDigest::of),
                            accepted: r.accepted,
                            reasons,
                        },
                    ));
                })
                .await?;
        }
        for passes in out.values_mut() {
            // By item, then pass: the first of each item is its first pass (a stable sort keeps
            // the plan order of equal passes, as the earlier reading did).
            passes.sort_by(|(a, x), (b, y)| a.cmp(b).then(x.key.cmp(&y.key)));
            passes.dedup_by(|(later, _), (first, _)| later == first);
        }
        Ok(out)
    }

    /// The quality runs of each cell that have ended, by run id: where a pair's sides are read.
    async fn quality_runs(
        &self,
        study_id: i64,
    ) -> Result<HashMap<String, Vec<kvgate_store::RunRecord>>, AppError> {
        let mut out: HashMap<String, Vec<kvgate_store::RunRecord>> = HashMap::new();
        for r in self.store.list_runs(study_id).await? {
            if r.kind == RunKind::Quality && r.state != kvgate_store::RunState::Running {
                out.entry(r.cell.clone()).or_default().push(r);
            }
        }
        for runs in out.values_mut() {
            runs.sort_by_key(|r| r.id);
        }
        Ok(out)
    }

    /// A cell's first judged pass of one item, whole, from the cell's runs in id order.
    async fn judged(
        &self,
        runs: &[kvgate_store::RunRecord],
        item: &str,
    ) -> Result<Option<Judged>, AppError> {
        for run in runs {
            if let Some((request, reference)) = self.store.judged_request(run.id, item).await? {
                let prompt = request.record.prompt_sha256.clone();
                let Some(side) = side_from(run.id, request) else {
                    continue;
                };
                return Ok(Some(Judged {
                    side,
                    prompt,
                    corpus: corpus_of(&run.config_json),
                    reference,
                }));
            }
        }
        Ok(None)
    }

    /// The study's labels by pair id.
    async fn labels_by_pair(
        &self,
        study_id: i64,
    ) -> Result<HashMap<String, kvgate_store::AdjudicationRow>, AppError> {
        Ok(self
            .store
            .adjudications(study_id)
            .await?
            .into_iter()
            .map(|r| (r.pair_id.clone(), r))
            .collect())
    }

    /// The study's blind order seed, recorded on its first use as the window's own write: the
    /// window shows the queue it read with it, so the watch does not report the write and the
    /// window does not read the queue (100,000 rows) a second time.
    async fn review_seed(&self, study_id: i64) -> Result<String, AppError> {
        if let Some(seed) = self.store.recorded_review_seed(study_id).await? {
            return Ok(seed);
        }
        self.own_write(async {
            Ok(self
                .store
                .review_seed(study_id, &Self::seed_for(study_id))
                .await?)
        })
        .await
    }

    fn seed_for(study_id: i64) -> String {
        // Unpredictable to the reviewer, recorded once per study.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        kvgate_core::canonical::sha256_hex(
            format!("{study_id}:{nanos}:{}", std::process::id()).as_bytes(),
        )
    }

    /// The study's review list: one row per disagreement (and, on request, a sample of agreeing
    /// pairs), read without any answer text. Refused until the study's policy is locked: a
    /// disagreement is a result.
    pub async fn review_index(
        &self,
        study_id: i64,
        filter: ReviewFilter,
    ) -> Result<ReviewIndex, AppError> {
        self.open_study(study_id).await?;
        self.require_locked_policy(study_id, "its review queue is not shown")
            .await?;
        let seed = self.review_seed(study_id).await?;
        let mut passes = self.first_passes(study_id, filter.reason.is_some()).await?;
        let labels = self.labels_by_pair(study_id).await?;
        let Some(b0) = passes.remove("B0") else {
            return Ok(ReviewIndex {
                study_id,
                seed,
                rows: Vec::new(),
                disagreements: BTreeMap::new(),
                disagreements_total: 0,
                labelled: labels.len() as u64,
            });
        };
        let mut rows = Vec::new();
        let mut agreeing = Vec::new();
        let mut disagreements = BTreeMap::new();
        let mut cells: Vec<String> = passes.keys().cloned().collect();
        cells.sort();
        for cell in cells {
            let cand = &passes[&cell];
            disagreements.entry(cell.clone()).or_insert(0);
            for (item, x, y) in paired(&b0, cand) {
                let disagreement = x.accepted != y.accepted;
                if disagreement {
                    *disagreements.entry(cell.clone()).or_insert(0) += 1;
                }
                if filter.candidate.as_ref().is_some_and(|c| c != &cell) {
                    continue;
                }
                let strata = ItemStrata::from_item_id(item);
                if filter.strata != SegmentFilter::default()
                    && !filter.strata.matches_item(item, strata.as_ref())
                {
                    continue;
                }
                if let Some(reason) = &filter.reason {
                    if !x.reasons.contains(reason) && !y.reasons.contains(reason) {
                        continue;
                    }
                }
                let id = pair_id(study_id, &cell, item);
                let label = labels.get(&id);
                let row = ReviewRow {
                    candidate_is_a: label.map(|_| candidate_is_a(&seed, &id)),
                    pair_id: id,
                    candidate: cell.clone(),
                    item_id: item.to_owned(),
                    strata,
                    disagreement,
                    label: label.and_then(|l| AdjudicationLabel::parse(&l.label)),
                    note: label.map(|l| l.note.clone()),
                    unblinded: label.is_some_and(|l| l.unblinded),
                };
                if disagreement {
                    rows.push(row);
                } else if filter.agreeing_sample > 0 {
                    // Kept for the sample only: drawing its order hashes every agreeing pair.
                    agreeing.push(row);
                }
            }
        }
        // A sample of agreeing pairs: the first ones in an order drawn from the seed.
        agreeing.sort_by_cached_key(|p| {
            kvgate_core::canonical::sha256_hex(format!("{seed}/{}", p.pair_id).as_bytes())
        });
        agreeing.truncate(filter.agreeing_sample as usize);
        rows.extend(agreeing);
        Ok(ReviewIndex {
            study_id,
            seed,
            rows,
            disagreements_total: disagreements.values().sum(),
            disagreements,
            labelled: labels.len() as u64,
        })
    }

    /// The study's disagreements and how many are labelled (the overview's counts): the pairs
    /// of [`App::review_index`] counted, no row built. Refused until the policy is locked.
    pub async fn review_counts(&self, study_id: i64) -> Result<ReviewCounts, AppError> {
        self.require_locked_policy(study_id, "its review queue is not shown")
            .await?;
        let mut passes = self.first_passes(study_id, false).await?;
        let labels: HashSet<String> = self
            .store
            .adjudications(study_id)
            .await?
            .into_iter()
            .map(|r| r.pair_id)
            .collect();
        let mut counts = ReviewCounts {
            disagreements: 0,
            labelled: 0,
        };
        let Some(b0) = passes.remove("B0") else {
            return Ok(counts);
        };
        for (cell, cand) in &passes {
            for (item, x, y) in paired(&b0, cand) {
                if x.accepted != y.accepted {
                    counts.disagreements += 1;
                    if !labels.is_empty() && labels.contains(&pair_id(study_id, cell, item)) {
                        counts.labelled += 1;
                    }
                }
            }
        }
        Ok(counts)
    }

    /// One pair, whole and blind: both answers (A and B in the study's seeded order), the
    /// fixture item or the harness's prompt and target, and its label. `NotFound` when B0 and
    /// the candidate have not both judged the item with the same prompt.
    pub async fn review_pair(&self, pair: &str) -> Result<ReviewPair, AppError> {
        let Some((study_id, candidate, item)) = parse_pair_id(pair) else {
            return Err(AppError::new(
                ErrorCode::InvalidInput,
                format!("field `pair_id`: expected STUDY:CELL/ITEM_ID, found {pair:?}"),
            ));
        };
        self.open_study(study_id).await?;
        self.require_locked_policy(study_id, "its review queue is not shown")
            .await?;
        let runs = self.quality_runs(study_id).await?;
        let seed = self.review_seed(study_id).await?;
        let label = self.store.adjudication(study_id, pair).await?;
        let of = |cell: &str| runs.get(cell).map_or(&[][..], Vec::as_slice);
        let (x, y) = if candidate == "B0" {
            (None, None)
        } else {
            (
                self.judged(of("B0"), item).await?,
                self.judged(of(candidate), item).await?,
            )
        };
        self.assemble(&seed, pair, candidate, item, x, y, label.as_ref())
    }

    /// A pair from its sides (B0's and the candidate's first judged passes of the item, `None`
    /// when that cell has none) and its label: [`App::review_pair`] reads the sides of one
    /// pair, [`App::for_each_review_pair`] those of hundreds at once.
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        &self,
        seed: &str,
        pair: &str,
        candidate: &str,
        item: &str,
        x: Option<Judged>,
        y: Option<Judged>,
        label: Option<&kvgate_store::AdjudicationRow>,
    ) -> Result<ReviewPair, AppError> {
        let not_found = |why: &str| AppError::not_found(format!("pair {pair} not found: {why}"));
        if candidate == "B0" {
            return Err(not_found("B0 is the baseline, not a candidate"));
        }
        let (Some(x), Some(y)) = (x, y) else {
            return Err(not_found(&format!(
                "B0 and {candidate} have not both judged item {item}"
            )));
        };
        if !same_prompt(&x.prompt, &y.prompt) {
            return Err(not_found(
                "B0 and the candidate were sent different prompts for this item: not a pair",
            ));
        }
        let cand_a = candidate_is_a(seed, pair);
        let disagreement = x.side.accepted != y.side.accepted;
        // The prompt is the same on both sides (a pair's prompt digests are equal).
        let harness = y
            .reference
            .as_ref()
            .or(x.reference.as_ref())
            .map(|r| HarnessItem {
                prompt: r.prompt.clone(),
                target: r.target.clone(),
                needles: kvgate_core::harness::target_needles(&r.target),
                expected: serde_json::from_str(&r.target).ok(),
            });
        let (item_full, team, item_note) = match &y.corpus {
            None if harness.is_some() => (
                None,
                None,
                Some("an evaluation harness's item: its prompt and target below are as the harness recorded them".to_owned()),
            ),
            None => (None, None, Some("the run recorded no corpus".to_owned())),
            Some(key) => match self.review_corpus.items(key) {
                Ok(map) => match map.get(item) {
                    Some(CorpusItem::Generated(i)) => (Some(i.clone()), None, None),
                    Some(CorpusItem::Team(t)) => (
                        None,
                        Some(TeamReviewItem::from(t)),
                        Some("the team's own prompt: its labels, chat and check below are as its corpus holds them".to_owned()),
                    ),
                    None => (None, None, Some(format!("item {item} not in the corpus"))),
                },
                Err(e) => (None, None, Some(e)),
            },
        };
        let (a, b) = if cand_a {
            (y.side, x.side)
        } else {
            (x.side, y.side)
        };
        Ok(ReviewPair {
            pair_id: pair.to_owned(),
            candidate: candidate.to_owned(),
            item_id: item.to_owned(),
            strata: ItemStrata::from_item_id(item),
            disagreement,
            a,
            b,
            item: item_full,
            item_note,
            harness,
            team,
            label: label.and_then(|l| AdjudicationLabel::parse(&l.label)),
            note: label.map(|l| l.note.clone()),
            candidate_is_a: label.map(|_| cand_a),
            unblinded: label.is_some_and(|l| l.unblinded),
        })
    }

    /// The study's review queue with every pair whole: [`App::review_index`]'s rows, each read
    /// by [`App::review_pair`] (the CLI's `review list`; the window reads one pair at a time).
    pub async fn review_queue(
        &self,
        study_id: i64,
        filter: ReviewFilter,
    ) -> Result<ReviewQueue, AppError> {
        let index = self.review_index(study_id, filter).await?;
        let mut pairs = Vec::with_capacity(index.rows.len());
        self.for_each_review_pair(&index, |pair| {
            pairs.push(pair);
            Ok(())
        })
        .await?;
        Ok(ReviewQueue {
            study_id: index.study_id,
            seed: index.seed,
            pairs,
            disagreements: index.disagreements,
            disagreements_total: index.disagreements_total,
            labelled: index.labelled,
        })
    }

    /// Each row of `index` read whole, in the list's order, handed to `each` as it is read (the
    /// CLI's `review list` prints them so, without keeping 100,000 pairs). What every pair of
    /// the study reads alike is read once; each pair is then [`App::review_pair`]'s.
    pub async fn for_each_review_pair(
        &self,
        index: &ReviewIndex,
        each: impl FnMut(ReviewPair) -> Result<(), AppError>,
    ) -> Result<(), AppError> {
        self.for_each_review_pair_read_by(index, 500, each).await
    }

    /// [`App::for_each_review_pair`], reading the sides of `per_read` rows at a time (tests
    /// try the boundaries with a few).
    #[doc(hidden)]
    pub async fn for_each_review_pair_read_by(
        &self,
        index: &ReviewIndex,
        per_read: usize,
        mut each: impl FnMut(ReviewPair) -> Result<(), AppError>,
    ) -> Result<(), AppError> {
        let study_id = index.study_id;
        self.require_locked_policy(study_id, "its review queue is not shown")
            .await?;
        let runs = self.quality_runs(study_id).await?;
        let labels = self.labels_by_pair(study_id).await?;
        // The rows a few hundred at a time: each cell's sides of them in one query per run.
        for rows in index.rows.chunks(per_read.max(1)) {
            let mut sides: HashMap<&str, HashMap<String, Judged>> = HashMap::new();
            let mut cells: Vec<&str> = vec!["B0"];
            for r in rows {
                if !cells.contains(&r.candidate.as_str()) {
                    cells.push(&r.candidate);
                }
            }
            for cell in cells {
                let mut wanted: Vec<&str> = rows
                    .iter()
                    .filter(|r| cell == "B0" || r.candidate == cell)
                    .map(|r| r.item_id.as_str())
                    .collect();
                wanted.sort_unstable();
                wanted.dedup();
                let found = sides.entry(cell).or_default();
                for run in runs.get(cell).map_or(&[][..], Vec::as_slice) {
                    wanted.retain(|i| !found.contains_key(*i));
                    if wanted.is_empty() {
                        break;
                    }
                    // As `judged`: a run whose pass has no verdict leaves the item to the next.
                    for (item, (request, reference)) in
                        self.store.judged_requests(run.id, &wanted).await?
                    {
                        let prompt = request.record.prompt_sha256.clone();
                        if let Some(side) = side_from(run.id, request) {
                            let judged = Judged {
                                side,
                                prompt,
                                corpus: corpus_of(&run.config_json),
                                reference,
                            };
                            found.insert(item, judged);
                        }
                    }
                }
            }
            for r in rows {
                let side = |cell: &str| sides.get(cell).and_then(|m| m.get(&r.item_id)).cloned();
                let pair = self.assemble(
                    &index.seed,
                    &r.pair_id,
                    &r.candidate,
                    &r.item_id,
                    side("B0"),
                    side(&r.candidate),
                    labels.get(&r.pair_id),
                )?;
                each(pair)?;
            }
        }
        Ok(())
    }

    /// Labels a pair (or relabels it): appended to the audit chain; returns the reveal.
    pub async fn label_pair(&self, input: LabelInput) -> Result<LabelOutcome, AppError> {
        let Some((study_id, candidate, item)) = parse_pair_id(&input.pair_id) else {
            return Err(AppError::new(
                ErrorCode::InvalidInput,
                format!(
                    "field `pair_id`: expected STUDY:CELL/ITEM_ID, found {:?}",
                    input.pair_id
                ),
            ));
        };
        self.open_study(study_id).await?;
        self.require_locked_policy(study_id, "no pair can be labelled")
            .await?;
        let by = input.by.trim();
        if by.is_empty() || by.chars().count() > crate::analysis::MAX_AUTHOR_CHARS {
            return Err(AppError::new(
                ErrorCode::InvalidInput,
                format!(
                    "field `by`: expected the reviewer's name, found {:?}",
                    input.by
                ),
            ));
        }
        if input.note.chars().count() > MAX_NOTE_CHARS {
            return Err(AppError::new(
                ErrorCode::InvalidInput,
                format!("field `note`: expected at most {MAX_NOTE_CHARS} characters"),
            ));
        }
        // A cheap existence check: labelling must not reload every judged response.
        let exists = candidate != "B0"
            && self.store.item_judged(study_id, "B0", item).await?
            && self.store.item_judged(study_id, candidate, item).await?;
        if !exists {
            return Err(AppError::not_found(format!(
                "pair {} not found: B0 and {candidate} have not both judged item {item}",
                input.pair_id
            )));
        }
        let seed = self.review_seed(study_id).await?;
        let cand_a = candidate_is_a(&seed, &input.pair_id);
        let revealed = self.store.pair_labelled(study_id, &input.pair_id).await?;
        let mapped = map_label(input.label, cand_a, revealed).map_err(|e| {
            AppError::new(
                ErrorCode::InvalidInput,
                format!("pair {}: {e}", input.pair_id),
            )
        })?;
        // The window shows the label from the outcome: its own write is not a change to read.
        let event = self
            .own_write(async {
                Ok(self
                    .store
                    .record_label(
                        study_id,
                        &input.pair_id,
                        mapped.label.as_str(),
                        &input.note,
                        by,
                        mapped.unblinded,
                        json!({
                            "candidate_shown_as": if cand_a { "A" } else { "B" },
                            "given": input.label.as_str(),
                        }),
                    )
                    .await?)
            })
            .await?;
        Ok(LabelOutcome {
            event,
            candidate_is_a: cand_a,
            candidate: candidate.to_owned(),
            given: input.label,
            label: mapped.label,
            unblinded: mapped.unblinded,
        })
    }

    /// The study's audit chain.
    pub async fn audit_events(&self, study_id: i64) -> Result<Vec<AuditEvent>, AppError> {
        self.open_study(study_id).await?;
        Ok(self.store.audit_events(study_id).await?)
    }

    /// Verifies the chain and compares every stored label with the label the chain records.
    pub async fn verify_audit(&self, study_id: i64) -> Result<AuditReport, AppError> {
        let events = self.audit_events(study_id).await?;
        let chain_break = verify_chain(study_id, &events);
        let mut expected: BTreeMap<String, (&AuditEvent, String, String, bool)> = BTreeMap::new();
        for e in events.iter().filter(|e| e.kind == AuditKind::Label) {
            let label = e.payload["label"].as_str().unwrap_or_default().to_owned();
            let note = e.payload["note"].as_str().unwrap_or_default().to_owned();
            // Labels recorded before the flag existed: a relabel was made after the reveal.
            let unblinded = e.payload["unblinded"]
                .as_bool()
                .unwrap_or(e.previous.is_some());
            expected.insert(e.subject.clone(), (e, label, note, unblinded));
        }
        let mut tampered = Vec::new();
        let rows = self.store.adjudications(study_id).await?;
        for r in &rows {
            match expected.get(&r.pair_id) {
                None => tampered.push(format!(
                    "pair {}: labelled {} in the database, but the audit chain has no label for it",
                    r.pair_id, r.label
                )),
                Some((e, label, note, unblinded)) => {
                    if &r.label != label
                        || &r.note != note
                        || r.event_seq != e.seq
                        || r.labelled_by != e.actor
                    {
                        tampered.push(format!(
                            "pair {}: the database says {} ({:?}) by {} at event {}, the audit chain says {} ({:?}) by {} at event {}: edited outside KV Gate",
                            r.pair_id, r.label, r.note, r.labelled_by, r.event_seq, label, note, e.actor, e.seq
                        ));
                    } else if r.unblinded != *unblinded {
                        tampered.push(format!(
                            "pair {}: the database says its label was given {}, the audit chain says {}: edited outside KV Gate",
                            r.pair_id,
                            if r.unblinded { "after the reveal" } else { "blind" },
                            if *unblinded { "after the reveal" } else { "blind" },
                        ));
                    }
                }
            }
        }
        for pair in expected.keys() {
            if !rows.iter().any(|r| &r.pair_id == pair) {
                tampered.push(format!(
                    "pair {pair}: the audit chain records a label the database no longer holds"
                ));
            }
        }
        Ok(AuditReport {
            study_id,
            events: events.len() as u64,
            intact: chain_break.is_none() && tampered.is_empty(),
            chain_break,
            tampered,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(candidate: &str, item: &str) -> ReviewRow {
        ReviewRow {
            pair_id: pair_id(7, candidate, item),
            candidate: candidate.into(),
            item_id: item.into(),
            strata: ItemStrata::from_item_id(item),
            disagreement: true,
            label: None,
            note: None,
            candidate_is_a: None,
            unblinded: false,
        }
    }

    #[test]
    fn the_columns_give_back_every_row_exactly() {
        let en = "evaluation-11-en-short-end-literal-present-000";
        let de = "evaluation-11-de-short-middle-numeric-present-002";
        let mut rows = vec![
            row("Q8", en),
            row("FP8", de),
            row("Q8", "team/item:7"),
            row("Q8", de),
            row("FP8", en),
            row("FP8", "lm-eval/gsm8k/3"),
        ];
        assert!(rows[2].strata.is_none() && rows[0].strata.is_some());
        rows[1].label = Some(AdjudicationLabel::CandidateRegression);
        rows[1].note = Some("dropped the unit".into());
        rows[1].candidate_is_a = Some(true);
        rows[3].label = Some(AdjudicationLabel::BothWrong);
        rows[3].note = Some(String::new());
        rows[3].candidate_is_a = Some(false);
        rows[3].unblinded = true;
        rows[4].disagreement = false;
        rows[5].disagreement = false;
        rows[5].note = Some("a note without a label".into());
        let index = ReviewIndex {
            study_id: 7,
            seed: "s".into(),
            rows,
            disagreements: BTreeMap::from([("FP8".into(), 1), ("Q8".into(), 3)]),
            disagreements_total: 4,
            labelled: 2,
        };
        let columns = ReviewIndexColumns::from(index.clone());
        assert_eq!(columns.rows(), index.rows);
        assert_eq!(columns.candidates, ["Q8", "FP8"]);
        assert_eq!(columns.pair_prefixes, ["7:Q8/", "7:FP8/"]);
        assert_eq!(columns.strata.len(), 2, "each strata written once");
        assert_eq!(columns.stratum[2], None);
        assert_eq!(columns.agreeing_rows, [4, 5]);
        assert_eq!(
            columns.labels.iter().map(|l| l.row).collect::<Vec<_>>(),
            [1, 3, 5]
        );
        // Through JSON, as the window receives it.
        let text = serde_json::to_string(&columns).unwrap();
        let back: ReviewIndexColumns = serde_json::from_str(&text).unwrap();
        assert_eq!(back.rows(), index.rows);
        // The window's decoder is tested on this very pair (ui/src/lib/ipc/ipc.test.ts): the
        // committed file is what this test writes (`KVGATE_BLESS=1` rewrites it).
        let both = serde_json::json!({ "columns": columns, "index": index });
        let mut want = serde_json::to_string_pretty(&both).unwrap();
        want.push('\n');
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../ui/src/lib/ipc/review-index-columns.json");
        if std::env::var_os("KVGATE_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} is out of date; run with KVGATE_BLESS=1 and commit",
            path.display()
        );
        let empty = ReviewIndexColumns::from(ReviewIndex {
            rows: Vec::new(),
            ..index
        });
        assert!(empty.rows().is_empty() && empty.candidates.is_empty());
    }
}
