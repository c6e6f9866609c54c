//! Concurrent histories of Hyperion checked for linearizability
//! (`orrery_core::testing::linearize`): threads of point operations on a few hot keys, a
//! scanner, and filler keys that grow and shrink the trie under them; one arena with a
//! small ejection threshold, so that containers grow, split and are ejected in every
//! round.

use orrery_core::testing::linearize::{Budget, Workload, rounds};
use orrery_core::testing::torture::{Subject, Target};
use orrery_hyperion::{Config, Hyperion};

fn small_eject() -> Box<dyn Subject> {
    let config = Config::builder()
        .arenas(1)
        .eject_threshold(256)
        .build()
        .unwrap();
    Box::new(Target::ordered(Hyperion::with_config(config).unwrap()).with_rmw())
}

#[test]
#[cfg_attr(miri, ignore = "threads of thousands of operations")]
fn linearizable_while_containers_grow_and_eject() {
    let t = rounds(&small_eject, &Workload::default(), 4, Budget::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.unknown, 0, "{t:?}");
    assert!(t.scans > 0, "{t:?}");
}

#[test]
#[ignore = "opt-in long run: cargo test -p orrery-hyperion --test linearize -- --ignored"]
fn linearizable_long() {
    let w = Workload {
        workers: 4,
        ops: 50_000,
        fillers: 20_000,
        ..Workload::default()
    };
    let t = rounds(&small_eject, &w, 10, Budget::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.unknown, 0, "{t:?}");
    eprintln!("{t:?}");
}
