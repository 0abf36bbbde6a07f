//! The engine load over time of the demo's recorded llama.cpp runs, from their stored scrapes
//! to the Results screen's chart: llama.cpp publishes no KV usage gauge and no preemption
//! counter, so both are absent, never drawn as 0.

use kvgate_app::charts::ChartSpec;
use kvgate_app::files::ChartFormat;

use crate::locked_demo_study;

#[tokio::test]
async fn the_recorded_llama_cpp_runs_give_a_load_series_without_kv_usage() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = locked_demo_study(&dir).await;
    let results = app.results(sid).await.unwrap();
    let cells = &results.analysis.body.cells;
    // Scrapes recorded per run (fixtures/demo/runs): 1,336 for B0, 1,709 for Q8.
    for (cell, scrapes, last_ms) in [("B0", 1336, 1_335_509.0), ("Q8", 1709, 1_708_831.0)] {
        let c = cells.iter().find(|c| c.cell == cell).unwrap();
        let [series] = &c.capacity.metric_series[..] else {
            panic!("{cell}: one run, one series");
        };
        assert_eq!(series.points.len(), scrapes, "{cell}");
        assert_eq!(series.points.last().unwrap().at_ms, last_ms, "{cell}");
        assert!(series.restarts_at_ms.is_empty(), "{cell}");
        assert!(series.points.iter().all(|p| p.kv_usage.is_none()), "{cell}");
        assert!(series.points.iter().all(|p| p.preemptions_delta.is_none()));
        // One slot: at most one request running, none waiting.
        let running = series.points.iter().filter_map(|p| p.running);
        assert_eq!(running.clone().count(), scrapes);
        assert_eq!(running.fold(0.0, f64::max), 1.0);
    }
    let chart = results
        .charts
        .load
        .iter()
        .find(|c| c.id == "load-b0")
        .unwrap();
    let texts: Vec<&str> = chart.marks.iter().map(|m| m.text.as_str()).collect();
    assert!(texts.contains(&"B0: KV cache usage absent"), "{texts:?}");
    assert!(texts.contains(&"B0: preemptions per scrape interval absent"));
    assert!(texts.iter().any(|t| t.starts_with("B0 run ")
        && t.ends_with(": running requests over 1336 scrapes, highest 1")));
    assert!(!chart.svg.contains("data-restart"));
    // Saved as SVG, it is the document the Results screen shows.
    let file = app
        .chart_file(
            sid,
            &ChartSpec::Load { cell: "B0".into() },
            ChartFormat::Svg,
        )
        .await
        .unwrap();
    assert_eq!(file.bytes, chart.svg.as_bytes());
}
