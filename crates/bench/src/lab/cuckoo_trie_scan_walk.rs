//! Side-by-side timing of the Cuckoo Trie's two ascending scans on one loaded index: the
//! prefetching trie walk (`CuckooTrie::scan`, `crates/cuckoo-trie/src/trie/scan.rs`) and the
//! paper's leaf list (`CuckooTrie::scan_leaf_list`, §4.4, feature `bench-internals`), plus
//! the descending walk (`scan_rev`).
//!
//! Arguments: `[KEYS = 4M] [ROUNDS = 5] [OPS = 200K] [MAXLEN = 100]`.
//!
//! `orrery-bench lab cuckoo_trie_scan_walk 4M 5 200K 100`
//!
//! Loads `KEYS` random 8-byte keys (8-byte values, as `orrery-bench`'s `rand-8`), then runs
//! `ROUNDS` rounds; each round runs the same `OPS` scans (YCSB-E's shape: from a random
//! loaded key, a length uniform in 1..=`MAXLEN`, default 100) by each method in turn, and prints per method
//! the thread CPU time per scan and per key visited, and the wall-clock rate. Compare the
//! methods within one round (the machine is shared); the last line gives medians.

use std::ops::{Bound, ControlFlow};
use std::time::Instant;

use orrery::cuckoo_trie::CuckooTrie;

use super::common::{splitmix, thread_cpu_secs};

/// Which scan to time.
#[derive(Clone, Copy)]
enum Method {
    /// `scan`: the prefetching trie walk.
    Walk,
    /// `scan_leaf_list`: the paper's leaf list.
    List,
    /// `scan_rev`: the walk, descending.
    WalkRev,
}

impl Method {
    /// The method's name in the output.
    fn name(self) -> &'static str {
        match self {
            Method::Walk => "walk",
            Method::List => "leaf-list",
            Method::WalkRev => "walk-rev",
        }
    }
}

/// Runs the scans of `ops` (start index, length) by `m`; returns (cpu s, wall s, keys).
fn time(ct: &CuckooTrie, loaded: &[[u8; 8]], ops: &[(usize, usize)], m: Method) -> (f64, f64, u64) {
    let c0 = thread_cpu_secs();
    let w0 = Instant::now();
    let mut keys = 0u64;
    let mut sum = 0u64;
    for &(i, len) in ops {
        let mut left = len;
        let mut visit = |k: &[u8], v: &[u8]| {
            sum = sum.wrapping_add(u64::from(k[7]) + u64::from(v[0]));
            keys += 1;
            left -= 1;
            if left == 0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let start = Bound::Included(&loaded[i][..]);
        match m {
            Method::Walk => ct.scan(start, &mut visit),
            Method::List => ct.scan_leaf_list(start, &mut visit),
            Method::WalkRev => ct.scan_rev(start, &mut visit),
        }
    }
    std::hint::black_box(sum);
    (thread_cpu_secs() - c0, w0.elapsed().as_secs_f64(), keys)
}

/// Runs the program (see the module docs).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let n = super::count_arg(args, 0, 4_000_000)? as usize;
    let rounds = super::count_arg(args, 1, 5)?;
    let nops = super::count_arg(args, 2, 200_000)? as usize;
    let maxlen = super::count_arg(args, 3, 100)?;
    if n == 0 || rounds == 0 || nops == 0 || maxlen == 0 {
        return Err("KEYS, ROUNDS, OPS and MAXLEN must be at least 1".into());
    }
    let ct = CuckooTrie::new();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let loaded: Vec<[u8; 8]> = (0..n).map(|_| splitmix(&mut x).to_be_bytes()).collect();
    for k in &loaded {
        ct.insert(k, b"12345678").unwrap();
    }
    eprintln!(
        "loaded {} keys, table {} MiB",
        ct.len(),
        ct.memory_usage().structure_bytes >> 20
    );
    let methods = [Method::Walk, Method::List, Method::WalkRev];
    let mut per_key: Vec<Vec<f64>> = vec![Vec::new(); methods.len()];
    for r in 0..rounds {
        let ops: Vec<(usize, usize)> = (0..nops)
            .map(|_| {
                let i = (splitmix(&mut x) % n as u64) as usize;
                let len = (splitmix(&mut x) % maxlen) as usize + 1;
                (i, len)
            })
            .collect();
        for (j, &m) in methods.iter().enumerate() {
            let (cpu, wall, keys) = time(&ct, &loaded, &ops, m);
            let ns_key = cpu * 1e9 / keys as f64;
            per_key[j].push(ns_key);
            println!(
                "round {r} {:>9}: {:7.0} ns cpu/scan {:6.1} ns cpu/key  {:.3} cpu-Mscans/s  {:.3} wall-Mscans/s  ({keys} keys)",
                m.name(),
                cpu * 1e9 / nops as f64,
                ns_key,
                nops as f64 / cpu / 1e6,
                nops as f64 / wall / 1e6,
            );
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let meds: Vec<String> = methods
        .iter()
        .zip(per_key.iter_mut())
        .map(|(m, v)| format!("{} {:.1}", m.name(), med(v)))
        .collect();
    println!("median ns cpu/key: {}", meds.join(", "));
    Ok(())
}
