//! Writers, point readers and scanners (both directions) on one Cuckoo Trie at once, all
//! started together by a barrier and stopped by a time deadline (never an iteration count).
//!
//! Keys `0..N` (big-endian `u32`) are split into a *stable* half (even keys, inserted first,
//! never touched again) and a *churning* half (odd keys, inserted and removed by the
//! writers with values naming the key). What is checked is exact whatever the
//! interleaving:
//! - every lookup of a stable key finds its value; a churning key, when found, has its own
//!   value (no torn or foreign record);
//! - every scan, ascending or descending, yields strictly ordered keys, every stable key in
//!   its range (present throughout), and only values that belong to their keys;
//! - after the writers stop, the index holds exactly what the writers' last operations left.
//!
//! The small initial table makes the writers grow it during the run, so readers also cross
//! table replacements.

use std::ops::{Bound, ControlFlow};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use orrery_cuckoo_trie::{Config, CuckooTrie};

const N: u32 = if cfg!(miri) { 64 } else { 4096 };

fn key(i: u32) -> [u8; 4] {
    i.to_be_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("v{i}").into_bytes()
}

fn check_pair(k: &[u8], v: &[u8]) {
    let i = u32::from_be_bytes(k.try_into().expect("4-byte key"));
    assert_eq!(v, value(i), "value of key {i}");
}

/// Checks one scan's keys: strictly ordered (ascending if `up`), every stable key of the
/// scanned range `[lo, hi)` present.
fn check_scan(keys: &[u32], up: bool, lo: u32, hi: u32) {
    for w in keys.windows(2) {
        assert!(
            if up { w[0] < w[1] } else { w[0] > w[1] },
            "scan order {w:?}"
        );
    }
    let stable: Vec<u32> = keys.iter().copied().filter(|k| k % 2 == 0).collect();
    let mut want: Vec<u32> = (lo..hi).filter(|k| k % 2 == 0).collect();
    if !up {
        want.reverse();
    }
    assert_eq!(stable, want, "stable keys of [{lo}, {hi}) in a scan");
}

#[test]
fn writers_readers_and_scanners_overlap() {
    let ct =
        CuckooTrie::with_config(Config::builder().initial_buckets(16).build().unwrap()).unwrap();
    for i in (0..N).step_by(2) {
        ct.insert(&key(i), &value(i)).unwrap();
    }
    let run_for = Duration::from_millis(if cfg!(miri) { 50 } else { 1500 });
    let writers = 2u32;
    let start = Barrier::new(writers as usize + 3);
    let stop = AtomicBool::new(false);
    let scans = AtomicU64::new(0);
    let writes = AtomicU64::new(0);
    let lookups = AtomicU64::new(0);
    // Each writer owns the odd keys `≡ 2w+1 (mod 2·writers)`; what it leaves is returned.
    let finals: Vec<Vec<(u32, bool)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let (ct, start, stop, writes) = (&ct, &start, &stop, &writes);
                s.spawn(move || {
                    let mine: Vec<u32> =
                        (0..N).filter(|i| i % (2 * writers) == 2 * w + 1).collect();
                    let mut present = vec![false; mine.len()];
                    let mut x = 0x9E37_79B9u32.wrapping_mul(w + 1);
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        let j = x as usize % mine.len();
                        let k = mine[j];
                        if present[j] {
                            assert!(ct.remove(&key(k)), "remove of present {k}");
                        } else {
                            assert_eq!(ct.insert(&key(k), &value(k)), Ok(true), "insert {k}");
                        }
                        present[j] = !present[j];
                        writes.fetch_add(1, Ordering::Relaxed);
                    }
                    mine.into_iter().zip(present).collect::<Vec<_>>()
                })
            })
            .collect();
        // A point reader.
        s.spawn(|| {
            start.wait();
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) {
                i = (i + 7919) % N;
                match ct.get(&key(i)) {
                    Some(v) => assert_eq!(v, value(i)),
                    None => assert!(i % 2 == 1, "stable key {i} missing"),
                }
                lookups.fetch_add(1, Ordering::Relaxed);
            }
        });
        // A scanner: callback scans, iterators, both directions, random ranges.
        s.spawn(|| {
            start.wait();
            let mut x = 12345u32;
            while !stop.load(Ordering::Relaxed) {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                let lo = (x >> 8) % N;
                let hi = (lo + 1 + (x >> 20) % 600).min(N);
                let mut got = Vec::new();
                ct.scan(Bound::Included(&key(lo)[..]), &mut |k, v| {
                    check_pair(k, v);
                    let i = u32::from_be_bytes(k.try_into().unwrap());
                    if i >= hi {
                        return ControlFlow::Break(());
                    }
                    got.push(i);
                    ControlFlow::Continue(())
                });
                check_scan(&got, true, lo, hi);
                let up: Vec<u32> = ct
                    .range(&key(lo)[..]..&key(hi)[..])
                    .map(|e| {
                        check_pair(e.key(), e.value());
                        u32::from_be_bytes(e.key().try_into().unwrap())
                    })
                    .collect();
                check_scan(&up, true, lo, hi);
                let down: Vec<u32> = ct
                    .range(&key(lo)[..]..&key(hi)[..])
                    .rev()
                    .map(|e| {
                        check_pair(e.key(), e.value());
                        u32::from_be_bytes(e.key().try_into().unwrap())
                    })
                    .collect();
                check_scan(&down, false, lo, hi);
                scans.fetch_add(1, Ordering::Relaxed);
            }
        });
        start.wait();
        let began = Instant::now();
        // Run for `run_for`, and at least until every thread has done some work (bounded by
        // a generous deadline in time, for a loaded machine).
        let deadline = began + Duration::from_secs(120);
        while began.elapsed() < run_for
            || scans.load(Ordering::Relaxed) < 3
            || writes.load(Ordering::Relaxed) < 100
            || lookups.load(Ordering::Relaxed) < 100
        {
            assert!(Instant::now() < deadline, "no progress within the deadline");
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut expect: Vec<u32> = (0..N).step_by(2).collect();
    for (k, present) in finals.into_iter().flatten() {
        if present {
            expect.push(k);
        }
        assert_eq!(ct.get(&key(k)).is_some(), present, "final state of {k}");
    }
    expect.sort_unstable();
    let all: Vec<u32> = ct
        .iter()
        .map(|e| u32::from_be_bytes(e.key().try_into().unwrap()))
        .collect();
    assert_eq!(all, expect);
    assert_eq!(ct.len(), expect.len());
}
