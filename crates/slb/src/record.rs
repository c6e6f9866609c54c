//! SLB-owned copies of hot items: one heap allocation per cached key-value pair.
//!
//! # Why copies
//!
//! The paper's Cache Table stores a 48-bit pointer to the *target entry inside the index*
//! (§3.2). Orrery's [`KvIndex`](orrery_core::KvIndex) hands values out only by copy or through
//! a callback that runs while the index protects the value, so no pointer into the index's
//! memory outlives a lookup: the index may move, free or overwrite the entry at any time. The
//! SLB therefore keeps its own immutable copy of every cached item, a [`Record`], and the
//! Cache Table's 48-bit reference points at that copy.
//!
//! # Layout
//!
//! ```text
//! offset 0        4          8                 8 + key_len
//!        +--------+----------+-----------------+-------------------+
//!        | key_len| value_len| key bytes       | value bytes       |
//!        |  u32   |   u32    |                 |                   |
//!        +--------+----------+-----------------+-------------------+
//! ```
//!
//! One allocation of `8 + key_len + value_len` bytes (8-byte aligned), so a hit reads one or
//! two cache lines beyond the Cache Table bucket for the paper's 8 B keys / 64 B values.
//!
//! # Ownership and reclamation
//!
//! - A record is written once, in [`OwnedRecord::new`], before it is published; afterwards it
//!   is never written again (updates publish a new record), so readers need no validation.
//! - An [`OwnedRecord`] owns its allocation. Publishing it into a Cache Table slot turns it
//!   into a packed address ([`OwnedRecord::into_addr`]); the slot then owns it. Whoever
//!   swaps the address out of the slot (under the bucket's stripe lock) takes ownership back
//!   ([`OwnedRecord::from_addr`]) and must not free it before every reader that might have
//!   loaded the old slot word is gone: it hands the record to the epoch collector
//!   (`orrery_core::sync`), which drops it once no guard pinned before the retirement remains.
//! - Readers reach a record only through a [`RecordRef`], whose lifetime is bounded by the
//!   epoch guard they hold while they load the slot word and use the record.

use std::alloc::{Layout, alloc, dealloc};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

/// Size of the record header (`key_len: u32`, `value_len: u32`).
const HEADER: usize = 8;
/// Alignment of records; also guarantees that the low 3 bits of an address are zero.
const ALIGN: usize = 8;
/// Addresses that fit the Cache Table's 48-bit reference field.
pub(crate) const ADDR_MASK: u64 = (1 << 48) - 1;

/// Heap bytes one record of this key and value occupies (the allocator's own overhead
/// excluded).
#[inline]
pub(crate) fn record_bytes(key_len: usize, value_len: usize) -> usize {
    (HEADER + key_len + value_len).next_multiple_of(ALIGN)
}

/// Initializes `dst` with the bytes of `src` (same length).
#[inline]
fn fill(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    for (d, s) in dst.iter_mut().zip(src) {
        d.write(*s);
    }
}

fn layout(key_len: usize, value_len: usize) -> Option<Layout> {
    Layout::from_size_align(record_bytes(key_len, value_len), ALIGN).ok()
}

/// An owned, immutable copy of one key-value pair (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct OwnedRecord {
    ptr: NonNull<u8>,
}

// SAFETY: a record is plain immutable bytes owned by this handle; moving the handle to
// another thread moves the ownership, and sharing `&OwnedRecord` only permits reads.
unsafe impl Send for OwnedRecord {}
// SAFETY: as above: through `&OwnedRecord` the bytes are only read.
unsafe impl Sync for OwnedRecord {}

impl OwnedRecord {
    /// Copies `key` and `value` into a new record. `None` if a length does not fit `u32`, the
    /// allocator fails, or the address does not fit the 48-bit reference of a slot (then the
    /// item is simply not cached).
    pub(crate) fn new(key: &[u8], value: &[u8]) -> Option<OwnedRecord> {
        let key_len = u32::try_from(key.len()).ok()?;
        let value_len = u32::try_from(value.len()).ok()?;
        let layout = layout(key.len(), value.len())?;
        let size = layout.size();
        // SAFETY: `layout` has a non-zero size (at least the 8-byte header).
        let raw = unsafe { alloc(layout) };
        let ptr = NonNull::new(raw)?;
        if raw.addr() as u64 & !ADDR_MASK != 0 {
            // SAFETY: `raw` was allocated just above with `layout` and is not shared.
            unsafe { dealloc(raw, layout) };
            return None;
        }
        // SAFETY: the allocation holds `size` bytes; `MaybeUninit<u8>` needs no
        // initialization and nothing else refers to the fresh allocation.
        let buf = unsafe { std::slice::from_raw_parts_mut(raw.cast::<MaybeUninit<u8>>(), size) };
        let (header, body) = buf.split_at_mut(HEADER);
        fill(&mut header[..4], &key_len.to_ne_bytes());
        fill(&mut header[4..], &value_len.to_ne_bytes());
        let (k, v) = body.split_at_mut(key.len());
        fill(k, key);
        fill(&mut v[..value.len()], value);
        // Padding bytes after the value stay uninitialized and are never read.
        let rec = OwnedRecord { ptr };
        Some(rec)
    }

    /// A borrowed view of this record.
    #[inline]
    pub(crate) fn as_ref(&self) -> RecordRef<'_> {
        RecordRef {
            ptr: self.ptr,
            _life: PhantomData,
        }
    }

    /// Heap bytes of this record (the allocator's overhead excluded).
    #[inline]
    pub(crate) fn bytes(&self) -> usize {
        let (k, v) = self.as_ref().lengths();
        record_bytes(k, v)
    }

    /// Gives up ownership and returns the 48-bit address that a Cache Table slot stores.
    /// The provenance is exposed so that [`OwnedRecord::from_addr`] and
    /// [`RecordRef::from_addr`] can rebuild the pointer.
    #[inline]
    pub(crate) fn into_addr(self) -> u64 {
        let addr = self.ptr.as_ptr().expose_provenance() as u64;
        std::mem::forget(self);
        debug_assert!(addr != 0 && addr & !ADDR_MASK == 0);
        addr
    }

    /// Takes back ownership of a record published with [`OwnedRecord::into_addr`].
    ///
    /// # Safety
    /// - `addr` was returned by `into_addr` and ownership was not taken back since (the
    ///   caller removed the only slot word holding it, under the bucket's stripe lock).
    /// - If readers may still hold a [`RecordRef`] to it, the record must not be dropped
    ///   before they are gone (retire it through the epoch collector).
    #[inline]
    pub(crate) unsafe fn from_addr(addr: u64) -> OwnedRecord {
        let raw = std::ptr::with_exposed_provenance_mut::<u8>(addr as usize);
        // SAFETY: per the contract `addr` is a non-null address from `into_addr`.
        let ptr = unsafe { NonNull::new_unchecked(raw) };
        OwnedRecord { ptr }
    }
}

impl Drop for OwnedRecord {
    fn drop(&mut self) {
        let (k, v) = self.as_ref().lengths();
        let layout = layout(k, v).expect("a record's layout was valid when it was allocated");
        // SAFETY: `self` owns the allocation, made with this very layout (the header stores
        // the lengths it was computed from), and no reader uses it any more (the `from_addr`
        // contract or exclusive ownership since `new`).
        unsafe { dealloc(self.ptr.as_ptr(), layout) };
    }
}

/// A borrowed view of a live record; `'a` is bounded by the owner or by the epoch guard the
/// reader holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecordRef<'a> {
    ptr: NonNull<u8>,
    _life: PhantomData<&'a [u8]>,
}

impl<'a> RecordRef<'a> {
    /// A view of the record at a 48-bit address loaded from a slot.
    ///
    /// # Safety
    /// `addr` was published by [`OwnedRecord::into_addr`] and the record is not freed during
    /// `'a`: the caller loaded it from a slot while pinned by an epoch guard that outlives
    /// `'a` (retirement goes through the epoch collector).
    #[inline]
    pub(crate) unsafe fn from_addr(addr: u64) -> RecordRef<'a> {
        let raw = std::ptr::with_exposed_provenance_mut::<u8>(addr as usize);
        // SAFETY: per the contract `addr` is a non-null record address.
        let ptr = unsafe { NonNull::new_unchecked(raw) };
        RecordRef {
            ptr,
            _life: PhantomData,
        }
    }

    /// The key and value lengths from the header.
    #[inline]
    fn lengths(&self) -> (usize, usize) {
        // SAFETY: the record is live for `'a`; its 8-byte header was written before
        // publication and is never written again.
        let header = unsafe { self.ptr.cast::<[u8; HEADER]>().read() };
        let [k0, k1, k2, k3, v0, v1, v2, v3] = header;
        (
            u32::from_ne_bytes([k0, k1, k2, k3]) as usize,
            u32::from_ne_bytes([v0, v1, v2, v3]) as usize,
        )
    }

    /// The key and value bytes, in that order.
    #[inline]
    fn body(&self) -> (&'a [u8], &'a [u8]) {
        let (key_len, value_len) = self.lengths();
        // SAFETY: the record is live for `'a` and immutable; its first
        // `HEADER + key_len + value_len` bytes were initialized before publication.
        let all = unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().cast_const(), HEADER + key_len + value_len)
        };
        all[HEADER..].split_at(key_len)
    }

    /// The cached key.
    #[inline]
    pub(crate) fn key(&self) -> &'a [u8] {
        self.body().0
    }

    /// The cached value.
    #[inline]
    pub(crate) fn value(&self) -> &'a [u8] {
        self.body().1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_key_and_value() {
        let r = OwnedRecord::new(b"key", b"value").unwrap();
        assert_eq!(r.as_ref().key(), b"key");
        assert_eq!(r.as_ref().value(), b"value");
        assert_eq!(r.bytes(), 16);
    }

    #[test]
    fn empty_and_binary_items() {
        let r = OwnedRecord::new(b"", b"").unwrap();
        assert_eq!(r.as_ref().key(), b"");
        assert_eq!(r.as_ref().value(), b"");
        assert_eq!(r.bytes(), 8);
        let k = [0u8, 0xFF, 0, 0xFF, 7];
        let v = vec![0xFFu8; 300];
        let r = OwnedRecord::new(&k, &v).unwrap();
        assert_eq!(r.as_ref().key(), k);
        assert_eq!(r.as_ref().value(), &v[..]);
    }

    #[test]
    fn address_round_trip() {
        let r = OwnedRecord::new(b"k", b"v").unwrap();
        let addr = r.into_addr();
        assert_ne!(addr, 0);
        assert_eq!(addr & !ADDR_MASK, 0);
        assert_eq!(addr % ALIGN as u64, 0);
        // SAFETY: `addr` comes from `into_addr` just above and nothing frees it meanwhile.
        let view = unsafe { RecordRef::from_addr(addr) };
        assert_eq!(view.key(), b"k");
        assert_eq!(view.value(), b"v");
        // SAFETY: ownership was given up by `into_addr` above and is taken back once.
        let owned = unsafe { OwnedRecord::from_addr(addr) };
        assert_eq!(owned.as_ref().value(), b"v");
    }

    #[test]
    fn sizes_round_up_to_alignment() {
        assert_eq!(record_bytes(8, 64), 80);
        assert_eq!(record_bytes(1, 0), 16);
        assert_eq!(record_bytes(0, 0), 8);
    }
}
