//! Key pre-processing (§3.4) on keys that share long prefixes — sequential 8-byte integers
//! in ascending, descending and shuffled order — through the public API: every key is
//! found, scans both ways return the keys in order, and removing every other key leaves
//! exactly the rest.
//!
//! Regression test for issue #22 ("pre-processing is pathologically slow on sequential
//! keys"): pre-processing puts up to 65,536 such keys into one container, which is where
//! that defect lived. The bound on the work per search is checked inside the crate
//! (`prep::tests::prep_sequential_keys_bounded_search_work`); this test checks that the
//! structures doing it (jump tables built in every insert order, split parts) keep the
//! index's contents right.

use std::ops::{Bound, ControlFlow};

use orrery_hyperion::{Config, Hyperion};
use rand::seq::SliceRandom;

fn keys_in(h: &Hyperion, rev: bool) -> Vec<u64> {
    let mut out = Vec::new();
    let mut visit = |k: &[u8], v: &[u8]| {
        let k = u64::from_be_bytes(k.try_into().expect("8-byte key"));
        assert_eq!(v, k.to_le_bytes(), "value of {k}");
        out.push(k);
        ControlFlow::Continue(())
    };
    if rev {
        h.scan_rev(Bound::Unbounded, &mut visit);
    } else {
        h.scan(Bound::Unbounded, &mut visit);
    }
    out
}

#[test]
fn prep_sequential_keys_in_every_order() {
    let n: u64 = 30_000;
    let mut shuffled: Vec<u64> = (0..n).collect();
    shuffled.shuffle(&mut orrery_core::testing::rng::rng(0x2545_F491_4F6C_DD1D));
    let orders: [(&str, Vec<u64>); 3] = [
        ("ascending", (0..n).collect()),
        ("descending", (0..n).rev().collect()),
        ("shuffled", shuffled),
    ];
    for (name, order) in orders {
        let h = Hyperion::with_config(Config::builder().preprocess(true).build().unwrap()).unwrap();
        for &i in &order {
            assert!(
                h.insert(&i.to_be_bytes(), &i.to_le_bytes()).unwrap(),
                "{name}: {i} new"
            );
        }
        assert_eq!(h.len(), n as usize, "{name}");
        for i in 0..n {
            assert_eq!(
                h.get(&i.to_be_bytes()).as_deref(),
                Some(&i.to_le_bytes()[..]),
                "{name}: {i}"
            );
        }
        assert!(h.get(&n.to_be_bytes()).is_none());
        let all: Vec<u64> = (0..n).collect();
        assert_eq!(keys_in(&h, false), all, "{name}: ascending scan");
        assert_eq!(
            keys_in(&h, true),
            all.iter().rev().copied().collect::<Vec<_>>(),
            "{name}: descending scan"
        );
        // Remove every other key, in the load's order.
        for &i in order.iter().filter(|&&i| i % 2 == 1) {
            assert!(h.remove(&i.to_be_bytes()), "{name}: remove {i}");
        }
        let even: Vec<u64> = (0..n).step_by(2).collect();
        assert_eq!(keys_in(&h, false), even, "{name}: after removal");
        for i in 0..n {
            assert_eq!(
                h.get(&i.to_be_bytes()).is_some(),
                i % 2 == 0,
                "{name}: {i} after removal"
            );
        }
    }
}
