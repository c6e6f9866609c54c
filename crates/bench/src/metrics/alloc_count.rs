//! A counting global allocator: live heap bytes, for bytes/key.
//!
//! Installed as the bench binary's `#[global_allocator]` (in `main.rs`), it forwards to the
//! system allocator and adds/subtracts each block's size to one of 64 cache-padded
//! counters chosen by thread, so counting costs an uncontended atomic add per call rather
//! than a shared cache line bouncing between loader threads. [`live_bytes`] sums them.
//! The figure is the bytes the program asked for (not the allocator's own slack or
//! fragmentation: RSS shows those). Memory a structure maps directly (`mmap`, e.g. the
//! huge-page regions and slabs of `orrery::alloc`) bypasses the global allocator and is
//! not counted here; RSS and the structure's `memory_usage()` include it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

const SHARDS: usize = 64;

#[repr(align(128))]
struct Shard(AtomicIsize);

static COUNTERS: [Shard; SHARDS] = [const { Shard(AtomicIsize::new(0)) }; SHARDS];
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // Const-initialised and without a destructor: touching it never allocates.
    static MY_SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// In test builds only: each thread's own net allocated bytes and their highest value
/// since [`reset_thread_peak`], so a test can show that a step (a drop, a walk) needs no
/// heap that grows with a structure's size. Runs never pay for it.
#[cfg(test)]
mod thread_peak {
    use std::cell::Cell;

    thread_local! {
        // Const-initialised, no destructor: touching them never allocates.
        static LIVE: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
    }

    /// Adds `delta` bytes to this thread's net count and raises its peak.
    #[inline]
    pub(super) fn track(delta: isize) {
        let _ = LIVE.try_with(|l| {
            let v = l.get() + delta;
            l.set(v);
            let _ = PEAK.try_with(|p| p.set(p.get().max(v)));
        });
    }

    /// This thread's net count now, made its peak.
    pub(super) fn reset() -> isize {
        let v = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(v));
        v
    }

    /// This thread's highest net count since [`reset`].
    pub(super) fn peak() -> isize {
        PEAK.with(Cell::get)
    }
}

#[cfg(not(test))]
mod thread_peak {
    #[inline(always)]
    pub(super) fn track(_: isize) {}
}

/// Starts measuring the calling thread's heap peak (test builds); returns the base to
/// pass to [`thread_peak_bytes`].
#[cfg(test)]
pub(crate) fn reset_thread_peak() -> isize {
    thread_peak::reset()
}

/// The most bytes the calling thread had allocated (net of its frees) above its count at
/// the last [`reset_thread_peak`] (test builds).
#[cfg(test)]
pub(crate) fn thread_peak_bytes(base: isize) -> isize {
    thread_peak::peak() - base
}

#[inline]
fn shard() -> &'static AtomicIsize {
    let i = MY_SHARD
        .try_with(|s| {
            let mut i = s.get();
            if i == usize::MAX {
                i = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
                s.set(i);
            }
            i
        })
        .unwrap_or(0);
    &COUNTERS[i].0
}

/// The system allocator, counting live bytes.
pub(crate) struct CountingAlloc;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract holds exactly as it does for `System`; the counters are plain
// atomics that never allocate.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's guarantee that `layout` has non-zero size.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            shard().fetch_add(layout.size() as isize, Ordering::Relaxed);
            thread_peak::track(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            shard().fetch_add(layout.size() as isize, Ordering::Relaxed);
            thread_peak::track(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller guarantees `ptr` came from this allocator (hence from `System`)
        // with this `layout`.
        unsafe { System.dealloc(ptr, layout) };
        shard().fetch_sub(layout.size() as isize, Ordering::Relaxed);
        thread_peak::track(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees for `realloc` are forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            let s = shard();
            s.fetch_add(new_size as isize, Ordering::Relaxed);
            s.fetch_sub(layout.size() as isize, Ordering::Relaxed);
            thread_peak::track(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Live heap bytes allocated through [`CountingAlloc`] (0 if it is not installed).
pub(crate) fn live_bytes() -> i64 {
    COUNTERS
        .iter()
        .map(|c| c.0.load(Ordering::Relaxed) as i64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test binary installs the counting allocator too (see `main.rs`).
    #[test]
    fn counts_a_large_allocation() {
        let before = live_bytes();
        let v = std::hint::black_box(vec![7u8; 64 << 20]);
        let during = live_bytes();
        drop(v);
        // Other tests allocate and free concurrently; 64 MiB dwarfs them.
        assert!(during - before >= (32 << 20), "{before} -> {during}");
    }

    /// A thread's peak sees a block it allocated and freed, and not what it held before.
    #[test]
    fn a_thread_peak_sees_a_freed_block() {
        let held = std::hint::black_box(vec![1u8; 8 << 20]);
        let base = reset_thread_peak();
        assert!(thread_peak_bytes(base) < (1 << 20));
        drop(std::hint::black_box(vec![7u8; 4 << 20]));
        let peak = thread_peak_bytes(base);
        assert!((4 << 20..5 << 20).contains(&peak), "{peak}");
        drop(held);
    }
}
