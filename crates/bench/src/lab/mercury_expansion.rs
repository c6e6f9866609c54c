//! Mercury's expansion, cooperative vs the paper's dedicated expand-thread:
//!
//! 1. Load N random 8-byte keys into an empty table on 1 and 2 threads, three rounds per
//!    mode (ratio of load throughput, per wall and per CPU second).
//! 2. One thread inserts new keys (driving expansions) while another runs uniform GETs over
//!    the preloaded keys; GET throughput is sampled in 5 ms windows, split by whether an
//!    expansion was running, and reported as a ratio (expanding / steady).
//!
//! Arguments: `[N = 4Mi keys]`.
//!
//! `orrery-bench lab mercury_expansion 4M`

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use orrery::mercury::{Config, Expansion, Mercury};

use super::common::{cpu_secs, splitmix};

/// Loads `keys` on `threads` threads; returns (Mops per wall second, Mops per CPU second).
fn load(keys: &[[u8; 8]], expansion: Expansion, threads: usize) -> (f64, f64) {
    let m = Mercury::with_config(Config {
        expansion,
        ..Config::default()
    })
    .expect("the default configuration with another expansion mode is valid");
    let t = Instant::now();
    let cpu = cpu_secs();
    std::thread::scope(|s| {
        for part in keys.chunks(keys.len().div_ceil(threads).max(1)) {
            let m = &m;
            s.spawn(move || {
                for k in part {
                    m.insert(k, k).expect("8-byte pairs are within the limits");
                }
            });
        }
    });
    // Count the whole rehash work in both modes.
    m.finish_expansion();
    let mops = keys.len() as f64 / 1e6;
    (
        mops / t.elapsed().as_secs_f64(),
        mops / (cpu_secs() - cpu).max(0.01),
    )
}

/// Runs the program (see the module docs).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let n = super::count_arg(args, 0, 4 << 20)? as usize;
    if n < 2 {
        return Err("N must be at least 2".into());
    }
    let mut seed = 7;
    let keys: Vec<[u8; 8]> = (0..n).map(|_| splitmix(&mut seed).to_le_bytes()).collect();

    for threads in [1, 2] {
        let (mut coop, mut dedicated) = ((0.0, 0.0), (0.0, 0.0));
        for _ in 0..3 {
            let c = load(&keys, Expansion::Cooperative, threads);
            let d = load(&keys, Expansion::Dedicated, threads);
            coop = (coop.0 + c.0, coop.1 + c.1);
            dedicated = (dedicated.0 + d.0, dedicated.1 + d.1);
        }
        println!(
            "load of {n} keys, {threads} thread(s): dedicated expand-thread / cooperative = \
             {:.2}x per wall second, {:.2}x per CPU second",
            dedicated.0 / coop.0,
            dedicated.1 / coop.1
        );
    }

    for expansion in [Expansion::Cooperative, Expansion::Dedicated] {
        // Preload half the keys, then insert the other half while reading the first half.
        let m = Mercury::with_config(Config {
            expansion,
            ..Config::default()
        })
        .map_err(|e| e.to_string())?;
        let (old, new) = keys.split_at(n / 2);
        for k in old {
            m.insert(k, k).map_err(|e| e.to_string())?;
        }
        let done = AtomicBool::new(false);
        let (mut steady, mut expanding) = ((0u64, 0.0f64), (0u64, 0.0f64));
        std::thread::scope(|s| {
            s.spawn(|| {
                for k in new {
                    m.insert(k, k).expect("8-byte pairs are within the limits");
                }
                done.store(true, Ordering::Release);
            });
            let mut r = 1u64;
            while !done.load(Ordering::Acquire) {
                let was = m.stats().next_buckets.is_some();
                let t = Instant::now();
                let mut ops = 0u64;
                while t.elapsed() < Duration::from_millis(5) {
                    for _ in 0..64 {
                        let k = &old[(splitmix(&mut r) % old.len() as u64) as usize];
                        assert!(m.get_with(k, |v| v.len()).is_some());
                    }
                    ops += 64;
                }
                let secs = t.elapsed().as_secs_f64();
                let bucket = if was || m.stats().next_buckets.is_some() {
                    &mut expanding
                } else {
                    &mut steady
                };
                bucket.0 += ops;
                bucket.1 += secs;
            }
        });
        let rate = |(ops, secs): (u64, f64)| ops as f64 / secs.max(1e-9);
        println!(
            "{expansion:?}: GET throughput while expanding / steady = {:.2}x ({:.0} ms expanding, {:.0} ms steady)",
            rate(expanding) / rate(steady),
            expanding.1 * 1e3,
            steady.1 * 1e3
        );
    }
    Ok(())
}
