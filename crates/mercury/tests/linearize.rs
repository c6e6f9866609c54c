//! Concurrent histories of Mercury checked for linearizability
//! (`orrery_core::testing::linearize`): threads of point operations on a few hot keys
//! while filler keys grow and shrink the table under them, from one bucket migrating in
//! runs of 2, so that every round runs through many incremental expansions (cooperative,
//! and with the dedicated expander thread).

use orrery_core::testing::linearize::{Budget, Workload, rounds};
use orrery_core::testing::torture::{Subject, Target};
use orrery_mercury::{Config, Expansion, Mercury};

fn growing(expansion: Expansion) -> Box<dyn Subject> {
    let m = Mercury::with_config(Config {
        initial_buckets: 1,
        migrate_run: 2,
        expansion,
        ..Config::default()
    })
    .unwrap();
    Box::new(Target::point(m).with_rmw())
}

#[test]
#[cfg_attr(miri, ignore = "threads of thousands of operations")]
fn linearizable_while_expanding() {
    for expansion in [Expansion::Cooperative, Expansion::Dedicated] {
        let t = rounds(
            &|| growing(expansion),
            &Workload::default(),
            3,
            Budget::default(),
        )
        .unwrap_or_else(|e| panic!("{expansion:?}: {e}"));
        assert_eq!(t.unknown, 0, "{t:?}");
    }
}

#[test]
#[ignore = "opt-in long run: cargo test -p orrery-mercury --test linearize -- --ignored"]
fn linearizable_long() {
    let w = Workload {
        workers: 4,
        ops: 50_000,
        fillers: 20_000,
        ..Workload::default()
    };
    for expansion in [Expansion::Cooperative, Expansion::Dedicated] {
        let t = rounds(&|| growing(expansion), &w, 10, Budget::default())
            .unwrap_or_else(|e| panic!("{expansion:?}: {e}"));
        assert_eq!(t.unknown, 0, "{t:?}");
        eprintln!("{expansion:?}: {t:?}");
    }
}
