//! [`Backoff`]: exponential busy-wait for spin loops and CAS retry loops.

use super::primitive::{spin_loop, yield_now};
use std::cell::Cell;
use std::fmt;
use std::time::{Duration, Instant};

/// Polls `cond` until it holds or `timeout` has passed, backing off between polls as
/// [`Backoff::snooze`] does (spinning, then yielding); returns whether `cond` held. For waits
/// that must end even when what they wait for never happens: tests (a bound in time, not in
/// iterations, so a faster or slower machine waits as long), shutdown paths.
///
/// ```
/// use orrery_core::sync::wait_until;
/// use std::time::Duration;
///
/// let mut polls = 0;
/// assert!(wait_until(Duration::from_secs(60), || {
///     polls += 1;
///     polls == 3
/// }));
/// assert!(!wait_until(Duration::ZERO, || false));
/// ```
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    let backoff = Backoff::new();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() >= timeout {
            return false;
        }
        backoff.snooze();
    }
}

/// Exponential backoff for spin loops.
///
/// - [`spin`](Backoff::spin) after a failed compare-and-swap on a contended word: busy-waits
///   `2^step` pause instructions (`step` capped at [`SPIN_LIMIT`](Backoff::SPIN_LIMIT)), so
///   that contending threads spread out instead of hammering the cache line.
/// - [`snooze`](Backoff::snooze) while waiting for another thread to make progress (a lock
///   holder): spins like `spin` at first, then, past the spin limit, yields the time slice
///   to the scheduler, because the thread we wait for may not be running (the machine has
///   more runnable threads than cores).
/// - [`is_completed`](Backoff::is_completed) tells when yielding has started: a caller that
///   can block (park, sleep) should do so from then on.
///
/// ```
/// use orrery_core::sync::Backoff;
/// use std::sync::atomic::{AtomicBool, Ordering};
///
/// let ready = AtomicBool::new(true);
/// let backoff = Backoff::new();
/// while !ready.load(Ordering::Acquire) {
///     backoff.snooze();
/// }
/// ```
pub struct Backoff {
    step: Cell<u32>,
}

impl Backoff {
    /// Past this step, [`spin`](Backoff::spin) stops growing (`2^6 = 64` pauses).
    pub const SPIN_LIMIT: u32 = 6;
    /// Past this step, [`snooze`](Backoff::snooze) yields instead of spinning and
    /// [`is_completed`](Backoff::is_completed) becomes true.
    pub const YIELD_LIMIT: u32 = 10;

    /// A fresh backoff (step 0).
    #[inline]
    pub const fn new() -> Backoff {
        Backoff { step: Cell::new(0) }
    }

    /// Restarts from step 0 (after progress was made).
    #[inline]
    pub fn reset(&self) {
        self.step.set(0);
    }

    /// Backs off after a failed atomic operation on contended memory: spins, never yields.
    #[inline]
    pub fn spin(&self) {
        if cfg!(loom) {
            // Under the model checker one scheduling point per backoff is enough.
            return yield_now();
        }
        let step = self.step.get();
        for _ in 0..1u32 << step.min(Self::SPIN_LIMIT) {
            spin_loop();
        }
        if step <= Self::SPIN_LIMIT {
            self.step.set(step + 1);
        }
    }

    /// Backs off while waiting for another thread: spins, then yields the time slice.
    #[inline]
    pub fn snooze(&self) {
        if cfg!(loom) {
            return yield_now();
        }
        let step = self.step.get();
        if step <= Self::SPIN_LIMIT {
            for _ in 0..1u32 << step {
                spin_loop();
            }
        } else {
            yield_now();
        }
        if step <= Self::YIELD_LIMIT {
            self.step.set(step + 1);
        }
    }

    /// True once [`snooze`](Backoff::snooze) has backed off past
    /// [`YIELD_LIMIT`](Backoff::YIELD_LIMIT): a caller able to block should block now.
    #[inline]
    pub fn is_completed(&self) -> bool {
        self.step.get() > Self::YIELD_LIMIT
    }
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff::new()
    }
}

impl fmt::Debug for Backoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backoff")
            .field("step", &self.step.get())
            .field("is_completed", &self.is_completed())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Backoff;

    #[test]
    fn snooze_completes_and_resets() {
        let b = Backoff::new();
        assert!(!b.is_completed());
        for _ in 0..=Backoff::YIELD_LIMIT {
            assert!(!b.is_completed());
            b.snooze();
        }
        assert!(b.is_completed());
        b.reset();
        assert!(!b.is_completed());
        for _ in 0..100 {
            b.spin();
        }
        // `spin` alone never reaches the yielding phase.
        assert!(!b.is_completed());
    }
}
