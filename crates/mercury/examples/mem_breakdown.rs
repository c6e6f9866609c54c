//! Where a Mercury table's bytes go after a bulk load: RSS against `memory_usage` and the
//! counts behind it (buckets, cell size), and optionally what a GET costs at that density,
//! for the memory section of `docs/results/mercury.md` ("Against memcached").
//!
//! ```sh
//! cargo run --release -p orrery-mercury --example mem_breakdown -- ITEMS KEY VALUE [LOAD% [INLINE [GETS]]]
//! ```
//!
//! Keys are the item number in decimal, zero-padded to KEY bytes; values are VALUE bytes
//! (the memcached port stores a value as its item header plus the data, so pass the data
//! length plus the header's length to model it). `LOAD%` is `Config::load_percent`;
//! `INLINE` is `Config::inline_pairs` (1: 32-byte cells with inline areas, the default;
//! 0: 8-byte cells). With `GETS`, that many GETs of uniformly random loaded keys (one
//! thread, `get_with`, keys drawn in advance) follow the load, and their wall and on-CPU
//! time per GET is printed.

use std::time::Instant;

use orrery_mercury::{Config, Mercury};

fn rss() -> usize {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|r| {
            r.trim()
                .trim_end_matches(" kB")
                .trim()
                .parse::<usize>()
                .ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// Nanoseconds this thread has run on a CPU (`/proc/thread-self/schedstat`, first field).
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn key(i: usize, klen: usize) -> Vec<u8> {
    format!("{i:0klen$}").into_bytes()
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| {
            a.parse()
                .expect("numbers: ITEMS KEY VALUE [LOAD% [INLINE [GETS]]]")
        })
        .collect();
    let (n, klen, vlen) = (args[0], args[1], args[2]);
    let load = args
        .get(3)
        .copied()
        .unwrap_or(orrery_mercury::DEFAULT_LOAD_PERCENT);
    let inline = args.get(4).is_none_or(|&i| i != 0);
    let gets = args.get(5).copied().unwrap_or(0);
    let config = Config::builder()
        .load_percent(load)
        .inline_pairs(inline)
        .build()
        .expect("config");
    let m = Mercury::with_config(config).expect("table");
    let before = rss();
    let value = vec![b'v'; vlen];
    for i in 0..n {
        m.insert(&key(i, klen), &value).expect("insert");
    }
    m.finish_expansion();
    let loaded = rss();
    let u = m.memory_usage();
    let buckets = m.stats().buckets;
    let cell = if inline { 32 } else { 8 };
    let per = |b: usize| b as f64 / n as f64;
    println!(
        "items {n} key {klen} value {vlen} load% {load} inline {inline}: buckets {buckets} \
         ({:.2} items/bucket, {cell}-byte cells: {:.1} B/item), key_value {:.1} B/item, \
         structure {:.1} B/item, memory_usage total {:.1} B/item, RSS above empty {:.1} B/item",
        n as f64 / buckets as f64,
        per(buckets * cell),
        per(u.key_value_bytes),
        per(u.structure_bytes),
        per(u.key_value_bytes + u.structure_bytes),
        per(loaded - before),
    );
    if gets == 0 || n == 0 {
        return;
    }
    // Keys drawn in advance (xorshift), so that the timed loop is the lookups alone.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let drawn: Vec<Vec<u8>> = (0..gets.min(4_000_000))
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            key((x % n as u64) as usize, klen)
        })
        .collect();
    let (wall, cpu) = (Instant::now(), cpu_ns());
    let mut found = 0usize;
    for i in 0..gets {
        found += m
            .get_with(&drawn[i % drawn.len()], |v| v.len())
            .unwrap_or(0);
    }
    let (wall, cpu) = (wall.elapsed().as_nanos() as f64, (cpu_ns() - cpu) as f64);
    assert_eq!(found, gets * vlen, "every GET finds its value");
    println!(
        "GETs {gets}: {:.1} ns/GET wall, {:.1} ns/GET on CPU",
        wall / gets as f64,
        cpu / gets as f64
    );
}
