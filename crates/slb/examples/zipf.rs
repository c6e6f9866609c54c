//! Quick feedback, not the benchmark: Zipfian (θ = 0.99) and uniform GETs of 8-byte keys with
//! 64-byte values over `LockedBTreeMap`, with and without the SLB, in one run. Prints
//! throughputs and the ratios. The real experiments live in `orrery-bench` (suite `slb`).
//!
//! ```text
//! cargo run --release -p orrery-slb --example zipf -- [keys=1000000] [threads=2] [cache_mib=16] [ops=4000000]
//! ```

use std::time::Instant;

use orrery_core::KvIndex;
use orrery_core::reference::LockedBTreeMap;
use orrery_slb::{Slb, SlbConfig};

/// Zipfian ranks in `0..n` with skew `theta` (Gray et al., "Quickly generating
/// billion-record synthetic databases", the YCSB generator).
struct Zipf {
    n: f64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl Zipf {
    fn new(n: u64, theta: f64) -> Zipf {
        let zeta = |m: u64| (1..=m).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(n);
        let zeta2 = zeta(2);
        let nf = n as f64;
        Zipf {
            n: nf,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / nf).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
        }
    }

    fn sample(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        ((self.n * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64).min(self.n as u64 - 1)
    }
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The key of rank `r`: ranks scrambled over the key space by an odd multiplier (a bijection
/// on u64), so hot keys are not neighbours in the tree.
fn key(r: u64) -> [u8; 8] {
    r.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes()
}

fn run(index: &dyn KvIndex, ranks: &[u64], threads: usize) -> f64 {
    let per = ranks.len() / threads;
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let part = &ranks[t * per..(t + 1) * per];
            s.spawn(move || {
                let mut found = 0usize;
                for &r in part {
                    found += usize::from(index.get_with(&key(r), &mut |v| {
                        std::hint::black_box(v);
                    }));
                }
                assert_eq!(found, part.len());
            });
        }
    });
    (per * threads) as f64 / start.elapsed().as_secs_f64() / 1e6
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numeric arguments"))
        .collect();
    let keys = args.first().copied().unwrap_or(1_000_000);
    let threads = args.get(1).copied().unwrap_or(2) as usize;
    let cache_mib = args.get(2).copied().unwrap_or(16) as usize;
    let ops = args.get(3).copied().unwrap_or(4_000_000) as usize;

    let slb = Slb::with_config(LockedBTreeMap::new(), SlbConfig::with_cache_mib(cache_mib))
        .expect("SLB configuration");
    let value = [0x5Au8; 64];
    for r in 0..keys {
        slb.insert(&key(r), &value).unwrap();
    }
    let zipf = Zipf::new(keys, 0.99);
    let mut x = 0x1234_5678_9ABC_DEF1u64;
    let uniform = |x: &mut u64| (xorshift(x) >> 11) as f64 / (1u64 << 53) as f64;
    let zipf_ranks: Vec<u64> = (0..ops).map(|_| zipf.sample(uniform(&mut x))).collect();
    let uniform_ranks: Vec<u64> = (0..ops).map(|_| xorshift(&mut x) % keys).collect();

    println!("{keys} keys, 8 B keys / 64 B values, {threads} threads, {cache_mib} MiB Cache Table");
    for (name, ranks) in [("zipf 0.99", &zipf_ranks), ("uniform", &uniform_ranks)] {
        slb.buffer().clear();
        slb.buffer().reset_stats();
        // Warm the SLB with one pass, then measure both.
        run(&slb, ranks, threads);
        let with = run(&slb, ranks, threads);
        let stats = slb.stats();
        let without = run(slb.inner(), ranks, threads);
        println!(
            "{name:>10}: without SLB {without:7.2} Mops/s, with SLB {with:7.2} Mops/s, \
             ratio {:.2}x  (hit ratio {:.3}, {} cached)",
            with / without,
            stats.hit_ratio(),
            stats.cached_items
        );
    }
}
