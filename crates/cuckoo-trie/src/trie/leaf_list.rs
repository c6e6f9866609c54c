//! The paper's leaf-list scan (§4.4 "Range iteration", Fig 3c): one successor search, then
//! the leaves' next-leaf locators, one dependent chain of reads per key. The trie walk of
//! `trie/scan.rs` replaced it for scans; it is kept (feature `bench-internals`, and the
//! tests) as the reference the walk is measured against, and because every writer still
//! keeps the list (`trie/update/`; the full walk of `trie/invariants.rs` checks it).

use std::ops::{Bound, ControlFlow};

use orrery_core::sync::{Backoff, Guard};

use super::{Raw, Restart, ScanEnd, Step, rec_ptr};
use crate::bucket::Kind;
use crate::record;
use crate::table::Table;

impl Raw {
    /// The paper's ascending scan, kept as the reference the trie walk is measured
    /// against (`CuckooTrie::scan_leaf_list`): visits, ascending from `start`, up to `max`
    /// pairs under `g` (§4.4 "Range iteration"): one successor search finds the first leaf, then the walk follows the
    /// leaves' next-leaf locators. A step is taken only if the leaf it leaves is unchanged
    /// (its bucket version) after the next leaf was read, and the next leaf is a clean
    /// (not dirty) leaf whose key is above the last one yielded; otherwise the walk
    /// resynchronises by a successor search from the root past the last key yielded.
    pub(crate) fn scan_batch_list<'g>(
        &self,
        start: Bound<&[u8]>,
        g: &'g Guard,
        max: usize,
        f: &mut dyn FnMut(&'g [u8], &'g [u8]) -> ControlFlow<()>,
    ) -> ScanEnd<'g> {
        let mut path = Vec::with_capacity(16);
        let backoff = Backoff::new();
        let Some((mut t, mut cur)) = self.seek_leaf(start, &mut path, g) else {
            return ScanEnd::Done;
        };
        Self::prefetch_next(t, &cur);
        let mut n = 0;
        let mut last: Option<&'g [u8]> = None;
        loop {
            // SAFETY: `cur` was read validated under `g`; records are retired through the
            // epoch collector only after they are unlinked, so it is live while `g` is held.
            let (k, v) = unsafe { record::read(rec_ptr(cur.found.entry.record())) };
            let step = if last.is_some_and(|l| k <= l) {
                // Not above the last key: a stale locator (never expected; see the
                // protocol), resynchronise.
                Err(Restart)
            } else {
                if f(k, v).is_break() {
                    return ScanEnd::Stopped;
                }
                n += 1;
                if n >= max {
                    return ScanEnd::More(k);
                }
                last = Some(k);
                Self::next_leaf(t, &cur, g)
            };
            match step {
                Ok(Some(next)) => cur = next,
                Ok(None) => return ScanEnd::Done,
                Err(Restart) => {
                    backoff.snooze();
                    let from = last.map_or(start, Bound::Excluded);
                    match self.seek_leaf(from, &mut path, g) {
                        Some((nt, next)) => (t, cur) = (nt, next),
                        None => return ScanEnd::Done,
                    }
                }
            }
        }
    }

    /// The first leaf after `bound` in the current table (validated, retried until the
    /// table did not change under the search), with that table.
    fn seek_leaf<'g>(
        &self,
        bound: Bound<&[u8]>,
        path: &mut Vec<Step>,
        g: &'g Guard,
    ) -> Option<(&'g Table, Step)> {
        let backoff = Backoff::new();
        loop {
            let t = self.table(g);
            match self.seek_in(t, bound, true, path) {
                Ok(r) if self.still_current(t) => return r.map(|s| (t, s)),
                _ => backoff.snooze(),
            }
        }
    }

    /// Prefetches what the step after leaf `cur` reads: its record and the buckets of the
    /// leaf its locator names. The leaf walk is a chain of dependent reads (locator →
    /// buckets → next locator); issuing the next leaf's bucket reads as soon as its
    /// locator is known overlaps them with the current record's read and the visitor.
    #[inline]
    fn prefetch_next(t: &Table, cur: &Step) {
        orrery_core::prefetch(cur.found.entry.record() as *const u8);
        if let Some(l) = cur.found.entry.next() {
            t.prefetch(l.hash);
        }
    }

    /// The leaf after `cur` by its next-leaf locator, or `None` if `cur` is the last leaf.
    /// [`Restart`] if `cur` changed since it was read, or the locator names no clean leaf
    /// (a stale locator, §5). The caller checks that its key is above `cur`'s.
    fn next_leaf(t: &Table, cur: &Step, _g: &Guard) -> Result<Option<Step>, Restart> {
        let next = cur.found.entry.next();
        let found = next.and_then(|l| t.find(l));
        if !t.bucket(cur.found.slot.bucket).unchanged(cur.found.version) {
            return Err(Restart);
        }
        let Some(l) = next else {
            return Ok(None);
        };
        let found = found.ok_or(Restart)?;
        if found.entry.kind() != Kind::Leaf || found.entry.dirty() {
            return Err(Restart);
        }
        let next = Step {
            found,
            hash: l.hash,
            depth: 0,
        };
        Self::prefetch_next(t, &next);
        Ok(Some(next))
    }
}
