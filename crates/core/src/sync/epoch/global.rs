//! The process-wide collector state: the global epoch (and the pin barrier mode next to
//! it), the registry of participant records and the queue of sealed bags. The
//! memory-ordering argument is in the [parent module's docs](super).

use super::deferred::Bag;
use super::membarrier;
use super::participant::{PINNED, Participant};
use crate::sync::CachePadded;
use crate::sync::primitive::epoch_atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering, fence};
use std::ptr;

/// How many sealed bags one [`Global::collect`] call frees at most, to bound the pause it
/// adds to the pin that triggered it. Small under Miri to exercise the re-queueing path.
const COLLECT_MAX_BAGS: usize = if cfg!(miri) { 2 } else { 16 };

/// [`EpochWord::mode`] before the first participant is registered.
const MODE_UNKNOWN: u64 = 0;
/// Pins issue a full fence (the default and portable path; see
/// [`ASYMMETRIC_ENV`](membarrier::ASYMMETRIC_ENV)).
const MODE_FENCED: u64 = 1;
/// Pins issue a compiler fence; advancers issue the membarrier heavy barrier.
const MODE_ASYMMETRIC: u64 = 2;

/// A sealed bag runs once the global epoch is at least its seal epoch plus this, on the
/// fenced path (case analysis in the module docs).
const EXPIRY_LAG_FENCED: u64 = 2;
/// The same on the asymmetric path: one more epoch, because a reader has no fence of its own
/// that orders its epoch load with the retirer's seal (module docs).
const EXPIRY_LAG_ASYMMETRIC: u64 = 3;

/// A bag of deferred functions, sealed with the global epoch observed after its last
/// function was deferred, in the global queue (an intrusive Treiber stack).
pub(super) struct SealedBag {
    /// The global epoch read (after a `SeqCst` fence) when the bag was sealed; the bag may
    /// run once the global epoch is `epoch + 2` or more (`epoch + 3` on the asymmetric path).
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

/// The words every pin reads, on one cache line: written only by advances (rare) and once by
/// the mode choice.
struct EpochWord {
    /// The global epoch. Only ever changed by `compare_exchange(g, g + 1)` (so it is
    /// monotonic and every modification is a read-modify-write: a reader that observes any
    /// value synchronizes with every earlier advance).
    epoch: AtomicU64,
    /// How pins order their state (`MODE_*`): set once, from `MODE_UNKNOWN`, before the
    /// first participant record is handed out, and never changed again.
    mode: AtomicU64,
}

/// The registry head and the advancers' try-lock (both read or written by advances only).
struct Registry {
    /// Head of the registry: a push-only list of leaked participant records (never freed,
    /// reused when their owner exits).
    head: AtomicPtr<Participant>,
    /// Held while an asymmetric advance is in progress: a second advancer gives up instead of
    /// issuing a second heavy barrier for the same step.
    advancing: AtomicBool,
}

/// The one global collector.
pub(super) struct Global {
    epoch: CachePadded<EpochWord>,
    participants: CachePadded<Registry>,
    /// Head of the stack of sealed bags waiting for their epoch to expire.
    garbage: CachePadded<AtomicPtr<SealedBag>>,
}

/// The collector every [`pin`](super::pin) uses.
pub(super) static GLOBAL: Global = Global {
    epoch: CachePadded::new(EpochWord {
        epoch: AtomicU64::new(0),
        mode: AtomicU64::new(MODE_UNKNOWN),
    }),
    participants: CachePadded::new(Registry {
        head: AtomicPtr::new(ptr::null_mut()),
        advancing: AtomicBool::new(false),
    }),
    garbage: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
};

impl Global {
    /// The global epoch (`Relaxed`; what a pinning thread records).
    #[inline(always)]
    pub(super) fn epoch_relaxed(&self) -> u64 {
        self.epoch.epoch.load(Ordering::Relaxed)
    }

    /// Whether pins use the asymmetric (compiler-fence) barrier. Only meaningful once the
    /// mode is chosen, which [`acquire_participant`](Global::acquire_participant) ensures
    /// before any record can pin: the mode never changes afterwards, so a `Relaxed` load by a
    /// thread that owns a record reads the final value. Constant `false` in builds without
    /// membarrier.
    #[inline(always)]
    pub(super) fn asymmetric(&self) -> bool {
        membarrier::SUPPORTED && self.epoch.mode.load(Ordering::Relaxed) == MODE_ASYMMETRIC
    }

    /// Chooses the pin barrier mode once per process (first call; later calls return at
    /// once): asymmetric if membarrier registration succeeds and the fallback is not forced
    /// through the environment, else fenced. Returns whether the mode is asymmetric.
    pub(super) fn choose_mode(&self) -> bool {
        // Acquire: a thread that finds the mode chosen by another also sees that thread's
        // registration (the syscall came before the `Release` CAS below).
        let mut mode = self.epoch.mode.load(Ordering::Acquire);
        if mode == MODE_UNKNOWN {
            mode = self.choose_mode_slow();
        }
        mode == MODE_ASYMMETRIC
    }

    #[cold]
    fn choose_mode_slow(&self) -> u64 {
        let wanted =
            if membarrier::SUPPORTED && !membarrier::fallback_forced() && membarrier::register() {
                MODE_ASYMMETRIC
            } else {
                MODE_FENCED
            };
        // Racing first users: the first CAS decides (registering twice is harmless).
        match self.epoch.mode.compare_exchange(
            MODE_UNKNOWN,
            wanted,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => wanted,
            Err(chosen) => chosen,
        }
    }

    /// How many epochs past its seal a bag waits before it runs (mode dependent).
    fn expiry_lag(&self) -> u64 {
        if self.asymmetric() {
            EXPIRY_LAG_ASYMMETRIC
        } else {
            EXPIRY_LAG_FENCED
        }
    }

    /// Takes a free participant record for a new owner, reusing the record of an exited
    /// owner when one is free, else allocating (and leaking) a new one. The returned record
    /// has no guards and no handles. Chooses the pin barrier mode first, so that no record
    /// can pin before the mode is final.
    pub(super) fn acquire_participant(&self) -> &'static Participant {
        self.choose_mode();
        let mut cur = self.participants.head.load(Ordering::Acquire);
        // SAFETY: records are leaked `Box`es, never freed: any pointer in the list is valid
        // for `'static`.
        while let Some(record) = unsafe { cur.as_ref() } {
            if record.try_claim() {
                return record;
            }
            cur = record.next.load(Ordering::Acquire);
        }
        let record: &'static Participant = Box::leak(Box::new(Participant::new_claimed()));
        let mut head = self.participants.head.load(Ordering::Relaxed);
        loop {
            record.next.store(head, Ordering::Relaxed);
            match self.participants.head.compare_exchange_weak(
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
        let mut cur = self.participants.head.load(Ordering::Acquire);
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
        bag.epoch = self.epoch.epoch.load(Ordering::Relaxed);
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
        if self.asymmetric() {
            self.try_advance_asymmetric()
        } else {
            self.try_advance_fenced()
        }
    }

    /// [`try_advance`](Global::try_advance) on the fenced path (pins issue a full fence).
    fn try_advance_fenced(&self) -> u64 {
        let global = self.epoch.epoch.load(Ordering::Relaxed);
        // `F_A` of the argument: orders the epoch load before the scan, and the scan after
        // every pin whose fence precedes this one.
        fence(Ordering::SeqCst);
        if !self.all_pinned_in(global) {
            return global;
        }
        self.finish_advance(global)
    }

    /// [`try_advance`](Global::try_advance) on the asymmetric path (pins issue a compiler
    /// fence only): the heavy barrier stands for every reader's fence.
    fn try_advance_asymmetric(&self) -> u64 {
        let global = self.epoch.epoch.load(Ordering::Relaxed);
        // A scan without the barrier first: a participant seen pinned in an older epoch
        // (even through a stale view) makes us give up before paying for the syscall.
        // Giving up is always safe; it only delays the advance.
        if !self.all_pinned_in(global) {
            return global;
        }
        // One heavy barrier at a time: the others give up (the advance is being tried).
        let lock = &self.participants.advancing;
        if lock.load(Ordering::Relaxed)
            || lock
                .compare_exchange(false, true, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return global;
        }
        // `F_Aa`, the heavy barrier (a fence `F_T` in every other thread, between `F_Aa` and
        // `F_Ab` in the SeqCst order), `F_Ab`, then the scan. The explicit fences make the
        // argument independent of the kernel's own barriers at syscall entry and exit.
        fence(Ordering::SeqCst);
        let barrier = membarrier::heavy_barrier();
        fence(Ordering::SeqCst);
        // Without the barrier nothing orders the readers' state stores: do not advance (the
        // kernel never refuses after a successful registration).
        debug_assert!(barrier, "membarrier failed after a successful registration");
        let result = if barrier && self.all_pinned_in(global) {
            self.finish_advance(global)
        } else {
            global
        };
        lock.store(false, Ordering::Relaxed);
        result
    }

    /// The barrier that opens a grace period (`grace.rs`), after the caller's update and
    /// before its scan of the records: a `SeqCst` fence on the fenced path; on the
    /// asymmetric path `F_Aa`, the heavy barrier, `F_Ab`, exactly as an advance. The heavy
    /// barrier is retried (yielding) if the kernel refuses it, which it never does after a
    /// successful registration (then `heavy_barrier` also registers again).
    pub(super) fn grace_barrier(&self) {
        fence(Ordering::SeqCst);
        if self.asymmetric() {
            while !membarrier::heavy_barrier() {
                debug_assert!(false, "membarrier failed after a successful registration");
                std::thread::yield_now();
            }
            fence(Ordering::SeqCst);
        }
    }

    /// Calls `f` on every record of the registry (used and free).
    pub(super) fn for_each_record(&self, mut f: impl FnMut(&'static Participant)) {
        let mut cur = self.participants.head.load(Ordering::Acquire);
        // SAFETY: records are never freed (see `acquire_participant`).
        while let Some(record) = unsafe { cur.as_ref() } {
            f(record);
            cur = record.next.load(Ordering::Acquire);
        }
    }

    /// Completes an advance from `global` whose barrier and scan the caller did itself (a
    /// grace period's, `grace.rs`: the epoch loaded before its barrier, no participant seen
    /// pinned in another epoch by the scan after it). Returns the epoch as left or found.
    pub(super) fn advance_after_scan(&self, global: u64) -> u64 {
        self.finish_advance(global)
    }

    /// Scans the registry: false if some participant is pinned in an epoch other than
    /// `global` (`Relaxed` loads of the states; the callers' fences order them).
    fn all_pinned_in(&self, global: u64) -> bool {
        let mut cur = self.participants.head.load(Ordering::Acquire);
        // SAFETY: records are never freed (see `acquire_participant`).
        while let Some(record) = unsafe { cur.as_ref() } {
            let state = record.state.load(Ordering::Relaxed);
            if state & PINNED != 0 && state >> 1 != global {
                return false;
            }
            cur = record.next.load(Ordering::Acquire);
        }
        true
    }

    /// The end of an advance whose scan found nobody pinned in an older epoch.
    fn finish_advance(&self, global: u64) -> u64 {
        // Everything the unpinned participants did before unpinning (their `Release` stores
        // read by the scan) happens-before the advance, hence before any destruction that
        // the new epoch allows.
        fence(Ordering::Acquire);
        match self.epoch.epoch.compare_exchange(
            global,
            global + 1,
            Ordering::AcqRel,
            Ordering::Relaxed,
        ) {
            Ok(_) => global + 1,
            Err(now) => now,
        }
    }

    /// Whether sealed bags wait on the global queue (`Relaxed`, a hint for the periodic
    /// collection step of pins).
    #[inline]
    pub(super) fn has_garbage(&self) -> bool {
        !self.garbage.load(Ordering::Relaxed).is_null()
    }

    /// Runs the bags whose epoch has expired (global epoch at least two past their seal on
    /// the fenced path, three on the asymmetric path),
    /// at most [`COLLECT_MAX_BAGS`] of them; the rest go back on the queue.
    pub(super) fn collect(&self) {
        if self.garbage.load(Ordering::Relaxed).is_null() {
            return;
        }
        // Take the whole stack: no ABA, and the taken nodes are ours alone.
        let mut list = self.garbage.swap(ptr::null_mut(), Ordering::Acquire);
        // Acquire: synchronizes with the advance that stored this epoch (and, all epoch
        // writes being read-modify-writes, with every earlier advance).
        let epoch = self.epoch.epoch.load(Ordering::Acquire);
        let lag = self.expiry_lag();
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
            if n_expired < COLLECT_MAX_BAGS && epoch >= sealed + lag {
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
