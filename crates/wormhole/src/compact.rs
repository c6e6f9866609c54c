//! Giving memory back after mass removals (not in the paper): eager merges while leaves
//! are sparse, and moving leaves (with their pair blocks) out of sparse slab chunks.
//!
//! Leaves and pair blocks come from slab pools of 2 MiB chunks (`orrery_core::alloc`),
//! which give back empty chunks and whole free pages, but not pages a live object pins.
//! After a fill and the removal of most keys in insertion order, the survivors are spread
//! one or two per page over every chunk the fill used, and the leaves that merging left are
//! emptier than fresh ones. Two mechanisms fix that, both only active once the index or its
//! pools have become sparse, so that a steady workload does not pay for them (measured:
//! `docs/results/reliability.md`, "Memory return").
//!
//! # Eager merges
//!
//! Two neighbouring leaves merge when together they hold at most 3/4 of a leaf
//! ([`Config::merge_size`](crate::Config)); while the index is *sparse* — its leaves hold on
//! average under 11/16 of their capacity, below the about ln 2 ≈ 0.69 that random inserts
//! leave — they merge up to 15/16. The flag is refreshed by splits and merges (under the
//! writer mutex, where counting the keys costs little against the structural change) and
//! read with one relaxed load by removals. Hysteresis: a merged leaf holds at most 15/16 of
//! a leaf, so it takes at least `C/16` inserts before it splits, and the two halves of a
//! split hold `C + 1` pairs, so they take at least `C/16` removals before they merge again:
//! no leaf splits or merges more than once per `C/16` writes to it, at any fill. (Two-way
//! merges alone leave the survivors of a mass removal about 3/5 full at 3/4, against 2/3
//! at 15/16.) A merge in a sparse index also gives back the chunk populator's spare
//! (`Populator::trim`, see `Config::prefault`): a shrinking index does not need a
//! populated chunk ahead of its inserts; the populator makes one again at the next chunk a
//! pool takes.
//!
//! # Moving leaves
//!
//! A removal that leaves its leaf's pair count a multiple of 4 (a quarter of removals: the
//! ask takes the pool's lock) asks the leaf's pool for a block in a lower chunk
//! (`SlabPool::try_alloc_lower`: granted from the lowest chunk with room, when the leaf's
//! chunk is under a quarter in use or more than an eighth of the pool's chunks are free
//! slots, the holes that merges leave and that pin pages). With one, after releasing the
//! leaf, it *moves* the leaf — a split with one child — under the same protocol as splits
//! and merges (`smo`):
//!
//! 1. take the writer mutex (unpinned, holding no leaf lock; the shadow table catches up),
//!    pin, search the published table `T1` (version `v`) for the key again, and lock the
//!    target's left neighbour and the target exclusively, left to right (the head leaf,
//!    which has no left neighbour and which the index names directly, never moves);
//! 2. build the copy in the new block (same kind, capacity and anchor, version `v + 1`): the
//!    pairs in key order, each pair block in a sparse chunk of its size class moved to a
//!    lower one on the way (`SizeClassPool::try_alloc_lower`; the old block is freed at
//!    once: blocks are only read under the owning leaf's lock, which is held, and the old
//!    leaf is never read again, see below);
//! 3. link the copy in the old leaf's place (the left neighbour's `next` under its lock, the
//!    right neighbour's `prev` as a split does), mark the old leaf `DEAD`, make the shadow
//!    table name the copy wherever it named the old leaf (`MetaTable::replace_leaf`: the
//!    anchor's entry and the leftmost/rightmost leaves of its prefixes' items; no anchor
//!    changes), and publish it with version `v + 1`;
//! 4. unlock, retire the old block through the epoch guard, unpin, release the mutex.
//!
//! Readers: a lookup or writer that reaches the old leaf through a stale table or a stale
//! `prev` finds it `DEAD` under its lock and restarts, as for a merged-away leaf; one that
//! reaches the copy through a stale table finds version `v + 1 > ` its table's and
//! restarts. A forward scan steps to a leaf while holding its left neighbour's lock, and
//! the left neighbour's `next` changes under its exclusive lock, so a scan goes from the
//! neighbour either to the old leaf before the move (which then waits for the scan) or to
//! the copy after it. Backward steps check `DEAD` and adjacency under the lock, as they do
//! for merges. The key range of every leaf is unchanged, so no reader can miss a key.
//!
//! Bounds: every move takes a leaf (and each pair block moved with it) to a lower address
//! of its pool, so moves cannot cycle; each fills a hole below, so in a pool less than an
//! eighth free, moves (out of chunks under a quarter in use) are at most as many as the
//! frees that made those holes. The writer mutex is taken only when a block was granted. If the search finds another leaf than
//! the one that asked (it was merged or split meanwhile), the move goes ahead only if the
//! block is of that leaf's kind and below it, else the block is freed.

use std::ptr::NonNull;
use std::sync::atomic::Ordering;

use orrery_core::sync;

use crate::kv::{Kv, Pair};
use crate::leaf::{DEAD, LeafAccess, LeafPtr, WriteLeaf};
use crate::raw::RawWormhole;
use crate::search;
use crate::tables::Change;

/// A block granted for moving a leaf: its address and whether it has an inline area.
pub(crate) struct LowerBlock {
    block: NonNull<u8>,
    inline: bool,
}

impl<const OPTS: u32> RawWormhole<OPTS> {
    /// Combined size at or below which two neighbouring leaves merge: 15/16 of a leaf while
    /// the index is sparse, else [`Config::merge_size`](crate::Config) (see "Eager merges").
    #[inline]
    pub(crate) fn merge_limit(&self) -> usize {
        if self.sparse_leaves.load(Ordering::Relaxed) {
            self.cfg.leaf_capacity * 15 / 16
        } else {
            self.cfg.merge_size()
        }
    }

    /// Refreshes the sparse-leaves flag (structural writers, under the writer mutex).
    pub(crate) fn refresh_sparse(&self) {
        let leaves = self.leaves.load(Ordering::Relaxed);
        let sparse = self.len() * 16 < leaves * self.cfg.leaf_capacity * 11;
        if self.sparse_leaves.load(Ordering::Relaxed) != sparse {
            self.sparse_leaves.store(sparse, Ordering::Relaxed);
        }
    }

    /// After a removal from the locked leaf `w`: a block in a lower chunk for it to move to,
    /// when the pool is sparse and the leaf's chunk is under a quarter in use (see "Moving
    /// leaves"). The caller passes it to [`RawWormhole::move_leaf`] after releasing `w`.
    #[inline]
    pub(crate) fn lower_block(&self, w: &WriteLeaf<'_>) -> Option<LowerBlock> {
        if !w.len().is_multiple_of(4) || w.hdr().prev().is_none() {
            return None;
        }
        let inline = w.inline_area();
        let block = self.pool.alloc_lower(w.ptr().block(), inline)?;
        Some(LowerBlock { block, inline })
    }

    /// Moves the leaf that `key` targets into `to` (see "Moving leaves"), or frees `to` if
    /// that leaf is the head, of another kind, or not above `to`.
    pub(crate) fn move_leaf(&self, key: &[u8], to: LowerBlock) {
        let give_back = |to: LowerBlock| {
            // SAFETY: granted by `alloc_lower` of this pool with this kind, used by nobody.
            unsafe { self.pool.free_lower(to.block, to.inline) }
        };
        let Ok(mut w) = self.tables.lock_writer() else {
            return give_back(to);
        };
        let guard = sync::pin();
        let t = self.table(&guard);
        let Some(target) = search::locate::<OPTS>(t, key, &self.cfg) else {
            return give_back(to);
        };
        let leaf = target.leaf;
        // SAFETY: reached through the published table under `guard`.
        let h = unsafe { leaf.hdr() };
        let Some(prev) = h.prev() else {
            return give_back(to);
        };
        if h.inline_area() != to.inline || to.block.as_ptr() as usize >= leaf.as_raw() as usize {
            return give_back(to);
        }
        // SAFETY: `prev` is linked (stable under the mutex), hence live; left to right.
        let pw = unsafe { prev.write() };
        // SAFETY: as for `h`.
        let mut lw = unsafe { leaf.write() };
        let v = t.version + 1;
        let anchor: Box<[u8]> = lw.hdr().anchor().into();
        let next = lw.hdr().next();
        // SAFETY: a block of the leaf pool of kind `to.inline` (granted by `alloc_lower`
        // for leaves of this index's capacity), unused until now.
        let new = unsafe {
            LeafPtr::init_in(
                to.block,
                self.cfg.leaf_capacity,
                anchor.clone(),
                v,
                to.inline,
            )
        };
        let mut pairs = lw.sorted_pairs();
        for (_, p) in &mut pairs {
            if let Pair::Heap(kv) = p
                && let Some(q) = self.move_block(*kv)
            {
                *p = Pair::Heap(q);
            }
        }
        {
            // SAFETY: the new leaf is not reachable yet; we own it.
            let mut nw = unsafe { new.write() };
            nw.rebuild(&pairs);
            nw.set_prev(Some(prev));
            nw.set_next(next);
        }
        lw.rebuild(&[]);
        lw.set_version(DEAD);
        if let Some(n) = next {
            // SAFETY: linked, hence live.
            unsafe { n.hdr() }
                .prev
                .store(new.as_raw(), Ordering::Release);
        }
        pw.set_next(Some(new));
        w.shadow_mut().replace_leaf(&anchor, leaf, new);
        self.pool.unlinked(to.inline);
        self.moves.fetch_add(1, Ordering::Relaxed);
        let change = Change::Replace {
            anchor,
            old: leaf,
            new,
        };
        self.publish(&mut w, v, change);
        drop(lw);
        drop(pw);
        let pool = self.pool.clone();
        guard.defer(move || {
            // SAFETY: the old leaf was unlinked and dropped from the published table before
            // this deferral; every thread that could still hold its address was pinned
            // before it. The shadow table still names it, but only compares its address
            // (`MetaTable::replace_leaf`).
            unsafe { leaf.free(&pool) };
        });
    }

    /// Moves the pair block `kv` (owned by a leaf whose exclusive lock the caller holds) to
    /// a lower chunk of its size class if its chunk is under a quarter in use; returns the
    /// new block (the old one is freed), or `None` (nothing changed).
    fn move_block(&self, kv: Kv) -> Option<Kv> {
        let q = kv.move_lower(&self.kvp)?;
        // SAFETY: the caller holds the owning leaf's exclusive lock; the block's only
        // reference is being replaced by `q`, and readers read blocks only under that
        // leaf's lock (the old leaf is never read again after a move: it is `DEAD`).
        unsafe { kv.free(&self.kvp) };
        Some(q)
    }
}
