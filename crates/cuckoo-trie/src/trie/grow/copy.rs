//! The copy of a migration (module docs of `trie/grow`, "The migration"): a table with its
//! root, one copy unit (the subtree of one root child, placed in key order with its leaf
//! list and subtree-max locators), and the finisher's step that sets the new root and links
//! the units' leaf lists.

use std::sync::atomic::{AtomicUsize, Ordering};

use orrery_core::api::Error;

use super::super::MAX_BUCKETS;
use crate::bucket::{Entry, Kind, Locator};
use crate::table::{Full, Table};

/// The root's locator (hash 0, colour 0, in every table).
pub(super) const ROOT: Locator = Locator { hash: 0, color: 0 };

/// The first and last leaf of a copied unit, in the new table.
pub(super) type Ends = Option<(Locator, Locator)>;

/// An empty table of `n` buckets with its root placed.
pub(super) fn table_with_root(n: usize) -> Result<Table, Error> {
    if n > MAX_BUCKETS {
        return Err(Error::OutOfMemory);
    }
    let t = Table::new(n)?;
    let (_, root) = t
        .place(0, super::super::root_entry())
        .map_err(|Full| Error::OutOfMemory)?;
    debug_assert_eq!(root.color(), 0);
    Ok(t)
}

/// Copies the subtree of the old root's child by symbol `s` into `new` (module docs);
/// returns its first and last leaf in `new`.
pub(super) fn copy_unit(
    old: &Table,
    new: &Table,
    s: u8,
    placed: &AtomicUsize,
) -> Result<Ends, Full> {
    let oroot = old.find(ROOT).ok_or(Full)?.entry;
    if oroot.bitmap() & (1 << s) == 0 {
        return Ok(None);
    }
    let ohc = old.hash().child(0, s);
    let top = old.search_by_parent(ohc, s, oroot.color()).ok_or(Full)?;
    struct Item {
        /// Old hash and entry.
        oh: u64,
        oe: Entry,
        /// New hash, the new parent's colour, the new jump parent to patch.
        nh: u64,
        pc: u8,
        jump_parent: Option<Locator>,
    }
    let mut stack = vec![Item {
        oh: ohc,
        oe: top.entry,
        nh: new.hash().child(0, s),
        pc: 0,
        jump_parent: None,
    }];
    let mut first: Option<Locator> = None;
    let mut prev: Option<Locator> = None;
    // Internal nodes placed whose subtrees are still being copied, with the stack length
    // when each was placed: a node's subtree is done when the stack is back to that
    // length, and its maximum is then the last leaf placed (preorder in key order).
    let mut open: Vec<(Locator, usize)> = Vec::new();
    let mut count = 0usize;
    loop {
        while let Some(&(node, at)) = open.last() {
            if at < stack.len() {
                break;
            }
            open.pop();
            let max = prev.ok_or(Full)?;
            new.update_at(node, |x| x.with_max(max).with_dirty(false))?;
        }
        let Some(it) = stack.pop() else { break };
        let mut proto = it.oe.rebased(it.pc);
        if it.oe.kind() == Kind::Leaf {
            proto = proto.with_next(None);
        }
        let (_, ne) = new.place(it.nh, proto)?;
        count += 1;
        let me = Locator {
            hash: it.nh,
            color: ne.color(),
        };
        if let Some(j) = it.jump_parent {
            new.update_at(j, |x| x.with_child_color(me.color))?;
        }
        if it.oe.kind() != Kind::Leaf {
            // Copied stale (`Entry::rebased`); its locator is set when its subtree is done.
            open.push((me, stack.len()));
        }
        match it.oe.kind() {
            Kind::Leaf => {
                match prev {
                    Some(p) => new.update_at(p, |x| x.with_next(Some(me)))?,
                    None => first = Some(me),
                }
                prev = Some(me);
            }
            Kind::Bitmap => {
                // Memory-level parallelism: the children's buckets in both tables are
                // prefetched together before any of them is read (each is a DRAM miss;
                // read one after the other they would wait in turn).
                // (The hashes are computed twice: cheaper than keeping them.)
                let mut bits = it.oe.bitmap();
                while bits != 0 {
                    let c = bits.trailing_zeros() as u8;
                    bits &= bits - 1;
                    old.prefetch(old.hash().child(it.oh, c));
                    new.prefetch(new.hash().child(it.nh, c));
                }
                // Largest symbol pushed first: children are popped in key order.
                let mut bits = it.oe.bitmap();
                while bits != 0 {
                    let c = 63 - bits.leading_zeros() as u8;
                    bits &= !(1u64 << c);
                    let (ohc, nhc) = (old.hash().child(it.oh, c), new.hash().child(it.nh, c));
                    let child = old.search_by_parent(ohc, c, it.oe.color()).ok_or(Full)?;
                    stack.push(Item {
                        oh: ohc,
                        oe: child.entry,
                        nh: nhc,
                        pc: me.color,
                        jump_parent: None,
                    });
                }
            }
            Kind::Jump => {
                let e = it.oe;
                let len = e.jump_len();
                if len == 0 {
                    return Err(Full);
                }
                let ohc = (0..len).fold(it.oh, |h, q| old.hash().child(h, e.jump_symbol(q)));
                let nhc = (0..len).fold(it.nh, |h, q| new.hash().child(h, e.jump_symbol(q)));
                let child = old
                    .search_by_color(ohc, e.jump_symbol(len - 1), e.child_color())
                    .ok_or(Full)?;
                stack.push(Item {
                    oh: ohc,
                    oe: child.entry,
                    nh: nhc,
                    pc: me.color,
                    jump_parent: Some(me),
                });
            }
            Kind::Empty => return Err(Full),
        }
    }
    placed.fetch_add(count, Ordering::Relaxed);
    Ok(first.map(|f| (f, prev.unwrap_or(f))))
}

/// Sets the new root (the old root's bitmap) and links the units' leaf lists in key order.
pub(super) fn finish_table(old: &Table, new: &Table, ends: &[Ends]) -> Result<(), Full> {
    let oroot = old.find(ROOT).ok_or(Full)?.entry;
    // The root's subtree maximum is the last leaf of the last non-empty unit.
    let max = ends.iter().flatten().last().map(|&(_, last)| last);
    new.update_at(ROOT, |x| {
        let x = x.with_bitmap(oroot.bitmap()).with_dirty(false);
        match max {
            Some(m) => x.with_max(m),
            None => x,
        }
    })?;
    let mut prev: Option<Locator> = None;
    for &(first, last) in ends.iter().flatten() {
        if let Some(p) = prev {
            new.update_at(p, |x| x.with_next(Some(first)))?;
        }
        prev = Some(last);
    }
    Ok(())
}
