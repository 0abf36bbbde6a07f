//! Files saved from the window: a chart saved as SVG is the very document the Results screen
//! shows, as PNG that document drawn with its title; a run file is what `kvgate run export`
//! writes. Refusals come before anything is offered for saving.

use kvgate_app::charts::{ChartSpec, LatencyMetric};
use kvgate_app::files::{save_file, ChartFormat};
use kvgate_app::ErrorCode;

use crate::{locked_demo_study, study_with_demo_runs, ROOT};

async fn locked_demo(dir: &tempfile::TempDir) -> (kvgate_app::App, i64) {
    std::env::set_current_dir(ROOT).unwrap();
    locked_demo_study(dir).await
}

#[tokio::test]
async fn a_saved_svg_is_the_chart_the_results_screen_shows() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = locked_demo(&dir).await;
    let shown = app.results(sid).await.unwrap().charts;
    let forest = &shown.forest[0];
    let cases = [
        (ChartSpec::Goodput, &shown.goodput),
        (shown.latency[2].spec.clone(), &shown.latency[2]),
        (forest.marginals.spec.clone(), &forest.marginals),
    ];
    assert_eq!(
        cases[1].0,
        ChartSpec::Latency {
            metric: LatencyMetric::E2e
        }
    );
    for (spec, chart) in cases {
        let file = app.chart_file(sid, &spec, ChartFormat::Svg).await.unwrap();
        assert_eq!(
            file.file_name,
            format!("analysis_{}.svg", chart.id.to_lowercase())
        );
        assert_eq!(file.filter.extensions, ["svg"]);
        let path = dir.path().join(&file.file_name);
        let saved = save_file(&path, &file.bytes).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            chart.svg,
            "{}",
            chart.id
        );
        assert_eq!(saved.size, chart.svg.len() as u64);
        assert_eq!(saved.path, path.display().to_string());
    }
}

#[tokio::test]
async fn a_saved_png_is_the_chart_drawn_with_its_title() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = locked_demo(&dir).await;
    let goodput = app.results(sid).await.unwrap().charts.goodput;
    let file = app
        .chart_file(sid, &ChartSpec::Goodput, ChartFormat::Png)
        .await
        .unwrap();
    assert_eq!(file.file_name, "analysis_goodput.png");
    let reader = png::Decoder::new(std::io::Cursor::new(&file.bytes))
        .read_info()
        .unwrap();
    let info = reader.info();
    assert_eq!(
        (info.width, info.height),
        (goodput.width * 2, goodput.height * 2)
    );
    let title = info
        .utf8_text
        .iter()
        .find(|c| c.keyword == "Title")
        .map(|c| c.get_text().unwrap());
    assert_eq!(title.as_deref(), Some(goodput.title.as_str()));
}

#[tokio::test]
async fn a_chart_is_refused_before_the_policy_is_locked_and_nothing_is_offered() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = study_with_demo_runs(&dir).await;
    let err = app
        .chart_file(sid, &ChartSpec::Goodput, ChartFormat::Svg)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PolicyNotLocked);
}

#[tokio::test]
async fn a_saved_run_file_is_the_run_s_export() {
    let dir = tempfile::tempdir().unwrap();
    let (app, sid) = locked_demo(&dir).await;
    let run = app.list_runs(sid).await.unwrap().remove(0);
    let file = app.run_file(run.id).await.unwrap();
    assert_eq!(
        file.file_name,
        format!(
            "run-{}-{}.kvgate-run.jsonl",
            run.id,
            run.cell.to_lowercase()
        )
    );
    assert_eq!(
        String::from_utf8(file.bytes).unwrap(),
        app.export_run(run.id).await.unwrap()
    );
    let err = app.run_file(9999).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);
}
