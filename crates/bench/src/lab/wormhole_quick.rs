//! Quick check (not the benchmark, which is the `wormhole` suite): Wormhole against std's
//! `BTreeMap` on N random 8-byte keys in one run: inserts, lookups in a random order, and
//! Wormhole's `get_many` in batches of 16; thread CPU time (the machine is shared, so wall
//! time mostly measures other processes). Also prints the leaves, the lookups that
//! restarted on a stale table (`Wormhole::restarts`, feature `bench-internals`) and the
//! memory per key.
//!
//! Arguments: `[N = 1M]`.
//!
//! `orrery-bench lab wormhole_quick 2M`

use std::collections::BTreeMap;

use orrery::testing::clock::thread_cpu_secs as cpu_now;
use orrery::wormhole::Wormhole;

use crate::rng::Rng;

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let n = super::count_arg(args, 0, 1_000_000)? as usize;
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    let keys: Vec<[u8; 8]> = (0..n).map(|_| rng.next_u64().to_be_bytes()).collect();
    let mut order: Vec<usize> = (0..n).collect();
    rng.shuffle(&mut order);

    let wh = Wormhole::new();
    let t = cpu_now();
    for k in &keys {
        wh.insert(k, &k[..]).map_err(|e| e.to_string())?;
    }
    let wh_ins = n as f64 / (cpu_now() - t) / 1e6;

    let mut bt = BTreeMap::new();
    let t = cpu_now();
    for k in &keys {
        bt.insert(k.to_vec(), k.to_vec());
    }
    let bt_ins = n as f64 / (cpu_now() - t) / 1e6;

    let t = cpu_now();
    let mut hit = 0usize;
    for &i in &order {
        hit += usize::from(wh.get_with(&keys[i], |_| ()).is_some());
    }
    let wh_get = n as f64 / (cpu_now() - t) / 1e6;
    assert_eq!(hit, n);

    let t = cpu_now();
    let mut hit = 0usize;
    for &i in &order {
        hit += usize::from(bt.contains_key(&keys[i][..]));
    }
    let bt_get = n as f64 / (cpu_now() - t) / 1e6;
    assert_eq!(hit, n);

    let t = cpu_now();
    let mut hit = 0usize;
    for chunk in order.chunks(16) {
        let ks: Vec<&[u8]> = chunk.iter().map(|&i| &keys[i][..]).collect();
        wh.get_many(&ks, &mut |_, v| hit += usize::from(v.is_some()));
    }
    let wh_many = n as f64 / (cpu_now() - t) / 1e6;
    assert_eq!(hit, n);

    let m = wh.memory_usage();
    println!(
        "n={n} insert: wh {wh_ins:.2} Mops/s, btree {bt_ins:.2} ({:.2}x) | get: wh {wh_get:.2}, btree {bt_get:.2} ({:.2}x) | get_many16 {wh_many:.2} ({:.2}x of get) | leaves {} restarts {} | bytes/key struct {:.1} kv {:.1}",
        wh_ins / bt_ins,
        wh_get / bt_get,
        wh_many / wh_get,
        wh.stats().leaves,
        wh.stats().restarts,
        m.structure_bytes as f64 / n as f64,
        m.key_value_bytes as f64 / n as f64,
    );
    Ok(())
}
