//! The shared layer of a slab pool, under its lock: a stash of magazines, the pool's
//! chunks, and the policy that gives memory back to the OS (the [`SlabPool`](super::SlabPool)
//! docs, "Giving memory back").

use std::collections::VecDeque;
use std::sync::atomic::AtomicIsize;
use std::sync::{Arc, OnceLock};

use super::super::MemCounter;
use super::super::populate::Reservoir;
use super::super::region::{HugeRegion, PAGE_SIZE};
use super::CHUNK_SIZE;
use super::chunk::{Chunk, Geometry};
use super::magazine::{Magazine, Run};
use super::spares::Spares;
use crate::api::Error;
use crate::sync::CachePadded;

/// Magazines the depot keeps as they are (for the next thread that needs one) before it
/// sorts further ones back into their chunks. One under Miri, so that small tests sort.
pub(in crate::alloc) const STASH: usize = if cfg!(miri) { 1 } else { 16 };

/// Bytes freed into the chunks since the last purge pass before another may run: at least
/// this, and at least an eighth of the bytes held.
const PURGE_MIN: usize = CHUNK_SIZE;

/// What the depot needs of its pool: the chunk shape, the magazine size, and where chunks
/// come from, go to and are counted.
pub(in crate::alloc) struct Backing {
    pub(in crate::alloc) geo: Geometry,
    /// Magazine capacity (slots).
    pub(in crate::alloc) magazine: usize,
    /// Bytes of chunks held: mapped, less the pages given back.
    pub(in crate::alloc) reserved: MemCounter,
    /// The caller's counter, charged like `reserved`.
    pub(in crate::alloc) external: Option<Arc<MemCounter>>,
    /// The structure's chunk populator, once attached.
    pub(in crate::alloc) populator: OnceLock<Arc<Reservoir>>,
    /// Empty chunks kept for reuse (shared by the classes of a size-class pool).
    pub(in crate::alloc) spares: Arc<Spares>,
}

impl Backing {
    /// Counts `bytes` more (`grow`) or fewer held bytes.
    fn charge(&self, bytes: usize, grow: bool) {
        if bytes == 0 {
            return;
        }
        for c in std::iter::once(&self.reserved).chain(self.external.as_deref()) {
            if grow { c.add(bytes) } else { c.sub(bytes) }
        }
    }

    /// A chunk for the pool: a spare, else a populated one from the populator, else a fresh
    /// mapping (whose first writes pay the page faults).
    fn new_chunk(&self) -> Result<Chunk, Error> {
        if let Some(c) = self.spares.take() {
            return Ok(c);
        }
        let region = match self.populator.get().and_then(Reservoir::take) {
            Some(r) => r,
            None => HugeRegion::new(CHUNK_SIZE)?,
        };
        Ok(Chunk::new(region))
    }
}

/// Free slots handed to a thread: a magazine, or a run of never-used slots.
pub(in crate::alloc) enum Slots {
    Magazine(Magazine),
    Run(Run),
}

/// The shared layer of a pool (see the module docs).
pub(in crate::alloc) struct Depot {
    /// Non-empty magazines, oldest first, at most [`STASH`] of them: a thread takes the
    /// newest (its slots were freed last, the likeliest still in cache), and the oldest
    /// is sorted back into its chunks when a new one comes in on a full stash, so that a
    /// long run of frees leaves the stash holding its last slots, not pinning its first.
    stash: VecDeque<Magazine>,
    /// The pool's chunks, by address.
    chunks: Vec<Chunk>,
    /// No chunk below this index has room.
    hint: usize,
    /// The chunk found last by [`Depot::find`].
    last: usize,
    /// Bytes of free slots in the chunks' maps.
    free_bytes: usize,
    /// Bytes of pages given back, over all chunks.
    purged_bytes: usize,
    /// Bytes freed into the chunks since the last purge pass.
    since_purge: usize,
    /// The live-object cells of the threads that have a cache entry for this pool.
    pub(in crate::alloc) live_cells: Vec<Arc<LiveCell>>,
    /// Allocations minus frees of exited threads and of lock-path operations.
    pub(in crate::alloc) orphan_live: isize,
}

// SAFETY: the raw pointers in a `Depot` (magazines) are addresses of slots inside the
// chunks the depot owns; they carry no thread affinity, and the pool's lock serializes
// their use.
unsafe impl Send for Depot {}

impl Depot {
    /// An empty depot: no chunk.
    pub(in crate::alloc) fn new() -> Depot {
        Depot {
            stash: VecDeque::new(),
            chunks: Vec::new(),
            hint: 0,
            last: 0,
            free_bytes: 0,
            purged_bytes: 0,
            since_purge: 0,
            live_cells: Vec::new(),
            orphan_live: 0,
        }
    }

    /// Free slots for a thread: a stashed magazine; else up to a magazine of free slots
    /// from the lowest chunk that has some, or a run of its never-used ones; else a run
    /// from a new chunk. Never empty.
    pub(in crate::alloc) fn take(&mut self, b: &Backing) -> Result<Slots, Error> {
        if let Some(m) = self.stash.pop_back() {
            return Ok(Slots::Magazine(m));
        }
        let g = &b.geo;
        // Free slots first (the lowest chunk holding some), then never-used ones.
        let range = self.hint..self.chunks.len();
        let i = match range.clone().find(|&i| self.chunks[i].freed() > 0) {
            Some(i) => i,
            None => match range.clone().find(|&i| self.chunks[i].has_room(g)) {
                Some(i) => i,
                None => self.add_chunk(b)?,
            },
        };
        if let Some(first) = range.clone().find(|&i| self.chunks[i].has_room(g)) {
            self.hint = first;
        }
        let c = &mut self.chunks[i];
        let (slots, pages) = if c.freed() > 0 {
            let mut m = Magazine::EMPTY;
            let pages = c.take_freed(g, b.magazine, &mut m);
            self.free_bytes -= m.count * g.slot;
            (Slots::Magazine(m), pages)
        } else {
            let (run, pages) = c.carve(g, b.magazine);
            (Slots::Run(run), pages)
        };
        self.purged_bytes -= pages * PAGE_SIZE;
        b.charge(pages * PAGE_SIZE, true);
        Ok(slots)
    }

    /// For moving an object down (`SlabPool::try_alloc_lower`): if the chunk holding slot
    /// `p` has fewer than a quarter of its slots out, or more than an eighth of the bytes
    /// of the pool's chunks are free slots, and a chunk at a lower address has room, takes
    /// one slot of the lowest such chunk (a free one, else a never-used one) and returns
    /// it; else `None`. Maps nothing.
    pub(in crate::alloc) fn take_lower(
        &mut self,
        b: &Backing,
        p: std::ptr::NonNull<u8>,
    ) -> Option<std::ptr::NonNull<u8>> {
        let g = &b.geo;
        let i = self.find(p.as_ptr() as usize);
        if !self.chunks[i].sparse_for_moves(g)
            && self.free_bytes * 8 <= self.chunks.len() * CHUNK_SIZE
        {
            return None;
        }
        let j = (self.hint..i).find(|&j| self.chunks[j].has_room(g))?;
        let c = &mut self.chunks[j];
        let (slot, pages) = if c.freed() > 0 {
            let mut m = Magazine::EMPTY;
            let pages = c.take_freed(g, 1, &mut m);
            self.free_bytes -= g.slot;
            // SAFETY: `take_freed` put one free slot of this chunk into the magazine.
            (unsafe { m.pop() }, pages)
        } else {
            let (mut run, pages) = c.carve(g, 1);
            (run.take(g.slot)?, pages)
        };
        self.purged_bytes -= pages * PAGE_SIZE;
        b.charge(pages * PAGE_SIZE, true);
        self.orphan_live += 1;
        Some(slot)
    }

    /// Maps (or reuses) a chunk and files it by address; returns its index.
    #[cold]
    fn add_chunk(&mut self, b: &Backing) -> Result<usize, Error> {
        let chunk = b.new_chunk()?;
        b.charge(chunk.held_bytes(), true);
        self.purged_bytes += CHUNK_SIZE - chunk.held_bytes();
        let i = self.chunks.partition_point(|c| c.base() < chunk.base());
        self.chunks.insert(i, chunk);
        // Every chunk below `i` is full (the search for room found none from `hint` on,
        // and none has room below `hint`).
        self.hint = i;
        Ok(i)
    }

    /// Index of the chunk holding slot address `p`.
    #[inline]
    fn find(&mut self, p: usize) -> usize {
        let base = p & !(CHUNK_SIZE - 1);
        if self.chunks.get(self.last).is_some_and(|c| c.base() == base) {
            return self.last;
        }
        let i = self
            .chunks
            .binary_search_by_key(&base, Chunk::base)
            .unwrap_or_else(|_| panic!("slot {p:#x} is in no chunk of this pool"));
        self.last = i;
        i
    }

    /// Takes back a magazine: stashed as it is; if that overfills the stash, its oldest
    /// magazine is sorted back into its chunks.
    pub(in crate::alloc) fn put_magazine(&mut self, b: &Backing, m: Magazine) {
        if m.count == 0 {
            return;
        }
        self.stash.push_back(m);
        if self.stash.len() <= STASH {
            return;
        }
        let Some(mut m) = self.stash.pop_front() else {
            return;
        };
        while m.count > 0 {
            // SAFETY: the magazine's slots are free slots of this pool (alive: the caller
            // holds it), handed to the depot, which owns them under the lock.
            let p = unsafe { m.pop() };
            self.put_slot_unchecked(b, p);
        }
        self.maybe_purge(b);
    }

    /// Takes back the never-used slots of a run (a thread exited).
    pub(in crate::alloc) fn put_run(&mut self, b: &Backing, mut run: Run) {
        while let Some(p) = run.take(b.geo.slot) {
            self.put_slot_unchecked(b, p);
        }
        self.maybe_purge(b);
    }

    /// Takes back one slot (a free without a thread cache).
    pub(in crate::alloc) fn put_slot(&mut self, b: &Backing, p: std::ptr::NonNull<u8>) {
        self.put_slot_unchecked(b, p);
        self.maybe_purge(b);
    }

    /// Marks `p` free in its chunk; gives the chunk up if that emptied it.
    fn put_slot_unchecked(&mut self, b: &Backing, p: std::ptr::NonNull<u8>) {
        let i = self.find(p.as_ptr() as usize);
        let c = &mut self.chunks[i];
        c.put(&b.geo, p);
        self.free_bytes += b.geo.slot;
        self.since_purge += b.geo.slot;
        self.hint = self.hint.min(i);
        if c.is_empty() {
            self.release(b, i);
        } else if c.sparse() {
            let pages = c.purge(&b.geo);
            self.purged_bytes += pages * PAGE_SIZE;
            b.charge(pages * PAGE_SIZE, false);
        }
    }

    /// Chunk `i` is empty: it leaves the pool, kept as a spare if there is room (with the
    /// pages it still holds), else unmapped.
    #[cold]
    fn release(&mut self, b: &Backing, i: usize) {
        let mut c = self.chunks.remove(i);
        self.free_bytes -= c.freed() * b.geo.slot;
        self.purged_bytes -= CHUNK_SIZE - c.held_bytes();
        b.charge(c.held_bytes(), false);
        if i < self.hint {
            self.hint -= 1;
        }
        self.last = 0;
        c.reset();
        // Unmapped here (outside the spares' lock) if the spares are full.
        drop(b.spares.keep(c));
    }

    /// Gives free pages back to the OS (of all chunks) when more than half of the bytes held
    /// are free slots and enough was freed since the last pass (so that the passes cost
    /// O(1) per freed byte, and a pool whose use goes up and down by less than half keeps
    /// its pages). A single chunk also gives its free pages back when it drains below a
    /// quarter in use, and again at each halving ([`Chunk::sparse`]).
    fn maybe_purge(&mut self, b: &Backing) {
        let held = b.reserved.get();
        if self.since_purge < PURGE_MIN.max(held / 8)
            || self.free_bytes.saturating_sub(self.purged_bytes) * 2 <= held
        {
            return;
        }
        self.since_purge = 0;
        let mut pages = 0;
        for c in &mut self.chunks {
            pages += c.purge(&b.geo);
        }
        self.purged_bytes += pages * PAGE_SIZE;
        b.charge(pages * PAGE_SIZE, false);
    }

    /// Number of chunks.
    pub(in crate::alloc) fn chunk_count(&self) -> usize {
        self.chunks.len()
    }
}

/// Allocations minus frees made by one thread on one pool. Only that thread writes it (with
/// a plain load and store: no read-modify-write on the hot path); the pool reads it under
/// its lock. On its own cache lines so that threads do not false-share their counts.
#[derive(Default)]
pub(in crate::alloc) struct LiveCell(CachePadded<AtomicIsize>);

impl LiveCell {
    /// Adds `delta`. Only the owning thread calls this.
    #[inline]
    pub(in crate::alloc) fn bump(&self, delta: isize) {
        use std::sync::atomic::Ordering;
        let v = self.0.load(Ordering::Relaxed);
        self.0.store(v.wrapping_add(delta), Ordering::Relaxed);
    }

    /// The count.
    pub(in crate::alloc) fn get(&self) -> isize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}
