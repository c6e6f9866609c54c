//! [`Populator`]: a background thread that keeps a few fresh 2 MiB chunks faulted in for the
//! [`SlabPool`]s of one structure, so that the threads that allocate do not pay the page
//! faults of new chunks.
//!
//! # Why
//!
//! A slab pool takes a new 2 MiB chunk ([`HugeRegion`]) from the OS when its current one is
//! used up. The mapping is cheap; the first write into it is not: the kernel clears the whole
//! 2 MiB huge page (and on this project's VM the host backs it), 2–7 ns per byte, i.e.
//! 4–14 ms per chunk, charged to whichever thread writes first — the inserting thread that
//! just allocated a leaf or a pair. `perf record` of a Wormhole load attributes 9–12% of its
//! time to `clear_page_erms` under `do_huge_pmd_anonymous_page` (`docs/wormhole.md`).
//!
//! # What
//!
//! A [`Populator`] owns a *reservoir* of at most `spares` chunks that are already mapped and
//! populated (`madvise(MADV_POPULATE_WRITE)`, [`HugeRegion::prefault`]), and a background
//! thread that refills it. The pools of a structure are attached to it
//! ([`SlabPool::attach`]); a pool that needs a new chunk takes one from the reservoir if it
//! holds one, and otherwise maps one itself, as a pool without a populator does. Either way
//! it wakes the thread (one `futex` wake per chunk), which maps and populates chunks until the
//! reservoir is full again, then parks.
//!
//! A chunk is raw zeroed memory, not tied to an object size, so the reservoir is shared by
//! all the pools of a structure: a structure with forty size classes holds `spares` chunks in
//! reserve, not forty times that.
//!
//! The thread starts lazily, when the attached pools have taken `start_after` chunks in all
//! (16 MiB by default): small structures (most of the tests, most of the maps a program
//! makes) never get one. A [`Populator`] made disabled ([`Populator::disabled`]) never starts
//! one and leaves its pools exactly as if they were not attached.
//!
//! # Memory, and how it is counted
//!
//! The reservoir holds at most `spares` chunks (default 1: 2 MiB per structure), resident
//! because they are populated. They belong to no pool until taken, so a pool's
//! [`reserved_bytes`](SlabPool::reserved_bytes) does not include them;
//! [`Populator::spare_bytes`] reports them, and a structure adds that to its
//! `memory_usage()`. A chunk is counted once: by the reservoir while it waits, by the pool
//! (and the pool's [`MemCounter`](super::MemCounter), if any) from the moment it is taken.
//!
//! # Lifetime
//!
//! The thread ([`BackgroundThread`], the lifecycle Mercury's successor pre-faulter uses
//! too) holds the reservoir through an `Arc` and looks at its stop flag before each chunk. Dropping the [`Populator`] sets the flag, wakes the thread, joins it (a chunk
//! being populated is finished first: at most one populate, milliseconds) and then unmaps the
//! chunks left in the reservoir. Pools may outlive the populator (a structure's deferred
//! frees keep its pools alive): they hold the reservoir, find it empty and stopped, and map
//! their own chunks; the thread is never started again.
//!
//! # Concurrency
//!
//! The reservoir's chunk list is under a [`SpinLock`] held for a push or a pop (never across
//! a system call). A pool takes from it under its own depot lock; the thread never takes a
//! depot lock, so the lock order depot → reservoir cannot deadlock. Starting the thread (once
//! per populator) happens under the starting pool's depot lock, through a `Mutex` that only
//! the start and the shutdown take (`BackgroundThread`). Counters are `Relaxed` (the chunks move through the
//! lock), except that the thread adds to the spare byte count with `Release` after counting
//! the chunk populated, so that a reader of [`Populator::spare_bytes`] sees the statistics
//! at least that far.
//!
//! Under Miri (no `madvise`) chunks are populated by touching one byte per page, which the
//! reservoir may do: nobody else can see a chunk before it is taken.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::background::BackgroundThread;
use super::region::HugeRegion;
use super::slab::CHUNK_SIZE;
use crate::sync::SpinLock;

#[cfg(doc)]
use super::SlabPool;

/// Chunks a [`Populator`] keeps in reserve by default.
pub const DEFAULT_SPARES: usize = 1;

/// Chunks the attached pools take before the populator's thread starts, by default (16 MiB).
pub const DEFAULT_START_AFTER: usize = 8;

/// The background chunk populator of one structure (see the [module docs](super#pre-faulting-chunks)).
///
/// Dropping it stops and joins its thread.
pub struct Populator {
    reservoir: Arc<Reservoir>,
}

/// What a [`Populator`] did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PopulatorStats {
    /// Whether the thread was started.
    pub started: bool,
    /// Chunks the pools took from the reservoir (populated ahead of need).
    pub served: usize,
    /// Chunks the pools mapped themselves (the reservoir was empty).
    pub missed: usize,
    /// Chunks the thread populated.
    pub populated: usize,
}

/// The part of a [`Populator`] that its pools and its thread share.
pub(crate) struct Reservoir {
    /// Whether a thread may be started at all.
    enabled: bool,
    /// Most chunks kept ready.
    spares: usize,
    /// Chunks taken (served + missed) before the thread starts.
    start_after: usize,
    /// Populated chunks, waiting for a pool.
    ready: SpinLock<Vec<HugeRegion>>,
    /// `ready.len() * CHUNK_SIZE`, readable without the lock.
    spare_bytes: AtomicUsize,
    served: AtomicUsize,
    missed: AtomicUsize,
    populated: AtomicUsize,
    /// The thread (started lazily, joined by the shutdown).
    thread: BackgroundThread,
}

impl Populator {
    /// A populator keeping [`DEFAULT_SPARES`] chunks in reserve, its thread started after
    /// [`DEFAULT_START_AFTER`] chunks.
    pub fn new() -> Populator {
        Self::with_params(DEFAULT_SPARES, DEFAULT_START_AFTER)
    }

    /// A populator keeping `spares` chunks (at least 1) in reserve, its thread started once
    /// the attached pools have taken `start_after` chunks.
    pub fn with_params(spares: usize, start_after: usize) -> Populator {
        Self::build(true, spares.max(1), start_after)
    }

    /// A populator that never starts a thread: attached pools behave as unattached ones
    /// (the switch-off of a structure's configuration).
    pub fn disabled() -> Populator {
        Self::build(false, 1, usize::MAX)
    }

    fn build(enabled: bool, spares: usize, start_after: usize) -> Populator {
        Populator {
            reservoir: Arc::new(Reservoir {
                enabled,
                spares,
                start_after,
                ready: SpinLock::new(Vec::new()),
                spare_bytes: AtomicUsize::new(0),
                served: AtomicUsize::new(0),
                missed: AtomicUsize::new(0),
                populated: AtomicUsize::new(0),
                thread: BackgroundThread::new("orrery-populate"),
            }),
        }
    }

    /// Whether the populator may start a thread (not [`disabled`](Self::disabled)).
    pub fn is_enabled(&self) -> bool {
        self.reservoir.enabled
    }

    /// Bytes of the populated chunks waiting in the reservoir (at most `spares` chunks): a
    /// structure adds them to its `memory_usage()` (see [pre-faulting chunks](super#pre-faulting-chunks)).
    pub fn spare_bytes(&self) -> usize {
        self.reservoir.spare_bytes.load(Ordering::Acquire)
    }

    /// Gives the spare chunks back to the OS: for a structure that has shrunk, whose
    /// inserts are not about to need them (they are resident memory). The thread populates
    /// a new one when a pool next takes a chunk.
    pub fn trim(&self) {
        let r = &self.reservoir;
        let spare = std::mem::take(&mut *r.ready.lock());
        r.spare_bytes
            .fetch_sub(spare.len() * CHUNK_SIZE, Ordering::Relaxed);
        drop(spare);
    }

    /// What the populator did so far.
    pub fn stats(&self) -> PopulatorStats {
        let r = &self.reservoir;
        PopulatorStats {
            started: r.thread.is_started(),
            served: r.served.load(Ordering::Relaxed),
            missed: r.missed.load(Ordering::Relaxed),
            populated: r.populated.load(Ordering::Relaxed),
        }
    }

    /// Whether the thread was started and has exited (only after a shutdown).
    #[cfg(test)]
    pub(crate) fn thread_exited(&self) -> bool {
        self.reservoir.thread.exited_flag().load(Ordering::Acquire)
    }

    /// The shared part, for [`SlabPool::attach`].
    pub(crate) fn reservoir(&self) -> &Arc<Reservoir> {
        &self.reservoir
    }
}

impl Default for Populator {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Populator {
    fn drop(&mut self) {
        self.reservoir.shutdown();
    }
}

impl fmt::Debug for Populator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Populator")
            .field("enabled", &self.reservoir.enabled)
            .field("spares", &self.reservoir.spares)
            .field("start_after", &self.reservoir.start_after)
            .field("spare_bytes", &self.spare_bytes())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Reservoir {
    /// A populated chunk for a pool that needs one, if the reservoir holds one; wakes (or
    /// starts) the thread to refill it. `None`: the pool maps its chunk itself.
    ///
    /// Called under the pool's depot lock (see the module docs for the lock order).
    pub(crate) fn take(self: &Arc<Self>) -> Option<HugeRegion> {
        if !self.enabled {
            return None;
        }
        let chunk = self.ready.lock().pop();
        if chunk.is_some() {
            self.spare_bytes.fetch_sub(CHUNK_SIZE, Ordering::Relaxed);
            self.served.fetch_add(1, Ordering::Relaxed);
        } else {
            self.missed.fetch_add(1, Ordering::Relaxed);
        }
        let taken = self.served.load(Ordering::Relaxed) + self.missed.load(Ordering::Relaxed);
        if self.thread.is_started() {
            self.thread.wake();
        } else if taken >= self.start_after {
            self.start();
        }
        chunk
    }

    /// Starts the thread, unless it runs already or the populator is shutting down.
    /// Without a thread (the OS refused one) the pools map their chunks themselves.
    #[cold]
    fn start(self: &Arc<Self>) {
        let me = Arc::clone(self);
        self.thread.start(move || me.run());
    }

    /// The thread: fills the reservoir, parks while it is full.
    fn run(&self) {
        while !self.thread.is_stopping() {
            if self.ready.lock().len() >= self.spares {
                // An `unpark` since the look above left a token: no wake-up is lost.
                std::thread::park();
                continue;
            }
            let chunk = HugeRegion::new(CHUNK_SIZE).and_then(|mut c| c.prefault().map(|()| c));
            let Ok(chunk) = chunk else {
                // Out of memory: the pools will fail (or not) on their own; wait for the
                // next request instead of spinning on the refusal.
                std::thread::park();
                continue;
            };
            self.populated.fetch_add(1, Ordering::Relaxed);
            let mut ready = self.ready.lock();
            if ready.len() < self.spares && !self.thread.is_stopping() {
                ready.push(chunk);
                // Release: a reader of `spare_bytes` (Acquire) also sees `populated`.
                self.spare_bytes.fetch_add(CHUNK_SIZE, Ordering::Release);
            }
            // Otherwise `chunk` is unmapped here (never reached today: only this thread
            // fills, and the shutdown empties the reservoir after the join).
        }
    }

    /// Stops the thread, waits for it to exit, and unmaps the chunks in reserve.
    fn shutdown(&self) {
        // Never from the thread itself: it drops no populator.
        self.thread.shutdown();
        let spare = std::mem::take(&mut *self.ready.lock());
        self.spare_bytes
            .fetch_sub(spare.len() * CHUNK_SIZE, Ordering::Relaxed);
        drop(spare);
    }
}

#[cfg(test)]
mod tests;
