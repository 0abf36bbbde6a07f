//! Which runs a cell's goodput summary averages: its goodput runs grouped by operating point,
//! the point the summary is at, and whether a candidate's point and arrivals let it be compared
//! with B0's.

use super::*;
use crate::operating_point::{compare_arrivals, PointArrivals};

/// Goodput runs of a cell at one operating point, by run id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct PointRuns {
    pub point: OperatingPoint,
    pub runs: Vec<i64>,
}

/// A cell's goodput runs at one operating point.
pub(super) struct Point<'a> {
    pub point: OperatingPoint,
    pub runs: Vec<&'a RunInput>,
}

impl Point<'_> {
    pub fn listed(&self) -> PointRuns {
        PointRuns {
            point: self.point.clone(),
            runs: self.runs.iter().map(|r| r.run_id).collect(),
        }
    }

    fn arrivals(&self) -> PointArrivals<'_> {
        PointArrivals {
            identities: self
                .runs
                .iter()
                .filter_map(|r| r.arrivals.identity.as_deref())
                .collect(),
            unidentified: self
                .runs
                .iter()
                .filter(|r| r.arrivals.identity.is_none())
                .map(|r| r.run_id)
                .collect(),
        }
    }
}

/// The runs goodput is computed from, grouped by operating point in the order they first occur.
/// Goodput needs arrivals: unclocked runs are left out, whatever their kind. When a cell has
/// load runs, only they count; otherwise its quality runs do.
pub(super) fn goodput_points(cell: &CellInput) -> Vec<Point<'_>> {
    let clocked = || cell.runs.iter().filter(|r| r.clocked);
    let has_load = clocked().any(|r| r.kind == RunKind::Load);
    let mut out: Vec<Point<'_>> = Vec::new();
    let runs = clocked()
        .filter(|r| !has_load || r.kind == RunKind::Load)
        .filter(|r| !r.requests.is_empty());
    for run in runs {
        // A different client cap is a different experiment at the same rate, never a repeat.
        let point = OperatingPoint {
            offered: run.arrivals.offered.clone(),
            admission_limit: cell.admission_limit,
            client_concurrency: run.arrivals.client_concurrency,
        };
        match out.iter_mut().find(|p| p.point == point) {
            Some(p) => p.runs.push(run),
            None => out.push(Point {
                point,
                runs: vec![run],
            }),
        }
    }
    out
}

/// The point with most runs (the first of equals).
fn most_runs(points: &[Point<'_>]) -> Option<usize> {
    (0..points.len())
        .rev()
        .max_by_key(|&i| points[i].runs.len())
}

/// The point a cell's goodput summary is at. B0: where it has most runs. A candidate: B0's point
/// when it has runs there, else the point shared with B0 with most runs on both sides, else its
/// own point with most runs (then it is not compared).
pub(super) fn summary_point(points: &[Point<'_>], b0: Option<&[Point<'_>]>) -> Option<usize> {
    let Some(b0) = b0 else {
        return most_runs(points);
    };
    if let Some(main) = most_runs(b0) {
        if let Some(i) = points.iter().position(|p| p.point == b0[main].point) {
            return Some(i);
        }
    }
    let shared = (0..points.len())
        .rev()
        .filter_map(|i| {
            let b = b0.iter().find(|b| b.point == points[i].point)?;
            Some((i, points[i].runs.len() + b.runs.len()))
        })
        .max_by_key(|&(_, n)| n)
        .map(|(i, _)| i);
    shared.or_else(|| most_runs(points))
}

/// Whether a candidate's goodput at its summary point is compared with B0's: `None` when either
/// side has no goodput run (nothing to compare).
pub(super) fn comparison(
    cell: &str,
    point: Option<&Point<'_>>,
    b0: &[Point<'_>],
) -> Option<GoodputComparison> {
    let point = point?;
    if b0.is_empty() {
        return None;
    }
    let Some(base) = b0.iter().find(|b| b.point == point.point) else {
        let limits = |p: &Point<'_>| p.point.admission_limit;
        let reason = match (limits(&b0[0]), point.point.admission_limit) {
            (Some(b), Some(c)) if b != c => format!(
                "admission limits differ (B0 {b}, {cell} {c}): cells are compared only at equal admission limits"
            ),
            _ => format!(
                "no operating point in common: B0 measured at {}; {cell} at {}",
                b0.iter()
                    .map(|p| p.point.describe())
                    .collect::<Vec<_>>()
                    .join(" | "),
                point.point.describe()
            ),
        };
        return Some(GoodputComparison {
            comparable: false,
            point: None,
            reason: Some(reason),
        });
    };
    Some(compare_arrivals(
        cell,
        &point.point,
        &point.arrivals(),
        &base.arrivals(),
    ))
}
