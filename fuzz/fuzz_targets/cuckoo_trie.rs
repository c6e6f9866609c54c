//! Differential fuzzing of the Cuckoo Trie against the BTreeMap model: the default
//! configuration, and a 4-bucket initial table with 1-bit and 4-bit symbols (relocation,
//! growth, jump chains and their splits and collapses within short inputs). After the
//! operations, the concrete iterators (`iter`, `range`, `.rev()`, both ends at once, `seek`)
//! are checked against the full scan the model has just confirmed: ascending ones walk the
//! next-leaf locators, descending ones the trie backwards.
#![no_main]

use std::ops::Bound;

use libfuzzer_sys::fuzz_target;
use orrery_core::testing::fuzz::{ops_from_bytes, run_differential, tally};
use orrery_cuckoo_trie::{Config, CuckooTrie};

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn check_iterators(ct: &CuckooTrie) {
    let mut scanned: Pairs = Vec::new();
    ct.scan(Bound::Unbounded, &mut |k, v| {
        scanned.push((k.to_vec(), v.to_vec()));
        std::ops::ControlFlow::Continue(())
    });
    let fwd: Pairs = ct.iter().map(|e| e.into_pair()).collect();
    assert_eq!(fwd, scanned, "iter() differs from the full scan");
    let mut back: Pairs = ct.iter().rev().map(|e| e.into_pair()).collect();
    back.reverse();
    assert_eq!(back, fwd, "iter().rev() is not the reverse of iter()");
    // Both ends at once: every pair exactly once, in order from each side.
    let mut it = ct.iter();
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
        let from: Pairs = ct.range(k..).map(|e| e.into_pair()).collect();
        assert_eq!(from, fwd[i..], "range(k..)");
        let mut below: Pairs = ct.range(..k).rev().map(|e| e.into_pair()).collect();
        below.reverse();
        assert_eq!(below, fwd[..i], "range(..k).rev()");
        let mut seeking = ct.iter();
        seeking.seek(Bound::Excluded(k));
        let after: Pairs = seeking.map(|e| e.into_pair()).collect();
        assert_eq!(after, fwd[i + 1..], "seek(Excluded(k))");
    }
}

fuzz_target!(|data: &[u8]| {
    let ops = ops_from_bytes(data);
    tally(&ops);
    let default = CuckooTrie::new();
    run_differential(&default, &ops);
    check_iterators(&default);
    for bits in [1, 4] {
        let config = Config::builder()
            .initial_buckets(4)
            .symbol_bits(bits)
            .prefetch_depth(2)
            .build()
            .unwrap();
        let small = CuckooTrie::with_config(config).unwrap();
        run_differential(&small, &ops);
        check_iterators(&small);
    }
});
