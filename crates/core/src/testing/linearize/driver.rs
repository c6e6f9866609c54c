//! The driver: threads of random point operations on a few shared keys, a scanner beside
//! them, and the structure growing and shrinking underneath; every operation recorded.
//!
//! A round runs `workers` threads, released together by a barrier, on a fresh subject.
//! Each runs `ops` operations on the *hot keys* — a handful of keys every thread reads and
//! writes: the empty key, `k`, keys that are prefixes of each other — with every point
//! operation the subject has: `get`, `contains_key`, `get_many` (each key of the batch
//! recorded as a read over the batch's interval), `insert`, `remove`, and when it has
//! them `compute` (set, remove, append, keep), `update` (set, append) and
//! `update_in_place` (overwrite), the closures recording the value they were shown.
//! Every written value is unique (`v`, the thread, a sequence number), so a stale or lost
//! value cannot hide. Between those, each thread inserts its own *filler keys*, spread
//! among the hot keys, during the first half of its operations and removes them during
//! the second: the structure grows and shrinks (splits, expansions, migrations) while the
//! hot keys are hammered. With an ordered subject, a scanner thread runs scans, reverse
//! scans, range and prefix scans with early stops, `first` and `last` the whole time
//! at the pace of one scan per four point operations of the workers (each side waits when
//! it is more than 64 operations ahead, so that scans overlap the whole round however the
//! threads are scheduled).
//!
//! [`check_round`] checks the point history with [`super::check()`] (the
//! [`Register`] spec) and the scans with [`super::check_scans`], and
//! reports answers inconsistent on their own (an error from a correct call, `compute`
//! returning "was present" while its closure was shown no value).

use std::fmt;
use std::ops::{Bound, ControlFlow};
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::Rng;
use rand::rngs::SmallRng;

use super::check::{Budget, Report, check};
use super::history::{Clock, History, Recorder};
use super::register::{ComputeOp, Out, RegOp, Register, UpdateOp};
use super::scan::{ScanRecord, ScanViolation, check_scans};
use crate::api::{OrderedKvIndex, prefix_successor};
use crate::testing::rng::{derive, rng};
use crate::testing::torture::Subject;
use crate::testing::wait::DEADLINE;

/// The hot keys, in the order they are used (a round uses the first `hot_keys`).
pub const HOT_KEYS: [&[u8]; 8] = [
    b"",
    b"k\x40\x00",
    b"k",
    b"k\x40\x00\x00",
    b"k\x80\x00",
    b"k\xc0\x00\xff",
    b"k\xff\xff",
    b"l",
];

/// Most scans a round records (memory).
const MAX_SCANS: usize = 200_000;

/// Hot-key operations (of all workers together) per scan: the workers and the scanner
/// keep within [`SCAN_LAG`] operations of this pace, so scans run throughout the round
/// and stay proportionate to its point operations (and to the time their check takes),
/// however the threads are scheduled.
const SCAN_STRIDE: usize = 4;

/// How far (in hot-key operations) either side may run ahead of the scan pace.
const SCAN_LAG: usize = 64;

/// What a round runs.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// Threads of point operations.
    pub workers: usize,
    /// Operations on the hot keys per worker.
    pub ops: usize,
    /// How many of [`HOT_KEYS`] are used (1 to 8).
    pub hot_keys: usize,
    /// Filler keys each worker inserts (first half) and removes (second half).
    pub fillers: usize,
    /// Whether a scanner runs beside the workers (ordered subjects only).
    pub scanner: bool,
    /// The seed of every thread's choices.
    pub seed: u64,
}

impl Default for Workload {
    /// Three workers, 2,000 operations each on 5 hot keys, 1,500 fillers each, a scanner.
    fn default() -> Self {
        Workload {
            workers: 3,
            ops: 2000,
            hot_keys: 5,
            fillers: 1500,
            scanner: true,
            seed: crate::testing::rng::DEFAULT_SEED,
        }
    }
}

/// What a round recorded.
pub struct Round {
    /// Every point operation, with its times and output.
    pub history: History<RegOp, Out>,
    /// Every scan.
    pub scans: Vec<ScanRecord>,
    /// Answers that are wrong on their own (errors from correct calls, inconsistent
    /// results).
    pub local: Vec<String>,
}

/// A filler key: `k`, two bytes placing it among the hot keys, the worker, its number.
fn filler(spread: u16, worker: usize, j: usize) -> Vec<u8> {
    let mut k = Vec::with_capacity(8);
    k.push(b'k');
    k.extend(spread.to_be_bytes());
    k.push(worker as u8);
    k.extend((j as u32).to_be_bytes());
    k
}

struct Worker<'a> {
    subject: &'a dyn Subject,
    rec: Recorder<RegOp, Out>,
    rng: SmallRng,
    id: usize,
    seq: u32,
    hot: &'a [&'a [u8]],
    local: Vec<String>,
}

impl Worker<'_> {
    fn value(&mut self, tag: u8) -> Vec<u8> {
        self.seq += 1;
        let mut v = vec![tag, self.id as u8];
        v.extend(self.seq.to_be_bytes());
        v
    }

    fn hot_key(&mut self) -> &'static [u8] {
        HOT_KEYS[self.rng.random_range(0..self.hot.len())]
    }

    fn insert(&mut self, key: &[u8], v: Vec<u8>) {
        let index = self.subject.index();
        let call = self.rec.now();
        match index.insert(key, &v) {
            Ok(new) => self
                .rec
                .done(key, RegOp::Insert(v), call, Out::Present(!new)),
            Err(e) => {
                self.local
                    .push(format!("insert({}) failed: {e}", crate::testing::show(key)));
                self.rec.pending(key, RegOp::Insert(v), call);
            }
        }
    }

    fn remove(&mut self, key: &[u8]) {
        let index = self.subject.index();
        self.rec
            .run(key, RegOp::Remove, || Out::Present(index.remove(key)));
    }

    /// One random operation on a hot key.
    fn step(&mut self) {
        let index = self.subject.index();
        let rmw = self.subject.update();
        let k = self.hot_key();
        let mut roll = self.rng.random_range(0..100);
        if rmw.is_none() && roll >= 70 {
            roll -= 45;
        }
        match roll {
            0..=24 => {
                self.rec.run(k, RegOp::Get, || Out::Value(index.get(k)));
            }
            25..=29 => {
                self.rec
                    .run(k, RegOp::Contains, || Out::Present(index.contains_key(k)));
            }
            30..=34 => {
                let n = self.rng.random_range(2..=4);
                let keys: Vec<&[u8]> = (0..n).map(|_| self.hot_key()).collect();
                let mut got: Vec<Option<Option<Vec<u8>>>> = vec![None; n];
                let call = self.rec.now();
                index.get_many(&keys, &mut |i, v| {
                    if let Some(slot) = got.get_mut(i) {
                        *slot = Some(v.map(<[u8]>::to_vec));
                    }
                });
                for (key, answer) in keys.iter().zip(got) {
                    match answer {
                        Some(v) => self.rec.done(key, RegOp::Get, call, Out::Value(v)),
                        None => self.local.push("get_many skipped a key".into()),
                    }
                }
            }
            35..=54 => {
                let v = self.value(b'v');
                self.insert(k, v);
            }
            55..=69 => self.remove(k),
            70..=81 => {
                let Some(u) = rmw else { return };
                let action = match self.rng.random_range(0..10) {
                    0..=2 => ComputeOp::Set(self.value(b'c')),
                    3 | 4 => ComputeOp::Remove,
                    5..=7 => ComputeOp::Append(vec![self.id as u8, self.seq as u8]),
                    _ => ComputeOp::Keep,
                };
                self.seq += 1;
                let mut seen = None;
                let call = self.rec.now();
                let got = u.compute_with(k, &mut |old| {
                    seen = Some(old.map(<[u8]>::to_vec));
                    match &action {
                        ComputeOp::Set(v) => Some(v.clone()),
                        ComputeOp::Remove => None,
                        ComputeOp::Append(x) => Some([old.unwrap_or_default(), x].concat()),
                        ComputeOp::Keep => old.map(<[u8]>::to_vec),
                    }
                });
                self.finish_rmw(k, RegOp::Compute(action), call, got, seen);
            }
            _ => {
                let Some(u) = rmw else { return };
                let in_place = roll >= 94;
                let op = if in_place {
                    UpdateOp::Overwrite(self.value(b'o'))
                } else if self.rng.random_bool(0.5) {
                    UpdateOp::Set(self.value(b'u'))
                } else {
                    self.seq += 1;
                    UpdateOp::Append(vec![self.id as u8, self.seq as u8])
                };
                let mut seen = None;
                let call = self.rec.now();
                let got = match &op {
                    UpdateOp::Overwrite(x) => u.update_in_place_with(k, &mut |v| {
                        seen = Some(Some(v.to_vec()));
                        let n = v.len().min(x.len());
                        v[..n].copy_from_slice(&x[..n]);
                    }),
                    UpdateOp::Set(x) => u.update_with(k, &mut |old| {
                        seen = Some(Some(old.to_vec()));
                        x.clone()
                    }),
                    UpdateOp::Append(x) => u.update_with(k, &mut |old| {
                        seen = Some(Some(old.to_vec()));
                        [old, x].concat()
                    }),
                };
                let seen = Some(seen.flatten());
                self.finish_rmw(k, RegOp::Update(op), call, got, seen);
            }
        }
    }

    /// Records a read-modify-write whose closure was shown `seen` (`None`: never called;
    /// `Some(None)`: called on an absent key), checking its result agrees.
    fn finish_rmw(
        &mut self,
        key: &[u8],
        input: RegOp,
        call: u64,
        got: crate::Result<bool>,
        seen: Option<Option<Vec<u8>>>,
    ) {
        let name = match input {
            RegOp::Compute(_) => "compute",
            _ => "update",
        };
        match (got, seen) {
            (Ok(present), Some(old)) if present == old.is_some() => {
                self.rec.done(key, input, call, Out::Old(old))
            }
            (Ok(present), seen) => {
                self.local.push(format!(
                    "{name}({}) returned Ok({present}) but its closure was shown {seen:?}",
                    crate::testing::show(key)
                ));
                self.rec.pending(key, input, call);
            }
            (Err(e), _) => {
                self.local
                    .push(format!("{name}({}) failed: {e}", crate::testing::show(key)));
                self.rec.pending(key, input, call);
            }
        }
    }
}

/// Runs one round on `subject` (fresh and empty), recording everything.
pub fn drive(subject: &dyn Subject, w: &Workload) -> Round {
    let clock = Clock::new();
    let hot: Vec<&[u8]> = HOT_KEYS[..w.hot_keys.clamp(1, HOT_KEYS.len())].to_vec();
    let ordered = subject.ordered().filter(|_| w.scanner);
    let barrier = Barrier::new(w.workers + usize::from(ordered.is_some()));
    let running = AtomicUsize::new(w.workers);
    // Scans completed, and the workers' hot-key operations: the two keep pace.
    let scanned = AtomicUsize::new(0);
    let scanning = ordered.is_some();
    let progress = AtomicUsize::new(0);
    let (mut recorders, mut scans, mut local) = (Vec::new(), Vec::new(), Vec::new());
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for id in 0..w.workers {
            let (barrier, running, hot, scanned) = (&barrier, &running, &hot, &scanned);
            let progress = &progress;
            handles.push(s.spawn(move || {
                let mut me = Worker {
                    subject,
                    rec: Recorder::new(id, clock),
                    rng: rng(derive(w.seed, id as u64)),
                    id,
                    seq: 0,
                    hot,
                    local: Vec::new(),
                };
                let spreads: Vec<u16> = (0..w.fillers).map(|_| me.rng.random()).collect();
                let half = (w.ops / 2).max(1);
                let (mut inserted, mut removed) = (0, 0);
                barrier.wait();
                for i in 0..w.ops {
                    if scanning {
                        // Not more than SCAN_LAG operations ahead of the scanner's pace.
                        let paced = crate::sync::wait_until(DEADLINE, || {
                            progress.load(Ordering::Relaxed)
                                <= scanned.load(Ordering::Acquire) * SCAN_STRIDE + SCAN_LAG
                        });
                        assert!(paced, "the scanner made no progress within {DEADLINE:?}");
                    }
                    me.step();
                    progress.fetch_add(1, Ordering::Relaxed);
                    let target = w.fillers * (i + 1).min(half) / half;
                    while inserted < target {
                        let v = me.value(b'f');
                        me.insert(&filler(spreads[inserted], id, inserted), v);
                        inserted += 1;
                    }
                    if i >= half {
                        let target = w.fillers * (i + 1 - half) / (w.ops - half).max(1);
                        while removed < target.min(inserted) {
                            me.remove(&filler(spreads[removed], id, removed));
                            removed += 1;
                        }
                    }
                }
                running.fetch_sub(1, Ordering::Release);
                (me.rec, me.local)
            }));
        }
        let scanner = ordered.map(|index| {
            let (barrier, running, hot, scanned) = (&barrier, &running, &hot, &scanned);
            let progress = &progress;
            s.spawn(move || {
                let mut r = rng(derive(w.seed, 0x5CA4));
                barrier.wait();
                let mut out = Vec::new();
                while running.load(Ordering::Acquire) > 0 && out.len() < MAX_SCANS {
                    // Not more than SCAN_LAG operations ahead of the workers either.
                    if out.len() * SCAN_STRIDE > progress.load(Ordering::Relaxed) + SCAN_LAG {
                        std::thread::yield_now();
                        continue;
                    }
                    out.push(scan(index, &mut r, hot, clock, w.workers));
                    scanned.fetch_add(1, Ordering::Release);
                }
                out
            })
        });
        for h in handles {
            let (rec, l) = h.join().expect("a worker panicked");
            recorders.push(rec);
            local.extend(l);
        }
        if let Some(h) = scanner {
            scans = h.join().expect("the scanner panicked");
        }
    });
    Round {
        history: History::from_recorders(recorders).expect("recorded times are ordered"),
        scans,
        local,
    }
}

/// One random scan, recorded.
fn scan(
    index: &dyn OrderedKvIndex,
    r: &mut SmallRng,
    hot: &[&[u8]],
    clock: Clock,
    process: usize,
) -> ScanRecord {
    let key = |r: &mut SmallRng| -> Vec<u8> {
        let mut k = hot[r.random_range(0..hot.len())].to_vec();
        if r.random_bool(0.3) {
            k.push(r.random());
        }
        k
    };
    let bound = |r: &mut SmallRng| match r.random_range(0..5) {
        0 => Bound::Unbounded,
        1 | 2 => Bound::Included(key(r)),
        _ => Bound::Excluded(key(r)),
    };
    // Mostly short scans (what they cover, and so their check, is small); one in twenty
    // runs to the end of its range.
    let limit = if r.random_bool(0.95) {
        Some(r.random_range(1..=24))
    } else {
        None
    };
    let (lo, hi, descending, limit) = match r.random_range(0..6) {
        0 => (bound(r), Bound::Unbounded, false, limit.or(Some(64))),
        1 => (bound(r), bound(r), false, limit),
        2 => (Bound::Unbounded, bound(r), true, limit.or(Some(64))),
        3 => {
            let mut p = key(r);
            p.truncate(r.random_range(0..=p.len()));
            let hi = prefix_successor(&p).map_or(Bound::Unbounded, Bound::Excluded);
            (Bound::Included(p), hi, false, limit)
        }
        4 => (Bound::Unbounded, Bound::Unbounded, false, Some(1)),
        _ => (Bound::Unbounded, Bound::Unbounded, true, Some(1)),
    };
    let mut pairs = Vec::new();
    let stop = limit.unwrap_or(usize::MAX);
    let mut visit = |k: &[u8], v: &[u8]| {
        pairs.push((k.to_vec(), v.to_vec()));
        if pairs.len() >= stop {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let call = clock.now();
    match (descending, limit) {
        (false, Some(1)) if lo == Bound::Unbounded && hi == Bound::Unbounded => {
            if let Some((k, v)) = index.first() {
                let _ = visit(&k, &v);
            }
        }
        (true, Some(1)) if hi == Bound::Unbounded => {
            if let Some((k, v)) = index.last() {
                let _ = visit(&k, &v);
            }
        }
        (true, _) => index.scan_rev(as_ref(&hi), &mut visit),
        (false, _) => match &lo {
            Bound::Included(p)
                if hi == prefix_successor(p).map_or(Bound::Unbounded, Bound::Excluded) =>
            {
                index.scan_prefix(p, &mut visit)
            }
            _ => index.scan_range(as_ref(&lo), as_ref(&hi), &mut visit),
        },
    }
    let ret = clock.now();
    ScanRecord {
        process,
        call,
        ret,
        lo,
        hi,
        descending,
        limit,
        pairs,
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(Vec::as_slice)
}

/// What checking a round found.
pub struct Verdict {
    /// The point operations' linearizability.
    pub report: Report<Register>,
    /// Scans checked.
    pub scans: usize,
    /// Scans that broke the contract.
    pub scan_violations: Vec<ScanViolation>,
    /// Answers wrong on their own.
    pub local: Vec<String>,
}

impl Verdict {
    /// Whether nothing was wrong (and nothing unknown).
    pub fn is_ok(&self) -> bool {
        self.report.is_ok() && self.scan_violations.is_empty() && self.local.is_empty()
    }

    /// Whether something was shown wrong (unknown keys aside).
    pub fn violated(&self) -> bool {
        !self.report.violations.is_empty()
            || !self.scan_violations.is_empty()
            || !self.local.is_empty()
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.report)?;
        writeln!(
            f,
            "scans: {} checked, {} violations",
            self.scans,
            self.scan_violations.len()
        )?;
        for v in self.scan_violations.iter().take(5) {
            writeln!(f, "  {v}")?;
        }
        for l in self.local.iter().take(10) {
            writeln!(f, "  wrong on its own: {l}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Checks a round: the history key by key, the scans against it, the local answers.
pub fn check_round(round: &Round, budget: Budget) -> Verdict {
    Verdict {
        report: check(&Register, &round.history, budget),
        scans: round.scans.len(),
        scan_violations: check_scans(&round.history, &round.scans),
        local: round.local.clone(),
    }
}

/// What [`rounds`] checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Rounds run.
    pub rounds: usize,
    /// Point operations checked.
    pub ops: usize,
    /// Scans checked.
    pub scans: usize,
    /// Keys whose search ran out of budget (neither shown linearizable nor not).
    pub unknown: usize,
}

/// Runs `n` rounds of `workload` (round `i` seeded `derive(workload.seed, i)`), each on a
/// fresh subject from `make`, and checks each; the first round that shows a violation is
/// the error (its verdict and seed).
pub fn rounds(
    make: &dyn Fn() -> Box<dyn Subject>,
    workload: &Workload,
    n: usize,
    budget: Budget,
) -> Result<Tally, String> {
    let mut tally = Tally::default();
    for i in 0..n {
        let w = Workload {
            seed: derive(workload.seed, i as u64),
            ..*workload
        };
        let subject = make();
        let round = drive(&*subject, &w);
        drop(subject);
        let verdict = check_round(&round, budget);
        if verdict.violated() {
            return Err(format!("round {i} (seed {:#x}): {verdict}", w.seed));
        }
        tally.rounds += 1;
        tally.ops += verdict.report.ops;
        tally.scans += verdict.scans;
        tally.unknown += verdict.report.unknown.len();
    }
    Ok(tally)
}
