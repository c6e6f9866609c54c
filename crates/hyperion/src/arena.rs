//! Arenas (§3.2 "Arenas"): the 256 tries `T_b` (keys by first byte `b`), mapped round-robin
//! onto `n` arenas, each with its own memory manager and lock.
//!
//! # Protocol
//!
//! Each arena has an `orrery_core::sync::RwSpinLock` over its tries and memory manager,
//! and a version word (a seqlock through `orrery_core::sync::VersionField`: bit 0 set —
//! odd — while a write changes the arena, the counter above it advanced by every write).
//!
//! - **Writers** take the write lock for the whole read-modify-write (so `compute` and
//!   `update` are atomic). [`ArenaInner::write`] looks the key up and decides with the
//!   version even; only the change itself (allocations, splices, moves, frees, and the
//!   publication of the trie's root in the [`View`]) runs with the version odd, and the
//!   version is made even again when the change ends, fails or unwinds.
//! - **Point readers** (`get`, `get_with`, `contains_key`, `get_many`) are optimistic:
//!   pinned in an `orrery_core::sync` epoch, they read their key's trie's version
//!   (waiting, with bounded backoff, while it is odd; `get_many` one per key of its
//!   window) — run the checked lookup of `opt.rs` on the [`View`] — the
//!   roots, the root values and the memory manager's bin directory, all atomics — copying
//!   the value into a buffer, and validate the version: unchanged means no write (of that
//!   trie) began since, so the copy is what the arena held when the version was read;
//!   only then is the value handed out. A failed attempt is retried; after [`OPT_TRIES`] attempts the
//!   reader takes the arena's lock — exclusively, because the shared side of this
//!   writer-preferring lock let a continuous writer starve readers (see
//!   [`Arena::get_with`]) — so no reader retries forever.
//! - Everything an optimistic reader may still be reading when a writer frees it — bin
//!   memory unmapped or moved, bin directory tables, extended heap blocks, root values —
//!   is retired through the epoch collector, not freed (`mm.rs`, "Optimistic readers").
//! - Each trie also has a version (`View::tseq`), made odd after the arena's and even
//!   before it by a write of a key of that trie; optimistic scans and point reads of one
//!   key validate against it ([`Arena::optimistic`] says why that is sound), so writes
//!   to the arena's other tries do not tear them.
//! - **Scans** copy one batch from one trie at a time (`iter.rs`, "Locks and optimistic
//!   copies"): under the arena's shared lock if it is free at once
//!   ([`Arena::try_scan_lock`]); else optimistically ([`Arena::optimistic`]: pinned, the
//!   walk on checked atomic reads, the trie's version validated before each pair is
//!   kept), so neither a lock holder nor writers of the arena's other tries hold the scan
//!   up, and the scan holds no writer up; after a few attempts torn by writes of that
//!   very trie, under [`Arena::scan_lock`]: the shared side when it opens within
//!   [`WAIT_ROUNDS`] backoff steps; else the scan announces itself in `scans_waiting`
//!   (writers about to take the lock give way for at most [`GIVE_WAY_ROUNDS`] steps,
//!   [`Arena::write`]) and then takes the exclusive side, competing with writers on equal
//!   terms, as a point read's fallback does. So a continuous writer cannot starve a scan
//!   (the shared side of the writer-preferring lock alone let it, for seconds to
//!   minutes), and a waiting scan delays a writer by a bounded time.
//! - A scan reads only the arena of the trie it copies from: tries that are empty in the
//!   [`View`] (no root, no root value; [`Arena::trie_is_empty`]) and the empty key when
//!   absent are skipped.
//!
//! No reader waits for writers of *other* arenas, and point readers of one arena never
//! write a shared word (a pin writes the thread's own epoch record; a scan writes the
//! arena's lock word and, when it waits, `scans_waiting`).
//!
//! # Tries
//!
//! Trie `T_b` stores the keys `b·rest` as `rest` below its root container; the key `[b]`
//! itself is the trie's root value, and the empty key lives in arena 0. Root values are
//! kept on the heap (at most 257 of them in the whole index).

use std::ops::{Bound, ControlFlow};
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

use orrery_core::api::Result;
use orrery_core::sync::{RwSpinLock, RwSpinReadGuard, RwSpinWriteGuard};

use crate::mm::{Dirs, Hp, MemoryManager};
use crate::node::{self};
#[cfg(test)]
use crate::node::{HEADER, used};
use crate::opt;
use crate::seq::{SEQ, Window, begin};

pub(crate) use orrery_core::api::Decision;

/// Optimistic attempts of a point read before it takes the arena's lock.
pub(crate) const OPT_TRIES: usize = 8;

/// Backoff steps (`orrery_core::sync::Backoff::snooze`: spins, then yields) an attempt
/// waits, at most, for a write in progress to end.
const WAIT_ROUNDS: usize = 24;

/// Backoff steps a writer waits, at most, for the scans waiting for its arena's lock to
/// get it ([`Arena::write`]).
const GIVE_WAY_ROUNDS: usize = 2 * WAIT_ROUNDS;

/// Spinning backoff steps an optimistic scan attempt ([`Arena::optimistic`]) waits for a
/// write in progress before it counts as torn.
const SCAN_SPINS: usize = 8;

/// What optimistic readers of an arena read without its lock: the roots of its tries, its
/// root values and its memory manager's bin directory. Written only by the holder of the
/// write lock, while the arena's version is odd.
pub(crate) struct View {
    /// The arena's version ([`SEQ`]): odd while a write changes the arena.
    seq: AtomicU64,
    /// Trie `b`'s version ([`SEQ`]): odd while a write of a key of trie `b` changes the
    /// arena (it is made odd after `seq` and even before it). Optimistic scans validate
    /// against it, so writes to other tries of the arena do not tear them (see
    /// [`Arena::optimistic`] for why that is sound).
    tseq: [AtomicU64; 256],
    /// Trie `b`'s root container: `hp | 1 << 63`, or 0.
    roots: [AtomicU64; 256],
    /// The root values (trie `b`'s key `[b]`; index 256: the empty key): immutable boxed
    /// copies, replaced (and retired through the epoch collector) on change; null: none.
    vals: [AtomicPtr<Vec<u8>>; 257],
    pub(crate) dirs: Arc<Dirs>,
}

impl View {
    fn new(dirs: Arc<Dirs>) -> View {
        View {
            seq: AtomicU64::new(0),
            tseq: std::array::from_fn(|_| AtomicU64::new(0)),
            roots: std::array::from_fn(|_| AtomicU64::new(0)),
            vals: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            dirs,
        }
    }

    /// Sets root value `i` (writer only); the old copy is retired.
    fn set_val(&self, i: usize, v: Option<&[u8]>) {
        let new = v.map_or(std::ptr::null_mut(), |v| {
            Box::into_raw(Box::new(v.to_vec()))
        });
        let old = self.vals[i].swap(new, Ordering::AcqRel);
        if !old.is_null() {
            // SAFETY: `old` came from `Box::into_raw` and was just unlinked; pinned
            // readers that loaded it keep it until they unpin.
            let old = unsafe { Box::from_raw(old) };
            orrery_core::sync::pin().defer(move || drop(old));
        }
    }

    /// An optimistic [`opt::Probe`] of `key` (trie key space); a root value is copied
    /// into `out` at once.
    #[inline]
    pub(crate) fn probe<'k>(&self, key: &'k [u8], out: &mut Vec<u8>) -> opt::Probe<'k> {
        match key.split_first() {
            Some((&b, rest)) if !rest.is_empty() => {
                let w = self.roots[usize::from(b)].load(Ordering::Acquire);
                if w == 0 {
                    return opt::Probe::done(Ok(false));
                }
                opt::Probe::new(&self.dirs, Hp::from_raw(w & !(1 << 63)), rest)
            }
            _ => opt::Probe::done(self.get(key, out, &|| true)),
        }
    }

    /// Trie `b`'s root container, if any (the caller is pinned and validates).
    #[inline]
    pub(crate) fn root(&self, b: u8) -> Option<Hp> {
        let w = self.roots[usize::from(b)].load(Ordering::Acquire);
        (w != 0).then(|| Hp::from_raw(w & !(1 << 63)))
    }

    /// The optimistic lookup of `key` (trie key space): its value copied into `out`.
    /// The caller is pinned and validates a version afterwards (the key's trie's, or the
    /// arena's).
    pub(crate) fn get(
        &self,
        key: &[u8],
        out: &mut Vec<u8>,
        valid: &dyn Fn() -> bool,
    ) -> std::result::Result<bool, node::Torn> {
        let (i, rest) = match key.split_first() {
            None => (256, &[][..]),
            Some((&b, rest)) => (usize::from(b), rest),
        };
        if rest.is_empty() {
            let p = self.vals[i].load(Ordering::Acquire);
            if p.is_null() {
                return Ok(false);
            }
            out.clear();
            // SAFETY: a published root value is never written, and freed only through
            // the epoch collector after it was replaced; the caller is pinned.
            out.extend_from_slice(unsafe { &*p });
            return Ok(true);
        }
        let w = self.roots[i].load(Ordering::Acquire);
        if w == 0 {
            return Ok(false);
        }
        opt::lookup(&self.dirs, Hp::from_raw(w & !(1 << 63)), rest, out, valid)
    }
}

impl Drop for View {
    fn drop(&mut self) {
        for v in &self.vals {
            let p = v.load(Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: the current copies are owned by the view; nobody reads them once
                // it is dropped.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

/// One arena: its tries and memory manager under a reader-writer lock, the version
/// optimistic readers validate against, and what they read ([`View`]).
pub(crate) struct Arena {
    lock: RwSpinLock<ArenaInner>,
    view: Arc<View>,
    /// Point reads that fell back to the lock (tests only).
    #[cfg(test)]
    fallbacks: std::sync::atomic::AtomicUsize,
    /// Scan batches that took the lock exclusively (tests only).
    #[cfg(test)]
    scan_fallbacks: std::sync::atomic::AtomicUsize,
    /// Scans waiting for the lock ([`Arena::scan_lock`]); writers give way while it is
    /// not zero.
    scans_waiting: AtomicU32,
}

/// The lock a scan holds while it copies one batch from one trie ([`Arena::scan_lock`]).
pub(crate) enum ScanGuard<'a> {
    /// The shared side (no writer was in the way).
    Shared(RwSpinReadGuard<'a, ArenaInner>),
    /// The exclusive side (a writer kept the shared side closed).
    Exclusive(RwSpinWriteGuard<'a, ArenaInner>),
}

impl std::ops::Deref for ScanGuard<'_> {
    type Target = ArenaInner;

    #[inline]
    fn deref(&self) -> &ArenaInner {
        match self {
            ScanGuard::Shared(g) => g,
            ScanGuard::Exclusive(g) => g,
        }
    }
}

impl Arena {
    pub(crate) fn new(eject_threshold: usize) -> Arena {
        let inner = ArenaInner::new(eject_threshold);
        let view = Arc::clone(&inner.view);
        Arena {
            lock: RwSpinLock::new(inner),
            view,
            #[cfg(test)]
            fallbacks: std::sync::atomic::AtomicUsize::new(0),
            #[cfg(test)]
            scan_fallbacks: std::sync::atomic::AtomicUsize::new(0),
            scans_waiting: AtomicU32::new(0),
        }
    }

    /// Shared access under the read lock (memory accounting, `get_with_locked`). Scans
    /// use [`Arena::scan_lock`], which cannot starve.
    #[inline]
    pub(crate) fn read(&self) -> RwSpinReadGuard<'_, ArenaInner> {
        self.lock.read()
    }

    /// The lock a scan copies one batch under: the shared side if it can be had within
    /// [`WAIT_ROUNDS`] backoff steps (`try_read`: no writer holds *or waits for* the
    /// lock), else the exclusive side. The shared side of the writer-preferring
    /// `RwSpinLock` lets one continuous writer of the arena starve a reader for seconds
    /// (`docs/results/hyperion.md`, "Scans under writers"); a scan waiting as a writer
    /// competes with the writers on equal terms, as a point read's [`Arena::fallback`]
    /// does. Only a scan that met a writer takes it, so scans of a quiet arena still
    /// share the lock.
    #[inline]
    pub(crate) fn scan_lock(&self) -> ScanGuard<'_> {
        if let Some(g) = self.lock.try_read() {
            return ScanGuard::Shared(g);
        }
        self.scan_lock_slow()
    }

    /// The shared side of the lock if it is free at once (no writer holds or waits for
    /// it): a scan then copies under it, at the locked walk's speed, and delays a writer
    /// that arrives meanwhile by at most that one copy.
    #[inline]
    pub(crate) fn try_scan_lock(&self) -> Option<ScanGuard<'_>> {
        self.lock.try_read().map(ScanGuard::Shared)
    }

    /// [`Arena::scan_lock`] when a writer is in the way: the scan announces itself in
    /// `scans_waiting`, so that writers about to take the lock give way
    /// ([`Arena::write`]) and the shared side opens once the current holder leaves.
    #[cold]
    fn scan_lock_slow(&self) -> ScanGuard<'_> {
        self.scans_waiting.fetch_add(1, Ordering::Relaxed);
        let backoff = orrery_core::sync::Backoff::new();
        let mut guard = None;
        for _ in 0..WAIT_ROUNDS {
            backoff.snooze();
            if let Some(g) = self.lock.try_read() {
                guard = Some(ScanGuard::Shared(g));
                break;
            }
        }
        let guard = guard.unwrap_or_else(|| {
            #[cfg(test)]
            self.scan_fallbacks.fetch_add(1, Ordering::Relaxed);
            ScanGuard::Exclusive(self.lock.write())
        });
        self.scans_waiting.fetch_sub(1, Ordering::Relaxed);
        guard
    }

    /// Whether trie `b` holds nothing (no root container, no root value) now, read from
    /// the [`View`] without the lock: a scan skips such a trie without locking its arena.
    /// (A key that is in trie `b` for the whole scan makes it non-empty at this moment.)
    #[inline]
    pub(crate) fn trie_is_empty(&self, b: u8) -> bool {
        self.view.roots[usize::from(b)].load(Ordering::Acquire) == 0
            && self.view.vals[usize::from(b)]
                .load(Ordering::Acquire)
                .is_null()
    }

    /// Whether the empty key is absent now (arena 0; read from the [`View`] without the
    /// lock, as [`Arena::trie_is_empty`]).
    #[inline]
    pub(crate) fn empty_is_absent(&self) -> bool {
        self.view.vals[256].load(Ordering::Acquire).is_null()
    }

    /// Scans that took the exclusive side of the lock (tests only).
    #[cfg(test)]
    pub(crate) fn scan_fallbacks(&self) -> usize {
        self.scan_fallbacks.load(Ordering::Relaxed)
    }

    /// Runs `f` with exclusive access (the write lock). [`ArenaInner::write`] makes the
    /// version odd while it changes the arena. While a scan waits for the lock
    /// ([`Arena::scan_lock`]) the writer first gives way for a bounded time.
    #[inline]
    pub(crate) fn write<T>(&self, f: impl FnOnce(&mut ArenaInner) -> T) -> T {
        if self.scans_waiting.load(Ordering::Relaxed) != 0 {
            self.give_way();
        }
        f(&mut self.lock.write())
    }

    /// A writer's courtesy to waiting scans: waits, at most [`GIVE_WAY_ROUNDS`] backoff
    /// steps, until no scan waits for the lock. Bounded, so writers cannot starve either.
    #[cold]
    fn give_way(&self) {
        let backoff = orrery_core::sync::Backoff::new();
        for _ in 0..GIVE_WAY_ROUNDS {
            backoff.snooze();
            if self.scans_waiting.load(Ordering::Relaxed) == 0 {
                return;
            }
        }
    }

    /// The current version (for tests).
    #[cfg(test)]
    pub(crate) fn version(&self) -> u64 {
        self.view.seq.load(Ordering::Relaxed)
    }

    /// `f` on the value of `key` (trie key space), read optimistically: pinned, the
    /// lookup copies the value into a buffer, and `f` sees it only once the version
    /// validates. After [`OPT_TRIES`] failed attempts (writes kept invalidating it, or a
    /// write stayed in progress for [`WAIT_ROUNDS`] backoff steps), the read takes the
    /// arena's lock, so a reader never retries forever. It takes the lock *exclusively*:
    /// the shared side of the writer-preferring `RwSpinLock` lets a continuous writer of
    /// the arena starve a reader (measured: `docs/results/hyperion.md`, "Optimistic
    /// point reads"), while a reader waiting as a writer competes with the writers on
    /// equal terms; fallbacks are rare, so their exclusion of one another costs little.
    #[inline]
    pub(crate) fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        thread_local! {
            static BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
        }
        let mut out = BUF.try_with(std::cell::Cell::take).unwrap_or_default();
        let found = {
            let _guard = orrery_core::sync::pin();
            self.try_get(key, &mut out)
        };
        let r = match found {
            Some(true) => Some(f(&out)),
            Some(false) => None,
            None => {
                let a = self.fallback();
                a.get(key).map(f)
            }
        };
        if out.capacity() <= 4096 {
            let _ = BUF.try_with(|b| b.set(out));
        }
        r
    }

    /// The optimistic attempts of [`Arena::get_with`] (the caller is pinned): whether
    /// `key` is present (its value in `out`), or `None` if every attempt failed.
    #[inline]
    pub(crate) fn try_get(&self, key: &[u8], out: &mut Vec<u8>) -> Option<bool> {
        let seq = self.seq_of(key);
        for _ in 0..OPT_TRIES {
            let Some(v) = begin(seq, WAIT_ROUNDS, true) else {
                continue;
            };
            let valid = || SEQ.validate(seq, v);
            if let Ok(found) = self.view.get(key, out, &valid)
                && valid()
            {
                return Some(found);
            }
        }
        None
    }

    /// One optimistic attempt of `f` on trie `b`: pinned in an epoch, with trie `b`'s
    /// version read (spinning at most [`SCAN_SPINS`] steps while a write of the trie is
    /// in progress) and validated after `f` — which gets the [`View`] and the validation,
    /// to check on the way (before following an eHP, before keeping a pair, and
    /// periodically in long walks). `Err(Torn)` when the version did not validate (or
    /// stayed odd), or `f` found torn bytes.
    ///
    /// Validating trie `b`'s version, not the arena's, is sound because every byte a
    /// reader of trie `b` follows belongs to trie `b` or is only ever copied, never
    /// changed, by writes of other tries: a write changes the containers, out-of-line
    /// blocks and root of its key's trie only ([`ArenaInner::write`]); the chunks it frees
    /// or reuses are its own trie's; and when it moves a bin (growing it) or replaces a
    /// directory table, the old memory keeps a copy of every other trie's bytes as they
    /// were — unchanged since, or that trie's version moved — and is retired through the
    /// epoch collector, not freed, while the reader is pinned.
    #[inline]
    pub(crate) fn optimistic<T>(
        &self,
        b: u8,
        f: impl FnOnce(&View, &dyn Fn() -> bool) -> std::result::Result<T, node::Torn>,
    ) -> std::result::Result<T, node::Torn> {
        let seq = &self.view.tseq[usize::from(b)];
        let _guard = orrery_core::sync::pin();
        // A write in progress is waited out by spinning only (never yielding): the caller
        // has the lock to fall back on, and a writer's change is short.
        let v = begin(seq, SCAN_SPINS, false).ok_or(node::Torn)?;
        let valid = || SEQ.validate(seq, v);
        let r = f(&self.view, &valid)?;
        if valid() { Ok(r) } else { Err(node::Torn) }
    }

    /// What optimistic readers read.
    #[inline]
    pub(crate) fn view(&self) -> &View {
        &self.view
    }

    /// Exclusive access for a reader that gave up its optimistic attempts (see
    /// [`Arena::get_with`] for why exclusive).
    #[inline]
    pub(crate) fn fallback(&self) -> RwSpinWriteGuard<'_, ArenaInner> {
        #[cfg(test)]
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
        self.lock.write()
    }

    /// The version a point read of `key` (trie key space) validates: its trie's (the
    /// arena's for the empty key, which is no trie's), so writes to the arena's other
    /// tries do not tear the read (see [`Arena::optimistic`] for why that is sound).
    #[inline]
    fn seq_of(&self, key: &[u8]) -> &AtomicU64 {
        match key.first() {
            Some(&b) => &self.view.tseq[usize::from(b)],
            None => &self.view.seq,
        }
    }

    /// Whether the version of `key`'s trie is still `v` (from [`Arena::begin`]).
    #[inline]
    pub(crate) fn validate(&self, key: &[u8], v: u64) -> bool {
        SEQ.validate(self.seq_of(key), v)
    }

    /// A version of `key`'s trie to validate against: waits (bounded backoff) while a
    /// write of the trie is in progress; `None` if it is still in progress.
    #[inline]
    pub(crate) fn begin(&self, key: &[u8]) -> Option<u64> {
        begin(self.seq_of(key), WAIT_ROUNDS, true)
    }
}

/// One trie's root.
#[derive(Default)]
pub(crate) struct Root {
    pub(crate) hp: Option<Hp>,
    val: Option<Vec<u8>>,
}

/// An arena's state for the compaction pass's automatic trigger (`write/compact.rs`).
#[derive(Debug)]
pub(crate) struct Compaction {
    /// Keys the arena gained since the last pass.
    pub(crate) since: usize,
    /// Whether inserts run the pass (tests turn it off to run it themselves).
    pub(crate) auto: bool,
}

impl Default for Compaction {
    fn default() -> Compaction {
        Compaction {
            since: 0,
            auto: true,
        }
    }
}

/// The tries and memory manager of one arena.
pub(crate) struct ArenaInner {
    pub(crate) mm: MemoryManager,
    pub(crate) roots: Vec<Root>,
    empty: Option<Vec<u8>>,
    /// Bytes of root values on the heap.
    heap_bytes: usize,
    pub(crate) eject_threshold: usize,
    /// What optimistic readers see (updated after every write).
    view: Arc<View>,
    /// The compaction pass's trigger state (`write/compact.rs`).
    pub(crate) compaction: Compaction,
}

impl ArenaInner {
    pub(crate) fn new(eject_threshold: usize) -> ArenaInner {
        let mm = MemoryManager::new();
        let view = Arc::new(View::new(mm.dirs()));
        ArenaInner {
            view,
            mm,
            roots: (0..256).map(|_| Root::default()).collect(),
            empty: None,
            heap_bytes: 0,
            eject_threshold,
            compaction: Compaction::default(),
        }
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        // Root values are held twice: here and as the readers' copies in the view.
        self.mm.bytes()
            + 2 * self.heap_bytes
            + self.roots.len() * std::mem::size_of::<Root>()
            + std::mem::size_of::<View>()
    }

    /// The value of `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<&[u8]> {
        let Some((&b, rest)) = key.split_first() else {
            return self.empty.as_deref();
        };
        let root = &self.roots[b as usize];
        if rest.is_empty() {
            return root.val.as_deref();
        }
        node::lookup(&self.mm, root.hp?, rest)
    }

    /// Read-modify-write of `key`: `f` sees the current value; returns whether the key was
    /// present. Out of memory leaves the arena unchanged.
    pub(crate) fn write(
        &mut self,
        key: &[u8],
        f: &mut dyn FnMut(Option<&[u8]>) -> Decision,
    ) -> Result<(bool, isize)> {
        let (present, d) = {
            let old = self.get(key);
            (old.is_some(), f(old))
        };
        if matches!(d, Decision::Keep) {
            return Ok((present, 0));
        }
        self.change(key, |a| a.decide(key, d, present))
    }

    /// Inserts or replaces `key` → `v`; returns whether `key` was present. Unlike
    /// [`ArenaInner::write`] it reads no old value first: the insert's own descent finds
    /// whether a value was there (`Txn::replaced`). Out of memory leaves the arena
    /// unchanged.
    pub(crate) fn put(&mut self, key: &[u8], v: &[u8]) -> Result<bool> {
        #[cfg(debug_assertions)]
        let was = self.get(key).is_some();
        let present = self.change(key, |a| a.store(key, v))?;
        #[cfg(debug_assertions)]
        debug_assert_eq!(present, was, "the insert's descent and a lookup disagree");
        Ok(present)
    }

    /// Runs the change `f` of `key`'s trie: the versions (the arena's, and trie `b`'s;
    /// none for the empty key, which is no trie's) are odd from here until it is
    /// published (even again, and advanced) — also if it fails or unwinds
    /// (`seq::Window`).
    pub(crate) fn change<T>(&mut self, key: &[u8], f: impl FnOnce(&mut ArenaInner) -> T) -> T {
        let view = Arc::clone(&self.view);
        let _window = Window::open(&view.seq, key.first().map(|&b| &view.tseq[usize::from(b)]));
        let r = f(self);
        if let Some(&b) = key.first() {
            // Publish trie `b`'s root (the only one a write of `key` can change).
            let w = self.roots[usize::from(b)]
                .hp
                .map_or(0, |hp| hp.raw() | 1 << 63);
            self.view.roots[usize::from(b)].store(w, Ordering::Release);
        }
        r
    }

    fn decide(&mut self, key: &[u8], d: Decision, present: bool) -> Result<(bool, isize)> {
        match d {
            Decision::Keep => Ok((present, 0)),
            Decision::Store(v) => {
                self.store(key, &v)?;
                Ok((present, isize::from(!present)))
            }
            Decision::Remove => {
                if present {
                    self.delete(key);
                }
                Ok((present, -isize::from(present)))
            }
        }
    }

    fn set_small(&mut self, key: &[u8], v: Option<&[u8]>) {
        let slot = match key.first() {
            None => &mut self.empty,
            Some(&b) => &mut self.roots[b as usize].val,
        };
        if let Some(old) = slot.take() {
            self.heap_bytes -= old.capacity();
        }
        if let Some(v) = v {
            let v = v.to_vec();
            self.heap_bytes += v.capacity();
            *slot = Some(v);
        }
        self.view
            .set_val(key.first().map_or(256, |&b| usize::from(b)), v);
    }

    /// Stores `key` → `v`; returns whether `key` was present.
    fn store(&mut self, key: &[u8], v: &[u8]) -> Result<bool> {
        if key.len() <= 1 {
            let present = self.get(key).is_some();
            self.set_small(key, Some(v));
            return Ok(present);
        }
        self.store_in(key[0] as usize, &key[1..], v)
    }

    /// Removes `key` (present). Never fails: a container that shrinks keeps its block when
    /// a smaller one cannot be had.
    fn delete(&mut self, key: &[u8]) {
        if key.len() <= 1 {
            self.set_small(key, None);
            return;
        }
        self.delete_in(key[0] as usize, &key[1..]);
    }

    /// Visits the keys of trie `b` (its root value included) that pass `bound`, ascending
    /// or descending.
    // Scans copy through `node::walk_trie` (the same walk, its visitor monomorphised).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn walk(
        &self,
        b: u8,
        bound: Bound<&[u8]>,
        desc: bool,
        buf: &mut Vec<u8>,
        visit: &mut node::Visit<'_>,
    ) -> ControlFlow<()> {
        let root = &self.roots[b as usize];
        let flow = node::walk_trie(
            &self.mm,
            root.hp,
            root.val.as_deref(),
            b,
            bound,
            desc,
            buf,
            visit,
        );
        node::ok(flow)
    }

    /// What optimistic readers read (for tests).
    #[cfg(test)]
    pub(crate) fn view(&self) -> Arc<View> {
        Arc::clone(&self.view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(a: &mut ArenaInner, k: &[u8], v: &[u8]) {
        a.write(k, &mut |_| Decision::Store(v.to_vec())).unwrap();
    }

    fn payload(a: &ArenaInner, b: u8) -> Vec<u8> {
        let hp = a.roots[b as usize].hp.unwrap();
        let c = a.mm.get(hp);
        c[HEADER..used(c)].to_vec()
    }

    /// A point read that cannot validate (a write stays in progress: the version is held
    /// odd) falls back to the lock, and then sees what the lock holder wrote; a write
    /// leaves the version even and advanced.
    #[test]
    fn arena_reader_falls_back_to_the_lock() {
        let arena = Arena::new(16 * 1024);
        arena.write(|a| put(a, b"key", b"v1"));
        let v0 = arena.version();
        assert!(v0.is_multiple_of(2) && v0 > 0);
        assert_eq!(arena.get_with(b"key", <[u8]>::to_vec), Some(b"v1".to_vec()));
        assert_eq!(arena.fallbacks.load(Ordering::Relaxed), 0);
        let got = std::thread::scope(|s| {
            let mut a = arena.lock.write();
            // A write of trie `k` in progress: the arena's and the trie's versions odd.
            let odd = SEQ.write_begin(&arena.view.seq);
            let odd_k = SEQ.write_begin(&arena.view.tseq[usize::from(b'k')]);
            let reader = s.spawn(|| arena.get_with(b"key", <[u8]>::to_vec));
            assert!(
                orrery_core::sync::wait_until(std::time::Duration::from_secs(60), || {
                    arena.fallbacks.load(Ordering::Relaxed) > 0
                }),
                "the reader gave up its optimistic attempts"
            );
            SEQ.write_end(&arena.view.tseq[usize::from(b'k')], odd_k);
            SEQ.write_end(&arena.view.seq, odd);
            put(&mut a, b"key", b"v2");
            drop(a);
            reader.join().expect("reader")
        });
        assert_eq!(got, Some(b"v2".to_vec()));
        assert!(arena.version() > v0 && arena.version().is_multiple_of(2));
        assert_eq!(arena.get_with(b"key", <[u8]>::to_vec), Some(b"v2".to_vec()));
        assert_eq!(arena.fallbacks.load(Ordering::Relaxed), 1);
    }

    /// A scan that cannot get the shared side of the lock (a writer holds it) announces
    /// itself, then takes the exclusive side once the writer leaves; then it has the
    /// arena to itself and stops announcing.
    #[test]
    fn arena_scan_falls_back_to_the_exclusive_lock() {
        let arena = Arena::new(16 * 1024);
        arena.write(|a| put(a, b"key", b"v1"));
        assert!(matches!(arena.scan_lock(), ScanGuard::Shared(_)));
        assert_eq!(arena.scan_fallbacks(), 0);
        std::thread::scope(|s| {
            let mut w = arena.lock.write();
            let scanner = s.spawn(|| {
                let g = arena.scan_lock();
                let exclusive = matches!(g, ScanGuard::Exclusive(_));
                (exclusive, g.get(b"key").map(<[u8]>::to_vec))
            });
            assert!(
                orrery_core::sync::wait_until(std::time::Duration::from_secs(60), || {
                    arena.scan_fallbacks() > 0
                }),
                "the scan gave up the shared side"
            );
            // Both counters are relaxed: the announcement, made before the fallback was
            // counted, becomes visible here eventually, not necessarily at once (Miri's
            // weak-memory emulation showed it stale).
            assert!(
                orrery_core::sync::wait_until(std::time::Duration::from_secs(60), || {
                    arena.scans_waiting.load(Ordering::Relaxed) == 1
                }),
                "the waiting scan is announced"
            );
            put(&mut w, b"key", b"v2");
            drop(w);
            let (exclusive, got) = scanner.join().expect("scanner");
            assert!(exclusive);
            assert_eq!(got, Some(b"v2".to_vec()));
        });
        assert_eq!(arena.scans_waiting.load(Ordering::Relaxed), 0);
        assert!(!arena.trie_is_empty(b'k'));
        assert!(arena.trie_is_empty(b'j'));
        assert!(arena.empty_is_absent());
    }

    /// Scans are optimistic per trie: while a writer holds the arena's lock in the middle
    /// of a change of trie `k` (the arena's and trie `k`'s versions odd), a scan of trie
    /// `j` of the same arena completes without the lock; a scan of trie `k` gives up its
    /// optimistic attempts, waits for the lock (exclusively, the scan lock's fallback),
    /// and then sees the holder's write.
    #[test]
    fn scan_torn_by_its_trie_falls_back_to_the_lock() {
        use std::ops::ControlFlow;
        let cfg = crate::Config::builder().arenas(1).build().unwrap();
        let h = crate::Hyperion::with_config(cfg).unwrap();
        for i in 0..100u8 {
            h.insert(&[b'k', i], b"v").unwrap();
        }
        h.insert(b"j1", b"v").unwrap();
        let arena = &h.arenas[0];
        let prefix = |p: &[u8]| {
            let mut got = Vec::new();
            h.scan_prefix(p, &mut |k, _| {
                got.push(k.to_vec());
                ControlFlow::Continue(())
            });
            got
        };
        std::thread::scope(|s| {
            let mut w = arena.lock.write();
            let odd = SEQ.write_begin(&arena.view.seq);
            let odd_k = SEQ.write_begin(&arena.view.tseq[usize::from(b'k')]);
            assert_eq!(prefix(b"j"), [b"j1".to_vec()]);
            assert_eq!(arena.scan_fallbacks(), 0);
            let scanner = s.spawn(|| prefix(b"k"));
            assert!(
                orrery_core::sync::wait_until(std::time::Duration::from_secs(60), || {
                    arena.scan_fallbacks() > 0
                }),
                "the scan of trie k gave up its optimistic attempts"
            );
            SEQ.write_end(&arena.view.tseq[usize::from(b'k')], odd_k);
            SEQ.write_end(&arena.view.seq, odd);
            put(&mut w, b"k\xff", b"v2");
            drop(w);
            let got = scanner.join().expect("scanner");
            assert_eq!(got.len(), 101);
            assert_eq!(got.last(), Some(&b"k\xff".to_vec()));
        });
    }

    /// The byte layout of Fig 5/6/10: T-Node, S-Nodes, delta encoding, values.
    #[test]
    fn container_bytes_delta_and_values() {
        let mut a = ArenaInner::new(16 * 1024);
        put(&mut a, b"xab", b"");
        assert_eq!(payload(&a, b'x'), [0x40, b'a', 0xA0, b'b']);
        put(&mut a, b"xac", b"1");
        // 'c' is 'b' + 1: delta-encoded (d = 1), no key byte; type 11 and an inline value.
        // The T-Node now has two S-Nodes: it gets a jump successor (js, bit 1), the
        // distance to the next T-Node (here the end: 9 bytes), after its key byte.
        assert_eq!(
            payload(&a, b'x'),
            [0x42, b'a', 9, 0, 0xA0, b'b', 0xE4, 1, b'1']
        );
        put(&mut a, b"xa", b"");
        // The T-Node now ends a key (type 10); its jump is unchanged.
        assert_eq!(payload(&a, b'x')[..4], [0x82, b'a', 9, 0]);
        // A unique suffix is path compressed (c = 11): [len][suffix][value tag 0].
        put(&mut a, b"xbcdef", b"");
        assert_eq!(
            payload(&a, b'x')[9..],
            [0x44, 0x63, b'c', 3, b'd', b'e', b'f', 0]
        );
        // Inserting between T-Nodes keeps the jump exact: 'a' gets a third S-Node.
        put(&mut a, b"xaz", b"");
        assert_eq!(payload(&a, b'x')[..4], [0x82, b'a', 11, 0]);
        assert_eq!(payload(&a, b'x')[11], 0x44);
        assert_eq!(a.get(b"xbcdef"), Some(&b""[..]));
        assert_eq!(a.get(b"xac"), Some(&b"1"[..]));
        assert_eq!(a.get(b"xa"), Some(&b""[..]));
        assert_eq!(a.get(b"xad"), None);
        assert_eq!(a.get(b"xaz"), Some(&b""[..]));
        // Removing an S-Node updates the jump: 'b' (2 bytes) goes, 'c' is no longer
        // delta encoded (explicit key byte, +1).
        a.write(b"xab", &mut |_| Decision::Remove).unwrap();
        assert_eq!(payload(&a, b'x')[..7], [0x82, b'a', 10, 0, 0xE0, b'c', 1]);
        assert_eq!(a.get(b"xbcdef"), Some(&b""[..]));
    }

    /// Embedded containers, their ejection past 255 bytes, long suffixes, out-of-line
    /// values; removal prunes everything and returns every chunk.
    #[test]
    fn container_embed_eject_and_return_memory() {
        let mut a = ArenaInner::new(16 * 1024);
        let base = a.mm.bytes();
        let n = if cfg!(miri) { 60 } else { 400 };
        let keys: Vec<Vec<u8>> = (0..n)
            .map(|i: u32| {
                let mut k = b"pfx-".to_vec();
                k.extend_from_slice(&(i * 7919).to_be_bytes());
                if i.is_multiple_of(5) {
                    k.extend(std::iter::repeat_n(b'z', 200));
                }
                k
            })
            .collect();
        for (i, k) in keys.iter().enumerate() {
            let v = vec![i as u8; i % 20];
            put(&mut a, k, &v);
        }
        assert!(
            a.mm.stats().chunks > 1,
            "children were ejected into their own chunks"
        );
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(a.get(k), Some(&vec![i as u8; i % 20][..]), "key {i}");
        }
        let mut seen = Vec::new();
        let mut buf = Vec::new();
        let _ = a.walk(b'p', Bound::Unbounded, false, &mut buf, &mut |k, _| {
            seen.push(k.to_vec());
            ControlFlow::Continue(())
        });
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(seen, sorted);
        for k in &keys {
            a.write(k, &mut |_| Decision::Remove).unwrap();
        }
        assert!(a.roots[b'p' as usize].hp.is_none());
        assert_eq!(a.mm.stats().chunks, 0);
        assert_eq!(a.mm.stats().extended, 0);
        assert!(a.mm.bytes() >= base);
        assert_eq!(a.mm.bytes(), a.mm.stats().metadata_bytes);
    }
}
