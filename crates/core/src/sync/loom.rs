//! Loom models of the lock types (opt-in):
//! `RUSTFLAGS="--cfg loom" cargo test -p orrery-core --release sync::loom`.
//!
//! Each model's data lives in a loom `UnsafeCell`, so loom reports a causality violation if
//! a lock's acquire/release orderings fail to order two critical sections, besides the
//! assertions on the values.

use crate::sync::{BitLock, RwSpinLock, SpinLock, VersionLock};
use ::loom::cell::UnsafeCell;
use ::loom::sync::Arc;
use ::loom::sync::atomic::{AtomicU64, Ordering};
use ::loom::thread;

/// A `Sync` wrapper for data the test protects with the lock under test.
struct Shared(UnsafeCell<u64>);
// SAFETY: only accessed under the lock being modelled.
unsafe impl Sync for Shared {}
// SAFETY: a plain integer.
unsafe impl Send for Shared {}

impl Shared {
    fn new() -> Shared {
        Shared(UnsafeCell::new(0))
    }
    /// # Safety
    /// The caller holds the lock that protects `self`.
    unsafe fn increment(&self) {
        // SAFETY: per the contract, nobody else accesses the cell.
        self.0.with_mut(|p| unsafe { *p += 1 });
    }
    /// # Safety
    /// The caller holds the lock that protects `self` (shared access suffices).
    unsafe fn get(&self) -> u64 {
        // SAFETY: per the contract, no writer accesses the cell.
        self.0.with(|p| unsafe { *p })
    }
}

#[test]
fn spinlock_orders_critical_sections() {
    ::loom::model(|| {
        let lock = Arc::new(SpinLock::new(()));
        let data = Arc::new(Shared::new());
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let (lock, data) = (lock.clone(), data.clone());
                thread::spawn(move || {
                    let _g = lock.lock();
                    // SAFETY: the spin lock is held.
                    unsafe { data.increment() };
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        let _g = lock.lock();
        // SAFETY: the spin lock is held.
        assert_eq!(unsafe { data.get() }, 2);
    });
}

#[test]
fn bitlock_orders_critical_sections() {
    ::loom::model(|| {
        let word = Arc::new(AtomicU64::new(0));
        let data = Arc::new(Shared::new());
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let (word, data) = (word.clone(), data.clone());
                thread::spawn(move || {
                    let _g = BitLock::guard(&word, 3);
                    // SAFETY: bit 3 is held.
                    unsafe { data.increment() };
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        let _g = BitLock::guard(&word, 3);
        // SAFETY: bit 3 is held.
        assert_eq!(unsafe { data.get() }, 2);
    });
}

#[test]
fn rwlock_writer_and_reader() {
    ::loom::model(|| {
        let lock = Arc::new(RwSpinLock::new(()));
        let data = Arc::new(Shared::new());
        let writer = {
            let (lock, data) = (lock.clone(), data.clone());
            thread::spawn(move || {
                let _g = lock.write();
                // SAFETY: the write lock is held.
                unsafe { data.increment() };
            })
        };
        {
            let _g = lock.read();
            // SAFETY: a read lock is held.
            let v = unsafe { data.get() };
            assert!(v <= 1);
        }
        writer.join().unwrap();
        let _g = lock.read();
        // SAFETY: a read lock is held.
        assert_eq!(unsafe { data.get() }, 1);
    });
}

#[test]
fn rwlock_two_writers() {
    ::loom::model(|| {
        let lock = Arc::new(RwSpinLock::new(()));
        let data = Arc::new(Shared::new());
        let writer = {
            let (lock, data) = (lock.clone(), data.clone());
            thread::spawn(move || {
                let _g = lock.write();
                // SAFETY: the write lock is held.
                unsafe { data.increment() };
            })
        };
        {
            let _g = lock.write();
            // SAFETY: the write lock is held.
            unsafe { data.increment() };
        }
        writer.join().unwrap();
        let _g = lock.read();
        // SAFETY: a read lock is held.
        assert_eq!(unsafe { data.get() }, 2);
    });
}

#[test]
fn version_lock_writers_exclude_each_other() {
    ::loom::model(|| {
        let lock = Arc::new(VersionLock::new());
        let data = Arc::new(Shared::new());
        let ts: Vec<_> = (0..2)
            .map(|i| {
                let (lock, data) = (lock.clone(), data.clone());
                thread::spawn(move || {
                    let _g = if i == 0 {
                        lock.lock()
                    } else {
                        loop {
                            if let Some(g) = lock.try_upgrade(lock.read_begin()) {
                                break g;
                            }
                            thread::yield_now();
                        }
                    };
                    // SAFETY: the version lock is held.
                    unsafe { data.increment() };
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        let _g = lock.lock();
        // SAFETY: the version lock is held.
        assert_eq!(unsafe { data.get() }, 2);
        assert_eq!(lock.load_raw() & !1, 2 * crate::sync::VERSION_STEP);
    });
}

/// The seqlock read: a validated snapshot of two words is never torn and matches its version.
#[test]
fn version_lock_validated_reads_are_consistent() {
    ::loom::model(|| {
        let lock = Arc::new(VersionLock::new());
        let words = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let writer = {
            let (lock, words) = (lock.clone(), words.clone());
            thread::spawn(move || {
                for value in 1..=2 {
                    let _g = lock.lock();
                    words[0].store(value, Ordering::Relaxed);
                    words[1].store(value, Ordering::Relaxed);
                }
            })
        };
        for _ in 0..2 {
            if let Some(v) = lock.try_read() {
                let a = words[0].load(Ordering::Relaxed);
                let b = words[1].load(Ordering::Relaxed);
                if lock.validate(v) {
                    assert_eq!(a, b, "torn read");
                    assert_eq!(a, v.counter(), "data from another version");
                }
            }
        }
        writer.join().unwrap();
    });
}
