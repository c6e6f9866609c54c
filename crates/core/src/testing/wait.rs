//! Waiting in tests without assuming a speed: every wait is bounded by [`DEADLINE`] in
//! time, never by a count of iterations (a faster machine would wait less, a slower one
//! would fail), and threads that must overlap show it with [`Progress`] counters instead of
//! hoping the scheduler interleaves them.

use crate::sync::{epoch, wait_until};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How long any wait of a test may take before it fails: long enough for the slowest
/// machine and the harshest scheduling (one core, other tests of the binary running), short
/// enough that something that never happens fails the run instead of hanging it.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// Waits (spinning, then yielding) until `cond()` holds.
///
/// # Panics
/// After [`DEADLINE`], naming `what`.
pub fn wait_for(what: &str, cond: impl FnMut() -> bool) {
    assert!(
        wait_until(DEADLINE, cond),
        "{what}: not done within {DEADLINE:?}"
    );
}

/// Drives epoch reclamation ([`epoch::flush_until`]) until `done()` holds.
///
/// # Panics
/// After [`DEADLINE`], naming `what` and the collector's state; or if the calling thread is
/// pinned.
pub fn reclaim_until(what: &str, done: impl FnMut() -> bool) {
    let epoch0 = epoch::global_epoch();
    assert!(
        epoch::flush_until(DEADLINE, done),
        "{what}: not reclaimed within {DEADLINE:?} (global epoch {epoch0} at the start, {} \
         now; {} deferred functions pending)",
        epoch::global_epoch(),
        epoch::pending_deferred()
    );
}

/// Per-thread progress counters: worker threads [`bump`](Progress::bump) theirs as they go,
/// and the thread they must overlap with waits until every one of them moved
/// ([`wait_all_moved`](Progress::wait_all_moved)) before it starts and every so often while
/// it works, so the overlap is a fact of the run, not a hope about the scheduler.
///
/// ```
/// use orrery_core::testing::wait::Progress;
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, Ordering};
///
/// let progress = Progress::new(1);
/// let stop = Arc::new(AtomicBool::new(false));
/// let reader = {
///     let (progress, stop) = (progress.clone(), stop.clone());
///     std::thread::spawn(move || {
///         while !stop.load(Ordering::Relaxed) {
///             progress.bump(0);
///         }
///     })
/// };
/// let mut last = progress.snapshot();
/// for round in 0..10 {
///     // ... the work the reader must overlap with ...
///     progress.wait_all_moved(&mut last); // the reader ran during this round
/// }
/// stop.store(true, Ordering::Relaxed);
/// reader.join().unwrap();
/// ```
#[derive(Debug)]
pub struct Progress {
    counts: Vec<AtomicU64>,
}

impl Progress {
    /// Counters for `threads` threads, all zero.
    pub fn new(threads: usize) -> Arc<Progress> {
        Arc::new(Progress {
            counts: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Thread `i` made one more step.
    pub fn bump(&self, i: usize) {
        self.counts[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Every thread's count now.
    pub fn snapshot(&self) -> Vec<u64> {
        self.counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }

    /// Waits until every thread made a step since `last` (a previous
    /// [`snapshot`](Progress::snapshot)), then stores the new counts in `last`.
    ///
    /// # Panics
    /// After [`DEADLINE`].
    pub fn wait_all_moved(&self, last: &mut [u64]) {
        wait_for("worker threads to make progress", || {
            self.counts
                .iter()
                .zip(last.iter())
                .all(|(c, &l)| c.load(Ordering::Relaxed) > l)
        });
        last.copy_from_slice(&self.snapshot());
    }
}
