//! Cuckoo Trie point lookups and `get_many` on random 8-byte keys: a quick loop for tuning
//! the read path (`docs/results/cuckoo-trie.md`).
//!
//! Arguments: `[KEYS = 4M] [ROUNDS = 3] [D = 5] [MODE = both|get|many]`.
//!
//! `orrery-bench lab cuckoo_trie_lookups 4M 3 5 both`
//!
//! Loads `KEYS` random 8-byte keys (8-byte values), then runs `ROUNDS` rounds of: 1M
//! uniformly random lookups of loaded keys by `get_with`, then the same number by
//! `get_many` in batches of 16. Prints the thread CPU time per lookup of each (ns) and
//! their ratio. `D` sets `Config::prefetch_depth` (default 5). `MODE` `get` or `many`
//! runs only that half (for `perf stat`).

use std::time::Duration;

use orrery::cuckoo_trie::{Config, CuckooTrie};

use super::common::{splitmix, thread_cpu_secs};

/// CPU time of the calling thread.
fn cpu() -> Duration {
    Duration::from_secs_f64(thread_cpu_secs())
}

/// Runs the program (see the module docs).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let keys = super::count_arg(args, 0, 4_000_000)?;
    if keys == 0 {
        return Err("KEYS must be at least 1".into());
    }
    let rounds = super::count_arg(args, 1, 3)?;
    let d = super::count_arg(args, 2, 5)? as usize;
    let mode = args.get(3).map_or("both", String::as_str);
    if !["both", "get", "many"].contains(&mode) {
        return Err(format!("MODE {mode:?}: both, get or many"));
    }
    let config = Config::builder()
        .prefetch_depth(d)
        .build()
        .map_err(|e| e.to_string())?;
    let ct = CuckooTrie::with_config(config).map_err(|e| e.to_string())?;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let loaded: Vec<[u8; 8]> = (0..keys).map(|_| splitmix(&mut x).to_be_bytes()).collect();
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
            .map(|_| &loaded[(splitmix(&mut x) % keys) as usize][..])
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
    Ok(())
}
