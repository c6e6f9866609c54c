//! CPU cost of migrating one bucket, and of a GET, on one thread: loads a table of 2^k
//! buckets to just past its expansion threshold (8-byte keys and values), times a batch of
//! uniform GETs, then times `finish_expansion()` (the whole rehash: every bucket's
//! migration plus the successor's page faults). With cooperative migration a `mix-5` phase
//! (5% inserts, one 64-bucket run per 16 inserts) pays about 0.2 bucket migrations per
//! operation, so `GET / (GET + 0.2 * bucket)` estimates its throughput while expanding
//! relative to steady state.
//!
//! `cargo run --release -p orrery-mercury --example migrate_cost -- [log2 buckets = 23]`

use std::hint::black_box;

use orrery_mercury::{Config, Mercury};

#[path = "common/util.rs"]
mod util;
use util::{cpu_secs, splitmix};

fn main() {
    let log2: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(23);
    let buckets = 1usize << log2;
    let m = Mercury::with_config(Config {
        initial_buckets: buckets,
        ..Config::default()
    })
    .expect("table");
    // The total is compared with the threshold every 64 inserts of a thread: insert until
    // the expansion starts (a handful of 64-bucket runs get migrated on the way).
    let mut n = 0;
    let mut x = 1;
    while m.buckets().1.is_none() && n < 2 * buckets {
        let k = splitmix(&mut x);
        m.insert(&k.to_le_bytes(), &k.to_be_bytes()).unwrap();
        n += 1;
    }
    assert!(
        m.buckets().1.is_some(),
        "the load should start an expansion"
    );
    let gets = 4_000_000;
    let c0 = cpu_secs();
    let mut hits = 0usize;
    let mut y = 0x1234_5678u64;
    for _ in 0..gets {
        // Key number i is the (i+1)-th output of the load's generator (seed 1).
        let i = splitmix(&mut y) % n as u64;
        let mut z = 1u64.wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let k = splitmix(&mut z);
        hits += usize::from(
            m.get_with(&k.to_le_bytes(), |v| black_box(v.len()))
                .is_some(),
        );
    }
    let get_ns = (cpu_secs() - c0) * 1e9 / gets as f64;
    let stats = m.chain_stats();
    let c1 = cpu_secs();
    m.finish_expansion();
    let mig_ns = (cpu_secs() - c1) * 1e9 / buckets as f64;
    let after = m.chain_stats();
    println!(
        "{buckets} buckets, {n} pairs ({:.1}% inline before, {:.1}% after): GET {get_ns:.0} ns (cpu; {hits} hits of {gets}), migration {mig_ns:.0} ns per old bucket; est. mix-5 expanding/steady = {:.2}",
        100.0 * stats.inline_items as f64 / stats.items as f64,
        100.0 * after.inline_items as f64 / after.items as f64,
        get_ns / (get_ns + 0.2 * mig_ns)
    );
}
