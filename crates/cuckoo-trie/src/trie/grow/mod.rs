//! Growth and shrink by cooperative migration (§5 "Resizing").
//!
//! The paper grows the table "without blocking searches from using the old hash table
//! while the resize process copies it into a larger one", by marking each bucket before it
//! is copied so that it can no longer be modified in the old table. Here that mark is the
//! *frozen* bit of a bucket's version word (`bucket.rs`): every writer's lock CAS fails on
//! it, readers ignore it. What this module adds is that the copy is shared: every writer
//! that meets the frozen table helps copy it instead of waiting (the house pattern of
//! Mercury's `expand.rs`: one counter hands out units of work).
//!
//! # The migration
//!
//! A [`Migration`] is created by the writer that found no room (`trie/update/`), under
//! `Raw::migration` (a mutex held only to install or look up the migration, never while
//! copying). That writer first allocates the new table (twice the buckets) and places its
//! root: out of memory is returned as [`Error::OutOfMemory`] before anything is frozen, so
//! the old table keeps working. Then the migration is installed and `Raw::resizing` set
//! (the benchmark's probe, `CuckooTrie::is_growing`).
//!
//! The work is a sequence of claimable units, handed out by one counter `next`:
//!
//! 1. **freeze chunks** `0..F`: chunk `i` freezes buckets `i·FREEZE_CHUNK..` (waiting for
//!    the writer holding a bucket, if any, to commit or abandon: writers never wait while
//!    holding a bucket, so this wait is short and cannot deadlock). `frozen` counts the
//!    chunks done.
//! 2. **copy units** `F..F+U`: unit `u` is the subtree of the old root's child by symbol
//!    `u` (`U = 2^symbol_bits + 1`, end symbol included; absent children are empty units).
//!    A unit is copied only once `frozen = F`: from then on the old table never changes,
//!    so the root's bitmap, and every node below it, are final. Units are independent
//!    because a node's name (hence its hash in the new table) is computed from its
//!    parent's, and the parent of a unit's top node is the root, whose colour (0) is known.
//!    `copied` counts the units done.
//!
//! Copying a unit is a depth-first walk of the old subtree in key order (preorder, smaller
//! symbols first) that places each node into the new table as it is popped: new colours
//! and parent colours, a jump node's child colour patched once its child is placed, and
//! each leaf placed with no next locator and then linked from the unit's previous leaf.
//! The unit's first and last leaf are recorded in `ends[u]`.
//!
//! Placement into the new table is concurrent (several units at once), so it is locked:
//! [`Table::place`] locks both buckets of the hash (index order) and picks the colour and
//! the slot from the locked lines; a relocation moves an entry under the locks of its two
//! buckets; [`Table::update_at`] finds an entry by locator under the locks of its two
//! buckets (where a concurrent relocation cannot move it). Bucket locks are taken in index
//! order and a placer holds none while it relocates, so placers cannot deadlock.
//!
//! **Memory-level parallelism in the copy.** A copied node costs a read of the old table
//! (its children's `SEARCHBYPARENT`) and a write of the new one (its placement), each a DRAM
//! miss at a random bucket. When a bitmap node is copied, the buckets of all its children in
//! both tables are prefetched before the first child is searched, so their misses overlap
//! (most internal nodes of a large random-key trie have many children). Relocation searches
//! prefetch each breadth-first level (`Table::make_room`).
//!
//! **Why placement keeps its locks.** Several units fill the new table at once and their
//! nodes share buckets, so a placement must choose its colour and slot from a stable view of
//! both buckets, and a relocation must not move an entry another placer is choosing around.
//! Locking both buckets by CAS on the version word (as readers' seqlock protocol needs
//! anyway) gives that. A profile of the copy (`docs/results/cuckoo-trie.md`, "Load from
//! empty") puts its time in the first touch of each bucket — the old table's reads and the
//! new table's lock CAS, which is where the new line's miss is paid — and in page zeroing,
//! not in the atomics: a lock-free placement would still pay the miss, and would need its own
//! argument for colours chosen concurrently in one bucket pair. Relocation in the new table
//! is rare (it is filled to under half), so no cuckoo path is searched for most entries.
//!
//! The participant that completes the last unit *finishes*: sets the new root's bitmap to
//! the old root's, stitches the leaf list between units (the last leaf of each non-empty
//! unit gets the first leaf of the next one; the last leaf of all keeps none), publishes
//! the new table with one pointer swap, hands the old one to the epoch collector, clears
//! `resizing` and marks the migration done. Participants that find no unit left wait until
//! the migration is done (nothing else can be written while the old table is frozen).
//!
//! If a placement finds no room in the new table (no colour or no cuckoo path: rare at
//! under half load), the unit reports it (`full`), later units are skipped, and the
//! finisher rebuilds alone into tables of 4×, 8×, … the buckets (the same unit copy, run
//! sequentially). If that allocation fails, the old table is unfrozen, the migration is
//! marked abandoned and the writers go on in the old table; the writer that started it gets
//! [`Error::OutOfMemory`].
//!
//! # Shrinking
//!
//! The paper only grows. Here a table also shrinks after removals, by the same migration
//! into a smaller table (`Raw::migrate` takes the target size; [`Raw::grow`] asks for twice
//! the buckets, [`Raw::maybe_shrink`] for fewer): the same freeze chunks, copy units,
//! finisher, publication and epoch retirement. Nothing in the copy depends on the direction:
//! a node's hash in the new table is computed from its parent's in the new table's hash,
//! whatever its size.
//!
//! - **What is counted.** `Raw::entries` counts the trie's entries (nodes, the root
//!   included): every update adds, at its commit, what it placed minus what it cleared
//!   (`LockSet::commit`). It is one shared counter in the cache line of `len` (which every
//!   update already changes; `Raw::counts`), so an update touches no extra line; a
//!   removal reads the trigger from its own `fetch_add`. A migration copies every entry,
//!   so it leaves the count as it is; `check_invariants` checks it against the table.
//! - **Trigger (low-water mark).** A removal whose commit leaves fewer entries than a
//!   quarter of the slots (`SHRINK_BELOW`), in a table larger than the initial size,
//!   starts a shrink (or joins the migration of that table if one runs).
//! - **Target.** The fewest buckets (a power of two, at least the initial size) that hold
//!   the entries at most half full (`shrink_target`): the load of a table just grown. So a
//!   shrink after deleting 99% of the keys goes down in one migration, not one per halving.
//!   The copy places into a table at most half full, as a growth's copy does (relocation
//!   rare, no cuckoo path for most entries).
//! - **Hysteresis.** After a shrink the table is at most half full (at least a quarter
//!   full, when the mark triggered it: the entries were under a quarter of twice the slots
//!   or more). It grows again only when a placement finds no room, at 92–97% load for
//!   random keys, and shrinks again only below a quarter: the entries must almost double
//!   or halve before the next migration, so churn around one size does not rebuild back
//!   and forth (`tests/shrink.rs`, `churn_around_the_threshold_…`).
//! - **No room in the smaller table.** If a placement finds no room (a skewed trie whose
//!   hashes crowd a few buckets), the finisher rebuilds alone into twice the target, and
//!   so on; reaching the old size it gives up: the old table is unfrozen and stays (the
//!   same path as a growth abandoned for out of memory). No node is lost or doubled: the old
//!   table is never changed by a migration, and a rebuild starts from an empty table.
//! - **Failure is nobody's error.** The removal that triggered the shrink has already
//!   committed and returns its result whatever the shrink does; a shrink given up (out of
//!   memory for the smaller table, or no room below the old size) is counted
//!   ([`GrowthStats::abandoned_shrinks`]), leaves the table large, and is not tried again
//!   until the entries have halved (`Growth::shrink_below`), so that removals do not each
//!   freeze and copy a table that will not shrink. A writer that joined a shrink because it
//!   needed room (its insert found none) retries in the old table, and grows it if needed.
//!
//! # Invariants
//!
//! - While a migration is running, the old table is the current one, readable, and (after
//!   the freeze chunks) unchanging; the new table is reachable only through the migration
//!   (no reader sees it before it is complete).
//! - Each unit is copied by exactly one participant (one counter); a unit's subtree is
//!   disjoint from every other's, so no two participants place the same node.
//! - At publication every old node has exactly one copy, the leaf list runs through all
//!   leaves in key order, and every internal node's parent colour / child colour refers to
//!   its parent / child in the new table (`Raw::check_invariants` walks all of it).
//!
//! Lookups and scans never wait on the migration: they keep reading the old table, and
//! restart on the new one if the table pointer moved by the end of their operation.
//!
//! Subtree-max locators (§4.4) are set during the copy: nodes are placed in key order
//! (preorder), so an internal node's maximum is the last leaf placed when the walk leaves
//! its subtree (`copy_unit` keeps the open nodes with the stack depth at which their
//! subtree ends), and the root's is the last leaf of the last non-empty unit. A copy is
//! placed marked stale (`Entry::rebased`) and cleared when its locator is set, so the
//! published table has no stale locator.

mod copy;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use orrery_core::api::Error;
use orrery_core::sync::{Backoff, Guard};

use super::Raw;
use crate::table::{Full, Table};
use copy::{Ends, copy_unit, finish_table, table_with_root};

/// Buckets frozen per claimed freeze chunk.
const FREEZE_CHUNK: usize = 4096;

/// [`Migration::state`]: units are still being copied.
const RUNNING: u8 = 0;
/// [`Migration::state`]: the new table is published.
const DONE: u8 = 1;
/// [`Migration::state`]: given up (out of memory); the old table is unfrozen.
const ABANDONED: u8 = 2;

/// One growth of the table, shared by the writers that take part in it (module docs).
pub(crate) struct Migration {
    /// The table being copied (the current one until publication).
    old: *const Table,
    /// The table being filled; owned here until published (then null).
    new: AtomicPtr<Table>,
    /// Freeze chunks.
    chunks: usize,
    /// Copy units (children of the root by symbol).
    units: usize,
    /// The claim counter: freeze chunks, then copy units.
    next: AtomicUsize,
    /// Freeze chunks done.
    frozen: AtomicUsize,
    /// Copy units done (copied, empty or skipped).
    copied: AtomicUsize,
    /// A placement found no room in `new`.
    full: AtomicBool,
    /// The first and last leaf of each unit.
    ends: Mutex<Vec<Ends>>,
    /// [`RUNNING`], [`DONE`] or [`ABANDONED`].
    state: AtomicU8,
    /// Entries placed by the units (the root excluded).
    placed: AtomicUsize,
    /// Buckets of `new` (kept: `new` is taken by the finisher).
    buckets: usize,
    /// A shrink (`new` has fewer buckets than `old`): the finisher's retries stop below
    /// the old size, and giving up is no error for anyone.
    shrink: bool,
}

// SAFETY: `old` is only dereferenced by participants while the migration is running (the
// old table is then the current table and is retired only by the finisher, after every
// unit is done); `new` is owned through an atomic pointer.
unsafe impl Send for Migration {}
// SAFETY: as above; the rest is atomics and a mutex.
unsafe impl Sync for Migration {}

impl Migration {
    /// A running migration of `old` into the empty `new` (its root placed), for a trie of
    /// `symbol_bits`-bit symbols; nothing claimed yet.
    fn new(old: &Table, new: Table, symbol_bits: u32) -> Migration {
        let chunks = old.hash().buckets().div_ceil(FREEZE_CHUNK as u64) as usize;
        let units = units_for(symbol_bits);
        let buckets = new.hash().buckets() as usize;
        Migration {
            buckets,
            shrink: buckets < old.hash().buckets() as usize,
            old,
            new: AtomicPtr::new(Box::into_raw(Box::new(new))),
            chunks,
            units,
            next: AtomicUsize::new(0),
            frozen: AtomicUsize::new(0),
            copied: AtomicUsize::new(0),
            full: AtomicBool::new(false),
            ends: Mutex::new(vec![None; units]),
            state: AtomicU8::new(RUNNING),
            placed: AtomicUsize::new(0),
        }
    }
}

impl Drop for Migration {
    fn drop(&mut self) {
        let p = *self.new.get_mut();
        if !p.is_null() {
            // SAFETY: an unpublished table, owned by the migration and no longer used.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// Counts of resizing activity (growths and shrinks), for tests and the benchmark.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GrowthStats {
    /// Growths completed (new table published).
    pub growths: usize,
    /// Copy units (non-empty subtrees of the root) copied by a writer other than the one
    /// that started the growth or shrink.
    pub helped_units: usize,
    /// Growths given up for out of memory (the new table could not be allocated; the old
    /// table kept working).
    pub abandoned: usize,
    /// Entries the last completed migration (growth or shrink) copied (the old table's
    /// entries, root included).
    pub last_entries: usize,
    /// Entry slots (4 per bucket) of the table the last completed migration replaced:
    /// with [`GrowthStats::last_entries`], the load factor at which it grew or shrank.
    pub last_slots: usize,
    /// Shrinks completed (a smaller table published after removals).
    pub shrinks: usize,
    /// Shrinks given up: the smaller table could not be allocated, or the trie fitted in
    /// no table smaller than the current one. The removal that triggered it succeeded;
    /// the table kept its size.
    pub abandoned_shrinks: usize,
}

/// Growth state of a [`Raw`].
#[derive(Default)]
pub(crate) struct Growth {
    /// The running migration, if any (held only to install or look it up).
    current: Mutex<Option<Arc<Migration>>>,
    growths: AtomicUsize,
    helped_units: AtomicUsize,
    abandoned: AtomicUsize,
    last_entries: AtomicUsize,
    last_slots: AtomicUsize,
    shrinks: AtomicUsize,
    abandoned_shrinks: AtomicUsize,
    /// After a shrink was given up at `e` entries, no shrink is tried again until the
    /// entries fall below `e / 2` (0: no limit; reset by every published table), so that
    /// a shrink that cannot succeed is not retried by every removal.
    shrink_below: AtomicUsize,
}

/// The shrink trigger's low-water mark: a removal that leaves fewer entries than
/// `slots / SHRINK_BELOW` starts a shrink.
const SHRINK_BELOW: usize = 4;

/// Buckets of the table a trie of `entries` entries shrinks into: the fewest (a power of
/// two, at least `min`) that hold the entries at most half full (2 entries per bucket of
/// 4 slots), like a table just grown.
fn shrink_target(entries: usize, min: usize) -> usize {
    entries.div_ceil(2).next_power_of_two().max(min)
}

/// The copy units of a table with `symbol_bits`-bit symbols (one per root child symbol).
fn units_for(symbol_bits: u32) -> usize {
    (1 << symbol_bits) + 1
}

impl Raw {
    /// Whether a growth is freezing or copying the table.
    pub(crate) fn is_growing(&self) -> bool {
        self.resizing.load(Ordering::Acquire)
    }

    /// Growth counters.
    pub(crate) fn growth_stats(&self) -> GrowthStats {
        GrowthStats {
            growths: self.growth.growths.load(Ordering::Relaxed),
            helped_units: self.growth.helped_units.load(Ordering::Relaxed),
            abandoned: self.growth.abandoned.load(Ordering::Relaxed),
            last_entries: self.growth.last_entries.load(Ordering::Relaxed),
            last_slots: self.growth.last_slots.load(Ordering::Relaxed),
            shrinks: self.growth.shrinks.load(Ordering::Relaxed),
            abandoned_shrinks: self.growth.abandoned_shrinks.load(Ordering::Relaxed),
        }
    }

    /// Replaces the table `old` by one of at least twice the buckets holding the same
    /// trie, unless that already happened (§5 "Resizing"): starts a migration of `old`, or
    /// joins the one running, and returns once it is done. Out of memory is an error and
    /// leaves `old` working.
    pub(super) fn grow(&self, old: &Table, g: &Guard) -> Result<(), Error> {
        self.migrate(old, old.hash().buckets() as usize * 2, g)
    }

    /// The shrink trigger, run by a removal that brought the trie to `entries` entries
    /// in table `t` (module docs, "Shrinking"): below the low-water mark (fewer entries
    /// than a quarter of the slots) and above the initial size, migrates `t` into the
    /// smallest table that holds the entries at most half full. Never fails: a shrink
    /// given up leaves `t` in place.
    pub(super) fn maybe_shrink(&self, t: &Table, entries: usize, g: &Guard) {
        let buckets = t.hash().buckets() as usize;
        if entries * SHRINK_BELOW >= buckets * crate::bucket::SLOTS
            || buckets <= self.config.initial_buckets
        {
            return;
        }
        let below = self.growth.shrink_below.load(Ordering::Relaxed);
        if below != 0 && entries >= below {
            return;
        }
        let target = shrink_target(entries, self.config.initial_buckets);
        if target < buckets {
            // A shrink given up is counted (and throttled) where it is given up.
            let _ = self.migrate(t, target, g);
        }
    }

    /// Counts a shrink given up at the current entry count and throttles the next tries.
    fn shrink_given_up(&self) {
        self.growth
            .abandoned_shrinks
            .fetch_add(1, Ordering::Relaxed);
        let below = (self.entries() / 2).max(1);
        self.growth.shrink_below.store(below, Ordering::Relaxed);
    }

    /// Replaces the table `old` by one of `buckets` buckets holding the same trie (a
    /// growth or a shrink), unless `old` is no longer current: starts a migration of
    /// `old`, or joins the one running, and returns once it is done. Errors only for a
    /// growth given up (out of memory); `old` keeps working then.
    fn migrate(&self, old: &Table, buckets: usize, g: &Guard) -> Result<(), Error> {
        let m = {
            let mut cur = self
                .growth
                .current
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if !self.still_current(old) {
                return Ok(());
            }
            match &*cur {
                Some(m) if std::ptr::eq(m.old, old) => {
                    let m = Arc::clone(m);
                    drop(cur);
                    return self.participate(&m, false, g);
                }
                _ => {}
            }
            let new = match table_with_root(buckets) {
                Ok(t) => t,
                Err(_) if buckets < old.hash().buckets() as usize => {
                    self.shrink_given_up();
                    return Ok(());
                }
                Err(e) => {
                    self.growth.abandoned.fetch_add(1, Ordering::Relaxed);
                    return Err(e);
                }
            };
            let m = Arc::new(Migration::new(old, new, self.config.symbol_bits));
            *cur = Some(Arc::clone(&m));
            self.resizing.store(true, Ordering::SeqCst);
            m
        };
        self.participate(&m, true, g)
    }

    /// Helps the running migration, if any, and waits for it to end (a writer whose lock
    /// failed on a frozen bucket). Returns at once when no growth is running.
    pub(super) fn help_growth(&self) {
        if !self.is_growing() {
            return;
        }
        let m = self
            .growth
            .current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(m) = m {
            let g = orrery_core::sync::pin();
            // An abandoned migration (out of memory) leaves the old table working; the
            // writer simply retries there.
            let _ = self.participate(&m, false, &g);
        }
    }

    /// Claims and runs units of `m` until none is left, then waits for `m` to end.
    /// `started`: the caller started the growth (for [`GrowthStats::helped_units`]).
    fn participate(&self, m: &Migration, started: bool, g: &Guard) -> Result<(), Error> {
        let total = m.chunks + m.units;
        loop {
            if m.next.load(Ordering::Relaxed) >= total {
                break;
            }
            let i = m.next.fetch_add(1, Ordering::AcqRel);
            if i >= total {
                break;
            }
            // SAFETY: `old` is the current table while `m` runs (module docs, invariants);
            // it is retired only after every unit is done, and this claim is not done.
            let old = unsafe { &*m.old };
            if i < m.chunks {
                let lo = i * FREEZE_CHUNK;
                let hi = (lo + FREEZE_CHUNK).min(old.hash().buckets() as usize);
                old.freeze_range(lo..hi);
                m.frozen.fetch_add(1, Ordering::AcqRel);
                continue;
            }
            let u = i - m.chunks;
            let backoff = Backoff::new();
            while m.frozen.load(Ordering::Acquire) < m.chunks {
                backoff.snooze();
            }
            if !m.full.load(Ordering::Relaxed) {
                // SAFETY: the unpublished table, owned by `m` (which the caller holds);
                // published or dropped only after this unit is counted done.
                let new = unsafe { &*m.new.load(Ordering::Acquire) };
                match copy_unit(old, new, u as u8, &m.placed) {
                    Ok(ends) => {
                        if ends.is_some() && !started {
                            self.growth.helped_units.fetch_add(1, Ordering::Relaxed);
                        }
                        m.ends.lock().unwrap_or_else(|p| p.into_inner())[u] = ends;
                    }
                    Err(Full) => m.full.store(true, Ordering::Relaxed),
                }
            }
            if m.copied.fetch_add(1, Ordering::AcqRel) + 1 == m.units {
                self.finish(m, old, g);
            }
        }
        let backoff = Backoff::new();
        loop {
            match m.state.load(Ordering::Acquire) {
                RUNNING => backoff.snooze(),
                DONE => return Ok(()),
                // A shrink given up is nobody's error: the old table is back in service,
                // and a writer that joined it (it needed room) retries there.
                _ if m.shrink => return Ok(()),
                _ => return Err(Error::OutOfMemory),
            }
        }
    }

    /// Ends `m` (every unit done): publishes its table, or, if it was full, a larger one
    /// rebuilt here; or abandons it (out of memory) and unfreezes `old`.
    fn finish(&self, m: &Migration, old: &Table, g: &Guard) {
        let ends = std::mem::take(&mut *m.ends.lock().unwrap_or_else(|p| p.into_inner()));
        let mut table: Option<Box<Table>> = None;
        // Entries copied (the root included), for `GrowthStats`.
        let mut entries = 1 + m.placed.load(Ordering::Relaxed);
        if !m.full.load(Ordering::Acquire) {
            // SAFETY: every unit is done: no participant uses `new` any more, so the box
            // is taken back from the migration.
            let new = unsafe { Box::from_raw(m.new.swap(std::ptr::null_mut(), Ordering::AcqRel)) };
            if finish_table(old, &new, &ends).is_ok() {
                table = Some(new);
            }
        }
        if table.is_none() {
            // A growth retries into 4×, 8×, … the old table; a shrink into twice its
            // target and so on, up to (not including) the old size.
            let limit = if m.shrink {
                old.hash().buckets() as usize
            } else {
                usize::MAX
            };
            table = self.rebuild_alone(old, m.buckets * 2, limit).map(|(t, n)| {
                entries = n;
                t
            });
        }
        let state = match table {
            Some(t) => {
                let prev = self.table.swap(Box::into_raw(t), Ordering::AcqRel);
                let prev_addr = prev as usize;
                let free = move || {
                    // SAFETY: the replaced table, unreachable for guards pinned after the
                    // swap; dropped once, after every earlier guard is gone.
                    drop(unsafe { Box::from_raw(prev_addr as *mut Table) })
                };
                // SAFETY: `free` owns the table (no borrowed data); sound on any thread.
                unsafe { g.defer_unchecked(free) };
                let count = if m.shrink {
                    &self.growth.shrinks
                } else {
                    &self.growth.growths
                };
                count.fetch_add(1, Ordering::Relaxed);
                self.growth.shrink_below.store(0, Ordering::Relaxed);
                self.growth.last_entries.store(entries, Ordering::Relaxed);
                let slots = old.hash().buckets() as usize * crate::bucket::SLOTS;
                self.growth.last_slots.store(slots, Ordering::Relaxed);
                DONE
            }
            None => {
                old.unfreeze_all();
                if m.shrink {
                    self.shrink_given_up();
                } else {
                    self.growth.abandoned.fetch_add(1, Ordering::Relaxed);
                }
                ABANDONED
            }
        };
        {
            let mut cur = self
                .growth
                .current
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if cur.as_ref().is_some_and(|c| std::ptr::eq(&**c, m)) {
                *cur = None;
            }
            self.resizing.store(false, Ordering::Release);
        }
        m.state.store(state, Ordering::Release);
    }

    /// Copies the frozen `old` alone into a table of `n` buckets, doubling `n` while a
    /// placement finds no room; `None` when out of memory or when `n` reaches `limit`.
    /// Also returns the entries copied (the root included).
    fn rebuild_alone(
        &self,
        old: &Table,
        mut n: usize,
        limit: usize,
    ) -> Option<(Box<Table>, usize)> {
        loop {
            if n >= limit {
                return None;
            }
            let new = table_with_root(n).ok()?;
            let mut ends = Vec::new();
            let mut ok = true;
            let placed = AtomicUsize::new(0);
            for u in 0..units_for(self.config.symbol_bits) {
                match copy_unit(old, &new, u as u8, &placed) {
                    Ok(e) => ends.push(e),
                    Err(Full) => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok && finish_table(old, &new, &ends).is_ok() {
                return Some((Box::new(new), 1 + placed.load(Ordering::Relaxed)));
            }
            n *= 2;
        }
    }
}
