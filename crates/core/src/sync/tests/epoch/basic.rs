//! Single-threaded epoch tests (run under Miri): deferral runs once, a pinned guard blocks
//! reclamation, handles nest, `unprotected` runs at once, the epoch advances.

use super::flush_until;
use crate::sync::epoch;
use crate::sync::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

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
