//! One participant record per thread (or explicit [`Handle`](super::Handle)): the pinned
//! state that advancers read, and owner-only bookkeeping (guard and handle counts, the open
//! bag of deferred functions).
//!
//! # Ownership
//!
//! A record is claimed (`in_use` false → true, `Acquire`) by one owner thread and released
//! (`in_use` ← false, `Release`) when its last handle and last guard are gone. Handles and
//! guards are `!Send`, so only the owner thread touches the `Cell` fields between claim and
//! release; the `Release`/`Acquire` pair on `in_use` hands those fields to the next owner.
//! Records are never freed (the registry is push-only), so pointers to them stay valid.

use super::deferred::{BAG_CAPACITY, Deferred};
use super::global::{GLOBAL, SealedBag};
use crate::sync::primitive::epoch_atomic::{self, AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::cell::Cell;
use std::ptr;

/// Bit 0 of [`Participant::state`]: the participant is pinned; bits 1..64 hold the epoch it
/// pinned in.
pub(super) const PINNED: u64 = 1;

/// Every this many (outermost) pins, a participant checks for sealed bags on the global queue
/// and, if there are some, tries to advance the epoch and collect. Small under Miri so that
/// short tests exercise collection.
const PINS_BETWEEN_COLLECT: u64 = if cfg!(miri) { 4 } else { 128 };

/// Asymmetric path only: a participant tries to advance the epoch (a membarrier syscall of
/// about 0.4 µs alone, 1.5 to 2 µs with another thread of the process running, measured on
/// the 2-core VM) only after this much work since its last try, an outermost pin counting 1
/// and a deferred function [`DEFER_WEIGHT`]: at most one heavy barrier per 1024 pins or per
/// 512 deferred functions (8 bags) of a thread, whichever comes first. On a write-heavy
/// thread (one retirement per operation) that is one syscall per about 340 operations,
/// a few ns per operation, and garbage waits for about three such periods (a few thousand
/// objects per thread) before it is freed. [`Guard::flush`](super::Guard::flush) (and so
/// [`synchronize`](super::synchronize)) is not rate-limited. The fenced path tries at every
/// collection step, as before.
const ADVANCE_CREDIT: u64 = 1024;

/// The advance credit of one deferred function (see [`ADVANCE_CREDIT`]).
const DEFER_WEIGHT: u64 = 2;

/// A participant record. Aligned to 128 bytes so records of different threads never share a
/// cache line (the owner writes `state` at every pin).
#[repr(C, align(128))]
pub(super) struct Participant {
    // Hot, written by the owner at every outermost pin/unpin, read by advancers.
    /// `epoch << 1 | PINNED` while pinned, `0` when not.
    pub(super) state: AtomicU64,
    // Owner-only (see the module docs).
    /// Live guards of this record (pins nest).
    guard_count: Cell<usize>,
    /// Live handles of this record.
    handle_count: Cell<usize>,
    /// Outermost pins of this record so far (wraps; kept across owners). Written only by the
    /// owner, with a `Release` store *before* the pin's `state` store; read by grace periods
    /// (`grace.rs`) to tell a new critical section from the one they saw pinned when the
    /// `state` word alone cannot (a re-pin in the same epoch stores the same value). Also
    /// triggers collection periodically.
    pub(super) pins: AtomicU64,
    /// Work (pins, deferred functions) since this record last tried an advance on the
    /// asymmetric path (see [`ADVANCE_CREDIT`]).
    advance_credit: Cell<u64>,
    /// The open bag (null until the first deferred function after a seal).
    bag: Cell<*mut SealedBag>,
    // Registry.
    /// Claimed by an owner.
    in_use: AtomicBool,
    /// Next record of the registry; written once before the record is published.
    pub(super) next: AtomicPtr<Participant>,
}

// SAFETY: the atomics are shared; the `Cell` fields are touched only by the owner thread
// (module docs: `!Send` handles and guards, `in_use` hand-over with Release/Acquire), and the
// open bag pointer is owned by the record.
unsafe impl Sync for Participant {}

impl Participant {
    /// A new record, already claimed by the caller.
    pub(super) fn new_claimed() -> Participant {
        Participant {
            state: AtomicU64::new(0),
            guard_count: Cell::new(0),
            handle_count: Cell::new(0),
            pins: AtomicU64::new(0),
            advance_credit: Cell::new(0),
            bag: Cell::new(ptr::null_mut()),
            in_use: AtomicBool::new(true),
            next: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Claims the record if it is free.
    pub(super) fn try_claim(&self) -> bool {
        !self.in_use.load(Ordering::Relaxed)
            && self
                .in_use
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Adds a handle (owner only).
    #[inline]
    pub(super) fn add_handle(&self) {
        self.handle_count.set(self.handle_count.get() + 1);
    }

    /// Removes a handle; releases the record if it was the last reference (owner only).
    #[inline]
    pub(super) fn remove_handle(&self) {
        let handles = self.handle_count.get() - 1;
        self.handle_count.set(handles);
        if handles == 0 && self.guard_count.get() == 0 {
            self.release();
        }
    }

    /// Whether the owner holds a guard of this record.
    #[inline]
    pub(super) fn is_pinned(&self) -> bool {
        self.guard_count.get() > 0
    }

    /// Enters a (possibly nested) critical section (owner only). Returns whether a
    /// collection step is due: the caller runs [`collect_step`](Participant::collect_step)
    /// once its guard exists, so that a panicking deferred function still unpins.
    #[inline]
    #[must_use]
    pub(super) fn pin(&self) -> bool {
        let guards = self.guard_count.get();
        self.guard_count.set(guards + 1);
        guards == 0 && self.pin_outermost()
    }

    /// Runs the periodic collection step: if sealed bags wait, tries to advance the global
    /// epoch (rate-limited on the asymmetric path, see [`ADVANCE_CREDIT`]), then runs
    /// expired bags.
    #[cold]
    pub(super) fn collect_step(&self) {
        if GLOBAL.has_garbage() {
            self.collect_with_credit(PINS_BETWEEN_COLLECT);
        }
    }

    /// Adds `work` to this record's advance credit; tries to advance the epoch if the credit
    /// allows it (always on the fenced path), then runs expired bags.
    fn collect_with_credit(&self, work: u64) {
        if self.may_advance(work) {
            GLOBAL.collect_step();
        } else {
            GLOBAL.collect();
        }
    }

    /// The rate limit of heavy barriers: on the asymmetric path an advance may be tried once
    /// the work since the last try reaches [`ADVANCE_CREDIT`] (the credit then restarts).
    fn may_advance(&self, work: u64) -> bool {
        if !GLOBAL.asymmetric() {
            return true;
        }
        let credit = self.advance_credit.get() + work;
        let allowed = credit >= ADVANCE_CREDIT;
        self.advance_credit.set(if allowed { 0 } else { credit });
        allowed
    }

    /// Publishes "pinned in the current epoch", ordered before this thread's later loads of
    /// shared pointers (`S_T` of the argument in the module docs). Fenced path: a full fence
    /// (`F_T`). Asymmetric path: a `Release` store and a compiler fence; the advancer's heavy
    /// barrier supplies the hardware fence.
    #[inline]
    fn pin_outermost(&self) -> bool {
        // The pin counter first (`Release`, a plain store on x86): a grace period that reads
        // this pin's `state` (`Acquire`) then reads this count or a later one, and one that
        // reads a later count knows this pin's critical section is over (grace.rs).
        let pins = self.pins.load(Ordering::Relaxed).wrapping_add(1);
        self.pins.store(pins, Ordering::Release);
        let pinned = GLOBAL.epoch_relaxed() << 1 | PINNED;
        if GLOBAL.asymmetric() {
            // The store is `Release` so that a scan that reads it (a re-pin after an unpin)
            // synchronizes like the unpin would. The compiler fence keeps the compiler from
            // moving this thread's later loads above the store: in the emitted instruction
            // stream the critical section comes after `S_T`, so the barrier an advancer's
            // membarrier places in this thread (at an instruction boundary) is either before
            // the store or after it, the two cases of the argument.
            self.state.store(pinned, Ordering::Release);
            epoch_atomic::compiler_fence(Ordering::SeqCst);
        } else {
            Self::fenced_pin(&self.state, pinned);
        }
        pins.is_multiple_of(PINS_BETWEEN_COLLECT)
    }

    /// The fenced pin: store `pinned` then a full fence (`S_T`, `F_T`).
    #[inline(always)]
    fn fenced_pin(state: &AtomicU64, pinned: u64) {
        #[cfg(all(any(target_arch = "x86", target_arch = "x86_64"), not(miri)))]
        {
            // On x86 a `lock`-prefixed read-modify-write is a full barrier (same effect as
            // the `mfence` of a SeqCst fence, and cheaper): the store cannot be reordered
            // with later loads. The compiler fence keeps the compiler from moving this
            // thread's later accesses above it. The swap is also a release store (used by
            // the synchronization argument).
            state.swap(pinned, Ordering::SeqCst);
            epoch_atomic::compiler_fence(Ordering::SeqCst);
        }
        #[cfg(not(all(any(target_arch = "x86", target_arch = "x86_64"), not(miri))))]
        {
            state.store(pinned, Ordering::Release);
            epoch_atomic::fence(Ordering::SeqCst);
        }
    }

    /// Leaves a critical section; at the outermost one publishes "not pinned" (`Release`:
    /// everything read in the critical section happens-before an advance that sees it), and
    /// releases the record if no handle is left (owner only).
    #[inline]
    pub(super) fn unpin(&self) {
        let guards = self.guard_count.get() - 1;
        self.guard_count.set(guards);
        if guards == 0 {
            self.state.store(0, Ordering::Release);
            if self.handle_count.get() == 0 {
                self.release();
            }
        }
    }

    /// Adds a deferred function to the open bag; a full bag is sealed, queued globally, and
    /// a collection step runs (owner only, while pinned).
    pub(super) fn defer(&self, d: Deferred) {
        let mut node = self.bag.get();
        if node.is_null() {
            node = Box::into_raw(SealedBag::new_boxed());
            self.bag.set(node);
        }
        // SAFETY: the open bag is owned by this record and only its owner (this thread)
        // touches it; no other reference to it is live (no user code runs while it is
        // borrowed).
        let bag = unsafe { &mut (*node).bag };
        let full = match bag.try_push(d) {
            Ok(()) => bag.is_full(),
            // Not reached (a bag is sealed as soon as it fills), but stay correct anyway.
            Err(d) => {
                self.seal_open_bag();
                return self.defer(d);
            }
        };
        if full {
            self.seal_open_bag();
            self.collect_with_credit(DEFER_WEIGHT * BAG_CAPACITY as u64);
        }
    }

    /// Seals the open bag (if it holds anything) and queues it globally (owner only).
    pub(super) fn seal_open_bag(&self) {
        let node = self.bag.get();
        if node.is_null() {
            return;
        }
        // SAFETY: owned by this record, touched only by its owner (see `defer`).
        if unsafe { (*node).bag.is_empty() } {
            return;
        }
        self.bag.set(ptr::null_mut());
        // SAFETY: `node` came from `Box::into_raw` in `defer` and was just detached from the
        // record, so this is its only owner.
        GLOBAL.push_bag(unsafe { Box::from_raw(node) });
    }

    /// Seals the open bag and runs a collection step (owner only, while pinned).
    pub(super) fn flush(&self) {
        self.seal_open_bag();
        GLOBAL.collect_step();
    }

    /// Gives the record back to the registry: the open bag goes to the global queue (it is
    /// not lost), then the record is marked free (owner only; no guard, no handle left).
    fn release(&self) {
        debug_assert_eq!(self.guard_count.get(), 0);
        debug_assert_eq!(self.handle_count.get(), 0);
        self.seal_open_bag();
        // Release: hands the `Cell` fields over to the next owner's `Acquire` claim.
        self.in_use.store(false, Ordering::Release);
    }
}
