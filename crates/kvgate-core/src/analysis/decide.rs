//! The decision table's suggested outcome for a cell, with every rule that fired.

use super::*;
use crate::display;

pub(super) fn table_decision(cell: &TestCell) -> Option<String> {
    let row = match cell {
        TestCell::B0 => 0,
        TestCell::C1 => 1,
        TestCell::C2 => 2,
        TestCell::C3 => 3,
        TestCell::Invalid { .. } => 4,
        TestCell::Custom { .. } => return None,
    };
    Some(DECISION_TABLE[row].decision.to_owned())
}

pub(super) const NEXT_AFTER_REGRESSION: [&str; 3] = [
    "investigate scales: calibrated FP8 (C2) with checkpoint scales whose loading is observed",
    "check the backend's numerical behaviour (attention in the quantized domain, query precision)",
    "try supported selective layer exclusion (C3) before buying the apparent concurrency gain",
];

/// The gates' inputs for one cell, each one named.
pub(super) struct Gates<'a> {
    pub cell: &'a CellInput,
    /// The cell as the decision table reads it (invalid when its evidence says so).
    pub table_cell: &'a TestCell,
    pub valid: bool,
    /// B0 is invalid: nothing is compared against it.
    pub baseline_invalid: bool,
    /// The policy's classes, in order.
    pub classes: &'a [String],
    pub paired: &'a [PairedRow],
    pub floors: &'a [FloorCheck],
    /// The cell's goodput per class at its summary point, and its total.
    pub goodput: &'a BTreeMap<String, ClassGoodput>,
    pub total: &'a RepeatSummary,
    /// B0's goodput per class and total where the candidate is compared.
    pub b0_goodput: Option<(&'a BTreeMap<String, ClassGoodput>, &'a RepeatSummary)>,
    pub b0_floors: &'a [FloorCheck],
    pub goodput_not_compared: Option<&'a str>,
    /// Held-constant findings against B0 (and C1), before interventions.
    pub held: Vec<HeldConstantFinding>,
    pub noise_floor: Option<&'a NoiseFloor>,
    /// The cell's class contracts (error, completion); a broken one keeps its class from
    /// qualifying, whatever its goodput.
    pub contracts: &'a [ContractCheck],
    /// The envelope comparison, when the policy declares a bar and a target load.
    pub envelope: Option<EnvelopeGate<'a>>,
}

/// A candidate's envelope against B0's at the policy's target load.
pub(super) struct EnvelopeGate<'a> {
    pub bar: f64,
    pub target_rps: f64,
    /// Why the runs at the target are not the same arrivals on both sides, when they are not.
    pub arrivals_differ: Option<String>,
    pub candidate: &'a [EnvelopePoint],
    pub candidate_knee: Option<f64>,
    pub b0: &'a [EnvelopePoint],
    pub b0_knee: Option<f64>,
    pub b0_admission_limit: Option<u32>,
}

/// Power the planner is asked for when the quality gate is undecided.
pub(super) const PLANNER_POWER: f64 = 0.8;

pub(super) fn decide(mut g: Gates<'_>) -> CellDecision {
    let cell = g.cell;
    let mut d = CellDecision {
        outcome: SuggestedOutcome::CollectMoreEvidence,
        table_decision: table_decision(g.table_cell),
        rules: Vec::new(),
        next_experiment: Vec::new(),
        quality_qualifies: None,
        goodput_qualifies: None,
        headline: String::new(),
        goodput_by_class: Vec::new(),
        uncontrolled_findings: Vec::new(),
        accepted_findings: Vec::new(),
        pairs_needed: None,
    };
    // Held constant, or named: listed for every candidate, whatever else decides it.
    for f in std::mem::take(&mut g.held) {
        let accepted_by = cell
            .interventions
            .iter()
            .rev()
            .find(|i| i.accepts.iter().any(|a| same_finding(a, &f)));
        match accepted_by {
            Some(i) => d.accepted_findings.push(AcceptedFinding {
                finding: f,
                event: i.event,
                by: i.by.clone(),
                at: i.at.clone(),
                why: i.why.clone(),
            }),
            None => d.uncontrolled_findings.push(f),
        }
    }
    for f in &d.uncontrolled_findings {
        d.rules.push(format!(
            "uncontrolled against {}: `{}`: {}",
            f.against, f.path, f.message
        ));
    }
    for a in &d.accepted_findings {
        d.rules.push(format!(
            "`{}` differs from {}: accepted by the named intervention of {} (audit event {}): {}",
            a.finding.path, a.finding.against, a.by, a.event, a.why
        ));
    }
    let invalid_row = DECISION_TABLE[4].decision;
    if !g.valid {
        d.outcome = SuggestedOutcome::Invalid;
        d.rules.push(
            "invalid cell: compatibility evidence missing or contradicting the manifest; no score"
                .into(),
        );
        d.rules.extend(cell.invalid_reasons.iter().cloned());
        d.headline = if cell.test_cell == TestCell::B0 {
            format!("baseline invalid — {invalid_row}: no candidate is paired, compared or scored against it")
        } else {
            format!("invalid — {invalid_row}")
        };
        return d;
    }
    if cell.test_cell == TestCell::B0 {
        d.outcome = SuggestedOutcome::Baseline;
        d.rules.push("B0 is retained as the rollback target".into());
        d.headline = "baseline — retained as the rollback target".into();
        return d;
    }
    if g.baseline_invalid {
        d.outcome = SuggestedOutcome::BaselineInvalid;
        d.rules.push(format!(
            "B0 is invalid: {} is not paired, compared or given an outcome against it",
            cell.cell
        ));
        d.headline = format!(
            "baseline invalid — B0 is invalid, so {} is not paired, compared or scored",
            cell.cell
        );
        return d;
    }
    if let Some(fit) = cell.capacity.rollback_fit.as_ref().filter(|f| !f.fits) {
        d.rules.push(format!(
            "rollback to B0 does not fit this candidate's admission limit: reduce admission to {} sequences before restoring the larger cache",
            fit.max_sequences_that_fit
        ));
    }
    if matches!(cell.test_cell, TestCell::C3 | TestCell::Custom { .. }) {
        d.rules.push(
            "a distinct intervention: compare the deployment bundles, not a cache-only effect"
                .into(),
        );
    }
    // Quality gate.
    let mut breach = Vec::new();
    let mut undecided = false;
    for r in g.paired.iter().filter(|r| r.protected) {
        match r.verdict {
            PairedVerdict::Inferior => {
                breach.push(r.stratum.clone());
                let (high, margin) = against_margin(r.ci_high, r.margin);
                d.rules.push(format!(
                    "protected segment `{}`: inferior (upper bound {high} < {margin})",
                    r.stratum
                ));
            }
            PairedVerdict::CollectMoreEvidence => {
                undecided = true;
                let needed = pairs_needed(r, g.noise_floor);
                if let Some(n) = needed {
                    d.pairs_needed = Some(d.pairs_needed.map_or(n, |m: u64| m.max(n)));
                }
                d.rules.push(format!(
                    "protected segment `{}`: collect more evidence (n = {}, interval {} crosses {}){}",
                    r.stratum,
                    display::count(r.n),
                    display::pp_interval(r.ci_low, r.ci_high),
                    display::pp(Some(-r.margin)),
                    needed
                        .map(|n| format!("; the planner needs {n} pairs at power {PLANNER_POWER}"))
                        .unwrap_or_default()
                ));
            }
            PairedVerdict::NonInferior => {}
        }
    }
    let mut baseline_below = Vec::new();
    let mut no_floor_evidence = Vec::new();
    for f in g.floors.iter().filter(|f| f.protected) {
        match f.passes {
            Some(false)
                if g.b0_floors
                    .iter()
                    .any(|b| b.segment == f.segment && b.passes == Some(false)) =>
            {
                baseline_below.push(f.segment.clone());
                let (rate, floor) = against_floor(f.rate, f.floor);
                d.rules.push(format!(
                    "protected segment `{}`: accepted {} of {} = {rate} below the floor {floor}, and B0 is below it too: the floor is not met by the baseline either",
                    f.segment,
                    display::count(f.accepted),
                    display::count(f.n)
                ));
            }
            Some(false) => {
                breach.push(f.segment.clone());
                let (rate, floor) = against_floor(f.rate, f.floor);
                d.rules.push(format!(
                    "protected segment `{}`: accepted {} of {} = {rate} below the floor {floor}",
                    f.segment,
                    display::count(f.accepted),
                    display::count(f.n)
                ));
            }
            None => {
                undecided = true;
                no_floor_evidence.push(f.segment.clone());
                d.rules.push(format!(
                    "protected segment `{}`: no judged item for its floor",
                    f.segment
                ));
            }
            Some(true) => {}
        }
    }
    d.quality_qualifies = if !breach.is_empty() {
        Some(false)
    } else if undecided {
        None
    } else {
        Some(true)
    };
    // Goodput gate: per class; the cell total is shown, never gates.
    if let Some(reason) = g.goodput_not_compared {
        // Not the same operating point or arrivals: shown side by side, never compared.
        d.rules
            .push(format!("goodput not compared with B0: {reason}"));
    }
    d.rules
        .extend(g.contracts.iter().map(ContractCheck::describe));
    d.goodput_by_class = class_gates(&g);
    d.goodput_qualifies = if d.goodput_by_class.is_empty() {
        None
    } else if d
        .goodput_by_class
        .iter()
        .any(|c| c.status == GateStatus::DoesNot)
    {
        Some(false)
    } else if d
        .goodput_by_class
        .iter()
        .all(|c| c.status == GateStatus::Qualifies)
    {
        Some(true)
    } else {
        None
    };
    for c in &d.goodput_by_class {
        d.rules.push(format!(
            "goodput of class `{}`: {} — {}",
            c.class,
            match c.status {
                GateStatus::Qualifies => "qualifies",
                GateStatus::DoesNot => "does not qualify",
                GateStatus::Undecided => "undecided",
            },
            c.reason
        ));
    }
    if let (Some(c), Some(b)) = (g.total.mean, g.b0_goodput.and_then(|(_, t)| t.mean)) {
        let (c, b) = against_rate(c, b);
        d.rules.push(format!(
            "cell total {c} against B0's {b}: shown, never gates (each class gates on its own)"
        ));
    }
    let quality_words = {
        match (d.pairs_needed, no_floor_evidence.first()) {
            (Some(n), _) => {
                let have = g
                    .paired
                    .iter()
                    .filter(|r| r.protected && r.verdict == PairedVerdict::CollectMoreEvidence)
                    .map(|r| r.n)
                    .min()
                    .unwrap_or(0);
                format!(
                    "quality undecided: the planner needs {n} paired items per protected segment (power {PLANNER_POWER}); {have} so far"
                )
            }
            (None, Some(seg)) => {
                format!("quality undecided: no judged item for the floor of `{seg}`")
            }
            (None, None) => "quality undecided".to_owned(),
        }
    };
    if !d.uncontrolled_findings.is_empty() {
        let mut against: Vec<&str> = d
            .uncontrolled_findings
            .iter()
            .map(|f| f.against.as_str())
            .collect();
        against.dedup();
        d.rules.push(
            "an uncontrolled comparison is never promoted: hold the fields constant or record a named intervention that accepts them"
                .into(),
        );
        d.headline = format!(
            "uncontrolled comparison — {} differ{} from {}: never promoted; hold constant or record a named intervention",
            d.uncontrolled_findings
                .iter()
                .map(|f| format!("`{}`", f.path))
                .collect::<Vec<_>>()
                .join(", "),
            if d.uncontrolled_findings.len() == 1 { "s" } else { "" },
            against.join(" and ")
        );
        d.outcome = SuggestedOutcome::Uncontrolled;
        return d;
    }
    if breach.is_empty() && !baseline_below.is_empty() {
        // Below a floor B0 does not meet either: not a regression of the candidate, and no
        // reason to promote it. The simpler baseline stays; the floor needs another remedy.
        d.quality_qualifies = Some(false);
        d.rules.push(
            "the candidate cannot qualify below a protected floor; B0 misses it too, so this is not a regression: retain the simpler baseline"
                .into(),
        );
        d.outcome = SuggestedOutcome::Retain;
        d.headline = format!(
            "retain B0 — below the protected floor of {} that B0 misses too: not a regression, and not promotable",
            baseline_below
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return d;
    }
    let goodput_words = {
        let first = d
            .goodput_by_class
            .iter()
            .find(|c| c.status != GateStatus::Qualifies);
        match first {
            Some(c) => format!("class `{}`: {}", c.class, c.reason),
            None => "no goodput measured".to_owned(),
        }
    };
    d.outcome = match (d.quality_qualifies, d.goodput_qualifies) {
        (Some(false), _) => {
            d.next_experiment = NEXT_AFTER_REGRESSION
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            let segments = breach
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if matches!(cell.test_cell, TestCell::C1) {
                d.rules
                    .push("C1: reject on any protected-segment gate breach; calibrate next".into());
                d.headline = format!(
                    "calibrate — protected segment {segments} breached its gate: reject C1 and calibrate next"
                );
                SuggestedOutcome::Calibrate
            } else {
                d.rules.push(
                    "a protected segment regressed after the intervention: roll back to B0".into(),
                );
                d.headline = format!(
                    "roll back — protected segment {segments} breached its gate after the intervention"
                );
                SuggestedOutcome::Rollback
            }
        }
        (None, _) => {
            d.headline = format!("collect more evidence — {}", quality_words);
            SuggestedOutcome::CollectMoreEvidence
        }
        (Some(true), Some(true)) => {
            d.rules
                .push("quality and goodput both qualify, in every class".into());
            d.headline = "promote — quality and goodput both qualify, in every class".into();
            SuggestedOutcome::Promote
        }
        (Some(true), Some(false)) => {
            d.rules.push(
                "quality holds but goodput does not improve: retain the simpler baseline".into(),
            );
            d.headline = format!(
                "retain B0 — quality holds, goodput does not improve ({})",
                goodput_words
            );
            SuggestedOutcome::Retain
        }
        (Some(true), None) => {
            d.headline = format!(
                "collect more evidence — quality holds, goodput undecided ({})",
                goodput_words
            );
            SuggestedOutcome::CollectMoreEvidence
        }
    };
    d
}

/// Whether a recorded acceptance names this finding, with the values it was recorded over.
fn same_finding(a: &HeldConstantFinding, f: &HeldConstantFinding) -> bool {
    a.against == f.against
        && a.path == f.path
        && a.reference_value == f.reference_value
        && a.candidate_value == f.candidate_value
}

/// Paired items the planner needs for an undecided protected row, at the discordance seen (or
/// B0's own flip rate when higher).
fn pairs_needed(r: &PairedRow, noise: Option<&NoiseFloor>) -> Option<u64> {
    let seen = if r.n > 0 {
        (r.b + r.c) as f64 / r.n as f64
    } else {
        0.0
    };
    let psi = seen.max(noise.map_or(0.0, |n| n.flip_rate));
    crate::stats::required_pairs(r.margin, psi, r.alpha, PLANNER_POWER).ok()
}

/// The goodput gate of each class of the policy, then of requests without a class.
fn class_gates(g: &Gates<'_>) -> Vec<ClassGate> {
    let b0 = g.b0_goodput.map(|(classes, _)| classes);
    let mut names: Vec<&str> = g.classes.iter().map(String::as_str).collect();
    let unclassified = |m: Option<&BTreeMap<String, ClassGoodput>>| {
        m.and_then(|m| m.get(UNCLASSIFIED)).map_or(0, |u| u.cohort)
    };
    let (cu, bu) = (unclassified(Some(g.goodput)), unclassified(b0));
    if cu + bu > 0 {
        names.push(UNCLASSIFIED);
    }
    names
        .into_iter()
        .map(|class| {
            let c = g.goodput.get(class);
            let b = b0.and_then(|m| m.get(class));
            let (candidate_per_s, b0_per_s) = (c.and_then(|x| x.per_s), b.and_then(|x| x.per_s));
            let (mut status, mut reason) = class_gate(g, class, c, b, (cu, bu));
            let broken: Vec<String> = g
                .contracts
                .iter()
                .filter(|k| k.class == class && k.passes == Some(false))
                .map(ContractCheck::describe)
                .collect();
            if !broken.is_empty() {
                status = GateStatus::DoesNot;
                reason = format!("{}; {reason}", broken.join("; "));
            }
            ClassGate {
                class: class.to_owned(),
                status,
                reason,
                candidate_per_s,
                b0_per_s,
            }
        })
        .collect()
}

fn class_gate(
    g: &Gates<'_>,
    class: &str,
    c: Option<&ClassGoodput>,
    b: Option<&ClassGoodput>,
    (cu, bu): (u64, u64),
) -> (GateStatus, String) {
    use GateStatus::{DoesNot, Qualifies, Undecided};
    let cell = &g.cell.cell;
    if class == UNCLASSIFIED {
        return (
            Undecided,
            format!(
                "{cu} requests of {cell} and {bu} of B0 have no class (input tokens unknown, from neither the server nor a fixture item, or above every class): they block promote"
            ),
        );
    }
    if let Some(e) = &g.envelope {
        return envelope_gate(g.cell, e, class);
    }
    if let Some(reason) = g.goodput_not_compared {
        return (Undecided, format!("not compared with B0: {reason}"));
    }
    let (Some(c), Some(b)) = (c, b) else {
        return (
            Undecided,
            "no goodput measured for the candidate or for B0".into(),
        );
    };
    if c.cohort == 0 && b.cohort == 0 {
        return (
            Undecided,
            "no request of this class in either cohort".into(),
        );
    }
    if c.slo_only || b.slo_only {
        let side = if c.slo_only { cell.as_str() } else { "B0" };
        return (
            Undecided,
            format!("SLO-only goodput on {side} (a run without verdicts counts SLOs, not answer quality): it never qualifies"),
        );
    }
    let (Some(cm), Some(bm)) = (c.per_s, b.per_s) else {
        return (
            Undecided,
            "no goodput measured for the candidate or for B0".into(),
        );
    };
    let (cs, bs) = against_rate(cm, bm);
    if cm <= bm {
        return (
            DoesNot,
            format!("useful goodput {cs} does not exceed B0's {bs}"),
        );
    }
    match (c.repeats.ci_low, b.repeats.ci_high) {
        (Some(lo), Some(hi)) if lo > hi => (
            Qualifies,
            format!("useful goodput {cs} exceeds B0's {bs} beyond repeat variation"),
        ),
        (Some(_), Some(_)) => (
            DoesNot,
            format!("useful goodput {cs} above B0's {bs} but within repeat variation"),
        ),
        _ => (
            Undecided,
            "fewer than 2 repeats on a side: goodput variation unknown".into(),
        ),
    }
}

/// The class gate on the envelope: at the target load a class qualifies when the candidate's
/// good share reaches the bar and B0's does not, or when the candidate's knee is above B0's;
/// otherwise it does not. A missing point, SLO-only evidence or another admission limit leaves
/// it undecided, named.
fn envelope_gate(cell: &CellInput, e: &EnvelopeGate<'_>, class: &str) -> (GateStatus, String) {
    use GateStatus::{DoesNot, Qualifies, Undecided};
    let name = &cell.cell;
    let target = display::rate(Some(e.target_rps), "req/s");
    if cell.admission_limit != e.b0_admission_limit {
        let limit = |l: Option<u32>| l.map_or_else(|| "unknown".to_owned(), |l| l.to_string());
        return (
            Undecided,
            format!(
                "admission limit {} against B0's {}: cells are compared only at equal admission limits",
                limit(cell.admission_limit),
                limit(e.b0_admission_limit)
            ),
        );
    }
    let at = |points: &[EnvelopePoint], cap: Option<Option<u32>>| {
        points
            .iter()
            .find(|p| {
                p.class == class
                    && p.offered_rps == Some(e.target_rps)
                    && cap.is_none_or(|cap| p.client_concurrency == cap)
            })
            .cloned()
    };
    if let Some(reason) = &e.arrivals_differ {
        return (
            Undecided,
            format!("not compared with B0 at the target load {target}: {reason}"),
        );
    }
    // B0's side under the candidate's client cap: another cap is another experiment.
    let candidate = at(e.candidate, None);
    let baseline = at(e.b0, candidate.as_ref().map(|c| c.client_concurrency));
    let (c, b) = match (candidate, baseline) {
        (Some(c), Some(b)) => (c, b),
        (c, b) => {
            let missing: Vec<&str> = [(c.is_none(), name.as_str()), (b.is_none(), "B0")]
                .into_iter()
                .filter_map(|(m, n)| m.then_some(n))
                .collect();
            return (
                Undecided,
                format!(
                    "no run of {} at the target load {target}: the envelope gate needs that point",
                    missing.join(" or ")
                ),
            );
        }
    };
    if c.slo_only || b.slo_only {
        let side = if c.slo_only { name.as_str() } else { "B0" };
        return (
            Undecided,
            format!("SLO-only goodput on {side} at the target load (a run without verdicts counts SLOs, not answer quality): it never qualifies"),
        );
    }
    // A good share exists exactly when the class had a request in a run's cohort.
    let (cs, bs) = match (c.good_share, b.good_share) {
        (Some(cs), Some(bs)) => (cs, bs),
        (cs, bs) => {
            let on = match (cs, bs) {
                (None, Some(_)) => name.as_str(),
                (Some(_), None) => "B0",
                _ => "either side",
            };
            return (
                Undecided,
                format!("no request of this class at the target load {target} on {on}"),
            );
        }
    };
    let bar = display::share(Some(e.bar));
    let (cs_text, bs_text) = display::distinct(cs, bs, 3, display::share_with);
    // Inside or outside the bar beyond repeat variation: the 95 % interval of the good share
    // over the runs at the point, not its mean alone.
    let side = |r: &RepeatSummary| match (r.ci_low, r.ci_high) {
        (Some(lo), _) if lo >= e.bar => Some(true),
        (_, Some(hi)) if hi < e.bar => Some(false),
        _ => None,
    };
    match (side(&c.good_share_repeats), side(&b.good_share_repeats)) {
        (Some(true), Some(false)) => {
            return (
                Qualifies,
                format!("at the target load {target}: {cs_text} good, at least the bar {bar} beyond repeat variation, where B0 has {bs_text}, below it"),
            );
        }
        (None, _) | (_, None) if cs >= e.bar && bs < e.bar => {
            return (
                Undecided,
                format!("at the target load {target}: {cs_text} good against B0's {bs_text}, the bar {bar} within repeat variation (or fewer than 2 runs a side): collect more runs at the point"),
            );
        }
        _ => {}
    }
    let knees = match (e.candidate_knee, e.b0_knee) {
        (Some(ck), Some(bk)) if ck > bk => {
            let (ck, bk) = against_rate_unit(ck, bk, "req/s");
            return (
                Qualifies,
                format!("knee {ck} above B0's {bk} (every class at least {bar} good)"),
            );
        }
        (Some(ck), None) => {
            return (
                Qualifies,
                format!(
                    "knee {} where B0 has none (every class at least {bar} good)",
                    display::rate(Some(ck), "req/s")
                ),
            )
        }
        (ck, bk) => format!(
            "knee {} against B0's {}",
            display::rate(ck, "req/s"),
            display::rate(bk, "req/s")
        ),
    };
    (
        DoesNot,
        format!("at the target load {target}: {cs_text} good against B0's {bs_text} (bar {bar}); {knees}: not above"),
    )
}

/// A paired difference's bound beside the margin it is compared with, in percentage points,
/// with as many decimals as it takes for different values to read differently.
fn against_margin(bound: Option<f64>, margin: f64) -> (String, String) {
    match bound.filter(|b| b.is_finite()) {
        Some(b) => display::distinct(b, -margin, 3, display::pp_with),
        None => (display::ABSENT.into(), display::pp(Some(-margin))),
    }
}

/// An accepted share beside the floor it is compared with, likewise.
fn against_floor(rate: Option<f64>, floor: f64) -> (String, String) {
    match rate.filter(|r| r.is_finite()) {
        Some(r) => display::distinct(r, floor, 3, display::share_with),
        None => (display::ABSENT.into(), display::share(Some(floor))),
    }
}

/// A candidate's useful goodput beside B0's, likewise.
fn against_rate(c: f64, b: f64) -> (String, String) {
    against_rate_unit(c, b, "good/s")
}

fn against_rate_unit(c: f64, b: f64, unit: &str) -> (String, String) {
    display::distinct(c, b, 4, |v, k| display::rate_with(v, k, unit))
}
