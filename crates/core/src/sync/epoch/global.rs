//! The process-wide collector state: the global epoch (and the pin barrier mode next to
//! it), the registry of participant records and the queue of sealed bags. The
//! memory-ordering argument is in the [parent module's docs](super).

use super::deferred::Bag;
use super::membarrier;
use super::participant::{PINNED, Participant};
use crate::sync::CachePadded;
use crate::sync::primitive::epoch_atomic::{
    AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence,
};
use std::cell::UnsafeCell;
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

/// The sealed bags waiting for their epoch to expire.
///
/// Sealing threads push onto `incoming`, a lock-free Treiber stack (never blocked). One
/// collector at a time (the `collecting` try-lock; the others skip, the holder does the
/// work) moves the incoming bags, oldest first, to the tail of `fifo`, a private singly
/// linked queue in push order, then unlinks expired bags from its head. Every bag is
/// visited once when it is moved and once when it is run, so draining a backlog of `n` bags
/// costs `O(n)` in all, whatever the number of collection steps it takes.
struct Garbage {
    /// Head of the stack of bags sealed since the last collection step moved them.
    incoming: AtomicPtr<SealedBag>,
    /// Held by the thread that touches `fifo` (a try-lock: `Acquire` on taking it, `Release`
    /// on leaving it, so each holder sees the previous holder's `fifo` writes).
    collecting: AtomicBool,
    /// Head and tail of the queue of moved bags, oldest pushed first; only the holder of
    /// `collecting` reads or writes it.
    fifo: UnsafeCell<Fifo>,
    /// Deferred functions in sealed bags that have not run yet (incoming and queued).
    pending: AtomicUsize,
}

/// The collector-owned queue of [`Garbage::fifo`].
struct Fifo {
    head: *mut SealedBag,
    tail: *mut SealedBag,
}

// SAFETY: `fifo` is touched only by the holder of the `collecting` try-lock (acquire/release
// hand-over); everything else is atomic. The bags it points to are owned by the queue.
unsafe impl Sync for Garbage {}

/// The one global collector.
pub(super) struct Global {
    epoch: CachePadded<EpochWord>,
    participants: CachePadded<Registry>,
    garbage: CachePadded<Garbage>,
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
    garbage: CachePadded::new(Garbage {
        incoming: AtomicPtr::new(ptr::null_mut()),
        collecting: AtomicBool::new(false),
        fifo: UnsafeCell::new(Fifo {
            head: ptr::null_mut(),
            tail: ptr::null_mut(),
        }),
        pending: AtomicUsize::new(0),
    }),
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
        self.garbage
            .pending
            .fetch_add(bag.bag.len(), Ordering::Relaxed);
        let node = Box::into_raw(bag);
        let incoming = &self.garbage.incoming;
        let mut head = incoming.load(Ordering::Relaxed);
        loop {
            // SAFETY: `node` is a fresh allocation owned by us until the CAS publishes it.
            unsafe { (*node).next = head };
            // Release: publishes the node's contents (and `next`) to the collector's
            // `Acquire` swap. A Treiber push never dereferences `head`, so it is ABA-safe.
            match incoming.compare_exchange_weak(head, node, Ordering::Release, Ordering::Relaxed) {
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
        self.garbage.pending.load(Ordering::Relaxed) != 0
    }

    /// Deferred functions in sealed bags that have not run yet (`Relaxed`; a snapshot for
    /// diagnostics and tests: open bags of live threads are not counted).
    pub(super) fn pending(&self) -> usize {
        self.garbage.pending.load(Ordering::Relaxed)
    }

    /// Runs the bags whose epoch has expired (global epoch at least two past their seal on
    /// the fenced path, three on the asymmetric path), oldest pushed first, at most
    /// [`COLLECT_MAX_BAGS`] of them. Returns at once if another thread is collecting (it
    /// does the same work).
    pub(super) fn collect(&self) {
        let garbage = &self.garbage;
        if garbage.pending.load(Ordering::Relaxed) == 0
            || garbage.collecting.load(Ordering::Relaxed)
            || garbage
                .collecting
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        // SAFETY: we hold the `collecting` try-lock, the only licence to touch `fifo`.
        let fifo = unsafe { &mut *garbage.fifo.get() };
        // Move the incoming bags (newest first on the stack) to the tail, oldest first.
        // Acquire: pairs with the pushers' `Release` CAS (the nodes' contents).
        let mut list = garbage.incoming.swap(ptr::null_mut(), Ordering::Acquire);
        let mut reversed: *mut SealedBag = ptr::null_mut();
        let moved_tail = list;
        while !list.is_null() {
            // SAFETY: taken off the stack by our swap: we own the nodes.
            let next = unsafe { (*list).next };
            // SAFETY: as above.
            unsafe { (*list).next = reversed };
            reversed = list;
            list = next;
        }
        if !reversed.is_null() {
            if fifo.tail.is_null() {
                fifo.head = reversed;
            } else {
                // SAFETY: `tail` is a node of the queue, owned by the lock holder.
                unsafe { (*fifo.tail).next = reversed };
            }
            fifo.tail = moved_tail;
        }
        // Acquire: synchronizes with the advance that stored this epoch (and, all epoch
        // writes being read-modify-writes, with every earlier advance).
        let epoch = self.epoch.epoch.load(Ordering::Acquire);
        let lag = self.expiry_lag();
        let first = fifo.head;
        let mut last: *mut SealedBag = ptr::null_mut();
        let mut n_expired = 0;
        // The queue is in push order; seal epochs are nearly ordered the same way (a pusher
        // delayed between its seal and its push lands behind younger bags, and then waits
        // for them: only later, never too early).
        while n_expired < COLLECT_MAX_BAGS && !fifo.head.is_null() {
            let node = fifo.head;
            // SAFETY: a queue node, owned by the lock holder.
            let node_ref = unsafe { &*node };
            let (sealed, next) = (node_ref.epoch, node_ref.next);
            if epoch < sealed + lag {
                break;
            }
            last = node;
            fifo.head = next;
            n_expired += 1;
        }
        if fifo.head.is_null() {
            fifo.tail = ptr::null_mut();
        }
        if !last.is_null() {
            // SAFETY: `last` was unlinked from the queue above and is ours.
            unsafe { (*last).next = ptr::null_mut() };
        }
        // Release: hands `fifo` over to the next holder.
        garbage.collecting.store(false, Ordering::Release);
        // Run the expired bags outside the lock, so a long or panicking deferred function
        // neither blocks other collectors nor loses the queued bags.
        let mut expired = if last.is_null() {
            ptr::null_mut()
        } else {
            first
        };
        while !expired.is_null() {
            // SAFETY: the expired chain was unlinked above; its nodes were allocated by
            // `Box` (`push_bag`) and are owned by us alone.
            let node = unsafe { Box::from_raw(expired) };
            expired = node.next;
            garbage.pending.fetch_sub(node.bag.len(), Ordering::Relaxed);
            drop(node); // runs the deferred functions
        }
    }

    /// One collection step: try to advance the epoch, then collect what expired.
    pub(super) fn collect_step(&self) {
        self.try_advance();
        self.collect();
    }
}
