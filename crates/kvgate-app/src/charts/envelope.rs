//! The operating envelope of one class against offered load: one line per valid cell through its
//! points (x: offered requests per second), for one figure — useful goodput with its 95% repeat
//! interval, the good share against the policy's bar, TTFT or end-to-end p90, or the cost per
//! good response. Each cell's knee and the policy's target load are marked.
//!
//! Points without an offered rate (all at once, a closed loop, a trace) have no place on the
//! axis: they are listed, never drawn at 0; an absent figure leaves a gap in the line.

use kvgate_core::analysis::{CellAnalysis, EnvelopePoint};

use super::axis::{self, Scale};
use super::svg::{self, Anchor, Svg, Swatch, MUTED, TEXT};
use super::{cell_names, text, ChartMark, Drawn, EnvelopeMetric, NotDrawn};
use crate::analysis::StudyAnalysis;

const WIDTH: f64 = 640.0;
const PLOT_HEIGHT: f64 = 220.0;

impl EnvelopeMetric {
    pub const ALL: [EnvelopeMetric; 5] = [
        EnvelopeMetric::Goodput,
        EnvelopeMetric::GoodShare,
        EnvelopeMetric::TtftP90,
        EnvelopeMetric::E2eP90,
        EnvelopeMetric::Cost,
    ];

    pub(super) fn label(self) -> &'static str {
        match self {
            EnvelopeMetric::Goodput => "useful goodput",
            EnvelopeMetric::GoodShare => "good share",
            EnvelopeMetric::TtftP90 => "TTFT p90",
            EnvelopeMetric::E2eP90 => "end-to-end p90",
            EnvelopeMetric::Cost => "cost per good response",
        }
    }

    fn slug(self) -> &'static str {
        match self {
            EnvelopeMetric::Goodput => "goodput",
            EnvelopeMetric::GoodShare => "good-share",
            EnvelopeMetric::TtftP90 => "ttft-p90",
            EnvelopeMetric::E2eP90 => "e2e-p90",
            EnvelopeMetric::Cost => "cost",
        }
    }

    fn axis_label(self) -> &'static str {
        match self {
            EnvelopeMetric::Goodput => "good / s",
            EnvelopeMetric::GoodShare => "good ÷ cohort",
            EnvelopeMetric::TtftP90 | EnvelopeMetric::E2eP90 => "ms",
            EnvelopeMetric::Cost => "cost per good response",
        }
    }

    /// The figure drawn for a point, and its interval where there is one.
    fn of(self, p: &EnvelopePoint) -> (Option<f64>, Option<(f64, f64)>) {
        let interval = |r: &kvgate_core::stats::RepeatSummary| r.ci_low.zip(r.ci_high);
        match self {
            EnvelopeMetric::Goodput => (p.goodput_per_s.mean, interval(&p.goodput_per_s)),
            EnvelopeMetric::GoodShare => (p.good_share, interval(&p.good_share_repeats)),
            EnvelopeMetric::TtftP90 => (p.ttft_ms.p90, None),
            EnvelopeMetric::E2eP90 => (p.e2e_ms.p90, None),
            EnvelopeMetric::Cost => (p.cost_per_good_response, None),
        }
    }

    fn words(self, v: Option<f64>) -> String {
        match self {
            EnvelopeMetric::Goodput => text::rate(v, "good/s"),
            EnvelopeMetric::GoodShare => text::share(v),
            EnvelopeMetric::TtftP90 | EnvelopeMetric::E2eP90 => text::duration(v),
            EnvelopeMetric::Cost => text::number(v),
        }
    }
}

/// Whether a valid cell has a point of `class` at an offered rate: without one there is no
/// envelope of the class to draw.
pub(super) fn has_rates(a: &StudyAnalysis, class: &str) -> bool {
    a.body.cells.iter().any(|c| {
        c.valid
            && c.envelope
                .iter()
                .any(|p| p.class == class && p.offered_rps.is_some() && p.cohort > 0)
    })
}

pub(super) fn draw(a: &StudyAnalysis, class: &str, metric: EnvelopeMetric) -> Drawn {
    let names = cell_names(a);
    let valid: Vec<_> = a.body.cells.iter().filter(|c| c.valid).collect();
    fn of_class<'c>(c: &'c CellAnalysis, class: &str) -> Vec<&'c EnvelopePoint> {
        c.envelope.iter().filter(|p| p.class == class).collect()
    }
    let knees = valid.iter().filter_map(|c| c.knee_rps);
    let rate_max = valid
        .iter()
        .flat_map(|c| of_class(c, class))
        .filter_map(|p| p.offered_rps)
        .chain(knees)
        .chain(a.body.target_offered_load_rps)
        .fold(0.0, f64::max);
    let value_max = valid
        .iter()
        .flat_map(|c| of_class(c, class))
        .filter(|p| p.offered_rps.is_some())
        .flat_map(|p| {
            let (v, i) = metric.of(p);
            [v, i.map(|(_, h)| h)]
        })
        .flatten()
        .chain(
            a.body
                .min_good_share
                .filter(|_| metric == EnvelopeMetric::GoodShare),
        )
        .fold(0.0, f64::max);
    let x_hi = axis::upper(rate_max, 1.1);
    let y_hi = if metric == EnvelopeMetric::GoodShare {
        1.0
    } else {
        axis::upper(value_max, 1.1)
    };
    let (left, right) = (64.0, WIDTH - 16.0);
    let top = svg::HEADER + 26.0;
    let bottom = top + PLOT_HEIGHT;
    let x = Scale::new((0.0, x_hi), (left, right));
    let y = Scale::new((0.0, y_hi), (bottom, top));

    let mut body = Svg::new();
    axis::x_grid(
        &mut body,
        &x,
        &axis::nice_ticks(0.0, x_hi, 5),
        top,
        bottom,
        axis::plain,
    );
    let y_label = if metric == EnvelopeMetric::GoodShare {
        axis::percent
    } else {
        axis::plain
    };
    axis::y_grid(
        &mut body,
        &y,
        &axis::nice_ticks(0.0, y_hi, 5),
        left,
        right,
        y_label,
    );
    body.text(
        12.0,
        top - 12.0,
        Anchor::Start,
        MUTED,
        "",
        metric.axis_label(),
    );
    body.text(
        (left + right) / 2.0,
        bottom + 34.0,
        Anchor::Middle,
        MUTED,
        "",
        "offered load, requests/s",
    );

    let mut marks = Vec::new();
    let mut not_drawn = Vec::new();
    let mut legend = Vec::new();
    if let Some(target) = a.body.target_offered_load_rps {
        let tx = x.at(target);
        body.line(
            tx,
            top,
            tx,
            bottom,
            TEXT,
            "stroke-width=\"1.5\" stroke-dasharray=\"6 3\"",
        );
        body.text(
            tx + 4.0,
            top + 12.0,
            Anchor::Start,
            TEXT,
            "",
            &format!("target {}", text::rate(Some(target), "req/s")),
        );
        legend.push((Swatch::Dashed(TEXT), "target load".to_owned()));
    }
    if let (EnvelopeMetric::GoodShare, Some(bar)) = (metric, a.body.min_good_share) {
        let by = y.at(bar);
        body.line(
            left,
            by,
            right,
            by,
            svg::DANGER,
            "stroke-width=\"1.5\" stroke-dasharray=\"6 3\"",
        );
        body.text(
            right - 4.0,
            by - 5.0,
            Anchor::End,
            svg::DANGER,
            "",
            &format!("bar {}", text::share(Some(bar))),
        );
    }
    for c in &a.body.cells {
        if !c.valid {
            not_drawn.push(NotDrawn {
                cell: c.cell.clone(),
                why: "invalid — no score".to_owned(),
            });
            continue;
        }
        let points = of_class(c, class);
        let rateless = points.iter().filter(|p| p.offered_rps.is_none()).count();
        if rateless > 0 {
            not_drawn.push(NotDrawn {
                cell: c.cell.clone(),
                why: format!(
                    "{} point(s) without an offered rate (all at once, a closed loop or a trace): no place on the axis",
                    text::count(rateless as u64)
                ),
            });
        }
        let rated: Vec<&EnvelopePoint> = points
            .iter()
            .copied()
            .filter(|p| p.offered_rps.is_some())
            .collect();
        if rated.is_empty() {
            if rateless == 0 {
                not_drawn.push(NotDrawn {
                    cell: c.cell.clone(),
                    why: format!("no point of class {class}"),
                });
            }
            continue;
        }
        let colour = svg::cell_colour(&names, &c.cell);
        // Consecutive points with a figure are joined; an absent one breaks the line.
        let mut run: Vec<(f64, f64)> = Vec::new();
        let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
        for p in &rated {
            let rate = p.offered_rps.unwrap_or_default();
            let (value, interval) = metric.of(p);
            let words = format!(
                "{} · {class} at {}: {}{}, {} of {} good over {} run(s){}",
                c.cell,
                text::rate(Some(rate), "req/s"),
                metric.words(value),
                interval
                    .map(|(l, h)| format!(
                        ", 95% repeat interval [{}, {}]",
                        metric.words(Some(l)),
                        metric.words(Some(h))
                    ))
                    .unwrap_or_default(),
                text::count(p.good),
                text::count(p.cohort),
                text::count(p.repeats),
                if p.slo_only { " (SLO-only)" } else { "" }
            );
            body.group(&words);
            match value {
                Some(v) => {
                    let (px, py) = (x.at(rate), y.at(v));
                    if let Some((l, h)) = interval {
                        body.line(px, y.at(l.max(0.0)), px, y.at(h.min(y_hi)), colour, "");
                    }
                    body.circle(px, py, 4.0, colour);
                    run.push((px, py));
                }
                None => {
                    body.text(
                        x.at(rate),
                        bottom - 4.0,
                        Anchor::Middle,
                        MUTED,
                        &format!("font-size=\"{}\"", svg::SMALL),
                        text::ABSENT,
                    );
                    runs.push(std::mem::take(&mut run));
                }
            }
            body.end_group();
            marks.push(ChartMark {
                cell: c.cell.clone(),
                class: Some(class.to_owned()),
                stratum: None,
                text: words,
            });
        }
        runs.push(run);
        for line in runs.iter().filter(|r| r.len() > 1) {
            body.polyline(line, colour, "stroke-width=\"1.8\"");
        }
        legend.push((Swatch::Dot(colour), c.cell.clone()));
        if let Some(knee) = c.knee_rps {
            let kx = x.at(knee);
            let label = format!("knee {} {}", c.cell, text::rate(Some(knee), "req/s"));
            body.group(&label);
            body.line(
                kx,
                top,
                kx,
                bottom,
                colour,
                "stroke-width=\"1.5\" stroke-dasharray=\"3 2\"",
            );
            body.end_group();
            legend.push((Swatch::Dashed(colour), label.clone()));
            marks.push(ChartMark {
                cell: c.cell.clone(),
                class: None,
                stratum: None,
                text: label,
            });
        }
    }
    let legend_height = svg::legend(&mut body, left, bottom + 56.0, right, &legend);
    let height = bottom + 56.0 + legend_height + svg::FOOTER;
    let title = format!(
        "{} of class {class} against offered load, per cell",
        capitalized(metric.label())
    );
    let note = match metric {
        EnvelopeMetric::Goodput => {
            "Points: mean useful goodput over the runs at each offered rate (validated and within the class SLO); whiskers: the 95% repeat interval. Dashed verticals: each cell's knee (short dashes, its colour) and the policy's target load (long dashes, black)."
        }
        EnvelopeMetric::GoodShare => {
            "Points: good ÷ cohort, the mean over the runs at each offered rate; whiskers: its 95% repeat interval; the red dashed line: the policy's envelope bar. The knee is the highest rate at which every class reaches the bar."
        }
        EnvelopeMetric::TtftP90 | EnvelopeMetric::E2eP90 => {
            "Points: the 90th percentile over the ok requests of the runs at each offered rate."
        }
        EnvelopeMetric::Cost => {
            "Points: the runs' wall time × the policy's cost per instance-hour × the manifest's GPUs ÷ good responses of every class, retries included; absent without a declared cost or with nothing good."
        }
    }
    .to_owned();
    Drawn {
        body,
        id: format!("envelope-{class}-{}", metric.slug()),
        title,
        choice: metric.label().to_owned(),
        width: WIDTH,
        height,
        marks,
        not_drawn,
        note,
    }
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
