//! The forest plot: Δ accepted share (candidate − B0) with its interval, one row per stratum, on
//! an x axis that always shows 0 and every row's −margin. Rows are read in the analysis's
//! [`reading_order`] (overall, segments with the protected first, marginal strata); the colour is
//! the verdict.

use kvgate_core::analysis::{reading_order, PairedRow, StratumKind};
use kvgate_core::stats::PairedVerdict;

use super::axis::{self, Scale};
use super::svg::{self, Anchor, Svg, Swatch, DANGER, MUTED, OK, TEXT, WARN};
use super::{forest_candidates, text, ChartMark, Drawn};
use crate::analysis::StudyAnalysis;

const ROW: f64 = 22.0;
const WIDTH: f64 = 640.0;

struct Row<'a> {
    cell: &'a str,
    row: &'a PairedRow,
    label: String,
}

fn colour(v: PairedVerdict) -> &'static str {
    match v {
        PairedVerdict::NonInferior => OK,
        PairedVerdict::Inferior => DANGER,
        PairedVerdict::CollectMoreEvidence => WARN,
    }
}

/// The x domain: every bound, Δ, 0 and −margin, padded; Δ is a difference of shares, so it
/// stays within [−1, 1].
fn domain(rows: &[Row<'_>]) -> (f64, f64) {
    let mut values = vec![0.0];
    for r in rows {
        values.push(-r.row.margin);
        values.extend(
            [r.row.ci_low, r.row.ci_high, r.row.delta]
                .into_iter()
                .flatten(),
        );
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.08).max(0.005);
    ((lo - pad).max(-1.0), (hi + pad).min(1.0))
}

pub(super) fn draw(a: &StudyAnalysis, only: Option<&str>, marginals: bool) -> Drawn {
    let rows: Vec<Row<'_>> = forest_candidates(a)
        .filter(|c| only.is_none_or(|o| o == c.cell))
        .flat_map(|c| {
            reading_order(&c.paired)
                .into_iter()
                .map(|i| &c.paired[i])
                .filter(move |r| marginals || r.kind != StratumKind::Marginal)
                .map(move |r| {
                    let name = if r.kind == StratumKind::Overall {
                        "overall"
                    } else {
                        r.stratum.as_str()
                    };
                    let name = if r.protected {
                        format!("{name} (protected)")
                    } else {
                        name.to_owned()
                    };
                    Row {
                        cell: c.cell.as_str(),
                        row: r,
                        label: match only {
                            Some(_) => name,
                            None => format!("{} · {name}", c.cell),
                        },
                    }
                })
        })
        .collect();
    let (id, title, choice) = match only {
        Some(cell) => (
            format!("forest-{cell}{}", if marginals { "-marginals" } else { "" }),
            format!("Paired Δ accepted share, {cell} − B0, per stratum"),
            if marginals {
                "with marginal strata"
            } else {
                "overall and segments"
            }
            .to_owned(),
        ),
        None => (
            "paired-delta".to_owned(),
            "Paired Δ accepted share, each candidate − B0, per stratum".to_owned(),
            "every candidate".to_owned(),
        ),
    };

    let label_width = rows
        .iter()
        .map(|r| svg::text_width(&r.label, svg::BODY))
        .fold(0.0, f64::max);
    let left = (label_width + 16.0).clamp(110.0, 320.0);
    let width = WIDTH.max(left + 430.0);
    let right = width - 16.0;
    let top = svg::HEADER + 28.0;
    let bottom = top + rows.len().max(1) as f64 * ROW;
    let (lo, hi) = domain(&rows);
    let x = Scale::new((lo, hi), (left, right));
    let margins: Vec<f64> = rows.iter().map(|r| r.row.margin).collect();
    let shared = match margins.first() {
        Some(&m) if margins.iter().all(|&o| o == m) => Some(m),
        _ => None,
    };

    let mut body = Svg::new();
    axis::x_grid(
        &mut body,
        &x,
        &axis::nice_ticks(lo, hi, 6),
        top,
        bottom,
        axis::points,
    );
    body.line(
        x.at(0.0),
        top - 6.0,
        x.at(0.0),
        bottom,
        TEXT,
        "stroke-width=\"1.2\"",
    );
    body.text(x.at(0.0), top - 10.0, Anchor::Middle, TEXT, "", "0");
    if let Some(m) = shared {
        body.line(
            x.at(-m),
            top - 6.0,
            x.at(-m),
            bottom,
            DANGER,
            "stroke-dasharray=\"4 3\"",
        );
        body.text(x.at(-m), top - 10.0, Anchor::Middle, DANGER, "", "−margin");
    }
    if rows.is_empty() {
        body.text(
            left + 4.0,
            top + ROW / 2.0 + 4.0,
            Anchor::Start,
            MUTED,
            "",
            "no paired rows: no valid candidate with judged items",
        );
    }
    let mut marks = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let y = top + i as f64 * ROW + ROW / 2.0;
        let p = r.row;
        let c = colour(p.verdict);
        let words = format!(
            "{}: Δ {}, interval {}, −margin {}, {}",
            r.label,
            text::pp(p.delta),
            text::pp_interval(p.ci_low, p.ci_high),
            text::pp(Some(-p.margin)),
            text::verdict(p.verdict)
        );
        body.group(&words);
        let weight = if p.protected {
            "font-weight=\"700\""
        } else {
            ""
        };
        body.text(left - 8.0, y + 4.0, Anchor::End, TEXT, weight, &r.label);
        if shared.is_none() {
            let xm = x.at(-p.margin);
            body.line(xm, y - 8.0, xm, y + 8.0, DANGER, "stroke-width=\"1.5\"");
        }
        if let (Some(l), Some(h)) = (p.ci_low, p.ci_high) {
            let (x0, x1) = (x.at(l), x.at(h));
            let wide = "stroke-width=\"2\"";
            body.line(x0, y, x1, y, c, wide);
            body.line(x0, y - 4.0, x0, y + 4.0, c, wide);
            body.line(x1, y - 4.0, x1, y + 4.0, c, wide);
        }
        match p.delta {
            Some(d) => body.circle(x.at(d), y, 4.0, c),
            None => body.text(
                left + 4.0,
                y + 4.0,
                Anchor::Start,
                MUTED,
                "font-style=\"italic\"",
                &format!("{}: no pairs", text::ABSENT),
            ),
        }
        body.end_group();
        marks.push(ChartMark {
            cell: r.cell.to_owned(),
            class: None,
            stratum: Some(p.stratum.clone()),
            text: words,
        });
    }
    let axis_title = match only {
        Some(cell) => format!("Δ accepted share, {cell} − B0 (percentage points)"),
        None => "Δ accepted share, candidate − B0 (percentage points)".to_owned(),
    };
    body.text(
        (left + right) / 2.0,
        bottom + 34.0,
        Anchor::Middle,
        MUTED,
        "",
        &axis_title,
    );
    let legend = [
        (Swatch::Dot(OK), "non-inferior".to_owned()),
        (Swatch::Dot(DANGER), "inferior".to_owned()),
        (Swatch::Dot(WARN), "collect more evidence".to_owned()),
        (Swatch::Dashed(DANGER), "−margin".to_owned()),
    ];
    let legend_height = svg::legend(&mut body, 12.0, bottom + 56.0, right, &legend);
    let height = bottom + 56.0 + legend_height + svg::FOOTER;

    let note = "Dot: Δ accepted share (candidate − B0); line: its interval; red: −margin, the \
                allowable regression; colour: the verdict. Δ < 0 means the candidate accepted fewer."
        .to_owned();
    Drawn {
        body,
        id,
        title,
        choice,
        width,
        height,
        marks,
        not_drawn: Vec::new(),
        note,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::charts::fixture::row;

    fn paired(patch: serde_json::Value) -> PairedRow {
        serde_json::from_value(row("overall", patch)).unwrap()
    }

    fn domain_of(r: &PairedRow) -> (f64, f64) {
        domain(&[Row {
            cell: "C1",
            row: r,
            label: String::new(),
        }])
    }

    #[test]
    fn the_axis_holds_every_bound_zero_and_minus_margin() {
        let r = paired(json!({"ci_low": -0.05, "ci_high": 0.01, "delta": -0.02, "margin": 0.02}));
        let (lo, hi) = domain_of(&r);
        assert!(lo < -0.05 && hi > 0.01);
        let x = Scale::new((lo, hi), (190.0, 624.0));
        // Positions are linear in Δ: −margin sits where a bound of −0.02 would.
        let unit = (x.at(0.0) - x.at(-0.05)) / 0.05;
        assert!((x.at(0.0) - x.at(-0.02) - 0.02 * unit).abs() < 1e-9);
    }

    #[test]
    fn minus_margin_stays_on_the_axis_when_every_interval_lies_above_it() {
        let r = paired(json!({"ci_low": 0.01, "ci_high": 0.02, "delta": 0.015, "margin": 0.1}));
        assert!(domain_of(&r).0 <= -0.1);
    }

    #[test]
    fn the_axis_stays_within_minus_one_and_one() {
        let r = paired(json!({"ci_low": -1.0, "ci_high": 1.0, "delta": 0.0}));
        assert_eq!(domain_of(&r), (-1.0, 1.0));
    }
}
