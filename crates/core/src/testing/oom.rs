//! Out of memory: every failed allocation is an `Error::OutOfMemory` from the operation
//! that needed it, and leaves the index consistent and usable.
//!
//! The part drives the test fail point of `crate::alloc::failpoint` (feature `failpoints`): it arms "fail the
//! `N`th allocation from now" on the calling thread for `N = 1, 2, 3, …` (up to
//! [`MAX_N`], then again from 1), and runs a seeded mix of inserts, upserts and removes
//! (and lookups, since caches allocate on reads) against a `BTreeMap` model while the index
//! grows, churns, shrinks and grows again (so
//! that structures split, merge, expand and reach their large-block paths). After every
//! operation:
//!
//! - `Err(OutOfMemory)` must come from an injected failure (none injected: the error is
//!   spurious); the model is left unchanged, since the operation was not acknowledged;
//! - `Ok` updates the model (an index may absorb a failure, e.g. skip an optional merge or
//!   not cache a value, but must then have done the operation);
//! - whenever a failure was injected, the whole index is checked against the model (`len`,
//!   every key's value, the failed key; for ordered indexes a full scan): it holds exactly
//!   what was acknowledged. Then the failed operation is retried with the fail point
//!   disarmed and must succeed: the index is still usable.
//!
//! The fail point counts only allocations made through [`crate::alloc`]; an index that
//! allocates only from the standard library (the reference `LockedBTreeMap`) never sees a
//! failure, so the part fails for it ("no failure was injected") and the
//! [`conformance_tests!`](crate::conformance_tests) macro leaves it out for indexes
//! declared `std_alloc`.

use super::common::{Failure, ordered_view, point_view, run_seeded};
use crate::api::{KvIndex, OrderedKvIndex};

/// The largest `N` of "fail the `N`th allocation from now"; then `N` starts again at 1.
pub const MAX_N: u64 = 48;

/// [`check_out_of_memory`] for an unordered index.
pub fn check_out_of_memory<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    run_seeded("out_of_memory", |seed| {
        imp::run(make, point_view::<I>, seed)
    })
}

/// The out-of-memory part (see the [module docs](self)) for an ordered index: also compares
/// a full scan after every injected failure.
pub fn check_out_of_memory_ordered<I: OrderedKvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    run_seeded("out_of_memory", |seed| {
        imp::run(make, ordered_view::<I>, seed)
    })
}

/// The part's body: needs the fail point (`cfg(test)` or feature `failpoints`).
#[cfg(any(test, feature = "failpoints"))]
mod imp {
    use rand::Rng;
    use rand::rngs::SmallRng;

    use super::super::common::{
        Check, Model, View, collect, compare_scan, ensure, show, verify_point,
    };
    use super::super::rng::{KeyDist, derive, rng, sized};
    use super::MAX_N;
    use crate::alloc::failpoint;
    use crate::api::{Error, KvIndex};

    /// Why an operation was not acknowledged as the model expects.
    enum Outcome {
        /// The index returned an error.
        Error(Error),
        /// The index returned a wrong result (the message says which).
        Wrong(String),
    }

    fn ensure_result(ok: bool, message: impl FnOnce() -> String) -> Result<(), Outcome> {
        if ok {
            Ok(())
        } else {
            Err(Outcome::Wrong(message()))
        }
    }

    enum Op {
        Insert(Vec<u8>, Vec<u8>),
        Remove(Vec<u8>),
        /// A lookup: caches (the SLB) allocate on reads.
        Get(Vec<u8>),
    }

    impl Op {
        fn describe(&self) -> String {
            match self {
                Op::Insert(k, v) => format!("insert({}, {} bytes)", show(k), v.len()),
                Op::Remove(k) => format!("remove({})", show(k)),
                Op::Get(k) => format!("get({})", show(k)),
            }
        }

        fn key(&self) -> &[u8] {
            match self {
                Op::Insert(k, _) | Op::Remove(k) | Op::Get(k) => k,
            }
        }
    }

    struct Run<'a, I: KvIndex> {
        index: &'a I,
        view: View<I>,
        model: Model,
        rng: SmallRng,
        /// The `N` armed next.
        n: u64,
        /// Failures injected.
        injected: u64,
    }

    impl<I: KvIndex> Run<'_, I> {
        fn value(&mut self) -> Vec<u8> {
            let len = match self.rng.random_range(0..100) {
                0..40 => self.rng.random_range(0..=8),
                40..97 => self.rng.random_range(9..=120),
                // Beyond every structure's largest size class.
                _ => self.rng.random_range(4200..=6000),
            };
            let b = self.rng.random::<u8>();
            vec![b; len]
        }

        fn key(&mut self) -> Vec<u8> {
            if !self.model.is_empty() && self.rng.random_bool(0.3) {
                // An existing key (upsert or remove of a present key).
                let i = self.rng.random_range(0..self.model.len());
                return self.model.keys().nth(i).cloned().unwrap_or_default();
            }
            let dist = if self.rng.random_bool(0.8) {
                KeyDist::BigEndianInts
            } else {
                KeyDist::Mixed
            };
            let mut k = dist.sample(&mut self.rng);
            // Spread the integer keys: otherwise they collide a lot.
            k.extend_from_slice(&self.rng.random::<u16>().to_be_bytes());
            k
        }

        /// Applies `op` to the index and, if acknowledged, to the model.
        fn apply(&mut self, op: &Op) -> Result<(), Outcome> {
            match op {
                Op::Insert(k, v) => {
                    let new = self.index.insert(k, v).map_err(Outcome::Error)?;
                    let was = self.model.insert(k.clone(), v.clone());
                    ensure_result(new == was.is_none(), || {
                        format!("insert returned new = {new}, expected {}", was.is_none())
                    })
                }
                Op::Remove(k) => {
                    let present = self.index.remove(k);
                    let was = self.model.remove(k.as_slice());
                    ensure_result(present == was.is_some(), || {
                        format!("remove returned {present}, expected {}", was.is_some())
                    })
                }
                Op::Get(k) => {
                    let got = self.index.get(k);
                    let want = self.model.get(k.as_slice());
                    ensure_result(got.as_ref() == want, || {
                        format!(
                            "get returned {:?} bytes, expected {:?}",
                            got.as_ref().map(Vec::len),
                            want.map(Vec::len)
                        )
                    })
                }
            }
        }

        /// The whole index against the model, plus `key` (present or absent per the model).
        fn verify(&mut self, key: &[u8]) -> Check {
            verify_point(self.index, &self.model, &[key.to_vec()])?;
            if let Some(o) = (self.view)(self.index) {
                let full = collect(usize::MAX, |v| o.scan(std::ops::Bound::Unbounded, v));
                compare_scan(
                    &|| "full scan(Unbounded)".to_string(),
                    &full,
                    self.model.iter(),
                )?;
            }
            Ok(())
        }

        /// Runs one operation with the fail point armed; see the module docs.
        fn step(&mut self, step: usize, op: Op) -> Check {
            if !failpoint::is_armed() {
                failpoint::fail_nth(self.n);
                self.n = self.n % MAX_N + 1;
            }
            let before = failpoint::injected();
            let result = self.apply(&op);
            let fired = failpoint::injected() > before;
            match &result {
                Ok(()) => {}
                Err(Outcome::Error(Error::OutOfMemory)) => ensure!(
                    fired,
                    "step {step}: {} returned OutOfMemory with no failure injected",
                    op.describe()
                ),
                Err(Outcome::Error(e)) => {
                    return Err(format!("step {step}: {} returned {e:?}", op.describe()));
                }
                Err(Outcome::Wrong(m)) => {
                    return Err(format!(
                        "step {step}: {}: {m} (failure injected: {fired})",
                        op.describe()
                    ));
                }
            }
            if !fired {
                return Ok(());
            }
            self.injected += 1;
            let failed = result.is_err();
            self.verify(op.key()).map_err(|m| {
                format!(
                    "step {step}: after an injected allocation failure in {} ({}): {m}",
                    op.describe(),
                    if failed { "reported" } else { "absorbed" },
                )
            })?;
            if failed {
                // Still usable: the same operation succeeds once memory is there again.
                failpoint::disarm();
                if let Err(e) = self.apply(&op) {
                    let what = match e {
                        Outcome::Error(e) => format!("{e:?}"),
                        Outcome::Wrong(m) => m,
                    };
                    return Err(format!(
                        "step {step}: retrying {} after an injected failure: {what}",
                        op.describe()
                    ));
                }
                let got = self.index.get(op.key());
                ensure!(
                    got.as_deref() == self.model.get(op.key()).map(Vec::as_slice),
                    "step {step}: after retrying {}, get = {:?} bytes, expected {:?}",
                    op.describe(),
                    got.map(|v| v.len()),
                    self.model.get(op.key()).map(Vec::len)
                );
            }
            Ok(())
        }
    }

    pub(super) fn run<I: KvIndex>(make: &dyn Fn() -> I, view: View<I>, seed: u64) -> Check {
        failpoint::disarm();
        // Constructors may allocate; they run unarmed.
        let index = make();
        let _disarm = failpoint::arm(0);
        let mut r = Run {
            index: &index,
            view,
            model: Model::new(),
            rng: rng(derive(seed, 0x00_3d)),
            n: 1,
            injected: 0,
        };
        let target = sized(3000, 150);
        let mut step = 0;
        // Growth, churn, shrinking (merges), growth again.
        for (phase, ops, p_insert) in [
            (0, target, 0.95),
            (1, target / 2, 0.5),
            (2, target, 0.1),
            (3, target / 2, 0.9),
        ] {
            for _ in 0..ops {
                let key = r.key();
                let op = if r.rng.random_bool(0.3) {
                    Op::Get(key)
                } else if r.rng.random_bool(p_insert) {
                    let v = r.value();
                    Op::Insert(key, v)
                } else if phase >= 2 && !r.model.is_empty() {
                    let i = r.rng.random_range(0..r.model.len());
                    Op::Remove(r.model.keys().nth(i).cloned().unwrap_or_default())
                } else {
                    Op::Remove(key)
                };
                r.step(step, op)?;
                step += 1;
            }
        }
        failpoint::disarm();
        r.verify(b"")?;
        ensure!(
            r.injected > 0,
            "no failure was injected in {step} operations: the index does not allocate through \
             orrery_core::alloc (declare it `std_alloc` in conformance_tests!)"
        );
        Ok(())
    }
}

/// Without the fail point the part cannot run: it says so instead of passing.
#[cfg(not(any(test, feature = "failpoints")))]
mod imp {
    use super::super::common::{Check, View};
    use super::KvIndex;

    pub(super) fn run<I: KvIndex>(_: &dyn Fn() -> I, _: View<I>, _: u64) -> Check {
        Err(
            "the out-of-memory part needs orrery-core's `failpoints` feature \
             (add it to the `orrery-core` dev-dependency)"
                .to_string(),
        )
    }
}
