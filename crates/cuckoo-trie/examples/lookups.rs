//! Point lookups and `get_many` on random 8-byte keys: a quick loop for tuning the read
//! path without a release build of `orrery-bench` (`docs/results/cuckoo-trie.md`).
//!
//! `cargo run --release -p orrery-cuckoo-trie --example lookups -- [KEYS] [ROUNDS] [D] [MODE]`
//!
//! Loads `KEYS` random 8-byte keys (8-byte values), then runs `ROUNDS` rounds of: 1M
//! uniformly random lookups of loaded keys by `get_with`, then the same number by
//! `get_many` in batches of 16. Prints the thread CPU time per lookup of each (ns) and
//! their ratio. `D` sets `Config::prefetch_depth` (default 5). `MODE` `get` or `many`
//! runs only that half (for `perf stat`).

use std::time::Duration;

use orrery_cuckoo_trie::{Config, CuckooTrie};

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// CPU time of the calling thread.
fn cpu() -> Duration {
    Duration::from_secs_f64(orrery_core::testing::clock::thread_cpu_secs())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let keys: u64 = args.next().map_or(4_000_000, |a| a.parse().expect("KEYS"));
    let rounds: usize = args.next().map_or(3, |a| a.parse().expect("ROUNDS"));
    let d: usize = args.next().map_or(5, |a| a.parse().expect("D"));
    let mode = args.next().unwrap_or_else(|| "both".into());
    let config = Config::builder()
        .prefetch_depth(d)
        .build()
        .expect("D in 1..=16");
    let ct = CuckooTrie::with_config(config).expect("valid config");
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let loaded: Vec<[u8; 8]> = (0..keys).map(|_| xorshift(&mut x).to_be_bytes()).collect();
    for k in &loaded {
        ct.insert(k, b"12345678").unwrap();
    }
    eprintln!(
        "loaded {} keys, {} B/key structure",
        ct.len(),
        ct.memory_usage().structure_bytes / ct.len().max(1)
    );
    const N: usize = 1 << 20;
    for _ in 0..rounds {
        let picks: Vec<&[u8]> = (0..N)
            .map(|_| &loaded[(xorshift(&mut x) % keys) as usize][..])
            .collect();
        let mut found = 0usize;
        let mut single = f64::NAN;
        if mode != "many" {
            let t0 = cpu();
            for k in &picks {
                found += ct.get_with(k, |v| v[0] as usize).is_some() as usize;
            }
            single = (cpu() - t0).as_nanos() as f64 / N as f64;
        }
        let mut many = f64::NAN;
        if mode != "get" {
            let t0 = cpu();
            for chunk in picks.chunks(16) {
                ct.get_many(chunk, &mut |_, v| found += v.is_some() as usize);
            }
            many = (cpu() - t0).as_nanos() as f64 / N as f64;
        }
        println!(
            "get {single:.0} ns  get_many(16) {many:.0} ns  ratio {:.2}  (found {found})",
            single / many
        );
    }
}
