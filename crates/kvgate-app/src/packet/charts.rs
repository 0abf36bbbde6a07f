//! The packet's charts as standalone SVG: the paired Δ forest plot, goodput across repeats and
//! end-to-end latency percentiles. Each names the data's provenance inside the image.

use crate::analysis::StudyAnalysis;

use super::report::escape;

const W: f64 = 760.0;
const LEFT: f64 = 230.0;
const RIGHT: f64 = 40.0;
const ROW: f64 = 22.0;
const TOP: f64 = 58.0;

fn num(x: f64) -> String {
    // Coordinates only: two decimals are plenty for a drawing; the values are in the tables.
    format!("{x:.2}")
}

fn frame(title: &str, label: &str, height: f64, body: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n\
         <text x=\"12\" y=\"20\" font-size=\"15\" font-weight=\"bold\">{t}</text>\n\
         <text x=\"12\" y=\"38\" fill=\"#a0402a\">{l}</text>\n{body}</svg>\n",
        w = W,
        h = num(height),
        t = escape(title),
        l = escape(label),
    )
}

/// A linear scale from [lo, hi] onto the plot width.
fn scale(lo: f64, hi: f64) -> impl Fn(f64) -> f64 {
    let span = if hi > lo { hi - lo } else { 1.0 };
    move |x| LEFT + (x - lo) / span * (W - LEFT - RIGHT)
}

fn axis(lo: f64, hi: f64, y: f64, unit: &str) -> String {
    let x = scale(lo, hi);
    let mut s = format!(
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#333\"/>\n",
        num(LEFT),
        num(y),
        num(W - RIGHT),
        num(y)
    );
    for k in 0..=4 {
        let v = lo + (hi - lo) * f64::from(k) / 4.0;
        s.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
            num(x(v)),
            num(y + 16.0),
            escape(&format!("{v:.3}{unit}"))
        ));
    }
    s
}

/// Δ (candidate − B0 acceptance) with its interval per candidate and row, against −margin.
pub fn paired_delta(a: &StudyAnalysis) -> String {
    let rows: Vec<_> = a
        .body
        .cells
        .iter()
        .flat_map(|c| {
            c.paired
                .iter()
                .filter(|r| r.protected || r.stratum == "overall")
                .map(move |r| (c.cell.as_str(), r))
        })
        .collect();
    let mut lo: f64 = -0.1;
    let mut hi: f64 = 0.1;
    for (_, r) in &rows {
        for v in [r.ci_low, r.ci_high, r.delta, Some(-r.margin)]
            .into_iter()
            .flatten()
        {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    let x = scale(lo, hi);
    let height = TOP + ROW * rows.len().max(1) as f64 + 40.0;
    let bottom = TOP + ROW * rows.len().max(1) as f64;
    let mut body = format!(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#999\"/>\n",
        num(x(0.0)),
        num(TOP - 6.0),
        num(bottom)
    );
    if rows.is_empty() {
        body.push_str(&format!(
            "<text x=\"{}\" y=\"{}\">no paired rows: no valid candidate with judged items</text>\n",
            num(LEFT),
            num(TOP + 14.0)
        ));
    }
    for (i, (cell, r)) in rows.iter().enumerate() {
        let y = TOP + ROW * i as f64 + ROW / 2.0;
        body.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
            num(LEFT - 8.0),
            num(y + 4.0),
            escape(&format!("{cell} · {} (n={})", r.stratum, r.n))
        ));
        body.push_str(&format!(
            "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#c0392b\" stroke-dasharray=\"3 2\"/>\n",
            num(x(-r.margin)),
            num(y - ROW / 2.0 + 2.0),
            num(y + ROW / 2.0 - 2.0)
        ));
        if let (Some(l), Some(h)) = (r.ci_low, r.ci_high) {
            body.push_str(&format!(
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#1f4e79\" stroke-width=\"2\"/>\n",
                num(x(l)),
                num(y),
                num(x(h)),
                num(y)
            ));
        }
        match r.delta {
            Some(d) => body.push_str(&format!(
                "<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"#1f4e79\"/>\n",
                num(x(d)),
                num(y)
            )),
            None => body.push_str(&format!(
                "<text x=\"{}\" y=\"{}\">absent</text>\n",
                num(LEFT + 4.0),
                num(y + 4.0)
            )),
        }
    }
    body.push_str(&axis(lo, hi, bottom + 4.0, ""));
    frame(
        "Paired Δ acceptance (candidate − B0) with interval; dashed: −margin",
        &a.provenance_label,
        height + 10.0,
        &body,
    )
}

/// Mean useful goodput per cell across repeats, with the 95% interval when known.
pub fn goodput(a: &StudyAnalysis) -> String {
    let cells: Vec<_> = a.body.cells.iter().collect();
    let mut hi: f64 = 0.0;
    for c in &cells {
        for v in [c.goodput_total.mean, c.goodput_total.ci_high]
            .into_iter()
            .flatten()
        {
            hi = hi.max(v);
        }
    }
    if hi <= 0.0 {
        hi = 1.0;
    }
    let x = scale(0.0, hi);
    let bottom = TOP + ROW * cells.len().max(1) as f64;
    let mut body = String::new();
    for (i, c) in cells.iter().enumerate() {
        let y = TOP + ROW * i as f64 + ROW / 2.0;
        let g = &c.goodput_total;
        body.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
            num(LEFT - 8.0),
            num(y + 4.0),
            escape(&format!("{} ({} repeats)", c.cell, g.n))
        ));
        match g.mean {
            Some(m) => {
                body.push_str(&format!(
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#5b8db8\"/>\n",
                    num(LEFT),
                    num(y - 7.0),
                    num(x(m) - LEFT),
                    num(14.0)
                ));
                if let (Some(l), Some(h)) = (g.ci_low, g.ci_high) {
                    body.push_str(&format!(
                        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#222\"/>\n",
                        num(x(l.max(0.0))),
                        num(y),
                        num(x(h)),
                        num(y)
                    ));
                }
            }
            None => body.push_str(&format!(
                "<text x=\"{}\" y=\"{}\">absent</text>\n",
                num(LEFT + 4.0),
                num(y + 4.0)
            )),
        }
    }
    body.push_str(&axis(0.0, hi, bottom + 4.0, "/s"));
    frame(
        "Useful goodput (good responses per second), mean across repeats with 95% interval",
        &a.provenance_label,
        bottom + 50.0,
        &body,
    )
}

/// End-to-end latency p50 / p90 / p99 per cell and class.
pub fn latency(a: &StudyAnalysis) -> String {
    let rows: Vec<_> = a
        .body
        .cells
        .iter()
        .flat_map(|c| {
            c.latency
                .iter()
                .map(move |(k, l)| (c.cell.as_str(), k.as_str(), l))
        })
        .collect();
    let mut hi: f64 = 0.0;
    for (_, _, l) in &rows {
        for v in [l.e2e_ms.p50, l.e2e_ms.p90, l.e2e_ms.p99]
            .into_iter()
            .flatten()
        {
            hi = hi.max(v);
        }
    }
    if hi <= 0.0 {
        hi = 1.0;
    }
    let x = scale(0.0, hi);
    let bottom = TOP + ROW * rows.len().max(1) as f64;
    let mut body = String::new();
    for (i, (cell, class, l)) in rows.iter().enumerate() {
        let y = TOP + ROW * i as f64 + ROW / 2.0;
        body.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
            num(LEFT - 8.0),
            num(y + 4.0),
            escape(&format!("{cell} · {class} (n={})", l.e2e_ms.count))
        ));
        for (v, color) in [
            (l.e2e_ms.p99, "#d9c2a7"),
            (l.e2e_ms.p90, "#b8875b"),
            (l.e2e_ms.p50, "#7a4f2a"),
        ] {
            if let Some(v) = v {
                body.push_str(&format!(
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"14\" fill=\"{color}\"/>\n",
                    num(LEFT),
                    num(y - 7.0),
                    num(x(v) - LEFT)
                ));
            }
        }
    }
    body.push_str(&axis(0.0, hi, bottom + 4.0, " ms"));
    frame(
        "End-to-end latency p50 (dark) / p90 / p99 (light) per cell and class",
        &a.provenance_label,
        bottom + 50.0,
        &body,
    )
}
