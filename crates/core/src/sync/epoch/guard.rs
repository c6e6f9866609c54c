//! The public face of the collector: [`pin`], [`Guard`], [`Handle`].

use super::deferred::Deferred;
use super::global::GLOBAL;
use super::participant::Participant;
use std::fmt;
use std::ptr;

thread_local! {
    /// This thread's handle, registered at the first [`pin`] and released (its open bag
    /// queued globally) when the thread exits.
    static HANDLE: Handle = Handle::register();
}

/// Pins the current thread: while the returned [`Guard`] lives, no object retired (deferred)
/// after this call is destroyed, so shared pointers loaded under the guard stay valid.
///
/// Works on any thread without registration (the thread-local record is created at the
/// first call), nests (an inner guard is a counter increment), and also works while the
/// thread's thread-locals are being destroyed: then it pins a temporary record that is
/// released when the guard drops.
///
/// ```
/// use orrery_core::sync;
/// use std::sync::atomic::{AtomicPtr, Ordering};
///
/// let shared = AtomicPtr::new(Box::into_raw(Box::new(1u64)));
/// {
///     let guard = sync::pin();
///     let old = shared.swap(Box::into_raw(Box::new(2)), Ordering::AcqRel);
///     // SAFETY: `old` is unlinked; readers that still see it are pinned.
///     unsafe { guard.defer_destroy(old) };
/// }
/// // Single-threaded cleanup: nobody else can hold the pointer.
/// // SAFETY: the last pointer, never shared again.
/// drop(unsafe { Box::from_raw(shared.load(Ordering::Relaxed)) });
/// ```
#[inline]
pub fn pin() -> Guard {
    HANDLE
        .try_with(|handle| handle.pin())
        .unwrap_or_else(|_| pin_unregistered())
}

/// [`pin`] after this thread's thread-local handle was destroyed: pins a temporary record.
#[cold]
fn pin_unregistered() -> Guard {
    // The handle is dropped at once; the guard keeps the record until it is dropped.
    Handle::register().pin()
}

/// Whether the current thread holds a guard of its thread-local handle.
pub fn is_pinned() -> bool {
    HANDLE.try_with(Handle::is_pinned).unwrap_or(false)
}

/// A handle on this thread's participant record (the same record [`pin`] uses), to pin
/// without the thread-local lookup. Falls back to a fresh record while thread-locals are
/// being destroyed.
pub fn handle() -> Handle {
    HANDLE
        .try_with(Handle::clone)
        .unwrap_or_else(|_| Handle::register())
}

/// Waits for a grace period: returns once every guard that existed (on any thread) when it
/// was called has been dropped. For RCU-style updates that must not free but reuse the old
/// version (publish the new version, `synchronize`, then update the old one in place).
///
/// A [`GracePeriod`](super::GracePeriod) started and waited for at once: one barrier and
/// one scan of the participant records, then polling of the records that were pinned;
/// everything the old readers did happens-before `synchronize` returns (argument in
/// `sync/epoch/grace.rs`). Use a `GracePeriod` directly to start the grace period at the
/// update and check it later without waiting.
///
/// # Panics
/// If the calling thread is pinned through [`pin`] or [`handle`] (it would wait for itself
/// forever). Do not call it while holding a guard of a separately registered [`Handle`]
/// either: that deadlocks the same way.
pub fn synchronize() {
    assert!(
        !is_pinned(),
        "sync::epoch::synchronize called by a pinned thread (it would wait for itself)"
    );
    let mut grace = super::GracePeriod::new();
    grace.start();
    grace.wait();
}

/// Drives reclamation until `done()` holds or `timeout` has passed: seals this thread's open
/// bag and runs collection steps (each tries to advance the epoch and runs expired bags),
/// backing off between them; returns whether `done()` held. For tests and quiescent points
/// (shutdown, leak checks) that must see what was retired go, within a bound in time: other
/// threads' critical sections can delay it, never make it hang.
///
/// ```
/// use orrery_core::sync::epoch;
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::time::Duration;
///
/// let ran = Arc::new(AtomicBool::new(false));
/// let r = ran.clone();
/// epoch::pin().defer(move || r.store(true, Ordering::Relaxed));
/// assert!(epoch::flush_until(Duration::from_secs(60), || ran.load(Ordering::Relaxed)));
/// ```
///
/// # Panics
/// If the calling thread is pinned through [`pin`] or [`handle`]: its own critical section
/// would hold the epoch back.
pub fn flush_until(timeout: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    assert!(
        !is_pinned(),
        "sync::epoch::flush_until called by a pinned thread (it would hold the epoch back)"
    );
    crate::sync::wait_until(timeout, || {
        if done() {
            return true;
        }
        pin().flush();
        false
    })
}

/// The calling thread's own participant record (the one [`pin`] uses), if its thread-local
/// handle exists.
pub(super) fn current_record() -> Option<&'static Participant> {
    HANDLE
        .try_with(|handle| {
            // SAFETY: records are leaked and never freed, so the reference is `'static`.
            unsafe { &*handle.local }
        })
        .ok()
}

/// The global epoch (for diagnostics and tests).
pub fn global_epoch() -> u64 {
    GLOBAL.epoch_relaxed()
}

/// How outermost pins order their pinned state before the critical section's loads (fixed
/// once per process, when the collector is first used).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PinBarrier {
    /// Each outermost pin issues a full fence (a locked `xchg` on x86): the default and
    /// portable path, used unless the environment variable
    /// [`ASYMMETRIC_ENV`](super::ASYMMETRIC_ENV) asks for the asymmetric one and membarrier is
    /// available (Linux, recent kernel, no seccomp filter, not Miri or loom), or when
    /// [`FALLBACK_ENV`](super::FALLBACK_ENV) forces it.
    Fence,
    /// Each outermost pin issues only a compiler fence; the rare epoch advancer issues
    /// `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, a full fence on every running thread
    /// of the process (Linux).
    Membarrier,
}

/// The pin barrier this process uses (chooses it if no thread has pinned yet).
pub fn pin_barrier() -> PinBarrier {
    if GLOBAL.choose_mode() {
        PinBarrier::Membarrier
    } else {
        PinBarrier::Fence
    }
}

/// How many deferred functions wait in sealed bags for their epoch to expire, on all
/// threads (a snapshot, for diagnostics and tests; the open bags of live threads, at most
/// one bag each, are not counted).
pub fn pending_deferred() -> usize {
    GLOBAL.pending()
}

/// The epochs of the records pinned right now (for test failure reports).
#[cfg(all(test, not(loom)))]
pub(crate) fn pinned_epochs() -> Vec<u64> {
    let mut epochs = Vec::new();
    GLOBAL.for_each_record(|record| {
        let state = record
            .state
            .load(crate::sync::primitive::epoch_atomic::Ordering::Relaxed);
        if state & super::participant::PINNED != 0 {
            epochs.push(state >> 1);
        }
    });
    epochs
}

/// How many participant records the registry holds, used and free (for diagnostics and
/// tests: records of exited threads are reused, so this stays near the peak number of
/// threads that used the collector at once).
pub fn registry_len() -> usize {
    GLOBAL.registry_len()
}

/// A guard that protects nothing: deferred functions given to it run at once.
///
/// # Safety
/// Use it only where no other thread can access the objects it retires (a structure's
/// `Drop` with `&mut self`, single-threaded construction): a deferred destruction runs
/// immediately, not after concurrent readers are done.
pub unsafe fn unprotected() -> Guard {
    Guard { local: ptr::null() }
}

/// A pinned critical section: objects retired by any thread after this guard was created are
/// not destroyed until it (and every other guard that old) is dropped. `!Send`: a guard
/// belongs to the thread that pinned.
///
/// Guards nest: an inner guard costs a counter increment. Drop order among the guards of a
/// thread does not matter.
#[must_use = "a guard protects only while it is alive"]
pub struct Guard {
    /// The pinned record; null for [`unprotected`]. Raw, so the guard is `!Send + !Sync`.
    local: *const Participant,
}

impl Guard {
    #[inline(always)]
    fn participant(&self) -> Option<&Participant> {
        // SAFETY: a non-null `local` points to a record that is never freed, and this guard
        // (counted in its `guard_count`) keeps this thread its owner.
        unsafe { self.local.as_ref() }
    }

    /// Runs `f` once no guard that was pinned before this call remains (immediately for an
    /// [`unprotected`] guard). `f` may run on any thread.
    #[inline]
    pub fn defer<F: FnOnce() + Send + 'static>(&self, f: F) {
        // SAFETY: `F: Send + 'static` makes running it later on any thread sound.
        unsafe { self.defer_unchecked(f) }
    }

    /// Like [`defer`](Guard::defer), without the `Send + 'static` bounds.
    ///
    /// # Safety
    /// - Running `f` on another thread, at any later time, must be sound: what it captures
    ///   must be safe to send, and must still be valid (not borrowed data that may die first).
    /// - It is typically used to free memory that concurrent readers pinned before the call
    ///   may still be reading: the object must already be unreachable for readers that pin
    ///   after this call.
    #[inline]
    pub unsafe fn defer_unchecked<F: FnOnce()>(&self, f: F) {
        match self.participant() {
            Some(p) => p.defer(Deferred::new(f)),
            None => f(),
        }
    }

    /// Drops `Box::from_raw(ptr)` once no guard pinned before this call remains.
    ///
    /// # Safety
    /// - `ptr` came from `Box::<T>::into_raw` (or equivalent) and is destroyed by nobody else;
    /// - the object is no longer reachable for threads that pin after this call (it was
    ///   unlinked before);
    /// - dropping the `T` on another thread is sound (`T: Send`, or nothing it owns cares).
    #[inline]
    pub unsafe fn defer_destroy<T>(&self, ptr: *mut T) {
        let destroy = move || {
            // SAFETY: by the caller's contract `ptr` is a unique `Box` pointer; this runs
            // once, after the readers that could still see it are gone.
            drop(unsafe { Box::from_raw(ptr) });
        };
        // SAFETY: forwarded to the caller's contract (destroying `T` elsewhere is sound).
        unsafe { self.defer_unchecked(destroy) };
    }

    /// Queues this thread's open bag of deferred functions globally (instead of waiting for
    /// it to fill) and runs a collection step: tries to advance the epoch and runs expired
    /// bags. Reclamation still waits for the epoch to advance twice.
    pub fn flush(&self) {
        if let Some(p) = self.participant() {
            p.flush();
        }
    }

    /// Whether this guard protects anything (false for [`unprotected`]).
    pub fn is_protected(&self) -> bool {
        !self.local.is_null()
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        if let Some(p) = self.participant() {
            p.unpin();
        }
    }
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("protected", &self.is_protected())
            .finish()
    }
}

/// A reference to a participant record, to pin without the thread-local lookup of [`pin`]
/// (store it where the hot loop can reach it). `!Send`: it belongs to the thread that made
/// it. [`handle`] shares the thread's own record; [`Handle::register`] makes a separate one.
pub struct Handle {
    local: *const Participant,
}

impl Handle {
    /// Registers a new participant record (reusing a free one) owned by this handle and its
    /// clones. The record is released when the last clone and its last guard are dropped.
    pub fn register() -> Handle {
        let record = GLOBAL.acquire_participant();
        record.add_handle();
        Handle {
            local: ptr::from_ref(record),
        }
    }

    #[inline(always)]
    fn participant(&self) -> &Participant {
        // SAFETY: records are never freed, and this handle (counted in `handle_count`)
        // keeps this thread its owner.
        unsafe { &*self.local }
    }

    /// Pins this handle's record (see [`pin`]).
    #[inline]
    pub fn pin(&self) -> Guard {
        let collect = self.participant().pin();
        let guard = Guard { local: self.local };
        if collect {
            self.participant().collect_step();
        }
        guard
    }

    /// Whether a guard of this handle's record is alive.
    #[inline]
    pub fn is_pinned(&self) -> bool {
        self.participant().is_pinned()
    }
}

impl Clone for Handle {
    fn clone(&self) -> Handle {
        self.participant().add_handle();
        Handle { local: self.local }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.participant().remove_handle();
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("pinned", &self.is_pinned())
            .finish()
    }
}
