//! [`BackgroundThread`]: the lifecycle of a structure's helper thread — started lazily,
//! parked while idle, woken by the structure, stopped and joined when the structure drops.
//!
//! The protocol is in [`BackgroundThread`]'s docs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{JoinHandle, Thread};

/// A lazily started, parkable helper thread that is joined on shutdown.
///
/// Two pre-faulters use it: the slab chunk [`Populator`](super::Populator) and Mercury's
/// successor pre-fault thread. Both follow the same protocol:
///
/// - The structure calls [`start`](BackgroundThread::start) with the thread's body when it
///   first needs the thread (not at construction: small structures never get one). Once
///   [`shutdown`](BackgroundThread::shutdown) began, `start` does nothing.
/// - The body loops: it exits when [`is_stopping`](BackgroundThread::is_stopping), does a
///   bounded piece of work if there is one, and otherwise calls `std::thread::park()`. A
///   [`wake`](BackgroundThread::wake) (`unpark`) made between the body's look for work and
///   its `park` leaves a token, so no wake-up is lost.
/// - The structure's `Drop` calls `shutdown`: it sets the stop flag (`Release`; the body
///   reads it with `Acquire`), unparks the thread and joins it, so the thread never outlives
///   the structure's handle. A piece of work in progress ends first.
///
/// The body must reach the structure through something the shutdown cannot invalidate: an
/// `Arc` of the shared part (the populator), or a `Weak` upgraded for one piece of work at a
/// time (Mercury). It must never drop the structure's handle itself (the join would wait on
/// its own thread).
#[derive(Debug)]
pub struct BackgroundThread {
    /// The thread's name.
    name: &'static str,
    /// Set by `shutdown`: the body exits at its next look, and `start` does nothing.
    stop: AtomicBool,
    /// The thread, once started (for `unpark` without a lock).
    thread: OnceLock<Thread>,
    /// Its join handle, taken by `shutdown`.
    handle: Mutex<Option<JoinHandle<()>>>,
    /// Set by the thread after its body returned.
    exited: Arc<AtomicBool>,
}

impl BackgroundThread {
    /// A helper thread named `name`, not started.
    pub fn new(name: &'static str) -> BackgroundThread {
        BackgroundThread {
            name,
            stop: AtomicBool::new(false),
            thread: OnceLock::new(),
            handle: Mutex::new(None),
            exited: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Starts the thread running `body`, unless it was started already or the shutdown
    /// began. Returns whether a thread was started (now or before). If the OS refuses a thread,
    /// nothing happens and `false` is returned: the structure does the work itself.
    pub fn start(&self, body: impl FnOnce() + Send + 'static) -> bool {
        if self.thread.get().is_some() {
            return true;
        }
        let mut handle = match self.handle.lock() {
            Ok(h) => h,
            Err(poisoned) => poisoned.into_inner(),
        };
        if self.thread.get().is_some() {
            return true;
        }
        if self.is_stopping() {
            return false;
        }
        let exited = Arc::clone(&self.exited);
        let spawned = std::thread::Builder::new()
            .name(self.name.into())
            .spawn(move || {
                body();
                exited.store(true, Ordering::Release);
            });
        match spawned {
            Ok(h) => {
                let _ = self.thread.set(h.thread().clone());
                *handle = Some(h);
                true
            }
            Err(_) => false,
        }
    }

    /// Wakes the thread if it was started (one `futex` wake if it is parked; a token for its
    /// next `park` otherwise).
    #[inline]
    pub fn wake(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }

    /// Whether the thread was started.
    #[inline]
    pub fn is_started(&self) -> bool {
        self.thread.get().is_some()
    }

    /// Whether the shutdown began: the body should return.
    #[inline]
    pub fn is_stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// A flag the thread sets after its body returned (tests check that a drop joined it).
    pub fn exited_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.exited)
    }

    /// Stops the thread and waits for it to exit; later [`start`](Self::start)s do nothing.
    /// Must not be called from the thread itself.
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Release);
        let handle = match self.handle.lock() {
            Ok(mut h) => h.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(h) = handle {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Started once, woken to do one piece of work per wake, joined by the shutdown, never
    /// started again.
    #[test]
    fn alloc_background_lifecycle() {
        let bg = Arc::new(BackgroundThread::new("orrery-test-bg"));
        let work = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        assert!(!bg.is_started());
        let body = {
            let (bg, work, done) = (Arc::clone(&bg), Arc::clone(&work), Arc::clone(&done));
            move || {
                while !bg.is_stopping() {
                    if done.load(Ordering::Acquire) < work.load(Ordering::Acquire) {
                        done.fetch_add(1, Ordering::AcqRel);
                    } else {
                        std::thread::park();
                    }
                }
            }
        };
        assert!(bg.start(body));
        assert!(bg.is_started());
        assert!(bg.start(|| panic!("never runs: started already")));
        let rounds = if cfg!(miri) { 3 } else { 100 };
        for i in 1..=rounds {
            work.store(i, Ordering::Release);
            bg.wake();
            crate::testing::wait::wait_for("the background thread's work", || {
                done.load(Ordering::Acquire) >= i
            });
            assert_eq!(done.load(Ordering::Acquire), i);
        }
        let exited = bg.exited_flag();
        assert!(!exited.load(Ordering::Acquire));
        bg.shutdown();
        assert!(exited.load(Ordering::Acquire), "the shutdown joins");
        // Started once: the body passed here is dropped, never run.
        assert!(bg.start(|| panic!("never runs: started once, stopped")));
        // The body's `Arc` went with the thread.
        assert_eq!(Arc::strong_count(&bg), 1);
    }

    /// A shutdown without a thread just blocks later starts.
    #[test]
    fn alloc_background_shutdown_before_start() {
        let bg = BackgroundThread::new("orrery-test-bg");
        bg.wake();
        bg.shutdown();
        assert!(!bg.start(|| panic!("never runs")));
        assert!(!bg.is_started());
        assert!(!bg.exited_flag().load(Ordering::Acquire));
    }
}
