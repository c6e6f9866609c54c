//! [`RwSpinLock`]: a writer-preferring reader-writer spin lock.
//!
//! The protocol and word layout are documented on the type.

use super::Backoff;
use super::primitive::{AtomicU64, Ordering};
use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

const WRITER: u64 = 1;
const WAITER_UNIT: u64 = 2;
const WAITERS_MASK: u64 = 0xffff_fffe;
const READER_UNIT: u64 = 1 << 32;
const READERS_MASK: u64 = !0xffff_ffff;

/// A reader-writer spin lock: many readers or one writer; waiting writers block new readers.
///
/// ```
/// use orrery_core::sync::RwSpinLock;
///
/// let lock = RwSpinLock::new(1);
/// {
///     let a = lock.read();
///     let b = lock.read(); // readers share
///     assert_eq!(*a + *b, 2);
///     assert!(lock.try_write().is_none());
/// }
/// *lock.write() += 1;
/// assert_eq!(*lock.read(), 2);
/// ```
///
/// # State word (`AtomicU64`)
///
/// ```text
///  63                        32 31                         1   0
/// +----------------------------+----------------------------+---+
/// |   readers holding (32 bits) |  writers waiting (31 bits)  | W |
/// +----------------------------+----------------------------+---+
///   W (bit 0): a writer holds the lock
/// ```
///
/// # Protocol
///
/// - A reader enters by a compare-and-swap adding one reader (`Acquire`), allowed only while
///   `W` is clear **and no writer is waiting**: a waiting writer stops new readers, so a
///   stream of readers cannot starve writers (writer preference). It leaves with a
///   `fetch_sub` (`Release`).
/// - A writer first tries a direct compare-and-swap from "nobody" to `W`. Otherwise it
///   registers as waiting (`fetch_add` of one waiter), waits for the holders to leave, and
///   takes the lock with one compare-and-swap that sets `W` and removes its waiter count in
///   the same step (`Acquire`). It leaves with a `fetch_sub` of `W` (`Release`), which keeps
///   the counts other threads changed meanwhile.
/// - `Acquire` on entry and `Release` on exit make every write critical section
///   happen-before the critical sections that enter after it.
///
/// Readers, not writers, can starve under a continuous stream of writers; this lock is meant
/// for read-mostly data with short critical sections.
pub struct RwSpinLock<T: ?Sized> {
    state: AtomicU64,
    value: UnsafeCell<T>,
}

// SAFETY: readers on several threads share `&T` (needs `T: Sync`); a writer gets `&mut T` on
// any thread, which moves `T` between threads (needs `T: Send`).
unsafe impl<T: ?Sized + Send + Sync> Sync for RwSpinLock<T> {}
// SAFETY: owning the lock is owning the `T`.
unsafe impl<T: ?Sized + Send> Send for RwSpinLock<T> {}

impl<T> RwSpinLock<T> {
    /// An unlocked lock holding `value`.
    #[cfg(not(loom))]
    pub const fn new(value: T) -> RwSpinLock<T> {
        RwSpinLock {
            state: AtomicU64::new(0),
            value: UnsafeCell::new(value),
        }
    }

    /// An unlocked lock holding `value`.
    #[cfg(loom)]
    pub fn new(value: T) -> RwSpinLock<T> {
        RwSpinLock {
            state: AtomicU64::new(0),
            value: UnsafeCell::new(value),
        }
    }

    /// Consumes the lock and returns the value.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> RwSpinLock<T> {
    /// Acquires shared access, waiting while a writer holds or waits for the lock.
    #[inline]
    pub fn read(&self) -> RwSpinReadGuard<'_, T> {
        if let Some(guard) = self.try_read() {
            return guard;
        }
        self.read_slow()
    }

    #[cold]
    fn read_slow(&self) -> RwSpinReadGuard<'_, T> {
        let backoff = Backoff::new();
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if !Self::readers_may_enter(s) {
                backoff.snooze();
                continue;
            }
            if self
                .state
                .compare_exchange_weak(s, s + READER_UNIT, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return RwSpinReadGuard { lock: self };
            }
            backoff.spin();
        }
    }

    #[inline(always)]
    fn readers_may_enter(s: u64) -> bool {
        s & (WRITER | WAITERS_MASK) == 0 && s & READERS_MASK != READERS_MASK
    }

    /// Acquires shared access if no writer holds or waits for the lock, else `None`.
    #[inline]
    pub fn try_read(&self) -> Option<RwSpinReadGuard<'_, T>> {
        let mut s = self.state.load(Ordering::Relaxed);
        while Self::readers_may_enter(s) {
            match self.state.compare_exchange_weak(
                s,
                s + READER_UNIT,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(RwSpinReadGuard { lock: self }),
                Err(now) => s = now,
            }
        }
        None
    }

    /// Acquires exclusive access, waiting for current holders; while it waits, new readers
    /// are held back.
    #[inline]
    pub fn write(&self) -> RwSpinWriteGuard<'_, T> {
        if let Some(guard) = self.try_write() {
            return guard;
        }
        self.write_slow()
    }

    #[cold]
    fn write_slow(&self) -> RwSpinWriteGuard<'_, T> {
        let prev = self.state.fetch_add(WAITER_UNIT, Ordering::Relaxed);
        debug_assert!(
            prev & WAITERS_MASK != WAITERS_MASK,
            "RwSpinLock: waiter overflow"
        );
        let backoff = Backoff::new();
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s & (WRITER | READERS_MASK) != 0 {
                backoff.snooze();
                continue;
            }
            // Take the lock and drop our waiter count in one step.
            if self
                .state
                .compare_exchange_weak(
                    s,
                    (s - WAITER_UNIT) | WRITER,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return RwSpinWriteGuard { lock: self };
            }
            backoff.spin();
        }
    }

    /// Acquires exclusive access if nobody holds the lock, else `None`. (It may overtake
    /// waiting writers: it never waits, so it cannot starve anyone.)
    #[inline]
    pub fn try_write(&self) -> Option<RwSpinWriteGuard<'_, T>> {
        let mut s = self.state.load(Ordering::Relaxed);
        while s & (WRITER | READERS_MASK) == 0 {
            match self.state.compare_exchange_weak(
                s,
                s | WRITER,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(RwSpinWriteGuard { lock: self }),
                Err(now) => s = now,
            }
        }
        None
    }

    /// Whether a writer holds the lock now (a hint only).
    #[inline]
    pub fn is_write_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) & WRITER != 0
    }

    /// How many readers hold the lock now (a hint only).
    #[inline]
    pub fn reader_count(&self) -> u32 {
        (self.state.load(Ordering::Relaxed) >> 32) as u32
    }

    /// The value, through exclusive access to the lock (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

impl<T: Default> Default for RwSpinLock<T> {
    fn default() -> RwSpinLock<T> {
        RwSpinLock::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwSpinLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RwSpinLock");
        match self.try_read() {
            Some(guard) => d.field("value", &&*guard),
            None => d.field("value", &format_args!("<locked>")),
        };
        d.finish()
    }
}

/// Shared access to the value of a [`RwSpinLock`]; leaves on drop.
#[must_use = "the read lock is released when the guard is dropped"]
pub struct RwSpinReadGuard<'a, T: ?Sized> {
    lock: &'a RwSpinLock<T>,
}

impl<T: ?Sized> Deref for RwSpinReadGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard counts as a reader, so no writer holds the lock (no `&mut T`
        // exists) until the guard is dropped; the borrow is tied to the guard.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T: ?Sized> Drop for RwSpinReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.state.fetch_sub(READER_UNIT, Ordering::Release);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwSpinReadGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Exclusive access to the value of a [`RwSpinLock`]; unlocks on drop.
#[must_use = "the write lock is released when the guard is dropped"]
pub struct RwSpinWriteGuard<'a, T: ?Sized> {
    lock: &'a RwSpinLock<T>,
}

// SAFETY: sharing the write guard shares `&T`, which needs `T: Sync` (the derived impl would
// accept `T: Send + Sync` too, but state it explicitly next to the read guard's reasoning).
unsafe impl<T: ?Sized + Sync> Sync for RwSpinWriteGuard<'_, T> {}

impl<T: ?Sized> Deref for RwSpinWriteGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the write lock, so no other reference to the value
        // exists; the borrow is tied to the guard.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T: ?Sized> DerefMut for RwSpinWriteGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the write lock is held (see `deref`) and `&mut self` makes this borrow
        // unique.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T: ?Sized> Drop for RwSpinWriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.state.fetch_sub(WRITER, Ordering::Release);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for RwSpinWriteGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn rwlock_single_thread() {
        let mut lock = RwSpinLock::new(String::from("a"));
        {
            let r1 = lock.read();
            let r2 = lock.try_read().expect("readers share");
            assert_eq!(lock.reader_count(), 2);
            assert!(lock.try_write().is_none());
            assert_eq!(*r1, *r2);
        }
        assert_eq!(lock.reader_count(), 0);
        {
            let mut w = lock.write();
            w.push('b');
            assert!(lock.is_write_locked());
            assert!(lock.try_read().is_none());
            assert!(lock.try_write().is_none());
            assert!(format!("{lock:?}").contains("<locked>"));
        }
        assert!(!lock.is_write_locked());
        lock.get_mut().push('c');
        assert_eq!(&*lock.read(), "abc");
        assert_eq!(lock.into_inner(), "abc");
    }

    #[test]
    fn waiting_writer_blocks_new_readers() {
        let lock = RwSpinLock::new(0u32);
        let r = lock.read();
        // Simulate a writer that registered as waiting.
        lock.state.fetch_add(WAITER_UNIT, Ordering::Relaxed);
        assert!(lock.try_read().is_none(), "writer preference");
        assert!(lock.try_write().is_none(), "reader still inside");
        drop(r);
        lock.state.fetch_sub(WAITER_UNIT, Ordering::Relaxed);
        assert!(lock.try_read().is_some());
    }
}
