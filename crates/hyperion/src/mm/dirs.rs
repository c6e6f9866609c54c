//! The optimistic readers' directory of bin memory (the [module docs](super),
//! "Optimistic readers"): per superbin an atomic pointer to a table of bins, and
//! [`RawBlock`], a block read with bounds-checked atomic loads.

use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

use orrery_core::api::{Error, Result};

use super::alloc::retire;
use super::bins::BinMem;
use super::hp::{CHAIN_SLOTS, EXT_CHUNK, FLAG_CHAIN, Hp, SLOT_KEYS, STEP, SUPERBINS};

/// A bin directory slot: the bin memory's address with `log2(chunks)` in its low 6 bits.
pub(super) type Slot = AtomicPtr<u8>;

/// One superbin's table of bin memory for optimistic readers: slot `id` is
/// `base | log2(chunks)` of bin `id`'s memory (`base` is 64-byte aligned), 0 if unmapped.
pub(super) struct BinDir {
    pub(super) slots: Box<[Slot]>,
}

/// The readers' directory of bin memory: per superbin an [`AtomicPtr`] to its table of
/// bins (see "Optimistic readers" in the [module docs](self)). Written only by the
/// manager's owner (under the arena's write lock), read by pinned optimistic readers.
pub(crate) struct Dirs {
    pub(super) sb: [AtomicPtr<BinDir>; SUPERBINS],
}

impl Dirs {
    pub(super) fn new() -> Dirs {
        Dirs {
            sb: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
        }
    }

    /// Makes room for bin `id` in superbin `sb`'s table (writer only): a larger table
    /// (copied, published, the old one retired through the epoch collector). Returns the
    /// bytes the tables grew by.
    pub(super) fn reserve(&self, sb: usize, id: usize) -> Result<usize> {
        let cur = self.sb[sb].load(Ordering::Relaxed);
        let old: &[Slot] = if cur.is_null() {
            &[]
        } else {
            // SAFETY: only the owner replaces tables (it is the caller), so `cur` is live.
            unsafe { &(*cur).slots }
        };
        if id < old.len() {
            return Ok(0);
        }
        let len = (2 * old.len()).max(id + 1).max(16);
        let mut v: Vec<Slot> = Vec::new();
        v.try_reserve_exact(len).map_err(|_| Error::OutOfMemory)?;
        v.extend(old.iter().map(|w| Slot::new(w.load(Ordering::Relaxed))));
        v.resize_with(len, || Slot::new(std::ptr::null_mut()));
        let grown = (len - old.len()) * std::mem::size_of::<Slot>()
            + if cur.is_null() {
                std::mem::size_of::<BinDir>()
            } else {
                0
            };
        let new = Box::into_raw(Box::new(BinDir {
            slots: v.into_boxed_slice(),
        }));
        self.sb[sb].store(new, Ordering::Release);
        if !cur.is_null() {
            // SAFETY: `cur` came from `Box::into_raw` and was just unlinked; readers that
            // loaded it are pinned, so it is dropped after they unpin.
            retire(unsafe { Box::from_raw(cur) });
        }
        Ok(grown)
    }

    /// Unlinks and retires superbin `sb`'s table (writer only; its bins are all
    /// unmapped). Returns the bytes it held.
    pub(super) fn clear(&self, sb: usize) -> usize {
        let cur = self.sb[sb].swap(std::ptr::null_mut(), Ordering::AcqRel);
        if cur.is_null() {
            return 0;
        }
        // SAFETY: `cur` came from `Box::into_raw` and was just unlinked; readers that
        // loaded it are pinned, so it is dropped after they unpin.
        let table = unsafe { Box::from_raw(cur) };
        let bytes = table.slots.len() * std::mem::size_of::<Slot>() + std::mem::size_of::<BinDir>();
        retire(table);
        bytes
    }

    /// Sets the slot of bin `id` of superbin `sb` (writer only; room made by
    /// [`Dirs::reserve`]): its memory of `chunks` chunks, or unmapped.
    pub(super) fn publish(&self, sb: usize, id: usize, mem: Option<&BinMem>, chunks: usize) {
        let w = mem.map_or(std::ptr::null_mut(), |m| {
            debug_assert!((m.ptr() as usize).is_multiple_of(64) && chunks.is_power_of_two());
            m.ptr().map_addr(|a| a | chunks.trailing_zeros() as usize)
        });
        let d = self.sb[sb].load(Ordering::Relaxed);
        // SAFETY: the owner made room (`reserve`) before the first publish of `id`, and
        // only the owner replaces tables.
        unsafe { &(*d).slots[id] }.store(w, Ordering::Release);
    }

    /// The chunk `hp` names, for an optimistic reader; `None` when its bin is not mapped
    /// or has no such chunk (a stale or torn pointer: the reader's validation fails).
    ///
    /// The caller must be pinned (`orrery_core::sync::pin`) while it uses the block: bin
    /// memory and tables are retired through the epoch collector, so what a pinned reader
    /// loaded stays mapped.
    #[inline]
    pub(crate) fn chunk(&self, hp: Hp) -> Option<RawBlock> {
        let sb = hp.superbin();
        let d = self.sb[sb].load(Ordering::Acquire);
        if d.is_null() {
            return None;
        }
        // SAFETY: a published table is freed only through the epoch collector after it
        // was replaced, and the caller is pinned (contract).
        let w = unsafe { &(*d).slots }
            .get(hp.bin_id())?
            .load(Ordering::Acquire);
        let chunks = 1usize << (w.addr() & 63);
        if w.is_null() || hp.chunk() >= chunks {
            return None;
        }
        let size = if sb == 0 { EXT_CHUNK } else { sb * STEP };
        Some(RawBlock {
            ptr: w.map_addr(|a| a & !63).wrapping_add(hp.chunk() * size),
            len: size,
        })
    }

    /// The eHP of the extended-bin chunk `e`: (heap pointer, capacity, flags), read with
    /// atomic loads; possibly torn (validate before using the pointer).
    #[inline]
    pub(super) fn ehp(e: RawBlock) -> (usize, usize, u16) {
        // Two aligned 8-byte loads: `[ptr]` and `[size u32][over u16][flags u16]`.
        let (p, w) = (e.u64_at(0).unwrap_or(0), e.u64_at(8).unwrap_or(0));
        let cap = (w & 0xFFFF_FFFF) as usize + ((w >> 32) & 0xFFFF) as usize;
        (p as usize, cap, (w >> 48) as u16)
    }

    /// The block `hp` names (for an extended `hp`, its heap block), for an optimistic
    /// reader; `None` when it cannot be reached consistently. `valid` is the reader's
    /// validation: it is called between reading an eHP and using its pointer, so that a
    /// pointer and capacity from two different writes are never combined.
    #[inline]
    pub(crate) fn block(&self, hp: Hp, valid: &dyn Fn() -> bool) -> Option<RawBlock> {
        self.container(hp, None, valid)
    }

    /// For an optimistic reader: which of the [`CHAIN_SLOTS`] slots of the chain `hp` hold a part
    /// (`Some(Some(_))`), `Some(None)` when `hp` is not a chain, `None` when it cannot be
    /// read consistently (each slot's eHP is read once; validate before trusting it).
    #[inline]
    pub(crate) fn chain_parts(&self, hp: Hp) -> Option<Option<[bool; CHAIN_SLOTS]>> {
        if hp.superbin() != 0 {
            return Some(None);
        }
        let (_, _, flags) = Self::ehp(self.chunk(hp)?);
        if flags & FLAG_CHAIN == 0 {
            return Some(None);
        }
        if !hp.chunk().is_multiple_of(CHAIN_SLOTS) {
            return None;
        }
        let mut parts = [false; CHAIN_SLOTS];
        for (i, p) in parts.iter_mut().enumerate() {
            *p = Self::ehp(self.chunk(hp.slot(i))?).0 != 0;
        }
        Some(Some(parts))
    }

    /// The container a key whose next byte is `k0` continues in below `hp` —
    /// [`MemoryManager::resolve`](super::MemoryManager::resolve) then [`Dirs::block`], reading each eHP once — for an
    /// optimistic reader. `k0 = None`: `hp` itself, chained or not.
    #[inline]
    pub(crate) fn container(
        &self,
        hp: Hp,
        k0: Option<u8>,
        valid: &dyn Fn() -> bool,
    ) -> Option<RawBlock> {
        let c = self.chunk(hp)?;
        if hp.superbin() != 0 {
            return Some(c);
        }
        let (mut ptr, mut cap, flags) = Self::ehp(c);
        if let Some(k0) = k0
            && flags & FLAG_CHAIN != 0
        {
            if !hp.chunk().is_multiple_of(CHAIN_SLOTS) {
                return None;
            }
            // The slot `k0 / SLOT_KEYS`, or the nearest non-void one below it (ends at
            // slot 0).
            let mut i = usize::from(k0) / SLOT_KEYS;
            while i > 0 {
                let (p, cp, _) = Self::ehp(self.chunk(hp.slot(i))?);
                if p != 0 {
                    (ptr, cap) = (p, cp);
                    break;
                }
                i -= 1;
            }
        }
        if ptr == 0 || !valid() {
            return None;
        }
        Some(RawBlock {
            ptr: ptr as *const u8,
            len: cap,
        })
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        for d in &self.sb {
            let d = d.load(Ordering::Relaxed);
            if !d.is_null() {
                // SAFETY: the current tables came from `Box::into_raw` and are owned by
                // the directory; nobody reads them once it is dropped.
                drop(unsafe { Box::from_raw(d) });
            }
        }
    }
}

/// Bytes an optimistic reader may read: `len` bytes at `ptr`, which stay mapped while the
/// reader is pinned (everything a writer frees is retired through the epoch collector),
/// but which a writer may change at any time: every read is bounds-checked and atomic, and
/// what it returns means something only once the reader's version validates.
#[derive(Clone, Copy)]
pub(crate) struct RawBlock {
    pub(super) ptr: *const u8,
    pub(super) len: usize,
}

impl RawBlock {
    /// Bytes readable.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Byte `i`, `None` past the end.
    #[inline(always)]
    pub(crate) fn byte(&self, i: usize) -> Option<u8> {
        if i >= self.len {
            return None;
        }
        // SAFETY: `i < len`, so the byte lies in the block, which stays mapped and
        // initialized while the reader is pinned (see the type docs; bins are zeroed when
        // made, extended blocks when allocated). A writer may store to it concurrently
        // with plain (non-atomic) stores under the arena's write lock, with the arena's
        // version odd: this relaxed atomic load may then return any value the byte held,
        // which the reader's validation rejects — the seqlock read of Mercury's and the
        // Cuckoo Trie's versions, except that their writers store atomically too; here the
        // writers' container code works on `&mut [u8]` (see `docs/hyperion.md`,
        // "Concurrency protocol", on this mixed access). The load is never duplicated or
        // widened by the compiler, so a value once checked stays the value used.
        let a = unsafe { AtomicU8::from_ptr(self.ptr.wrapping_add(i).cast_mut()) };
        Some(a.load(Ordering::Relaxed))
    }

    /// The aligned 8 bytes at `i` (little-endian), `None` past the end or unaligned.
    #[inline(always)]
    pub(crate) fn u64_at(&self, i: usize) -> Option<u64> {
        if i.checked_add(8)? > self.len {
            return None;
        }
        let p = self.ptr.wrapping_add(i);
        if !(p as usize).is_multiple_of(8) {
            return None;
        }
        // SAFETY: as in `byte`: the 8 bytes lie in the block, mapped and initialized while
        // the reader is pinned; `p` is 8-aligned; the value is validated before use.
        let a = unsafe { std::sync::atomic::AtomicU64::from_ptr(p.cast_mut().cast()) };
        Some(u64::from_le(a.load(Ordering::Relaxed)))
    }

    /// Prefetches the line holding byte `i` (a hint; any address).
    #[inline]
    pub(crate) fn prefetch(&self, i: usize) {
        orrery_core::prefetch(self.ptr.wrapping_add(i));
    }
}
