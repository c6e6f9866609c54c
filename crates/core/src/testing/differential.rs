//! Differential random operations against a `BTreeMap` model.
//!
//! For every seed (see [`super::rng`]) and every [`KeyDist`], a fresh index runs a seeded
//! sequence of operations, each checked against the model as it returns: insert/upsert
//! (new or not), remove (present or not), `get`/`get_with`/`contains_key`, `get_many`
//! batches mixing hits and misses, over-long inserts (rejected, nothing changed), `len`,
//! and for ordered indexes scans from random bounds with random early stops, `scan_range`,
//! `scan_prefix`, `first` and `last`. The run goes through four phases — growth, churn,
//! shrinking, churn — so that structures split and merge. At the end every key ever used is
//! checked and the full contents compared. A failure names the seed, the distribution, the
//! step and the operation.

use std::collections::HashSet;
use std::ops::Bound;

use rand::Rng;
use rand::rngs::SmallRng;

use super::common::{
    Check, Failure, Model, Stop, View, check_absent, check_first_last, check_get_many_batch,
    check_present, collect, compare_scan, ensure, model_range, ordered_view, point_view,
    run_seeded, show, show_bound, verify_all,
};
use super::rng::{KeyDist, derive, over_long_value, rng, sized};
use crate::api::{Error, KvIndex, MAX_KEY_LEN, MAX_VALUE_LEN, OrderedKvIndex};

/// Keys remembered for reuse (so that lookups and removals hit); replaced at random when full.
const SEEN_CAP: usize = 4096;

struct Run<'a, I: KvIndex> {
    index: &'a I,
    ordered: Option<&'a dyn OrderedKvIndex>,
    dist: KeyDist,
    model: Model,
    seen: Vec<Vec<u8>>,
    seen_set: HashSet<Vec<u8>>,
    rng: SmallRng,
}

impl<I: KvIndex> Run<'_, I> {
    fn key(&mut self) -> Vec<u8> {
        if !self.seen.is_empty() && self.rng.random_bool(0.55) {
            return self.seen[self.rng.random_range(0..self.seen.len())].clone();
        }
        let k = self.dist.sample(&mut self.rng);
        if !self.seen_set.contains(&k) {
            if self.seen.len() < SEEN_CAP {
                self.seen.push(k.clone());
            } else {
                let slot = self.rng.random_range(0..SEEN_CAP);
                self.seen_set.remove(&self.seen[slot]);
                self.seen[slot] = k.clone();
            }
            self.seen_set.insert(k.clone());
        }
        k
    }

    /// A key or a near miss of one (`0x00`/`0xFF` appended, last byte dropped).
    fn probe(&mut self) -> Vec<u8> {
        let mut k = self.key();
        match self.rng.random_range(0..6) {
            0 => k.push(0x00),
            1 => k.push(0xFF),
            2 => {
                k.pop();
            }
            _ => {}
        }
        k
    }

    fn value(&mut self, step: usize) -> Vec<u8> {
        match self.rng.random_range(0..100) {
            0..5 => Vec::new(),
            5 => {
                let len = self.rng.random_range(1000..4000);
                let mut v = vec![(step % 251) as u8; len];
                v[..4].copy_from_slice(&(step as u32).to_be_bytes());
                v
            }
            _ => {
                let len = self.rng.random_range(4..40);
                let mut v: Vec<u8> = (0..len).map(|j| (step + j) as u8).collect();
                v[..4].copy_from_slice(&(step as u32).to_be_bytes());
                v
            }
        }
    }

    fn bound(&mut self) -> Bound<Vec<u8>> {
        match self.rng.random_range(0..10) {
            0 => Bound::Unbounded,
            1..6 => Bound::Included(self.probe()),
            _ => Bound::Excluded(self.probe()),
        }
    }

    fn limit(&mut self) -> usize {
        match self.rng.random_range(0..20) {
            0 => usize::MAX,
            1..5 => 1,
            _ => self.rng.random_range(2..=30),
        }
    }

    /// One operation, checked; `insert_bias` is the share of mutations that insert.
    fn step(&mut self, step: usize, insert_bias: f64) -> Check {
        let index = self.index;
        let op = self.rng.random_range(0..100);
        let ordered = self.ordered;
        let op = if ordered.is_none() && op >= 70 {
            op % 70
        } else {
            op
        };
        match op {
            // Mutations: insert/upsert or remove.
            0..40 => {
                let k = self.key();
                if self.rng.random_bool(insert_bias) {
                    let v = self.value(step);
                    let got = index.insert(&k, &v);
                    let want = !self.model.contains_key(&k);
                    ensure!(
                        got == Ok(want),
                        "insert({}, {}) returned {got:?}, expected Ok({want})",
                        show(&k),
                        show(&v)
                    );
                    self.model.insert(k, v);
                } else {
                    let got = index.remove(&k);
                    let want = self.model.remove(&k).is_some();
                    ensure!(
                        got == want,
                        "remove({}) returned {got}, expected {want}",
                        show(&k)
                    );
                }
            }
            40..55 => {
                let k = self.probe();
                match self.model.get(&k) {
                    Some(v) => check_present(index, &k, v)?,
                    None => check_absent(index, &k)?,
                }
            }
            55..63 => {
                let n = self.rng.random_range(0..24);
                let keys: Vec<Vec<u8>> = (0..n).map(|_| self.probe()).collect();
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                check_get_many_batch(index, &self.model, &refs)?;
            }
            63..66 => {
                let len = index.len();
                ensure!(
                    len == self.model.len(),
                    "len() = {len}, expected {}",
                    self.model.len()
                );
                ensure!(
                    index.is_empty() == self.model.is_empty(),
                    "is_empty() = {} with {} keys",
                    index.is_empty(),
                    self.model.len()
                );
            }
            66..70 => {
                if self.rng.random_range(0..8) == 0 {
                    // Over-long input is rejected and changes nothing.
                    let k = self.key();
                    if self.rng.random_bool(0.5) {
                        let long = [
                            &k[..],
                            &vec![0x00; MAX_KEY_LEN + 1 - k.len().min(MAX_KEY_LEN)][..],
                        ]
                        .concat();
                        let got = index.insert(&long, b"v");
                        ensure!(
                            got == Err(Error::KeyTooLong {
                                len: long.len(),
                                max: MAX_KEY_LEN
                            }),
                            "insert of a {}-byte key (extending {}) returned {got:?}",
                            long.len(),
                            show(&k)
                        );
                        ensure!(
                            !index.remove(&long),
                            "remove of a {}-byte key returned true",
                            long.len()
                        );
                    } else {
                        let long = over_long_value();
                        let got = index.insert(&k, long);
                        ensure!(
                            got == Err(Error::ValueTooLong {
                                len: long.len(),
                                max: MAX_VALUE_LEN
                            }),
                            "insert({}) of a {}-byte value returned {got:?}",
                            show(&k),
                            long.len()
                        );
                    }
                    match self.model.get(&k) {
                        Some(v) => check_present(index, &k, v)?,
                        None => check_absent(index, &k)?,
                    }
                } else {
                    // A burst of ascending keys under one random prefix: splits in one place.
                    let base = self.key();
                    let n = self.rng.random_range(2..40);
                    let remove = self.rng.random_bool(1.0 - insert_bias);
                    for j in 0..n as u8 {
                        let k = [&base[..], &[j]].concat();
                        if remove {
                            let got = index.remove(&k);
                            let want = self.model.remove(&k).is_some();
                            ensure!(
                                got == want,
                                "burst remove({}) returned {got}, expected {want}",
                                show(&k)
                            );
                        } else {
                            let v = self.value(step);
                            let got = index.insert(&k, &v);
                            let want = !self.model.contains_key(&k);
                            ensure!(
                                got == Ok(want),
                                "burst insert({}) returned {got:?}, expected Ok({want})",
                                show(&k)
                            );
                            self.model.insert(k, v);
                        }
                    }
                }
            }
            // Ordered operations.
            70..82 => {
                let o = ordered.expect("only for ordered indexes");
                let start = self.bound();
                let limit = self.limit();
                let start = start.as_ref().map(Vec::as_slice);
                let got = collect(limit, |v| o.scan(start, v));
                compare_scan(
                    &|| format!("scan({}) {stop}", show_bound(start), stop = Stop(limit)),
                    &got,
                    model_range(&self.model, start, Bound::Unbounded).take(limit),
                )?;
            }
            82..90 => {
                let o = ordered.expect("only for ordered indexes");
                let (start, end) = (self.bound(), self.bound());
                let limit = self.limit();
                let (start, end) = (
                    start.as_ref().map(Vec::as_slice),
                    end.as_ref().map(Vec::as_slice),
                );
                let got = collect(limit, |v| o.scan_range(start, end, v));
                compare_scan(
                    &|| {
                        format!(
                            "scan_range({}, {}) {stop}",
                            show_bound(start),
                            show_bound(end),
                            stop = Stop(limit)
                        )
                    },
                    &got,
                    model_range(&self.model, start, end).take(limit),
                )?;
            }
            90..96 => {
                let o = ordered.expect("only for ordered indexes");
                let mut p = self.key();
                p.truncate(self.rng.random_range(0..=p.len()));
                let limit = self.limit();
                let got = collect(limit, |v| o.scan_prefix(&p, v));
                compare_scan(
                    &|| format!("scan_prefix({}) {stop}", show(&p), stop = Stop(limit)),
                    &got,
                    model_range(&self.model, Bound::Included(&p), Bound::Unbounded)
                        .take_while(|(k, _)| k.starts_with(&p))
                        .take(limit),
                )?;
            }
            _ => {
                let o = ordered.expect("only for ordered indexes");
                check_first_last(o, &self.model)?;
            }
        }
        Ok(())
    }
}

fn differential_impl<I: KvIndex>(
    part: &'static str,
    make: &dyn Fn() -> I,
    view: View<I>,
) -> Result<(), Failure> {
    run_seeded(part, |seed| {
        let steps = sized(6000, 30);
        for (d, dist) in KeyDist::ALL.into_iter().enumerate() {
            let index = make();
            let mut run = Run {
                index: &index,
                ordered: view(&index),
                dist,
                model: Model::new(),
                seen: Vec::new(),
                seen_set: HashSet::new(),
                rng: rng(derive(seed, d as u64)),
            };
            let context = |step: usize, e: String| {
                format!("distribution {}, step {step} of {steps}: {e}", dist.name())
            };
            for step in 0..steps {
                // Growth, churn, shrinking, churn.
                let bias = match 4 * step / steps {
                    0 => 0.85,
                    2 => 0.15,
                    _ => 0.5,
                };
                run.step(step, bias).map_err(|e| context(step, e))?;
            }
            let seen = run.seen.clone();
            verify_all(
                &index,
                run.ordered,
                &run.model,
                &seen,
                sized(3000, 12),
                &mut run.rng,
            )
            .map_err(|e| {
                format!(
                    "distribution {}, final contents after {steps} steps: {e}",
                    dist.name()
                )
            })?;
        }
        Ok(())
    })
}

/// Seeded random point operations against a `BTreeMap` model, over every [`KeyDist`], with
/// a final full-contents check.
pub fn check_differential<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    differential_impl("differential", make, point_view::<I>)
}

/// [`check_differential`] plus scans from random bounds with early stops, `scan_range`,
/// `scan_prefix`, `first` and `last`, and an ordered final check.
pub fn check_differential_ordered<I: OrderedKvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    differential_impl("differential_ordered", make, ordered_view::<I>)
}
