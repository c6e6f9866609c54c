//! Multi-threaded stress with checks that are exact under linearizability.
//!
//! # Stress ([`check_stress`], [`check_stress_ordered`])
//!
//! The key universe is `n` keys `"s" ++ be32(i) ++ (i % 13 bytes)`, ordered by `i`, in three
//! interleaved classes (so every region of the index holds all three):
//! - **stable** (`i % 8 == 0`): inserted before the threads start, never written again.
//!   Every read of one must return its exact value; every scan must yield every stable key
//!   inside the part of the range it covered (keys present for the whole scan).
//! - **owned** (`i % 8` in 1..=4): each owned by one writer, the only thread that writes it.
//!   The owner checks every result exactly (insert new/not new, remove present/absent, its
//!   own reads return its last write), since nothing else changes those keys.
//! - **shared** (`i % 8` in 5..=7): every writer inserts and removes them. Each writer logs,
//!   per key, how many of its inserts reported the key new, how many of its removes found
//!   it, and its last operation on it. Linearizability orders each key's operations in one
//!   history starting from absent, so `news - removals` over all writers is exactly the
//!   final presence (0 or 1); and a present key's final value must be the last operation of
//!   the writer that wrote it (a later write or removal by that writer would come after it).
//!
//! A value is `key ++ writer ++ be32(version) ++ (version % 23) padding bytes`; readers
//! check the key echo, the padding (no torn value), that the writer may write that key, and
//! that the version was already announced by its writer (each writer publishes a version in
//! an atomic before writing it), so a value no writer wrote or a mixed one is caught. (That
//! last check relies on the index publishing values with release/acquire ordering, as any
//! index handing data between threads does, or on x86's ordered stores.)
//! Readers run `get`, `get_many`, `contains_key`, `len` (bounded by the stable count and the
//! universe), and for ordered indexes scans from random bounds with random early stops,
//! `scan_range`, `scan_prefix`, `first` (always the stable key 0) and `last`, asserting
//! strictly ascending keys. After the threads join (quiescence), the index must equal the
//! model built from the logs exactly, `len` included.
//!
//! # Contention ([`check_contention`])
//!
//! Four threads released together by a barrier insert the same keys in the same order:
//! for each key exactly one insert may report it new. Then they remove the same keys: exactly
//! one removal may find each. Then random mixed operations, with per-key counts checked as
//! above. `len` must be exact after each phase.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

use super::common::{
    Check, Failure, Model, Stop, View, collect, ensure, ordered_view, point_view, run_once, show,
    show_opt, verify_all, within_end,
};
use super::rng::{derive, rng, sized};
use crate::api::{KvIndex, OrderedKvIndex, u64_key};

/// Writer id of the stable keys' values.
const STABLE_WRITER: u8 = 0xFF;
/// Number of writer threads.
const WRITERS: usize = 4;
/// Number of reader threads.
const READERS: usize = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Stable,
    Owned(usize),
    Shared,
}

struct Layout {
    n: usize,
}

impl Layout {
    fn key(&self, i: usize) -> Vec<u8> {
        let mut k = Vec::with_capacity(5 + 12);
        k.push(b's');
        k.extend((i as u32).to_be_bytes());
        k.extend(std::iter::repeat_n((i % 251) as u8, i % 13));
        k
    }

    /// The universe index of `key`, if it is a key of the universe.
    fn index_of(&self, key: &[u8]) -> Option<usize> {
        let i = u32::from_be_bytes(key.get(1..5)?.try_into().ok()?) as usize;
        (i < self.n && key == self.key(i)).then_some(i)
    }

    fn class(&self, i: usize) -> Class {
        match i % 8 {
            0 => Class::Stable,
            r @ 1..=4 => Class::Owned(((i >> 3) + r) % WRITERS),
            _ => Class::Shared,
        }
    }
}

fn value(key: &[u8], writer: u8, version: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(key.len() + 5 + 22);
    v.extend_from_slice(key);
    v.push(writer);
    v.extend(version.to_be_bytes());
    v.extend(std::iter::repeat_n(
        version as u8 ^ 0x5A,
        (version % 23) as usize,
    ));
    v
}

/// Decodes a value written for `key`: `(writer, version)`, or why it is malformed.
fn decode(key: &[u8], v: &[u8]) -> Result<(u8, u32), String> {
    let bad = |why: &str| {
        format!(
            "value {} read for key {} is malformed: {why}",
            show(v),
            show(key)
        )
    };
    if v.len() < key.len() + 5 || &v[..key.len()] != key {
        return Err(bad(
            "it does not start with its key (a value of another key?)",
        ));
    }
    let writer = v[key.len()];
    let version = u32::from_be_bytes(v[key.len() + 1..key.len() + 5].try_into().expect("4 bytes"));
    let pad = &v[key.len() + 5..];
    if pad.len() != (version % 23) as usize || pad.iter().any(|&b| b != version as u8 ^ 0x5A) {
        return Err(bad(
            "its padding does not match its version (torn or mixed value?)",
        ));
    }
    Ok((writer, version))
}

struct Shared {
    /// Releases all threads together, so readers overlap writers.
    start: Barrier,
    /// The latest version each writer announced (stored before it writes that version).
    progress: Vec<AtomicU32>,
    failed: AtomicBool,
    writers_left: AtomicUsize,
}

/// Decrements `writers_left` when a writer ends, even by panicking, so readers stop.
struct WriterDone<'a>(&'a AtomicUsize);

impl Drop for WriterDone<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Checks a value read concurrently for key `i`.
fn check_value(layout: &Layout, shared: &Shared, i: usize, v: &[u8]) -> Check {
    let key = layout.key(i);
    let (writer, version) = decode(&key, v)?;
    match layout.class(i) {
        Class::Stable => ensure!(
            (writer, version) == (STABLE_WRITER, 0),
            "stable key {} read with value of writer {writer} version {version}, but it is never rewritten",
            show(&key)
        ),
        Class::Owned(w) => ensure!(
            writer as usize == w,
            "key {} owned by writer {w} read with a value of writer {writer}",
            show(&key)
        ),
        Class::Shared => ensure!(
            (writer as usize) < WRITERS,
            "shared key {} read with a value of unknown writer {writer}",
            show(&key)
        ),
    }
    if writer != STABLE_WRITER {
        let announced = shared.progress[writer as usize].load(Ordering::SeqCst);
        ensure!(
            version <= announced,
            "key {} read with version {version} of writer {writer}, which had only written up to {announced}",
            show(&key)
        );
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LastOp {
    Insert(u32),
    Remove,
}

#[derive(Default)]
struct SharedLog {
    news: i64,
    removals: i64,
    last: Option<LastOp>,
}

#[derive(Default)]
struct WriterLog {
    owned: HashMap<usize, u32>,
    shared: HashMap<usize, SharedLog>,
}

fn writer<I: KvIndex>(
    index: &I,
    layout: &Layout,
    shared: &Shared,
    w: usize,
    seed: u64,
    ops: usize,
) -> Result<WriterLog, String> {
    let mut r = rng(derive(seed, 100 + w as u64));
    let owned: Vec<usize> = (0..layout.n)
        .filter(|&i| layout.class(i) == Class::Owned(w))
        .collect();
    let shared_keys: Vec<usize> = (0..layout.n)
        .filter(|&i| layout.class(i) == Class::Shared)
        .collect();
    let mut log = WriterLog::default();
    shared.start.wait();
    for step in 0..ops {
        if shared.failed.load(Ordering::Relaxed) {
            break;
        }
        let version = step as u32 + 1;
        let ctx = |e: String| format!("writer {w}, step {step}: {e}");
        match r.random_range(0..100) {
            0..40 if !owned.is_empty() => {
                let i = owned[r.random_range(0..owned.len())];
                let key = layout.key(i);
                if r.random_bool(0.65) {
                    shared.progress[w].store(version, Ordering::SeqCst);
                    let got = index.insert(&key, &value(&key, w as u8, version));
                    let want = !log.owned.contains_key(&i);
                    ensure!(
                        got == Ok(want),
                        "{}",
                        ctx(format!(
                            "insert of owned key {} returned {got:?}, expected Ok({want})",
                            show(&key)
                        ))
                    );
                    log.owned.insert(i, version);
                } else {
                    let got = index.remove(&key);
                    let want = log.owned.remove(&i).is_some();
                    ensure!(
                        got == want,
                        "{}",
                        ctx(format!(
                            "remove of owned key {} returned {got}, expected {want}",
                            show(&key)
                        ))
                    );
                }
            }
            40..50 if !owned.is_empty() => {
                let i = owned[r.random_range(0..owned.len())];
                let key = layout.key(i);
                let got = index.get(&key);
                let want = log.owned.get(&i).map(|&ver| value(&key, w as u8, ver));
                ensure!(
                    got == want,
                    "{}",
                    ctx(format!(
                        "get of owned key {} returned {}, expected {} (its owner's last write)",
                        show(&key),
                        show_opt(got.as_deref()),
                        show_opt(want.as_deref())
                    ))
                );
            }
            50..85 if !shared_keys.is_empty() => {
                let i = shared_keys[r.random_range(0..shared_keys.len())];
                let key = layout.key(i);
                let entry = log.shared.entry(i).or_default();
                if r.random_bool(0.55) {
                    shared.progress[w].store(version, Ordering::SeqCst);
                    let got = index.insert(&key, &value(&key, w as u8, version));
                    match got {
                        Ok(new) => entry.news += new as i64,
                        Err(e) => {
                            return Err(ctx(format!(
                                "insert of shared key {} failed: {e}",
                                show(&key)
                            )));
                        }
                    }
                    entry.last = Some(LastOp::Insert(version));
                } else {
                    entry.removals += index.remove(&key) as i64;
                    entry.last = Some(LastOp::Remove);
                }
            }
            _ => read_op(index, layout, shared, &mut r).map_err(ctx)?,
        }
    }
    Ok(log)
}

/// A random point read with plausibility checks (exact for stable keys).
fn read_op<I: KvIndex>(index: &I, layout: &Layout, shared: &Shared, r: &mut SmallRng) -> Check {
    let n = layout.n;
    match r.random_range(0..4) {
        0 | 1 => {
            let i = r.random_range(0..n);
            let key = layout.key(i);
            match index.get(&key) {
                Some(v) => check_value(layout, shared, i, &v)?,
                None => ensure!(
                    layout.class(i) != Class::Stable,
                    "get of stable key {} returned None",
                    show(&key)
                ),
            }
        }
        2 => {
            let idx: Vec<usize> = (0..r.random_range(1..24))
                .map(|_| r.random_range(0..n))
                .collect();
            let keys: Vec<Vec<u8>> = idx.iter().map(|&i| layout.key(i)).collect();
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let mut calls = Vec::new();
            index.get_many(&refs, &mut |j, v| calls.push((j, v.map(<[u8]>::to_vec))));
            ensure!(
                calls.len() == keys.len(),
                "get_many of {} keys made {} calls",
                keys.len(),
                calls.len()
            );
            for (pos, (j, v)) in calls.into_iter().enumerate() {
                ensure!(j == pos, "get_many call #{pos} was for key index {j}");
                match v {
                    Some(v) => check_value(layout, shared, idx[j], &v)
                        .map_err(|e| format!("get_many: {e}"))?,
                    None => ensure!(
                        layout.class(idx[j]) != Class::Stable,
                        "get_many returned None for stable key {}",
                        show(&keys[j])
                    ),
                }
            }
        }
        _ => {
            let i = 8 * r.random_range(0..n.div_ceil(8));
            ensure!(
                index.contains_key(&layout.key(i)),
                "contains_key of stable key {} is false",
                show(&layout.key(i))
            );
            let len = index.len();
            let stable = n.div_ceil(8);
            ensure!(
                (stable..=n).contains(&len),
                "len() = {len} during writes, outside [{stable}, {n}] (stable keys .. universe)"
            );
        }
    }
    Ok(())
}

/// A random scan shape with every concurrent-scan guarantee checked.
fn scan_op(o: &dyn OrderedKvIndex, layout: &Layout, shared: &Shared, r: &mut SmallRng) -> Check {
    let n = layout.n;
    let s = r.random_range(0..n);
    let e = r.random_range(s..n);
    let (sk, ek) = (layout.key(s), layout.key(e));
    // Universe indexes allowed by the start bound.
    let (start, lo) = match r.random_range(0..3) {
        0 => (Bound::Unbounded, 0),
        1 => (Bound::Included(&sk[..]), s),
        _ => (Bound::Excluded(&sk[..]), s + 1),
    };
    let limit = if r.random_bool(0.2) {
        usize::MAX
    } else {
        r.random_range(1..300)
    };
    let stop = Stop(limit);
    let shape = r.random_range(0..4);
    let (end, hi_end, what) = match shape {
        0 | 1 => (Bound::Unbounded, n, "scan"),
        2 => match r.random_range(0..2) {
            0 => (Bound::Included(&ek[..]), e + 1, "scan_range"),
            _ => (Bound::Excluded(&ek[..]), e, "scan_range"),
        },
        _ => (Bound::Unbounded, n, "scan_prefix"),
    };
    let prefix = &sk[..4];
    let got = match (shape, start) {
        (3, _) => collect(limit, |v| o.scan_prefix(prefix, v)),
        (2, _) => collect(limit, |v| o.scan_range(start, end, v)),
        _ => collect(limit, |v| o.scan(start, v)),
    };
    let (lo, hi_end) = if shape == 3 {
        // Keys with the same first 4 bytes: the same i >> 8.
        let base = s & !0xFF;
        (base, (base + 0x100).min(n))
    } else {
        (lo, hi_end)
    };
    let desc = || format!("{what} from index {lo} to {hi_end} {stop}");
    ensure!(
        got.calls_after_break == 0,
        "{}: visitor called after Break",
        desc()
    );
    let mut yielded = Vec::with_capacity(got.pairs.len());
    for (pos, (k, v)) in got.pairs.iter().enumerate() {
        let Some(i) = layout.index_of(k) else {
            return Err(format!(
                "{}: pair #{pos} has key {}, which no thread ever wrote",
                desc(),
                show(k)
            ));
        };
        if let Some(&prev) = yielded.last() {
            ensure!(
                i > prev,
                "{}: keys not strictly ascending: {} after {}",
                desc(),
                show(k),
                show(&layout.key(prev))
            );
        }
        ensure!(
            (lo..hi_end).contains(&i) && within_end(k, end),
            "{}: yielded key {} outside the scanned range",
            desc(),
            show(k)
        );
        check_value(layout, shared, i, v).map_err(|e| format!("{}: {e}", desc()))?;
        yielded.push(i);
    }
    // Every stable key in the covered part of the range was present for the whole scan.
    let covered_end = if got.pairs.len() >= limit {
        yielded.last().map_or(lo, |&i| i + 1)
    } else {
        hi_end
    };
    let mut y = yielded.iter().peekable();
    for i in (lo.next_multiple_of(8)..covered_end).step_by(8) {
        while y.next_if(|&&j| j < i).is_some() {}
        ensure!(
            y.peek() == Some(&&i),
            "{}: stable key {} (present throughout) was not yielded; {} pairs yielded",
            desc(),
            show(&layout.key(i)),
            yielded.len()
        );
    }
    Ok(())
}

fn reader<I: KvIndex>(
    index: &I,
    ordered: Option<&dyn OrderedKvIndex>,
    layout: &Layout,
    shared: &Shared,
    id: usize,
    seed: u64,
) -> Check {
    let mut r = rng(derive(seed, 200 + id as u64));
    let min_iterations = sized(200, 4);
    let mut it = 0;
    shared.start.wait();
    while (shared.writers_left.load(Ordering::SeqCst) > 0 || it < min_iterations)
        && !shared.failed.load(Ordering::Relaxed)
    {
        let ctx = |e: String| format!("reader {id}, iteration {it}: {e}");
        match ordered {
            Some(o) if r.random_bool(0.5) => {
                if r.random_range(0..10) == 0 {
                    let first = o
                        .first()
                        .ok_or_else(|| ctx("first() = None with stable keys present".into()))?;
                    ensure!(
                        first.0 == layout.key(0),
                        "{}",
                        ctx(format!(
                            "first() = {}, but stable key 0 is the smallest",
                            show(&first.0)
                        ))
                    );
                    check_value(layout, shared, 0, &first.1).map_err(ctx)?;
                    let last = o
                        .last()
                        .ok_or_else(|| ctx("last() = None with stable keys present".into()))?;
                    let i = layout.index_of(&last.0);
                    let max_stable = 8 * ((layout.n - 1) / 8);
                    ensure!(
                        i.is_some_and(|i| i >= max_stable),
                        "{}",
                        ctx(format!(
                            "last() = {}, below the largest stable key",
                            show(&last.0)
                        ))
                    );
                    check_value(layout, shared, i.expect("checked"), &last.1).map_err(ctx)?;
                } else {
                    scan_op(o, layout, shared, &mut r).map_err(ctx)?;
                }
            }
            _ => read_op(index, layout, shared, &mut r).map_err(ctx)?,
        }
        it += 1;
    }
    Ok(())
}

fn stress_impl<I: KvIndex>(
    part: &'static str,
    make: &dyn Fn() -> I,
    view: View<I>,
) -> Result<(), Failure> {
    run_once(part, |seed| {
        let layout = Layout { n: sized(4096, 64) };
        let ops = sized(25_000, 100);
        let index = make();
        let ordered = view(&index);
        for i in (0..layout.n).step_by(8) {
            let key = layout.key(i);
            let got = index.insert(&key, &value(&key, STABLE_WRITER, 0));
            ensure!(
                got == Ok(true),
                "preloading stable key {} returned {got:?}",
                show(&key)
            );
        }
        let shared = Shared {
            start: Barrier::new(WRITERS + READERS),
            progress: (0..WRITERS).map(|_| AtomicU32::new(0)).collect(),
            failed: AtomicBool::new(false),
            writers_left: AtomicUsize::new(WRITERS),
        };
        let (logs, reader_results) = std::thread::scope(|s| {
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    let (index, layout, shared) = (&index, &layout, &shared);
                    s.spawn(move || {
                        let _done = WriterDone(&shared.writers_left);
                        let res = writer(index, layout, shared, w, seed, ops);
                        if res.is_err() {
                            shared.failed.store(true, Ordering::SeqCst);
                        }
                        res
                    })
                })
                .collect();
            let readers: Vec<_> = (0..READERS)
                .map(|id| {
                    let (index, layout, shared) = (&index, &layout, &shared);
                    s.spawn(move || {
                        let res = reader(index, ordered, layout, shared, id, seed);
                        if res.is_err() {
                            shared.failed.store(true, Ordering::SeqCst);
                        }
                        res
                    })
                })
                .collect();
            let logs: Vec<_> = writers.into_iter().map(|h| h.join()).collect();
            let reads: Vec<_> = readers.into_iter().map(|h| h.join()).collect();
            (logs, reads)
        });
        let mut writer_logs = Vec::with_capacity(WRITERS);
        for log in logs {
            match log {
                Ok(Ok(log)) => writer_logs.push(log),
                Ok(Err(e)) => return Err(e),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        for res in reader_results {
            match res {
                Ok(res) => res?,
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        // Quiescence: the index must equal the model built from the logs.
        let mut model = Model::new();
        let mut all_keys = Vec::with_capacity(layout.n);
        for i in 0..layout.n {
            let key = layout.key(i);
            all_keys.push(key.clone());
            match layout.class(i) {
                Class::Stable => {
                    model.insert(key.clone(), value(&key, STABLE_WRITER, 0));
                }
                Class::Owned(w) => {
                    if let Some(&ver) = writer_logs[w].owned.get(&i) {
                        model.insert(key.clone(), value(&key, w as u8, ver));
                    }
                }
                Class::Shared => {
                    let (news, removals) = writer_logs
                        .iter()
                        .filter_map(|l| l.shared.get(&i))
                        .fold((0, 0), |(n, r), e| (n + e.news, r + e.removals));
                    let count = news - removals;
                    ensure!(
                        count == 0 || count == 1,
                        "shared key {}: inserts reported it new {news} times and removes found it \
                         {removals} times; no linearizable history from absent allows that",
                        show(&key)
                    );
                    match (index.get(&key), count) {
                        (Some(v), 1) => {
                            let (w, ver) = decode(&key, &v)?;
                            let last = writer_logs
                                .get(w as usize)
                                .and_then(|l| l.shared.get(&i))
                                .and_then(|e| e.last);
                            ensure!(
                                last == Some(LastOp::Insert(ver)),
                                "shared key {} ends with writer {w}'s version {ver}, but that writer's \
                                 last operation on it was {last:?}",
                                show(&key)
                            );
                            model.insert(key.clone(), v);
                        }
                        (None, 0) => {}
                        (got, _) => {
                            return Err(format!(
                                "shared key {}: inserts reported it new {news} times and removes found it \
                                 {removals} times, so it must be {}, but get returned {}",
                                show(&key),
                                if count == 1 { "present" } else { "absent" },
                                got.as_deref().map_or("None".to_string(), show)
                            ));
                        }
                    }
                }
            }
        }
        verify_all(
            &index,
            ordered,
            &model,
            &all_keys,
            sized(2000, 30),
            &mut rng(seed),
        )
        .map_err(|e| format!("after the threads joined (quiescent): {e}"))
    })
}

/// Four writers and two readers on one index (point operations): owned keys checked exactly,
/// shared keys by linearizable counting, concurrent reads for plausibility, and an exact
/// final state including `len`. See the module docs.
pub fn check_stress<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    stress_impl("stress", make, point_view::<I>)
}

/// [`check_stress`] with readers that also scan: strictly ascending keys, plausible values,
/// every stable key in the covered range yielded, `first`/`last` consistent.
pub fn check_stress_ordered<I: OrderedKvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    stress_impl("stress_ordered", make, ordered_view::<I>)
}

/// Contended inserts and removes of the same keys by four threads: exactly one insert reports
/// each key new, exactly one removal finds it, per-key counts of random mixed operations add
/// up, and `len` is exact after every phase (quiescence). See the module docs.
pub fn check_contention<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    const THREADS: usize = 4;
    run_once("contention", |seed| {
        let mut r = rng(seed);
        let index = make();
        let n = sized(2000, 32);
        let keys: Vec<Vec<u8>> = (0..n as u64)
            .map(|i| {
                [
                    &b"c"[..],
                    &u64_key(i.wrapping_mul(0x9E37_79B9_7F4A_7C15))[..],
                ]
                .concat()
            })
            .collect();
        let mut present = vec![false; n];
        let barrier = Barrier::new(THREADS);
        let check_len = |present: &[bool], phase: &str| -> Check {
            let want = present.iter().filter(|&&p| p).count();
            let len = index.len();
            ensure!(
                len == want,
                "after {phase} (threads joined): len() = {len}, expected {want}"
            );
            Ok(())
        };
        for round in 0..sized(4, 2) {
            // Phase A: the same keys, in the same order, by every thread.
            let subset: Vec<usize> = (0..n).filter(|_| r.random_bool(0.7)).collect();
            let news: Vec<Vec<bool>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..THREADS)
                    .map(|t| {
                        let (index, keys, subset, barrier) = (&index, &keys, &subset, &barrier);
                        s.spawn(move || {
                            barrier.wait();
                            subset
                                .iter()
                                .map(|&i| index.insert(&keys[i], &[t as u8, round as u8]))
                                .collect::<Result<Vec<bool>, _>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect::<Result<_, _>>()
            })
            .map_err(|e| format!("round {round}: a contended insert failed: {e}"))?;
            for (j, &i) in subset.iter().enumerate() {
                let count = news.iter().filter(|v| v[j]).count();
                let want = usize::from(!present[i]);
                ensure!(
                    count == want,
                    "round {round}: {count} of {THREADS} concurrent inserts of key {} reported it new, expected {want}",
                    show(&keys[i])
                );
                present[i] = true;
                let v = index.get(&keys[i]);
                ensure!(
                    v.as_ref().is_some_and(|v| v.len() == 2
                        && (v[0] as usize) < THREADS
                        && v[1] == round as u8),
                    "round {round}: after concurrent inserts key {} holds {}, not a value written this round",
                    show(&keys[i]),
                    show_opt(v.as_deref())
                );
            }
            check_len(&present, &format!("round {round}'s contended inserts"))?;

            // Phase B: the same removals by every thread.
            let subset: Vec<usize> = (0..n).filter(|_| r.random_bool(0.5)).collect();
            let found: Vec<Vec<bool>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..THREADS)
                    .map(|_| {
                        let (index, keys, subset, barrier) = (&index, &keys, &subset, &barrier);
                        s.spawn(move || {
                            barrier.wait();
                            subset
                                .iter()
                                .map(|&i| index.remove(&keys[i]))
                                .collect::<Vec<bool>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            });
            for (j, &i) in subset.iter().enumerate() {
                let count = found.iter().filter(|v| v[j]).count();
                let want = usize::from(present[i]);
                ensure!(
                    count == want,
                    "round {round}: {count} of {THREADS} concurrent removes of key {} found it, expected {want}",
                    show(&keys[i])
                );
                present[i] = false;
            }
            check_len(&present, &format!("round {round}'s contended removes"))?;

            // Phase C: random mixed operations; per-key counts must add up.
            let ops = sized(20_000, 64) / THREADS;
            let counts: Vec<Vec<(i64, i64)>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..THREADS)
                    .map(|t| {
                        let (index, keys, barrier) = (&index, &keys, &barrier);
                        s.spawn(move || {
                            let mut r = rng(derive(seed, (round * THREADS + t) as u64 + 1000));
                            let mut c = vec![(0i64, 0i64); keys.len()];
                            barrier.wait();
                            for _ in 0..ops {
                                let i = r.random_range(0..keys.len());
                                if r.random_bool(0.5) {
                                    c[i].0 +=
                                        index.insert(&keys[i], &[t as u8, round as u8])? as i64;
                                } else {
                                    c[i].1 += index.remove(&keys[i]) as i64;
                                }
                            }
                            Ok::<_, crate::api::Error>(c)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect::<Result<_, _>>()
            })
            .map_err(|e| format!("round {round}: a mixed insert failed: {e}"))?;
            for i in 0..n {
                let (news, removals) = counts
                    .iter()
                    .fold((0, 0), |(a, b), c| (a + c[i].0, b + c[i].1));
                let end = i64::from(present[i]) + news - removals;
                ensure!(
                    end == 0 || end == 1,
                    "round {round}: key {} was {} before mixed operations, then reported new {news} times \
                     and found by removes {removals} times: impossible under linearizability",
                    show(&keys[i]),
                    if present[i] { "present" } else { "absent" }
                );
                let is = index.contains_key(&keys[i]);
                ensure!(
                    is == (end == 1),
                    "round {round}: key {} should be {} after mixed operations (by the counts), contains_key = {is}",
                    show(&keys[i]),
                    if end == 1 { "present" } else { "absent" }
                );
                present[i] = end == 1;
            }
            check_len(&present, &format!("round {round}'s mixed operations"))?;
        }
        // Shuffle-free cleanup check: removing everything leaves an empty index.
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(&mut r);
        for i in order {
            ensure!(
                index.remove(&keys[i]) == present[i],
                "final removal of key {} disagrees with its presence",
                show(&keys[i])
            );
            present[i] = false;
        }
        check_len(&present, "removing everything")?;
        ensure!(
            index.is_empty(),
            "is_empty() = false after removing everything"
        );
        Ok(())
    })
}
