//! SLB quick check (not the benchmark, which is the `slb` suite): Zipfian (θ = 0.99) and
//! uniform GETs of 8-byte keys with 64-byte values over `LockedBTreeMap`, bare, behind the
//! SLB, and behind the SLB read under the paper's locks (`LockedReadSlb`, feature
//! `bench-internals`), all over the same index in one run; then the same Zipfian keys with
//! 5% SETs. Each workload warms fresh SLBs with a fifth of its length, then alternates the
//! three fronts in 5 rounds and prints the medians of their Mops/s and of their ratios to
//! the bare index, and the SLB's hit ratio.
//!
//! Arguments: `[keys = 1M] [threads = 2] [cache_mib = 16] [ops = 4M]`.
//!
//! `orrery-bench lab slb_zipf 10M 2 16 6M`

use std::sync::Arc;
use std::time::Instant;

use orrery::KvIndex;
use orrery::reference::LockedBTreeMap;
use orrery::slb::locked_reads::LockedReadSlb;
use orrery::slb::{Config, Slb};
use orrery::testing::zipf::Zipf;

use super::count_arg;
use crate::rng::Rng;

/// The key of rank `r`: ranks scrambled over the key space by an odd multiplier (a bijection
/// on u64), so hot keys are not neighbours in the tree.
fn key(r: u64) -> [u8; 8] {
    r.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes()
}

/// One operation: a GET of a rank, or (high bit set) a SET of it.
const SET: u64 = 1 << 63;

/// Runs `ops` split over `threads`; returns Mops/s (wall time).
fn measure(index: &dyn KvIndex, ops: &[u64], threads: usize) -> f64 {
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

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let keys = count_arg(args, 0, 1_000_000)?.max(1);
    let threads = count_arg(args, 1, 2)?.max(1) as usize;
    let cache_mib = count_arg(args, 2, 16)? as usize;
    let ops = count_arg(args, 3, 4_000_000)? as usize;

    // One index, read through fresh fronts per workload (only one front writes at a time).
    let index = Arc::new(LockedBTreeMap::new());
    let value = [0x5Au8; 64];
    for r in 0..keys {
        index.insert(&key(r), &value).map_err(|e| e.to_string())?;
    }
    let config = Config::with_cache_mib(cache_mib);

    // Each workload: a warm-up prefix (a fifth of the measured length), then the measured
    // operations.
    let total = ops + ops / 5;
    let zipf = Zipf::new(keys, 0.99);
    let mut rng = Rng::new(0x1234_5678_9ABC_DEF1);
    let zipf_ops: Vec<u64> = (0..total).map(|_| zipf.sample(rng.f64())).collect();
    let uniform_ops: Vec<u64> = (0..total).map(|_| rng.below(keys)).collect();
    let set5_ops: Vec<u64> = (0..total)
        .map(|_| {
            let r = zipf.sample(rng.f64());
            if rng.below(100) < 5 { r | SET } else { r }
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
        let with =
            Slb::with_config(Arc::clone(&index), config.clone()).map_err(|e| e.to_string())?;
        let locked = LockedReadSlb::with_config(Arc::clone(&index), config.clone())
            .map_err(|e| e.to_string())?;
        measure(&with, warm, threads);
        with.buffer().reset_stats();
        measure(&locked, warm, threads);
        locked.slb().buffer().reset_stats();
        // Alternate the three fronts in short rounds and keep the median of each ratio, so
        // that load from other processes hits all three alike.
        let rounds = 5;
        let chunk = measured.len() / rounds;
        let (mut bare, mut slb, mut lock) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..rounds {
            let part = &measured[r * chunk..(r + 1) * chunk];
            bare.push(measure(&*index, part, threads));
            slb.push(measure(&with, part, threads));
            lock.push(measure(&locked, part, threads));
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let mut r_with: Vec<f64> = slb.iter().zip(&bare).map(|(w, b)| w / b).collect();
        let mut r_lock: Vec<f64> = lock.iter().zip(&bare).map(|(l, b)| l / b).collect();
        println!(
            "{name:>16} {:>10.2} {:>10.2} {:>10.2} {:>7.2}x {:>8.2}x {:>9.3}",
            median(&mut bare),
            median(&mut slb),
            median(&mut lock),
            median(&mut r_with),
            median(&mut r_lock),
            with.stats().hit_ratio()
        );
    }
    println!("(Mops/s and ratios: medians of 5 alternating rounds; read the ratios)");
    Ok(())
}
