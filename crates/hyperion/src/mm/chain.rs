//! Chained extended bins (the [module docs](super), "Chained extended bins"):
//! [`CHAIN_SLOTS`] extended-bin slots holding the parts of a split container, and the part
//! a key byte resolves to.

use orrery_core::api::Result;

use super::alloc::extended_capacity;
use super::hp::{CHAIN_SLOTS, EXT_CHUNK, FLAG_CHAIN, Hp, SLOT_KEYS};
use super::manager::MemoryManager;

impl MemoryManager {
    /// A chained extended bin (§3.2): [`CHAIN_SLOTS`] consecutive extended-bin chunks,
    /// allocated and freed together, every slot void (heap pointer 0) and flagged [`FLAG_CHAIN`].
    /// Returns the Hyperion Pointer of the first; slot `i` is `hp.slot(i)`.
    pub(crate) fn alloc_chain(&mut self) -> Result<Hp> {
        let base = self.alloc_run(0)?;
        for i in 0..CHAIN_SLOTS {
            let e = self.chunk_mut_raw(base.slot(i), EXT_CHUNK);
            e.fill(0);
            e[14..16].copy_from_slice(&FLAG_CHAIN.to_le_bytes());
        }
        Ok(base)
    }

    /// Frees a chained extended bin: the blocks of its slots and its chunks.
    pub(crate) fn free_chain(&mut self, base: Hp) {
        for i in 0..CHAIN_SLOTS {
            self.free(base.slot(i));
        }
    }

    /// Whether the eHP chunk `hp` (superbin 0) is void (a chain slot without a block).
    #[inline]
    pub(crate) fn is_void(&self, hp: Hp) -> bool {
        self.chunk_raw(hp, EXT_CHUNK)[..8] == [0; 8]
    }

    /// Whether `hp` names a chained extended bin (its first slot).
    #[inline]
    pub(crate) fn is_chain(&self, hp: Hp) -> bool {
        hp.superbin() == 0 && self.chunk_raw(hp, EXT_CHUNK)[14] & FLAG_CHAIN as u8 != 0
    }

    /// The container a key whose next byte is `k0` is in: `hp` itself, or for a chain
    /// the slot `k0 / SLOT_KEYS`, or the nearest non-void slot below it (§3.3, Fig 11).
    #[inline]
    pub(crate) fn resolve(&self, hp: Hp, k0: u8) -> Hp {
        if hp.superbin() != 0 || !self.is_chain(hp) {
            return hp;
        }
        let mut i = usize::from(k0) / SLOT_KEYS;
        while i > 0 && self.is_void(hp.slot(i)) {
            i -= 1;
        }
        hp.slot(i)
    }

    /// Prefetches what [`MemoryManager::resolve`] and [`MemoryManager::get`] read first
    /// for `hp` and a key whose next byte is `k0`: the chunk (for an extended HP its eHP;
    /// for a chain also the eHP of slot `k0 / SLOT_KEYS`, in the same bin).
    #[inline]
    pub(crate) fn prefetch(&self, hp: Hp, k0: u8) {
        let s = &self.superbins[hp.superbin()];
        let base = s.bin(hp.bin_id()).mem.ptr();
        let c = hp.chunk();
        orrery_core::prefetch(base.wrapping_add(c * s.chunk_size));
        if hp.superbin() == 0 && c.is_multiple_of(CHAIN_SLOTS) {
            // Only a hint: if `hp` is no chain this address is not read.
            let slot = usize::from(k0) / SLOT_KEYS;
            orrery_core::prefetch(base.wrapping_add((c + slot) * s.chunk_size));
        }
    }

    /// Gives the void chain slot `slot` a zeroed block for `size` bytes.
    pub(crate) fn fill_slot(&mut self, slot: Hp, size: usize) -> Result<()> {
        debug_assert!(self.is_void(slot));
        let cap = extended_capacity(size);
        let block = self.heap.try_alloc(cap)?;
        // SAFETY: `block` is a fresh block of `cap` bytes; zeroing makes it initialized.
        unsafe { std::ptr::write_bytes(block.as_ptr(), 0, cap) };
        let e = self.chunk_mut_raw(slot, EXT_CHUNK);
        e[..8].copy_from_slice(&(block.as_ptr() as u64).to_le_bytes());
        e[8..12].copy_from_slice(&(size as u32).to_le_bytes());
        e[12..14].copy_from_slice(&((cap - size) as u16).to_le_bytes());
        self.bytes += cap;
        self.ext_bytes += cap;
        Ok(())
    }

    /// Frees the block of chain slot `slot`, leaving it void.
    pub(crate) fn void_slot(&mut self, slot: Hp) {
        if self.is_void(slot) {
            return;
        }
        let (ptr, cap) = self.extended(slot);
        // The eHP is voided below, so the block is not named again.
        self.retire_block(ptr, cap);
        self.bytes -= cap;
        self.ext_bytes -= cap;
        self.chunk_mut_raw(slot, EXT_CHUNK)[..14].fill(0);
    }
}
