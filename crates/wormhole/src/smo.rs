//! Structural modifications: split (Algorithm 4 `split`) and merge (Algorithm 4 `merge`),
//! published through the RCU-swapped pair of MetaTrieHTs (§2.5, `tables`).
//!
//! # Locking protocol (§2.5)
//!
//! * **Readers** (get, scans, and the search phase of every writer) pin an epoch guard,
//!   load the published table `T` and its version `v`, search it without any lock
//!   (`search`), lock the target leaf (shared or exclusive), and restart if the leaf's
//!   expected version is `> v`: the table they used predates a split or merge of that
//!   leaf. Readers never lock the MetaTrieHT.
//! * **Leaf writers** (insert into a non-full leaf, update, remove without merge) do the
//!   same with the leaf's exclusive lock and touch nothing else.
//! * **MetaTrieHT writers** (split, merge) take the single writer mutex, *unpinned and
//!   holding no leaf lock* (a writer that finds its leaf full or nearly empty releases the
//!   leaf and its guard first, then retries). Under the mutex they:
//!   1. *catch up* the shadow table `T2`: wait until every reader that could still see it
//!      (it was published before the previous swap) has unpinned — the
//!      `GracePeriod` started right after that swap — and replay on it the one change
//!      made since (the paper applies that change right after its grace period; we apply it
//!      lazily at the start of the next writer, so no writer ever waits a grace period while
//!      it holds leaf locks or a pinned guard, and the grace period is usually over by then:
//!      checking it is a few loads, with no epoch advance and no barrier). If
//!      the calling thread is itself pinned on the shared epoch scheme (a caller holding a
//!      guard around index calls), waiting could deadlock on its own pin: then the shadow is
//!      replaced by a deep copy of the published table and the old shadow is retired through
//!      the epoch scheme;
//!   2. pin, search the (now stable) published table `T1`, and lock the leaves involved
//!      exclusively, left to right;
//!   3. rewrite the leaves, set the expected version of every leaf whose key range changes
//!      to `v + 1` (a merged-away leaf gets `DEAD`), link or unlink the leaf in the list;
//!   4. apply the anchor insertion or removal to `T2`, set its version to `v + 1`, and
//!      publish it with one atomic pointer swap (release); `T1` becomes the shadow; start
//!      the grace period of `T1` (`GracePeriod::start`: one barrier — a fence, or with the
//!      asymmetric pin one membarrier — and one scan recording the participants pinned
//!      now, the writer's own guard included);
//!   5. unlock the leaves, defer (for a merge) the victim leaf's free on the epoch guard,
//!      unpin, and release the mutex.
//! * Lock order: writer mutex → leaf locks left to right. Nobody waits for the mutex while
//!   pinned or while holding a leaf lock, and nobody waits for a grace period while
//!   holding a leaf lock, so epochs always advance and there is no cycle.
//!
//! Moving a leaf to another block (`compact`, "Moving leaves") is a third MetaTrieHT writer
//! under the same steps: its change (`Change::Replace`) only renames the leaf.
//!
//! A lookup through a stale table reaches either a leaf untouched since that table's
//! version (whose key range is then unchanged, so the lookup is correct) or a leaf whose
//! expected version is newer (restart). `prev` pointers read during the search are current
//! ones; a leaf they lead to that was split or merged has a newer version too.
//!
//! # Out of memory
//!
//! A split allocates before it writes anything readers or the next writer could see: room
//! for the new anchor in the shadow table (`MetaTable::reserve`, which only grows that
//! unpublished table), the new leaf, and the blocks of inline pairs moving to a leaf
//! without inline pairs (`WriteLeaf::split_into` converts them all before it moves any).
//! If one of these fails, what was allocated is freed and the split returns
//! `Error::OutOfMemory`: the full leaf stays full and the insert that needed the split
//! reports the error. Catching up the shadow table (`Tables::lock_writer`) needs memory
//! too when the pending change is an insertion; if it fails the change stays pending (the
//! published table has it) and the writer reports the error without doing anything. A
//! merge that lacks memory is skipped: it is an optimization, and the removal that asked
//! for it has already succeeded.

use std::sync::atomic::Ordering;

use orrery_core::Error;
use orrery_core::sync::{self, Guard};

use crate::anchor::{choose_split, split_anchor};
use crate::kv::Pair;
use crate::leaf::{DEAD, LeafAccess, LeafPtr, WriteLeaf};
use crate::raw::RawWormhole;
use crate::search;
use crate::tables::{Change, Writer};

impl<const OPTS: u32> RawWormhole<OPTS> {
    /// Publishes the shadow table of `w` with version `v` (`Tables::publish`) and records
    /// the new table's size.
    pub(crate) fn publish(&self, w: &mut Writer, v: u64, change: Change) {
        let new_bytes = self.tables.publish(w, v, change);
        self.meta_bytes.store(new_bytes * 2, Ordering::Relaxed);
    }

    /// Whether a leaf (just shrunk) and one of its neighbours fit in one leaf.
    pub(crate) fn wants_merge(&self, w: &WriteLeaf<'_>) -> bool {
        let n = w.len();
        let limit = self.merge_limit();
        if n > limit {
            return false;
        }
        let h = w.hdr();
        let small = |p: Option<LeafPtr>| p.is_some_and(|p| n + p.nr_hint() <= limit);
        small(h.prev()) || small(h.next())
    }

    /// Splits the leaf that `key` targets if it is still full (Algorithm 4 `split`).
    ///
    /// Fails with [`Error::OutOfMemory`] when the new leaf, the room for its anchor in
    /// the shadow table, or the blocks of pairs changing form cannot be allocated. Every
    /// allocation happens before anything visible is written (see "Out of memory" in the
    /// module docs), so a failed split leaves the index as it was.
    pub(crate) fn split(&self, key: &[u8]) -> Result<(), Error> {
        let mut w = self.tables.lock_writer()?;
        let guard = sync::pin();
        let t = self.table(&guard);
        let Some(target) = search::locate::<OPTS>(t, key, &self.cfg) else {
            return Ok(());
        };
        let leaf = target.leaf;
        // SAFETY: reached through the published table under `guard`.
        let mut lw = unsafe { leaf.write() };
        if !lw.is_full() {
            return Ok(());
        }
        lw.sort();
        let n = lw.len();
        let (j, anchor) = {
            let key = |i: usize| lw.key(lw.order()[i] as usize);
            let j = choose_split(n, key);
            let anchor: Box<[u8]> = split_anchor(key(j - 1), key(j)).into();
            (j, anchor)
        };
        let v = t.version + 1;
        let next = lw.hdr().next();
        // The new leaf takes inline pairs when at least half of its pairs fit (see `leaf`,
        // "Inline pairs"): each leaf's kind follows the pairs it was made for.
        let inline = lw.small_from(j) * 2 >= n - j;
        // Room for the anchor in the shadow table (unpublished: growing it changes nothing
        // readers see), then the new leaf, then the pairs' new forms.
        w.shadow_mut().reserve(anchor.len() + 1)?;
        let right = LeafPtr::alloc_kind(
            &self.pool,
            self.cfg.leaf_capacity,
            anchor.clone(),
            v,
            inline,
        )?;
        {
            // SAFETY: the new leaf is not reachable yet; we own it.
            let mut rw = unsafe { right.write() };
            let moved = lw.split_into(
                &mut rw,
                j,
                &mut |p, inline| self.convert_pair(p, inline),
                // SAFETY: a block just made by `convert_pair` from an inline pair still in
                // `lw`, referenced by no leaf.
                &mut |p| unsafe { self.unconvert_pair(p) },
            );
            if let Err(e) = moved {
                let right_inline = rw.inline_on();
                drop(rw);
                self.pool.unlinked(right_inline);
                // SAFETY: the new leaf was never linked or published; nobody else has seen
                // it, and it is not used again.
                unsafe { right.free(&self.pool) };
                return Err(e);
            }
            rw.set_prev(Some(leaf));
            rw.set_next(next);
        }
        lw.set_version(v);
        if let Some(n) = next {
            // SAFETY: `n` is live (linked, and only mutex holders unlink leaves).
            unsafe { n.hdr() }
                .prev
                .store(right.as_raw(), Ordering::Release);
        }
        lw.set_next(Some(right));
        w.shadow_mut().insert_anchor(&anchor, right, leaf, next);
        self.leaves.fetch_add(1, Ordering::Relaxed);
        self.anchor_bytes.fetch_add(anchor.len(), Ordering::Relaxed);
        self.refresh_sparse();
        let change = Change::Insert {
            anchor,
            leaf: right,
            prev: leaf,
            next,
        };
        self.publish(&mut w, v, change);
        drop(lw);
        Ok(())
    }

    /// Merges the leaf that `key` targets with a neighbour if their combined size allows
    /// (Algorithm 2 `DEL`, Algorithm 4 `merge`). The right leaf of the pair is removed.
    ///
    /// A merge is an optimization: when memory for it is lacking (catching up the shadow
    /// table, or blocks for pairs changing form) it is skipped, and the leaves stay as
    /// they are.
    pub(crate) fn try_merge(&self, key: &[u8]) {
        let Ok(mut w) = self.tables.lock_writer() else {
            return;
        };
        let guard = sync::pin();
        let t = self.table(&guard);
        let Some(target) = search::locate::<OPTS>(t, key, &self.cfg) else {
            return;
        };
        let leaf = target.leaf;
        self.refresh_sparse();
        if self.sparse_leaves.load(Ordering::Relaxed) && self.populator.spare_bytes() > 0 {
            // A shrinking index: its inserts do not need a populated spare chunk soon.
            self.populator.trim();
        }
        let limit = self.merge_limit();
        // SAFETY: reached through the published table under `guard`.
        let prev = unsafe { leaf.hdr() }.prev();
        if let Some(p) = prev {
            // SAFETY: `p` is linked (stable under the mutex), hence live.
            let pw = unsafe { p.write() };
            // SAFETY: as for `leaf` above.
            let lw = unsafe { leaf.write() };
            if pw.len() + lw.len() <= limit {
                self.merge_locked(&mut w, pw, lw, t.version + 1, &guard);
                return;
            }
            drop(pw);
            self.merge_right(&mut w, lw, limit, t.version + 1, &guard);
        } else {
            // SAFETY: as above.
            let lw = unsafe { leaf.write() };
            self.merge_right(&mut w, lw, limit, t.version + 1, &guard);
        }
    }

    fn merge_right(&self, w: &mut Writer, lw: WriteLeaf<'_>, limit: usize, v: u64, g: &Guard) {
        let Some(n) = lw.hdr().next() else { return };
        // SAFETY: linked, hence live; locking left to right.
        let nw = unsafe { n.write() };
        if lw.len() + nw.len() <= limit {
            self.merge_locked(w, lw, nw, v, g);
        }
    }

    /// Moves every pair of `victim` into `left` (its left neighbour), unlinks `victim`,
    /// removes its anchor, publishes, and retires the victim.
    fn merge_locked(
        &self,
        w: &mut Writer,
        mut left: WriteLeaf<'_>,
        mut victim: WriteLeaf<'_>,
        v: u64,
        guard: &Guard,
    ) {
        let mut pairs = left.sorted_pairs();
        // The victim's pairs take the survivor's form (its kind may differ). All of them
        // before anything is written: if one needs a block that cannot be had, the ones
        // made so far are freed and the merge is skipped (see `try_merge`).
        let inline = left.inline_on();
        // Blocks made here from the victim's inline pairs (the only conversions that
        // allocate), to free if a later one fails.
        let mut made = Vec::new();
        for (t, p) in victim.sorted_pairs() {
            let was_inline = matches!(p, Pair::Inline(_));
            match self.convert_pair(p, inline) {
                Ok(q) => {
                    if was_inline && matches!(q, Pair::Heap(_)) {
                        made.push(q);
                    }
                    pairs.push((t, q));
                }
                Err(_) => {
                    for q in made {
                        // SAFETY: a block just made by `convert_pair`, in no leaf; the
                        // victim still holds the inline original.
                        unsafe { self.unconvert_pair(q) };
                    }
                    return;
                }
            }
        }
        left.rebuild(&pairs);
        victim.rebuild(&[]);
        left.set_version(v);
        victim.set_version(DEAD);
        let vp = victim.ptr();
        let lp = left.ptr();
        let next = victim.hdr().next();
        if let Some(n) = next {
            // SAFETY: linked, hence live.
            unsafe { n.hdr() }
                .prev
                .store(lp.as_raw(), Ordering::Release);
        }
        left.set_next(next);
        let anchor: Box<[u8]> = victim.hdr().anchor().into();
        w.shadow_mut().remove_anchor(&anchor, vp, lp, next);
        self.leaves.fetch_sub(1, Ordering::Relaxed);
        self.pool.unlinked(victim.inline_on());
        self.anchor_bytes.fetch_sub(anchor.len(), Ordering::Relaxed);
        let change = Change::Remove {
            anchor,
            leaf: vp,
            prev: lp,
            next,
        };
        self.publish(w, v, change);
        drop(victim);
        drop(left);
        let pool = self.pool.clone();
        guard.defer(move || {
            // SAFETY: the victim was unlinked and dropped from the published table before
            // this deferral; every thread that could still hold its address was pinned
            // before it, so when this runs nobody can reach it. The shadow table still
            // names it, but only compares its address.
            unsafe { vp.free(&pool) };
        });
    }
}
