//! Concurrent histories of the SLB checked for linearizability
//! (`orrery_core::testing::linearize`), over an ordered index (the locked `BTreeMap`, with
//! a scanner) and over an unordered one (a locked `HashMap`): threads of point operations
//! on a few hot keys while filler keys churn a 4-bucket cache that admits at once, so
//! that hits, admissions, evictions, invalidations and refreshes race with every write.

mod common;

use common::HashIndex;
use orrery_core::reference::LockedBTreeMap;
use orrery_core::testing::linearize::{Budget, Workload, rounds};
use orrery_core::testing::torture::{Subject, Target};
use orrery_slb::{Config, Slb};

/// Four buckets (28 slots), every emission logged and admitted at once, two stripes.
fn churning() -> Config {
    Config {
        cache_table_bytes: 4 * 64,
        admission_threshold: 1,
        log_sample_rate: 1.0,
        stripes: 2,
        ..Config::default()
    }
}

fn over_btree() -> Box<dyn Subject> {
    let s = Slb::with_config(LockedBTreeMap::new(), churning()).unwrap();
    Box::new(Target::ordered(s).with_rmw())
}

fn over_hash() -> Box<dyn Subject> {
    let s = Slb::with_config(HashIndex::new(), churning()).unwrap();
    Box::new(Target::point(s).with_rmw())
}

#[test]
#[cfg_attr(miri, ignore = "threads of thousands of operations")]
fn linearizable_over_an_ordered_index() {
    let t = rounds(&over_btree, &Workload::default(), 4, Budget::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.unknown, 0, "{t:?}");
    assert!(t.scans > 0, "{t:?}");
}

#[test]
#[cfg_attr(miri, ignore = "threads of thousands of operations")]
fn linearizable_over_an_unordered_index() {
    let t = rounds(&over_hash, &Workload::default(), 4, Budget::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.unknown, 0, "{t:?}");
}

#[test]
#[ignore = "opt-in long run: cargo test -p orrery-slb --test linearize -- --ignored"]
fn linearizable_long() {
    let w = Workload {
        workers: 4,
        ops: 50_000,
        fillers: 20_000,
        ..Workload::default()
    };
    for make in [over_btree as fn() -> Box<dyn Subject>, over_hash] {
        let t = rounds(&make, &w, 10, Budget::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.unknown, 0, "{t:?}");
        eprintln!("{t:?}");
    }
}
