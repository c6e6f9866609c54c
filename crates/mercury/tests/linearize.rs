//! Concurrent histories of Mercury checked for linearizability
//! (`orrery_core::testing::linearize`): threads of point operations on a few hot keys
//! while filler keys grow and shrink the table under them, from one bucket migrating in
//! runs of 2, so that every round runs through many incremental expansions and then many
//! incremental shrinks as the fillers are removed (cooperative, and with the dedicated
//! expander thread; and cooperative without inline areas, in 8-byte cells).

use orrery_core::testing::linearize::{Budget, Workload, check_round, drive, rounds};
use orrery_core::testing::torture::{Subject, Target};
use orrery_mercury::{Config, Expansion, Mercury};

fn growing(expansion: Expansion, inline_pairs: bool) -> Box<dyn Subject> {
    let m = Mercury::with_config(Config {
        initial_buckets: 1,
        migrate_run: 2,
        expansion,
        inline_pairs,
        ..Config::default()
    })
    .unwrap();
    Box::new(Target::point(m).with_rmw())
}

#[test]
#[cfg_attr(miri, ignore = "threads of thousands of operations")]
fn linearizable_while_expanding() {
    // (The last: 8-byte cells, no inline areas.)
    for (expansion, inline_pairs) in [
        (Expansion::Cooperative, true),
        (Expansion::Dedicated, true),
        (Expansion::Cooperative, false),
    ] {
        let t = rounds(
            &|| growing(expansion, inline_pairs),
            &Workload::default(),
            3,
            Budget::default(),
        )
        .unwrap_or_else(|e| panic!("{expansion:?} inline {inline_pairs}: {e}"));
        assert_eq!(t.unknown, 0, "{t:?}");
    }
}

/// The drive really shrinks the table while the hot keys are hammered, and the round is
/// linearizable. Each worker holds all its 1,500 fillers at once before removing them, so
/// the table (from one bucket) grows to at least 1,024 buckets; it must end small, so the
/// removes of the round's second half shrank it back, merge by merge, under the hot-key
/// operations. (Which operations overlap which migrations depends on the scheduling; the
/// growth and the shrinking do not.)
#[test]
#[cfg_attr(miri, ignore = "threads of thousands of operations")]
fn linearizable_while_shrinking() {
    for expansion in [Expansion::Cooperative, Expansion::Dedicated] {
        let m = Mercury::with_config(Config {
            initial_buckets: 1,
            migrate_run: 2,
            expansion,
            ..Config::default()
        })
        .unwrap();
        let subject = Target::point(m).with_rmw();
        let w = Workload::default();
        assert!(w.fillers >= 1024);
        let round = drive(&subject, &w);
        let end = subject.inner().stats();
        assert!(
            end.buckets.max(end.next_buckets.unwrap_or(0)) <= 64,
            "{expansion:?}: the table did not shrink back: {end:?}"
        );
        let verdict = check_round(&round, Budget::default());
        assert!(!verdict.violated(), "{expansion:?}: {verdict}");
        assert_eq!(verdict.report.unknown.len(), 0, "{expansion:?}");
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
        let t = rounds(&|| growing(expansion, true), &w, 10, Budget::default())
            .unwrap_or_else(|e| panic!("{expansion:?}: {e}"));
        assert_eq!(t.unknown, 0, "{t:?}");
        eprintln!("{expansion:?}: {t:?}");
    }
}
