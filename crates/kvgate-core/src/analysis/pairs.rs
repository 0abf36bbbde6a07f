//! Pairs of B0 and a candidate over the same items: passes, paired rows per stratum and segment, floors.

use super::*;

/// First pass of a cell: per item, whether it was accepted.
pub(super) fn first_pass(cell: &CellInput, items: usize) -> Vec<Option<bool>> {
    let mut out = vec![None; items];
    let mut order: Vec<&RunInput> = cell.runs.iter().collect();
    order.sort_by_key(|r| r.run_id);
    let mut best: Vec<Option<(i64, u32)>> = vec![None; items];
    for run in order {
        for r in &run.requests {
            let (Some(i), Some(acc)) = (r.item, r.accepted) else {
                continue;
            };
            let i = i as usize;
            let key = (run.run_id, r.repeat);
            if best[i].is_none_or(|b| key < b) {
                best[i] = Some(key);
                out[i] = Some(acc);
            }
        }
    }
    out
}

/// Second pass of a cell: per item, the verdict of the second-earliest (run, repeat) judging it.
pub(super) fn second_pass(cell: &CellInput, items: usize) -> Vec<Option<bool>> {
    let mut passes: Vec<Vec<((i64, u32), bool)>> = vec![Vec::new(); items];
    for run in &cell.runs {
        for r in &run.requests {
            if let (Some(i), Some(acc)) = (r.item, r.accepted) {
                passes[i as usize].push(((run.run_id, r.repeat), acc));
            }
        }
    }
    passes
        .into_iter()
        .map(|mut p| {
            p.sort_by_key(|x| x.0);
            p.dedup_by_key(|x| x.0);
            p.get(1).map(|x| x.1)
        })
        .collect()
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
    items: &[(String, Option<ItemStrata>)],
    base: &[Option<bool>],
    cand: &[Option<bool>],
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
    let mut marginals: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, (_, strata)) in items.iter().enumerate() {
        if let Some(s) = strata {
            for m in s.marginals() {
                marginals.entry(m).or_default().push(i);
            }
        }
    }
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
        let keep = |i: usize| items[i].1.as_ref().is_some_and(|st| s.filter.matches(st));
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
    items: &[(String, Option<ItemStrata>)],
    pass: &[Option<bool>],
) -> Vec<FloorCheck> {
    policy
        .segments
        .iter()
        .filter_map(|s| {
            let floor = s.floor?;
            let (mut n, mut accepted) = (0, 0);
            for (i, v) in pass.iter().enumerate() {
                if let (Some(v), Some(st)) = (v, &items[i].1) {
                    if s.filter.matches(st) {
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
    let n_items = input.items.len();
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
    let mut base = first_pass(b0, n_items);
    let mut pass = first_pass(cand, n_items);
    for (i, (id, _)) in input.items.iter().enumerate() {
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
    paired_rows(policy, &input.items, &base, &pass)
}
