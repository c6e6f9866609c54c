//! The conformance suite can fail: each deliberately broken wrapper of `testing::broken` is
//! caught by the parts meant to catch it (and `tests/conformance.rs` shows every part passes
//! on the correct reference). Also: failures are reproducible and name their seed, and the
//! fuzz runners catch broken indexes.
//!
//! Not under Miri: how often a part meets a fault depends on its native sizes (a fault on
//! every 1000th insert needs more than Miri's few dozen operations), and the parts themselves
//! run under Miri in `tests/conformance.rs`.
#![cfg(all(feature = "testing", not(miri)))]

use std::panic::{AssertUnwindSafe, catch_unwind};

use orrery_core::reference::LockedBTreeMap;
use orrery_core::testing::broken::{Broken, Fault};
use orrery_core::testing::fuzz::{ops_from_bytes, run_differential, run_differential_point};
use orrery_core::testing::{self, Failure};

fn broken(fault: Fault) -> impl Fn() -> Broken<LockedBTreeMap> {
    move || Broken::new(LockedBTreeMap::new(), fault)
}

/// Asserts that each named part returns `Err` on the reference with `$fault` injected.
macro_rules! caught_by {
    ($fault:expr => $($check:ident),+ $(,)?) => {{
        let make = broken($fault);
        $(
            match testing::$check(&make) {
                Err(failure) => {
                    assert!(!failure.message.is_empty());
                    eprintln!("{:?} caught by {}: {}", $fault, stringify!($check), failure);
                }
                Ok(()) => panic!("{} passed on an index with fault {:?}", stringify!($check), $fault),
            }
        )+
    }};
}

/// Asserts that each named part passes with `$fault` injected (the fault is invisible to it),
/// showing that the failures above are specific and not noise.
macro_rules! passes {
    ($fault:expr => $($check:ident),+ $(,)?) => {{
        let make = broken($fault);
        $(
            if let Err(failure) = testing::$check(&make) {
                panic!("{} should not see fault {:?}, but failed: {failure}", stringify!($check), $fault);
            }
        )+
    }};
}

#[test]
fn lost_inserts_are_caught() {
    caught_by!(Fault::LoseEveryNthInsert(1000) =>
        check_basic, check_edge_keys, check_edge_keys_ordered, check_shared_prefix,
        check_bulk, check_bulk_ordered, check_differential, check_differential_ordered);
}

#[test]
fn lost_inserts_are_caught_under_threads() {
    caught_by!(Fault::LoseEveryNthInsert(1000) => check_contention, check_stress, check_stress_ordered);
}

#[test]
fn unordered_scans_are_caught() {
    caught_by!(Fault::SwapFirstTwoScanPairs =>
        check_edge_keys_ordered, check_shared_prefix_ordered, check_large_entries_ordered,
        check_limits_ordered, check_scan_bounds, check_ranges, check_differential_ordered);
    passes!(Fault::SwapFirstTwoScanPairs => check_edge_keys, check_differential);
}

#[test]
fn lossy_scans_are_caught() {
    caught_by!(Fault::DropEveryNthScanPair(50) =>
        check_edge_keys_ordered, check_shared_prefix_ordered, check_bulk_ordered,
        check_scan_bounds, check_ranges, check_differential_ordered);
    passes!(Fault::DropEveryNthScanPair(50) => check_bulk);
}

#[test]
fn lossy_and_unordered_concurrent_scans_are_caught() {
    caught_by!(Fault::DropEveryNthScanPair(50) => check_stress_ordered);
    caught_by!(Fault::SwapFirstTwoScanPairs => check_stress_ordered);
    caught_by!(Fault::ExcludedStartAsIncluded => check_stress_ordered);
}

#[test]
fn wrong_bounds_are_caught() {
    caught_by!(Fault::ExcludedStartAsIncluded =>
        check_edge_keys_ordered, check_scan_bounds, check_ranges, check_differential_ordered);
    caught_by!(Fault::PrefixScanOverrun =>
        check_edge_keys_ordered, check_shared_prefix_ordered, check_ranges,
        check_differential_ordered);
    caught_by!(Fault::LastReturnsFirst =>
        check_edge_keys_ordered, check_scan_bounds, check_ranges, check_differential_ordered);
}

#[test]
fn ignored_limits_are_caught() {
    caught_by!(Fault::AcceptOverLongKeys =>
        check_limits, check_limits_ordered, check_differential, check_differential_ordered);
    caught_by!(Fault::ChangeOnRejectedInsert =>
        check_limits, check_limits_ordered, check_differential);
    passes!(Fault::ChangeOnRejectedInsert => check_basic, check_edge_keys);
}

#[test]
fn stale_reads_are_caught() {
    caught_by!(Fault::StaleReadEveryNth(7) =>
        check_basic, check_edge_keys, check_differential, check_differential_ordered);
}

#[test]
fn stale_reads_are_caught_under_threads() {
    caught_by!(Fault::StaleReadEveryNth(7) => check_stress, check_stress_ordered);
}

#[test]
fn wrong_results_and_counts_are_caught() {
    caught_by!(Fault::LenCountsFailedRemoves =>
        check_basic, check_edge_keys, check_differential);
    caught_by!(Fault::InsertAlwaysNew => check_basic, check_edge_keys, check_differential);
    caught_by!(Fault::RemoveAlwaysTrue => check_basic, check_edge_keys, check_differential);
    caught_by!(Fault::GetManyReversed => check_get_many, check_edge_keys, check_differential);
}

#[test]
fn wrong_counts_are_caught_under_threads() {
    caught_by!(Fault::LenCountsFailedRemoves => check_contention, check_stress);
    caught_by!(Fault::InsertAlwaysNew => check_contention, check_stress);
    caught_by!(Fault::RemoveAlwaysTrue => check_contention, check_stress);
}

/// A check-then-act insert is correct alone and wrong under contention: only the contention
/// part can see it.
#[test]
fn racy_inserts_are_caught_only_under_contention() {
    passes!(Fault::RacyInsert => check_basic, check_differential);
    caught_by!(Fault::RacyInsert => check_contention);
}

#[test]
fn colliding_trailing_zero_keys_are_caught() {
    caught_by!(Fault::StripTrailingZeros =>
        check_edge_keys, check_edge_keys_ordered, check_scan_bounds, check_differential,
        check_differential_ordered);
}

#[test]
fn wrong_memory_accounting_is_caught() {
    caught_by!(Fault::UnderReportMemory => check_memory_usage, check_large_entries);
    caught_by!(Fault::LeakOnUpsert => check_memory_usage);
    passes!(Fault::LeakOnUpsert => check_basic);
}

/// The same seed gives the same failure, and the report names the seed to replay.
#[test]
fn failures_are_reproducible_and_name_their_seed() {
    let make = broken(Fault::LoseEveryNthInsert(1000));
    let a: Failure = testing::check_differential_ordered(&make).expect_err("must fail");
    let b: Failure = testing::check_differential_ordered(&make).expect_err("must fail");
    assert_eq!(a, b);
    let report = a.to_string();
    assert!(report.contains("differential_ordered"), "{report}");
    assert!(report.contains("ORRERY_SEED=0x"), "{report}");
    assert!(report.contains("step"), "{report}");
    assert!(a.seed.is_some());
}

/// The fuzz runners panic on a broken index for some of a few hundred random sequences.
#[test]
fn fuzz_runners_catch_broken_indexes() {
    let mut caught = [0usize; 3];
    let mut state = 0x1234_5678_9abc_def0u64;
    for _ in 0..300 {
        let bytes: Vec<u8> = (0..600)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect();
        let ops = ops_from_bytes(&bytes);
        let runs: [&dyn Fn(); 3] = [
            &|| {
                run_differential(
                    &Broken::new(LockedBTreeMap::new(), Fault::LoseEveryNthInsert(5)),
                    &ops,
                )
            },
            &|| {
                run_differential(
                    &Broken::new(LockedBTreeMap::new(), Fault::SwapFirstTwoScanPairs),
                    &ops,
                )
            },
            &|| {
                run_differential_point(
                    &Broken::new(LockedBTreeMap::new(), Fault::StaleReadEveryNth(2)),
                    &ops,
                )
            },
        ];
        for (i, run) in runs.iter().enumerate() {
            // Stop running a runner once it has caught its fault (each catch prints a panic).
            if caught[i] == 0 && catch_unwind(AssertUnwindSafe(run)).is_err() {
                caught[i] += 1;
            }
        }
    }
    assert!(
        caught.iter().all(|&c| c > 0),
        "fuzz runners caught {caught:?}"
    );
}

#[test]
#[cfg(feature = "failpoints")]
fn half_applied_inserts_on_allocation_failure_are_caught() {
    caught_by!(Fault::StoreBeforeAllocating => check_out_of_memory, check_out_of_memory_ordered);
    passes!(Fault::AllocateBeforeStoring => check_out_of_memory, check_out_of_memory_ordered);
}

/// The out-of-memory part fails on an index the fail point cannot reach (the reference,
/// which allocates from the standard library): it never passes vacuously.
#[test]
#[cfg(feature = "failpoints")]
fn out_of_memory_part_needs_injected_failures() {
    let make = LockedBTreeMap::new;
    let failure = testing::check_out_of_memory_ordered(&make).expect_err("nothing was injected");
    assert!(
        failure.message.contains("no failure was injected"),
        "{failure}"
    );
}

/// The fuzz runner with injected allocation failures catches an insert that stores before
/// it allocates (a failed insert that left its key behind), and passes the correct order.
#[test]
fn fuzz_runner_with_failures_catches_half_applied_inserts() {
    use orrery_core::testing::fuzz::{
        ops_from_bytes, run_differential_point_with_failures, run_differential_with_failures,
    };
    use orrery_core::testing::rng::random_bytes;
    let failures = [1u8, 0, 2, 1];
    let mut caught = [0usize; 2];
    for seed in 0..200u64 {
        let mut r = orrery_core::testing::rng::rng(seed);
        let ops = ops_from_bytes(&random_bytes(&mut r, 600));
        run_differential_with_failures(
            &Broken::new(LockedBTreeMap::new(), Fault::AllocateBeforeStoring),
            &ops,
            &failures,
        );
        run_differential_point_with_failures(
            &Broken::new(LockedBTreeMap::new(), Fault::AllocateBeforeStoring),
            &ops,
            &failures,
        );
        let runs: [&dyn Fn(); 2] = [
            &|| {
                run_differential_with_failures(
                    &Broken::new(LockedBTreeMap::new(), Fault::StoreBeforeAllocating),
                    &ops,
                    &failures,
                )
            },
            &|| {
                run_differential_point_with_failures(
                    &Broken::new(LockedBTreeMap::new(), Fault::StoreBeforeAllocating),
                    &ops,
                    &failures,
                )
            },
        ];
        for (i, run) in runs.iter().enumerate() {
            if caught[i] == 0 && catch_unwind(AssertUnwindSafe(run)).is_err() {
                caught[i] += 1;
            }
        }
    }
    assert!(
        caught.iter().all(|&c| c > 0),
        "fuzz runners with failures caught {caught:?}"
    );
}

/// The contract's edges of the read-modify-writes: a wrapper answering `Ok(false)` where
/// the contract says `Err(KeyTooLong)` (the bug two structures had) is caught.
#[test]
fn update_of_over_long_key_answering_ok_false_is_caught() {
    caught_by!(Fault::UpdateOverLongKeyOkFalse => check_update);
    passes!(Fault::UpdateOverLongKeyOkFalse => check_compute, check_update_in_place, check_rmw_differential);
}

#[test]
fn compute_that_cannot_remove_is_caught() {
    caught_by!(Fault::ComputeNoneKeepsKey => check_compute, check_rmw_differential);
    passes!(Fault::ComputeNoneKeepsKey => check_update, check_update_in_place);
}

#[test]
fn lost_in_place_updates_are_caught() {
    caught_by!(Fault::UpdateInPlaceLost => check_update_in_place, check_rmw_differential);
    passes!(Fault::UpdateInPlaceLost => check_update, check_compute);
}

#[test]
fn descending_scans_missing_a_pair_are_caught() {
    caught_by!(Fault::ScanRevSkipsFirst => check_scan_rev);
    passes!(Fault::ScanRevSkipsFirst => check_scan_bounds, check_ranges);
}

/// A `compute` that reads and writes in two steps loses increments under threads.
#[test]
fn racy_compute_is_caught_under_threads() {
    caught_by!(Fault::RacyCompute => check_rmw_contention);
    passes!(Fault::RacyCompute => check_compute, check_update);
}
