//! The charts of a study's analysis as standalone SVG documents, drawn here once for the Results
//! screen, the files it exports and the architecture-review packet: the paired Δ forest plot,
//! useful goodput, latency percentiles, a class's latency distribution, capacity against the
//! accepted share, and each class's operating envelope against offered load. They share one tick rule, one palette, one legend and readable type
//! (nothing below 11 px); each names its data's provenance inside the image, and every text from
//! the study is escaped.
//!
//! Presentation only: every figure is read from [`StudyAnalysis`]; nothing here computes a
//! domain figure, decides a verdict or leaves a failure out of a denominator. A missing figure is
//! never drawn at 0: it is written "absent" or listed in [`Chart::not_drawn`].

mod axis;
mod capacity;
mod cdf;
mod envelope;
mod forest;
mod goodput;
mod latency;
mod load;
pub mod raster;
mod svg;
mod text;

use kvgate_core::analysis::CellAnalysis;
use kvgate_core::study::Provenance;
use kvgate_core::test_cell::TestCell;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::analysis::StudyAnalysis;

/// Which latency a chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum LatencyMetric {
    Ttft,
    Itl,
    E2e,
}

impl LatencyMetric {
    pub const ALL: [LatencyMetric; 3] =
        [LatencyMetric::Ttft, LatencyMetric::Itl, LatencyMetric::E2e];

    fn label(self) -> &'static str {
        match self {
            LatencyMetric::Ttft => "TTFT",
            LatencyMetric::Itl => "ITL",
            LatencyMetric::E2e => "end-to-end",
        }
    }

    fn slug(self) -> &'static str {
        match self {
            LatencyMetric::Ttft => "ttft",
            LatencyMetric::Itl => "itl",
            LatencyMetric::E2e => "e2e",
        }
    }
}

/// Which latency a distribution chart shows: the analysis keeps the distribution of these two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum CdfMetric {
    Ttft,
    E2e,
}

impl CdfMetric {
    pub const ALL: [CdfMetric; 2] = [CdfMetric::Ttft, CdfMetric::E2e];

    fn latency(self) -> LatencyMetric {
        match self {
            CdfMetric::Ttft => LatencyMetric::Ttft,
            CdfMetric::E2e => LatencyMetric::E2e,
        }
    }
}

/// Which capacity figure the capacity chart puts on its x axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum CapacityAxis {
    /// KV capacity in tokens as the engine reported it.
    EngineKvTokens,
    /// The most running requests seen (admitted concurrency).
    RunningMax,
}

impl CapacityAxis {
    pub const ALL: [CapacityAxis; 2] = [CapacityAxis::EngineKvTokens, CapacityAxis::RunningMax];
}

/// Which figure an envelope chart puts against offered load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum EnvelopeMetric {
    /// Useful goodput with its 95% repeat interval.
    Goodput,
    /// Good ÷ cohort against the policy's envelope bar.
    GoodShare,
    TtftP90,
    E2eP90,
    /// Cost per accepted, SLO-compliant response.
    Cost,
}

/// What to draw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "chart", rename_all = "snake_case")]
pub enum ChartSpec {
    /// Δ accepted share against B0 with its interval per stratum, 0 and −margin marked: of one
    /// candidate, or of every candidate in one plot (`cell` null). Overall and the segments, and
    /// the marginal strata when asked.
    Forest {
        cell: Option<String>,
        marginals: bool,
    },
    /// Useful goodput per cell and class with the 95% repeat interval.
    Goodput,
    /// p50, p90 and p99 of one latency per class and cell.
    Latency { metric: LatencyMetric },
    /// The distribution of one latency (TTFT or end-to-end) of one class, one line per cell.
    Cdf { class: String, metric: CdfMetric },
    /// A capacity figure against the accepted share of offered requests, one point per cell.
    Capacity { axis: CapacityAxis },
    /// One figure of one class's operating envelope against offered load, one line per cell,
    /// the knees and the target load marked.
    Envelope {
        class: String,
        metric: EnvelopeMetric,
    },
    /// One cell's KV usage, waiting, running and preemptions over the run clock, restarts marked.
    Load { cell: String },
}

/// One drawn mark in words: what a reader who does not see the chart needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ChartMark {
    pub cell: String,
    pub class: Option<String>,
    pub stratum: Option<String>,
    pub text: String,
}

/// A cell a chart leaves out, and why: never drawn at 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct NotDrawn {
    pub cell: String,
    pub why: String,
}

/// One chart, ready to show, save or pack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Chart {
    pub spec: ChartSpec,
    /// A stable name: the exported file is named after it (`charts/<id>.svg` in a packet).
    pub id: String,
    /// The heading drawn on top, and the document's title.
    pub title: String,
    /// What sets this chart apart from the others of its kind (e.g. "TTFT"), for a chooser.
    pub choice: String,
    /// The standalone SVG document.
    pub svg: String,
    pub width: u32,
    pub height: u32,
    /// Every drawn mark in words, in drawing order.
    pub marks: Vec<ChartMark>,
    pub not_drawn: Vec<NotDrawn>,
    /// How to read it.
    pub note: String,
}

/// The forest plots of one candidate: overall and segments, and with the marginal strata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct ForestCharts {
    pub cell: String,
    pub segments: Chart,
    pub marginals: Chart,
}

/// Every chart the Results screen offers, drawn from one analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct StudyCharts {
    /// One per valid candidate with paired rows.
    pub forest: Vec<ForestCharts>,
    pub goodput: Chart,
    /// One per latency: TTFT, ITL, end-to-end.
    pub latency: Vec<Chart>,
    /// One per policy class and latency (TTFT, end-to-end).
    pub cdf: Vec<Chart>,
    /// One per capacity figure.
    pub capacity: Vec<Chart>,
    /// One per policy class and envelope figure; empty when no cell was measured at an offered
    /// rate (nothing to put on the axis).
    pub envelope: Vec<Chart>,
    /// One per cell: its engine load over time.
    pub load: Vec<Chart>,
}

/// What a chart module returns: its drawing and what it says in words; [`render`] frames it
/// as one SVG document (title, description of every mark, provenance).
struct Drawn {
    id: String,
    title: String,
    choice: String,
    body: svg::Svg,
    width: f64,
    height: f64,
    marks: Vec<ChartMark>,
    not_drawn: Vec<NotDrawn>,
    note: String,
}

/// The provenance line of a chart: every study but a user's own says where its data comes from.
fn provenance(a: &StudyAnalysis) -> Option<&str> {
    (a.provenance != Provenance::User).then_some(a.provenance_label.as_str())
}

/// The `<desc>` of a chart: how to read it, each mark, each cell left out, the provenance.
fn description(
    a: &StudyAnalysis,
    note: &str,
    marks: &[ChartMark],
    not_drawn: &[NotDrawn],
) -> String {
    let mut parts = vec![note.to_owned()];
    parts.extend(marks.iter().map(|m| format!("{}.", m.text)));
    parts.extend(
        not_drawn
            .iter()
            .map(|m| format!("{}: not drawn ({}).", m.cell, m.why)),
    );
    if let Some(p) = provenance(a) {
        parts.push(format!("Data: {p}."));
    }
    parts.join(" ")
}

/// The names of every cell, in analysis order (the key of their colours).
fn cell_names(a: &StudyAnalysis) -> Vec<&str> {
    a.body.cells.iter().map(|c| c.cell.as_str()).collect()
}

/// The candidates a forest plot is drawn for: valid, not B0, with paired rows.
fn forest_candidates(a: &StudyAnalysis) -> impl Iterator<Item = &CellAnalysis> {
    a.body
        .cells
        .iter()
        .filter(|c| c.valid && c.test_cell != TestCell::B0 && !c.paired.is_empty())
}

/// Draws one chart of the analysis.
pub fn render(a: &StudyAnalysis, spec: &ChartSpec) -> Chart {
    let d = match spec {
        ChartSpec::Forest { cell, marginals } => forest::draw(a, cell.as_deref(), *marginals),
        ChartSpec::Goodput => goodput::draw(a),
        ChartSpec::Latency { metric } => latency::draw(a, *metric),
        ChartSpec::Cdf { class, metric } => cdf::draw(a, class, *metric),
        ChartSpec::Capacity { axis } => capacity::draw(a, *axis),
        ChartSpec::Envelope { class, metric } => envelope::draw(a, class, *metric),
        ChartSpec::Load { cell } => load::draw(a, cell),
    };
    let desc = description(a, &d.note, &d.marks, &d.not_drawn);
    let svg = svg::document(
        &svg::Frame {
            width: d.width,
            height: d.height,
            title: &d.title,
            desc: &desc,
            provenance: provenance(a),
        },
        d.body,
    );
    Chart {
        spec: spec.clone(),
        id: d.id,
        title: d.title,
        choice: d.choice,
        svg,
        width: d.width.round() as u32,
        height: d.height.round() as u32,
        marks: d.marks,
        not_drawn: d.not_drawn,
        note: d.note,
    }
}

/// Every chart of the Results screen: each variant its controls offer, so switching is instant
/// and every chart shows the same analysis as the tables beside it.
pub fn study_charts(a: &StudyAnalysis) -> StudyCharts {
    let forest = forest_candidates(a)
        .map(|c| {
            let spec = |marginals| ChartSpec::Forest {
                cell: Some(c.cell.clone()),
                marginals,
            };
            ForestCharts {
                cell: c.cell.clone(),
                segments: render(a, &spec(false)),
                marginals: render(a, &spec(true)),
            }
        })
        .collect();
    let cdf = a
        .body
        .classes
        .iter()
        .flat_map(|class| {
            CdfMetric::ALL.map(|metric| {
                render(
                    a,
                    &ChartSpec::Cdf {
                        class: class.clone(),
                        metric,
                    },
                )
            })
        })
        .collect();
    StudyCharts {
        forest,
        goodput: render(a, &ChartSpec::Goodput),
        latency: LatencyMetric::ALL
            .map(|metric| render(a, &ChartSpec::Latency { metric }))
            .to_vec(),
        cdf,
        capacity: CapacityAxis::ALL
            .map(|axis| render(a, &ChartSpec::Capacity { axis }))
            .to_vec(),
        envelope: envelope_specs(a, &EnvelopeMetric::ALL)
            .iter()
            .map(|spec| render(a, spec))
            .collect(),
        load: cell_names(a)
            .into_iter()
            .map(|cell| {
                render(
                    a,
                    &ChartSpec::Load {
                        cell: cell.to_owned(),
                    },
                )
            })
            .collect(),
    }
}

/// The envelope charts of `metrics` for every policy class some valid cell has a point of at an
/// offered rate.
fn envelope_specs(a: &StudyAnalysis, metrics: &[EnvelopeMetric]) -> Vec<ChartSpec> {
    a.body
        .classes
        .iter()
        .filter(|class| envelope::has_rates(a, class))
        .flat_map(|class| {
            metrics.iter().map(|&metric| ChartSpec::Envelope {
                class: class.clone(),
                metric,
            })
        })
        .collect()
}

/// The charts of the packet, with their file names: the paired Δ of every candidate, useful
/// goodput, end-to-end latency, per class the envelope's goodput and cost against offered load
/// (when a cell has an offered rate), and each cell's engine load over time (when it has a
/// series), drawn as the window draws them.
pub fn packet_charts(a: &StudyAnalysis) -> Vec<(String, Chart)> {
    let mut specs = vec![
        ChartSpec::Forest {
            cell: None,
            marginals: false,
        },
        ChartSpec::Goodput,
        ChartSpec::Latency {
            metric: LatencyMetric::E2e,
        },
    ];
    specs.extend(envelope_specs(
        a,
        &[EnvelopeMetric::Goodput, EnvelopeMetric::Cost],
    ));
    // The engine's load over time, of each cell that has a series.
    specs.extend(
        a.body
            .cells
            .iter()
            .filter(|c| !c.capacity.metric_series.is_empty())
            .map(|c| ChartSpec::Load {
                cell: c.cell.clone(),
            }),
    );
    specs
        .iter()
        .map(|spec| {
            let chart = render(a, spec);
            (format!("charts/{}.svg", chart.id), chart)
        })
        .collect()
}

#[cfg(test)]
mod fixture;
#[cfg(test)]
mod tests;
