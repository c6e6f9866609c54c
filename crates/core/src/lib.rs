//! Orrery's core: the index API and the mechanisms every structure shares.
//!
//! | module | what it holds |
//! |---|---|
//! | [`api`] | [`KvIndex`], [`OrderedKvIndex`], [`MemoryUsage`], [`Error`], key helpers |
//! | [`batch`] | [`PairBatch`](batch::PairBatch) and [`Entry`](batch::Entry): what concrete iterators yield |
//! | [`hash`] | CRC32C (hardware when the CPU has it), incremental, 16-bit tags |
//! | [`sync`] | memory reclamation, version words (seqlocks), padded spin and RW locks |
//! | [`alloc`] | huge-page-backed memory, size-class pools, byte accounting |
//! | [`raw`] | the primitives a structure supplies, and the API built on them once ([`index_api!`]) |
//! | [`prefetch`] | the software prefetch hint |
//! | [`reference`](mod@reference) | [`LockedBTreeMap`](reference::LockedBTreeMap): the baseline semantics and peer |
//! | `testing` | the conformance suite (feature `testing`) |
//!
//! The consistency guarantees every index gives are stated in [`api`].

pub mod alloc;
pub mod api;
pub mod batch;
pub mod hash;
mod hint;
pub mod impls;
pub mod raw;
pub mod reference;
pub mod sync;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use api::{
    ComputeFn, ConfigError, Error, KvIndex, KvUpdate, MemoryUsage, OrderedKvIndex,
    OrderedKvIndexExt, Result, ScanVisitor,
};
pub use hint::prefetch;
