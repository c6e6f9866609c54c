//! Key-value items: one heap block per pair, referenced from a leaf's tag array.
//!
//! # Layout (byte level)
//!
//! ```text
//! offset 0   u32  key length k   (≤ MAX_KEY_LEN = 65536)
//! offset 4   u32  value length v (≤ MAX_VALUE_LEN)
//! offset 8   k    key bytes
//! offset 8+k v    value bytes
//! ```
//!
//! The block is 8-byte aligned, so its address fits the 48-bit reference field of a leaf's
//! tag entry (see `leaf`). A block is owned by exactly one leaf entry. Its key never
//! changes; its value bytes change in place only under the owning leaf's write lock, and a
//! block is freed only under that lock: every reader of a block holds the leaf's read lock
//! (§2.5), so no reclamation scheme is needed for pairs.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::ptr::NonNull;

const HEADER: usize = 8;

/// A pointer to a key-value block (see the module docs for its layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kv(NonNull<u8>);

fn layout(klen: usize, vlen: usize) -> Layout {
    // The lengths are bounded by the API limits, so this cannot overflow or fail.
    Layout::from_size_align(HEADER + klen + vlen, 8).expect("kv layout")
}

impl Kv {
    /// Allocates a block holding `key` and `value`. Lengths must be within the API limits.
    pub(crate) fn new(key: &[u8], value: &[u8]) -> Kv {
        debug_assert!(key.len() <= u32::MAX as usize && value.len() <= u32::MAX as usize);
        let lay = layout(key.len(), value.len());
        // SAFETY: `lay` has a non-zero size (at least the 8-byte header).
        let raw = unsafe { alloc(lay) };
        let Some(p) = NonNull::new(raw) else {
            handle_alloc_error(lay)
        };
        let base = p.as_ptr();
        // SAFETY: the block is `HEADER + k + v` bytes and 8-aligned; each write below stays
        // inside it and the source slices do not overlap the fresh block.
        unsafe { base.cast::<u32>().write(key.len() as u32) };
        // SAFETY: as above (offset 4 is inside the header, 4-aligned).
        unsafe { base.wrapping_add(4).cast::<u32>().write(value.len() as u32) };
        // SAFETY: as above.
        unsafe {
            base.wrapping_add(HEADER)
                .copy_from_nonoverlapping(key.as_ptr(), key.len())
        };
        // SAFETY: as above.
        unsafe {
            base.wrapping_add(HEADER + key.len())
                .copy_from_nonoverlapping(value.as_ptr(), value.len())
        };
        Kv(p)
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

    #[inline]
    fn lens(self) -> (usize, usize) {
        // SAFETY: a live block starts with two u32 lengths (type invariant of `Kv`, whose
        // callers hold the owning leaf's lock).
        let k = unsafe { self.0.as_ptr().cast::<u32>().read() } as usize;
        // SAFETY: as above.
        let v = unsafe { self.0.as_ptr().wrapping_add(4).cast::<u32>().read() } as usize;
        (k, v)
    }

    /// The key bytes.
    ///
    /// # Safety
    /// The block must stay live and unmodified for `'a` (hold the owning leaf's lock).
    #[inline]
    pub(crate) unsafe fn key<'a>(self) -> &'a [u8] {
        let (k, _) = self.lens();
        // SAFETY: the key occupies `k` bytes at offset 8 of the live block.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().wrapping_add(HEADER), k) }
    }

    /// The value bytes.
    ///
    /// # Safety
    /// As [`Kv::key`].
    #[inline]
    pub(crate) unsafe fn value<'a>(self) -> &'a [u8] {
        let (k, v) = self.lens();
        // SAFETY: the value occupies `v` bytes after the key.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().wrapping_add(HEADER + k), v) }
    }

    /// The value bytes, writable in place.
    ///
    /// # Safety
    /// The caller holds the owning leaf's write lock (no other reference to the block) for
    /// `'a`.
    #[inline]
    pub(crate) unsafe fn value_mut<'a>(self) -> &'a mut [u8] {
        let (k, v) = self.lens();
        // SAFETY: exclusive access per the contract; the range is inside the block.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_ptr().wrapping_add(HEADER + k), v) }
    }

    /// The block's address as a pointer (for prefetching).
    #[inline]
    pub(crate) fn as_ptr(self) -> *const u8 {
        self.0.as_ptr()
    }

    /// Bytes this block occupies (header included), for memory accounting.
    #[inline]
    pub(crate) fn size(self) -> usize {
        let (k, v) = self.lens();
        HEADER + k + v
    }

    /// Frees the block.
    ///
    /// # Safety
    /// The block is live, no reference into it survives, and it is not used afterwards.
    pub(crate) unsafe fn free(self) {
        let (k, v) = self.lens();
        // SAFETY: allocated by `Kv::new` with exactly this layout.
        unsafe { dealloc(self.0.as_ptr(), layout(k, v)) }
    }
}

#[cfg(test)]
#[allow(clippy::multiple_unsafe_ops_per_block)]
mod tests {
    use super::*;

    #[test]
    fn kv_roundtrip() {
        for (k, v) in [
            (&b""[..], &b""[..]),
            (b"key", b"value"),
            (&[0u8; 100][..], &[7u8; 3][..]),
        ] {
            let kv = Kv::new(k, v);
            // SAFETY: live block, used single-threaded.
            unsafe {
                let kv2 = Kv::from_addr(kv.addr());
                assert_eq!(kv2.key(), k);
                assert_eq!(kv2.value(), v);
                assert_eq!(kv.size(), 8 + k.len() + v.len());
                if !v.is_empty() {
                    kv.value_mut()[0] = 1;
                    assert_eq!(kv.value()[0], 1);
                }
                kv.free();
            }
        }
    }
}
