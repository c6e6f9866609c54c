//! Removing a key (what it locks and why: module docs of `trie/update`): the plan of a removal (the
//! searches, locks and checks, with the tail collapse of §4.5) and its edits.

use std::ops::Bound;

use super::super::{End, Raw, Step, Symbols, rec_ptr};
use super::{highest, lock_all, rightmost_from, set_max};
use crate::bucket::{Kind, Locator};
use crate::lockset::{Fail, LockSet};
use crate::record;
use crate::table::{Slot, Table};

/// What a removal writes (planned before `make` decides).
pub(super) struct RemovePlan {
    pub(super) leaf: Step,
    pub(super) parent: Step,
    /// The list anchor's leaf (`None`: the root guards the head).
    pub(super) anchor: Option<Slot>,
    /// The tail collapse, if the parent becomes a single-leaf tail.
    pub(super) collapse: Option<Collapse>,
    /// Nodes whose subtree-max locator changes (locked), and the leaf it then names.
    pub(super) smax: Vec<Slot>,
    pub(super) smax_to: Option<Locator>,
}

/// A tail collapse (§4.5): `top` becomes a leaf holding the sibling's record; the nodes
/// below it on the path, the removed leaf and the sibling are cleared.
pub(super) struct Collapse {
    pub(super) top: Step,
    pub(super) cleared: Vec<Slot>,
    pub(super) sibling: Step,
    /// The next-leaf locator of the collapsed leaf.
    pub(super) next: Option<Locator>,
}

impl Raw {
    /// Phases 1–3 of removing the present leaf at the end of `path`, short of the edits
    /// ([`Raw::apply_remove`]): searches, locks and checks (module docs).
    pub(super) fn plan_remove(
        &self,
        t: &Table,
        ls: &mut LockSet<'_>,
        key: &[u8],
        path: &[Step],
        aux: &mut Vec<Step>,
    ) -> Result<RemovePlan, Fail> {
        let n = path.len();
        let leaf = path[n - 1];
        let parent = path[n - 2];
        let root = path[0].found;
        let c = leaf.found.entry.last_symbol();
        if parent.found.entry.kind() != Kind::Bitmap {
            return Err(Fail::Restart);
        }
        let syms = Symbols::new(key, self.config.symbol_bits);
        let pred = Self::pred_on_path(t, key, &syms, path, End::Leaf, aux)?;
        // A non-root parent left with a single leaf child is a tail: it collapses into
        // that leaf, and so does every ancestor left with that single child (§4.5).
        let bits = parent.found.entry.bitmap() & !(1u64 << c);
        let mut collapse = None;
        if n - 2 >= 1 && bits.count_ones() == 1 {
            let s = bits.trailing_zeros() as u8;
            let sibling = Self::child(t, &parent, s).map_err(|_| Fail::Restart)?;
            if sibling.found.entry.kind() == Kind::Leaf {
                let mut top = n - 2;
                while top > 1 {
                    let y = path[top - 1].found.entry;
                    let single = match y.kind() {
                        Kind::Jump => true,
                        Kind::Bitmap => y.bitmap().count_ones() == 1,
                        _ => false,
                    };
                    if !single {
                        break;
                    }
                    top -= 1;
                }
                collapse = Some((s, sibling, top));
            }
        }
        // When the surviving sibling `C` is below `A`, the collapsed leaf takes `C`'s place
        // in the list: `C`'s predecessor is searched too (before anything is locked: a
        // search would wait for the writer's own locks).
        let pred_c = match collapse {
            Some((s, sibling, _)) if s < c => {
                // SAFETY: read validated under the caller's guard.
                let (ck, _) = unsafe { record::read(rec_ptr(sibling.found.entry.record())) };
                Some(self.writer_seek(t, Bound::Excluded(ck), false, aux)?)
            }
            _ => None,
        };
        ls.lock_node(&leaf.found)?;
        ls.lock_node(&parent.found)?;
        let Some((s, sibling, top)) = collapse else {
            let anchor = Self::lock_anchor_of(ls, leaf.locator(), &pred, &root)?;
            // If `A` was the maximum of its parent (and so of the ancestors the parent is
            // on the rightmost edge of), their maximum is now `A`'s predecessor `Q`, which
            // lies below each of them whenever they keep a leaf (keys below a node are
            // contiguous in key order). A root left without children needs none.
            let (smax, smax_to) = if highest(parent.found.entry.bitmap()) == Some(c) && bits != 0 {
                let from = rightmost_from(path, n - 2);
                lock_all(ls, &path[from..n - 1])?;
                let q = pred.leaf.ok_or(Fail::Restart)?;
                let slots = path[from..n - 1].iter().map(|s| s.found.slot).collect();
                (slots, Some(q.locator()))
            } else {
                (Vec::new(), None)
            };
            return Ok(RemovePlan {
                leaf,
                parent,
                anchor,
                collapse: None,
                smax,
                smax_to,
            });
        };
        for node in &path[top..n - 1] {
            ls.lock_node(&node.found)?;
        }
        // The collapsed leaf at `top` holds the larger of `A` and `C`, the maximum of
        // `top`'s subtree: the ancestors `top` is on the rightmost edge of name it.
        let from = rightmost_from(path, top);
        lock_all(ls, &path[from..top])?;
        ls.lock_node(&sibling.found)?;
        let (anchor, next) = if s > c {
            // … Q → A → C → …: the collapsed leaf follows Q and takes C's next.
            if leaf.found.entry.next() != Some(sibling.locator()) {
                return Err(Fail::Restart);
            }
            let anchor = Self::lock_anchor_of(ls, leaf.locator(), &pred, &root)?;
            (anchor, sibling.found.entry.next())
        } else {
            // … P(C) → C → A → …: C is A's predecessor; the collapsed leaf follows C's
            // predecessor and takes A's next.
            if pred.leaf.map(|q| q.locator()) != Some(sibling.locator())
                || sibling.found.entry.next() != Some(leaf.locator())
            {
                return Err(Fail::Restart);
            }
            let pred_c = pred_c.as_ref().ok_or(Fail::Restart)?;
            let anchor = Self::lock_anchor_of(ls, sibling.locator(), pred_c, &root)?;
            (anchor, leaf.found.entry.next())
        };
        let mut cleared: Vec<Slot> = path[top + 1..n - 1].iter().map(|s| s.found.slot).collect();
        cleared.push(sibling.found.slot);
        Ok(RemovePlan {
            leaf,
            parent,
            anchor,
            smax: path[from..top].iter().map(|s| s.found.slot).collect(),
            smax_to: Some(path[top].locator()),
            collapse: Some(Collapse {
                top: path[top],
                cleared,
                sibling,
                next,
            }),
        })
    }

    /// The edits of a planned removal, into the locked lines.
    pub(super) fn apply_remove(ls: &mut LockSet<'_>, plan: &RemovePlan) {
        let leaf = plan.leaf;
        if let Some(to) = plan.smax_to {
            set_max(ls, plan.smax.iter().copied(), to);
        }
        match &plan.collapse {
            None => {
                let c = leaf.found.entry.last_symbol();
                ls.update(plan.parent.found.slot, |x| {
                    x.with_bitmap(x.bitmap() & !(1 << c))
                });
                if let Some(q) = plan.anchor {
                    ls.update(q, |x| x.with_next(leaf.found.entry.next()));
                }
            }
            Some(col) => {
                let r = col.sibling.found.entry.record();
                let next = col.next;
                ls.update(col.top.found.slot, |x| {
                    x.converted(Kind::Leaf).with_record(r).with_next(next)
                });
                for &s in &col.cleared {
                    ls.clear(s);
                }
                if let Some(q) = plan.anchor {
                    let to = col.top.locator();
                    ls.update(q, |x| x.with_next(Some(to)));
                }
            }
        }
        ls.clear(leaf.found.slot);
    }
}
