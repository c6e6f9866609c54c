//! `hyperion_scan_profile`: full-scan work — loads one key set into a `Hyperion` and
//! into a `BTreeMap` (both in the same shuffled order), then times full scans of each,
//! side by side, with the benchmark's `scan-all` visitor (sum of key lengths and values,
//! a count). Not a benchmark of record (use `orrery-bench run --workload scan-all`); for
//! profiling.
//!
//! Arguments: `[SET] [KEYS] [ROUNDS] [hyperion|btree|both|held] [DELAY_S]` (defaults
//! `rand-int 1M 10 both 0`).
//!
//! ```text
//! orrery-bench lab hyperion_scan_profile rand-int 2M 20 both
//! ```
//!
//! `held` times Hyperion's full scans while 16 threads (one per arena of the default
//! configuration) sit, asleep, inside `compute` callbacks that change nothing: each
//! holds its arena's lock with the arena's version even, so every copy of the scan is
//! optimistic (`iter.rs`, "Locks and optimistic copies") — the optimistic walk's cost
//! against the locked walk's (`hyperion`).
//!
//! Data sets: `rand-int` (random 8-byte big-endian integers), `seq-int` (0..n big-endian),
//! `ngram` (synthetic "word word year" strings, ~23 bytes). With a delay, the process
//! prints its id and sleeps after loading, so `perf record -p` can attach to the scans only.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use orrery::hyperion::Hyperion;

use super::count_arg;
use crate::rng::Rng;

/// The keys of data set `set`, shuffled.
fn keys(set: &str, n: usize) -> Result<Vec<Vec<u8>>, String> {
    let mut r = Rng::new(0x2545_F491_4F6C_DD1D);
    let mut ks: Vec<Vec<u8>> = match set {
        "rand-int" => (0..n)
            .map(|_| r.next_u64().to_be_bytes().to_vec())
            .collect(),
        "seq-int" => (0..n as u64).map(|i| i.to_be_bytes().to_vec()).collect(),
        "ngram" => {
            // A vocabulary of 20,000 words of 3–10 letters, Zipf-ish word choice.
            let words: Vec<Vec<u8>> = (0..20_000)
                .map(|_| {
                    let len = 3 + r.next_u64() as usize % 8;
                    (0..len).map(|_| b'a' + (r.next_u64() % 26) as u8).collect()
                })
                .collect();
            let pick = |r: &mut Rng| {
                let x = (r.next_u64() % 1_000_000) as f64 / 1_000_000.0;
                &words[((x * x * x) * words.len() as f64) as usize]
            };
            (0..n)
                .map(|_| {
                    let mut k = pick(&mut r).clone();
                    k.push(b' ');
                    k.extend_from_slice(pick(&mut r));
                    if r.next_u64().is_multiple_of(2) {
                        k.push(b' ');
                        k.extend_from_slice(pick(&mut r));
                    }
                    k.extend_from_slice(format!(" {}", 1800 + r.next_u64() % 220).as_bytes());
                    k
                })
                .collect()
        }
        _ => return Err("data set: rand-int, seq-int or ngram".into()),
    };
    // Shuffle (load order).
    for i in (1..ks.len()).rev() {
        let j = r.next_u64() as usize % (i + 1);
        ks.swap(i, j);
    }
    Ok(ks)
}

/// The value as the benchmark's visitor reads it (its first 8 bytes, little-endian).
fn read_value(v: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = v.len().min(8);
    b[..n].copy_from_slice(&v[..n]);
    u64::from_le_bytes(b)
}

/// This thread's CPU time in seconds (the machine is shared: wall time varies with load).
/// This thread's CPU time in seconds.
fn cpu_now() -> f64 {
    crate::metrics::cpu::thread_cpu_secs()
}

/// The median of `v`.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the program (see the module docs for the arguments).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let set = args.first().map_or("rand-int", String::as_str);
    let n = count_arg(args, 1, 1_000_000)? as usize;
    let rounds = count_arg(args, 2, 10)? as usize;
    let which = args.get(3).map_or("both", String::as_str);
    let delay = count_arg(args, 4, 0)?;
    let ks = keys(set, n)?;
    let held = which == "held";
    let which = if held { "hyperion" } else { which };
    let h = Hyperion::new();
    let mut m = BTreeMap::new();
    for (i, k) in ks.iter().enumerate() {
        let v = (i as u64).to_le_bytes();
        if which != "btree" {
            h.insert(k, &v).expect("insert");
        }
        if which != "hyperion" {
            m.insert(k.clone(), v.to_vec());
        }
    }
    // The keys stay allocated, as in the benchmark (freeing millions of small blocks here
    // would leave the allocator a one-time consolidation inside the first scan).
    if delay > 0 {
        println!("loaded pid {}", std::process::id());
        std::thread::sleep(std::time::Duration::from_secs(delay));
    }
    let (mut th, mut tb) = (Vec::new(), Vec::new());
    let mut digest = 0u64;
    let gate = (Mutex::new(false), Condvar::new());
    let entered = AtomicUsize::new(0);
    std::thread::scope(|s| {
        if held {
            for i in 0..16u8 {
                let (h, gate, entered) = (&h, &gate, &entered);
                s.spawn(move || {
                    h.compute(&[i], |old| {
                        entered.fetch_add(1, Ordering::Release);
                        let mut open = gate.0.lock().expect("gate");
                        while !*open {
                            open = gate.1.wait(open).expect("gate");
                        }
                        old.map(<[u8]>::to_vec)
                    })
                    .expect("compute");
                });
            }
            while entered.load(Ordering::Acquire) < 16 {
                std::thread::yield_now();
            }
        }
        for _ in 0..rounds {
            if which != "btree" {
                let t = cpu_now();
                let mut c = 0usize;
                h.scan(Bound::Unbounded, &mut |k, v| {
                    digest = digest.wrapping_add(k.len() as u64 + read_value(v));
                    c += 1;
                    ControlFlow::Continue(())
                });
                th.push(c as f64 / (cpu_now() - t) / 1e6);
            }
            if which != "hyperion" {
                let t = cpu_now();
                let mut c = 0usize;
                for (k, v) in m.range::<[u8], _>((Bound::Unbounded, Bound::Unbounded)) {
                    digest = digest.wrapping_add(k.len() as u64 + read_value(v));
                    c += 1;
                }
                tb.push(c as f64 / (cpu_now() - t) / 1e6);
            }
        }
        *gate.0.lock().expect("gate") = true;
        gate.1.notify_all();
    });
    let mu = h.memory_usage();
    println!(
        "{set} {n}: hyperion {:.2} M keys/s, btreemap {:.2} M keys/s per CPU-second (medians of {rounds}); hyperion {:.1} B/key; digest {digest}",
        if th.is_empty() { 0.0 } else { median(th) },
        if tb.is_empty() { 0.0 } else { median(tb) },
        mu.total() as f64 / n.max(1) as f64,
    );
    drop(ks);
    Ok(())
}
