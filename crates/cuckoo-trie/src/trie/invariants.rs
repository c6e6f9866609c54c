//! The full-walk invariant checker of the trie (for tests and `CuckooTrie::check_invariants`):
//! every entry reached once from the root, child links, the jump-child flag, the tail rule,
//! key order, the leaf list, the subtree-max locators, the entry count; and the tests'
//! reference for subtree-max locators (`Raw::fill_subtree_max`).

use super::Raw;
use crate::bucket::{Kind, Locator};
use crate::record;
#[cfg(test)]
use crate::table::{Full, Table};

impl Raw {
    /// Walks the whole trie of the current table (no concurrent writer) and checks its
    /// invariants: every entry reached exactly once from the root, child links by parent
    /// and child colour, the jump-child flag, the tail rule, keys in order and each
    /// reachable by its own lookup, the leaf list through every leaf in key order, no
    /// dirty leaf, the count. Returns the number of keys.
    pub(crate) fn check_invariants(&self) -> Result<usize, String> {
        let g = orrery_core::sync::pin();
        let t = self.table(&g);
        let mut entries = 0usize;
        t.for_each(|_, _| entries += 1);
        let root = Self::root(t).map_err(|_| "no root".to_string())?;
        let mut stack = vec![(root, true)];
        let mut nodes = 0usize;
        let mut keys: Vec<&[u8]> = Vec::new();
        let mut leaves: Vec<Locator> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        while let Some((n, is_root)) = stack.pop() {
            nodes += 1;
            if !seen.insert(n.found.slot) {
                return Err(format!("node reached twice: {:?}", n.found.slot));
            }
            let e = n.found.entry;
            let mut kids = Vec::new();
            match e.kind() {
                Kind::Leaf => {
                    // SAFETY: reached through validated reads under `g`.
                    let (k, _) = unsafe { record::read(super::rec_ptr(e.record())) };
                    if e.dirty() {
                        return Err("dirty leaf".into());
                    }
                    keys.push(k);
                    leaves.push(n.locator());
                    continue;
                }
                Kind::Jump => {
                    let k = Self::jump_child(t, &n).map_err(|_| "jump child missing")?;
                    if !k.found.entry.is_jump_child() {
                        return Err("unflagged jump child".into());
                    }
                    kids.push(k);
                }
                Kind::Bitmap => {
                    let mut b = e.bitmap();
                    while b != 0 {
                        let s = b.trailing_zeros() as u8;
                        b &= b - 1;
                        let k = Self::child(t, &n, s).map_err(|_| format!("child {s} missing"))?;
                        if k.found.entry.is_jump_child() {
                            return Err("flagged bitmap child".into());
                        }
                        kids.push(k);
                    }
                }
                Kind::Empty => return Err("empty entry on a path".into()),
            }
            if !is_root
                && (kids.is_empty() || kids.len() == 1 && kids[0].found.entry.kind() == Kind::Leaf)
            {
                return Err("childless internal node or uncollapsed tail".into());
            }
            for k in kids.into_iter().rev() {
                stack.push((k, false));
            }
        }
        if nodes != entries {
            return Err(format!("{} entries, {} reachable", entries, nodes));
        }
        if self.entries() != entries {
            return Err(format!("{} entries, counted {}", entries, self.entries()));
        }
        if keys.windows(2).any(|w| w[0] >= w[1]) {
            return Err("keys out of order".into());
        }
        for (i, l) in leaves.iter().enumerate() {
            let f = t.find(*l).ok_or("leaf not found by its locator")?;
            if f.entry.next() != leaves.get(i + 1).copied() {
                return Err(format!("next-leaf locator of leaf {i} wrong"));
            }
        }
        for k in &keys {
            if self.lookup(k, &g).is_none() {
                return Err("key not found by lookup".into());
            }
        }
        if keys.len() != self.len() {
            return Err(format!("{} keys, len {}", keys.len(), self.len()));
        }
        Ok(keys.len())
    }

    /// Sets the subtree-max locator of every internal node of `t` to the largest leaf
    /// below it and clears its stale mark (the dirty flag of an internal node): for a
    /// table no writer and no reader uses. One depth-first walk, largest child first: the
    /// first leaf reached after entering a node is its subtree's maximum. The tests'
    /// reference for the locators the growth copy sets as it goes (`trie/grow/`).
    #[cfg(test)]
    pub(crate) fn fill_subtree_max(t: &Table) -> Result<(), Full> {
        let root = t.find(Locator { hash: 0, color: 0 }).ok_or(Full)?;
        // (hash, node) still to visit, the largest on top.
        let mut stack = vec![(0u64, root)];
        // Internal nodes entered since the last leaf.
        let mut open: Vec<Locator> = Vec::new();
        while let Some((h, f)) = stack.pop() {
            let e = f.entry;
            match e.kind() {
                Kind::Leaf => {
                    let to = Locator {
                        hash: h,
                        color: e.color(),
                    };
                    for l in open.drain(..) {
                        t.update_at(l, |x| x.with_max(to).with_dirty(false))?;
                    }
                }
                Kind::Bitmap => {
                    let mut bits = e.bitmap();
                    if bits == 0 {
                        // The root of an empty trie: no maximum.
                        t.update_at(Locator::default(), |x| x.with_dirty(false))?;
                        continue;
                    }
                    open.push(Locator {
                        hash: h,
                        color: e.color(),
                    });
                    while bits != 0 {
                        let s = bits.trailing_zeros() as u8;
                        bits &= bits - 1;
                        let hc = t.hash().child(h, s);
                        let child = t.search_by_parent(hc, s, e.color()).ok_or(Full)?;
                        stack.push((hc, child));
                    }
                }
                Kind::Jump => {
                    open.push(Locator {
                        hash: h,
                        color: e.color(),
                    });
                    let len = e.jump_len();
                    let hc = (0..len).fold(h, |h, q| t.hash().child(h, e.jump_symbol(q)));
                    let child = t
                        .search_by_color(hc, e.jump_symbol(len - 1), e.child_color())
                        .ok_or(Full)?;
                    stack.push((hc, child));
                }
                Kind::Empty => return Err(Full),
            }
        }
        Ok(())
    }
}
