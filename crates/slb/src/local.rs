//! Per-thread state of the hot path: a fast random number generator (emission sampling,
//! counter decay, eviction tie-breaking) and the thread's statistics shard.
//!
//! The generator lives in a `thread_local!` with a `const` initializer and no destructor
//! (an access is a thread-pointer-relative load). The shard is claimed from a global bitmap
//! at a thread's first count and released by a thread-local destructor at its exit, so no
//! two live threads own the same shard.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use orrery_core::sync::CachePadded;

thread_local! {
    /// xorshift64* state; 0 until first use.
    static RNG: Cell<u64> = const { Cell::new(0) };
    /// This thread's statistics shard.
    static SHARD: ShardClaim = const { ShardClaim { index: Cell::new(UNCLAIMED) } };
}

/// Seeds handed to threads in turn.
static NEXT_SEED: AtomicU64 = AtomicU64::new(1);

/// Bit `i` set: exclusive shard `i` is owned by a live thread.
static SHARD_OWNERS: AtomicU64 = AtomicU64::new(0);

const UNCLAIMED: usize = usize::MAX;

/// A thread's claim on a statistics shard, released when the thread exits.
struct ShardClaim {
    index: Cell<usize>,
}

impl ShardClaim {
    #[inline]
    fn get(&self) -> usize {
        let i = self.index.get();
        if i != UNCLAIMED {
            return i;
        }
        let i = claim_shard();
        self.index.set(i);
        i
    }
}

impl Drop for ShardClaim {
    fn drop(&mut self) {
        let i = self.index.get();
        if i < EXCLUSIVE_SHARDS {
            SHARD_OWNERS.fetch_and(!(1 << i), Ordering::Release);
        }
    }
}

/// Claims a free exclusive shard, or returns the shared one when all are taken.
fn claim_shard() -> usize {
    let mut owners = SHARD_OWNERS.load(Ordering::Relaxed);
    loop {
        let free = !owners;
        if free == 0 {
            return SHARED_SHARD;
        }
        let i = free.trailing_zeros() as usize;
        match SHARD_OWNERS.compare_exchange_weak(
            owners,
            owners | 1 << i,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => return i,
            Err(now) => owners = now,
        }
    }
}

/// A 32-bit pseudo-random number from this thread's xorshift64* generator.
#[inline]
pub(crate) fn random() -> u32 {
    RNG.with(|rng| {
        let mut x = rng.get();
        if x == 0 {
            // SplitMix64 of a per-thread sequence number: distinct non-zero seeds.
            let seed = NEXT_SEED.fetch_add(1, Ordering::Relaxed);
            let mut z = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            x = (z ^ (z >> 31)) | 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        rng.set(x);
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    })
}

/// Shards owned by one thread each (the bits of `SHARD_OWNERS`).
const EXCLUSIVE_SHARDS: usize = 64;
/// The shard of threads that found no free exclusive one: counted with atomic increments.
const SHARED_SHARD: usize = EXCLUSIVE_SHARDS;
/// Number of statistics shards.
pub(crate) const SHARDS: usize = EXCLUSIVE_SHARDS + 1;

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

/// Event counters sharded per thread, so the hot path writes a cache line that no other
/// thread writes. A thread owning an exclusive shard counts with a plain load and store (no
/// read-modify-write instruction); threads beyond 64 live ones share the last shard and
/// count with atomic increments. Counts are exact either way.
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
        let shard = SHARD.try_with(ShardClaim::get).unwrap_or(SHARED_SHARD);
        let c = &self.shards[shard][stat as usize];
        if shard == SHARED_SHARD {
            c.fetch_add(1, Ordering::Relaxed);
        } else {
            // Only this thread writes this shard until it exits (and the claim's `Release`
            // / the next owner's `Acquire` order the hand-over).
            c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
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
    fn shards_are_exclusive_and_released() {
        let n = if cfg!(miri) { 4 } else { 80 };
        let counters = Counters::new();
        let barrier = std::sync::Barrier::new(n);
        // More live threads than exclusive shards: the rest share the atomic shard.
        std::thread::scope(|s| {
            for _ in 0..n {
                s.spawn(|| {
                    barrier.wait();
                    for _ in 0..1000 {
                        counters.add(Stat::Hits);
                    }
                    barrier.wait();
                });
            }
        });
        assert_eq!(counters.get(Stat::Hits), 1000 * n as u64);
        // Exited threads gave their shards back.
        std::thread::spawn(|| assert_ne!(SHARD.with(ShardClaim::get), SHARED_SHARD))
            .join()
            .unwrap();
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
