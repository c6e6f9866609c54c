//! Memory that comes back: the scenarios that show a structure returns freed memory to the
//! system — fill, remove most keys, compare the resident set with a fresh index holding the
//! keys that remain ([`fill_remove`], [`fill`]) — and a churn at a constant live count whose
//! resident set must stay flat ([`churn`]).
//!
//! The resident set is the process's ([`resident_bytes`], `/proc/self/statm`), so a
//! measurement means something only in a process that does nothing else: the structures'
//! `memory_return` tests run each phase in a child process of their own, and the churn soak
//! is an `orrery-bench lab` program.
//!
//! Keys are 8 or more bytes: key `i` is `mix(seed, i)` big-endian, padded with zeros to the
//! key length, so no key list is held (it would be part of the resident set); values are 8
//! bytes. [`Removal::Oldest`] removes the first keys inserted (a cache's eviction order, and
//! the order of the original measurement in issue #38), [`Removal::Scattered`] every key
//! whose hash says so (90% removed leaves one key in ten, spread over all the memory the
//! fill used).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::api::KvIndex;

use super::rng::derive;

/// Resident bytes of this process (`/proc/self/statm`), or `None` where it cannot be read.
pub fn resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(
        pages
            * usize::try_from(page)
                .ok()
                .filter(|&p| p > 0)
                .unwrap_or(4096),
    )
}

/// Which keys a removal takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// The first keys inserted.
    Oldest,
    /// Keys picked by a hash of their number: spread evenly over the insertion order.
    Scattered,
}

/// The shape of a fill-and-remove run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    /// Keys inserted.
    pub keys: u64,
    /// Percentage of them removed (0..=100).
    pub percent: u64,
    /// Which keys are removed.
    pub removal: Removal,
    /// Key length in bytes (at least 8).
    pub key_len: usize,
    /// Seed of the key stream.
    pub seed: u64,
}

impl Scenario {
    /// Key number `i`, written into `buf` (`key_len` bytes).
    pub fn key<'a>(&self, i: u64, buf: &'a mut Vec<u8>) -> &'a [u8] {
        buf.clear();
        buf.extend_from_slice(&derive(self.seed, i).to_be_bytes());
        buf.resize(self.key_len.max(8), 0);
        buf
    }

    /// Whether key number `i` is removed.
    pub fn removed(&self, i: u64) -> bool {
        match self.removal {
            Removal::Oldest => i < self.keys * self.percent / 100,
            Removal::Scattered => derive(!self.seed, i) % 100 < self.percent,
        }
    }

    /// How many keys remain after the removal.
    pub fn kept(&self) -> u64 {
        (0..self.keys).filter(|&i| !self.removed(i)).count() as u64
    }
}

/// The resident set at the steps of a run, in bytes (0 where `/proc` is unreadable).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rss {
    /// Before the index was made.
    pub before: usize,
    /// After the fill (and, for [`fill`], all there is).
    pub full: usize,
    /// After the removal, once reclamation ran.
    pub after: usize,
}

impl Rss {
    /// Bytes the index added after the fill, over the starting resident set.
    pub fn full_delta(&self) -> usize {
        self.full.saturating_sub(self.before)
    }

    /// Bytes the index still adds after the removal.
    pub fn after_delta(&self) -> usize {
        self.after.saturating_sub(self.before)
    }
}

/// Runs epoch reclamation until everything retired before the call has been freed (what a
/// structure retires on removal is then back in its allocator).
///
/// # Panics
/// After [`super::wait::DEADLINE`].
pub fn drain_retired() {
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    crate::sync::pin().defer(move || flag.store(true, Ordering::Release));
    super::wait::reclaim_until("memory retired before the drain", || {
        ran.load(Ordering::Acquire)
    });
}

fn rss() -> usize {
    resident_bytes().unwrap_or(0)
}

/// Inserts every key of `s` into the index `make()` builds, then removes the keys `s` says
/// (remaining ones: [`Scenario::kept`]), drains reclamation, and returns the resident set
/// at each step with the index (still alive, so that the last figure holds it).
///
/// # Panics
/// When an insert fails or a removal does not find its key.
pub fn fill_remove<I: KvIndex>(s: &Scenario, make: impl FnOnce() -> I) -> (I, Rss) {
    let before = rss();
    let index = make();
    let mut buf = Vec::new();
    for i in 0..s.keys {
        index
            .insert(s.key(i, &mut buf), &i.to_le_bytes())
            .expect("insert");
    }
    drain_retired();
    let full = rss();
    for i in (0..s.keys).filter(|&i| s.removed(i)) {
        assert!(index.remove(s.key(i, &mut buf)), "key {i} not found");
    }
    drain_retired();
    let after = rss();
    (
        index,
        Rss {
            before,
            full,
            after,
        },
    )
}

/// Inserts the keys of `s` that remain after its removal (in their order) into the index
/// `make()` builds: the fresh index [`fill_remove`]'s result is compared with. `after` is
/// the same as `full`.
///
/// # Panics
/// When an insert fails.
pub fn fill<I: KvIndex>(s: &Scenario, make: impl FnOnce() -> I) -> (I, Rss) {
    let before = rss();
    let index = make();
    let mut buf = Vec::new();
    for i in (0..s.keys).filter(|&i| !s.removed(i)) {
        index
            .insert(s.key(i, &mut buf), &i.to_le_bytes())
            .expect("insert");
    }
    drain_retired();
    let full = rss();
    (
        index,
        Rss {
            before,
            full,
            after: full,
        },
    )
}

/// One sample of a [`churn`] run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChurnSample {
    /// Seconds since the churn started (after the initial fill).
    pub secs: f64,
    /// Removals (each followed by an insert) done so far, all threads.
    pub replaced: u64,
    /// Resident bytes of the process.
    pub rss: usize,
    /// Keys in the index.
    pub len: usize,
}

/// Fills `index` with `live` keys split over `threads` threads, then has each thread
/// replace a random one of its keys by a new key (remove, insert) until `duration` has
/// passed, calling `sample` every `every` from the calling thread. Keys are 8 random bytes
/// with a thread and sequence number folded in, so no two threads touch the same key.
///
/// # Panics
/// When an insert fails, a removal misses, or the final length is not `live`.
pub fn churn<I: KvIndex + Sync>(
    index: &I,
    live: usize,
    threads: usize,
    duration: Duration,
    every: Duration,
    seed: u64,
    mut sample: impl FnMut(ChurnSample),
) {
    let threads = threads.max(1);
    let replaced = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let key = |t: usize, n: u64| derive(seed ^ t as u64, n).to_be_bytes();
    let ready = std::sync::Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (replaced, stop, ready) = (&replaced, &stop, &ready);
            s.spawn(move || {
                let mine = live / threads + usize::from(t < live % threads);
                let mut ids: Vec<u64> = (0..mine as u64).collect();
                for &n in &ids {
                    assert!(index.insert(&key(t, n), &n.to_le_bytes()).expect("insert"));
                }
                ready.wait();
                let mut rng = super::rng::rng(derive(seed, 1000 + t as u64));
                let mut next = mine as u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..1024 {
                        if ids.is_empty() {
                            break;
                        }
                        let j = rand::Rng::random_range(&mut rng, 0..ids.len());
                        assert!(index.remove(&key(t, ids[j])), "churn: key missing");
                        ids[j] = next;
                        assert!(
                            index
                                .insert(&key(t, next), &next.to_le_bytes())
                                .expect("insert")
                        );
                        next += 1;
                    }
                    replaced.fetch_add(1024, Ordering::Relaxed);
                }
            });
        }
        ready.wait();
        let start = Instant::now();
        let mut due = every;
        loop {
            let now = start.elapsed();
            if now >= due || now >= duration {
                sample(ChurnSample {
                    secs: now.as_secs_f64(),
                    replaced: replaced.load(Ordering::Relaxed),
                    rss: rss(),
                    len: index.len(),
                });
                due += every;
            }
            if now >= duration {
                break;
            }
            std::thread::sleep((due.min(duration)).saturating_sub(now).min(every));
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(index.len(), live, "churn: live count changed");
}
