//! Quick feedback, not the benchmark: Zipfian (θ = 0.99) and uniform GETs of 8-byte keys with
//! 64-byte values over `LockedBTreeMap`, bare, behind the SLB, and behind the SLB with the
//! paper's reader locking (`lock_reads`), all over the same index in one run; then the same
//! Zipfian keys with 5% SETs. Prints throughputs and ratios. The real experiments live in
//! `orrery-bench` (suite `slb`).
//!
//! ```text
//! cargo run --release -p orrery-slb --example zipf -- [keys=1000000] [threads=2] [cache_mib=16] [ops=4000000]
//! ```

use std::sync::Arc;
use std::time::Instant;

use orrery_core::KvIndex;
use orrery_core::reference::LockedBTreeMap;
use orrery_slb::{Slb, SlbConfig};

#[path = "common/zipf.rs"]
mod zipf;
use zipf::{Zipf, xorshift};

/// The key of rank `r`: ranks scrambled over the key space by an odd multiplier (a bijection
/// on u64), so hot keys are not neighbours in the tree.
fn key(r: u64) -> [u8; 8] {
    r.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes()
}

/// One operation: a GET of a rank, or (high bit set) a SET of it.
const SET: u64 = 1 << 63;

fn run(index: &dyn KvIndex, ops: &[u64], threads: usize) -> f64 {
    let per = ops.len() / threads;
    let value = [0x5Au8; 64];
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let part = &ops[t * per..(t + 1) * per];
            s.spawn(move || {
                let mut found = 0usize;
                for &op in part {
                    if op & SET != 0 {
                        index.insert(&key(op & !SET), &value).unwrap();
                        found += 1;
                    } else {
                        found += usize::from(index.get_with(&key(op), &mut |v| {
                            std::hint::black_box(v);
                        }));
                    }
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

    // One index, read through fresh fronts per workload (only one front writes at a time).
    let index = Arc::new(LockedBTreeMap::new());
    let value = [0x5Au8; 64];
    for r in 0..keys {
        index.insert(&key(r), &value).unwrap();
    }
    let config = SlbConfig::with_cache_mib(cache_mib);
    let locked = SlbConfig {
        lock_reads: true,
        ..config.clone()
    };

    // Each workload: a warm-up prefix (a fifth of the measured length), then the measured
    // operations.
    let total = ops + ops / 5;
    let zipf = Zipf::new(keys, 0.99);
    let mut x = 0x1234_5678_9ABC_DEF1u64;
    let uniform = |x: &mut u64| (xorshift(x) >> 11) as f64 / (1u64 << 53) as f64;
    let zipf_ops: Vec<u64> = (0..total).map(|_| zipf.sample(uniform(&mut x))).collect();
    let uniform_ops: Vec<u64> = (0..total).map(|_| xorshift(&mut x) % keys).collect();
    let set5_ops: Vec<u64> = (0..total)
        .map(|_| {
            let r = zipf.sample(uniform(&mut x));
            if xorshift(&mut x) % 100 < 5 {
                r | SET
            } else {
                r
            }
        })
        .collect();

    println!("{keys} keys, 8 B keys / 64 B values, {threads} threads, {cache_mib} MiB Cache Table");
    println!(
        "{:>16} {:>10} {:>10} {:>10} {:>8} {:>9} {:>9}",
        "workload", "bare", "SLB", "SLB-lock", "SLB/bare", "lock/bare", "hit ratio"
    );
    for (name, ops) in [
        ("zipf 0.99 GET", &zipf_ops),
        ("uniform GET", &uniform_ops),
        ("zipf 5% SET", &set5_ops),
    ] {
        let (warm, measured) = ops.split_at(total - ops.len() * 5 / 6);
        // Fresh SLBs per workload, over the same index, warmed by the prefix.
        let fronts: Vec<Slb<Arc<LockedBTreeMap>>> = [&config, &locked]
            .into_iter()
            .map(|c| Slb::with_config(Arc::clone(&index), c.clone()).unwrap())
            .collect();
        for front in &fronts {
            run(front, warm, threads);
            front.buffer().reset_stats();
        }
        // Alternate the three fronts in short rounds and keep the median of each ratio, so
        // that load from other processes hits all three alike.
        let rounds = 5;
        let chunk = measured.len() / rounds;
        let (mut bare, mut with, mut lock) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..rounds {
            let part = &measured[r * chunk..(r + 1) * chunk];
            let b = run(&*index, part, threads);
            let w = run(&fronts[0], part, threads);
            let l = run(&fronts[1], part, threads);
            bare.push(b);
            with.push(w);
            lock.push(l);
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let mut r_with: Vec<f64> = with.iter().zip(&bare).map(|(w, b)| w / b).collect();
        let mut r_lock: Vec<f64> = lock.iter().zip(&bare).map(|(l, b)| l / b).collect();
        println!(
            "{name:>16} {:>10.2} {:>10.2} {:>10.2} {:>7.2}x {:>8.2}x {:>9.3}",
            median(&mut bare),
            median(&mut with),
            median(&mut lock),
            median(&mut r_with),
            median(&mut r_lock),
            fronts[0].stats().hit_ratio()
        );
    }
    println!("(Mops/s and ratios: medians of 5 alternating rounds; read the ratios)");
}
