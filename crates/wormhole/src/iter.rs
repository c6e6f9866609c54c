//! Ordered operations over the LeafList (Algorithm 2 `RangeSearchAscending`): scans from
//! any bound, a seekable iterator, range delete, first and last.
//!
//! A scan finds its first leaf like a lookup (search, shared lock, version check), sorts
//! the leaf's key-order array lazily if needed (`leaf`), binary-searches the start
//! position, and then walks `next` pointers hand over hand: the next leaf's shared lock is
//! taken before the current one is released. Writers lock left to right too, so this
//! cannot deadlock; and because a leaf's `next` changes only under its exclusive lock,
//! the walk never skips a leaf. Keys are strictly ascending across leaves by the ordering
//! condition (`anchor`). The visitor runs under the leaf's shared lock.
//!
//! `Iter` (from `Wormhole::iter` and `Wormhole::range`, built on `copy_leaf` and
//! `copy_leaf_rev`) is a double-ended, seekable
//! cursor that holds no lock or guard between calls: each end copies one leaf's pairs at a
//! time into an arena it reuses, and resumes at the next leaf's anchor (front) or below
//! the copied leaf's anchor (back), so a user may keep it while writing to the index. Its
//! items are `Entry` handles into the arena, so iteration allocates per leaf (and not
//! even that once the arena has grown, unless entries are held), never per pair. A std
//! `Iterator` cannot lend slices borrowed from itself; `Iter::next_pair` does, for
//! callers that want no reference count either.
//!
//! # Memory-level parallelism in scans (not in the paper; measured)
//!
//! On long keys every pair is an out-of-line block, and a scan that reads them one after
//! the other waits a DRAM round trip per pair. The leaf's tag array holds every block's
//! address, so the scan issues the reads itself:
//!
//! * the start leaf's header, tag and order lines are prefetched as soon as the search
//!   returns it (`LeafPtr::prefetch_for_scan`); the tag array is read in key order, which is
//!   random against its hash order;
//! * a start key that is present is found by its tag, as a lookup finds it (one block
//!   read), and its key-order index by a pass over the order array; a binary search in key
//!   order would make about `log2(nr)` dependent block reads. The anchor check the search
//!   deferred is made after the leaf search, as in `get_with`, so the two reads overlap;
//! * the blocks of the next [`SCAN_AHEAD`] pairs are kept in flight while a pair is
//!   visited (or copied, for `Iter`);
//! * when that window reaches the end of a leaf, the next leaf's lines are prefetched, so
//!   the hand-over-hand step does not wait for them.
//!
//! Figures (YCSB-E on `url` and `az`): `docs/results/wormhole.md`, "Scans on long keys".
//!
//! Going down, a refill finds the leaf of its bound like a lookup and copies the keys
//! below the bound; when there are none it steps to the left neighbour the way
//! [`RawWormhole::last`] does (release, lock the neighbour, check that the two are still
//! adjacent, restart otherwise), since locking right to left while holding a lock could
//! deadlock against writers.

use std::ops::{Bound, ControlFlow};
use std::sync::atomic::Ordering;

use orrery_core::ScanVisitor;
use orrery_core::batch::PairBatch;
use orrery_core::sync::{self, Guard};

use crate::leaf::{DEAD, LeafAccess, LeafPtr, ReadLeaf};
use crate::raw::{LEN, Pos, RawWormhole};

/// Pairs whose blocks a scan keeps in flight ahead of the one it visits.
const SCAN_AHEAD: usize = 8;

/// Copies the pairs `from..to` in key order of a sorted leaf into `out`, with the pair
/// blocks of the next [`SCAN_AHEAD`] pairs in flight.
fn copy_sorted(r: &ReadLeaf<'_>, from: usize, to: usize, out: &mut PairBatch) {
    for a in from..to.min(from + SCAN_AHEAD) {
        r.prefetch_sorted_pair(a);
    }
    for j in from..to {
        if j + SCAN_AHEAD < to {
            r.prefetch_sorted_pair(j + SCAN_AHEAD);
        }
        let (k, v) = r.sorted_pair(j);
        out.push(k, v);
    }
}

impl<const OPTS: u32> RawWormhole<OPTS> {
    /// The first leaf holding keys `>= start` (or `> start`) under its shared lock and
    /// sorted, with the key-order index of the first such key.
    fn scan_start<'g>(&self, start: Bound<&[u8]>, g: &'g Guard) -> (ReadLeaf<'g>, usize) {
        match start {
            Bound::Unbounded => {
                // SAFETY: the head leaf is never freed while the index lives.
                let r = unsafe { self.head.read() };
                r.ensure_sorted();
                (r, 0)
            }
            Bound::Included(k) | Bound::Excluded(k) => {
                let inclusive = matches!(start, Bound::Included(_));
                let mut exact = false;
                loop {
                    let (r, tg) = self.read_locate(k, g, exact);
                    r.ptr().prefetch_for_scan(self.cfg.leaf_capacity);
                    if let Some(c) = tg.check {
                        // Deferred check, as in `get_with`: the anchor is fetched while
                        // the leaf is searched, and compared before the result is used.
                        r.hdr().prefetch_anchor(c.len());
                    }
                    r.ensure_sorted();
                    // A bound that is a present key (the common case: a scan from a key
                    // the caller has seen) is found by its tag like a lookup, one
                    // pair-block read, and its key-order index by a pass over the order
                    // array (at most 256 bytes, prefetched); a binary search in key order
                    // would make about log2(nr) dependent pair-block reads instead.
                    let found = match self.position(&r, k, tg.hash) {
                        Pos::Found(i) => r.order().iter().position(|&o| o as usize == i),
                        Pos::Absent { .. } => None,
                    };
                    if let Some(c) = tg.check
                        && !c.holds(r.hdr(), k)
                    {
                        exact = true;
                        continue;
                    }
                    let j = match found {
                        Some(j) => j + usize::from(!inclusive),
                        None => r.lower_bound(k, inclusive),
                    };
                    return (r, j);
                }
            }
        }
    }

    /// Visits pairs in ascending key order from `start` until the visitor breaks.
    pub(crate) fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        let g = sync::pin();
        let (mut cur, mut j) = self.scan_start(start, &g);
        let cap = self.cfg.leaf_capacity;
        loop {
            let n = cur.len();
            // Keep the pair blocks of the next `SCAN_AHEAD` pairs in flight.
            for a in j..n.min(j + SCAN_AHEAD) {
                cur.prefetch_sorted_pair(a);
            }
            // Once that window reaches the leaf's end, fetch the next leaf's lines.
            let next_at = n.saturating_sub(SCAN_AHEAD).max(j);
            while j < n {
                if j + SCAN_AHEAD < n {
                    cur.prefetch_sorted_pair(j + SCAN_AHEAD);
                }
                if j == next_at
                    && let Some(next) = cur.hdr().next()
                {
                    next.prefetch_for_scan(cap);
                }
                let (k, v) = cur.sorted_pair(j);
                if visitor(k, v).is_break() {
                    return;
                }
                j += 1;
            }
            let Some(next) = cur.hdr().next() else { return };
            // SAFETY: `next` is linked from a locked live leaf, so it is live; locking it
            // before releasing `cur` is the hand-over-hand step.
            let r = unsafe { next.read() };
            r.ensure_sorted();
            cur = r;
            j = 0;
        }
    }

    /// The pair with the smallest key.
    pub(crate) fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut out = None;
        self.scan(Bound::Unbounded, &mut |k, v| {
            out = Some((k.to_vec(), v.to_vec()));
            ControlFlow::Break(())
        });
        out
    }

    /// The pair with the largest key.
    pub(crate) fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let g = sync::pin();
        'restart: loop {
            let t = self.table(&g);
            let v = t.version;
            let mut leaf = t.root().get().rightmost();
            // SAFETY: reached through the published table under `g`.
            let mut r = unsafe { leaf.read() };
            if r.hdr().version.load(Ordering::Acquire) > v || r.hdr().next().is_some() {
                continue 'restart;
            }
            loop {
                if r.len() > 0 {
                    r.ensure_sorted();
                    let (k, v) = r.sorted_pair(r.len() - 1);
                    return Some((k.to_vec(), v.to_vec()));
                }
                let p = r.hdr().prev()?;
                drop(r);
                // Right to left: one lock at a time, then check the two are still adjacent.
                // SAFETY: `p` was linked while we held the lock of its right neighbour and
                // we are pinned, so it is not freed yet.
                r = unsafe { p.read() };
                if r.hdr().version.load(Ordering::Acquire) == DEAD
                    || r.hdr().next().map(LeafPtr::as_raw) != Some(leaf.as_raw())
                {
                    continue 'restart;
                }
                leaf = p;
            }
        }
    }

    /// Copies the pairs of the leaf where `start` falls, from `start` on, into `out`; returns
    /// the anchor of the next leaf (where to resume) or `None` at the end.
    pub(crate) fn copy_leaf(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Vec<u8>> {
        let g = sync::pin();
        let (r, j) = self.scan_start(start, &g);
        copy_sorted(&r, j, r.len(), out);
        let next = r.hdr().next()?;
        // SAFETY: linked from a locked live leaf.
        Some(unsafe { next.hdr() }.anchor().to_vec())
    }

    /// Copies the pairs with keys below `end` (`<=` for `Included`, all for `Unbounded`) of
    /// the rightmost leaf that has any, in ascending order, into `out`; returns that leaf's
    /// anchor (the next batch holds the keys below it) or `None` when it was the first
    /// leaf (nothing is left). Copies nothing and returns `None` when no key is below `end`.
    ///
    /// Leaves are locked one at a time: right to left would deadlock against writers and
    /// scans (which lock left to right), so a step to the left neighbour releases the
    /// current leaf first and then checks, under the neighbour's lock, that the two are
    /// still adjacent (restarting from `end` otherwise), as [`RawWormhole::last`] does.
    pub(crate) fn copy_leaf_rev(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Vec<u8>> {
        let g = sync::pin();
        'restart: loop {
            let (mut leaf, mut r) = match end {
                Bound::Included(k) | Bound::Excluded(k) => {
                    let (r, _) = self.read_target(k, &g);
                    (r.ptr(), r)
                }
                Bound::Unbounded => {
                    let t = self.table(&g);
                    let v = t.version;
                    let leaf = t.root().get().rightmost();
                    // SAFETY: reached through the published table under `g`.
                    let r = unsafe { leaf.read() };
                    if r.hdr().version.load(Ordering::Acquire) > v || r.hdr().next().is_some() {
                        continue 'restart;
                    }
                    (leaf, r)
                }
            };
            loop {
                r.ensure_sorted();
                let n = match end {
                    Bound::Included(k) => r.lower_bound(k, false),
                    Bound::Excluded(k) => r.lower_bound(k, true),
                    Bound::Unbounded => r.len(),
                };
                if n > 0 {
                    copy_sorted(&r, 0, n, out);
                    r.hdr().prev()?;
                    return Some(r.hdr().anchor().to_vec());
                }
                let p = r.hdr().prev()?;
                drop(r);
                // SAFETY: `p` was linked while we held the lock of its right neighbour and
                // we are pinned, so it is not freed yet.
                r = unsafe { p.read() };
                if r.hdr().version.load(Ordering::Acquire) == DEAD
                    || r.hdr().next().map(LeafPtr::as_raw) != Some(leaf.as_raw())
                {
                    continue 'restart;
                }
                leaf = p;
            }
        }
    }

    /// Removes every key in `[start, end]` bounds; returns how many were removed. Each leaf
    /// is rewritten once under its exclusive lock; emptied leaves are merged.
    pub(crate) fn remove_range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> usize {
        let beyond = |k: &[u8]| !orrery_core::api::within_end(k, end);
        let mut removed = 0;
        let mut from: Bound<Vec<u8>> = match start {
            Bound::Included(k) => Bound::Included(k.to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        loop {
            let g = sync::pin();
            let key: &[u8] = match &from {
                Bound::Included(k) | Bound::Excluded(k) => k,
                Bound::Unbounded => &[],
            };
            let (mut w, _) = self.write_target(key, &g);
            let pairs = w.sorted_pairs();
            let j0 = match &from {
                Bound::Excluded(k) => pairs.partition_point(|p| {
                    // SAFETY: live under the exclusive lock.
                    (unsafe { p.1.key() }) <= k.as_slice()
                }),
                // SAFETY: as above.
                _ => pairs.partition_point(|p| (unsafe { p.1.key() }) < key),
            };
            // SAFETY: as above.
            let j1 = j0 + pairs[j0..].partition_point(|p| !beyond(unsafe { p.1.key() }));
            if j1 > j0 {
                let mut keep = pairs[..j0].to_vec();
                keep.extend_from_slice(&pairs[j1..]);
                w.rebuild(&keep);
                for &(_, p) in &pairs[j0..j1] {
                    // SAFETY: removed from the leaf under its exclusive lock, used no more.
                    unsafe { self.drop_pair(p) };
                }
                self.counts.add(LEN, -((j1 - j0) as isize));
                removed += j1 - j0;
            }
            let done_here = j1 < pairs.len();
            let next = w.hdr().next();
            // SAFETY: linked from a locked live leaf.
            let next_anchor = next.map(|n| unsafe { n.hdr() }.anchor().to_vec());
            let anchor = w.hdr().anchor().to_vec();
            let merge = j1 > j0 && self.wants_merge(&w);
            drop(w);
            drop(g);
            if merge {
                self.try_merge(&anchor);
            }
            match next_anchor {
                Some(a) if !done_here && !beyond(&a) => from = Bound::Included(a),
                _ => return removed,
            }
        }
    }
}
