//! Scales and axes every chart shares: a linear scale, the tick rule (round steps of 1, 2 or 5
//! × 10^k) and the gridlines with their labels.

use super::svg::{Anchor, Svg, GRID, MUTED};
use super::text;

/// A linear map of a domain onto a pixel range; a degenerate domain maps to the range's middle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub domain: (f64, f64),
    pub range: (f64, f64),
}

impl Scale {
    pub fn new(domain: (f64, f64), range: (f64, f64)) -> Scale {
        Scale { domain, range }
    }

    pub fn at(&self, v: f64) -> f64 {
        let (d0, d1) = self.domain;
        let (r0, r1) = self.range;
        let span = d1 - d0;
        if span == 0.0 {
            (r0 + r1) / 2.0
        } else {
            r0 + (v - d0) / span * (r1 - r0)
        }
    }
}

/// The top of a value axis that starts at 0: the largest value drawn with `pad` head room
/// (1.1 = 10 %), or 1 when nothing positive is drawn, so an empty chart still has an axis.
pub fn upper(max: f64, pad: f64) -> f64 {
    if max > 0.0 && max.is_finite() {
        max * pad
    } else {
        1.0
    }
}

/// About `count` round tick values covering [lo, hi] (steps of 1, 2 or 5 × 10^k).
pub fn nice_ticks(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    if !lo.is_finite() || !hi.is_finite() {
        return Vec::new();
    }
    let (lo, hi) = if hi < lo { (hi, lo) } else { (lo, hi) };
    if hi == lo {
        return vec![lo];
    }
    let raw = (hi - lo) / count.max(1) as f64;
    let exp = raw.log10().floor() as i32;
    let power = 10f64.powi(exp);
    let mult = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| m * power >= raw)
        .unwrap_or(10.0);
    let step = mult * power;
    // From integers: 3 × 2 / 10 is 0.6, where 3 × 0.2 is 0.6000000000000001.
    let at = |i: i64| {
        if exp < 0 {
            i as f64 * mult / 10f64.powi(-exp)
        } else {
            i as f64 * mult * power
        }
    };
    let first = (lo / step - 1e-9).ceil() as i64;
    let mut out = Vec::new();
    let mut i = first;
    while i as f64 * step <= hi + step * 1e-9 {
        // + 0.0 turns a −0 tick into 0.
        out.push(at(i) + 0.0);
        i += 1;
    }
    out
}

/// Vertical gridlines at `ticks` between `top` and `bottom`, labelled below the plot.
pub fn x_grid(
    svg: &mut Svg,
    x: &Scale,
    ticks: &[f64],
    top: f64,
    bottom: f64,
    label: fn(f64) -> String,
) {
    for &t in ticks {
        svg.line(x.at(t), top, x.at(t), bottom, GRID, "");
        svg.text(x.at(t), bottom + 16.0, Anchor::Middle, MUTED, "", &label(t));
    }
}

/// Horizontal gridlines at `ticks` between `left` and `right`, labelled left of the plot.
pub fn y_grid(
    svg: &mut Svg,
    y: &Scale,
    ticks: &[f64],
    left: f64,
    right: f64,
    label: fn(f64) -> String,
) {
    for &t in ticks {
        svg.line(left, y.at(t), right, y.at(t), GRID, "");
        svg.text(left - 6.0, y.at(t) + 4.0, Anchor::End, MUTED, "", &label(t));
    }
}

/// A tick value as written on an axis.
pub fn plain(v: f64) -> String {
    text::tick(v)
}

/// A share tick (0 … 1) as a percentage: "40%".
pub fn percent(v: f64) -> String {
    format!("{}%", text::tick(v * 100.0))
}

/// A share-difference tick (−1 … 1) in percentage points, without the unit: "−6".
pub fn points(v: f64) -> String {
    text::tick(v * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_a_domain_linearly_onto_a_range_reversed_ranges_included() {
        let x = Scale::new((-0.1, 0.1), (100.0, 300.0));
        assert_eq!(x.at(-0.1), 100.0);
        assert!((x.at(0.0) - 200.0).abs() < 1e-9);
        assert_eq!(x.at(0.1), 300.0);
        let y = Scale::new((0.0, 10.0), (200.0, 0.0));
        assert_eq!((y.at(0.0), y.at(10.0)), (200.0, 0.0));
        assert_eq!(Scale::new((5.0, 5.0), (0.0, 100.0)).at(5.0), 50.0);
    }

    #[test]
    fn a_value_axis_tops_the_largest_value_or_is_one_when_nothing_is_drawn() {
        assert!((upper(2.0, 1.1) - 2.2).abs() < 1e-12);
        assert_eq!(upper(0.0, 1.1), 1.0);
        assert_eq!(upper(f64::NAN, 1.1), 1.0);
        assert_eq!(upper(f64::INFINITY, 1.1), 1.0);
    }

    #[test]
    fn chooses_round_ticks_covering_the_domain() {
        assert_eq!(nice_ticks(0.0, 1.0, 5), [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(nice_ticks(-0.07, 0.03, 5), [-0.06, -0.04, -0.02, 0.0, 0.02]);
        assert_eq!(
            nice_ticks(0.0, 2300.0, 5),
            [0.0, 500.0, 1000.0, 1500.0, 2000.0]
        );
        assert_eq!(nice_ticks(3.0, 3.0, 5), [3.0]);
        assert!(nice_ticks(0.0, f64::NAN, 5).is_empty());
    }

    #[test]
    fn tick_labels_read_in_the_axis_unit() {
        assert_eq!(percent(0.4), "40%");
        assert_eq!(points(-0.06), "−6");
        assert_eq!(plain(12_000.0), "12k");
    }
}
