//! Striped item and byte counters.
//!
//! One shared counter updated by every insert would be a cache line bouncing between all
//! writing cores (exactly the cross-core invalidation the paper avoids by placing locks in
//! buckets). Each thread instead updates one of several cache-padded stripes, chosen by a
//! per-thread number, and readers of the totals (`len`, `memory_usage`, the expansion
//! trigger) sum the stripes. A stripe may go negative (a key inserted by one thread and
//! removed by another); only sums are meaningful.

use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use orrery_core::sync::CachePadded;

/// Number of stripes (a power of two).
const STRIPES: usize = 32;

#[derive(Default)]
struct Stripe {
    items: AtomicIsize,
    kv_bytes: AtomicIsize,
}

/// Striped counts of items and of key+value bytes.
pub(crate) struct Counters {
    stripes: Box<[CachePadded<Stripe>]>,
}

/// Per-thread stripe number (assigned on first use).
fn thread_stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    STRIPE.with(|s| {
        let mut v = s.get();
        if v == usize::MAX {
            v = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
            s.set(v);
        }
        v
    })
}

impl Counters {
    /// Zeroed counters.
    pub(crate) fn new() -> Counters {
        Counters {
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(Stripe::default()))
                .collect(),
        }
    }

    /// Adds `items` items and `kv_bytes` bytes on the calling thread's stripe; returns the
    /// stripe's new item count when `items != 0` (used to decide how often to look at the
    /// total), else 0. Zero deltas touch nothing.
    #[inline]
    pub(crate) fn add(&self, items: isize, kv_bytes: isize) -> isize {
        if items == 0 && kv_bytes == 0 {
            return 0;
        }
        let s = &self.stripes[thread_stripe()];
        if kv_bytes != 0 {
            s.kv_bytes.fetch_add(kv_bytes, Ordering::Relaxed);
        }
        if items == 0 {
            return 0;
        }
        s.items.fetch_add(items, Ordering::Relaxed) + items
    }

    /// Total items (clamped at 0 while concurrent updates are in flight).
    pub(crate) fn items(&self) -> usize {
        let sum: isize = self
            .stripes
            .iter()
            .map(|s| s.items.load(Ordering::Relaxed))
            .sum();
        sum.max(0) as usize
    }

    /// Total key+value bytes.
    pub(crate) fn kv_bytes(&self) -> usize {
        let sum: isize = self
            .stripes
            .iter()
            .map(|s| s.kv_bytes.load(Ordering::Relaxed))
            .sum();
        sum.max(0) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_across_threads() {
        let c = Counters::new();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100 {
                        c.add(1, 10);
                    }
                    c.add(-50, -500);
                });
            }
        });
        assert_eq!(c.items(), 200);
        assert_eq!(c.kv_bytes(), 2000);
    }
}
