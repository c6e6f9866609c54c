//! [`PageHeap`]: blocks of whole 4 KiB pages carved first-fit from 2 MiB chunks, whose freed
//! pages go back to the OS — for blocks too large for a slab pool's size classes to serve
//! densely (one 2 MiB chunk per class) and too many to map one by one.
//!
//! # Layout
//!
//! A chunk is a [`HugeRegion`] of 512 pages with two 512-bit maps: pages in use, and free
//! pages given back to the OS. A block of `n` pages takes the first run of `n` free pages
//! in the lowest chunk that has one (lowest address first, so that use gathers in the low
//! chunks and the high ones empty out). A block larger than [`PageHeap::SPAN_MAX`] gets a
//! [`PageRegion`] of its own.
//!
//! # Giving memory back
//!
//! Freed pages stay resident (a reused page costs no fault) until the free resident pages
//! exceed a quarter of the bytes held and at least one chunk: then every free page still
//! resident is given back (`madvise(MADV_DONTNEED)`, runs of pages in one call each). A
//! chunk whose last block is freed is unmapped, except one kept whole as a spare. So the
//! resident memory is at most about 4/3 of what the live blocks need plus a chunk, and a heap
//! whose use goes up and down by less than that makes no system call.
//!
//! # Concurrency
//!
//! One [`SpinLock`] over the maps, held for an allocation or a free (and the `madvise` or
//! `munmap` calls they make). A freed block must not be accessed any more — a reader that
//! may still hold it must be waited out first (the epoch collector), since its pages may be
//! given back (reading zero) or unmapped (faulting).

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::pages::PageRegion;
use super::region::{HUGE_PAGE_SIZE, HugeRegion, PAGE_SIZE};
use crate::api::Error;
use crate::sync::SpinLock;

/// Pages of a chunk.
const PAGES: usize = HUGE_PAGE_SIZE / PAGE_SIZE;

/// A chunk of the heap: its memory and its two page maps.
struct Chunk {
    region: HugeRegion,
    /// Bit `p`: page `p` belongs to a live block.
    used: [u64; PAGES / 64],
    used_pages: usize,
    /// Bit `p`: page `p` is free and was given back to the OS.
    given: [u64; PAGES / 64],
    given_pages: usize,
}

fn bit(map: &[u64; PAGES / 64], p: usize) -> bool {
    map[p / 64] & (1 << (p % 64)) != 0
}

fn set(map: &mut [u64; PAGES / 64], p: usize, on: bool) {
    if on {
        map[p / 64] |= 1 << (p % 64);
    } else {
        map[p / 64] &= !(1 << (p % 64));
    }
}

impl Chunk {
    fn new(region: HugeRegion) -> Chunk {
        Chunk {
            region,
            used: [0; PAGES / 64],
            used_pages: 0,
            given: [0; PAGES / 64],
            given_pages: 0,
        }
    }

    fn base(&self) -> usize {
        self.region.as_ptr() as usize
    }

    /// First page of the lowest run of `n` free pages.
    fn find(&self, n: usize) -> Option<usize> {
        if PAGES - self.used_pages < n {
            return None;
        }
        let mut run = 0;
        for p in 0..PAGES {
            if bit(&self.used, p) {
                run = 0;
            } else {
                run += 1;
                if run == n {
                    return Some(p + 1 - n);
                }
            }
        }
        None
    }

    /// Marks pages `first..first + n` used; returns how many of them were given back.
    fn take(&mut self, first: usize, n: usize) -> usize {
        let mut back = 0;
        for p in first..first + n {
            debug_assert!(!bit(&self.used, p));
            set(&mut self.used, p, true);
            if bit(&self.given, p) {
                set(&mut self.given, p, false);
                back += 1;
            }
        }
        self.used_pages += n;
        self.given_pages -= back;
        back
    }

    /// Marks pages `first..first + n` free (resident).
    fn put(&mut self, first: usize, n: usize) {
        for p in first..first + n {
            debug_assert!(bit(&self.used, p), "double free of page {p}");
            set(&mut self.used, p, false);
        }
        self.used_pages -= n;
    }

    /// Gives every free resident page back, in runs; returns the number given.
    fn give_back(&mut self) -> usize {
        let fresh = |c: &Chunk, p: usize| !bit(&c.used, p) && !bit(&c.given, p);
        let mut total = 0;
        let mut p = 0;
        while p < PAGES {
            if !fresh(self, p) {
                p += 1;
                continue;
            }
            let start = p;
            while p < PAGES && fresh(self, p) {
                p += 1;
            }
            // SAFETY: pages `start..p` are free (no live block: blocks are freed only once
            // nobody accesses them), inside this live chunk; the heap's lock is held, so
            // none is handed out during the call.
            if unsafe { self.region.discard(start * PAGE_SIZE..p * PAGE_SIZE) } {
                for q in start..p {
                    set(&mut self.given, q, true);
                }
                self.given_pages += p - start;
                total += p - start;
            }
        }
        total
    }
}

/// The heap's state, under its lock.
struct Heap {
    /// Chunks by address.
    chunks: Vec<Chunk>,
    /// Blocks above [`PageHeap::SPAN_MAX`], by address.
    large: BTreeMap<usize, PageRegion>,
    /// An empty chunk kept whole for the next one needed.
    spare: Option<HugeRegion>,
    /// Free pages of the chunks that are still resident.
    free_resident: usize,
}

// SAFETY: the heap owns its mappings; nothing in it is tied to a thread, and the lock
// serializes its use.
unsafe impl Send for Heap {}

/// Blocks of whole pages from 2 MiB chunks, given back to the OS as they are freed (see
/// the [module docs](self)).
pub struct PageHeap {
    heap: SpinLock<Heap>,
    /// Bytes held: chunks less the pages given back, the spare, large blocks.
    held: AtomicUsize,
}

impl Default for PageHeap {
    fn default() -> Self {
        PageHeap::new()
    }
}

impl PageHeap {
    /// Largest block carved from a chunk (a quarter of one); larger ones are mapped alone.
    pub const SPAN_MAX: usize = HUGE_PAGE_SIZE / 4;

    /// An empty heap: maps nothing yet.
    pub fn new() -> PageHeap {
        PageHeap {
            heap: SpinLock::new(Heap {
                chunks: Vec::new(),
                large: BTreeMap::new(),
                spare: None,
                free_resident: 0,
            }),
            held: AtomicUsize::new(0),
        }
    }

    /// Pages of a block of `len` bytes (at least one).
    fn pages(len: usize) -> usize {
        len.max(1).div_ceil(PAGE_SIZE)
    }

    /// A block of `len` bytes rounded up to whole pages, page-aligned, with unspecified
    /// contents (zero where the pages are fresh or were given back, a previous block's
    /// bytes otherwise).
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
        let n = Self::pages(len);
        let mut h = self.heap.lock();
        let found = h
            .chunks
            .iter()
            .enumerate()
            .find_map(|(i, c)| c.find(n).map(|p| (i, p)));
        let (i, first) = match found {
            Some(f) => f,
            None => {
                let region = match h.spare.take() {
                    Some(r) => r,
                    None => {
                        let r = HugeRegion::new(HUGE_PAGE_SIZE)?;
                        self.held.fetch_add(HUGE_PAGE_SIZE, Ordering::Relaxed);
                        r
                    }
                };
                let chunk = Chunk::new(region);
                let i = h.chunks.partition_point(|c| c.base() < chunk.base());
                h.chunks.insert(i, chunk);
                h.free_resident += PAGES;
                (i, 0)
            }
        };
        let c = &mut h.chunks[i];
        let back = c.take(first, n);
        let p = c.region.as_ptr().wrapping_add(first * PAGE_SIZE);
        h.free_resident -= n - back;
        self.held.fetch_add(back * PAGE_SIZE, Ordering::Relaxed);
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
        let n = Self::pages(len);
        let base = addr & !(HUGE_PAGE_SIZE - 1);
        let i = h
            .chunks
            .binary_search_by_key(&base, Chunk::base)
            .expect("a block of this heap");
        h.chunks[i].put((addr - base) / PAGE_SIZE, n);
        h.free_resident += n;
        if h.chunks[i].used_pages == 0 {
            let c = h.chunks.remove(i);
            h.free_resident -= PAGES - c.given_pages;
            let held = HUGE_PAGE_SIZE - c.given_pages * PAGE_SIZE;
            if c.given_pages == 0 && h.spare.is_none() {
                h.spare = Some(c.region);
            } else {
                self.held.fetch_sub(held, Ordering::Relaxed);
                drop(h);
                drop(c);
            }
            return;
        }
        let held = self.held.load(Ordering::Relaxed);
        if h.free_resident * PAGE_SIZE > HUGE_PAGE_SIZE.max(held / 4) {
            let mut given = 0;
            for c in &mut h.chunks {
                given += c.give_back();
            }
            h.free_resident -= given;
            self.held.fetch_sub(given * PAGE_SIZE, Ordering::Relaxed);
        }
    }

    /// Bytes held: the chunks less the pages given back, the spare chunk, and the blocks
    /// mapped alone.
    pub fn held_bytes(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for PageHeap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageHeap")
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
    fn alloc_pageheap_first_fit_reuse_and_give_back() {
        let h = PageHeap::new();
        let n = if cfg!(miri) { 40 } else { 1000 };
        let blocks: Vec<(NonNull<u8>, usize)> = (0..n)
            .map(|i| {
                let len = 16 * 1024 + (i % 5) * PAGE_SIZE;
                let p = h.try_alloc(len).unwrap();
                assert_eq!(p.as_ptr() as usize % PAGE_SIZE, 0);
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
        }
        for (i, &(p, len)) in blocks.iter().enumerate().filter(|(i, _)| i % 10 == 0) {
            let _ = i;
            // SAFETY: as above.
            unsafe { h.free(p, len) };
        }
        // At most the spare chunk remains.
        assert!(h.held_bytes() <= HUGE_PAGE_SIZE);
    }

    #[test]
    fn alloc_pageheap_large_blocks_map_alone() {
        let h = PageHeap::new();
        let len = PageHeap::SPAN_MAX + 1;
        let p = h.try_alloc(len).unwrap();
        write(p, len, 3);
        assert_eq!(h.held_bytes(), len.next_multiple_of(PAGE_SIZE));
        // SAFETY: allocated above, freed once.
        unsafe { h.free(p, len) };
        assert_eq!(h.held_bytes(), 0);
    }
}
