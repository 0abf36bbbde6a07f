//! A cell's engine-wide load over the run clock: KV cache usage, waiting and running requests,
//! and preemptions per scrape interval, one panel each, every run of the cell from its own 0.
//! Restarts are marked with a dashed line; a figure a scrape did not carry (llama.cpp has no KV
//! usage gauge) is a gap, and a panel without any figure says "absent", never a flat 0 line.

use super::axis::{self, Scale};
use super::svg::{self, Anchor, Svg, DANGER, MUTED, TEXT};
use super::{cell_names, text, ChartMark, Drawn, NotDrawn};
use crate::analysis::StudyAnalysis;
use kvgate_core::metrics::{RunSeries, SeriesPoint};

const WIDTH: f64 = 720.0;
const PANEL: f64 = 110.0;
const GAP: f64 = 40.0;

/// One panel: its label, how its ticks read, and the figure it takes from a point.
struct Panel {
    label: &'static str,
    tick: fn(f64) -> String,
    value: fn(&SeriesPoint) -> Option<f64>,
    share: bool,
}

const PANELS: [Panel; 4] = [
    Panel {
        label: "KV cache usage",
        tick: axis::percent,
        value: |p| p.kv_usage,
        share: true,
    },
    Panel {
        label: "waiting requests",
        tick: axis::plain,
        value: |p| p.waiting,
        share: false,
    },
    Panel {
        label: "running requests",
        tick: axis::plain,
        value: |p| p.running,
        share: false,
    },
    Panel {
        label: "preemptions per scrape interval",
        tick: axis::plain,
        value: |p| p.preemptions_delta,
        share: false,
    },
];

pub(super) fn draw(a: &StudyAnalysis, cell: &str) -> Drawn {
    let names = cell_names(a);
    let found = a.body.cells.iter().find(|c| c.cell == cell);
    let runs: &[RunSeries] = found.map_or(&[], |c| &c.capacity.metric_series[..]);
    let mut not_drawn = Vec::new();
    if found.is_none() {
        not_drawn.push(NotDrawn {
            cell: cell.to_owned(),
            why: "no such cell".into(),
        });
    } else if runs.is_empty() {
        not_drawn.push(NotDrawn {
            cell: cell.to_owned(),
            why: "no run of this cell carries /metrics scrapes".into(),
        });
    }
    let t_hi_s = runs
        .iter()
        .flat_map(|r| r.points.iter().map(|p| p.at_ms / 1000.0))
        .fold(0.0, f64::max);
    // A scrape taken just before the run clock's 0 stays inside the plot.
    let t_lo_s = runs
        .iter()
        .flat_map(|r| r.points.iter().map(|p| p.at_ms / 1000.0))
        .fold(0.0, f64::min);
    let x_hi = axis::upper(t_hi_s, 1.05).max(1.0);
    let (left, right) = (64.0, WIDTH - 24.0);
    let x = Scale::new((t_lo_s, x_hi), (left, right));
    let colour = svg::cell_colour(&names, cell);
    let mut body = Svg::new();
    let mut marks = Vec::new();
    let mut top = svg::HEADER + 28.0;
    for panel in &PANELS {
        let bottom = top + PANEL;
        let values: Vec<f64> = runs
            .iter()
            .flat_map(|r| r.points.iter().filter_map(panel.value))
            .collect();
        body.text(left, top - 8.0, Anchor::Start, TEXT, "", panel.label);
        if values.is_empty() {
            body.text(
                (left + right) / 2.0,
                top + PANEL / 2.0,
                Anchor::Middle,
                MUTED,
                "",
                "absent: no scrape of this cell carries it (not 0)",
            );
            marks.push(ChartMark {
                cell: cell.to_owned(),
                class: None,
                stratum: None,
                text: format!("{cell}: {} absent", panel.label),
            });
            top = bottom + GAP;
            continue;
        }
        let y_hi = if panel.share {
            1.0
        } else {
            axis::upper(values.iter().copied().fold(0.0, f64::max), 1.1).max(1.0)
        };
        let y = Scale::new((0.0, y_hi), (bottom, top));
        axis::y_grid(
            &mut body,
            &y,
            &axis::nice_ticks(0.0, y_hi, 3),
            left,
            right,
            panel.tick,
        );
        for run in runs {
            // A scrape without the figure breaks the line: a gap, never a dip to 0.
            let mut segment: Vec<(f64, f64)> = Vec::new();
            let mut segments = Vec::new();
            for p in &run.points {
                // A restart starts a new line: the old process's figures do not run into it.
                if run.restarts_at_ms.contains(&p.at_ms) && !segment.is_empty() {
                    segments.push(std::mem::take(&mut segment));
                }
                match (panel.value)(p) {
                    Some(v) => segment.push((x.at(p.at_ms / 1000.0), y.at(v))),
                    None if !segment.is_empty() => segments.push(std::mem::take(&mut segment)),
                    None => {}
                }
            }
            if !segment.is_empty() {
                segments.push(segment);
            }
            let run_values: Vec<f64> = run.points.iter().filter_map(panel.value).collect();
            let words = format!(
                "{cell} run {}: {} over {} scrapes, highest {}",
                run.run_id,
                panel.label,
                run_values.len(),
                if panel.share {
                    text::share(run_values.iter().copied().reduce(f64::max))
                } else {
                    text::number(run_values.iter().copied().reduce(f64::max))
                }
            );
            body.group(&words);
            for s in &segments {
                if s.len() == 1 {
                    body.circle(s[0].0, s[0].1, 3.0, colour);
                } else {
                    body.polyline(s, colour, "stroke-width=\"2\"");
                }
            }
            body.end_group();
            marks.push(ChartMark {
                cell: cell.to_owned(),
                class: None,
                stratum: None,
                text: words,
            });
        }
        top = bottom + GAP;
    }
    let plot_bottom = top - GAP;
    let plot_top = svg::HEADER + 28.0;
    for run in runs {
        for &at_ms in &run.restarts_at_ms {
            let px = x.at(at_ms / 1000.0);
            let words = format!(
                "{cell} run {}: engine restart before {} on the run clock (a counter went down)",
                run.run_id,
                text::duration(Some(at_ms))
            );
            body.group(&words);
            body.line(
                px,
                plot_top - 4.0,
                px,
                plot_bottom,
                DANGER,
                "stroke-dasharray=\"6 4\" stroke-width=\"2\" data-restart=\"true\"",
            );
            // Written on the side with room, so a late restart's label is not cut off.
            let (lx, anchor) = if px > (left + right) / 2.0 {
                (px - 4.0, Anchor::End)
            } else {
                (px + 4.0, Anchor::Start)
            };
            body.text(
                lx,
                plot_top + 10.0,
                anchor,
                DANGER,
                "",
                &format!("restart (run {})", run.run_id),
            );
            body.end_group();
            marks.push(ChartMark {
                cell: cell.to_owned(),
                class: None,
                stratum: None,
                text: words,
            });
        }
    }
    axis::x_grid(
        &mut body,
        &x,
        &axis::nice_ticks(0.0, x_hi, 6),
        plot_bottom,
        plot_bottom,
        axis::plain,
    );
    body.text(
        (left + right) / 2.0,
        plot_bottom + 34.0,
        Anchor::Middle,
        MUTED,
        "",
        "seconds on each run's clock",
    );
    let height = plot_bottom + 44.0 + svg::FOOTER;
    Drawn {
        body,
        id: format!("load-{}", slug(cell)),
        title: format!("{cell}: engine load over time"),
        choice: cell.to_owned(),
        width: WIDTH,
        height,
        marks,
        not_drawn,
        note: "Engine-wide figures from the cell's /metrics scrapes, per run from its own start \
               (never split by request class); preemptions are counted per scrape interval, \
               from 0 again after a restart; a dashed line marks a restart."
            .to_owned(),
    }
}

/// A cell name as a file-name part.
fn slug(cell: &str) -> String {
    cell.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::fixture::analysis;
    use super::super::{render, study_charts, ChartSpec};
    use kvgate_core::metrics::{RunSeries, SeriesPoint};
    use serde_json::json;

    fn point(at_ms: f64, kv: Option<f64>, waiting: f64, delta: Option<f64>) -> SeriesPoint {
        SeriesPoint {
            at_ms,
            kv_usage: kv,
            waiting: Some(waiting),
            running: Some(4.0),
            preemptions_delta: delta,
        }
    }

    #[test]
    fn a_restart_is_marked_and_a_missing_gauge_is_absent_not_zero() {
        let mut a = analysis(json!({}));
        // Synthetic B0 with a restart at 20 s; C1 like llama.cpp: no KV gauge, no preemptions.
        a.body.cells[0].capacity.metric_series = vec![RunSeries {
            run_id: 1,
            points: vec![
                point(0.0, Some(0.1), 0.0, None),
                point(10_000.0, Some(0.8), 6.0, Some(2.0)),
                point(20_000.0, Some(0.05), 1.0, Some(1.0)),
            ],
            restarts_at_ms: vec![20_000.0],
        }];
        a.body.cells[1].capacity.metric_series = vec![RunSeries {
            run_id: 3,
            points: vec![point(0.0, None, 0.0, None), point(5_000.0, None, 2.0, None)],
            restarts_at_ms: vec![],
        }];
        let b0 = render(&a, &ChartSpec::Load { cell: "B0".into() });
        assert_eq!(b0.id, "load-b0");
        assert_eq!(
            b0.svg.matches("data-restart=\"true\"").count(),
            1,
            "{}",
            b0.svg
        );
        assert!(b0.svg.contains(">restart (run 1)</text>"));
        assert!(b0.marks.iter().any(|m| m.text
            == "B0 run 1: engine restart before 20.0 s on the run clock (a counter went down)"));
        assert!(b0
            .marks
            .iter()
            .any(|m| m.text == "B0 run 1: KV cache usage over 3 scrapes, highest 80.0%"));
        // Labelled as what the data is.
        assert!(b0.svg.contains(">Data: synthetic demo</text>"));
        // The restart at 20 s breaks each line: KV usage, waiting and running are a line of
        // two scrapes and a lone dot after it; the preemption deltas (10 s, then 20 s) two dots.
        assert_eq!(b0.svg.matches("<polyline").count(), 3, "{}", b0.svg);
        assert_eq!(b0.svg.matches("<circle").count(), 5, "{}", b0.svg);
        // Exportable as PNG too: the restart's dashed line rasterizes like any other.
        let png = super::super::raster::png(&b0.svg).unwrap();
        assert_eq!(&png[1..4], b"PNG");

        let c1 = render(&a, &ChartSpec::Load { cell: "C1".into() });
        assert!(!c1.svg.contains("data-restart"));
        assert!(c1
            .marks
            .iter()
            .any(|m| m.text == "C1: KV cache usage absent"));
        assert!(c1
            .marks
            .iter()
            .any(|m| m.text == "C1: preemptions per scrape interval absent"));
        assert!(c1
            .marks
            .iter()
            .any(|m| m.text == "C1 run 3: waiting requests over 2 scrapes, highest 2"));
        assert!(c1
            .svg
            .contains("absent: no scrape of this cell carries it (not 0)"));

        // A cell without scrapes is listed, not drawn flat; every cell gets its chart.
        let charts = study_charts(&a);
        let ids: Vec<&str> = charts.load.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["load-b0", "load-c1", "load-c9"]);
        assert_eq!(
            charts.load[2].not_drawn[0].why,
            "no run of this cell carries /metrics scrapes"
        );
    }

    #[test]
    fn a_gap_in_a_gauge_breaks_the_line() {
        let mut a = analysis(json!({}));
        a.body.cells[0].capacity.metric_series = vec![RunSeries {
            run_id: 1,
            points: vec![
                point(0.0, Some(0.2), 0.0, None),
                point(1_000.0, Some(0.3), 0.0, None),
                point(2_000.0, None, 0.0, None),
                point(3_000.0, Some(0.4), 0.0, None),
            ],
            restarts_at_ms: vec![],
        }];
        let c = render(&a, &ChartSpec::Load { cell: "B0".into() });
        // KV usage: one line of two scrapes and one lone dot after the gap (never a dip to 0);
        // waiting and running: one line each.
        assert_eq!(c.svg.matches("<polyline").count(), 3, "{}", c.svg);
        assert_eq!(c.svg.matches("<circle").count(), 1, "{}", c.svg);
    }
}
