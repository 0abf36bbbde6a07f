//! Pairs of B0 and a candidate over the same items: passes, paired rows per stratum and segment, floors.

use std::collections::HashSet;

use super::*;
use crate::pairing::{OutputLength, UnpairedReason};

/// The pair keys of a study: every (item, prompt digest) some cell judged. A pair is a key judged
/// by both sides; rows without an item id or a prompt digest have no key and never pair.
pub(super) struct Keys<'a> {
    /// Per key: the item's id and strata (what the rows by stratum read).
    pub items: Vec<&'a (String, Option<ItemStrata>)>,
    /// Per key: the item index and the prompt index into the study input.
    pub item_of: Vec<u32>,
    pub prompt_of: Vec<u32>,
    /// Per item of the study input: its first key (`NO_KEY` when it has none). An item is
    /// mostly sent with one prompt, so this finds most keys without hashing.
    first_of_item: Vec<u32>,
    /// The keys that are not their item's first (the item sent with another prompt too).
    others: HashMap<u64, u32>,
}

const NO_KEY: u32 = u32::MAX;

impl<'a> Keys<'a> {
    pub fn new(input: &'a StudyInput) -> Keys<'a> {
        let mut keys = Keys {
            items: Vec::new(),
            item_of: Vec::new(),
            prompt_of: Vec::new(),
            first_of_item: vec![NO_KEY; input.items.len()],
            others: HashMap::new(),
        };
        let rows = input
            .cells
            .iter()
            .flat_map(|c| &c.runs)
            .flat_map(|r| &r.requests);
        for r in rows.filter(|r| r.accepted.is_some()) {
            let (Some(item), Some(prompt)) = (r.item, r.prompt) else {
                continue;
            };
            if keys.find(item, prompt).is_some() {
                continue;
            }
            let next = keys.items.len() as u32;
            match keys.first_of_item.get_mut(item as usize) {
                Some(first) if *first == NO_KEY => *first = next,
                _ => {
                    keys.others.insert(key(item, prompt), next);
                }
            }
            keys.items.push(&input.items[item as usize]);
            keys.item_of.push(item);
            keys.prompt_of.push(prompt);
        }
        keys
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn of(&self, r: &RequestRow) -> Option<usize> {
        self.find(r.item?, r.prompt?)
    }

    fn find(&self, item: u32, prompt: u32) -> Option<usize> {
        match self.first_of_item.get(item as usize) {
            Some(&k) if k != NO_KEY && self.prompt_of[k as usize] == prompt => Some(k as usize),
            // An item's other keys, and any item the study input does not list.
            _ => self.others.get(&key(item, prompt)).map(|&k| k as usize),
        }
    }
}

fn key(item: u32, prompt: u32) -> u64 {
    (u64::from(item) << 32) | u64::from(prompt)
}

/// The row a cell's first pass judged each key with: the lowest (run id, repeat) judging it.
pub(super) fn first_rows<'a>(cell: &'a CellInput, keys: &Keys) -> Vec<Option<&'a RequestRow>> {
    let mut out = vec![None; keys.len()];
    let mut order: Vec<&RunInput> = cell.runs.iter().collect();
    order.sort_by_key(|r| r.run_id);
    let mut best: Vec<Option<(i64, u32)>> = vec![None; keys.len()];
    for run in order {
        for r in run.requests.iter().filter(|r| r.accepted.is_some()) {
            let Some(k) = keys.of(r) else {
                continue;
            };
            let at = (run.run_id, r.repeat);
            if best[k].is_none_or(|b| at < b) {
                best[k] = Some(at);
                out[k] = Some(r);
            }
        }
    }
    out
}

/// First pass of a cell: per key, whether it was accepted.
pub(super) fn first_pass(cell: &CellInput, keys: &Keys) -> Vec<Option<bool>> {
    verdicts(&first_rows(cell, keys))
}

pub(super) fn verdicts(rows: &[Option<&RequestRow>]) -> Vec<Option<bool>> {
    rows.iter().map(|r| r.and_then(|r| r.accepted)).collect()
}

/// The output-length class of B0's first-pass answer to each key: the stratum of its pairs.
pub(super) fn output_lengths(rows: &[Option<&RequestRow>]) -> Vec<OutputLength> {
    rows.iter()
        .map(|r| OutputLength::of(r.and_then(|r| r.completion_tokens.get())))
        .collect()
}

/// Second pass of a cell: per key, the verdict of the second-earliest (run, repeat) judging it.
/// Of rows judging a key at the same (run, repeat), the first read counts.
pub(super) fn second_pass(cell: &CellInput, keys: &Keys) -> Vec<Option<bool>> {
    // Per key: the earliest and the second-earliest (run, repeat) and their verdicts.
    type Pass = Option<((i64, u32), bool)>;
    let mut passes: Vec<(Pass, Pass)> = vec![(None, None); keys.len()];
    for run in &cell.runs {
        for r in &run.requests {
            let Some(acc) = r.accepted else {
                continue;
            };
            let Some(k) = keys.of(r) else {
                continue;
            };
            let at = (run.run_id, r.repeat);
            let (first, second) = &mut passes[k];
            match (*first, *second) {
                (None, _) => *first = Some((at, acc)),
                (Some((f, _)), _) if at < f => {
                    *second = *first;
                    *first = Some((at, acc));
                }
                (Some((f, _)), _) if at == f => {}
                (_, None) => *second = Some((at, acc)),
                (_, Some((s, _))) if at < s => *second = Some((at, acc)),
                _ => {}
            }
        }
    }
    passes
        .into_iter()
        .map(|(_, second)| second.map(|(_, acc)| acc))
        .collect()
}

/// The marginal strata of a study's keys: each name with the keys it holds, in first-seen order.
#[derive(Default)]
struct Marginals {
    slots: HashMap<String, usize>,
    members: Vec<(String, Vec<usize>)>,
}

impl Marginals {
    fn slot(&mut self, name: String) -> usize {
        let next = self.members.len();
        *self.slots.entry(name).or_insert_with_key(|name| {
            self.members.push((name.clone(), Vec::new()));
            next
        })
    }
}

pub(super) fn count_pairs(
    base: &[Option<bool>],
    cand: &[Option<bool>],
    keep: impl Fn(usize) -> bool,
) -> (u64, u64, u64) {
    let (mut n, mut b, mut c) = (0, 0, 0);
    for (i, (x, y)) in base.iter().zip(cand).enumerate() {
        if let (Some(x), Some(y)) = (x, y) {
            if keep(i) {
                n += 1;
                match (x, y) {
                    (true, false) => b += 1,
                    (false, true) => c += 1,
                    _ => {}
                }
            }
        }
    }
    (n, b, c)
}

/// Paired rows of one candidate against B0: overall, each marginal stratum, each segment. This
/// order is part of the signed quality evidence, so it stays; [`reading_order`] is how they are read.
pub(super) fn paired_rows(
    policy: &Policy,
    items: &[&(String, Option<ItemStrata>)],
    base: &[Option<bool>],
    cand: &[Option<bool>],
    lengths: &[OutputLength],
) -> Vec<PairedRow> {
    let report_margin = policy
        .protected_segments()
        .map(|s| s.margin)
        .fold(f64::INFINITY, f64::min);
    let report_margin = if report_margin.is_finite() {
        report_margin
    } else {
        0.0
    };
    let row = |stratum: String,
               kind,
               protected,
               margin: f64,
               alpha: f64,
               keep: &dyn Fn(usize) -> bool| {
        let (n, b, c) = count_pairs(base, cand, keep);
        let s = paired_stats(b, c, n, margin, alpha).expect("counts and policy values are valid");
        PairedRow {
            stratum,
            kind,
            protected,
            n,
            b,
            c,
            delta: s.delta,
            mcnemar_p: s.mcnemar_p,
            mcnemar_p_holm: None,
            ci_low: s.ci_low,
            ci_high: s.ci_high,
            level: s.level,
            alpha,
            margin,
            verdict: s.verdict,
        }
    };
    let mut rows = vec![row(
        "overall".into(),
        StratumKind::Overall,
        false,
        report_margin,
        policy.alpha,
        &|_| true,
    )];
    let mut marginals = Marginals::default();
    // Items of the same strata share their marginals: named once per strata.
    let mut of_strata: HashMap<ItemStrata, [usize; 5]> = HashMap::new();
    for (i, (id, strata)) in items.iter().enumerate() {
        if let Some(s) = strata {
            let slots = *of_strata
                .entry(*s)
                .or_insert_with(|| s.marginals().map(|m| marginals.slot(m)));
            for k in slots {
                marginals.members[k].1.push(i);
            }
        } else if let Some(labels) = crate::fixtures::team::team_labels_of(id) {
            for m in crate::fixtures::team::team_marginals(&labels) {
                let k = marginals.slot(m);
                marginals.members[k].1.push(i);
            }
        } else if let Some(h) = crate::harness::HarnessStrata::from_item_id(id) {
            for m in h.marginals() {
                let k = marginals.slot(m);
                marginals.members[k].1.push(i);
            }
        }
    }
    // By name, as the signed evidence lists them.
    let marginals: BTreeMap<String, Vec<usize>> = marginals.members.into_iter().collect();
    for (name, members) in marginals {
        let mut set = vec![false; items.len()];
        for i in members {
            set[i] = true;
        }
        rows.push(row(
            name,
            StratumKind::Marginal,
            false,
            report_margin,
            policy.alpha,
            &|i| set[i],
        ));
    }
    let gate_alpha = policy.gate_alpha();
    let first_segment = rows.len();
    for s in &policy.segments {
        let alpha = if s.protected {
            gate_alpha
        } else {
            policy.alpha
        };
        let keep = |i: usize| s.filter.matches_item(&items[i].0, items[i].1.as_ref());
        rows.push(row(
            s.name.clone(),
            StratumKind::Segment,
            s.protected,
            s.margin,
            alpha,
            &keep,
        ));
    }
    let protected: Vec<usize> = (first_segment..rows.len())
        .filter(|&i| rows[i].protected)
        .collect();
    let adjusted = holm(
        &protected
            .iter()
            .map(|&i| rows[i].mcnemar_p)
            .collect::<Vec<_>>(),
    );
    for (&i, p) in protected.iter().zip(adjusted) {
        rows[i].mcnemar_p_holm = Some(p);
    }
    // Last, so the rows before keep the order their signed evidence has; read as a marginal
    // stratum. Only classes some pair falls in.
    for class in OutputLength::ALL {
        let keep = |i: usize| lengths.get(i) == Some(&class);
        let paired = (0..base.len()).any(|i| keep(i) && base[i].is_some() && cand[i].is_some());
        if paired {
            rows.push(row(
                class.stratum(),
                StratumKind::Marginal,
                false,
                report_margin,
                policy.alpha,
                &keep,
            ));
        }
    }
    rows
}

/// How the paired rows of a candidate are read (tables, forest plots): overall, the segments with
/// the protected first (each group in policy order), then the marginal strata by dimension and
/// value as [`crate::policy::strata`] lists them. Returns indices into `rows`.
pub fn reading_order(rows: &[PairedRow]) -> Vec<usize> {
    let strata = crate::policy::strata();
    let marginal = |stratum: &str| {
        let (key, value) = stratum.split_once('=').unwrap_or((stratum, ""));
        let d = strata.iter().position(|d| d.key == key);
        let v = d.and_then(|d| strata[d].values.iter().position(|v| *v == value));
        (d.unwrap_or(strata.len()), v.unwrap_or(usize::MAX))
    };
    let key = |r: &PairedRow| match (r.kind, r.protected) {
        (StratumKind::Overall, _) => (0, 0, 0),
        (StratumKind::Segment, true) => (1, 0, 0),
        (StratumKind::Segment, false) => (2, 0, 0),
        (StratumKind::Marginal, _) => {
            let (d, v) = marginal(&r.stratum);
            (3, d, v)
        }
    };
    let mut order: Vec<usize> = (0..rows.len()).collect();
    // Stable: rows with the same key keep the analysis's order (segments: the policy's).
    order.sort_by_key(|&i| key(&rows[i]));
    order
}

pub(super) fn floors(
    policy: &Policy,
    items: &[&(String, Option<ItemStrata>)],
    pass: &[Option<bool>],
) -> Vec<FloorCheck> {
    policy
        .segments
        .iter()
        .filter_map(|s| {
            let floor = s.floor?;
            let (mut n, mut accepted) = (0, 0);
            for (i, v) in pass.iter().enumerate() {
                if let Some(v) = v {
                    if s.filter.matches_item(&items[i].0, items[i].1.as_ref()) {
                        n += 1;
                        accepted += u64::from(*v);
                    }
                }
            }
            let rate = (n > 0).then(|| accepted as f64 / n as f64);
            Some(FloorCheck {
                segment: s.name.clone(),
                protected: s.protected,
                floor,
                n,
                accepted,
                rate,
                passes: rate.map(|r| r >= floor),
            })
        })
        .collect()
}

/// The paired rows of one candidate against B0 recomputed on the reviewers' adjudications:
/// a labelled pair counts as its label says (`labels` maps an item id to the acceptance of
/// (B0, candidate), `None` for an ambiguous item, which leaves the pair out); unlabelled pairs
/// keep their automatic verdicts. Empty when B0 or the candidate is missing or invalid.
pub fn adjudicated_paired(
    policy: &Policy,
    input: &StudyInput,
    candidate: &str,
    labels: &HashMap<String, Option<(bool, bool)>>,
) -> Vec<PairedRow> {
    let valid = |c: &&CellInput| {
        c.invalid_reasons.is_empty() && !matches!(c.test_cell, TestCell::Invalid { .. })
    };
    let (Some(b0), Some(cand)) = (
        input
            .cells
            .iter()
            .filter(valid)
            .find(|c| c.test_cell == TestCell::B0),
        input
            .cells
            .iter()
            .filter(valid)
            .find(|c| c.cell == candidate && c.test_cell != TestCell::B0),
    ) else {
        return Vec::new();
    };
    let keys = Keys::new(input);
    let b0_rows = first_rows(b0, &keys);
    let lengths = output_lengths(&b0_rows);
    let mut base = verdicts(&b0_rows);
    let mut pass = first_pass(cand, &keys);
    for (i, (id, _)) in keys.items.iter().enumerate() {
        if base[i].is_none() || pass[i].is_none() {
            continue;
        }
        match labels.get(id) {
            None => {}
            Some(Some((x, y))) => {
                base[i] = Some(*x);
                pass[i] = Some(*y);
            }
            Some(None) => {
                base[i] = None;
                pass[i] = None;
            }
        }
    }
    paired_rows(policy, &keys.items, &base, &pass, &lengths)
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// What of `cell` cannot pair, with why: its runs' requests without an item id or without a
/// prompt digest and, for a candidate, every item judged on one side only (against B0) or sent
/// to the two sides with different prompts. Empty for an invalid cell: it is never paired.
/// `base` and `cand`: the first rows ([`first_rows`]) of B0 and of `cell`.
pub(super) fn unpaired(
    input: &StudyInput,
    keys: &Keys,
    cell: &CellInput,
    b0: Option<&CellInput>,
    (base, cand): (&[Option<&RequestRow>], &[Option<&RequestRow>]),
) -> Vec<Unpaired> {
    let mut out = Vec::new();
    let judged_without_prompt = |c: &CellInput| -> HashSet<u32> {
        c.runs
            .iter()
            .flat_map(|r| &r.requests)
            .filter(|r| r.accepted.is_some() && r.prompt.is_none())
            .filter_map(|r| r.item)
            .collect()
    };
    for run in &cell.runs {
        let no_item = run.requests.iter().filter(|r| r.item.is_none()).count();
        if no_item > 0 {
            out.push(Unpaired {
                key: format!("run {}", run.run_id),
                reason: UnpairedReason::NoItemId,
                detail: format!(
                    "{no_item} requests of run {} name no fixture item: they never pair",
                    run.run_id
                ),
            });
        }
        let unknown = run
            .requests
            .iter()
            .filter(|r| r.item.is_some() && r.prompt.is_none() && r.accepted.is_some())
            .count();
        if unknown > 0 {
            out.push(Unpaired {
                key: format!("run {}", run.run_id),
                reason: UnpairedReason::PromptUnknown,
                detail: format!(
                    "{unknown} judged requests of run {} carry no prompt digest, so no pair can prove the same prompt: {}",
                    run.run_id,
                    run.prompt_note
                        .as_deref()
                        .unwrap_or("the run recorded none")
                ),
            });
        }
    }
    let Some(b0) = b0.filter(|_| cell.test_cell != TestCell::B0) else {
        return out;
    };
    // Per item, the keys judged by one side only.
    let mut one_sided: BTreeMap<&str, (Vec<usize>, Vec<usize>, u32)> = BTreeMap::new();
    for k in 0..keys.len() {
        let entry = || (Vec::new(), Vec::new(), keys.item_of[k]);
        match (base[k].is_some(), cand[k].is_some()) {
            (true, false) => one_sided
                .entry(keys.items[k].0.as_str())
                .or_insert_with(entry)
                .0
                .push(k),
            (false, true) => one_sided
                .entry(keys.items[k].0.as_str())
                .or_insert_with(entry)
                .1
                .push(k),
            _ => {}
        }
    }
    let (b_unknown, c_unknown) = (judged_without_prompt(b0), judged_without_prompt(cell));
    let digests = |ks: &[usize]| {
        ks.iter()
            .map(|&k| format!("{}…", short(&input.prompts[keys.prompt_of[k] as usize])))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let name = &cell.cell;
    for (id, (b_only, c_only, item)) in one_sided {
        let (reason, detail) = if !b_only.is_empty() && !c_only.is_empty() {
            (
                UnpairedReason::PromptDiffers,
                format!(
                    "sent to B0 with prompt sha256 {} and to {name} with {}: the same item id, not the same prompt",
                    digests(&b_only),
                    digests(&c_only)
                ),
            )
        } else if !b_only.is_empty() && c_unknown.contains(&item) {
            (
                UnpairedReason::PromptUnknown,
                format!("judged by {name} without a prompt digest: the same prompt is not proven"),
            )
        } else if !b_only.is_empty() {
            (
                UnpairedReason::BaselineOnly,
                format!(
                    "judged by B0 only (prompt sha256 {}): not sent to {name} with that prompt",
                    digests(&b_only)
                ),
            )
        } else if b_unknown.contains(&item) {
            (
                UnpairedReason::PromptUnknown,
                "judged by B0 without a prompt digest: the same prompt is not proven".to_owned(),
            )
        } else {
            (
                UnpairedReason::CandidateOnly,
                format!(
                    "judged by {name} only (prompt sha256 {}): not sent to B0 with that prompt",
                    digests(&c_only)
                ),
            )
        };
        out.push(Unpaired {
            key: id.to_owned(),
            reason,
            detail,
        });
    }
    out
}
