//! The lock types: mutual exclusion of `SpinLock`, `BitLock` (the caller's other bits kept)
//! and `RwSpinLock` (readers see consistent data; a writer is not starved by readers that
//! hold the lock in turns).

use crate::sync::*;
use std::cell::UnsafeCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;

/// A plain (non-atomic) counter: increments lost or raced show up as a wrong total, and
/// as a data race under Miri.
struct Plain(UnsafeCell<u64>);
// SAFETY: only accessed under the lock being tested.
unsafe impl Sync for Plain {}

const LOCK_THREADS: usize = 4;
fn lock_iters() -> usize {
    if cfg!(miri) { 30 } else { 20_000 }
}

#[test]
fn spinlock_mutual_exclusion() {
    let lock = Arc::new(SpinLock::new(0u64));
    let inside = Arc::new(AtomicUsize::new(0));
    let ts: Vec<_> = (0..LOCK_THREADS)
        .map(|t| {
            let (lock, inside) = (lock.clone(), inside.clone());
            thread::spawn(move || {
                for i in 0..lock_iters() {
                    let mut g = if (t + i) % 3 == 0 {
                        loop {
                            if let Some(g) = lock.try_lock() {
                                break g;
                            }
                            thread::yield_now();
                        }
                    } else {
                        lock.lock()
                    };
                    assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0, "two holders");
                    *g += 1;
                    inside.fetch_sub(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
    assert_eq!(*lock.lock(), (LOCK_THREADS * lock_iters()) as u64);
}

#[test]
fn bitlock_mutual_exclusion_keeps_other_bits() {
    let word = Arc::new(AtomicU64::new(0));
    let data = Arc::new(Plain(UnsafeCell::new(0)));
    let ts: Vec<_> = (0..LOCK_THREADS)
        .map(|t| {
            let (word, data) = (word.clone(), data.clone());
            thread::spawn(move || {
                for _ in 0..lock_iters() {
                    let _g = BitLock::guard(&word, 7);
                    // SAFETY: bit 7 of `word` is held.
                    unsafe { *data.0.get() += 1 };
                    // Concurrent updates of other bits (thread's own bit) survive.
                    word.fetch_xor(1 << (20 + t), Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
    // SAFETY: all threads joined.
    let total = unsafe { *data.0.get() };
    assert_eq!(total, (LOCK_THREADS * lock_iters()) as u64);
    let expect_bits = if lock_iters().is_multiple_of(2) {
        0
    } else {
        0b1111 << 20
    };
    assert_eq!(word.load(Ordering::Relaxed), expect_bits);
}

#[test]
fn rwlock_mutual_exclusion_and_reader_consistency() {
    let lock = Arc::new(RwSpinLock::new((0u64, 0u64)));
    let ts: Vec<_> = (0..LOCK_THREADS)
        .map(|t| {
            let lock = lock.clone();
            thread::spawn(move || {
                for i in 0..lock_iters() {
                    if (t + i) % 4 == 0 {
                        let mut g = lock.write();
                        g.0 += 1;
                        g.1 += 1;
                    } else if (t + i) % 4 == 1 {
                        if let Some(mut g) = lock.try_write() {
                            g.0 += 1;
                            g.1 += 1;
                        }
                    } else {
                        let g = lock.read();
                        assert_eq!(g.0, g.1, "reader saw a half-done write");
                    }
                }
            })
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
    let g = lock.read();
    assert_eq!(g.0, g.1);
    let min_writes = (LOCK_THREADS * lock_iters() / 4) as u64;
    assert!(
        g.0 >= min_writes,
        "blocking writes lost: {} < {min_writes}",
        g.0
    );
    assert_eq!(lock.reader_count(), 1);
}

/// Two reader threads keep the lock read-held in turns (always one holder), which starves a
/// reader-preferring lock's writer forever; a writer-preferring one lets the writer in.
#[test]
fn rwlock_writer_is_not_starved() {
    let lock = Arc::new(RwSpinLock::new(0u64));
    let writes_needed = if cfg!(miri) { 3 } else { 200 };
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (lock, stop) = (lock.clone(), stop.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let g = lock.read();
                    std::hint::black_box(*g);
                    for _ in 0..50 {
                        std::hint::spin_loop();
                    }
                }
            })
        })
        .collect();
    for _ in 0..writes_needed {
        *lock.write() += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(*lock.read(), writes_needed);
}
