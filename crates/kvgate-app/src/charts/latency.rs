//! Latency percentiles: p50 (circle), p90 (square) and p99 (diamond) of one latency, a band per
//! class and a line per valid cell within it, on one linear millisecond axis. A percentile not
//! measured is not drawn; invalid cells are left out (no score).

use kvgate_core::analysis::ClassLatency;
use kvgate_core::stats::Percentiles;

use super::axis::{self, Scale};
use super::svg::{self, Anchor, Svg, Swatch, MUTED, TEXT};
use super::{cell_names, text, ChartMark, Drawn, LatencyMetric, NotDrawn};
use crate::analysis::StudyAnalysis;

const WIDTH: f64 = 640.0;
const LINE: f64 = 16.0;

fn percentiles(l: &ClassLatency, metric: LatencyMetric) -> &Percentiles {
    match metric {
        LatencyMetric::Ttft => &l.ttft_ms,
        LatencyMetric::Itl => &l.itl_ms,
        LatencyMetric::E2e => &l.e2e_ms,
    }
}

pub(super) fn draw(a: &StudyAnalysis, metric: LatencyMetric) -> Drawn {
    let names = cell_names(a);
    let valid: Vec<_> = a.body.cells.iter().filter(|c| c.valid).collect();
    let mut classes: Vec<&str> = a.body.classes.iter().map(String::as_str).collect();
    for c in &valid {
        for k in c.latency.keys() {
            if !classes.contains(&k.as_str()) {
                classes.push(k);
            }
        }
    }
    let shown: Vec<&str> = classes
        .into_iter()
        .filter(|k| valid.iter().any(|c| c.latency.contains_key(*k)))
        .collect();
    let max = valid
        .iter()
        .flat_map(|c| shown.iter().filter_map(|k| c.latency.get(*k)))
        .flat_map(|l| {
            let p = percentiles(l, metric);
            [p.p50, p.p90, p.p99]
        })
        .flatten()
        .fold(0.0, f64::max);
    let hi = axis::upper(max, 1.05);
    let label_width = shown
        .iter()
        .map(|k| svg::text_width(k, svg::BODY))
        .fold(0.0, f64::max);
    let left = (label_width + 24.0).clamp(110.0, 260.0);
    let width = WIDTH.max(left + 430.0);
    let right = width - 16.0;
    let top = svg::HEADER + 8.0;
    let band = valid.len().max(1) as f64 * LINE + 10.0;
    let bottom = top + shown.len().max(1) as f64 * band;
    let x = Scale::new((0.0, hi), (left, right));

    let mut body = Svg::new();
    axis::x_grid(
        &mut body,
        &x,
        &axis::nice_ticks(0.0, hi, 6),
        top,
        bottom,
        axis::plain,
    );
    let mut marks = Vec::new();
    for (bi, k) in shown.iter().enumerate() {
        let y0 = top + bi as f64 * band;
        if bi > 0 {
            body.line(4.0, y0, right, y0, svg::AXIS, "");
        }
        body.text(
            12.0,
            y0 + band / 2.0 + 4.0,
            Anchor::Start,
            TEXT,
            "font-weight=\"600\"",
            k,
        );
        for (ci, c) in valid.iter().enumerate() {
            let Some(l) = c.latency.get(*k) else {
                continue;
            };
            let p = percentiles(l, metric);
            let y = y0 + 5.0 + ci as f64 * LINE + LINE / 2.0;
            let colour = svg::cell_colour(&names, &c.cell);
            let words = format!(
                "{k} · {}: p50 {}, p90 {}, p99 {} (n = {})",
                c.cell,
                text::duration(p.p50),
                text::duration(p.p90),
                text::duration(p.p99),
                text::count(p.count)
            );
            body.group(&words);
            let points: Vec<(usize, f64)> = [p.p50, p.p90, p.p99]
                .into_iter()
                .enumerate()
                .filter_map(|(i, v)| v.map(|v| (i, x.at(v))))
                .collect();
            if let (Some(first), Some(last)) = (points.first(), points.last()) {
                if points.len() > 1 {
                    body.line(first.1, y, last.1, y, colour, "stroke-opacity=\"0.5\"");
                }
            } else {
                body.text(
                    left + 4.0,
                    y + 4.0,
                    Anchor::Start,
                    MUTED,
                    "font-style=\"italic\"",
                    &format!("{}: {}", c.cell, text::ABSENT),
                );
            }
            for (i, px) in points {
                match i {
                    0 => body.circle(px, y, 3.5, colour),
                    1 => body.rect(px - 3.5, y - 3.5, 7.0, 7.0, colour, ""),
                    _ => body.polygon(&svg::diamond(px, y, 4.5), colour),
                }
            }
            body.end_group();
            marks.push(ChartMark {
                cell: c.cell.clone(),
                class: Some((*k).to_owned()),
                stratum: None,
                text: words,
            });
        }
    }
    body.text(
        (left + right) / 2.0,
        bottom + 34.0,
        Anchor::Middle,
        MUTED,
        "",
        &format!("{}, ms", metric.label()),
    );
    let mut legend: Vec<(Swatch, String)> = Vec::new();
    for c in &valid {
        if marks.iter().any(|m| m.cell == c.cell) {
            legend.push((
                Swatch::Square(svg::cell_colour(&names, &c.cell)),
                c.cell.clone(),
            ));
        }
    }
    legend.extend([
        (Swatch::Dot(TEXT), "p50".to_owned()),
        (Swatch::Square(TEXT), "p90".to_owned()),
        (Swatch::Diamond(TEXT), "p99".to_owned()),
    ]);
    let legend_height = svg::legend(&mut body, left, bottom + 56.0, right, &legend);
    let height = bottom + 56.0 + legend_height + svg::FOOTER;

    let mut not_drawn: Vec<NotDrawn> = a
        .body
        .cells
        .iter()
        .filter(|c| !c.valid)
        .map(|c| NotDrawn {
            cell: c.cell.clone(),
            why: "invalid — no score".to_owned(),
        })
        .collect();
    for c in &valid {
        if c.latency.is_empty() {
            not_drawn.push(NotDrawn {
                cell: c.cell.clone(),
                why: "no completed request".to_owned(),
            });
        }
    }
    let title = format!(
        "{} p50, p90 and p99 per class and cell (ms)",
        metric.label()
    );
    let note = "Circle p50, square p90, diamond p99; one line per cell within each class. A \
                percentile not measured is not drawn, never shown as 0."
        .to_owned();
    Drawn {
        body,
        id: format!("latency-{}", metric.slug()),
        title,
        choice: metric.label().to_owned(),
        width,
        height,
        marks,
        not_drawn,
        note,
    }
}
