//! What the torture runner drives: a structure seen through the traits, plus what a
//! concrete type has beyond them.
//!
//! The traits ([`KvIndex`], [`KvUpdate`], [`OrderedKvIndex`]) cover the point operations,
//! the read-modify-writes and the callback scans. Iterators, `remove_range` and the
//! invariant walk are inherent methods of the concrete types, so a [`Subject`] says which
//! of them it has; the generator produces only operations the subject can run.
//! [`Target`] builds a subject from any index and the functions that reach those extras:
//!
//! ```
//! use orrery_core::reference::LockedBTreeMap;
//! use orrery_core::testing::torture::{Subject, Target};
//!
//! let subject = Target::ordered(LockedBTreeMap::new()).with_rmw().with_batches();
//! assert!(subject.ordered().is_some() && subject.batches().is_some());
//! assert!(!subject.remove_range_supported());
//! ```

use std::ops::Bound;

use crate::api::{KvIndex, KvUpdate, OrderedKvIndex};
use crate::batch::BatchSource;

/// A structure under torture: the traits it implements and the extras it has. `Sync`, so
/// that the linearizability driver can share one between threads.
pub trait Subject: Sync {
    /// The point operations.
    fn index(&self) -> &dyn KvIndex;
    /// `compute`, `update`, `update_in_place`, when the structure has them.
    fn update(&self) -> Option<&dyn KvUpdate>;
    /// The ordered operations, for ordered structures.
    fn ordered(&self) -> Option<&dyn OrderedKvIndex>;
    /// The source of the concrete iterator (`iter()`, `range()` are `BatchIter`s over it).
    fn batches(&self) -> Option<&dyn BatchSource>;
    /// Whether [`Subject::remove_range`] is supported.
    fn remove_range_supported(&self) -> bool;
    /// `remove_range(start, end)`: how many keys it removed (`0` when unsupported).
    fn remove_range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> usize;
    /// Every pair through the structure's unordered iterator (Mercury's `iter()`), when it
    /// has one.
    fn unordered_pairs(&self) -> Option<Vec<(Vec<u8>, Vec<u8>)>>;
    /// The structure's invariant walk: `Ok(number of keys)` or what is broken; `None` when
    /// it has none.
    fn check_invariants(&self) -> Option<Result<usize, String>>;
}

type RangeDelete<I> = fn(&I, Bound<&[u8]>, Bound<&[u8]>) -> usize;
type AllPairs<I> = fn(&I) -> Vec<(Vec<u8>, Vec<u8>)>;
type Walk<I> = fn(&I) -> Result<usize, String>;

/// A [`Subject`] made of an index and functions reaching its extras (each `None` until
/// set by a `with_*` method).
pub struct Target<I> {
    index: I,
    update: Option<fn(&I) -> &dyn KvUpdate>,
    ordered: Option<fn(&I) -> &dyn OrderedKvIndex>,
    batches: Option<fn(&I) -> &dyn BatchSource>,
    remove_range: Option<RangeDelete<I>>,
    unordered: Option<AllPairs<I>>,
    invariants: Option<Walk<I>>,
}

fn as_update<I: KvUpdate>(i: &I) -> &dyn KvUpdate {
    i
}

fn as_ordered<I: OrderedKvIndex>(i: &I) -> &dyn OrderedKvIndex {
    i
}

fn as_batches<I: BatchSource>(i: &I) -> &dyn BatchSource {
    i
}

impl<I: KvIndex> Target<I> {
    /// A point-only subject (no scans).
    pub fn point(index: I) -> Self {
        Target {
            index,
            update: None,
            ordered: None,
            batches: None,
            remove_range: None,
            unordered: None,
            invariants: None,
        }
    }

    /// The index itself.
    pub fn inner(&self) -> &I {
        &self.index
    }

    /// With `remove_range` through `f` (the concrete type's inherent method).
    pub fn with_remove_range(mut self, f: RangeDelete<I>) -> Self {
        self.remove_range = Some(f);
        self
    }

    /// With an unordered iterator collecting every pair through `f`.
    pub fn with_unordered_iter(mut self, f: AllPairs<I>) -> Self {
        self.unordered = Some(f);
        self
    }

    /// With the structure's invariant walk `f` (`Ok(number of keys)` or what is broken).
    pub fn with_invariants(mut self, f: Walk<I>) -> Self {
        self.invariants = Some(f);
        self
    }
}

impl<I: KvUpdate> Target<I> {
    /// With the read-modify-writes of [`KvUpdate`].
    pub fn with_rmw(mut self) -> Self {
        self.update = Some(as_update::<I>);
        self
    }
}

impl<I: OrderedKvIndex> Target<I> {
    /// An ordered subject.
    pub fn ordered(index: I) -> Self {
        let mut t = Self::point(index);
        t.ordered = Some(as_ordered::<I>);
        t
    }
}

impl<I: BatchSource> Target<I> {
    /// With the concrete iterator (`BatchIter` over the index).
    pub fn with_batches(mut self) -> Self {
        self.batches = Some(as_batches::<I>);
        self
    }
}

impl<I: KvIndex> Subject for Target<I> {
    fn index(&self) -> &dyn KvIndex {
        &self.index
    }

    fn update(&self) -> Option<&dyn KvUpdate> {
        self.update.map(|f| f(&self.index))
    }

    fn ordered(&self) -> Option<&dyn OrderedKvIndex> {
        self.ordered.map(|f| f(&self.index))
    }

    fn batches(&self) -> Option<&dyn BatchSource> {
        self.batches.map(|f| f(&self.index))
    }

    fn remove_range_supported(&self) -> bool {
        self.remove_range.is_some()
    }

    fn remove_range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> usize {
        self.remove_range.map_or(0, |f| f(&self.index, start, end))
    }

    fn unordered_pairs(&self) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
        self.unordered.map(|f| f(&self.index))
    }

    fn check_invariants(&self) -> Option<Result<usize, String>> {
        self.invariants.map(|f| f(&self.index))
    }
}

/// What a subject can do, fixed for a run: the generator's menu.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Caps {
    pub(crate) rmw: bool,
    pub(crate) ordered: bool,
    pub(crate) iter: bool,
    pub(crate) remove_range: bool,
}

impl Caps {
    pub(crate) fn of(s: &dyn Subject) -> Caps {
        Caps {
            rmw: s.update().is_some(),
            ordered: s.ordered().is_some(),
            iter: s.batches().is_some(),
            remove_range: s.remove_range_supported(),
        }
    }
}
