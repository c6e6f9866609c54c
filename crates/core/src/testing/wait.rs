//! Waiting in tests without assuming a speed: every wait is bounded by [`DEADLINE`] in
//! time, never by a count of iterations (a faster machine would wait less, a slower one
//! would fail), and threads that must overlap show it with [`Progress`] counters instead of
//! hoping the scheduler interleaves them.

use crate::sync::{epoch, wait_until};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
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

/// A last-resort bound on a whole test: if the test is still running when the watchdog's
/// limit passes, it prints what was running and ends the process with a failure status.
///
/// Every wait in a test is bounded by a deadline, but a thread stuck *inside* the code under
/// test (a livelocked retry loop, a lock never released) is out of reach of those deadlines,
/// and a test that joins its threads (a `std::thread::scope`, a `join`) would then hang the
/// whole run instead of failing it. Arm a watchdog at the start of such a test; dropping it
/// (the test returning or panicking) disarms it.
///
/// ```
/// use orrery_core::testing::wait::Watchdog;
/// use std::time::Duration;
///
/// let _dog = Watchdog::arm("an example", Duration::from_secs(600));
/// // ... threads that might hang inside the code under test ...
/// ```
#[derive(Debug)]
pub struct Watchdog {
    disarm: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts a watchdog that ends the process (exit status 101, like a failed test) if it
    /// is not dropped within `limit`, naming `what` on stderr.
    pub fn arm(what: &str, limit: Duration) -> Watchdog {
        let (tx, rx) = mpsc::channel::<()>();
        let what = what.to_owned();
        let thread = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || {
                // A message or a disconnected sender both mean the watched test ended.
                if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                    eprintln!(
                        "watchdog: {what} still running after {limit:?}: a thread is stuck \
                         where no deadline reaches it; ending the test process"
                    );
                    std::process::exit(101);
                }
            })
            .expect("spawn the watchdog thread");
        Watchdog {
            disarm: Some(tx),
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(tx) = self.disarm.take() {
            // The receiver may be gone only if the watchdog already fired (the process is
            // exiting); nothing to do then.
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Watchdog;
    use std::time::Duration;

    #[test]
    fn a_dropped_watchdog_does_not_fire() {
        let dog = Watchdog::arm("a short test", Duration::from_millis(50));
        drop(dog);
        // Had it not been disarmed it would have ended the process by now.
        std::thread::sleep(Duration::from_millis(200));
    }

    /// The watchdog must fire: run in a child process, which it must end with status 101.
    #[test]
    fn a_watchdog_ends_a_stuck_test() {
        if std::env::var_os("ORRERY_WATCHDOG_CHILD").is_some() {
            let _dog = Watchdog::arm("the stuck child", Duration::from_millis(100));
            loop {
                std::thread::park();
            }
        }
        let exe = std::env::current_exe().expect("test binary");
        let mut child = std::process::Command::new(exe)
            .args([
                "--exact",
                "testing::wait::tests::a_watchdog_ends_a_stuck_test",
            ])
            .args(["--nocapture", "--test-threads=1"])
            .env("ORRERY_WATCHDOG_CHILD", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run the child test");
        // A watchdog that never fires would leave the child parked forever: bound the wait.
        let mut status = None;
        crate::sync::wait_until(super::DEADLINE, || {
            status = child.try_wait().expect("poll the child");
            status.is_some()
        });
        if status.is_none() {
            let _ = child.kill();
            panic!(
                "the watchdog did not end the stuck child within {:?}",
                super::DEADLINE
            );
        }
        let out = child.wait_with_output().expect("child output");
        assert_eq!(status.and_then(|s| s.code()), Some(101), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("the stuck child still running"), "{err}");
    }
}
