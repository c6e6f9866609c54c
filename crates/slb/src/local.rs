//! Per-thread state of the hot path: a fast random number generator (emission sampling,
//! counter decay, eviction tie-breaking) and the thread's statistics shard.
//!
//! Both live in one `thread_local!` with a `const` initializer and no destructor, so an
//! access is a plain thread-pointer-relative load.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use orrery_core::sync::CachePadded;

struct Local {
    /// xorshift64* state; 0 until first use.
    rng: Cell<u64>,
    /// Statistics shard of this thread, plus one (0 = not assigned yet).
    shard: Cell<usize>,
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            rng: Cell::new(0),
            shard: Cell::new(0),
        }
    };
}

/// Seeds and shard numbers handed to threads in turn.
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

fn next_thread() -> u64 {
    NEXT_THREAD.fetch_add(1, Ordering::Relaxed)
}

/// A 32-bit pseudo-random number from this thread's xorshift64* generator.
#[inline]
pub(crate) fn random() -> u32 {
    LOCAL.with(|l| {
        let mut x = l.rng.get();
        if x == 0 {
            // SplitMix64 of a per-thread sequence number: distinct non-zero seeds.
            let mut z = next_thread().wrapping_mul(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            x = (z ^ (z >> 31)) | 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        l.rng.set(x);
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    })
}

/// Number of statistics shards (threads beyond it share shards; counting stays exact since
/// shards are atomic).
pub(crate) const SHARDS: usize = 16;

/// What is counted.
#[derive(Clone, Copy, Debug)]
#[repr(usize)]
pub(crate) enum Stat {
    Hits,
    Misses,
    Logged,
    Admissions,
    Evictions,
    Invalidations,
    Updates,
    EmitConflicts,
}

const STATS: usize = 8;

/// Event counters sharded per thread, so the hot path increments a cache line that no other
/// thread writes (usually).
pub(crate) struct Counters {
    shards: Box<[CachePadded<[AtomicU64; STATS]>]>,
}

impl Counters {
    pub(crate) fn new() -> Counters {
        Counters {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Default::default()))
                .collect(),
        }
    }

    /// Counts one event of kind `stat` in this thread's shard.
    #[inline]
    pub(crate) fn add(&self, stat: Stat) {
        let shard = LOCAL.with(|l| {
            let s = l.shard.get();
            if s != 0 {
                s - 1
            } else {
                let s = next_thread() as usize % SHARDS;
                l.shard.set(s + 1);
                s
            }
        });
        self.shards[shard][stat as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The sum over all shards of `stat`.
    pub(crate) fn get(&self, stat: Stat) -> u64 {
        self.shards
            .iter()
            .map(|s| s[stat as usize].load(Ordering::Relaxed))
            .sum()
    }

    /// Zeroes every counter.
    pub(crate) fn reset(&self) {
        for s in self.shards.iter() {
            for c in s.iter() {
                c.store(0, Ordering::Relaxed);
            }
        }
    }

    /// Bytes of the counters.
    pub(crate) fn bytes(&self) -> usize {
        self.shards.len() * size_of::<CachePadded<[AtomicU64; STATS]>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_numbers_vary_and_cover_the_range() {
        let n = if cfg!(miri) { 200 } else { 20_000 };
        let mut buckets = [0u32; 20];
        let mut last = random();
        let mut repeats = 0;
        for _ in 0..n {
            let r = random();
            if r == last {
                repeats += 1;
            }
            last = r;
            buckets[(r % 20) as usize] += 1;
        }
        assert!(repeats < 3);
        // Every one of 20 residues occurs (a 5% sample is reachable).
        assert!(buckets.iter().all(|&b| b > 0), "{buckets:?}");
    }

    #[test]
    fn counters_sum_over_threads() {
        let c = Counters::new();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..100 {
                        c.add(Stat::Hits);
                    }
                    c.add(Stat::Misses);
                });
            }
        });
        assert_eq!(c.get(Stat::Hits), 400);
        assert_eq!(c.get(Stat::Misses), 4);
        assert_eq!(c.get(Stat::Admissions), 0);
        c.reset();
        assert_eq!(c.get(Stat::Hits), 0);
    }
}
