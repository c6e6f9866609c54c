//! The memory limit and eviction, one mechanism for every protocol the server speaks: the
//! memcached front end uses it for `-m` now, and the Redis side can use it for
//! `maxmemory` (its keyspace implements [`Keyspace`]; nothing here knows either
//! protocol).
//!
//! # Accounting
//!
//! Used memory is what the keyspaces say their items take ([`Keyspace::used_bytes`]: for
//! the memcached items, keys and values at their size in the index plus a per-item
//! structure cost) plus the connections' buffers ([`Memory::buffers`]). It must fall when
//! items are removed: an index's `memory_usage` counts its allocator's reserved chunks,
//! which it keeps for reuse, and a limit on that would evict without ever freeing. Measuring an index walks its counters, so it is not done on
//! every write: [`Memory::admit`] adds each write's size to a running estimate and
//! measures again when the estimate reaches the limit (at most once a millisecond while
//! over it).
//!
//! A write over the limit evicts at least its own size (one item out for each item in, at
//! the limit). A write that finds nothing to evict is admitted. A keyspace already over
//! the limit (a limit lowered at run time) is kept from growing, not shrunk: shrinking it
//! is an explicit [`Memory::evict`] of the excess.
//!
//! # Eviction
//!
//! Sampled LRU with a pool, as Redis's `maxmemory-policy allkeys-lru`: each eviction asks
//! the keyspace for [`Memory::samples`] keys from a random position
//! ([`Keyspace::sample`]), merges them into a pool of the 16 most idle candidates seen
//! (kept across evictions), and evicts the most idle one that is still as it was sampled
//! ([`Keyspace::evict`] checks the access clock under the key's lock; a key touched since
//! is dropped from the pool). Dead keys (expired, flushed) are sampled as infinitely idle,
//! so they go first. [`Policy::Random`] evicts the first live sample; [`Policy::NoEviction`]
//! refuses writes: those that would pass the limit (memcached's `-M`) or, as Redis's
//! `noeviction`, every write once used memory is over it ([`Refuse`]).

pub(crate) mod lfu;
mod pool;

use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use pool::Pool;

/// When [`Policy::NoEviction`] refuses a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refuse {
    /// When the write would take used memory over the limit (memcached's `-M`: an item
    /// that does not fit is not stored).
    WhenItWouldPass,
    /// Only once used memory is over the limit, whatever the write's size (Redis's
    /// `noeviction`: `performEvictions` fails when `used_memory > maxmemory`, and every
    /// `denyoom` command is then refused, small or large, until memory falls).
    WhenOver,
}

/// Idle time of a dead key (expired or flushed): evicted before any live one.
pub(crate) const DEAD: u64 = u64::MAX;

/// How much more idle an item never read since it was written looks to the LRU eviction
/// than one read since: a probation segment, as memcached's segmented LRU protects items
/// hit twice. Under a cache-aside load most misses store keys that are never asked for
/// again, and plain LRU keeps them as long as the keys that are read. The weight was
/// chosen by the hit ratios of `scripts/memcache_zipf_hits.py` (`docs/results/mercury.md`)
/// and `scripts/bench-server-eviction.sh` (`docs/results/server.md`).
pub(crate) const PROBATION_WEIGHT: u64 = 8;

/// The LRU eviction rank of a live item idle for `idle_ms` milliseconds: its idle time,
/// times [`PROBATION_WEIGHT`] when it was never read since it was written.
pub(crate) fn lru_rank(idle_ms: u64, read: bool) -> u64 {
    if read {
        idle_ms.min(DEAD - 1)
    } else {
        idle_ms.saturating_mul(PROBATION_WEIGHT).min(DEAD - 1)
    }
}

/// A keyspace the memory limit can evict from. Implementations lock what they need per
/// call; the eviction code holds no lock of theirs.
pub(crate) trait Keyspace: Send + Sync {
    /// Bytes the keyspace's items take; must fall when items are removed.
    fn used_bytes(&self) -> usize;

    /// Items stored (live or not yet reclaimed).
    fn items(&self) -> usize;

    /// Visits up to `n` keys starting from a position derived from `seed` (only keys with
    /// a deadline when `policy` is volatile), with each key's rank for `policy` (higher
    /// is evicted first: the idle time in milliseconds for LRU, `255 - frequency` for LFU,
    /// the nearness of the deadline for `volatile-ttl`; [`DEAD`] for a key that is
    /// already expired or flushed) and its access clock (the token [`Keyspace::evict`]
    /// checks).
    fn sample(&self, policy: Policy, seed: u64, n: usize, f: &mut dyn FnMut(&[u8], u64, u32));

    /// Removes `key` if its access clock is still `clock` (nobody read or wrote it since it
    /// was sampled); the bytes of key and value freed, or `None` when it was kept.
    fn evict(&self, key: &[u8], clock: u32) -> Option<usize>;
}

/// What happens when a write would take used memory over the limit: Redis's
/// `maxmemory-policy` values (the memcached port uses [`Policy::Lru`], [`Policy::Lfu`] and
/// [`Policy::NoEviction`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Evict the least recently used items (sampled, see the module docs).
    Lru,
    /// Evict the least frequently used items (`lfu`: Redis's logarithmic counter).
    Lfu,
    /// Evict sampled items at random.
    Random,
    /// As [`Policy::Lru`], among the keys with a deadline only.
    VolatileLru,
    /// As [`Policy::Lfu`], among the keys with a deadline only.
    VolatileLfu,
    /// As [`Policy::Random`], among the keys with a deadline only.
    VolatileRandom,
    /// The keys with the nearest deadline first.
    VolatileTtl,
    /// Refuse the write (memcached `-M`, Redis `noeviction`).
    NoEviction,
}

/// Every policy, in the order of [`Policy::code`].
const POLICIES: [Policy; 8] = [
    Policy::Lru,
    Policy::Lfu,
    Policy::Random,
    Policy::VolatileLru,
    Policy::VolatileLfu,
    Policy::VolatileRandom,
    Policy::VolatileTtl,
    Policy::NoEviction,
];

impl Policy {
    /// Redis's name (`maxmemory-policy`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Policy::Lru => "allkeys-lru",
            Policy::Lfu => "allkeys-lfu",
            Policy::Random => "allkeys-random",
            Policy::VolatileLru => "volatile-lru",
            Policy::VolatileLfu => "volatile-lfu",
            Policy::VolatileRandom => "volatile-random",
            Policy::VolatileTtl => "volatile-ttl",
            Policy::NoEviction => "noeviction",
        }
    }

    /// The policy Redis names `name` (any case).
    pub(crate) fn parse(name: &str) -> Option<Policy> {
        POLICIES
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }

    /// Whether only keys with a deadline may be evicted.
    pub(crate) fn volatile(self) -> bool {
        matches!(
            self,
            Policy::VolatileLru
                | Policy::VolatileLfu
                | Policy::VolatileRandom
                | Policy::VolatileTtl
        )
    }

    /// Whether keys are ranked by access frequency (the access field holds an LFU counter).
    pub(crate) fn lfu(self) -> bool {
        matches!(self, Policy::Lfu | Policy::VolatileLfu)
    }

    /// Whether the victim is any sampled key.
    fn random(self) -> bool {
        matches!(self, Policy::Random | Policy::VolatileRandom)
    }

    fn code(self) -> u8 {
        POLICIES.iter().position(|&p| p == self).expect("listed") as u8
    }
}

/// Why a write was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutOfMemory;

/// The memory limit of one server; see the [module docs](self).
pub(crate) struct Memory {
    /// Bytes; 0: no limit.
    limit: AtomicUsize,
    /// [`Policy::code`].
    policy: AtomicU8,
    samples: AtomicUsize,
    /// Redis's `lfu-log-factor` and `lfu-decay-time` (minutes).
    lfu_log_factor: AtomicU32,
    lfu_decay_time: AtomicU32,
    /// The last measurement of the keyspaces.
    measured: AtomicUsize,
    /// When it was taken (milliseconds of [`Memory::new`]'s clock).
    measured_at: AtomicU64,
    /// Bytes admitted since.
    charged: AtomicUsize,
    /// Bytes of connection buffers.
    buffers: AtomicUsize,
    evictions: AtomicU64,
    /// Items when a write was first refused under [`Policy::NoEviction`] (`usize::MAX`:
    /// never): below it, deletions have freed space for reuse.
    full_items: AtomicUsize,
    pool: Mutex<Pool>,
    seed: AtomicU64,
    start: std::time::Instant,
}

/// The number of bytes an admitted write is charged at least (an index's per-item cost).
const MIN_CHARGE: usize = 64;

impl Memory {
    /// A limit of `limit` bytes (0: none), evicting by `policy` with `samples` keys per
    /// eviction.
    pub(crate) fn new(limit: usize, policy: Policy, samples: usize) -> Memory {
        Memory {
            limit: AtomicUsize::new(limit),
            policy: AtomicU8::new(policy.code()),
            samples: AtomicUsize::new(samples.max(1)),
            lfu_log_factor: AtomicU32::new(10),
            lfu_decay_time: AtomicU32::new(1),
            measured: AtomicUsize::new(0),
            measured_at: AtomicU64::new(0),
            charged: AtomicUsize::new(usize::MAX / 4),
            buffers: AtomicUsize::new(0),
            evictions: AtomicU64::new(0),
            full_items: AtomicUsize::new(usize::MAX),
            pool: Mutex::new(Pool::default()),
            seed: AtomicU64::new(0x9e37_79b9_7f4a_7c15),
            start: std::time::Instant::now(),
        }
    }

    /// The limit in bytes (0: none).
    pub(crate) fn limit(&self) -> usize {
        self.limit.load(Ordering::Relaxed)
    }

    /// Sets the limit (`CONFIG SET maxmemory`); a keyspace already over it is shrunk by
    /// the next writes (see the module docs).
    pub(crate) fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::Relaxed);
        // Measure again at the next write.
        self.charged.store(usize::MAX / 4, Ordering::Relaxed);
        self.full_items.store(usize::MAX, Ordering::Relaxed);
    }

    /// The eviction policy.
    pub(crate) fn policy(&self) -> Policy {
        POLICIES[usize::from(self.policy.load(Ordering::Relaxed))]
    }

    /// Sets the eviction policy (`CONFIG SET maxmemory-policy`).
    pub(crate) fn set_policy(&self, policy: Policy) {
        self.policy.store(policy.code(), Ordering::Relaxed);
        self.pool.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.full_items.store(usize::MAX, Ordering::Relaxed);
    }

    /// Keys sampled per eviction.
    pub(crate) fn samples(&self) -> usize {
        self.samples.load(Ordering::Relaxed)
    }

    /// Sets the keys sampled per eviction (at least 1).
    pub(crate) fn set_samples(&self, n: usize) {
        self.samples.store(n.max(1), Ordering::Relaxed);
    }

    /// The LFU counter's parameters: (`lfu-log-factor`, `lfu-decay-time` in minutes).
    pub(crate) fn lfu_params(&self) -> (u32, u32) {
        (
            self.lfu_log_factor.load(Ordering::Relaxed),
            self.lfu_decay_time.load(Ordering::Relaxed),
        )
    }

    /// Sets `lfu-log-factor`.
    pub(crate) fn set_lfu_log_factor(&self, n: u32) {
        self.lfu_log_factor.store(n, Ordering::Relaxed);
    }

    /// Sets `lfu-decay-time` (minutes).
    pub(crate) fn set_lfu_decay_time(&self, n: u32) {
        self.lfu_decay_time.store(n, Ordering::Relaxed);
    }

    /// Items evicted so far.
    pub(crate) fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// Sets the eviction count back to 0 (`CONFIG RESETSTAT`).
    pub(crate) fn reset_evictions(&self) {
        self.evictions.store(0, Ordering::Relaxed);
    }

    /// The connections' buffer bytes, which count as used (connections add and remove
    /// theirs).
    pub(crate) fn buffers(&self) -> &AtomicUsize {
        &self.buffers
    }

    /// Used memory now: the keyspace measured, plus the buffers.
    pub(crate) fn used(&self, ks: &dyn Keyspace) -> usize {
        ks.used_bytes() + self.buffers.load(Ordering::Relaxed)
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64 + 1
    }

    fn measure(&self, ks: &dyn Keyspace) -> usize {
        let used = ks.used_bytes();
        self.measured.store(used, Ordering::Relaxed);
        self.charged.store(0, Ordering::Relaxed);
        self.measured_at.store(self.now_ms(), Ordering::Relaxed);
        used
    }

    /// Makes room for a write of about `needed` bytes into `ks`: evicts as the policy
    /// says when the write would take used memory over the limit, or refuses it
    /// ([`Policy::NoEviction`]).
    pub(crate) fn admit(
        &self,
        ks: &dyn Keyspace,
        needed: usize,
        refuse: Refuse,
    ) -> Result<(), OutOfMemory> {
        let limit = self.limit();
        if limit == 0 {
            return Ok(());
        }
        let needed = needed.max(MIN_CHARGE);
        let policy = self.policy();
        // Whether `used` bytes leave room for this write.
        let room = |used: usize| {
            if policy == Policy::NoEviction && refuse == Refuse::WhenOver {
                used <= limit
            } else {
                used.saturating_add(needed) <= limit
            }
        };
        let buffers = self.buffers.load(Ordering::Relaxed);
        let estimate = self
            .measured
            .load(Ordering::Relaxed)
            .saturating_add(self.charged.load(Ordering::Relaxed))
            .saturating_add(buffers);
        if room(estimate) {
            self.charged.fetch_add(needed, Ordering::Relaxed);
            return Ok(());
        }
        // Over by the estimate: measure, unless a measurement this millisecond already
        // said so (a full cache evicts on every write without measuring each time).
        let fresh = self.now_ms() == self.measured_at.load(Ordering::Relaxed);
        let used = if fresh {
            estimate - buffers
        } else {
            self.measure(ks)
        } + buffers;
        if room(used) {
            self.charged.fetch_add(needed, Ordering::Relaxed);
            return Ok(());
        }
        match policy {
            Policy::NoEviction => {
                let items = ks.items();
                let full = self.full_items.load(Ordering::Relaxed);
                if items < full && full != usize::MAX {
                    return Ok(());
                }
                self.full_items.fetch_min(items, Ordering::Relaxed);
                Err(OutOfMemory)
            }
            _ => {
                let freed = self.evict(ks, needed);
                if freed == 0 && policy.volatile() {
                    // Redis: nothing a volatile policy may evict, so the write is refused.
                    return Err(OutOfMemory);
                }
                // The estimate follows the evictions until the next measurement.
                let charged = self.charged.load(Ordering::Relaxed);
                self.charged
                    .store(charged.saturating_sub(freed) + needed, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    /// Evicts items until about `bytes` were freed or nothing is left to evict; returns
    /// the bytes freed.
    pub(crate) fn evict(&self, ks: &dyn Keyspace, bytes: usize) -> usize {
        let mut freed = 0;
        let mut empty_rounds = 0;
        while freed < bytes && empty_rounds < 4 {
            match self.evict_one(ks) {
                Some(n) => {
                    freed += n.max(1);
                    empty_rounds = 0;
                }
                None => empty_rounds += 1,
            }
        }
        freed
    }

    fn next_seed(&self) -> u64 {
        // SplitMix64 over a shared counter: independent positions for concurrent callers.
        let mut z = self
            .seed
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// One eviction: `Some(bytes freed)`, or `None` when no candidate could be evicted.
    fn evict_one(&self, ks: &dyn Keyspace) -> Option<usize> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        let policy = self.policy();
        if policy.random() {
            let mut pick = None;
            ks.sample(policy, self.next_seed(), 1, &mut |k, _, clock| {
                pick = Some((k.to_vec(), clock))
            });
            let (key, clock) = pick?;
            drop(pool);
            let freed = ks.evict(&key, clock)?;
            self.evictions.fetch_add(1, Ordering::Relaxed);
            return Some(freed);
        }
        ks.sample(
            policy,
            self.next_seed(),
            self.samples(),
            &mut |k, idle, clock| pool.offer(k, idle, clock),
        );
        while let Some(c) = pool.take_best() {
            if let Some(freed) = ks.evict(&c.key, c.clock) {
                self.evictions.fetch_add(1, Ordering::Relaxed);
                return Some(freed);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A keyspace of `key → (clock, size)` with a fixed cost per item and a settable
    /// clock.
    struct Toy {
        items: Mutex<BTreeMap<Vec<u8>, (u32, usize)>>,
        now: AtomicU64,
    }

    impl Toy {
        fn new() -> Toy {
            Toy {
                items: Mutex::new(BTreeMap::new()),
                now: AtomicU64::new(1000),
            }
        }
        fn put(&self, key: &[u8]) {
            let now = self.now.fetch_add(1, Ordering::Relaxed) as u32;
            self.items.lock().unwrap().insert(key.to_vec(), (now, 100));
        }
        fn touch(&self, key: &[u8]) {
            let now = self.now.fetch_add(1, Ordering::Relaxed) as u32;
            if let Some(e) = self.items.lock().unwrap().get_mut(key) {
                e.0 = now;
            }
        }
    }

    impl Keyspace for Toy {
        fn used_bytes(&self) -> usize {
            self.items.lock().unwrap().len() * 100
        }
        fn items(&self) -> usize {
            self.items.lock().unwrap().len()
        }
        fn sample(&self, _: Policy, seed: u64, n: usize, f: &mut dyn FnMut(&[u8], u64, u32)) {
            let items = self.items.lock().unwrap();
            let len = items.len();
            if len == 0 {
                return;
            }
            let now = self.now.load(Ordering::Relaxed) as u32;
            let start = (seed % len as u64) as usize;
            for (k, &(clock, _)) in items.iter().cycle().skip(start).take(n.min(len)) {
                f(k, u64::from(now.wrapping_sub(clock)), clock);
            }
        }
        fn evict(&self, key: &[u8], clock: u32) -> Option<usize> {
            let mut items = self.items.lock().unwrap();
            match items.get(key) {
                Some(&(c, size)) if c == clock => {
                    items.remove(key);
                    Some(size)
                }
                _ => None,
            }
        }
    }

    #[test]
    fn lru_keeps_the_recently_used_under_the_limit() {
        let ks = Toy::new();
        let mem = Memory::new(100 * 100, Policy::Lru, 5);
        // 100 hot keys touched all the time, 1000 cold keys written once each.
        for i in 0..50u32 {
            let k = format!("hot{i}");
            mem.admit(&ks, 100, Refuse::WhenItWouldPass).unwrap();
            ks.put(k.as_bytes());
        }
        for i in 0..1000u32 {
            mem.admit(&ks, 100, Refuse::WhenItWouldPass).unwrap();
            ks.put(format!("cold{i}").as_bytes());
            for h in 0..50u32 {
                ks.touch(format!("hot{h}").as_bytes());
            }
        }
        // Tests may not sleep, so the millisecond cache of the measurement can let a few
        // writes through before the next measurement: allow a small excess.
        assert!(ks.items() <= 110, "{} items", ks.items());
        let hot = (0..50u32)
            .filter(|h| {
                ks.items
                    .lock()
                    .unwrap()
                    .contains_key(format!("hot{h}").as_bytes())
            })
            .count();
        assert!(hot >= 45, "only {hot} of 50 hot keys kept");
        assert!(mem.evictions() >= 900);
    }

    #[test]
    fn no_eviction_refuses_then_admits_after_deletes() {
        let ks = Toy::new();
        let mem = Memory::new(10 * 100, Policy::NoEviction, 5);
        let mut refused = 0;
        for i in 0..40u32 {
            match mem.admit(&ks, 100, Refuse::WhenItWouldPass) {
                Ok(()) => ks.put(format!("k{i}").as_bytes()),
                Err(OutOfMemory) => refused += 1,
            }
        }
        assert!(refused > 0);
        assert_eq!(mem.evictions(), 0);
        let first = ks.items.lock().unwrap().keys().next().unwrap().clone();
        ks.items.lock().unwrap().remove(&first);
        assert_eq!(mem.admit(&ks, 100, Refuse::WhenItWouldPass), Ok(()));
    }

    #[test]
    fn redis_noeviction_refuses_every_write_once_over_and_none_before() {
        let ks = Toy::new();
        let mem = Memory::new(10 * 100, Policy::NoEviction, 5);
        // Writes go in while used memory is at most the limit, passing it once.
        let mut stored = 0;
        while mem.admit(&ks, 100, Refuse::WhenOver).is_ok() {
            ks.put(format!("k{stored}").as_bytes());
            stored += 1;
            assert!(stored < 100, "never refused");
        }
        assert_eq!(ks.used_bytes(), 11 * 100);
        // Over the limit: a small write is refused as well.
        assert_eq!(mem.admit(&ks, 1, Refuse::WhenOver), Err(OutOfMemory));
        // The memcached rule refuses a write that would pass the limit before it is over.
        let ks = Toy::new();
        let mem = Memory::new(10 * 100, Policy::NoEviction, 5);
        for i in 0..9u32 {
            mem.admit(&ks, 100, Refuse::WhenItWouldPass).unwrap();
            ks.put(format!("k{i}").as_bytes());
        }
        assert!(ks.used_bytes() <= 10 * 100);
        assert_eq!(
            mem.admit(&ks, 300, Refuse::WhenItWouldPass),
            Err(OutOfMemory)
        );
        assert_eq!(mem.admit(&ks, 300, Refuse::WhenOver), Ok(()));
    }

    #[test]
    fn no_limit_admits_everything_and_random_evicts() {
        let ks = Toy::new();
        let mem = Memory::new(0, Policy::Lru, 5);
        for i in 0..100u32 {
            mem.admit(&ks, 1 << 20, Refuse::WhenItWouldPass).unwrap();
            ks.put(format!("k{i}").as_bytes());
        }
        assert_eq!(ks.items(), 100);
        let ks = Toy::new();
        let mem = Memory::new(50 * 100, Policy::Random, 5);
        for i in 100..200u32 {
            mem.admit(&ks, 100, Refuse::WhenItWouldPass).unwrap();
            ks.put(format!("k{i}").as_bytes());
        }
        assert!(ks.items() <= 60, "{}", ks.items());
        // Nothing to evict: admitted.
        let empty = Toy::new();
        assert_eq!(
            Memory::new(1, Policy::Lru, 5).admit(&empty, 100, Refuse::WhenItWouldPass),
            Ok(())
        );
    }
}
