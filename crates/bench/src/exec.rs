//! Executing one phase (a load or a workload run) on one index with N threads.
//!
//! Protocol of a phase, per thread:
//! 1. generate this thread's operation stream (and warm-up stream) — untimed;
//! 2. wait at a barrier; run the warm-up (lookups with the run's distribution); barrier;
//! 3. run the stream in batches of [`BATCH`] operations, reading the clock once per batch
//!    (progress and the optional time limit), and timing one operation in `sample_every`
//!    by itself for the latency histogram;
//! 4. record start and end instants.
//!
//! A `scan-all` phase counts the keys its scans visited as its operations, so its
//! throughput is keys per second (Hyperion's Table 3 reports a full scan's duration: that
//! is `secs`).
//!
//! Throughput is all completed operations over the wall time from the earliest start to the
//! latest end; each thread's CPU time over the same span is recorded too (`metrics::cpu`). A one-thread phase runs on the calling thread (so a single-threaded index
//! such as `btreemap-st` stays on the thread that built it); more threads run scoped.
//! Every lookup reads the value's first byte and length into a checksum, so a lookup costs
//! what a real reader pays to reach its value, and nothing is optimised away.
//!
//! # The harness's own memory traffic
//!
//! A server receives a request's key in its buffer; the harness must not charge an index
//! for fetching keys out of a data set of 10M random keys (two DRAM misses per operation:
//! the offset entry, then the bytes, plus the cache lines they evict). So each thread's
//! stream is turned, untimed, into a *trace*: its keys copied one after the other in
//! operation order ([`Trace`]), read sequentially while timed (the hardware prefetcher
//! streams it). A trace is capped at [`TRACE_BUDGET`] bytes per thread; a longer stream
//! (and every `load`, whose keys are read in data-set order anyway) reads the data set and
//! fetches ahead instead: before operation `j` runs, the offset entry of the key of
//! operation `j + 16` and the bytes of the key of operation `j + 8` are prefetched.
//!
//! Why a trace: keys fetched from the data set, even with that prefetching, cost a
//! measurable share of a fast index's lookup throughput against keys read in sequence
//! (measured: `docs/results/wormhole.md`, "Harness: keys in a trace"). Index memory is
//! never touched ahead.
//!
//! # Key streams
//!
//! On a key stream (`datasets::stream`) a key is computed into a buffer of the worker's
//! instead of read from the data set (`KeySet::key`): untimed into the trace for lookups,
//! inside the timed loop for a `load` (the stream's few ns a key are charged to the load).
//! A `load`'s operations are not stored either: its thread's slice of `0..N` is a range
//! ([`RangeOps`]), so a load of a billion keys costs the harness no memory per key; so is
//! a `verify`'s, which has no time limit (it must reach every key).
//!
//! # The memory ceiling
//!
//! A `load` with [`Knobs::max_rss`] checks the process's RSS every
//! [`ceiling::CHECK_EVERY`] inserts per thread and stops every thread cleanly before the
//! next interval would pass the ceiling (`metrics::ceiling`); [`Phase::ceiling_rss`] then
//! says at what RSS, and the phase's operations are the keys held.

use std::ops::{Bound, ControlFlow};
use std::sync::Barrier;
use std::time::Instant;

use hdrhistogram::Histogram;
use indicatif::ProgressBar;

use crate::datasets::{KeyBuf, KeySet};
use crate::dist::Dist;
use crate::metrics::ceiling::{self, Ceiling};
use crate::metrics::{cpu, latency};
use crate::op::{Kind, Op};
use crate::registry::{AnyIndex, Probe};
use crate::workloads::{self, StreamSpec, Workload};

/// Operations between two clock reads.
pub(crate) const BATCH: usize = 1024;

/// How many operations ahead the harness fetches its key bytes (offset entries: twice as
/// far).
const KEY_AHEAD: usize = 8;

/// Most key bytes (plus 4 bytes of offset per operation) one thread's [`Trace`] may hold;
/// a longer stream fetches its keys from the data set (module docs).
const TRACE_BUDGET: usize = 1 << 30;

/// One thread's keys in operation order (module docs): key `j` is
/// `bytes[starts[j]..starts[j + 1]]`.
struct Trace {
    bytes: Vec<u8>,
    starts: Vec<u32>,
}

impl Trace {
    /// The trace of `stream`'s keys, or `None` if it would exceed `budget` bytes (key bytes
    /// plus 4 per operation and 4 more; [`TRACE_BUDGET`] in runs).
    fn build(stream: &[Op], keys: &KeySet, budget: usize) -> Option<Trace> {
        let mut buf: KeyBuf = [0; std::mem::size_of::<KeyBuf>()];
        let total = stream.iter().try_fold(4usize, |acc, o| {
            let n = acc + keys.key(o.key(), &mut buf).len() + 4;
            (n <= budget && n <= u32::MAX as usize).then_some(n)
        })?;
        let mut t = Trace {
            bytes: Vec::with_capacity(total - 4 * (stream.len() + 1)),
            starts: Vec::with_capacity(stream.len() + 1),
        };
        for o in stream {
            t.starts.push(t.bytes.len() as u32);
            t.bytes.extend_from_slice(keys.key(o.key(), &mut buf));
        }
        t.starts.push(t.bytes.len() as u32);
        Some(t)
    }

    /// The key of operation `j`.
    #[inline]
    fn key(&self, j: usize) -> &[u8] {
        &self.bytes[self.starts[j] as usize..self.starts[j + 1] as usize]
    }
}

/// A thread's operations, read by position: a stored stream (`[Op]`) or the range of keys
/// of a `load` or a `verify` ([`RangeOps`]), so that [`measure`] is compiled once for each.
trait Ops {
    /// Number of operations.
    fn count(&self) -> usize;
    /// Operation `j` (`j < count()`).
    fn at(&self, j: usize) -> Op;
    /// Operations `a..b` as a slice, where they are stored (`get_many` needs them).
    fn slice(&self, a: usize, b: usize) -> Option<&[Op]>;
}

impl Ops for [Op] {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn at(&self, j: usize) -> Op {
        self[j]
    }
    fn slice(&self, a: usize, b: usize) -> Option<&[Op]> {
        self.get(a..b)
    }
}

/// A `load` thread's inserts (or a `verify` thread's lookups) of keys `lo..lo + len`, in
/// that order (what `workloads::stream` would store for it).
struct RangeOps {
    kind: Kind,
    lo: u64,
    len: usize,
}

impl Ops for RangeOps {
    #[inline]
    fn count(&self) -> usize {
        self.len
    }
    #[inline]
    fn at(&self, j: usize) -> Op {
        Op::new(self.kind, 0, self.lo + j as u64)
    }
    fn slice(&self, _: usize, _: usize) -> Option<&[Op]> {
        None
    }
}

/// Largest `get_many` batch.
pub(crate) const MAX_GET_MANY: usize = 64;

/// Knobs of a phase.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Knobs {
    /// Value size in bytes.
    pub(crate) value_size: usize,
    /// Time one operation in this many.
    pub(crate) sample_every: usize,
    /// Keys per `get_many` call.
    pub(crate) get_many_batch: usize,
    /// Warm-up lookups per thread.
    pub(crate) warmup: u64,
    /// Stop a thread after this many seconds even if its stream is not done.
    pub(crate) max_secs: Option<f64>,
    /// A `load` stops before the process's RSS would pass this many bytes (module docs).
    pub(crate) max_rss: Option<u64>,
}

/// What one phase measured.
pub(crate) struct Phase {
    /// Operations completed (keys, for `get-many`).
    pub(crate) ops: u64,
    /// The RSS at which a `load` stopped at its memory ceiling (module docs); `None` when
    /// it ran to the end.
    pub(crate) ceiling_rss: Option<u64>,
    /// Wall seconds.
    pub(crate) secs: f64,
    /// Sampled latencies (ns).
    pub(crate) hist: Histogram<u64>,
    /// Lookups that found their key / removals that found theirs.
    pub(crate) found: u64,
    /// Lookups / removals attempted.
    pub(crate) probes: u64,
    /// `(operations, CPU seconds)` of each thread.
    pub(crate) per_thread: Vec<(u64, f64)>,
    /// Throughput split by the index's probe (indexes with a probe only).
    pub(crate) split: Option<Split>,
}

/// Throughput while the index's probe reported a restructuring (an expansion) vs while it
/// did not, from each thread's time series of batches.
///
/// Every thread samples the probe at each batch boundary (every [`BATCH`] operations) and
/// records (instant, operations done, probe). A batch counts as *expanding* when the probe
/// said so at both its ends, as *steady* when it said no at both ends, and is left out
/// otherwise (an expansion began or ended inside it). Per class, each thread's operations
/// over its time in that class is a rate, and the rates of the threads are summed (they
/// run at the same time), as for the phase's own throughput. The same split is also made
/// over each thread's CPU time (`*_cpu_mops`), which other work on a shared machine does not
/// distort (the thread clock is read at the same batch boundaries).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Split {
    /// Mops/s over steady batches (None if there were none).
    pub(crate) steady_mops: Option<f64>,
    /// Mops/s over expanding batches (None if there were none).
    pub(crate) expanding_mops: Option<f64>,
    /// Share of the classified time spent expanding.
    pub(crate) expanding_share: f64,
    /// Mops per thread-CPU second over steady batches (None if there were none).
    #[serde(default)]
    pub(crate) steady_cpu_mops: Option<f64>,
    /// Mops per thread-CPU second over expanding batches (None if there were none).
    #[serde(default)]
    pub(crate) expanding_cpu_mops: Option<f64>,
    /// Time series over the phase: `[start second, Mops/s, share of batches expanding]` per
    /// window (about 100 windows).
    pub(crate) series: Vec<[f64; 3]>,
    /// p50, p99, p999 (ns) of the sampled operations during which the probe said
    /// "steady" (read just before and just after the operation; None if none).
    #[serde(default)]
    pub(crate) steady_latency: Option<(u64, u64, u64)>,
    /// The same for sampled operations during which the probe said "expanding" at both
    /// reads (operations overlapping a restructuring's start or end are in neither).
    #[serde(default)]
    pub(crate) expanding_latency: Option<(u64, u64, u64)>,
}

/// One sample of a thread's time series: (instant, operations done, probe said "expanding",
/// the thread's CPU seconds).
type Tick = (Instant, u64, bool, f64);

/// Computes the [`Split`] of the threads' time series.
fn split(ticks: &[Vec<Tick>], start: Instant, end: Instant) -> Split {
    let (mut steady, mut expanding) = (0.0, 0.0);
    let (mut steady_secs, mut expanding_secs) = (0.0, 0.0);
    let (mut any_steady, mut any_expanding) = (false, false);
    let (mut steady_cpu, mut expanding_cpu) = (None::<f64>, None::<f64>);
    let span = end.duration_since(start).as_secs_f64().max(1e-9);
    const WINDOWS: usize = 100;
    let width = span / WINDOWS as f64;
    let mut win_ops = [0u64; WINDOWS];
    let mut win_batches = [0u64; WINDOWS];
    let mut win_expanding = [0u64; WINDOWS];
    for t in ticks {
        let (mut s_ops, mut s_secs, mut e_ops, mut e_secs) = (0u64, 0.0, 0u64, 0.0);
        let (mut s_cpu, mut e_cpu) = (0.0, 0.0);
        for w in t.windows(2) {
            let ((t0, o0, e0, c0), (t1, o1, e1, c1)) = (w[0], w[1]);
            let dt = t1.duration_since(t0).as_secs_f64();
            let dc = c1 - c0;
            let ops = o1 - o0;
            match (e0, e1) {
                (false, false) => {
                    (s_ops, s_secs, s_cpu) = (s_ops + ops, s_secs + dt, s_cpu + dc);
                }
                (true, true) => (e_ops, e_secs, e_cpu) = (e_ops + ops, e_secs + dt, e_cpu + dc),
                _ => {}
            }
            let at = t1.duration_since(start).as_secs_f64();
            let i = ((at / width) as usize).min(WINDOWS - 1);
            win_ops[i] += ops;
            win_batches[i] += 1;
            win_expanding[i] += u64::from(e0 && e1);
        }
        if s_secs > 0.0 {
            steady += s_ops as f64 / s_secs / 1e6;
            any_steady = true;
        }
        if e_secs > 0.0 {
            expanding += e_ops as f64 / e_secs / 1e6;
            any_expanding = true;
        }
        if s_cpu > 0.0 {
            *steady_cpu.get_or_insert(0.0) += s_ops as f64 / s_cpu / 1e6;
        }
        if e_cpu > 0.0 {
            *expanding_cpu.get_or_insert(0.0) += e_ops as f64 / e_cpu / 1e6;
        }
        steady_secs += s_secs;
        expanding_secs += e_secs;
    }
    let series = (0..WINDOWS)
        .map(|i| {
            [
                i as f64 * width,
                win_ops[i] as f64 / width / 1e6,
                if win_batches[i] == 0 {
                    0.0
                } else {
                    win_expanding[i] as f64 / win_batches[i] as f64
                },
            ]
        })
        .collect();
    Split {
        steady_latency: None,
        expanding_latency: None,
        steady_mops: any_steady.then_some(steady),
        expanding_mops: any_expanding.then_some(expanding),
        expanding_share: if steady_secs + expanding_secs > 0.0 {
            expanding_secs / (steady_secs + expanding_secs)
        } else {
            0.0
        },
        steady_cpu_mops: steady_cpu,
        expanding_cpu_mops: expanding_cpu,
        series,
    }
}

impl Phase {
    /// Sum over threads of operations per CPU second, in millions: the throughput the
    /// threads would reach with a core each (see `metrics::cpu`).
    pub(crate) fn mops_cpu(&self) -> f64 {
        self.per_thread
            .iter()
            .filter(|(_, c)| *c > 0.0)
            .map(|(o, c)| *o as f64 / c / 1e6)
            .sum()
    }

    /// CPU nanoseconds per operation, averaged over threads.
    pub(crate) fn cpu_ns_per_op(&self) -> f64 {
        let ops: u64 = self.per_thread.iter().map(|p| p.0).sum();
        let cpu: f64 = self.per_thread.iter().map(|p| p.1).sum();
        if ops == 0 {
            0.0
        } else {
            cpu * 1e9 / ops as f64
        }
    }

    /// Millions of operations per second.
    pub(crate) fn mops(&self) -> f64 {
        if self.secs > 0.0 {
            self.ops as f64 / self.secs / 1e6
        } else {
            0.0
        }
    }
}

struct WorkerOut {
    start: Instant,
    end: Instant,
    cpu_secs: f64,
    ops: u64,
    hist: Histogram<u64>,
    /// Sampled latencies by the probe read around each sample: (steady, expanding).
    hist_split: (Histogram<u64>, Histogram<u64>),
    found: u64,
    probes: u64,
    digest: u64,
    error: Option<String>,
    ticks: Vec<Tick>,
}

/// Runs `threads` workers of `f`, inline when there is one.
fn parallel<R: Send>(threads: usize, f: impl Fn(usize, &Barrier) -> R + Sync) -> Vec<R> {
    if threads == 1 {
        return vec![f(0, &Barrier::new(1))];
    }
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (f, barrier) = (&f, &barrier);
                s.spawn(move || f(t, barrier))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// The state one worker carries through its stream.
struct Worker<'a> {
    index: &'a AnyIndex,
    keys: &'a KeySet,
    /// Buffers a key stream's keys are written into for one `get_many` call.
    key_bufs: Box<[KeyBuf; MAX_GET_MANY]>,
    /// The load's memory ceiling, if it has one.
    ceiling: Option<&'a Ceiling>,
    value: Vec<u8>,
    /// `--value-size` (`value` may be longer, for `fb-*` SETs of other sizes).
    value_size: usize,
    scratch: Vec<u8>,
    found: u64,
    probes: u64,
    digest: u64,
    /// Pairs visited by `scan-all` operations.
    visited: u64,
}

impl Worker<'_> {
    #[inline]
    fn stamp(&mut self, key: usize) {
        let n = self.value.len().min(8);
        self.value[..n].copy_from_slice(&(key as u64).to_le_bytes()[..n]);
    }

    /// Executes one operation on `key` (the key of `op.key()`).
    #[inline]
    fn exec(&mut self, op: Op, key: &[u8]) -> Result<(), String> {
        match op.kind() {
            Kind::Read => {
                let digest = &mut self.digest;
                self.probes += 1;
                if self
                    .index
                    .get_with(key, &mut |v| *digest = digest.wrapping_add(read_value(v)))
                {
                    self.found += 1;
                }
            }
            Kind::Update | Kind::Insert => {
                self.stamp(op.key() ^ 1);
                // A non-zero length field is a `fb-*` value-size class.
                let len = match op.len() {
                    0 => self.value_size,
                    c => crate::facebook::value_len(c),
                };
                self.index
                    .insert(key, &self.value[..len])
                    .map_err(|e| format!("insert failed: {e}"))?;
            }
            Kind::Scan => {
                let mut left = op.len();
                let digest = &mut self.digest;
                self.index.scan(Bound::Included(key), &mut |k, v| {
                    *digest = digest.wrapping_add(k.len() as u64 + read_value(v));
                    left -= 1;
                    if left == 0 {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                });
            }
            Kind::ScanAll => {
                let (digest, visited) = (&mut self.digest, &mut self.visited);
                self.index.scan(Bound::Unbounded, &mut |k, v| {
                    *digest = digest.wrapping_add(k.len() as u64 + read_value(v));
                    *visited += 1;
                    ControlFlow::Continue(())
                });
            }
            Kind::Rmw => {
                let scratch = &mut self.scratch;
                self.probes += 1;
                if self.index.get_with(key, &mut |v| {
                    scratch.clear();
                    scratch.extend_from_slice(v);
                }) {
                    self.found += 1;
                    if let Some(b) = scratch.first_mut() {
                        *b = b.wrapping_add(1);
                    }
                    self.index
                        .insert(key, scratch)
                        .map_err(|e| format!("insert failed: {e}"))?;
                }
            }
            Kind::Delete => {
                self.probes += 1;
                if self.index.remove(key) {
                    self.found += 1;
                }
            }
        }
        Ok(())
    }

    /// Executes a batch of at most [`MAX_GET_MANY`] lookups through `get_many`; `at` is
    /// the stream position of `ops[0]` (its keys are read from `trace` when there is one).
    #[inline]
    fn exec_many(&mut self, ops: &[Op], at: usize, trace: Option<&Trace>) {
        let mut buf: [&[u8]; MAX_GET_MANY] = [&[]; MAX_GET_MANY];
        let slots = buf.iter_mut().zip(ops).zip(self.key_bufs.iter_mut());
        for (i, ((slot, o), kb)) in slots.enumerate() {
            *slot = match trace {
                Some(t) => t.key(at + i),
                None => self.keys.key(o.key(), kb),
            };
        }
        let keys = &buf[..ops.len().min(MAX_GET_MANY)];
        let (digest, found) = (&mut self.digest, &mut self.found);
        self.index.get_many(keys, &mut |_, v| {
            if let Some(v) = v {
                *found += 1;
                *digest = digest.wrapping_add(read_value(v));
            }
        });
        self.probes += keys.len() as u64;
    }
}

/// Touches a value: its length and first byte.
#[inline]
fn read_value(v: &[u8]) -> u64 {
    v.len() as u64 + u64::from(v.first().copied().unwrap_or(0))
}

/// One phase to run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PhaseSpec {
    /// The workload.
    pub(crate) workload: Workload,
    /// Read distribution.
    pub(crate) dist: Dist,
    /// Threads.
    pub(crate) threads: usize,
    /// Operations per thread (ignored by `load`).
    pub(crate) ops: u64,
    /// Loaded keys `0..n`.
    pub(crate) n: u64,
    /// First fresh key this phase may insert.
    pub(crate) insert_base: u64,
    /// Stream seed.
    pub(crate) seed: u64,
}

/// Runs a phase over `index`, whose keys `0..n` are loaded (none for `load`); with a
/// `probe`, each thread also records the time series that [`Split`] summarises.
pub(crate) fn run(
    index: &AnyIndex,
    probe: Option<&Probe>,
    keys: &KeySet,
    p: &PhaseSpec,
    knobs: &Knobs,
    bar: &ProgressBar,
) -> Result<Phase, String> {
    let t = p.threads as u64;
    let per = p.workload.ops_per_thread(p.n, p.ops, t);
    let get_many = p.workload == Workload::GetMany;
    // A `verify` must reach every key: no time limit.
    let knobs = &Knobs {
        max_secs: knobs.max_secs.filter(|_| p.workload != Workload::Verify),
        ..*knobs
    };
    let ceiling = knobs
        .max_rss
        .filter(|_| p.workload == Workload::Load)
        .map(Ceiling::new);
    let ceiling = ceiling.as_ref();
    let outs = parallel(p.threads, |thread, barrier| {
        let spec = StreamSpec {
            workload: p.workload,
            dist: p.dist,
            n: p.n,
            ops: per,
            thread: thread as u64,
            threads: t,
            insert_base: p.insert_base,
            seed: p.seed,
        };
        // A load's and a verify's keys are a range: not stored (module docs).
        let kind = match p.workload {
            Workload::Load => Some(Kind::Insert),
            Workload::Verify => Some(Kind::Read),
            _ => None,
        };
        let load = kind.map(|kind| {
            let r = workloads::load_range(&spec);
            RangeOps {
                kind,
                lo: r.start,
                len: (r.end - r.start) as usize,
            }
        });
        let stream = if load.is_some() {
            Vec::new()
        } else {
            workloads::stream(&spec)
        };
        let trace = if load.is_some() {
            None
        } else {
            Trace::build(&stream, keys, TRACE_BUDGET)
        };
        let warm = warmup_stream(&spec, knobs);
        let mut w = Worker {
            index,
            keys,
            key_bufs: Box::new([[0; std::mem::size_of::<KeyBuf>()]; MAX_GET_MANY]),
            ceiling,
            value: vec![0u8; knobs.value_size.max(crate::facebook::MAX_VALUE_LEN)],
            value_size: knobs.value_size,
            scratch: Vec::with_capacity(knobs.value_size),
            found: 0,
            probes: 0,
            digest: 0,
            visited: 0,
        };
        barrier.wait();
        let mut error = None;
        let mut kbuf: KeyBuf = [0; std::mem::size_of::<KeyBuf>()];
        for &op in &warm {
            if let Err(e) = w.exec(op, keys.key(op.key(), &mut kbuf)) {
                error = Some(e);
                break;
            }
        }
        (w.found, w.probes) = (0, 0);
        barrier.wait();
        // After a warm-up error nothing is measured; the error is reported.
        let mut out = match (&load, error.is_some()) {
            (_, true) => measure(&mut w, &[][..], None, get_many, probe, knobs, bar),
            (Some(l), false) => measure(&mut w, l, None, get_many, probe, knobs, bar),
            (None, false) => measure(
                &mut w,
                &stream[..],
                trace.as_ref(),
                get_many,
                probe,
                knobs,
                bar,
            ),
        };
        out.error = out.error.or(error);
        if p.workload == Workload::ScanAll {
            // Keys per second (module docs).
            out.ops = w.visited;
        }
        out
    });
    let mut phase = combine(outs, probe)?;
    phase.ceiling_rss = ceiling.and_then(Ceiling::stopped_at);
    Ok(phase)
}

/// A thread's warm-up lookups (none for `load` or `--warmup 0`); `latest` warms up as
/// `zipf` of the same θ.
fn warmup_stream(spec: &StreamSpec, knobs: &Knobs) -> Vec<Op> {
    if matches!(spec.workload, Workload::Load | Workload::Verify) || knobs.warmup == 0 {
        return Vec::new();
    }
    let dist = if let Dist::Latest(th) = spec.dist {
        Dist::Zipf(th)
    } else {
        spec.dist
    };
    workloads::stream(&StreamSpec {
        workload: Workload::Lookup,
        dist,
        ops: knobs.warmup,
        seed: spec.seed ^ 0x5741_524D,
        ..*spec
    })
}

/// The timed part of a thread's phase: runs `stream` on `w` in batches of [`BATCH`]
/// (`get_many`: in `get_many` calls), timing one operation in `knobs.sample_every`,
/// sampling the probe after each batch and stopping at the deadline.
fn measure<S: Ops + ?Sized>(
    w: &mut Worker<'_>,
    stream: &S,
    trace: Option<&Trace>,
    get_many: bool,
    probe: Option<&Probe>,
    knobs: &Knobs,
    bar: &ProgressBar,
) -> WorkerOut {
    let keys = w.keys;
    let mut hist = latency::histogram();
    let mut hist_split = (latency::histogram(), latency::histogram());
    // Files a sampled latency by the probe read before (`e0`) and after the operation.
    let mut file = |ns: u64, e0: Option<bool>| {
        let _ = hist.record(ns);
        if let (Some(e0), Some(p)) = (e0, probe) {
            match (e0, (p.expanding)()) {
                (false, false) => drop(hist_split.0.record(ns)),
                (true, true) => drop(hist_split.1.record(ns)),
                _ => {}
            }
        }
    };
    let mut error = None;
    let start = Instant::now();
    let cpu0 = cpu::thread_cpu_secs();
    let deadline = knobs
        .max_secs
        .map(|s| start + std::time::Duration::from_secs_f64(s));
    let mut done = 0u64;
    let mut ticks = Vec::new();
    if let Some(p) = probe {
        ticks.reserve(stream.count() / BATCH + 2);
        ticks.push((start, 0, (p.expanding)(), cpu0));
    }
    let total = stream.count();
    let mut kbuf: KeyBuf = [0; std::mem::size_of::<KeyBuf>()];
    let ceiling = w.ceiling;
    let mut last_rss = ceiling.and_then(|_| crate::metrics::rss::resident_bytes());
    let mut since_check = 0usize;
    'outer: while (done as usize) < total {
        if error.is_some() {
            break;
        }
        let base = done as usize;
        let end = (base + BATCH).min(total);
        if get_many {
            let Some(chunk) = stream.slice(base, end) else {
                error = Some("get-many needs a stored operation stream".to_string());
                break;
            };
            let b = knobs.get_many_batch;
            for (j, group) in chunk.chunks(b).enumerate() {
                let at = base + j * b;
                if j % knobs.sample_every.div_ceil(b).max(1) == 0 {
                    let e0 = probe.map(|p| (p.expanding)());
                    let t0 = Instant::now();
                    w.exec_many(group, at, trace);
                    file(t0.elapsed().as_nanos() as u64, e0);
                } else {
                    w.exec_many(group, at, trace);
                }
            }
        } else {
            for j in 0..end - base {
                let op = stream.at(base + j);
                let key = match trace {
                    Some(t) => t.key(base + j),
                    None => {
                        if base + j + KEY_AHEAD * 2 < total {
                            keys.prefetch_entry(stream.at(base + j + KEY_AHEAD * 2).key());
                        }
                        if base + j + KEY_AHEAD < total {
                            keys.prefetch_key(stream.at(base + j + KEY_AHEAD).key());
                        }
                        keys.key(op.key(), &mut kbuf)
                    }
                };
                let r = if j % knobs.sample_every == 0 {
                    let e0 = probe.map(|p| (p.expanding)());
                    let t0 = Instant::now();
                    let r = w.exec(op, key);
                    file(t0.elapsed().as_nanos() as u64, e0);
                    r
                } else {
                    w.exec(op, key)
                };
                if let Err(e) = r {
                    error = Some(e);
                    break 'outer;
                }
            }
        }
        done = end as u64;
        if let Some(p) = probe {
            let e = (p.expanding)();
            ticks.push((Instant::now(), done, e, cpu::thread_cpu_secs()));
        }
        bar.inc((end - base) as u64);
        if let (Some(c), Some(last)) = (ceiling, last_rss.as_mut()) {
            since_check += end - base;
            if since_check >= ceiling::CHECK_EVERY {
                since_check = 0;
                if c.check(last) {
                    break;
                }
            } else if c.stopped() {
                break;
            }
        }
        if let Some(d) = deadline
            && Instant::now() >= d
        {
            break;
        }
    }
    let end = Instant::now();
    WorkerOut {
        start,
        end,
        cpu_secs: cpu::thread_cpu_secs() - cpu0,
        ops: done,
        hist,
        hist_split,
        found: w.found,
        probes: w.probes,
        digest: w.digest,
        error,
        ticks,
    }
}

/// The phase of the threads' outputs: the first error, or the operations, wall time from
/// the first start to the last end, merged latencies and the probe's split.
fn combine(outs: Vec<WorkerOut>, probe: Option<&Probe>) -> Result<Phase, String> {
    if let Some(e) = outs.iter().find_map(|o| o.error.clone()) {
        return Err(e);
    }
    let start = outs
        .iter()
        .map(|o| o.start)
        .min()
        .unwrap_or_else(Instant::now);
    let end = outs.iter().map(|o| o.end).max().unwrap_or(start);
    let mut hist = latency::histogram();
    let (mut steady_hist, mut expanding_hist) = (latency::histogram(), latency::histogram());
    for o in &outs {
        let _ = hist.add(&o.hist);
        let _ = steady_hist.add(&o.hist_split.0);
        let _ = expanding_hist.add(&o.hist_split.1);
    }
    std::hint::black_box(outs.iter().map(|o| o.digest).sum::<u64>());
    Ok(Phase {
        ops: outs.iter().map(|o| o.ops).sum(),
        ceiling_rss: None,
        secs: end.duration_since(start).as_secs_f64(),
        hist,
        found: outs.iter().map(|o| o.found).sum(),
        probes: outs.iter().map(|o| o.probes).sum(),
        per_thread: outs.iter().map(|o| (o.ops, o.cpu_secs)).collect(),
        split: probe.map(|_| {
            let ticks: Vec<Vec<Tick>> = outs.iter().map(|o| o.ticks.clone()).collect();
            Split {
                steady_latency: latency::percentiles(&steady_hist),
                expanding_latency: latency::percentiles(&expanding_hist),
                ..split(&ticks, start, end)
            }
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyset(keys: &[&[u8]]) -> KeySet {
        let mut b = crate::datasets::KeySetBuilder::new(keys.len(), 4, None);
        for k in keys {
            assert!(b.offer(|out| out.extend_from_slice(k)).unwrap());
        }
        b.finish()
    }

    /// A trace holds the stream's keys in operation order, repeats and all.
    #[test]
    fn trace_is_the_stream_keys_in_order() {
        let ks = keyset(&[b"a", b"bcd", b"", b"efgh"]);
        let stream: Vec<Op> = [3, 0, 1, 3, 2, 1]
            .iter()
            .map(|&k| Op::new(Kind::Read, 0, k))
            .collect();
        let t = Trace::build(&stream, &ks, TRACE_BUDGET).unwrap();
        for (j, o) in stream.iter().enumerate() {
            assert_eq!(t.key(j), ks.get(o.key()), "operation {j}");
        }
    }

    /// Over its budget a stream gets no trace (its keys then come from the data set).
    #[test]
    fn trace_respects_its_budget() {
        let ks = keyset(&[b"0123456789"]);
        let stream = vec![Op::new(Kind::Read, 0, 0); 10];
        // 10 keys of 10 bytes, 4 bytes of offset each, one closing offset: 144 bytes.
        assert!(Trace::build(&stream, &ks, 144).is_some());
        assert!(Trace::build(&stream, &ks, 143).is_none());
    }
}
