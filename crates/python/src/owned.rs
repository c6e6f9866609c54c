//! An iterator over a Mercury table that owns its table: the one `unsafe` of the crate.
//!
//! A Python iterator object lives as long as Python keeps it, so it cannot borrow the
//! table; Mercury's [`Iter`] borrows it (`Iter<'a>` holds `&'a` of the table's inside). This
//! module pairs the iterator with an `Arc` of the table it borrows from, so that the table
//! outlives the borrow:
//!
//! - the `Arc<Mercury>` is kept in the same struct and never handed out, so the table (a
//!   heap allocation that does not move while an `Arc` to it exists) lives at least as long
//!   as the struct;
//! - fields drop in declaration order, and `iter` is declared before `_table`, so the
//!   iterator is gone before the `Arc` is released;
//! - the `'static` lifetime never leaves this module: [`OwnedMercuryIter::next`] hands out
//!   [`Entry`] values, which own (a reference count of) their copied bytes and borrow
//!   nothing from the table.
//!
//! The ordered structures need none of this: their iterators are generic over a
//! `BatchSource`, which `crate::cursor` implements for an owning handle.

use std::sync::Arc;

use orrery::Entry;
use orrery::mercury::{Iter, Mercury};

/// Mercury's iterator together with the table it walks.
pub(crate) struct OwnedMercuryIter {
    /// Borrows `*_table`; declared first so that it is dropped first.
    iter: Iter<'static>,
    /// Keeps the table alive (and in place) for `iter`.
    _table: Arc<Mercury>,
}

impl OwnedMercuryIter {
    /// An iterator over every pair of `table`, in no order.
    pub(crate) fn new(table: Arc<Mercury>) -> Self {
        let iter: Iter<'_> = table.iter();
        // SAFETY: `iter` borrows the `Mercury` behind `table`'s heap allocation, which does
        // not move and is not freed while the `Arc` stored beside it in this struct lives;
        // the struct drops `iter` before that `Arc` (declaration order) and never lends
        // anything with the extended lifetime (see the module docs).
        let iter: Iter<'static> = unsafe { std::mem::transmute::<Iter<'_>, Iter<'static>>(iter) };
        OwnedMercuryIter {
            iter,
            _table: table,
        }
    }

    /// The next pair, as an owning [`Entry`].
    #[inline]
    pub(crate) fn next(&mut self) -> Option<Entry> {
        self.iter.next()
    }
}
