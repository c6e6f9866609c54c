//! Allocation and freeing of blocks: chunks from the lowest non-full bin of their size
//! class (bins opened, grown and unmapped as needed), extended blocks on the heap behind
//! an eHP (grown in place behind the same pointer by [`MemoryManager::regrow`]), and the
//! retirement of what an optimistic reader may still read.

use std::ptr::NonNull;
use std::sync::Arc;

use orrery_core::api::{Error, Result};

use super::bins::{Bin, BinMem, Caps, Metabin};
use super::heap::ExtHeap;
use super::hp::{
    BINS_PER_METABIN, CHAIN_SLOTS, EXT_CHUNK, FIRST_CHUNKS, Hp, MAX_SMALL, METABINS, STEP,
};
use super::manager::MemoryManager;

/// Hands `x` to the epoch collector: dropped once every thread pinned now has unpinned
/// (memory an optimistic reader may still be reading).
pub(super) fn retire<T: Send + 'static>(x: T) {
    orrery_core::sync::pin().defer(move || drop(x));
}

/// A retired extended heap block, freed to its pool when dropped.
pub(super) struct RetiredBlock {
    pub(super) pool: Arc<ExtHeap>,
    pub(super) ptr: NonNull<u8>,
    pub(super) cap: usize,
}

// SAFETY: the block is owned by this value alone (its eHP was rewritten or its chunk
// freed); freeing it on another thread is what the pool's `free` allows (`&self`).
unsafe impl Send for RetiredBlock {}

impl Drop for RetiredBlock {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `pool.try_alloc(cap)` (an eHP records exactly that
        // capacity), nothing names it any more, and it is freed once, here.
        unsafe { self.pool.free(self.ptr, self.cap) };
    }
}

/// Capacity of an extended block holding `size` bytes: the paper's increments.
pub(crate) fn extended_capacity(size: usize) -> usize {
    let step = if size <= 8 * 1024 {
        256
    } else if size <= 16 * 1024 {
        1024
    } else {
        4096
    };
    size.div_ceil(step) * step
}

/// Capacity a block of `size` bytes gets: the next multiple of 32 up to 2,016 bytes, the
/// extended increments beyond.
pub(crate) fn capacity_for(size: usize) -> usize {
    if size <= MAX_SMALL {
        size.max(1).div_ceil(STEP) * STEP
    } else {
        extended_capacity(size)
    }
}

impl MemoryManager {
    /// Retires an extended heap block that nothing names any more: freed once the
    /// readers pinned now have unpinned.
    pub(super) fn retire_block(&self, ptr: NonNull<u8>, cap: usize) {
        retire(RetiredBlock {
            pool: Arc::clone(&self.heap),
            ptr,
            cap,
        });
    }

    /// Opens a new (empty) bin in superbin `sb`; returns its id.
    pub(super) fn open_bin(&mut self, sb: usize) -> Result<usize> {
        let s = &mut self.superbins[sb];
        let id = match s.free_ids.first() {
            Some(&id) => id,
            None if (s.next_id as usize) < METABINS * BINS_PER_METABIN => s.next_id,
            None => return Err(Error::OutOfMemory),
        } as usize;
        let mem = BinMem::new(FIRST_CHUNKS, s.caps)?;
        // The readers' directory gets room for the bin before anything changes.
        let grown = self.dirs.reserve(sb, id)?;
        self.dir_bytes += grown;
        self.bytes += grown;
        let s = &mut self.superbins[sb];
        self.dirs
            .publish(sb, id, Some(&mem), mem.reach(FIRST_CHUNKS));
        let mut added = mem.bytes() + std::mem::size_of::<[u64; 64]>();
        let (mi, bi) = (id / BINS_PER_METABIN, id % BINS_PER_METABIN);
        if s.metabins.len() <= mi {
            s.metabins.resize_with(mi + 1, || None);
        }
        let m = s.metabins[mi].get_or_insert_with(|| {
            added += std::mem::size_of::<Metabin>();
            Box::<Metabin>::default()
        });
        if m.bins.len() <= bi {
            // Bin slots are made as bins are opened (lowest ids first), not 256 at once.
            let before = m.bins.capacity();
            m.bins.resize_with(bi + 1, || None);
            added += (m.bins.capacity() - before) * std::mem::size_of::<Option<Bin>>();
        }
        m.bins[bi] = Some(Bin {
            mem,
            cap: FIRST_CHUNKS,
            used: 0,
            map: Box::new([0; 64]),
        });
        m.nonfull[bi / 64] |= 1 << (bi % 64);
        if id as u32 == s.next_id {
            s.next_id += 1;
        } else {
            s.free_ids.remove(&(id as u32));
        }
        s.nonfull.insert(id as u32);
        self.bytes += added;
        Ok(id)
    }

    /// A chunk of superbin `sb`.
    pub(super) fn alloc_chunk(&mut self, sb: usize) -> Result<Hp> {
        let id = match self.superbins[sb].nonfull.first() {
            Some(&id) => id as usize,
            None => self.open_bin(sb)?,
        };
        let bin = self.superbins[sb].bin(id);
        let word = bin
            .map
            .iter()
            .position(|w| *w != u64::MAX)
            .expect("a non-full bin has a free chunk");
        let index = word * 64 + bin.map[word].trailing_ones() as usize;
        self.take(sb, id, index, 1)
    }

    /// [`CHAIN_SLOTS`] consecutive chunks of superbin `sb`, the first at an index that is
    /// a multiple of [`CHAIN_SLOTS`] (a chained extended bin, §3.2): one whole word of a
    /// bin's occupancy map. Returns the first.
    pub(super) fn alloc_run(&mut self, sb: usize) -> Result<Hp> {
        const _: () = assert!(CHAIN_SLOTS == 64, "a run is one word of the map");
        let s = &self.superbins[sb];
        let found = s.nonfull.iter().find_map(|&id| {
            let bin = s.bin(id as usize);
            (0..s.caps.full() / 64)
                .find(|&w| bin.map[w] == 0)
                .map(|w| (id as usize, w * 64))
        });
        let (id, index) = match found {
            Some(f) => f,
            None => (self.open_bin(sb)?, 0),
        };
        self.take(sb, id, index, CHAIN_SLOTS)
    }

    /// Marks chunks `index..index + n` of bin `id` (free, within one map word) allocated,
    /// growing the bin's memory to hold them first.
    pub(super) fn take(&mut self, sb: usize, id: usize, index: usize, n: usize) -> Result<Hp> {
        let s = &mut self.superbins[sb];
        let (csize, caps) = (s.chunk_size, s.caps);
        let (bin, _) = s.bin_mut(id);
        if index + n > bin.cap {
            let cap = caps.grown(bin.cap, index + n);
            let before = bin.mem.bytes();
            if !caps.is_huge(cap) && bin.mem.grow_in_place(cap * csize) {
                // A mapping in 4 KiB pages grows in place (see `Caps`): readers already
                // reach all of it.
                self.bytes = self.bytes + bin.mem.bytes() - before;
                bin.cap = cap;
            } else {
                self.grow_by_copy(sb, id, cap)?;
            }
        }
        let s = &mut self.superbins[sb];
        let (bin, nonfull) = s.bin_mut(id);
        let (word, bit) = (index / 64, index % 64);
        let mask = if n == 64 {
            u64::MAX
        } else {
            ((1u64 << n) - 1) << bit
        };
        debug_assert_eq!(bin.map[word] & mask, 0, "chunks are free");
        bin.map[word] |= mask;
        bin.used += n as u32;
        if bin.used as usize == caps.full() {
            let bi = id % BINS_PER_METABIN;
            nonfull[bi / 64] &= !(1 << (bi % 64));
            s.nonfull.remove(&(id as u32));
        }
        Ok(Hp::new(sb, id, index))
    }

    /// Grows bin `id` of superbin `sb` to `cap` chunks in a new block: the chunks are
    /// copied (Hyperion Pointers name them by index), the new block is published to the
    /// readers' directory and the old one retired.
    fn grow_by_copy(&mut self, sb: usize, id: usize, cap: usize) -> Result<()> {
        let s = &mut self.superbins[sb];
        let (csize, caps) = (s.chunk_size, s.caps);
        let (bin, _) = s.bin_mut(id);
        let mem = BinMem::new(cap, caps)?;
        // SAFETY: both blocks are live and distinct; the old one holds `bin.cap` chunks,
        // the new one more.
        unsafe { std::ptr::copy_nonoverlapping(bin.mem.ptr(), mem.ptr(), bin.cap * csize) };
        self.bytes = self.bytes + mem.bytes() - bin.mem.bytes();
        self.dirs.publish(sb, id, Some(&mem), mem.reach(cap));
        // Readers may still read the old chunks: freed after they unpin.
        retire(std::mem::replace(&mut bin.mem, mem));
        bin.cap = cap;
        Ok(())
    }

    pub(super) fn free_chunk(&mut self, hp: Hp) {
        let sb = hp.superbin();
        let s = &mut self.superbins[sb];
        let (csize, caps) = (s.chunk_size, s.caps);
        let id = hp.bin_id();
        let (bin, nonfull) = s.bin_mut(id);
        let c = hp.chunk();
        debug_assert!(
            bin.map[c / 64] & (1 << (c % 64)) != 0,
            "double free of {hp:?}"
        );
        bin.map[c / 64] &= !(1 << (c % 64));
        bin.used -= 1;
        let bi = id % BINS_PER_METABIN;
        nonfull[bi / 64] |= 1 << (bi % 64);
        while let Some(cap) = shrink_to(bin, caps) {
            // A quarter full at most, its upper part free: the bin halves (see "Giving
            // memory back"). Cannot fail: the chunks are kept where they are when the
            // smaller block cannot be had.
            let Ok(mem) = BinMem::new(cap, caps) else {
                break;
            };
            // SAFETY: both blocks are live and distinct; the new one holds `cap` chunks,
            // the old one more.
            unsafe { std::ptr::copy_nonoverlapping(bin.mem.ptr(), mem.ptr(), cap * csize) };
            self.bytes = self.bytes + mem.bytes() - bin.mem.bytes();
            self.dirs.publish(sb, id, Some(&mem), mem.reach(cap));
            // Readers may still read the old chunks: freed after they unpin.
            retire(std::mem::replace(&mut bin.mem, mem));
            bin.cap = cap;
        }
        if bin.used == 0 {
            nonfull[bi / 64] &= !(1 << (bi % 64));
            let mi = id / BINS_PER_METABIN;
            let m = s.metabins[mi].as_mut().expect("mapped");
            let bin = m.bins[bi].take().expect("mapped");
            self.bytes -= bin.mem.bytes() + std::mem::size_of::<[u64; 64]>();
            self.dirs.publish(sb, id, None, 0);
            // Readers may still read its chunks: unmapped after they unpin.
            retire(bin.mem);
            if m.bins.iter().all(Option::is_none) {
                // The metabin's last bin: free the metabin too.
                self.bytes -= std::mem::size_of::<Metabin>()
                    + m.bins.capacity() * std::mem::size_of::<Option<Bin>>();
                s.metabins[mi] = None;
                if s.metabins.iter().all(Option::is_none) {
                    // The superbin's last bin: its readers' table goes too.
                    let freed = self.dirs.clear(sb);
                    self.dir_bytes -= freed;
                    self.bytes -= freed;
                }
            }
            s.nonfull.remove(&(id as u32));
            if id as u32 + 1 == s.next_id {
                s.next_id -= 1;
            } else {
                s.free_ids.insert(id as u32);
            }
        } else {
            s.nonfull.insert(id as u32);
        }
    }

    /// Whether a writer holding the block `hp` (not moving it otherwise) should move it to
    /// a new block of the same size (allocate, copy, relink, free): it is a chunk in the
    /// upper half of a bin at most a quarter full, so that a new chunk is found lower —
    /// in a lower bin, or in this bin's lower half — and the bin can halve once its upper
    /// half is free (see "Giving memory back" in the [module docs](super)).
    #[inline]
    pub(crate) fn should_move(&self, hp: Hp) -> bool {
        let sb = hp.superbin();
        if sb == 0 {
            return false;
        }
        let s = &self.superbins[sb];
        let bin = s.bin(hp.bin_id());
        bin.used as usize * 4 <= bin.cap && s.caps.shrunk(bin.cap).is_some_and(|t| hp.chunk() >= t)
    }

    /// A block of at least `size` bytes ([`capacity_for`]`(size)` usable), zeroed only if
    /// fresh: callers write every byte they later read.
    pub(crate) fn alloc(&mut self, size: usize) -> Result<Hp> {
        if size <= MAX_SMALL {
            return self.alloc_chunk(size.max(1).div_ceil(STEP));
        }
        let cap = extended_capacity(size);
        let block = self.heap.try_alloc(cap)?;
        // SAFETY: `block` is a fresh block of `cap` bytes. Zeroed so that an optimistic
        // reader, which may read any byte of the block, never reads uninitialized memory.
        unsafe { std::ptr::write_bytes(block.as_ptr(), 0, cap) };
        let hp = match self.alloc_chunk(0) {
            Ok(hp) => hp,
            Err(e) => {
                // SAFETY: `block` came from `self.heap` with capacity `cap` just now and is
                // not used after this free.
                unsafe { self.heap.free(block, cap) };
                return Err(e);
            }
        };
        let e = self.chunk_mut_raw(hp, EXT_CHUNK);
        e[..8].copy_from_slice(&(block.as_ptr() as u64).to_le_bytes());
        e[8..12].copy_from_slice(&(size as u32).to_le_bytes());
        e[12..14].copy_from_slice(&((cap - size) as u16).to_le_bytes());
        e[14..16].copy_from_slice(&0u16.to_le_bytes());
        self.bytes += cap;
        self.ext_bytes += cap;
        Ok(hp)
    }

    /// Moves the extended block `hp` to a new heap block for `size` bytes (capacity
    /// [`extended_capacity`]`(size)`), keeping its Hyperion Pointer: the eHP is rewritten
    /// (the paper's realloc path; the trie is not touched). `fill(old, new)` writes the new
    /// block from the old one; bytes of the new block it does not write are zero. Fails,
    /// changing nothing, when the new block cannot be had.
    pub(crate) fn regrow(
        &mut self,
        hp: Hp,
        size: usize,
        fill: impl FnOnce(&[u8], &mut [u8]),
    ) -> Result<()> {
        debug_assert_eq!(hp.superbin(), 0, "only extended blocks regrow");
        let cap = extended_capacity(size);
        let block = self.heap.try_alloc(cap)?;
        let (old, old_cap) = self.extended(hp);
        // SAFETY: `block` is a fresh block of `cap` bytes; zeroing makes it initialized.
        unsafe { std::ptr::write_bytes(block.as_ptr(), 0, cap) };
        // SAFETY: `old` is the live block of `old_cap` bytes the eHP names; `&mut self`
        // makes this the only reference to it.
        let src = unsafe { std::slice::from_raw_parts(old.as_ptr(), old_cap) };
        // SAFETY: `block` is initialized (above), `cap` bytes, and distinct from `old`.
        let dst = unsafe { std::slice::from_raw_parts_mut(block.as_ptr(), cap) };
        fill(src, dst);
        // The eHP is rewritten below; readers may still read the old block.
        self.retire_block(old, old_cap);
        let e = self.chunk_mut_raw(hp, EXT_CHUNK);
        e[..8].copy_from_slice(&(block.as_ptr() as u64).to_le_bytes());
        e[8..12].copy_from_slice(&(size as u32).to_le_bytes());
        e[12..14].copy_from_slice(&((cap - size) as u16).to_le_bytes());
        self.bytes = self.bytes + cap - old_cap;
        self.ext_bytes = self.ext_bytes + cap - old_cap;
        Ok(())
    }

    /// Whether `hp` names an extended block (superbin 0).
    #[inline]
    pub(crate) fn is_extended(hp: Hp) -> bool {
        hp.superbin() == 0
    }

    /// Frees a block.
    pub(crate) fn free(&mut self, hp: Hp) {
        if hp.superbin() == 0 && !self.is_void(hp) {
            let (ptr, cap) = self.extended(hp);
            // The eHP's chunk is freed below, so the block is not named again.
            self.retire_block(ptr, cap);
            self.bytes -= cap;
            self.ext_bytes -= cap;
        }
        self.free_chunk(hp);
    }
}

/// The capacity `bin` can shrink to ([`Caps::shrunk`]): when at most a quarter of its
/// chunks are taken and none at or above that capacity; `None` when it cannot.
fn shrink_to(bin: &Bin, caps: Caps) -> Option<usize> {
    if bin.used == 0 || bin.used as usize * 4 > bin.cap {
        return None;
    }
    let to = caps.shrunk(bin.cap)?;
    // The chunks `to..bin.cap`: whole map words, and the bits of the partial ones.
    let (w0, w1) = (to / 64, bin.cap.div_ceil(64));
    let free = (w0..w1).all(|w| {
        let lo = if w == w0 { to % 64 } else { 0 };
        let hi = if w * 64 + 64 > bin.cap {
            bin.cap % 64
        } else {
            64
        };
        let mask = (u64::MAX >> (64 - (hi - lo))) << lo;
        bin.map[w] & mask == 0
    });
    free.then_some(to)
}
