//! Synchronization shared by every Orrery structure.
//!
//! | item | what it is |
//! |---|---|
//! | [`pin`], [`Guard`], [`Handle`] | epoch-based memory reclamation ([`epoch`] docs) |
//! | [`VersionLock`], [`Version`], [`VersionWriteGuard`] | version word: writer lock + seqlock for optimistic readers |
//! | [`VersionField`], [`PackedWord`] | a lock bit + version counter packed into part of a 32- or 64-bit word, with the seqlock protocol (what `VersionLock` is built on) |
//! | [`SpinLock`] | test-and-test-and-set mutex with backoff |
//! | [`RwSpinLock`] | writer-preferring reader-writer spin lock |
//! | [`BitLock`] | a TAS lock on one bit of a caller's `AtomicU64` |
//! | [`CachePadded`] | 128-byte alignment against false sharing |
//! | [`Backoff`] | exponential spin-then-yield backoff |
//! | [`StripedCounter`] | counters updated per thread stripe, summed by readers (`len`, byte counts) |
//!
//! # Performance
//!
//! An optimistic read costs no atomic read-modify-write and no store, which is why
//! structures validate versions on their read paths instead of taking read locks; a lock
//! acquisition costs one locked instruction (two for `RwSpinLock` readers). Criterion
//! benches of every type: `cargo bench -p orrery-core --bench sync` (figures:
//! `docs/results/core-sync.md`).
//!
//! Every lock type documents its word layout and memory orderings next to its definition.
//! All low-level atomics come from one internal shim, so that the lock types can be checked
//! with the loom model checker: `RUSTFLAGS="--cfg loom" cargo test -p orrery-core --release
//! sync::loom`.

mod backoff;
pub mod epoch;
mod field;
mod padded;
mod primitive;
mod rwlock;
mod spin;
mod striped;
mod version;

#[cfg(all(test, loom))]
mod loom;
#[cfg(all(test, not(loom)))]
mod tests;

pub use backoff::{Backoff, wait_until};
pub use epoch::{Guard, Handle, handle, pin, unprotected};
pub use field::{PackedWord, VersionField};
pub use padded::CachePadded;
pub use rwlock::{RwSpinLock, RwSpinReadGuard, RwSpinWriteGuard};
pub use spin::{BitLock, BitLockGuard, SpinLock, SpinLockGuard};
pub use striped::StripedCounter;
pub use version::{
    LOCKED_BIT, OBSOLETE_BIT, VERSION_STEP, Version, VersionLock, VersionWriteGuard,
};
