//! Bin occupancy for the trie-level compaction pass (`write/compact.rs`): which bins of a
//! size class are sparse, and a chunk allocated in a bin the pass chooses.
//!
//! The memory manager cannot move a chunk itself — only a writer holding the chunk's
//! parent can relink it — so the pass asks here which bins to drain ([`Occupancy`]) and
//! then, for every chunk it finds in one of them, allocates the replacement in a bin it
//! keeps ([`MemoryManager::alloc_in`]) rather than in the lowest non-full bin (which may be
//! a bin being drained). Freeing the old chunk is the ordinary [`MemoryManager::free`]:
//! a bin whose last chunk goes is unmapped and retired (`alloc.rs`, "Giving memory back").
//!
//! Everything here but [`MemoryManager::alloc_in`] only reads.

use orrery_core::api::Result;

use super::hp::{Hp, SUPERBINS};
use super::manager::MemoryManager;

/// One mapped bin of a size class: its id, taken chunks, capacity now, and capacity when
/// full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BinOcc {
    /// `metabin · 256 + bin`.
    pub(crate) id: u32,
    /// Chunks taken.
    pub(crate) used: u32,
    /// Chunks its memory holds now.
    pub(crate) cap: u32,
    /// Chunks it holds when full (the class's [`Caps::full`](super::bins::Caps::full)).
    pub(crate) full: u32,
    /// Bytes its memory holds.
    pub(crate) bytes: usize,
}

/// The bins of the size classes 1..63 of one manager (superbin 0, the eHP chunks, is
/// left out: extended blocks move behind their pointer, `regrow`).
pub(crate) struct Occupancy {
    /// `classes[sb]`: the mapped bins of superbin `sb`, by id (empty for `sb = 0`).
    pub(crate) classes: Vec<Vec<BinOcc>>,
}

impl Occupancy {
    /// Bytes of mapped bin memory in classes 1..63.
    pub(crate) fn mapped_bytes(&self) -> usize {
        self.classes.iter().flatten().map(|b| b.bytes).sum()
    }
}

impl MemoryManager {
    /// The occupancy of every mapped bin of classes 1..63: O(bins), no chunk is read.
    pub(crate) fn occupancy(&self) -> Occupancy {
        let mut classes = vec![Vec::new(); SUPERBINS];
        for (sb, s) in self.superbins.iter().enumerate().skip(1) {
            let full = s.caps.full() as u32;
            for (mi, m) in s.metabins.iter().enumerate() {
                let Some(m) = m else { continue };
                for (bi, b) in m.bins.iter().enumerate() {
                    let Some(b) = b else { continue };
                    classes[sb].push(BinOcc {
                        id: (mi * super::hp::BINS_PER_METABIN + bi) as u32,
                        used: b.used,
                        cap: b.cap as u32,
                        full,
                        bytes: b.mem.bytes(),
                    });
                }
            }
        }
        Occupancy { classes }
    }

    /// The size class (superbin) of a chunk, 0 for an extended block's eHP.
    #[inline]
    pub(crate) fn class_of(hp: Hp) -> usize {
        hp.superbin()
    }

    /// The bin id (`metabin · 256 + bin`) of a chunk.
    #[inline]
    pub(crate) fn bin_of(hp: Hp) -> u32 {
        hp.bin_id() as u32
    }

    /// A chunk of class `sb` (1..63) in bin `id`: its lowest free chunk, the bin's memory
    /// grown when that chunk lies beyond it (as any allocation grows a bin). `Ok(None)`
    /// when the bin is full or not mapped. Fails, changing nothing, only when the grown
    /// memory cannot be had. The chunk's bytes are not cleared: the caller writes them
    /// all.
    pub(crate) fn alloc_in(&mut self, sb: usize, id: u32) -> Result<Option<Hp>> {
        debug_assert!((1..SUPERBINS).contains(&sb));
        let s = &self.superbins[sb];
        if !s.nonfull.contains(&id) {
            return Ok(None);
        }
        let bin = s.bin(id as usize);
        let Some(word) = bin.map.iter().position(|w| *w != u64::MAX) else {
            return Ok(None);
        };
        let index = word * 64 + bin.map[word].trailing_ones() as usize;
        if index >= s.caps.full() {
            return Ok(None);
        }
        self.take(sb, id as usize, index, 1).map(Some)
    }

    /// Copies the bytes of chunk `from` into chunk `to` of the same class.
    pub(crate) fn copy_chunk(&mut self, from: Hp, to: Hp) {
        let sb = from.superbin();
        debug_assert!(sb != 0 && to.superbin() == sb && from != to);
        let size = self.superbins[sb].chunk_size;
        let src = self.chunk_raw(from, size).as_ptr();
        let dst = self.chunk_mut_raw(to, size).as_mut_ptr();
        // SAFETY: both are allocated chunks of `size` bytes inside mapped bins of this
        // manager (`chunk_raw` checks that `from` is allocated, `to` was just taken), and
        // distinct chunks of one class never overlap; `&mut self` excludes any other
        // reference into the manager's memory.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, size) };
    }
}
