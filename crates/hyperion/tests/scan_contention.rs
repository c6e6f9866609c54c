//! Scans racing writers (issue #22): a scan must not starve while a writer keeps its own
//! arena busy, must not wait for writers of other arenas, and must yield every key that
//! is present for the whole scan.
//!
//! Regression: scans copied each batch under the shared side of the arena's
//! writer-preferring `RwSpinLock`, which a continuous writer of the arena keeps closed
//! (a reader enters only while no writer holds *or waits for* the lock): a scanner beside
//! one such writer stalled for seconds to minutes (`docs/results/hyperion.md`, "Scans
//! under writers"). Threads start together at a barrier; every wait is bounded by a
//! generous deadline in time, and a watchdog ends the process if a thread is stuck where
//! no deadline reaches it.

use std::ops::{Bound, ControlFlow};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use orrery_core::testing::rng::rng;
use orrery_core::testing::wait::{DEADLINE, Watchdog};
use orrery_hyperion::{Config, Hyperion};
use rand::Rng as _;

/// The watchdog's limit: longer than every deadline of the test.
const WATCHDOG: Duration = Duration::from_secs(600);

/// How long the scanner may take for all its scans while the writer hammers (the scans
/// take well under a second on an idle machine; a starved scanner took minutes).
const SCAN_DEADLINE: Duration = Duration::from_secs(2 * DEADLINE.as_secs());

/// Stable key `i` (first byte `s`; present for the whole test).
fn stable(i: usize) -> Vec<u8> {
    let mut k = vec![b's'];
    k.extend_from_slice(&((i as u32).wrapping_mul(2_654_435_761)).to_be_bytes());
    k
}

/// Key `i` the writer inserts in order (first byte `a`, in the same arena as `s` with one
/// arena), acknowledged through a watermark.
fn acked(i: usize) -> Vec<u8> {
    let mut k = vec![b'a'];
    k.extend_from_slice(&((i as u32).wrapping_mul(40_503)).to_be_bytes());
    k.push(i as u8);
    k
}

/// A churned key (inserted and removed again, with a value long enough to live out of
/// line), interleaved with the stable ones.
fn churn(r: u64) -> Vec<u8> {
    let mut k = vec![b's'];
    k.extend_from_slice(&(r as u32).to_be_bytes());
    k.push(0xC5);
    k
}

/// What a scanner checks after one scan: the keys it saw (ascending), against keys that
/// were present for the whole scan (`must`, in any order) within the range it covered.
fn check_covers(seen: &[Vec<u8>], must: &[Vec<u8>], lo: &[u8], what: &str) {
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "{what}: keys ascend strictly"
    );
    let Some(last) = seen.last() else {
        assert!(
            must.iter().all(|k| k.as_slice() < lo),
            "{what}: an empty scan from {lo:?} missed a stable key"
        );
        return;
    };
    for k in must {
        if k.as_slice() >= lo && k <= last {
            assert!(
                seen.binary_search(k).is_ok(),
                "{what}: a key present for the whole scan ({k:?}) was not yielded"
            );
        }
    }
}

/// Runs `scans` while another thread sits inside `h.compute(key, …)` — holding the write
/// lock of `key`'s arena, changing nothing — and returns how long `scans` took. The
/// holder leaves when `scans` returns (or at the deadline).
fn with_parked_writer(h: &Hyperion, key: &[u8], scans: impl FnOnce()) -> Duration {
    let holding = AtomicBool::new(false);
    let release = AtomicBool::new(false);
    std::thread::scope(|s| {
        let holder = s.spawn(|| {
            h.compute(key, |old| {
                holding.store(true, Ordering::Release);
                // Bounded: the scanner releases it, or the deadline does.
                let t0 = Instant::now();
                while !release.load(Ordering::Acquire) && t0.elapsed() < DEADLINE {
                    std::thread::yield_now();
                }
                old.map(<[u8]>::to_vec)
            })
            .unwrap();
        });
        orrery_core::testing::wait::wait_for("the writer holds its arena", || {
            holding.load(Ordering::Acquire)
        });
        let t0 = Instant::now();
        scans();
        let took = t0.elapsed();
        release.store(true, Ordering::Release);
        holder.join().expect("holder");
        took
    })
}

/// One scanner completes its scans — short ones (1–100 pairs) from random bounds and full
/// ones, ascending and descending — within a deadline while one writer hammers the same
/// (single) arena with inserts and removes; every scan yields the stable keys and the
/// acknowledged ones in its range.
#[test]
fn scans_complete_under_a_writer_of_their_own_arena() {
    let _watchdog = Watchdog::arm("scans_complete_under_a_writer_of_their_own_arena", WATCHDOG);
    let h = Hyperion::with_config(Config::builder().arenas(1).build().unwrap()).unwrap();
    let n_stable = 20_000;
    let mut stables: Vec<Vec<u8>> = (0..n_stable).map(stable).collect();
    for k in &stables {
        h.insert(k, b"stable").unwrap();
    }
    stables.sort();
    let mark = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let start = Barrier::new(2);
    let writes = AtomicUsize::new(0);
    let (short_scans, full_scans) = (300, 6);
    let elapsed = std::thread::scope(|s| {
        let scanner = s.spawn(|| {
            let mut x = rng(0x5CA9_0001);
            start.wait();
            let t0 = Instant::now();
            for j in 0..short_scans + full_scans {
                // Everything acknowledged before the scan starts must be seen.
                let m = mark.load(Ordering::Acquire);
                let acks: Vec<Vec<u8>> = (0..m).map(acked).collect();
                let check = |seen: &[Vec<u8>], lo: &[u8], what: &str| {
                    check_covers(seen, &stables, lo, what);
                    check_covers(seen, &acks, lo, what);
                };
                let mut seen = Vec::new();
                if j < short_scans {
                    let lo = match j % 3 {
                        0 => stables[x.random::<u64>() as usize % n_stable].clone(),
                        1 => (x.random::<u64>() as u32 | 0x6100_0000).to_be_bytes()[..3].to_vec(),
                        _ => vec![b's', x.random::<u64>() as u8],
                    };
                    let want = 1 + x.random::<u64>() as usize % 100;
                    h.scan(Bound::Included(&lo), &mut |k, _| {
                        seen.push(k.to_vec());
                        if seen.len() == want {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        }
                    });
                    check(&seen, &lo, "short scan");
                } else if j % 2 == 0 {
                    h.scan(Bound::Unbounded, &mut |k, _| {
                        seen.push(k.to_vec());
                        ControlFlow::Continue(())
                    });
                    check(&seen, &[], "full scan");
                    assert!(seen.len() >= stables.len() + acks.len(), "full scan");
                } else {
                    h.scan_rev(Bound::Unbounded, &mut |k, _| {
                        seen.push(k.to_vec());
                        ControlFlow::Continue(())
                    });
                    seen.reverse();
                    check(&seen, &[], "full descending scan");
                    let it: Vec<Vec<u8>> = h.iter().rev().map(|e| e.key().to_vec()).collect();
                    let mut it = it;
                    it.reverse();
                    check(&it, &[], "descending iterator");
                }
            }
            let took = t0.elapsed();
            done.store(true, Ordering::Release);
            took
        });
        let mut x = rng(0xB0B0_7777);
        let mut live: Vec<Vec<u8>> = Vec::new();
        start.wait();
        let t0 = Instant::now();
        let mut i = 0;
        // The writer hammers until the scanner is done (or the deadline passed: then it
        // stops, the scanner finishes, and the test fails on its time).
        while !done.load(Ordering::Acquire) && t0.elapsed() < SCAN_DEADLINE {
            let r = x.random::<u64>();
            if r.is_multiple_of(4) {
                h.insert(&acked(i), b"acked").unwrap();
                i += 1;
                mark.store(i, Ordering::Release);
            } else if r % 4 == 1 && !live.is_empty() {
                let k = live.swap_remove((r >> 8) as usize % live.len());
                assert!(h.remove(&k));
            } else {
                let k = churn(r >> 16);
                if h.insert(&k, &[7u8; 24]).unwrap() {
                    live.push(k);
                }
            }
            writes.fetch_add(1, Ordering::Relaxed);
        }
        scanner.join().expect("scanner")
    });
    assert!(writes.load(Ordering::Relaxed) > 0, "the writer wrote");
    assert!(
        elapsed < SCAN_DEADLINE,
        "{short_scans} short and {full_scans} full scans took {elapsed:?} beside one writer \
         of their arena (starved)"
    );
}

/// Scans of one arena never wait for a writer of another: while another thread holds the
/// other arenas' tries busy — here, literally, by a writer parked inside a `compute`
/// callback on a key of arena 1 (holding that arena's write lock) — scans of arena 0's
/// keys, and a scan from a bound below arena 1's tries that stops before reaching them,
/// complete.
#[test]
fn scans_do_not_wait_for_writers_of_other_arenas() {
    let _watchdog = Watchdog::arm("scans_do_not_wait_for_writers_of_other_arenas", WATCHDOG);
    let h = Hyperion::with_config(Config::builder().arenas(4).build().unwrap()).unwrap();
    // Arena of key byte b: b % 4. Keys of tries 0x40 (arena 0) and 0x41 (arena 1).
    for i in 0..5_000u32 {
        let mut k = vec![0x40];
        k.extend_from_slice(&i.to_be_bytes());
        h.insert(&k, b"v").unwrap();
        k[0] = 0x41;
        h.insert(&k, b"w").unwrap();
    }
    let took = with_parked_writer(&h, &[0x41, 0, 0, 0, 0], || {
        // Arena 0's trie, all of it, both ways, and short scans inside it.
        let mut n = 0;
        h.scan_prefix(&[0x40], &mut |_, _| {
            n += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(n, 5_000);
        let mut n = 0;
        h.scan_rev(Bound::Excluded(&[0x41][..]), &mut |k, _| {
            assert_eq!(k[0], 0x40);
            n += 1;
            if n == 5_000 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(n, 5_000);
        let got: Vec<_> = h
            .range(&[0x40, 0, 0, 1, 0][..]..&[0x40, 0, 0, 2, 0][..])
            .map(|e| e.key().to_vec())
            .collect();
        assert_eq!(got.len(), 256);
        // Empty tries of arena 1 (0x01, 0x05, …) are skipped without its lock: a scan
        // from the very first key reaches arena 0's trie 0x40 without waiting.
        let mut first = None;
        h.scan(Bound::Unbounded, &mut |k, _| {
            first = Some(k.to_vec());
            ControlFlow::Break(())
        });
        assert_eq!(first, Some(vec![0x40, 0, 0, 0, 0]));
    });
    assert!(
        took < DEADLINE,
        "scans of arena 0 waited {took:?} for a writer of arena 1"
    );
}

/// Scans are optimistic (`iter.rs`, "Locks and optimistic copies"): a writer that holds its arena's
/// lock without changing the arena — parked inside `compute`, whose callback runs with
/// the versions even — does not hold up scans of that same arena. Scans that take the
/// arena's lock fail this test: each waits for the holder (here: its deadline).
#[test]
fn scans_do_not_wait_for_a_lock_holder_of_their_own_arena() {
    let _watchdog = Watchdog::arm(
        "scans_do_not_wait_for_a_lock_holder_of_their_own_arena",
        WATCHDOG,
    );
    let h = Hyperion::with_config(Config::builder().arenas(4).build().unwrap()).unwrap();
    for i in 0..5_000u32 {
        let mut k = vec![0x41];
        k.extend_from_slice(&i.to_be_bytes());
        // Some values out of line (longer than 8 bytes).
        let v = if i % 3 == 0 {
            vec![7u8; 20]
        } else {
            b"w".to_vec()
        };
        h.insert(&k, &v).unwrap();
    }
    h.insert(&[0x41], b"root").unwrap();
    let took = with_parked_writer(&h, &[0x41, 0, 0, 0, 9], || {
        // The held arena's trie, all of it, both ways, and short scans inside it.
        let mut n = 0;
        h.scan_prefix(&[0x41], &mut |k, v| {
            if k.len() == 5 {
                let i = u32::from_be_bytes(k[1..].try_into().unwrap());
                assert_eq!(v.len(), if i % 3 == 0 { 20 } else { 1 }, "key {k:?}");
            }
            n += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(n, 5_001);
        let mut n = 0;
        h.scan_rev(Bound::Unbounded, &mut |k, _| {
            assert_eq!(k[0], 0x41);
            n += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(n, 5_001);
        let got: Vec<_> = h
            .range(&[0x41, 0, 0, 1, 0][..]..&[0x41, 0, 0, 2, 0][..])
            .map(|e| e.key().to_vec())
            .collect();
        assert_eq!(got.len(), 256);
        assert_eq!(h.iter().count(), 5_001);
        assert_eq!(h.iter().rev().count(), 5_001);
        assert_eq!(h.first().map(|(k, _)| k), Some(vec![0x41]));
        assert_eq!(
            h.last().map(|(k, _)| k),
            Some([&[0x41][..], &4_999u32.to_be_bytes()].concat())
        );
    });
    assert!(
        took < DEADLINE,
        "scans of arena 1 waited {took:?} for a lock holder of arena 1"
    );
}
