//! The latency distribution of one class: one line per valid cell through the analysis's
//! quantiles at 0, 1, …, 100 % (x: ms, y: share of completed requests at or below). A cell
//! without a distribution is listed, not drawn; invalid cells are left out (no score).

use super::axis::{self, Scale};
use super::svg::{self, Anchor, Svg, Swatch, MUTED};
use kvgate_core::analysis::CellAnalysis;

use super::{cell_names, text, CdfMetric, ChartMark, Drawn, NotDrawn};
use crate::analysis::StudyAnalysis;

const WIDTH: f64 = 640.0;
const PLOT_HEIGHT: f64 = 220.0;

pub(super) fn draw(a: &StudyAnalysis, class: &str, metric: CdfMetric) -> Drawn {
    let names = cell_names(a);
    fn quantiles<'c>(c: &'c CellAnalysis, class: &str, metric: CdfMetric) -> &'c [f64] {
        c.latency.get(class).map_or(&[], |l| match metric {
            CdfMetric::Ttft => &l.ttft_cdf_ms,
            CdfMetric::E2e => &l.e2e_cdf_ms,
        })
    }
    let valid: Vec<_> = a.body.cells.iter().filter(|c| c.valid).collect();
    let max = valid
        .iter()
        .flat_map(|c| quantiles(c, class, metric))
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let hi = axis::upper(max, 1.05);
    let (left, right) = (56.0, WIDTH - 16.0);
    let top = svg::HEADER + 12.0;
    let bottom = top + PLOT_HEIGHT;
    let x = Scale::new((0.0, hi), (left, right));
    let y = Scale::new((0.0, 1.0), (bottom, top));

    let mut body = Svg::new();
    axis::x_grid(
        &mut body,
        &x,
        &axis::nice_ticks(0.0, hi, 5),
        top,
        bottom,
        axis::plain,
    );
    axis::y_grid(
        &mut body,
        &y,
        &axis::nice_ticks(0.0, 1.0, 5),
        left,
        right,
        axis::percent,
    );
    let mut marks = Vec::new();
    let mut not_drawn = Vec::new();
    let mut legend = Vec::new();
    for c in &a.body.cells {
        if !c.valid {
            not_drawn.push(NotDrawn {
                cell: c.cell.clone(),
                why: "invalid — no score".to_owned(),
            });
            continue;
        }
        let q = quantiles(c, class, metric);
        if q.len() < 2 {
            not_drawn.push(NotDrawn {
                cell: c.cell.clone(),
                why: "no distribution".to_owned(),
            });
            continue;
        }
        let last = (q.len() - 1) as f64;
        let points: Vec<(f64, f64)> = q
            .iter()
            .enumerate()
            .map(|(i, v)| (x.at(*v), y.at(i as f64 / last)))
            .collect();
        let n = c.latency.get(class).map_or(0, |l| l.count);
        let words = format!("{}: n = {}", c.cell, text::count(n));
        let colour = svg::cell_colour(&names, &c.cell);
        body.group(&words);
        body.polyline(&points, colour, "stroke-width=\"1.8\"");
        body.end_group();
        legend.push((Swatch::Square(colour), c.cell.clone()));
        marks.push(ChartMark {
            cell: c.cell.clone(),
            class: Some(class.to_owned()),
            stratum: None,
            text: words,
        });
    }
    body.text(
        (left + right) / 2.0,
        bottom + 34.0,
        Anchor::Middle,
        MUTED,
        "",
        &format!("{}, ms", metric.latency().label()),
    );
    let legend_height = svg::legend(&mut body, left, bottom + 56.0, right, &legend);
    let height = bottom + 56.0 + legend_height + svg::FOOTER;

    let title = format!(
        "{} distribution of class {class}, per cell",
        metric.latency().label()
    );
    let note = "Share of the class's completed requests at or below each latency.".to_owned();
    Drawn {
        body,
        id: format!("latency-cdf-{class}-{}", metric.latency().slug()),
        title,
        choice: metric.latency().label().to_owned(),
        width: WIDTH,
        height,
        marks,
        not_drawn,
        note,
    }
}
