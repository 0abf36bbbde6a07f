//! Useful goodput: one group per cell, one bar per class (the mean over runs) with the 95%
//! repeat interval as a whisker. An invalid cell gets a group without bars (it has no score);
//! an absent mean is written "absent", never drawn at 0.

use super::axis::{self, Scale};
use super::svg::{self, Anchor, Svg, Swatch, DANGER, MUTED, TEXT};
use super::{text, ChartMark, Drawn, NotDrawn};
use crate::analysis::StudyAnalysis;

const WIDTH: f64 = 640.0;
const PLOT_HEIGHT: f64 = 184.0;

pub(super) fn draw(a: &StudyAnalysis) -> Drawn {
    let cells = &a.body.cells;
    // Policy classes first, then any other a cell has (e.g. "(unclassified)").
    let mut classes: Vec<&str> = a.body.classes.iter().map(String::as_str).collect();
    for c in cells {
        for k in c.goodput.keys() {
            if !classes.contains(&k.as_str()) {
                classes.push(k);
            }
        }
    }
    let max = cells
        .iter()
        .filter(|c| c.valid)
        .flat_map(|c| c.goodput.values())
        .flat_map(|g| [g.repeats.mean, g.repeats.ci_high])
        .flatten()
        .fold(0.0, f64::max);
    let hi = axis::upper(max, 1.1);
    let width = WIDTH.max(68.0 + cells.len() as f64 * 72.0);
    let (left, right) = (56.0, width - 12.0);
    let top = svg::HEADER + 26.0;
    let bottom = top + PLOT_HEIGHT;
    let y = Scale::new((0.0, hi), (bottom, top));

    let mut body = Svg::new();
    axis::y_grid(
        &mut body,
        &y,
        &axis::nice_ticks(0.0, hi, 5),
        left,
        right,
        axis::plain,
    );
    body.line(left, bottom, right, bottom, svg::AXIS, "");
    body.text(12.0, top - 12.0, Anchor::Start, MUTED, "", "good / s");

    let drawn: Vec<&str> = classes
        .iter()
        .copied()
        .filter(|k| cells.iter().any(|c| c.valid && c.goodput.contains_key(*k)))
        .collect();
    let group_width = (right - left) / cells.len().max(1) as f64;
    let bar_width = 28.0f64.min(group_width * 0.8 / drawn.len().max(1) as f64);
    let mut marks = Vec::new();
    let mut not_drawn = Vec::new();
    let mut slo_only = false;
    for (gi, c) in cells.iter().enumerate() {
        let gx = left + gi as f64 * group_width;
        body.text(
            gx + group_width / 2.0,
            bottom + 16.0,
            Anchor::Middle,
            TEXT,
            "font-weight=\"600\"",
            &c.cell,
        );
        if !c.valid {
            body.text(
                gx + group_width / 2.0,
                bottom - 8.0,
                Anchor::Middle,
                DANGER,
                "",
                "invalid — no score",
            );
            not_drawn.push(NotDrawn {
                cell: c.cell.clone(),
                why: "invalid — no score".to_owned(),
            });
            continue;
        }
        if c.goodput.is_empty() {
            not_drawn.push(NotDrawn {
                cell: c.cell.clone(),
                why: "no goodput measured".to_owned(),
            });
            continue;
        }
        let inner = bar_width * drawn.len() as f64;
        for (bi, k) in drawn.iter().enumerate() {
            let Some(g) = c.goodput.get(*k) else {
                continue;
            };
            let r = &g.repeats;
            let bx = gx + (group_width - inner) / 2.0 + bi as f64 * bar_width;
            let bw = bar_width - 2.0;
            let words = format!(
                "{} · {k}: {}{}, 95% repeat interval {}, n = {} runs",
                c.cell,
                text::rate(r.mean, "good/s"),
                if g.slo_only { " (SLO-only)" } else { "" },
                text::rate_range(r.ci_low, r.ci_high),
                text::count(r.n)
            );
            body.group(&words);
            let shade = svg::class_shade(&drawn, k);
            match r.mean {
                Some(mean) => {
                    let extra = if g.slo_only {
                        slo_only = true;
                        format!("fill-opacity=\"0.45\" stroke=\"{shade}\" stroke-dasharray=\"3 2\"")
                    } else {
                        String::new()
                    };
                    // A measured 0 stays visible, apart from an absent mean.
                    let h = (bottom - y.at(mean)).max(2.0);
                    body.rect(bx, bottom - h, bw, h, shade, &extra);
                }
                None => body.text(
                    bx + bw / 2.0,
                    bottom - 4.0,
                    Anchor::Middle,
                    MUTED,
                    &format!("font-size=\"{}\"", svg::SMALL),
                    text::ABSENT,
                ),
            }
            if let (Some(low), Some(high)) = (r.ci_low, r.ci_high) {
                let (y0, y1, mid) = (y.at(low.max(0.0)), y.at(high), bx + bw / 2.0);
                body.line(mid, y0, mid, y1, TEXT, "");
                body.line(bx + 2.0, y0, bx + bw - 2.0, y0, TEXT, "");
                body.line(bx + 2.0, y1, bx + bw - 2.0, y1, TEXT, "");
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
    let mut legend: Vec<(Swatch, String)> = drawn
        .iter()
        .map(|k| (Swatch::Square(svg::class_shade(&drawn, k)), (*k).to_owned()))
        .collect();
    if slo_only {
        legend.push((
            Swatch::PaleSquare(svg::class_shade(&drawn, drawn[0])),
            "SLO-only".to_owned(),
        ));
    }
    let legend_height = svg::legend(&mut body, left, bottom + 40.0, right, &legend);
    let height = bottom + 40.0 + legend_height + svg::FOOTER;

    let title = "Useful goodput per cell and class (good requests per second)".to_owned();
    let note = "Bars: the mean over runs; whiskers: the 95% repeat interval. Pale dashed bars are \
                SLO-only: those runs had no verdicts, so answer quality was not counted."
        .to_owned();
    Drawn {
        body,
        id: "goodput".to_owned(),
        title,
        choice: "useful goodput".to_owned(),
        width,
        height,
        marks,
        not_drawn,
        note,
    }
}
