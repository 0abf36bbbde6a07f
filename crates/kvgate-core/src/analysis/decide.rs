//! The decision table's suggested outcome for a cell, with every rule that fired.

use super::*;

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

#[allow(clippy::too_many_arguments)] // the gates' inputs, each one named
pub(super) fn decide(
    cell: &CellInput,
    valid: bool,
    paired: &[PairedRow],
    floors: &[FloorCheck],
    total: &RepeatSummary,
    b0_total: Option<&RepeatSummary>,
    b0_floors: &[FloorCheck],
    goodput_not_compared: Option<&str>,
) -> CellDecision {
    let mut d = CellDecision {
        outcome: SuggestedOutcome::CollectMoreEvidence,
        table_decision: table_decision(&cell.test_cell),
        rules: Vec::new(),
        next_experiment: Vec::new(),
        quality_qualifies: None,
        goodput_qualifies: None,
    };
    if !valid {
        d.outcome = SuggestedOutcome::Invalid;
        d.rules.push(
            "invalid cell: compatibility evidence missing or contradicting the manifest; no score"
                .into(),
        );
        d.rules.extend(cell.invalid_reasons.iter().cloned());
        return d;
    }
    if cell.test_cell == TestCell::B0 {
        d.outcome = SuggestedOutcome::Baseline;
        d.rules.push("B0 is retained as the rollback target".into());
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
    let mut breach = false;
    let mut undecided = false;
    for r in paired.iter().filter(|r| r.protected) {
        match r.verdict {
            PairedVerdict::Inferior => {
                breach = true;
                d.rules.push(format!(
                    "protected segment `{}`: inferior (upper bound {} < −{})",
                    r.stratum,
                    fmt(r.ci_high),
                    r.margin
                ));
            }
            PairedVerdict::CollectMoreEvidence => {
                undecided = true;
                d.rules.push(format!(
                    "protected segment `{}`: collect more evidence (n = {}, interval [{}, {}] crosses −{})",
                    r.stratum,
                    r.n,
                    fmt(r.ci_low),
                    fmt(r.ci_high),
                    r.margin
                ));
            }
            PairedVerdict::NonInferior => {}
        }
    }
    let mut baseline_below = Vec::new();
    for f in floors.iter().filter(|f| f.protected) {
        match f.passes {
            Some(false)
                if b0_floors
                    .iter()
                    .any(|b| b.segment == f.segment && b.passes == Some(false)) =>
            {
                baseline_below.push(f.segment.clone());
                d.rules.push(format!(
                    "protected segment `{}`: accepted {} of {} = {} below the floor {}, and B0 is below it too: the floor is not met by the baseline either",
                    f.segment,
                    f.accepted,
                    f.n,
                    fmt(f.rate),
                    f.floor
                ));
            }
            Some(false) => {
                breach = true;
                d.rules.push(format!(
                    "protected segment `{}`: accepted {} of {} = {} below the floor {}",
                    f.segment,
                    f.accepted,
                    f.n,
                    fmt(f.rate),
                    f.floor
                ));
            }
            None => {
                undecided = true;
                d.rules.push(format!(
                    "protected segment `{}`: no judged item for its floor",
                    f.segment
                ));
            }
            Some(true) => {}
        }
    }
    d.quality_qualifies = if breach {
        Some(false)
    } else if undecided {
        None
    } else {
        Some(true)
    };
    // Goodput gate.
    d.goodput_qualifies = match (total.mean, b0_total.and_then(|b| b.mean)) {
        // Not the same operating point or arrivals: shown side by side, never compared.
        _ if goodput_not_compared.is_some() => {
            d.rules.push(format!(
                "goodput not compared with B0: {}",
                goodput_not_compared.unwrap_or_default()
            ));
            None
        }
        (Some(c), Some(b)) if c <= b => {
            d.rules
                .push(format!("useful goodput {c} /s does not exceed B0's {b} /s"));
            Some(false)
        }
        (Some(c), Some(b)) => match (total.ci_low, b0_total.and_then(|x| x.ci_high)) {
            (Some(lo), Some(hi)) if lo > hi => {
                d.rules.push(format!(
                    "useful goodput {c} /s exceeds B0's {b} /s beyond repeat variation"
                ));
                Some(true)
            }
            (Some(_), Some(_)) => {
                d.rules.push(format!(
                    "useful goodput {c} /s above B0's {b} /s but within repeat variation"
                ));
                Some(false)
            }
            _ => {
                d.rules
                    .push("fewer than 2 repeats on a side: goodput variation unknown".into());
                None
            }
        },
        _ => {
            d.rules
                .push("no goodput measured for the candidate or for B0".into());
            None
        }
    };
    if !breach && !baseline_below.is_empty() {
        // Below a floor B0 does not meet either: not a regression of the candidate, and no
        // reason to promote it. The simpler baseline stays; the floor needs another remedy.
        d.quality_qualifies = Some(false);
        d.rules.push(
            "the candidate cannot qualify below a protected floor; B0 misses it too, so this is not a regression: retain the simpler baseline"
                .into(),
        );
        d.outcome = SuggestedOutcome::Retain;
        return d;
    }
    d.outcome = match (d.quality_qualifies, d.goodput_qualifies) {
        (Some(false), _) => {
            d.next_experiment = NEXT_AFTER_REGRESSION
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            if matches!(cell.test_cell, TestCell::C1) {
                d.rules
                    .push("C1: reject on any protected-segment gate breach; calibrate next".into());
                SuggestedOutcome::Calibrate
            } else {
                d.rules.push(
                    "a protected segment regressed after the intervention: roll back to B0".into(),
                );
                SuggestedOutcome::Rollback
            }
        }
        (None, _) => SuggestedOutcome::CollectMoreEvidence,
        (Some(true), Some(true)) => {
            d.rules.push("quality and goodput both qualify".into());
            SuggestedOutcome::Promote
        }
        (Some(true), Some(false)) => {
            d.rules.push(
                "quality holds but goodput does not improve: retain the simpler baseline".into(),
            );
            SuggestedOutcome::Retain
        }
        (Some(true), None) => SuggestedOutcome::CollectMoreEvidence,
    };
    d
}

pub(super) fn fmt(v: Option<f64>) -> String {
    v.map_or_else(|| "absent".into(), |x| format!("{x}"))
}
