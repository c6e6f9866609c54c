//! [`SpinLock`]: a test-and-test-and-set mutex with backoff; [`BitLock`]: the same lock on one
//! bit of a caller's `AtomicU64` (a lock bit inside a bucket or node header word).
//!
//! The protocol and word layout are documented on the type.

use super::Backoff;
use super::primitive::{AtomicBool, AtomicU64, Ordering};
use std::cell::UnsafeCell;
use std::fmt;
use std::ops::{Deref, DerefMut};

/// A mutual-exclusion spin lock protecting a `T` (test-and-test-and-set with backoff).
///
/// ```
/// use orrery_core::sync::SpinLock;
///
/// let lock = SpinLock::new(vec![1]);
/// lock.lock().push(2);
/// assert_eq!(*lock.lock(), [1, 2]);
/// assert!(lock.try_lock().is_some());
/// ```
///
/// # Protocol
///
/// Acquire: a `Relaxed` load until the lock looks free (waiting readers share the cache line
/// instead of bouncing it with writes), then one atomic read-modify-write that sets the bit
/// with `Acquire` ordering; on failure [`Backoff::spin`] / [`Backoff::snooze`]. Release: a
/// `Release` store (or `fetch_and` for a bit inside a shared word). The `Acquire`/`Release`
/// pair makes each critical section happen-before the next one.
///
/// Spin locks suit very short critical sections on a machine that is not oversubscribed;
/// after a few rounds the backoff yields the time slice, so a preempted holder gets the CPU
/// back quickly on an oversubscribed one.
pub struct SpinLock<T: ?Sized> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out `&mut T` to one thread at a time, so sharing the lock moves `T`
// between threads (needs `T: Send`) but never shares `&T` concurrently (no `T: Sync`).
unsafe impl<T: ?Sized + Send> Sync for SpinLock<T> {}
// SAFETY: owning the lock is owning the `T`.
unsafe impl<T: ?Sized + Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// An unlocked lock holding `value`.
    #[cfg(not(loom))]
    pub const fn new(value: T) -> SpinLock<T> {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// An unlocked lock holding `value`.
    #[cfg(loom)]
    pub fn new(value: T) -> SpinLock<T> {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Consumes the lock and returns the value.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> SpinLock<T> {
    /// Acquires the lock, spinning (then yielding) while another thread holds it.
    #[inline]
    pub fn lock(&self) -> SpinLockGuard<'_, T> {
        if let Some(guard) = self.try_lock() {
            return guard;
        }
        self.lock_slow()
    }

    #[cold]
    fn lock_slow(&self) -> SpinLockGuard<'_, T> {
        let backoff = Backoff::new();
        loop {
            // Test: wait on a shared (read-only) copy of the cache line.
            while self.locked.load(Ordering::Relaxed) {
                backoff.snooze();
            }
            // Test-and-set.
            if let Some(guard) = self.try_lock() {
                return guard;
            }
            backoff.spin();
        }
    }

    /// Acquires the lock if it is free, else `None`.
    #[inline]
    pub fn try_lock(&self) -> Option<SpinLockGuard<'_, T>> {
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            .then(|| SpinLockGuard { lock: self })
    }

    /// Whether some thread holds the lock now (a hint only).
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }

    /// The value, through exclusive access to the lock (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

impl<T: Default> Default for SpinLock<T> {
    fn default() -> SpinLock<T> {
        SpinLock::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for SpinLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("SpinLock");
        match self.try_lock() {
            Some(guard) => d.field("value", &&*guard),
            None => d.field("value", &format_args!("<locked>")),
        };
        d.finish()
    }
}

/// Exclusive access to the value of a [`SpinLock`]; unlocks on drop.
#[must_use = "the lock is released when the guard is dropped"]
pub struct SpinLockGuard<'a, T: ?Sized> {
    lock: &'a SpinLock<T>,
}

// SAFETY: sharing the guard shares `&T` between threads, which needs `T: Sync` (the derived
// impl would only ask `T: Send`). Sending the guard (derived: `T: Send`) is fine: a spin lock
// may be released by any thread.
unsafe impl<T: ?Sized + Sync> Sync for SpinLockGuard<'_, T> {}

impl<T: ?Sized> Deref for SpinLockGuard<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: this guard is the proof that the lock is held, so no other reference to
        // the value exists; the returned borrow is tied to the guard.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T: ?Sized> DerefMut for SpinLockGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the lock is held (see `deref`) and `&mut self` makes this borrow unique.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T: ?Sized> Drop for SpinLockGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for SpinLockGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// A test-and-test-and-set lock on one bit of a caller's `AtomicU64`, for lock bits packed in
/// a header word together with other fields (the other bits may be changed concurrently
/// with atomic read-modify-writes; this lock only ever flips its own bit).
///
/// ```
/// use orrery_core::sync::BitLock;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// let header = AtomicU64::new(0xff00);
/// BitLock::lock_bit(&header, 63);
/// assert!(!BitLock::try_lock_bit(&header, 63));
/// BitLock::unlock_bit(&header, 63);
/// assert_eq!(header.load(Ordering::Relaxed), 0xff00);
/// {
///     let _guard = BitLock::guard(&header, 0);
///     assert_eq!(header.load(Ordering::Relaxed), 0xff01);
/// }
/// assert_eq!(header.load(Ordering::Relaxed), 0xff00);
/// ```
///
/// `bit` must be below 64: a larger index is a programming error and panics.
#[derive(Debug)]
pub struct BitLock;

#[inline(always)]
fn bit_mask(bit: u32) -> u64 {
    assert!(bit < 64, "BitLock: bit index {bit} out of range 0..64");
    1u64 << bit
}

impl BitLock {
    /// Sets `bit` of `word` (`Acquire`), waiting (spin, then yield) while it is set.
    #[inline]
    pub fn lock_bit(word: &AtomicU64, bit: u32) {
        if !Self::try_lock_bit(word, bit) {
            Self::lock_bit_slow(word, bit_mask(bit));
        }
    }

    #[cold]
    fn lock_bit_slow(word: &AtomicU64, mask: u64) {
        let backoff = Backoff::new();
        loop {
            while word.load(Ordering::Relaxed) & mask != 0 {
                backoff.snooze();
            }
            if word.fetch_or(mask, Ordering::Acquire) & mask == 0 {
                return;
            }
            backoff.spin();
        }
    }

    /// Sets `bit` of `word` (`Acquire`) if it was clear; returns whether it did.
    #[inline]
    pub fn try_lock_bit(word: &AtomicU64, bit: u32) -> bool {
        let mask = bit_mask(bit);
        word.load(Ordering::Relaxed) & mask == 0
            && word.fetch_or(mask, Ordering::Acquire) & mask == 0
    }

    /// Clears `bit` of `word` (`Release`), leaving the other bits as they are. Only the
    /// holder of the bit lock may call it.
    #[inline]
    pub fn unlock_bit(word: &AtomicU64, bit: u32) {
        let mask = bit_mask(bit);
        let prev = word.fetch_and(!mask, Ordering::Release);
        debug_assert!(
            prev & mask != 0,
            "BitLock: unlock of a bit that was not locked"
        );
    }

    /// Whether `bit` of `word` is set now (a hint only).
    #[inline]
    pub fn is_locked(word: &AtomicU64, bit: u32) -> bool {
        word.load(Ordering::Relaxed) & bit_mask(bit) != 0
    }

    /// Locks `bit` of `word` and returns a guard that unlocks it on drop.
    #[inline]
    pub fn guard(word: &AtomicU64, bit: u32) -> BitLockGuard<'_> {
        Self::lock_bit(word, bit);
        BitLockGuard { word, bit }
    }

    /// Like [`guard`](BitLock::guard) but without waiting: `None` if the bit is set.
    #[inline]
    pub fn try_guard(word: &AtomicU64, bit: u32) -> Option<BitLockGuard<'_>> {
        Self::try_lock_bit(word, bit).then(|| BitLockGuard { word, bit })
    }
}

/// A held [`BitLock`]; clears the bit on drop.
#[must_use = "the bit lock is released when the guard is dropped"]
#[derive(Debug)]
pub struct BitLockGuard<'a> {
    word: &'a AtomicU64,
    bit: u32,
}

impl BitLockGuard<'_> {
    /// The word holding the lock bit (its other bits may be read or updated atomically).
    #[inline]
    pub fn word(&self) -> &AtomicU64 {
        self.word
    }
}

impl Drop for BitLockGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        BitLock::unlock_bit(self.word, self.bit);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn spinlock_single_thread() {
        let mut lock = SpinLock::new(5u32);
        {
            let mut g = lock.lock();
            *g += 1;
            assert!(lock.is_locked());
            assert!(lock.try_lock().is_none());
            assert!(format!("{lock:?}").contains("<locked>"));
        }
        assert!(!lock.is_locked());
        assert_eq!(*lock.try_lock().unwrap(), 6);
        *lock.get_mut() += 1;
        assert!(format!("{lock:?}").contains('7'));
        assert_eq!(lock.into_inner(), 7);
        let unsized_lock: &SpinLock<[u8]> = &SpinLock::new([1u8, 2, 3]);
        unsized_lock.lock()[0] = 9;
        assert_eq!(&*unsized_lock.lock(), &[9, 2, 3]);
    }

    #[test]
    fn bitlock_single_thread() {
        let w = AtomicU64::new(0b1010);
        assert!(BitLock::try_lock_bit(&w, 0));
        assert!(!BitLock::try_lock_bit(&w, 0));
        assert!(BitLock::is_locked(&w, 0));
        assert!(BitLock::is_locked(&w, 1));
        BitLock::unlock_bit(&w, 0);
        assert_eq!(w.load(Ordering::Relaxed), 0b1010);
        {
            let g = BitLock::guard(&w, 2);
            assert_eq!(g.word().load(Ordering::Relaxed), 0b1110);
            assert!(BitLock::try_guard(&w, 2).is_none());
            // Other bits stay usable while the lock bit is held.
            w.fetch_or(1 << 40, Ordering::Relaxed);
        }
        assert_eq!(w.load(Ordering::Relaxed), 0b1010 | 1 << 40);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn bitlock_rejects_bad_bit() {
        let w = AtomicU64::new(0);
        BitLock::lock_bit(&w, 64);
    }
}
