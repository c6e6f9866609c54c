//! One operation applied to a subject and to the `BTreeMap` model, its result checked.
//!
//! Every answer is compared with what the model says the contract requires: return values,
//! closure calls (`compute` and `update` call theirs exactly once and show the current
//! value; `update` of an absent key never calls it), scans and iterators pair by pair (with
//! no visit after `Break`), the counts of `remove_range`, and for [`Op::Verify`] every view
//! in full plus the structure's invariant walk. What a callback or closure is shown is
//! compared, in full, with the model's value where both lie, and copied only to report a
//! difference (values run up to 1 MiB). The model is updated as the contract says,
//! whatever the structure answered, so that the stream stays a function of the seed.

use std::ops::{Bound, ControlFlow};

use super::op::{ComputeAction, Op, OverLongVia, Step, UpdateAction, exact, exact_bound};
use super::stream::over_long_key;
use super::subject::Subject;
use crate::api::{Error, KvUpdate, MAX_KEY_LEN, MAX_VALUE_LEN, ScanVisitor};
use crate::batch::{BatchIter, Entry};
use crate::testing::common::{
    Check, Model, check_absent, check_first_last, check_get_many_batch, check_present, ensure,
    model_range, show, show_opt, verify_point,
};
use crate::testing::rng::over_long_value;

fn limit(l: u32) -> usize {
    if l == u32::MAX {
        usize::MAX
    } else {
        l as usize
    }
}

/// Whether `BTreeMap::range` accepts the bounds (it panics on inverted ones).
fn valid(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    match (lo, hi) {
        (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a <= b
        }
        _ => true,
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// Applies `op` to the subject and the model; `Err` says how the subject diverged.
pub(crate) fn apply(s: &dyn Subject, model: &mut Model, op: &Op) -> Check {
    let index = s.index();
    match op {
        Op::Insert { key, value } => {
            let v = value.bytes();
            let got = index.insert(key, &v);
            // One model lookup: the model's own insert says whether the key was new.
            let want = model.insert(key.clone(), v).is_none();
            ensure!(
                got == Ok(want),
                "insert returned {got:?}, expected Ok({want})"
            );
        }
        Op::Remove { key } => {
            let got = index.remove(key);
            let want = model.remove(key).is_some();
            ensure!(got == want, "remove returned {got}, expected {want}");
        }
        Op::Get { key } => match model.get(key) {
            Some(v) => check_present(index, key, v)?,
            None => check_absent(index, key)?,
        },
        Op::GetMany { keys } => {
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            check_get_many_batch(index, model, &refs)?;
        }
        Op::Compute { key, action } => compute(rmw(s)?, model, key, *action)?,
        Op::Update { key, action } => update(rmw(s)?, model, key, *action)?,
        Op::UpdateInPlace { key, xor } => update_in_place(rmw(s)?, model, key, *xor)?,
        Op::OverLong { key, via } => over_long(s, model, key, *via)?,
        Op::Len => {
            let len = index.len();
            ensure!(
                len == model.len(),
                "len() = {len}, expected {}",
                model.len()
            );
            ensure!(
                index.is_empty() == model.is_empty(),
                "is_empty() = {}",
                index.is_empty()
            );
        }
        Op::Verify => verify(s, model)?,
        _ => ordered(s, model, op)?,
    }
    Ok(())
}

fn rmw(s: &dyn Subject) -> Result<&dyn KvUpdate, String> {
    s.update()
        .ok_or_else(|| "a read-modify-write on a subject without them".to_string())
}

/// Calls of a closure, each compared as it comes with the value it should be shown (the
/// model's, before the operation): nothing is copied unless it differs.
struct Calls<'w> {
    want: Option<&'w [u8]>,
    n: usize,
    /// The first value shown that differed from `want`.
    wrong: Option<Option<Vec<u8>>>,
}

impl<'w> Calls<'w> {
    fn new(want: Option<&'w Vec<u8>>) -> Self {
        Calls {
            want: want.map(Vec::as_slice),
            n: 0,
            wrong: None,
        }
    }

    fn saw(&mut self, cur: Option<&[u8]>) {
        self.n += 1;
        if cur != self.want && self.wrong.is_none() {
            self.wrong = Some(cur.map(<[u8]>::to_vec));
        }
    }

    fn check(&self, op: &str, called: bool) -> Check {
        let n_want = usize::from(called);
        ensure!(
            self.n == n_want,
            "{op}: the closure was called {} times, expected {n_want}",
            self.n
        );
        if let Some(seen) = &self.wrong {
            return Err(format!(
                "{op}: the closure was shown {}, the current value is {}",
                show_opt(seen.as_deref()),
                show_opt(self.want)
            ));
        }
        Ok(())
    }
}

fn too_long(len: usize) -> Error {
    Error::ValueTooLong {
        len,
        max: MAX_VALUE_LEN,
    }
}

fn compute(u: &dyn KvUpdate, model: &mut Model, key: &[u8], action: ComputeAction) -> Check {
    let decide = |cur: Option<&[u8]>| -> Option<Vec<u8>> {
        match action {
            ComputeAction::Set(v) => Some(v.bytes()),
            ComputeAction::Remove => None,
            ComputeAction::Append(v) => Some([cur.unwrap_or_default(), &v.bytes()].concat()),
            ComputeAction::Keep => cur.map(<[u8]>::to_vec),
            ComputeAction::OverLong => Some(over_long_value().to_vec()),
        }
    };
    let old = model.get(key);
    let mut calls = Calls::new(old);
    let got = u.compute_with(key, &mut |cur| {
        calls.saw(cur);
        decide(cur)
    });
    calls.check("compute", true)?;
    let existed = old.is_some();
    // `Keep` stores what is there: the model needs no change.
    let new = match action {
        ComputeAction::Keep => None,
        _ => decide(old.map(Vec::as_slice)),
    };
    let want = match &new {
        Some(v) if v.len() > MAX_VALUE_LEN => Err(too_long(v.len())),
        _ => Ok(existed),
    };
    ensure!(got == want, "compute returned {got:?}, expected {want:?}");
    match (action, new) {
        (ComputeAction::Keep, _) => {}
        _ if want.is_err() => {}
        (_, Some(v)) => {
            model.insert(key.to_vec(), v);
        }
        (_, None) => {
            model.remove(key);
        }
    }
    Ok(())
}

fn update(u: &dyn KvUpdate, model: &mut Model, key: &[u8], action: UpdateAction) -> Check {
    let decide = |cur: &[u8]| -> Vec<u8> {
        match action {
            UpdateAction::Set(v) => v.bytes(),
            UpdateAction::Append(v) => [cur, &v.bytes()].concat(),
            UpdateAction::OverLong => over_long_value().to_vec(),
        }
    };
    let old = model.get(key);
    let mut calls = Calls::new(old);
    let got = u.update_with(key, &mut |cur| {
        calls.saw(Some(cur));
        decide(cur)
    });
    calls.check("update", old.is_some())?;
    let Some(old) = old else {
        ensure!(
            got == Ok(false),
            "update of an absent key returned {got:?}, expected Ok(false)"
        );
        return Ok(());
    };
    let new_len = match action {
        UpdateAction::Set(v) => v.len as usize,
        UpdateAction::Append(v) => old.len() + v.len as usize,
        UpdateAction::OverLong => MAX_VALUE_LEN + 1,
    };
    if new_len > MAX_VALUE_LEN {
        let want = Err(too_long(new_len));
        ensure!(got == want, "update returned {got:?}, expected {want:?}");
    } else {
        ensure!(
            got == Ok(true),
            "update returned {got:?}, expected Ok(true)"
        );
        // The model's value is changed where it lies (no copy of the old one).
        let slot = model.get_mut(key).expect("present");
        match action {
            UpdateAction::Set(v) => *slot = v.bytes(),
            UpdateAction::Append(v) => slot.extend_from_slice(&v.bytes()),
            UpdateAction::OverLong => unreachable!("over the limit"),
        }
    }
    Ok(())
}

fn update_in_place(u: &dyn KvUpdate, model: &mut Model, key: &[u8], xor: u8) -> Check {
    let old = model.get(key);
    let mut calls = Calls::new(old);
    let got = u.update_in_place_with(key, &mut |cur| {
        calls.saw(Some(cur));
        cur.iter_mut().for_each(|b| *b ^= xor);
    });
    calls.check("update_in_place", old.is_some())?;
    let want = Ok(old.is_some());
    ensure!(
        got == want,
        "update_in_place returned {got:?}, expected {want:?}"
    );
    if let Some(v) = model.get_mut(key) {
        v.iter_mut().for_each(|b| *b ^= xor);
    }
    Ok(())
}

fn over_long(s: &dyn Subject, model: &Model, key: &[u8], via: OverLongVia) -> Check {
    let index = s.index();
    let long = over_long_key(key);
    let key_err = Err(Error::KeyTooLong {
        len: MAX_KEY_LEN + 1,
        max: MAX_KEY_LEN,
    });
    let mut calls = 0;
    match via {
        OverLongVia::InsertKey => {
            let got = index.insert(&long, b"v");
            ensure!(
                got == key_err,
                "insert returned {got:?}, expected {key_err:?}"
            );
        }
        OverLongVia::InsertValue => {
            let v = over_long_value();
            let got = index.insert(key, v);
            let want = Err(too_long(v.len()));
            ensure!(got == want, "insert returned {got:?}, expected {want:?}");
        }
        OverLongVia::ComputeKey => {
            let got = rmw(s)?.compute_with(&long, &mut |_| {
                calls += 1;
                Some(b"v".to_vec())
            });
            ensure!(
                got == key_err,
                "compute returned {got:?}, expected {key_err:?}"
            );
        }
        OverLongVia::UpdateKey => {
            let got = rmw(s)?.update_with(&long, &mut |_| {
                calls += 1;
                b"v".to_vec()
            });
            ensure!(
                got == key_err,
                "update returned {got:?}, expected {key_err:?}"
            );
        }
        OverLongVia::UpdateInPlaceKey => {
            let got = rmw(s)?.update_in_place_with(&long, &mut |_| calls += 1);
            ensure!(
                got == key_err,
                "update_in_place returned {got:?}, expected {key_err:?}"
            );
        }
        OverLongVia::ReadKey => {
            check_absent(index, &long)?;
            ensure!(
                !index.remove(&long),
                "remove of an over-long key returned true"
            );
            check_get_many_batch(index, model, &[&long, key])?;
        }
    }
    ensure!(
        calls == 0,
        "the closure ran {calls} times for an over-long key"
    );
    match model.get(key) {
        Some(v) => check_present(index, key, v)?,
        None => check_absent(index, key)?,
    }
    let len = index.len();
    ensure!(
        len == model.len(),
        "len() = {len} after a rejected operation, expected {}",
        model.len()
    );
    Ok(())
}

/// The pairs the model expects, in scan order.
type Expected<'m> = Box<dyn Iterator<Item = (&'m Vec<u8>, &'m Vec<u8>)> + 'm>;

/// Runs `scan` with a visitor that compares each pair, as it comes, with the next of
/// `want` (the model's pairs in the scan's order) and breaks after `limit` pairs or at the
/// first difference: nothing is copied unless something differs. Checks that no visit
/// follows a `Break` and that no expected pair is missing at the end.
fn stream(
    what: &dyn Fn() -> String,
    limit: usize,
    mut want: Expected<'_>,
    scan: impl FnOnce(&mut ScanVisitor<'_>),
) -> Check {
    let mut n = 0usize;
    let mut err: Option<String> = None;
    let mut broke = false;
    let mut after_break = 0usize;
    scan(&mut |k: &[u8], v: &[u8]| {
        if broke {
            after_break += 1;
            return ControlFlow::Break(());
        }
        match want.next() {
            Some((wk, wv)) if wk.as_slice() == k && wv.as_slice() == v => {}
            Some((wk, wv)) => {
                err = Some(format!(
                    "pair #{n} is ({}, {}), expected ({}, {})",
                    exact(k),
                    show(v),
                    exact(wk),
                    show(wv)
                ))
            }
            None => {
                err = Some(format!(
                    "an extra pair #{n} ({}) after the expected ones",
                    exact(k)
                ))
            }
        }
        n += 1;
        if n >= limit || err.is_some() {
            broke = true;
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    if let Some(e) = err {
        return Err(format!("{}: {e}", what()));
    }
    ensure!(
        after_break == 0,
        "{}: the visitor was called {after_break} more times after it returned Break",
        what()
    );
    if n < limit
        && let Some((wk, _)) = want.next()
    {
        return Err(format!(
            "{}: ended after {n} pairs, but {} should have followed",
            what(),
            exact(wk)
        ));
    }
    Ok(())
}

/// The model's pairs from `end` down (`BTreeMap::range` accepts any single end bound).
fn model_down<'m>(model: &'m Model, end: Bound<&[u8]>) -> Expected<'m> {
    Box::new(model.range::<[u8], _>((Bound::Unbounded, end)).rev())
}

/// The ordered operations (scans, iterators, `remove_range`).
fn ordered(s: &dyn Subject, model: &mut Model, op: &Op) -> Check {
    let Some(index) = s.ordered() else {
        return Err(format!("{op:?} on a point-only subject"));
    };
    let what = || format!("{op:?}");
    match op {
        Op::Scan { start, limit: l } => {
            let b = as_ref(start);
            let want = Box::new(model_range(model, b, Bound::Unbounded));
            stream(&what, limit(*l), want, |v| index.scan(b, v))
        }
        Op::ScanRev { end, limit: l } => {
            let b = as_ref(end);
            stream(&what, limit(*l), model_down(model, b), |v| {
                index.scan_rev(b, v)
            })
        }
        Op::ScanRange {
            start,
            end,
            limit: l,
        } => {
            let (a, b) = (as_ref(start), as_ref(end));
            let want = Box::new(model_range(model, a, b));
            stream(&what, limit(*l), want, |v| index.scan_range(a, b, v))
        }
        Op::ScanPrefix { prefix, limit: l } => {
            let want = Box::new(
                model_range(model, Bound::Included(prefix), Bound::Unbounded)
                    .take_while(|(k, _)| k.starts_with(prefix)),
            );
            stream(&what, limit(*l), want, |v| index.scan_prefix(prefix, v))
        }
        Op::FirstLast => check_first_last(index, model),
        Op::RemoveRange { start, end } => {
            let (a, b) = (as_ref(start), as_ref(end));
            let doomed: Vec<Vec<u8>> = model_range(model, a, b).map(|(k, _)| k.clone()).collect();
            let got = s.remove_range(a, b);
            ensure!(
                got == doomed.len(),
                "remove_range({}, {}) removed {got} keys, expected {}",
                exact_bound(start),
                exact_bound(end),
                doomed.len()
            );
            for k in &doomed {
                model.remove(k);
            }
            // What follows the range's start now.
            let want = Box::new(model_range(model, a, Bound::Unbounded));
            stream(
                &|| format!("scan from the start after {op:?}"),
                2,
                want,
                |v| index.scan(a, v),
            )
        }
        Op::Iter { lo, hi, steps } => iter(s, model, lo, hi, steps),
        _ => Err(format!("{op:?} is not an ordered operation")),
    }
}

/// The later of two start bounds.
fn later_start<'a>(a: Bound<&'a [u8]>, b: Bound<&'a [u8]>) -> Bound<&'a [u8]> {
    use Bound::*;
    match (a, b) {
        (_, Unbounded) => a,
        (Unbounded, _) => b,
        (Included(x) | Excluded(x), Included(y) | Excluded(y)) => {
            if x > y || (x == y && matches!(a, Excluded(_))) {
                a
            } else {
                b
            }
        }
    }
}

/// The earlier of two end bounds.
fn earlier_end<'a>(a: Bound<&'a [u8]>, b: Bound<&'a [u8]>) -> Bound<&'a [u8]> {
    use Bound::*;
    match (a, b) {
        (_, Unbounded) => a,
        (Unbounded, _) => b,
        (Included(x) | Excluded(x), Included(y) | Excluded(y)) => {
            if x < y || (x == y && matches!(a, Excluded(_))) {
                a
            } else {
                b
            }
        }
    }
}

fn same(e: &Option<Entry>, want: Option<(&Vec<u8>, &Vec<u8>)>) -> bool {
    match (e, want) {
        (None, None) => true,
        (Some(e), Some((k, v))) => e.key() == k.as_slice() && e.value() == v.as_slice(),
        _ => false,
    }
}

fn show_entry(e: &Option<Entry>) -> String {
    match e {
        Some(e) => format!("({}, {})", exact(e.key()), show(e.value())),
        None => "None".into(),
    }
}

fn show_want(w: Option<(&Vec<u8>, &Vec<u8>)>) -> String {
    match w {
        Some((k, v)) => format!("({}, {})", exact(k), show(v)),
        None => "None".into(),
    }
}

/// A concrete iterator driven through `steps`, against a model of its two ends: the
/// front's bound (the range's start, the last seek, or past the last key the front
/// yielded) and the back's. Entries are compared in place (no copies).
fn iter(
    s: &dyn Subject,
    model: &Model,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    steps: &[Step],
) -> Check {
    let Some(src) = s.batches() else {
        return Err("an iterator on a subject without one".to_string());
    };
    let (lo_b, hi_b) = (as_ref(lo), as_ref(hi));
    let mut it = BatchIter::new(src, lo_b, hi_b);
    let (mut front, mut back) = (lo_b, hi_b);
    for (i, step) in steps.iter().enumerate() {
        let (got, want) = match step {
            Step::Next => {
                let want = model_range(model, front, back).next();
                if let Some((k, _)) = want {
                    front = Bound::Excluded(k.as_slice());
                }
                (it.next(), want)
            }
            Step::NextBack => {
                let want = if valid(front, back) {
                    model.range::<[u8], _>((front, back)).next_back()
                } else {
                    None
                };
                if let Some((k, _)) = want {
                    back = Bound::Excluded(k.as_slice());
                }
                (it.next_back(), want)
            }
            Step::Seek(b) => {
                it.seek(as_ref(b));
                front = later_start(as_ref(b), lo_b);
                continue;
            }
            Step::SeekBack(b) => {
                it.seek_back(as_ref(b));
                back = earlier_end(as_ref(b), hi_b);
                continue;
            }
        };
        ensure!(
            same(&got, want),
            "range({}, {}) step #{i} {step:?}: got {}, expected {}",
            exact_bound(lo),
            exact_bound(hi),
            show_entry(&got),
            show_want(want)
        );
    }
    Ok(())
}

/// Every view in full: point lookups of every key (and probes near a sample of them),
/// `get_many`, `len`; full scans both ways, `first`/`last`; the iterator both ways; the
/// unordered iterator; and the structure's invariant walk.
pub(crate) fn verify(s: &dyn Subject, model: &Model) -> Check {
    let index = s.index();
    let step = model.len() / 64 + 1;
    let near: Vec<Vec<u8>> =
        crate::testing::common::probes_near(model.keys().step_by(step).map(Vec::as_slice));
    verify_point(index, model, &near)?;
    if let Some(o) = s.ordered() {
        stream(
            &|| "full scan".into(),
            usize::MAX,
            Box::new(model.iter()),
            |v| o.scan(Bound::Unbounded, v),
        )?;
        stream(
            &|| "full scan_rev".into(),
            usize::MAX,
            Box::new(model.iter().rev()),
            |v| o.scan_rev(Bound::Unbounded, v),
        )?;
        check_first_last(o, model)?;
    }
    if let Some(src) = s.batches() {
        for rev in [false, true] {
            let mut it = BatchIter::all(src);
            let mut want: Expected<'_> = if rev {
                Box::new(model.iter().rev())
            } else {
                Box::new(model.iter())
            };
            for n in 0.. {
                let got = if rev { it.next_back() } else { it.next() };
                let w = want.next();
                ensure!(
                    same(&got, w),
                    "iter(){} pair #{n}: got {}, expected {}",
                    if rev { ".rev()" } else { "" },
                    show_entry(&got),
                    show_want(w)
                );
                if got.is_none() {
                    break;
                }
            }
        }
    }
    if let Some(mut all) = s.unordered_pairs() {
        all.sort();
        let got = all.iter().map(|(k, v)| (k, v));
        if !got.clone().eq(model.iter()) {
            let at = got.clone().zip(model.iter()).position(|(a, b)| a != b);
            return Err(format!(
                "iter() (unordered) yielded {} pairs, expected {}; first difference at sorted \
                 position {at:?}",
                all.len(),
                model.len()
            ));
        }
    }
    if let Some(walk) = s.check_invariants() {
        match walk {
            Ok(n) => ensure!(
                n == model.len(),
                "check_invariants() counted {n} keys, expected {}",
                model.len()
            ),
            Err(e) => return Err(format!("check_invariants(): {e}")),
        }
    }
    Ok(())
}
