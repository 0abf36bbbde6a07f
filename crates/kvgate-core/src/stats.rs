//! Pure statistics for the analysis: latency percentiles, the exact McNemar test, Tango's score
//! interval for a paired difference of acceptance rates and the non-inferiority verdict it
//! supports, Holm and Bonferroni adjustments, the paired-sample planner (Nam 1997), and the
//! mean ± t interval of repeated runs.
//!
//! Conventions of the paired quality comparison (every function here uses them):
//! - `n` paired items, each answered by the baseline (B0) and the candidate;
//! - `b` items the baseline accepted and the candidate rejected;
//! - `c` items the baseline rejected and the candidate accepted;
//! - Δ = (c − b) / n, the candidate's acceptance rate minus the baseline's: negative is worse.
//!
//! A non-inferiority margin `m` says how much worse the candidate may be: the verdict is
//! non-inferior when the whole interval lies above −m, inferior when it lies wholly below −m, and
//! "collect more evidence" otherwise. There is deliberately no "equivalent" verdict: a wide
//! interval around zero is a lack of evidence, not evidence of no difference.
//!
//! The special functions (normal and Student t quantiles, the incomplete beta and gamma
//! functions, binomial probabilities) are implemented here from published algorithms so that the
//! crate stays dependency-free and every number is reproducible; the tests pin them against
//! scipy / statsmodels / numpy.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Confidence level of the interval in [`RepeatSummary`].
pub const REPEAT_LEVEL: f64 = 0.95;

/// ln √(2π).
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;
/// ln 2π.
const LN_2PI: f64 = 1.837_877_066_409_345_5;
/// √(2π).
const SQRT_2PI: f64 = 2.506_628_274_631_000_7;
/// 1 / √π.
const FRAC_1_SQRT_PI: f64 = 0.564_189_583_547_756_3;
/// Smallest magnitude the modified Lentz continued fractions let a denominator reach.
const FPMIN: f64 = 1e-300;
/// Iteration cap of the continued fractions and series (they converge far sooner).
const MAX_ITER: usize = 10_000;

/// Why a statistic cannot be computed from the given inputs.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// A parameter outside its range, or not a finite number.
    #[error("{field}: expected {expected}, found {found}")]
    OutOfRange {
        field: &'static str,
        expected: &'static str,
        found: String,
    },
    /// More discordant pairs than pairs.
    #[error("b + c: expected at most n = {n} discordant pairs, found {b} + {c} = {sum}")]
    DiscordantExceedPairs { b: u64, c: u64, n: u64, sum: u128 },
    /// The planner's answer does not fit in an exact integer.
    #[error("pairs: expected at most {max} pairs, found {found:e} (the margin is too small for this discordance rate)")]
    TooManyPairs { found: f64, max: u64 },
}

impl StatsError {
    /// The error split into what was expected and what was found, for a problem list.
    pub fn expected_found(&self) -> (String, String) {
        match self {
            StatsError::OutOfRange {
                field,
                expected,
                found,
            } => (format!("{field}: {expected}"), found.clone()),
            StatsError::DiscordantExceedPairs { b, c, n, sum } => (
                format!("b + c at most n = {n}"),
                format!("b + c = {b} + {c} = {sum}"),
            ),
            StatsError::TooManyPairs { found, max } => {
                (format!("at most {max} pairs"), format!("{found:e} pairs"))
            }
        }
    }
}

/// Largest integer every f64 below it represents exactly (2^53).
const MAX_EXACT_PAIRS: u64 = 1 << 53;

fn out_of_range(field: &'static str, expected: &'static str, found: f64) -> StatsError {
    StatsError::OutOfRange {
        field,
        expected,
        found: found.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Percentiles
// ---------------------------------------------------------------------------------------------

/// The `q`-quantile (0 ≤ q ≤ 1) of ascending `sorted` values by numpy's default "linear" method
/// (Hyndman & Fan type 7): h = (n − 1)·q, interpolated between the values at ranks ⌊h⌋ and ⌈h⌉.
/// The interpolation is numpy's own (`a + (b − a)·t` below t = ½, `b − (b − a)·(1 − t)` from
/// ½ on) so results agree with `numpy.percentile` to the last bit for finite values.
///
/// `None` for an empty slice or a `q` outside [0, 1] (or NaN). The values must be sorted
/// ascending and free of NaN (checked in debug builds).
pub fn percentile_linear(sorted: &[f64], q: f64) -> Option<f64> {
    debug_assert!(
        sorted.windows(2).all(|w| w[0] <= w[1]),
        "percentile_linear needs ascending values without NaN"
    );
    let (i, j, t) = linear_ranks(sorted.len().checked_sub(1)?, q)?;
    Some(lerp(sorted[i], sorted[j], t))
}

/// numpy's `_lerp`: exact at both ends and monotone in `t`.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// The 50th, 90th and 99th percentiles of a sample (numpy's linear method) and its size.
#[derive(Serialize, Deserialize, TS, JsonSchema, Debug, Clone, PartialEq)]
pub struct Percentiles {
    /// Median; `None` for an empty sample.
    pub p50: Option<f64>,
    /// 90th percentile; `None` for an empty sample.
    pub p90: Option<f64>,
    /// 99th percentile; `None` for an empty sample.
    pub p99: Option<f64>,
    /// Number of values.
    pub count: u64,
}

/// The `qs` quantiles of `values` by numpy's linear method, each exactly what
/// [`percentile_linear`] gives on the sorted sample (`None` for an empty sample or a `q` outside
/// [0, 1]). `values` are reordered, not sorted: only the ranks the quantiles read are put in
/// place, each by a selection (linear), where sorting a sample of a million latencies was a
/// tenth of a study's analysis.
///
/// NaN must never be passed (checked in debug builds), as for [`percentiles`].
pub fn quantiles(values: &mut [f64], qs: &[f64]) -> Vec<Option<f64>> {
    debug_assert!(
        values.iter().all(|v| !v.is_nan()),
        "quantiles of a sample containing NaN"
    );
    let Some(last) = values.len().checked_sub(1) else {
        return vec![None; qs.len()];
    };
    let mut ranks: Vec<usize> = qs
        .iter()
        .filter_map(|&q| linear_ranks(last, q))
        .flat_map(|(i, j, _)| [i, j])
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    select_ranks(values, &ranks, 0);
    qs.iter()
        .map(|&q| linear_ranks(last, q).map(|(i, j, t)| lerp(values[i], values[j], t)))
        .collect()
}

/// Puts each of `ranks` (ascending, offset by `offset` into `values`) in its sorted place, by
/// `f64::total_cmp`: the median rank first, then the ranks on each side of it.
fn select_ranks(values: &mut [f64], ranks: &[usize], offset: usize) {
    if ranks.is_empty() {
        return;
    }
    let mid = ranks.len() / 2;
    let at = ranks[mid] - offset;
    values.select_nth_unstable_by(at, f64::total_cmp);
    let (below, above) = values.split_at_mut(at);
    select_ranks(below, &ranks[..mid], offset);
    select_ranks(&mut above[1..], &ranks[mid + 1..], offset + at + 1);
}

/// The two ranks a linear quantile `q` of a sorted sample whose last index is `last` reads, and
/// the weight of the second; `None` for `q` outside [0, 1].
fn linear_ranks(last: usize, q: f64) -> Option<(usize, usize, f64)> {
    if !(0.0..=1.0).contains(&q) {
        return None;
    }
    let h = last as f64 * q;
    let below = h.floor();
    // `below` is in [0, last]: h ≤ last because q ≤ 1.
    let i = below as usize;
    Some((i, (i + 1).min(last), h - below))
}

/// p50, p90 and p99 of `values` ([`quantiles`], which reorders them).
///
/// NaN must never be passed: a NaN has no rank among latencies, so the caller drops missing
/// measurements before calling (checked in debug builds).
pub fn percentiles(values: &mut [f64]) -> Percentiles {
    let q = quantiles(values, &[0.5, 0.9, 0.99]);
    Percentiles {
        p50: q[0],
        p90: q[1],
        p99: q[2],
        count: values.len() as u64,
    }
}

// ---------------------------------------------------------------------------------------------
// Binomial probabilities and the exact McNemar test
// ---------------------------------------------------------------------------------------------

/// Stirling's error δ(k) = ln k! − [½ ln 2π + (k + ½) ln k − k], for k ≥ 1 (Loader 2000).
///
/// For k ≤ 15 it is computed from k! itself (exact in f64 up to 15!); above, from the asymptotic
/// series 1/(12k) − 1/(360k³) + 1/(1260k⁵) − 1/(1680k⁷) + 1/(1188k⁹), truncated where the next
/// term falls below 1e-16.
fn stirlerr(k: u64) -> f64 {
    const S0: f64 = 1.0 / 12.0;
    const S1: f64 = 1.0 / 360.0;
    const S2: f64 = 1.0 / 1260.0;
    const S3: f64 = 1.0 / 1680.0;
    const S4: f64 = 1.0 / 1188.0;
    debug_assert!(k >= 1);
    let x = k as f64;
    if k <= 15 {
        let factorial: f64 = (1..=k).map(|i| i as f64).product();
        return factorial.ln() - (x + 0.5) * x.ln() + x - LN_SQRT_2PI;
    }
    let xx = x * x;
    if k > 500 {
        (S0 - S1 / xx) / x
    } else if k > 80 {
        (S0 - (S1 - S2 / xx) / xx) / x
    } else if k > 35 {
        (S0 - (S1 - (S2 - S3 / xx) / xx) / xx) / x
    } else {
        (S0 - (S1 - (S2 - (S3 - S4 / xx) / xx) / xx) / xx) / x
    }
}

/// The deviance term bd0(x, μ) = x ln(x/μ) + μ − x, computed without cancellation when x ≈ μ
/// (Loader 2000).
fn bd0(x: f64, mu: f64) -> f64 {
    if (x - mu).abs() < 0.1 * (x + mu) {
        let v = (x - mu) / (x + mu);
        let mut s = (x - mu) * v;
        let mut ej = 2.0 * x * v;
        let v2 = v * v;
        for j in 1..MAX_ITER {
            ej *= v2;
            let next = s + ej / (2 * j + 1) as f64;
            if next == s {
                return next;
            }
            s = next;
        }
        s
    } else {
        x * (x / mu).ln() + mu - x
    }
}

/// ln P[X = k] for X ~ Binomial(n, ½), by Loader's (2000) saddle-point expansion, the algorithm
/// behind R's `dbinom`. Unlike differencing ln Γ values of size n ln n, it keeps full relative
/// precision for n in the millions.
fn ln_binom_half_pmf(k: u64, n: u64) -> f64 {
    debug_assert!(k <= n);
    if k == 0 || k == n {
        return -(n as f64) * std::f64::consts::LN_2;
    }
    let (x, nf) = (k as f64, n as f64);
    let half = 0.5 * nf;
    let lc = stirlerr(n) - stirlerr(k) - stirlerr(n - k) - bd0(x, half) - bd0(nf - x, half);
    // ln(2π k (n − k) / n)
    let lf = LN_2PI + x.ln() + (-x / nf).ln_1p();
    lc - 0.5 * lf
}

/// P[X ≤ k] for X ~ Binomial(n, ½) and k ≤ n / 2, summed in log space: ln P[X = k] once, then
/// the terms below it by the ratio P[X = i − 1] / P[X = i] = i / (n − i + 1) ≤ 1, largest first,
/// until they no longer change the sum. Underflows to 0 only when the true value is below
/// ~1e-308.
fn binom_half_lower_tail(k: u64, n: u64) -> f64 {
    debug_assert!(2 * (k as u128) <= n as u128);
    let ln_top = ln_binom_half_pmf(k, n);
    let nf = n as f64;
    let mut term = 1.0f64;
    let mut sum = 1.0f64;
    let mut i = k;
    while i > 0 {
        term *= i as f64 / (nf - i as f64 + 1.0);
        let next = sum + term;
        if next == sum {
            break;
        }
        sum = next;
        i -= 1;
    }
    (ln_top + sum.ln()).exp()
}

/// Exact two-sided McNemar p-value from the discordant counts: p = min(1, 2·P[X ≤ min(b, c)])
/// with X ~ Binomial(b + c, ½), the conditional test statsmodels computes with
/// `mcnemar(table, exact=True)`. 1 when there is no discordant pair. Accurate to ~1e-12
/// relative for b + c up to 10⁶ and beyond.
pub fn mcnemar_exact_p(b: u64, c: u64) -> f64 {
    let Some(n) = b.checked_add(c) else {
        // Beyond u64: the normal approximation is exact to far better than f64 can show.
        let z = (b as f64 - c as f64).abs() / (b as f64 + c as f64).sqrt();
        return (2.0 * normal_cdf(-z)).min(1.0);
    };
    if n == 0 {
        return 1.0;
    }
    (2.0 * binom_half_lower_tail(b.min(c), n)).min(1.0)
}

// ---------------------------------------------------------------------------------------------
// Normal distribution
// ---------------------------------------------------------------------------------------------

/// erfc(y) for y ≥ 0, as the regularized upper incomplete gamma function Q(½, y²): a power
/// series for P below y² = 1.5, the modified Lentz continued fraction for Q above
/// (Numerical Recipes §6.2). Relative error ~1e-15.
fn erfc_nonneg(y: f64) -> f64 {
    debug_assert!(y >= 0.0);
    let x = y * y;
    // e^{-x} x^{1/2} / Γ(½)
    let prefactor = (-x).exp() * y * FRAC_1_SQRT_PI;
    if x < 1.5 {
        // P(½, x) = prefactor · Σ_{k≥0} x^k / (½ (½+1) … (½+k))
        let mut ap = 0.5f64;
        let mut del = 1.0 / 0.5;
        let mut sum = del;
        for _ in 0..MAX_ITER {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-17 {
                break;
            }
        }
        1.0 - prefactor * sum
    } else {
        let a = 0.5;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / FPMIN;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..MAX_ITER {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < FPMIN {
                d = FPMIN;
            }
            c = b + an / c;
            if c.abs() < FPMIN {
                c = FPMIN;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-16 {
                break;
            }
        }
        prefactor * h
    }
}

/// The standard normal distribution function Φ(x) = ½ erfc(−x/√2); full relative precision in
/// the lower tail.
pub fn normal_cdf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    let y = x / std::f64::consts::SQRT_2;
    if y <= 0.0 {
        0.5 * erfc_nonneg(-y)
    } else {
        1.0 - 0.5 * erfc_nonneg(y)
    }
}

/// The standard normal quantile Φ⁻¹(p): Acklam's rational approximation (relative error
/// < 1.2e-9) refined by one Halley step on Φ(x) − p, which brings it to ~1e-15.
///
/// −∞ at p = 0, +∞ at p = 1, NaN outside [0, 1]. For p > ½ it is computed as −Φ⁻¹(1 − p), where
/// 1 − p is exact.
pub fn normal_quantile(p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p > 0.5 {
        -lower_normal_quantile(1.0 - p)
    } else {
        lower_normal_quantile(p)
    }
}

/// Φ⁻¹(p) for 0 < p ≤ ½.
fn lower_normal_quantile(p: f64) -> f64 {
    // Acklam (2003), "An algorithm for computing the inverse normal cumulative distribution
    // function".
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const P_LOW: f64 = 0.02425;
    debug_assert!(p > 0.0 && p <= 0.5);
    let x = if p < P_LOW {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    // One Halley step: u = (Φ(x) − p) / φ(x); x ← x − u / (1 + x·u/2).
    let density = (-0.5 * x * x).exp() / SQRT_2PI;
    if density > 0.0 {
        let u = (normal_cdf(x) - p) / density;
        if u.is_finite() {
            return x - u / (1.0 + 0.5 * x * u);
        }
    }
    x
}

// ---------------------------------------------------------------------------------------------
// Student t distribution
// ---------------------------------------------------------------------------------------------

/// ln Γ(x) for x > 0: the Lanczos approximation (g = 7, 9 coefficients), with the reflection
/// formula below ½. Relative error of Γ ~1e-15.
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const P: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = P[0];
    for (i, p) in P.iter().enumerate().skip(1) {
        a += p / (x + i as f64);
    }
    let t = x + G + 0.5;
    LN_SQRT_2PI + (x + 0.5) * t.ln() - t + a.ln()
}

/// The continued fraction of the regularized incomplete beta function (modified Lentz,
/// Numerical Recipes §6.4); `x` and `y = 1 − x` are passed separately to keep precision.
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    let qab = a + b;
    let qap = a + 1.0;
    let qam = a - 1.0;
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < FPMIN {
        d = FPMIN;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..MAX_ITER {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < FPMIN {
            d = FPMIN;
        }
        c = 1.0 + aa / c;
        if c.abs() < FPMIN {
            c = FPMIN;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < FPMIN {
            d = FPMIN;
        }
        c = 1.0 + aa / c;
        if c.abs() < FPMIN {
            c = FPMIN;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b), given x and y = 1 − x.
fn regularized_beta(a: f64, b: f64, x: f64, y: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if y <= 0.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * y.ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_continued_fraction(b, a, y) / b
    }
}

/// P[T > t] for t ≥ 0 and T ~ Student t with `df` degrees of freedom:
/// ½ I_{df/(df+t²)}(df/2, ½).
fn student_t_upper_tail(t: f64, df: f64) -> f64 {
    let t2 = t * t;
    let denominator = df + t2;
    0.5 * regularized_beta(0.5 * df, 0.5, df / denominator, t2 / denominator)
}

/// The Student t distribution function with `df` > 0 degrees of freedom (NaN for df ≤ 0).
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t >= 0.0 {
        1.0 - student_t_upper_tail(t, df)
    } else {
        student_t_upper_tail(-t, df)
    }
}

/// The Student t quantile with `df` > 0 degrees of freedom, by bisection on the tail
/// probability (computed from the regularized incomplete beta function) to machine precision.
/// NaN for p outside [0, 1] or df ≤ 0; ∓∞ at p = 0 and 1.
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p == 0.5 {
        return 0.0;
    }
    // The tail probability is exact: p itself below ½, 1 − p (exact for p ≥ ½) above.
    let (tail, sign) = if p < 0.5 { (p, -1.0) } else { (1.0 - p, 1.0) };
    if tail == 0.0 {
        return sign * f64::INFINITY;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while student_t_upper_tail(hi, df) > tail {
        lo = hi;
        hi *= 2.0;
        if !hi.is_finite() {
            return sign * f64::INFINITY;
        }
    }
    for _ in 0..MAX_ITER {
        let mid = lo + 0.5 * (hi - lo);
        if mid <= lo || mid >= hi {
            break;
        }
        if student_t_upper_tail(mid, df) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    sign * (lo + 0.5 * (hi - lo))
}

// ---------------------------------------------------------------------------------------------
// Tango's score interval and the paired verdict
// ---------------------------------------------------------------------------------------------

/// Tango's (1998) score statistic for H0: Δ = d, with Δ = (c − b)/n (candidate minus baseline).
///
/// In Tango's notation the table is (x11, x12; x21, x22) and Δ = (x12 − x21)/n; here x12 = c
/// (candidate accepted, baseline rejected) and x21 = b (baseline accepted, candidate rejected),
/// so the sign of Δ is "candidate minus baseline". Under H0 the restricted maximum-likelihood
/// estimate q̃ of P(baseline accepts, candidate rejects) is the larger root of
///
/// ```text
///   A q² + B q + C = 0,   A = 2n,   B = −b − c + (2n − c + b)·d,   C = −b·d·(1 − d)
///   q̃ = (−B + √(B² − 4AC)) / 2A
/// ```
///
/// and the statistic is
///
/// ```text
///   Z(d) = (c − b − n·d) / √(n·(2q̃ + d·(1 − d)))
/// ```
///
/// (n·Var(Δ̂) = P(c-cell) + P(b-cell) − Δ² = 2q + d(1 − d) when P(c-cell) = q + d.) Z is +∞ at
/// d = −1 and −∞ at d = 1 (the variance vanishes there) unless the data sit on that boundary.
fn tango_score(b: f64, c: f64, n: f64, d: f64) -> f64 {
    let a = 2.0 * n;
    let bq = -b - c + (2.0 * n - c + b) * d;
    let cq = -b * d * (1.0 - d);
    let root = (bq * bq - 4.0 * a * cq).max(0.0).sqrt();
    // The larger root, without cancellation when B > 0 (roots multiply to C/A).
    let q = if bq <= 0.0 {
        (root - bq) / (2.0 * a)
    } else {
        -2.0 * cq / (bq + root)
    };
    let numerator = c - b - n * d;
    let variance = n * (2.0 * q + d * (1.0 - d));
    if variance > 0.0 {
        numerator / variance.sqrt()
    } else if numerator > 0.0 {
        f64::INFINITY
    } else if numerator < 0.0 {
        f64::NEG_INFINITY
    } else {
        0.0
    }
}

/// The d in (lo, hi) where a decreasing `f` crosses `target`, by bisection to machine precision.
/// Requires f > target just above `lo` and f ≤ target at `hi`; `f` is evaluated at interior
/// points only.
fn bisect_decreasing(f: impl Fn(f64) -> f64, target: f64, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..MAX_ITER {
        let mid = lo + 0.5 * (hi - lo);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo + 0.5 * (hi - lo)
}

/// Tango's (1998) score confidence interval at confidence `level` (e.g. 0.90 = 1 − 2α for a
/// one-sided test at α = 0.05) for Δ = (c − b)/n, the candidate's acceptance rate minus the
/// baseline's: `c` counts items the baseline rejected and the candidate accepted, `b` items the
/// baseline accepted and the candidate rejected (see [`tango_score`] for the formula).
///
/// The interval is {d : |Z(d)| ≤ z}, z = Φ⁻¹(1 − (1 − level)/2): the lower bound solves
/// Z(d) = z on (−1, Δ̂), the upper bound Z(d) = −z on (Δ̂, 1), both by bisection. On the
/// boundaries: b = n gives a lower bound of −1 and c = n an upper bound of 1 (Δ̂ itself); with
/// b + c = 0 the bounds are ∓z²/(n + z²); the interval never leaves [−1, 1].
///
/// `None` when n = 0, when b + c > n, or when `level` is not strictly between 0 and 1.
pub fn tango_interval(b: u64, c: u64, n: u64, level: f64) -> Option<(f64, f64)> {
    if n == 0 || (b as u128 + c as u128) > n as u128 || !(level > 0.0 && level < 1.0) {
        return None;
    }
    let z = normal_quantile(1.0 - (1.0 - level) / 2.0);
    let (bf, cf, nf) = (b as f64, c as f64, n as f64);
    let estimate = (cf - bf) / nf;
    let score = |d: f64| tango_score(bf, cf, nf, d);
    let low = if b == n {
        -1.0
    } else {
        bisect_decreasing(score, z, -1.0, estimate)
    };
    let high = if c == n {
        1.0
    } else {
        bisect_decreasing(score, -z, estimate, 1.0)
    };
    Some((low, high))
}

/// Holm's step-down adjusted p-values, in the order of the input: with p sorted ascending,
/// p̃_(i) = max_{j ≤ i} min(1, (m − j + 1)·p_(j)) (i, j from 1). Monotone in p and capped at 1;
/// equal to statsmodels' `multipletests(p, method='holm')[1]`. The p-values must be in [0, 1]
/// (checked in debug builds).
pub fn holm(p: &[f64]) -> Vec<f64> {
    debug_assert!(
        p.iter().all(|v| (0.0..=1.0).contains(v)),
        "holm needs p-values in [0, 1]"
    );
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// The per-test level of a Bonferroni correction over `m` tests: α/m, or α itself when m = 0.
pub fn bonferroni_alpha(alpha: f64, m: usize) -> f64 {
    if m == 0 {
        alpha
    } else {
        alpha / m as f64
    }
}

/// What a paired comparison shows about the candidate against a non-inferiority margin. There is
/// no "equivalent": an interval straddling −margin is a lack of evidence, not a pass.
#[derive(Serialize, Deserialize, TS, JsonSchema, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum PairedVerdict {
    /// The whole interval lies above −margin: the candidate is at most `margin` worse.
    NonInferior,
    /// The whole interval lies below −margin: the candidate is more than `margin` worse.
    Inferior,
    /// The interval contains −margin (or there are no pairs): undecided.
    CollectMoreEvidence,
}

impl PairedVerdict {
    /// The verdict of an interval for Δ (candidate minus baseline): non-inferior when
    /// ci_low > −margin, inferior when ci_high < −margin, otherwise collect more evidence.
    pub fn from_interval(ci_low: f64, ci_high: f64, margin: f64) -> PairedVerdict {
        if ci_low > -margin {
            PairedVerdict::NonInferior
        } else if ci_high < -margin {
            PairedVerdict::Inferior
        } else {
            PairedVerdict::CollectMoreEvidence
        }
    }

    /// The verdict in words, as shown to a reader.
    pub fn as_text(self) -> &'static str {
        match self {
            PairedVerdict::NonInferior => "non-inferior",
            PairedVerdict::Inferior => "inferior",
            PairedVerdict::CollectMoreEvidence => "collect more evidence",
        }
    }
}

/// The paired comparison of a candidate with the baseline on `n` items.
#[derive(Serialize, Deserialize, TS, JsonSchema, Debug, Clone, PartialEq)]
pub struct PairedStats {
    /// Paired items.
    pub n: u64,
    /// Items the baseline accepted and the candidate rejected.
    pub b: u64,
    /// Items the baseline rejected and the candidate accepted.
    pub c: u64,
    /// Δ = (c − b)/n, candidate minus baseline acceptance rate; `None` when n = 0.
    pub delta: Option<f64>,
    /// Exact two-sided McNemar p-value (1 when b + c = 0).
    pub mcnemar_p: f64,
    /// Lower bound of Tango's interval for Δ at `level`; `None` when n = 0.
    pub ci_low: Option<f64>,
    /// Upper bound of Tango's interval for Δ at `level`; `None` when n = 0.
    pub ci_high: Option<f64>,
    /// Confidence level of the interval, 1 − 2·alpha.
    pub level: f64,
    /// Non-inferiority margin on Δ.
    pub margin: f64,
    /// One-sided significance level of the non-inferiority test.
    pub alpha: f64,
    pub verdict: PairedVerdict,
}

/// The paired comparison: Δ, the exact McNemar p-value, Tango's interval at level 1 − 2·alpha
/// (whose lower bound is the one-sided level-alpha non-inferiority test) and the verdict against
/// `margin`. With n = 0 there is no Δ and no interval, and the verdict is collect more evidence.
///
/// Refused unless b + c ≤ n, 0 < alpha < 0.5 and 0 ≤ margin < 1 (both finite).
pub fn paired_stats(
    b: u64,
    c: u64,
    n: u64,
    margin: f64,
    alpha: f64,
) -> Result<PairedStats, StatsError> {
    if !(alpha > 0.0 && alpha < 0.5) {
        return Err(out_of_range(
            "alpha",
            "a number with 0 < alpha < 0.5",
            alpha,
        ));
    }
    if !(0.0..1.0).contains(&margin) {
        return Err(out_of_range(
            "margin",
            "a number with 0 <= margin < 1",
            margin,
        ));
    }
    let sum = b as u128 + c as u128;
    if sum > n as u128 {
        return Err(StatsError::DiscordantExceedPairs { b, c, n, sum });
    }
    let level = 1.0 - 2.0 * alpha;
    let interval = tango_interval(b, c, n, level);
    let verdict = match interval {
        Some((low, high)) => PairedVerdict::from_interval(low, high, margin),
        None => PairedVerdict::CollectMoreEvidence,
    };
    Ok(PairedStats {
        n,
        b,
        c,
        delta: (n > 0).then(|| (c as f64 - b as f64) / n as f64),
        mcnemar_p: mcnemar_exact_p(b, c),
        ci_low: interval.map(|i| i.0),
        ci_high: interval.map(|i| i.1),
        level,
        margin,
        alpha,
        verdict,
    })
}

// ---------------------------------------------------------------------------------------------
// The planner
// ---------------------------------------------------------------------------------------------

/// How many paired items a non-inferiority comparison needs.
#[derive(Serialize, Deserialize, TS, JsonSchema, Debug, Clone, PartialEq)]
pub struct PairsPlan {
    /// Non-inferiority margin on Δ.
    pub margin: f64,
    /// Expected share of discordant pairs ψ = (b + c)/n.
    pub discordance_rate: f64,
    /// One-sided significance level.
    pub alpha: f64,
    /// Probability of concluding non-inferiority when the true Δ is 0.
    pub power: f64,
    /// Paired items needed, rounded up.
    pub pairs: u64,
}

/// Paired items needed to show non-inferiority at `margin` m with one-sided level `alpha` and
/// the given `power`, when the true Δ is 0 and a share ψ = `discordance_rate` of pairs is
/// discordant. Nam's (1997) score-test formula (Biometrics 53:1422–1430), which is the test
/// Tango's interval inverts; with m = 0 it reduces to Connor's (1987) McNemar formula:
///
/// ```text
///   n = ⌈ (z_{1−α}·σ₀ + z_{power}·σ₁)² / m² ⌉
///   σ₁² = ψ − Δ₁² = ψ                                   (variance of √n·Δ̂ under H1: Δ₁ = 0)
///   σ₀² = 2q̃ + δ₀(1 − δ₀) = 2q̃ − m(1 + m)                (under H0: δ₀ = −m)
///   q̃  = (ψ + 2m + √((ψ + 2m)² − 4ψ·m(1 + m))) / 4
/// ```
///
/// where q̃ is the restricted maximum-likelihood estimate of P(baseline accepts, candidate
/// rejects) under H0 evaluated at the expected table under H1 (both discordant cells ψ/2): the
/// quadratic of [`tango_score`] divided by n, with b/n = c/n = ψ/2 and d = −m.
///
/// Refused unless 0 < margin < 1, 0 ≤ discordance_rate ≤ 1, 0 < alpha < 0.5 and
/// 0.5 ≤ power < 1, or when the answer exceeds 2⁵³.
pub fn required_pairs(
    margin: f64,
    discordance_rate: f64,
    alpha: f64,
    power: f64,
) -> Result<u64, StatsError> {
    if !(margin > 0.0 && margin < 1.0) {
        return Err(out_of_range(
            "margin",
            "a number with 0 < margin < 1",
            margin,
        ));
    }
    if !(0.0..=1.0).contains(&discordance_rate) {
        return Err(out_of_range(
            "discordance_rate",
            "a number with 0 <= discordance_rate <= 1",
            discordance_rate,
        ));
    }
    if !(alpha > 0.0 && alpha < 0.5) {
        return Err(out_of_range(
            "alpha",
            "a number with 0 < alpha < 0.5",
            alpha,
        ));
    }
    if !(0.5..1.0).contains(&power) {
        return Err(out_of_range(
            "power",
            "a number with 0.5 <= power < 1",
            power,
        ));
    }
    let (m, psi) = (margin, discordance_rate);
    let s = psi + 2.0 * m;
    let q = (s + (s * s - 4.0 * psi * m * (1.0 + m)).max(0.0).sqrt()) / 4.0;
    let sigma0 = (2.0 * q - m * (1.0 + m)).max(0.0).sqrt();
    let sigma1 = psi.sqrt();
    let z_alpha = normal_quantile(1.0 - alpha);
    let z_power = normal_quantile(power);
    let root = z_alpha * sigma0 + z_power * sigma1;
    let pairs = (root * root / (m * m)).ceil();
    if pairs.is_nan() || pairs > MAX_EXACT_PAIRS as f64 {
        return Err(StatsError::TooManyPairs {
            found: pairs,
            max: MAX_EXACT_PAIRS,
        });
    }
    Ok(pairs as u64)
}

/// [`required_pairs`] with its inputs, for display and storage.
pub fn pairs_plan(
    margin: f64,
    discordance_rate: f64,
    alpha: f64,
    power: f64,
) -> Result<PairsPlan, StatsError> {
    Ok(PairsPlan {
        margin,
        discordance_rate,
        alpha,
        power,
        pairs: required_pairs(margin, discordance_rate, alpha, power)?,
    })
}

// ---------------------------------------------------------------------------------------------
// Repeated runs
// ---------------------------------------------------------------------------------------------

/// Mean of repeated measurements (e.g. goodput of repeated load runs) with a 95% t interval.
#[derive(Serialize, Deserialize, TS, JsonSchema, Debug, Clone, PartialEq)]
pub struct RepeatSummary {
    /// Number of repeats.
    pub n: u64,
    /// Arithmetic mean; `None` without repeats.
    pub mean: Option<f64>,
    /// Sample standard deviation (n − 1 denominator); `None` below two repeats.
    pub sd: Option<f64>,
    /// Lower bound of mean ± t_{0.975, n−1}·sd/√n; `None` below two repeats.
    pub ci_low: Option<f64>,
    /// Upper bound of mean ± t_{0.975, n−1}·sd/√n; `None` below two repeats.
    pub ci_high: Option<f64>,
}

/// Mean, sample standard deviation and the 95% Student t interval of the mean
/// ([`REPEAT_LEVEL`]); sd and interval need at least two values. Values must be finite
/// (checked in debug builds).
pub fn repeat_summary(values: &[f64]) -> RepeatSummary {
    debug_assert!(
        values.iter().all(|v| v.is_finite()),
        "repeat_summary of non-finite values"
    );
    let n = values.len();
    let mut summary = RepeatSummary {
        n: n as u64,
        mean: None,
        sd: None,
        ci_low: None,
        ci_high: None,
    };
    if n == 0 {
        return summary;
    }
    let nf = n as f64;
    let mean = values.iter().sum::<f64>() / nf;
    summary.mean = Some(mean);
    if n < 2 {
        return summary;
    }
    let squares: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    let sd = (squares / (nf - 1.0)).sqrt();
    let t = student_t_quantile(1.0 - (1.0 - REPEAT_LEVEL) / 2.0, nf - 1.0);
    let half_width = t * sd / nf.sqrt();
    summary.sd = Some(sd);
    summary.ci_low = Some(mean - half_width);
    summary.ci_high = Some(mean + half_width);
    summary
}

#[cfg(test)]
mod tests {
    //! Reference values come from a scratch Python 3.11 venv with numpy 2.4.6, scipy 1.17.1 and
    //! statsmodels 0.15.0 (`python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install scipy
    //! statsmodels numpy`); next to every value is the expression that produced it, printed with
    //! `repr(float(...))`.

    use super::*;

    /// |actual − expected| ≤ rel·|expected| (exact equality when expected is 0 or infinite).
    #[track_caller]
    fn close(actual: f64, expected: f64, rel: f64) {
        if expected == 0.0 || expected.is_infinite() {
            assert_eq!(actual, expected);
            return;
        }
        let err = ((actual - expected) / expected).abs();
        assert!(
            err <= rel,
            "actual {actual:e}, expected {expected:e}, relative error {err:e} > {rel:e}"
        );
    }

    /// |actual − expected| ≤ abs.
    #[track_caller]
    fn near(actual: f64, expected: f64, abs: f64) {
        assert!(
            (actual - expected).abs() <= abs,
            "actual {actual:e}, expected {expected:e}, difference {:e} > {abs:e}",
            (actual - expected).abs()
        );
    }

    // ----- percentiles -----

    #[test]
    fn percentile_linear_matches_numpy() {
        let x = [12.5, 3.0, 7.25, 100.0, 42.0, 8.5, 15.0];
        let mut sorted = x;
        sorted.sort_by(f64::total_cmp);
        // numpy.percentile(x, [50, 90, 99]) with x = [12.5, 3.0, 7.25, 100.0, 42.0, 8.5, 15.0]
        close(percentile_linear(&sorted, 0.5).unwrap(), 12.5, 1e-15);
        close(
            percentile_linear(&sorted, 0.9).unwrap(),
            65.20000000000002,
            1e-15,
        );
        close(
            percentile_linear(&sorted, 0.99).unwrap(),
            96.51999999999997,
            1e-15,
        );
        // numpy.percentile(x, 25), numpy.quantile(x, 0.333), same x
        close(percentile_linear(&sorted, 0.25).unwrap(), 7.875, 1e-15);
        close(percentile_linear(&sorted, 0.333).unwrap(), 8.4975, 1e-15);
        assert_eq!(percentile_linear(&sorted, 0.0), Some(3.0));
        assert_eq!(percentile_linear(&sorted, 1.0), Some(100.0));

        // numpy.percentile(y, [50, 90, 99]) with y = [float(i) ** 1.5 for i in range(1, 101)]
        let y: Vec<f64> = (1..=100).map(|i| (i as f64).powf(1.5)).collect();
        close(
            percentile_linear(&y, 0.5).unwrap(),
            358.88312022447957,
            1e-9,
        );
        close(percentile_linear(&y, 0.9).unwrap(), 855.2419387498584, 1e-9);
        close(
            percentile_linear(&y, 0.99).unwrap(),
            985.1871871081983,
            1e-9,
        );

        // numpy.percentile([1.0, 2.0], [50, 90, 99]) -> 1.5, 1.9, 1.99
        close(percentile_linear(&[1.0, 2.0], 0.5).unwrap(), 1.5, 1e-15);
        close(percentile_linear(&[1.0, 2.0], 0.9).unwrap(), 1.9, 1e-15);
        close(percentile_linear(&[1.0, 2.0], 0.99).unwrap(), 1.99, 1e-15);
        // numpy.percentile([4.0], [50, 90, 99]) -> 4.0 each
        assert_eq!(percentile_linear(&[4.0], 0.99), Some(4.0));

        assert_eq!(percentile_linear(&[], 0.5), None);
        assert_eq!(percentile_linear(&[1.0], -0.1), None);
        assert_eq!(percentile_linear(&[1.0], 1.1), None);
        assert_eq!(percentile_linear(&[1.0], f64::NAN), None);
    }

    /// Selection gives what sorting gives, bit for bit, on samples that try to fool it: both
    /// zeros, subnormals, infinities, repeats, values sharing their high bytes, a quantile
    /// reading two equal neighbours, q = 0 and 1 and outside [0, 1], every short length.
    #[test]
    fn quantiles_by_selection_are_the_sorted_samples_bit_for_bit() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let special = [
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            f64::from_bits(1),
            -f64::from_bits(1),
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
            1.0,
            -1.0,
        ];
        let mut qs: Vec<f64> = (0..=100).map(|q| f64::from(q) / 100.0).collect();
        qs.extend([0.999, 0.333, 1e-9, -0.1, 1.5]);
        for len in (0..40).chain([100, 101, 1000, 4096, 20_000]) {
            for shape in 0..4 {
                let x: Vec<f64> = (0..len)
                    .map(|i| match shape {
                        // Latency-like: positive milliseconds with a few decimals.
                        0 => (next() % 5_000_000) as f64 / 1000.0,
                        // Any bits but NaN's.
                        1 => Some(f64::from_bits(next()))
                            .filter(|x| !x.is_nan())
                            .unwrap_or(2.5),
                        // Special values mixed with repeats.
                        2 => special[(next() % special.len() as u64) as usize],
                        // Values sharing their high bytes: one byte varies.
                        _ => f64::from_bits(0x4059_0000_0000_0000 | ((i as u64 * 7919) % 256) << 8),
                    })
                    .collect();
                let mut sorted = x.clone();
                sorted.sort_by(f64::total_cmp);
                let want: Vec<Option<u64>> = qs
                    .iter()
                    .map(|&q| percentile_linear(&sorted, q).map(f64::to_bits))
                    .collect();
                let mut got = x.clone();
                let got: Vec<Option<u64>> = quantiles(&mut got, &qs)
                    .into_iter()
                    .map(|v| v.map(f64::to_bits))
                    .collect();
                assert_eq!(got, want, "length {len}, shape {shape}");
                let mut again = x;
                let p = percentiles(&mut again);
                assert_eq!(
                    [p.p50, p.p90, p.p99].map(|v| v.map(f64::to_bits)),
                    [want[50], want[90], want[99]],
                    "length {len}, shape {shape}"
                );
                assert_eq!(p.count, len as u64);
            }
        }
    }

    #[test]
    fn percentiles_and_count() {
        let mut x = vec![12.5, 3.0, 7.25, 100.0, 42.0, 8.5, 15.0];
        let p = percentiles(&mut x);
        // Reordered, the same values.
        x.sort_by(f64::total_cmp);
        assert_eq!(x, [3.0, 7.25, 8.5, 12.5, 15.0, 42.0, 100.0]);
        // numpy.percentile([12.5, 3.0, 7.25, 100.0, 42.0, 8.5, 15.0], [50, 90, 99])
        assert_eq!(p.count, 7);
        close(p.p50.unwrap(), 12.5, 1e-15);
        close(p.p90.unwrap(), 65.20000000000002, 1e-15);
        close(p.p99.unwrap(), 96.51999999999997, 1e-15);
        assert_eq!(
            percentiles(&mut []),
            Percentiles {
                p50: None,
                p90: None,
                p99: None,
                count: 0
            }
        );
    }

    // ----- McNemar -----

    #[test]
    fn mcnemar_matches_statsmodels() {
        // Each: statsmodels.stats.contingency_tables.mcnemar([[0, b], [c, 0]], exact=True).pvalue,
        // identical to scipy.stats.binomtest(min(b, c), b + c, 0.5).pvalue.
        let cases: [(u64, u64, f64); 12] = [
            (3, 17, 0.0025768280029296875),
            (0, 5, 0.0625),
            (1, 0, 1.0),
            (7, 7, 1.0),
            (7, 8, 1.0),
            (20, 40, 0.01348929373119186),
            (0, 30, 1.862645149230957e-09),
            (4800, 5200, 6.593515598672343e-05),
            (499_000, 501_000, 0.0456082998653896),
            (123_456, 130_000, 1.2691453365218637e-38),
            (0, 1000, 1.8665272370064378e-301),
            (250, 750, 1.3476256506030887e-58),
        ];
        for (b, c, expected) in cases {
            close(mcnemar_exact_p(b, c), expected, 1e-9);
            close(mcnemar_exact_p(c, b), expected, 1e-9);
        }
        // scipy.stats.binomtest(4, 10, 0.5).pvalue
        close(mcnemar_exact_p(4, 6), 0.75390625, 1e-12);
    }

    #[test]
    fn mcnemar_edges_never_give_nan() {
        // No discordant pair: no evidence either way.
        assert_eq!(mcnemar_exact_p(0, 0), 1.0);
        assert_eq!(mcnemar_exact_p(1_000_000, 1_000_000), 1.0);
        // 2 * scipy.stats.binom.cdf(0, 2_000_000, 0.5) == 0.0 (below the smallest double)
        assert_eq!(mcnemar_exact_p(0, 2_000_000), 0.0);
        // min(1.0, 2 * scipy.stats.binom.cdf(999_000, 2_000_000, 0.5))
        close(
            mcnemar_exact_p(999_000, 1_001_000),
            0.15750684732293474,
            1e-9,
        );
        let p = mcnemar_exact_p(u64::MAX / 2, u64::MAX / 2 + 5);
        assert!(p.is_finite() && (0.0..=1.0).contains(&p), "{p}");
    }

    #[test]
    fn loader_pmf_agrees_with_direct_small_counts() {
        // C(10, 3) / 2^10 = 120 / 1024, C(20, 10) / 2^20 = 184756 / 1048576: exact rationals.
        close(ln_binom_half_pmf(3, 10).exp(), 120.0 / 1024.0, 1e-14);
        close(
            ln_binom_half_pmf(10, 20).exp(),
            184_756.0 / 1_048_576.0,
            1e-14,
        );
        // Across the k = 15 / 16 switch of stirlerr: C(40, 16) / 2^40 = 62852101650 / 2^40.
        close(
            ln_binom_half_pmf(16, 40).exp(),
            62_852_101_650.0 / 1_099_511_627_776.0,
            1e-14,
        );
    }

    // ----- Holm and Bonferroni -----

    #[test]
    fn holm_matches_statsmodels() {
        // statsmodels.stats.multitest.multipletests(p, method='holm')[1]
        // with p = [0.01, 0.04, 0.03, 0.005, 0.5, 0.04]
        let p = [0.01, 0.04, 0.03, 0.005, 0.5, 0.04];
        let expected = [0.05, 0.12, 0.12, 0.03, 0.5, 0.12];
        for (a, e) in holm(&p).into_iter().zip(expected) {
            close(a, e, 1e-12);
        }
        // multipletests([0.3, 0.2, 0.9], method='holm')[1]
        //   -> [0.6000000000000001, 0.6000000000000001, 0.9]
        let adjusted = holm(&[0.3, 0.2, 0.9]);
        close(adjusted[0], 0.6000000000000001, 1e-12);
        close(adjusted[1], 0.6000000000000001, 1e-12);
        close(adjusted[2], 0.9, 1e-12);
        // Capped at 1, and empty stays empty.
        assert_eq!(holm(&[0.6, 0.7]), [1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn bonferroni_divides_by_the_number_of_tests() {
        assert_eq!(bonferroni_alpha(0.05, 0), 0.05);
        assert_eq!(bonferroni_alpha(0.05, 1), 0.05);
        close(bonferroni_alpha(0.05, 4), 0.0125, 1e-15);
    }

    // ----- normal and Student t -----

    #[test]
    fn normal_quantile_matches_scipy() {
        // Each: scipy.stats.norm.ppf(p)
        let cases = [
            (1e-300, -37.0470962993612),
            (1e-20, -9.262340089798409),
            (1e-10, -6.361340902404056),
            (0.001, -3.090232306167813),
            (0.02, -2.053748910631823),
            (0.02425, -1.972961051311885),
            (0.025, -1.9599639845400545),
            (0.05, -1.6448536269514729),
            (0.3, -0.5244005127080409),
            (0.8, 0.8416212335729143),
            (0.95, 1.6448536269514722),
            (0.975, 1.959963984540054),
            (0.999999, 4.753424308817087),
        ];
        for (p, expected) in cases {
            close(normal_quantile(p), expected, 1e-12);
        }
        assert_eq!(normal_quantile(0.5), 0.0);
        assert_eq!(normal_quantile(0.0), f64::NEG_INFINITY);
        assert_eq!(normal_quantile(1.0), f64::INFINITY);
        assert!(normal_quantile(1.5).is_nan());
        assert!(normal_quantile(-0.1).is_nan());
        assert!(normal_quantile(f64::NAN).is_nan());
    }

    #[test]
    fn normal_cdf_matches_scipy() {
        // scipy.stats.norm.cdf(-1.5), norm.cdf(0.3), norm.cdf(-10.0)
        close(normal_cdf(-1.5), 0.06680720126885807, 1e-13);
        close(normal_cdf(0.3), 0.6179114221889526, 1e-13);
        close(normal_cdf(-10.0), 7.61985302416047e-24, 1e-12);
        assert_eq!(normal_cdf(0.0), 0.5);
    }

    #[test]
    fn student_t_matches_scipy() {
        // Each: scipy.stats.t.ppf(0.975, df)
        let cases = [
            (1.0, 12.706204736174694),
            (2.0, 4.302652729749462),
            (3.0, 3.1824463052837078),
            (4.0, 2.7764451051977934),
            (9.0, 2.262157162798205),
            (29.0, 2.045229642132703),
            (100.0, 1.9839715185235518),
            (1000.0, 1.9623390808264083),
        ];
        for (df, expected) in cases {
            close(student_t_quantile(0.975, df), expected, 1e-10);
            close(student_t_quantile(0.025, df), -expected, 1e-10);
        }
        // scipy.stats.t.ppf(0.9, 5), scipy.stats.t.ppf(1e-8, 3)
        close(student_t_quantile(0.9, 5.0), 1.4758840488244815, 1e-10);
        close(student_t_quantile(1e-8, 3.0), -479.5250695797382, 1e-10);
        // scipy.stats.t.cdf(-2.5, 7), scipy.stats.t.cdf(0.4, 3.5)
        close(student_t_cdf(-2.5, 7.0), 0.020496109292876444, 1e-12);
        close(student_t_cdf(0.4, 3.5), 0.6438275532327782, 1e-12);
        assert_eq!(student_t_quantile(0.5, 4.0), 0.0);
        assert!(student_t_quantile(0.9, 0.0).is_nan());
        assert!(student_t_quantile(1.2, 3.0).is_nan());
        assert_eq!(student_t_quantile(1.0, 3.0), f64::INFINITY);
    }

    #[test]
    fn ln_gamma_known_values() {
        // ln Γ(½) = ln √π; Γ(5) = 24; Γ(0.1) = scipy.special.gamma(0.1) = 9.513507698668732
        close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-14);
        close(ln_gamma(5.0), 24f64.ln(), 1e-14);
        close(ln_gamma(0.1), 9.513507698668732f64.ln(), 1e-13);
    }

    // ----- repeats -----

    #[test]
    fn repeat_summary_matches_numpy_and_scipy() {
        // a = numpy.array([101.2, 98.7, 103.5, 99.9, 100.4]); numpy.mean(a); numpy.std(a, ddof=1);
        // scipy.stats.t.interval(0.95, len(a) - 1, loc=numpy.mean(a), scale=scipy.stats.sem(a))
        let s = repeat_summary(&[101.2, 98.7, 103.5, 99.9, 100.4]);
        assert_eq!(s.n, 5);
        close(s.mean.unwrap(), 100.73999999999998, 1e-14);
        close(s.sd.unwrap(), 1.7896927110540497, 1e-12);
        close(s.ci_low.unwrap(), 98.51780299283648, 1e-12);
        close(s.ci_high.unwrap(), 102.96219700716348, 1e-12);
        // Same expressions with a = numpy.array([5.0, 7.0]) (df = 1)
        let s = repeat_summary(&[5.0, 7.0]);
        close(s.mean.unwrap(), 6.0, 1e-15);
        // numpy.std([5.0, 7.0], ddof=1) = 1.4142135623730951, i.e. √2
        close(s.sd.unwrap(), std::f64::consts::SQRT_2, 1e-14);
        close(s.ci_low.unwrap(), -6.706204736174694, 1e-10);
        close(s.ci_high.unwrap(), 18.706204736174694, 1e-10);

        let one = repeat_summary(&[3.5]);
        assert_eq!(
            (one.n, one.mean, one.sd, one.ci_low),
            (1, Some(3.5), None, None)
        );
        let none = repeat_summary(&[]);
        assert_eq!((none.n, none.mean, none.ci_high), (0, None, None));
    }

    // ----- Tango -----

    // Reference implementation of Tango (1998) in the scratch venv (the published formula,
    // solved with scipy.optimize.brentq; no scipy/statsmodels function computes it):
    //
    //     import numpy as np
    //     from scipy import stats
    //     from scipy.optimize import brentq
    //     def tango(b, c, n, level):
    //         z = stats.norm.ppf(1 - (1 - level) / 2)
    //         def Z(d):
    //             A = 2 * n
    //             B = -b - c + (2 * n - c + b) * d
    //             C = -b * d * (1 - d)
    //             q = (np.sqrt(max(0.0, B * B - 4 * A * C)) - B) / (2 * A)
    //             return (c - b - n * d) / np.sqrt(n * (2 * q + d * (1 - d)))
    //         eps = 1e-13
    //         lo = -1.0 if b == n else brentq(lambda d: Z(d) - z, -1 + eps, 1 - eps,
    //                                         xtol=1e-15, rtol=8.9e-16, maxiter=500)
    //         hi = 1.0 if c == n else brentq(lambda d: Z(d) + z, -1 + eps, 1 - eps,
    //                                        xtol=1e-15, rtol=8.9e-16, maxiter=500)
    //         return lo, hi
    //
    // (the same bracket and formula as R's contingencytables::Tango_asymptotic_score_CI_paired_2x2,
    // where Δ = (n12 − n21)/N, i.e. n12 = c and n21 = b here).
    const TANGO_CASES: [(u64, u64, u64, f64, f64, f64); 13] = [
        // (b, c, n, level, tango(b, c, n, level)[0], tango(b, c, n, level)[1])
        (
            40,
            20,
            160,
            0.95,
            -0.21806424416682477,
            -0.03086453313308692,
        ),
        // Bentur et al. (2009) table of contingencytables' example (n12 = 1, n21 = 7, N = 21).
        (7, 1, 21, 0.95, -0.5172322764213774, -0.026003032480868507),
        (5, 3, 50, 0.90, -0.14351426884980722, 0.05945198131012757),
        (0, 0, 30, 0.90, -0.08272430812509932, 0.08272430812509934),
        (0, 6, 40, 0.90, 0.07714353405772312, 0.2647438857314028),
        (6, 0, 40, 0.90, -0.2647438857314028, -0.07714353405772367),
        (0, 25, 25, 0.90, 0.804692987987898, 1.0),
        (25, 0, 25, 0.90, -1.0, -0.804692987987899),
        (10, 15, 25, 0.90, -0.1263348961777781, 0.48727349377535767),
        (
            4800,
            5200,
            100_000,
            0.90,
            0.0023554788845784676,
            0.005645278539770056,
        ),
        (60, 20, 400, 0.90, -0.13685981249029017, -0.0645438622812918),
        (1, 0, 1, 0.95, -1.0, 0.5869013712455252),
        (
            3,
            1,
            1000,
            0.90,
            -0.006596411984777129,
            0.001772971345711523,
        ),
    ];

    #[test]
    fn tango_matches_the_reference_implementation() {
        for (b, c, n, level, low, high) in TANGO_CASES {
            let (l, h) = tango_interval(b, c, n, level).unwrap();
            near(l, low, 1e-9);
            near(h, high, 1e-9);
            let estimate = (c as f64 - b as f64) / n as f64;
            assert!(l <= estimate && estimate <= h, "{b} {c} {n}");
            assert!((-1.0..=1.0).contains(&l) && (-1.0..=1.0).contains(&h));
        }
    }

    #[test]
    fn tango_boundaries_have_closed_forms() {
        let z = normal_quantile(0.95);
        let z2 = z * z;
        // b + c = 0: Z(d) = ∓√(n|d|/(1 ∓ d)), so the bounds are ∓z²/(n + z²).
        // z**2 / (30 + z**2) with z = scipy.stats.norm.ppf(0.95) -> 0.08272430812509929
        let (l, h) = tango_interval(0, 0, 30, 0.90).unwrap();
        near(h, z2 / (30.0 + z2), 1e-12);
        near(h, 0.08272430812509929, 1e-12);
        near(l, -z2 / (30.0 + z2), 1e-12);
        // b = 0, c = n: Z(d) = √(n(1 − d)/(1 + d)), lower bound (n − z²)/(n + z²), upper 1.
        // (25 - z**2) / (25 + z**2) -> 0.804692987987898
        let (l, h) = tango_interval(0, 25, 25, 0.90).unwrap();
        near(l, (25.0 - z2) / (25.0 + z2), 1e-12);
        near(l, 0.804692987987898, 1e-12);
        assert_eq!(h, 1.0);
        // Mirror image.
        let (l, h) = tango_interval(25, 0, 25, 0.90).unwrap();
        assert_eq!(l, -1.0);
        near(h, -(25.0 - z2) / (25.0 + z2), 1e-12);
    }

    #[test]
    fn tango_is_antisymmetric_in_b_and_c() {
        for (b, c, n) in [(5, 3, 50), (0, 6, 40), (4800, 5200, 100_000), (10, 15, 25)] {
            let (l, h) = tango_interval(b, c, n, 0.9).unwrap();
            let (ml, mh) = tango_interval(c, b, n, 0.9).unwrap();
            near(l, -mh, 1e-12);
            near(h, -ml, 1e-12);
        }
    }

    #[test]
    fn tango_refuses_what_it_cannot_compute() {
        assert_eq!(tango_interval(0, 0, 0, 0.9), None);
        assert_eq!(tango_interval(3, 3, 5, 0.9), None);
        assert_eq!(tango_interval(1, 1, 5, 0.0), None);
        assert_eq!(tango_interval(1, 1, 5, 1.0), None);
        assert_eq!(tango_interval(1, 1, 5, f64::NAN), None);
        assert_eq!(tango_interval(u64::MAX, 1, u64::MAX, 0.9), None);
    }

    // ----- paired stats and verdict -----

    #[test]
    fn paired_stats_reach_each_verdict() {
        // Δ = +0.004 with (0.00236, 0.00565) at 90%: above −0.01.
        let s = paired_stats(4800, 5200, 100_000, 0.01, 0.05).unwrap();
        assert_eq!(s.verdict, PairedVerdict::NonInferior);
        close(s.delta.unwrap(), 0.004, 1e-12);
        close(s.level, 0.9, 1e-15);
        // statsmodels...mcnemar([[0, 4800], [5200, 0]], exact=True).pvalue
        close(s.mcnemar_p, 6.593515598672343e-05, 1e-9);
        // tango(4800, 5200, 100000, 0.9) (reference implementation above)
        near(s.ci_low.unwrap(), 0.0023554788845784676, 1e-9);
        near(s.ci_high.unwrap(), 0.005645278539770056, 1e-9);

        // tango(60, 20, 400, 0.9) = (-0.13685981249029017, -0.0645438622812918): below −0.02.
        let s = paired_stats(60, 20, 400, 0.02, 0.05).unwrap();
        assert_eq!(s.verdict, PairedVerdict::Inferior);
        assert!(s.delta.unwrap() < 0.0, "candidate worse means Δ < 0");

        // tango(5, 3, 50, 0.9) = (-0.14351426884980722, 0.05945198131012757): straddles −0.05.
        let s = paired_stats(5, 3, 50, 0.05, 0.05).unwrap();
        assert_eq!(s.verdict, PairedVerdict::CollectMoreEvidence);
    }

    #[test]
    fn verdict_boundaries_are_strict() {
        // Around ci_low = -0.14351426884980722 of (b, c, n) = (5, 3, 50) at 90%.
        let verdict = |m| paired_stats(5, 3, 50, m, 0.05).unwrap().verdict;
        assert_eq!(verdict(0.1436), PairedVerdict::NonInferior);
        assert_eq!(verdict(0.1435), PairedVerdict::CollectMoreEvidence);
        // Around ci_high = -0.0645438622812918 of (60, 20, 400) at 90%.
        let verdict = |m| paired_stats(60, 20, 400, m, 0.05).unwrap().verdict;
        assert_eq!(verdict(0.0645), PairedVerdict::Inferior);
        assert_eq!(verdict(0.0646), PairedVerdict::CollectMoreEvidence);
        // A bound exactly on −margin decides nothing.
        assert_eq!(
            PairedVerdict::from_interval(-0.05, 0.1, 0.05),
            PairedVerdict::CollectMoreEvidence
        );
        assert_eq!(
            PairedVerdict::from_interval(-0.2, -0.05, 0.05),
            PairedVerdict::CollectMoreEvidence
        );
        assert_eq!(
            PairedVerdict::from_interval(-0.049, 0.1, 0.05),
            PairedVerdict::NonInferior
        );
        assert_eq!(
            PairedVerdict::from_interval(-0.2, -0.051, 0.05),
            PairedVerdict::Inferior
        );
    }

    #[test]
    fn paired_stats_without_pairs_or_discordance() {
        let s = paired_stats(0, 0, 0, 0.05, 0.05).unwrap();
        assert_eq!(s.verdict, PairedVerdict::CollectMoreEvidence);
        assert_eq!((s.delta, s.ci_low, s.ci_high), (None, None, None));
        assert_eq!(s.mcnemar_p, 1.0);
        // No discordant pair among 30 (interval ±0.0827 at 90%): non-inferior at 0.1, not at 0.05.
        let s = paired_stats(0, 0, 30, 0.1, 0.05).unwrap();
        assert_eq!(s.verdict, PairedVerdict::NonInferior);
        assert_eq!((s.delta, s.mcnemar_p), (Some(0.0), 1.0));
        let s = paired_stats(0, 0, 30, 0.05, 0.05).unwrap();
        assert_eq!(s.verdict, PairedVerdict::CollectMoreEvidence);
    }

    #[test]
    fn paired_stats_refuse_bad_input_naming_the_field() {
        let err = paired_stats(1, 2, 10, 0.05, 0.5).unwrap_err();
        assert_eq!(
            err.to_string(),
            "alpha: expected a number with 0 < alpha < 0.5, found 0.5"
        );
        assert!(matches!(
            paired_stats(1, 2, 10, 0.05, 0.0),
            Err(StatsError::OutOfRange { field: "alpha", .. })
        ));
        assert!(matches!(
            paired_stats(1, 2, 10, 0.05, f64::NAN),
            Err(StatsError::OutOfRange { field: "alpha", .. })
        ));
        let err = paired_stats(1, 2, 10, 1.0, 0.05).unwrap_err();
        assert_eq!(
            err.to_string(),
            "margin: expected a number with 0 <= margin < 1, found 1"
        );
        for m in [-0.01, f64::INFINITY, f64::NAN] {
            assert!(matches!(
                paired_stats(1, 2, 10, m, 0.05),
                Err(StatsError::OutOfRange {
                    field: "margin",
                    ..
                })
            ));
        }
        let err = paired_stats(6, 5, 10, 0.05, 0.05).unwrap_err();
        assert_eq!(
            err.to_string(),
            "b + c: expected at most n = 10 discordant pairs, found 6 + 5 = 11"
        );
        assert_eq!(
            err.expected_found(),
            ("b + c at most n = 10".into(), "b + c = 6 + 5 = 11".into())
        );
        // No overflow on the sum.
        assert!(matches!(
            paired_stats(u64::MAX, u64::MAX, u64::MAX, 0.05, 0.05),
            Err(StatsError::DiscordantExceedPairs { .. })
        ));
    }

    // ----- planner -----

    // Nam (1997) in the scratch venv:
    //
    //     def nam(m, psi, alpha, power):
    //         s = psi + 2 * m
    //         q = (s + np.sqrt(s * s - 4 * psi * m * (1 + m))) / 4
    //         s0 = np.sqrt(2 * q - m * (1 + m))
    //         s1 = np.sqrt(psi)
    //         n = (stats.norm.ppf(1 - alpha) * s0 + stats.norm.ppf(power) * s1) ** 2 / m ** 2
    //         return n, int(np.ceil(n))
    //
    // Checked by simulation there: 4000 draws of numpy.random.default_rng(1).multinomial(n,
    // [psi/2, psi/2, 1 - psi]) with the tango() above at level 1 − 2α gave power 0.816 for
    // nam(0.05, 0.10, 0.05, 0.80) (n = 274) and 0.9085 for nam(0.02, 0.05, 0.025, 0.90)
    // (n = 1413).
    #[test]
    fn required_pairs_matches_nam_1997() {
        // (margin, psi, alpha, power) -> nam(...) = (273.8196358972309, 274), etc.
        let cases = [
            (0.05, 0.10, 0.05, 0.80, 274),
            (0.02, 0.05, 0.025, 0.90, 1413),
            (0.01, 0.20, 0.05, 0.80, 12378),
            (0.05, 0.0, 0.05, 0.80, 52),
            (0.1, 1.0, 0.05, 0.8, 615),
        ];
        for (m, psi, alpha, power, expected) in cases {
            assert_eq!(
                required_pairs(m, psi, alpha, power),
                Ok(expected),
                "{m} {psi}"
            );
        }
        // A plan of 52 pairs with no discordance reaches the margin: z²/(52 + z²) < 0.05.
        let s = paired_stats(0, 0, 52, 0.05, 0.05).unwrap();
        assert_eq!(s.verdict, PairedVerdict::NonInferior);
        let s = paired_stats(0, 0, 51, 0.05, 0.05).unwrap();
        assert_eq!(s.verdict, PairedVerdict::CollectMoreEvidence);

        let plan = pairs_plan(0.05, 0.10, 0.05, 0.80).unwrap();
        assert_eq!(plan.pairs, 274);
        assert_eq!(plan.discordance_rate, 0.10);
    }

    #[test]
    fn required_pairs_refuses_bad_input() {
        let field = |r: Result<u64, StatsError>| match r {
            Err(StatsError::OutOfRange { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(required_pairs(0.0, 0.1, 0.05, 0.8)), "margin");
        assert_eq!(field(required_pairs(1.0, 0.1, 0.05, 0.8)), "margin");
        assert_eq!(
            field(required_pairs(0.05, -0.1, 0.05, 0.8)),
            "discordance_rate"
        );
        assert_eq!(
            field(required_pairs(0.05, 1.1, 0.05, 0.8)),
            "discordance_rate"
        );
        assert_eq!(field(required_pairs(0.05, 0.1, 0.5, 0.8)), "alpha");
        assert_eq!(field(required_pairs(0.05, 0.1, 0.05, 1.0)), "power");
        assert_eq!(field(required_pairs(0.05, 0.1, 0.05, 0.4)), "power");
        assert_eq!(field(required_pairs(f64::NAN, 0.1, 0.05, 0.8)), "margin");
        assert!(matches!(
            required_pairs(1e-9, 1.0, 0.05, 0.8),
            Err(StatsError::TooManyPairs { .. })
        ));
    }

    // ----- wire format -----

    #[test]
    fn serializes_for_the_ui() {
        let s = paired_stats(5, 3, 50, 0.05, 0.05).unwrap();
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["verdict"], "collect_more_evidence");
        assert_eq!(json["n"], 50);
        let back: PairedStats = serde_json::from_value(json).unwrap();
        assert_eq!(back, s);
        let empty = serde_json::to_value(paired_stats(0, 0, 0, 0.05, 0.05).unwrap()).unwrap();
        assert!(empty["delta"].is_null() && empty["ci_low"].is_null());
        assert_eq!(
            serde_json::to_string(&PairedVerdict::NonInferior).unwrap(),
            r#""non_inferior""#
        );

        let cfg = crate::ts_config();
        let decl = <PairedStats as TS>::decl(&cfg);
        assert!(decl.contains("n: number"), "{decl}");
        assert!(decl.contains("delta: number | null"), "{decl}");
        assert!(decl.contains("verdict: PairedVerdict"), "{decl}");
        let verdict = <PairedVerdict as TS>::decl(&cfg);
        assert!(verdict.contains("\"collect_more_evidence\""), "{verdict}");
        assert!(!verdict.contains("equivalent"), "{verdict}");
        assert!(<Percentiles as TS>::decl(&cfg).contains("count: number"));
        assert!(<RepeatSummary as TS>::decl(&cfg).contains("n: number"));
        assert!(<PairsPlan as TS>::decl(&cfg).contains("pairs: number"));
        let schema = serde_json::to_value(schemars::schema_for!(PairedStats)).unwrap();
        assert!(schema["required"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("verdict")));
    }
}
