//! Successor and predecessor search (§4.4): the first leaf after or before a bound
//! (`Raw::seek_in`), the climb from a leaf to its neighbour, the last leaf of a subtree by
//! its subtree-max locator (`Raw::max_leaf`) with the path completed below it
//! (`Raw::complete_path`), and `first`/`last` (`Raw::seek`, `Raw::extreme`). Every step is
//! validated as `FINDCHILD` validates a child; a failed validation is a [`Restart`].

use std::ops::Bound;

use orrery_core::sync::{Backoff, Guard};

use super::{End, Raw, Restart, Step, Symbols, rec_ptr};
use crate::bucket::Kind;
use crate::record;
use crate::table::Table;

impl Raw {
    /// The first record after (`forward`) or before `bound`, read under `g`.
    pub(crate) fn seek<'g>(
        &self,
        bound: Bound<&[u8]>,
        forward: bool,
        g: &'g Guard,
    ) -> Option<(&'g [u8], &'g [u8])> {
        let mut path = Vec::with_capacity(16);
        let backoff = Backoff::new();
        loop {
            let t = self.table(g);
            match self.seek_in(t, bound, forward, &mut path) {
                Ok(r) if self.still_current(t) => {
                    // SAFETY: reached through validated reads under `g` (as in `lookup`).
                    return r.map(|s| unsafe { record::read(rec_ptr(s.found.entry.record())) });
                }
                _ => backoff.snooze(),
            }
        }
    }

    /// The leaf of the first key after (`forward`) or before `bound` in `t`: a successor
    /// (predecessor) search, each step validated. `path` ends with the nodes from the root
    /// to that leaf, so that [`Raw::climb`] can go on from it.
    pub(super) fn seek_in(
        &self,
        t: &Table,
        bound: Bound<&[u8]>,
        forward: bool,
        path: &mut Vec<Step>,
    ) -> Result<Option<Step>, Restart> {
        let (key, inclusive) = match bound {
            Bound::Unbounded => {
                path.clear();
                let root = Self::root(t)?;
                return Self::last_leaf(t, path, root, forward);
            }
            Bound::Included(k) => (k, true),
            Bound::Excluded(k) => (k, false),
        };
        let syms = Symbols::new(key, self.config.symbol_bits);
        let end = self.descend(t, &syms, path)?;
        Self::seek_on_path(t, &syms, key, inclusive, forward, end, path)
    }

    /// [`Raw::seek_in`] for a bound `key` (`inclusive` or not) after its descent: `path`
    /// is the descent's path (validated), `end` how it ended. A writer that descended for
    /// its own key continues from a copy of its path instead of descending again.
    pub(crate) fn seek_on_path(
        t: &Table,
        syms: &Symbols<'_>,
        key: &[u8],
        inclusive: bool,
        forward: bool,
        end: End,
        path: &mut Vec<Step>,
    ) -> Result<Option<Step>, Restart> {
        let (level, taken) = match end {
            End::Leaf => {
                let leaf = path[path.len() - 1];
                let p = rec_ptr(leaf.found.entry.record());
                // SAFETY: reached through validated reads; the caller holds a guard.
                let (k, _) = unsafe { record::read(p) };
                let ok = match k.cmp(key) {
                    std::cmp::Ordering::Equal => inclusive,
                    std::cmp::Ordering::Greater => forward,
                    std::cmp::Ordering::Less => !forward,
                };
                if ok {
                    return Ok(Some(leaf));
                }
                (path.len() - 1, leaf.found.entry.last_symbol())
            }
            End::Missing(c) => (path.len(), c),
            End::JumpMismatch(k) => {
                let jump = path[path.len() - 1];
                let ks = syms.at(jump.depth + k);
                let js = jump.found.entry.jump_symbol(k);
                if (ks < js) == forward {
                    // The whole subtree below the jump lies on the wanted side.
                    let child = Self::jump_child(t, &jump)?;
                    return Self::last_leaf(t, path, child, forward);
                }
                (path.len() - 1, jump.found.entry.last_symbol())
            }
        };
        Self::climb(t, path, level, taken, forward)
    }

    /// From the node `path[level - 1]`, whose child by `taken` is done, up: the first
    /// sibling on the wanted side of an ancestor, then its extreme leaf.
    pub(super) fn climb(
        t: &Table,
        path: &mut Vec<Step>,
        mut level: usize,
        mut taken: u8,
        forward: bool,
    ) -> Result<Option<Step>, Restart> {
        while level > 0 {
            let node = path[level - 1];
            if node.found.entry.kind() != Kind::Bitmap {
                // A jump node has no sibling of its only child.
                taken = node.found.entry.last_symbol();
                level -= 1;
                continue;
            }
            let bits = node.found.entry.bitmap();
            let side = if forward {
                bits & !((2u64 << taken) - 1)
            } else {
                bits & ((1u64 << taken) - 1)
            };
            if side != 0 {
                let s = if forward {
                    side.trailing_zeros()
                } else {
                    63 - side.leading_zeros()
                } as u8;
                let child = Self::child(t, &node, s)?;
                path.truncate(level);
                return Self::last_leaf(t, path, child, forward);
            }
            taken = node.found.entry.last_symbol();
            level -= 1;
        }
        Ok(None)
    }

    /// The smallest (`forward`) or largest leaf under `node`: [`Raw::extreme`] forward,
    /// [`Raw::max_leaf`] backward.
    #[inline]
    pub(super) fn last_leaf(
        t: &Table,
        path: &mut Vec<Step>,
        node: Step,
        forward: bool,
    ) -> Result<Option<Step>, Restart> {
        if forward {
            Self::extreme(t, path, node, true)
        } else {
            Self::max_leaf(t, path, node)
        }
    }

    /// The largest leaf under `node` by its subtree-max locator (§4.4, Fig 5): two bucket
    /// reads instead of one validated bucket pair per level of the rightmost edge. The
    /// locator is read from `node`'s validated entry, the leaf it names is read, then
    /// `node`'s bucket is checked unchanged: so the locator was `node`'s current one when
    /// the leaf was read, and every update that makes another leaf the maximum of `node`'s
    /// subtree rewrites (hence locks) `node` (`trie/update/`). A node whose locator is
    /// marked stale (its dirty flag: a copy by growth not yet recomputed) is passed by one
    /// rightmost step instead. Pushes `node` (and the nodes of such steps) and then the
    /// leaf onto `path`; a leaf reached by a locator has depth 0 and the node before it on
    /// `path` is the one whose locator named it ([`Raw::complete_path`] fills the gap).
    pub(super) fn max_leaf(
        t: &Table,
        path: &mut Vec<Step>,
        mut node: Step,
    ) -> Result<Option<Step>, Restart> {
        loop {
            let e = node.found.entry;
            match e.kind() {
                Kind::Leaf => {
                    path.push(node);
                    return Ok(Some(node));
                }
                Kind::Empty => return Err(Restart),
                Kind::Bitmap if e.bitmap() == 0 => {
                    // Only the root of an empty trie has no child.
                    path.push(node);
                    return Ok(None);
                }
                Kind::Bitmap if e.dirty() => {
                    path.push(node);
                    let s = 63 - e.bitmap().leading_zeros() as u8;
                    node = Self::child(t, &node, s)?;
                }
                Kind::Jump if e.dirty() => {
                    path.push(node);
                    node = Self::jump_child(t, &node)?;
                }
                Kind::Bitmap | Kind::Jump => {
                    let l = e.max();
                    let found = t.find(l);
                    if !t
                        .bucket(node.found.slot.bucket)
                        .unchanged(node.found.version)
                    {
                        return Err(Restart);
                    }
                    let found = found.ok_or(Restart)?;
                    if found.entry.kind() != Kind::Leaf || found.entry.dirty() {
                        return Err(Restart);
                    }
                    path.push(node);
                    let leaf = Step {
                        found,
                        hash: l.hash,
                        depth: 0,
                    };
                    path.push(leaf);
                    return Ok(Some(leaf));
                }
            }
        }
    }

    /// Replaces the last two steps of `path` — a node and the leaf of key `key` its
    /// subtree-max locator named ([`Raw::max_leaf`]) — by the nodes from that node down to
    /// the leaf, by a prefetched walk of `key`'s symbols (Algorithm 1): what a reverse walk
    /// needs to climb on from the leaf. [`Restart`] if the walk does not end at that leaf.
    pub(super) fn complete_path(
        &self,
        t: &Table,
        path: &mut Vec<Step>,
        key: &[u8],
    ) -> Result<(), Restart> {
        let leaf = path.pop().ok_or(Restart)?;
        let node = path.pop().ok_or(Restart)?;
        let syms = Symbols::new(key, self.config.symbol_bits);
        match self.walk_from(t, &syms, path, node)? {
            End::Leaf if path.last().map(Step::locator) == Some(leaf.locator()) => Ok(()),
            _ => Err(Restart),
        }
    }

    /// The smallest (`forward`) or largest leaf under `node` by its extreme edge, pushing
    /// the nodes of the way down (`node` included) onto `path`.
    pub(super) fn extreme(
        t: &Table,
        path: &mut Vec<Step>,
        mut node: Step,
        forward: bool,
    ) -> Result<Option<Step>, Restart> {
        loop {
            path.push(node);
            let e = node.found.entry;
            match e.kind() {
                Kind::Leaf => return Ok(Some(node)),
                Kind::Bitmap => {
                    let bits = e.bitmap();
                    if bits == 0 {
                        // Only the root of an empty trie has no child.
                        return Ok(None);
                    }
                    let s = if forward {
                        bits.trailing_zeros()
                    } else {
                        63 - bits.leading_zeros()
                    } as u8;
                    node = Self::child(t, &node, s)?;
                }
                Kind::Jump => node = Self::jump_child(t, &node)?,
                Kind::Empty => return Err(Restart),
            }
        }
    }
}
