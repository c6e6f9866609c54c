//! Histories: what each process called, when, and what it got back.
//!
//! Every operation is an [`Entry`]: the process (thread, client connection) that ran it,
//! the key it touched, its input, its output, and its invocation and response times read
//! from one monotonic [`Clock`] shared by all processes (`call` before the operation
//! starts, `ret` after it returned). An operation whose response never came (its client
//! was cut off, the server killed) has neither `ret` nor `output`: it may have taken
//! effect at any moment after its call, or not at all. A [`Recorder`] keeps one process's
//! entries; [`History::new`] merges them.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

/// One monotonic clock for every process of a history: nanoseconds since it was made.
/// (`Instant` is `CLOCK_MONOTONIC` on Linux, consistent across threads and cores.)
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    base: Instant,
}

impl Clock {
    /// A clock starting now.
    pub fn new() -> Clock {
        Clock {
            base: Instant::now(),
        }
    }

    /// Nanoseconds since the clock was made.
    pub fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// One operation of a history.
#[derive(Clone, PartialEq, Eq)]
pub struct Entry<I, O> {
    /// Who ran it (a thread, a client connection); for reports.
    pub process: usize,
    /// The key it touched: histories are checked key by key.
    pub key: Vec<u8>,
    /// The operation and its arguments.
    pub input: I,
    /// What it returned; `None` when no response came.
    pub output: Option<O>,
    /// When it was invoked (the shared [`Clock`]).
    pub call: u64,
    /// When its response came; `None` when none came (then `output` is `None` too).
    pub ret: Option<u64>,
}

impl<I: fmt::Debug, O: fmt::Debug> fmt::Debug for Entry<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "process {} key {}: {:?} -> ",
            self.process,
            crate::testing::show(&self.key),
            self.input
        )?;
        match (&self.output, self.ret) {
            (Some(o), Some(r)) => write!(f, "{o:?} [{} ns, {r} ns]", self.call),
            _ => write!(f, "no response [{} ns, …)", self.call),
        }
    }
}

impl<I, O> Entry<I, O> {
    /// The response time, `u64::MAX` for an operation without a response.
    pub fn ret_or_max(&self) -> u64 {
        match (&self.output, self.ret) {
            (Some(_), Some(r)) => r,
            _ => u64::MAX,
        }
    }

    /// Whether a response came.
    pub fn completed(&self) -> bool {
        self.output.is_some() && self.ret.is_some()
    }
}

/// The operations of a run, from every process.
#[derive(Clone, Debug)]
pub struct History<I, O> {
    entries: Vec<Entry<I, O>>,
}

impl<I, O> History<I, O> {
    /// A history of `entries` (any order). Fails on an entry that returned before it was
    /// called, or that has an output without a response time.
    pub fn new(entries: Vec<Entry<I, O>>) -> Result<Self, String> {
        for (i, e) in entries.iter().enumerate() {
            if let Some(r) = e.ret
                && r < e.call
            {
                return Err(format!(
                    "entry #{i} (process {}) returned at {r} ns, before its call at {} ns",
                    e.process, e.call
                ));
            }
            if e.output.is_some() && e.ret.is_none() {
                return Err(format!(
                    "entry #{i} (process {}) has an output but no response time",
                    e.process
                ));
            }
        }
        Ok(History { entries })
    }

    /// The merged entries of several processes' recorders.
    pub fn from_recorders(recorders: Vec<Recorder<I, O>>) -> Result<Self, String> {
        Self::new(recorders.into_iter().flat_map(|r| r.entries).collect())
    }

    /// Every entry.
    pub fn entries(&self) -> &[Entry<I, O>] {
        &self.entries
    }

    /// The entries of each key, by key (indexes into [`History::entries`]).
    pub fn by_key(&self) -> BTreeMap<&[u8], Vec<usize>> {
        let mut m: BTreeMap<&[u8], Vec<usize>> = BTreeMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            m.entry(&e.key).or_default().push(i);
        }
        m
    }

    /// Number of distinct processes.
    pub fn processes(&self) -> usize {
        let mut p: Vec<usize> = self.entries.iter().map(|e| e.process).collect();
        p.sort_unstable();
        p.dedup();
        p.len()
    }
}

/// One process's entries, timed by a shared [`Clock`].
///
/// ```
/// use orrery_core::testing::linearize::{Clock, Recorder, RegOp, Out};
///
/// let clock = Clock::new();
/// let mut rec = Recorder::new(0, clock);
/// let call = rec.now();
/// // ... send `SET k v` and read the reply ...
/// rec.done(b"k", RegOp::Set(b"v".to_vec()), call, Out::Ok);
/// let call = rec.now();
/// // ... send `GET k`; the connection dies before the reply ...
/// rec.pending(b"k", RegOp::Get, call);
/// assert_eq!(rec.entries().len(), 2);
/// ```
#[derive(Clone, Debug)]
pub struct Recorder<I, O> {
    process: usize,
    clock: Clock,
    entries: Vec<Entry<I, O>>,
}

impl<I, O> Recorder<I, O> {
    /// A recorder for `process`, timing with `clock` (the same for every process).
    pub fn new(process: usize, clock: Clock) -> Self {
        Recorder {
            process,
            clock,
            entries: Vec::new(),
        }
    }

    /// The clock's time: take it just before invoking an operation.
    pub fn now(&self) -> u64 {
        self.clock.now()
    }

    /// Records an operation called at `call` that returned `output` just now.
    pub fn done(&mut self, key: &[u8], input: I, call: u64, output: O) {
        let ret = self.clock.now();
        self.entries.push(Entry {
            process: self.process,
            key: key.to_vec(),
            input,
            output: Some(output),
            call,
            ret: Some(ret),
        });
    }

    /// Records an operation called at `call` whose response never came.
    pub fn pending(&mut self, key: &[u8], input: I, call: u64) {
        self.entries.push(Entry {
            process: self.process,
            key: key.to_vec(),
            input,
            output: None,
            call,
            ret: None,
        });
    }

    /// Runs `f` as one operation on `key` and records it with `f`'s output.
    pub fn run(&mut self, key: &[u8], input: I, f: impl FnOnce() -> O) -> O
    where
        O: Clone,
    {
        let call = self.clock.now();
        let out = f();
        self.done(key, input, call, out.clone());
        out
    }

    /// The entries so far.
    pub fn entries(&self) -> &[Entry<I, O>] {
        &self.entries
    }

    /// The entries.
    pub fn into_entries(self) -> Vec<Entry<I, O>> {
        self.entries
    }
}
