//! [`VersionLock`]: a version word that is both a writer lock and a seqlock for optimistic
//! readers (the "version" of Masstree's nodes, Wormhole's leaves, Cuckoo Trie's buckets).
//!
//! The protocol and word layout are documented on the type; the lock bit and counter are a
//! [`VersionField`] (the one implementation of packed version words, `field.rs`).

use super::Backoff;
use super::field::VersionField;
use super::primitive::{AtomicU64, Ordering};
use std::fmt;

/// Bit 0: a writer holds the lock.
pub const LOCKED_BIT: u64 = 1;
/// Bit 1: the protected object is obsolete (retired); optimistic readers must restart from
/// a parent.
pub const OBSOLETE_BIT: u64 = 2;
/// The counter step: the counter occupies bits 2..64.
pub const VERSION_STEP: u64 = 4;

/// The lock bit and the counter as a [`VersionField`] (the obsolete bit is another field of
/// the word, kept by every transition).
const FIELD: VersionField = VersionField::new(64, 0, 2, 62);

/// A lock word with a version counter: exclusive writers, optimistic (validated) readers.
/// The bit layout and the memory-ordering argument are below.
///
/// ```
/// use orrery_core::sync::VersionLock;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// let lock = VersionLock::new();
/// let data = [AtomicU64::new(1), AtomicU64::new(1)];
///
/// // Optimistic read: retry until validated.
/// let sum = loop {
///     let v = lock.read_begin();
///     let sum = data[0].load(Ordering::Relaxed) + data[1].load(Ordering::Relaxed);
///     if lock.validate(v) {
///         break sum;
///     }
/// };
/// assert_eq!(sum, 2);
///
/// // Upgrade a read snapshot to a write lock.
/// let v = lock.read_begin();
/// if let Some(_guard) = lock.try_upgrade(v) {
///     data[0].store(2, Ordering::Relaxed);
///     data[1].store(2, Ordering::Relaxed);
/// } // unlock: the version is bumped
/// assert!(!lock.validate(v));
/// ```
///
/// # Bit layout of the word (`AtomicU64`)
///
/// ```text
///  63                                                  2   1   0
/// +-----------------------------------------------------+---+---+
/// |        version counter (62 bits, wraps)              | O | L |
/// +-----------------------------------------------------+---+---+
///   L = LOCKED_BIT   (bit 0): a writer holds the lock
///   O = OBSOLETE_BIT (bit 1): the protected object was retired (unlinked); readers restart
///   counter           (bits 2..64): bumped by one at every write unlock
/// ```
///
/// # Protocol
///
/// The seqlock pattern (Boehm 2012, "Can seqlocks get along with programming language
/// memory models?"), as in Masstree's node versions (Mao et al. 2012, §4.4).
///
/// Reader:
/// 1. `v = read_begin()` — an `Acquire` load, repeated while `L` is set;
/// 2. read the protected fields, **only** through atomics (usually `Relaxed`), or copy them
///    into `MaybeUninit` without interpreting them;
/// 3. `validate(v)` — an `Acquire` fence, then a `Relaxed` reload of the word; the reads of
///    step 2 are usable only if the word is unchanged, otherwise restart.
///
/// Writer: `lock()` / `try_upgrade(v)` — a compare-and-swap that sets `L` (`Acquire`),
/// followed by a `Release` fence; write the fields; dropping the [`VersionWriteGuard`] stores
/// `counter + 1` with `L` cleared (`Release`).
///
/// Why a reader can trust a successful `validate`: suppose one of its step-2 loads read a
/// value stored by a writer after that writer's lock CAS. The writer's `Release` fence
/// precedes that store and the reader's `Acquire` fence follows that load, so the fences
/// synchronize: the lock CAS happens-before the reader's reload, which therefore sees the
/// word locked or bumped, never `v` (`v` was unlocked and the counter only grows). And if
/// `read_begin` saw the version stored by an unlock, its `Acquire` load synchronizes with that
/// `Release` store, so step 2 sees all writes of that critical section. On x86-64 both fences
/// compile to nothing: `validate` costs one plain load.
///
/// The 62-bit counter wraps only after 2^62 writes to one word, beyond any run.
#[repr(transparent)]
pub struct VersionLock {
    word: AtomicU64,
}

/// A snapshot of a [`VersionLock`] taken by a reader (never locked).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Version(u64);

impl Version {
    /// The raw word (bit layout in the [`VersionLock`] docs).
    #[inline]
    pub fn raw(self) -> u64 {
        self.0
    }

    /// The 62-bit version counter.
    #[inline]
    pub fn counter(self) -> u64 {
        self.0 / VERSION_STEP
    }

    /// Whether the object was marked obsolete when the snapshot was taken.
    #[inline]
    pub fn is_obsolete(self) -> bool {
        self.0 & OBSOLETE_BIT != 0
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Version")
            .field("counter", &self.counter())
            .field("obsolete", &self.is_obsolete())
            .finish()
    }
}

#[inline(always)]
fn is_locked(word: u64) -> bool {
    word & LOCKED_BIT != 0
}

impl VersionLock {
    /// An unlocked, non-obsolete lock with counter 0.
    #[cfg(not(loom))]
    pub const fn new() -> VersionLock {
        VersionLock {
            word: AtomicU64::new(0),
        }
    }

    /// An unlocked, non-obsolete lock with counter 0.
    #[cfg(loom)]
    pub fn new() -> VersionLock {
        VersionLock {
            word: AtomicU64::new(0),
        }
    }

    /// Starts an optimistic read: waits while a writer holds the lock and returns the
    /// version to [`validate`](VersionLock::validate) against (an `Acquire` load).
    #[inline]
    pub fn read_begin(&self) -> Version {
        Version(FIELD.read_begin(&self.word))
    }

    /// Starts an optimistic read if no writer holds the lock (an `Acquire` load), else `None`.
    #[inline]
    pub fn try_read(&self) -> Option<Version> {
        FIELD.try_read(&self.word).map(Version)
    }

    /// Whether no writer has locked the word since `v` was read: the reads made since
    /// [`read_begin`](VersionLock::read_begin) saw a consistent state. An `Acquire` fence
    /// orders those reads before the `Relaxed` reload of the word.
    #[inline]
    pub fn validate(&self, v: Version) -> bool {
        FIELD.validate(&self.word, v.0)
    }

    /// Whether a writer holds the lock now (a `Relaxed` load: a hint only).
    #[inline]
    pub fn is_locked(&self) -> bool {
        is_locked(self.word.load(Ordering::Relaxed))
    }

    /// Whether the object is marked obsolete (a `Relaxed` load: a hint only; readers rely on
    /// [`Version::is_obsolete`] of a validated snapshot).
    #[inline]
    pub fn is_obsolete(&self) -> bool {
        self.word.load(Ordering::Relaxed) & OBSOLETE_BIT != 0
    }

    /// The current version, locked or not (a `Relaxed` load, for diagnostics and tests).
    #[inline]
    pub fn load_raw(&self) -> u64 {
        self.word.load(Ordering::Relaxed)
    }

    /// Acquires the write lock, waiting (spin, then yield) while another writer holds it.
    #[inline]
    pub fn lock(&self) -> VersionWriteGuard<'_> {
        if let Some(guard) = self.try_lock() {
            return guard;
        }
        self.lock_slow()
    }

    #[cold]
    fn lock_slow(&self) -> VersionWriteGuard<'_> {
        let backoff = Backoff::new();
        loop {
            let word = self.word.load(Ordering::Relaxed);
            if !is_locked(word) {
                if let Some(guard) = self.try_upgrade(Version(word)) {
                    return guard;
                }
                backoff.spin();
            } else {
                backoff.snooze();
            }
        }
    }

    /// Acquires the write lock if no writer holds it, else `None`.
    #[inline]
    pub fn try_lock(&self) -> Option<VersionWriteGuard<'_>> {
        let word = self.word.load(Ordering::Relaxed);
        if is_locked(word) {
            return None;
        }
        self.try_upgrade(Version(word))
    }

    /// Upgrades a read snapshot to the write lock: succeeds only if the word is still `v`
    /// (nobody wrote since the snapshot), so what the reader saw is what the writer gets.
    #[inline]
    pub fn try_upgrade(&self, v: Version) -> Option<VersionWriteGuard<'_>> {
        // The CAS is followed by a `Release` fence that orders it before the critical
        // section's stores (see the type docs).
        FIELD.try_lock(&self.word, v.0).then(|| VersionWriteGuard {
            lock: self,
            locked: FIELD.locked(v.0),
        })
    }
}

impl Default for VersionLock {
    fn default() -> VersionLock {
        VersionLock::new()
    }
}

impl fmt::Debug for VersionLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = self.load_raw();
        f.debug_struct("VersionLock")
            .field("counter", &(word / VERSION_STEP))
            .field("locked", &is_locked(word))
            .field("obsolete", &(word & OBSOLETE_BIT != 0))
            .finish()
    }
}

/// Exclusive access to a [`VersionLock`]; dropping it unlocks and bumps the version counter,
/// which invalidates every reader snapshot taken before.
#[must_use = "the lock is released (and the version bumped) when the guard is dropped"]
pub struct VersionWriteGuard<'a> {
    lock: &'a VersionLock,
    /// The locked word, with the obsolete bit as marked; unlocking stores it with the
    /// counter advanced and the lock bit clear.
    locked: u64,
}

impl VersionWriteGuard<'_> {
    /// Marks the object obsolete: it is being retired, readers that validate a snapshot
    /// taken afterwards see [`Version::is_obsolete`] and restart elsewhere. Stored at unlock
    /// (readers cannot validate anything before that anyway).
    #[inline]
    pub fn mark_obsolete(&mut self) {
        self.locked |= OBSOLETE_BIT;
    }

    /// The version readers will see once this guard is dropped.
    #[inline]
    pub fn next_version(&self) -> Version {
        Version(FIELD.unlocked(self.locked))
    }

    /// The lock this guard holds.
    #[inline]
    pub fn lock(&self) -> &VersionLock {
        self.lock
    }
}

impl Drop for VersionWriteGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // Release: the critical section's stores happen-before a reader's `Acquire` load of
        // the new version.
        FIELD.write_end(&self.lock.word, self.locked);
    }
}

impl fmt::Debug for VersionWriteGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VersionWriteGuard")
            .field("next_version", &self.next_version())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn single_thread_protocol() {
        let lock = VersionLock::new();
        let v0 = lock.read_begin();
        assert_eq!(v0.counter(), 0);
        assert!(!v0.is_obsolete());
        assert!(lock.validate(v0));
        assert_eq!(lock.try_read(), Some(v0));
        {
            let g = lock.try_upgrade(v0).expect("upgrade of a fresh snapshot");
            assert!(lock.is_locked());
            assert!(lock.try_read().is_none());
            assert!(lock.try_lock().is_none());
            assert!(lock.try_upgrade(v0).is_none());
            assert!(!lock.validate(v0));
            assert_eq!(g.next_version().counter(), 1);
        }
        assert!(!lock.is_locked());
        assert!(!lock.validate(v0));
        assert!(
            lock.try_upgrade(v0).is_none(),
            "stale snapshot must not upgrade"
        );
        let v1 = lock.read_begin();
        assert_eq!(v1.counter(), 1);
        {
            let mut g = lock.lock();
            g.mark_obsolete();
        }
        let v2 = lock.read_begin();
        assert!(v2.is_obsolete());
        assert!(lock.is_obsolete());
        assert_eq!(v2.counter(), 2);
        // Obsolete survives further writes.
        drop(lock.try_lock().unwrap());
        let v3 = lock.try_read().unwrap();
        assert!(v3.is_obsolete());
        assert_eq!(v3.counter(), 3);
        assert!(format!("{lock:?}").contains("obsolete: true"));
    }
}
