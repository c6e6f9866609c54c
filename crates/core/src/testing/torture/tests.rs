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

/// Where [`Misshown`] shows a wrong value (the stored values stay right).
#[derive(Clone, Copy, Debug)]
enum Misshow {
    /// `get_with`'s callback (while `get` answers right).
    GetWith,
    /// `get_many`'s callback, for the second key of a batch and on.
    GetMany,
    /// The closure of `update`.
    Update,
    /// The closure of `compute`.
    Compute,
    /// The closure of `update_in_place` (its result is stored right).
    UpdateInPlace,
}

/// A reference whose callbacks and closures are shown a value with its last byte flipped
/// (or one byte, for an empty value) at one place: the checks that compare what a
/// callback is shown where it lies (without copying it) must catch each.
struct Misshown(LockedBTreeMap, Misshow);

fn flipped(v: &[u8]) -> Vec<u8> {
    let mut w = v.to_vec();
    match w.last_mut() {
        Some(b) => *b ^= 1,
        None => w.push(0),
    }
    w
}

impl crate::api::KvIndex for Misshown {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        match self.1 {
            Misshow::GetWith => self.0.get_with(key, &mut |v| f(&flipped(v))),
            _ => self.0.get_with(key, f),
        }
    }
    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.0.get(key)
    }
    fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        match self.1 {
            Misshow::GetMany => self.0.get_many(keys, &mut |i, v| match v {
                Some(v) if i > 0 => f(i, Some(&flipped(v))),
                _ => f(i, v),
            }),
            _ => self.0.get_many(keys, f),
        }
    }
    fn insert(&self, key: &[u8], value: &[u8]) -> crate::Result<bool> {
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

impl crate::api::KvUpdate for Misshown {
    fn compute_with(&self, key: &[u8], f: &mut crate::api::ComputeFn<'_>) -> crate::Result<bool> {
        match self.1 {
            // Shown a wrong value, but what the closure returns is computed from the
            // right one when it does not depend on it (`Set`, `Remove`).
            Misshow::Compute => self.0.compute_with(key, &mut |cur| {
                let shown = cur.map(flipped);
                f(shown.as_deref())
            }),
            _ => self.0.compute_with(key, f),
        }
    }
    fn update_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8]) -> Vec<u8>) -> crate::Result<bool> {
        match self.1 {
            Misshow::Update => self.0.update_with(key, &mut |cur| f(&flipped(cur))),
            _ => self.0.update_with(key, f),
        }
    }
    fn update_in_place_with(
        &self,
        key: &[u8],
        f: &mut dyn FnMut(&mut [u8]),
    ) -> crate::Result<bool> {
        match self.1 {
            // The closure runs on a flipped copy; the right bytes are then rewritten as it
            // would have (it xors every byte with one constant, so xoring twice recovers it).
            Misshow::UpdateInPlace => self.0.update_in_place_with(key, &mut |cur| {
                let mut shown = flipped(cur);
                let before = shown.clone();
                f(&mut shown);
                for (b, (s, o)) in cur.iter_mut().zip(shown.iter().zip(&before)) {
                    *b ^= s ^ o;
                }
            }),
            _ => self.0.update_in_place_with(key, f),
        }
    }
}

/// What a callback or closure is shown is checked, not only what is stored.
#[test]
fn wrong_values_shown_to_callbacks_are_caught() {
    let mut missed = Vec::new();
    for which in [
        Misshow::GetWith,
        Misshow::GetMany,
        Misshow::Update,
        Misshow::Compute,
        Misshow::UpdateInPlace,
    ] {
        let make = move || {
            Box::new(Target::point(Misshown(LockedBTreeMap::new(), which)).with_rmw())
                as Box<dyn Subject>
        };
        let r = run(&make, &settings(13, 100_000), &mut |_| {});
        let expect = match which {
            Misshow::GetWith => "get_with(",
            Misshow::GetMany => "get_many: key #",
            _ => "the closure was shown",
        };
        match r.divergence {
            Some(d) if d.message.contains(expect) && d.reproduced => {}
            Some(d) => missed.push(format!("{which:?} caught as something else: {d}")),
            None => missed.push(format!("{which:?} not caught in {} ops", r.ops)),
        }
    }
    assert!(missed.is_empty(), "{missed:#?}");
}
