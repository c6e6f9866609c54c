//! Concurrent histories of the Cuckoo Trie checked for linearizability
//! (`orrery_core::testing::linearize`): threads of point operations on a few hot keys, a
//! scanner, and filler keys that grow and shrink the trie under them, from a 4-bucket
//! table so that it grows (and migrates) several times in every round.

use orrery_core::testing::linearize::{Budget, Workload, rounds};
use orrery_core::testing::torture::{Subject, Target};
use orrery_cuckoo_trie::{Config, CuckooTrie};

fn small_table() -> Box<dyn Subject> {
    let config = Config::builder().initial_buckets(4).build().unwrap();
    Box::new(Target::ordered(CuckooTrie::with_config(config).unwrap()).with_rmw())
}

#[test]
#[cfg_attr(miri, ignore = "threads of thousands of operations")]
fn linearizable_while_the_table_grows_and_migrates() {
    let t = rounds(&small_table, &Workload::default(), 4, Budget::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.unknown, 0, "{t:?}");
    assert!(t.scans > 0, "{t:?}");
}

#[test]
#[ignore = "opt-in long run: cargo test -p orrery-cuckoo-trie --test linearize -- --ignored"]
fn linearizable_long() {
    let w = Workload {
        workers: 4,
        ops: 50_000,
        fillers: 20_000,
        ..Workload::default()
    };
    let t = rounds(&small_table, &w, 10, Budget::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.unknown, 0, "{t:?}");
    eprintln!("{t:?}");
}
