//! Search Lookaside Buffer (SLB): a small cache of hot search results in front of any
//! [`KvIndex`], after Wu, Ni and Jiang, "Search Lookaside Buffer: Efficient Caching for
//! Index Data Structures" (SoCC '17), §3.
//!
//! An index lookup walks intermediate entries (tree nodes, hash chains) whose cache lines
//! become hot only because they lie on the way to hot items: *false temporal and spatial
//! locality*. The SLB caches just the search results of the hottest items in a compact
//! hash table of 64-byte buckets, so a hit costs one bucket line and one record line instead
//! of a walk, and the index's cache lines stop competing for the CPU cache.
//!
//! # Usage
//!
//! ```
//! use orrery_core::{KvIndex, OrderedKvIndexExt};
//! use orrery_core::reference::LockedBTreeMap;
//! use orrery_slb::{Slb, Config};
//!
//! let index = Slb::with_config(LockedBTreeMap::new(), Config::with_cache_bytes(64 << 10))
//!     .expect("valid configuration");
//! index.insert(b"k", b"v1").unwrap();
//! for _ in 0..10 {
//!     // The first lookups miss and are logged; at the third the item is admitted.
//!     assert_eq!(index.get(b"k").as_deref(), Some(&b"v1"[..]));
//! }
//! assert!(index.stats().hits > 0);
//! index.insert(b"k", b"v2").unwrap(); // invalidates, writes, refreshes the cached copy
//! assert_eq!(index.get(b"k").as_deref(), Some(&b"v2"[..]));
//! assert_eq!(index.prefix_collect(b"k").len(), 1); // scans pass through
//! ```
//!
//! [`Slb<I>`] owns the index: every write must go through the wrapper (that is what keeps
//! the cache coherent). [`LookasideBuffer`] is the paper's library API (`SLB_get`,
//! `SLB_emit`, `SLB_lock`/`SLB_invalidate`/`SLB_update`/`SLB_unlock`) for structures that
//! are not a `KvIndex`. A boxed or shared index is an index too
//! (`orrery_core::api` forwards the traits through `Box`, `Arc` and `&`), so
//! `Slb::new(boxed)` wraps a `Box<dyn OrderedKvIndex>` directly.
//!
//! # Parts
//!
//! | module | paper | what |
//! |---|---|---|
//! | `cache` | §3.2, Fig. 5, §3.3.1 | Cache Table: 64 B buckets of 7 (16-bit tag, 48-bit reference) slots + 7 access counters |
//! | `log` | §3.3.2–3.3.3, Fig. 6 | Log Table: 64 B buckets, circular logs of 15 tags; admission at 3 occurrences; 5% sampling once warm |
//! | `record` | (ours) | SLB-owned immutable copies of cached items in size-class slabs, reclaimed through epochs |
//! | [`buffer`] | §3.1 | the API, striped version locks and the coherence protocol |
//! | this module | | [`Slb<I>`]: the wrapper implementing [`KvIndex`] / [`OrderedKvIndex`] |
//!
//! # Consistency guarantees
//!
//! `Slb<I>` is as linearizable as `I`: a lookup answered from the cache returns the value the
//! index holds at that instant, so a read never returns a value older than a completed write,
//! under any interleaving. The argument (an invariant kept by per-stripe version locks,
//! invalidate-before-write, and emissions validated against the stripe version taken before
//! the index search) is in the [`buffer`] module docs, with the ownership and reclamation
//! of cached copies. Scans, `first`, `last`, `len` pass through to the index unchanged.
//!
//! # Performance
//!
//! A hit takes no lock: it hashes the key (hardware CRC32C), pins an epoch, reads one
//! bucket line and one record, and bumps a byte counter in the bucket. A miss adds one read
//! of a stripe word to the index search; a sampled miss also reads a Log Table line, and
//! an admission (rare once the cache is warm) locks a stripe without waiting. Writes lock
//! their stripe around the index write and touch one bucket line, as in the paper (whose
//! lookups also lock; that read path is kept, for comparison, as a separate type behind the
//! `bench-internals` feature: see the `locked_reads` module). Gains
//! depend on skew and on how much false locality the index has: large for trees and skip
//! lists under Zipfian loads, small for compact hash tables, and a small cost without
//! locality. See `docs/slb.md` for measurements.
//!
//! # Warming (a deviation from the paper)
//!
//! The paper admits an item once its tag occurs three times in its Log Table bucket, and
//! logs every emission while "the table is not full yet" (§3.3.3). Here an item whose Cache
//! Table bucket still has an empty slot is admitted at its *first* emission
//! ([`Config::warm_admission_threshold`], default 1); once the bucket is full the paper's
//! rule applies unchanged (three occurrences, 5% of the emissions logged). An admission into
//! an empty slot evicts nothing, so the paper's reason for the threshold (not displacing
//! hotter items) does not apply to it, and waiting for three occurrences leaves slots empty
//! that could already serve hits: the hit ratio rises faster while the cache warms, and both
//! policies converge to the same steady state (the full-bucket rule is the paper's).
//! Measured with `orrery-bench lab slb_admission` (figures: `docs/results/slb.md`,
//! "Warming: first emission against the paper's threshold"). A cold item admitted early
//! starts at count 1 and is the first to be evicted once its bucket is full.
//! `warm_admission_threshold: 3` restores the paper's policy.
//!
//! Unlike the paper's SLB, which points into the index, this one holds a copy of every
//! cached item (up to [`Config::max_item_bytes`], 4 KiB by default; larger items are
//! simply not cached): a full 16 MiB table of 8 B keys / 64 B values holds about 1.8 M
//! records of 80 bytes, about 150 MB beside the index. [`KvIndex::memory_usage`] reports them.

pub mod buffer;
mod cache;
mod config;
mod local;
#[cfg(feature = "bench-internals")]
pub mod locked_reads;
mod log;
mod record;

use std::ops::Bound;

use orrery_core::api::Decision;
use orrery_core::raw::{RawIndex, RawOrdered, WriteMode};
use orrery_core::sync;
use orrery_core::{KvIndex, MemoryUsage, OrderedKvIndex, Result, ScanVisitor, api};

pub use buffer::{EmitCopy, EmitTicket, KeyLock, LookasideBuffer, Lookup, SlbStats};
pub use config::{Config, ConfigBuilder};
pub use orrery_core::api::ConfigError;

/// Test support: drives the global epoch collector until the records retired so far are
/// freed (when no other thread stays pinned), so that Miri's leak check sees them go.
#[cfg(test)]
pub(crate) fn quiesce() {
    for _ in 0..64 {
        sync::pin().flush();
    }
}

/// Test support: drives the epoch collector until `done` holds (other test threads pin only
/// briefly); panics if it does not within `testing::wait::DEADLINE`.
#[cfg(test)]
pub(crate) fn quiesce_until(done: impl Fn() -> bool) {
    orrery_core::testing::wait::reclaim_until("retired records", done);
}

/// How many keys ahead `get_many` prefetches Cache Table buckets.
const PREFETCH_DISTANCE: usize = 8;

/// A [`KvIndex`] `I` behind a Search Lookaside Buffer.
///
/// Lookups try the SLB first and fall back to `I`, emitting what they find; writes lock the
/// key's stripe, invalidate it, write `I`, and refresh the cached copy. Implements
/// [`OrderedKvIndex`] when `I` does, with scans served by `I`.
pub struct Slb<I: ?Sized> {
    buffer: LookasideBuffer,
    inner: I,
}

impl<I: KvIndex> Slb<I> {
    /// Wraps `inner` with the paper's default SLB (16 MiB Cache Table, 64 MiB Log Table).
    /// If that memory cannot be had, this reports the failure as a failed `Box::new` does
    /// ([`std::alloc::handle_alloc_error`]); [`Slb::try_new`] returns the error instead.
    pub fn new(inner: I) -> Self {
        Self::try_new(inner).unwrap_or_else(|_| orrery_core::raw::alloc_failure())
    }

    /// Wraps `inner` with the paper's default SLB, or [`api::Error::OutOfMemory`] when its
    /// tables cannot be allocated.
    pub fn try_new(inner: I) -> Result<Self> {
        Self::with_config(inner, Config::default()).map_err(|_| api::Error::OutOfMemory)
    }

    /// Wraps `inner` with an SLB built from `config`, validated first
    /// ([`ConfigError::Invalid`] names a field out of range);
    /// [`ConfigError::OutOfMemory`] when its tables cannot be allocated.
    pub fn with_config(inner: I, config: Config) -> std::result::Result<Self, ConfigError> {
        Ok(Slb {
            buffer: LookasideBuffer::new(config)?,
            inner,
        })
    }

    /// Unwraps the index, dropping the SLB.
    pub fn into_inner(self) -> I {
        self.inner
    }
}

impl<I: ?Sized> Slb<I> {
    /// The SLB in front of the index (statistics, [`clear`](LookasideBuffer::clear),
    /// [`set_admission`](LookasideBuffer::set_admission)).
    pub fn buffer(&self) -> &LookasideBuffer {
        &self.buffer
    }

    /// The wrapped index, for reads that should bypass the SLB (e.g. to measure it).
    ///
    /// Writes through this reference bypass the SLB: it could then serve values older than
    /// those writes. Write through the `Slb`.
    pub fn inner(&self) -> &I {
        &self.inner
    }

    /// The SLB's statistics (hit ratio, admissions, evictions...).
    pub fn stats(&self) -> SlbStats {
        self.buffer.stats()
    }
}

/// Bulk loading through the SLB (so the cache stays coherent).
///
/// # Panics
///
/// On a key or value over the limits; [`Slb::insert_all`] returns the error instead.
impl<I: KvIndex, K: AsRef<[u8]>, V: AsRef<[u8]>> Extend<(K, V)> for Slb<I> {
    fn extend<T: IntoIterator<Item = (K, V)>>(&mut self, pairs: T) {
        if let Err(e) = self.insert_all(pairs) {
            orrery_core::raw::extend_failure("Slb", e);
        }
    }
}

/// Iterating an `Slb` iterates the wrapped index (`for e in &slb` where `for e in &index`
/// works): iteration reads the index, which every write through the SLB has reached.
impl<'a, I: ?Sized> IntoIterator for &'a Slb<I>
where
    &'a I: IntoIterator,
{
    type Item = <&'a I as IntoIterator>::Item;
    type IntoIter = <&'a I as IntoIterator>::IntoIter;

    fn into_iter(self) -> Self::IntoIter {
        self.inner.into_iter()
    }
}

impl<I: KvIndex + ?Sized> Slb<I> {
    /// The SLB's lookup: the Cache Table first, then the index, emitting what it finds.
    fn lookup(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        match self.buffer.lookup(key, f) {
            Lookup::Hit => true,
            Lookup::Miss(None) => self.inner.get_with(key, f),
            Lookup::Miss(Some(ticket)) => {
                let buffer = &self.buffer;
                let mut copy = None;
                let found = self.inner.get_with(key, &mut |v| {
                    f(v);
                    copy = Some(buffer.copy_for(&ticket, key, v));
                });
                if let Some(copy) = copy {
                    buffer.emit(ticket, key, copy);
                }
                found
            }
        }
    }

    /// The engine the API is written over: the SLB itself.
    #[inline]
    fn raw(&self) -> &Self {
        self
    }
}

impl<I: KvIndex + ?Sized> RawIndex for Slb<I> {
    #[inline]
    fn read<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let mut f = Some(f);
        let mut out = None;
        self.lookup(key, &mut |v| {
            if let Some(f) = f.take() {
                out = Some(f(v));
            }
        });
        out
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        let mut lock = self.buffer.lock(key);
        let result = self.inner.insert(key, value);
        if result.is_ok() {
            lock.update(value);
        }
        result
    }

    fn delete(&self, key: &[u8]) -> bool {
        let _lock = self.buffer.lock(key);
        self.inner.remove(key)
    }

    /// Atomic with respect to every write made through this `Slb` (they hold the key's
    /// stripe lock, as this does around its read and write of the index): the current
    /// value is copied from the index, decided on, and the decision written to the index
    /// and the cache before the stripe is released.
    fn write(
        &self,
        key: &[u8],
        _mode: WriteMode,
        decide: &mut dyn FnMut(Option<&[u8]>) -> Decision,
    ) -> Result<bool> {
        let mut lock = self.buffer.lock(key);
        let old = self.inner.get(key);
        match decide(old.as_deref()) {
            Decision::Keep => {}
            Decision::Store(new) => {
                self.inner.insert(key, &new)?;
                lock.update(&new);
            }
            Decision::Remove => {
                self.inner.remove(key);
            }
        }
        Ok(old.is_some())
    }

    fn count(&self) -> usize {
        self.inner.len()
    }

    fn bytes(&self) -> MemoryUsage {
        self.inner.memory_usage() + self.buffer.memory_usage()
    }

    fn read_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        let buffer = &self.buffer;
        // One guard for the whole batch keeps every hit's record alive until delivered.
        let guard = sync::pin();
        let mut hits: Vec<Option<&[u8]>> = Vec::with_capacity(keys.len());
        let mut misses: Vec<(usize, Option<EmitTicket>)> = Vec::new();
        let mut miss_keys: Vec<&[u8]> = Vec::new();
        // Hash every key, then probe with the buckets of the next few keys in flight.
        let hashes: Vec<u64> = keys.iter().map(|k| LookasideBuffer::hash(k)).collect();
        for &h in hashes.iter().take(PREFETCH_DISTANCE) {
            buffer.prefetch(h);
        }
        for (i, key) in keys.iter().enumerate() {
            if let Some(&h) = hashes.get(i + PREFETCH_DISTANCE) {
                buffer.prefetch(h);
            }
            match buffer.lookup_pinned(key, hashes[i], &guard) {
                Ok(value) => hits.push(Some(value)),
                Err(ticket) => {
                    hits.push(None);
                    misses.push((i, ticket));
                    miss_keys.push(key);
                }
            }
        }
        if misses.is_empty() {
            for (i, v) in hits.iter().enumerate() {
                f(i, *v);
            }
            return;
        }
        // Deliver in key order: the hits before each miss, then the miss.
        let mut next = 0;
        let mut copies: Vec<Option<EmitCopy>> = misses.iter().map(|_| None).collect();
        self.inner.get_many(&miss_keys, &mut |j, v| {
            let (i, ticket) = &misses[j];
            while next < *i {
                f(next, hits[next]);
                next += 1;
            }
            f(*i, v);
            next = *i + 1;
            if let (Some(v), Some(ticket)) = (v, ticket) {
                copies[j] = Some(buffer.copy_for(ticket, keys[*i], v));
            }
        });
        while next < keys.len() {
            f(next, hits[next]);
            next += 1;
        }
        drop(guard);
        for (((i, ticket), copy), key) in misses.into_iter().zip(copies).zip(miss_keys) {
            debug_assert_eq!(key, keys[i]);
            if let (Some(ticket), Some(copy)) = (ticket, copy) {
                buffer.emit(ticket, key, copy);
            }
        }
    }
}

/// Scans are served by the index, which every write through the SLB has reached.
impl<I: OrderedKvIndex + ?Sized> RawOrdered for Slb<I> {
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.inner.scan(start, visitor);
    }

    fn scan_rev(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.inner.scan_rev(end, visitor);
    }

    fn scan_prefix(&self, prefix: &[u8], visitor: &mut ScanVisitor<'_>) {
        self.inner.scan_prefix(prefix, visitor);
    }

    fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.inner.first()
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.inner.last()
    }

    // `remove_range`: the default, each key removed through the SLB (its cached copy
    // invalidated under its stripe lock).
}

orrery_core::index_api!(point impl[I: KvIndex + ?Sized] Slb<I> as "Slb");
orrery_core::index_api!(ordered impl[I: OrderedKvIndex + ?Sized] Slb<I>);

impl<I: ?Sized> std::fmt::Debug for Slb<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slb")
            .field("buffer", &self.buffer)
            .finish_non_exhaustive()
    }
}
