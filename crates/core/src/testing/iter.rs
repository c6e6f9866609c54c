//! Iterators of concrete ordered indexes (`iter()` / `range(r)` returning a double-ended,
//! seekable `Iterator`), against `BTreeMap::range(..)` and `.rev()`.
//!
//! The traits stay object safe and keep the callback scans, so these parts are not driven
//! through [`OrderedKvIndex`] alone: a structure's test passes an `open` closure that makes
//! its concrete iterator over given bounds, wrapped in a [`Cursor`] that names its seek
//! method:
//!
//! ```ignore
//! let open = |wh: &Wormhole, lo: Bound<&[u8]>, hi: Bound<&[u8]>| {
//!     Cursor::new(wh.range::<[u8], _>((lo, hi)), |it, b| it.seek(b))
//! };
//! orrery_core::testing::check_iter(&Wormhole::new, &open)?;
//! ```
//!
//! | part | what it checks |
//! |---|---|
//! | [`check_iter`] | on a seeded series of subsets of the small universe: every bound kind at every probe as start with sampled ends (inverted and empty ranges yield nothing), each range collected ascending, descending (`BTreeMap::range(..).rev()`), and from both ends at random until they meet; `seek` to every bound kind then a few `next`s |
//! | [`check_iter_differential`] | seeded random operations (every [`KeyDist`]) with a random range iterated from both ends between them, compared with the model's `range(..)` and `.rev()`, then iterators kept open while random writes run: strictly ordered ends that never cross, every yielded pair a value its key had during the iteration, every key present throughout yielded exactly once |

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::ops::Bound;

use rand::Rng;
use rand::rngs::SmallRng;

use super::common::{Check, Failure, Model, ensure, model_range, run_seeded, show, show_bound};
use super::ordered::{density, move_to_subset, probes, universe};
use super::rng::{KeyDist, derive, rng, sized};
use crate::api::OrderedKvIndex;
use crate::batch::Entry;

/// A concrete iterator as the suite drives it: both ends and a seek of the front.
pub trait CursorUnderTest {
    /// The next pair from the front (ascending).
    fn next_front(&mut self) -> Option<(Vec<u8>, Vec<u8>)>;
    /// The next pair from the back (descending).
    fn next_back(&mut self) -> Option<(Vec<u8>, Vec<u8>)>;
    /// Repositions the front at the first key `>= k` / `> k` (within the range).
    fn seek(&mut self, start: Bound<&[u8]>);
}

/// Adapts a double-ended iterator of [`Entry`]s and its seek method to [`CursorUnderTest`].
pub struct Cursor<It, S> {
    it: It,
    seek: S,
}

impl<It, S> Cursor<It, S>
where
    It: DoubleEndedIterator<Item = Entry>,
    S: FnMut(&mut It, Bound<&[u8]>),
{
    /// Wraps `it`, seeking with `seek`.
    pub fn new(it: It, seek: S) -> Self {
        Cursor { it, seek }
    }
}

impl<It, S> CursorUnderTest for Cursor<It, S>
where
    It: DoubleEndedIterator<Item = Entry>,
    S: FnMut(&mut It, Bound<&[u8]>),
{
    fn next_front(&mut self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.it.next().map(Entry::into_pair)
    }

    fn next_back(&mut self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.it.next_back().map(Entry::into_pair)
    }

    fn seek(&mut self, start: Bound<&[u8]>) {
        (self.seek)(&mut self.it, start)
    }
}

/// Makes an iterator over `[lo, hi]` bounds of an index.
pub type Open<I> =
    dyn for<'a> Fn(&'a I, Bound<&[u8]>, Bound<&[u8]>) -> Box<dyn CursorUnderTest + 'a>;

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// [`Open`] with the index fixed.
type Ranged<'i> = dyn Fn(Bound<&[u8]>, Bound<&[u8]>) -> Box<dyn CursorUnderTest + 'i> + 'i;

/// The model's pairs in the bounds, ascending (nothing for empty or inverted ranges).
fn expect(model: &Model, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Pairs {
    model_range(model, lo, hi)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Whether `BTreeMap::range` accepts the bounds (it panics on inverted ones).
fn valid_range(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    match (lo, hi) {
        (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a <= b
        }
        _ => true,
    }
}

/// Ascending, descending (checked against `BTreeMap::range(..).rev()` where the model
/// accepts the range) and from both ends at random.
fn compare_range<'i>(
    index: &Ranged<'i>,
    model: &Model,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
    r: &mut SmallRng,
    ctx: &dyn Fn() -> String,
) -> Check {
    let want = expect(model, lo, hi);
    let what = || format!("{}: range({}, {})", ctx(), show_bound(lo), show_bound(hi));
    let mut it = index(lo, hi);
    let got: Pairs = std::iter::from_fn(|| it.next_front()).collect();
    ensure!(got == want, "{} ascending: {}", what(), diff(&got, &want));
    let mut want_rev: Pairs = want.iter().rev().cloned().collect();
    if valid_range(lo, hi) {
        let btree: Pairs = model
            .range::<[u8], _>((lo, hi))
            .rev()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        ensure!(btree == want_rev, "{}: model disagrees with itself", what());
        want_rev = btree;
    }
    let mut it = index(lo, hi);
    let got: Pairs = std::iter::from_fn(|| it.next_back()).collect();
    ensure!(
        got == want_rev,
        "{} descending: {}",
        what(),
        diff(&got, &want_rev)
    );
    // Both ends at random: a deque model.
    let mut dq: VecDeque<_> = want.into_iter().collect();
    let mut it = index(lo, hi);
    let mut step = 0;
    loop {
        let front = r.random_bool(0.5);
        let (got, want) = if front {
            (it.next_front(), dq.pop_front())
        } else {
            (it.next_back(), dq.pop_back())
        };
        ensure!(
            got == want,
            "{} step {step} from the {}: got {}, expected {}",
            what(),
            if front { "front" } else { "back" },
            show_opt_pair(&got),
            show_opt_pair(&want)
        );
        if got.is_none() {
            // Both ends are exhausted once they met.
            ensure!(
                it.next_front().is_none() && it.next_back().is_none(),
                "{}: an end yielded after they met",
                what()
            );
            return Ok(());
        }
        step += 1;
    }
}

fn show_opt_pair(p: &Option<(Vec<u8>, Vec<u8>)>) -> String {
    match p {
        Some((k, v)) => format!("({}, {})", show(k), show(v)),
        None => "None".into(),
    }
}

fn diff(got: &Pairs, want: &Pairs) -> String {
    let at = got.iter().zip(want).position(|(a, b)| a != b);
    let at = at.unwrap_or(got.len().min(want.len()));
    format!(
        "{} pairs, expected {}; first difference at {at}: got {}, expected {}",
        got.len(),
        want.len(),
        show_opt_pair(&got.get(at).cloned()),
        show_opt_pair(&want.get(at).cloned())
    )
}

/// Every bound kind at every probe of the small universe as the start (with an end drawn
/// from the probes), over a seeded series of subsets (full, empty, sparse, dense, random):
/// each range ascending, descending and from both ends at random; then, on the full
/// range, `seek` to every bound kind at every probe followed by up to three `next`s.
pub fn check_iter<I: OrderedKvIndex>(make: &dyn Fn() -> I, open: &Open<I>) -> Result<(), Failure> {
    run_seeded("iter", |seed| {
        let mut r = rng(seed);
        let index = make();
        let universe = universe();
        let probes = probes();
        let mut model = Model::new();
        let bound = |p: &[u8], k: usize| -> Bound<Vec<u8>> {
            match k {
                0 => Bound::Included(p.to_vec()),
                1 => Bound::Excluded(p.to_vec()),
                _ => Bound::Unbounded,
            }
        };
        for round in 0..sized(10, 2) {
            let d = density(round, &mut r);
            move_to_subset(&index, &mut model, &universe, d, round, &mut r)?;
            let ranged = |lo: Bound<&[u8]>, hi: Bound<&[u8]>| open(&index, lo, hi);
            for p in &probes {
                for kind in 0..3 {
                    let lo = bound(p, kind);
                    let q = &probes[r.random_range(0..probes.len())];
                    let hi = bound(q, r.random_range(0..3));
                    compare_range(
                        &ranged,
                        &model,
                        lo.as_ref().map(Vec::as_slice),
                        hi.as_ref().map(Vec::as_slice),
                        &mut r,
                        &|| format!("round {round}"),
                    )?;
                }
            }
            // Seeks on one iterator, forwards and backwards.
            let mut it = open(&index, Bound::Unbounded, Bound::Unbounded);
            for p in &probes {
                for start in [Bound::Included(&p[..]), Bound::Excluded(&p[..])] {
                    it.seek(start);
                    let n = r.random_range(0..=3);
                    let got: Pairs = (0..n).map_while(|_| it.next_front()).collect();
                    let want: Pairs = expect(&model, start, Bound::Unbounded)
                        .into_iter()
                        .take(n)
                        .collect();
                    ensure!(
                        got == want,
                        "round {round}: seek({}) then {n} next: {}",
                        show_bound(start),
                        diff(&got, &want)
                    );
                }
            }
        }
        Ok(())
    })
}

/// Seeded random operations over every [`KeyDist`], with a random range iterated (both
/// ends, against `BTreeMap::range(..)` and `.rev()`) every few operations; then iterators
/// kept open across random writes, checked for what a scan concurrent with writers
/// guarantees (see [`crate::api`]): each end strictly ordered and never past the other,
/// every yielded pair a value its key had during the iteration, every key present
/// throughout yielded exactly once.
pub fn check_iter_differential<I: OrderedKvIndex>(
    make: &dyn Fn() -> I,
    open: &Open<I>,
) -> Result<(), Failure> {
    run_seeded("iter_differential", |seed| {
        for (d, dist) in KeyDist::ALL.into_iter().enumerate() {
            let mut r = rng(derive(seed, d as u64));
            let index = make();
            let mut model = Model::new();
            let steps = sized(3000, 150);
            for step in 0..steps {
                let k = dist.sample(&mut r);
                if r.random_bool(if step < steps / 2 { 0.7 } else { 0.4 }) {
                    let v = vec![step as u8; r.random_range(0..12)];
                    index.insert(&k, &v).map_err(|e| format!("insert: {e}"))?;
                    model.insert(k, v);
                } else {
                    ensure!(
                        index.remove(&k) == model.remove(&k).is_some(),
                        "{}: step {step}: remove({}) disagrees",
                        dist.name(),
                        show(&k)
                    );
                }
                if step % 50 == 0 {
                    let lo = random_bound(&mut r, dist);
                    let hi = random_bound(&mut r, dist);
                    let ranged = |lo: Bound<&[u8]>, hi: Bound<&[u8]>| open(&index, lo, hi);
                    compare_range(
                        &ranged,
                        &model,
                        lo.as_ref().map(Vec::as_slice),
                        hi.as_ref().map(Vec::as_slice),
                        &mut r,
                        &|| format!("{}: step {step}", dist.name()),
                    )?;
                }
            }
            for round in 0..sized(20, 2) {
                live_iteration(&index, open, &mut model, dist, &mut r)
                    .map_err(|e| format!("{}: live round {round}: {e}", dist.name()))?;
            }
        }
        Ok(())
    })
}

fn random_bound(r: &mut SmallRng, dist: KeyDist) -> Bound<Vec<u8>> {
    match r.random_range(0..5) {
        0 => Bound::Unbounded,
        1 | 2 => Bound::Included(dist.sample(r)),
        _ => Bound::Excluded(dist.sample(r)),
    }
}

/// One iterator over a random range, both ends pulled at random while random writes
/// (inside and outside the range) run between the calls.
fn live_iteration<I: OrderedKvIndex>(
    index: &I,
    open: &Open<I>,
    model: &mut Model,
    dist: KeyDist,
    r: &mut SmallRng,
) -> Check {
    let lo = random_bound(r, dist);
    let hi = random_bound(r, dist);
    let (lo, hi) = (
        lo.as_ref().map(Vec::as_slice),
        hi.as_ref().map(Vec::as_slice),
    );
    let at_open: Model = model_range(model, lo, hi)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // Every value each key had since the iterator was opened; keys written meanwhile.
    let mut history: BTreeMap<Vec<u8>, HashSet<Vec<u8>>> = at_open
        .iter()
        .map(|(k, v)| (k.clone(), HashSet::from([v.clone()])))
        .collect();
    let mut touched: HashSet<Vec<u8>> = HashSet::new();
    let mut it = open(index, lo, hi);
    let (mut fronts, mut backs): (Pairs, Pairs) = (Vec::new(), Vec::new());
    let (mut front_done, mut back_done) = (false, false);
    let what = format!("range({}, {})", show_bound(lo), show_bound(hi));
    while !(front_done && back_done) {
        for _ in 0..r.random_range(0..4) {
            let k = dist.sample(r);
            touched.insert(k.clone());
            if r.random_bool(0.6) {
                let v = vec![0xA5, r.random()];
                index.insert(&k, &v).map_err(|e| format!("insert: {e}"))?;
                history.entry(k.clone()).or_default().insert(v.clone());
                model.insert(k, v);
            } else {
                index.remove(&k);
                model.remove(&k);
            }
        }
        if !front_done && (back_done || r.random_bool(0.5)) {
            match it.next_front() {
                Some(p) => fronts.push(p),
                None => front_done = true,
            }
        } else {
            match it.next_back() {
                Some(p) => backs.push(p),
                None => back_done = true,
            }
        }
    }
    ensure!(
        fronts.windows(2).all(|w| w[0].0 < w[1].0),
        "{what}: front keys not strictly ascending"
    );
    ensure!(
        backs.windows(2).all(|w| w[0].0 > w[1].0),
        "{what}: back keys not strictly descending"
    );
    if let (Some(f), Some(b)) = (fronts.last(), backs.last()) {
        ensure!(
            f.0 < b.0,
            "{what}: the ends crossed: front reached {}, back {}",
            show(&f.0),
            show(&b.0)
        );
    }
    for (k, v) in fronts.iter().chain(&backs) {
        ensure!(
            history.get(k).is_some_and(|vs| vs.contains(v)),
            "{what}: yielded ({}, {}), never a value of that key during the iteration",
            show(k),
            show(v)
        );
        ensure!(
            super::common::within_end(k, hi) && within_start(k, lo),
            "{what}: yielded {} outside the range",
            show(k)
        );
    }
    let yielded: HashSet<&Vec<u8>> = fronts.iter().chain(&backs).map(|(k, _)| k).collect();
    for k in at_open.keys() {
        if !touched.contains(k) {
            ensure!(
                yielded.contains(k),
                "{what}: {} was present throughout but not yielded",
                show(k)
            );
        }
    }
    Ok(())
}

fn within_start(key: &[u8], start: Bound<&[u8]>) -> bool {
    match start {
        Bound::Included(s) => key >= s,
        Bound::Excluded(s) => key > s,
        Bound::Unbounded => true,
    }
}
