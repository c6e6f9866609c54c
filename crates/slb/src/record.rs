//! SLB-owned copies of hot items: one heap allocation per cached key-value pair.
//!
//! # Why copies
//!
//! The paper's Cache Table stores a 48-bit pointer to the *target entry inside the index*
//! (§3.2). Orrery's [`KvIndex`](orrery_core::KvIndex) hands values out only by copy or through
//! a callback that runs while the index protects the value, so no pointer into the index's
//! memory outlives a lookup: the index may move, free or overwrite the entry at any time. The
//! SLB therefore keeps its own immutable copy of every cached item, a record ([`RecordHeap`] holds them), and the
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
//! # Where records live
//!
//! A [`RecordHeap`] serves records up to 4 KiB from an `orrery_core`
//! [`SizeClassPool`] (32 classes: multiples of 16 bytes up to 256, then four classes per
//! doubling up to 4096), whose slots are packed back to back in 2 MiB huge-page chunks: the
//! hot records of a skewed workload then share a few huge pages (few TLB misses), instead of
//! being scattered over the global heap between the index's own allocations. Larger records
//! (only when `max_item_bytes` allows them) come from the global allocator.
//!
//! # Ownership and reclamation
//!
//! - A record is written once, in [`OwnedRecord::new`], before it is published; afterwards it
//!   is never written again (updates publish a new record), so readers need no validation.
//! - An [`OwnedRecord`] owns its allocation and frees it to its heap when dropped.
//!   Publishing it into a Cache Table slot turns it
//!   into a packed address ([`OwnedRecord::into_addr`]); the slot then owns it. Whoever
//!   swaps the address out of the slot (under the bucket's stripe lock) takes ownership back
//!   ([`OwnedRecord::from_addr`]) and must not free it before every reader that might have
//!   loaded the old slot word is gone: it hands the record to the epoch collector
//!   (`orrery_core::sync`), which frees it once no guard pinned before the retirement
//!   remains. The deferred free holds an `Arc` of the [`RecordHeap`], so it stays valid even
//!   if the SLB is dropped first.
//! - Readers reach a record only through a [`RecordRef`], whose lifetime is bounded by the
//!   epoch guard they hold while they load the slot word and use the record.

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::NonNull;

use orrery_core::alloc::{MemCounter, SizeClassPool};

/// Size of the record header (`key_len: u32`, `value_len: u32`).
const HEADER: usize = 8;
/// Alignment of records; also guarantees that the low 3 bits of an address are zero.
const ALIGN: usize = 8;
/// Addresses that fit the Cache Table's 48-bit reference field.
pub(crate) const ADDR_MASK: u64 = (1 << 48) - 1;

/// Bytes one record of this key and value occupies (before rounding to a size class).
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

/// Slot sizes of the slab classes: 16..=256 in steps of 16, then four per doubling.
const CLASSES: [usize; 32] = [
    16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, //
    320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096,
];

/// The memory records come from (see the [module docs](self#where-records-live)), with
/// the accounting of record bytes.
pub(crate) struct RecordHeap {
    /// The [`CLASSES`] (a slab pool each; a class maps its first chunk at its first
    /// record), and the global allocator above them.
    pool: SizeClassPool,
    /// Bytes of live records (header, key, value, padding to 8), freed or not yet reclaimed.
    payload: MemCounter,
}

impl RecordHeap {
    pub(crate) fn new() -> RecordHeap {
        RecordHeap {
            pool: SizeClassPool::new(&CLASSES, ALIGN)
                .unwrap_or_else(|e| unreachable!("the record classes are valid: {e}")),
            payload: MemCounter::new(),
        }
    }

    /// `size` bytes, 8-byte aligned, uninitialized; `None` when memory is lacking.
    fn alloc(&self, size: usize) -> Option<NonNull<u8>> {
        let ptr = self.pool.try_alloc(size).ok()?;
        self.payload.add(size);
        Some(ptr)
    }

    /// Frees a record of `size` bytes.
    ///
    /// # Safety
    /// `ptr` came from [`alloc`](Self::alloc) of this heap with this `size`, is not freed
    /// yet, and nobody uses it any more.
    unsafe fn free(&self, ptr: NonNull<u8>, size: usize) {
        self.payload.sub(size);
        // SAFETY: per the contract, allocated from the pool with this size, unused now.
        unsafe { self.pool.free(ptr, size) }
    }

    /// Frees the record published at `addr`.
    ///
    /// # Safety
    /// As [`OwnedRecord::from_addr`]: the caller owns the record at `addr` (it unlinked it)
    /// and nobody uses it any more.
    pub(crate) unsafe fn free_addr(&self, addr: u64) {
        // SAFETY: forwarded to the caller.
        drop(unsafe { OwnedRecord::from_addr(addr, self) });
    }

    /// Bytes of live records (not yet freed).
    pub(crate) fn payload_bytes(&self) -> usize {
        self.payload.get()
    }

    /// Bytes the class pools took from the OS (2 MiB chunks) and do not use for live
    /// records: the heap's overhead.
    pub(crate) fn slack_bytes(&self) -> usize {
        self.pool.slack_bytes()
    }

    /// Bytes of live records that the slab pools hold (rounded up to their classes).
    #[cfg(test)]
    fn slab_live_bytes(&self) -> usize {
        self.pool.live_bytes() - self.pool.large_bytes()
    }
}

/// An owned, immutable copy of one key-value pair (see the [module docs](self)), freed to
/// its heap when dropped.
pub(crate) struct OwnedRecord<'h> {
    ptr: NonNull<u8>,
    heap: &'h RecordHeap,
}

// SAFETY: a record is plain immutable bytes owned by this handle; moving the handle to
// another thread moves the ownership (the heap is `Sync`: slab pools and the global
// allocator free from any thread), and `&OwnedRecord` only permits reads.
unsafe impl Send for OwnedRecord<'_> {}
// SAFETY: as above: through `&OwnedRecord` the bytes are only read.
unsafe impl Sync for OwnedRecord<'_> {}

impl std::fmt::Debug for OwnedRecord<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedRecord")
            .field("key_len", &self.as_ref().lengths().0)
            .field("value_len", &self.as_ref().lengths().1)
            .finish()
    }
}

impl<'h> OwnedRecord<'h> {
    /// Copies `key` and `value` into a new record from `heap`. `None` if a length does not
    /// fit `u32`, the allocator fails, or the address does not fit the 48-bit reference of a
    /// slot (then the item is simply not cached).
    pub(crate) fn new(heap: &'h RecordHeap, key: &[u8], value: &[u8]) -> Option<OwnedRecord<'h>> {
        let key_len = u32::try_from(key.len()).ok()?;
        let value_len = u32::try_from(value.len()).ok()?;
        let size = record_bytes(key.len(), value.len());
        let ptr = heap.alloc(size)?;
        if ptr.as_ptr().addr() as u64 & !ADDR_MASK != 0 {
            // SAFETY: allocated just above with this size and never shared.
            unsafe { heap.free(ptr, size) };
            return None;
        }
        // SAFETY: the allocation holds `size` bytes; `MaybeUninit<u8>` needs no
        // initialization and nothing else refers to the fresh allocation.
        let buf =
            unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr().cast::<MaybeUninit<u8>>(), size) };
        let (header, body) = buf.split_at_mut(HEADER);
        fill(&mut header[..4], &key_len.to_ne_bytes());
        fill(&mut header[4..], &value_len.to_ne_bytes());
        let (k, v) = body.split_at_mut(key.len());
        fill(k, key);
        fill(&mut v[..value.len()], value);
        // Padding bytes after the value stay uninitialized and are never read.
        Some(OwnedRecord { ptr, heap })
    }

    /// A borrowed view of this record.
    #[inline]
    pub(crate) fn as_ref(&self) -> RecordRef<'_> {
        RecordRef {
            ptr: self.ptr,
            _life: PhantomData,
        }
    }

    /// Bytes of this record (before rounding to a size class).
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
    /// - `heap` is the heap the record was allocated from.
    #[inline]
    pub(crate) unsafe fn from_addr(addr: u64, heap: &'h RecordHeap) -> OwnedRecord<'h> {
        let raw = std::ptr::with_exposed_provenance_mut::<u8>(addr as usize);
        // SAFETY: per the contract `addr` is a non-null address from `into_addr`.
        let ptr = unsafe { NonNull::new_unchecked(raw) };
        OwnedRecord { ptr, heap }
    }
}

impl Drop for OwnedRecord<'_> {
    fn drop(&mut self) {
        let size = self.bytes();
        // SAFETY: `self` owns the record, allocated from `self.heap` with exactly this size
        // (the header stores the lengths it was computed from), and nobody uses it any more
        // (exclusive ownership since `new`, or the `from_addr` contract).
        unsafe { self.heap.free(self.ptr, size) };
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
        let heap = RecordHeap::new();
        let r = OwnedRecord::new(&heap, b"key", b"value").unwrap();
        assert_eq!(r.as_ref().key(), b"key");
        assert_eq!(r.as_ref().value(), b"value");
        assert_eq!(r.bytes(), 16);
        assert_eq!(heap.payload_bytes(), 16);
        assert_eq!(heap.slab_live_bytes(), 16);
        drop(r);
        assert_eq!(heap.payload_bytes(), 0);
        assert_eq!(heap.slab_live_bytes(), 0);
    }

    #[test]
    fn empty_binary_and_large_items() {
        let heap = RecordHeap::new();
        let r = OwnedRecord::new(&heap, b"", b"").unwrap();
        assert_eq!(r.as_ref().key(), b"");
        assert_eq!(r.as_ref().value(), b"");
        assert_eq!(r.bytes(), 8);
        let k = [0u8, 0xFF, 0, 0xFF, 7];
        let v = vec![0xFFu8; 300];
        let r2 = OwnedRecord::new(&heap, &k, &v).unwrap();
        assert_eq!(r2.as_ref().key(), k);
        assert_eq!(r2.as_ref().value(), &v[..]);
        // Beyond the largest class: the global allocator.
        let big = vec![9u8; 5000];
        let r3 = OwnedRecord::new(&heap, b"big", &big).unwrap();
        assert_eq!(r3.as_ref().value(), &big[..]);
        assert_eq!(heap.payload_bytes(), 8 + 320 + 5016);
        assert_eq!(heap.slab_live_bytes(), 16 + 320);
        drop((r, r2, r3));
        assert_eq!(heap.payload_bytes(), 0);
    }

    #[test]
    fn address_round_trip() {
        let heap = RecordHeap::new();
        let r = OwnedRecord::new(&heap, b"k", b"v").unwrap();
        let addr = r.into_addr();
        assert_ne!(addr, 0);
        assert_eq!(addr & !ADDR_MASK, 0);
        assert_eq!(addr % ALIGN as u64, 0);
        // SAFETY: `addr` comes from `into_addr` just above and nothing frees it meanwhile.
        let view = unsafe { RecordRef::from_addr(addr) };
        assert_eq!(view.key(), b"k");
        assert_eq!(view.value(), b"v");
        // SAFETY: ownership was given up by `into_addr` above and is taken back once.
        let owned = unsafe { OwnedRecord::from_addr(addr, &heap) };
        assert_eq!(owned.as_ref().value(), b"v");
        drop(owned);
        let r = OwnedRecord::new(&heap, b"k2", b"v2").unwrap();
        let addr = r.into_addr();
        // SAFETY: published just above, never freed, nobody else holds it.
        unsafe { heap.free_addr(addr) };
        assert_eq!(heap.payload_bytes(), 0);
    }

    #[test]
    fn size_classes() {
        let heap = RecordHeap::new();
        let class_of = |size| heap.pool.class_of(size);
        assert_eq!(record_bytes(8, 64), 80);
        assert_eq!(record_bytes(1, 0), 16);
        assert_eq!(record_bytes(0, 0), 8);
        assert_eq!(class_of(8), Some(0));
        assert_eq!(class_of(16), Some(0));
        assert_eq!(class_of(80), Some(4));
        assert_eq!(class_of(256), Some(15));
        assert_eq!(class_of(264), Some(16));
        assert_eq!(class_of(4096), Some(31));
        assert_eq!(class_of(4104), None);
        for size in (8..=4096).step_by(8) {
            let c = class_of(size).unwrap();
            assert!(CLASSES[c] >= size);
            assert!(c == 0 || CLASSES[c - 1] < size, "{size} in class {c}");
        }
        assert!(CLASSES.windows(2).all(|w| w[0] < w[1] && w[1] % 16 == 0));
    }
}
