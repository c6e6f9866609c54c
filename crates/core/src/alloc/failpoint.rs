//! Allocation-failure injection for tests: make the Nth allocation from now fail.
//!
//! Out-of-memory paths are hard to reach for real (the OS overcommits, and a test that
//! exhausts memory disturbs every other process), so the allocation points of this module
//! ask a fail point first. A test arms it with [`fail_nth`]: counting from then on, the
//! `n`th allocation *made by the calling thread* fails with
//! [`Error::OutOfMemory`](crate::Error::OutOfMemory) as if the OS had refused it. The fail
//! point then disarms itself, so the operation that saw the failure can be retried, and
//! later allocations succeed.
//!
//! What counts as one allocation (each asks the fail point once):
//!
//! | where | what |
//! |---|---|
//! | [`SlabPool::try_alloc`](super::SlabPool::try_alloc) | every object, whether it comes from a thread cache or not |
//! | mapping of a region (`HugeRegion::new`, hence slab chunks, [`HugeArray`](super::HugeArray), large [`ZeroedArray`](super::ZeroedArray)s) | one per mapping |
//! | [`ZeroedArray`](super::ZeroedArray) on the heap | one per array |
//! | [`SizeClassPool`](super::SizeClassPool) blocks above the largest class | one per block |
//!
//! The state is thread-local: tests running in parallel (the test harness runs them on
//! separate threads) and background threads (a [`Populator`](super::Populator)) never see
//! another test's fail point. Allocations by the standard library (`Vec`, `Box`) are not
//! counted: they abort on failure by Rust's convention, and the structures keep them small.
//!
//! The module exists only under `cfg(test)` or the `failpoints` feature (not implied by
//! `testing`, which the benchmark enables for the suite's helpers). Without them the
//! allocation points call a constant `false` function that compiles to nothing: there is
//! no cost outside tests.

use std::cell::Cell;

thread_local! {
    /// Allocations still to succeed before the failing one, plus one; 0 when disarmed.
    static COUNTDOWN: Cell<u64> = const { Cell::new(0) };
    /// Failures injected on this thread since it started.
    static INJECTED: Cell<u64> = const { Cell::new(0) };
}

/// Arms the fail point of the calling thread: its `n`th allocation from now fails
/// (`n = 1`: the next one); the allocations before it succeed. `n = 0` disarms. Replaces
/// any earlier arming.
pub fn fail_nth(n: u64) {
    COUNTDOWN.with(|c| c.set(n));
}

/// Disarms the fail point of the calling thread.
pub fn disarm() {
    fail_nth(0);
}

/// Whether the fail point of the calling thread is armed (its failure has not happened
/// yet).
pub fn is_armed() -> bool {
    COUNTDOWN.with(Cell::get) != 0
}

/// How many failures the fail point has injected on the calling thread so far.
pub fn injected() -> u64 {
    INJECTED.with(Cell::get)
}

/// Disarms the calling thread's fail point when dropped, so that a test which panics
/// between arming and the failure leaves no armed fail point behind.
#[derive(Debug)]
#[must_use = "the fail point is disarmed when the guard is dropped"]
pub struct Armed(());

/// [`fail_nth`]`(n)`, disarmed again when the returned guard is dropped.
pub fn arm(n: u64) -> Armed {
    fail_nth(n);
    Armed(())
}

impl Drop for Armed {
    fn drop(&mut self) {
        disarm();
    }
}

/// Called by every allocation point before it allocates: whether this allocation must
/// fail. Counts the allocation when armed.
#[inline]
pub(crate) fn should_fail() -> bool {
    COUNTDOWN.with(|c| match c.get() {
        0 => false,
        1 => {
            c.set(0);
            INJECTED.with(|i| i.set(i.get() + 1));
            true
        }
        n => {
            c.set(n - 1);
            false
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::{HugeRegion, SizeClassPool, SlabPool, ZeroedArray};
    use super::*;
    use crate::Error;

    #[test]
    fn alloc_failpoint_counts_and_disarms() {
        assert!(!is_armed());
        let before = injected();
        let _armed = arm(3);
        assert!(!should_fail());
        assert!(!should_fail());
        assert!(is_armed());
        assert!(should_fail());
        assert!(!is_armed());
        assert!(!should_fail());
        assert_eq!(injected(), before + 1);
        fail_nth(1);
        disarm();
        assert!(!should_fail());
    }

    #[test]
    fn alloc_failpoint_reaches_every_allocation_point() {
        let before = injected();
        {
            let _armed = arm(1);
            assert_eq!(HugeRegion::new(1).unwrap_err(), Error::OutOfMemory);
        }
        {
            let _armed = arm(1);
            assert_eq!(
                ZeroedArray::<u64>::new(8).err(),
                Some(Error::OutOfMemory),
                "heap-backed array"
            );
        }
        let pool = SlabPool::new(64, 8).unwrap();
        {
            let _armed = arm(1);
            assert_eq!(pool.try_alloc().unwrap_err(), Error::OutOfMemory);
        }
        let p = pool.try_alloc().unwrap();
        // SAFETY: allocated just above from `pool`, unused afterwards.
        unsafe { pool.free(p) };
        let classes = SizeClassPool::new(&[16, 32], 8).unwrap();
        {
            let _armed = arm(1);
            assert_eq!(classes.try_alloc(1000).unwrap_err(), Error::OutOfMemory);
            assert_eq!(classes.large_bytes(), 0);
        }
        let b = classes.try_alloc(1000).unwrap();
        assert_eq!(classes.large_bytes(), 1000);
        // SAFETY: allocated just above with this size, unused afterwards.
        unsafe { classes.free(b, 1000) };
        assert_eq!(injected(), before + 4);
        // Another thread's fail point is its own.
        let _armed = arm(1);
        std::thread::scope(|s| {
            s.spawn(|| assert!(!is_armed()));
        });
        assert!(is_armed());
    }
}
