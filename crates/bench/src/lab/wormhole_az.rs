//! Wormhole lookup diagnostics on a key file (e.g. the `az` dataset: zipfian item id `|`
//! zipfian reviewer id `|` review time, about 40 bytes): loads the file's keys, then runs M
//! uniform lookups and prints their thread-CPU Mops/s, and with `trace` the anchor-length
//! histogram and, per lookup, the search's range, rounds, prefetch batches (dependent slot
//! waits), longest matching prefix and sibling step (`Wormhole::debug_search_trace`, feature
//! `bench-internals`).
//!
//! Arguments: `FILE [M = number of keys] [trace]`.
//!
//! ```sh
//! orrery-bench datasets --dataset az --keys 10M --write /tmp/az.txt
//! orrery-bench lab wormhole_az /tmp/az.txt 30M trace
//! ```

use std::collections::BTreeMap;

use orrery::testing::clock::thread_cpu_secs as cpu_now;
use orrery::wormhole::Wormhole;

use crate::rng::Rng;

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let path = args
        .first()
        .ok_or("a key file (orrery-bench datasets --dataset az --keys N --write FILE)")?;
    let data = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let keys: Vec<&[u8]> = data
        .split(|&c| c == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let n = keys.len();
    if n == 0 {
        return Err(format!("no keys in {path}"));
    }
    let m = super::count_arg(args, 1, n as u64)? as usize;
    let trace = args.get(2).is_some_and(|s| s == "trace");
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    let wh = Wormhole::new();
    let t = cpu_now();
    for k in &keys {
        wh.insert(k, &k[..k.len().min(8)])
            .map_err(|e| e.to_string())?;
    }
    let ins = n as f64 / (cpu_now() - t) / 1e6;
    eprintln!("loaded");
    let order: Vec<usize> = (0..m).map(|_| rng.below(n as u64) as usize).collect();
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
        wh.stats().leaves,
        mu.structure_bytes as f64 / n as f64,
        mu.key_value_bytes as f64 / n as f64
    );
    if !trace {
        return Ok(());
    }
    let lens = wh.debug_anchor_lens();
    println!("anchor lengths (len:count): {lens:?}");
    let mut lpm = BTreeMap::<u32, usize>::new();
    let mut rounds = BTreeMap::<u32, usize>::new();
    let mut batches = BTreeMap::<u32, usize>::new();
    let mut his = BTreeMap::<u32, usize>::new();
    let mut steps = BTreeMap::<u8, usize>::new();
    let tn = m.min(1_000_000);
    for &i in &order[..tn] {
        let tr = wh.debug_search_trace(keys[i]);
        *lpm.entry(tr.lpm).or_default() += 1;
        *rounds.entry(tr.rounds).or_default() += 1;
        *batches.entry(tr.batches).or_default() += 1;
        *his.entry(tr.hi).or_default() += 1;
        *steps.entry(tr.step).or_default() += 1;
    }
    let avg = |h: &BTreeMap<u32, usize>| {
        h.iter().map(|(&k, &c)| k as f64 * c as f64).sum::<f64>() / tn as f64
    };
    println!("range hi: {his:?}");
    println!("lpm (avg {:.2}): {lpm:?}", avg(&lpm));
    println!("rounds (avg {:.2}): {rounds:?}", avg(&rounds));
    println!(
        "sibling step (0 leaf entry, 1 leftmost, 2 prev, 3 rightmost, 4 child leaf entry, \
         5 child item, 6/7 as 4/5 with the child just below the key's byte): {steps:?}"
    );
    println!("batches (avg {:.2}): {batches:?}", avg(&batches));
    Ok(())
}
