//! `synchronize` and `GracePeriod`: waiting for readers pinned before the call, refusing
//! the caller's own pin, and RCU-style reuse of a slot after each grace period.

use crate::sync::epoch;
use crate::sync::*;
use crate::testing::wait::Progress;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

/// `synchronize` waits for a reader pinned on another thread before the call.
#[test]
fn epoch_synchronize_waits_for_old_readers() {
    let reader_pinned = Arc::new(Barrier::new(2));
    let released = Arc::new(AtomicBool::new(false));
    let reader = {
        let (reader_pinned, released) = (reader_pinned.clone(), released.clone());
        thread::spawn(move || {
            let guard = pin();
            reader_pinned.wait();
            // Give the writer time to start waiting (not needed for correctness).
            for _ in 0..if cfg!(miri) { 5 } else { 1_000 } {
                thread::yield_now();
            }
            released.store(true, Ordering::Relaxed);
            drop(guard);
        })
    };
    reader_pinned.wait();
    epoch::synchronize();
    assert!(
        released.load(Ordering::Relaxed),
        "synchronize returned while a reader pinned before it was still pinned"
    );
    reader.join().unwrap();
}

#[test]
#[should_panic(expected = "pinned thread")]
fn epoch_synchronize_refuses_a_pinned_caller() {
    let _guard = pin();
    epoch::synchronize();
}

/// A `GracePeriod` is not over while a reader pinned before its start stays in that
/// critical section, is over as soon as the reader unpins or *re-pins* (a new critical
/// section in the same epoch stores the same `state` word: only the pin counter tells them
/// apart), and reports the caller's own guard.
#[test]
fn epoch_grace_period_tracks_old_critical_sections_only() {
    let step = Arc::new(Barrier::new(2));
    let reader = {
        let step = step.clone();
        thread::spawn(move || {
            let guard = pin();
            step.wait(); // 1: pinned
            step.wait(); // 2: the writer started its grace period
            drop(guard);
            let again = pin();
            step.wait(); // 3: re-pinned (a new critical section)
            step.wait(); // 4: the writer checked
            drop(again);
        })
    };
    step.wait(); // 1
    let mut grace = epoch::GracePeriod::new();
    assert!(grace.is_over(), "a new grace period is over");
    grace.start();
    assert!(
        !grace.is_over(),
        "over while a reader pinned before it is still pinned"
    );
    assert!(grace.pending() >= 1);
    assert!(!grace.waits_for_current_thread());
    step.wait(); // 2
    step.wait(); // 3
    // The reader is pinned again (maybe in the same epoch, with the same state word), but in
    // a critical section that began after the start: no wait for it.
    grace.wait();
    step.wait(); // 4
    reader.join().unwrap();

    // The caller's own guard is one of the critical sections waited for.
    let guard = pin();
    grace.start();
    assert!(grace.waits_for_current_thread());
    assert!(!grace.is_over());
    drop(guard);
    assert!(!grace.waits_for_current_thread());
    grace.wait();
}

#[test]
#[should_panic(expected = "pinned since the grace period started")]
fn epoch_grace_period_wait_refuses_its_own_pin() {
    let _guard = pin();
    let mut grace = epoch::GracePeriod::new();
    grace.start();
    grace.wait();
}

/// RCU reuse through `GracePeriod`: a writer flips a published pointer between two slots
/// and, after each grace period, poisons the unpublished slot and rewrites it in place;
/// readers must never see a poisoned slot through the pointer they loaded while pinned. The
/// readers are running before the first round, and the writer waits for each of them to
/// make progress every [`ROUNDS_PER_CHECK`] rounds, so reads and reuses interleave on any
/// machine.
#[test]
fn epoch_grace_period_reuse_stress() {
    const ALIVE: u64 = 0x5EED;
    const POISON: u64 = 0xDEAD;
    const ROUNDS_PER_CHECK: usize = if cfg!(miri) { 5 } else { 500 };
    let readers = 2;
    let slots: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(ALIVE), AtomicU64::new(ALIVE)]);
    let published = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Progress::new(readers);
    let reader_threads: Vec<_> = (0..readers)
        .map(|r| {
            let (slots, published, stop, progress) = (
                slots.clone(),
                published.clone(),
                stop.clone(),
                progress.clone(),
            );
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _guard = pin();
                    let i = published.load(Ordering::Acquire);
                    for _ in 0..4 {
                        let v = slots[i].load(Ordering::Relaxed);
                        assert_eq!(v, ALIVE, "read a slot being reused");
                    }
                    progress.bump(r);
                }
            })
        })
        .collect();
    let mut last = vec![0; readers];
    progress.wait_all_moved(&mut last);
    let at_start = last.clone();
    let mut grace = epoch::GracePeriod::new();
    let rounds = if cfg!(miri) { 20 } else { 20_000 };
    for round in 0..rounds {
        let old = published.load(Ordering::Relaxed);
        published.store(1 - old, Ordering::Release);
        grace.start();
        grace.wait();
        // Nobody can still read `old`: poison it, then make it valid again before it is
        // published next round.
        slots[old].store(POISON, Ordering::Relaxed);
        for _ in 0..8 {
            std::hint::spin_loop();
        }
        slots[old].store(ALIVE, Ordering::Relaxed);
        if round % ROUNDS_PER_CHECK == ROUNDS_PER_CHECK - 1 {
            progress.wait_all_moved(&mut last);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for r in reader_threads {
        r.join().unwrap();
    }
    // Each reader read during the rounds at least once per check (the waits above).
    let checks = (rounds / ROUNDS_PER_CHECK) as u64;
    for (r, (&end, &start)) in last.iter().zip(&at_start).enumerate() {
        assert!(
            end - start >= checks,
            "reader {r} read {} times during the rounds, fewer than the {checks} checks",
            end - start
        );
    }
}
