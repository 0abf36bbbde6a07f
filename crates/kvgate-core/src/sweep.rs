//! A sweep: the same open-loop arrivals offered to several cells at several rates, each
//! (rate, repeat) one operating point's repeat, the cells of each in a seeded random order.
//!
//! Repeat `r` of every cell and every rate draws its Poisson arrivals from the same seed, so the
//! cells' runs at a point are the same arrivals (the analysis compares only those). The cell
//! order is drawn anew for each rate and repeat and recorded, so that no cell always runs first
//! (on a warm machine, or just after another cell filled a shared cache).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::policy::Policy;
use crate::run::{cell_order, CellOrder};

/// One run of a sweep, as its configuration records it (`sweep`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct SweepPlace {
    /// The seed of the sweep.
    #[ts(type = "number")]
    pub seed: u64,
    /// Every offered rate of the sweep, requests per second, in the order run.
    pub rates: Vec<f64>,
    /// This run's rate and its index in `rates`.
    pub rate: f64,
    pub point: u32,
    /// This run's repeat at the point, from 0, and the repeats per point.
    pub repeat: u32,
    pub repeats: u32,
    /// The seed of this repeat's arrivals: the same for every cell and rate.
    #[ts(type = "number")]
    pub arrival_seed: u64,
    /// The cells at this (rate, repeat), in the order run, and this run's place.
    pub cell_order: CellOrder,
}

/// One run to make: a cell at a place of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepStep {
    pub cell: String,
    pub place: SweepPlace,
}

/// What a sweep is asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSpec<'a> {
    pub cells: &'a [String],
    pub rates: &'a [f64],
    pub repeats: u32,
    pub duration_s: f64,
    pub seed: u64,
}

/// Why a sweep cannot be planned: each problem named, with the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepRefused(pub Vec<String>);

impl std::fmt::Display for SweepRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("; "))
    }
}

/// The seed of a (rate, repeat)'s cell order: a different draw for each, reproducible.
fn order_seed(seed: u64, point: u32, repeat: u32) -> u64 {
    // splitmix64 of the three, so that neighbouring points do not share a draw.
    let mut z = seed
        .wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(u64::from(point) + 1))
        .wrapping_add(u64::from(repeat).wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Plans a sweep under the locked policy: every rate in the order given, every repeat, the
/// cells of each in a seeded order. Refused, naming each problem, when a cell or rate is given
/// twice or not at all, a rate is not a positive number, no repeat is asked for, or the duration
/// is shorter than the policy's goodput interval plus its drain deadline (goodput is good
/// requests ÷ the interval: a shorter run would count an interval it never offered).
pub fn plan(spec: &SweepSpec<'_>, policy: &Policy) -> Result<Vec<SweepStep>, SweepRefused> {
    let mut problems = Vec::new();
    if spec.cells.is_empty() {
        problems.push("cells: expected at least one cell, found none".to_owned());
    }
    for (i, c) in spec.cells.iter().enumerate() {
        if spec.cells[..i].contains(c) {
            problems.push(format!("cells: expected each cell once, found {c} again"));
        }
    }
    if spec.rates.is_empty() {
        problems.push("rates: expected at least one rate, found none".to_owned());
    }
    for (i, r) in spec.rates.iter().enumerate() {
        if !(r.is_finite() && *r > 0.0) {
            problems.push(format!(
                "rates: expected requests per second > 0, found {r}"
            ));
        } else if spec.rates[..i].contains(r) {
            problems.push(format!("rates: expected each rate once, found {r} again"));
        }
    }
    if spec.repeats == 0 {
        problems.push("runs per point: expected at least 1, found 0".to_owned());
    }
    let needed = policy.goodput.interval_s + policy.goodput.drain_s;
    if !(spec.duration_s.is_finite() && spec.duration_s >= needed) {
        problems.push(format!(
            "duration: expected at least the policy's goodput interval plus its drain deadline, \
             {} s + {} s = {needed} s (goodput is good requests ÷ the interval), found {} s",
            policy.goodput.interval_s, policy.goodput.drain_s, spec.duration_s
        ));
    }
    if !problems.is_empty() {
        return Err(SweepRefused(problems));
    }
    let mut steps = Vec::new();
    for (point, &rate) in spec.rates.iter().enumerate() {
        for repeat in 0..spec.repeats {
            let order_seed = order_seed(spec.seed, point as u32, repeat);
            let order = cell_order(spec.cells, order_seed);
            for (position, cell) in order.iter().enumerate() {
                steps.push(SweepStep {
                    cell: cell.clone(),
                    place: SweepPlace {
                        seed: spec.seed,
                        rates: spec.rates.to_vec(),
                        rate,
                        point: point as u32,
                        repeat,
                        repeats: spec.repeats,
                        arrival_seed: spec.seed.wrapping_add(u64::from(repeat)),
                        cell_order: CellOrder {
                            seed: order_seed,
                            order: order.clone(),
                            position: position as u32,
                        },
                    },
                });
            }
        }
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(interval: f64, drain: f64) -> Policy {
        Policy::from_json_text(&format!(
            r#"{{"classes": [{{"name": "short", "max_input_tokens": 100, "slo": {{"e2e_ms": 1000}}}}],
                "goodput": {{"interval_s": {interval}, "drain_s": {drain}}},
                "alpha": 0.05,
                "segments": [{{"name": "all", "filter": {{}}, "margin": 0.1, "protected": true}}]}}"#
        ))
        .unwrap()
    }

    fn cells(names: &[&str]) -> Vec<String> {
        names.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn every_cell_runs_every_rate_and_repeat_on_the_same_arrivals_in_a_recorded_order() {
        let c = cells(&["B0", "Q8"]);
        let spec = SweepSpec {
            cells: &c,
            rates: &[0.05, 0.2],
            repeats: 2,
            duration_s: 90.0,
            seed: 7,
        };
        let steps = plan(&spec, &policy(60.0, 30.0)).unwrap();
        assert_eq!(steps.len(), 2 * 2 * 2);
        // Rates in the order given, repeats within a rate.
        let points: Vec<(f64, u32)> = steps
            .iter()
            .map(|s| (s.place.rate, s.place.repeat))
            .collect();
        assert_eq!(
            points,
            [
                (0.05, 0),
                (0.05, 0),
                (0.05, 1),
                (0.05, 1),
                (0.2, 0),
                (0.2, 0),
                (0.2, 1),
                (0.2, 1)
            ]
        );
        // Each (rate, repeat) runs each cell once, at its recorded place in the recorded order.
        for pair in steps.chunks(2) {
            let mut names: Vec<&str> = pair.iter().map(|s| s.cell.as_str()).collect();
            assert_eq!(
                pair[0].place.cell_order,
                CellOrder {
                    position: 0,
                    ..pair[1].place.cell_order.clone()
                }
            );
            assert_eq!(pair[1].place.cell_order.position, 1);
            assert_eq!(pair[0].place.cell_order.order, [names[0], names[1]]);
            names.sort_unstable();
            assert_eq!(names, ["B0", "Q8"]);
            // The same arrivals on both cells of a repeat.
            assert_eq!(pair[0].place.arrival_seed, pair[1].place.arrival_seed);
        }
        // Repeats differ in their arrivals; a repeat's arrivals are the same at every rate.
        assert_ne!(steps[0].place.arrival_seed, steps[2].place.arrival_seed);
        assert_eq!(steps[0].place.arrival_seed, steps[4].place.arrival_seed);
        // The same seed gives the same sweep.
        assert_eq!(steps, plan(&spec, &policy(60.0, 30.0)).unwrap());
    }

    #[test]
    fn the_order_is_drawn_anew_per_point_so_b0_does_not_always_run_first() {
        let c = cells(&["B0", "Q8"]);
        let rates: Vec<f64> = (1..=40).map(f64::from).collect();
        let spec = SweepSpec {
            cells: &c,
            rates: &rates,
            repeats: 1,
            duration_s: 90.0,
            seed: 1,
        };
        let steps = plan(&spec, &policy(60.0, 30.0)).unwrap();
        let b0_first = steps.chunks(2).filter(|p| p[0].cell == "B0").count();
        assert!(
            (8..=32).contains(&b0_first),
            "B0 first at {b0_first} of 40 points"
        );
    }

    #[test]
    fn a_duration_shorter_than_the_interval_and_drain_and_bad_rates_are_refused_together() {
        let c = cells(&["B0", "B0"]);
        let spec = SweepSpec {
            cells: &c,
            rates: &[0.1, 0.1, -1.0, f64::NAN],
            repeats: 0,
            duration_s: 89.0,
            seed: 1,
        };
        let err = plan(&spec, &policy(60.0, 30.0)).unwrap_err();
        assert_eq!(err.0.len(), 6, "{err}");
        assert!(err.0[0].contains("found B0 again"));
        assert!(err.0[1].contains("found 0.1 again"));
        assert!(err.0[2].contains("found -1"));
        assert!(err.0[3].contains("found NaN"));
        assert!(err.0[4].starts_with("runs per point"));
        assert_eq!(
            err.0[5],
            "duration: expected at least the policy's goodput interval plus its drain deadline, \
             60 s + 30 s = 90 s (goodput is good requests ÷ the interval), found 89 s"
        );
        let ok = SweepSpec {
            cells: &c[..1],
            rates: &[0.1],
            repeats: 1,
            duration_s: 90.0,
            seed: 1,
        };
        assert_eq!(plan(&ok, &policy(60.0, 30.0)).unwrap().len(), 1);
    }
}
