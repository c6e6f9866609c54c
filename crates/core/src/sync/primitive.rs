//! The one place the sync module takes its low-level primitives from.
//!
//! Under `cfg(loom)` the lock types ([`VersionLock`](super::VersionLock),
//! [`SpinLock`](super::SpinLock), [`RwSpinLock`](super::RwSpinLock),
//! [`BitLock`](super::BitLock), [`Backoff`](super::Backoff)) are built on loom's atomics,
//! fences and scheduler hooks, so the loom model checker can explore their interleavings
//! (`RUSTFLAGS="--cfg loom" cargo test -p orrery-core --release sync::loom`).
//!
//! The epoch collector deliberately keeps the `std` primitives ([`epoch_atomic`]) even under
//! loom: it is one process-wide `static` with per-thread `thread_local!` records, which loom
//! cannot reset between model iterations. It is checked by the targeted stress tests in
//! `sync::tests` and by Miri instead.

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering, fence};

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering, fence};

/// Tells the CPU (or loom's scheduler) that we are busy-waiting.
#[inline(always)]
pub(crate) fn spin_loop() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::hint::spin_loop();
}

/// Gives the rest of the time slice to another thread.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(not(loom))]
    std::thread::yield_now();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Primitives of the epoch collector: always `std` (see the module docs).
pub(crate) mod epoch_atomic {
    pub(crate) use std::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, compiler_fence, fence,
    };
}
