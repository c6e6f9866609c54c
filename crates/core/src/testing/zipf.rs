//! Zipfian request generators, shared by `orrery-bench` and the structures' examples.
//!
//! The zipfian generator is Gray et al.'s "Quickly generating billion-record synthetic
//! databases" method as used by YCSB's `ZipfianGenerator`: rank `r` (0 = most popular) is
//! drawn with probability proportional to `1 / (r + 1)^θ`. YCSB's *scrambled* zipfian then
//! spreads the popular ranks over the key space by hashing the rank (FNV-1a 64 of its eight
//! bytes, as YCSB does) modulo the item count, so hot keys are not clustered in key order.
//! `ζ(n, θ)` is summed exactly for the first million terms and by Euler–Maclaurin beyond, so
//! a 100M-item generator is built in milliseconds with a relative error below 1e-12.
//!
//! The generators take their uniform variate as an argument (`u` in `[0, 1)`), so each
//! caller keeps its own random source and its own determinism.

/// `ζ(n, θ) = Σ_{i=1..n} i^-θ`.
pub fn zeta(n: u64, theta: f64) -> f64 {
    const EXACT: u64 = 1_000_000;
    let m = n.min(EXACT);
    let mut sum = 0.0;
    // Summing small terms first keeps the rounding error down.
    for i in (1..=m).rev() {
        sum += (i as f64).powf(-theta);
    }
    if n > m {
        // Euler–Maclaurin for Σ_{i=m+1..n} f(i), f(x) = x^-θ.
        let f = |x: f64| x.powf(-theta);
        let df = |x: f64| -theta * x.powf(-theta - 1.0);
        let (a, b) = (m as f64, n as f64);
        let integral = (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
        sum += integral + (f(b) - f(a)) / 2.0 + (df(b) - df(a)) / 12.0;
    }
    sum
}

/// Zipfian ranks over `0..n` (Gray et al.), with `n` allowed to grow (YCSB latest).
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    zeta2: f64,
    eta: f64,
}

impl Zipf {
    /// A generator of ranks in `0..n` (`n >= 1`) with constant `theta` in (0, 1).
    pub fn new(n: u64, theta: f64) -> Zipf {
        let n = n.max(1);
        let zetan = zeta(n, theta);
        let zeta2 = zeta(2, theta);
        let mut z = Zipf {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            zeta2,
            eta: 0.0,
        };
        z.eta = z.compute_eta();
        z
    }

    fn compute_eta(&self) -> f64 {
        (1.0 - (2.0 / self.n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    /// Number of ranks.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Adds one item (rank space grows by one), updating ζ incrementally.
    pub fn grow(&mut self) {
        self.n += 1;
        self.zetan += (self.n as f64).powf(-self.theta);
        self.eta = self.compute_eta();
    }

    /// The rank (in `0..n`; 0 is the most likely) for the uniform variate `u` in `[0, 1)`.
    #[inline]
    pub fn sample(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if self.n >= 2 && uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }
}

/// FNV-1a over the eight little-endian bytes of `x` (YCSB's `fnvhash64`).
#[inline]
pub fn fnv64(x: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in x.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// YCSB scrambled zipfian over `0..n`: popular items scattered over the key space.
#[derive(Clone, Debug)]
pub struct ScrambledZipf {
    zipf: Zipf,
}

impl ScrambledZipf {
    /// A generator over `0..n` with constant `theta`.
    pub fn new(n: u64, theta: f64) -> ScrambledZipf {
        ScrambledZipf {
            zipf: Zipf::new(n, theta),
        }
    }

    /// The item (in `0..n`) for the uniform variate `u` in `[0, 1)`.
    #[inline]
    pub fn sample(&self, u: f64) -> u64 {
        fnv64(self.zipf.sample(u)) % self.zipf.n()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng, rngs::SmallRng};

    #[test]
    fn zeta_approximation_matches_exact_sum() {
        if cfg!(miri) {
            return; // millions of powf calls: minutes under Miri, nothing unsafe to check
        }
        let n = 3_000_000u64;
        let theta = 0.99;
        let exact: f64 = (1..=n).rev().map(|i| (i as f64).powf(-theta)).sum();
        let approx = zeta(n, theta);
        assert!(
            ((exact - approx) / exact).abs() < 1e-10,
            "{exact} vs {approx}"
        );
    }

    /// The two top ranks (exact in Gray et al.'s method) have frequency `1 / (ζ(n) (r+1)^θ)`;
    /// beyond them the method approximates, so per-rank frequencies are checked by decade.
    #[test]
    fn zipf_frequencies_follow_the_law() {
        let n = 1000u64;
        let theta = 0.99;
        let z = Zipf::new(n, theta);
        let mut rng = SmallRng::seed_from_u64(42);
        let draws = if cfg!(miri) { 20_000 } else { 400_000usize };
        let mut counts = vec![0usize; n as usize];
        for _ in 0..draws {
            let r = z.sample(rng.random::<f64>());
            assert!(r < n);
            counts[r as usize] += 1;
        }
        let zn = zeta(n, theta);
        for r in 0..2u64 {
            let expect = draws as f64 / (zn * ((r + 1) as f64).powf(theta));
            let got = counts[r as usize] as f64;
            assert!(
                (got - expect).abs() < 0.05 * expect,
                "rank {r}: got {got}, expected {expect}"
            );
        }
        // Average frequency per rank falls by about 10^θ per decade of ranks.
        let avg = |a: usize, b: usize| counts[a..b].iter().sum::<usize>() as f64 / (b - a) as f64;
        let (d1, d2, d3) = (avg(1, 10), avg(10, 100), avg(100, 1000));
        for (hi, lo) in [(d1, d2), (d2, d3)] {
            let ratio = hi / lo;
            assert!((4.0..25.0).contains(&ratio), "decade ratio {ratio}");
        }
    }

    #[test]
    fn scrambled_zipf_spreads_hot_keys_and_stays_in_range() {
        let n = 10_000u64;
        let z = ScrambledZipf::new(n, 0.99);
        let mut rng = SmallRng::seed_from_u64(3);
        let mut counts = vec![0u32; n as usize];
        for _ in 0..200_000 {
            let k = z.sample(rng.random::<f64>());
            assert!(k < n);
            counts[k as usize] += 1;
        }
        let hottest = counts
            .iter()
            .enumerate()
            .max_by_key(|(_, c)| **c)
            .map(|(i, _)| i as u64)
            .unwrap();
        // The hottest key is rank 0's scrambled position, not key 0.
        assert_eq!(hottest, fnv64(0) % n);
        let distinct = counts.iter().filter(|&&c| c > 0).count();
        assert!(distinct > 1000, "only {distinct} distinct keys drawn");
    }

    #[test]
    fn growing_zipf_matches_fresh_one() {
        let mut g = Zipf::new(100, 0.9);
        for _ in 0..900 {
            g.grow();
        }
        let f = Zipf::new(1000, 0.9);
        assert!((g.zetan - f.zetan).abs() < 1e-9);
        assert!((g.eta - f.eta).abs() < 1e-9);
    }

    #[test]
    fn one_item_always_rank_zero() {
        let z = Zipf::new(1, 0.99);
        for u in [0.0, 0.3, 0.999_999] {
            assert_eq!(z.sample(u), 0);
        }
    }
}
