//! Lookup diagnostics on a key file (e.g. `orrery-bench`'s `az` dataset: zipfian item id
//! `|` zipfian reviewer id `|` review time, about 40 bytes): loads the file's keys, then runs
//! M uniform lookups and prints their thread-CPU Mops/s, the anchor-length histogram and,
//! per lookup, the search's range, rounds, prefetch batches (dependent slot waits) and
//! longest matching prefix (`Wormhole::debug_search_trace`).
//!
//! ```sh
//! orrery-bench datasets --dataset az --keys 10M --write /tmp/az.txt
//! cargo run --release -p orrery-wormhole --example wormhole_az -- /tmp/az.txt [M] [trace]
//! ```
use orrery_wormhole::Wormhole;

fn cpu_now() -> f64 {
    orrery_core::testing::clock::thread_cpu_secs()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("a key file (orrery-bench datasets --dataset az --keys N --write FILE)");
    let data = std::fs::read(&path).expect("readable key file");
    let keys: Vec<&[u8]> = data
        .split(|&c| c == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let n = keys.len();
    assert!(n > 0, "no keys in {path}");
    let m: usize = args.next().map_or(n, |s| s.parse().unwrap());
    let trace = args.next().is_some_and(|s| s == "trace");
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let wh = Wormhole::new();
    let t = cpu_now();
    for k in &keys {
        wh.insert(k, &k[..k.len().min(8)]).unwrap();
    }
    let ins = n as f64 / (cpu_now() - t) / 1e6;
    eprintln!("loaded");
    let order: Vec<usize> = (0..m).map(|_| (rnd() % n as u64) as usize).collect();
    let t = cpu_now();
    let mut hit = 0usize;
    for &i in &order {
        hit += usize::from(wh.get_with(keys[i], |_| ()).is_some());
    }
    let get = m as f64 / (cpu_now() - t) / 1e6;
    assert_eq!(hit, m);
    let mu = wh.memory_usage();
    let klen = keys.iter().map(|k| k.len()).sum::<usize>() as f64 / n as f64;
    println!(
        "n={n} klen {klen:.1} insert {ins:.3} Mops/s | get {get:.3} Mops/s | leaves {} | struct {:.1} B/key kv {:.1} B/key",
        wh.leaf_count(),
        mu.structure_bytes as f64 / n as f64,
        mu.key_value_bytes as f64 / n as f64
    );
    if !trace {
        return;
    }
    let lens = wh.debug_anchor_lens();
    println!("anchor lengths (len:count): {lens:?}");
    let mut lpm = std::collections::BTreeMap::<u32, usize>::new();
    let mut rounds = std::collections::BTreeMap::<u32, usize>::new();
    let mut batches = std::collections::BTreeMap::<u32, usize>::new();
    let mut his = std::collections::BTreeMap::<u32, usize>::new();
    let mut steps = std::collections::BTreeMap::<u8, usize>::new();
    let tn = m.min(1_000_000);
    for &i in &order[..tn] {
        let tr = wh.debug_search_trace(keys[i]);
        *lpm.entry(tr.lpm).or_default() += 1;
        *rounds.entry(tr.rounds).or_default() += 1;
        *batches.entry(tr.batches).or_default() += 1;
        *his.entry(tr.hi).or_default() += 1;
        *steps.entry(tr.step).or_default() += 1;
    }
    let avg = |h: &std::collections::BTreeMap<u32, usize>| {
        h.iter().map(|(&k, &c)| k as f64 * c as f64).sum::<f64>() / tn as f64
    };
    println!("range hi: {his:?}");
    println!("lpm (avg {:.2}): {lpm:?}", avg(&lpm));
    println!("rounds (avg {:.2}): {rounds:?}", avg(&rounds));
    println!(
        "sibling step (0 leaf entry, 1 leftmost, 2 prev, 3 rightmost, 4 child leaf entry, 5 child item): {steps:?}"
    );
    println!("batches (avg {:.2}): {batches:?}", avg(&batches));
}
