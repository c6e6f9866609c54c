//! Out of memory in the middle of splits and merges leaves a *structurally* valid index:
//! beyond the conformance part (which compares contents), every injected allocation failure
//! is followed by `debug_validate` (leaf order, anchors, both MetaTrieHTs against the
//! LeafList). Small leaves (8 pairs), so that most inserts split and most removals merge,
//! and mixed pair sizes, so that splits between leaves of both kinds convert pairs.
//!
//! Regression guard for the aborts of issue 19: a failed leaf or table allocation used to
//! call `handle_alloc_error`.

use std::collections::BTreeMap;

use orrery_core::Error;
use orrery_core::alloc::failpoint;
use orrery_wormhole::{Config, Wormhole};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[test]
fn failed_allocations_keep_the_structure_valid() {
    let wh = Wormhole::with_config(Config::builder().leaf_capacity(8).build().unwrap()).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(19);
    let rounds: u32 = if cfg!(miri) { 200 } else { 20_000 };
    let mut injected = 0;
    let mut reported = 0;
    let mut n = 1;
    for round in 0..rounds {
        // Fail the `n`th allocation from now, n = 1, 2, …, 23, 1, …: each armed failure
        // waits for as many operations as it takes.
        if !failpoint::is_armed() {
            failpoint::fail_nth(n);
            n = n % 23 + 1;
        }
        let before = failpoint::injected();
        // Grow for the first half, then shrink (merges).
        let key = rng.random_range(0..2000u32).to_be_bytes().to_vec();
        let insert = round < rounds / 2 || rng.random_bool(0.3);
        if insert {
            let value = vec![round as u8; [0, 4, 12, 40][rng.random_range(0..4)]];
            match wh.insert(&key, &value) {
                Ok(new) => assert_eq!(new, model.insert(key.clone(), value).is_none()),
                Err(Error::OutOfMemory) => {
                    assert!(failpoint::injected() > before, "spurious OutOfMemory");
                    reported += 1;
                }
                Err(e) => panic!("insert: {e:?}"),
            }
        } else {
            assert_eq!(wh.remove(&key), model.remove(&key).is_some());
        }
        if failpoint::injected() > before {
            injected += 1;
            failpoint::disarm();
            wh.check_invariants().unwrap();
            assert_eq!(wh.len(), model.len());
            for (k, v) in &model {
                assert_eq!(wh.get(k).as_ref(), Some(v), "key {k:?}");
            }
        }
    }
    failpoint::disarm();
    wh.check_invariants().unwrap();
    eprintln!("{injected} failures injected, {reported} reported by insert");
    assert!(
        injected > 200 && reported > 100,
        "{injected} injected, {reported} reported"
    );
}
