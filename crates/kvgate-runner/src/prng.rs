//! A small seeded generator (SplitMix64) and the distributions the runner draws from. Our own,
//! so a recorded seed reproduces the same arrivals and orders whatever crate versions change.

/// SplitMix64 (Steele, Lea, Flood 2014): 64-bit state, full period, good enough for schedules.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in (0, 1]: safe under `ln`.
    fn next_open_f64(&mut self) -> f64 {
        1.0 - self.next_f64()
    }

    /// Uniform integer in [0, n), without modulo bias (rejection sampling). `n` > 0.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0) has no values");
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }

    /// Exponential with mean 1 (inverse CDF).
    pub fn exponential(&mut self) -> f64 {
        -self.next_open_f64().ln()
    }

    /// Standard normal (Box–Muller, one of the pair).
    pub fn standard_normal(&mut self) -> f64 {
        let r = (-2.0 * self.next_open_f64().ln()).sqrt();
        r * (std::f64::consts::TAU * self.next_f64()).cos()
    }

    /// Gamma with the given shape and scale 1 (Marsaglia–Tsang 2000; shape < 1 by boosting).
    /// `shape` must be positive and finite.
    pub fn gamma(&mut self, shape: f64) -> f64 {
        if shape < 1.0 {
            let boost = self.next_open_f64().powf(1.0 / shape);
            return self.gamma(shape + 1.0) * boost;
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.standard_normal();
            let v = 1.0 + c * x;
            if v <= 0.0 {
                continue;
            }
            let v = v * v * v;
            let u = self.next_open_f64();
            if u < 1.0 - 0.0331 * x.powi(4) || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
                return d * v;
            }
        }
    }

    /// Fisher–Yates shuffle in place.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_and_variance(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var)
    }

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // First outputs for seed 1234567 from the reference C implementation.
        let mut g = SplitMix64::new(1234567);
        assert_eq!(g.next_u64(), 6457827717110365317);
        assert_eq!(g.next_u64(), 3203168211198807973);
    }

    #[test]
    fn distributions_have_their_moments() {
        let mut g = SplitMix64::new(42);
        let exp: Vec<f64> = (0..200_000).map(|_| g.exponential()).collect();
        let (m, v) = mean_and_variance(&exp);
        assert!((m - 1.0).abs() < 0.01 && (v - 1.0).abs() < 0.03, "{m} {v}");
        for shape in [0.3, 1.0, 4.0] {
            let xs: Vec<f64> = (0..200_000).map(|_| g.gamma(shape)).collect();
            let (m, v) = mean_and_variance(&xs);
            assert!((m / shape - 1.0).abs() < 0.02, "shape {shape}: mean {m}");
            assert!(
                (v / shape - 1.0).abs() < 0.05,
                "shape {shape}: variance {v}"
            );
            assert!(xs.iter().all(|x| *x >= 0.0));
        }
    }

    #[test]
    fn shuffle_is_a_permutation_and_seeded() {
        let mut a: Vec<u32> = (0..50).collect();
        let mut b = a.clone();
        SplitMix64::new(9).shuffle(&mut a);
        SplitMix64::new(9).shuffle(&mut b);
        assert_eq!(a, b);
        assert_ne!(a, (0..50).collect::<Vec<_>>());
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
    }
}
