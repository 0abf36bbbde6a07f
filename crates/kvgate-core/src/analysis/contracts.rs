//! The error and completion contracts of each class (Check 3), read at one operating point: the
//! policy's target load when the cell has runs there, else the cell's summary point.
//!
//! Both are shares of the class's goodput cohort over every run at the point (requests planned
//! inside the observation interval), so every failure stays in the denominator:
//! - **error rate** = (ended in an error + refused by the server) ÷ cohort;
//! - **completion rate** = ended `ok` by the drain deadline ÷ cohort (errors, refusals, timeouts,
//!   unfinished and late requests are not completions).

use super::points::Point;
use super::*;
use crate::display;

/// Which contract of a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContractKind {
    /// At most `limit` of the cohort ends in an error or a refusal.
    MaxErrorRate,
    /// At least `limit` of the cohort completes `ok` by the drain deadline.
    MinCompletionRate,
}

/// One class's contract, checked at one operating point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct ContractCheck {
    pub class: String,
    pub kind: ContractKind,
    /// The policy's limit, a share.
    pub limit: f64,
    /// Where it was read; absent when the cell has no goodput run.
    pub point: Option<OperatingPoint>,
    pub runs: Vec<i64>,
    /// Errors and refusals (error contract), or completions in time (completion contract).
    pub count: u64,
    /// The class's cohort over the runs at the point.
    pub cohort: u64,
    /// `count ÷ cohort`; absent without a request of the class.
    pub observed: Option<f64>,
    /// Absent without a request of the class: undecided, never a pass.
    pub passes: Option<bool>,
}

impl ContractCheck {
    /// The check in words, for rules and the checklist.
    pub fn describe(&self) -> String {
        let (what, relation) = match self.kind {
            ContractKind::MaxErrorRate => ("error rate", "at most"),
            ContractKind::MinCompletionRate => ("completion rate", "at least"),
        };
        let at = self
            .point
            .as_ref()
            .map_or_else(|| "no operating point".to_owned(), |p| p.describe());
        let Some(observed) = self.observed else {
            return format!(
                "{what} of class `{}`: no request of the class at {at}; the contract ({relation} {}) is undecided",
                self.class,
                display::share(Some(self.limit))
            );
        };
        let (seen, limit) = display::distinct(observed, self.limit, 3, display::share_with);
        let verdict = if self.passes == Some(true) {
            "meets"
        } else {
            "breaks"
        };
        format!(
            "{what} of class `{}`: {seen} ({} of {}) {verdict} the contract of {relation} {limit} at {at}",
            self.class,
            display::count(self.count),
            display::count(self.cohort)
        )
    }
}

/// The point the contracts are read at: the policy's target load when the cell has runs there,
/// else the summary point.
fn judged_point(policy: &Policy, points: &[Point<'_>], summary: Option<usize>) -> Option<usize> {
    let target = policy.target_offered_load_rps.and_then(|rps| {
        points
            .iter()
            .position(|p| p.point.offered == OfferedLoad::Rate { per_s: rps })
    });
    target.or(summary)
}

/// Every contract the policy declares, for one cell.
pub(super) fn contracts(
    policy: &Policy,
    points: &[Point<'_>],
    rows: &[Vec<Vec<RunGoodput>>],
    summary: Option<usize>,
) -> Vec<ContractCheck> {
    let at = judged_point(policy, points, summary);
    let mut out = Vec::new();
    for (k, class) in policy.classes.iter().enumerate() {
        let declared = [
            (ContractKind::MaxErrorRate, class.max_error_rate),
            (ContractKind::MinCompletionRate, class.min_completion_rate),
        ];
        for (kind, limit) in declared {
            let Some(limit) = limit else { continue };
            let per_run: Vec<&RunGoodput> =
                at.map_or_else(Vec::new, |i| rows[i].iter().map(|r| &r[k]).collect());
            let cohort: u64 = per_run.iter().map(|g| g.cohort).sum();
            let count: u64 = per_run
                .iter()
                .map(|g| match kind {
                    ContractKind::MaxErrorRate => g.failed + g.refused,
                    ContractKind::MinCompletionRate => {
                        g.cohort - g.failed - g.refused - g.unfinished - g.misses.after_drain
                    }
                })
                .sum();
            let observed = (cohort > 0).then(|| count as f64 / cohort as f64);
            out.push(ContractCheck {
                class: class.name.clone(),
                kind,
                limit,
                point: at.map(|i| points[i].point.clone()),
                runs: at.map_or_else(Vec::new, |i| {
                    points[i].runs.iter().map(|r| r.run_id).collect()
                }),
                count,
                cohort,
                observed,
                passes: observed.map(|o| match kind {
                    ContractKind::MaxErrorRate => o <= limit,
                    ContractKind::MinCompletionRate => o >= limit,
                }),
            });
        }
    }
    out
}
