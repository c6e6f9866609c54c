//! The process-wide collector state: the global epoch, the registry of participant records
//! and the queue of sealed bags. The memory-ordering argument is in the [parent module's
//! docs](super).

use super::deferred::Bag;
use super::participant::{PINNED, Participant};
use crate::sync::CachePadded;
use crate::sync::primitive::epoch_atomic::{AtomicPtr, AtomicU64, Ordering, fence};
use std::ptr;

/// How many sealed bags one [`Global::collect`] call frees at most, to bound the pause it
/// adds to the pin that triggered it. Small under Miri to exercise the re-queueing path.
const COLLECT_MAX_BAGS: usize = if cfg!(miri) { 2 } else { 16 };

/// A bag of deferred functions, sealed with the global epoch observed after its last
/// function was deferred, in the global queue (an intrusive Treiber stack).
pub(super) struct SealedBag {
    /// The global epoch read (after a `SeqCst` fence) when the bag was sealed; the bag may
    /// run once the global epoch is `epoch + 2` or more.
    epoch: u64,
    next: *mut SealedBag,
    /// The deferred functions; they run when the `SealedBag` is dropped.
    pub(super) bag: Bag,
}

impl SealedBag {
    /// A heap-allocated empty bag, not yet sealed.
    pub(super) fn new_boxed() -> Box<SealedBag> {
        Box::new(SealedBag {
            epoch: 0,
            next: ptr::null_mut(),
            bag: Bag::new(),
        })
    }
}

/// The one global collector.
pub(super) struct Global {
    /// The global epoch. Only ever changed by `compare_exchange(g, g + 1)` (so it is
    /// monotonic and every modification is a read-modify-write: a reader that observes any
    /// value synchronizes with every earlier advance).
    epoch: CachePadded<AtomicU64>,
    /// Head of the registry: a push-only list of leaked participant records (never freed,
    /// reused when their owner exits).
    participants: CachePadded<AtomicPtr<Participant>>,
    /// Head of the stack of sealed bags waiting for their epoch to expire.
    garbage: CachePadded<AtomicPtr<SealedBag>>,
}

/// The collector every [`pin`](super::pin) uses.
pub(super) static GLOBAL: Global = Global {
    epoch: CachePadded::new(AtomicU64::new(0)),
    participants: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
    garbage: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
};

impl Global {
    /// The global epoch (`Relaxed`; what a pinning thread records).
    #[inline(always)]
    pub(super) fn epoch_relaxed(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// Takes a free participant record for a new owner, reusing the record of an exited
    /// owner when one is free, else allocating (and leaking) a new one. The returned record
    /// has no guards and no handles.
    pub(super) fn acquire_participant(&self) -> &'static Participant {
        let mut cur = self.participants.load(Ordering::Acquire);
        // SAFETY: records are leaked `Box`es, never freed: any pointer in the list is valid
        // for `'static`.
        while let Some(record) = unsafe { cur.as_ref() } {
            if record.try_claim() {
                return record;
            }
            cur = record.next.load(Ordering::Acquire);
        }
        let record: &'static Participant = Box::leak(Box::new(Participant::new_claimed()));
        let mut head = self.participants.load(Ordering::Relaxed);
        loop {
            record.next.store(head, Ordering::Relaxed);
            match self.participants.compare_exchange_weak(
                head,
                ptr::from_ref(record).cast_mut(),
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return record,
                Err(now) => head = now,
            }
        }
    }

    /// How many records the registry holds (used and free).
    pub(super) fn registry_len(&self) -> usize {
        let mut n = 0;
        let mut cur = self.participants.load(Ordering::Acquire);
        // SAFETY: records are never freed (see `acquire_participant`).
        while let Some(record) = unsafe { cur.as_ref() } {
            n += 1;
            cur = record.next.load(Ordering::Acquire);
        }
        n
    }

    /// Seals `bag` with the current epoch and pushes it on the global queue.
    ///
    /// The `SeqCst` fence comes after every unlink whose object was deferred into the bag
    /// (they are earlier in this thread's program order) and before the epoch is read: this
    /// is fence `F_R` of the argument in the module docs.
    pub(super) fn push_bag(&self, mut bag: Box<SealedBag>) {
        fence(Ordering::SeqCst);
        bag.epoch = self.epoch.load(Ordering::Relaxed);
        let node = Box::into_raw(bag);
        // SAFETY: `node` is a fresh allocation owned by us until the push succeeds.
        unsafe { self.push_chain(node, node) };
    }

    /// Pushes the chain `first ..= last` (linked through `next`) on the garbage stack.
    ///
    /// # Safety
    /// The chain is owned by the caller (unreachable by other threads): `first` reaches
    /// `last` through `next` pointers, all nodes are live `Box`-allocated `SealedBag`s.
    unsafe fn push_chain(&self, first: *mut SealedBag, last: *mut SealedBag) {
        let mut head = self.garbage.load(Ordering::Relaxed);
        loop {
            // SAFETY: `last` is owned by us (contract) until the CAS below publishes it.
            unsafe { (*last).next = head };
            // Release: publishes the nodes' contents (and `next`) to the collector's
            // `Acquire` swap. A Treiber push never dereferences `head`, so it is ABA-safe.
            match self.garbage.compare_exchange_weak(
                head,
                first,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// Advances the global epoch by one if every pinned participant is pinned in the current
    /// epoch. Returns the global epoch as this call left or found it.
    pub(super) fn try_advance(&self) -> u64 {
        let global = self.epoch.load(Ordering::Relaxed);
        // `F_A` of the argument: orders the epoch load before the scan, and the scan after
        // every pin whose fence precedes this one.
        fence(Ordering::SeqCst);
        let mut cur = self.participants.load(Ordering::Acquire);
        // SAFETY: records are never freed (see `acquire_participant`).
        while let Some(record) = unsafe { cur.as_ref() } {
            let state = record.state.load(Ordering::Relaxed);
            if state & PINNED != 0 && state >> 1 != global {
                return global;
            }
            cur = record.next.load(Ordering::Acquire);
        }
        // Everything the unpinned participants did before unpinning (their `Release` stores
        // read by the scan) happens-before the advance, hence before any destruction that
        // the new epoch allows.
        fence(Ordering::Acquire);
        match self
            .epoch
            .compare_exchange(global, global + 1, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => global + 1,
            Err(now) => now,
        }
    }

    /// Runs the bags whose epoch has expired (global epoch at least two past their seal),
    /// at most [`COLLECT_MAX_BAGS`] of them; the rest go back on the queue.
    pub(super) fn collect(&self) {
        if self.garbage.load(Ordering::Relaxed).is_null() {
            return;
        }
        // Take the whole stack: no ABA, and the taken nodes are ours alone.
        let mut list = self.garbage.swap(ptr::null_mut(), Ordering::Acquire);
        // Acquire: synchronizes with the advance that stored this epoch (and, all epoch
        // writes being read-modify-writes, with every earlier advance).
        let epoch = self.epoch.load(Ordering::Acquire);
        let mut expired: *mut SealedBag = ptr::null_mut();
        let mut n_expired = 0;
        let mut keep_first: *mut SealedBag = ptr::null_mut();
        let mut keep_last: *mut SealedBag = ptr::null_mut();
        while !list.is_null() {
            let node = list;
            // SAFETY: `node` was taken off the stack by our swap: we own it.
            let node_ref = unsafe { &mut *node };
            let (next, sealed) = (node_ref.next, node_ref.epoch);
            list = next;
            if n_expired < COLLECT_MAX_BAGS && epoch >= sealed + 2 {
                // SAFETY: we own `node` (see above).
                unsafe { (*node).next = expired };
                expired = node;
                n_expired += 1;
            } else {
                // SAFETY: we own `node` (see above).
                unsafe { (*node).next = keep_first };
                keep_first = node;
                if keep_last.is_null() {
                    keep_last = node;
                }
            }
        }
        if !keep_first.is_null() {
            // SAFETY: the kept nodes are ours, chained from `keep_first` to `keep_last`.
            unsafe { self.push_chain(keep_first, keep_last) };
        }
        // Run the expired bags last, so a panicking deferred function cannot lose the
        // bags we kept.
        while !expired.is_null() {
            // SAFETY: `expired` nodes are ours and were allocated by `Box` (`push_bag`).
            let node = unsafe { Box::from_raw(expired) };
            expired = node.next;
            drop(node); // runs the deferred functions
        }
    }

    /// One collection step: try to advance the epoch, then collect what expired.
    pub(super) fn collect_step(&self) {
        self.try_advance();
        self.collect();
    }
}
