//! Differential fuzzing of Hyperion against the BTreeMap model: the default configuration,
//! one arena with a 256-byte ejection threshold (ejection within short inputs), and key
//! pre-processing. After the operations, the concrete iterators (`iter`, `range`, `.rev()`,
//! both ends at once, `seek`) are checked against the full scan the model has just
//! confirmed.
#![no_main]

use std::ops::Bound;

use libfuzzer_sys::fuzz_target;
use orrery_core::testing::fuzz::{ops_from_bytes, run_differential, tally};
use orrery_hyperion::{Config, Hyperion};

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn check_iterators(h: &Hyperion) {
    let mut scanned: Pairs = Vec::new();
    h.scan(Bound::Unbounded, &mut |k, v| {
        scanned.push((k.to_vec(), v.to_vec()));
        std::ops::ControlFlow::Continue(())
    });
    let fwd: Pairs = h.iter().map(|e| e.into_pair()).collect();
    assert_eq!(fwd, scanned, "iter() differs from the full scan");
    let mut back: Pairs = h.iter().rev().map(|e| e.into_pair()).collect();
    back.reverse();
    assert_eq!(back, fwd, "iter().rev() is not the reverse of iter()");
    // Both ends at once: every pair exactly once, in order from each side.
    let mut it = h.iter();
    let (mut front, mut tail) = (Vec::new(), Vec::new());
    loop {
        match it.next() {
            Some(e) => front.push(e.into_pair()),
            None => break,
        }
        match it.next_back() {
            Some(e) => tail.push(e.into_pair()),
            None => break,
        }
    }
    tail.reverse();
    front.extend(tail);
    assert_eq!(
        front, fwd,
        "alternating next/next_back lost or repeated a pair"
    );
    // Bounds at (a sample of) the present keys.
    let step = fwd.len() / 8 + 1;
    for i in (0..fwd.len()).step_by(step) {
        let k = fwd[i].0.as_slice();
        let from: Pairs = h.range(k..).map(|e| e.into_pair()).collect();
        assert_eq!(from, fwd[i..], "range(k..)");
        let mut below: Pairs = h.range(..k).rev().map(|e| e.into_pair()).collect();
        below.reverse();
        assert_eq!(below, fwd[..i], "range(..k).rev()");
        let mut seeking = h.iter();
        seeking.seek(Bound::Excluded(k));
        let after: Pairs = seeking.map(|e| e.into_pair()).collect();
        assert_eq!(after, fwd[i + 1..], "seek(Excluded(k))");
    }
}

fuzz_target!(|data: &[u8]| {
    let ops = ops_from_bytes(data);
    tally(&ops);
    let default = Hyperion::new();
    run_differential(&default, &ops);
    check_iterators(&default);
    let small = Hyperion::with_config(
        Config::builder().arenas(1).eject_threshold(256).build().unwrap(),
    )
    .unwrap();
    run_differential(&small, &ops);
    check_iterators(&small);
    let prep = Hyperion::with_config(Config::builder().preprocess(true).build().unwrap()).unwrap();
    run_differential(&prep, &ops);
    check_iterators(&prep);
});
