//! Epoch-based memory reclamation: one global collector, used through [`pin`].
//!
//! Readers of a lock-free structure [`pin`] before loading shared pointers and keep the
//! [`Guard`] while they use what they loaded. A writer that unlinks an object hands its
//! destruction to [`Guard::defer_destroy`] (or [`Guard::defer`] / [`Guard::defer_unchecked`]
//! for any clean-up, e.g. returning a slot to a slab); it runs once every thread that was
//! pinned at the time of the retirement has unpinned. Fraser's epoch scheme ("Practical
//! lock-freedom", 2004, §5.2.3), as used by RCU-style structures such as Wormhole's
//! MetaTrieHT pair.
//!
//! # Design
//!
//! - **Global epoch**: a 64-bit counter, advanced only by `compare_exchange(g, g + 1)` and
//!   only when every pinned participant is pinned in epoch `g`.
//! - **Participants**: one record per thread, in a lock-free push-only registry list. A
//!   record is claimed by a thread's first [`pin`] (lazily created thread-local [`Handle`]),
//!   and freed for reuse when the thread exits, so the registry grows to the peak number of
//!   simultaneously live threads, not the number of threads ever started. A record holds
//!   `state = epoch << 1 | PINNED` (read by advancers), and owner-only counters.
//! - **Pinning** writes `state` and orders it before the critical section's loads, with one
//!   of two barriers chosen once per process ([`pin_barrier`]). By default a full fence at
//!   every pin (the *fenced* path). With the environment variable [`ASYMMETRIC_ENV`] set to
//!   `1`, on Linux, when `membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)` succeeds at
//!   the first use, an *asymmetric* barrier (a plain `Release` store and a compiler fence;
//!   the advancer pays a `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` syscall for every
//!   reader, the scheme of Linux userspace RCU's "memb" flavour). [`FALLBACK_ENV`], Miri and
//!   loom always get the fenced path. Nested guards only bump a counter.
//!
//!   Why the fenced path is the default (measured: `docs/results/epoch-pin.md`,
//!   `docs/results/epoch-grace.md`): the asymmetric pin makes readers cheaper, but every
//!   grace period then costs heavy barriers, each an IPI to the other running threads (a VM
//!   exit on a virtual machine), and structures that wait for grace periods on their write
//!   path (Wormhole's MetaTrieHT updates, even with one-barrier grace periods,
//!   [`GracePeriod`]) lose more on writes than their readers gain. So the fenced pin is the
//!   default and the asymmetric one is for read-mostly deployments that opt in. What would
//!   change that: batching several MetaTrieHT changes per grace period, or a per-structure
//!   choice of pin barrier.
//! - **Collection** is driven by garbage: every 128th outermost pin checks (one `Relaxed`
//!   load of the count of pending deferred functions) whether sealed bags wait, and only
//!   then tries to advance the epoch and runs up to 16 expired bags; sealing a full bag and
//!   [`Guard::flush`] do the same (a flush always tries to advance). So a read-only phase
//!   never advances (no syscall). On the asymmetric path a thread tries to advance at most
//!   once per 1024 units
//!   of its own work (an outermost pin counts 1, a deferred function 2), an advance first
//!   scans the records without the heavy barrier and gives up if someone is visibly pinned
//!   in an older epoch, and at most one thread issues the heavy barrier at a time (a
//!   try-lock; the others give up).
//! - **The garbage queue**: sealing threads push bags on a lock-free stack; one collector
//!   at a time (a try-lock; the others skip) moves them, oldest first, to a private FIFO and
//!   runs expired bags from its head (outside the lock). Each bag is touched a constant
//!   number of times, so a backlog drains in time linear in its size.
//! - **Deferred functions** go into the thread's open bag (64 entries, closures of up to
//!   three words stored inline). A full bag — or [`Guard::flush`], or the thread's exit — is
//!   *sealed* with the global epoch and pushed on a global lock-free stack; a sealed bag
//!   runs when the global epoch is at least its seal epoch + 2 (fenced path) or + 3
//!   (asymmetric path; see the argument below for the extra epoch). Any thread's collection step
//!   may run any thread's bags, so garbage of exited threads is not lost.
//! - **Thread-local destruction**: [`pin`] uses `LocalKey::try_with`; once the thread's
//!   handle is gone it registers a temporary record, owned by the returned guard and
//!   released (its bag queued) when the guard drops. No panic, no access to a dead
//!   thread-local.
//!
//! # Memory-ordering argument
//!
//! Names: a reader `T` pins with `S_T` (store of `state = e_T << 1 | 1`, where `e_T` was
//! loaded from the global epoch just before), then its barrier, then loads shared pointers
//! (`L_T`). A retiring thread `R` unlinks object `O` (store `U`), later seals the bag that
//! holds `O`'s destructor: fence `F_R` (SeqCst), then loads the global epoch `s` (the seal).
//! An advancer `A` loads the global epoch `g`, issues its barrier, reads every `state`
//! (Relaxed), fence (Acquire), then `compare_exchange(g, g + 1)` (AcqRel). A collector runs
//! `O`'s bag after an `Acquire` load of the global epoch returns at least `s + 2` (fenced)
//! or `s + 3` (asymmetric).
//!
//! Claim: if `T` can reach `O`, `T`'s critical section happens-before `O`'s destruction.
//! SeqCst fences are totally ordered (order `S`), and the C++20 coherence rule for them is
//! used throughout: if `X hb P`, `Q hb Y` for SeqCst fences `X`, `Y` and operations `P`, `Q`
//! on one atomic with `P` coherence-ordered before `Q`, then `X` precedes `Y` in `S`.
//! Two consequences: (a) a store sequenced before `X` is visible (it or a later store) to a
//! load sequenced after `Y` when `X` precedes `Y`; (b) if `P` reads epoch value `v` and `Q`
//! reads a larger one, or `P` is the CAS that wrote `v` and `Q` reads `v` or a larger one,
//! then `X` precedes `Y` (epoch values grow along the modification order).
//!
//! The end of every case is the same: *the scan of an advance reads `T`'s unpin or a later
//! store to `T`'s record*. The unpin is a `Release` store after the critical section; every
//! later store is also a release store sequenced after it (a re-pin of the same owner, or a
//! pin of a later owner, which claimed the record through a `Release`/`Acquire` pair after
//! the unpin). With the advancer's `Acquire` fence the critical section happens-before the
//! advance's CAS, which the collector's `Acquire` load synchronizes with (all later epoch
//! writes are read-modify-writes, so they continue its release sequence); hence it
//! happens-before the destruction.
//!
//! ## Fenced path
//!
//! `T`'s barrier is `F_T`, a SeqCst fence after `S_T`; `A`'s is `F_A`, a SeqCst fence
//! between its epoch load and its scan.
//!
//! 1. `F_R` before `F_T` in `S`: `U` is sequenced before `F_R`, so `T`'s loads after `F_T`
//!    see `U` (or later) by (a): `O` is already unreachable for `T`.
//! 2. `F_T` before `F_R`: first, `e_T <= s` — had `T` read a value written after `s`, by (b)
//!    `F_R` would precede `F_T`. The destruction needs the advance `A1` from `s + 1` to
//!    `s + 2`. `A1` loaded `s + 1` before `F_A1` and `R` loaded `s` after `F_R`, so by (b)
//!    `F_R` precedes `F_A1`; with `F_T` before `F_R`, `F_T` precedes `F_A1`, so by (a) `A1`'s
//!    scan reads `S_T` or a later `state` of `T`'s record (it also reaches the record: the
//!    registry push is sequenced before `S_T`). It cannot read `S_T` itself (pinned in
//!    `e_T <= s != s + 1` would have aborted the advance), so it reads the unpin or later.
//!
//! ## Asymmetric path
//!
//! `T`'s barrier is only a compiler fence; `A`'s is `F_Aa` (SeqCst fence), the heavy
//! barrier, `F_Ab` (SeqCst fence). membarrier(2) guarantees that before the syscall returns
//! every running thread of the process has executed a full memory barrier, and that threads
//! not running pass one when they are scheduled (the context switch). We model this as: for
//! every other thread `T`, a SeqCst fence `F_T^A` is executed at some point of `T`'s program
//! order (the interrupt or the context switch happens at an instruction boundary), with
//! `F_Aa` before `F_T^A` before `F_Ab` in `S`. The compiler fence makes `T`'s emitted
//! instruction order match its program order around the pin (`L_T` is not hoisted above
//! `S_T`), so `F_T^A` is either before `S_T` (hence before every `L_T`) or after it. This is
//! the standard treatment of an asymmetric fence (the light side is a signal fence, the heavy
//! side acts as a fence in every thread); for an advancer that is itself pinned, `F_T^A` is
//! its own `F_Aa`. The destruction needs the advances `A1` (`s + 1 -> s + 2`) and `A2`
//! (`s + 2 -> s + 3`). By (b), `F_R` precedes `F_A1a` and `F_A2a` (`R` read `s`, they read
//! `s + 1` and `s + 2`).
//!
//! 1. `F_T^A2` before `S_T`: `F_R` precedes `F_A2a`, which precedes `F_T^A2`, which is
//!    sequenced before every `L_T`: by (a) `T` sees `U`, `O` is unreachable for `T`.
//! 2. `F_T^A2` after `S_T`: `F_T^A2` precedes `F_A2b`, so by (a) `A2`'s scan reads `S_T` or
//!    a later store of `T`'s record (and reaches the record, as above). A later store is the
//!    unpin or after it: done. `S_T`
//!    itself does not abort `A2` only if `e_T = s + 2`; `T` then read the value `s + 2`,
//!    written by `A1`'s CAS, which is sequenced after `F_A1b`. Had `F_T^A1` come after `T`'s
//!    epoch load, (b) would put `F_A1b` before `F_T^A1`, contradicting the model; so
//!    `F_T^A1` is sequenced before the epoch load, hence before every `L_T`, and `F_R`
//!    precedes `F_A1a`, which precedes `F_T^A1`: by (a) `T` sees `U`.
//!
//! Why three epochs: with a lag of two, case 2 would need `F_R` before the barrier of the
//! advance `A0` (`s -> s + 1`) whose CAS `T` read, but `R` and `A0` both read `s`, so
//! nothing orders them: `R` may seal with `s` just before `A0`'s CAS, `T` then pins in
//! `s + 1` with a stale view of `O`'s link (its epoch load and `L_T` are not ordered without
//! a fence on weakly ordered hardware), and `A1` would see `T` pinned in the current epoch.
//! The retirer's own `F_R` is enough on this path (no heavy barrier when sealing): the
//! argument only needs `F_R` in `S`, ordered by (b) against the advancers' fences, which are
//! SeqCst fences in the advancer's own thread. Sealing is per 64 retirements, so its fence is
//! cheap anyway.
//!
//! If the heavy barrier ever failed after a successful registration (the kernel documents no
//! such case), the advance is abandoned: safe, reclamation only stalls.
//!
//! ## Common to both paths
//!
//! Monotonic CAS advances make each step `g -> g + 1` the work of exactly one advancer that
//! saw every pinned participant in `g`. A participant that pinned with a stale epoch only
//! delays advances (conservative). The asymmetric path's pre-scan without the barrier and
//! the advancers' try-lock only make advances give up, which is always safe.
//!
//! On x86/x86-64 (outside Miri) the fenced pin's `store` + `fence(SeqCst)` is replaced by
//! `swap(SeqCst)` + a compiler fence: a `lock`-prefixed instruction is a full barrier on x86
//! (the hardware guarantee the fence stands for), and `xchg` is cheaper than `mfence`. This
//! step rests on the x86 memory model rather than the language model, as in crossbeam-epoch.
//! Everywhere else, and under Miri, the portable fence is used.
//!
//! # Liveness: reclamation always makes progress
//!
//! Claim: if every critical section ends (every [`Guard`] is dropped after a finite time)
//! and threads keep using the collector (pins, retirements, flushes, grace periods), every
//! deferred function runs, and the functions pending at any moment are those retired
//! during the last few epochs plus what one preempted reader holds back.
//!
//! 1. *Who can block an advance.* The advance `g -> g + 1` is refused only by a record
//!    pinned in an epoch other than `g`. A pin stores the epoch it loaded just before, and
//!    the epoch only grows, so such a record is in a critical section whose epoch load
//!    came before the CAS that wrote `g`: a section that had already begun when the epoch
//!    became `g`. Those sections are finitely many and fixed at that moment; sections
//!    begun later load `g` (or more) and never refuse this advance. A thread that re-pins
//!    in a tight loop therefore blocks an advance only with the one section it was in when
//!    the epoch moved; a *preempted* reader blocks it for its time off the CPU (bounded
//!    by the scheduler: about one time slice; measurements in
//!    `docs/results/epoch-liveness.md`).
//! 2. *Participants that are gone never block.* A record is pinned exactly while its
//!    guard count is non-zero: the outermost unpin stores `state = 0` whatever happened to
//!    its handles (a [`Handle`] dropped while pinned only keeps the record claimed until
//!    the guard drops, then releases it). A thread's own record is released by its
//!    thread-local destructor at exit, and a pin from a later thread-local destructor
//!    uses a temporary record owned by its guard. So an exited thread, a dropped handle
//!    or a released record is never pinned, and free records are skipped by nothing but
//!    their `state` (zero).
//! 3. *Someone tries.* While sealed bags wait, an advance is tried by every seal of a full
//!    bag, every [`Guard::flush`] (and [`synchronize`]), every [`GracePeriod::start`] whose
//!    scan allows it, and every 128th outermost pin of every thread (on the asymmetric
//!    path, at most once per 1024 units of the thread's work). So once the blocking
//!    sections of step 1 have ended, the next try advances; two (fenced) or three
//!    (asymmetric) such rounds past a bag's seal make it expired.
//! 4. *Expired bags run.* Every try above is followed by a collection step that runs up to
//!    16 expired bags from the head of the FIFO, and every seal comes with one, so the
//!    queue drains at least 16 times as fast as a retiring thread fills it. Seal epochs
//!    follow push order except for a pusher delayed between its seal and its push; its bag
//!    waits behind younger ones only until they expire (later, never too early).
//!
//! What does block reclamation, by design of any epoch scheme: a guard that is never
//! dropped (`mem::forget`, a thread blocked forever while pinned, a thread that waits while
//! pinned for something that needs a grace period), and, after `fork`, the child's copies
//! of records pinned by threads that do not exist in the child. And without activity
//! nothing runs: sealed bags wait for the next pin, retirement or flush of any thread, and
//! an open bag (fewer than 64 functions) for its thread to fill it, flush or exit; there is
//! no background thread. A structure that retires something large and may then go idle
//! flushes (Mercury does after an expansion).
//!
//! ## Checking

//!
//! The collector is one process-wide static with thread-local records, which loom cannot
//! reset between iterations, so loom checks a *model* of the protocol instead
//! (`sync/loom.rs`, `epoch_model`: one reader, one retirer, one advancer-collector, the
//! orderings and fences of the real code). Loom cannot run a fence on another thread's
//! behalf, so the model makes the reader serve heavy-barrier requests at every instruction
//! boundary (a `SeqCst` fence and an acknowledgement the advancer waits for): by the fence
//! rules this is exactly the membarrier guarantee used above. Loom finds no violation for
//! the fenced pin with lag 2 and the asymmetric pin with lag 3, and finds the race (a free
//! concurrent with the reader's read) for the asymmetric pin with lag 2 and for a
//! compiler-fence pin without the heavy barrier
//! (`RUSTFLAGS="--cfg loom" cargo test -p orrery-core --release sync::loom::epoch_model`).
//! Beyond the model, the asymmetric path rests on membarrier's documented guarantee.
//! The tests in `sync::tests::epoch` check both paths at run time: the epoch tests run
//! in the test process (fenced, the default) and again in a child process with
//! [`ASYMMETRIC_ENV`] set (asymmetric where the kernel allows); a store-buffering litmus test shows the heavy barrier
//! forbids the reordering the compiler-fence pin allows (without it the forbidden outcome
//! shows up hundreds of times); Miri runs the single-threaded tests on the fenced path.
//! Liveness is checked by `epoch_reclamation_keeps_up_with_busy_readers` (two readers
//! re-pinning continuously, a retirer of 4M objects: all destroyed within the deadline,
//! at most half pending at once; it prints the maximum)
//! and `epoch_finished_participants_do_not_hold_the_epoch`.
//!
//! # Usage
//!
//! - Simple tier: [`pin`] anywhere (one thread-local lookup).
//! - Fast tier: keep a [`Handle`] ([`handle`] for the thread's own record, or
//!   [`Handle::register`]) where a hot loop can reach it and call [`Handle::pin`].
//! - Writers retire with [`Guard::defer_destroy`] (a `Box`), [`Guard::defer_unchecked`]
//!   (e.g. `SlabPool::free`), or wait for a grace period with [`synchronize`] (RCU-style
//!   reuse of the old version, as Wormhole does with its two MetaTrieHT tables).
//! - [`Guard::flush`] hands a partly filled bag over at once (for tests and quiescent points).
//!
//! # Performance
//!
//! On the fenced path the outermost pin is one `xchg` (a locked instruction, the full fence)
//! plus a few owner-only stores; on the asymmetric path it is a plain store instead;
//! unpinning is a plain release store either way, and a nested pin only bumps a counter. A
//! deferred function costs a 32-byte slot in the thread's bag, no allocation when it fits in
//! three words; sealing and collection are amortized over the 64 entries of a bag. The
//! asymmetric pin saves the reader the locked instruction, and its retirements cost more
//! (the amortized syscall, and garbage that lives one epoch longer and across fewer
//! advances, so frees touch colder memory). Criterion benches against crossbeam-epoch and
//! for both barriers: `cargo bench -p orrery-core --bench sync -- epoch/` (figures:
//! `docs/results/core-sync.md`).
//!
//! # Limits
//!
//! A thread that stays pinned blocks reclamation for everyone (keep critical sections
//! short). Deferred functions must not panic: a panic propagates out of the pin or flush
//! that ran it, and the rest of that bag is leaked (never run twice).

mod deferred;
mod global;
mod grace;
mod guard;
mod membarrier;
mod participant;

pub use grace::GracePeriod;
#[cfg(all(test, not(loom)))]
pub(crate) use guard::pinned_epochs;
pub use guard::{
    Guard, Handle, PinBarrier, flush_until, global_epoch, handle, is_pinned, pending_deferred, pin,
    pin_barrier, registry_len, synchronize, unprotected,
};
pub use membarrier::{ASYMMETRIC_ENV, FALLBACK_ENV};
#[cfg(all(test, not(loom)))]
pub(crate) use membarrier::{heavy_barrier, supported as membarrier_supported};
