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
//! - **Pinning** writes `state` and issues a full fence; nested guards only bump a counter.
//!   Every 128th outermost pin runs a collection step (try to advance, then run up to 16
//!   expired bags).
//! - **Deferred functions** go into the thread's open bag (64 entries, closures of up to
//!   three words stored inline). A full bag — or [`Guard::flush`], or the thread's exit — is
//!   *sealed* with the global epoch and pushed on a global lock-free stack; a sealed bag
//!   runs when the global epoch is at least its seal epoch + 2. Any thread's collection step
//!   may run any thread's bags, so garbage of exited threads is not lost.
//! - **Thread-local destruction**: [`pin`] uses `LocalKey::try_with`; once the thread's
//!   handle is gone it registers a temporary record, owned by the returned guard and
//!   released (its bag queued) when the guard drops. No panic, no access to a dead
//!   thread-local.
//!
//! # Memory-ordering argument
//!
//! Names: a reader `T` pins with `S_T` (store of `state = e_T << 1 | 1`, where `e_T` was
//! loaded from the global epoch just before), then fence `F_T` (SeqCst), then loads shared
//! pointers. A retiring thread `R` unlinks object `O` (store `U`), later seals the bag that
//! holds `O`'s destructor: fence `F_R` (SeqCst), then loads the global epoch `s` (the seal).
//! An advancer `A` loads the global epoch `g`, fence `F_A` (SeqCst), reads every `state`
//! (Relaxed), fence (Acquire), then `compare_exchange(g, g + 1)` (AcqRel). A collector runs
//! `O`'s bag after an `Acquire` load of the global epoch returns at least `s + 2`.
//!
//! Claim: if `T` can reach `O`, `T`'s critical section happens-before `O`'s destruction.
//! SeqCst fences are totally ordered (order `S`):
//!
//! 1. `F_R` before `F_T` in `S`: `U` is sequenced before `F_R`, so `T`'s loads after `F_T`
//!    see `U` (or later): `O` is already unreachable for `T`.
//! 2. `F_T` before `F_R`: first, `e_T <= s` — had `T` read a value written after `s`, the
//!    load of `s` after `F_R` would be coherence-ordered before `T`'s load before `F_T`,
//!    forcing `F_R` before `F_T` in `S`. The destruction needs the advance `A1` from `s + 1`
//!    to `s + 2`. `A1` loaded `s + 1` before `F_A1`, and `R` loaded `s` after `F_R`, so by the
//!    same coherence rule `F_R` precedes `F_A1`; with `F_T` before `F_R`, `F_T` precedes
//!    `F_A1`, so `A1`'s scan reads `S_T` or a later `state` of `T`'s record. It cannot read
//!    `S_T` itself (pinned in `e_T <= s != s + 1` would have aborted the advance), so it reads
//!    `T`'s unpin (a `Release` store) or a later store — a re-pin or another owner's pin,
//!    each a release store sequenced after that unpin (ownership changes go through a
//!    `Release`/`Acquire` pair on the record). With `A1`'s `Acquire` fence, `T`'s critical
//!    section happens-before `A1`'s CAS, which the collector's `Acquire` load synchronizes
//!    with (all later epoch writes are read-modify-writes, so they continue its release
//!    sequence). Hence it happens-before the destruction.
//!
//! Monotonic CAS advances make each step `g -> g + 1` the work of exactly one advancer that
//! saw every pinned participant in `g`. A participant that pinned with a stale epoch only
//! delays advances (conservative).
//!
//! On x86/x86-64 (outside Miri) the pin's `store` + `fence(SeqCst)` is replaced by
//! `swap(SeqCst)` + a compiler fence: a `lock`-prefixed instruction is a full barrier on x86
//! (the hardware guarantee the fence stands for), and `xchg` is cheaper than `mfence`. This
//! step rests on the x86 memory model rather than the language model, as in crossbeam-epoch.
//! Everywhere else, and under Miri, the portable fence is used.
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
//! Single-threaded cost of each call (criterion, median of 5 runs of the median estimate;
//! 2-core virtualized AMD EPYC shared with other builds, load average about 13, so absolute
//! figures are inflated and noisy, the comparison within a run is what matters):
//!
//! | operation | orrery | crossbeam-epoch 0.9 |
//! |---|---|---|
//! | `pin()` + drop (thread-local lookup) | 10.4 ns | 17.0 ns |
//! | `Handle::pin` + drop | 9.4 ns | 9.6 ns |
//! | nested `pin()` + drop (already pinned) | 3.7 ns | 8.1 ns |
//! | pin + `defer(no-op)` + drop (sealing and collection amortized) | 43.9 ns | 55.2 ns |
//! | pin + `Box::new` + `defer_destroy` + drop (free included) | 142.9 ns | 147.6 ns |
//!
//! `cargo bench -p orrery-core --bench sync -- epoch/`. The outermost pin is one `xchg`
//! (a locked instruction, the full fence) plus a few owner-only stores; unpinning is a plain
//! release store. A deferred function costs a 32-byte slot in the thread's bag, no allocation
//! when it fits in three words.
//!
//! # Limits
//!
//! A thread that stays pinned blocks reclamation for everyone (keep critical sections
//! short). Deferred functions must not panic: a panic propagates out of the pin or flush
//! that ran it, and the rest of that bag is leaked (never run twice).

mod deferred;
mod global;
mod guard;
mod membarrier;
mod participant;

pub use guard::{
    Guard, Handle, PinBarrier, global_epoch, handle, is_pinned, pin, pin_barrier, registry_len,
    synchronize, unprotected,
};
pub use membarrier::FALLBACK_ENV;
#[cfg(test)]
pub(crate) use membarrier::{heavy_barrier, supported as membarrier_supported};
