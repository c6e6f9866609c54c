//! A list. Every element has a position (a `u64`): the first is at `head`, the others
//! follow; a push on the left takes `head - 1`, on the right `head + len`. A new list
//! starts at 2^63. Compact: the payload is `head` (8 bytes, big-endian) and a pack of the
//! elements. Large: packed nodes of elements in the store's positions table, their order
//! and counts in the collection's bookkeeping with `head` and `len` (`qlist`, as Redis's
//! quicklist: a push or pop changes one node, a range reads whole nodes).
//!
//! Positions make the log's records assignments, whatever the form: `LPUT key pos elem`
//! (the element at a position) and `LSPAN key head len` (the list's positions; elements
//! outside are dropped; length 0 deletes the key). A push logs an `LPUT` and an `LSPAN`, a
//! pop an `LSPAN`, `LSET` an `LPUT`; `LINSERT` and `LREM` log the elements they move.
//! So replaying an increment after any state a rewrite walked yields the same list
//! (`crate::aof::rewrite` has the argument), which a log of pushes and pops could not.
//!
//! `LINDEX`, `LSET` and the start of `LRANGE` are a walk of the node counts and one lookup
//! on a large list; `LINSERT` re-packs one node (and logs the positions of the elements
//! on the shorter side of the pivot, which moved); `LREM` re-packs the nodes it removes
//! from (and logs every element after the first removed, as Redis moves them, O(n)).

use std::ops::ControlFlow;
use std::sync::Arc;

use super::qlist::QList;
use super::{COMPACT_MAX_BYTES, Ending, Form, Result, Stored, check_values};
use crate::layout::Pack;
use crate::store::{Enc, Kind, Meta, Txn};

/// Which end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The head (`LPUSH`, `LPOP`).
    Left,
    /// The tail (`RPUSH`, `RPOP`).
    Right,
}

/// Where a new list's first element goes.
const START: u64 = 1 << 63;

enum Repr {
    /// The first position and the pack of elements.
    Compact(u64, Vec<u8>),
    Large(u64, Arc<Meta>),
}

/// A list opened on a key (see the [module docs](self)).
pub(crate) struct List<'k> {
    end: Ending<'k>,
    repr: Repr,
}

fn split_payload(p: &[u8]) -> (u64, &[u8]) {
    match p.split_first_chunk::<8>() {
        Some((h, rest)) => (u64::from_be_bytes(*h), rest),
        None => (START, &[][..]),
    }
}

impl<'k> List<'k> {
    /// The list at `key`: `Ok(None)` when absent.
    pub(crate) fn open(t: &Txn<'_>, key: &'k [u8]) -> Result<Option<List<'k>>> {
        let Some((end, e)) = Ending::open(t, key, Kind::List)? else {
            return Ok(None);
        };
        let repr = match e {
            Stored::Large(id, m) => Repr::Large(id, m),
            Stored::Compact(_, p) => {
                let (head, pack) = split_payload(&p);
                Repr::Compact(head, pack.to_vec())
            }
        };
        Ok(Some(List { end, repr }))
    }

    /// A new, empty list for `key` (absent), stored by [`List::finish`] once it has an
    /// element.
    pub(crate) fn create(t: &Txn<'_>, key: &'k [u8]) -> Result<List<'k>> {
        Ok(List {
            end: Ending::create(t, key, Kind::List)?,
            repr: Repr::Compact(START, Pack::encode(&[])),
        })
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        match &self.repr {
            Repr::Compact(_, p) => Pack::new(p).len(),
            Repr::Large(_, m) => m.len() as usize,
        }
    }

    fn head(&self) -> u64 {
        match &self.repr {
            Repr::Compact(h, _) => *h,
            Repr::Large(_, m) => m.head(),
        }
    }

    /// `OBJECT ENCODING`'s name for the current form (Redis 7.2's names).
    pub(crate) fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Compact(..) => "listpack",
            Repr::Large(..) => "quicklist",
        }
    }

    /// The element at index `i` (0-based from the head).
    pub(crate) fn get(&self, t: &Txn<'_>, i: usize) -> Option<Vec<u8>> {
        match &self.repr {
            Repr::Compact(_, p) => Pack::new(p).iter().nth(i).map(<[u8]>::to_vec),
            Repr::Large(id, m) => QList::new(t.positions(), *id, m).get(i),
        }
    }

    /// The elements at indexes `start..=stop` (clamped to the list), copied out (see
    /// [`List::range_with`]).
    pub(crate) fn range(&self, t: &Txn<'_>, start: usize, stop: usize) -> Vec<Vec<u8>> {
        let n = stop.saturating_sub(start).saturating_add(1);
        let mut out = Vec::with_capacity(n.min(self.len()));
        self.range_with(t, start, stop, &mut |e| out.push(e.to_vec()));
        out
    }

    /// Visits the elements from `start` to `stop` (inclusive, clamped to the list), in
    /// order, each in place (`f` must not touch the list).
    pub(crate) fn range_with(
        &self,
        t: &Txn<'_>,
        start: usize,
        stop: usize,
        f: &mut dyn FnMut(&[u8]),
    ) {
        if start > stop || start >= self.len() {
            return;
        }
        let stop = stop.min(self.len() - 1);
        match &self.repr {
            Repr::Compact(_, p) => Pack::new(p)
                .iter()
                .skip(start)
                .take(stop + 1 - start)
                .for_each(f),
            Repr::Large(id, m) => {
                QList::new(t.positions(), *id, m).range_with(start, stop + 1 - start, f)
            }
        }
    }

    /// Visits the elements from the head (or, with `rev`, from the tail) with their
    /// indexes, until `f` breaks.
    pub(crate) fn for_each(
        &self,
        t: &Txn<'_>,
        rev: bool,
        f: &mut dyn FnMut(usize, &[u8]) -> ControlFlow<()>,
    ) {
        match &self.repr {
            Repr::Compact(_, p) => {
                let items = Pack::new(p).to_vec();
                let n = items.len();
                for j in 0..n {
                    let i = if rev { n - 1 - j } else { j };
                    if f(i, items[i]).is_break() {
                        return;
                    }
                }
            }
            Repr::Large(id, m) => QList::new(t.positions(), *id, m).visit(rev, f),
        }
    }

    /// Logs the list's span.
    fn log_span(&self, t: &Txn<'_>) {
        t.record(&[
            b"LSPAN",
            self.end.key,
            &self.head().to_be_bytes(),
            &(self.len() as u64).to_be_bytes(),
        ]);
    }

    /// Replaces the compact form by `pack` at `head`, moving the list to the element index
    /// when it outgrew the thresholds.
    fn put_compact(&mut self, t: &Txn<'_>, head: u64, pack: Vec<u8>) -> Result<()> {
        let n = Pack::new(&pack).len();
        let fits = t.thresholds().list_fits(n, pack.len()) && pack.len() <= COMPACT_MAX_BYTES;
        self.end.dirty = true;
        self.repr = Repr::Compact(head, pack);
        if fits { Ok(()) } else { self.force_large(t) }
    }

    /// Pushes `elem` at `end` (logged).
    pub(crate) fn push(&mut self, t: &Txn<'_>, end: End, elem: &[u8]) -> Result<()> {
        check_values([elem])?;
        let (head, len) = (self.head(), self.len() as u64);
        let pos = match end {
            End::Left => head.wrapping_sub(1),
            End::Right => head.wrapping_add(len),
        };
        let new_head = if end == End::Left { pos } else { head };
        match &self.repr {
            Repr::Compact(_, p) => {
                let mut items = Pack::new(p).to_vec();
                match end {
                    End::Left => items.insert(0, elem),
                    End::Right => items.push(elem),
                }
                let pack = Pack::encode(&items);
                self.put_compact(t, new_head, pack)?;
            }
            Repr::Large(id, m) => QList::new(t.positions(), *id, m).push(end, elem)?,
        }
        t.record(&[b"LPUT", self.end.key, &pos.to_be_bytes(), elem]);
        self.log_span(t);
        Ok(())
    }

    /// Pops the element at `end` (logged).
    pub(crate) fn pop(&mut self, t: &Txn<'_>, end: End) -> Option<Vec<u8>> {
        if self.len() == 0 {
            return None;
        }
        let out = match &mut self.repr {
            Repr::Compact(h, p) => {
                let mut items = Pack::new(p).to_vec();
                let e = match end {
                    End::Left => {
                        *h = h.wrapping_add(1);
                        items.remove(0).to_vec()
                    }
                    End::Right => items.pop().map(<[u8]>::to_vec).unwrap_or_default(),
                };
                let new = Pack::encode(&items);
                *p = new;
                self.end.dirty = true;
                e
            }
            Repr::Large(id, m) => QList::new(t.positions(), *id, m).pop(end)?,
        };
        self.log_span(t);
        Some(out)
    }

    /// Replaces the element at index `i` (which must exist; logged).
    pub(crate) fn set(&mut self, t: &Txn<'_>, i: usize, elem: &[u8]) -> Result<()> {
        check_values([elem])?;
        let pos = self.head().wrapping_add(i as u64);
        match &self.repr {
            Repr::Compact(h, p) => {
                let head = *h;
                let mut items = Pack::new(p).to_vec();
                items[i] = elem;
                let pack = Pack::encode(&items);
                self.put_compact(t, head, pack)?;
            }
            Repr::Large(id, m) => QList::new(t.positions(), *id, m).set(i, elem)?,
        }
        t.record(&[b"LPUT", self.end.key, &pos.to_be_bytes(), elem]);
        Ok(())
    }

    /// Puts the whole list `items` at `head`, logging the positions of indexes `changed`
    /// and the span: the rewrite that `LINSERT` and `LREM` make of a compact list.
    fn rewrite_compact(
        &mut self,
        t: &Txn<'_>,
        head: u64,
        items: &[&[u8]],
        changed: std::ops::Range<usize>,
    ) -> Result<()> {
        for i in changed {
            let pos = head.wrapping_add(i as u64).to_be_bytes();
            t.record(&[b"LPUT", self.end.key, &pos, items[i]]);
        }
        let pack = Pack::encode(items);
        self.put_compact(t, head, pack)?;
        self.log_span(t);
        Ok(())
    }

    /// Inserts `elem` before or after the first `pivot` (logged); `false` when there is no
    /// such element.
    pub(crate) fn insert(
        &mut self,
        t: &Txn<'_>,
        pivot: &[u8],
        after: bool,
        elem: &[u8],
    ) -> Result<bool> {
        check_values([elem])?;
        let mut at = None;
        self.for_each(t, false, &mut |i, v| {
            if v == pivot {
                at = Some(i);
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        let Some(p) = at else {
            return Ok(false);
        };
        // The new element's index.
        let idx = if after { p + 1 } else { p };
        let (head, len) = (self.head(), self.len());
        if let Repr::Compact(_, pk) = &self.repr {
            let pack = pk.clone();
            let mut items = Pack::new(&pack).to_vec();
            items.insert(idx, elem);
            // Shift the shorter side: the elements before `idx` one position left, or
            // those from `idx` on one position right.
            let (new_head, changed) = if idx < len - idx {
                (head.wrapping_sub(1), 0..idx + 1)
            } else {
                (head, idx..len + 1)
            };
            self.rewrite_compact(t, new_head, &items, changed)?;
            return Ok(true);
        }
        let Repr::Large(id, m) = &self.repr else {
            unreachable!("handled above")
        };
        let q = QList::new(t.positions(), *id, m);
        // Shift the shorter side (as the compact form): the elements that moved take
        // new positions, which the log names.
        let left = idx < len - idx;
        let moved = if left {
            q.range(0, idx)
        } else {
            q.range(idx, len - idx)
        };
        q.insert_at(idx, elem, left)?;
        let first = if left {
            head.wrapping_sub(1)
        } else {
            head.wrapping_add(idx as u64 + 1)
        };
        for (j, v) in moved.iter().enumerate() {
            let pos = first.wrapping_add(j as u64).to_be_bytes();
            t.record(&[b"LPUT", self.end.key, &pos, v]);
        }
        let pos = head.wrapping_add(idx as u64);
        let pos = if left { pos.wrapping_sub(1) } else { pos };
        t.record(&[b"LPUT", self.end.key, &pos.to_be_bytes(), elem]);
        self.log_span(t);
        Ok(true)
    }

    /// Removes up to `count` elements equal to `elem` (`count` > 0 from the head, < 0 from
    /// the tail, 0 all; logged); how many were removed.
    pub(crate) fn remove(&mut self, t: &Txn<'_>, count: i64, elem: &[u8]) -> Result<usize> {
        let limit = if count == 0 {
            usize::MAX
        } else {
            count.unsigned_abs() as usize
        };
        let rev = count < 0;
        let (head, len) = (self.head(), self.len());
        if let Repr::Compact(_, pk) = &self.repr {
            let pack = pk.clone();
            let items = Pack::new(&pack).to_vec();
            let mut keep = vec![true; len];
            let mut removed = 0;
            for j in 0..len {
                let i = if rev { len - 1 - j } else { j };
                if removed < limit && items[i] == elem {
                    keep[i] = false;
                    removed += 1;
                }
            }
            if removed == 0 {
                return Ok(0);
            }
            let survivors: Vec<&[u8]> = (0..len).filter(|&i| keep[i]).map(|i| items[i]).collect();
            // Forward: the survivors keep the head and close the gaps towards it; from the
            // tail: they keep the tail.
            let first_gap = keep.iter().position(|k| !k).unwrap_or(len);
            let last_gap = keep.iter().rposition(|k| !k).unwrap_or(0);
            let n = survivors.len();
            let (new_head, changed) = if rev {
                let new_head = head.wrapping_add(removed as u64);
                (new_head, 0..(last_gap + 1).saturating_sub(removed).min(n))
            } else {
                (head, first_gap.min(n)..n)
            };
            self.rewrite_compact(t, new_head, &survivors, changed)?;
            return Ok(removed);
        }
        let Repr::Large(id, m) = &self.repr else {
            unreachable!("handled above")
        };
        let q = QList::new(t.positions(), *id, m);
        let mut gone = Vec::new();
        q.visit(rev, &mut |i, v| {
            if v == elem {
                gone.push(i);
            }
            if gone.len() >= limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        let removed = gone.len();
        if removed == 0 {
            return Ok(0);
        }
        gone.sort_unstable();
        // Forward, the survivors keep the head and close the gaps towards it; from the
        // tail, they keep the tail. Those that moved are logged at their new positions.
        let new_head = if rev {
            head.wrapping_add(removed as u64)
        } else {
            head
        };
        q.remove_at(&gone, new_head)?;
        if t.logging() {
            let n = len - removed;
            let moved = if rev {
                let last_gap = gone[removed - 1];
                0..(last_gap + 1).saturating_sub(removed).min(n)
            } else {
                gone[0].min(n)..n
            };
            let items = q.range(moved.start, moved.len());
            for (j, v) in items.iter().enumerate() {
                let pos = new_head.wrapping_add((moved.start + j) as u64);
                t.record(&[b"LPUT", self.end.key, &pos.to_be_bytes(), v]);
            }
        }
        self.log_span(t);
        Ok(removed)
    }

    /// Keeps only indexes `start..=stop` (`start > stop`: none; logged).
    pub(crate) fn trim(&mut self, t: &Txn<'_>, start: usize, stop: usize) -> Result<()> {
        let len = self.len();
        let (start, keep) = if start > stop || start >= len {
            (0, 0)
        } else {
            (start, stop.min(len - 1) + 1 - start)
        };
        if start == 0 && keep == len {
            return Ok(());
        }
        let new_head = self.head().wrapping_add(start as u64);
        match &mut self.repr {
            Repr::Compact(h, p) => {
                let items: Vec<&[u8]> = Pack::new(p).iter().skip(start).take(keep).collect();
                let new = Pack::encode(&items);
                *h = new_head;
                *p = new;
                self.end.dirty = true;
            }
            Repr::Large(id, m) => QList::new(t.positions(), *id, m).trim(start, keep)?,
        }
        self.log_span(t);
        Ok(())
    }

    /// Replay of `LPUT key pos elem` (see the module docs).
    pub(crate) fn replay_put(&mut self, t: &Txn<'_>, pos: u64, elem: &[u8]) -> Result<()> {
        let (head, len) = (self.head(), self.len() as u64);
        if let Repr::Compact(_, p) = &self.repr {
            let pack = p.clone();
            let mut items = Pack::new(&pack).to_vec();
            let i = pos.wrapping_sub(head);
            let new_head = if len == 0 || pos == head.wrapping_sub(1) {
                pos
            } else {
                head
            };
            if len == 0 {
                items.push(elem);
            } else if i < len {
                items[i as usize] = elem;
            } else if i == len {
                items.push(elem);
            } else if pos == head.wrapping_sub(1) {
                items.insert(0, elem);
            } else {
                self.force_large(t)?;
                return self.replay_put(t, pos, elem);
            }
            let new = Pack::encode(&items);
            return self.put_compact(t, new_head, new);
        }
        let Repr::Large(id, m) = &self.repr else {
            unreachable!("handled above")
        };
        let q = QList::new(t.positions(), *id, m);
        let i = pos.wrapping_sub(head);
        let before = head.wrapping_sub(pos);
        if len == 0 {
            q.extend(pos, &[elem])
        } else if i < len {
            q.set(i as usize, elem)
        } else if i - len <= MAX_GAP {
            q.pad(End::Right, i - len)?;
            q.push(End::Right, elem)
        } else if before <= MAX_GAP {
            q.pad(End::Left, before - 1)?;
            q.push(End::Left, elem)
        } else {
            Ok(())
        }
    }

    /// Replay of `LSPAN key head len` (see the module docs).
    pub(crate) fn replay_span(&mut self, t: &Txn<'_>, head: u64, len: u64) -> Result<()> {
        let (h0, n0) = (self.head(), self.len() as u64);
        if let Repr::Compact(_, p) = &self.repr {
            let inside = head >= h0 && head.wrapping_add(len) <= h0.wrapping_add(n0);
            if inside || len == 0 {
                let skip = head.wrapping_sub(h0) as usize;
                let items: Vec<&[u8]> = Pack::new(p).iter().skip(skip).take(len as usize).collect();
                let new = Pack::encode(&items);
                self.repr = Repr::Compact(if len == 0 { h0 } else { head }, new);
                self.end.dirty = true;
                return Ok(());
            }
            self.force_large(t)?;
        }
        let Repr::Large(id, m) = &self.repr else {
            unreachable!("handled above")
        };
        let q = QList::new(t.positions(), *id, m);
        if len == 0 {
            return q.trim(0, 0);
        }
        // Positions the span names beyond the elements (which only damage or a cut
        // file gives) read as empty elements, up to MAX_GAP of them.
        let before = m.head().wrapping_sub(head);
        if before > 0 && before <= MAX_GAP {
            q.pad(End::Left, before)?;
        }
        let start = head.wrapping_sub(m.head());
        let end = start.saturating_add(len);
        if start > MAX_GAP.saturating_add(m.len()) {
            return q.trim(0, 0);
        }
        if end > m.len() && end - m.len() <= MAX_GAP {
            q.pad(End::Right, end - m.len())?;
        }
        let n = m.len();
        q.trim(start.min(n) as usize, len.min(n - start.min(n)) as usize)
    }

    /// Moves the collection to the shared indexes now, whatever its size (`COPY` of a
    /// large one: Redis's copy keeps the encoding).
    pub(crate) fn make_large(&mut self, t: &Txn<'_>) -> Result<()> {
        self.force_large(t)
    }

    /// Moves a compact list to packed nodes regardless of the thresholds.
    fn force_large(&mut self, t: &Txn<'_>) -> Result<()> {
        let Repr::Compact(head, p) = &self.repr else {
            return Ok(());
        };
        let (id, meta) = t.create_large(true);
        let items = Pack::new(p).to_vec();
        if let Err(err) = QList::new(t.positions(), id, &meta).extend(*head, &items) {
            t.drop_large(id);
            return Err(err);
        }
        self.repr = Repr::Large(id, meta);
        self.end.dirty = true;
        Ok(())
    }

    /// Writes the list back to its key (or deletes the key when the list is empty).
    pub(crate) fn finish(self, t: &Txn<'_>) -> Result<()> {
        let len = self.len();
        let form = match self.repr {
            Repr::Compact(head, p) => {
                let mut payload = Vec::with_capacity(8 + p.len());
                payload.extend_from_slice(&head.to_be_bytes());
                payload.extend_from_slice(&p);
                Form::Compact(Enc::Compact, payload)
            }
            Repr::Large(id, _) => Form::Large(id),
        };
        self.end.finish(t, len, form)
    }
}

/// Most empty elements a replayed record that names a position beyond the list's ends
/// adds (only damage gives one; a record further out is ignored).
const MAX_GAP: u64 = 1 << 20;
