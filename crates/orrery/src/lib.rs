//! Orrery: concurrent in-memory key-value indexes built from published designs, measured
//! against well-known peers.
//!
//! This facade re-exports the index API and every structure. See [`api`] for the contract
//! (semantics and consistency guarantees) every index honours.
//!
//! ```
//! use orrery::{KvIndex, OrderedKvIndexExt};
//! use orrery::reference::LockedBTreeMap;
//!
//! let index = LockedBTreeMap::new();
//! assert_eq!(index.insert(b"hello", b"world"), Ok(true));
//! assert_eq!(index.get(b"hello").as_deref(), Some(&b"world"[..]));
//! assert_eq!(index.prefix_collect(b"he").len(), 1);
//! ```

pub use orrery_core::api::{
    self, Error, KvIndex, MemoryUsage, OrderedKvIndex, OrderedKvIndexExt, Result,
};
pub use orrery_core::{alloc, hash, prefetch, reference, sync};

/// Mercury: a concurrent chained hash table with in-bucket locks and incremental expansion.
pub use orrery_mercury as mercury;
/// Search Lookaside Buffer: a cache of hot search results in front of any index.
pub use orrery_slb as slb;
/// Wormhole: ordered index with `O(log L)` lookups (`orrery-wormhole`).
pub use orrery_wormhole as wormhole;

/// The conformance suite every structure passes (feature `testing`).
#[cfg(feature = "testing")]
pub use orrery_core::testing;

/// One `#[test]` per conformance part for an index constructor (feature `testing`); see
/// [`testing`].
#[cfg(feature = "testing")]
pub use orrery_core::conformance_tests;

/// The README's examples, compiled and run as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
