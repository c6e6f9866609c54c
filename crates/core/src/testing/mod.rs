//! The conformance suite: the contract of [`crate::api`], executable, for every structure.
//!
//! Every Orrery structure (and the reference) runs the same parts, generic over a
//! constructor `make: &dyn Fn() -> I`; each part builds its own indexes with it and returns
//! `Result<(), Failure>`, where a [`Failure`] names the part, the seed and the operation that
//! diverged. The usual way in is the [`conformance_tests!`](crate::conformance_tests) macro,
//! which expands to one `#[test]` per part:
//!
//! ```ignore
//! // In crates/<structure>/tests/conformance.rs, with orrery-core's `testing` feature:
//! orrery_core::conformance_tests!(ordered, || MyIndex::new());
//! // or, for an unordered (point-only) index:
//! orrery_core::conformance_tests!(point, || MyHashIndex::new());
//! ```
//!
//! # Parts
//!
//! | part | what it checks | module |
//! |---|---|---|
//! | [`check_basic`] | upsert/remove results, lookups agree, `len`/`is_empty` | [`edge`] |
//! | [`check_edge_keys`] (`_ordered`) | empty key, `0x00`/`0xFF` runs, prefix chains, word boundaries | [`edge`] |
//! | [`check_shared_prefix`] (`_ordered`) | thousands of keys under a 200-byte prefix | [`edge`] |
//! | [`check_large_entries`] (`_ordered`) | 64 KiB keys, 1 MiB values | [`edge`] |
//! | [`check_bulk`] (`_ordered`) | 50k mixed keys: growth, removal, regrowth | [`bulk`] |
//! | [`check_limits`] (`_ordered`) | over-long key/value → exact error, index unchanged | [`edge`] |
//! | [`check_get_many`] | batches: empty, duplicates, misses, huge, over-long keys | [`edge`] |
//! | [`check_memory_usage`] | plausible totals, no counter underflow, no leak per upsert | [`edge`] |
//! | [`check_update`], [`check_compute`], [`check_update_in_place`] | every edge of the read-modify-writes: absent, empty, over-long key and value, closure calls | [`rmw`] |
//! | [`check_rmw_differential`] | seeded mixes of the read-modify-writes, inserts and removes vs `BTreeMap` | [`rmw`] |
//! | [`check_rmw_contention`] | `compute`/`update`/`update_in_place` from 4 threads on shared keys: no lost update | [`rmw`] |
//! | [`check_scan_rev`] | descending scans from every kind of bound, early stops | [`rmw`] |
//! | [`check_scan_bounds`] | every start bound × early stops on a small universe | [`ordered`] |
//! | [`check_ranges`] | `scan_range`, `range`, `scan_prefix`, `first`/`last` | [`ordered`] |
//! | [`check_differential`] (`_ordered`) | seeded random operations vs `BTreeMap` | [`differential`] |
//! | [`check_contention`] | contended inserts/removes: exactly one winner; exact `len` | [`stress`] |
//! | [`check_stress`] (`_ordered`) | 4 writers + 2 readers (scanners), exact final state | [`stress`] |
//! | [`check_out_of_memory`] (`_ordered`) | injected allocation failures: `OutOfMemory`, nothing half-done, still usable | [`oom`] |
//! | [`check_iter`] | concrete iterators: every bound kind, ascending, descending (vs `BTreeMap::range(..).rev()`), both ends, `seek` | [`iter`] |
//! | [`check_iter_differential`] | concrete iterators between seeded random operations, and kept open across writes | [`iter`] |
//!
//! The two iterator parts take, beside the constructor, an `open` closure that makes the
//! structure's concrete iterator over given bounds (the traits have only callback scans):
//! `conformance_tests!(ordered, make, iter = open)` adds them.
//!
//! [`memory`] holds the scenarios of the structures' memory-return tests (fill, remove
//! most keys, compare the resident set with a fresh index) and the churn soak.
//!
//! # Determinism
//!
//! Every random choice comes from a seed ([`rng`]): a fixed default and seeds derived from
//! it, or exactly `ORRERY_SEED` when set, which a failure report names. Sizes are scaled
//! down under Miri and up with `ORRERY_SCALE` (e.g. `ORRERY_SCALE=20` for a long opt-in
//! run). Multi-threaded parts replay the same per-thread operations; their checks are exact
//! whatever the interleaving (see [`stress`]).
//!
//! # Waiting
//!
//! [`wait`] has the helpers every multi-threaded test uses: waits bounded by a deadline in
//! time ([`wait::DEADLINE`]), reclamation driven until something is freed, and progress
//! counters that prove threads overlapped.
//!
//! # Trusting the suite
//!
//! [`broken`] holds deliberately broken wrappers; the self-tests show each fault is caught by
//! the parts meant to catch it, and [`fuzz`] feeds the same model comparisons from a fuzzer.

mod common;

pub mod broken;
pub mod bulk;
pub mod clock;
pub mod count_alloc;
pub mod differential;
pub mod edge;
pub mod fuzz;
pub mod iter;
pub mod linearize;
pub mod memory;
pub mod oom;
pub mod ordered;
pub mod rmw;
pub mod rng;
pub mod stress;
pub mod torture;
pub mod wait;
pub mod zipf;

pub use bulk::{check_bulk, check_bulk_ordered};
pub use common::{Failure, show, show_bound, show_opt};
pub use differential::{check_differential, check_differential_ordered};
pub use edge::{
    check_basic, check_edge_keys, check_edge_keys_ordered, check_get_many, check_large_entries,
    check_large_entries_ordered, check_limits, check_limits_ordered, check_memory_usage,
    check_shared_prefix, check_shared_prefix_ordered,
};
pub use iter::{Cursor, CursorUnderTest, check_iter, check_iter_differential};
pub use oom::{check_out_of_memory, check_out_of_memory_ordered};
pub use ordered::{check_ranges, check_scan_bounds};
pub use rmw::{
    check_compute, check_rmw_contention, check_rmw_differential, check_scan_rev, check_update,
    check_update_in_place,
};
pub use stress::{check_contention, check_stress, check_stress_ordered};

use crate::api::{KvIndex, OrderedKvIndex};

/// Every point part but [`check_out_of_memory`] (which needs an index allocating through
/// [`crate::alloc`]), in order, stopping at the first failure.
pub fn check_all<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    check_basic(make)?;
    check_edge_keys(make)?;
    check_shared_prefix(make)?;
    check_bulk(make)?;
    check_large_entries(make)?;
    check_limits(make)?;
    check_get_many(make)?;
    check_memory_usage(make)?;
    check_differential(make)?;
    check_contention(make)?;
    check_stress(make)
}

/// Every part for an ordered index but [`check_out_of_memory_ordered`], in order, stopping
/// at the first failure.
pub fn check_all_ordered<I: OrderedKvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    check_basic(make)?;
    check_edge_keys_ordered(make)?;
    check_shared_prefix_ordered(make)?;
    check_bulk_ordered(make)?;
    check_large_entries_ordered(make)?;
    check_limits_ordered(make)?;
    check_get_many(make)?;
    check_memory_usage(make)?;
    check_scan_bounds(make)?;
    check_ranges(make)?;
    check_differential_ordered(make)?;
    check_contention(make)?;
    check_stress_ordered(make)
}

/// Expands to one `#[test]` per part of the conformance suite, for an index built by the
/// given constructor expression (re-evaluated in every test).
///
/// - `conformance_tests!(ordered, || MyIndex::new());` — an [`OrderedKvIndex`]: every part,
///   the ordered variants where they exist.
/// - `conformance_tests!(ordered, || MyIndex::new(), iter = open);` — the same plus the
///   iterator parts ([`check_iter`], [`check_iter_differential`]), with `open` a function
///   `fn open<'a>(&'a MyIndex, Bound<&[u8]>, Bound<&[u8]>) -> Box<dyn CursorUnderTest + 'a>`
///   that makes the concrete iterator (see [`iter`]).
/// - `conformance_tests!(point, || MyHashIndex::new());` — a point-only [`KvIndex`].
///   Both forms need the index to implement [`KvUpdate`](crate::KvUpdate) too (the
///   read-modify-write parts); `conformance_tests!(point, make, without_rmw)` leaves those
///   parts out for a measurement variant that has no `compute`.
/// - `conformance_tests!(ordered, || MyIndex::new(), std_alloc);` (or `point`) — every part
///   but the out-of-memory one, for an index that allocates only from the standard library
///   (the reference `LockedBTreeMap`): the test fail point of [`crate::alloc`] cannot reach
///   its allocations, and a failed `std` allocation aborts by Rust's convention.
///
/// The tests are named `conformance_<part>`, so a failing one names its part; its panic
/// message is the [`Failure`] report (seed and operation). Multi-threaded parts are ignored
/// under Miri. Call the macro in its own module to run several configurations in one file.
/// The crate using it needs `orrery-core` with the `testing` feature (usually as a
/// dev-dependency).
#[macro_export]
macro_rules! conformance_tests {
    (point, $make:expr, std_alloc $(,)?) => {
        $crate::conformance_tests!(@point, $make);
    };
    (ordered, $make:expr, std_alloc $(,)?) => {
        $crate::conformance_tests!(@ordered, $make);
    };
    (point, $make:expr, without_rmw $(,)?) => {
        $crate::conformance_tests!(@point_only, $make);
        $crate::__conformance_test!(conformance_out_of_memory, check_out_of_memory, $make);
    };
    (point, $make:expr $(,)?) => {
        $crate::conformance_tests!(@point, $make);
        $crate::__conformance_test!(conformance_out_of_memory, check_out_of_memory, $make);
    };
    (ordered, $make:expr $(,)?) => {
        $crate::conformance_tests!(@ordered, $make);
        $crate::__conformance_test!(
            conformance_out_of_memory,
            check_out_of_memory_ordered,
            $make
        );
    };
    (@point, $make:expr) => {
        $crate::conformance_tests!(@point_only, $make);
        $crate::conformance_tests!(@rmw, $make);
    };
    (@rmw, $make:expr) => {
        $crate::__conformance_test!(conformance_update, check_update, $make);
        $crate::__conformance_test!(conformance_compute, check_compute, $make);
        $crate::__conformance_test!(conformance_update_in_place, check_update_in_place, $make);
        $crate::__conformance_test!(conformance_rmw_differential, check_rmw_differential, $make);
        $crate::__conformance_test!(
            #[cfg_attr(miri, ignore = "multi-threaded stress is too slow under Miri")]
            conformance_rmw_contention,
            check_rmw_contention,
            $make
        );
    };
    (@point_only, $make:expr) => {
        $crate::__conformance_test!(conformance_basic, check_basic, $make);
        $crate::__conformance_test!(conformance_edge_keys, check_edge_keys, $make);
        $crate::__conformance_test!(conformance_shared_prefix, check_shared_prefix, $make);
        $crate::__conformance_test!(conformance_bulk, check_bulk, $make);
        $crate::__conformance_test!(conformance_large_entries, check_large_entries, $make);
        $crate::__conformance_test!(conformance_limits, check_limits, $make);
        $crate::__conformance_test!(conformance_get_many, check_get_many, $make);
        $crate::__conformance_test!(conformance_memory_usage, check_memory_usage, $make);
        $crate::__conformance_test!(conformance_differential, check_differential, $make);
        $crate::__conformance_test!(
            #[cfg_attr(miri, ignore = "multi-threaded stress is too slow under Miri")]
            conformance_contention,
            check_contention,
            $make
        );
        $crate::__conformance_test!(
            #[cfg_attr(miri, ignore = "multi-threaded stress is too slow under Miri")]
            conformance_stress,
            check_stress,
            $make
        );
    };
    (ordered, $make:expr, iter = $open:expr $(,)?) => {
        $crate::conformance_tests!(ordered, $make);
        $crate::__conformance_iter_test!(conformance_iter, check_iter, $make, $open);
        $crate::__conformance_iter_test!(
            conformance_iter_differential,
            check_iter_differential,
            $make,
            $open
        );
    };
    (@ordered, $make:expr) => {
        $crate::__conformance_test!(conformance_basic, check_basic, $make);
        $crate::__conformance_test!(conformance_edge_keys, check_edge_keys_ordered, $make);
        $crate::__conformance_test!(
            conformance_shared_prefix,
            check_shared_prefix_ordered,
            $make
        );
        $crate::__conformance_test!(conformance_bulk, check_bulk_ordered, $make);
        $crate::__conformance_test!(
            conformance_large_entries,
            check_large_entries_ordered,
            $make
        );
        $crate::__conformance_test!(conformance_limits, check_limits_ordered, $make);
        $crate::__conformance_test!(conformance_get_many, check_get_many, $make);
        $crate::__conformance_test!(conformance_memory_usage, check_memory_usage, $make);
        $crate::__conformance_test!(conformance_scan_bounds, check_scan_bounds, $make);
        $crate::__conformance_test!(conformance_ranges, check_ranges, $make);
        $crate::__conformance_test!(conformance_scan_rev, check_scan_rev, $make);
        $crate::conformance_tests!(@rmw, $make);
        $crate::__conformance_test!(conformance_differential, check_differential_ordered, $make);
        $crate::__conformance_test!(
            #[cfg_attr(miri, ignore = "multi-threaded stress is too slow under Miri")]
            conformance_contention,
            check_contention,
            $make
        );
        $crate::__conformance_test!(
            #[cfg_attr(miri, ignore = "multi-threaded stress is too slow under Miri")]
            conformance_stress,
            check_stress_ordered,
            $make
        );
    };
}

/// One test of [`conformance_tests!`](crate::conformance_tests) (not public API).
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_test {
    ($(#[$attr:meta])* $name:ident, $check:ident, $make:expr) => {
        #[test]
        $(#[$attr])*
        fn $name() {
            let make = $make;
            if let ::core::result::Result::Err(failure) = $crate::testing::$check(&make) {
                ::core::panic!("{failure}");
            }
        }
    };
}

/// One iterator test of [`conformance_tests!`](crate::conformance_tests) (not public API).
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_iter_test {
    ($name:ident, $check:ident, $make:expr, $open:expr) => {
        #[test]
        fn $name() {
            let make = $make;
            if let ::core::result::Result::Err(failure) = $crate::testing::$check(&make, &$open) {
                ::core::panic!("{failure}");
            }
        }
    };
}
