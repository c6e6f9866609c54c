//! SLB admission dynamics, not a benchmark: how fast the hit ratio rises under Zipfian GETs
//! for a given configuration. The "index" is free (the value is a constant), so tens of
//! millions of lookups take seconds and only the SLB's policy is measured: the hit ratio of
//! each window of lookups, with admissions, evictions and cached items.
//!
//! Arguments: `[keys = 10M] [ops = 20M] [cache_mib = 16] [threshold = 3] [sample = 0.05]
//! [window = 1M] [warm_threshold = 1]`.
//!
//! Keys are drawn as the harness draws them for `--dist zipf:0.99`: YCSB's scrambled
//! zipfian (Gray et al.'s rank generator, the rank hashed with FNV-1a 64 modulo the key
//! count).
//!
//! `orrery-bench lab slb_admission 10M 40M 16 3 0.05 4M 1`

use orrery::slb::{Config, LookasideBuffer, Lookup};
use orrery::testing::zipf::{Zipf, fnv64};

use super::count_arg;
use crate::rng::Rng;

/// The positional argument `i` as a number, or `default`.
fn num<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> Result<T, String> {
    args.get(i).map_or(Ok(default), |a| {
        a.parse()
            .map_err(|_| format!("argument {}: not a number: {a:?}", i + 1))
    })
}

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let keys = count_arg(args, 0, 10_000_000)?.max(1);
    let ops = count_arg(args, 1, 20_000_000)?;
    let cache_mib: usize = num(args, 2, 16)?;
    let threshold: usize = num(args, 3, 3)?;
    let sample: f64 = num(args, 4, 0.05)?;
    let window = count_arg(args, 5, 1_000_000)?.max(1);
    let warm: usize = num(args, 6, 1)?;

    let config = Config {
        admission_threshold: threshold,
        warm_admission_threshold: warm,
        log_sample_rate: sample,
        ..Config::with_cache_mib(cache_mib)
    };
    let slb = LookasideBuffer::new(config).map_err(|e| e.to_string())?;
    let zipf = Zipf::new(keys, 0.99);
    let mut rng = Rng::new(0x1234_5678_9ABC_DEF1);
    let value = [0x5Au8; 64];
    println!(
        "{keys} keys, zipf 0.99, {cache_mib} MiB Cache Table, threshold {threshold} \
         (warming {warm}), sample {sample}"
    );
    println!(
        "{:>12} {:>9} {:>11} {:>11} {:>11}",
        "lookups", "hit ratio", "admissions", "evictions", "cached"
    );
    let mut done = 0;
    while done < ops {
        slb.reset_stats();
        for _ in 0..window.min(ops - done) {
            let key = (fnv64(zipf.sample(rng.f64())) % keys).to_be_bytes();
            if let Lookup::Miss(Some(ticket)) = slb.lookup(&key, &mut |v| {
                std::hint::black_box(v);
            }) {
                let copy = slb.copy_for(&ticket, &key, &value);
                slb.emit(ticket, &key, copy);
            }
        }
        done += window.min(ops - done);
        let s = slb.stats();
        println!(
            "{done:>12} {:>9.3} {:>11} {:>11} {:>11}",
            s.hit_ratio(),
            s.admissions,
            s.evictions,
            s.cached_items
        );
    }
    Ok(())
}
