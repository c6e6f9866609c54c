//! Targeted interleaving and stress tests of the sync module (sizes scaled down under Miri).
//!
//! Epoch tests share the process's one collector with each other (and with whatever other
//! test of this binary runs at the same time), so they can only delay each other's
//! reclamation: every "eventually" is a wait bounded by a generous deadline in time
//! (`testing::wait::DEADLINE`), never by a count of iterations, and threads that must overlap are shown to
//! be running (a barrier, progress counters) before the work they overlap with starts.

use super::epoch::{self, registry_len};
use super::*;
use crate::testing::wait::{DEADLINE, Progress};
use std::cell::UnsafeCell;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Instant;

/// What the collector looks like now, for failure messages.
fn collector_state() -> String {
    format!(
        "global epoch {}, {} deferred functions pending, records pinned in epochs {:?}",
        epoch::global_epoch(),
        epoch::pending_deferred(),
        epoch::pinned_epochs()
    )
}

/// Pins and flushes until `done()` holds, failing after [`DEADLINE`] (a collector that never
/// reclaims fails the test instead of hanging it).
fn flush_until(mut done: impl FnMut() -> bool) {
    let epoch0 = epoch::global_epoch();
    assert!(
        epoch::flush_until(DEADLINE, &mut done),
        "deferred functions were not run within {DEADLINE:?} (epoch {epoch0} at the start; \
         now {})",
        collector_state()
    );
}

// ---------------------------------------------------------------------------------------
// Epoch: single-threaded (run under Miri)
// ---------------------------------------------------------------------------------------

#[test]
fn epoch_defer_destroy_and_closures_run_once() {
    let counter = Arc::new(AtomicUsize::new(0));
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let n = if cfg!(miri) { 20 } else { 1_000 };
    for i in 0..n {
        let guard = pin();
        let _nested = pin();
        if i % 2 == 0 {
            let boxed = Box::into_raw(Box::new(Counted(counter.clone())));
            // SAFETY: `boxed` was never shared; destroyed once.
            unsafe { guard.defer_destroy(boxed) };
        } else {
            let c = counter.clone();
            guard.defer(move || {
                c.fetch_add(1, Ordering::Relaxed);
            });
        }
    }
    flush_until(|| counter.load(Ordering::Relaxed) == n);
    // Never more than once.
    for _ in 0..10 {
        pin().flush();
    }
    assert_eq!(counter.load(Ordering::Relaxed), n);
}

#[test]
fn epoch_pinned_guard_blocks_reclamation() {
    let dropped = Arc::new(AtomicBool::new(false));
    // Our thread-local record stays pinned by `old`.
    let old = pin();
    assert!(epoch::is_pinned());
    // Retire through a second record of this thread.
    let other = Handle::register();
    {
        let g = other.pin();
        let d = dropped.clone();
        g.defer(move || d.store(true, Ordering::Relaxed));
    }
    // `old` pinned in epoch e: the epoch can reach e + 1 at most, the bag needs seal + 2
    // with seal >= e.
    for _ in 0..if cfg!(miri) { 20 } else { 2_000 } {
        other.pin().flush();
        assert!(
            !dropped.load(Ordering::Relaxed),
            "reclaimed under a pinned guard"
        );
    }
    drop(old);
    assert!(!epoch::is_pinned());
    flush_until(|| dropped.load(Ordering::Relaxed));
    drop(other);
}

#[test]
fn epoch_handle_shares_thread_record_and_nests() {
    let h = handle();
    assert!(!h.is_pinned());
    let g1 = h.pin();
    assert!(h.is_pinned());
    assert!(epoch::is_pinned(), "handle() shares the thread's record");
    let g2 = pin();
    drop(g1);
    assert!(h.is_pinned(), "inner guard still alive");
    drop(g2);
    assert!(!h.is_pinned());
    let h2 = h.clone();
    drop(h);
    let g = h2.pin();
    assert!(g.is_protected());
    assert!(format!("{g:?} {h2:?}").contains("pinned: true"));
}

#[test]
fn epoch_unprotected_runs_at_once() {
    let hit = Arc::new(AtomicBool::new(false));
    // SAFETY: nothing is shared.
    let g = unsafe { unprotected() };
    assert!(!g.is_protected());
    let h = hit.clone();
    g.defer(move || h.store(true, Ordering::Relaxed));
    assert!(hit.load(Ordering::Relaxed));
    let b = Box::into_raw(Box::new(5u32));
    // SAFETY: `b` is ours alone.
    unsafe { g.defer_destroy(b) };
    g.flush();
}

#[test]
fn epoch_advances_when_nobody_is_pinned_long() {
    let start = epoch::global_epoch();
    flush_until(|| epoch::global_epoch() >= start + 3);
}

// ---------------------------------------------------------------------------------------
// Epoch: threads
// ---------------------------------------------------------------------------------------

thread_local! {
    static LATE: std::cell::RefCell<LateDefer> = const { std::cell::RefCell::new(LateDefer(None)) };
}

/// Defers a function from a thread-local destructor, possibly after the collector's own
/// thread-local handle is gone.
struct LateDefer(Option<Arc<AtomicUsize>>);

impl Drop for LateDefer {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            let guard = pin();
            let nested = pin();
            guard.defer(move || {
                c.fetch_add(1, Ordering::Relaxed);
            });
            drop(nested);
            guard.flush();
        }
    }
}

/// Regression guard: `pin` from a thread-local destructor must neither panic nor touch a
/// destroyed thread-local, and what it defers must still run.
#[test]
fn epoch_pin_during_thread_local_destruction() {
    let counter = Arc::new(AtomicUsize::new(0));
    for pin_first in [true, false] {
        let c = counter.clone();
        thread::spawn(move || {
            // Order of first use decides the order of thread-local destruction.
            if pin_first {
                drop(pin());
            }
            LATE.with_borrow_mut(|late| late.0 = Some(c));
            if !pin_first {
                drop(pin());
            }
        })
        .join()
        .expect("no panic in thread-local destructors");
    }
    flush_until(|| counter.load(Ordering::Relaxed) == 2);
}

#[test]
fn epoch_exiting_threads_bags_are_not_lost_and_records_are_reused() {
    let before = registry_len();
    let counter = Arc::new(AtomicUsize::new(0));
    let threads = if cfg!(miri) { 4 } else { 100 };
    for _ in 0..threads {
        let c = counter.clone();
        thread::spawn(move || {
            let g = pin();
            // Fewer than a bag: only the exit path can hand them over.
            for _ in 0..3 {
                let c = c.clone();
                g.defer(move || {
                    c.fetch_add(1, Ordering::Relaxed);
                });
            }
        })
        .join()
        .unwrap();
    }
    flush_until(|| counter.load(Ordering::Relaxed) == threads * 3);
    // Sequential threads reuse records. Tests running at the same time can add records only
    // up to their own peak of simultaneously live participants (a few each, whatever the
    // timing), far below the number of threads started here, whose records would all be new
    // without reuse.
    let grown = registry_len() - before;
    assert!(
        grown < threads / 2,
        "registry grew by {grown} for {threads} sequential threads"
    );
}

const ALIVE: u64 = 0xA11C_E5A1_1CE5_A11C;
const DEAD: u64 = 0xDEAD_DEAD_DEAD_DEAD;

/// A node of the shared stack; `canary` is `ALIVE` until its destructor runs.
struct Node {
    canary: AtomicU64,
    id: usize,
    next: AtomicPtr<Node>,
    drops: Arc<Vec<AtomicBool>>,
}

impl Drop for Node {
    fn drop(&mut self) {
        assert_eq!(
            self.canary.swap(DEAD, Ordering::Relaxed),
            ALIVE,
            "double drop"
        );
        let was = self.drops[self.id].swap(true, Ordering::Relaxed);
        assert!(!was, "node {} dropped twice", self.id);
    }
}

/// (a) Many threads pin, push, pop (retiring popped nodes) and traverse a shared Treiber
/// stack. Readers check every node's canary: a node destroyed while a reader that pinned
/// before its retirement still reads it shows `DEAD` (the destructor poisons before freeing).
/// Every node is dropped exactly once.
#[test]
fn epoch_stress_linked_stack_canary_and_exactly_once() {
    let threads = if cfg!(miri) { 3 } else { 4 };
    let ops = if cfg!(miri) { 40 } else { 30_000 };
    let total = threads * ops;
    let drops: Arc<Vec<AtomicBool>> =
        Arc::new((0..total).map(|_| AtomicBool::new(false)).collect());
    let head = Arc::new(AtomicPtr::<Node>::new(ptr::null_mut()));
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (head, drops, barrier) = (head.clone(), drops.clone(), barrier.clone());
            thread::spawn(move || {
                let local = Handle::register();
                barrier.wait();
                for i in 0..ops {
                    let id = t * ops + i;
                    // Alternate the thread-local path and the explicit handle.
                    let guard = if i % 2 == 0 { pin() } else { local.pin() };
                    // Push.
                    let node = Box::into_raw(Box::new(Node {
                        canary: AtomicU64::new(ALIVE),
                        id,
                        next: AtomicPtr::new(ptr::null_mut()),
                        drops: drops.clone(),
                    }));
                    let mut h = head.load(Ordering::Relaxed);
                    loop {
                        // SAFETY: `node` is not yet published.
                        unsafe { (*node).next.store(h, Ordering::Relaxed) };
                        match head.compare_exchange_weak(
                            h,
                            node,
                            Ordering::Release,
                            Ordering::Relaxed,
                        ) {
                            Ok(_) => break,
                            Err(now) => h = now,
                        }
                    }
                    // Traverse a prefix, checking canaries (nested pin on purpose), hold the
                    // nodes a while, then check them again: a node reclaimed meanwhile shows
                    // `DEAD`, or another id if its memory was reused.
                    {
                        let _inner = pin();
                        let mut seen = [(ptr::null::<Node>(), 0usize); 16];
                        let mut cur = head.load(Ordering::Acquire);
                        let mut steps = 0;
                        while !cur.is_null() && steps < seen.len() {
                            // SAFETY: `cur` was reachable while we are pinned: not freed.
                            let n = unsafe { &*cur };
                            assert_eq!(n.canary.load(Ordering::Relaxed), ALIVE, "use after free");
                            seen[steps] = (cur, n.id);
                            cur = n.next.load(Ordering::Acquire);
                            steps += 1;
                        }
                        if i % 8 == 0 {
                            thread::yield_now();
                        } else {
                            for _ in 0..i % 64 {
                                std::hint::spin_loop();
                            }
                        }
                        for &(p, id) in &seen[..steps] {
                            // SAFETY: still pinned since `p` was reachable.
                            let n = unsafe { &*p };
                            assert_eq!(
                                n.canary.load(Ordering::Relaxed),
                                ALIVE,
                                "freed while pinned"
                            );
                            assert_eq!(n.id, id, "memory reused while pinned");
                        }
                    }
                    // Pop one and retire it.
                    let mut h = head.load(Ordering::Acquire);
                    while !h.is_null() {
                        // SAFETY: pinned, `h` was reachable: not freed (no ABA either).
                        let next = unsafe { (*h).next.load(Ordering::Acquire) };
                        match head.compare_exchange_weak(
                            h,
                            next,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        ) {
                            Ok(_) => {
                                // SAFETY: we unlinked `h`; it is a `Box` and retired once.
                                unsafe { guard.defer_destroy(h) };
                                // Often seal at once, so reclamation follows closely.
                                if i % 4 == 0 {
                                    guard.flush();
                                }
                                break;
                            }
                            Err(now) => h = now,
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // Every push was followed by a pop attempt that found a node: the stack is empty.
    assert!(head.load(Ordering::Relaxed).is_null());
    flush_until(|| drops.iter().all(|d| d.load(Ordering::Relaxed)));
}

// ---------------------------------------------------------------------------------------
// VersionLock (b): no torn reads
// ---------------------------------------------------------------------------------------

/// (b) Writers store the same value in every word of a 4-word record under the lock;
/// validated optimistic readers must never see two different words. The words are also
/// incremented with plain load/store under the lock, so a broken lock loses increments.
#[test]
fn version_lock_readers_never_see_torn_values() {
    let writers = 2;
    let readers = 2;
    let writes = if cfg!(miri) { 20 } else { 50_000 };
    let lock = Arc::new(VersionLock::new());
    let words: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut ts = Vec::new();
    for w in 0..writers {
        let (lock, words) = (lock.clone(), words.clone());
        ts.push(thread::spawn(move || {
            for i in 0..writes {
                let guard = if (w + i) % 2 == 0 {
                    lock.lock()
                } else {
                    // Read-then-upgrade path, retried.
                    loop {
                        let v = lock.read_begin();
                        if let Some(g) = lock.try_upgrade(v) {
                            break g;
                        }
                    }
                };
                let next = words[0].load(Ordering::Relaxed) + 1;
                for word in words.iter() {
                    word.store(next, Ordering::Relaxed);
                }
                drop(guard);
            }
        }));
    }
    let mut rs = Vec::new();
    for _ in 0..readers {
        let (lock, words, stop) = (lock.clone(), words.clone(), stop.clone());
        rs.push(thread::spawn(move || {
            let mut validated = 0u64;
            let mut last = 0;
            while !stop.load(Ordering::Relaxed) || validated == 0 {
                let v = lock.read_begin();
                let snap: Vec<u64> = words.iter().map(|w| w.load(Ordering::Relaxed)).collect();
                if lock.validate(v) {
                    assert!(snap.iter().all(|&x| x == snap[0]), "torn read {snap:?}");
                    assert!(snap[0] >= last, "went back in time");
                    assert_eq!(v.counter(), snap[0], "one version bump per write");
                    last = snap[0];
                    validated += 1;
                }
            }
        }));
    }
    for t in ts {
        t.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in rs {
        r.join().unwrap();
    }
    assert_eq!(words[3].load(Ordering::Relaxed), (writers * writes) as u64);
    assert_eq!(lock.read_begin().counter(), (writers * writes) as u64);
}

// ---------------------------------------------------------------------------------------
// Locks (c): mutual exclusion
// ---------------------------------------------------------------------------------------

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

/// Liveness with busy readers: two threads pin and unpin continuously (re-pinning in a tight
/// loop, the pattern that keeps some record pinned at almost every instant) while a third
/// retires objects. Every retired object is destroyed within the deadline, and the count of
/// objects waiting for reclamation stays bounded: it peaks at what is retired while the
/// epoch is held back by a reader preempted inside its critical section (one scheduler time
/// slice), not at a fraction of everything retired. The bound asserted is half of all
/// retirements: a collector that drains its backlog in quadratic time, or not at all,
/// fails it. The maximum is printed (`--nocapture`).
#[test]
#[cfg(not(miri))]
fn epoch_reclamation_keeps_up_with_busy_readers() {
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let readers = 2;
    let retirements: usize = 4_000_000;
    const PER_CHECK: usize = 1 << 16;
    let destroyed = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Progress::new(readers);
    let reader_threads: Vec<_> = (0..readers)
        .map(|r| {
            let (stop, progress) = (stop.clone(), progress.clone());
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let guard = pin();
                    std::hint::black_box(&guard);
                    drop(guard);
                    progress.bump(r);
                }
            })
        })
        .collect();
    let mut last = vec![0; readers];
    progress.wait_all_moved(&mut last);
    let started = Instant::now();
    let epoch0 = epoch::global_epoch();
    let mut max_pending = 0;
    for i in 0..retirements {
        let guard = pin();
        let object = Box::into_raw(Box::new(Counted(destroyed.clone())));
        // SAFETY: never shared, retired once; `Counted` is `Send`.
        unsafe { guard.defer_destroy(object) };
        drop(guard);
        if i % 1024 == 0 {
            max_pending = max_pending.max(i + 1 - destroyed.load(Ordering::Relaxed));
        }
        if i % PER_CHECK == PER_CHECK - 1 {
            // The readers keep pinning throughout (not starved by the scheduler).
            progress.wait_all_moved(&mut last);
        }
    }
    let retired_in = started.elapsed();
    let advances = epoch::global_epoch() - epoch0;
    flush_until(|| destroyed.load(Ordering::Relaxed) == retirements);
    stop.store(true, Ordering::Relaxed);
    for r in reader_threads {
        r.join().unwrap();
    }
    eprintln!(
        "epoch liveness: {retirements} retired in {retired_in:?} over {advances} epoch \
         advances, all destroyed {:?} later; at most {max_pending} pending",
        started.elapsed() - retired_in
    );
    assert!(
        max_pending <= retirements / 2,
        "{max_pending} of {retirements} retired objects were pending at once"
    );
}

/// Participants that are gone or done do not hold the epoch: a thread that exited, a thread
/// that pinned from a thread-local destructor at its exit, a thread alive (parked) after
/// dropping its `Handle` while pinned and then the guard, and a reader re-pinning in a tight
/// loop. The epoch still advances and a retired object is destroyed.
#[test]
fn epoch_finished_participants_do_not_hold_the_epoch() {
    let late = Arc::new(AtomicUsize::new(0));
    // Exits normally after a pin, and pins again from a thread-local destructor at exit.
    let l = late.clone();
    thread::spawn(move || {
        drop(pin());
        LATE.with_borrow_mut(|slot| slot.0 = Some(l));
    })
    .join()
    .unwrap();
    // Drops its handle while pinned, then the guard, then stays alive (parked) until the end.
    let parked = Arc::new(Barrier::new(2));
    let done = Arc::new(Barrier::new(2));
    let dropped_handle = {
        let (parked, done) = (parked.clone(), done.clone());
        thread::spawn(move || {
            let handle = Handle::register();
            let guard = handle.pin();
            drop(handle);
            assert!(guard.is_protected());
            drop(guard);
            parked.wait();
            done.wait();
        })
    };
    parked.wait();
    // Re-pins in a tight loop for the whole check.
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Progress::new(1);
    let busy = {
        let (stop, progress) = (stop.clone(), progress.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                drop(pin());
                progress.bump(0);
            }
        })
    };
    progress.wait_all_moved(&mut [0]);
    let epoch0 = epoch::global_epoch();
    flush_until(|| epoch::global_epoch() >= epoch0 + 4);
    let hit = Arc::new(AtomicBool::new(false));
    {
        let h = hit.clone();
        pin().defer(move || h.store(true, Ordering::Relaxed));
    }
    flush_until(|| hit.load(Ordering::Relaxed) && late.load(Ordering::Relaxed) == 1);
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();
    done.wait();
    dropped_handle.join().unwrap();
}

// ---------------------------------------------------------------------------------------
// Epoch: the pin barrier (asymmetric membarrier path and fenced fallback)
// ---------------------------------------------------------------------------------------

/// Whether the environment variable `name` is set and not `0`.
fn env_flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Whether this process was started on the fenced path: the default, unless
/// `epoch::ASYMMETRIC_ENV` asks for the asymmetric one (and `epoch::FALLBACK_ENV` does not
/// override it).
fn fallback_forced() -> bool {
    env_flag(epoch::FALLBACK_ENV) || !env_flag(epoch::ASYMMETRIC_ENV)
}

/// The mode is the one the environment and the kernel allow: membarrier whenever it was
/// asked for and the kernel offers it (so the fast path is really taken), the fence
/// otherwise (and always under Miri).
#[test]
fn epoch_pin_barrier_matches_environment() {
    let expected = if !cfg!(miri) && !fallback_forced() && epoch::membarrier_supported() {
        epoch::PinBarrier::Membarrier
    } else {
        epoch::PinBarrier::Fence
    };
    assert_eq!(epoch::pin_barrier(), expected);
    // Fixed for the life of the process.
    drop(pin());
    assert_eq!(epoch::pin_barrier(), expected);
}

/// An object with a canary and a self-check, poisoned by its destructor before it is freed.
struct Payload {
    canary: AtomicU64,
    generation: u64,
    check: AtomicU64,
    destroyed: Arc<AtomicUsize>,
}

impl Drop for Payload {
    fn drop(&mut self) {
        assert_eq!(
            self.canary.swap(DEAD, Ordering::Relaxed),
            ALIVE,
            "double drop"
        );
        self.check.store(DEAD, Ordering::Relaxed);
        self.destroyed.fetch_add(1, Ordering::Relaxed);
    }
}

/// Readers pin, load the one shared pointer and read the object it points to for a while;
/// a writer keeps replacing it and retiring the old one, flushing after every retirement
/// so that each one is sealed at once and the epoch is pushed forward as fast as the
/// collector allows (on the membarrier path: a heavy barrier per advance). A reader that
/// finds its object poisoned while still pinned caught a destruction inside its critical
/// section. Every object is destroyed exactly once. The readers are running before the
/// first replacement and make progress between every few hundred of them.
#[test]
fn epoch_reader_never_sees_a_retired_object_destroyed() {
    let replacements: u64 = if cfg!(miri) { 30 } else { 20_000 };
    let min_reads: u64 = if cfg!(miri) { 10 } else { 100 };
    let readers = 2;
    let destroyed = Arc::new(AtomicUsize::new(0));
    let make = |generation: u64| {
        Box::into_raw(Box::new(Payload {
            canary: AtomicU64::new(ALIVE),
            generation,
            check: AtomicU64::new(!generation),
            destroyed: destroyed.clone(),
        }))
    };
    let shared = Arc::new(AtomicPtr::new(make(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Progress::new(readers);
    let reader_threads: Vec<_> = (0..readers)
        .map(|r| {
            let (shared, stop, progress) = (shared.clone(), stop.clone(), progress.clone());
            thread::spawn(move || {
                let local = Handle::register();
                let mut reads = 0u64;
                let mut last = 0;
                while !stop.load(Ordering::Relaxed) || reads < min_reads {
                    // Both pin entry points.
                    let guard = if (reads + r as u64).is_multiple_of(2) {
                        local.pin()
                    } else {
                        pin()
                    };
                    let p = shared.load(Ordering::Acquire);
                    // SAFETY: loaded under `guard`: not destroyed before the guard drops.
                    let obj = unsafe { &*p };
                    assert_eq!(obj.canary.load(Ordering::Relaxed), ALIVE, "use after free");
                    let generation = obj.generation;
                    assert!(generation >= last, "went back to an older object");
                    last = generation;
                    for _ in 0..reads % 32 {
                        std::hint::spin_loop();
                    }
                    if reads.is_multiple_of(64) {
                        thread::yield_now();
                    }
                    assert_eq!(
                        obj.canary.load(Ordering::Relaxed),
                        ALIVE,
                        "destroyed while pinned"
                    );
                    assert_eq!(
                        obj.check.load(Ordering::Relaxed),
                        !generation,
                        "poisoned while pinned"
                    );
                    drop(guard);
                    reads += 1;
                    progress.bump(r);
                }
                reads
            })
        })
        .collect();
    // The readers run before the first replacement, and read between every
    // `REPLACEMENTS_PER_CHECK` of them.
    const REPLACEMENTS_PER_CHECK: u64 = if cfg!(miri) { 5 } else { 500 };
    let mut last = vec![0; readers];
    progress.wait_all_moved(&mut last);
    for generation in 1..=replacements {
        let guard = pin();
        let old = shared.swap(make(generation), Ordering::AcqRel);
        // SAFETY: `old` is unlinked (readers that pin from now on load the new object) and
        // retired once; `Payload` is `Send`.
        unsafe { guard.defer_destroy(old) };
        guard.flush();
        drop(guard);
        if generation % REPLACEMENTS_PER_CHECK == 0 {
            progress.wait_all_moved(&mut last);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in reader_threads {
        assert!(t.join().unwrap() >= min_reads);
    }
    // SAFETY: the readers are gone: the last object is ours alone.
    drop(unsafe { Box::from_raw(shared.load(Ordering::Relaxed)) });
    flush_until(|| destroyed.load(Ordering::Relaxed) == replacements as usize + 1);
    for _ in 0..10 {
        pin().flush();
    }
    assert_eq!(destroyed.load(Ordering::Relaxed), replacements as usize + 1);
}

/// Runs every epoch test of this module again in a child process with the asymmetric
/// (membarrier) pin asked for through the environment, so that both pin barriers are
/// exercised by the same tests (the mode is fixed per process; the fenced one is the
/// default). The child's copy of this test sees the variable and returns at once.
#[test]
#[cfg(not(miri))]
fn epoch_tests_pass_on_the_asymmetric_path() {
    if env_flag(epoch::ASYMMETRIC_ENV) || env_flag(epoch::FALLBACK_ENV) {
        // We are the child (or the whole run chose its mode through the environment).
        return;
    }
    assert_eq!(epoch::pin_barrier(), epoch::PinBarrier::Fence);
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args(["sync::tests::epoch_", "--test-threads", "2"])
        .env(epoch::ASYMMETRIC_ENV, "1")
        .output()
        .expect("run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "epoch tests failed on the asymmetric path:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The child really ran the epoch tests (not an empty filter).
    let passed: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("test result: ok. "))
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        passed >= 12,
        "only {passed} epoch tests ran in the child:\n{stdout}"
    );
}

/// Store buffering, the reordering the asymmetric pin relies on the heavy barrier to
/// forbid: `X: x = 1; compiler fence; r1 = y` against `Y: y = 1; heavy barrier; r2 = x`.
/// `r1 == 0 && r2 == 0` is forbidden (and happens hundreds of times in 20 000 rounds on x86 if
/// the heavy barrier is replaced by a compiler fence). Each round both threads meet at a
/// rendezvous (spinning, then yielding), then wait a varying number of spins before their store, so that the
/// two windows keep overlapping.
#[test]
#[cfg(not(miri))]
fn epoch_heavy_barrier_forbids_store_buffering() {
    use std::sync::atomic::compiler_fence;
    if epoch::pin_barrier() != epoch::PinBarrier::Membarrier {
        return; // nothing to test: the heavy barrier is not used
    }
    let rounds: u64 = 10_000;
    let x = Arc::new(AtomicU64::new(0));
    let y = Arc::new(AtomicU64::new(0));
    // Per-thread "arrived at round n" counters and X's result.
    let arrived = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let r1s = Arc::new(AtomicU64::new(0));
    // Spins while the other thread is running on another core, then yields: with one core
    // (or a busy machine) a pure spin would wait out a whole time slice at every meeting.
    let meet = |arrived: &[AtomicU64; 2], me: usize, round: u64| {
        arrived[me].store(round, Ordering::Release);
        let backoff = Backoff::new();
        while arrived[1 - me].load(Ordering::Acquire) < round {
            backoff.snooze();
        }
    };
    let other = {
        let (x, y, arrived, r1s) = (x.clone(), y.clone(), arrived.clone(), r1s.clone());
        thread::spawn(move || {
            for round in 1..=rounds {
                // Round start: the variables were reset by Y.
                meet(&arrived, 0, 3 * round);
                for _ in 0..(round * 7) % 23 {
                    std::hint::spin_loop();
                }
                x.store(1, Ordering::Relaxed);
                compiler_fence(Ordering::SeqCst);
                let r1 = y.load(Ordering::Relaxed);
                r1s.store(r1, Ordering::Relaxed);
                meet(&arrived, 0, 3 * round + 1);
                meet(&arrived, 0, 3 * round + 2);
            }
        })
    };
    let mut both_zero = 0;
    for round in 1..=rounds {
        meet(&arrived, 1, 3 * round);
        for _ in 0..(round * 5) % 19 {
            std::hint::spin_loop();
        }
        y.store(1, Ordering::Relaxed);
        assert!(
            epoch::heavy_barrier(),
            "membarrier refused after registration"
        );
        let r2 = x.load(Ordering::Relaxed);
        meet(&arrived, 1, 3 * round + 1);
        if r1s.load(Ordering::Relaxed) == 0 && r2 == 0 {
            both_zero += 1;
        }
        x.store(0, Ordering::Relaxed);
        y.store(0, Ordering::Relaxed);
        meet(&arrived, 1, 3 * round + 2);
    }
    other.join().unwrap();
    assert_eq!(
        both_zero, 0,
        "store buffering seen across the heavy barrier"
    );
}
