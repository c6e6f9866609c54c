//! Range scans that keep many DRAM reads in flight: a depth-first walk of the trie whose
//! next nodes are named before they are read (beyond the paper's §4.4 leaf list).
//!
//! # Why not the leaf list
//!
//! The paper's scan (§4.4 "Range iteration") follows the leaves' next-leaf locators. Each
//! step is a chain of dependent reads — the leaf's bucket gives the next locator, whose
//! buckets give the next leaf, whose record gives the key — so a prefetch can run at most
//! one leaf ahead, and a scan costs about one DRAM round trip per key whatever it does (the
//! paper says as much in §6.4: its YCSB-E is its weakest workload, the latency being hidden
//! only when the application works between keys). The Cuckoo Trie's own idea (§4.1) gives
//! the way out: a node's name is all it takes to find its buckets, and a bitmap node names
//! *all* its children at once (the child of `x` by `s` is at `h(x·s)`). So a scan can know
//! the names of many nodes it will read next long before it reads them.
//!
//! # The walk
//!
//! One successor (ascending) or predecessor (descending) search finds the first leaf and
//! the path to it (a leaf a predecessor search reached by a subtree-max locator gets its
//! path completed first, `Raw::complete_path`). The nodes still to visit, in key order,
//! are then the children on the scan's side of each bitmap node of the path, deepest
//! first. They are kept on a stack of [`Pending`] entries whose top holds the next node in
//! key order; an entry is a *range* of children of one bitmap node (its bitmap bits still
//! to visit, their names computed only when needed: a search path crosses up to 32
//! siblings per level, and hashing them all up front made a one-key scan cost twice the
//! leaf list's) or the only child of a jump node. The walk takes the next node off the top
//! entry, reads it (`SEARCHBYPARENT`, or `SEARCHBYCOLOR` for a jump node's child), and
//!
//! - a bitmap node pushes the range of all its children, a jump node its only child;
//! - a leaf goes to a FIFO of leaves read, and its record is prefetched.
//!
//! The next [`WINDOW`] names on the stack are kept prefetched (the primary bucket of each:
//! most entries sit in their primary bucket, and a second line per name was a third more
//! traffic for the few that do not), and a leaf is yielded only once [`READY`] leaves
//! behind it have been read (or the stack is empty), so its record has had that long to
//! arrive. Both look-aheads start at zero and grow with the keys yielded (the window by
//! two per key), so a one-key scan reads nothing past its key and a long one keeps `W`
//! bucket reads and `R` record reads in flight instead of one chain. What the walk reads
//! that the leaf list does not: the internal nodes of the subtrees it crosses (amortized
//! over their leaves), and at most `W` names and `R` leaves past the last key the visitor
//! takes. The sizes are a compromise measured on a loaded machine
//! (`docs/results/cuckoo-trie.md`): larger look-aheads keep more reads in flight on a
//! quiet memory system but read further past the end of short scans.
//!
//! # Concurrency
//!
//! Every node is read as the paper's `FINDCHILD` reads a child: its buckets as validated
//! snapshots, and then its parent's bucket checked unchanged since the parent was read
//! (the parent's version is kept in the [`Pending`] name). A changed parent, a child the
//! parent announces but neither bucket shows (relocation in flight), an empty or dirty
//! node, or a key not beyond the last one yielded resynchronises the walk: a new successor
//! (predecessor) search past the last key yielded, and the stack rebuilt from its path.
//! So, as for the leaf list (`trie/mod.rs`, "Concurrency protocol"):
//!
//! - keys come strictly ascending (descending) — checked against the last key yielded;
//! - a key yielded was present when its leaf was read: its leaf was a child of its parent
//!   at that moment (parent unchanged after the read), and every update that removes a
//!   leaf rewrites its parent (clears the bit, or converts it in a collapse) in the same
//!   commit;
//! - a key present throughout the scan is not skipped: the children of a node are the ones
//!   its bitmap (or jump) named when it was read, and each child is read only while that
//!   node is still unchanged, so every node on the way to such a key is visited while it is
//!   on the way (an update that moves the key's leaf, a split or collapse, changes a node
//!   on its path before the walk can read past it, and the walk restarts).
//!
//! Growth (§5 "Resizing"): a walk reads one table, the one current when its search ran;
//! a frozen old table still holds what was present when it was frozen, so what a walk
//! reads there was present during the scan (the same argument as the leaf list's). A walk
//! holds no state across epoch guards: a batch ends with the last key yielded, and the
//! next batch starts with a new search past it.
//!
//! # Batches
//!
//! A scan of the index (`CuckooTrie::scan`, `scan_rev`) is a sequence of batches
//! ([`Raw::scan_resumable`]): each pins an epoch guard, runs one batch primitive (this walk
//! either way, or the leaf list's) for up to `SCAN_BATCH` pairs, and the next one resumes
//! past the last key visited. Iterators copy their own, smaller batches (`iter.rs`).

use std::collections::VecDeque;
use std::ops::{Bound, ControlFlow};

use orrery_core::api::ScanVisitor;
use orrery_core::sync::{Backoff, Guard};

use super::{Raw, Restart, ScanEnd, Step, rec_ptr};
use crate::bucket::Kind;
use crate::record;
use crate::table::Table;

/// Names ahead on the stack kept prefetched, at most (module docs).
pub(crate) const WINDOW: usize = 8;

/// Leaves read ahead of the one yielded (their records prefetched), at most.
pub(crate) const READY: usize = 4;

/// Whether both buckets of a name are prefetched, or only its primary one (`B1`, where
/// most entries are at the table's load); an entry in `B2` then costs one more round
/// trip when it is read.
const PREFETCH_BOTH: bool = false;

/// Prefetches the bucket(s) of hash `h` ([`PREFETCH_BOTH`]).
#[inline]
fn prefetch(t: &Table, h: u64) {
    if PREFETCH_BOTH {
        t.prefetch(h);
    } else {
        let (b1, _) = t.hash().buckets_of(h);
        orrery_core::prefetch(t.bucket(b1).addr());
    }
}

/// Nodes named by a parent but not read yet: either children of a bitmap node (the
/// symbols of `mask`, in the walk's order), or the only child of a jump node.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// The bucket the parent was read from, and that bucket's version then.
    parent_bucket: usize,
    parent_version: u64,
    /// Children: the parent's hash. Jump child: its own hash.
    hash: u64,
    /// The length of the child's name in symbols.
    depth: usize,
    /// Children: the parent's colour (`SEARCHBYPARENT`). Jump child: its own colour
    /// (`SEARCHBYCOLOR`).
    color: u8,
    /// Jump child: its last symbol.
    symbol: u8,
    /// Children: the symbols still to visit; 0 for a jump child.
    mask: u64,
    /// Children: the symbols whose buckets were prefetched. Jump child: 1 if prefetched.
    fetched: u64,
}

impl Pending {
    /// The children of bitmap node `parent` whose symbols are in `mask`.
    #[inline]
    fn children(parent: &Step, mask: u64) -> Pending {
        Pending {
            parent_bucket: parent.found.slot.bucket,
            parent_version: parent.found.version,
            hash: parent.hash,
            depth: parent.depth + 1,
            color: parent.found.entry.color(),
            symbol: 0,
            mask,
            fetched: 0,
        }
    }

    /// The only child of jump node `parent`.
    #[inline]
    fn jump_child(t: &Table, parent: &Step) -> Pending {
        let e = parent.found.entry;
        let len = e.jump_len();
        Pending {
            parent_bucket: parent.found.slot.bucket,
            parent_version: parent.found.version,
            hash: Raw::jump_child_hash(t, parent),
            depth: parent.depth + len,
            color: e.child_color(),
            symbol: e.jump_symbol(len - 1),
            mask: 0,
            fetched: 0,
        }
    }

    /// The next symbol of a children range in the walk's order.
    #[inline]
    fn next_symbol(mask: u64, forward: bool) -> u8 {
        if forward {
            mask.trailing_zeros() as u8
        } else {
            63 - mask.leading_zeros() as u8
        }
    }

    /// Takes the next node off this entry and reads it, validated as `FINDCHILD` validates
    /// a child (module docs). Returns the node and whether the entry is now used up.
    #[inline]
    fn take(&mut self, t: &Table, forward: bool) -> (Result<Step, Restart>, bool) {
        let (hash, found) = if self.mask == 0 {
            if self.fetched == 0 {
                prefetch(t, self.hash);
            }
            let found = t.search_by_color(self.hash, self.symbol, self.color);
            (self.hash, found)
        } else {
            let s = Self::next_symbol(self.mask, forward);
            self.mask &= !(1u64 << s);
            let h = t.hash().child(self.hash, s);
            if self.fetched & (1u64 << s) == 0 {
                prefetch(t, h);
            }
            (h, t.search_by_parent(h, s, self.color))
        };
        let done = self.mask == 0;
        if !t.bucket(self.parent_bucket).unchanged(self.parent_version) {
            return (Err(Restart), done);
        }
        let r = found.ok_or(Restart).map(|found| Step {
            found,
            hash,
            depth: self.depth,
        });
        (r, done)
    }

    /// Prefetches up to `budget` of the next names of this entry not prefetched yet;
    /// returns how many names it covered (prefetched now or before).
    #[inline]
    fn prefetch(&mut self, t: &Table, forward: bool, budget: usize) -> usize {
        if self.mask == 0 {
            if self.fetched == 0 {
                self.fetched = 1;
                prefetch(t, self.hash);
            }
            return 1;
        }
        // Names are prefetched in the walk's order, so the fetched ones are the first ones.
        let done = (self.mask & self.fetched).count_ones() as usize;
        let total = self.mask.count_ones() as usize;
        if done >= budget.min(total) {
            return budget.min(total);
        }
        let mut left = self.mask & !self.fetched;
        let mut n = done;
        while left != 0 && n < budget {
            let s = Self::next_symbol(left, forward);
            left &= !(1u64 << s);
            self.fetched |= 1u64 << s;
            prefetch(t, t.hash().child(self.hash, s));
            n += 1;
        }
        n
    }
}

/// The state of one walk (module docs): the names still to visit and the leaves read.
pub(crate) struct Walker {
    /// Names to visit; the top (last) entry holds the next in the walk's key order.
    stack: Vec<Pending>,
    /// Leaves read and not yet yielded (their records prefetched), in key order.
    ready: VecDeque<usize>,
    /// Ascending.
    forward: bool,
}

impl Walker {
    /// An empty walker for the given direction.
    pub(crate) fn new(forward: bool) -> Walker {
        Walker {
            stack: Vec::with_capacity(32),
            ready: VecDeque::with_capacity(READY + 1),
            forward,
        }
    }

    /// Restarts the walk from `path` (root to the first leaf, each node a child of the one
    /// before): queues the leaf and, for every bitmap node of the path, its children on the
    /// walk's side of the path, deepest on top.
    fn start(&mut self, path: &[Step]) {
        self.stack.clear();
        self.ready.clear();
        for w in path.windows(2) {
            let (node, below) = (&w[0], &w[1]);
            if node.found.entry.kind() != Kind::Bitmap {
                continue;
            }
            let c = below.found.entry.last_symbol();
            let bits = node.found.entry.bitmap();
            let side = if self.forward {
                bits & !((2u64 << c) - 1)
            } else {
                bits & ((1u64 << c) - 1)
            };
            if side != 0 {
                self.stack.push(Pending::children(node, side));
            }
        }
        if let Some(leaf) = path.last() {
            self.leaf(leaf);
        }
    }

    /// Queues leaf `leaf` for yielding and prefetches its record.
    #[inline]
    fn leaf(&mut self, leaf: &Step) {
        let rec = leaf.found.entry.record();
        orrery_core::prefetch(rec as *const u8);
        self.ready.push_back(rec);
    }

    /// Prefetches the next `window` names of the stack not prefetched yet, the nearest
    /// first.
    #[inline]
    fn prefetch_window(&mut self, t: &Table, window: usize) {
        let mut left = window;
        for p in self.stack.iter_mut().rev() {
            if left == 0 {
                break;
            }
            left -= p.prefetch(t, self.forward, left);
        }
    }

    /// Reads names off the stack until `ready` leaves are queued past the one to yield
    /// next, or the stack is empty, keeping `window` names prefetched.
    #[inline]
    fn fill(&mut self, t: &Table, ready: usize, window: usize) -> Result<(), Restart> {
        while self.ready.len() <= ready {
            let Some(top) = self.stack.last_mut() else {
                return Ok(());
            };
            let (node, done) = top.take(t, self.forward);
            if done {
                self.stack.pop();
            }
            let node = node?;
            let e = node.found.entry;
            match e.kind() {
                Kind::Leaf if !e.dirty() => self.leaf(&node),
                Kind::Bitmap if e.bitmap() != 0 => {
                    self.stack.push(Pending::children(&node, e.bitmap()));
                }
                Kind::Jump if e.jump_len() > 0 => {
                    self.stack.push(Pending::jump_child(t, &node));
                }
                _ => return Err(Restart),
            }
            self.prefetch_window(t, window);
        }
        Ok(())
    }
}

/// Pairs a resumable scan ([`Raw::scan_resumable`]) visits under one epoch guard before
/// it resumes by a new search past the last key visited. Large, so that a typical range
/// (YCSB-E: up to 100 keys) costs one search; bounded, so that a long scan does not hold
/// back memory reclamation.
const SCAN_BATCH: usize = 512;

impl Raw {
    /// Visits the pairs from `start` on in batches of [`SCAN_BATCH`], each under its own
    /// epoch guard, until the visitor breaks or the keys run out: `batch` (one of the batch
    /// primitives: [`Raw::scan_batch`], [`Raw::scan_batch_rev`], the leaf list's
    /// `scan_batch_list`) visits a batch from a bound, and the next batch starts past
    /// (ascending) or below (descending) the last key it visited.
    #[inline]
    pub(crate) fn scan_resumable<B>(
        &self,
        start: Bound<&[u8]>,
        visitor: &mut ScanVisitor<'_>,
        batch: B,
    ) where
        B: for<'g> Fn(
            &Raw,
            Bound<&[u8]>,
            &'g Guard,
            usize,
            &mut dyn FnMut(&'g [u8], &'g [u8]) -> ControlFlow<()>,
        ) -> ScanEnd<'g>,
    {
        let mut from: Bound<Vec<u8>> = start.map(<[u8]>::to_vec);
        loop {
            let g = orrery_core::sync::pin();
            let bound = from.as_ref().map(Vec::as_slice);
            match batch(self, bound, &g, SCAN_BATCH, &mut |k, v| visitor(k, v)) {
                ScanEnd::More(k) => from = Bound::Excluded(k.to_vec()),
                ScanEnd::Done | ScanEnd::Stopped => return,
            }
        }
    }

    /// Visits, ascending from `start`, up to `max` pairs under `g`: one successor search,
    /// then the prefetching depth-first trie walk of `trie/scan.rs` (many nodes' buckets
    /// and records in flight at once), every node validated as `FINDCHILD` validates a
    /// child; a failed validation, or a key not above the last one yielded, resynchronises
    /// by a successor search past the last key yielded.
    pub(crate) fn scan_batch<'g>(
        &self,
        start: Bound<&[u8]>,
        g: &'g Guard,
        max: usize,
        f: &mut dyn FnMut(&'g [u8], &'g [u8]) -> ControlFlow<()>,
    ) -> ScanEnd<'g> {
        self.scan_walk(start, true, g, max, f)
    }

    /// Visits, descending from below `end`, up to `max` pairs under `g`: one predecessor
    /// search (its leaf's path completed when a subtree-max locator reached it), then the
    /// walk of `trie/scan.rs` mirrored (largest child first). Leaves have no previous-leaf
    /// locator (the paper's list is singly linked), so this is also how descending scans
    /// avoid a search per key.
    pub(crate) fn scan_batch_rev<'g>(
        &self,
        end: Bound<&[u8]>,
        g: &'g Guard,
        max: usize,
        f: &mut dyn FnMut(&'g [u8], &'g [u8]) -> ControlFlow<()>,
    ) -> ScanEnd<'g> {
        self.scan_walk(end, false, g, max, f)
    }

    /// Visits up to `max` pairs from `bound` on, ascending (`forward`) or descending, under
    /// `g`, by the prefetching trie walk of this module.
    pub(crate) fn scan_walk<'g>(
        &self,
        bound: Bound<&[u8]>,
        forward: bool,
        g: &'g Guard,
        max: usize,
        f: &mut dyn FnMut(&'g [u8], &'g [u8]) -> ControlFlow<()>,
    ) -> ScanEnd<'g> {
        let mut path = Vec::with_capacity(16);
        let mut w = Walker::new(forward);
        let backoff = Backoff::new();
        let mut n = 0;
        let mut last: Option<&'g [u8]> = None;
        let mut t = match self.walk_start(bound, forward, &mut path, &mut w, g) {
            Some(t) => t,
            None => return ScanEnd::Done,
        };
        loop {
            // The look-ahead grows with the keys yielded, so that a short scan does not
            // read (much) past its end.
            let step = w.fill(t, READY.min(n), WINDOW.min(1 + 2 * n));
            if step.is_ok() {
                let Some(rec) = w.ready.pop_front() else {
                    return ScanEnd::Done;
                };
                // SAFETY: the leaf was read validated under `g`; records are retired
                // through the epoch collector only after they are unlinked, so it is live
                // while `g` is held.
                let (k, v) = unsafe { record::read(rec_ptr(rec)) };
                let in_order = last.is_none_or(|l| if forward { k > l } else { k < l });
                if in_order {
                    if f(k, v).is_break() {
                        return ScanEnd::Stopped;
                    }
                    n += 1;
                    if n >= max {
                        return ScanEnd::More(k);
                    }
                    last = Some(k);
                    continue;
                }
            }
            // Resynchronise past the last key yielded.
            backoff.snooze();
            let from = last.map_or(bound, Bound::Excluded);
            match self.walk_start(from, forward, &mut path, &mut w, g) {
                Some(nt) => t = nt,
                None => return ScanEnd::Done,
            }
        }
    }

    /// The search that starts (or resynchronises) a walk: the first leaf from `bound` in
    /// the current table, the walker started from its path. `None` when no key is left.
    fn walk_start<'g>(
        &self,
        bound: Bound<&[u8]>,
        forward: bool,
        path: &mut Vec<Step>,
        w: &mut Walker,
        g: &'g Guard,
    ) -> Option<&'g Table> {
        let backoff = Backoff::new();
        loop {
            let t = self.table(g);
            let r = self.seek_in(t, bound, forward, path).and_then(|r| match r {
                // A leaf reached by a subtree-max locator: the path down to it first.
                Some(leaf) if leaf.depth == 0 => {
                    // SAFETY: reached through validated reads under `g` (as in `lookup`).
                    let (k, _) = unsafe { record::read(rec_ptr(leaf.found.entry.record())) };
                    self.complete_path(t, path, k).map(|()| Some(leaf))
                }
                r => Ok(r),
            });
            match r {
                Ok(r) if self.still_current(t) => {
                    r?;
                    w.start(path);
                    return Some(t);
                }
                _ => backoff.snooze(),
            }
        }
    }
}
