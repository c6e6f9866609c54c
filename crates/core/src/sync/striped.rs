//! [`StripedCounter`]: counters that many threads update without sharing a cache line.

use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use super::CachePadded;

/// `K` signed counters (item counts, byte counts) split over cache-padded stripes.
///
/// One shared counter updated by every insert would be a cache line bouncing between all
/// writing cores. Each thread instead updates the stripe chosen by a per-thread number
/// (assigned round-robin at the thread's first update, the same for every counter), and
/// readers of a total sum the stripes. A stripe holds all `K` counters on its own cache
/// lines, so a writer updating several counters at once touches one line. A stripe may go
/// negative (a key inserted by one thread and removed by another); only sums mean
/// anything, and a sum read while updates are in flight is some recent value. All
/// accesses are `Relaxed`: a count publishes no other memory.
///
/// ```
/// use orrery_core::sync::StripedCounter;
///
/// const ITEMS: usize = 0;
/// const BYTES: usize = 1;
/// let c = StripedCounter::<2>::new();
/// c.add_all([1, 10]);
/// c.add(BYTES, 5);
/// assert_eq!(c.sum(ITEMS), 1);
/// assert_eq!(c.sum(BYTES), 15);
/// ```
pub struct StripedCounter<const K: usize = 1> {
    stripes: Box<[CachePadded<[AtomicIsize; K]>]>,
}

/// The calling thread's stripe number (any `usize`; callers reduce it modulo their count).
#[inline]
fn thread_stripe() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    STRIPE.try_with(|s| *s).unwrap_or(0)
}

impl<const K: usize> StripedCounter<K> {
    /// Number of stripes of [`StripedCounter::new`] (a power of two).
    pub const DEFAULT_STRIPES: usize = 32;

    /// Counters at 0 over [`DEFAULT_STRIPES`](Self::DEFAULT_STRIPES) stripes.
    pub fn new() -> Self {
        Self::with_stripes(Self::DEFAULT_STRIPES)
    }

    /// Counters at 0 over `stripes` stripes (rounded up to a power of two, at least 1).
    pub fn with_stripes(stripes: usize) -> Self {
        let n = stripes.max(1).next_power_of_two();
        StripedCounter {
            stripes: (0..n)
                .map(|_| CachePadded::new(std::array::from_fn(|_| AtomicIsize::new(0))))
                .collect(),
        }
    }

    #[inline]
    fn stripe(&self) -> &[AtomicIsize; K] {
        &self.stripes[thread_stripe() & (self.stripes.len() - 1)]
    }

    /// Adds `delta` to counter `i` (`< K`) on the calling thread's stripe; returns the
    /// stripe's new value of that counter.
    #[inline]
    pub fn add(&self, i: usize, delta: isize) -> isize {
        self.stripe()[i].fetch_add(delta, Ordering::Relaxed) + delta
    }

    /// Adds `deltas[i]` to every counter `i` on the calling thread's stripe (zero deltas
    /// touch nothing); returns the stripe's new value of counter 0 (0 when `deltas[0]` is 0).
    #[inline]
    pub fn add_all(&self, deltas: [isize; K]) -> isize {
        if deltas.iter().all(|&d| d == 0) {
            return 0;
        }
        let s = self.stripe();
        let mut first = 0;
        for (i, (c, &d)) in s.iter().zip(&deltas).enumerate() {
            if d != 0 {
                let v = c.fetch_add(d, Ordering::Relaxed) + d;
                if i == 0 {
                    first = v;
                }
            }
        }
        first
    }

    /// The total of counter `i` over all stripes, clamped at 0 (a sum racing with a remove
    /// on one stripe and its insert on another can dip below).
    pub fn sum(&self, i: usize) -> usize {
        let s: isize = self
            .stripes
            .iter()
            .map(|s| s[i].load(Ordering::Relaxed))
            .sum();
        s.max(0) as usize
    }
}

impl<const K: usize> Default for StripedCounter<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const K: usize> std::fmt::Debug for StripedCounter<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sums: Vec<usize> = (0..K).map(|i| self.sum(i)).collect();
        f.debug_struct("StripedCounter")
            .field("stripes", &self.stripes.len())
            .field("sums", &sums)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn striped_sums_across_threads() {
        let c = StripedCounter::<2>::with_stripes(3);
        assert_eq!(c.stripes.len(), 4);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100 {
                        assert!(c.add_all([1, 10]) >= 1);
                    }
                    c.add_all([-50, -500]);
                    assert_eq!(c.add_all([0, 0]), 0);
                });
            }
        });
        assert_eq!(c.sum(0), 200);
        assert_eq!(c.sum(1), 2000);
        let d = StripedCounter::<1>::new();
        assert_eq!(d.add(0, 3), 3);
        assert_eq!(d.add(0, -5), -2);
        assert_eq!(d.sum(0), 0, "clamped at 0");
        assert!(format!("{d:?}").contains("sums"));
    }
}
