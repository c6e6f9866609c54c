//! CPU cost of migrating one Mercury bucket, and of a GET, on one thread: loads a table of
//! 2^k buckets to just past its expansion threshold (8-byte keys and values), times a batch
//! of uniform GETs, then times `finish_expansion()` (the whole rehash: every bucket's
//! migration plus the successor's page faults). With cooperative migration a `mix-5` phase
//! (5% inserts, one 64-bucket run per 16 inserts) pays about 0.2 bucket migrations per
//! operation, so `GET / (GET + 0.2 * bucket)` estimates its throughput while expanding
//! relative to steady state.
//!
//! Arguments: `[log2 buckets = 23] [gets = 4M]`.
//!
//! `orrery-bench lab mercury_migrate_cost 22`

use std::hint::black_box;

use orrery::mercury::{Config, Mercury};

use super::common::{cpu_secs, splitmix};

/// Runs the program (see the module docs).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let log2 = super::count_arg(args, 0, 23)?;
    if log2 > 40 {
        return Err(format!("log2 buckets {log2} is over 40"));
    }
    let gets = super::count_arg(args, 1, 4_000_000)?;
    let buckets = 1usize << log2;
    let m = Mercury::with_config(Config {
        initial_buckets: buckets,
        ..Config::default()
    })
    .map_err(|e| e.to_string())?;
    // The total is compared with the threshold every 64 inserts of a thread: insert until
    // the expansion starts (a handful of 64-bucket runs get migrated on the way).
    let mut n = 0;
    let mut x = 1;
    while m.stats().next_buckets.is_none() && n < 2 * buckets {
        let k = splitmix(&mut x);
        m.insert(&k.to_le_bytes(), &k.to_be_bytes())
            .map_err(|e| e.to_string())?;
        n += 1;
    }
    if m.stats().next_buckets.is_none() {
        return Err("the load should have started an expansion".into());
    }
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
    let get_ns = (cpu_secs() - c0) * 1e9 / gets.max(1) as f64;
    let stats = m.chain_stats();
    let c1 = cpu_secs();
    m.finish_expansion();
    let mig_ns = (cpu_secs() - c1) * 1e9 / buckets as f64;
    let after = m.chain_stats();
    println!(
        "{buckets} buckets, {n} pairs ({:.1}% inline before, {:.1}% after): GET {get_ns:.0} ns (cpu; {hits} hits of {gets}), migration {mig_ns:.0} ns per old bucket; est. mix-5 expanding/steady = {:.2}",
        100.0 * stats.inline_items as f64 / stats.items.max(1) as f64,
        100.0 * after.inline_items as f64 / after.items.max(1) as f64,
        get_ns / (get_ns + 0.2 * mig_ns)
    );
    Ok(())
}
