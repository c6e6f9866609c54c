//! The runner passes the reference, and catches and minimizes broken indexes.

use super::*;
use crate::reference::LockedBTreeMap;
use crate::testing::broken::{Broken, Fault};
use std::time::Duration;

fn settings(seed: u64, ops: u64) -> Settings {
    Settings {
        seed,
        ops,
        budget: Budget {
            tests: 20_000,
            time: Duration::from_secs(120),
        },
    }
}

fn full_reference() -> Box<dyn Subject> {
    Box::new(
        Target::ordered(LockedBTreeMap::new())
            .with_rmw()
            .with_batches(),
    )
}

#[test]
fn the_reference_passes_ordered_and_point_only() {
    let mut seen = 0;
    let r = run(&full_reference, &settings(3, 60_000), &mut |n| seen += n);
    assert!(r.divergence.is_none(), "{}", r.divergence.unwrap());
    assert_eq!(r.ops, 60_000);
    assert_eq!(seen, 60_000, "progress reports every operation once");
    assert!(r.verifies >= r.episodes);
    let point = || Box::new(Target::point(LockedBTreeMap::new())) as Box<dyn Subject>;
    let r = run(&point, &settings(4, 30_000), &mut |_| {});
    assert!(r.divergence.is_none(), "{}", r.divergence.unwrap());
}

/// Runs a campaign on the reference with `fault` injected: it must diverge, reproduce,
/// and shrink to at most `max_ops` operations.
fn caught(fault: Fault, max_ops: usize) -> Box<Divergence> {
    let make = move || {
        Box::new(
            Target::ordered(Broken::new(LockedBTreeMap::new(), fault))
                .with_rmw()
                .with_batches(),
        ) as Box<dyn Subject>
    };
    let r = run(&make, &settings(11, 200_000), &mut |_| {});
    let d = r
        .divergence
        .unwrap_or_else(|| panic!("{fault:?} not caught in {} ops", r.ops));
    let text = d.to_string();
    assert!(d.reproduced, "{fault:?} did not reproduce: {text}");
    let (ops, _) = d.minimized.as_ref().expect("reproduced");
    assert!(
        ops.len() <= max_ops && d.minimal,
        "{fault:?} shrunk to {} ops (minimal: {}):\n{text}",
        ops.len(),
        d.minimal
    );
    assert!(text.contains("minimized reproduction") && text.contains("seed 0xb"));
    // The reproduction replays on its own.
    assert!(replay(&make, ops).is_err());
    d
}

#[test]
fn broken_indexes_are_caught_and_minimized() {
    caught(Fault::StripTrailingZeros, 2);
    caught(Fault::LoseEveryNthInsert(3), 4);
    caught(Fault::ComputeNoneKeepsKey, 2);
    caught(Fault::UpdateInPlaceLost, 2);
    caught(Fault::ScanRevSkipsFirst, 2);
    caught(Fault::GetManyReversed, 3);
    caught(Fault::ExcludedStartAsIncluded, 2);
    caught(Fault::StaleReadEveryNth(2), 4);
    let d = caught(Fault::RemoveAlwaysTrue, 1);
    assert!(
        matches!(&d.minimized.as_ref().unwrap().0[..], [Op::Remove { .. }]),
        "{d}"
    );
}

#[test]
fn campaigns_are_deterministic() {
    let make = || {
        Box::new(Target::ordered(Broken::new(
            LockedBTreeMap::new(),
            Fault::DropEveryNthScanPair(7),
        ))) as Box<dyn Subject>
    };
    let a = run(&make, &settings(21, 100_000), &mut |_| {});
    let b = run(&make, &settings(21, 100_000), &mut |_| {});
    let (a, b) = (a.divergence.unwrap(), b.divergence.unwrap());
    assert_eq!((a.episode, a.at, &a.op), (b.episode, b.at, &b.op));
    assert_eq!(a.minimized.unwrap().0, b.minimized.unwrap().0);
}

/// A structure that panics is a divergence too, caught and minimized.
#[test]
fn panics_are_divergences() {
    struct Panicky(LockedBTreeMap);
    impl crate::api::KvIndex for Panicky {
        fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
            self.0.get_with(key, f)
        }
        fn insert(&self, key: &[u8], value: &[u8]) -> crate::Result<bool> {
            assert!(self.0.len() < 50, "full");
            self.0.insert(key, value)
        }
        fn remove(&self, key: &[u8]) -> bool {
            self.0.remove(key)
        }
        fn len(&self) -> usize {
            self.0.len()
        }
        fn memory_usage(&self) -> crate::MemoryUsage {
            self.0.memory_usage()
        }
    }
    let make = || Box::new(Target::point(Panicky(LockedBTreeMap::new()))) as Box<dyn Subject>;
    // (The replays' panic messages go to the test's captured output.)
    let r = run(&make, &settings(5, 100_000), &mut |_| {});
    let d = r.divergence.expect("the panic is reported");
    assert!(d.message.contains("panicked: full"), "{d}");
    let (ops, _) = d.minimized.expect("reproduced");
    assert_eq!(ops.len(), 51, "50 distinct inserts, then one more: {ops:?}");
}
