//! What an index reports about its own internals, beside what the harness measures: the
//! figures a structure's (or peer's) statistics closure returns after a load, recorded as
//! `Record::index_stats`. The registry attaches such a closure to the indexes that have
//! one; the peers that report statistics build theirs here, below the registry.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Figures an index reports about its own internals (name → value), recorded after each
/// load as `Record::index_stats` and shown by `report`: Hyperion's memory-manager
/// breakdown (`Hyperion::stats`, the paper's Fig 14/16). Names ending in `_bytes` are
/// bytes (`report` shows them per key); the others are counts.
pub(crate) type IndexStats = BTreeMap<String, f64>;

/// Reads an index's [`IndexStats`] (it shares the index with the harness).
pub(crate) type StatsFn = Arc<dyn Fn() -> IndexStats + Send + Sync>;
