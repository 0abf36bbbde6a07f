//! The charts drawn from an analysis: what each shows, what it leaves out and why, and what
//! every one of them carries (title, description, provenance, readable escaped text).

use serde_json::json;

use super::fixture::{analysis, cell, invalid_cell, merge};
use super::*;

fn strata(c: &Chart) -> Vec<&str> {
    c.marks
        .iter()
        .filter_map(|m| m.stratum.as_deref())
        .collect()
}

fn every_chart(a: &StudyAnalysis) -> Vec<Chart> {
    let all = study_charts(a);
    let mut out = vec![all.goodput];
    for f in all.forest {
        out.push(f.segments);
        out.push(f.marginals);
    }
    out.extend(all.latency);
    out.extend(all.cdf);
    out.extend(all.capacity);
    out.extend(packet_charts(a).into_iter().map(|(_, c)| c));
    out
}

#[test]
fn the_forest_plot_reads_overall_then_segments_and_the_marginal_strata_only_when_asked() {
    let a = analysis(json!({}));
    let spec = |marginals| ChartSpec::Forest {
        cell: Some("C1".into()),
        marginals,
    };
    let plain = render(&a, &spec(false));
    assert_eq!(strata(&plain), ["overall", "de-long", "numeric"]);
    assert_eq!(plain.id, "forest-C1");
    let all = render(&a, &spec(true));
    assert_eq!(all.marks.len(), 7);
    assert_eq!(all.id, "forest-C1-marginals");
    let protected = &plain.marks[1].text;
    assert_eq!(
        protected,
        "de-long (protected): Δ −2.5 pp, interval [−30.0, −5.0] pp, −margin −3.0 pp, inferior"
    );
    // A row without pairs is written, not drawn.
    let absent = all.marks.last().unwrap();
    assert!(
        absent.text.contains("Δ absent, interval absent"),
        "{}",
        absent.text
    );
    assert!(all.svg.contains(">absent: no pairs</text>"));
    // Margins differ (0.02 and 0.03): each row gets its own mark, no shared line.
    assert!(!plain.svg.contains("stroke-dasharray=\"4 3\""));
}

#[test]
fn a_shared_margin_is_one_line_across_the_plot() {
    let c1 = cell(
        "C1",
        json!({"paired": [super::fixture::row("overall", json!({}))]}),
    );
    let a = analysis(json!({"cells": [cell("B0", json!({})), c1]}));
    let c = render(
        &a,
        &ChartSpec::Forest {
            cell: Some("C1".into()),
            marginals: false,
        },
    );
    assert!(c.svg.contains(">−margin</text>"));
    assert!(c.svg.contains("stroke-dasharray=\"4 3\""));
}

#[test]
fn the_packet_forest_plot_has_every_candidate_s_rows_named_by_cell() {
    let c2 = merge(cell("C2", json!({})), json!({"test_cell": {"kind": "c2"}}));
    let a = analysis(
        json!({"cells": [cell("B0", json!({})), cell("C1", json!({})), c2, invalid_cell("C9")]}),
    );
    let c = render(
        &a,
        &ChartSpec::Forest {
            cell: None,
            marginals: false,
        },
    );
    assert_eq!(c.id, "paired-delta");
    let cells: Vec<&str> = c.marks.iter().map(|m| m.cell.as_str()).collect();
    assert_eq!(cells, ["C1", "C1", "C1", "C2", "C2", "C2"]);
    assert!(c.marks[3].text.starts_with("C2 · overall: "));
    // No candidate: said, not an empty frame.
    let none = render(
        &analysis(json!({"cells": [cell("B0", json!({}))]})),
        &ChartSpec::Forest {
            cell: None,
            marginals: false,
        },
    );
    assert!(none.marks.is_empty());
    assert!(none.svg.contains("no paired rows"));
}

#[test]
fn goodput_draws_a_bar_per_class_of_each_valid_cell_and_none_for_an_invalid_one() {
    let a = analysis(json!({"cells": [cell("B0", json!({})), invalid_cell("C9")]}));
    let c = render(&a, &ChartSpec::Goodput);
    let bars: Vec<(&str, Option<&str>)> = c
        .marks
        .iter()
        .map(|m| (m.cell.as_str(), m.class.as_deref()))
        .collect();
    assert_eq!(bars, [("B0", Some("short"))]);
    assert_eq!(
        c.marks[0].text,
        "B0 · short: 0.500 good/s, 95% repeat interval [0.0500, 0.950], n = 2 runs"
    );
    assert_eq!(
        c.not_drawn,
        [NotDrawn {
            cell: "C9".into(),
            why: "invalid — no score".into()
        }]
    );
    assert!(c.svg.contains(">invalid — no score</text>"));
    assert_eq!(c.id, "goodput");
}

#[test]
fn goodput_writes_an_absent_mean_instead_of_a_bar_at_zero() {
    let g = json!({"short": {
        "per_s": null, "good": 0, "cohort": 0, "unfinished": 0, "failed": 0, "refused": 0,
        "misses": {"ttft": 0, "itl": 0, "e2e": 0, "after_drain": 0, "not_accepted": 0, "timing_missing": 0},
        "itl_not_applicable": 0, "slo_only": true,
        "repeats": {"n": 0, "mean": null, "sd": null, "ci_low": null, "ci_high": null}, "runs": []}});
    let a = analysis(json!({"cells": [cell("B0", json!({"goodput": g}))]}));
    let c = render(&a, &ChartSpec::Goodput);
    assert!(
        c.marks[0].text.starts_with("B0 · short: absent (SLO-only)"),
        "{}",
        c.marks[0].text
    );
    let bar = c.svg.split("<title>B0 · short").nth(1).unwrap();
    let bar = bar.split("</g>").next().unwrap();
    assert!(bar.contains(">absent</text>"));
    assert!(!bar.contains("<rect"), "no bar drawn");
}

#[test]
fn latency_places_measured_percentiles_and_leaves_invalid_cells_out() {
    let a = analysis(json!({}));
    let c = render(
        &a,
        &ChartSpec::Latency {
            metric: LatencyMetric::Itl,
        },
    );
    let lines: Vec<(&str, &str)> = c
        .marks
        .iter()
        .map(|m| (m.class.as_deref().unwrap(), m.cell.as_str()))
        .collect();
    assert_eq!(
        lines,
        [
            ("short", "B0"),
            ("short", "C1"),
            ("long", "B0"),
            ("long", "C1")
        ]
    );
    assert_eq!(
        c.marks[0].text,
        "short · B0: p50 20 ms, p90 25 ms, p99 absent (n = 28)"
    );
    assert!(
        c.svg.contains(">B0: absent</text>"),
        "the long class has no percentile"
    );
    assert_eq!(
        c.not_drawn,
        [NotDrawn {
            cell: "C9".into(),
            why: "invalid — no score".into()
        }]
    );
    assert_eq!(c.id, "latency-itl");
    assert_eq!(c.choice, "ITL");
}

#[test]
fn the_distribution_draws_each_valid_cell_from_0_to_100_percent_and_lists_the_others() {
    let a = analysis(json!({"cells": [cell("B0", json!({})), invalid_cell("C9")]}));
    let c = render(
        &a,
        &ChartSpec::Cdf {
            class: "short".into(),
            metric: CdfMetric::Ttft,
        },
    );
    assert_eq!(c.marks.len(), 1);
    assert_eq!(c.marks[0].text, "B0: n = 30");
    let line = c.svg.split("<polyline points=\"").nth(1).unwrap();
    let points = line.split('"').next().unwrap().split(' ').count();
    assert_eq!(points, 101);
    assert_eq!(
        c.not_drawn,
        [NotDrawn {
            cell: "C9".into(),
            why: "invalid — no score".into()
        }]
    );
    let long = render(
        &a,
        &ChartSpec::Cdf {
            class: "long".into(),
            metric: CdfMetric::E2e,
        },
    );
    assert!(long.marks.is_empty());
    assert_eq!(
        long.not_drawn[0],
        NotDrawn {
            cell: "B0".into(),
            why: "no distribution".into()
        }
    );
    assert_eq!(long.id, "latency-cdf-long-e2e");
}

#[test]
fn capacity_plots_valid_cells_with_the_figure_and_lists_the_others_instead_of_plotting_them_at_0() {
    let no_capacity = cell(
        "C2",
        json!({"capacity": {"engine_kv_tokens": null, "engine_kv_mib": null, "kv_usage_max": null,
                            "waiting_max": null, "running_max": null, "preemptions_delta": null, "runs": [],
                            "model_kv_tokens": null, "rollback_fit": null, "model_note": null}}),
    );
    let nothing_offered = cell(
        "C3",
        json!({"requests": {"offered": 0, "completed": 0, "failed": 0, "refused": 0, "timeout": 0,
                            "unfinished": 0, "validated": 0, "accepted": 0},
               "accepted_share": null}),
    );
    let a = analysis(
        json!({"cells": [cell("B0", json!({})), cell("C1", json!({})), no_capacity, nothing_offered, invalid_cell("C9")]}),
    );
    let c = render(
        &a,
        &ChartSpec::Capacity {
            axis: CapacityAxis::EngineKvTokens,
        },
    );
    let cells: Vec<&str> = c.marks.iter().map(|m| m.cell.as_str()).collect();
    assert_eq!(cells, ["B0", "C1"]);
    assert_eq!(
        c.marks[0].text,
        "B0: engine KV capacity (tokens) 100,000, accepted 90.0% of offered requests"
    );
    let missing: Vec<(&str, &str)> = c
        .not_drawn
        .iter()
        .map(|m| (m.cell.as_str(), m.why.as_str()))
        .collect();
    assert_eq!(
        missing,
        [
            ("C2", "KV capacity absent"),
            ("C3", "no offered requests"),
            ("C9", "invalid — no score")
        ]
    );
    let running = render(
        &a,
        &ChartSpec::Capacity {
            axis: CapacityAxis::RunningMax,
        },
    );
    assert_eq!(running.not_drawn[0].why, "running max absent");
    assert_eq!(running.id, "capacity-running-max");
}

#[test]
fn the_results_screen_gets_every_variant_its_controls_offer() {
    let all = study_charts(&analysis(json!({})));
    assert_eq!(all.forest.len(), 1);
    assert_eq!(all.forest[0].cell, "C1");
    let ids = |v: &[Chart]| v.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(&all.latency),
        ["latency-ttft", "latency-itl", "latency-e2e"]
    );
    assert_eq!(
        ids(&all.cdf),
        [
            "latency-cdf-short-ttft",
            "latency-cdf-short-e2e",
            "latency-cdf-long-ttft",
            "latency-cdf-long-e2e"
        ]
    );
    assert_eq!(
        ids(&all.capacity),
        ["capacity-kv-tokens", "capacity-running-max"]
    );
    let files: Vec<String> = packet_charts(&analysis(json!({})))
        .into_iter()
        .map(|(f, _)| f)
        .collect();
    assert_eq!(
        files,
        [
            "charts/paired-delta.svg",
            "charts/goodput.svg",
            "charts/latency-e2e.svg"
        ]
    );
}

#[test]
fn every_chart_is_titled_described_labelled_with_its_provenance_and_readable() {
    let a = analysis(json!({}));
    for c in every_chart(&a) {
        assert!(
            c.svg
                .starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
            "{}",
            c.id
        );
        assert!(
            c.svg.contains(&format!(
                "<title>{}</title>",
                crate::markup::escape(&c.title)
            )),
            "{}",
            c.id
        );
        assert!(c.svg.contains("<desc>"), "{}", c.id);
        assert!(
            c.svg.contains(">Data: synthetic demo</text>"),
            "{}: provenance drawn",
            c.id
        );
        assert!(
            c.svg.contains("Data: synthetic demo.</desc>"),
            "{}: provenance described",
            c.id
        );
        assert!(c.width >= 640 && c.height > 100, "{}", c.id);
        for size in c.svg.split("font-size=\"").skip(1) {
            let px: f64 = size.split('"').next().unwrap().parse().unwrap();
            assert!(px >= 11.0, "{}: text at {px} px", c.id);
        }
    }
    // A user's own study says nothing about stand-ins.
    let user = analysis(json!({"provenance": "user", "provenance_label": "user"}));
    for c in every_chart(&user) {
        assert!(!c.svg.contains("Data:"), "{}", c.id);
    }
}

#[test]
fn text_from_the_study_is_escaped_everywhere_it_is_drawn() {
    let hostile = "<script>alert(1)</script>\"&'";
    let c1 = cell(hostile, json!({}));
    let mut a = analysis(json!({"cells": [cell("B0", json!({})), c1], "classes": [hostile]}));
    for c in &mut a.body.cells {
        let short = c.latency.remove("short").unwrap();
        c.latency.insert(hostile.to_owned(), short);
        let g = c.goodput.remove("short").unwrap();
        c.goodput.insert(hostile.to_owned(), g);
        for r in &mut c.paired {
            r.stratum = hostile.to_owned();
        }
    }
    a.study_name = hostile.to_owned();
    a.provenance_label = hostile.to_owned();
    for c in every_chart(&a) {
        assert!(!c.svg.contains("<script"), "{}", c.id);
        assert!(!c.svg.contains("\"&'"), "{}", c.id);
        assert!(c.svg.contains("&lt;script&gt;"), "{}", c.id);
    }
}

/// A PNG's pixels (RGBA), size and UTF-8 text chunks.
fn decode_png(bytes: &[u8]) -> (Vec<u8>, u32, u32, Vec<(String, String)>) {
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    assert_eq!(frame.color_type, png::ColorType::Rgba);
    let text = reader
        .info()
        .utf8_text
        .iter()
        .map(|c| (c.keyword.clone(), c.get_text().unwrap()))
        .collect();
    (pixels, frame.width, frame.height, text)
}

/// How many pixels of the region (in PNG pixels) are as dark as the chart's text.
fn dark_pixels(
    pixels: &[u8],
    width: u32,
    x: std::ops::Range<u32>,
    y: std::ops::Range<u32>,
) -> usize {
    y.flat_map(|row| x.clone().map(move |col| ((row * width + col) * 4) as usize))
        .filter(|&i| pixels[i] < 90 && pixels[i + 1] < 90 && pixels[i + 2] < 90)
        .count()
}

#[test]
fn a_png_is_the_chart_drawn_at_twice_its_size_with_its_text_and_its_title() {
    let a = analysis(json!({}));
    let chart = render(&a, &ChartSpec::Goodput);
    let bytes = raster::png(&chart.svg).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    let (pixels, w, h, text) = decode_png(&bytes);
    assert_eq!((w, h), (chart.width * 2, chart.height * 2));
    let title = text.iter().find(|(k, _)| k == "Title").map(|(_, t)| t);
    assert_eq!(title, Some(&chart.title));
    let desc = text.iter().find(|(k, _)| k == "Description").unwrap();
    assert!(desc.1.ends_with("Data: synthetic demo."), "{}", desc.1);
    // The heading is drawn in the band above the plot: text, so a font was found and used.
    let heading = dark_pixels(&pixels, w, 0..w / 2, 0..(svg::HEADER as u32 * 2));
    assert!(heading > 200, "heading pixels drawn: {heading}");
    // The paper is white where nothing is drawn (the top-left corner).
    assert_eq!(&pixels[..4], &[255, 255, 255, 255]);
}

#[test]
fn a_png_draws_nothing_from_outside_its_document() {
    // A red picture beside it, referenced by path: the saved PNG never reads another file.
    let dir = tempfile::tempdir().unwrap();
    let red = dir.path().join("red.svg");
    std::fs::write(
        &red,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10" fill="#ff0000"/></svg>"##,
    )
    .unwrap();
    let svg = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><title>t</title><desc>d</desc><rect width="10" height="10" fill="#ffffff"/><image href="{}" width="10" height="10"/></svg>"##,
        red.display()
    );
    let (pixels, ..) = decode_png(&raster::png(&svg).unwrap());
    assert!(pixels.chunks(4).all(|p| p == [255, 255, 255, 255]));
    assert!(matches!(
        raster::png("<svg"),
        Err(raster::RasterError::Svg(_))
    ));
}

/// An envelope point of class `short` as the analysis gives it.
fn point(rate: Option<f64>, share: f64, cost: Option<f64>) -> serde_json::Value {
    let offered = match rate {
        Some(r) => json!({"kind": "rate", "per_s": r}),
        None => json!({"kind": "unbounded"}),
    };
    json!({
        "offered_rps": rate, "offered": offered, "admission_limit": 1, "class": "short",
        "repeats": 2, "runs": [1, 2],
        "goodput_per_s": {"n": 2, "mean": share / 10.0, "sd": 0.001,
                          "ci_low": share / 10.0 - 0.002, "ci_high": share / 10.0 + 0.002},
        "good_share": share,
        "good_share_repeats": {"n": 2, "mean": share, "sd": 0.01, "ci_low": share - 0.05, "ci_high": share + 0.05},
        "good": (share * 20.0).round() as u64, "cohort": 20, "slo_only": false,
        "slo_share": {"ttft": share, "itl": null, "e2e": 1.0},
        "ttft_ms": {"p50": 900.0, "p90": 1500.0, "p99": 1800.0, "count": 20},
        "e2e_ms": {"p50": 9000.0, "p90": 15000.0, "p99": 18000.0, "count": 20},
        "cost_per_good_response": cost
    })
}

fn envelope_study() -> StudyAnalysis {
    analysis(json!({
        "target_offered_load_rps": 0.08,
        "min_good_share": 0.1,
        "cells": [
            cell("B0", json!({
                "envelope": [point(Some(0.02), 0.083, Some(0.0084)), point(Some(0.08), 0.243, Some(0.0015)),
                             point(None, 0.5, None)],
                "knee_rps": 0.08})),
            cell("C1", json!({
                "envelope": [point(Some(0.02), 0.167, None), point(Some(0.08), 0.243, Some(0.0015))]})),
            invalid_cell("C9"),
        ]
    }))
}

/// The envelope charts put each cell's points at their offered rate, mark the knee, the target
/// and the bar, leave a rateless point and an invalid cell out with the reason, and break the
/// line at an absent figure instead of drawing it at 0.
#[test]
fn the_envelope_draws_each_cell_against_offered_load_with_its_knee_the_target_and_the_bar() {
    let a = envelope_study();
    let charts = study_charts(&a);
    let ids: Vec<&str> = charts.envelope.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "envelope-short-goodput",
            "envelope-short-good-share",
            "envelope-short-ttft-p90",
            "envelope-short-e2e-p90",
            "envelope-short-cost",
        ],
        "no chart of class long: no cell has a point of it"
    );
    let goodput = &charts.envelope[0];
    assert_eq!(
        goodput.marks[0].text,
        "B0 · short at 0.0200 req/s: 0.00830 good/s, 95% repeat interval [0.00630 good/s, 0.0103 good/s], 2 of 20 good over 2 run(s)"
    );
    assert!(goodput
        .marks
        .iter()
        .any(|m| m.text == "knee B0 0.0800 req/s"));
    assert!(goodput.svg.contains(">target 0.0800 req/s</text>"));
    let why: Vec<(&str, &str)> = goodput
        .not_drawn
        .iter()
        .map(|n| (n.cell.as_str(), n.why.as_str()))
        .collect();
    assert_eq!(why[0].0, "B0");
    assert!(
        why[0].1.starts_with("1 point(s) without an offered rate"),
        "{why:?}"
    );
    assert_eq!(why[1], ("C9", "invalid — no score"));
    // Three drawn points of B0 and C1 (not the rateless one) and one knee.
    assert_eq!(goodput.marks.len(), 5);
    let share = &charts.envelope[1];
    assert!(share.svg.contains(">bar 10.0%</text>"));
    // C1's cost at 0.02 req/s is absent: written, and its line has no segment through it.
    let cost = &charts.envelope[4];
    let c1 = cost.marks.iter().find(|m| m.cell == "C1").unwrap();
    assert!(c1.text.contains("0.0200 req/s: absent"), "{}", c1.text);
    assert!(cost.svg.contains(">absent</text>"));
    // Readable, titled and labelled like every chart.
    for c in &charts.envelope {
        assert!(c.svg.contains(">Data: synthetic demo</text>"), "{}", c.id);
        for size in c.svg.split("font-size=\"").skip(1) {
            let px: f64 = size.split('"').next().unwrap().parse().unwrap();
            assert!(px >= 11.0, "{}: text at {px} px", c.id);
        }
    }
    // The packet carries the goodput and cost envelopes of every class with points.
    let packet: Vec<String> = packet_charts(&a).into_iter().map(|(f, _)| f).collect();
    assert_eq!(
        packet[3..],
        [
            "charts/envelope-short-goodput.svg",
            "charts/envelope-short-cost.svg"
        ]
    );
}

/// Without a point at an offered rate there is no envelope chart at all, in the window or the
/// packet.
#[test]
fn no_offered_rate_no_envelope_chart() {
    let a = analysis(json!({}));
    assert!(study_charts(&a).envelope.is_empty());
    assert!(!packet_charts(&a)
        .iter()
        .any(|(f, _)| f.contains("envelope")));
}
