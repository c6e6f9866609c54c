//! Issue 4 experiment: does Wormhole's lookup cost at large N come from the number of cache
//! lines a lookup touches, or from how many *pages* they are spread over?
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
//!
//! `cargo run --release -p orrery-bench --example wh_workingset -- N M R [sorted|thin]`
use orrery::wormhole::Wormhole;

fn cpu_now() -> f64 {
    orrery::testing::clock::thread_cpu_secs()
}

fn parse(s: Option<String>, default: usize) -> usize {
    let Some(s) = s else { return default };
    let (num, mul) = match s.strip_suffix(['M', 'm']) {
        Some(n) => (n.to_string(), 1_000_000),
        None => (s.clone(), 1),
    };
    num.parse::<usize>().expect("a count") * mul
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n = parse(args.next(), 1_000_000);
    let m = parse(args.next(), 1_000_000);
    let rounds = parse(args.next(), 3).max(1);
    let opt = args.next().unwrap_or_default();
    let (sorted, thin) = (opt == "sorted", opt == "thin");
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let keys: Vec<u64> = (0..n).map(|_| rnd()).collect();
    let wh = Wormhole::new();
    let t = cpu_now();
    if sorted {
        let mut s = keys.clone();
        s.sort_unstable();
        for k in &s {
            wh.insert(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
        }
    } else {
        for k in &keys {
            wh.insert(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
        }
    }
    let load = n as f64 / (cpu_now() - t) / 1e6;
    println!(
        "n={n} load ({}) {load:.3} Mops/s, leaves {}, {}",
        if sorted { "sorted" } else { "random order" },
        wh.leaf_count(),
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
            if i % 8 != 0 {
                assert!(wh.remove(&k.to_be_bytes()));
            }
        }
        println!(
            "thinned to {} keys in {:.0} s: leaves {}, {}",
            wh.len(),
            cpu_now() - t,
            wh.leaf_count(),
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
        for (mi, (_, pool)) in modes.iter().enumerate() {
            let order: Vec<u64> = (0..m)
                .map(|_| pool[(rnd() % pool.len() as u64) as usize])
                .collect();
            let t = cpu_now();
            let mut hit = 0usize;
            for k in &order {
                hit += usize::from(wh.get_with(&k.to_be_bytes(), |_| ()).is_some());
            }
            res[mi].push(m as f64 / (cpu_now() - t) / 1e6);
            assert_eq!(hit, m, "every looked-up key is present");
        }
    }
    for ((name, pool), r) in modes.iter().zip(&res) {
        let runs: Vec<String> = r.iter().map(|x| format!("{x:.3}")).collect();
        println!(
            "{name:<8} ({} keys): median {:.3} Mops/s ({:.0} ns/lookup) runs {}",
            pool.len(),
            median(r.clone()),
            1e3 / median(r.clone()),
            runs.join(" ")
        );
    }
}
