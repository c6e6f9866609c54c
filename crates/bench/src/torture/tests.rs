//! A small clean campaign on every configuration: the runner's plumbing and each
//! structure's subject (iterators, `remove_range`, invariant walks) work together.

use super::campaign::{Plan, execute};
use super::configs;
use orrery::testing::torture::Budget;

#[test]
fn every_configuration_passes_a_short_campaign() {
    let plan = Plan {
        configs: configs::all(),
        seeds: vec![1],
        ops: 20_000,
        threads: 2,
        budget: Budget::default(),
        progress_secs: 0,
    };
    let tallies = execute(&plan);
    for (c, t) in plan.configs.iter().zip(&tallies) {
        assert_eq!(t.seeds, [1], "{}: the job did not finish", c.name);
        assert_eq!(t.divergences, 0, "{} diverged (report on stdout)", c.name);
        assert_eq!(t.ops, 20_000, "{}", c.name);
        assert!(t.verifies >= 1, "{}", c.name);
    }
}

#[test]
fn selection_by_structure_and_name() {
    let names = |v: &[&str]| {
        let v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        configs::select(&v).map(|c| c.iter().map(|c| c.name).collect::<Vec<_>>())
    };
    assert_eq!(names(&[]).unwrap().len(), configs::all().len());
    assert_eq!(
        names(&["mercury/dedicated", "hyperion"]).unwrap(),
        [
            "mercury/dedicated",
            "hyperion",
            "hyperion/small-eject",
            "hyperion/preprocess"
        ]
    );
    assert!(names(&["nope"]).unwrap_err().contains("unknown structure"));
}

/// One short linearizability round on every configuration, through the campaign's entry.
#[test]
fn every_configuration_passes_a_short_linearizability_round() {
    use orrery::testing::linearize::{Budget, Workload, rounds};
    for c in configs::all() {
        let w = Workload {
            workers: 2,
            ops: 500,
            fillers: 200,
            ..Workload::default()
        };
        let t =
            rounds(&c.make, &w, 1, Budget::default()).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(t.unknown, 0, "{}", c.name);
    }
}
