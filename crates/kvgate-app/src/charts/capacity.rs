//! Capacity against quality: a capacity figure (engine KV tokens or the most running requests)
//! on x, the cell's accepted share of offered requests on y, one point per valid cell. A cell
//! without the figure or without offered requests is listed, never plotted at 0.

use super::axis::{self, Scale};
use super::svg::{self, Anchor, Svg, MUTED, TEXT};
use super::{cell_names, text, CapacityAxis, ChartMark, Drawn, NotDrawn};
use crate::analysis::StudyAnalysis;

const WIDTH: f64 = 640.0;
const PLOT_HEIGHT: f64 = 220.0;

impl CapacityAxis {
    fn label(self) -> &'static str {
        match self {
            CapacityAxis::EngineKvTokens => "engine KV capacity (tokens)",
            CapacityAxis::RunningMax => "running requests, max",
        }
    }

    fn absent(self) -> &'static str {
        match self {
            CapacityAxis::EngineKvTokens => "KV capacity absent",
            CapacityAxis::RunningMax => "running max absent",
        }
    }

    fn slug(self) -> &'static str {
        match self {
            CapacityAxis::EngineKvTokens => "kv-tokens",
            CapacityAxis::RunningMax => "running-max",
        }
    }
}

pub(super) fn draw(a: &StudyAnalysis, axis_kind: CapacityAxis) -> Drawn {
    let names = cell_names(a);
    let mut points = Vec::new();
    let mut not_drawn = Vec::new();
    for c in &a.body.cells {
        let figure = match axis_kind {
            CapacityAxis::EngineKvTokens => c.capacity.engine_kv_tokens.map(|t| t as f64),
            CapacityAxis::RunningMax => c.capacity.running_max,
        };
        let why = if !c.valid {
            "invalid — no score"
        } else {
            match (figure, c.accepted_share) {
                (None, _) => axis_kind.absent(),
                (_, None) => "no offered requests",
                (Some(xv), Some(yv)) => {
                    points.push((c, xv, yv));
                    continue;
                }
            }
        };
        not_drawn.push(NotDrawn {
            cell: c.cell.clone(),
            why: why.to_owned(),
        });
    }
    let x_hi = axis::upper(points.iter().map(|p| p.1).fold(0.0, f64::max), 1.1);
    let (left, right) = (56.0, WIDTH - 16.0);
    let top = svg::HEADER + 24.0;
    let bottom = top + PLOT_HEIGHT;
    let x = Scale::new((0.0, x_hi), (left, right));
    let y = Scale::new((0.0, 1.0), (bottom, top));

    let mut body = Svg::new();
    axis::x_grid(
        &mut body,
        &x,
        &axis::nice_ticks(0.0, x_hi, 5),
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
    body.text(
        12.0,
        top - 12.0,
        Anchor::Start,
        MUTED,
        "",
        "accepted / offered",
    );
    let mut marks = Vec::new();
    for (c, xv, yv) in points {
        let words = format!(
            "{}: {} {}, accepted {} of offered requests",
            c.cell,
            axis_kind.label(),
            text::number(Some(xv)),
            text::share(Some(yv))
        );
        let (px, py) = (x.at(xv), y.at(yv));
        body.group(&words);
        body.circle(px, py, 5.0, svg::cell_colour(&names, &c.cell));
        body.text(px + 8.0, py + 4.0, Anchor::Start, TEXT, "", &c.cell);
        body.end_group();
        marks.push(ChartMark {
            cell: c.cell.clone(),
            class: None,
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
        axis_kind.label(),
    );
    let height = bottom + 44.0 + svg::FOOTER;

    let title = format!("{} against accepted share", axis_kind.label());
    let note = "Accepted answers of every offered request: refusals, failures, timeouts and \
                unfinished requests stay in the denominator."
        .to_owned();
    Drawn {
        body,
        id: format!("capacity-{}", axis_kind.slug()),
        title,
        choice: axis_kind.label().to_owned(),
        width: WIDTH,
        height,
        marks,
        not_drawn,
        note,
    }
}
