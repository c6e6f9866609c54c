//! The shared conformance suite: every part on the default configuration, iterator parts
//! included; the cheaper parts again on a 4-bucket initial table (relocation and growth
//! within every check) with 4-bit symbols and a prefetch depth of 1, the rest of them
//! opt-in (`-- --ignored`).

use std::ops::Bound;

use orrery_core::testing::{Cursor, CursorUnderTest};
use orrery_cuckoo_trie::{CuckooTrie, Iter};

/// The concrete iterator over `[lo, hi]`, for the iterator parts.
fn open<'a>(
    ct: &'a CuckooTrie,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
) -> Box<dyn CursorUnderTest + 'a> {
    Box::new(Cursor::new(
        ct.range::<[u8], _>((lo, hi)),
        |it: &mut Iter<'_>, b| it.seek(b),
    ))
}

mod default {
    use orrery_cuckoo_trie::CuckooTrie;
    orrery_core::conformance_tests!(ordered, CuckooTrie::new, iter = super::open);
}

/// A 4-bucket initial table, 4-bit symbols, prefetch depth 1: relocation and growth happen
/// within every check. The parts whose cost is the suite's own work on large inputs (and
/// which the default configuration runs) are opt-in here: `cargo test -p
/// orrery-cuckoo-trie --test conformance -- --ignored`.
mod small_table {
    use orrery_cuckoo_trie::{Config, CuckooTrie};

    fn make() -> CuckooTrie {
        CuckooTrie::with_config(
            Config::builder()
                .initial_buckets(4)
                .symbol_bits(4)
                .prefetch_depth(1)
                .build()
                .unwrap(),
        )
        .unwrap()
    }

    orrery_core::__conformance_test!(conformance_basic, check_basic, make);
    orrery_core::__conformance_test!(conformance_edge_keys, check_edge_keys_ordered, make);
    orrery_core::__conformance_test!(conformance_limits, check_limits_ordered, make);
    orrery_core::__conformance_test!(conformance_get_many, check_get_many, make);
    orrery_core::__conformance_test!(conformance_memory_usage, check_memory_usage, make);
    orrery_core::__conformance_test!(conformance_scan_bounds, check_scan_bounds, make);
    orrery_core::__conformance_test!(conformance_ranges, check_ranges, make);
    orrery_core::__conformance_test!(conformance_out_of_memory, check_out_of_memory_ordered, make);
    orrery_core::__conformance_test!(
        #[cfg_attr(miri, ignore = "multi-threaded stress is too slow under Miri")]
        conformance_contention,
        check_contention,
        make
    );
    orrery_core::__conformance_test!(
        #[cfg_attr(miri, ignore = "multi-threaded stress is too slow under Miri")]
        conformance_stress,
        check_stress_ordered,
        make
    );
    orrery_core::__conformance_iter_test!(conformance_iter, check_iter, make, super::open);
    orrery_core::__conformance_test!(
        #[ignore = "opt-in (slow): run with --ignored"]
        conformance_shared_prefix,
        check_shared_prefix_ordered,
        make
    );
    orrery_core::__conformance_test!(
        #[ignore = "opt-in (slow): run with --ignored"]
        conformance_bulk,
        check_bulk_ordered,
        make
    );
    orrery_core::__conformance_test!(
        #[ignore = "opt-in (slow): run with --ignored"]
        conformance_large_entries,
        check_large_entries_ordered,
        make
    );
    orrery_core::__conformance_test!(
        #[ignore = "opt-in (slow): run with --ignored"]
        conformance_differential,
        check_differential_ordered,
        make
    );
    #[test]
    #[ignore = "opt-in (slow): run with --ignored"]
    fn conformance_iter_differential() {
        if let Err(failure) = orrery_core::testing::check_iter_differential(&make, &super::open) {
            panic!("{failure}");
        }
    }
}
