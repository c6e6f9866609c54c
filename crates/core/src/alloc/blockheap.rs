//! [`BlockHeap`]: variable-size blocks (multiples of 256 bytes, up to 512 KiB) carved
//! best-fit from 2 MiB chunks, whose free pages go back to the OS — for blocks of many
//! sizes and no great number (a slab pool's size classes would each need a 2 MiB chunk of
//! their own), which the global allocator would keep once freed (glibc returns the middle of
//! its heap only when asked).
//!
//! # Layout
//!
//! Chunks are [`HugeRegion`]s. The free space of all chunks is a set of *extents* (runs of
//! free granules of 256 bytes, never across two chunks), kept twice: by address, to
//! coalesce a freed block with its free neighbours, and by (length, address), to find the
//! smallest extent that fits a block and, among those, the lowest (best fit: it leaves the
//! large extents whole, and use gathers in the low chunks so that the high ones can empty
//! out). Both are `BTreeSet`s: an allocation or a free costs O(log extents). Each chunk
//! counts its bytes in use and marks its 512 pages (4 KiB) given back to the OS. A block
//! larger than [`BlockHeap::SPAN_MAX`] gets a [`PageRegion`] of its own.
//!
//! # Giving memory back
//!
//! Freed blocks stay resident (a reused page costs no fault) until the bytes freed since
//! the last pass exceed a quarter of the bytes held and at least one chunk: then every
//! whole page inside a free extent that is still resident is given back
//! (`madvise(MADV_DONTNEED)`, one call per run of pages). A pass walks the free extents,
//! paid for by the quarter of the heap freed since the last one. A chunk is advised
//! `MADV_NOHUGEPAGE` when its first pages are given back: `khugepaged` (which on Linux
//! collapses a huge-page-advised range holding even one resident page) would otherwise
//! make its pages given back resident again, unseen by the heap, which never gives a page
//! back twice — after removing 90% of 4M keys from a Hyperion, chunks holding 19 KiB of
//! blocks were 1.6 MiB resident. A chunk whose last block is
//! freed is unmapped, except one kept whole as a spare. So a heap whose use goes up and
//! down by less than a quarter makes no system call.
//!
//! # Concurrency
//!
//! One [`SpinLock`] over the maps, held for an allocation or a free (and the `madvise` or
//! `munmap` calls they make). A freed block must not be accessed any more — a reader that
//! may still hold it must be waited out first (the epoch collector), since its pages may be
//! given back (reading zero) or unmapped (faulting).

use std::collections::{BTreeMap, BTreeSet};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::pages::PageRegion;
use super::region::{HUGE_PAGE_SIZE, HugeRegion, PAGE_SIZE};
use crate::api::Error;
use crate::sync::SpinLock;

/// Bytes of a granule, the unit blocks are counted in.
const GRANULE: usize = 256;
/// Pages of a chunk.
const PAGES: usize = HUGE_PAGE_SIZE / PAGE_SIZE;

/// A chunk of the heap: its memory, its bytes in use, its pages given back.
struct Chunk {
    region: HugeRegion,
    used: usize,
    /// Bit `p`: page `p` is free and was given back to the OS.
    given: [u64; PAGES / 64],
    given_count: usize,
    /// Advised `MADV_NOHUGEPAGE` (at its first pages given back).
    small_pages: bool,
}

impl Chunk {
    /// Marks the pages of bytes `off..off + len` in use (resident); returns how many of
    /// them had been given back.
    fn ungive(&mut self, off: usize, len: usize) -> usize {
        if self.given_count == 0 {
            return 0;
        }
        let mut back = 0;
        for p in off / PAGE_SIZE..(off + len).div_ceil(PAGE_SIZE) {
            let (w, b) = (p / 64, 1u64 << (p % 64));
            if self.given[w] & b != 0 {
                self.given[w] &= !b;
                back += 1;
            }
        }
        self.given_count -= back;
        back
    }

    /// Gives back the whole pages inside the free bytes `off..off + len` not given yet, in
    /// runs; returns how many.
    fn give(&mut self, off: usize, len: usize) -> usize {
        let (first, end) = (off.div_ceil(PAGE_SIZE), (off + len) / PAGE_SIZE);
        let fresh = |c: &Chunk, p: usize| c.given[p / 64] & (1 << (p % 64)) == 0;
        let mut total = 0;
        let mut p = first;
        while p < end {
            if !fresh(self, p) {
                p += 1;
                continue;
            }
            let start = p;
            while p < end && fresh(self, p) {
                p += 1;
            }
            if !self.small_pages {
                // `khugepaged` would collapse the pages left into huge pages again, the
                // ones given back with them (measured: `docs/results/reliability.md`,
                // "Memory return").
                self.region.no_huge_pages();
                self.small_pages = true;
            }
            // SAFETY: pages `start..p` lie inside a free extent (no live block: blocks are
            // freed only once nobody accesses them) of this live chunk; the heap's lock is
            // held, so none is handed out during the call.
            if unsafe { self.region.discard(start * PAGE_SIZE..p * PAGE_SIZE) } {
                for q in start..p {
                    self.given[q / 64] |= 1 << (q % 64);
                }
                self.given_count += p - start;
                total += p - start;
            }
        }
        total
    }
}

/// The heap's state, under its lock.
struct Heap {
    /// Chunks by base address.
    chunks: BTreeMap<usize, Chunk>,
    /// Free extents: (start, length).
    by_addr: BTreeSet<(usize, usize)>,
    /// The same extents: (length, start).
    by_size: BTreeSet<(usize, usize)>,
    /// Blocks above [`BlockHeap::SPAN_MAX`], by address.
    large: BTreeMap<usize, PageRegion>,
    /// An empty chunk kept whole for the next one needed.
    spare: Option<HugeRegion>,
    /// Bytes freed since the last pass that gave pages back.
    freed_since: usize,
}

// SAFETY: the heap owns its mappings; nothing in it is tied to a thread, and the lock
// serializes its use.
unsafe impl Send for Heap {}

fn chunk_of(addr: usize) -> usize {
    addr & !(HUGE_PAGE_SIZE - 1)
}

impl Heap {
    fn insert(&mut self, start: usize, len: usize) {
        self.by_addr.insert((start, len));
        self.by_size.insert((len, start));
    }

    fn remove(&mut self, start: usize, len: usize) {
        self.by_addr.remove(&(start, len));
        self.by_size.remove(&(len, start));
    }

    /// Adds the free bytes `start..start + len` of one chunk, merged with the free
    /// extents of the same chunk that touch them.
    fn add_free(&mut self, mut start: usize, mut len: usize) {
        let base = chunk_of(start);
        if let Some(&(s, l)) = self.by_addr.range(..(start, 0)).next_back()
            && s + l == start
            && chunk_of(s) == base
        {
            self.remove(s, l);
            (start, len) = (s, l + len);
        }
        if let Some(&(s, l)) = self.by_addr.range((start + len, 0)..).next()
            && s == start + len
            && chunk_of(s) == base
        {
            self.remove(s, l);
            len += l;
        }
        self.insert(start, len);
    }
}

/// Variable-size blocks (multiples of 256 bytes) carved best-fit from 2 MiB chunks, lowest
/// address first; blocks over [`SPAN_MAX`](Self::SPAN_MAX) are mapped alone. Free pages
/// go back to the OS (`madvise(MADV_DONTNEED)`) once a quarter of the heap (and at least a
/// chunk) was freed since the last pass; a chunk whose last block is freed is unmapped,
/// except one spare. One spin lock; a freed block must not be read any more (its pages may
/// read zero or be unmapped).
pub struct BlockHeap {
    heap: SpinLock<Heap>,
    /// Bytes held: chunks less the pages given back, the spare, large blocks.
    held: AtomicUsize,
}

impl Default for BlockHeap {
    fn default() -> Self {
        BlockHeap::new()
    }
}

impl BlockHeap {
    /// Largest block carved from a chunk (a quarter of one); larger ones are mapped alone.
    pub const SPAN_MAX: usize = HUGE_PAGE_SIZE / 4;
    /// The unit of block sizes: a block of `len` bytes takes `len` rounded up to it.
    pub const GRANULE: usize = GRANULE;

    /// An empty heap: maps nothing yet.
    pub fn new() -> BlockHeap {
        BlockHeap {
            heap: SpinLock::new(Heap {
                chunks: BTreeMap::new(),
                by_addr: BTreeSet::new(),
                by_size: BTreeSet::new(),
                large: BTreeMap::new(),
                spare: None,
                freed_since: 0,
            }),
            held: AtomicUsize::new(0),
        }
    }

    /// Bytes a block of `len` bytes takes: `len` rounded up to a granule (at least one).
    fn span(len: usize) -> usize {
        len.max(1).next_multiple_of(GRANULE)
    }

    /// A block of `len` bytes (rounded up to [`GRANULE`](Self::GRANULE)), aligned to 256
    /// bytes, with unspecified contents (zero where the pages are fresh or were given back,
    /// a previous block's bytes otherwise).
    ///
    /// Fails with [`Error::OutOfMemory`] when the OS refuses memory; nothing changes then.
    pub fn try_alloc(&self, len: usize) -> Result<NonNull<u8>, Error> {
        if super::fail_here() {
            return Err(Error::OutOfMemory);
        }
        if len > Self::SPAN_MAX {
            let region = PageRegion::new(len)?;
            let p = NonNull::new(region.as_ptr()).ok_or(Error::OutOfMemory)?;
            self.held
                .fetch_add(region.reserved_len(), Ordering::Relaxed);
            self.heap.lock().large.insert(p.as_ptr() as usize, region);
            return Ok(p);
        }
        let n = Self::span(len);
        let mut h = self.heap.lock();
        let (flen, start) = match h.by_size.range((n, 0)..).next() {
            Some(&e) => e,
            None => {
                let region = match h.spare.take() {
                    Some(r) => r,
                    None => {
                        let r = HugeRegion::new(HUGE_PAGE_SIZE)?;
                        self.held.fetch_add(HUGE_PAGE_SIZE, Ordering::Relaxed);
                        r
                    }
                };
                let base = region.as_ptr() as usize;
                h.chunks.insert(
                    base,
                    Chunk {
                        region,
                        used: 0,
                        given: [0; PAGES / 64],
                        given_count: 0,
                        small_pages: false,
                    },
                );
                h.insert(base, HUGE_PAGE_SIZE);
                (HUGE_PAGE_SIZE, base)
            }
        };
        h.remove(start, flen);
        if flen > n {
            h.insert(start + n, flen - n);
        }
        let c = h
            .chunks
            .get_mut(&chunk_of(start))
            .expect("an extent lies in a chunk");
        c.used += n;
        let back = c.ungive(start - chunk_of(start), n);
        self.held.fetch_add(back * PAGE_SIZE, Ordering::Relaxed);
        // The chunk's own pointer (with its provenance), offset to the block.
        let p = c.region.as_ptr().wrapping_add(start - chunk_of(start));
        NonNull::new(p).ok_or(Error::OutOfMemory)
    }

    /// Frees a block.
    ///
    /// # Safety
    ///
    /// `p` came from [`try_alloc`](Self::try_alloc) of this heap with this `len`, is freed
    /// once, and nobody accesses it any more (its pages may be given back or unmapped).
    pub unsafe fn free(&self, p: NonNull<u8>, len: usize) {
        let addr = p.as_ptr() as usize;
        let mut h = self.heap.lock();
        if len > Self::SPAN_MAX {
            let region = h.large.remove(&addr).expect("a large block of this heap");
            drop(h);
            self.held
                .fetch_sub(region.reserved_len(), Ordering::Relaxed);
            return;
        }
        let n = Self::span(len);
        let base = chunk_of(addr);
        let c = h.chunks.get_mut(&base).expect("a block of this heap");
        c.used -= n;
        if c.used == 0 {
            // The chunk's free extents are all of it but this block: drop them all.
            let c = h.chunks.remove(&base).expect("found above");
            let extents: Vec<(usize, usize)> = h
                .by_addr
                .range((base, 0)..(base + HUGE_PAGE_SIZE, 0))
                .copied()
                .collect();
            for (s, l) in extents {
                h.remove(s, l);
            }
            if c.given_count == 0 && h.spare.is_none() {
                h.spare = Some(c.region);
            } else {
                self.held.fetch_sub(
                    HUGE_PAGE_SIZE - c.given_count * PAGE_SIZE,
                    Ordering::Relaxed,
                );
                drop(h);
                drop(c);
            }
            return;
        }
        h.add_free(addr, n);
        h.freed_since += n;
        let held = self.held.load(Ordering::Relaxed);
        if h.freed_since > HUGE_PAGE_SIZE.max(held / 4) {
            h.freed_since = 0;
            let Heap {
                chunks, by_addr, ..
            } = &mut *h;
            let mut given = 0;
            for &(s, l) in by_addr.iter() {
                let base = chunk_of(s);
                if let Some(c) = chunks.get_mut(&base) {
                    given += c.give(s - base, l);
                }
            }
            self.held.fetch_sub(given * PAGE_SIZE, Ordering::Relaxed);
        }
    }

    /// Bytes held: the chunks less the pages given back, the spare chunk, and the blocks
    /// mapped alone.
    pub fn held_bytes(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for BlockHeap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockHeap")
            .field("held_bytes", &self.held_bytes())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: NonNull<u8>, len: usize, b: u8) {
        // SAFETY: a live block of at least `len` bytes, used by this thread only.
        unsafe { p.as_ptr().write_bytes(b, len) };
    }

    fn holds(p: NonNull<u8>, len: usize, b: u8) -> bool {
        // SAFETY: a live block of at least `len` bytes, written before.
        unsafe { std::slice::from_raw_parts(p.as_ptr(), len) }
            .iter()
            .all(|&x| x == b)
    }

    #[test]
    fn alloc_blockheap_best_fit_and_coalescing() {
        let h = BlockHeap::new();
        let a = h.try_alloc(1000).unwrap(); // 1024 bytes
        let b = h.try_alloc(256).unwrap();
        let c = h.try_alloc(512).unwrap();
        let base = a.as_ptr() as usize;
        assert_eq!(b.as_ptr() as usize, base + 1024);
        assert_eq!(c.as_ptr() as usize, base + 1280);
        // SAFETY: allocated above, freed once.
        unsafe { h.free(a, 1000) };
        // The smallest extent that fits: the 1024-byte hole, not the chunk's tail.
        let d = h.try_alloc(768).unwrap();
        assert_eq!(d.as_ptr() as usize, base);
        // SAFETY: allocated above, freed once.
        unsafe { h.free(b, 256) };
        // The 256 + 256 bytes around `d`'s end coalesced: a 512-byte block fits there.
        let e = h.try_alloc(512).unwrap();
        assert_eq!(e.as_ptr() as usize, base + 768);
        for (p, l) in [(c, 512), (d, 768), (e, 512)] {
            // SAFETY: allocated above, freed once.
            unsafe { h.free(p, l) };
        }
        // Empty: the chunk is the spare.
        assert_eq!(h.held_bytes(), HUGE_PAGE_SIZE);
        let f = h.try_alloc(256).unwrap();
        assert_eq!(f.as_ptr() as usize, base, "the spare chunk was reused");
        // SAFETY: allocated above, freed once.
        unsafe { h.free(f, 256) };
    }

    #[test]
    fn alloc_blockheap_first_fit_reuse_and_give_back() {
        let h = BlockHeap::new();
        let n = if cfg!(miri) { 40 } else { 2000 };
        let blocks: Vec<(NonNull<u8>, usize)> = (0..n)
            .map(|i| {
                let len = 2048 + (i % 57) * 256;
                let p = h.try_alloc(len).unwrap();
                assert_eq!(p.as_ptr() as usize % GRANULE, 0);
                write(p, len, i as u8);
                (p, len)
            })
            .collect();
        let mut addrs: Vec<(usize, usize)> = blocks
            .iter()
            .map(|&(p, l)| (p.as_ptr() as usize, l))
            .collect();
        addrs.sort_unstable();
        assert!(
            addrs.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0),
            "overlap"
        );
        let full = h.held_bytes();
        // Free nine in ten: memory goes back (pages given back, empty chunks unmapped).
        for (i, &(p, len)) in blocks.iter().enumerate() {
            if i % 10 != 0 {
                // SAFETY: allocated above with `len`, freed once, not used again.
                unsafe { h.free(p, len) };
            }
        }
        if cfg!(all(unix, not(miri))) {
            assert!(
                h.held_bytes() < full / 2,
                "{} of {full} bytes still held",
                h.held_bytes()
            );
        }
        for (i, &(p, len)) in blocks.iter().enumerate().filter(|(i, _)| i % 10 == 0) {
            assert!(holds(p, len, i as u8));
            // SAFETY: as above.
            unsafe { h.free(p, len) };
        }
        // At most the spare chunk remains.
        assert!(h.held_bytes() <= HUGE_PAGE_SIZE);
    }

    #[test]
    fn alloc_blockheap_large_blocks_map_alone() {
        let h = BlockHeap::new();
        let len = BlockHeap::SPAN_MAX + 1;
        let p = h.try_alloc(len).unwrap();
        write(p, len, 3);
        assert_eq!(h.held_bytes(), len.next_multiple_of(PAGE_SIZE));
        // SAFETY: allocated above, freed once.
        unsafe { h.free(p, len) };
        assert_eq!(h.held_bytes(), 0);
    }
}
