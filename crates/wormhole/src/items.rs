//! The item array of one MetaTrieHT: items placed at a position computed from their hash,
//! so that a lookup can prefetch the item it will most likely read together with the
//! slots of its first search round (deviation from §3.1, measured).
//!
//! # Why
//!
//! A lookup that ends its binary search on an internal item (95% of lookups on 10M random
//! 8-byte keys) reads three lines one after the other: the slot of the matched prefix (in
//! the first prefetch batch), the item the slot entry names (its leftmost/rightmost leaf
//! and child bitmap), and the target leaf. On this project's VM each of those reads costs
//! a page walk as well as the line (the host maps guest memory in 4 KiB pages; see
//! `orrery_core::alloc`, "What huge pages do not fix in a VM"), and profiles of the 10M
//! `rand-8` lookup phase put about half of the time in the MetaTrieHT reads. When items sit
//! at a position the hash alone determines, the search prefetches the item of its most
//! likely final prefix length (`search::Plan::likely`) together with the first slots: the
//! item read leaves the dependent chain whenever the item is at its home position and the
//! prediction is right.
//!
//! # Layout and placement
//!
//! `cap` 64-byte items (a power of two, at least [`MIN_CAP`]), zeroed memory (an
//! `orrery_core::alloc::ZeroedArray`: a heap block while under 2 MiB, huge-page memory from
//! then on). An item goes to its *home*
//! `hash & (cap - 1)` or, when that is taken, to the next free position after it
//! (wrapping). Positions are never searched: the slot entry of an item holds its address,
//! as it held the address of a pool block before; the home is only a prefetch hint. So
//! freeing a position just clears its bit (no tombstones, no back-shifting), and a full
//! neighbourhood only costs hints.
//!
//! The owner (`meta::MetaTable`) keeps the load between 3/16 and 3/4 of `cap`: it doubles
//! the array before an insert would pass 3/4 and halves it when a removal leaves fewer
//! than 3/16 (down to [`MIN_CAP`]), re-placing every item and rewriting the slot entries
//! that name them. At a load `α` about `(1 − e^−α)/α` of the items are at home with random
//! hashes (79% at one half, 70% at three quarters).
//!
//! # Concurrency
//!
//! An array belongs to one table and is written only by the MetaTrieHT writer, on the
//! unpublished table (`smo`); readers of the published table only read it. Growing or
//! shrinking happens on the unpublished table too, so no reader holds an address into an
//! array being replaced.

use std::ptr::NonNull;

use orrery_core::alloc::{Zeroable, ZeroedArray};

/// Smallest capacity.
pub(crate) const MIN_CAP: usize = 8;

/// `cap` slots of type `T` (64-byte items) placed by hash; see the module docs.
pub(crate) struct ItemArray<T: Zeroable> {
    /// Start of the array (`mem.as_ptr()`); every pointer handed out derives from it.
    base: NonNull<T>,
    cap: usize,
    /// Taken positions, one bit each.
    used: Box<[u64]>,
    /// Number of taken positions.
    n: usize,
    /// The positions: a heap block while under 2 MiB, huge-page memory from then on. Only
    /// reached through `base` (element addresses keep the allocation's provenance).
    mem: ZeroedArray<T>,
}

// SAFETY: the array owns its memory; sharing follows the owning table's protocol (module
// docs): written only through `&mut self` by the writer.
unsafe impl<T: Zeroable + Send> Send for ItemArray<T> {}
// SAFETY: as above; `&self` methods only read.
unsafe impl<T: Zeroable + Sync> Sync for ItemArray<T> {}

impl<T: Zeroable + Copy> ItemArray<T> {
    /// An empty array of `cap` positions (a power of two, at least [`MIN_CAP`]), or `None`
    /// when the memory cannot be had.
    pub(crate) fn new(cap: usize) -> Option<ItemArray<T>> {
        assert!(cap.is_power_of_two() && cap >= MIN_CAP, "capacity {cap}");
        assert!(size_of::<T>() > 0, "zero-sized items");
        let mem = ZeroedArray::new(cap).ok()?;
        Some(ItemArray {
            base: NonNull::new(mem.as_ptr())?,
            cap,
            used: vec![0; cap.div_ceil(64)].into_boxed_slice(),
            n: 0,
            mem,
        })
    }

    /// Number of positions.
    #[inline]
    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    /// Number of items held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// Bytes reserved for the array (the bitmap included).
    pub(crate) fn bytes(&self) -> usize {
        self.mem.reserved_bytes() + self.used.len() * 8
    }

    #[inline]
    fn taken(&self, i: usize) -> bool {
        self.used[i / 64] & (1 << (i % 64)) != 0
    }

    /// The address of the home position of `hash` (a prefetch hint; never dereferenced
    /// here).
    #[inline]
    pub(crate) fn home(&self, hash: u32) -> *const u8 {
        self.base
            .as_ptr()
            .wrapping_add(hash as usize & (self.cap - 1))
            .cast()
    }

    /// Stores `item` (whose prefix has CRC32C `hash`) at its home or the next free
    /// position, and returns where. The caller keeps `len() < cap()`.
    pub(crate) fn insert(&mut self, item: T, hash: u32) -> NonNull<T> {
        assert!(self.n < self.cap, "item array full");
        let mask = self.cap - 1;
        let mut i = hash as usize & mask;
        while self.taken(i) {
            i = (i + 1) & mask;
        }
        self.used[i / 64] |= 1 << (i % 64);
        self.n += 1;
        // SAFETY: `i < cap`: inside the array, which we own; nobody reads a free position.
        let p = unsafe { self.base.add(i) };
        // SAFETY: as above; `p` is aligned (array of `T`) and exclusively ours (`&mut
        // self`: the writer on an unpublished table).
        unsafe { p.as_ptr().write(item) };
        p
    }

    /// The position of `p`, an item of this array.
    fn index(&self, p: NonNull<T>) -> usize {
        let off = (p.as_ptr() as usize).wrapping_sub(self.base.as_ptr() as usize);
        let i = off / size_of::<T>();
        assert!(
            off.is_multiple_of(size_of::<T>()) && i < self.cap && self.taken(i),
            "not an item of this array"
        );
        i
    }

    /// Frees the position of `p`, an item of this array (its bytes stay until reused).
    pub(crate) fn remove(&mut self, p: NonNull<T>) {
        let i = self.index(p);
        self.used[i / 64] &= !(1 << (i % 64));
        self.n -= 1;
    }

    /// Whether `p` is the home position of `hash` (diagnostics).
    #[cfg(any(test, feature = "bench-internals"))]
    pub(crate) fn at_home(&self, p: NonNull<T>, hash: u32) -> bool {
        self.index(p) == hash as usize & (self.cap - 1)
    }

    /// A copy with the same capacity and the same positions; `rebase` maps an address in
    /// `self` to the same position in the copy.
    pub(crate) fn duplicate(&self) -> Option<ItemArray<T>> {
        let c = ItemArray::new(self.cap)?;
        // SAFETY: both arrays hold `cap` positions of `T` and are distinct allocations;
        // free positions hold zeroes or stale items, copied as plain bytes.
        unsafe { std::ptr::copy_nonoverlapping(self.base.as_ptr(), c.base.as_ptr(), self.cap) };
        let mut c = c;
        c.used.copy_from_slice(&self.used);
        c.n = self.n;
        Some(c)
    }

    /// The address in `other` (a [`ItemArray::duplicate`] of `self`) of the item at `p`.
    pub(crate) fn rebase(&self, p: NonNull<T>, other: &ItemArray<T>) -> NonNull<T> {
        let i = self.index(p);
        // SAFETY: `i < cap == other.cap`: inside `other`'s array.
        unsafe { other.base.add(i) }
    }
}

#[cfg(test)]
mod tests {
    use orrery_core::alloc::HUGE_PAGE_SIZE;

    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    #[repr(C, align(64))]
    struct Line([u64; 8]);

    // SAFETY: eight zero `u64`s are a valid `Line`.
    unsafe impl Zeroable for Line {}

    #[test]
    fn items_go_home_or_next_free() {
        let mut a = ItemArray::<Line>::new(8).unwrap();
        let p = a.insert(Line([1; 8]), 3);
        assert!(a.at_home(p, 3));
        let q = a.insert(Line([2; 8]), 3 + 8);
        assert!(!a.at_home(q, 11));
        assert_eq!(a.index(q), 4);
        let r = a.insert(Line([3; 8]), 7);
        let s = a.insert(Line([4; 8]), 7);
        assert_eq!((a.index(r), a.index(s)), (7, 0), "wraps around");
        // SAFETY: `p`, `q` and `s` are live items of `a`, read while `a` is not written.
        let read = |x: NonNull<Line>| unsafe { *x.as_ptr() };
        assert_eq!(read(p), Line([1; 8]));
        assert_eq!(read(q), Line([2; 8]));
        assert_eq!(read(s), Line([4; 8]));
        assert_eq!(a.len(), 4);
        a.remove(p);
        assert_eq!(a.len(), 3);
        let t = a.insert(Line([5; 8]), 3 + 16);
        assert_eq!(a.index(t), 3, "a freed position is reused");
        assert_eq!(a.home(3), t.as_ptr().cast_const().cast());
    }

    #[test]
    fn duplicate_keeps_positions() {
        let mut a = ItemArray::<Line>::new(16).unwrap();
        let ps: Vec<_> = (0..10u32)
            .map(|i| a.insert(Line([i as u64; 8]), i * 5))
            .collect();
        let b = a.duplicate().unwrap();
        assert_eq!(b.len(), 10);
        for (i, &p) in ps.iter().enumerate() {
            let q = a.rebase(p, &b);
            assert_ne!(p, q);
            // SAFETY: `q` is the copy of a live item.
            assert_eq!(unsafe { *q.as_ptr() }, Line([i as u64; 8]));
            assert_eq!(b.index(q), a.index(p));
        }
    }

    #[test]
    #[should_panic(expected = "not an item of this array")]
    fn removing_a_foreign_item_panics() {
        let mut a = ItemArray::<Line>::new(8).unwrap();
        let mut b = ItemArray::<Line>::new(8).unwrap();
        let p = b.insert(Line([0; 8]), 0);
        a.remove(p);
    }

    #[test]
    fn large_arrays_use_huge_regions() {
        let n = HUGE_PAGE_SIZE / size_of::<Line>();
        let mut a = ItemArray::<Line>::new(n).unwrap();
        let p = a.insert(Line([9; 8]), u32::MAX);
        assert_eq!(a.index(p), n - 1);
        assert!(a.bytes() >= HUGE_PAGE_SIZE);
    }
}
