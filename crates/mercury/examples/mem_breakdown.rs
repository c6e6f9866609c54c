//! Where a Mercury table's bytes go after a bulk load: RSS against `memory_usage` and the
//! counts behind it (buckets, node size class), for the memory section of
//! `docs/results/mercury.md` ("Against memcached").
//!
//! ```sh
//! cargo run --release -p orrery-mercury --example mem_breakdown -- ITEMS KEY VALUE [LOAD%]
//! ```
//!
//! Keys are the item number in decimal, zero-padded to KEY bytes; values are VALUE bytes
//! (the memcached port stores a value as its item header plus the data, so pass the data
//! length plus the header's length to model it).

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

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numbers: ITEMS KEY VALUE [LOAD%]"))
        .collect();
    let (n, klen, vlen) = (args[0], args[1], args[2]);
    let load = args
        .get(3)
        .copied()
        .unwrap_or(orrery_mercury::DEFAULT_LOAD_PERCENT);
    let config = Config::builder()
        .load_percent(load)
        .build()
        .expect("config");
    let m = Mercury::with_config(config).expect("table");
    let before = rss();
    let value = vec![b'v'; vlen];
    for i in 0..n {
        let key = format!("{i:0klen$}");
        m.insert(key.as_bytes(), &value).expect("insert");
    }
    m.finish_expansion();
    let loaded = rss();
    let u = m.memory_usage();
    // The table doubles from 1024 buckets while it holds more than `load`% per bucket.
    let mut buckets = 1024usize;
    while n > buckets / 100 * load {
        buckets *= 2;
    }
    let per = |b: usize| b as f64 / n as f64;
    println!(
        "items {n} key {klen} value {vlen} load% {load}: buckets {buckets} ({:.2} items/bucket, {:.1} B/item), \
         key_value {:.1} B/item, structure {:.1} B/item, memory_usage total {:.1} B/item, RSS above empty {:.1} B/item",
        n as f64 / buckets as f64,
        per(buckets * 32),
        per(u.key_value_bytes),
        per(u.structure_bytes),
        per(u.key_value_bytes + u.structure_bytes),
        per(loaded - before),
    );
}
