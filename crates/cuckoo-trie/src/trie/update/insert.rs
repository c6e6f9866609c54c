//! Inserting a key (what it locks and why: module docs of `trie/update`): the plan of an insert under
//! the internal node missing the key's symbol, by splitting the leaf reached, or by
//! splitting the jump node where the key leaves it, and the placement of a new pair.

use super::super::{End, Raw, Step, Symbols, rec_ptr};
use super::{highest, lock_all, rightmost_from, room, set_max};
use crate::bucket::{Entry, JUMP_MAX, Kind, Locator};
use crate::lockset::{Fail, LockSet};
use crate::record;
use crate::table::{Slot, Table};

impl Raw {
    /// Phases 1–3 of an insert of the absent `key` below the end of `path` (§4.5): under
    /// the internal node missing the symbol, by splitting the leaf reached, or by
    /// splitting the jump node where the key leaves it. Returns the slot of the new leaf,
    /// whose record is set by the caller before the commit.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn plan_insert(
        &self,
        t: &Table,
        ls: &mut LockSet<'_>,
        key: &[u8],
        syms: &Symbols<'_>,
        path: &[Step],
        end: End,
        aux: &mut Vec<Step>,
    ) -> Result<Slot, Fail> {
        let last = path[path.len() - 1];
        let root = path[0].found;
        let e = last.found.entry;
        match end {
            End::Missing(c) => {
                let h = t.hash().child(last.hash, c);
                // The predecessor search starts at `P`'s child left of `c`, if any: its
                // buckets are fetched with the new leaf's, so the two misses overlap.
                let below = e.bitmap() & ((1u64 << c) - 1);
                if let Some(s) = highest(below) {
                    t.prefetch(t.hash().child(last.hash, s));
                }
                room(t, &[h], path)?;
                let (pred, first) = self.seek_neighbours(t, key, syms, path, end, aux)?;
                ls.lock_node(&last.found)?;
                let next = Self::lock_anchor_for_insert(
                    ls,
                    &pred,
                    [path, aux.as_slice()],
                    first.as_ref(),
                    &root,
                )?;
                // The new leaf is the maximum of `P` if `c` is above `P`'s children, and then
                // of every ancestor `P` is on the rightmost edge of (§4.5).
                let n_path = path.len();
                let top = if highest(e.bitmap()).is_none_or(|m| c > m) {
                    rightmost_from(path, n_path - 1)
                } else {
                    n_path
                };
                lock_all(ls, &path[top..])?;
                let (slot, n) =
                    ls.place(h, Entry::new(Kind::Leaf, c, e.color()).with_next(next))?;
                ls.update(last.found.slot, |x| x.with_bitmap(x.bitmap() | (1 << c)));
                let to = Locator {
                    hash: h,
                    color: n.color(),
                };
                set_max(ls, path[top..].iter().map(|s| s.found.slot), to);
                if let Some(q) = pred.leaf {
                    ls.update(q.found.slot, |x| x.with_next(Some(to)));
                }
                Ok(slot)
            }
            End::Leaf => self.plan_split_leaf(t, ls, syms, path, aux),
            End::JumpMismatch(k) => self.plan_split_jump(t, ls, key, syms, path, k, aux),
        }
    }

    /// Insert by splitting the leaf `A` reached (§4.5): a path-compressed chain over the
    /// common prefix (`A` itself becomes its first node), a bitmap node, two leaves.
    pub(super) fn plan_split_leaf(
        &self,
        t: &Table,
        ls: &mut LockSet<'_>,
        syms: &Symbols<'_>,
        path: &[Step],
        aux: &mut Vec<Step>,
    ) -> Result<Slot, Fail> {
        let last = path[path.len() - 1];
        let root = path[0].found;
        let d = last.depth;
        let e = last.found.entry;
        let other = e.record();
        // SAFETY: read validated under the caller's guard (see `try_upsert`).
        let (okey, _) = unsafe { record::read(rec_ptr(other)) };
        let osyms = Symbols::new(okey, self.config.symbol_bits);
        let mut j = d;
        while syms.at(j) == osyms.at(j) {
            j += 1;
        }
        // Hashes of the prefixes d..=j, and the chain's node positions (a node at p
        // stands for the first p symbols): jumps of up to JUMP_MAX symbols, the bitmap
        // node at j.
        let mut hp = Vec::with_capacity(j - d + 1);
        hp.push(last.hash);
        for q in d..j {
            hp.push(t.hash().child(hp[q - d], syms.at(q)));
        }
        let mut chain = Vec::new();
        if j > d {
            let mut p = d + (j - d).min(JUMP_MAX);
            loop {
                chain.push(p);
                if p == j {
                    break;
                }
                p += (j - p).min(JUMP_MAX);
            }
        }
        let hj = hp[j - d];
        let (mine, theirs) = (syms.at(j), osyms.at(j));
        let mut hashes: Vec<u64> = chain.iter().map(|&p| hp[p - d]).collect();
        hashes.push(t.hash().child(hj, mine));
        hashes.push(t.hash().child(hj, theirs));
        room(t, &hashes, path)?;
        let pred = Self::pred_on_path(t, okey, &osyms, path, End::Leaf, aux)?;
        ls.lock_node(&last.found)?;
        let anchor = Self::lock_anchor_of(ls, last.locator(), &pred, &root)?;
        // The ancestors whose maximum was `A` now name the higher of the two leaves.
        let n_path = path.len();
        let top = rightmost_from(path, n_path - 1);
        lock_all(ls, &path[top..n_path - 1])?;
        let two = (1u64 << mine) | (1u64 << theirs);
        let mut color = e.color();
        let mut chain_slots = Vec::with_capacity(chain.len());
        let mut pending: Option<Slot> = None;
        let mut first_child = None;
        for (i, &p) in chain.iter().enumerate() {
            let c = syms.at(p - 1);
            let proto = if p == j {
                Entry::new(Kind::Bitmap, c, color).with_bitmap(two)
            } else {
                let len = chain[i + 1] - p;
                let s: Vec<u8> = (p..p + len).map(|q| syms.at(q)).collect();
                Entry::new(Kind::Jump, c, color).with_jump(&s)
            };
            // Every node of the chain is the child of a jump node.
            let (slot, ne) = ls.place(hp[p - d], proto.with_jump_child(true))?;
            if let Some(s) = pending.take() {
                ls.update(s, |x| x.with_child_color(ne.color()));
            }
            first_child.get_or_insert(ne.color());
            color = ne.color();
            pending = Some(slot);
            chain_slots.push(slot);
        }
        let (lo, hi, new_leaf) =
            Self::place_pair(ls, hj, color, [(mine, 0), (theirs, other)], e.next())?;
        let new_leaf = new_leaf.ok_or(Fail::Restart)?;
        match first_child {
            Some(cc) => {
                let jump: Vec<u8> = (d..chain[0]).map(|q| syms.at(q)).collect();
                ls.update(last.found.slot, |x| {
                    x.converted(Kind::Jump)
                        .with_jump(&jump)
                        .with_child_color(cc)
                        .with_max(hi)
                });
            }
            None => ls.update(last.found.slot, |x| {
                x.converted(Kind::Bitmap).with_bitmap(two).with_max(hi)
            }),
        }
        set_max(ls, chain_slots, hi);
        set_max(ls, path[top..n_path - 1].iter().map(|s| s.found.slot), hi);
        if let Some(q) = anchor {
            ls.update(q, |x| x.with_next(Some(lo)));
        }
        Ok(new_leaf)
    }

    /// Insert at a jump node `J` the key leaves at offset `k` (§4.3/§4.5): [jump of `k`
    /// symbols] → bitmap node at the mismatch → {new leaf, [jump of the rest] → old child}.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn plan_split_jump(
        &self,
        t: &Table,
        ls: &mut LockSet<'_>,
        key: &[u8],
        syms: &Symbols<'_>,
        path: &[Step],
        k: usize,
        aux: &mut Vec<Step>,
    ) -> Result<Slot, Fail> {
        let last = path[path.len() - 1];
        let root = path[0].found;
        let d = last.depth;
        let e = last.found.entry;
        let len = e.jump_len();
        let js = e.jump_symbol(k);
        let ks = syms.at(d + k);
        let bits = (1u64 << js) | (1u64 << ks);
        let h_b = (0..k).fold(last.hash, |h, q| t.hash().child(h, e.jump_symbol(q)));
        let hl = t.hash().child(h_b, ks);
        let h_rest = t.hash().child(h_b, js);
        let mut hashes = vec![hl];
        if k > 0 {
            hashes.push(h_b);
        }
        if k + 1 < len {
            hashes.push(h_rest);
        }
        room(t, &hashes, path)?;
        let child_hash = Self::jump_child_hash(t, &last);
        let child = t
            .search_by_color(child_hash, e.jump_symbol(len - 1), e.child_color())
            .ok_or(Fail::Restart)?;
        let (pred, first) = self.seek_neighbours(t, key, syms, path, End::JumpMismatch(k), aux)?;
        ls.lock_node(&last.found)?;
        if k + 1 == len {
            ls.lock_node(&child)?;
        }
        let next =
            Self::lock_anchor_for_insert(ls, &pred, [path, aux.as_slice()], first.as_ref(), &root)?;
        // Subtree maxima: the old child's subtree keeps `J`'s (and its stale mark); if the
        // new key is above it, the new leaf is the maximum of the new bitmap node, of `J`
        // and of every ancestor `J` is on the rightmost edge of.
        let (old_max, old_stale) = (e.max(), e.dirty());
        let up = ks > js;
        let n_path = path.len();
        let top = if up {
            rightmost_from(path, n_path - 1)
        } else {
            n_path - 1
        };
        lock_all(ls, &path[top..n_path - 1])?;
        let b_slot = if k == 0 {
            None
        } else {
            let proto = Entry::new(Kind::Bitmap, e.jump_symbol(k - 1), e.color())
                .with_bitmap(bits)
                .with_jump_child(true);
            Some(ls.place(h_b, proto)?)
        };
        let b_color = b_slot.map_or(e.color(), |(_, b)| b.color());
        let (leaf_slot, n) = ls.place(hl, Entry::new(Kind::Leaf, ks, b_color).with_next(next))?;
        let to = Locator {
            hash: hl,
            color: n.color(),
        };
        let (b_max, b_stale) = if up {
            (to, false)
        } else {
            (old_max, old_stale)
        };
        if let Some((b, _)) = b_slot {
            ls.update(b, |x| x.with_max(b_max).with_dirty(b_stale));
        }
        set_max(ls, path[top..n_path - 1].iter().map(|s| s.found.slot), to);
        if k + 1 < len {
            let rest: Vec<u8> = (k + 1..len).map(|q| e.jump_symbol(q)).collect();
            let proto = Entry::new(Kind::Jump, js, b_color)
                .with_jump(&rest)
                .with_child_color(e.child_color())
                .with_max(old_max)
                .with_dirty(old_stale);
            ls.place(h_rest, proto)?;
        } else {
            // The old child hangs directly under the new bitmap node.
            ls.update(child.slot, |x| {
                x.with_parent_color(b_color).with_jump_child(false)
            });
        }
        if k == 0 {
            ls.update(last.found.slot, |x| {
                x.converted(Kind::Bitmap)
                    .with_bitmap(bits)
                    .with_max(b_max)
                    .with_dirty(b_stale)
            });
        } else {
            let head: Vec<u8> = (0..k).map(|q| e.jump_symbol(q)).collect();
            ls.update(last.found.slot, |x| {
                x.converted(Kind::Jump)
                    .with_jump(&head)
                    .with_child_color(b_color)
                    .with_max(b_max)
                    .with_dirty(b_stale)
            });
        }
        if let Some(q) = pred.leaf {
            ls.update(q.found.slot, |x| x.with_next(Some(to)));
        }
        Ok(leaf_slot)
    }

    /// Places the two leaves of a split below the node of hash `h` and colour `color`:
    /// `pair` holds (last symbol, record) of each, record 0 for the new key's leaf. The
    /// higher leaf takes over `next` (the split leaf's next-leaf locator), the lower one
    /// points at the higher one. Returns the lower and the higher leaf's locators and the
    /// new key's leaf.
    pub(super) fn place_pair(
        ls: &mut LockSet<'_>,
        h: u64,
        color: u8,
        mut pair: [(u8, usize); 2],
        next: Option<Locator>,
    ) -> Result<(Locator, Locator, Option<Slot>), Fail> {
        if pair[0].0 < pair[1].0 {
            pair.swap(0, 1);
        }
        let mut next = next;
        let mut mine = None;
        let mut lo = None;
        let mut hi = None;
        for (c, r) in pair {
            let hl = ls.table().hash().child(h, c);
            let e = Entry::new(Kind::Leaf, c, color)
                .with_record(r)
                .with_next(next);
            let (slot, e) = ls.place(hl, e)?;
            if r == 0 {
                mine = Some(slot);
            }
            let l = Locator {
                hash: hl,
                color: e.color(),
            };
            next = Some(l);
            lo = Some(l);
            hi.get_or_insert(l);
        }
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Err(Fail::Restart);
        };
        Ok((lo, hi, mine))
    }
}
