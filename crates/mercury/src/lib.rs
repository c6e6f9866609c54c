//! Mercury: a concurrent chained hash table with the lock in the bucket and incremental
//! expansion, after Gandhi et al., "Mercury: Bringing efficiency to key-value stores"
//! (SYSTOR '13; `shared/papers/mercury.md`), §2–3.
//!
//! # Usage
//!
//! ```
//! use orrery_mercury::Mercury;
//! use orrery_core::KvIndex;
//!
//! let m = Mercury::new();
//! assert_eq!(m.insert(b"apple", b"red"), Ok(true));
//! assert_eq!(m.insert(b"apple", b"green"), Ok(false)); // upsert
//! assert_eq!(m.get(b"apple").as_deref(), Some(&b"green"[..]));
//! assert_eq!(m.get_with(b"apple", |v| v.len()), Some(5)); // zero-copy, generic
//! m.update_in_place(b"apple", |v| v[0] = b'G').unwrap();
//! assert_eq!(m.update(b"apple", |v| [v, b"!"].concat()), Ok(true)); // replace existing
//! assert_eq!(m.iter().count(), 1); // unordered iteration
//! assert!(m.remove(b"apple"));
//! assert!(m.is_empty());
//! ```
//!
//! `Mercury` is `Send + Sync`: share it by reference (or `Arc`) between threads; no
//! registration is needed. It implements [`KvIndex`](orrery_core::KvIndex) (the object-safe contract) and adds
//! generic inherent methods ([`Mercury::get_with`], [`Mercury::update`],
//! [`Mercury::update_in_place`], [`Mercury::for_each`], [`Mercury::iter`],
//! [`Mercury::insert_all`], `Extend`, `FromIterator`) with the names and meanings every
//! Orrery index shares ([`orrery_core::api`], "Naming"); options come from
//! [`Config::builder`].
//!
//! # Design (one paragraph per paper mechanism)
//!
//! - **Chained table, one cache miss per bucket (Fig 2).** Buckets live in a huge-page-backed
//!   array. A bucket word holds the chain head's address, the bucket's test-and-set **lock**
//!   bit, the **has-moved** bit, plus (beyond the paper) the head key's 16-bit tag and a LAST
//!   flag; the bit layout is in `link.rs`. Node `next` words use the same format, so a miss
//!   compares tags without reading the last node.
//! - **Inline pairs (beyond the paper).** A bucket is a 32-byte cell: the bucket word plus an
//!   inline area holding one pair whose key and value total at most 16 bytes (`table.rs`,
//!   `inline_pair.rs`). A new small key takes its bucket's area when it is free, so most
//!   small pairs are read with the bucket's one miss, no node access. The reason and the cost
//!   (4x the bucket-array bytes) are in `docs/mercury.md`, "Inline pairs". A table whose
//!   pairs would not fit turns the areas off ([`Config::inline_pairs`]): 8-byte cells, the
//!   paper's bucket word alone.
//! - **Short key-value nodes.** A node is `next | meta | key | value` in one block from a
//!   size class (8-byte steps up to 64 B: 32 B for an 8 B key and 8 B value, 56 B for a
//!   24 B key and a 16 B value); layout in `node.rs`. A GET reads the
//!   bucket line and the node's line: two DRAM accesses when the chain is one node long.
//! - **Per-thread pools (§3 "Memory Allocator").** One slab pool per size class
//!   (`orrery_core::alloc::SizeClassPool`: thread-local caches refilled from 2 MiB huge-page
//!   chunks); freed nodes are reused.
//! - **Aggressive expansion (§3 "Hash table expansion").** Doubling above one item per
//!   bucket (the paper's "about one item per bucket"; [`DEFAULT_LOAD_PERCENT`]), in three
//!   phases (initialization, bucket-by-bucket rehash, termination) during
//!   which other buckets keep serving; workers choose the old or new table from the rehash
//!   progress *r* and the has-moved bit. The rehash is done cooperatively by writers (or by
//!   the paper's expand-thread, [`Expansion::Dedicated`]); see `expand.rs`.
//! - **Shrinking (beyond the paper, which only grows).** The mirror of the expansion: under
//!   2/5 of the growth threshold the table halves (never below
//!   [`Config::initial_buckets`]), merging old buckets `l` and `l + N/2` into successor bucket
//!   `l` incrementally, with the same token, MOVED redirection, helpers and epoch retirement,
//!   so that a table emptied by removals gives its bucket array back; see `shrink.rs`.
//! - **Moving nodes (beyond the paper).** While the node pool is sparse, merges and some
//!   removals copy nodes into holes of lower chunks (a copy replaces the node in its chain,
//!   as an update that does not fit in place does), so that the chunks the survivors of a mass
//!   removal were spread over drain and give their pages back; see `compact.rs`.
//!
//! # Concurrency protocol
//!
//! **Writers** (insert/upsert, remove, update) lock the one bucket holding their key: a
//! `fetch_or` of the LOCK bit in the bucket word (test-and-test-and-set with backoff,
//! `orrery_core::sync::BitLock`). Holding it they own the chain. If the word is MOVED they
//! release it and go to the successor table. They publish every change with Release stores
//! of single link words, each leaving a valid chain (see `write.rs`), and release the lock
//! with one Release store of the bucket word (which also carries a new head).
//!
//! **Readers** (get, get_many, iteration) take no lock. They prefetch the bucket's line
//! from a guard-free hint of the current table's address and mask (only a prefetch: never
//! dereferenced), then, under an epoch guard, pick the bucket (following *r* to the successor), read its inline area (a copy validated by the
//! area's version, `inline_pair.rs`), *then* Acquire-load the bucket word (following MOVED to
//! the successor), walk the chain with Acquire loads, compare tags then keys, and read the
//! value. Long values are immutable
//! (zero-copy); short values (≤ 64 B) are atomic words that writers may rewrite in place
//! under a per-node version, and readers copy and validate them (a seqlock made of atomics).
//! A miss is confirmed by re-loading the bucket word: if it became MOVED, the lookup is
//! retried in the successor. A reader that finds a bucket MOVED while its migration is still
//! in progress (LOCK also set) waits for that one bucket's migration.
//!
//! **Inline pairs** change only under the bucket lock: written or rewritten in place (the
//! area's seqlock), cleared (remove), or, when an upsert grows the value past 16 bytes,
//! *moved* into a new head node: the node is published by a store of the bucket word (lock
//! kept) and only then is the area cleared. A pair never moves from a node into the area,
//! except during a migration.
//!
//! **Expansion** (see `expand.rs`): the successor is published with one store; migrating
//! bucket `l` happens under `l`'s lock (taken for a batch of buckets before any of them is
//! migrated, released per bucket), sets MOVED *before* re-linking any node, copies the
//! inline pair (and chain pairs that fit) into the new buckets' areas, clears the old area,
//! and ends by storing `MOVED | unlocked | empty`; *r* is published after each run of buckets; the last
//! run swings the current-table pointer. **Shrinking** (see `shrink.rs`) is the same protocol
//! with two old buckets per successor bucket: both are locked and marked MOVED before any
//! re-link, and old bucket `idx` counts as migrated when `idx mod N/2 < r`. The argument below
//! covers both: it only uses that a migration holds the locks of every old bucket it empties
//! from before MOVED is set until the new chain is complete.
//!
//! # Linearizability
//!
//! Write operations are linearizable at their lock-protected publishing store (the bucket or
//! link store that makes the change visible; for an in-place value rewrite, the store ending
//! the write), because all writes to a key are serialized by the lock of the bucket holding
//! it at that time and the MOVED check hands the key over to the successor atomically (a
//! migration holds the old bucket's lock from before MOVED is set until the new chains are
//! complete).
//!
//! Reads. Call a node *reachable* at time τ if it is in the chain of the bucket
//! authoritative for its key at τ (the old bucket if not MOVED, else the successor's).
//! Facts the writers maintain: (a) a chain only changes by prepending a fully written node,
//! by one store that bypasses a node (remove) or swaps it for a copy in place (replace), and
//! by migration; (b) a bypassed node's `next` word is never changed again, and it is freed
//! only after every guard pinned before its removal is gone (so no reader sees reuse);
//! (c) outside migrations, chains are acyclic and a node's successors keep their order.
//!
//! *Hit.* By induction along the walk, each node the reader reaches was reachable at some
//! instant between the reader's start and the load that reached it: the head when the bucket
//! word was loaded; a successor read from a node that was still reachable is reachable then;
//! one read from a bypassed node is the value frozen at the bypass, when it was reachable.
//! During a migration of bucket `l` no writer can change `l`'s keys (the lock is held
//! throughout), so every node of `l`'s old or new chains is reachable in the abstract sense
//! above, and a walk that strays from the old chain into a new one still only meets such
//! nodes. A found node's value read (long: immutable; short: a validated version) is a value
//! the key had while the node was reachable, so the lookup linearizes at that instant. (A
//! node whose pair a migration copied into an inline area is left untouched and no longer
//! written, so its value is the key's value at that migration, an instant after the reader
//! reached it from the old chain.) An inline hit is a validated copy: the pair the area held
//! at the reader's first load of the area's version. While the area holds key K it is K's
//! current pair: the only time K is also in a node is during a move (node published, area
//! not yet cleared), and the move linearizes at the clearing store; a reader that returned
//! the node's new value read the area after that store.
//!
//! *Miss.* The reader read the area (at τ1) before loading the bucket word (τ2). Suppose the
//! area did not hold the key, the walk ends without it, and the re-loaded bucket word is not
//! MOVED. If the key was present during the whole lookup, it was in the chain at τ1 and
//! after: pairs enter the area only as new keys or in a migration (which sets MOVED before,
//! and clears the old area after, so a reader that saw either sees MOVED in its word loads),
//! and a move out of the area publishes the node before clearing the area, so a reader that
//! saw the area cleared (Acquire) loads a bucket word at least as new as that node. So the
//! key had a node in the chain from τ2 on, and the chain argument below applies.
//!
//! Suppose the walk ends without the key and the re-loaded bucket word is not MOVED.
//! Then no re-linked `next` word was observed: the migrator sets MOVED before its first
//! re-link store, so (Release/Acquire plus coherence) a reader that loaded any re-linked word
//! would see MOVED in its later re-load. So the walk followed ordinary writer changes only.
//! If the key had a node reachable during the *whole* lookup, the walk reaches it (or its
//! in-place replacement): by (a)–(c) a walk cannot skip a node that stays in the chain, and
//! a LAST flag is only ever set on the link to a node whose `next` is already null. Hence at
//! some instant during the lookup the key was absent, and the miss linearizes there. If the
//! re-load shows MOVED, the answer is discarded and the lookup restarts in the successor
//! (after waiting for the bucket's migration to finish), where the same argument applies;
//! restarts are bounded by the number of expansions during the lookup.
//!
//! *Table choice.* A reader sent to the successor by `l < r` (Acquire load of *r*, stored
//! with Release after bucket `l` was completed) sees `l`'s new chains complete. A reader
//! holding a table that has since terminated still finds everything: every bucket of it is
//! MOVED and it stays allocated (it is retired through the epoch collector).
//!
//! # Performance
//!
//! A positive GET of an inline pair reads only the bucket's cache line (one DRAM access);
//! another pair costs the bucket's line and then the node's (two DRAM accesses when it is
//! the chain's first node). At 0.5–1 items per bucket, 63–79% of small pairs are
//! inline (the lab program `mercury_chains` counts them). A miss and the absence check of an insert
//! skip the last node thanks to the tags in links. Single-thread GETs come close to the
//! unsynchronized bench-only variant, and `get_many` overlaps the DRAM reads of many keys
//! (measured: `docs/results/mercury.md`; `orrery-bench lab mercury_quick`). Hold a
//! [`Session`] around batches to share one epoch pin. Call [`Mercury::finish_expansion`]
//! after a bulk load that may have stopped mid-expansion.
//!
//! # Memory reclamation
//!
//! Nodes unlinked by remove/replace and tables retired at termination are handed to
//! `orrery_core::sync` epochs (`Guard::defer_unchecked`) only *after* the store that
//! unlinks them; every operation holds a guard from before its first load to after its last
//! use of a node, so a node is freed only when no operation that could have seen it is still
//! running. Deferred node frees hold an `Arc` of the node allocator, so they stay sound if
//! the table is dropped first. Termination seals its thread's epoch bag after deferring the
//! old bucket array's free, so the array is unmapped after the next grace period even
//! when nothing else is retired (an insert-only load). Dropping the table frees the remaining nodes and tables
//! directly (exclusive access).
//!
//! # Memory usage
//!
//! [`Mercury::memory_usage`] reports `key_value_bytes` as the bytes of live keys and values
//! (stored in nodes or in bucket cells) and `structure_bytes` as everything else held: bucket
//! arrays (32 bytes per bucket), node headers and size-class slack, and pool memory not
//! currently in use. After mass removals the table shrinks and nodes move into lower memory
//! (`compact.rs`) so that this memory goes back to the OS; [`Stats::moved_nodes`] counts the
//! moves.
//!
//! # Limits
//!
//! Keys up to [`MAX_KEY_LEN`](orrery_core::api::MAX_KEY_LEN) (64 KiB) and values up to
//! [`MAX_VALUE_LEN`](orrery_core::api::MAX_VALUE_LEN) (1 MiB); longer input gets an
//! [`Error`]. Node addresses must be below 2^48 (always the case on x86-64 and AArch64 Linux
//! for memory the process did not explicitly request higher); otherwise an insert fails with
//! [`Error::OutOfMemory`]. The table shrinks only down to its initial size
//! ([`Config::initial_buckets`], or what [`Mercury::with_capacity`] asked for); a shrink
//! that finds no memory for the one node a merge may need pauses until a later write.
//!
//! # Alternatives
//!
//! For ordered scans use an ordered index (Wormhole, Cuckoo Trie, Hyperion). The paper's
//! measurement variants (nolock, striped) are not part of the API: they live behind the
//! feature `bench-internals`, which only `orrery-bench` enables.

mod compact;
mod config;
mod expand;
mod inline_pair;
mod iter;
mod link;
mod node;
mod prefault;
mod raw;
mod read;
mod shrink;
mod table;
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod variants;
mod write;

use std::ops::ControlFlow;
use std::sync::Arc;

#[cfg(any(doc, test))]
use orrery_core::Error;
use orrery_core::Result;
use orrery_core::api::{Decision, MemoryUsage};
use orrery_core::raw::{RawIndex, WriteMode};

pub use crate::config::{
    Config, ConfigBuilder, DEFAULT_LOAD_PERCENT, Expansion, MAX_INITIAL_BUCKETS,
};
#[doc(hidden)]
#[cfg(any(test, feature = "bench-internals"))]
#[doc(hidden)]
pub use crate::iter::ChainStats;
pub use crate::iter::Iter;
use crate::raw::Inner;
pub use orrery_core::api::ConfigError;
pub use orrery_core::batch::Entry;
use orrery_core::sync::{Guard, pin};

/// What [`Mercury::stats`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Buckets of the current table.
    pub buckets: usize,
    /// Buckets of its successor while a resize (an expansion, or a shrink when smaller than
    /// `buckets`) is in progress.
    pub next_buckets: Option<usize>,
    /// Nodes moved into lower memory so far, to give pages back after removals (see
    /// "Memory usage" in the crate docs).
    pub moved_nodes: usize,
}

/// A concurrent hash table of byte-string keys and values (see the [crate docs](crate)).
pub struct Mercury {
    inner: Arc<Inner>,
}

impl Drop for Mercury {
    fn drop(&mut self) {
        // The pre-fault thread holds only a `Weak` of `Inner`; stop and join it so that it
        // never outlives the table (it finishes a step in progress first).
        self.inner.prefaulter.shutdown();
    }
}

impl std::fmt::Debug for Mercury {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mercury")
            .field("len", &self.len())
            .field("config", &self.inner.config)
            .finish()
    }
}

impl Mercury {
    /// An empty table sized for about `n` items without expanding, and never shrinking below
    /// that size ([`ConfigError::Invalid`] beyond [`MAX_INITIAL_BUCKETS`] buckets).
    pub fn with_capacity(n: usize) -> std::result::Result<Mercury, ConfigError> {
        let config = Config::default();
        let buckets = n.saturating_mul(100) / config.load_percent + 1;
        Self::with_config(Config {
            initial_buckets: buckets,
            ..config
        })
    }

    /// Visits every pair in no particular order until `f` returns `Break`. Not a snapshot:
    /// every key present for the whole walk is visited exactly once, a key inserted or
    /// removed meanwhile at most once.
    ///
    /// `f` is called on copies, outside any lock: it may call back into the table.
    pub fn for_each(&self, mut f: impl FnMut(&[u8], &[u8]) -> ControlFlow<()>) {
        self.inner.for_each(&mut f);
    }

    /// [`Mercury::for_each`] starting from bucket `start` (modulo the table's size) and
    /// wrapping around, with the same guarantees. A random `start` makes the first pairs
    /// visited a cheap random sample of the table (what a cache's sampled eviction
    /// needs): each bucket is equally likely to come first, so a key's chance grows only
    /// with the length of the chain before it.
    pub fn for_each_from(&self, start: u64, mut f: impl FnMut(&[u8], &[u8]) -> ControlFlow<()>) {
        self.inner.for_each_from(start, &mut f);
    }

    /// An iterator over the pairs in no particular order (see [`Iter`] for what it
    /// guarantees under concurrent writers).
    pub fn iter(&self) -> Iter<'_> {
        Iter::new(&self.inner)
    }

    /// Chain-shape statistics from a walk of every bucket: the expected number of node reads
    /// of a lookup (for a cold uniform GET, DRAM round trips = 1 bucket read + these). A
    /// diagnostic of the benchmark's lab (feature `bench-internals`): it reads the whole
    /// table, and is approximate under concurrent writers.
    #[cfg(any(test, feature = "bench-internals"))]
    #[doc(hidden)]
    pub fn chain_stats(&self) -> ChainStats {
        self.inner.chain_stats()
    }

    /// Completes the resize in progress (expansion or shrink), if any, on the calling
    /// thread.
    ///
    /// In the default cooperative mode an expansion advances with inserts and a shrink with
    /// removes; after a bulk load (or a bulk removal) that stopped mid-resize, this finishes
    /// it so that both bucket arrays are not kept and every lookup uses the new table.
    pub fn finish_expansion(&self) {
        self.inner.finish_expansion();
    }

    /// The table's size: buckets of the current table, and of its successor while an
    /// expansion is in progress (cheap: no walk).
    pub fn stats(&self) -> Stats {
        let guard = pin();
        let t = self.inner.current(&guard);
        Stats {
            buckets: t.len(),
            next_buckets: t.next().map(|n| n.len()),
            moved_nodes: self.inner.alloc.moved(),
        }
    }
}

/// An explicit-guard way to run a batch of operations on one thread.
///
/// Every `Mercury` operation pins an epoch guard; pinning from scratch is one locked
/// instruction (a full barrier on x86). A `Session` pins once, and the operations made
/// through it (or through the table itself while the session lives) only nest in that pin (a
/// counter increment). When every GET misses DRAM the saving is small (the misses
/// dominate); it matters more for cache-resident tables (`orrery-bench lab mercury_quick`,
/// mode `pin-ab`).
///
/// A session holds back memory reclamation for every thread while it lives: keep it to a
/// batch (hundreds to thousands of operations), not a thread's lifetime. It is `!Send`.
///
/// In particular, an insert that finds the successor table full helps finish the
/// expansion. Outside a session (and any other pin) it does so unpinned between runs and
/// waits for the resize token while another thread holds it. Inside a session the
/// session's pin stays, so waiting would keep the process-wide epoch from advancing for as
/// long as the token holder takes (tens of milliseconds when it is descheduled on a loaded
/// machine): such an insert migrates runs only while the token is free and otherwise
/// returns at once, leaving the rest to the holder and to later inserts
/// (`blocked_token_does_not_block_session_insert` in `expand.rs`). [`Mercury::finish_expansion`]
/// still waits, pinned, when called inside a session.
///
/// ```
/// use orrery_mercury::Mercury;
///
/// let m = Mercury::new();
/// m.insert(b"k", b"v").unwrap();
/// let s = m.session();
/// for _ in 0..100 {
///     assert!(s.get_with(b"k", |v| v == b"v").unwrap());
/// }
/// ```
pub struct Session<'m> {
    map: &'m Mercury,
    _guard: Guard,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("map", self.map).finish()
    }
}

impl Mercury {
    /// Opens a [`Session`]: one epoch pin shared by the operations of a batch.
    pub fn session(&self) -> Session<'_> {
        Session {
            map: self,
            _guard: pin(),
        }
    }
}

impl Session<'_> {
    /// [`Mercury::get_with`].
    #[inline]
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.map.get_with(key, f)
    }

    /// [`Mercury::get`].
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.map.get(key)
    }

    /// [`Mercury::get_many`].
    #[inline]
    pub fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        self.map.get_many(keys, f);
    }

    /// [`Mercury::insert`].
    #[inline]
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.map.insert(key, value)
    }

    /// [`Mercury::remove`].
    #[inline]
    pub fn remove(&self, key: &[u8]) -> bool {
        self.map.remove(key)
    }

    /// [`Mercury::update`].
    pub fn update(&self, key: &[u8], f: impl FnOnce(&[u8]) -> Vec<u8>) -> Result<bool> {
        self.map.update(key, f)
    }

    /// [`Mercury::update_in_place`].
    pub fn update_in_place(&self, key: &[u8], f: impl FnOnce(&mut [u8])) -> Result<bool> {
        self.map.update_in_place(key, f)
    }
}

impl<'a> IntoIterator for &'a Mercury {
    type Item = Entry;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl RawIndex for Mercury {
    #[inline]
    fn read<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.inner.get_with(key, f)
    }

    #[inline]
    fn read_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        self.inner.get_many(keys, f);
    }

    #[inline]
    fn put(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.inner.insert(key, value)
    }

    #[inline]
    fn delete(&self, key: &[u8]) -> bool {
        self.inner.remove(key)
    }

    /// Under the key's bucket lock; if the decision panics, the value is unchanged and the
    /// lock is released.
    fn write(
        &self,
        key: &[u8],
        _mode: WriteMode,
        decide: &mut dyn FnMut(Option<&[u8]>) -> Decision,
    ) -> Result<bool> {
        self.inner.write(key, decide)
    }

    /// Values up to 64 bytes are rewritten in place (no allocation); longer ones are
    /// copied. Under the bucket lock, released if `f` panics.
    fn write_in_place(&self, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        self.inner.update_in_place(key, f)
    }

    fn count(&self) -> usize {
        self.inner.counters.sum(crate::raw::ITEMS)
    }

    fn bytes(&self) -> MemoryUsage {
        let guard = pin();
        let kv = self.inner.counters.sum(crate::raw::KV_BYTES);
        let held = self.inner.table_bytes(&guard) + self.inner.alloc.bytes();
        MemoryUsage {
            structure_bytes: held.saturating_sub(kv),
            key_value_bytes: kv,
        }
    }
}

impl Mercury {
    /// The table is its own engine.
    #[inline]
    fn raw(&self) -> &Self {
        self
    }

    fn build(config: Config) -> Result<Mercury> {
        Ok(Mercury {
            inner: Arc::new(Inner::new(config.normalized())?),
        })
    }

    fn config_ref(&self) -> &Config {
        &self.inner.config
    }
}

orrery_core::index_api!(point impl[] Mercury as "Mercury");
orrery_core::index_api!(new impl[] Mercury as "Mercury", Config);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_each_from_visits_everything_once_from_anywhere() {
        let n: u32 = if cfg!(miri) { 200 } else { 5_000 };
        let m: Mercury = (0..n).map(|i| (i.to_be_bytes(), [1u8; 20])).collect();
        let mut firsts = std::collections::HashSet::new();
        for start in [0, 1, 7, 12_345, u64::MAX, 1 << 40, 99, 3] {
            let mut seen = std::collections::HashSet::new();
            m.for_each_from(start, |k, _| {
                if seen.is_empty() {
                    firsts.insert(k.to_vec());
                }
                assert!(seen.insert(k.to_vec()), "visited twice");
                ControlFlow::Continue(())
            });
            assert_eq!(seen.len(), n as usize, "start {start}");
        }
        assert!(
            firsts.len() >= 4,
            "the start does not move the walk: {firsts:?}"
        );
        // Stopping early: a sample of 5.
        let mut sample = 0;
        m.for_each_from(42, |_, _| {
            sample += 1;
            if sample == 5 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(sample, 5);
    }

    /// Without inline areas (8-byte cells) nothing is stored inline, through growth and
    /// shrinking, and the bucket array takes a quarter of the bytes.
    #[test]
    fn word_cells_store_every_pair_in_a_node() {
        let n = if cfg!(miri) { 300 } else { 20_000 };
        let make = |inline_pairs| {
            Mercury::with_config(Config {
                initial_buckets: 2,
                migrate_run: 3,
                inline_pairs,
                ..Config::default()
            })
            .unwrap()
        };
        let (m, wide) = (make(false), make(true));
        for i in 0..n as u64 {
            assert_eq!(m.insert(&i.to_be_bytes(), &i.to_le_bytes()), Ok(true));
            assert_eq!(wide.insert(&i.to_be_bytes(), &i.to_le_bytes()), Ok(true));
        }
        m.finish_expansion();
        wide.finish_expansion();
        assert_eq!(m.stats(), wide.stats());
        let stats = m.chain_stats();
        assert_eq!((stats.items, stats.inline_items), (n, 0));
        assert!(wide.chain_stats().inline_items > 0);
        let table = |x: &Mercury| x.inner.table_bytes(&pin());
        assert_eq!(table(&m) * 4, table(&wide));
        for i in 0..n as u64 {
            assert_eq!(m.get(&i.to_be_bytes()), Some(i.to_le_bytes().to_vec()));
            assert!(m.update_in_place(&i.to_be_bytes(), |v| v[0] ^= 1).unwrap());
        }
        for i in 0..n as u64 - 10 {
            assert!(m.remove(&i.to_be_bytes()));
        }
        m.finish_expansion();
        assert!(m.stats().buckets < 64, "{:?}", m.stats());
        let stats = m.chain_stats();
        assert_eq!((stats.items, stats.inline_items), (10, 0));
        for i in n as u64 - 10..n as u64 {
            let mut v = i.to_le_bytes();
            v[0] ^= 1;
            assert_eq!(m.get(&i.to_be_bytes()), Some(v.to_vec()));
        }
    }

    #[test]
    fn grows_and_keeps_everything() {
        let n = if cfg!(miri) { 300 } else { 20_000 };
        let m = Mercury::with_config(Config {
            initial_buckets: 2,
            migrate_run: 3,
            ..Config::default()
        })
        .unwrap();
        for i in 0..n as u64 {
            assert_eq!(m.insert(&i.to_be_bytes(), &i.to_le_bytes()), Ok(true));
        }
        assert_eq!(m.len(), n);
        let buckets = m.stats().buckets;
        assert!(buckets >= n / 2, "{buckets} buckets for {n} items");
        for i in 0..n as u64 {
            assert_eq!(m.get(&i.to_be_bytes()), Some(i.to_le_bytes().to_vec()));
        }
        let mut seen = 0;
        m.for_each(|k, v| {
            assert_eq!(k.len(), 8);
            assert_eq!(u64::from_be_bytes(k.try_into().unwrap()).to_le_bytes(), v);
            seen += 1;
            ControlFlow::Continue(())
        });
        assert_eq!(seen, n);
        let stats = m.chain_stats();
        assert_eq!(stats.items, n);
        // 8-byte keys and values are stored inline when they are first in their bucket:
        // about (1 - e^-a)/a of the items at a items per bucket (0.375..1.1 here, the last
        // expansion may be in progress).
        assert!(
            stats.inline_items * 2 >= stats.items && stats.inline_items < stats.items,
            "{stats:?}"
        );
        assert!(
            stats.node_reads_per_hit > 0.0 && stats.node_reads_per_hit < 1.0,
            "{stats:?}"
        );
        assert!(stats.max_chain >= 1);
        for i in (0..n as u64).step_by(2) {
            assert!(m.remove(&i.to_be_bytes()));
        }
        assert_eq!(m.len(), n / 2);
        let keys: Vec<[u8; 8]> = (0..n as u64).map(u64::to_be_bytes).collect();
        let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        let mut got = 0;
        orrery_core::KvIndex::get_many(&m, &refs, &mut |i, v| {
            assert_eq!(v.is_some(), i % 2 == 1, "key {i}");
            got += 1;
        });
        assert_eq!(got, n);
    }

    #[test]
    fn rejects_over_long_input() {
        let m = Mercury::new();
        let long_key = vec![1; orrery_core::api::MAX_KEY_LEN + 1];
        assert!(matches!(
            m.insert(&long_key, b"v"),
            Err(Error::KeyTooLong { .. })
        ));
        let long_val = vec![1; orrery_core::api::MAX_VALUE_LEN + 1];
        assert!(matches!(
            m.insert(b"k", &long_val),
            Err(Error::ValueTooLong { .. })
        ));
        assert_eq!(m.get(&long_key), None);
        assert!(!m.remove(&long_key));
        assert!(m.is_empty());
    }

    #[test]
    fn dedicated_expander() {
        let n = if cfg!(miri) { 100 } else { 20_000 };
        let m = Mercury::with_config(Config {
            initial_buckets: 4,
            expansion: Expansion::Dedicated,
            ..Config::default()
        })
        .unwrap();
        for i in 0..n as u32 {
            m.insert(&i.to_le_bytes(), b"v").unwrap();
        }
        for i in 0..n as u32 {
            assert!(m.contains_key(&i.to_le_bytes()), "{i}");
        }
        assert_eq!(m.len(), n);
    }
}
