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

use rand::Rng;
use std::ops::{Bound, ControlFlow};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use orrery_core::testing::wait::Watchdog;
use orrery_cuckoo_trie::{Config, CuckooTrie};

/// A test still running after this is stuck inside the index (every wait of the test is
/// bounded by a shorter deadline): the watchdog ends the process instead of letting the
/// thread scope hang the run.
const WATCHDOG: std::time::Duration = std::time::Duration::from_secs(600);

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
    let _watchdog = Watchdog::arm("writers_readers_and_scanners_overlap", WATCHDOG);
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
                    let mut rng = orrery_core::testing::rng::rng(u64::from(
                        0x9E37_79B9u32.wrapping_mul(w + 1),
                    ));
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let x: u32 = rng.random();
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
        run_until_progress(run_for, &stop, || {
            scans.load(Ordering::Relaxed) < 3
                || writes.load(Ordering::Relaxed) < 100
                || lookups.load(Ordering::Relaxed) < 100
        });
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

/// Writers that overlap in the trie: neighbouring keys belong to different writers, so
/// their inserts lock each other's leaves as list predecessors and share parents (and the
/// small initial table makes them grow it together). A reader checks, while they run, the
/// two linearizability facts that matter to a user: an insert that was acknowledged before
/// a lookup started is seen by it (no lost acknowledged insert), and a key never inserted
/// is never seen (no phantom). Afterwards the index holds exactly the acknowledged keys.
#[test]
fn overlapping_inserts_lose_nothing_and_invent_nothing() {
    let _watchdog = Watchdog::arm(
        "overlapping_inserts_lose_nothing_and_invent_nothing",
        WATCHDOG,
    );
    const W: u32 = 3;
    let ct =
        CuckooTrie::with_config(Config::builder().initial_buckets(4).build().unwrap()).unwrap();
    let run_for = Duration::from_millis(if cfg!(miri) { 50 } else { 1000 });
    let start = Barrier::new(W as usize + 2);
    let stop = AtomicBool::new(false);
    let acked: Vec<AtomicU64> = (0..W).map(|_| AtomicU64::new(0)).collect();
    let checks = AtomicU64::new(0);
    // Writer `w` inserts keys `i·W + w` for i = 0, 1, 2, …; bit 31 is never set.
    let k = |w: u32, i: u64| key(i as u32 * W + w);
    std::thread::scope(|s| {
        for w in 0..W {
            let (ct, start, stop, acked) = (&ct, &start, &stop, &acked);
            s.spawn(move || {
                start.wait();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) && (i as u32) < (1 << 29) / W {
                    let kk = k(w, i);
                    let v = u32::from_be_bytes(kk);
                    assert_eq!(ct.insert(&kk, &value(v)), Ok(true), "insert {v}");
                    i += 1;
                    acked[w as usize].store(i, Ordering::Release);
                }
            });
        }
        s.spawn(|| {
            start.wait();
            let mut rng = orrery_core::testing::rng::rng(u64::from(0x2545_F491u32));
            while !stop.load(Ordering::Relaxed) {
                let x: u32 = rng.random();
                let w = x % W;
                let c = acked[w as usize].load(Ordering::Acquire);
                if c > 0 {
                    let i = u64::from(x >> 3) % c;
                    let kk = k(w, i);
                    let v = u32::from_be_bytes(kk);
                    assert_eq!(ct.get(&kk), Some(value(v)), "acknowledged key {v} lost");
                }
                let phantom = key(x | 0x8000_0000);
                assert_eq!(ct.get(&phantom), None, "phantom key");
                checks.fetch_add(1, Ordering::Relaxed);
            }
        });
        start.wait();
        run_until_progress(run_for, &stop, || {
            checks.load(Ordering::Relaxed) < 100
                || acked.iter().any(|a| a.load(Ordering::Relaxed) < 100)
        });
        stop.store(true, Ordering::Relaxed);
    });
    let mut want: Vec<u32> = Vec::new();
    for w in 0..W {
        for i in 0..acked[w as usize].load(Ordering::Relaxed) {
            let kk = k(w, i);
            want.push(u32::from_be_bytes(kk));
            assert_eq!(ct.get(&kk), Some(value(u32::from_be_bytes(kk))));
        }
    }
    want.sort_unstable();
    let all: Vec<u32> = ct
        .iter()
        .map(|e| {
            check_pair(e.key(), e.value());
            u32::from_be_bytes(e.key().try_into().unwrap())
        })
        .collect();
    assert_eq!(all, want, "exactly the acknowledged keys, in order");
    assert_eq!(ct.len(), want.len());
}

/// Overlapping removals: writers remove interleaved residue classes of one key range at
/// the same time (neighbours, shared parents, tail collapses), while a scanner checks that
/// every scan is strictly ascending and holds every key nobody removes. Afterwards exactly
/// those keys are left.
#[test]
fn overlapping_removes_leave_exactly_the_rest() {
    let _watchdog = Watchdog::arm("overlapping_removes_leave_exactly_the_rest", WATCHDOG);
    const W: u32 = 3;
    let n: u32 = if cfg!(miri) { 60 } else { 6000 };
    let ct = CuckooTrie::new();
    for i in 0..n {
        ct.insert(&key(i), &value(i)).unwrap();
    }
    // Keys `≡ W (mod W + 1)` stay; writer `w` removes the keys `≡ w`.
    let stays = |i: u32| i % (W + 1) == W;
    let start = Barrier::new(W as usize + 2);
    let done = AtomicU64::new(0);
    let scans = AtomicU64::new(0);
    std::thread::scope(|s| {
        for w in 0..W {
            let (ct, start, done) = (&ct, &start, &done);
            s.spawn(move || {
                start.wait();
                for i in (0..n).filter(|i| i % (W + 1) == w) {
                    assert!(ct.remove(&key(i)), "remove {i}");
                }
                done.fetch_add(1, Ordering::Release);
            });
        }
        s.spawn(|| {
            start.wait();
            while done.load(Ordering::Acquire) < u64::from(W) || scans.load(Ordering::Relaxed) < 3 {
                let got: Vec<u32> = ct
                    .iter()
                    .map(|e| {
                        check_pair(e.key(), e.value());
                        u32::from_be_bytes(e.key().try_into().unwrap())
                    })
                    .collect();
                for w in got.windows(2) {
                    assert!(w[0] < w[1], "scan order {w:?}");
                }
                let kept: Vec<u32> = got.iter().copied().filter(|&i| stays(i)).collect();
                let want: Vec<u32> = (0..n).filter(|&i| stays(i)).collect();
                assert_eq!(kept, want, "a key nobody removes is missing from a scan");
                scans.fetch_add(1, Ordering::Relaxed);
            }
        });
        start.wait();
        orrery_core::testing::wait::wait_for("the removers and the scanner", || {
            done.load(Ordering::Acquire) == u64::from(W) && scans.load(Ordering::Relaxed) >= 3
        });
    });
    let all: Vec<u32> = ct
        .iter()
        .map(|e| u32::from_be_bytes(e.key().try_into().unwrap()))
        .collect();
    let want: Vec<u32> = (0..n).filter(|&i| stays(i)).collect();
    assert_eq!(all, want);
    assert_eq!(ct.len(), want.len());
    for i in 0..n {
        assert_eq!(ct.contains_key(&key(i)), stays(i), "key {i}");
    }
}

/// Read-modify-writes from overlapping threads are atomic: `compute` increments of a few
/// shared counters, interleaved with inserts of fresh neighbouring keys (splits around the
/// counters' leaves), lose no increment.
#[test]
fn compute_increments_are_not_lost() {
    let _watchdog = Watchdog::arm("compute_increments_are_not_lost", WATCHDOG);
    const T: u32 = 3;
    const COUNTERS: u32 = 4;
    let ct =
        CuckooTrie::with_config(Config::builder().initial_buckets(4).build().unwrap()).unwrap();
    let run_for = Duration::from_millis(if cfg!(miri) { 50 } else { 800 });
    let start = Barrier::new(T as usize + 1);
    let stop = AtomicBool::new(false);
    let ops: Vec<AtomicU64> = (0..T).map(|_| AtomicU64::new(0)).collect();
    let counter = |c: u32| key(c * 1000);
    std::thread::scope(|s| {
        for t in 0..T {
            let (ct, start, stop, ops) = (&ct, &start, &stop, &ops);
            s.spawn(move || {
                start.wait();
                let mut i = 0u32;
                while !stop.load(Ordering::Relaxed) && i < 900 {
                    let c = (i + t) % COUNTERS;
                    ct.compute(&counter(c), |old| {
                        let n = old.map_or(0, |v| u64::from_be_bytes(v.try_into().unwrap()));
                        Some((n + 1).to_be_bytes().to_vec())
                    })
                    .unwrap();
                    ops[t as usize].fetch_add(1, Ordering::Relaxed);
                    // A fresh key next to counter `c`: owned by this thread, never a counter.
                    let fresh = c * 1000 + 1 + t * 300 + i / COUNTERS;
                    ct.insert(&key(fresh), &value(fresh)).unwrap();
                    i += 1;
                }
            });
        }
        start.wait();
        run_until_progress(run_for, &stop, || {
            ops.iter().any(|o| o.load(Ordering::Relaxed) < 50)
        });
        stop.store(true, Ordering::Relaxed);
    });
    let total: u64 = ops.iter().map(|o| o.load(Ordering::Relaxed)).sum();
    let counted: u64 = (0..COUNTERS)
        .map(|c| {
            ct.get(&counter(c))
                .map_or(0, |v| u64::from_be_bytes(v.as_slice().try_into().unwrap()))
        })
        .sum();
    assert_eq!(counted, total, "increments lost");
}

/// Keys for the predecessor race: 3-byte keys `group (u16 BE) · suffix`. Suffixes 0x10 and
/// 0x20 are stable (inserted first, never touched); 0x30, 0xF0, 0xF8 churn. The churning
/// suffixes are above the stable ones, so their inserts and removes keep changing the
/// maximum of their group's subtrees (subtree-max locators on every level of the group, and
/// splits and collapses of the leaves under 0xF0/0xF8). Groups from `STABLE_GROUPS` on hold
/// only churning keys: they change the maximum of the whole trie (the root's locator).
const GROUPS: u16 = if cfg!(miri) { 8 } else { 600 };
const STABLE_GROUPS: u16 = GROUPS - GROUPS / 8;
const STABLE_SUFFIXES: [u8; 2] = [0x10, 0x20];
const CHURN_SUFFIXES: [u8; 3] = [0x30, 0xF0, 0xF8];

fn gkey(g: u16, s: u8) -> [u8; 3] {
    let b = g.to_be_bytes();
    [b[0], b[1], s]
}

fn gvalue(k: &[u8]) -> Vec<u8> {
    let mut v = b"w".to_vec();
    v.extend_from_slice(k);
    v
}

/// Inserts and removes race with predecessor searches (`scan_rev`, the predecessor of a
/// bound, `last`), which follow subtree-max locators: every descending scan is strictly
/// descending, below its bound, with values of their own keys, and holds exactly the
/// stable keys of the range it covered; every predecessor is at least the largest stable
/// key below the bound; `last` at least the largest stable key. Run on a table that never
/// grows (every locator kept exact by the writers) and on one that grows during the run
/// (copies marked stale).
#[test]
fn removes_and_inserts_race_with_predecessor_searches() {
    let _watchdog = Watchdog::arm(
        "removes_and_inserts_race_with_predecessor_searches",
        WATCHDOG,
    );
    for initial_buckets in [1 << 14, 16] {
        predecessor_race(initial_buckets);
    }
}

fn predecessor_race(initial_buckets: usize) {
    let ct = CuckooTrie::with_config(
        Config::builder()
            .initial_buckets(initial_buckets)
            .build()
            .unwrap(),
    )
    .unwrap();
    let mut stable: Vec<[u8; 3]> = Vec::new();
    for g in 0..STABLE_GROUPS {
        for s in STABLE_SUFFIXES {
            let k = gkey(g, s);
            ct.insert(&k, &gvalue(&k)).unwrap();
            stable.push(k);
        }
    }
    let churn: Vec<[u8; 3]> = (0..GROUPS)
        .flat_map(|g| CHURN_SUFFIXES.map(|s| gkey(g, s)))
        .chain((STABLE_GROUPS..GROUPS).flat_map(|g| STABLE_SUFFIXES.map(|s| gkey(g, s))))
        .collect();
    let stable_below = |b: &[u8]| stable.iter().rev().find(|k| k.as_slice() < b).copied();
    let run_for = Duration::from_millis(if cfg!(miri) { 50 } else { 1500 });
    let writers = 2usize;
    let start = Barrier::new(writers + 3);
    let stop = AtomicBool::new(false);
    let (reads, writes) = (AtomicU64::new(0), AtomicU64::new(0));
    let finals: Vec<Vec<([u8; 3], bool)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let (ct, start, stop, writes, churn) = (&ct, &start, &stop, &writes, &churn);
                s.spawn(move || {
                    let mine: Vec<[u8; 3]> =
                        churn.iter().copied().skip(w).step_by(writers).collect();
                    let mut present = vec![false; mine.len()];
                    let mut rng = orrery_core::testing::rng::rng(u64::from(
                        0x2545_F491u32.wrapping_mul(w as u32 + 1),
                    ));
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let x: u32 = rng.random();
                        let j = x as usize % mine.len();
                        let k = mine[j];
                        if present[j] {
                            assert!(ct.remove(&k), "remove of present {k:?}");
                        } else {
                            assert_eq!(ct.insert(&k, &gvalue(&k)), Ok(true), "insert {k:?}");
                        }
                        present[j] = !present[j];
                        writes.fetch_add(1, Ordering::Relaxed);
                    }
                    mine.into_iter().zip(present).collect::<Vec<_>>()
                })
            })
            .collect();
        for r in 0..2u32 {
            let (ct, start, stop, reads, stable) = (&ct, &start, &stop, &reads, &stable);
            let stable_below = &stable_below;
            s.spawn(move || {
                let mut x = 777u32 + r;
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    let g = ((x >> 8) % u32::from(GROUPS + 2)) as u16;
                    let b = gkey(g, (x >> 20) as u8);
                    // A descending scan of up to 40 keys below `b`.
                    let mut got: Vec<Vec<u8>> = Vec::new();
                    ct.scan_rev(Bound::Excluded(&b[..]), &mut |k, v| {
                        assert_eq!(v, gvalue(k), "value of {k:?}");
                        got.push(k.to_vec());
                        if got.len() >= 40 {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        }
                    });
                    assert!(got.iter().all(|k| k.as_slice() < &b[..]), "above the bound");
                    for w in got.windows(2) {
                        assert!(w[0] > w[1], "scan_rev order {w:?}");
                    }
                    // The range it covered: [last key yielded, b), or everything below b
                    // if it ran out of keys.
                    let lo: &[u8] = if got.len() >= 40 {
                        got.last().unwrap()
                    } else {
                        &[]
                    };
                    let want: Vec<&[u8]> = stable
                        .iter()
                        .rev()
                        .map(|k| &k[..])
                        .filter(|k| *k < &b[..] && *k >= lo)
                        .collect();
                    let have: Vec<&[u8]> = got
                        .iter()
                        .map(Vec::as_slice)
                        .filter(|k| {
                            STABLE_SUFFIXES.contains(&k[2]) && k[..2] < gkey(STABLE_GROUPS, 0)[..2]
                        })
                        .collect();
                    assert_eq!(have, want, "stable keys of a scan_rev below {b:?}");
                    // The predecessor of `b` (one predecessor search).
                    let p = ct.range(..&b[..]).next_back().map(|e| e.key().to_vec());
                    if let Some(sb) = stable_below(&b) {
                        let p = p.expect("a stable key is below the bound");
                        assert!(
                            p.as_slice() >= &sb[..] && p.as_slice() < &b[..],
                            "pred {p:?}"
                        );
                    }
                    let last = ct.last().map(|(k, _)| k);
                    assert!(last.is_some_and(|k| k.as_slice() >= &stable[stable.len() - 1][..]));
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        start.wait();
        run_until_progress(run_for, &stop, || {
            reads.load(Ordering::Relaxed) < 20 || writes.load(Ordering::Relaxed) < 100
        });
        stop.store(true, Ordering::Relaxed);
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut expect: Vec<Vec<u8>> = stable.iter().map(|k| k.to_vec()).collect();
    for (k, present) in finals.into_iter().flatten() {
        if present {
            expect.push(k.to_vec());
        }
    }
    expect.sort_unstable();
    let mut down: Vec<Vec<u8>> = Vec::new();
    ct.scan_rev(Bound::Unbounded, &mut |k, _| {
        down.push(k.to_vec());
        ControlFlow::Continue(())
    });
    down.reverse();
    assert_eq!(down, expect, "final descending scan");
    assert_eq!(ct.last().map(|(k, _)| k), expect.last().cloned());
}

/// Lets the started threads run for `run_for`, and at least while `behind()` (some thread
/// has not done enough work yet), bounded by a generous deadline in time for a loaded
/// machine. Past the deadline it sets `stop` before failing: the scope joins its threads
/// before the panic propagates, so threads left running would hang the test instead.
fn run_until_progress(run_for: Duration, stop: &AtomicBool, behind: impl Fn() -> bool) {
    let began = Instant::now();
    let deadline = began + Duration::from_secs(120);
    while began.elapsed() < run_for || behind() {
        if Instant::now() >= deadline {
            stop.store(true, Ordering::Relaxed);
            panic!("no progress within the deadline");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
