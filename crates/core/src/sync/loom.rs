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

/// A [`VersionField`](crate::sync::VersionField) seqlock in the upper half of a 32-bit word
/// whose lower half is data, written under another lock (`write_begin`/`write_end`, as
/// Mercury's bucket-locked values): a validated read of the word's data and of a second
/// data word is never torn.
#[test]
fn version_field_u32_validated_reads_are_consistent() {
    use crate::sync::VersionField;
    use ::loom::sync::atomic::AtomicU32;
    const F: VersionField = VersionField::new(32, 16, 17, 15);
    ::loom::model(|| {
        let word = Arc::new(AtomicU32::new(0));
        let other = Arc::new(AtomicU64::new(0));
        let writer = {
            let (word, other) = (word.clone(), other.clone());
            thread::spawn(move || {
                for value in 1..=2u64 {
                    // The writers' own exclusion is this thread: one writer.
                    let locked = F.write_begin(&*word);
                    other.store(value, Ordering::Relaxed);
                    F.write_end(&*word, (locked & !0xFFFF) | value);
                }
            })
        };
        for _ in 0..2 {
            if let Some(seen) = F.try_read(&*word) {
                let b = other.load(Ordering::Relaxed);
                if F.validate(&*word, seen) {
                    assert_eq!(seen & 0xFFFF, b, "torn read");
                    assert_eq!(F.counter(seen), b, "data from another version");
                }
            }
        }
        writer.join().unwrap();
    });
}

/// A loom model of the epoch protocol's ordering argument (`sync::epoch` module docs), one
/// retirement seen by one reader, on both pin barriers. It is a model, not the collector
/// itself: the collector is a process-wide static with thread-local records, which loom
/// cannot reset between iterations. The operations, their orderings and fences are the ones
/// of `epoch/participant.rs` and `epoch/global.rs`, reduced to one participant record (the
/// reader's), one link and one sealed bag.
///
/// - The reader pins (epoch load, `state` store, its barrier), loads the link and, if it
///   still points to the old object, reads it (a loom `UnsafeCell`), then unpins.
/// - The retirer swings the link to a new object, fences (`F_R`) and seals the bag with the
///   epoch it then loads (published with `Release`, as the global queue push does).
/// - The advancer tries `LAG` advances (epoch load, its barrier, scan of the reader's state,
///   `Acquire` fence, CAS), then collects: if the bag is sealed and the epoch reached
///   `seal + LAG`, it frees the old object (a write to the cell).
///
/// Loom reports a causality violation if the free is not ordered after the reader's read.
///
/// The asymmetric barrier: membarrier(2) makes every running thread execute a full fence
/// before the syscall returns; a thread is interrupted at an instruction boundary. The
/// model makes the reader *serve* barrier requests at every boundary between its memory
/// operations (and pass a fence when it exits, like a context switch): it checks a request
/// counter (`Relaxed`) and, if a request is pending, runs `fence(SeqCst)` and acknowledges.
/// The advancer's heavy barrier is `fence(SeqCst)`, a request, a wait for the
/// acknowledgement (or the reader's exit), `fence(SeqCst)`: by the SeqCst fence rules this
/// puts the reader's fence between the advancer's two fences in the SeqCst order, which is
/// exactly the guarantee the argument uses. The retirer serves no requests (fewer fences: the
/// model allows more executions than the real program, where it is a thread of the process
/// too).
mod epoch_model {
    use ::loom::cell::UnsafeCell;
    use ::loom::sync::Arc;
    use ::loom::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
    use ::loom::thread;

    const PINNED: u64 = 1;
    const OLD: u64 = 0;
    const NEW: u64 = 1;
    const NOT_SEALED: u64 = u64::MAX;
    const ALIVE: u64 = 7;
    const FREED: u64 = 0;

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Pin {
        /// Reader: `Release` store + `fence(SeqCst)`; advancer: `fence(SeqCst)`.
        Fenced,
        /// Reader: `Release` store only (+ serving heavy barriers); advancer: heavy barrier.
        Asymmetric,
        /// Broken on purpose: reader as `Asymmetric`, advancer with a plain `fence(SeqCst)`.
        NoHeavyBarrier,
    }

    struct World {
        epoch: AtomicU64,
        /// The reader's participant record.
        state: AtomicU64,
        link: AtomicU64,
        /// The old object, freed by the collector.
        old: UnsafeCell<u64>,
        seal: AtomicU64,
        /// Heavy barriers requested so far (by the advancer).
        request: AtomicU64,
        /// The last request the reader served.
        ack: AtomicU64,
        reader_exited: AtomicBool,
    }

    // SAFETY: `old` is accessed through loom's `UnsafeCell`, which checks every access for
    // causality (that is the point of the model).
    unsafe impl Sync for World {}

    impl World {
        /// The reader at an instruction boundary: serves a pending heavy barrier.
        fn serve(&self, pin: Pin) {
            if pin == Pin::Fenced {
                return;
            }
            let r = self.request.load(Ordering::Relaxed);
            if r != self.ack.load(Ordering::Relaxed) {
                fence(Ordering::SeqCst);
                self.ack.store(r, Ordering::Relaxed);
            }
        }

        /// The advancer's barrier between its epoch load and its scan.
        fn advancer_barrier(&self, pin: Pin, n: u64) {
            fence(Ordering::SeqCst);
            if pin != Pin::Asymmetric {
                return;
            }
            self.request.store(n, Ordering::Relaxed);
            while self.ack.load(Ordering::Relaxed) < n
                && !self.reader_exited.load(Ordering::Relaxed)
            {
                thread::yield_now();
            }
            fence(Ordering::SeqCst);
        }
    }

    fn reader(w: &World, pin: Pin) {
        w.serve(pin);
        let e = w.epoch.load(Ordering::Relaxed);
        w.serve(pin);
        w.state.store(e << 1 | PINNED, Ordering::Release);
        if pin == Pin::Fenced {
            fence(Ordering::SeqCst);
        }
        // (A compiler fence here in the real pin: the loads below stay below.)
        w.serve(pin);
        let link = w.link.load(Ordering::Acquire);
        w.serve(pin);
        if link == OLD {
            // SAFETY: loom checks this read against the collector's free.
            w.old
                .with(|v| assert_eq!(unsafe { *v }, ALIVE, "read a freed object"));
            w.serve(pin);
        }
        w.state.store(0, Ordering::Release);
        // Exit: like a context switch, a full fence after everything the reader did.
        fence(Ordering::SeqCst);
        w.reader_exited.store(true, Ordering::Relaxed);
    }

    fn retirer(w: &World) {
        w.link.store(NEW, Ordering::Release);
        fence(Ordering::SeqCst); // F_R
        let s = w.epoch.load(Ordering::Relaxed);
        w.seal.store(s, Ordering::Release);
    }

    fn advancer_and_collector(w: &World, pin: Pin, lag: u64) {
        for n in 1..=lag {
            let g = w.epoch.load(Ordering::Relaxed);
            w.advancer_barrier(pin, n);
            let state = w.state.load(Ordering::Relaxed);
            if state & PINNED != 0 && state >> 1 != g {
                break;
            }
            fence(Ordering::Acquire);
            if w.epoch
                .compare_exchange(g, g + 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                break;
            }
        }
        let s = w.seal.load(Ordering::Acquire);
        if s != NOT_SEALED && w.epoch.load(Ordering::Acquire) >= s + lag {
            // SAFETY: loom checks this write against the reader's read.
            w.old.with_mut(|v| unsafe { *v = FREED });
        }
    }

    fn check(pin: Pin, lag: u64) {
        let mut builder = ::loom::model::Builder::new();
        // Exhaustive up to three preemptions per execution (the four models take about 30 s
        // in release mode on the 2-core VM); an unbounded search was not tried.
        builder.preemption_bound = Some(3);
        builder.check(move || {
            let w = Arc::new(World {
                epoch: AtomicU64::new(0),
                state: AtomicU64::new(0),
                link: AtomicU64::new(OLD),
                old: UnsafeCell::new(ALIVE),
                seal: AtomicU64::new(NOT_SEALED),
                request: AtomicU64::new(0),
                ack: AtomicU64::new(0),
                reader_exited: AtomicBool::new(false),
            });
            let r = {
                let w = w.clone();
                thread::spawn(move || reader(&w, pin))
            };
            let t = {
                let w = w.clone();
                thread::spawn(move || retirer(&w))
            };
            advancer_and_collector(&w, pin, lag);
            r.join().unwrap();
            t.join().unwrap();
        });
    }

    #[test]
    fn epoch_fenced_pin_lag_2_is_safe() {
        check(Pin::Fenced, 2);
    }

    #[test]
    fn epoch_asymmetric_pin_lag_3_is_safe() {
        check(Pin::Asymmetric, 3);
    }

    /// Why the asymmetric path waits one more epoch (module docs): with a lag of two the
    /// model finds the execution where the reader pins in `seal + 1` with a stale link
    /// (the free races with the reader's read).
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn epoch_asymmetric_pin_lag_2_is_unsafe() {
        check(Pin::Asymmetric, 2);
    }

    /// The model is sensitive to the heavy barrier: without it, a compiler-fence pin is
    /// unsafe whatever the lag.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn epoch_pin_without_heavy_barrier_is_unsafe() {
        check(Pin::NoHeavyBarrier, 3);
    }
}

/// A loom model of [`GracePeriod`](crate::sync::epoch::GracePeriod)'s ordering argument
/// (`sync/epoch/grace.rs`), on both pin barriers: the same modelling of the heavy barrier as
/// `epoch_model` (the reader serves barrier requests at every instruction boundary).
///
/// - The reader runs two critical sections in the same epoch (so both store the same
///   `state`, the case the pin counter exists for): each stores `pins` (`Release`), then
///   `state` (`Release`, plus `fence(SeqCst)` on the fenced path), loads the link and, if it
///   still points to the old object, reads it (a loom `UnsafeCell`), then unpins.
/// - The writer swings the link to a new object, issues the grace barrier, scans the
///   reader's record (`state`, then `pins`, both `Acquire`), then polls the record a bounded
///   number of times; once the recorded critical section has ended (state or counter
///   changed, or nothing was pinned) it reuses the old object (a write to the cell).
///
/// Loom reports a causality violation if the reuse is not ordered after a read of the old
/// object.
mod grace_model {
    use ::loom::cell::UnsafeCell;
    use ::loom::sync::Arc;
    use ::loom::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
    use ::loom::thread;

    const PINNED_IN_EPOCH_0: u64 = 1;
    const OLD: u64 = 0;
    const NEW: u64 = 1;
    const ALIVE: u64 = 7;
    const REUSED: u64 = 9;

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Variant {
        /// Reader: `Release` stores + `fence(SeqCst)`; writer: `fence(SeqCst)`.
        Fenced,
        /// Reader: `Release` stores only (+ serving heavy barriers); writer: heavy barrier.
        Asymmetric,
        /// Broken on purpose: as `Fenced`, but the pin counter is stored after `state` and the
        /// fence (with the asymmetric pin the heavy barrier covers both stores either way).
        CounterAfterState,
        /// Broken on purpose: as `Asymmetric`, but the writer only fences.
        NoHeavyBarrier,
    }

    impl Variant {
        /// Whether the reader's pin issues its own fence.
        fn fenced(self) -> bool {
            matches!(self, Variant::Fenced | Variant::CounterAfterState)
        }
    }

    struct World {
        state: AtomicU64,
        pins: AtomicU64,
        link: AtomicU64,
        old: UnsafeCell<u64>,
        request: AtomicU64,
        ack: AtomicU64,
        reader_exited: AtomicBool,
    }

    // SAFETY: `old` is accessed through loom's `UnsafeCell`, which checks every access for
    // causality (that is the point of the model).
    unsafe impl Sync for World {}

    impl World {
        fn serve(&self, v: Variant) {
            if v.fenced() {
                return;
            }
            let r = self.request.load(Ordering::Relaxed);
            if r != self.ack.load(Ordering::Relaxed) {
                fence(Ordering::SeqCst);
                self.ack.store(r, Ordering::Relaxed);
            }
        }

        fn grace_barrier(&self, v: Variant) {
            fence(Ordering::SeqCst);
            if v.fenced() || v == Variant::NoHeavyBarrier {
                return;
            }
            self.request.store(1, Ordering::Relaxed);
            while self.ack.load(Ordering::Relaxed) < 1
                && !self.reader_exited.load(Ordering::Relaxed)
            {
                thread::yield_now();
            }
            fence(Ordering::SeqCst);
        }
    }

    fn reader(w: &World, v: Variant) {
        for k in 1..=2u64 {
            w.serve(v);
            if v != Variant::CounterAfterState {
                w.pins.store(k, Ordering::Release);
                w.serve(v);
            }
            w.state.store(PINNED_IN_EPOCH_0, Ordering::Release);
            if v.fenced() {
                fence(Ordering::SeqCst);
            }
            w.serve(v);
            if v == Variant::CounterAfterState {
                w.pins.store(k, Ordering::Release);
                w.serve(v);
            }
            let link = w.link.load(Ordering::Acquire);
            w.serve(v);
            if link == OLD {
                // SAFETY: loom checks this read against the writer's reuse.
                w.old
                    .with(|x| assert_eq!(unsafe { *x }, ALIVE, "read a reused object"));
                w.serve(v);
            }
            w.state.store(0, Ordering::Release);
        }
        fence(Ordering::SeqCst);
        w.reader_exited.store(true, Ordering::Relaxed);
    }

    fn writer(w: &World, v: Variant) {
        w.link.store(NEW, Ordering::Release);
        w.grace_barrier(v);
        let state = w.state.load(Ordering::Acquire);
        let mut over = state == 0;
        let pins = w.pins.load(Ordering::Acquire);
        for _ in 0..3 {
            over = over
                || w.state.load(Ordering::Acquire) != state
                || w.pins.load(Ordering::Acquire) != pins;
            if over {
                break;
            }
            thread::yield_now();
        }
        if over {
            // SAFETY: loom checks this write against the reader's reads.
            w.old.with_mut(|x| unsafe { *x = REUSED });
        }
    }

    fn check(v: Variant) {
        let mut builder = ::loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(move || {
            let w = Arc::new(World {
                state: AtomicU64::new(0),
                pins: AtomicU64::new(0),
                link: AtomicU64::new(OLD),
                old: UnsafeCell::new(ALIVE),
                request: AtomicU64::new(0),
                ack: AtomicU64::new(0),
                reader_exited: AtomicBool::new(false),
            });
            let r = {
                let w = w.clone();
                thread::spawn(move || reader(&w, v))
            };
            writer(&w, v);
            r.join().unwrap();
        });
    }

    #[test]
    fn grace_fenced_pin_is_safe() {
        check(Variant::Fenced);
    }

    #[test]
    fn grace_asymmetric_pin_is_safe() {
        check(Variant::Asymmetric);
    }

    /// The counter must be stored before `state`: otherwise the scan can pair the current
    /// pin's `state` with the previous pin's count, and the new count looks like a new pin.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn grace_counter_after_state_is_unsafe() {
        check(Variant::CounterAfterState);
    }

    /// Without the heavy barrier the scan can miss a compiler-fence pin.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn grace_without_heavy_barrier_is_unsafe() {
        check(Variant::NoHeavyBarrier);
    }
}
