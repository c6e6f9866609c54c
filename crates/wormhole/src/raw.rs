//! The engine under [`Wormhole`](crate::Wormhole): the state of one index and the walks
//! every operation starts with.
//!
//! [`RawWormhole`] owns the LeafList (its head leaf and the leaf pools), the RCU'd pair of
//! MetaTrieHTs (`tables`), the pair-block pools and the counters. Operations are split by
//! kind over modules that add `impl RawWormhole` blocks: this one (state, finding and
//! locking a key's leaf, lookups, pair accounting, validation), `write` (point writes),
//! `smo` (splits and merges), `iter` (scans, range delete, first and last), `batch`
//! (`get_many`). The public type in `lib.rs` is a thin wrapper: documentation, trait
//! impls and conversions.
//!
//! The const parameter `OPTS` is the set of Fig 11 optimizations compiled in
//! (`ablation`); the engine tests its bits with `has`, which the compiler folds, so each
//! variant has only its own code paths.
//!
//! Every operation pins an epoch guard (`orrery_core::sync`) and searches the published
//! table; a leaf reached through it is live while the guard is held, and is used only under
//! its lock and after the version check of §2.5 (protocol: `smo`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use orrery_core::alloc::{Populator, SizeClassPool};
use orrery_core::api::{self, MemoryUsage, check_key};
use orrery_core::hash::crc32c;
use orrery_core::sync::{self, Backoff, Guard, StripedCounter};

use crate::ablation::{DIRECT_POS, SORT_BY_TAG, has};
use crate::config::Config;
use crate::kv::{self, InlinePair, Kv, Pair};
use crate::leaf::{self, LeafAccess, LeafPools, LeafPtr, ReadLeaf, WriteLeaf, leaf_tag};
use crate::meta::MetaTable;
use crate::search::{self, Target};
use crate::tables::Tables;

/// Counters of [`RawWormhole::counts`]: keys.
pub(crate) const LEN: usize = 0;
/// Pair bytes: block slots, plus key and value bytes of inline pairs.
pub(crate) const KV_BYTES: usize = 1;
/// Key and value bytes of inline pairs (inside leaf blocks).
pub(crate) const INLINE_BYTES: usize = 2;

/// The state of one index, with the Fig 11 optimizations `OPTS` (`ablation`).
pub(crate) struct RawWormhole<const OPTS: u32> {
    /// The published MetaTrieHT, the writer mutex and the shadow table.
    pub(crate) tables: Tables,
    /// The first leaf (anchor `""`; never removed).
    pub(crate) head: LeafPtr,
    /// Leaf blocks (shared with deferred frees, which may run after the index is dropped).
    pub(crate) pool: Arc<LeafPools>,
    pub(crate) cfg: Config,
    /// [`LEN`], [`KV_BYTES`] and [`INLINE_BYTES`], striped per thread.
    pub(crate) counts: StripedCounter<3>,
    /// Size-class pools of the pair blocks (`classes`, `kv`).
    pub(crate) kvp: SizeClassPool,
    pub(crate) leaves: AtomicUsize,
    pub(crate) anchor_bytes: AtomicUsize,
    pub(crate) meta_bytes: AtomicUsize,
    /// Restarts caused by stale tables (diagnostics).
    restarts: AtomicU64,
    /// Leaves hold on average under 11/16 of their capacity (`compact`, "Eager merges").
    pub(crate) sparse_leaves: AtomicBool,
    /// Leaves moved to lower chunks (`compact`, "Moving leaves"; diagnostics).
    pub(crate) moves: AtomicU64,
    /// Keeps a fresh chunk populated for the leaf and pair pools (`Config::prefault`;
    /// disabled: no thread). Its drop joins its thread.
    pub(crate) populator: Populator,
}

// SAFETY: all shared state is synchronized by leaf locks, the writer mutex and the epoch
// scheme (see `smo`); raw pointers are owned by the index.
unsafe impl<const OPTS: u32> Send for RawWormhole<OPTS> {}
// SAFETY: as above.
unsafe impl<const OPTS: u32> Sync for RawWormhole<OPTS> {}

/// Where a key is, or would go, in a locked leaf.
pub(crate) enum Pos {
    Found(usize),
    Absent { sorted_at: Option<usize> },
}

impl<const OPTS: u32> RawWormhole<OPTS> {
    /// An empty index with `cfg` (valid), or [`api::Error::OutOfMemory`].
    pub(crate) fn new(cfg: Config) -> api::Result<Self> {
        let populator = if cfg.prefault {
            Populator::new()
        } else {
            Populator::disabled()
        };
        let pool = Arc::new(LeafPools::new(cfg.leaf_capacity));
        pool.attach(&populator);
        let head = LeafPtr::alloc(&pool, cfg.leaf_capacity, Box::new([]), 0)?;
        let tables = MetaTable::new(head).and_then(|t1| Ok((t1, MetaTable::new(head)?)));
        let (t1, t2) = match tables {
            Ok((t1, t2)) => (Box::new(t1), Box::new(t2)),
            Err(e) => {
                // SAFETY: the head was never published; nobody else has seen it.
                unsafe { head.free(&pool) };
                return Err(e);
            }
        };
        let kvp = kv::kv_pools();
        kvp.attach(&populator);
        let meta = t1.bytes() * 2;
        Ok(RawWormhole {
            tables: Tables::new(t1, t2),
            head,
            pool,
            cfg,
            counts: StripedCounter::new(),
            kvp,
            leaves: AtomicUsize::new(1),
            anchor_bytes: AtomicUsize::new(0),
            meta_bytes: AtomicUsize::new(meta),
            restarts: AtomicU64::new(0),
            sparse_leaves: AtomicBool::new(false),
            moves: AtomicU64::new(0),
            populator,
        })
    }

    /// The published table, alive for the guard's lifetime.
    #[inline]
    pub(crate) fn table<'g>(&self, guard: &'g Guard) -> &'g MetaTable {
        self.tables.published(guard)
    }

    /// Number of lookups that restarted because their table was stale.
    pub(crate) fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }

    /// Item and slot counts of the published MetaTrieHT (takes the writer mutex, so the
    /// table does not change while it is walked).
    #[cfg(feature = "bench-internals")]
    pub(crate) fn meta_stats(&self) -> crate::meta::MetaStats {
        let w = self.tables.lock_writer_for_validation();
        self.tables.published_locked(&w).stats()
    }

    /// What the chunk populator did.
    #[cfg(any(test, feature = "bench-internals"))]
    pub(crate) fn populator_stats(&self) -> orrery_core::alloc::PopulatorStats {
        self.populator.stats()
    }

    /// What the search of `key` in the published table does.
    #[cfg(any(test, feature = "bench-internals"))]
    pub(crate) fn debug_search_trace(&self, key: &[u8]) -> search::SearchTrace {
        let g = sync::pin();
        search::trace::<OPTS>(self.table(&g), key, &self.cfg)
    }

    /// Anchor length → number of anchors, of the published table.
    #[cfg(feature = "bench-internals")]
    pub(crate) fn debug_anchor_lens(&self) -> Vec<(usize, usize)> {
        let g = sync::pin();
        self.table(&g).anchor_lens()
    }

    /// Number of leaves.
    pub(crate) fn leaf_count(&self) -> usize {
        self.leaves.load(Ordering::Relaxed)
    }

    /// Prefetches the tag line the leaf search will read first, so that it arrives together
    /// with the leaf header the lock acquisition fetches (see `leaf`).
    #[inline]
    fn prefetch_home(&self, tg: &Target) {
        if has(OPTS, SORT_BY_TAG) && has(OPTS, DIRECT_POS) {
            tg.leaf.prefetch_tags(
                leaf_tag(tg.hash),
                self.cfg.leaf_capacity,
                self.pool.prefetch_cells(),
            );
        }
    }

    /// Searches `key` (with exact probes if `exact`) and read-locks its target leaf,
    /// restarting on stale tables. The target's [`Target::check`] may still be pending:
    /// the caller compares the leaf's anchor before trusting the leaf.
    #[inline]
    pub(crate) fn read_locate<'g>(
        &self,
        key: &[u8],
        g: &'g Guard,
        exact: bool,
    ) -> (ReadLeaf<'g>, Target) {
        let backoff = Backoff::new();
        loop {
            let t = self.table(g);
            let v = t.version;
            let tg = if exact {
                search::locate_exact::<OPTS>(t, key, &self.cfg)
            } else {
                search::locate_in::<OPTS>(t, key, &self.cfg)
            };
            if let Some(tg) = tg {
                self.prefetch_home(&tg);
                // SAFETY: reached through the published table under `g`.
                let r = unsafe { tg.leaf.read() };
                if r.hdr().version.load(Ordering::Acquire) <= v {
                    return (r, tg);
                }
            }
            self.restarts.fetch_add(1, Ordering::Relaxed);
            backoff.snooze();
        }
    }

    /// Searches `key` and read-locks its target leaf, restarting on stale tables and on
    /// tag false positives (the deferred check is made at once: scans use it).
    #[inline]
    pub(crate) fn read_target<'g>(&self, key: &[u8], g: &'g Guard) -> (ReadLeaf<'g>, u32) {
        let mut exact = false;
        loop {
            let (r, tg) = self.read_locate(key, g, exact);
            match tg.check {
                Some(c) if !c.holds(r.hdr(), key) => exact = true,
                _ => return (r, tg.hash),
            }
        }
    }

    /// Searches `key` and write-locks its target leaf, restarting on stale tables and on
    /// tag matches that the leaf's anchor disproves (the pending [`Target::check`], made
    /// under the lock before anything is written).
    #[inline]
    pub(crate) fn write_target<'g>(&self, key: &[u8], g: &'g Guard) -> (WriteLeaf<'g>, u32) {
        let backoff = Backoff::new();
        let mut exact = false;
        loop {
            let t = self.table(g);
            let v = t.version;
            let tg = if exact {
                search::locate_exact::<OPTS>(t, key, &self.cfg)
            } else {
                search::locate_in::<OPTS>(t, key, &self.cfg)
            };
            if let Some(tg) = tg {
                self.prefetch_home(&tg);
                tg.leaf.prefetch_order(self.cfg.leaf_capacity);
                if has(OPTS, SORT_BY_TAG) && has(OPTS, DIRECT_POS) {
                    tg.leaf.prefetch_around(
                        leaf_tag(tg.hash),
                        self.cfg.leaf_capacity,
                        self.pool.prefetch_cells(),
                    );
                }
                // SAFETY: reached through the published table under `g`.
                let w = unsafe { tg.leaf.write() };
                if let Some(c) = tg.check
                    && !c.holds(w.hdr(), key)
                {
                    exact = true;
                    continue;
                }
                if w.hdr().version.load(Ordering::Acquire) <= v {
                    return (w, tg.hash);
                }
            }
            self.restarts.fetch_add(1, Ordering::Relaxed);
            backoff.snooze();
        }
    }

    /// Where `key` (full CRC32C `hash`) is or would go in a locked leaf.
    #[inline]
    pub(crate) fn position(&self, l: &impl LeafAccess, key: &[u8], hash: u32) -> Pos {
        let tag = leaf_tag(hash);
        if has(OPTS, SORT_BY_TAG) {
            match l.find_by_tag(key, tag, has(OPTS, DIRECT_POS)) {
                Ok(i) => Pos::Found(i),
                Err(_) => Pos::Absent { sorted_at: None },
            }
        } else {
            match l.find_sorted(key) {
                Ok(j) => Pos::Found(l.order()[j] as usize),
                Err(j) => Pos::Absent { sorted_at: Some(j) },
            }
        }
    }

    /// Calls `f` with the value of `key` (zero-copy, under the leaf's shared lock) and
    /// returns its result, or `None` if the key is absent.
    #[inline]
    pub(crate) fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if check_key(key).is_err() {
            return None;
        }
        let g = sync::pin();
        let mut exact = false;
        loop {
            let (r, tg) = self.read_locate(key, &g, exact);
            if let Some(c) = tg.check {
                // The search trusted a tag match (a leaf entry, or an item over 7 bytes):
                // fetch the anchor while the leaf is searched, and compare it before using
                // the result (`search::finish`, deferred check). A mismatch restarts
                // exactly.
                r.hdr().prefetch_anchor(c.len());
            }
            let pos = self.position(&r, key, tg.hash);
            if let Some(c) = tg.check
                && !c.holds(r.hdr(), key)
            {
                exact = true;
                continue;
            }
            return match pos {
                Pos::Found(i) => Some(f(r.value(i))),
                Pos::Absent { .. } => None,
            };
        }
    }

    /// A new pair for leaf `w`: inline when the leaf takes inline pairs and it fits, else a
    /// block. Counted in the memory counters. Fails with [`api::Error::OutOfMemory`]
    /// (counting nothing) when the block cannot be allocated.
    pub(crate) fn new_pair(
        &self,
        w: &WriteLeaf<'_>,
        key: &[u8],
        value: &[u8],
    ) -> api::Result<Pair> {
        let p = match InlinePair::new(key, value).filter(|_| w.inline_on()) {
            Some(ip) => Pair::Inline(ip),
            None => Pair::Heap(Kv::new(&self.kvp, key, value)?),
        };
        // SAFETY: a fresh block is live.
        self.counts
            .add(KV_BYTES, unsafe { p.bytes(&self.kvp) } as isize);
        self.counts.add(INLINE_BYTES, p.inline_bytes() as isize);
        Ok(p)
    }

    /// Undoes [`RawWormhole::convert_pair`] of an inline pair into the block `q`, whose
    /// inline original stays in its leaf: frees `q` and counts the original's bytes again
    /// (the conversion uncounted them).
    ///
    /// # Safety
    /// `q` is such a block, referenced by no leaf, not used again.
    pub(crate) unsafe fn unconvert_pair(&self, q: Pair) {
        let Pair::Heap(kv) = q else {
            unreachable!("only an inline pair made into a block is unconverted");
        };
        let n = kv.pair_len() as isize;
        // SAFETY: unreachable and unused from now on (contract).
        unsafe { self.drop_pair(q) };
        self.counts.add(KV_BYTES, n);
        self.counts.add(INLINE_BYTES, n);
    }

    /// Uncounts and frees a pair taken out of the index.
    ///
    /// # Safety
    /// `p` was unlinked from its leaf under the exclusive lock (readers of pairs always
    /// hold the leaf lock, so nobody can reach a block any more) and is not used again.
    pub(crate) unsafe fn drop_pair(&self, p: Pair) {
        // SAFETY: still live (contract).
        self.counts
            .add(KV_BYTES, -(unsafe { p.bytes(&self.kvp) } as isize));
        self.counts.add(INLINE_BYTES, -(p.inline_bytes() as isize));
        // SAFETY: unreachable and unused from now on (contract).
        unsafe { p.free(&self.kvp) };
    }

    /// `p` in the form a leaf that takes inline pairs (`inline`) or does not should hold:
    /// an inline pair becomes a block for a leaf without, a block that fits becomes an
    /// inline pair for a leaf with (its block freed); anything else stays. Keeps the memory
    /// counters right. For pairs moving between leaves of different kinds (splits and
    /// merges, under the write locks of both leaves).
    ///
    /// Only an inline pair becoming a block needs memory: on [`api::Error::OutOfMemory`]
    /// `p` is untouched (nothing to free: it was a copy).
    pub(crate) fn convert_pair(&self, p: Pair, inline: bool) -> api::Result<Pair> {
        let q = match p {
            Pair::Inline(ip) if !inline => Pair::Heap(Kv::new(&self.kvp, ip.key(), ip.value())?),
            Pair::Heap(kv) if inline => {
                // SAFETY: the block is live: its leaf is write-locked by the caller.
                let k = unsafe { kv.key() };
                // SAFETY: as above.
                let v = unsafe { kv.value() };
                match InlinePair::new(k, v) {
                    Some(ip) => Pair::Inline(ip),
                    None => return Ok(p),
                }
            }
            _ => return Ok(p),
        };
        // SAFETY: `q` is fresh (a new block, or a copy).
        self.counts
            .add(KV_BYTES, unsafe { q.bytes(&self.kvp) } as isize);
        self.counts.add(INLINE_BYTES, q.inline_bytes() as isize);
        // SAFETY: the old form is no longer referenced: the caller stores `q` in its place,
        // under the leaf locks every reader of a pair holds.
        unsafe { self.drop_pair(p) };
        Ok(q)
    }

    /// Number of keys (exact when no writer runs concurrently).
    pub(crate) fn len(&self) -> usize {
        self.counts.sum(LEN)
    }

    /// Bytes held (see the crate docs for what is counted where).
    pub(crate) fn memory_usage(&self) -> MemoryUsage {
        MemoryUsage {
            // Inline pairs are inside leaf blocks and counted as key-value bytes.
            structure_bytes: self
                .pool
                .reserved_bytes()
                .saturating_sub(self.counts.sum(INLINE_BYTES))
                + self.kvp.slack_bytes()
                + self.anchor_bytes.load(Ordering::Relaxed)
                + self.meta_bytes.load(Ordering::Relaxed)
                + self.populator.spare_bytes(),
            key_value_bytes: self.counts.sum(KV_BYTES),
        }
    }

    /// Walks the whole structure and panics on any broken invariant: leaf order and anchor
    /// ranges, per-leaf arrays, both MetaTrieHTs against the LeafList. Takes the writer
    /// mutex and must not run concurrently with writers.
    pub(crate) fn debug_validate(&self) {
        let wr = self.tables.lock_writer_for_validation();
        let mut leaves: Vec<(Vec<u8>, LeafPtr)> = Vec::new();
        let mut p = Some(self.head);
        let mut prev: Option<LeafPtr> = None;
        let mut count = 0;
        let mut last_key: Option<Vec<u8>> = None;
        // Bytes of the pairs as they are stored (blocks' slots, inline key and value
        // bytes), and live leaves with and without inline pairs.
        let (mut kv_bytes, mut inline_bytes) = (0, 0);
        let mut kinds = (0, 0);
        let _g = sync::pin();
        while let Some(leaf) = p {
            // SAFETY: linked leaves are live; pinned.
            let mut w = unsafe { leaf.write() };
            assert_eq!(
                w.hdr().prev().map(LeafPtr::as_raw),
                prev.map(LeafPtr::as_raw)
            );
            assert_ne!(w.hdr().version.load(Ordering::Relaxed), leaf::DEAD);
            let anchor = w.hdr().anchor().to_vec();
            if let Some((a, _)) = leaves.last() {
                assert!(a < &anchor, "anchors ascend");
            } else {
                assert!(anchor.is_empty());
            }
            if w.inline_on() {
                kinds.0 += 1;
            } else {
                kinds.1 += 1;
            }
            for (tag, kv) in w.sorted_pairs() {
                // SAFETY: live under the lock.
                kv_bytes += unsafe { kv.bytes(&self.kvp) };
                inline_bytes += kv.inline_bytes();
                // SAFETY: live under the lock.
                let k = unsafe { kv.key() };
                assert!(k >= anchor.as_slice(), "key below its leaf's anchor");
                assert_eq!(leaf_tag(crc32c(k)), tag);
                if let Some(l) = &last_key {
                    assert!(l.as_slice() < k, "keys ascend across the list");
                }
                last_key = Some(k.to_vec());
                count += 1;
            }
            leaves.push((anchor, leaf));
            prev = Some(leaf);
            p = w.hdr().next();
        }
        assert_eq!(count, self.len());
        assert_eq!(leaves.len(), self.leaf_count());
        assert_eq!(
            kv_bytes,
            self.counts.sum(KV_BYTES),
            "key_value_bytes counter"
        );
        assert_eq!(
            inline_bytes,
            self.counts.sum(INLINE_BYTES),
            "inline bytes counter"
        );
        assert_eq!(kinds, self.pool.live(), "leaves of each kind");
        self.tables.published_locked(&wr).check(&leaves);
        wr.shadow_ref().check(&leaves);
    }
}

impl<const OPTS: u32> Drop for RawWormhole<OPTS> {
    fn drop(&mut self) {
        let mut p = Some(self.head);
        while let Some(leaf) = p {
            {
                // SAFETY: `&mut self`: no other thread uses the index; leaves in the list
                // are live.
                let w = unsafe { leaf.write() };
                p = w.hdr().next();
                w.for_each_block(|kv| {
                    // SAFETY: the index owns its pairs and is being dropped; each block is
                    // referenced by exactly one slot of one leaf.
                    unsafe { kv.free(&self.kvp) }
                });
            }
            // SAFETY: unreachable from now on; from this index's pool.
            unsafe { leaf.free(&self.pool) };
        }
        // The tables (`Tables::drop`) go with the fields: they only name leaves.
    }
}
