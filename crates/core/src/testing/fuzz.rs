//! Differential fuzzing: [`Op`] sequences from a fuzzer, checked against a `BTreeMap` model.
//!
//! [`Op`] implements [`arbitrary::Arbitrary`] over bounded domains, so a fuzzer's bytes turn
//! into operations that actually collide: keys are short strings over an 8-letter alphabet
//! with `0x00` and `0xFF` (prefix chains and runs happen constantly), keys under one
//! 100-byte shared prefix, or small big-endian integers; values are short, sometimes a few
//! KiB. [`run_differential`] applies the operations to an empty ordered index and to the
//! model and panics with the operation's position and a description at the first
//! divergence; [`run_differential_point`] does the same for point-only indexes. A fuzz
//! target is a few lines (see `fuzz/README.md`):
//!
//! ```
//! use orrery_core::reference::LockedBTreeMap;
//! use orrery_core::testing::fuzz::{ops_from_bytes, run_differential};
//!
//! // In a fuzz target: `fuzz_target!(|data: &[u8]| { ... })` with the fuzzer's `data`.
//! let data = [0u8, 3, 1, 2, 7, 9, 1, 4, 4, 2, 8, 0, 1, 3, 5];
//! let ops = ops_from_bytes(&data);
//! run_differential(&LockedBTreeMap::new(), &ops);
//! ```

use std::fmt;
use std::ops::{Bound, ControlFlow};

use arbitrary::{Arbitrary, Unstructured};

use super::common::{
    Check, Model, Stop, check_absent, check_first_last, check_get_many_batch, check_present,
    collect, compare_scan, ensure, model_range, show, show_bound, verify_point,
};
use super::rng::over_long_value;
use crate::api::{
    Error, KvIndex, MAX_KEY_LEN, MAX_VALUE_LEN, OrderedKvIndex, OrderedKvIndexExt, u64_key,
};
use crate::batch::{BatchIter, BatchSource};

/// The alphabet of short fuzz keys.
pub const KEY_ALPHABET: [u8; 8] = [0x00, 0x01, 0x02, b'a', b'b', 0x7F, 0xFE, 0xFF];

/// The prefix shared by long fuzz keys (100 bytes, with a `0x00` and a `0xFF` inside).
pub fn long_prefix() -> Vec<u8> {
    let mut p = vec![b'p'; 100];
    p[30] = 0x00;
    p[60] = 0xFF;
    p
}

/// A key from a bounded domain (see the module docs).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key(pub Vec<u8>);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&show(&self.0))
    }
}

impl<'a> Arbitrary<'a> for Key {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let short = |u: &mut Unstructured<'a>, max: usize| -> arbitrary::Result<Vec<u8>> {
            let len = u.int_in_range(0..=max)?;
            (0..len).map(|_| u.choose(&KEY_ALPHABET).copied()).collect()
        };
        Ok(Key(match u.int_in_range(0..=9u8)? {
            0..=6 => short(u, 5)?,
            7 | 8 => {
                let mut k = long_prefix();
                k.truncate(u.int_in_range(98..=100)?);
                k.extend(short(u, 2)?);
                k
            }
            _ => u64_key(u.int_in_range(0..=64u64)?).to_vec(),
        }))
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (1, Some(8))
    }
}

/// A value: usually up to 12 bytes, sometimes up to 4 KiB, filled from a seed byte.
#[derive(Clone, PartialEq, Eq)]
pub struct Value(pub Vec<u8>);

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&show(&self.0))
    }
}

impl<'a> Arbitrary<'a> for Value {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let len = if u.ratio(1u8, 16)? {
            u.int_in_range(13..=4096usize)?
        } else {
            u.int_in_range(0..=12usize)?
        };
        let seed: u8 = u.arbitrary()?;
        Ok(Value(
            (0..len).map(|i| seed.wrapping_add(i as u8)).collect(),
        ))
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (3, Some(12))
    }
}

/// Up to 16 [`Key`]s for `get_many` (bounded, so one batch cannot eat a whole input).
#[derive(Clone, Debug)]
pub struct KeyBatch(pub Vec<Key>);

impl<'a> Arbitrary<'a> for KeyBatch {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let len = u.int_in_range(0..=16usize)?;
        (0..len)
            .map(|_| Key::arbitrary(u))
            .collect::<arbitrary::Result<_>>()
            .map(KeyBatch)
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (1, Some(1 + 16 * 8))
    }
}

/// A scan bound over [`Key`]s.
#[derive(Arbitrary, Clone, Debug)]
pub enum FuzzBound {
    /// `Bound::Included`.
    Included(Key),
    /// `Bound::Excluded`.
    Excluded(Key),
    /// `Bound::Unbounded`.
    Unbounded,
}

impl FuzzBound {
    fn as_bound(&self) -> Bound<&[u8]> {
        match self {
            FuzzBound::Included(k) => Bound::Included(&k.0),
            FuzzBound::Excluded(k) => Bound::Excluded(&k.0),
            FuzzBound::Unbounded => Bound::Unbounded,
        }
    }
}

/// One operation of a fuzz sequence. Scan limits are `0` for "never stop" and otherwise the
/// number of pairs after which the visitor returns `Break`.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    /// `insert(key, value)`: checks new/not new.
    Insert {
        /// The key.
        key: Key,
        /// The value.
        value: Value,
    },
    /// `remove(key)`: checks presence.
    Remove {
        /// The key.
        key: Key,
    },
    /// `get`, `get_with` and `contains_key` of `key`.
    Get {
        /// The key.
        key: Key,
    },
    /// `get_many` of up to 16 keys.
    GetMany {
        /// The keys.
        keys: KeyBatch,
    },
    /// `scan(start)` stopping after `limit` pairs.
    Scan {
        /// The start bound.
        start: FuzzBound,
        /// Pairs before stopping (0: never).
        limit: u8,
    },
    /// `scan_range(start, end)` stopping after `limit` pairs.
    ScanRange {
        /// The start bound.
        start: FuzzBound,
        /// The end bound.
        end: FuzzBound,
        /// Pairs before stopping (0: never).
        limit: u8,
    },
    /// `range((start, end))` of `OrderedKvIndexExt`, stopping after `limit` pairs.
    Range {
        /// The start bound.
        start: FuzzBound,
        /// The end bound.
        end: FuzzBound,
        /// Pairs before stopping (0: never).
        limit: u8,
    },
    /// `scan_prefix(prefix)` stopping after `limit` pairs.
    ScanPrefix {
        /// The prefix.
        prefix: Key,
        /// Pairs before stopping (0: never).
        limit: u8,
    },
    /// `first()` and `last()`.
    FirstLast,
    /// `len()` and `is_empty()`.
    Len,
    /// An insert beyond a limit (the key extended past `MAX_KEY_LEN`, or a value past
    /// `MAX_VALUE_LEN`): must be rejected and change nothing; lookups and removals of the
    /// over-long key find nothing.
    InsertOverLong {
        /// The key (extended with `0x00` when `long_key`).
        key: Key,
        /// Whether the key (rather than the value) is over-long.
        long_key: bool,
    },
}

/// The ordered-operation checker of a run, absent for point-only indexes.
type OrderedCheck<'a> = &'a dyn Fn(&Op, &Model) -> Check;

fn limit(l: u8) -> usize {
    if l == 0 { usize::MAX } else { l as usize }
}

/// Applies one point operation (scans are skipped when `ordered` is `None`).
fn apply<I: KvIndex + ?Sized>(
    index: &I,
    ordered: Option<OrderedCheck<'_>>,
    model: &mut Model,
    op: &Op,
) -> Check {
    match op {
        Op::Insert { key, value } => {
            let got = index.insert(&key.0, &value.0);
            let want = !model.contains_key(&key.0);
            ensure!(
                got == Ok(want),
                "insert returned {got:?}, expected Ok({want})"
            );
            model.insert(key.0.clone(), value.0.clone());
        }
        Op::Remove { key } => {
            let got = index.remove(&key.0);
            let want = model.remove(&key.0).is_some();
            ensure!(got == want, "remove returned {got}, expected {want}");
        }
        Op::Get { key } => match model.get(&key.0) {
            Some(v) => check_present(index, &key.0, v)?,
            None => check_absent(index, &key.0)?,
        },
        Op::GetMany { keys } => {
            let refs: Vec<&[u8]> = keys.0.iter().map(|k| k.0.as_slice()).collect();
            check_get_many_batch(index, model, &refs)?;
        }
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
        Op::InsertOverLong { key, long_key } => {
            let long_key_buf;
            let (k, v, want): (&[u8], &[u8], Error) = if *long_key {
                let mut k = key.0.clone();
                k.resize(MAX_KEY_LEN + 1, 0x00);
                long_key_buf = k;
                let len = long_key_buf.len();
                (
                    &long_key_buf,
                    b"v",
                    Error::KeyTooLong {
                        len,
                        max: MAX_KEY_LEN,
                    },
                )
            } else {
                let v = over_long_value();
                (
                    &key.0,
                    v,
                    Error::ValueTooLong {
                        len: v.len(),
                        max: MAX_VALUE_LEN,
                    },
                )
            };
            let got = index.insert(k, v);
            ensure!(
                got == Err(want.clone()),
                "insert returned {got:?}, expected Err({want:?})"
            );
            if *long_key {
                check_absent(index, k)?;
                ensure!(!index.remove(k), "remove of an over-long key returned true");
            }
            match model.get(&key.0) {
                Some(v) => check_present(index, &key.0, v)?,
                None => check_absent(index, &key.0)?,
            }
            let len = index.len();
            ensure!(
                len == model.len(),
                "len() = {len} after a rejected insert, expected {}",
                model.len()
            );
        }
        _ => {
            if let Some(check) = ordered {
                check(op, model)?;
            }
        }
    }
    Ok(())
}

/// The ordered operations of [`Op`], checked.
fn apply_ordered<I: OrderedKvIndex + ?Sized>(index: &I, op: &Op, model: &Model) -> Check {
    match op {
        Op::Scan { start, limit: l } => {
            let (s, l) = (start.as_bound(), limit(*l));
            let stop = Stop(l);
            let got = collect(l, |v| index.scan(s, v));
            compare_scan(
                &|| format!("scan({}) {stop}", show_bound(s)),
                &got,
                model_range(model, s, Bound::Unbounded).take(l),
            )
        }
        Op::ScanRange {
            start,
            end,
            limit: l,
        } => {
            let (s, e, l) = (start.as_bound(), end.as_bound(), limit(*l));
            let stop = Stop(l);
            let got = collect(l, |v| index.scan_range(s, e, v));
            compare_scan(
                &|| format!("scan_range({}, {}) {stop}", show_bound(s), show_bound(e)),
                &got,
                model_range(model, s, e).take(l),
            )
        }
        Op::Range {
            start,
            end,
            limit: l,
        } => {
            let (s, e, l) = (start.as_bound(), end.as_bound(), limit(*l));
            let stop = Stop(l);
            let mut pairs = Vec::new();
            index.range_with::<&[u8], _, _>((s, e), |k, v| {
                pairs.push((k.to_vec(), v.to_vec()));
                if pairs.len() >= l {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            let want: Vec<(Vec<u8>, Vec<u8>)> = model_range(model, s, e)
                .take(l)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            ensure!(
                pairs == want,
                "range(({}, {})) {stop} yielded {} pairs {:?}, expected {} pairs {:?}",
                show_bound(s),
                show_bound(e),
                pairs.len(),
                pairs.iter().map(|(k, _)| show(k)).collect::<Vec<_>>(),
                want.len(),
                want.iter().map(|(k, _)| show(k)).collect::<Vec<_>>()
            );
            Ok(())
        }
        Op::ScanPrefix { prefix, limit: l } => {
            let (p, l) = (&prefix.0, limit(*l));
            let stop = Stop(l);
            let got = collect(l, |v| index.scan_prefix(p, v));
            compare_scan(
                &|| format!("scan_prefix({}) {stop}", show(p)),
                &got,
                model_range(model, Bound::Included(p), Bound::Unbounded)
                    .take_while(|(k, _)| k.starts_with(p))
                    .take(l),
            )
        }
        Op::FirstLast => check_first_last(index, model),
        _ => Ok(()),
    }
}

#[cfg(any(test, feature = "failpoints"))]
/// An insert under an armed fail point (its `n`th allocation fails): either it succeeds as
/// usual (the insert needed fewer allocations), or it returns `OutOfMemory` and the index
/// still holds exactly what the model holds: the key as before, the same length, and (for
/// ordered indexes) the same full scan.
fn apply_failing_insert<I: KvIndex + ?Sized>(
    index: &I,
    model: &mut Model,
    key: &[u8],
    value: &[u8],
    n: u64,
    full_scan: Option<&dyn Fn(&Model) -> Check>,
) -> Check {
    crate::alloc::failpoint::fail_nth(n);
    let got = index.insert(key, value);
    crate::alloc::failpoint::disarm();
    let want = !model.contains_key(key);
    match got {
        Err(Error::OutOfMemory) => {
            match model.get(key) {
                Some(v) => check_present(index, key, v)?,
                None => check_absent(index, key)?,
            }
            let len = index.len();
            ensure!(
                len == model.len(),
                "len() = {len} after an insert that ran out of memory, expected {}",
                model.len()
            );
            if let Some(full) = full_scan {
                full(model)?;
            }
        }
        got => {
            ensure!(
                got == Ok(want),
                "insert (allocation #{n} failing) returned {got:?}, expected Ok({want}) or \
                 Err(OutOfMemory)"
            );
            model.insert(key.to_vec(), value.to_vec());
        }
    }
    Ok(())
}

fn run<I: KvIndex + ?Sized>(
    index: &I,
    ops: &[Op],
    ordered: Option<OrderedCheck<'_>>,
    full_scan: Option<&dyn Fn(&Model) -> Check>,
    failures: &[u8],
) {
    assert!(
        index.is_empty(),
        "run_differential needs an empty index, got one with len() = {}",
        index.len()
    );
    let mut model = Model::new();
    for (i, op) in ops.iter().enumerate() {
        let fail_at = if failures.is_empty() {
            0
        } else {
            failures[i % failures.len()]
        };
        #[cfg(not(any(test, feature = "failpoints")))]
        let _ = fail_at;
        let result = match op {
            #[cfg(any(test, feature = "failpoints"))]
            Op::Insert { key, value } if fail_at != 0 => apply_failing_insert(
                index,
                &mut model,
                &key.0,
                &value.0,
                u64::from(fail_at),
                full_scan,
            ),
            _ => apply(index, ordered, &mut model, op),
        };
        if let Err(e) = result {
            panic!(
                "differential fuzzing: the index diverged from the BTreeMap model at op #{i} of {}: {op:?}\n{e}",
                ops.len()
            );
        }
    }
    let keys: Vec<Vec<u8>> = ops
        .iter()
        .filter_map(|op| match op {
            Op::Insert { key, .. } | Op::Remove { key } | Op::Get { key } => Some(key.0.clone()),
            _ => None,
        })
        .collect();
    let end =
        verify_point(index, &model, &keys).and_then(|()| full_scan.map_or(Ok(()), |f| f(&model)));
    if let Err(e) = end {
        panic!(
            "differential fuzzing: the index's final contents after {} ops differ from the BTreeMap model: {e}",
            ops.len()
        );
    }
}

/// Applies `ops` to `index` (which must be empty) and to a `BTreeMap` model, checking every
/// result, every scan and the final contents; panics with the op's position and the
/// difference at the first divergence.
pub fn run_differential<I: OrderedKvIndex + ?Sized>(index: &I, ops: &[Op]) {
    let ordered = |op: &Op, model: &Model| apply_ordered(index, op, model);
    let full = |model: &Model| {
        let got = collect(usize::MAX, |v| index.scan(Bound::Unbounded, v));
        compare_scan(&|| "full scan".to_string(), &got, model.iter())
    };
    run(index, ops, Some(&ordered), Some(&full), &[]);
}

/// Checks the concrete iterator ([`BatchIter`]) of an ordered index that is a
/// [`BatchSource`] against its own full scan (which [`run_differential`] has just
/// confirmed): all pairs ascending, `.rev()`, both ends alternately until they meet, and at
/// a sample of present keys `k`: `range(k..)`, `range(..k).rev()` and
/// `seek(Excluded(k))`. Panics with what differs. Every structure whose `iter()` is a
/// `BatchIter` over itself uses this after its differential run in its fuzz target.
pub fn check_batch_iterators<I: OrderedKvIndex + BatchSource + ?Sized>(index: &I) {
    type Pairs = Vec<(Vec<u8>, Vec<u8>)>;
    let pairs = |it: BatchIter<&I>| -> Pairs { it.map(|e| e.into_pair()).collect() };
    let mut scanned: Pairs = Vec::new();
    index.scan(Bound::Unbounded, &mut |k, v| {
        scanned.push((k.to_vec(), v.to_vec()));
        ControlFlow::Continue(())
    });
    let fwd = pairs(BatchIter::all(index));
    assert_eq!(fwd, scanned, "iter() differs from the full scan");
    let mut back: Pairs = BatchIter::all(index).rev().map(|e| e.into_pair()).collect();
    back.reverse();
    assert_eq!(back, fwd, "iter().rev() is not the reverse of iter()");
    // Both ends at once: every pair exactly once, in order from each side.
    let mut it = BatchIter::all(index);
    let (mut front, mut tail) = (Vec::new(), Vec::new());
    while let Some(e) = it.next() {
        front.push(e.into_pair());
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
        assert_eq!(pairs(BatchIter::range(index, k..)), fwd[i..], "range(k..)");
        let mut below: Pairs = BatchIter::range(index, ..k)
            .rev()
            .map(|e| e.into_pair())
            .collect();
        below.reverse();
        assert_eq!(below, fwd[..i], "range(..k).rev()");
        let mut seeking = BatchIter::all(index);
        seeking.seek(Bound::Excluded(k));
        assert_eq!(pairs(seeking), fwd[i + 1..], "seek(Excluded(k))");
    }
}

#[cfg(any(test, feature = "failpoints"))]
/// [`run_differential`] with injected allocation failures (feature `failpoints`): before
/// operation `i`, if it is an
/// insert and `failures[i % failures.len()]` is `n > 0`, the calling thread's fail point
/// ([`crate::alloc::failpoint`]) is armed so that the insert's `n`th allocation fails. An
/// insert that then returns `Err(OutOfMemory)` must have changed nothing: the key reads as
/// before, `len()` and a full scan agree with the model; later operations go on as usual,
/// so the index must stay usable. An insert that needed fewer allocations must succeed
/// normally. Empty `failures`: no injection.
pub fn run_differential_with_failures<I: OrderedKvIndex + ?Sized>(
    index: &I,
    ops: &[Op],
    failures: &[u8],
) {
    let ordered = |op: &Op, model: &Model| apply_ordered(index, op, model);
    let full = |model: &Model| {
        let got = collect(usize::MAX, |v| index.scan(Bound::Unbounded, v));
        compare_scan(&|| "full scan".to_string(), &got, model.iter())
    };
    run(index, ops, Some(&ordered), Some(&full), failures);
}

#[cfg(any(test, feature = "failpoints"))]
/// [`run_differential_with_failures`] for point-only indexes (scans skipped; after a failed
/// insert the key and `len()` are checked).
pub fn run_differential_point_with_failures<I: KvIndex + ?Sized>(
    index: &I,
    ops: &[Op],
    failures: &[u8],
) {
    run(index, ops, None, None, failures);
}

/// [`run_differential`] for point-only indexes: scan operations are skipped.
pub fn run_differential_point<I: KvIndex + ?Sized>(index: &I, ops: &[Op]) {
    run(index, ops, None, None, &[]);
}

/// Most operations [`ops_from_bytes`] decodes from one input.
pub const MAX_OPS: usize = 4096;

/// Counts the inputs and operations a fuzz target has run in this process, and every
/// 2^14 inputs prints the totals to stderr as `fuzz-tally: inputs=N ops=M`, so that a fuzz
/// run's log says how many operations it executed (libFuzzer counts inputs only). A
/// target calls it once per input with the operations it decoded; the last line of the log
/// is then a lower bound, exact to within 2^14 inputs.
pub fn tally(ops: &[Op]) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static INPUTS: AtomicU64 = AtomicU64::new(0);
    static OPS: AtomicU64 = AtomicU64::new(0);
    let inputs = INPUTS.fetch_add(1, Ordering::Relaxed) + 1;
    let total = OPS.fetch_add(ops.len() as u64, Ordering::Relaxed) + ops.len() as u64;
    if inputs.is_multiple_of(1 << 14) {
        eprintln!("fuzz-tally: inputs={inputs} ops={total}");
    }
}

/// Decodes a fuzzer's bytes into operations: one [`Op`] after another until the bytes run
/// out (at most [`MAX_OPS`]). Unlike `Vec::<Op>::arbitrary_take_rest`, which flips a coin
/// before each element, every byte goes into operations, so random inputs give long
/// sequences.
pub fn ops_from_bytes(data: &[u8]) -> Vec<Op> {
    let mut u = Unstructured::new(data);
    let mut ops = Vec::new();
    while !u.is_empty() && ops.len() < MAX_OPS {
        match Op::arbitrary(&mut u) {
            Ok(op) => ops.push(op),
            Err(_) => break,
        }
    }
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::LockedBTreeMap;
    use crate::testing::rng::{derive, random_bytes, rng, seed, sized};
    use rand::Rng;

    fn filled(n: u32) -> LockedBTreeMap {
        let m = LockedBTreeMap::new();
        for i in 0..n {
            m.insert(&(i * 7).to_be_bytes(), &i.to_le_bytes()).unwrap();
        }
        m
    }

    #[test]
    fn batch_iterator_checks_pass_on_the_reference() {
        for n in [0, 1, 2, 4, 5, 9, 50] {
            check_batch_iterators(&filled(n));
        }
    }

    #[test]
    #[should_panic(expected = "iter() differs from the full scan")]
    fn batch_iterator_checks_catch_a_lossy_scan() {
        let broken = crate::testing::broken::Broken::new(
            filled(20),
            crate::testing::broken::Fault::DropEveryNthScanPair(3),
        );
        check_batch_iterators(&broken);
    }

    /// The fuzz logic itself runs in the default test run: thousands of random byte strings
    /// decoded into operation sequences, through both runners, on the reference.
    #[test]
    fn random_sequences_pass_on_the_reference() {
        let seed = seed().expect("ORRERY_SEED");
        let mut total_ops = 0;
        for i in 0..sized(3000, 6) {
            let mut r = rng(derive(seed, i as u64));
            let len = r.random_range(0..if cfg!(miri) { 200 } else { 1500 });
            let bytes = random_bytes(&mut r, len);
            let ops = ops_from_bytes(&bytes);
            total_ops += ops.len();
            run_differential(&LockedBTreeMap::new(), &ops);
            run_differential_point(&LockedBTreeMap::new(), &ops);
        }
        assert!(
            total_ops > sized(3000, 6),
            "decoding produced too few operations: {total_ops}"
        );
    }

    #[test]
    fn decoded_keys_collide_and_nest() {
        let mut r = rng(1);
        let bytes = random_bytes(&mut r, 20_000);
        let ops = ops_from_bytes(&bytes);
        let keys: Vec<&Vec<u8>> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Insert { key, .. } => Some(&key.0),
                _ => None,
            })
            .collect();
        let distinct: std::collections::BTreeSet<_> = keys.iter().collect();
        assert!(keys.len() > 100, "{} inserts", keys.len());
        assert!(distinct.len() < keys.len(), "no key collided");
        let nested = distinct
            .iter()
            .zip(distinct.iter().skip(1))
            .filter(|(a, b)| b.starts_with(a))
            .count();
        assert!(
            nested > 5,
            "only {nested} prefix relations among decoded keys"
        );
    }
}
