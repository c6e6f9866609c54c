//! Key-value items: one block per pair, referenced from a leaf's tag array. Blocks come
//! from the index's `orrery_core::alloc::SizeClassPool` (huge-page slabs in 8-byte classes
//! up to [`KV_CLASS_MAX`] bytes; larger blocks from the global allocator).
//!
//! # Layout (byte level)
//!
//! A short header when the key has at most 253 bytes and the value at most 255, a medium
//! one when the key has at most 255 bytes and the value at most 65,535, a long one
//! otherwise:
//!
//! ```text
//! short:  offset 0  u8 key length k (0..=253)   offset 1  u8 value length v
//!         offset 2  k key bytes, then v value bytes
//! medium: offset 0  u8 0xFE   offset 1  u8 k   offset 2  u16 LE v
//!         offset 4  k key bytes, then v value bytes
//! long:   offset 0  u8 0xFF   offset 1  u32 LE k (≤ MAX_KEY_LEN)   offset 5  u32 LE v
//!         offset 9  k key bytes, then v value bytes
//! ```
//!
//! **Deviation (measured, for the memory bar):** the paper's `struct kv` keeps two u32
//! lengths (8 bytes). Pair blocks come in 8-byte size classes, so the header is paid per
//! key on long-key sets: the 2-byte header saves 6 bytes per pair on average (`url`,
//! `az`; see `docs/wormhole.md`). The 4-byte medium header serves values of 256 bytes to
//! 64 KiB (a server's packed hashes and lists: a compact 10-field hash is a 16-byte key
//! and a 328-byte value, a 348-byte block in the 352-byte class where the long header
//! made 353 bytes, the 360-byte class). Pairs of at most 16 bytes do not use blocks at
//! all in an index whose leaves hold inline pairs (see `leaf`).
//!
//! # Size classes
//!
//! Classes go in 8-byte steps up to [`KV_CLASS_MAX`] = 512 bytes (64 classes). Above the
//! largest class a block comes from the global allocator, which for glibc malloc costs the
//! size rounded up to 16 bytes plus an 8-byte chunk header (a 353-byte block took 368
//! bytes; from the classes it takes 360, or 352 with the medium header). The classes
//! stop at 512 bytes rather than 1 KiB because every class in use holds at least one 2 MiB
//! chunk (and its partly carved tail): 64 classes bound that slack to 128 MiB for an
//! index whose pairs take every size, 128 classes would double it, while the allocator's
//! relative overhead (≤ 23 bytes) falls below 5 % of a block past 512 bytes. See
//! `docs/results/wormhole-kv-classes-1203.md` for the measurements.
//!
//! The block is 8-byte aligned, so its address fits the 48-bit reference field of a leaf's
//! tag entry (see `leaf`). A block is owned by exactly one leaf entry. Its key never
//! changes; its value bytes change in place only under the owning leaf's write lock, and a
//! block is freed only under that lock: every reader of a block holds the leaf's read lock
//! (§2.5), so no reclamation scheme is needed for pairs.

use std::ptr::NonNull;

use orrery_core::Error;
use orrery_core::alloc::SizeClassPool;

/// First header byte of the medium form.
const MEDIUM: u8 = 0xFE;
/// Header bytes of the medium form.
const MEDIUM_HEADER: usize = 4;
/// First header byte of the long form.
const LONG: u8 = 0xFF;
/// Header bytes of the long form.
const LONG_HEADER: usize = 9;

/// Header bytes for a key of `k` and a value of `v` bytes.
#[inline]
fn header_len(k: usize, v: usize) -> usize {
    if k < MEDIUM as usize && v <= u8::MAX as usize {
        2
    } else if k <= u8::MAX as usize && v <= u16::MAX as usize {
        MEDIUM_HEADER
    } else {
        LONG_HEADER
    }
}

/// Largest pair block served by the size-class pools (see "Size classes").
pub(crate) const KV_CLASS_MAX: usize = 512;

/// The size-class pools of pair blocks.
pub(crate) fn kv_pools() -> SizeClassPool {
    SizeClassPool::with_step(8, KV_CLASS_MAX, 8)
        .unwrap_or_else(|e| unreachable!("8-byte classes up to 512 bytes are valid: {e}"))
}

/// A pointer to a key-value block (see the module docs for its layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kv(NonNull<u8>);

impl Kv {
    /// Allocates from `pools` a block holding `key` and `value`. Lengths must be within
    /// the API limits. Fails with [`Error::OutOfMemory`] when the block cannot be had.
    pub(crate) fn new(pools: &SizeClassPool, key: &[u8], value: &[u8]) -> Result<Kv, Error> {
        let (k, v) = (key.len(), value.len());
        debug_assert!(k <= u32::MAX as usize && v <= u32::MAX as usize);
        let h = header_len(k, v);
        let p = pools.try_alloc(h + k + v)?;
        let base = p.as_ptr();
        let mut hdr = [0u8; LONG_HEADER];
        if h == 2 {
            hdr[0] = k as u8;
            hdr[1] = v as u8;
        } else if h == MEDIUM_HEADER {
            hdr[0] = MEDIUM;
            hdr[1] = k as u8;
            hdr[2..4].copy_from_slice(&(v as u16).to_le_bytes());
        } else {
            hdr[0] = LONG;
            hdr[1..5].copy_from_slice(&(k as u32).to_le_bytes());
            hdr[5..9].copy_from_slice(&(v as u32).to_le_bytes());
        }
        // SAFETY: the block is `h + k + v` bytes; each write below stays inside it and the
        // source slices do not overlap the fresh block.
        unsafe { base.copy_from_nonoverlapping(hdr.as_ptr(), h) };
        // SAFETY: as above.
        unsafe {
            base.wrapping_add(h)
                .copy_from_nonoverlapping(key.as_ptr(), k)
        };
        // SAFETY: as above.
        unsafe {
            base.wrapping_add(h + k)
                .copy_from_nonoverlapping(value.as_ptr(), v)
        };
        Ok(Kv(p))
    }

    /// Rebuilds a reference from its address (as stored in a tag entry).
    ///
    /// # Safety
    /// `addr` must be the exposed address of a live block made by [`Kv::new`].
    #[inline]
    pub(crate) unsafe fn from_addr(addr: usize) -> Kv {
        let p = std::ptr::with_exposed_provenance_mut::<u8>(addr);
        // SAFETY: caller guarantees a live (non-null) block.
        Kv(unsafe { NonNull::new_unchecked(p) })
    }

    /// The block's address, with its provenance exposed so that [`Kv::from_addr`] can
    /// rebuild the pointer.
    #[inline]
    pub(crate) fn addr(self) -> usize {
        self.0.as_ptr().expose_provenance()
    }

    /// Header bytes, key length, value length.
    #[inline]
    fn lens(self) -> (usize, usize, usize) {
        let p = self.0.as_ptr();
        // SAFETY: a live block starts with its header (type invariant of `Kv`, whose
        // callers hold the owning leaf's lock); both forms have at least 2 bytes.
        let b = unsafe { p.cast::<[u8; 2]>().read() };
        if b[0] < MEDIUM {
            return (2, b[0] as usize, b[1] as usize);
        }
        if b[0] == MEDIUM {
            // SAFETY: a medium header has 4 bytes: the marker, k, and an unaligned u16.
            let v = unsafe { p.wrapping_add(2).cast::<u16>().read_unaligned() };
            return (MEDIUM_HEADER, b[1] as usize, u16::from_le(v) as usize);
        }
        // SAFETY: a long header has 9 bytes: the marker and two unaligned u32.
        let k = unsafe { p.wrapping_add(1).cast::<u32>().read_unaligned() };
        // SAFETY: as above.
        let v = unsafe { p.wrapping_add(5).cast::<u32>().read_unaligned() };
        (
            LONG_HEADER,
            u32::from_le(k) as usize,
            u32::from_le(v) as usize,
        )
    }

    /// The key bytes.
    ///
    /// # Safety
    /// The block must stay live and unmodified for `'a` (hold the owning leaf's lock).
    #[inline]
    pub(crate) unsafe fn key<'a>(self) -> &'a [u8] {
        let (h, k, _) = self.lens();
        // SAFETY: the key occupies `k` bytes after the header of the live block.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().wrapping_add(h), k) }
    }

    /// The value bytes.
    ///
    /// # Safety
    /// As [`Kv::key`].
    #[inline]
    pub(crate) unsafe fn value<'a>(self) -> &'a [u8] {
        let (h, k, v) = self.lens();
        // SAFETY: the value occupies `v` bytes after the key.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().wrapping_add(h + k), v) }
    }

    /// The value bytes, writable in place.
    ///
    /// # Safety
    /// The caller holds the owning leaf's write lock (no other reference to the block) for
    /// `'a`.
    #[inline]
    pub(crate) unsafe fn value_mut<'a>(self) -> &'a mut [u8] {
        let (h, k, v) = self.lens();
        // SAFETY: exclusive access per the contract; the range is inside the block.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_ptr().wrapping_add(h + k), v) }
    }

    /// The block's address as a pointer (for prefetching).
    #[inline]
    pub(crate) fn as_ptr(self) -> *const u8 {
        self.0.as_ptr()
    }

    /// Bytes of the key and value (without the header): whether the pair would fit
    /// inline. The block must be live.
    #[inline]
    pub(crate) fn pair_len(self) -> usize {
        let (_, k, v) = self.lens();
        k + v
    }

    /// Bytes of the header, key and value.
    #[inline]
    pub(crate) fn size(self) -> usize {
        let (h, k, v) = self.lens();
        h + k + v
    }

    /// Bytes this block occupies in `pools` (its slot), for memory accounting. The block
    /// must be live.
    #[inline]
    pub(crate) fn block_bytes(self, pools: &SizeClassPool) -> usize {
        pools.block_bytes(self.size())
    }

    /// A copy of the block in a lower chunk of its size class when its chunk is under a
    /// quarter in use (`SizeClassPool::try_alloc_lower`); the caller frees the old block.
    /// The block must be live, and its owning leaf locked exclusively.
    pub(crate) fn move_lower(self, pools: &SizeClassPool) -> Option<Kv> {
        let size = self.size();
        let q = pools.try_alloc_lower(self.0, size)?;
        // SAFETY: `q` is a fresh block of at least `size` bytes, disjoint from the live
        // block of `size` bytes it copies.
        unsafe { q.as_ptr().copy_from_nonoverlapping(self.0.as_ptr(), size) };
        Some(Kv(q))
    }

    /// Frees the block to `pools`.
    ///
    /// # Safety
    /// The block is live, was allocated from `pools`, no reference into it survives, and it
    /// is not used afterwards.
    pub(crate) unsafe fn free(self, pools: &SizeClassPool) {
        let size = self.size();
        // SAFETY: allocated by `Kv::new` from `pools` with this size.
        unsafe { pools.free(self.0, size) }
    }
}

/// Largest `key + value` byte count stored inline in a leaf (see `leaf`, "Inline pairs").
pub(crate) const INLINE_MAX: usize = 16;

/// A small pair's bytes, kept in a leaf's inline area instead of a block: key then value,
/// at most [`INLINE_MAX`] bytes together. The lengths live in the leaf's tag entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct InlinePair {
    klen: u8,
    vlen: u8,
    data: [u8; INLINE_MAX],
}

impl InlinePair {
    /// The pair, if it fits inline.
    #[inline]
    pub(crate) fn new(key: &[u8], value: &[u8]) -> Option<InlinePair> {
        let (k, v) = (key.len(), value.len());
        if k + v > INLINE_MAX {
            return None;
        }
        let mut data = [0u8; INLINE_MAX];
        data[..k].copy_from_slice(key);
        data[k..k + v].copy_from_slice(value);
        Some(InlinePair {
            klen: k as u8,
            vlen: v as u8,
            data,
        })
    }

    /// From lengths and the `INLINE_MAX` bytes of an inline slot.
    #[inline]
    pub(crate) fn from_parts(klen: usize, vlen: usize, data: [u8; INLINE_MAX]) -> InlinePair {
        debug_assert!(klen + vlen <= INLINE_MAX);
        InlinePair {
            klen: klen as u8,
            vlen: vlen as u8,
            data,
        }
    }

    /// Key and value lengths.
    #[inline]
    pub(crate) fn lens(&self) -> (usize, usize) {
        (self.klen as usize, self.vlen as usize)
    }

    /// The slot bytes (key then value, zero-padded).
    #[inline]
    pub(crate) fn data(&self) -> &[u8; INLINE_MAX] {
        &self.data
    }

    /// The key bytes.
    #[inline]
    pub(crate) fn key(&self) -> &[u8] {
        &self.data[..self.klen as usize]
    }

    /// The value bytes.
    #[inline]
    pub(crate) fn value(&self) -> &[u8] {
        let k = self.klen as usize;
        &self.data[k..k + self.vlen as usize]
    }
}

/// A pair taken out of (or going into) a leaf: a block, or a copy of an inline pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pair {
    /// A key-value block ([`Kv`]).
    Heap(Kv),
    /// Bytes stored in the leaf itself.
    Inline(InlinePair),
}

impl Pair {
    /// The key bytes.
    ///
    /// # Safety
    /// For [`Pair::Heap`], as [`Kv::key`] (the block stays live for the borrow).
    #[inline]
    pub(crate) unsafe fn key(&self) -> &[u8] {
        match self {
            // SAFETY: forwarded from the caller.
            Pair::Heap(kv) => unsafe { kv.key() },
            Pair::Inline(p) => p.key(),
        }
    }

    /// Bytes this pair adds to the index's `key_value_bytes`: the block's slot, or the key
    /// and value bytes of an inline pair.
    ///
    /// # Safety
    /// For [`Pair::Heap`], the block is live.
    #[inline]
    pub(crate) unsafe fn bytes(&self, pools: &SizeClassPool) -> usize {
        match self {
            Pair::Heap(kv) => kv.block_bytes(pools),
            Pair::Inline(p) => p.klen as usize + p.vlen as usize,
        }
    }

    /// Inline bytes (key and value) of this pair, 0 for a block.
    #[inline]
    pub(crate) fn inline_bytes(&self) -> usize {
        match self {
            Pair::Heap(_) => 0,
            Pair::Inline(p) => p.klen as usize + p.vlen as usize,
        }
    }

    /// Frees a block (nothing to do for an inline pair).
    ///
    /// # Safety
    /// As [`Kv::free`] for [`Pair::Heap`].
    #[inline]
    pub(crate) unsafe fn free(self, pools: &SizeClassPool) {
        if let Pair::Heap(kv) = self {
            // SAFETY: forwarded from the caller.
            unsafe { kv.free(pools) }
        }
    }
}

#[cfg(test)]
#[allow(clippy::multiple_unsafe_ops_per_block)]
mod tests {
    use super::*;

    #[test]
    fn kv_roundtrip() {
        let pools = kv_pools();
        for (k, v, h) in [
            (&b""[..], &b""[..], 2),
            (b"key", b"value", 2),
            (&[0u8; 100][..], &[7u8; 3][..], 2),
            // The short header's limits, and one past each.
            (&[0xFFu8; 253][..], &[0xFFu8; 255][..], 2),
            (&[0xFEu8; 254][..], &[2u8; 5][..], 4),
            (&[1u8; 3][..], &[0xFFu8; 256][..], 4),
            // The medium header's limits, and one past each.
            (&[0xFEu8; 255][..], &[0xFEu8; 65_535][..], 4),
            (&[1u8; 256][..], &[2u8; 5][..], 9),
            (&[1u8; 3][..], &[2u8; 65_536][..], 9),
            (&[1u8; 300][..], &[2u8; 5][..], 9),
            (&[3u8; 70_000][..], &[4u8; 2][..], 9),
            // A server's compact 10-field hash: medium header, a pool class above 256.
            (&[5u8; 16][..], &[6u8; 328][..], 4),
        ] {
            let kv = Kv::new(&pools, k, v).unwrap();
            // SAFETY: live block, used single-threaded.
            unsafe {
                let kv2 = Kv::from_addr(kv.addr());
                assert_eq!(kv2.key(), k);
                assert_eq!(kv2.value(), v);
                assert_eq!(kv.size(), h + k.len() + v.len());
                if !v.is_empty() {
                    kv.value_mut()[0] = 1;
                    assert_eq!(kv.value()[0], 1);
                }
                kv.free(&pools);
            }
        }
    }

    #[test]
    fn kv_pool_classes_up_to_max_then_global_allocator() {
        let pools = kv_pools();
        // A compact 10-field server hash: 4 + 16 + 328 = 348 bytes, the 352-byte class.
        let hash = Kv::new(&pools, &[5u8; 16], &[6u8; 328]).unwrap();
        assert_eq!(hash.block_bytes(&pools), 352);
        // The largest class is exactly KV_CLASS_MAX; one byte more is a large block.
        let top = Kv::new(&pools, &[1u8; 8], &[2u8; KV_CLASS_MAX - 12]).unwrap();
        assert_eq!(top.size(), KV_CLASS_MAX);
        assert_eq!(top.block_bytes(&pools), KV_CLASS_MAX);
        assert_eq!(pools.large_bytes(), 0);
        let big = Kv::new(&pools, &[1u8; 8], &[2u8; KV_CLASS_MAX - 11]).unwrap();
        assert_eq!(big.block_bytes(&pools), KV_CLASS_MAX + 1);
        assert_eq!(pools.large_bytes(), KV_CLASS_MAX + 1);
        // SAFETY: live blocks from `pools`, not used afterwards.
        unsafe {
            hash.free(&pools);
            top.free(&pools);
            big.free(&pools);
        }
        assert_eq!(pools.large_bytes(), 0);
        assert_eq!(pools.live_bytes(), 0);
    }

    #[test]
    fn inline_pair_bounds() {
        let p = InlinePair::new(b"12345678", b"abcdefgh").expect("16 bytes fit");
        assert_eq!((p.key(), p.value()), (&b"12345678"[..], &b"abcdefgh"[..]));
        assert_eq!(p.lens(), (8, 8));
        assert!(InlinePair::new(b"123456789", b"abcdefgh").is_none());
        assert!(InlinePair::new(&[7u8; INLINE_MAX + 1], b"").is_none());
        let e = InlinePair::new(b"", b"").expect("empty fits");
        assert_eq!((e.key(), e.value()), (&b""[..], &b""[..]));
        let q = InlinePair::new(&[9u8; INLINE_MAX], b"").expect("a 16-byte key fits");
        let pq = Pair::Inline(q);
        // SAFETY: inline pairs need no liveness.
        assert_eq!(unsafe { pq.key() }, &[9u8; INLINE_MAX][..]);
        assert_eq!(Pair::Inline(q).inline_bytes(), INLINE_MAX);
    }
}
