//! Quick ratios for Mercury (the benchmark proper is the `mercury` suite): loads N random
//! 8-byte keys with 8-byte values, then runs uniform positive GETs on 1 and 2 threads, for
//! Mercury, its bench-only variants (`NoLockMercury`, `StripedMercury`) and a
//! `std::collections::HashMap` behind an `RwLock`, and prints ratios to the locked HashMap
//! measured in the same run (per CPU second of the working threads, so that a shared
//! machine's scheduling does not decide the figures).
//!
//! Arguments: `[N = 4Mi] [secs per measurement = 2] [mode = table]`. Modes:
//! - `table`: the table above;
//! - `pin-ab`: interleaved A/B (7 rounds, medians) of 1-thread Mercury GETs without and with
//!   an epoch guard held per 256-operation batch;
//! - `nolock-ab`: interleaved A/B of 1-thread GETs, Mercury (unpinned and pinned per batch)
//!   vs `NoLockMercury`, with Mercury's chain statistics and the process's huge pages;
//! - `nolock-ab-presized`: the same with Mercury sized for N up front
//!   (`Mercury::with_capacity`).
//!
//! `orrery-bench lab mercury_quick 4M 2 nolock-ab`

use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use orrery::mercury::Mercury;
use orrery::mercury::variants::{NoLockMercury, StripedMercury};
use orrery::{KvIndex, MemoryUsage, Result};

use super::common::{splitmix, thread_cpu_secs};

/// The baseline: std's HashMap (SipHash) behind one reader-writer lock.
#[derive(Default)]
struct LockedHashMap(RwLock<HashMap<Vec<u8>, Vec<u8>>>);

impl KvIndex for LockedHashMap {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        match self.0.read().unwrap().get(key) {
            Some(v) => {
                f(v);
                true
            }
            None => false,
        }
    }
    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        Ok(self
            .0
            .write()
            .unwrap()
            .insert(key.to_vec(), value.to_vec())
            .is_none())
    }
    fn remove(&self, key: &[u8]) -> bool {
        self.0.write().unwrap().remove(key).is_some()
    }
    fn len(&self) -> usize {
        self.0.read().unwrap().len()
    }
    fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage::default()
    }
}

/// Runs `op(thread, i)` on `threads` threads for `secs`; returns Mops per second of each
/// thread's own CPU time, summed over threads (on a shared machine, wall time would measure
/// the scheduler's share as much as the code). With `pinned`, each
/// batch of 256 operations runs under one `orrery::sync::pin()` guard (the structure's
/// own pins then nest, which costs a counter increment instead of a full barrier).
fn timed(threads: usize, secs: f64, pinned: bool, op: &(dyn Fn(usize, u64) + Sync)) -> f64 {
    let stop = AtomicBool::new(false);
    let rate = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (stop, rate) = (&stop, &rate);
            s.spawn(move || {
                let mut seed = 0x1234_5678 + t as u64;
                let mut n = 0u64;
                let cpu = thread_cpu_secs();
                while !stop.load(Ordering::Relaxed) {
                    let _guard = pinned.then(orrery::sync::pin);
                    for _ in 0..256 {
                        op(t, splitmix(&mut seed));
                    }
                    n += 256;
                }
                let ops_per_cpu_sec = n as f64 / (thread_cpu_secs() - cpu).max(0.01);
                rate.fetch_add(ops_per_cpu_sec as u64, Ordering::Relaxed);
            });
        }
        std::thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Ordering::Relaxed);
    });
    rate.load(Ordering::Relaxed) as f64 / 1e6
}

/// Runs the program (see the module docs).
pub(crate) fn run(args: &[String]) -> std::result::Result<(), String> {
    let n = super::count_arg(args, 0, 4 << 20)? as usize;
    if n == 0 {
        return Err("N must be at least 1".into());
    }
    let secs: f64 = match args.get(1) {
        None => 2.0,
        Some(s) => s
            .parse()
            .ok()
            .filter(|s: &f64| *s > 0.0)
            .ok_or_else(|| format!("bad seconds {s:?}"))?,
    };
    let mode = args.get(2).map_or("table", String::as_str);
    let mut seed = 42;
    let keys: Vec<[u8; 8]> = (0..n).map(|_| splitmix(&mut seed).to_le_bytes()).collect();

    if mode == "pin-ab" {
        // Interleaved A/B of Mercury GETs without and with a guard held per 256-op batch.
        let m = Mercury::new();
        for k in &keys {
            m.insert(k, k).unwrap();
        }
        let get = |_: usize, r: u64| {
            let k = &keys[(r % n as u64) as usize];
            assert!(m.get_with(k, |v| v.len() == 8).unwrap());
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..7 {
            a.push(timed(1, secs, false, &get));
            b.push(timed(1, secs, true, &get));
        }
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        println!(
            "GET 1T, median of 7: pinned per batch / unpinned = {:.2}x",
            b[3] / a[3]
        );
        return Ok(());
    }
    if mode == "nolock-ab" || mode == "nolock-ab-presized" {
        // Interleaved A/B of 1-thread GETs: Mercury vs its nolock variant.
        let m = if mode == "nolock-ab-presized" {
            Mercury::with_capacity(n).map_err(|e| e.to_string())?
        } else {
            Mercury::new()
        };
        // SAFETY: loaded here, then only read.
        let nl = unsafe { NoLockMercury::new() };
        for k in &keys {
            m.insert(k, k).unwrap();
            nl.insert(k, k).unwrap();
        }
        let get_m = |_: usize, r: u64| {
            let k = &keys[(r % n as u64) as usize];
            assert!(KvIndex::get_with(&m, k, &mut |v| assert_eq!(v.len(), 8)));
        };
        let get_nl = |_: usize, r: u64| {
            let k = &keys[(r % n as u64) as usize];
            assert!(nl.get_with(k, &mut |v| assert_eq!(v.len(), 8)));
        };
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..7 {
            a.push(timed(1, secs, false, &get_m));
            b.push(timed(1, secs, false, &get_nl));
            c.push(timed(1, secs, true, &get_m));
        }
        a.sort_by(f64::total_cmp);
        b.sort_by(f64::total_cmp);
        c.sort_by(f64::total_cmp);
        println!(
            "GET 1T, median of 7: mercury pinned per batch / nolock = {:.2}x",
            c[3] / b[3]
        );
        println!("mercury chain stats: {:?}", m.chain_stats());
        let thp = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
        let thp = thp
            .lines()
            .find(|l| l.starts_with("AnonHugePages"))
            .unwrap_or("?");
        println!(
            "GET 1T, median of 7: mercury / nolock = {:.2}x (process {thp}, both ~{} MB)",
            a[3] / b[3],
            KvIndex::memory_usage(&m).total() >> 20
        );
        return Ok(());
    }
    if mode != "table" {
        return Err(format!(
            "unknown mode {mode:?} (table, pin-ab, nolock-ab, nolock-ab-presized)"
        ));
    }
    let subjects: Vec<(&str, Box<dyn KvIndex>)> = vec![
        ("locked std HashMap", Box::new(LockedHashMap::default())),
        ("mercury", Box::new(Mercury::new())),
        // SAFETY: the nolock variant is only written by the single-threaded load below and
        // then only read (concurrent lookups are allowed by its contract).
        ("mercury nolock", Box::new(unsafe { NoLockMercury::new() })),
        ("mercury striped", Box::new(StripedMercury::new())),
    ];

    println!("{n} keys of 8 B, values 8 B, {secs} s per measurement");
    println!(
        "{:<20} {:>10} {:>12} {:>12} {:>14} {:>14} {:>10}",
        "", "load", "get 1T", "get 2T", "get_many 1T", "get 1T pinned", "B/key"
    );
    let mut base: Option<[f64; 5]> = None;
    for (name, index) in &subjects {
        let cpu = thread_cpu_secs();
        for k in &keys {
            index.insert(k, k).unwrap();
        }
        let load = n as f64 / (thread_cpu_secs() - cpu).max(0.01) / 1e6;
        let get = |_: usize, r: u64| {
            let k = &keys[(r % n as u64) as usize];
            assert!(index.get_with(k, &mut |v| assert_eq!(v.len(), 8)));
        };
        let g1 = timed(1, secs, false, &get);
        let g2 = timed(2, secs, false, &get);
        let gp = timed(1, secs, true, &get);
        let many = |_: usize, r: u64| {
            let mut batch = [&keys[0][..]; 16];
            let mut x = r;
            for b in &mut batch {
                *b = &keys[(splitmix(&mut x) % n as u64) as usize];
            }
            index.get_many(&batch, &mut |_, v| assert!(v.is_some()));
        };
        let gm = timed(1, secs, false, &many) * 16.0;
        let bpk = index.memory_usage().total() as f64 / n as f64;
        let row = [load, g1, g2, gm, gp];
        let b = *base.get_or_insert(row);
        println!(
            "{name:<20} {:>10} {:>12} {:>12} {:>14} {:>14} {bpk:>10.1}",
            format!("{:.2}x", load / b[0]),
            format!("{:.2}x", g1 / b[1]),
            format!("{:.2}x", g2 / b[2]),
            format!("{:.2}x", gm / b[3]),
            format!("{:.2}x", gp / b[1]),
        );
    }
    println!(
        "(ratios to the locked std HashMap of the same run, per CPU second of the working \
         threads; B/key as reported by memory_usage)"
    );
    Ok(())
}
