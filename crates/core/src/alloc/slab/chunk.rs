//! One chunk of a slab pool as the depot sees it: 2 MiB of slots, which of them are free
//! in the depot (a bitmap kept outside the slots), which were never handed out, and which
//! of its 4 KiB pages were given back to the OS.
//!
//! A slot is in one of three places: *out* (allocated, or in a thread's magazine or run,
//! or in the depot's stash of magazines: the chunk does not know which), *free* here (its
//! bit set in [`Chunk::free`]), or *uncarved* (index at or above [`Chunk::carved`]: never
//! handed out since the chunk was made or reset). The free bitmap is out of band — a free
//! slot's bytes carry nothing — so whole pages of free slots can be given back
//! ([`Chunk::purge`]) and read as zero afterwards without losing anything.
//!
//! Invariants: `freed` is the number of set bits, all below `carved`; a page marked
//! `purged` holds no out slot (a slot is taken out only through [`Chunk::take_freed`] or
//! [`Chunk::carve`], which unmark its pages first).

use std::ptr::NonNull;

use super::super::region::{HugeRegion, PAGE_SIZE};
use super::CHUNK_SIZE;
use super::magazine::{Magazine, Run};

/// Pages of 4 KiB in a chunk.
const PAGES: usize = CHUNK_SIZE / PAGE_SIZE;

/// The shape of a pool's chunks: slot size and slots per chunk.
#[derive(Clone, Copy, Debug)]
pub(in crate::alloc) struct Geometry {
    /// Bytes per slot.
    pub(in crate::alloc) slot: usize,
    /// Slots per chunk.
    pub(in crate::alloc) slots: usize,
}

impl Geometry {
    /// Pages overlapped by slot `i`.
    fn pages_of(&self, i: usize) -> std::ops::RangeInclusive<usize> {
        let start = i * self.slot;
        start / PAGE_SIZE..=(start + self.slot - 1) / PAGE_SIZE
    }

    /// Slots overlapping page `p` (none, as an empty range, for a page past the last slot).
    fn slots_of(&self, p: usize) -> std::ops::Range<usize> {
        let first = p * PAGE_SIZE / self.slot;
        let end = ((p + 1) * PAGE_SIZE).div_ceil(self.slot).min(self.slots);
        first.min(end)..end
    }
}

/// A chunk of a pool and the depot's knowledge of its slots (see the module docs).
pub(in crate::alloc) struct Chunk {
    region: HugeRegion,
    /// Slots `0..carved` were handed out since the chunk was made or reset.
    carved: usize,
    /// Free slots (set bits of `free`).
    freed: usize,
    /// Bit `i`: slot `i` is free in the depot. Allocated at the first free, dropped when
    /// the chunk is reset.
    free: Vec<u64>,
    /// No word of `free` below this one has a set bit.
    hint: usize,
    /// Bit `p`: page `p` was given back to the OS and no slot on it was taken out since.
    purged: [u64; PAGES / 64],
    /// Set bits of `purged`.
    purged_pages: usize,
    /// Slots out below which the chunk next gives its free pages back
    /// ([`Chunk::sparse`]): a quarter of its slots once at least half were out, then half
    /// of that at each pass; 0 (disarmed) until half are out again.
    purge_below: usize,
}

impl Chunk {
    /// A chunk over `region` (a fresh mapping, or a chunk given back empty): nothing carved.
    pub(in crate::alloc) fn new(region: HugeRegion) -> Chunk {
        debug_assert_eq!(region.reserved_len(), CHUNK_SIZE);
        Chunk {
            region,
            carved: 0,
            freed: 0,
            free: Vec::new(),
            hint: 0,
            purged: [0; PAGES / 64],
            purged_pages: 0,
            purge_below: 0,
        }
    }

    /// Slots out (allocated, or held by threads or the stash).
    #[inline]
    fn out(&self) -> usize {
        self.carved - self.freed
    }

    /// Arms the chunk once at least half of it is out (after slots were taken).
    #[inline]
    fn arm(&mut self, g: &Geometry) {
        if self.out() * 2 >= g.slots {
            self.purge_below = g.slots / 4;
        }
    }

    /// Whether the chunk has drained below its mark (a quarter of its slots out, then an
    /// eighth, a sixteenth, …): its free pages should go back to the OS now. A chunk
    /// drained this far is one that allocation, lowest chunk first, is leaving to empty;
    /// halving the mark makes the passes of one drain O(log slots), and re-arming only at
    /// half keeps a chunk whose use goes up and down by less than a quarter of it from
    /// giving back and faulting in the same pages over and over.
    #[inline]
    pub(in crate::alloc) fn sparse(&mut self) -> bool {
        if self.out() < self.purge_below {
            self.purge_below = self.out() / 2;
            return true;
        }
        false
    }

    /// Whether fewer than a quarter of the chunk's slots are out: an object here is worth
    /// moving to a fuller chunk (see `Depot::take_lower`).
    #[inline]
    pub(in crate::alloc) fn sparse_for_moves(&self, g: &Geometry) -> bool {
        self.out() * 4 < g.slots
    }

    /// The chunk's first byte (2 MiB-aligned).
    #[inline]
    pub(in crate::alloc) fn base(&self) -> usize {
        self.region.as_ptr() as usize
    }

    /// Whether every slot handed out has come back (nothing is out).
    #[inline]
    pub(in crate::alloc) fn is_empty(&self) -> bool {
        self.freed == self.carved
    }

    /// Whether a slot can be taken here (free or uncarved).
    #[inline]
    pub(in crate::alloc) fn has_room(&self, g: &Geometry) -> bool {
        self.freed > 0 || self.carved < g.slots
    }

    /// Free slots in the bitmap.
    #[inline]
    pub(in crate::alloc) fn freed(&self) -> usize {
        self.freed
    }

    /// Bytes of the chunk that may be resident: 2 MiB less the pages given back.
    #[inline]
    pub(in crate::alloc) fn held_bytes(&self) -> usize {
        CHUNK_SIZE - self.purged_pages * PAGE_SIZE
    }

    /// Makes an empty chunk fresh: nothing carved, no free bits, disarmed. Pages stay as
    /// they are (those given back stay given back, and are counted so when it is reused).
    pub(in crate::alloc) fn reset(&mut self) {
        debug_assert!(self.is_empty());
        self.carved = 0;
        self.freed = 0;
        self.free = Vec::new();
        self.hint = 0;
        self.purge_below = 0;
    }

    /// Slot index of `p`, a slot of this chunk.
    #[inline]
    fn index(&self, g: &Geometry, p: NonNull<u8>) -> usize {
        let i = (p.as_ptr() as usize - self.base()) / g.slot;
        debug_assert!(i < self.carved, "slot {i} was never handed out");
        i
    }

    /// Returns the out slot `p` (of this chunk) to the chunk. Touches no slot memory.
    pub(in crate::alloc) fn put(&mut self, g: &Geometry, p: NonNull<u8>) {
        let i = self.index(g, p);
        if self.free.is_empty() {
            self.free = vec![0; g.slots.div_ceil(64)];
        }
        let (w, b) = (i / 64, 1u64 << (i % 64));
        debug_assert!(self.free[w] & b == 0, "double free of slot {i}");
        self.free[w] |= b;
        self.freed += 1;
        self.hint = self.hint.min(w);
    }

    /// Marks the pages of slots `range` resident again (they are being taken out); returns
    /// how many were marked given back.
    fn unpurge(&mut self, g: &Geometry, first: usize, last: usize) -> usize {
        if self.purged_pages == 0 {
            return 0;
        }
        let pages = *g.pages_of(first).start()..=*g.pages_of(last).end();
        let mut n = 0;
        for p in pages {
            let (w, b) = (p / 64, 1u64 << (p % 64));
            if self.purged[w] & b != 0 {
                self.purged[w] &= !b;
                n += 1;
            }
        }
        self.purged_pages -= n;
        n
    }

    /// Takes up to `max` free slots into `mag`, lowest first; returns the number of pages
    /// that come back into use (they were given back).
    pub(in crate::alloc) fn take_freed(
        &mut self,
        g: &Geometry,
        max: usize,
        mag: &mut Magazine,
    ) -> usize {
        let (mut first, mut last, mut n) = (usize::MAX, 0, 0);
        while n < max && self.freed > n {
            let w = (self.hint..self.free.len())
                .find(|&w| self.free[w] != 0)
                .expect("a set bit exists while freed > 0");
            self.hint = w;
            let mut word = self.free[w];
            while word != 0 && n < max {
                let i = w * 64 + word.trailing_zeros() as usize;
                word &= word - 1;
                let p = NonNull::new(self.region.as_ptr().wrapping_add(i * g.slot))
                    .expect("slots are inside a mapped chunk");
                // SAFETY: slot `i` was free in the depot (its bit was set), so nobody uses
                // it; it is inside this live chunk (a page given back faults in anew).
                unsafe { mag.push(p) };
                (first, last, n) = (first.min(i), i, n + 1);
            }
            self.free[w] = word;
        }
        self.freed -= n;
        self.arm(g);
        // Slots are taken in ascending order, so every page between the first and the last
        // holds taken or out slots only: none of them stays given back.
        if n == 0 {
            0
        } else {
            self.unpurge(g, first, last)
        }
    }

    /// Takes up to `max` uncarved slots as a run (none if all are carved); returns it with
    /// the number of pages that come back into use.
    pub(in crate::alloc) fn carve(&mut self, g: &Geometry, max: usize) -> (Run, usize) {
        let n = max.min(g.slots - self.carved);
        if n == 0 {
            return (Run::EMPTY, 0);
        }
        let first = self.carved;
        self.carved += n;
        self.arm(g);
        let pages = self.unpurge(g, first, first + n - 1);
        let run = Run {
            next: self.region.as_ptr().wrapping_add(first * g.slot),
            left: n,
        };
        (run, pages)
    }

    /// Whether bits `lo..hi` of the free map are all set.
    fn all_free(&self, lo: usize, hi: usize) -> bool {
        let mut i = lo;
        while i < hi {
            let (w, b) = (i / 64, i % 64);
            let n = (64 - b).min(hi - i);
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << b
            };
            if self.free.get(w).is_none_or(|&x| x & mask != mask) {
                return false;
            }
            i += n;
        }
        true
    }

    /// Whether page `p` holds free slots only, at least one of them carved (pages of never
    /// carved slots were never touched by the pool's users).
    fn page_free(&self, g: &Geometry, p: usize) -> bool {
        let slots = g.slots_of(p);
        if slots.is_empty() || slots.start >= self.carved {
            return false;
        }
        self.all_free(slots.start, slots.end.min(self.carved))
    }

    /// Gives back to the OS every page that holds only free slots and is not given back
    /// already, in runs of consecutive pages (one `madvise` each). Returns the number of
    /// pages given back.
    pub(in crate::alloc) fn purge(&mut self, g: &Geometry) -> usize {
        if self.freed == 0 {
            return 0;
        }
        let mut total = 0;
        let mut p = 0;
        while p < PAGES {
            let fresh =
                |c: &Chunk, p: usize| c.purged[p / 64] & (1 << (p % 64)) == 0 && c.page_free(g, p);
            if !fresh(self, p) {
                p += 1;
                continue;
            }
            let start = p;
            while p < PAGES && fresh(self, p) {
                p += 1;
            }
            // SAFETY: pages `start..p` hold only slots free in the depot (nobody uses them,
            // nobody expects their contents: the free map is kept outside the slots) or no
            // slot at all; they are inside this live chunk. The caller holds the depot lock,
            // so no slot of them is taken out during the call.
            let given = unsafe { self.region.discard(start * PAGE_SIZE..p * PAGE_SIZE) };
            if given {
                for q in start..p {
                    self.purged[q / 64] |= 1 << (q % 64);
                }
                self.purged_pages += p - start;
                total += p - start;
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk() -> Chunk {
        Chunk::new(HugeRegion::new(CHUNK_SIZE).unwrap())
    }

    fn slot(c: &Chunk, g: &Geometry, i: usize) -> NonNull<u8> {
        NonNull::new(c.region.as_ptr().wrapping_add(i * g.slot)).unwrap()
    }

    #[test]
    fn alloc_chunk_geometry_pages_and_slots() {
        let g = Geometry {
            slot: 3000,
            slots: CHUNK_SIZE / 3000,
        };
        assert_eq!(g.pages_of(0), 0..=0);
        assert_eq!(g.pages_of(1), 0..=1);
        assert_eq!(g.slots_of(0), 0..2);
        assert_eq!(g.slots_of(1), 1..3);
        assert_eq!(g.slots_of(PAGES - 1), 697..699);
        // A page in the tail past the last slot holds none.
        let big = Geometry {
            slot: 40_000,
            slots: CHUNK_SIZE / 40_000,
        };
        assert!(big.slots_of(PAGES - 1).is_empty());
        let small = Geometry {
            slot: 16,
            slots: CHUNK_SIZE / 16,
        };
        assert_eq!(small.slots_of(1), 256..512);
    }

    #[test]
    fn alloc_chunk_carve_free_take_and_empty() {
        let g = Geometry {
            slot: 64,
            slots: CHUNK_SIZE / 64,
        };
        let mut c = chunk();
        assert!(c.is_empty() && c.has_room(&g));
        let (run, pages) = c.carve(&g, 100);
        assert_eq!((run.left, pages), (100, 0));
        assert!(!c.is_empty());
        for i in (0..100).rev() {
            c.put(&g, slot(&c, &g, i));
        }
        assert!(c.is_empty());
        assert_eq!(c.freed(), 100);
        let mut mag = Magazine::EMPTY;
        c.take_freed(&g, 10, &mut mag);
        assert_eq!((mag.count, c.freed()), (10, 90));
        while mag.count > 0 {
            // SAFETY: as above.
            let p = unsafe { mag.pop() };
            c.put(&g, p);
        }
        assert!(c.is_empty());
        c.reset();
        assert_eq!((c.carved, c.freed(), c.free.len()), (0, 0, 0));
    }

    #[test]
    fn alloc_chunk_purge_whole_free_pages_only() {
        let g = Geometry {
            slot: 1024,
            slots: CHUNK_SIZE / 1024,
        };
        let mut c = chunk();
        let (run, _) = c.carve(&g, 16); // pages 0..4
        assert_eq!(run.left, 16);
        for i in 0..16 {
            // SAFETY: carved just now, inside the chunk, used by nobody else.
            unsafe { slot(&c, &g, i).as_ptr().write_bytes(0xAB, g.slot) };
        }
        // Page 1 (slots 4..8) entirely free, page 2 only in part.
        for i in [4, 5, 6, 7, 8, 9] {
            c.put(&g, slot(&c, &g, i));
        }
        assert_eq!(c.purge(&g), if cfg!(all(unix, not(miri))) { 1 } else { 0 });
        // Slot 8's page is untouched; slot 4 reads as zero where the OS took the page.
        let first_byte = |i: usize| {
            // SAFETY: a slot inside the live chunk; nobody else uses it.
            unsafe { slot(&c, &g, i).as_ptr().read() }
        };
        assert_eq!((first_byte(4), first_byte(8)), (0, 0xAB));
        // A second purge finds nothing new.
        assert_eq!(c.purge(&g), 0);
        // Taking the page's slots out again marks it resident.
        let mut mag = Magazine::EMPTY;
        let back = c.take_freed(&g, 6, &mut mag);
        assert_eq!(back, usize::from(cfg!(all(unix, not(miri)))));
        assert_eq!(c.purged_pages, 0);
        assert_eq!(c.held_bytes(), CHUNK_SIZE);
    }
}
