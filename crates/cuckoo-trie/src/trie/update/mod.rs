//! Updates under per-bucket writer locking (§4.5 insert and delete, §5 "Updates").
//!
//! An update attempt runs in three phases:
//!
//! 1. **Room.** For every entry it will place, a free slot is made in one of the entry's
//!    two buckets (cuckoo relocation, [`Table::make_room_claimed`]), while the writer holds no
//!    bucket. It runs after the descent (the new entries' hashes come from the path), so
//!    when entries were moved the descent's path is re-validated — every path bucket
//!    still at the version the descent saw — and only if one changed does the attempt
//!    start again with a new descent. The predecessor search runs after this phase.
//! 2. **Read-only searches.** The descent to the key, the predecessor search (and, when
//!    there is no predecessor, the search of the first leaf), the sibling of a removed
//!    leaf: every node the update will write, found with validated reads.
//! 3. **Lock, verify, edit, commit.** The buckets of those nodes are locked at the versions
//!    the searches saw ([`LockSet`]); a bucket that changed since fails the attempt, which
//!    starts again from phase 1. The buckets that receive new entries are locked too.
//!    Edits go to the locked lines and become visible together at the commit.
//!
//! What is locked (§5: "the parent and predecessor of the inserted (resp., deleted) node
//! and any ancestors whose *subtree-max* pointer is affected", plus the deleted leaf):
//!
//! | update | buckets locked (at the version seen) |
//! |---|---|
//! | replace a value | the leaf |
//! | insert below internal node `P` | `P`; the list anchor; both buckets of the new leaf; the **max ancestors** of `P` if the new symbol is above `P`'s children |
//! | insert by splitting leaf `A` | `A`; the list anchor of `A`; both buckets of every new node; the max ancestors of `A` |
//! | insert at a jump split of `J` | `J`; `J`'s child if it is re-parented; the list anchor; both buckets of every new node; the max ancestors of `J` if the new key is above `J`'s subtree |
//! | remove leaf `A` under `P` | `A`, `P`; the list anchor of `A`; the max ancestors of `P` if `A` is `P`'s last child; on a tail collapse instead the sibling leaf `C`, every node from the collapsing top `X` down to `P`, the anchor of `C` if `C < A`, and the max ancestors of `X` |
//!
//! **Subtree-max locators** (§4.4, Fig 3c). Every internal node (bitmap or jump, the
//! root included) holds the locator of the largest leaf below it; predecessor searches
//! follow it instead of descending the rightmost edge (`trie/mod.rs`, `max_leaf`). The *max
//! ancestors* of a node `N` on the searched path are the nodes above it that `N` lies on
//! the rightmost edge of (`rightmost_from`: each node on the way is its parent's highest
//! child, or a jump node's only child); their maximum is the maximum below `N`. They are
//! read from the path's entries and locked at the versions the path saw, so the lock
//! verifies that they still are. Each update rewrites exactly the locators whose leaf
//! changes, in the same commit as the rest:
//!
//! | update | new subtree-max locators |
//! |---|---|
//! | new leaf `L` below `P`, above `P`'s children | `P` and its max ancestors → `L` |
//! | split of leaf `A` into a chain over two leaves | the converted `A`, the new chain nodes, and `A`'s max ancestors → the higher leaf (a new locator even when it holds `A`'s record) |
//! | jump split of `J`, new leaf `L` | new bitmap node and shortened `J` → `L` if the key is above `J`'s subtree (and then `J`'s max ancestors → `L`), else `J`'s old locator; the rest jump above the old child → `J`'s old locator |
//! | remove `A`, the highest child of `P` | `P` and its max ancestors → `A`'s list predecessor `Q` (below each of them, since the leaves below a node are contiguous in key order and `P` keeps a leaf; a root left without children needs none) |
//! | tail collapse into leaf `X` | `X`'s max ancestors → `X` (it holds the larger of `A` and `C`) |
//!
//! Why this keeps every locator exact: a node's maximum changes only when the leaf that
//! is (or becomes) its maximum is inserted, removed, split or collapsed; the node is then
//! a max ancestor of the change's position, and the writer locked it. The one node read
//! but not locked is the first node above the max ancestors (its higher child, the reason
//! to stop): a concurrent change of its higher children next to the position inserts or
//! removes a leaf adjacent in key order to the maximum below the position, so both
//! updates lock that maximum (one as its list anchor, the other as its leaf or anchor), and
//! one of them fails its compare-and-swap and searches again.
//!
//! **Stale locators and the dirty flag.** No update leaves a locator stale: its edits
//! are all stored at its commit, so there is no half-done state for the paper's dirty
//! flags to mark (§5 sets them on leaves pointed to by stale locators during in-place
//! updates). A reader that follows a locator validates the node it read it from after
//! reading the leaf, so it never combines a locator with a leaf of a different state. The
//! flag marks the one transient stale state: a growth copies internal nodes with
//! locators of the old table ([`crate::bucket::Entry::rebased`] sets the flag on the
//! copy), and the copy sets each node's locator, clearing the flag, when its subtree is
//! done (`trie/grow/`), so no published table holds a flagged node. Readers would pass
//! a flagged node by one rightmost step, and a writer that sets a node's locator clears it.
//!
//! **Deadlock freedom and linearizability** are unchanged by the extra locks: they are
//! taken like the others, by a non-waiting compare-and-swap at the version seen (a
//! failure abandons the whole attempt), and they only add nodes to a set whose edits are
//! stored at one commit. The linearization points stay the commits (for readers, the
//! validated read of the node whose locator or child they followed).
//!
//! **The list anchor** of a position in the leaf list is its predecessor leaf `Q`, or the
//! root's bucket when there is none (the root guards the head of the list: every update
//! that changes which leaf is first locks the root). Locking `Q` at the version seen
//! freezes `Q`'s next-leaf locator. The predecessor search (continued from the writer's
//! own descent path, not a second descent) is validated step by step only, so the anchor
//! is verified once `Q` is locked: for an insert, every bucket the descent and the search
//! read must still be at the version seen (§5 "Predecessor searches": then, at that
//! moment, the trie holds the searched path as read, so `Q` is the predecessor, and it
//! stays so until the commit since any change between `Q` and the key needs `Q`'s lock;
//! the successor's entry and record are not read at all: the new leaf takes `Q.next`);
//! for a removal or a split of leaf `A`, `Q.next` must name `A`. When there is no predecessor, the root must still be
//! at the version seen by the descent and by the searches: every update that could have
//! put a leaf before the key since then (it would have had no predecessor either) locked
//! the root, so the root's version moved. Every change of the list is made under the lock
//! of the leaf before the change (or of the root), so, at the commit, `Q` and the leaf
//! after it are neighbours and the list stays sorted.
//!
//! Why locking at the seen version verifies the trie part: internal nodes are never
//! cleared, only converted in place (split, collapse) or moved (relocation), and both
//! change their bucket's version. So a node whose bucket is unchanged is still the same
//! node, at the same name, reachable from the root. A new entry is only placed in a
//! locked bucket, so two writers cannot give two nodes of one hash the same colour, and
//! an entry placed by an attempt that fails is never stored.
//!
//! The paper also marks a deleted leaf, and leaves behind stale next or subtree-max
//! locators, *dirty*, for readers that reach them while the update is under way. Here no
//! reader can see an update half done (`lockset.rs`): every edit of an update is stored at
//! its commit, after all its buckets are locked, and a reader that reads a leaf through a
//! locator validates the node it came from afterwards (`next_leaf`, `max_leaf`). Readers
//! still treat a dirty leaf as stale, but no update sets the flag on a leaf; on internal
//! nodes it marks the stale subtree-max locators of a growth's copy (above).
//!
//! **Growth** (§5 "Resizing"): when a placement finds no colour, no cuckoo path, or (too
//! often) no free slot, the writer grows the table: it marks every bucket *frozen* (no
//! writer can lock it any more; readers keep reading it), copies the trie into a table of
//! twice the buckets, publishes it with one pointer swap and retires the old one. Writers
//! whose locks fail on a frozen bucket help copy it (`trie/grow/`); readers never wait.
//! A removal whose commit leaves fewer entries than a quarter of the slots then shrinks
//! the table the same way, into a smaller one (`Raw::maybe_shrink`, after the commit: the
//! removal is done whatever the shrink does).

mod insert;
mod remove;

use std::ops::Bound;
use std::sync::atomic::Ordering;

use orrery_core::api::Error;
use orrery_core::sync::{Backoff, Guard};

use super::{Decision, End, Make, Raw, Step, Symbols, rec_ptr};
use crate::bucket::{Kind, Locator};
use crate::lockset::{Fail, LockSet};
use crate::record::{self, Records};
use crate::table::{Found, Room, Slot, Table};

/// Attempts that found no free slot in a row before the writer grows the table.
const NO_ROOM_GROW: u32 = 8;

/// Which decisions an upsert may apply.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mode {
    /// An absent key may be inserted.
    pub(crate) insert: bool,
    /// A present key may be removed.
    pub(crate) remove: bool,
}

impl Mode {
    /// Insert or replace.
    pub(crate) const INSERT: Mode = Mode {
        insert: true,
        remove: false,
    };
    /// Remove only.
    pub(crate) const REMOVE: Mode = Mode {
        insert: false,
        remove: true,
    };
    /// Replace an existing value only.
    pub(crate) const UPDATE: Mode = Mode {
        insert: false,
        remove: false,
    };
    /// Any of the three.
    pub(crate) const COMPUTE: Mode = Mode {
        insert: true,
        remove: true,
    };
}

/// A predecessor (or first-leaf) search of a writer: the leaf found, if any, and the root
/// as the search read it.
struct Seek {
    leaf: Option<Step>,
    root: Found,
}

/// Makes a free slot for an entry of each hash of `hashes` (phase 1). If entries had to
/// be moved, the nodes of the caller's `path` may have moved too: only those are
/// re-validated (each bucket still at the version the descent saw: then no move touched
/// it, and the path is as read), and the attempt goes on; if one changed,
/// [`Fail::Relocated`] sends the writer back to its descent. Everything the attempt reads
/// after this (predecessor search, placement under lock) sees the moves.
fn room(t: &Table, hashes: &[u64], path: &[Step]) -> Result<(), Fail> {
    // The buckets of new entries are not on the descent's path: fetched together, their
    // misses overlap.
    for &h in hashes {
        t.prefetch(h);
    }
    let mut moved = false;
    // The bucket each earlier hash's slot was promised in: hashes that differ only in
    // their tag share `B1`, and two new entries then need two free slots there (without
    // this count, the second placement found none, every attempt alike, and the table
    // grew at 81% load).
    let mut claims = [usize::MAX; 8];
    for (i, &h) in hashes.iter().enumerate() {
        let claimed = |b: usize| {
            claims[..i.min(claims.len())]
                .iter()
                .filter(|&&c| c == b)
                .count()
        };
        let (b, m) = t.make_room_claimed(h, &claimed).map_err(|r| match r {
            Room::Full => Fail::Full,
            // Counted with the no-room failures: a path that keeps going stale ends in
            // growth.
            Room::Busy => Fail::NoRoom,
        })?;
        if let Some(c) = claims.get_mut(i) {
            *c = b;
        }
        moved |= m;
    }
    if moved
        && !path
            .iter()
            .all(|s| t.bucket(s.found.slot.bucket).unchanged(s.found.version))
    {
        return Err(Fail::Relocated);
    }
    Ok(())
}

/// The highest symbol of a non-empty bitmap.
#[inline]
fn highest(bits: u64) -> Option<u8> {
    (bits != 0).then(|| (63 - bits.leading_zeros()) as u8)
}

/// The first index `i <= j` such that `path[j]` lies on the rightmost edge of every node
/// of `path[i..=j]` (each is the rightmost child of the node before it, or the only child
/// of a jump node): the nodes whose subtree maximum is the maximum below `path[j]`.
/// Read from the entries as the path saw them; the writer locks `path[i..=j]` at those
/// versions, which verifies them.
fn rightmost_from(path: &[Step], j: usize) -> usize {
    let mut i = j;
    while i > 0 {
        let up = path[i - 1].found.entry;
        let rightmost = match up.kind() {
            Kind::Jump => true,
            Kind::Bitmap => highest(up.bitmap()) == Some(path[i].found.entry.last_symbol()),
            _ => false,
        };
        if !rightmost {
            break;
        }
        i -= 1;
    }
    i
}

/// Locks the buckets of `nodes` at the versions their path saw.
fn lock_all(ls: &mut LockSet<'_>, nodes: &[Step]) -> Result<(), Fail> {
    nodes.iter().try_for_each(|n| ls.lock_node(&n.found))
}

/// Points the subtree-max locator of every node at `slots` (locked) at `to`, and clears
/// their stale marks (the value is exact).
fn set_max(ls: &mut LockSet<'_>, slots: impl IntoIterator<Item = Slot>, to: Locator) {
    for s in slots {
        ls.update(s, |x| x.with_max(to).with_dirty(false));
    }
}

impl Raw {
    /// Upserts or removes `key` by `make(old)` ([`Decision`]) within what `mode` allows;
    /// returns whether the key was present. `make` runs exactly once, with the locks that
    /// make its decision atomic held (§5: the leaf's bucket, or for an absent key every
    /// bucket the insert writes).
    pub(crate) fn upsert(
        &self,
        key: &[u8],
        make: &mut Make<'_>,
        mode: Mode,
    ) -> Result<bool, Error> {
        let syms = Symbols::new(key, self.config.symbol_bits);
        let mut path = Vec::with_capacity(16);
        let mut aux = Vec::with_capacity(16);
        let g = orrery_core::sync::pin();
        let backoff = Backoff::new();
        let mut no_room = 0;
        let mut relocated = 0;
        loop {
            let t = self.table(&g);
            match self.try_upsert(t, &g, key, &syms, &mut path, &mut aux, make, mode) {
                Ok(r) => return r,
                Err(Fail::Restart) => {
                    self.wait_growth();
                    backoff.snooze();
                }
                Err(Fail::NoRoom) => {
                    no_room += 1;
                    if no_room >= NO_ROOM_GROW {
                        no_room = 0;
                        self.grow(t, &g)?;
                    } else {
                        self.wait_growth();
                        backoff.snooze();
                    }
                }
                Err(Fail::Relocated) => {
                    relocated += 1;
                    if relocated >= NO_ROOM_GROW * 2 {
                        relocated = 0;
                        self.grow(t, &g)?;
                    }
                }
                Err(Fail::Full) => self.grow(t, &g)?,
            }
        }
    }

    /// Removes `key`; returns whether it was present.
    pub(crate) fn remove(&self, key: &[u8]) -> bool {
        self.upsert(key, &mut |_| Decision::Remove, Mode::REMOVE)
            .unwrap_or(false)
    }

    /// While a growth is copying the table (its buckets are frozen), helps copy it and
    /// waits for the new table (`trie/grow/`); the writer continues there.
    fn wait_growth(&self) {
        self.help_growth();
    }

    /// One attempt of [`Raw::upsert`]; `make` is called only on the way to `Ok`.
    #[allow(clippy::too_many_arguments)]
    fn try_upsert(
        &self,
        t: &Table,
        g: &Guard,
        key: &[u8],
        syms: &Symbols<'_>,
        path: &mut Vec<Step>,
        aux: &mut Vec<Step>,
        make: &mut Make<'_>,
        mode: Mode,
    ) -> Result<Result<bool, Error>, Fail> {
        let end = self.descend(t, syms, path).map_err(|_| Fail::Restart)?;
        let last = path[path.len() - 1];
        if end == End::Leaf {
            let old = rec_ptr(last.found.entry.record());
            // SAFETY: the leaf was read validated under `g`; its record is retired only
            // after it is unlinked, through the epoch collector.
            let (k, v) = unsafe { record::read(old) };
            if k == key {
                let mut ls = LockSet::new(t);
                // `plan_remove` searches before it locks anything (a search would wait for
                // a bucket the writer itself holds), then locks the leaf with the rest.
                let plan = if mode.remove {
                    Some(self.plan_remove(t, &mut ls, key, path, aux)?)
                } else {
                    ls.lock_node(&last.found)?;
                    None
                };
                // The leaf is locked at the version it was read at: `v` is the current
                // value, and no other writer can change the key until the commit.
                return Ok(match (make(Some(v)), plan) {
                    (Decision::Store(val), _) => {
                        let new = match self.records.alloc(key, &val) {
                            Ok(p) => p,
                            Err(e) => return Ok(Err(e)),
                        };
                        ls.update(last.found.slot, |e| e.with_record(new.as_ptr() as usize));
                        let delta = ls.commit();
                        debug_assert_eq!(delta, 0, "a value replacement places nothing");
                        // SAFETY: `old` was replaced by the commit; retired once.
                        unsafe { Records::retire(&self.records, g, old) };
                        Ok(true)
                    }
                    (Decision::Remove, Some(plan)) => {
                        Self::apply_remove(&mut ls, &plan);
                        let delta = ls.commit();
                        // SAFETY: unlinked by the commit; retired once.
                        unsafe { Records::retire(&self.records, g, old) };
                        self.counts.len.fetch_sub(1, Ordering::Relaxed);
                        let entries = self.add_entries(delta);
                        // The removal is done (acknowledged whatever the shrink does): a
                        // shrink that cannot run leaves the table large, not the key.
                        self.maybe_shrink(t, entries, g);
                        Ok(true)
                    }
                    _ => Ok(true),
                });
            }
        }
        if !mode.insert {
            // Absent, as a validated read shows (the linearization point of a lookup);
            // a replaced table may be older than a write to the new one.
            if !self.still_current(t) {
                return Err(Fail::Restart);
            }
            let _ = make(None);
            return Ok(Ok(false));
        }
        let mut ls = LockSet::new(t);
        let leaf = self.plan_insert(t, &mut ls, key, syms, path, end, aux)?;
        Ok(match make(None) {
            Decision::Store(val) => {
                let rec = match self.records.alloc(key, &val) {
                    Ok(p) => p,
                    Err(e) => return Ok(Err(e)),
                };
                ls.update(leaf, |e| e.with_record(rec.as_ptr() as usize));
                let delta = ls.commit();
                self.counts.len.fetch_add(1, Ordering::Relaxed);
                self.add_entries(delta);
                Ok(false)
            }
            Decision::Keep | Decision::Remove => Ok(false),
        })
    }

    /// A read-only predecessor (`forward` false) or successor search for a writer.
    fn writer_seek(
        &self,
        t: &Table,
        bound: Bound<&[u8]>,
        forward: bool,
        path: &mut Vec<Step>,
    ) -> Result<Seek, Fail> {
        let leaf = self
            .seek_in(t, bound, forward, path)
            .map_err(|_| Fail::Restart)?;
        let root = path.first().ok_or(Fail::Restart)?.found;
        Ok(Seek { leaf, root })
    }

    /// The predecessor of `key` for a writer whose descent for `key` (`syms`) ended at
    /// `end` with `path`: continued from a copy of that path (in `aux`) instead of a
    /// second descent. Like [`Raw::writer_seek`], read-only and validated step by step.
    fn pred_on_path(
        t: &Table,
        key: &[u8],
        syms: &Symbols<'_>,
        path: &[Step],
        end: End,
        aux: &mut Vec<Step>,
    ) -> Result<Seek, Fail> {
        aux.clear();
        aux.extend_from_slice(path);
        let leaf =
            Self::seek_on_path(t, syms, key, false, false, end, aux).map_err(|_| Fail::Restart)?;
        let root = path.first().ok_or(Fail::Restart)?.found;
        Ok(Seek { leaf, root })
    }

    /// The searches an insert of the absent `key` needs for the leaf list: its predecessor
    /// (from the descent's `path`, which ended at `end`), and the first leaf when there is
    /// none.
    fn seek_neighbours(
        &self,
        t: &Table,
        key: &[u8],
        syms: &Symbols<'_>,
        path: &[Step],
        end: End,
        aux: &mut Vec<Step>,
    ) -> Result<(Seek, Option<Seek>), Fail> {
        let pred = Self::pred_on_path(t, key, syms, path, end, aux)?;
        let first = match pred.leaf {
            None => Some(self.writer_seek(t, Bound::Unbounded, true, aux)?),
            Some(_) => None,
        };
        Ok((pred, first))
    }

    /// Locks the list anchor before a new key (module docs) and returns the next-leaf
    /// locator the new leaf takes. `pred` is the predecessor search, `searched` the nodes
    /// it and the descent read (the descent's path, then the search's path ending at the
    /// predecessor); `first`, when there is no predecessor, the first-leaf search; `root`
    /// the descent's root.
    fn lock_anchor_for_insert(
        ls: &mut LockSet<'_>,
        pred: &Seek,
        searched: [&[Step]; 2],
        first: Option<&Seek>,
        root: &Found,
    ) -> Result<Option<Locator>, Fail> {
        if let Some(q) = pred.leaf {
            ls.lock_node(&q.found)?;
            // With `Q` locked, every node the searches read is checked unchanged: then,
            // at this moment, the trie holds the searched path as read, so `Q` is the
            // key's predecessor (a leaf between them would sit below a node whose bitmap
            // or subtree-max locator the searches read), and it stays so until the commit
            // (an insert between them or a removal of `Q` needs `Q`'s lock).
            if !searched
                .iter()
                .all(|p| p.iter().all(|s| ls.unchanged(&s.found)))
            {
                return Err(Fail::Restart);
            }
            return Ok(ls.entry(q.found.slot).next());
        }
        ls.lock_node(root)?;
        ls.lock_node(&pred.root)?;
        let first = first.ok_or(Fail::Restart)?;
        ls.lock_node(&first.root)?;
        Ok(first.leaf.map(|f| f.locator()))
    }

    /// Locks the list anchor of the existing leaf `leaf` (its predecessor, whose next
    /// locator must name it, or the root); returns the anchor's slot.
    fn lock_anchor_of(
        ls: &mut LockSet<'_>,
        leaf: Locator,
        pred: &Seek,
        root: &Found,
    ) -> Result<Option<Slot>, Fail> {
        match pred.leaf {
            Some(q) => {
                ls.lock_node(&q.found)?;
                if ls.entry(q.found.slot).next() != Some(leaf) {
                    return Err(Fail::Restart);
                }
                Ok(Some(q.found.slot))
            }
            None => {
                ls.lock_node(root)?;
                ls.lock_node(&pred.root)?;
                Ok(None)
            }
        }
    }
}
