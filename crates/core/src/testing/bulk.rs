//! Bulk: enough keys that every structure grows through several levels, splits, resizes and
//! merges.
//!
//! Fifty thousand keys (scaled) of three shapes mixed — random big-endian integers,
//! sequential big-endian integers (right-edge growth), and URL-like strings under a few
//! dozen host prefixes — are inserted in random order, verified, half removed in random
//! order, verified, the rest removed, verified empty, then a fresh set inserted into the
//! emptied index (reuse of freed space) and verified. Verification is every point view and,
//! for ordered indexes, a full scan plus sampled scans, ranges and prefix scans.

use std::collections::BTreeSet;

use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

use super::common::{
    Check, Failure, Model, View, ensure, ordered_view, point_view, run_once, show, verify_all,
};
use super::rng::{rng, sized};
use crate::api::{KvIndex, OrderedKvIndex, u64_key};

fn bulk_keys(n: usize, round: u64, rng: &mut SmallRng) -> Vec<Vec<u8>> {
    let mut set = BTreeSet::new();
    let mut seq = round << 40;
    while set.len() < n {
        let key = match rng.random_range(0..3) {
            0 => u64_key(rng.random()).to_vec(),
            1 => {
                seq += 1;
                u64_key(seq).to_vec()
            }
            _ => format!(
                "https://host{}.example/{}/item/{}",
                rng.random_range(0..40),
                round,
                rng.random_range(0..1_000_000u32)
            )
            .into_bytes(),
        };
        set.insert(key);
    }
    let mut keys: Vec<Vec<u8>> = set.into_iter().collect();
    keys.shuffle(rng);
    keys
}

fn bulk_value(i: usize, round: u64) -> Vec<u8> {
    let mut v = (i as u64 ^ (round << 56)).to_be_bytes().to_vec();
    v.resize(8 + i % 24, round as u8);
    v
}

fn bulk_impl<I: KvIndex>(
    part: &'static str,
    make: &dyn Fn() -> I,
    view: View<I>,
) -> Result<(), Failure> {
    run_once(part, |seed| {
        let mut r = rng(seed);
        let n = sized(50_000, 64);
        let index = make();
        let ordered = view(&index);
        let mut model = Model::new();
        let verify = |model: &Model, absent: &[Vec<u8>], phase: &str, r: &mut SmallRng| -> Check {
            let absent: Vec<Vec<u8>> = absent.iter().take(sized(5000, 16)).cloned().collect();
            verify_all(&index, ordered, model, &absent, sized(4000, 12), r)
                .map_err(|e| format!("after {phase} ({} keys): {e}", model.len()))
        };
        for round in 0..2u64 {
            let keys = bulk_keys(n, round, &mut r);
            for (i, k) in keys.iter().enumerate() {
                let v = bulk_value(i, round);
                let got = index.insert(k, &v);
                ensure!(
                    got == Ok(true),
                    "round {round}: insert #{i} of new key {} returned {got:?}",
                    show(k)
                );
                model.insert(k.clone(), v);
            }
            verify(
                &model,
                &[],
                &format!("round {round}: inserting {n} keys"),
                &mut r,
            )?;
            let (gone, kept) = keys.split_at(n / 2);
            for k in gone {
                ensure!(
                    index.remove(k),
                    "round {round}: remove of present key {} returned false",
                    show(k)
                );
                model.remove(k);
            }
            verify(
                &model,
                gone,
                &format!("round {round}: removing half"),
                &mut r,
            )?;
            for k in kept.iter().rev() {
                ensure!(
                    index.remove(k),
                    "round {round}: remove of present key {} returned false",
                    show(k)
                );
                model.remove(k);
            }
            verify(
                &model,
                &keys,
                &format!("round {round}: removing everything"),
                &mut r,
            )?;
        }
        Ok(())
    })
}

/// Fifty thousand keys (scaled) of mixed shapes inserted, half removed, all removed and a
/// fresh set inserted again, with every point view verified after each phase.
pub fn check_bulk<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    bulk_impl("bulk", make, point_view::<I>)
}

/// [`check_bulk`] plus a full scan and sampled ordered views after each phase.
pub fn check_bulk_ordered<I: OrderedKvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    bulk_impl("bulk_ordered", make, ordered_view::<I>)
}
