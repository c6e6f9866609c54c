//! [`LookasideBuffer`]: the paper's SLB library (§3.1, Fig. 4) — Cache Table, Log Table,
//! striped locks and the coherence protocol — usable beside any index.
//!
//! | paper | here |
//! |---|---|
//! | `SLB_create` / `SLB_destroy` | [`LookasideBuffer::new`] / `Drop` |
//! | `SLB_get` | [`LookasideBuffer::get_with`], or [`LookasideBuffer::lookup`] (a get that also prepares the emission of a miss) |
//! | `SLB_emit` | [`LookasideBuffer::emit`] with the [`EmitTicket`] of the miss |
//! | `SLB_lock` + `SLB_invalidate` | [`LookasideBuffer::lock`] → [`KeyLock`] |
//! | `SLB_update` | [`KeyLock::update`] |
//! | `SLB_unlock` | dropping the [`KeyLock`] |
//!
//! [`Slb`](crate::Slb) wires these calls around a [`KvIndex`](orrery_core::KvIndex); use the
//! buffer directly only to put an SLB in front of a structure that is not a `KvIndex`.
//!
//! # Coherence protocol
//!
//! The invariant that makes the SLB invisible:
//!
//! > **(I)** whenever a Cache Table slot holds a record of key `k`, the record's value is
//! > `k`'s current value in the index.
//!
//! Given (I), a hit returns the value the index holds at the instant the slot word is loaded
//! (the hit's linearization point), and a miss is served by the index (the index's own
//! linearization point). So the SLB is exactly as linearizable as the index: a read never
//! returns a value older than a completed write, under any interleaving.
//!
//! Every key maps to one Cache Table bucket and every bucket to one of the 1024 stripes
//! (`bucket index mod stripes`). A stripe is a [`VersionLock`]: a lock bit and a version
//! counter bumped at every unlock. Rules:
//!
//! 1. **Every change of a slot word** (admission, eviction, invalidation, update) happens with
//!    the bucket's stripe locked. Hits never lock and never write a slot (only the relaxed
//!    access counters).
//! 2. **Writers** ([`LookasideBuffer::lock`]): lock the key's stripe; *empty the key's slot
//!    first* (retiring its record); then write the index; then optionally refill the *same*
//!    slot with a copy of the new value ([`KeyLock::update`]); unlock. While the stripe is
//!    held nobody else can touch the slot, so it stays empty between the two steps, and
//!    readers in that window miss and read the index. A write that fails or panics leaves the
//!    slot empty, which is always coherent.
//! 3. **Emitters** (readers that missed, [`LookasideBuffer::lookup`]): read the stripe's
//!    version `v` *before* reading the index (giving up if the stripe is locked: a write is in
//!    flight); read the index, copying the value; then admit only through
//!    `try_upgrade(v)`, which locks the stripe iff its version is still `v`.
//!
//! Why (I) holds. Writers: at their refill the index holds exactly the value they copy, and
//! no other write to `k` can interleave (same stripe). Emitters: a successful
//! `try_upgrade(v)` means no thread locked the stripe between the emitter's version read and
//! its admission (versions only grow). Any index write to `k` holds `k`'s stripe, so none
//! happened between the emitter's index read and its admission; and a write that finished
//! before the version read is visible to the index read (the `Acquire` version load
//! synchronizes with the writer's `Release` unlock). So the copied value is still current
//! when it is published. Evictions only remove records. The ordering of "empty the slot,
//! then write the index" matters: the slot swap happens-before the index write, so any
//! reader that observed the new value in the index afterwards cannot load the old record.
//!
//! What this costs: a hit takes no lock and writes no shared word but its bucket's access
//! counter; a miss reads one stripe word (shared, read-only); only sampled emissions that
//! reach the admission threshold lock a stripe, and only with `try_upgrade` (never waiting).
//! Writers hold their stripe across the index write, as the paper's `SLB_lock` does.
//! Admissions bump the stripe version, so an emission racing with an admission into another
//! bucket of the same stripe is dropped (counted as an emit conflict); with 1024 stripes this
//! is rare and costs only a later admission.
//!
//! # Ownership and reclamation
//!
//! The SLB owns a copy of each cached item (see the `record` module): the index hands values
//! out only by copy or callback, so a slot cannot safely point into the index's memory. A
//! slot word owns its record; every slot change is an atomic swap, so exactly one thread
//! obtains each unlinked record and hands it to the `orrery_core::sync` epoch collector,
//! which frees it after every guard pinned before the unlinking is dropped. Readers pin a
//! guard before loading a slot word and use the record only while pinned. Dropping the buffer
//! (exclusive access) frees the remaining records directly.
//!
//! # Items that are not cached
//!
//! Items larger than [`Config::max_item_bytes`] (key + value; default 4 KiB, at most the
//! API limits) are never copied into the SLB: they are served by the index alone, and writes
//! to them still invalidate. The paper caches small search results; copying megabyte values
//! would defeat the point of a CPU-cache-sized buffer.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use orrery_core::MemoryUsage;
use orrery_core::api::MAX_KEY_LEN;
use orrery_core::hash::{hash64, tag16};
use orrery_core::sync::{self, CachePadded, Guard, Version, VersionLock, VersionWriteGuard};

use crate::cache::{CacheTable, Probe, SLOTS, Unlinked};
use crate::config::Config;
use crate::local::{self, Counters, Stat};
use crate::log::{LogTable, log_tag};
use crate::record::OwnedRecord;
use orrery_core::api::ConfigError;

/// An index lookup, as [`KvIndex::get_with`](orrery_core::KvIndex::get_with): calls the
/// callback with the value of the key if present and returns whether it was.
#[cfg(feature = "bench-internals")]
pub(crate) type IndexSearch<'a> = dyn FnMut(&[u8], &mut dyn FnMut(&[u8])) -> bool + 'a;

/// The 16-bit Cache Table tag of a key with this 64-bit hash: its high 16 bits (§3.2).
#[inline]
fn cache_tag(hash: u64) -> u16 {
    tag16((hash >> 32) as u32)
}

/// Identifiers of buffers, for [`EmitTicket`]s.
static NEXT_BUFFER_ID: AtomicU64 = AtomicU64::new(1);

/// The paper's SLB: Cache Table, Log Table and striped locks (see the [module docs](self)
/// for the protocol).
pub struct LookasideBuffer {
    cache: CacheTable,
    log: LogTable,
    stripes: Box<[CachePadded<VersionLock>]>,
    stripe_mask: usize,
    threshold: usize,
    warm_threshold: usize,
    sample_threshold: u64,
    max_item_bytes: usize,
    counters: Counters,
    /// Whether lookups still admit (see [`LookasideBuffer::set_admission`]).
    admitting: AtomicBool,
    /// Unique among buffers: tickets name the buffer that issued them.
    id: u64,
    config: Config,
}

/// The outcome of [`LookasideBuffer::lookup`].
#[derive(Debug)]
pub enum Lookup {
    /// The key was cached: the callback has been called with its value.
    Hit,
    /// The key is not cached. With a ticket, the caller should search its index and
    /// [`emit`](LookasideBuffer::emit) the result if found; without one (not sampled, or a
    /// write to the stripe is in flight), it just searches.
    Miss(Option<EmitTicket>),
}

/// Permission to emit one search result, taken before the index search (rule 3 of the
/// [protocol](self#coherence-protocol)).
#[derive(Clone, Copy)]
pub struct EmitTicket {
    /// The buffer that issued the ticket.
    owner: u64,
    hash: u64,
    bucket: usize,
    version: Version,
    /// Taken while the bucket had an empty slot (the warming threshold applied).
    warming: bool,
    candidate: bool,
}

impl EmitTicket {
    /// Whether this emission may be admitted, so the value must be copied (otherwise the
    /// emission is only logged).
    #[inline]
    pub fn wants_value(&self) -> bool {
        self.candidate
    }
}

impl fmt::Debug for EmitTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmitTicket")
            .field("hash", &format_args!("{:#018x}", self.hash))
            .field("bucket", &self.bucket)
            .field("candidate", &self.candidate)
            .finish()
    }
}

/// A copy of an emitted value, made while the index protects it (see
/// [`LookasideBuffer::copy_for`]).
#[derive(Debug)]
pub struct EmitCopy<'a>(Option<OwnedRecord<'a>>);

/// Statistics of an SLB (counters since creation or the last
/// [`reset_stats`](LookasideBuffer::reset_stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SlbStats {
    /// Lookups answered by the Cache Table.
    pub hits: u64,
    /// Lookups that missed the Cache Table.
    pub misses: u64,
    /// Emissions appended to the Log Table.
    pub logged: u64,
    /// Items admitted into the Cache Table.
    pub admissions: u64,
    /// Items evicted to make room for an admission.
    pub evictions: u64,
    /// Cached items removed because their key was written.
    pub invalidations: u64,
    /// Invalidated items refilled with the written value (`SLB_update`).
    pub updates: u64,
    /// Admissions abandoned because a write or another admission hit the stripe meanwhile.
    pub emit_conflicts: u64,
    /// Items cached now.
    pub cached_items: usize,
    /// Slots of the Cache Table.
    pub capacity: usize,
    /// Bytes of the SLB's copies of items (cached, or retired and not yet reclaimed).
    pub record_bytes: usize,
}

impl SlbStats {
    /// Fraction of lookups that hit (0 when there were none).
    pub fn hit_ratio(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

impl fmt::Display for SlbStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "hit ratio {:.3} ({} hits, {} misses), {} logged, {} admitted, {} evicted, \
             {} invalidated, {} updated, {} emit conflicts, {}/{} cached ({} record bytes)",
            self.hit_ratio(),
            self.hits,
            self.misses,
            self.logged,
            self.admissions,
            self.evictions,
            self.invalidations,
            self.updates,
            self.emit_conflicts,
            self.cached_items,
            self.capacity,
            self.record_bytes
        )
    }
}

impl LookasideBuffer {
    /// Builds an SLB (`SLB_create`): allocates the Cache Table and Log Table (zeroed,
    /// huge-page backed) and the stripes.
    pub fn new(config: Config) -> Result<LookasideBuffer, ConfigError> {
        let geometry = config.geometry()?;
        let stripes = (0..config.stripes)
            .map(|_| CachePadded::new(VersionLock::new()))
            .collect();
        Ok(LookasideBuffer {
            cache: CacheTable::new(geometry.cache_buckets)?,
            log: LogTable::new(geometry.log_buckets)?,
            stripes,
            stripe_mask: config.stripes - 1,
            threshold: config.admission_threshold,
            warm_threshold: config.warm_admission_threshold,
            sample_threshold: geometry.sample_threshold,
            max_item_bytes: config.max_item_bytes,
            counters: Counters::new(),
            admitting: AtomicBool::new(true),
            id: NEXT_BUFFER_ID.fetch_add(1, Ordering::Relaxed),
            config,
        })
    }

    /// The configuration this SLB was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    #[inline]
    fn stripe(&self, bucket: usize) -> &VersionLock {
        &self.stripes[bucket & self.stripe_mask]
    }

    /// Whether an item of this size is cached at all.
    #[inline]
    fn fits(&self, key: &[u8], value: &[u8]) -> bool {
        key.len() + value.len() <= self.max_item_bytes
    }

    fn retire(&self, unlinked: Unlinked<'_>, guard: &Guard) {
        unlinked.retire(guard, self.cache.heap());
    }

    /// `SLB_get`: if `key` is cached, calls `f` with its value and returns `true`.
    pub fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        let hash = hash64(key);
        let bucket = self.cache.bucket(self.cache.bucket_index(hash));
        let guard = sync::pin();
        match bucket.probe(cache_tag(hash), key, &guard) {
            Probe::Hit { index, record } => {
                f(record.value());
                bucket.touch(index, local::random);
                self.counters.add(Stat::Hits);
                true
            }
            Probe::Miss { .. } => {
                self.counters.add(Stat::Misses);
                false
            }
        }
    }

    /// `SLB_get` that also prepares `SLB_emit`: on a hit calls `f` with the cached value; on
    /// a miss decides whether the result of the coming index search is logged (always while
    /// the key's bucket has an empty slot, else with the configured sampling rate) and, if
    /// so, returns the [`EmitTicket`] to pass to [`emit`](Self::emit).
    ///
    /// The ticket must be taken *before* the index search; that is what lets the emission be
    /// validated against concurrent writers.
    #[inline]
    pub fn lookup(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Lookup {
        if key.len() > MAX_KEY_LEN {
            // Such a key can never be present: nothing to cache.
            return Lookup::Miss(None);
        }
        let hash = hash64(key);
        let index = self.cache.bucket_index(hash);
        let bucket = self.cache.bucket(index);
        let guard = sync::pin();
        match bucket.probe(cache_tag(hash), key, &guard) {
            Probe::Hit { index, record } => {
                f(record.value());
                bucket.touch(index, local::random);
                self.counters.add(Stat::Hits);
                Lookup::Hit
            }
            Probe::Miss { has_empty } => {
                drop(guard); // unpinned before the index search
                self.counters.add(Stat::Misses);
                Lookup::Miss(self.ticket(hash, index, has_empty))
            }
        }
    }

    /// The 64-bit hash the buffer uses for `key`.
    #[inline]
    pub(crate) fn hash(key: &[u8]) -> u64 {
        hash64(key)
    }

    /// Starts loading the Cache Table bucket of a key with this hash (see
    /// [`lookup_pinned`](Self::lookup_pinned)).
    #[inline]
    pub(crate) fn prefetch(&self, hash: u64) {
        self.cache.prefetch(self.cache.bucket_index(hash));
    }

    /// [`lookup`](Self::lookup) for batches, with the key's [`hash`](Self::hash) computed
    /// beforehand: on a hit returns the cached value, valid while `guard` is pinned; on a
    /// miss returns the emission ticket, if any.
    #[inline]
    pub(crate) fn lookup_pinned<'g>(
        &self,
        key: &[u8],
        hash: u64,
        guard: &'g Guard,
    ) -> Result<&'g [u8], Option<EmitTicket>> {
        if key.len() > MAX_KEY_LEN {
            return Err(None);
        }
        let index = self.cache.bucket_index(hash);
        let bucket = self.cache.bucket(index);
        match bucket.probe(cache_tag(hash), key, guard) {
            Probe::Hit { index, record } => {
                bucket.touch(index, local::random);
                self.counters.add(Stat::Hits);
                Ok(record.value())
            }
            Probe::Miss { has_empty } => {
                self.counters.add(Stat::Misses);
                Err(self.ticket(hash, index, has_empty))
            }
        }
    }

    /// Takes an emission ticket for a key with `hash` in bucket `index`, or `None` when the
    /// emission is not sampled or a write to the stripe is in flight.
    #[inline]
    fn ticket(&self, hash: u64, index: usize, warming: bool) -> Option<EmitTicket> {
        if !warming && u64::from(local::random()) >= self.sample_threshold {
            return None;
        }
        if !self.admitting.load(Ordering::Relaxed) {
            return None;
        }
        let version = self.stripe(index).try_read()?;
        let log = self.log.bucket(hash);
        let threshold = if warming {
            self.warm_threshold
        } else {
            self.threshold
        };
        let candidate = if threshold <= 1 {
            // No need to count: start loading the log line for `emit`'s append, so that the
            // miss overlaps with the index search.
            log.prefetch();
            true
        } else {
            log.count(log_tag(hash)) + 1 >= threshold
        };
        Some(EmitTicket {
            owner: self.id,
            hash,
            bucket: index,
            version,
            warming,
            candidate,
        })
    }

    /// Copies `key` and `value` for an emission with this ticket, if the ticket
    /// [wants the value](EmitTicket::wants_value) and the item is small enough to cache.
    /// Call it inside the index's lookup callback, while the index protects `value`.
    #[inline]
    pub fn copy_for(&self, ticket: &EmitTicket, key: &[u8], value: &[u8]) -> EmitCopy<'_> {
        EmitCopy(
            (ticket.candidate && self.fits(key, value))
                .then(|| OwnedRecord::new(self.cache.heap(), key, value))
                .flatten(),
        )
    }

    /// `SLB_emit`: reports that the index search prepared by `ticket` found `key`, whose
    /// value was copied into `copy` (see [`copy_for`](Self::copy_for)). Logs the emission
    /// and, if the key's tag has now occurred `admission_threshold` times, admits the copy,
    /// evicting the bucket's coldest item if it is full, unless a write to the stripe
    /// happened since the ticket was taken (the copy could be stale; it is then dropped).
    ///
    /// `key` must be the key the ticket was taken for, from this buffer; otherwise the
    /// emission is ignored.
    pub fn emit(&self, ticket: EmitTicket, key: &[u8], copy: EmitCopy<'_>) {
        self.log.bucket(ticket.hash).append(log_tag(ticket.hash));
        self.counters.add(Stat::Logged);
        let Some(record) = copy.0 else { return };
        if ticket.owner != self.id || record.as_ref().key() != key || hash64(key) != ticket.hash {
            // A ticket of another buffer or another key: its validation covers nothing here.
            return;
        }
        let Some(_write) = self.stripe(ticket.bucket).try_upgrade(ticket.version) else {
            self.counters.add(Stat::EmitConflicts);
            return;
        };
        let guard = sync::pin();
        let bucket = self.cache.bucket(ticket.bucket);
        let tag = cache_tag(ticket.hash);
        if bucket.find(tag, record.as_ref().key(), &guard).is_some() {
            // Admitted by another emission between our probe and our ticket.
            return;
        }
        if ticket.warming
            && self.warm_threshold < self.threshold
            && !bucket.has_empty()
            && self.log.bucket(ticket.hash).count(log_tag(ticket.hash)) < self.threshold
        {
            // The bucket filled up since the ticket: an admission would evict, so the full
            // bucket's threshold applies.
            return;
        }
        self.counters.add(Stat::Admissions);
        if let Some(evicted) = bucket.admit(tag, record, self.cache.heap(), local::random()) {
            self.counters.add(Stat::Evictions);
            self.retire(evicted, &guard);
        }
    }

    /// The paper's read path, for `locked_reads::LockedReadSlb` (feature `bench-internals`): `SLB_lock` on the key's stripe,
    /// `SLB_get`, on a miss `search` (the index lookup, calling its callback with the value)
    /// and `SLB_emit`, then `SLB_unlock`. Holding the stripe across the search makes the
    /// emission safe without validation, at the price of a lock round trip on every hit and
    /// of serializing the lookups of a stripe.
    #[cfg(feature = "bench-internals")]
    pub(crate) fn get_locked(
        &self,
        key: &[u8],
        f: &mut dyn FnMut(&[u8]),
        search: &mut IndexSearch<'_>,
    ) -> bool {
        if key.len() > MAX_KEY_LEN {
            return search(key, f);
        }
        let hash = hash64(key);
        let index = self.cache.bucket_index(hash);
        let bucket = self.cache.bucket(index);
        let tag = cache_tag(hash);
        let _lock = self.stripe(index).lock();
        let guard = sync::pin();
        let has_empty = match bucket.probe(tag, key, &guard) {
            Probe::Hit { index, record } => {
                f(record.value());
                bucket.touch(index, local::random);
                self.counters.add(Stat::Hits);
                return true;
            }
            Probe::Miss { has_empty } => has_empty,
        };
        self.counters.add(Stat::Misses);
        let logged = self.admitting.load(Ordering::Relaxed)
            && (has_empty || u64::from(local::random()) < self.sample_threshold);
        // The stripe is held: the bucket cannot fill or empty before the admission below.
        let threshold = if has_empty {
            self.warm_threshold
        } else {
            self.threshold
        };
        let candidate = logged && self.log.bucket(hash).count(log_tag(hash)) + 1 >= threshold;
        let heap = self.cache.heap();
        let mut copy = None;
        let found = search(key, &mut |v| {
            f(v);
            if candidate && self.fits(key, v) {
                copy = OwnedRecord::new(heap, key, v);
            }
        });
        if found && logged {
            self.log.bucket(hash).append(log_tag(hash));
            self.counters.add(Stat::Logged);
            if let Some(record) = copy {
                self.counters.add(Stat::Admissions);
                if let Some(evicted) = bucket.admit(tag, record, heap, local::random()) {
                    self.counters.add(Stat::Evictions);
                    self.retire(evicted, &guard);
                }
            }
        }
        found
    }

    /// `SLB_lock` + `SLB_invalidate`: locks `key`'s stripe and removes `key` from the Cache
    /// Table. Hold the returned [`KeyLock`] while writing `key` to the index, then call
    /// [`KeyLock::update`] after an insert (`SLB_update`) and drop it (`SLB_unlock`).
    ///
    /// Lock order: take this lock before any lock of the index (never the reverse), as the
    /// paper prescribes; one thread must not hold two `KeyLock`s of one buffer at once (two
    /// keys may share a stripe).
    pub fn lock<'a>(&'a self, key: &'a [u8]) -> KeyLock<'a> {
        let hash = hash64(key);
        let index = self.cache.bucket_index(hash);
        let write = self.stripe(index).lock();
        let bucket = self.cache.bucket(index);
        let tag = cache_tag(hash);
        let guard = sync::pin();
        let slot = bucket.find(tag, key, &guard);
        if let Some(i) = slot
            && let Some(old) = bucket.take(i, self.cache.heap())
        {
            self.counters.add(Stat::Invalidations);
            self.retire(old, &guard);
        }
        KeyLock {
            buffer: self,
            _write: write,
            key,
            tag,
            bucket: index,
            slot,
            refilled: false,
        }
    }

    /// `SLB_invalidate` on its own: removes `key` from the Cache Table (taking and releasing
    /// its stripe lock).
    pub fn invalidate(&self, key: &[u8]) {
        drop(self.lock(key));
    }

    /// Removes every cached item (the Log Table is kept). Coherent at any time: removing
    /// records never makes the cache stale.
    pub fn clear(&self) {
        let guard = sync::pin();
        self.cache.drain(|u| self.retire(u, &guard));
    }

    /// Turns admission on or off (on by default). While off, lookups still hit cached items
    /// but misses are not logged or admitted; writes still invalidate and update.
    pub fn set_admission(&self, on: bool) {
        self.admitting.store(on, Ordering::Relaxed);
    }

    /// Current statistics. Counts cached items by scanning the Cache Table, so this costs a
    /// pass over the table.
    pub fn stats(&self) -> SlbStats {
        let c = &self.counters;
        SlbStats {
            hits: c.get(Stat::Hits),
            misses: c.get(Stat::Misses),
            logged: c.get(Stat::Logged),
            admissions: c.get(Stat::Admissions),
            evictions: c.get(Stat::Evictions),
            invalidations: c.get(Stat::Invalidations),
            updates: c.get(Stat::Updates),
            emit_conflicts: c.get(Stat::EmitConflicts),
            cached_items: self.cache.occupied(),
            capacity: self.cache.buckets() * SLOTS,
            record_bytes: self.cache.heap().payload_bytes(),
        }
    }

    /// Zeroes the event counters of [`stats`](Self::stats).
    pub fn reset_stats(&self) {
        self.counters.reset();
    }

    /// Bytes held by the SLB: its tables, stripes, counters and the unused part of its
    /// record slabs as structure; the records (cached copies of items, including those
    /// retired and not yet reclaimed) as key/value bytes.
    pub fn memory_usage(&self) -> MemoryUsage {
        let heap = self.cache.heap();
        MemoryUsage {
            structure_bytes: size_of::<Self>()
                + self.cache.table_bytes()
                + self.log.table_bytes()
                + self.stripes.len() * size_of::<CachePadded<VersionLock>>()
                + self.counters.bytes()
                + heap.slack_bytes(),
            key_value_bytes: heap.payload_bytes(),
        }
    }
}

impl fmt::Debug for LookasideBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LookasideBuffer")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A writer's hold on a key (`SLB_lock`), taken by [`LookasideBuffer::lock`]; the key is no
/// longer cached. Dropping it is `SLB_unlock`.
pub struct KeyLock<'a> {
    buffer: &'a LookasideBuffer,
    _write: VersionWriteGuard<'a>,
    key: &'a [u8],
    tag: u16,
    bucket: usize,
    /// The slot that cached the key when the lock was taken (now empty, reserved for
    /// [`KeyLock::update`]: only holders of this stripe change slots of this bucket).
    slot: Option<usize>,
    refilled: bool,
}

impl KeyLock<'_> {
    /// Whether the key was cached when the lock was taken.
    pub fn was_cached(&self) -> bool {
        self.slot.is_some()
    }

    /// `SLB_update`: after the index stored `value` under the key, puts a copy back into the
    /// slot the key occupied (keeping its access count). Does nothing, and returns `false`,
    /// if the key was not cached or the item is too large to cache. Call it only once the
    /// index write succeeded.
    pub fn update(&mut self, value: &[u8]) -> bool {
        let Some(index) = self.slot else { return false };
        let buffer = self.buffer;
        if !buffer.fits(self.key, value) {
            return false;
        }
        let heap = buffer.cache.heap();
        let Some(record) = OwnedRecord::new(heap, self.key, value) else {
            return false;
        };
        let bucket = buffer.cache.bucket(self.bucket);
        if let Some(old) = bucket.put(index, self.tag, record, heap) {
            // A second update under the same lock replaces the first.
            buffer.retire(old, &sync::pin());
        }
        self.refilled = true;
        buffer.counters.add(Stat::Updates);
        true
    }
}

impl Drop for KeyLock<'_> {
    fn drop(&mut self) {
        if let (Some(index), false) = (self.slot, self.refilled) {
            // The key left the cache: its slot is free and cold.
            self.buffer.cache.bucket(self.bucket).reset_counter(index);
        }
        // `_write` drops next: the stripe is unlocked with its version bumped.
    }
}

impl fmt::Debug for KeyLock<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyLock")
            .field("bucket", &self.bucket)
            .field("slot", &self.slot)
            .field("refilled", &self.refilled)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-bucket SLB with the given threshold and full sampling.
    fn small(buckets: usize, threshold: usize) -> LookasideBuffer {
        LookasideBuffer::new(Config {
            cache_table_bytes: 64 * buckets,
            admission_threshold: threshold,
            warm_admission_threshold: threshold,
            log_sample_rate: 1.0,
            stripes: 4,
            ..Config::default()
        })
        .unwrap()
    }

    fn cached(b: &LookasideBuffer, key: &[u8]) -> Option<Vec<u8>> {
        let mut out = None;
        b.get_with(key, &mut |v| out = Some(v.to_vec()));
        out
    }

    /// One search through the buffer over an "index" holding `value` for `key`: what a
    /// wrapper does on every lookup.
    fn search(b: &LookasideBuffer, key: &[u8], value: &[u8]) -> bool {
        let mut seen = None;
        match b.lookup(key, &mut |v| seen = Some(v.to_vec())) {
            Lookup::Hit => {
                assert_eq!(seen.as_deref(), Some(value));
                true
            }
            Lookup::Miss(ticket) => {
                if let Some(t) = ticket {
                    let copy = b.copy_for(&t, key, value);
                    b.emit(t, key, copy);
                }
                false
            }
        }
    }

    #[test]
    fn admitted_at_the_third_emission() {
        let b = small(1, 3);
        assert!(!search(&b, b"k", b"v"));
        assert!(!search(&b, b"k", b"v"));
        assert_eq!(cached(&b, b"k"), None);
        assert!(!search(&b, b"k", b"v")); // third emission: admitted
        assert_eq!(cached(&b, b"k").as_deref(), Some(&b"v"[..]));
        assert!(search(&b, b"k", b"v"));
        let s = b.stats();
        assert_eq!((s.logged, s.admissions, s.cached_items), (3, 1, 1));
        assert_eq!(s.record_bytes, crate::record::record_bytes(1, 1));
        assert!(s.hit_ratio() > 0.0);
        crate::quiesce();
    }

    #[test]
    fn warming_buckets_admit_at_the_first_emission() {
        // Defaults: threshold 3 once full, 1 while the bucket has an empty slot.
        let b = LookasideBuffer::new(Config {
            log_sample_rate: 1.0,
            ..Config::with_cache_bytes(64)
        })
        .unwrap();
        for i in 0..SLOTS as u8 {
            assert!(!search(&b, &[i], b"v"));
            assert_eq!(cached(&b, &[i]).as_deref(), Some(&b"v"[..]), "key {i}");
        }
        // Full: a new key needs three emissions, and then evicts.
        assert!(!search(&b, b"new", b"v"));
        assert!(!search(&b, b"new", b"v"));
        assert_eq!(cached(&b, b"new"), None);
        assert!(!search(&b, b"new", b"v"));
        assert_eq!(cached(&b, b"new").as_deref(), Some(&b"v"[..]));
        let s = b.stats();
        assert_eq!((s.admissions, s.evictions), (SLOTS as u64 + 1, 1));
        crate::quiesce();
    }

    #[test]
    fn warm_ticket_into_a_bucket_that_filled_meanwhile() {
        let b = LookasideBuffer::new(Config {
            log_sample_rate: 1.0,
            ..Config::with_cache_bytes(64)
        })
        .unwrap();
        // A reader misses while the bucket is empty (a warm ticket)...
        let Lookup::Miss(Some(ticket)) = b.lookup(b"late", &mut |_| {}) else {
            panic!("warming: a ticket");
        };
        assert!(ticket.wants_value());
        let copy = b.copy_for(&ticket, b"late", b"v");
        // ...meanwhile other keys fill the bucket (each admission bumps the stripe version,
        // so take the ticket again after they are done, as a reader arriving now would).
        for i in 0..SLOTS as u8 {
            search(&b, &[i], b"v");
        }
        drop((ticket, copy));
        assert_eq!(b.stats().cached_items, SLOTS);
        // A warm ticket taken just before the bucket filled: its emission would evict, so
        // the full-bucket threshold (3) applies and a first emission is not admitted.
        let Lookup::Miss(Some(mut ticket)) = b.lookup(b"late", &mut |_| {}) else {
            panic!("full sampling: a ticket");
        };
        ticket.warming = true;
        ticket.candidate = true;
        let copy = b.copy_for(&ticket, b"late", b"v");
        b.emit(ticket, b"late", copy);
        assert_eq!(cached(&b, b"late"), None);
        assert_eq!(b.stats().evictions, 0);
        crate::quiesce();
    }

    #[test]
    fn stale_emission_is_rejected() {
        let b = small(1, 1);
        // A reader misses and takes its ticket before searching the index...
        let Lookup::Miss(Some(ticket)) = b.lookup(b"k", &mut |_| {}) else {
            panic!("warming bucket: every miss gets a ticket");
        };
        assert!(ticket.wants_value());
        // ...finds the old value...
        let copy = b.copy_for(&ticket, b"k", b"old");
        // ...while a writer replaces it (the key is not cached, so nothing to refresh).
        {
            let mut w = b.lock(b"k");
            assert!(!w.was_cached());
            assert!(!w.update(b"new"));
        }
        // The emission must not publish the old value.
        b.emit(ticket, b"k", copy);
        assert_eq!(cached(&b, b"k"), None);
        assert_eq!(b.stats().emit_conflicts, 1);
        // A fresh search admits the current value.
        search(&b, b"k", b"new");
        assert_eq!(cached(&b, b"k").as_deref(), Some(&b"new"[..]));
        crate::quiesce();
    }

    #[test]
    fn foreign_tickets_are_ignored() {
        let a = small(1, 1);
        let b = small(1, 1);
        let Lookup::Miss(Some(t)) = a.lookup(b"k", &mut |_| {}) else {
            panic!("warming: a ticket");
        };
        let copy = b.copy_for(&t, b"k", b"v");
        b.emit(t, b"k", copy);
        assert_eq!(b.stats().admissions, 0);
        let copy = a.copy_for(&t, b"other", b"v");
        a.emit(t, b"other", copy);
        assert_eq!(a.stats().admissions, 0);
        let copy = a.copy_for(&t, b"k", b"v");
        a.emit(t, b"k", copy);
        assert_eq!(cached(&a, b"k").as_deref(), Some(&b"v"[..]));
        crate::quiesce();
    }

    #[test]
    fn no_ticket_while_a_write_is_in_flight() {
        let b = small(1, 1);
        let w = b.lock(b"k");
        assert!(matches!(b.lookup(b"k", &mut |_| {}), Lookup::Miss(None)));
        // Another key of the same bucket shares the stripe.
        assert!(matches!(
            b.lookup(b"other", &mut |_| {}),
            Lookup::Miss(None)
        ));
        drop(w);
        assert!(matches!(b.lookup(b"k", &mut |_| {}), Lookup::Miss(Some(_))));
        crate::quiesce();
    }

    #[test]
    fn update_refreshes_and_keeps_the_slot() {
        let b = small(1, 1);
        search(&b, b"k", b"v1");
        assert_eq!(cached(&b, b"k").as_deref(), Some(&b"v1"[..]));
        {
            let mut w = b.lock(b"k");
            assert!(w.was_cached());
            // Between invalidation and update the key is not served from the cache.
            assert_eq!(cached(&b, b"k"), None);
            assert!(w.update(b"v2"));
        }
        assert_eq!(cached(&b, b"k").as_deref(), Some(&b"v2"[..]));
        {
            let _removal = b.lock(b"k");
        }
        assert_eq!(cached(&b, b"k"), None);
        let s = b.stats();
        assert_eq!((s.invalidations, s.updates, s.cached_items), (2, 1, 0));
        // The two unlinked records are counted until the collector frees them.
        assert!(s.record_bytes <= 2 * crate::record::record_bytes(1, 2));
        crate::quiesce_until(|| b.stats().record_bytes == 0);
    }

    #[test]
    fn large_items_are_never_cached() {
        let b = LookasideBuffer::new(Config {
            max_item_bytes: 10,
            admission_threshold: 1,
            ..Config::with_cache_bytes(64)
        })
        .unwrap();
        search(&b, b"big", &[7; 8]);
        assert_eq!(cached(&b, b"big"), None);
        search(&b, b"s", b"1234567");
        assert_eq!(cached(&b, b"s").as_deref(), Some(&b"1234567"[..]));
        let mut w = b.lock(b"s");
        assert!(!w.update(&[1; 20]), "a grown item leaves the cache");
        drop(w);
        assert_eq!(cached(&b, b"s"), None);
        // Keys beyond the API limit are simply absent.
        let huge = vec![0; MAX_KEY_LEN + 1];
        assert!(matches!(b.lookup(&huge, &mut |_| {}), Lookup::Miss(None)));
        crate::quiesce();
    }

    #[test]
    fn full_bucket_logs_only_a_sample() {
        let b = LookasideBuffer::new(Config {
            log_sample_rate: 0.0,
            admission_threshold: 1,
            ..Config::with_cache_bytes(64)
        })
        .unwrap();
        let keys: Vec<[u8; 1]> = (0..SLOTS as u8).map(|i| [i]).collect();
        for k in &keys {
            search(&b, k, k); // warming: logged and admitted
        }
        assert_eq!(b.stats().cached_items, SLOTS);
        // The bucket is full: with a 0% sample nothing more is logged or admitted.
        for _ in 0..50 {
            assert!(matches!(b.lookup(b"new", &mut |_| {}), Lookup::Miss(None)));
        }
        assert_eq!(b.stats().logged, SLOTS as u64);
        for k in &keys {
            assert_eq!(cached(&b, k).as_deref(), Some(&k[..]));
        }
        crate::quiesce();
    }

    #[test]
    fn full_bucket_evicts_and_samples() {
        let b = LookasideBuffer::new(Config {
            log_sample_rate: 1.0,
            admission_threshold: 1,
            ..Config::with_cache_bytes(64)
        })
        .unwrap();
        for i in 0..SLOTS as u8 {
            search(&b, &[i], b"v");
        }
        for i in 1..SLOTS as u8 {
            for _ in 0..3 {
                assert!(search(&b, &[i], b"v"));
            }
        }
        search(&b, b"new", b"v"); // evicts the cold key 0
        assert_eq!(cached(&b, &[0]), None);
        assert_eq!(cached(&b, b"new").as_deref(), Some(&b"v"[..]));
        let s = b.stats();
        assert_eq!((s.admissions, s.evictions, s.cached_items), (8, 1, SLOTS));
        crate::quiesce();
    }

    #[test]
    fn clear_admission_switch_and_memory() {
        let b = small(2, 1);
        let empty = b.memory_usage();
        assert_eq!(empty.key_value_bytes, 0);
        assert!(empty.structure_bytes >= 2 * 64 + 8 * 64);
        search(&b, b"a", b"1");
        assert!(b.memory_usage().key_value_bytes > 0);
        b.clear();
        assert_eq!(cached(&b, b"a"), None);
        crate::quiesce_until(|| b.memory_usage().key_value_bytes == 0);
        b.set_admission(false);
        search(&b, b"a", b"1");
        assert_eq!(cached(&b, b"a"), None);
        b.set_admission(true);
        search(&b, b"a", b"1");
        assert_eq!(cached(&b, b"a").as_deref(), Some(&b"1"[..]));
        b.reset_stats();
        assert_eq!(b.stats().admissions, 0);
        assert_eq!(b.stats().cached_items, 1);
        assert!(format!("{}", b.stats()).contains("hit ratio"));
        assert!(format!("{b:?}").contains("LookasideBuffer"));
        crate::quiesce();
    }
}
