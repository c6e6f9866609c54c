//! Synthetic replays of Facebook's five Memcached pools, USR, APP, ETC, VAR and SYS, built
//! from their published characteristics (the SLB paper's §4.5 replays the real traces,
//! which are not public).
//!
//! Sources:
//! - \[A\] B. Atikoglu, Y. Xu, E. Frachtenberg, S. Jiang, M. Paleczny, "Workload Analysis of a
//!   Large-Scale Key-Value Store", SIGMETRICS '12: request mix per pool (its Fig. 1), key
//!   and value sizes (its Fig. 2; USR's two key sizes and 2-byte values are stated in the
//!   text), and the statistical model of ETC (its §5, Table 5: key sizes follow a
//!   generalized extreme value distribution, value sizes a generalized Pareto).
//! - \[S\] X. Wu, F. Ni, S. Jiang, "Search Lookaside Buffer", SoCC '17, §4.5: the skew of each
//!   trace as the SLB paper states it (USR: about 20% of the keys receive 85% of the
//!   accesses; APP: 10% of the keys over 95%; ETC: 5% of the keys over 98%; VAR and SYS:
//!   "high skewness and relatively small working sets"; APP and ETC have 10–30% DELETEs;
//!   VAR and SYS mainly GETs and UPDATEs), and the table sizes after warm-up (its Table 3).
//!
//! Only \[A\]'s ETC model is given as numbers; the request mixes and the size distributions of
//! the other pools are approximations read from \[A\]'s figures (marked "approx." in
//! [`TRACES`]), and VAR/SYS's skew, which \[S\] does not quantify, is set like APP's. So these
//! are workloads with the *published shape* of the pools, not the traces.
//!
//! # How a trace becomes a benchmark
//!
//! - Dataset `fb-<trace>`: distinct keys whose lengths follow the pool's key-size
//!   distribution (random printable bytes, as Memcached keys are text).
//! - Workload `fb-<trace>`: each thread issues GET / SET / DELETE with the pool's mix.
//!   Popularity is a Zipfian over the loaded keys whose exponent is solved so that the
//!   stated fraction of the keys receives the stated share of the requests at the run's key
//!   count; ranks are mapped to keys by one bijection shared by all threads, so every thread
//!   sees the same hot keys. SETs overwrite existing keys with values drawn from the pool's
//!   value-size distribution. A DELETE removes its key and is followed by a SET of it from
//!   the same thread (Memcached's look-aside pattern: an invalidated item is filled again
//!   by the next reader that misses), so the key set stays loaded across runs; the
//!   DELETE-and-refill counts as two operations. A concurrent GET between the two misses,
//!   as it would in Memcached, so these workloads do not require every GET to find its key.
//! - The load writes values of `--value-size` (the suite sets each pool's median).

use std::fmt;

use crate::op::{Kind, Op};
use crate::rng::Rng;

/// One of the five pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trace {
    /// User-account status information.
    Usr,
    /// Object metadata of one application.
    App,
    /// Nonspecific, general-purpose.
    Etc,
    /// Server-side browser information.
    Var,
    /// System data on service location.
    Sys,
}

/// Every trace, in \[S\]'s order.
pub(crate) const ALL: [Trace; 5] = [Trace::Usr, Trace::App, Trace::Etc, Trace::Var, Trace::Sys];

/// A size distribution (bytes).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Size {
    /// One of a few sizes, with weights.
    Choice(&'static [(usize, f64)]),
    /// Uniform over `lo..=hi`.
    Uniform(usize, usize),
    /// Generalized extreme value (location μ, scale σ, shape ξ).
    Gev(f64, f64, f64),
    /// Generalized Pareto (location θ, scale σ, shape ξ).
    Pareto(f64, f64, f64),
}

impl Size {
    /// Draws a size, clamped to `lo..=hi`.
    fn sample(&self, rng: &mut Rng, lo: usize, hi: usize) -> usize {
        // Open interval (0, 1): the inverse CDFs below are finite there.
        let u = (rng.f64() * (1.0 - 2e-12)) + 1e-12;
        let x = match *self {
            Size::Choice(c) => {
                let total: f64 = c.iter().map(|p| p.1).sum();
                let mut t = u * total;
                let mut pick = c[c.len() - 1].0;
                for &(s, w) in c {
                    if t < w {
                        pick = s;
                        break;
                    }
                    t -= w;
                }
                pick as f64
            }
            Size::Uniform(a, b) => a as f64 + (u * (b - a + 1) as f64).floor(),
            // F(x) = exp(-(1 + ξ (x-μ)/σ)^(-1/ξ))  =>  x = μ + σ ((-ln u)^(-ξ) - 1) / ξ.
            Size::Gev(mu, sigma, xi) => mu + sigma * ((-u.ln()).powf(-xi) - 1.0) / xi,
            // F(x) = 1 - (1 + ξ (x-θ)/σ)^(-1/ξ)  =>  x = θ + σ ((1-u)^(-ξ) - 1) / ξ.
            Size::Pareto(theta, sigma, xi) => theta + sigma * ((1.0 - u).powf(-xi) - 1.0) / xi,
        };
        (x.round().max(0.0) as usize).clamp(lo, hi)
    }
}

/// A pool's published characteristics.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params {
    /// Lower-case name (`fb-<name>` is the dataset and the workload).
    pub(crate) name: &'static str,
    /// Percentages of GET, SET and DELETE requests.
    pub(crate) mix: [f64; 3],
    /// Key sizes.
    pub(crate) key: Size,
    /// Value sizes.
    pub(crate) value: Size,
    /// This fraction of the keys...
    pub(crate) hot_keys: f64,
    /// ...receives this share of the requests.
    pub(crate) hot_share: f64,
    /// Median value size, the load's `--value-size` in the `slb` suite.
    pub(crate) median_value: usize,
    /// The SLB paper's hash-table size after warm-up, GB (\[S\] Table 3).
    pub(crate) paper_table_gb: f64,
    /// Where each figure comes from.
    pub(crate) source: &'static str,
}

/// The five pools. See the [module docs](self) for the sources \[A\] and \[S\].
pub(crate) const TRACES: [Params; 5] = [
    Params {
        name: "usr",
        mix: [99.8, 0.2, 0.0],
        key: Size::Choice(&[(16, 0.5), (21, 0.5)]),
        value: Size::Choice(&[(2, 1.0)]),
        hot_keys: 0.20,
        hot_share: 0.85,
        median_value: 2,
        paper_table_gb: 9.6,
        source: "mix [A] Fig. 1 (approx.); keys 16 or 21 B, values 2 B [A] §3 (split approx.); \
                 skew [S] §4.5",
    },
    Params {
        name: "app",
        mix: [83.0, 5.0, 12.0],
        key: Size::Gev(36.0, 8.0, 0.08),
        value: Size::Pareto(0.0, 250.0, 0.35),
        hot_keys: 0.10,
        hot_share: 0.95,
        median_value: 205,
        paper_table_gb: 63.8,
        source: "mix [A] Fig. 1 (approx.), DELETEs within [S]'s 10-30%; sizes [A] Fig. 2 \
                 (approx., ETC's model shapes); skew [S] §4.5",
    },
    Params {
        name: "etc",
        mix: [73.0, 2.0, 25.0],
        key: Size::Gev(30.7984, 8.20449, 0.078688),
        value: Size::Pareto(0.0, 214.476, 0.348238),
        hot_keys: 0.05,
        hot_share: 0.98,
        median_value: 168,
        paper_table_gb: 84.3,
        source: "mix [A] Fig. 1 (approx.), DELETEs within [S]'s 10-30%; key GEV and value \
                 generalized Pareto parameters [A] Table 5; skew [S] §4.5",
    },
    Params {
        name: "var",
        mix: [18.0, 82.0, 0.0],
        key: Size::Uniform(24, 40),
        value: Size::Pareto(0.0, 150.0, 0.30),
        hot_keys: 0.10,
        hot_share: 0.95,
        median_value: 120,
        paper_table_gb: 6.2,
        source: "mix [A] Fig. 1 (approx.: SET/UPDATE-dominated, [S] 'GET and UPDATE'); sizes \
                 [A] Fig. 2 (approx.); skew: [S] 'high', set like APP",
    },
    Params {
        name: "sys",
        mix: [67.0, 33.0, 0.0],
        key: Size::Uniform(20, 45),
        value: Size::Pareto(0.0, 400.0, 0.35),
        hot_keys: 0.10,
        hot_share: 0.95,
        median_value: 330,
        paper_table_gb: 0.08,
        source: "mix [A] Fig. 1 (approx.; [S] 'GET and UPDATE'); sizes [A] Fig. 2 (approx.); \
                 skew: [S] 'high', set like APP",
    },
];

impl Trace {
    /// Parses `usr`, `app`, `etc`, `var`, `sys` (the part after `fb-`).
    pub(crate) fn parse(s: &str) -> Option<Trace> {
        ALL.into_iter().find(|t| t.params().name == s)
    }

    /// The pool's characteristics.
    pub(crate) fn params(self) -> &'static Params {
        &TRACES[self as usize]
    }
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fb-{}", self.params().name)
    }
}

/// Shortest and longest generated key (Memcached's key limit is 250 bytes).
const KEY_LEN: (usize, usize) = (4, 250);

/// A key generator for dataset `fb-<trace>`: the pool's key sizes, printable bytes.
pub(crate) fn key_generator(trace: Trace) -> impl FnMut(&mut Rng, &mut Vec<u8>) {
    let size = trace.params().key;
    move |rng: &mut Rng, out: &mut Vec<u8>| {
        let len = size.sample(rng, KEY_LEN.0, KEY_LEN.1);
        out.extend((0..len).map(|_| b'!' + rng.below(94) as u8));
    }
}

/// Typical key length of dataset `fb-<trace>` (a buffer-size hint).
pub(crate) fn typical_key_len(trace: Trace) -> usize {
    match trace {
        Trace::Usr => 19,
        _ => 36,
    }
}

/// Value lengths the stream can ask for: class `c` (1..=255) of an [`Op`]'s length field
/// stands for [`value_len`]`(c)`; class 0 means `--value-size`.
pub(crate) const MAX_VALUE_LEN: usize = 16_384;

/// The value length of class `c` (1..=255): `c - 1` up to 127 bytes, then growing by 3.9%
/// per class up to [`MAX_VALUE_LEN`].
pub(crate) fn value_len(c: usize) -> usize {
    if c <= 128 {
        c.saturating_sub(1)
    } else {
        ((128.0 * 1.039f64.powi(c as i32 - 128)).round() as usize).min(MAX_VALUE_LEN)
    }
}

/// The smallest class whose length is at least `len` (lengths beyond the last class get it).
fn value_class(len: usize) -> u8 {
    if len < 128 {
        return (len + 1) as u8;
    }
    (129..=255).find(|&c| value_len(c) >= len).unwrap_or(255) as u8
}

/// `Σ_{i=1..n} i^-s`: exact for the first 2,000 terms, then the integral.
fn harmonic(n: u64, s: f64) -> f64 {
    let m = n.min(2000);
    let mut sum: f64 = (1..=m).rev().map(|i| (i as f64).powf(-s)).sum();
    if n > m {
        let (a, b) = (m as f64 + 0.5, n as f64 + 0.5);
        sum += if (s - 1.0).abs() < 1e-9 {
            (b / a).ln()
        } else {
            (b.powf(1.0 - s) - a.powf(1.0 - s)) / (1.0 - s)
        };
    }
    sum
}

/// The Zipf exponent under which the top `keys` fraction of `n` items receives `share` of
/// the requests.
pub(crate) fn solve_exponent(n: u64, keys: f64, share: f64) -> f64 {
    let top = ((n as f64 * keys).round() as u64).clamp(1, n);
    let (mut lo, mut hi) = (0.0f64, 4.0f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if harmonic(top, mid) / harmonic(n, mid) < share {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Ranks `0..n` with probability proportional to `(rank + 1)^-s`, by binary search in the
/// cumulative table (any `s`, including `s >= 1`, which YCSB's generator cannot do).
struct Popularity {
    cdf: Vec<f64>,
}

impl Popularity {
    fn new(n: u64, s: f64) -> Popularity {
        let mut cdf = Vec::with_capacity(n as usize);
        let mut sum = 0.0;
        for i in 1..=n {
            sum += (i as f64).powf(-s);
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        Popularity { cdf }
    }

    fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.f64();
        (self.cdf.partition_point(|&c| c < u) as u64).min(self.cdf.len() as u64 - 1)
    }
}

/// A bijection of `0..n` shared by all threads of a run: `r -> (a r + b) mod n`.
fn rank_map(n: u64, seed: u64) -> impl Fn(u64) -> u64 {
    let mut r = Rng::fork(seed, "fb-ranks", 0);
    let mut a = r.below(n).max(1);
    while gcd(a, n) != 1 {
        a = r.below(n).max(1);
    }
    let b = r.below(n);
    move |x| ((u128::from(a) * u128::from(x) + u128::from(b)) % u128::from(n)) as u64
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// One thread's stream of `ops` requests of `trace` over the loaded keys `0..n` (`seed`:
/// the run's seed, which fixes the rank-to-key bijection every thread shares; `rng`: this
/// thread's generator).
pub(crate) fn stream(trace: Trace, n: u64, ops: u64, seed: u64, rng: &mut Rng) -> Vec<Op> {
    let p = trace.params();
    let n = n.max(1);
    let pop = Popularity::new(n, solve_exponent(n, p.hot_keys, p.hot_share));
    let key_of = rank_map(n, seed);
    let total: f64 = p.mix.iter().sum();
    let mut out = Vec::with_capacity(ops as usize + ops as usize / 4);
    for _ in 0..ops {
        let key = key_of(pop.sample(rng));
        let u = rng.f64() * total;
        if u < p.mix[0] {
            out.push(Op::new(Kind::Read, 0, key));
        } else if u < p.mix[0] + p.mix[1] {
            let c = value_class(p.value.sample(rng, 0, MAX_VALUE_LEN));
            out.push(Op::new(Kind::Update, c, key));
        } else {
            let c = value_class(p.value.sample(rng, 0, MAX_VALUE_LEN));
            out.push(Op::new(Kind::Delete, 0, key));
            out.push(Op::new(Kind::Insert, c, key));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::Dist;
    use crate::workloads::{StreamSpec, Workload};

    #[test]
    fn value_classes_round_trip() {
        for len in [0usize, 1, 2, 64, 127, 128, 129, 500, 4096, MAX_VALUE_LEN] {
            let c = value_class(len) as usize;
            assert!(value_len(c) >= len, "{len} -> class {c}");
            assert!(c == 1 || value_len(c - 1) < len || len == 0, "{len}");
        }
        assert_eq!(value_len(255), MAX_VALUE_LEN);
    }

    #[test]
    fn solved_skew_matches_the_statement() {
        for p in &TRACES {
            let n = 100_000;
            let s = solve_exponent(n, p.hot_keys, p.hot_share);
            let top = (n as f64 * p.hot_keys) as u64;
            let share = harmonic(top, s) / harmonic(n, s);
            assert!((share - p.hot_share).abs() < 0.005, "{}: {share}", p.name);
            // And the sampler follows it.
            let pop = Popularity::new(n, s);
            let mut rng = Rng::new(5);
            let draws = 200_000;
            let hits = (0..draws).filter(|_| pop.sample(&mut rng) < top).count();
            let got = hits as f64 / draws as f64;
            assert!((got - p.hot_share).abs() < 0.01, "{}: {got}", p.name);
        }
    }

    #[test]
    fn etc_sizes_follow_table_5() {
        let mut rng = Rng::new(9);
        let mut keys: Vec<usize> = (0..20_000)
            .map(|_| TRACES[2].key.sample(&mut rng, 1, 250))
            .collect();
        let mut values: Vec<usize> = (0..20_000)
            .map(|_| TRACES[2].value.sample(&mut rng, 0, 1 << 20))
            .collect();
        keys.sort();
        values.sort();
        // GEV(30.8, 8.2, 0.079): median μ + σ((ln 2)^-ξ - 1)/ξ ≈ 33.9.
        assert!((32..=36).contains(&keys[10_000]), "{}", keys[10_000]);
        // Generalized Pareto(0, 214.5, 0.348): median σ(2^ξ - 1)/ξ ≈ 168.
        assert!((155..=182).contains(&values[10_000]), "{}", values[10_000]);
    }

    #[test]
    fn streams_follow_the_mix_and_refill_deletes() {
        for t in ALL {
            let spec = StreamSpec {
                workload: Workload::Facebook(t),
                dist: Dist::Uniform,
                n: 50_000,
                ops: 40_000,
                thread: 0,
                threads: 1,
                insert_base: 100_000,
                seed: 3,
            };
            let ops = crate::workloads::stream(&spec);
            let p = t.params();
            let count = |k: Kind| ops.iter().filter(|o| o.kind() == k).count() as f64;
            let requests = 40_000.0;
            assert!(
                (count(Kind::Read) / requests * 100.0 - p.mix[0]).abs() < 1.0,
                "{t}"
            );
            assert!(
                (count(Kind::Update) / requests * 100.0 - p.mix[1]).abs() < 1.0,
                "{t}"
            );
            assert_eq!(count(Kind::Delete), count(Kind::Insert), "{t}");
            assert!(ops.iter().all(|o| o.key() < 50_000));
            for w in ops.windows(2) {
                if w[0].kind() == Kind::Delete {
                    assert_eq!((w[1].kind(), w[1].key()), (Kind::Insert, w[0].key()));
                }
            }
            // Every thread sees the same hot keys.
            let other = crate::workloads::stream(&StreamSpec { thread: 1, ..spec });
            let hottest = |s: &[Op]| {
                let mut c = std::collections::HashMap::new();
                for o in s {
                    *c.entry(o.key()).or_insert(0) += 1;
                }
                c.into_iter().max_by_key(|e| e.1).unwrap().0
            };
            assert_eq!(hottest(&ops), hottest(&other), "{t}");
        }
    }

    #[test]
    fn names_parse() {
        for t in ALL {
            assert_eq!(Trace::parse(t.params().name), Some(t));
            assert_eq!(TRACES[t as usize].name, t.params().name);
        }
        assert_eq!(Trace::parse("xyz"), None);
    }
}
