//! Concurrent histories of Wormhole checked for linearizability
//! (`orrery_core::testing::linearize`): threads of point operations on a few hot keys, a
//! scanner, and filler keys that grow and shrink the index under them; 8-key leaves so
//! that leaves split and merge (and the MetaTrieHT changes) throughout each round.

use orrery_core::testing::linearize::{Budget, Workload, rounds};
use orrery_core::testing::torture::{Subject, Target};
use orrery_wormhole::{Config, Wormhole};

fn small_leaves() -> Box<dyn Subject> {
    let config = Config::builder().leaf_capacity(8).build().unwrap();
    Box::new(
        Target::ordered(Wormhole::with_config(config).unwrap())
            .with_rmw()
            .with_batches(),
    )
}

#[test]
#[cfg_attr(miri, ignore = "threads of thousands of operations")]
fn linearizable_while_leaves_split_and_merge() {
    let t = rounds(&small_leaves, &Workload::default(), 4, Budget::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.unknown, 0, "{t:?}");
    assert!(t.scans > 0, "{t:?}");
}

#[test]
#[ignore = "opt-in long run: cargo test -p orrery-wormhole --test linearize -- --ignored"]
fn linearizable_long() {
    let w = Workload {
        workers: 4,
        ops: 50_000,
        fillers: 20_000,
        ..Workload::default()
    };
    let default = || Box::new(Target::ordered(Wormhole::new()).with_rmw()) as Box<dyn Subject>;
    for make in [small_leaves as fn() -> Box<dyn Subject>, default] {
        let t = rounds(&make, &w, 10, Budget::default()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.unknown, 0, "{t:?}");
        eprintln!("{t:?}");
    }
}
