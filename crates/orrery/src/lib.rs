//! Orrery: concurrent in-memory key-value indexes built from published designs, measured
//! against well-known peers.
//!
//! This facade re-exports the index API and every structure. See [`api`] for the contract
//! (semantics, consistency guarantees, the names every structure shares) every index
//! honours. `use orrery::prelude::*;` brings the traits and the common types.
//!
//! ```
//! use orrery::prelude::*;
//! use orrery::reference::LockedBTreeMap;
//!
//! let index = LockedBTreeMap::new();
//! assert_eq!(index.insert(b"hello", b"world"), Ok(true));
//! assert_eq!(index.get(b"hello").as_deref(), Some(&b"world"[..]));
//! assert_eq!(index.prefix_collect(b"he").len(), 1);
//! ```
//!
//! # Cargo features
//!
//! | feature | default | what |
//! |---|---|---|
//! | `wormhole` | on | [`wormhole`]: the ordered index (`orrery-wormhole`) |
//! | `mercury` | on | [`mercury`]: the hash table (`orrery-mercury`) |
//! | `slb` | on | [`slb`]: the lookaside cache over any index (`orrery-slb`) |
//! | `cuckoo-trie` | on | [`cuckoo_trie`]: the MLP ordered index (`orrery-cuckoo-trie`) |
//! | `hyperion` | on | [`hyperion`]: the memory-dense trie (`orrery-hyperion`) |
//! | `testing` | off | `orrery::testing`: the conformance suite |
//!
//! With `default-features = false` and only the features named, only those structures
//! are compiled; the API, the reference index and the shared mechanisms always are.

pub use orrery_core::api::{
    self, ConfigError, Error, KvIndex, MemoryUsage, OrderedKvIndex, OrderedKvIndexExt, Result,
};
pub use orrery_core::batch::{self, Entry};
pub use orrery_core::{alloc, hash, prefetch, reference, sync};

/// Cuckoo Trie: an ordered index laid out for memory-level parallelism (feature
/// `cuckoo-trie`).
#[cfg(feature = "cuckoo-trie")]
pub use orrery_cuckoo_trie as cuckoo_trie;
/// Hyperion: a memory-dense 65,536-ary trie of exact-fit containers with its own memory
/// manager (feature `hyperion`).
#[cfg(feature = "hyperion")]
pub use orrery_hyperion as hyperion;
/// Mercury: a concurrent chained hash table with in-bucket locks and incremental expansion
/// (feature `mercury`).
#[cfg(feature = "mercury")]
pub use orrery_mercury as mercury;
/// Search Lookaside Buffer: a cache of hot search results in front of any index (feature
/// `slb`).
#[cfg(feature = "slb")]
pub use orrery_slb as slb;
/// Wormhole: ordered index with `O(log L)` lookups (feature `wormhole`).
#[cfg(feature = "wormhole")]
pub use orrery_wormhole as wormhole;

pub mod registry;

/// The traits and the common types, for `use orrery::prelude::*;`.
///
/// The structures' `Config` types share one name and stay in their modules
/// (`orrery::wormhole::Config`, `orrery::slb::Config`, …).
pub mod prelude {
    pub use orrery_core::api::{
        ConfigError, Error, KvIndex, KvUpdate, MemoryUsage, OrderedKvIndex, OrderedKvIndexExt,
    };
    pub use orrery_core::batch::Entry;
    #[cfg(feature = "cuckoo-trie")]
    pub use orrery_cuckoo_trie::CuckooTrie;
    #[cfg(feature = "hyperion")]
    pub use orrery_hyperion::Hyperion;
    #[cfg(feature = "mercury")]
    pub use orrery_mercury::Mercury;
    #[cfg(feature = "slb")]
    pub use orrery_slb::Slb;
    #[cfg(feature = "wormhole")]
    pub use orrery_wormhole::Wormhole;
}

/// The conformance suite every structure passes (feature `testing`).
#[cfg(feature = "testing")]
pub use orrery_core::testing;

/// One `#[test]` per conformance part for an index constructor (feature `testing`); see
/// [`testing`].
#[cfg(feature = "testing")]
pub use orrery_core::conformance_tests;

/// The README's examples, compiled and run as doctests so that they stay true.
#[cfg(all(doctest, feature = "wormhole", feature = "mercury", feature = "slb"))]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
