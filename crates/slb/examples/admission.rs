//! Admission dynamics, not a benchmark: how fast the SLB's hit ratio rises under Zipfian
//! GETs, for a given configuration. The "index" is free (the value is computed from the key),
//! so tens of millions of lookups take seconds and only the SLB's policy is measured: the hit
//! ratio of each window of lookups, with admissions and evictions.
//!
//! ```text
//! cargo run --release -p orrery-slb --example admission -- \
//!     [keys=10000000] [ops=20000000] [cache_mib=16] [threshold=3] [sample=0.05] [window=1000000] [warm_threshold=1]
//! ```
//!
//! Keys are drawn as `orrery-bench` draws them for `--dist zipf:0.99`: YCSB's scrambled
//! zipfian (Gray et al.'s rank generator, the rank hashed with FNV-1a 64 modulo the key count).

use orrery_slb::{LookasideBuffer, Lookup, SlbConfig};

#[path = "common/zipf.rs"]
mod zipf;
use zipf::{Zipf, fnv64, xorshift};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: f64| -> f64 {
        args.get(i)
            .map(|a| a.parse().expect("numeric arguments"))
            .unwrap_or(default)
    };
    let keys = num(0, 10e6) as u64;
    let ops = num(1, 20e6) as u64;
    let cache_mib = num(2, 16.0) as usize;
    let threshold = num(3, 3.0) as usize;
    let sample = num(4, 0.05);
    let window = num(5, 1e6) as u64;
    let warm = num(6, 1.0) as usize;

    let config = SlbConfig {
        admission_threshold: threshold,
        warm_admission_threshold: warm,
        log_sample_rate: sample,
        ..SlbConfig::with_cache_mib(cache_mib)
    };
    let slb = LookasideBuffer::new(config).expect("valid configuration");
    let zipf = Zipf::new(keys, 0.99);
    let mut x = 0x1234_5678_9ABC_DEF1u64;
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
            let u = (xorshift(&mut x) >> 11) as f64 / (1u64 << 53) as f64;
            let key = (fnv64(zipf.sample(u)) % keys).to_be_bytes();
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
}
