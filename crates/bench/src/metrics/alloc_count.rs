//! A counting global allocator: live heap bytes, for bytes/key.
//!
//! Installed as the bench binary's `#[global_allocator]` (in `main.rs`), it forwards to the
//! system allocator and adds/subtracts each block's size to one of 64 cache-padded
//! counters chosen by thread, so counting costs an uncontended atomic add per call rather
//! than a shared cache line bouncing between loader threads. [`live_bytes`] sums them.
//! The figure is the bytes the program asked for (not the allocator's own slack or
//! fragmentation: RSS shows those).

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
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            shard().fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller guarantees `ptr` came from this allocator (hence from `System`)
        // with this `layout`.
        unsafe { System.dealloc(ptr, layout) };
        shard().fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees for `realloc` are forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            let s = shard();
            s.fetch_add(new_size as isize, Ordering::Relaxed);
            s.fetch_sub(layout.size() as isize, Ordering::Relaxed);
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
}
