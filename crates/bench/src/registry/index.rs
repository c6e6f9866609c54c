//! What the harness drives: [`AnyIndex`] (an ordered or a point-only trait object), the
//! [`Hooks`] into a structure that restructures itself, and a freshly [`Built`] index with
//! its probe and statistics.

use std::ops::Bound;
use std::sync::Arc;

use orrery::api::ScanVisitor;
use orrery::{KvIndex, MemoryUsage, OrderedKvIndex, Result};

use crate::metrics::index_stats::StatsFn;

/// An index the benchmark can drive: ordered or point-only.
pub(crate) enum AnyIndex {
    /// An ordered index (scans available).
    Ordered(Box<dyn OrderedKvIndex>),
    /// A point-only index.
    Point(Box<dyn KvIndex>),
}

impl AnyIndex {
    /// `KvIndex::get_with`.
    #[inline]
    pub(crate) fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        match self {
            AnyIndex::Ordered(i) => i.get_with(key, f),
            AnyIndex::Point(i) => i.get_with(key, f),
        }
    }

    /// `KvIndex::insert`.
    #[inline]
    pub(crate) fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        match self {
            AnyIndex::Ordered(i) => i.insert(key, value),
            AnyIndex::Point(i) => i.insert(key, value),
        }
    }

    /// `KvIndex::remove`.
    #[inline]
    pub(crate) fn remove(&self, key: &[u8]) -> bool {
        match self {
            AnyIndex::Ordered(i) => i.remove(key),
            AnyIndex::Point(i) => i.remove(key),
        }
    }

    /// `KvIndex::get_many`.
    #[inline]
    pub(crate) fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        match self {
            AnyIndex::Ordered(i) => i.get_many(keys, f),
            AnyIndex::Point(i) => i.get_many(keys, f),
        }
    }

    /// `OrderedKvIndex::scan`; `false` (nothing visited) for a point index — the harness
    /// never schedules scans on one.
    #[inline]
    pub(crate) fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) -> bool {
        match self {
            AnyIndex::Ordered(i) => {
                i.scan(start, visitor);
                true
            }
            AnyIndex::Point(_) => false,
        }
    }

    /// `KvIndex::len`.
    pub(crate) fn len(&self) -> usize {
        match self {
            AnyIndex::Ordered(i) => i.len(),
            AnyIndex::Point(i) => i.len(),
        }
    }

    /// `KvIndex::memory_usage`.
    pub(crate) fn memory_usage(&self) -> MemoryUsage {
        match self {
            AnyIndex::Ordered(i) => i.memory_usage(),
            AnyIndex::Point(i) => i.memory_usage(),
        }
    }
}

/// Hooks into an index's internal state (indexes that restructure themselves
/// incrementally; for Mercury: its expansions).
pub(crate) struct Hooks {
    /// Whether the index is restructuring right now (an expansion is in progress), sampled
    /// by the harness during a phase: phases of indexes with hooks report throughput split
    /// by it.
    pub(crate) expanding: Box<dyn Fn() -> bool + Send + Sync>,
    /// Completes any restructuring left in progress; the harness calls it at the end of a
    /// load, inside the load's timing, so that a load ends in a settled index (work the
    /// load deferred is charged to it) and workloads start from a steady state.
    pub(crate) settle: Box<dyn Fn() + Send + Sync>,
}

/// Shared [`Hooks`].
pub(crate) type Probe = Arc<Hooks>;

/// A freshly built index with its hooks.
pub(crate) struct Built {
    /// The index.
    pub(crate) index: AnyIndex,
    /// Its probe, if it has one.
    pub(crate) probe: Option<Probe>,
    /// Its statistics, if it reports any.
    pub(crate) stats: Option<StatsFn>,
}
