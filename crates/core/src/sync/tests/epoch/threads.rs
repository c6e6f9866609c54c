//! Epoch reclamation with many threads: pins from thread-local destructors, exiting
//! threads' bags and records, a shared Treiber stack with canaries, liveness with busy
//! readers, finished participants that must not hold the epoch.

use super::{ALIVE, DEAD, flush_until};
use crate::sync::epoch::{self, registry_len};
use crate::sync::*;
use crate::testing::wait::Progress;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Instant;

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
