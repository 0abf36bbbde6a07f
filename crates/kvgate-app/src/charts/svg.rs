//! Writing SVG: the document every chart shares (size, title, description, paper background,
//! heading, the data's provenance), its palette and type sizes, the legend, and the few elements
//! the charts draw. Every text goes through [`escape`]; only constant attributes are passed raw.

use std::fmt::Write as _;

use crate::markup::escape;

/// Colours as SVG attributes: an exported file carries no stylesheet.
pub const TEXT: &str = "#1a1d21";
pub const MUTED: &str = "#545b64";
pub const GRID: &str = "#d5d9de";
pub const AXIS: &str = "#9aa1a9";
pub const DANGER: &str = "#b3261e";
pub const OK: &str = "#1e7a3c";
pub const WARN: &str = "#a86200";
const PAPER: &str = "#ffffff";
const FONT: &str = "system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";

/// Type sizes in px: body text, the smallest text drawn, the heading. Nothing is drawn below
/// [`SMALL`], so a chart stays readable at its natural size.
pub const BODY: f64 = 12.0;
pub const SMALL: f64 = 11.0;
const HEADING: f64 = 14.0;

/// Height above the plot taken by the heading.
pub const HEADER: f64 = 30.0;
/// Height below everything else taken by the provenance line.
pub const FOOTER: f64 = 24.0;

/// B0 in dark grey; candidates distinct and colour-blind safe (Okabe–Ito).
const BASELINE: &str = "#3b4048";
const CELL_COLOURS: [&str; 6] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9",
];
/// One shade per request class where cells are the groups (same palette, another order).
const CLASS_SHADES: [&str; 6] = [
    "#0072b2", "#56b4e9", "#009e73", "#e69f00", "#cc79a7", "#d55e00",
];

/// The colour of a cell among all the study's cells: the same in every chart.
pub fn cell_colour(cells: &[&str], cell: &str) -> &'static str {
    if cell == "B0" {
        return BASELINE;
    }
    let candidates: Vec<&str> = cells.iter().copied().filter(|c| *c != "B0").collect();
    let i = candidates
        .iter()
        .position(|c| *c == cell)
        .unwrap_or(candidates.len());
    CELL_COLOURS[i % CELL_COLOURS.len()]
}

/// The shade of a request class among the classes drawn.
pub fn class_shade(classes: &[&str], class: &str) -> &'static str {
    let i = classes
        .iter()
        .position(|c| *c == class)
        .unwrap_or(classes.len());
    CLASS_SHADES[i % CLASS_SHADES.len()]
}

/// About how wide `text` is drawn at `size` px (proportional sans-serif), for layout only.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.58
}

/// A pixel coordinate to a tenth, for an attribute.
fn n(v: f64) -> String {
    format!("{:.1}", v + 0.0)
}

#[derive(Debug, Clone, Copy)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn attr(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// The body of a chart, element by element. `extra` takes constant attributes only (e.g.
/// `stroke-dasharray="4 3"`): text from a study goes through [`Svg::text`] or [`Svg::title`].
#[derive(Debug, Default)]
pub struct Svg {
    body: String,
}

impl Svg {
    pub fn new() -> Svg {
        Svg::default()
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, extra: &str) {
        let _ = writeln!(
            self.body,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{stroke}\"{}/>",
            n(x1),
            n(y1),
            n(x2),
            n(y2),
            space(extra)
        );
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, extra: &str) {
        let _ = writeln!(
            self.body,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"{}/>",
            n(x),
            n(y),
            n(w.max(0.0)),
            n(h.max(0.0)),
            space(extra)
        );
    }

    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, fill: &str) {
        let _ = writeln!(
            self.body,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{fill}\"/>",
            n(cx),
            n(cy),
            n(r)
        );
    }

    /// A closed path through `points`.
    pub fn polygon(&mut self, points: &[(f64, f64)], fill: &str) {
        let d: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{},{}", n(*x), n(*y)))
            .collect();
        let _ = writeln!(
            self.body,
            "<polygon points=\"{}\" fill=\"{fill}\"/>",
            d.join(" ")
        );
    }

    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, extra: &str) {
        let d: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{},{}", n(*x), n(*y)))
            .collect();
        let _ = writeln!(
            self.body,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{stroke}\"{}/>",
            d.join(" "),
            space(extra)
        );
    }

    pub fn text(&mut self, x: f64, y: f64, anchor: Anchor, fill: &str, extra: &str, text: &str) {
        let _ = writeln!(
            self.body,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" fill=\"{fill}\"{}>{}</text>",
            n(x),
            n(y),
            anchor.attr(),
            space(extra),
            escape(text)
        );
    }

    /// Opens a group whose `<title>` names what it draws (a tooltip in a viewer).
    pub fn group(&mut self, title: &str) {
        let _ = writeln!(self.body, "<g>\n<title>{}</title>", escape(title));
    }

    pub fn end_group(&mut self) {
        self.body.push_str("</g>\n");
    }
}

fn space(extra: &str) -> String {
    if extra.is_empty() {
        String::new()
    } else {
        format!(" {extra}")
    }
}

/// A legend entry's sample.
#[derive(Debug, Clone, Copy)]
pub enum Swatch {
    Square(&'static str),
    /// A pale, dashed square: an SLO-only bar.
    PaleSquare(&'static str),
    Dot(&'static str),
    Diamond(&'static str),
    /// A dashed vertical line.
    Dashed(&'static str),
}

/// Draws the legend from `x0` rightwards, wrapping before `right`; returns the height it took.
pub fn legend(svg: &mut Svg, x0: f64, y: f64, right: f64, items: &[(Swatch, String)]) -> f64 {
    const ROW: f64 = 18.0;
    let (mut x, mut top) = (x0, y);
    for (swatch, label) in items {
        let w = 16.0 + text_width(label, BODY) + 14.0;
        if x > x0 && x + w > right {
            x = x0;
            top += ROW;
        }
        let (cx, cy) = (x + 5.0, top - 4.0);
        match *swatch {
            Swatch::Square(c) => svg.rect(x, top - 9.0, 10.0, 10.0, c, ""),
            Swatch::PaleSquare(c) => svg.rect(
                x,
                top - 9.0,
                10.0,
                10.0,
                c,
                &format!("fill-opacity=\"0.45\" stroke=\"{c}\" stroke-dasharray=\"3 2\""),
            ),
            Swatch::Dot(c) => svg.circle(cx, cy, 4.0, c),
            Swatch::Diamond(c) => svg.polygon(&diamond(cx, cy, 5.0), c),
            Swatch::Dashed(c) => svg.line(
                cx,
                top - 10.0,
                cx,
                top + 2.0,
                c,
                "stroke-width=\"1.5\" stroke-dasharray=\"3 2\"",
            ),
        }
        svg.text(x + 15.0, top, Anchor::Start, TEXT, "", label);
        x += w;
    }
    if items.is_empty() {
        0.0
    } else {
        top - y + ROW
    }
}

/// The corners of a diamond centred on (x, y).
pub fn diamond(x: f64, y: f64, r: f64) -> [(f64, f64); 4] {
    [(x, y - r), (x + r, y), (x, y + r), (x - r, y)]
}

/// What frames a chart's body.
pub struct Frame<'a> {
    pub width: f64,
    pub height: f64,
    /// The heading, drawn on top and the document's `<title>`.
    pub title: &'a str,
    /// Every drawn figure in words: the document's `<desc>`.
    pub desc: &'a str,
    /// Where the data comes from, drawn at the bottom ("Data: synthetic demo"); `None` for a
    /// user's own study.
    pub provenance: Option<&'a str>,
}

/// A standalone SVG document: namespaced, sized, on a white ground (a file reads the same
/// outside the app, and an image in a dark window keeps its paper).
pub fn document(frame: &Frame<'_>, body: Svg) -> String {
    let (w, h) = (n(frame.width), n(frame.height));
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         role=\"img\" font-family=\"{FONT}\" font-size=\"{BODY}\">\n<title>{}</title>\n<desc>{}</desc>\n\
         <rect width=\"100%\" height=\"100%\" fill=\"{PAPER}\"/>\n",
        escape(frame.title),
        escape(frame.desc),
    );
    let _ = writeln!(
        out,
        "<text x=\"12\" y=\"20\" font-size=\"{HEADING}\" font-weight=\"700\" fill=\"{TEXT}\">{}</text>",
        escape(frame.title)
    );
    out.push_str(&body.body);
    if let Some(p) = frame.provenance {
        let _ = writeln!(
            out,
            "<text x=\"12\" y=\"{}\" font-weight=\"700\" fill=\"{WARN}\">{}</text>",
            n(frame.height - 8.0),
            escape(&format!("Data: {p}"))
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_standalone_and_escapes_every_text() {
        let mut body = Svg::new();
        body.text(
            1.0,
            2.0,
            Anchor::Start,
            TEXT,
            "",
            "<script>alert(1)</script>",
        );
        body.group("a & b");
        body.end_group();
        let svg = document(
            &Frame {
                width: 640.0,
                height: 300.0,
                title: "C1 \"quoted\" <b>",
                desc: "x < y",
                provenance: Some("synthetic demo"),
            },
            body,
        );
        assert!(svg.starts_with(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640.0\" height=\"300.0\""
        ));
        assert!(svg.contains("<title>C1 &quot;quoted&quot; &lt;b&gt;</title>"));
        assert!(svg.contains("<desc>x &lt; y</desc>"));
        assert!(svg.contains("&lt;script&gt;"));
        assert!(!svg.contains("<script"));
        assert!(svg.contains("<title>a &amp; b</title>"));
        assert!(svg.contains(">Data: synthetic demo</text>"));
        // Background first after title and description, so they name the document.
        let title = svg.find("<title>").unwrap();
        let paper = svg.find("fill=\"#ffffff\"").unwrap();
        assert!(title < paper);
    }

    #[test]
    fn colours_are_stable_per_cell_and_class() {
        let cells = ["B0", "C1", "C2"];
        assert_eq!(cell_colour(&cells, "B0"), BASELINE);
        assert_eq!(cell_colour(&cells, "C1"), CELL_COLOURS[0]);
        assert_eq!(cell_colour(&cells, "C2"), CELL_COLOURS[1]);
        assert_eq!(class_shade(&["short", "long"], "long"), CLASS_SHADES[1]);
    }
}
