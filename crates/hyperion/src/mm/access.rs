//! Reading and writing blocks under the arena's lock: a chunk's or an extended block's
//! bytes as a slice, and an extended block's capacity.

use std::ptr::NonNull;

use super::hp::{EXT_CHUNK, Hp, STEP};
use super::manager::MemoryManager;

impl MemoryManager {
    /// The heap block and capacity of an extended HP.
    pub(super) fn extended(&self, hp: Hp) -> (NonNull<u8>, usize) {
        let e = self.chunk_raw(hp, EXT_CHUNK);
        let ptr = u64::from_le_bytes(e[..8].try_into().expect("8 bytes")) as usize as *mut u8;
        let size = u32::from_le_bytes(e[8..12].try_into().expect("4 bytes")) as usize;
        let over = u16::from_le_bytes(e[12..14].try_into().expect("2 bytes")) as usize;
        (
            NonNull::new(ptr).expect("an eHP holds a block"),
            size + over,
        )
    }

    /// Usable bytes of a block.
    #[inline]
    pub(crate) fn capacity(&self, hp: Hp) -> usize {
        match hp.superbin() {
            0 => self.extended(hp).1,
            sb => sb * STEP,
        }
    }

    #[inline]
    pub(super) fn chunk_raw(&self, hp: Hp, len: usize) -> &[u8] {
        let s = &self.superbins[hp.superbin()];
        let bin = s.bin(hp.bin_id());
        let c = hp.chunk();
        debug_assert!(
            bin.map[c / 64] & (1 << (c % 64)) != 0,
            "{hp:?} is not allocated"
        );
        debug_assert!(len <= s.chunk_size);
        // SAFETY: chunk `c` lies inside the bin's mapping (`c < 4096`, mapping of 4096
        // chunks), which lives as long as `&self` (bins are unmapped only through
        // `&mut self`); chunk memory is only written through `&mut self`.
        unsafe { std::slice::from_raw_parts(bin.mem.ptr().wrapping_add(c * s.chunk_size), len) }
    }

    pub(super) fn chunk_mut_raw(&mut self, hp: Hp, len: usize) -> &mut [u8] {
        let s = &self.superbins[hp.superbin()];
        let bin = s.bin(hp.bin_id());
        let c = hp.chunk();
        debug_assert!(len <= s.chunk_size);
        // SAFETY: as in `chunk_raw`; `&mut self` makes this the only reference into the
        // manager's memory.
        unsafe { std::slice::from_raw_parts_mut(bin.mem.ptr().wrapping_add(c * s.chunk_size), len) }
    }

    /// The bytes of a block (its whole capacity).
    #[inline]
    pub(crate) fn get(&self, hp: Hp) -> &[u8] {
        match hp.superbin() {
            0 => {
                let (p, cap) = self.extended(hp);
                // SAFETY: the eHP names a live heap block of `cap` bytes owned by this
                // manager, freed only through `&mut self`.
                unsafe { std::slice::from_raw_parts(p.as_ptr(), cap) }
            }
            sb => self.chunk_raw(hp, sb * STEP),
        }
    }

    /// The bytes of a block (its whole capacity), writable.
    pub(crate) fn get_mut(&mut self, hp: Hp) -> &mut [u8] {
        match hp.superbin() {
            0 => {
                let (p, cap) = self.extended(hp);
                // SAFETY: as in `get`; `&mut self` makes this the only reference to it.
                unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), cap) }
            }
            sb => self.chunk_mut_raw(hp, sb * STEP),
        }
    }
}
