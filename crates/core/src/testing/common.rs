//! Shared machinery of the parts: the failure type, the model comparisons and the probes.
//!
//! Every comparison is against a `BTreeMap<Vec<u8>, Vec<u8>>` model, whose order is the
//! contract's order (`[u8]`'s `Ord`). A verification walks every view of the index (point
//! lookups in all their forms, batched lookups, scans from many bounds with early stops) and
//! reports the first difference with the keys shown legibly.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::{Bound, ControlFlow};
use std::panic::{AssertUnwindSafe, catch_unwind};

use rand::Rng;
use rand::rngs::SmallRng;

use crate::api::{KvIndex, OrderedKvIndex, ScanVisitor};

/// A conformance failure: which part broke, the seed that replays it and what diverged.
#[derive(Clone, PartialEq, Eq)]
pub struct Failure {
    /// The part of the suite (the `check_*` function without its prefix).
    pub part: &'static str,
    /// The seed of the run, when the part is randomized (`ORRERY_SEED` replays it).
    pub seed: Option<u64>,
    /// What diverged: the context (distribution, step, operation) and the difference.
    pub message: String,
}

impl Failure {
    /// A failure of `part` under `seed`.
    pub fn new(part: &'static str, seed: Option<u64>, message: impl Into<String>) -> Self {
        Failure {
            part,
            seed,
            message: message.into(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conformance part `{}` failed", self.part)?;
        if let Some(seed) = self.seed {
            write!(f, " (seed {seed:#x}; replay with ORRERY_SEED={seed:#x})")?;
        }
        write!(f, ":\n{}", self.message)
    }
}

// `Debug` shows the same report, so that `Result<(), Failure>` returned from a `#[test]`
// prints legibly.
impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Failure {}

/// The internal result of a check: `Err` carries the message of a [`Failure`].
pub(crate) type Check = Result<(), String>;

/// Returns `Err(format!(...))` from the enclosing check unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($arg:tt)+) => {
        if !$cond {
            return Err(format!($($arg)+));
        }
    };
}
pub(crate) use ensure;

/// Runs `body` once with the first seed, turning an `Err` or a panic into a [`Failure`].
pub(crate) fn run_once(part: &'static str, body: impl FnOnce(u64) -> Check) -> Result<(), Failure> {
    let seed = super::rng::seed().map_err(|m| Failure::new(part, None, m))?;
    guarded(part, seed, || body(seed))
}

/// Runs `body` with every seed of [`super::rng::seeds`], stopping at the first failure.
pub(crate) fn run_seeded(
    part: &'static str,
    mut body: impl FnMut(u64) -> Check,
) -> Result<(), Failure> {
    let seeds = super::rng::seeds().map_err(|m| Failure::new(part, None, m))?;
    for seed in seeds {
        guarded(part, seed, || body(seed))?;
    }
    Ok(())
}

fn guarded(part: &'static str, seed: u64, body: impl FnOnce() -> Check) -> Result<(), Failure> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(message)) => Err(Failure::new(part, Some(seed), message)),
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_string());
            Err(Failure::new(
                part,
                Some(seed),
                format!("the index panicked: {what}"),
            ))
        }
    }
}

/// The model the index is compared against.
pub(crate) type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// How an index is seen as ordered: [`ordered_view`] for ordered indexes, [`point_view`] for
/// point-only ones, so one check body serves both.
pub(crate) type View<I> = fn(&I) -> Option<&dyn OrderedKvIndex>;

/// The view of a point-only index: no scans.
pub(crate) fn point_view<I: KvIndex>(_: &I) -> Option<&dyn OrderedKvIndex> {
    None
}

/// The view of an ordered index.
pub(crate) fn ordered_view<I: OrderedKvIndex>(index: &I) -> Option<&dyn OrderedKvIndex> {
    Some(index)
}

/// A byte string shown legibly: escaped, with long ones cut in the middle and their length.
pub fn show(bytes: &[u8]) -> String {
    const HEAD: usize = 24;
    const TAIL: usize = 16;
    if bytes.len() <= HEAD + TAIL + 8 {
        format!("b\"{}\"", bytes.escape_ascii())
    } else {
        format!(
            "b\"{}\"..b\"{}\" ({} bytes)",
            bytes[..HEAD].escape_ascii(),
            bytes[bytes.len() - TAIL..].escape_ascii(),
            bytes.len()
        )
    }
}

/// An optional value shown legibly.
pub fn show_opt(value: Option<&[u8]>) -> String {
    match value {
        Some(v) => format!("Some({})", show(v)),
        None => "None".to_string(),
    }
}

/// How far a scan runs, shown legibly: "stopping after N" or "to the end".
#[derive(Clone, Copy)]
pub(crate) struct Stop(pub(crate) usize);

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == usize::MAX {
            f.write_str("to the end")
        } else {
            write!(f, "stopping after {}", self.0)
        }
    }
}

/// A bound shown legibly.
pub fn show_bound(bound: Bound<&[u8]>) -> String {
    match bound {
        Bound::Included(k) => format!("Included({})", show(k)),
        Bound::Excluded(k) => format!("Excluded({})", show(k)),
        Bound::Unbounded => "Unbounded".to_string(),
    }
}

/// Checks that `key` maps to `value` through `get`, `get_with` and `contains_key`.
pub(crate) fn check_present<I: KvIndex + ?Sized>(index: &I, key: &[u8], value: &[u8]) -> Check {
    let got = index.get(key);
    ensure!(
        got.as_deref() == Some(value),
        "get({}) = {}, expected {}",
        show(key),
        show_opt(got.as_deref()),
        show(value)
    );
    // The value shown is compared where it lies; only a wrong one is copied.
    let mut calls = 0;
    let mut wrong: Option<Vec<u8>> = None;
    let found = index.get_with(key, &mut |v| {
        calls += 1;
        if v != value && wrong.is_none() {
            wrong = Some(v.to_vec());
        }
    });
    ensure!(
        found && calls == 1 && wrong.is_none(),
        "get_with({}) returned {found} after {calls} callback calls with {}, expected true after 1 call with {}",
        show(key),
        show(
            wrong
                .as_deref()
                .unwrap_or(if calls == 0 { b"" } else { value })
        ),
        show(value)
    );
    ensure!(
        index.contains_key(key),
        "contains_key({}) = false for a present key",
        show(key)
    );
    Ok(())
}

/// Checks that `key` is absent through `get`, `get_with` and `contains_key`.
pub(crate) fn check_absent<I: KvIndex + ?Sized>(index: &I, key: &[u8]) -> Check {
    let got = index.get(key);
    ensure!(
        got.is_none(),
        "get({}) = {}, expected None",
        show(key),
        show_opt(got.as_deref())
    );
    let mut calls = 0;
    let found = index.get_with(key, &mut |_| calls += 1);
    ensure!(
        !found && calls == 0,
        "get_with({}) of an absent key returned {found} after {calls} callback calls",
        show(key)
    );
    ensure!(
        !index.contains_key(key),
        "contains_key({}) = true for an absent key",
        show(key)
    );
    Ok(())
}

/// Checks one `get_many` batch against the model: one call per key, in order, right values.
/// Each answer is compared with the model as it comes (nothing is copied unless it is
/// wrong); the first difference is reported.
pub(crate) fn check_get_many_batch<I: KvIndex + ?Sized>(
    index: &I,
    model: &Model,
    keys: &[&[u8]],
) -> Check {
    let mut calls = 0usize;
    let mut first_err: Option<String> = None;
    index.get_many(keys, &mut |i, got| {
        let pos = calls;
        calls += 1;
        if first_err.is_some() || pos >= keys.len() {
            return;
        }
        if i != pos {
            first_err = Some(format!(
                "get_many callback #{pos} was for key index {i} (calls must come once per key, in order)"
            ));
            return;
        }
        let want = model.get(keys[pos]).map(Vec::as_slice);
        if got != want {
            first_err = Some(format!(
                "get_many: key #{pos} {} got {}, expected {} (batch of {})",
                show(keys[pos]),
                show_opt(got),
                show_opt(want),
                keys.len()
            ));
        }
    });
    ensure!(
        calls == keys.len(),
        "get_many of {} keys made {calls} callback calls (expected one per key)",
        keys.len()
    );
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Verifies every point view of the index against the model: `len`, `is_empty`, each model
/// key through `get`/`get_with`/`contains_key`, each of `absent` that the model lacks as
/// absent, and all of them through `get_many` in batches of varied sizes.
pub(crate) fn verify_point<I: KvIndex + ?Sized>(
    index: &I,
    model: &Model,
    absent: &[Vec<u8>],
) -> Check {
    let len = index.len();
    ensure!(
        len == model.len(),
        "len() = {len}, expected {}",
        model.len()
    );
    ensure!(
        index.is_empty() == model.is_empty(),
        "is_empty() = {} with {} keys",
        index.is_empty(),
        model.len()
    );
    // Under Miri (thousands of times slower), every key through `get`, one in four through
    // all three lookups.
    let light = cfg!(miri);
    for (i, (k, v)) in model.iter().enumerate() {
        if light && i % 4 != 0 {
            let got = index.get(k);
            ensure!(
                got.as_deref() == Some(v.as_slice()),
                "get({}) = {}, expected {}",
                show(k),
                show_opt(got.as_deref()),
                show(v)
            );
        } else {
            check_present(index, k, v)?;
        }
    }
    let missing: Vec<&[u8]> = absent
        .iter()
        .filter(|k| !model.contains_key(*k))
        .map(Vec::as_slice)
        .collect();
    for (i, k) in missing.iter().enumerate() {
        if light && i % 4 != 0 {
            let got = index.get(k);
            ensure!(
                got.is_none(),
                "get({}) = {}, expected None",
                show(k),
                show_opt(got.as_deref())
            );
        } else {
            check_absent(index, k)?;
        }
    }
    // Interleave present and absent keys so batches mix hits and misses.
    let mut all: Vec<&[u8]> = Vec::with_capacity(model.len() + missing.len());
    let mut present = model.keys().map(Vec::as_slice);
    let mut miss = missing.iter().copied();
    loop {
        match (present.next(), miss.next()) {
            (None, None) => break,
            (a, b) => all.extend(a.into_iter().chain(b)),
        }
    }
    const SIZES: [usize; 7] = [1, 2, 3, 7, 16, 64, 257];
    let mut rest = &all[..];
    let mut i = 0;
    while !rest.is_empty() {
        let n = SIZES[i % SIZES.len()].min(rest.len());
        check_get_many_batch(index, model, &rest[..n])?;
        rest = &rest[n..];
        i += 1;
    }
    Ok(())
}

/// The model's pairs in `[start, end]` bounds (no panic on empty or inverted ranges).
pub(crate) fn model_range<'m>(
    model: &'m Model,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
) -> impl Iterator<Item = (&'m Vec<u8>, &'m Vec<u8>)> + 'm {
    let end: Bound<Vec<u8>> = end.map(<[u8]>::to_vec);
    model
        .range::<[u8], _>((start, Bound::Unbounded))
        .take_while(move |(k, _)| within_end(k, end.as_ref().map(Vec::as_slice)))
}

/// Whether `key` is inside the end bound `end`.
pub(crate) fn within_end(key: &[u8], end: Bound<&[u8]>) -> bool {
    match end {
        Bound::Included(e) => key <= e,
        Bound::Excluded(e) => key < e,
        Bound::Unbounded => true,
    }
}

/// Pairs collected by a scan that was asked to stop after `limit`.
pub(crate) struct Collected {
    pub(crate) pairs: Vec<(Vec<u8>, Vec<u8>)>,
    /// Visitor calls made after it returned `Break`.
    pub(crate) calls_after_break: usize,
}

/// Runs `scan` with a visitor that collects pairs and breaks after `limit` of them.
pub(crate) fn collect(limit: usize, scan: impl FnOnce(&mut ScanVisitor<'_>)) -> Collected {
    let mut pairs = Vec::new();
    let mut calls_after_break = 0;
    let mut broke = false;
    scan(&mut |k: &[u8], v: &[u8]| {
        if broke {
            calls_after_break += 1;
            return ControlFlow::Break(());
        }
        pairs.push((k.to_vec(), v.to_vec()));
        if pairs.len() >= limit {
            broke = true;
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    Collected {
        pairs,
        calls_after_break,
    }
}

/// Compares what a scan collected with what the model yields (already limited): strictly
/// ascending, no visit after `Break`, same pairs. `what` names the scan in the report.
pub(crate) fn compare_scan<'m>(
    what: &dyn Fn() -> String,
    got: &Collected,
    expected: impl Iterator<Item = (&'m Vec<u8>, &'m Vec<u8>)>,
) -> Check {
    ensure!(
        got.calls_after_break == 0,
        "{}: the visitor was called {} more times after it returned Break",
        what(),
        got.calls_after_break
    );
    for (i, w) in got.pairs.windows(2).enumerate() {
        ensure!(
            w[0].0 < w[1].0,
            "{}: keys not strictly ascending: #{i} {} then #{} {}",
            what(),
            show(&w[0].0),
            i + 1,
            show(&w[1].0)
        );
    }
    let mut expected = expected;
    for (i, (k, v)) in got.pairs.iter().enumerate() {
        match expected.next() {
            Some((ek, ev)) => {
                ensure!(
                    k == ek,
                    "{}: pair #{i} has key {}, expected {}",
                    what(),
                    show(k),
                    show(ek)
                );
                ensure!(
                    v == ev,
                    "{}: pair #{i} key {} has value {}, expected {}",
                    what(),
                    show(k),
                    show(v),
                    show(ev)
                );
            }
            None => {
                return Err(format!(
                    "{}: yielded an extra pair #{i} with key {} beyond the expected {i}",
                    what(),
                    show(k)
                ));
            }
        }
    }
    if let Some((ek, _)) = expected.next() {
        return Err(format!(
            "{}: stopped after {} pairs, but {} should have followed",
            what(),
            got.pairs.len(),
            show(ek)
        ));
    }
    Ok(())
}

/// Keys near the given ones, where ordered indexes go wrong: each key with `0x00` and `0xFF`
/// appended, its last byte removed, its last byte incremented and decremented; plus the
/// empty key and short runs of `0x00` and `0xFF`. Sorted and deduplicated.
pub(crate) fn probes_near<'a>(keys: impl IntoIterator<Item = &'a [u8]>) -> Vec<Vec<u8>> {
    let mut set: BTreeSet<Vec<u8>> = BTreeSet::new();
    for run in 0..=3 {
        set.insert(vec![0x00; run]);
        set.insert(vec![0xFF; run]);
    }
    for k in keys {
        set.insert(k.to_vec());
        let mut with = k.to_vec();
        with.push(0x00);
        set.insert(with.clone());
        *with.last_mut().expect("just pushed") = 0xFF;
        set.insert(with);
        if let Some((&last, init)) = k.split_last() {
            set.insert(init.to_vec());
            let mut up = k.to_vec();
            let mut down = k.to_vec();
            if last < 0xFF {
                *up.last_mut().expect("non-empty") = last + 1;
                set.insert(up);
            }
            if last > 0 {
                *down.last_mut().expect("non-empty") = last - 1;
                set.insert(down);
            }
        }
    }
    set.into_iter().collect()
}

/// Verifies the ordered views of the index against the model: a full scan, `first`,
/// `last`, scans from `Included`/`Excluded` bounds at every probe with early stops,
/// `scan_range` and `range` between random probe pairs with every bound kind, and
/// `scan_prefix` at probes. At most `max_probes` probes are used (sampled when more).
pub(crate) fn verify_ordered(
    index: &dyn OrderedKvIndex,
    model: &Model,
    probes: &[Vec<u8>],
    max_probes: usize,
    rng: &mut SmallRng,
) -> Check {
    use crate::api::OrderedKvIndexExt;

    let full = collect(usize::MAX, |v| index.scan(Bound::Unbounded, v));
    compare_scan(&|| "full scan(Unbounded)".to_string(), &full, model.iter())?;

    let first = index.first();
    let want_first = model.first_key_value().map(|(k, v)| (k.clone(), v.clone()));
    ensure!(
        first == want_first,
        "first() = {}, expected {}",
        show_pair(&first),
        show_pair(&want_first)
    );
    let last = index.last();
    let want_last = model.last_key_value().map(|(k, v)| (k.clone(), v.clone()));
    ensure!(
        last == want_last,
        "last() = {}, expected {}",
        show_pair(&last),
        show_pair(&want_last)
    );

    let sample: Vec<&[u8]> = if probes.len() <= max_probes {
        probes.iter().map(Vec::as_slice).collect()
    } else {
        (0..max_probes)
            .map(|_| probes[rng.random_range(0..probes.len())].as_slice())
            .collect()
    };

    // Scans from each probe, both bound kinds, stopping after 1 to 4 pairs.
    for (i, p) in sample.iter().enumerate() {
        let limit = 1 + i % 4;
        for start in [Bound::Included(*p), Bound::Excluded(*p)] {
            let got = collect(limit, |v| index.scan(start, v));
            compare_scan(
                &|| format!("scan({}) {stop}", show_bound(start), stop = Stop(limit)),
                &got,
                model_range(model, start, Bound::Unbounded).take(limit),
            )?;
        }
    }
    for limit in [1, 2, 5] {
        let got = collect(limit, |v| index.scan(Bound::Unbounded, v));
        compare_scan(
            &|| format!("scan(Unbounded) {stop}", stop = Stop(limit)),
            &got,
            model.iter().take(limit),
        )?;
    }

    // scan_range and range between random probes, every bound kind.
    let pick_bound = |rng: &mut SmallRng| -> Bound<&[u8]> {
        let p = sample[rng.random_range(0..sample.len())];
        match rng.random_range(0..5) {
            0 | 1 => Bound::Included(p),
            2 | 3 => Bound::Excluded(p),
            _ => Bound::Unbounded,
        }
    };
    let pairs = if cfg!(miri) {
        sample.len().min(8)
    } else {
        (sample.len() / 2).clamp(8, 400)
    };
    for _ in 0..pairs {
        if sample.is_empty() {
            break;
        }
        let start = pick_bound(rng);
        let end = pick_bound(rng);
        let limit = if rng.random_bool(0.5) {
            rng.random_range(1..=20)
        } else {
            1000
        };
        let got = collect(limit, |v| index.scan_range(start, end, v));
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
            model_range(model, start, end).take(limit),
        )?;
        let got = collect(limit, |v| index.range_with::<&[u8], _, _>((start, end), v));
        compare_scan(
            &|| {
                format!(
                    "range(({}, {})) {stop}",
                    show_bound(start),
                    show_bound(end),
                    stop = Stop(limit)
                )
            },
            &got,
            model_range(model, start, end).take(limit),
        )?;
    }

    // Prefix scans at probes (their prefixes too).
    for (i, p) in sample
        .iter()
        .enumerate()
        .take(if cfg!(miri) { 8 } else { 300 })
    {
        let prefix = if i % 2 == 0 { *p } else { &p[..p.len() / 2] };
        let limit = if i % 3 == 0 { 3 } else { 500 };
        let got = collect(limit, |v| index.scan_prefix(prefix, v));
        compare_scan(
            &|| format!("scan_prefix({}) {stop}", show(prefix), stop = Stop(limit)),
            &got,
            model
                .range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded))
                .take_while(|(k, _)| k.starts_with(prefix))
                .take(limit),
        )?;
    }
    Ok(())
}

/// An optional pair shown legibly.
pub(crate) fn show_pair(pair: &Option<(Vec<u8>, Vec<u8>)>) -> String {
    match pair {
        Some((k, v)) => format!("Some(({}, {}))", show(k), show(v)),
        None => "None".to_string(),
    }
}

/// Verifies the point views, and the ordered ones when `ordered` is given.
pub(crate) fn verify_all<I: KvIndex + ?Sized>(
    index: &I,
    ordered: Option<&dyn OrderedKvIndex>,
    model: &Model,
    absent: &[Vec<u8>],
    max_probes: usize,
    rng: &mut SmallRng,
) -> Check {
    verify_point(index, model, absent)?;
    if let Some(o) = ordered {
        // Probes around every key, or around a sample of them for big models.
        let mut probes = if model.len() <= max_probes {
            probes_near(model.keys().map(Vec::as_slice))
        } else {
            let keys: Vec<&Vec<u8>> = model.keys().collect();
            probes_near((0..max_probes).map(|_| keys[rng.random_range(0..keys.len())].as_slice()))
        };
        probes.extend(absent.iter().cloned());
        verify_ordered(o, model, &probes, max_probes, rng)?;
    }
    Ok(())
}

/// `first()` and `last()` of `index` agree with the model's smallest and largest pairs.
pub(crate) fn check_first_last<I: OrderedKvIndex + ?Sized>(index: &I, model: &Model) -> Check {
    let (first, last) = (index.first(), index.last());
    let wf = model.first_key_value().map(|(k, v)| (k.clone(), v.clone()));
    let wl = model.last_key_value().map(|(k, v)| (k.clone(), v.clone()));
    ensure!(
        first == wf,
        "first() = {}, expected {}",
        show_pair(&first),
        show_pair(&wf)
    );
    ensure!(
        last == wl,
        "last() = {}, expected {}",
        show_pair(&last),
        show_pair(&wl)
    );
    Ok(())
}
