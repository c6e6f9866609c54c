//! Pre-faulting the successor's bucket array ahead of the migration (beyond the paper).
//!
//! # Why
//!
//! A successor table is a fresh, zeroed, huge-page-advised mapping of 2N 32-byte cells
//! (1 GiB for the 2^25 cells that follow a 2^24 table). The kernel gives it physical pages
//! only at first touch, and the first toucher pays for it: clearing each 2 MiB page, and on
//! this project's VM (Firecracker with free-page reporting) also the host backing memory
//! the guest had given back, 2–7 ns per byte in all, i.e. 4–14 ms per 2 MiB page. Without
//! pre-faulting, that first toucher is the migrating insert (`expand.rs`): every 1024th run
//! of 64 buckets enters a fresh page of each half of the successor and stalls for two page
//! faults. `perf record` of an expansion attributes about 85% of the migration's time to
//! `clear_page_erms` under the huge-page fault (measured: `docs/results/mercury.md`, "The 32M load").
//!
//! # What
//!
//! The paper has a dedicated expand-thread; Orrery migrates cooperatively (the writers do
//! it) because migration work is short and the writers are there anyway. The page faults
//! are another matter: they are long, and need no coordination with the table at all
//! (populating a page changes no byte). So a Mercury table with [`Config::prefault`]
//! (the default) has one background *pre-fault thread*, started at its first expansion of a
//! table of at least [`STEP`] buckets (2 MiB of cells), which populates the successor's
//! pages with `madvise(MADV_POPULATE_WRITE)` (`HugeArray::prefault`; a touching fallback on
//! older kernels and under Miri) in the order the migration will write them, and at most
//! [`LEAD`] steps ahead of the migration's progress *r*:
//!
//! - Old buckets `l` go to new cells `l` and `l + N`: one *step* is [`STEP`] old buckets,
//!   i.e. one 2 MiB page in each half of the successor.
//! - The thread's cursor is `Table::prefaulted` (of the old table): the successor's pages for
//!   old buckets `0..prefaulted` are populated (or were written by the migration). Each
//!   step starts at `max(prefaulted, r rounded up to a step)`: pages the migration already
//!   entered are resident (every migrated bucket writes both of its new cells), so the
//!   thread never competes with the migration for a page it is writing, and when the
//!   migration catches up (the thread was descheduled, or populating is slower than
//!   migrating) the migrating inserts simply fault their pages themselves, as without the
//!   thread.
//! - The thread stops [`LEAD`] steps ahead of *r* and parks; a migration run that enters a
//!   new step unparks it (one `futex` wake per 1024 runs), as does the start of an
//!   expansion and the table's drop.
//!
//! Bounding the lead keeps the work proportional to the migration's progress: an
//! expansion that advances slowly (5% inserts) costs its pages as it goes instead of a burst
//! of the whole successor (1 GiB here) competing for memory bandwidth with the workers, and
//! a table dropped mid-expansion wasted at most [`LEAD`] steps.
//!
//! # Lifetime and safety
//!
//! The thread holds a `Weak<Inner>` and upgrades it for one step at a time, pinning an epoch
//! guard for that step (the successor it populates is freed only through the epoch collector
//! or by `Inner`'s drop, which the upgraded `Arc` excludes). Between steps it holds neither
//! and parks. [`Mercury`](crate::Mercury)'s `Drop` calls [`Prefaulter::shutdown`], which sets
//! the stop flag, unparks the thread and joins it, so the thread never outlives the table
//! handle; a step in progress ends first (at most two 2 MiB populates). No thread is started
//! for tables that never reach [`STEP`] buckets.
//!
//! # Cost, and two worker threads
//!
//! With one worker the pre-fault thread runs on the otherwise idle core and takes the fault
//! stalls off the worker. With as many workers as cores it competes with them for CPU, but
//! only for work they would otherwise have done themselves (the same pages, populated once),
//! so the total stays the same; its CPU time is not the workers' (benchmarks that count
//! worker CPU time only see that the workers stopped paying for it: `docs/results/mercury.md`,
//! "Pre-faulting the successor").

use std::ops::Range;
#[cfg(test)]
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use orrery_core::alloc::{BackgroundThread, HUGE_PAGE_SIZE};
use orrery_core::sync::{Guard, pin};

#[cfg(doc)]
use crate::config::Config;
use crate::table::{Cell, Table};

/// What the pre-fault thread needs of the table it serves: its [`Prefaulter`] and its
/// current [`Table`]. The engine (`raw::Inner`) implements it, so that this module sits
/// below the engine and never names it.
pub(crate) trait Host: Send + Sync + 'static {
    /// The host's pre-fault thread.
    fn prefaulter(&self) -> &Prefaulter;
    /// The current table, valid while `guard` lives.
    fn current_table<'g>(&self, guard: &'g Guard) -> &'g Table;
}

/// Old buckets per pre-fault step: one 2 MiB page of cells in each half of the successor.
pub(crate) const STEP: usize = HUGE_PAGE_SIZE / size_of::<Cell>();

/// Steps the thread may run ahead of the migration (32 MiB of successor pages).
pub(crate) const LEAD: usize = 8;

/// The next range of old buckets (of a table of `n`) whose successor pages to populate, given
/// the thread's cursor `done` and the migration's progress `migrated`; `None` while the
/// thread is [`LEAD`] steps ahead of the migration, or done.
///
/// The range starts at `max(done, migrated rounded up to a step)` and ends at the next step
/// boundary (or `n`), and never starts [`LEAD`] steps or more past the migration's step.
pub(crate) fn plan(n: usize, done: usize, migrated: usize, step: usize) -> Option<Range<usize>> {
    debug_assert!(step > 0 && done <= n && migrated <= n);
    let entered = migrated.next_multiple_of(step).min(n);
    let from = done.max(entered);
    let limit = entered.saturating_add(LEAD * step).min(n);
    (from < limit).then(|| from..(from - from % step + step).min(n))
}

/// The pre-fault thread of one Mercury table (see the module docs): started lazily, stopped
/// and joined by [`shutdown`](Self::shutdown).
pub(crate) struct Prefaulter {
    /// [`Config::prefault`].
    enabled: bool,
    /// Old buckets per step ([`STEP`]; smaller in tests, so that small tables use the thread).
    step: AtomicUsize,
    /// The thread: started lazily, stopped and joined by `shutdown` (the lifecycle shared
    /// with the slab chunk populator, `orrery_core::alloc::BackgroundThread`).
    thread: BackgroundThread,
    /// Set by the thread when it exits (tests check that `shutdown` joined it).
    #[cfg(test)]
    pub(crate) exited: Arc<AtomicBool>,
}

impl Prefaulter {
    pub(crate) fn new(enabled: bool) -> Prefaulter {
        let thread = BackgroundThread::new("mercury-prefault");
        Prefaulter {
            enabled,
            step: AtomicUsize::new(STEP),
            #[cfg(test)]
            exited: thread.exited_flag(),
            thread,
        }
    }

    /// Old buckets per step.
    #[inline]
    pub(crate) fn step(&self) -> usize {
        self.step.load(Ordering::Relaxed)
    }

    /// Sets the step (tests: before the first expansion).
    #[cfg(test)]
    pub(crate) fn set_step(&self, step: usize) {
        self.step.store(step.max(1), Ordering::Relaxed);
    }

    /// Whether the thread was started.
    #[cfg(test)]
    pub(crate) fn started(&self) -> bool {
        self.thread.is_started()
    }

    /// An expansion of a table of `n` buckets started: starts the thread if the table is
    /// large enough and there is none yet, or wakes it.
    pub(crate) fn expansion_started<H: Host>(&self, inner: &Arc<H>, n: usize) {
        if !self.enabled || n < self.step() {
            return;
        }
        if self.thread.is_started() {
            self.thread.wake();
            return;
        }
        // Nothing when the table is being dropped. Without a thread (the OS refused one),
        // the migration faults its pages itself.
        let weak = Arc::downgrade(inner);
        self.thread.start(move || run(&weak));
    }

    /// A migration run moved the progress from `start` to `end`: wakes the thread if the run
    /// entered a new step.
    #[inline]
    pub(crate) fn migrated(&self, start: usize, end: usize) {
        if self.thread.is_started() {
            let step = self.step();
            if start / step != end / step {
                self.thread.wake();
            }
        }
    }

    /// Stops the thread and waits for it to exit (from the table handle's `Drop`). A step in
    /// progress completes first.
    pub(crate) fn shutdown(&self) {
        // Never from the thread itself: the pre-fault thread does not drop table handles.
        self.thread.shutdown();
    }
}

/// The pre-fault thread: one step per upgrade of `weak`, parked when there is nothing to do.
fn run<H: Host>(weak: &Weak<H>) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        if inner.prefaulter().thread.is_stopping() {
            return;
        }
        let worked = prefault_step(&*inner);
        drop(inner);
        if !worked {
            // `unpark` before `park` leaves a token: no wake-up is lost between the look
            // above and this call.
            std::thread::park();
        }
    }
}

/// Populates the successor's pages for the next planned range of old buckets (see
/// [`plan`]); returns whether it did anything.
pub(crate) fn prefault_step<H: Host>(host: &H) -> bool {
    let guard = pin();
    let t = host.current_table(&guard);
    let Some(next) = t.next() else {
        return false;
    };
    let n = t.len();
    if next.len() < n {
        // A shrink: its successor is half as large and filled by merges; not pre-faulted.
        return false;
    }
    let Some(r) = plan(n, t.prefaulted(), t.migrated(), host.prefaulter().step()) else {
        return false;
    };
    let populated = next
        .prefault(r.clone())
        .and_then(|()| next.prefault(r.start + n..r.end + n));
    // Out of memory: stop pre-faulting this expansion (the migration faults what it
    // needs, and reports the failure if it comes to that).
    t.set_prefaulted(if populated.is_ok() { r.end } else { n });
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Expansion, Mercury};

    /// Inserts keys `from..` until the table is expanding; returns the next key.
    fn insert_until_expanding(m: &Mercury, mut from: u64) -> u64 {
        while m.stats().next_buckets.is_none() {
            m.insert(&from.to_le_bytes(), &(from * 7).to_le_bytes())
                .unwrap();
            from += 1;
        }
        from
    }

    fn check_all(m: &Mercury, n: u64) {
        assert_eq!(m.len(), n as usize);
        for i in 0..n {
            assert_eq!(
                m.get(&i.to_le_bytes()),
                Some((i * 7).to_le_bytes().to_vec()),
                "{i}"
            );
        }
    }

    /// Waits (at most a minute) until the pre-fault cursor of the current table reaches
    /// `want`; returns the cursor.
    fn wait_prefaulted(m: &Mercury, want: usize) -> usize {
        let mut seen = 0;
        orrery_core::sync::wait_until(orrery_core::testing::wait::DEADLINE, || {
            seen = m.inner.current(&pin()).prefaulted();
            seen >= want
        });
        seen
    }

    /// The thread starts with the first expansion of a table of at least a step, populates
    /// the successor up to `LEAD` steps ahead of the migration and no further, follows the
    /// migration when it advances, serves later expansions, and is joined by the drop.
    /// The pairs are intact throughout (populating changes no byte).
    #[test]
    fn prefaults_ahead_of_the_migration_then_stops() {
        let (buckets, step, run) = if cfg!(miri) {
            (64, 4, 4)
        } else {
            (1024, 16, 16)
        };
        let m = Mercury::with_config(Config {
            initial_buckets: buckets,
            migrate_run: run,
            ..Config::default()
        })
        .unwrap();
        m.inner.prefaulter.set_step(step);
        let next = insert_until_expanding(&m, 0);
        assert!(m.inner.prefaulter.started());
        let (r, want) = {
            let guard = pin();
            let t = m.inner.current(&guard);
            // The expanding insert migrated one run; nothing else runs.
            assert_eq!(t.migrated(), run);
            let entered = run.next_multiple_of(step);
            (t.migrated(), (entered + LEAD * step).min(buckets))
        };
        assert_eq!(wait_prefaulted(&m, want), want, "migrated {r}");
        // Parked at the lead: no further step while the migration stands still.
        for _ in 0..100 {
            std::thread::yield_now();
        }
        {
            let guard = pin();
            assert_eq!(m.inner.current(&guard).prefaulted(), want);
        }
        check_all(&m, next);
        // Finish this expansion and run into the next one: the same thread serves it.
        let next = insert_until_expanding(&m, next);
        m.finish_expansion();
        let next = insert_until_expanding(&m, next);
        assert_eq!(m.stats().next_buckets, Some(buckets * 4));
        let want = (run.next_multiple_of(step) + LEAD * step).min(buckets * 2);
        assert_eq!(wait_prefaulted(&m, want), want);
        check_all(&m, next);
        let exited = Arc::clone(&m.inner.prefaulter.exited);
        assert!(!exited.load(Ordering::Acquire));
        drop(m);
        assert!(exited.load(Ordering::Acquire), "the drop joins the thread");
    }

    /// No thread for tables below a step, nor when disabled.
    #[test]
    fn no_thread_below_a_step_or_when_disabled() {
        let buckets = if cfg!(miri) { 32 } else { 1024 };
        for (step, prefault) in [(buckets * 8, true), (1, false)] {
            let m = Mercury::with_config(Config {
                initial_buckets: buckets,
                prefault,
                ..Config::default()
            })
            .unwrap();
            m.inner.prefaulter.set_step(step);
            let n = insert_until_expanding(&m, 0);
            m.finish_expansion();
            assert!(
                !m.inner.prefaulter.started(),
                "step {step} prefault {prefault}"
            );
            check_all(&m, n);
        }
    }

    /// Dropping the table while the thread populates a real (2 MiB-page) step, or while a
    /// dedicated expand-thread migrates, stops and joins the pre-fault thread; the
    /// expand-thread exits on its own (it holds a `Weak` too).
    #[test]
    #[cfg_attr(
        miri,
        ignore = "65 Ki inserts and 4 MiB of successor: too slow under Miri"
    )]
    fn drop_during_a_running_prefault() {
        for expansion in [Expansion::Cooperative, Expansion::Dedicated] {
            let m = Mercury::with_config(Config {
                initial_buckets: STEP,
                expansion,
                ..Config::default()
            })
            .unwrap();
            let n = insert_until_expanding(&m, 0);
            assert!(m.inner.prefaulter.started());
            let exited = Arc::clone(&m.inner.prefaulter.exited);
            let weak = Arc::downgrade(&m.inner);
            assert!(m.get(&(n - 1).to_le_bytes()).is_some());
            drop(m);
            assert!(exited.load(Ordering::Acquire), "{expansion:?}");
            // The dedicated expander may still hold the last `Arc` for a moment.
            assert!(
                orrery_core::sync::wait_until(orrery_core::testing::wait::DEADLINE, || {
                    weak.strong_count() == 0
                }),
                "the expander kept the table alive"
            );
        }
    }

    #[test]
    fn plan_follows_the_migration() {
        let s = 16;
        // From the start: the first step, then the next ones up to the lead.
        assert_eq!(plan(1024, 0, 0, s), Some(0..16));
        assert_eq!(plan(1024, 16, 0, s), Some(16..32));
        assert_eq!(
            plan(1024, (LEAD - 1) * s, 0, s),
            Some((LEAD - 1) * s..LEAD * s)
        );
        assert_eq!(plan(1024, LEAD * s, 0, s), None);
        // A migration inside step 2 (buckets 32..48): pages of steps 0..=2 are entered, the
        // lead counts from step 3.
        assert_eq!(plan(1024, LEAD * s, 40, s), Some(LEAD * s..(LEAD + 1) * s));
        assert_eq!(plan(1024, (LEAD + 3) * s, 40, s), None);
        // The migration overtook the cursor: skip to the first step it has not entered.
        assert_eq!(plan(1024, 16, 100, s), Some(112..128));
        assert_eq!(plan(1024, 16, 96, s), Some(96..112));
        // The end of the table: a short last step, then nothing.
        assert_eq!(plan(1000, 992, 990, s), Some(992..1000));
        assert_eq!(plan(1000, 1000, 990, s), None);
        assert_eq!(plan(1000, 16, 1000, s), None);
        // A table smaller than a step: one range, the whole table.
        assert_eq!(plan(8, 0, 0, s), Some(0..8));
        assert_eq!(plan(8, 8, 0, s), None);
    }

    /// Walking the plan from any state covers every bucket the migration has not entered,
    /// each once, in order, and never more than `LEAD` steps ahead.
    #[test]
    fn plan_covers_each_step_once() {
        for (n, step) in [(1024, 16), (1000, 16), (100, 7), (5, 16), (64, 1)] {
            for migrated in (0..=n).step_by(13) {
                let mut done = 0;
                let mut covered = Vec::new();
                while let Some(r) = plan(n, done, migrated, step) {
                    assert!(r.start >= done && r.end > r.start);
                    assert!(r.end <= n);
                    assert!(r.start < migrated.next_multiple_of(step) + LEAD * step);
                    covered.extend(r.clone());
                    done = r.end;
                }
                let entered = migrated.next_multiple_of(step).min(n);
                let want: Vec<usize> = (entered..(entered + LEAD * step).min(n)).collect();
                assert_eq!(covered, want, "n {n} step {step} migrated {migrated}");
            }
        }
    }
}
