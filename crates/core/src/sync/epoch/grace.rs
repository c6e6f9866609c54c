//! Grace periods without epoch advances: [`GracePeriod`].
//!
//! An RCU-style writer that *reuses* the old version of a structure (Wormhole's pair of
//! MetaTrieHT tables) needs to know when every reader that could still see it has left its
//! critical section. Going through the deferred-function queue costs two (fenced) or three
//! (asymmetric) epoch advances, each a scan and, on the asymmetric path, a membarrier
//! syscall (an IPI to every other running thread of the process). A [`GracePeriod`] costs
//! one barrier and one scan when it starts, and cheap loads afterwards:
//!
//! 1. [`GracePeriod::start`], after the caller's update `U` (e.g. the swap of the published
//!    pointer): the epoch `g` is loaded, then the grace barrier (a `SeqCst` fence `F_W` on
//!    the fenced path; `F_Wa`, the heavy barrier, `F_Wb` on the asymmetric path), then one
//!    scan of the registry records every participant seen pinned, with its `state` and its
//!    pin counter `pins` (both `Acquire`). If nobody was seen pinned in another epoch than
//!    `g`, the scan doubles as an epoch advance (the barrier is the one an advance needs).
//! 2. [`GracePeriod::is_over`] drops a recorded participant once its `state` differs from
//!    the recorded one or its `pins` counter moved (both `Acquire`), and is true when none is
//!    left. [`GracePeriod::wait`] polls it, yielding.
//!
//! # Memory-ordering argument
//!
//! Names as in the [parent module's docs](super). A pin stores `pins` (`Release`) *before*
//! `state` (`S_T`); the unpin stores `state = 0` (`Release`). Claim: if a reader `T`'s
//! critical section can load the value `U` replaced, it happens-before the return of the
//! `is_over` call that returned true.
//!
//! *Which critical sections are at risk.* Fenced: if `F_W` precedes `F_T` in the SeqCst
//! order, `T`'s loads see `U` (rule (a)); otherwise `F_T` precedes `F_W` and the scan reads
//! `S_T` or a later store of `T`'s record (a). Asymmetric: the heavy barrier puts a fence
//! `F_T^W` in `T` between `F_Wa` and `F_Wb`; if it is before `S_T` (hence before every
//! `L_T`, thanks to the compiler fence), `T`'s loads see `U`; otherwise `S_T` is sequenced
//! before `F_T^W`, which precedes `F_Wb`, and the scan reads `S_T` or later. So every
//! critical section at risk has its pin store read by the scan, or a later store of the same
//! record.
//!
//! *Later stores end the section.* Every store to a record after `S_T` in its modification
//! order is `T`'s unpin or is sequenced after it (a re-pin of the same owner, or a store of a
//! later owner, which claimed the record through the `Release`/`Acquire` pair on `in_use`
//! after the unpin), and all of them are `Release` stores (the fenced x86 pin is a `SeqCst`
//! swap). An `Acquire` load that reads one synchronizes with it, so `T`'s critical section
//! happens-before that load. The same holds for a `pins` value larger than the one stored by
//! `T`'s pin: it was stored by a later pin, sequenced after `T`'s unpin.
//!
//! *The scan.* If it reads an unpinned `state`, every pin before it ended (above). If it
//! reads a pinned `state` `x` written by pin number `j` of the record, the following
//! `Acquire` load of `pins` returns `c >= j` (`pins` was stored before `S_T`, which the
//! `state` load synchronizes with). Pins before `j` ended. Pin `j` (and pin `c`) are
//! recorded as `(x, c)`.
//!
//! *The check.* Read-read coherence: a later load of `state` returns `x`'s store or a later
//! one. A value other than `x` is a later store: pin `j` ended (above). A `pins` value other
//! than `c` is larger than `c >= j` (a 64-bit counter does not wrap): pin `j` ended. If
//! `state` still reads `x` and `pins` still reads `c`, the record may still be in pin `j`
//! (or in pin `c`, whose store of `x` is the one read; then we wait for it too, which is
//! only conservative). A re-pin in the same epoch stores the same `x`: that is why `pins`
//! exists; without it the check would be safe but could wait for a busy reader
//! indefinitely.
//!
//! Records pushed on the registry after the scan read its head are not at risk: their first
//! pin is sequenced after the push, which the scan did not see, so by (a) the pin's barrier
//! (or `F_T^W`) comes after the grace barrier and the reader sees `U`.
//!
//! The loom model `sync::loom::grace_model` checks this protocol (a reader with two critical
//! sections in one epoch, a writer that swaps, starts a grace period, polls it and then
//! writes the old object) on both pin barriers, and finds the race when the pin counter is
//! stored after `state` or the asymmetric writer skips the heavy barrier.

use super::global::GLOBAL;
use super::guard::current_record;
use super::participant::{PINNED, Participant};
use crate::sync::Backoff;
use crate::sync::primitive::epoch_atomic::Ordering;
use std::fmt;
use std::ptr;

/// One participant seen pinned by the scan of [`GracePeriod::start`].
#[derive(Clone, Copy)]
struct Pinned {
    record: &'static Participant,
    /// The `state` the scan read.
    state: u64,
    /// The `pins` counter read after it.
    pins: u64,
}

impl Pinned {
    /// Whether the critical section seen by the scan has certainly ended (module docs).
    fn has_ended(&self) -> bool {
        self.record.state.load(Ordering::Acquire) != self.state
            || self.record.pins.load(Ordering::Acquire) != self.pins
    }
}

/// A grace period: started after an update, it is over once every critical section (pinned
/// guard, on any thread) that existed when it started has ended, so none of them can still
/// use what the update replaced. Everything those critical sections did happens-before the
/// [`is_over`](GracePeriod::is_over) call that returns true (or [`wait`](GracePeriod::wait)'s
/// return). Reusable: [`start`](GracePeriod::start) again keeps the allocation.
///
/// Cost: [`start`](GracePeriod::start) is one barrier (a `SeqCst` fence with the fenced
/// pin, one `membarrier` syscall with the asymmetric pin) and a scan of the participant
/// records; [`is_over`](GracePeriod::is_over) is two loads per participant that was pinned
/// at the start. It never forces epoch advances (it gives the epoch one when the scan allows
/// it). The memory-ordering argument is in `sync/epoch/grace.rs`.
///
/// ```
/// use orrery_core::sync::epoch::{self, GracePeriod};
/// use std::sync::atomic::{AtomicPtr, Ordering};
///
/// let (a, b) = (Box::into_raw(Box::new(1u64)), Box::into_raw(Box::new(2u64)));
/// let shared = AtomicPtr::new(a);
/// let mut grace = GracePeriod::new();
/// let old = shared.swap(b, Ordering::AcqRel);
/// grace.start();
/// grace.wait();
/// // No reader can still hold `old` (= `a`): reuse it in place.
/// // SAFETY: unpublished, and every reader that could see it has left.
/// unsafe { *old = 3 };
/// // SAFETY: single-threaded cleanup.
/// unsafe { drop((Box::from_raw(a), Box::from_raw(shared.load(Ordering::Relaxed)))) };
/// ```
pub struct GracePeriod {
    /// The participants seen pinned at the start whose critical section may not have ended.
    pending: Vec<Pinned>,
}

impl GracePeriod {
    /// A grace period that is already over.
    pub const fn new() -> GracePeriod {
        GracePeriod {
            pending: Vec::new(),
        }
    }

    /// Starts a new grace period (forgetting the previous one): call it after the update
    /// whose old value readers must stop using. See the type docs.
    pub fn start(&mut self) {
        self.pending.clear();
        GLOBAL.choose_mode();
        let global = GLOBAL.epoch_relaxed();
        GLOBAL.grace_barrier();
        let mut all_in_global = true;
        GLOBAL.for_each_record(|record| {
            let state = record.state.load(Ordering::Acquire);
            if state & PINNED != 0 {
                all_in_global &= state >> 1 == global;
                // After the `Acquire` load of `state`: at least the count of the pin that
                // stored it (module docs).
                let pins = record.pins.load(Ordering::Acquire);
                self.pending.push(Pinned {
                    record,
                    state,
                    pins,
                });
            }
        });
        if all_in_global {
            // The barrier and the scan are those of an advance from `global`.
            GLOBAL.advance_after_scan(global);
        }
    }

    /// Whether every critical section that existed at the last [`start`](Self::start) has
    /// ended (true for a new or never started grace period). Cheap: no barrier, no epoch
    /// advance; forgets the participants found done.
    pub fn is_over(&mut self) -> bool {
        self.pending.retain(|p| !p.has_ended());
        self.pending.is_empty()
    }

    /// Whether the calling thread's own record is still in the critical section this grace
    /// period waits for (a thread that holds a guard across `start` and `wait` would wait
    /// for itself forever).
    pub fn waits_for_current_thread(&mut self) -> bool {
        let Some(me) = current_record() else {
            return false;
        };
        !self.is_over() && self.pending.iter().any(|p| ptr::eq(p.record, me))
    }

    /// Waits until [`is_over`](Self::is_over) (spinning, then yielding).
    ///
    /// # Panics
    /// If the calling thread's own record (the one [`pin`](super::pin) uses) is one of the
    /// critical sections waited for, i.e. the caller still holds a guard that existed at
    /// [`start`](Self::start): it would wait for itself forever. Waiting while holding a
    /// guard of a separately registered [`Handle`](super::Handle) that old deadlocks the same
    /// way (not detected).
    pub fn wait(&mut self) {
        assert!(
            !self.waits_for_current_thread(),
            "GracePeriod::wait called by a thread pinned since the grace period started"
        );
        let backoff = Backoff::new();
        while !self.is_over() {
            backoff.snooze();
        }
    }

    /// How many participants the grace period still waits for (as of the last check).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

impl Default for GracePeriod {
    fn default() -> GracePeriod {
        GracePeriod::new()
    }
}

impl fmt::Debug for GracePeriod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GracePeriod")
            .field("pending", &self.pending.len())
            .finish()
    }
}
