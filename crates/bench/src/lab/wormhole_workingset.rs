//! `wormhole_workingset`: does Wormhole's lookup cost at a large key count come from the
//! number of cache lines a lookup touches, or from how many *pages* they are spread over?
//!
//! Loads `N` random 8-byte keys (8-byte values) into one Wormhole, in random order (as
//! `orrery-bench`'s `rand-8` load) or, with `sorted`, in key order (then a leaf's pair
//! blocks are allocated one after another, next to each other). Then, on the same index,
//! times `M` single-key lookups (`get_with`), thread CPU time, `R` rounds, for:
//!
//! * `uniform`: any key;
//! * `range8`: keys whose top three bits are 0 (one eighth of the key space: 1/8 of the
//!   leaves, of the MetaTrieHT's hot part, and of the pair blocks; but those pair blocks
//!   and leaves were allocated over the whole load, so they are spread over all pages);
//! * `subset8`: a fixed random eighth of the keys (1/8 of the pair blocks, all leaves).
//!
//! With `thin`, the index first removes every key but that fixed eighth (`subset8`): the
//! remaining pair blocks stay where they were, spread over all the pages of the full
//! index, while leaves merge and the MetaTrieHT shrinks to the shape of an index of N/8
//! keys. Comparing `subset8` after thinning with a fresh index of N/8 keys separates the
//! page span (address translation) from the structure's shape.
//!
//! Prints the Rss and AnonHugePages of the process (are leaves and pairs on 2 MiB pages?).
//! Findings: `docs/results/wormhole.md`, "Lookups against key count (8M vs 64M)".
//!
//! Arguments: `N` keys (default 1M), `M` lookups per round (default 1M), `R` rounds
//! (default 3), then optionally `sorted` or `thin`. Example:
//! `orrery-bench lab wormhole_workingset 64M 1M 3 thin`.

use orrery::wormhole::Wormhole;

use super::count_arg;
use crate::metrics::cpu::thread_cpu_secs as cpu_now;
use crate::rng::Rng;

/// The median of `v` (upper median for an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the program on `N M R [sorted|thin]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let n = count_arg(args, 0, 1_000_000)? as usize;
    let m = count_arg(args, 1, 1_000_000)? as usize;
    let rounds = (count_arg(args, 2, 3)? as usize).max(1);
    let opt = args.get(3).map_or("", String::as_str);
    let (sorted, thin) = match opt {
        "" => (false, false),
        "sorted" => (true, false),
        "thin" => (false, true),
        other => return Err(format!("unknown mode {other:?}: expected sorted or thin")),
    };
    if n == 0 || m == 0 {
        return Err("N and M must be at least 1".into());
    }
    let mut rng = Rng::fork(0, "wormhole_workingset", 0);
    let keys: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
    let wh = Wormhole::new();
    let t = cpu_now();
    if sorted {
        let mut s = keys.clone();
        s.sort_unstable();
        for k in &s {
            wh.insert(&k.to_be_bytes(), &k.to_le_bytes())
                .map_err(|e| e.to_string())?;
        }
    } else {
        for k in &keys {
            wh.insert(&k.to_be_bytes(), &k.to_le_bytes())
                .map_err(|e| e.to_string())?;
        }
    }
    let load = n as f64 / (cpu_now() - t) / 1e6;
    println!(
        "n={n} load ({}) {load:.3} Mops/s, leaves {}, {}",
        if sorted { "sorted" } else { "random order" },
        wh.stats().leaves,
        wh.meta_stats()
    );
    if let Ok(r) = std::fs::read_to_string("/proc/self/smaps_rollup") {
        let f: Vec<&str> = r
            .lines()
            .filter(|l| l.starts_with("Rss") || l.starts_with("AnonHugePages"))
            .collect();
        println!("{}", f.join(" | "));
    }
    // The keys of each mode, then shuffled index lists drawn from them.
    let subset8: Vec<u64> = keys.iter().copied().step_by(8).collect();
    let (keys, range8) = if thin {
        let t = cpu_now();
        for (i, k) in keys.iter().enumerate() {
            if i % 8 != 0 && !wh.remove(&k.to_be_bytes()) {
                return Err(format!("key {i} of the load is missing"));
            }
        }
        println!(
            "thinned to {} keys in {:.0} s: leaves {}, {}",
            wh.len(),
            cpu_now() - t,
            wh.stats().leaves,
            wh.meta_stats()
        );
        (
            subset8.clone(),
            subset8.iter().copied().filter(|k| k >> 61 == 0).collect(),
        )
    } else {
        let r: Vec<u64> = keys.iter().copied().filter(|k| k >> 61 == 0).collect();
        (keys, r)
    };
    let modes: [(&str, &[u64]); 3] = [
        ("uniform", &keys),
        ("range8", &range8),
        ("subset8", &subset8),
    ];
    let mut res: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for _ in 0..rounds {
        for (mi, (name, pool)) in modes.iter().enumerate() {
            if pool.is_empty() {
                continue;
            }
            let order: Vec<u64> = (0..m)
                .map(|_| pool[rng.below(pool.len() as u64) as usize])
                .collect();
            let t = cpu_now();
            let mut hit = 0usize;
            for k in &order {
                hit += usize::from(wh.get_with(&k.to_be_bytes(), |_| ()).is_some());
            }
            res[mi].push(m as f64 / (cpu_now() - t) / 1e6);
            if hit != m {
                return Err(format!("{name}: {hit} of {m} looked-up keys found"));
            }
        }
    }
    for ((name, pool), r) in modes.iter().zip(&res) {
        if r.is_empty() {
            println!("{name:<8} (no keys)");
            continue;
        }
        let runs: Vec<String> = r.iter().map(|x| format!("{x:.3}")).collect();
        println!(
            "{name:<8} ({} keys): median {:.3} Mops/s ({:.0} ns/lookup) runs {}",
            pool.len(),
            median(r.clone()),
            1e3 / median(r.clone()),
            runs.join(" ")
        );
    }
    Ok(())
}
