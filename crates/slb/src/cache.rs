//! The Cache Table (paper §3.2, Fig. 5; replacement §3.3.1).
//!
//! # Layout
//!
//! A hash table of 64-byte, cache-line-aligned buckets; the bucket of a key is chosen by the
//! low bits of its 64-bit hash:
//!
//! ```text
//! byte 0                                          56                 63  64
//!      +------+------+------+------+------+------+------+----------------+---+
//!      |slot 0|slot 1|slot 2|slot 3|slot 4|slot 5|slot 6| counters 0..6  | r |
//!      +------+------+------+------+------+------+------+----------------+---+
//!
//! slot (AtomicU64):  63         48 47                                    0
//!                   +------------+---------------------------------------+
//!                   |  tag (16)  |  record address (48 bits)             |
//!                   +------------+---------------------------------------+
//!                   all zero = empty (a record address is never 0)
//! counters: seven AtomicU8 access counters, one per slot; r: reserved byte
//! ```
//!
//! The tag is the high 16 bits of the key's 64-bit hash; a slot whose tag matches is
//! confirmed by comparing the record's key with the requested key. The 48-bit reference
//! points at an SLB-owned [`record`](crate::record) (the paper's points into the index;
//! see the record module for why Orrery copies).
//!
//! # Replacement (§3.3.1)
//!
//! A hit increments its slot's counter; if the counter is already saturated (255), a
//! randomly chosen *other* non-zero counter of the bucket is decremented instead, so relative
//! temperatures are kept without leaving the bucket. An admission fills an empty slot if the
//! bucket has one, otherwise it evicts the slot with the smallest counter (ties broken from a
//! random starting slot). Counters are updated with relaxed loads and stores, without a lock:
//! concurrent hits may lose an increment, which only makes the temperature approximate.
//!
//! # Concurrency
//!
//! - Readers never lock: they pin an epoch guard, load a slot word (`Acquire`, pairing with
//!   the `Release` half of the swap that published it), compare the tag and the record's key,
//!   and read the immutable record while pinned.
//! - Every change of a slot word is an atomic `swap`, so exactly one thread obtains each
//!   unlinked record ([`Unlinked`]) and it must retire it through the epoch collector. This
//!   makes memory safety independent of locking; the stripe locks of the [`crate::buffer`]
//!   layer serialise slot changes only to keep the cache coherent with the index.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use orrery_core::alloc::HugeArray;
use orrery_core::sync::Guard;

use crate::record::{ADDR_MASK, OwnedRecord, RecordHeap, RecordRef};

/// Slots (tag + reference pairs) per 64-byte bucket.
pub(crate) const SLOTS: usize = 7;
/// Counter value given to a freshly admitted item.
const INITIAL_COUNT: u8 = 1;

/// One 64-byte Cache Table bucket (see the [module docs](self) for the layout).
#[repr(C, align(64))]
#[derive(Default)]
pub(crate) struct Bucket {
    slots: [AtomicU64; SLOTS],
    counters: [AtomicU8; SLOTS],
    _reserved: AtomicU8,
}

const _: () = assert!(size_of::<Bucket>() == 64);
const _: () = assert!(align_of::<Bucket>() == 64);

// SAFETY: `Bucket` consists only of atomics, for which the all-zero bit pattern is a valid
// value (empty slots, zero counters).
unsafe impl orrery_core::alloc::Zeroable for Bucket {}

#[inline]
fn pack(tag: u16, addr: u64) -> u64 {
    debug_assert!(addr != 0 && addr & !ADDR_MASK == 0);
    (u64::from(tag) << 48) | addr
}

#[inline]
fn slot_tag(word: u64) -> u16 {
    (word >> 48) as u16
}

#[inline]
fn slot_addr(word: u64) -> u64 {
    word & ADDR_MASK
}

/// `a == b`, without a call to `memcmp` for the short keys that dominate lookups (two
/// overlapping 8-byte loads cover 8..=16 bytes).
#[inline]
fn keys_equal(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if (8..=16).contains(&n) {
        let word = |s: &[u8], at: usize| u64::from_ne_bytes(s[at..at + 8].try_into().unwrap());
        return word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8);
    }
    a == b
}

/// The outcome of looking a key up in its bucket.
pub(crate) enum Probe<'g> {
    /// The key is cached in slot `index`.
    Hit {
        /// The slot holding the record.
        index: usize,
        /// The record, valid while the guard is pinned.
        record: RecordRef<'g>,
    },
    /// The key is not cached.
    Miss {
        /// The bucket had an empty slot when probed (it is still warming up).
        has_empty: bool,
    },
}

/// A record swapped out of a slot: no new reader can reach it, but readers that loaded the
/// slot before the swap may still use it, so it must be [retired](Unlinked::retire) through
/// the epoch collector. Dropping an `Unlinked` without retiring it leaks the record (never
/// frees it early).
#[must_use = "an unlinked record must be retired through the epoch collector"]
#[derive(Debug)]
pub(crate) struct Unlinked<'h>(std::mem::ManuallyDrop<OwnedRecord<'h>>);

impl Unlinked<'_> {
    /// The unlinked record (tests).
    #[cfg(test)]
    pub(crate) fn record(&self) -> &OwnedRecord<'_> {
        &self.0
    }

    /// Hands the record to the epoch collector: it is freed to `heap` (its heap) once every
    /// guard pinned before this call is dropped. The deferred free owns an `Arc` of the
    /// heap, so it may run after the table is gone.
    pub(crate) fn retire(self, guard: &Guard, heap: &Arc<RecordHeap>) {
        let addr = std::mem::ManuallyDrop::into_inner(self.0).into_addr();
        let heap = Arc::clone(heap);
        guard.defer(move || {
            // SAFETY: this closure owns the unlinked record at `addr` (from `heap`); it runs
            // once, after every reader pinned before the retirement has unpinned, so nobody
            // uses the record any more.
            unsafe { heap.free_addr(addr) }
        });
    }

    /// Frees the record at once.
    ///
    /// # Safety
    /// No reader may hold a reference to the record: the caller has exclusive access to the
    /// table it was unlinked from (e.g. `&mut`, when the table is dropped).
    pub(crate) unsafe fn free_now(self) {
        drop(std::mem::ManuallyDrop::into_inner(self.0));
    }
}

impl Bucket {
    /// Looks `key` (with `tag`) up among the slots. Lock-free; the record of a hit stays valid
    /// while `guard` is pinned.
    #[inline]
    pub(crate) fn probe<'g>(&self, tag: u16, key: &[u8], _guard: &'g Guard) -> Probe<'g> {
        let mut has_empty = false;
        for (index, slot) in self.slots.iter().enumerate() {
            let word = slot.load(Ordering::Acquire);
            if word == 0 {
                has_empty = true;
                continue;
            }
            if slot_tag(word) != tag {
                continue;
            }
            // SAFETY: a non-empty slot word holds an address published by
            // `OwnedRecord::into_addr`; the record is retired through the epoch collector
            // only after being swapped out, which happens after `_guard` was pinned (we
            // loaded the word while pinned), so it stays live for `'g`.
            let record = unsafe { RecordRef::from_addr(slot_addr(word)) };
            if keys_equal(record.key(), key) {
                return Probe::Hit { index, record };
            }
        }
        Probe::Miss { has_empty }
    }

    /// Records a hit on slot `index` (§3.3.1): increments its counter, or, if saturated,
    /// decrements another non-zero counter, searched from a random start drawn from `rnd`.
    #[inline]
    pub(crate) fn touch(&self, index: usize, rnd: impl FnOnce() -> u32) {
        let c = self.counters[index].load(Ordering::Relaxed);
        if c < u8::MAX {
            self.counters[index].store(c + 1, Ordering::Relaxed);
            return;
        }
        let start = rnd() as usize % SLOTS;
        for k in 0..SLOTS {
            let j = (start + k) % SLOTS;
            if j == index {
                continue;
            }
            let cj = self.counters[j].load(Ordering::Relaxed);
            if cj > 0 {
                self.counters[j].store(cj - 1, Ordering::Relaxed);
                return;
            }
        }
    }

    /// Index of the slot caching `key`, if any.
    pub(crate) fn find(&self, tag: u16, key: &[u8], guard: &Guard) -> Option<usize> {
        match self.probe(tag, key, guard) {
            Probe::Hit { index, .. } => Some(index),
            Probe::Miss { .. } => None,
        }
    }

    /// Empties slot `index`, returning the record it held (records of this bucket come from
    /// `heap`). The counter is kept (an update may refill the slot with the same
    /// temperature); [`Bucket::reset_counter`] clears it.
    pub(crate) fn take<'h>(&self, index: usize, heap: &'h RecordHeap) -> Option<Unlinked<'h>> {
        let old = self.slots[index].swap(0, Ordering::AcqRel);
        (old != 0).then(|| {
            // SAFETY: the swap removed the only slot word holding this address, so this
            // thread alone owns the record now; `Unlinked` only frees it through the epoch
            // collector (or `free_now`, whose contract excludes readers).
            Unlinked(std::mem::ManuallyDrop::new(unsafe {
                OwnedRecord::from_addr(slot_addr(old), heap)
            }))
        })
    }

    /// Publishes `record` (of a key with `tag`, from `heap`) in slot `index`, returning what
    /// the slot held.
    pub(crate) fn put<'h>(
        &self,
        index: usize,
        tag: u16,
        record: OwnedRecord<'h>,
        heap: &'h RecordHeap,
    ) -> Option<Unlinked<'h>> {
        let word = pack(tag, record.into_addr());
        let old = self.slots[index].swap(word, Ordering::AcqRel);
        (old != 0).then(|| {
            // SAFETY: as in `take`: the swap gave this thread sole ownership of `old`, a
            // record of this bucket, hence from `heap`.
            Unlinked(std::mem::ManuallyDrop::new(unsafe {
                OwnedRecord::from_addr(slot_addr(old), heap)
            }))
        })
    }

    /// Sets the counter of slot `index` to zero (its item was removed).
    pub(crate) fn reset_counter(&self, index: usize) {
        self.counters[index].store(0, Ordering::Relaxed);
    }

    /// Admits `record` (of a key with `tag` that is not cached in this bucket): into an empty
    /// slot if there is one, otherwise over the slot with the smallest counter, searched from
    /// the random start `rnd`. Returns the evicted record, if any.
    pub(crate) fn admit<'h>(
        &self,
        tag: u16,
        record: OwnedRecord<'h>,
        heap: &'h RecordHeap,
        rnd: u32,
    ) -> Option<Unlinked<'h>> {
        let start = rnd as usize % SLOTS;
        let mut victim = start;
        let mut smallest = u8::MAX;
        for k in 0..SLOTS {
            let i = (start + k) % SLOTS;
            if self.slots[i].load(Ordering::Relaxed) == 0 {
                victim = i;
                break;
            }
            let c = self.counters[i].load(Ordering::Relaxed);
            if c < smallest || k == 0 {
                smallest = c;
                victim = i;
            }
        }
        self.counters[victim].store(INITIAL_COUNT, Ordering::Relaxed);
        self.put(victim, tag, record, heap)
    }

    /// Whether some slot is empty.
    #[inline]
    pub(crate) fn has_empty(&self) -> bool {
        self.slots.iter().any(|s| s.load(Ordering::Relaxed) == 0)
    }

    /// Number of occupied slots.
    pub(crate) fn occupied(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| s.load(Ordering::Relaxed) != 0)
            .count()
    }

    /// The counter of slot `index` (tests and statistics).
    #[cfg(test)]
    pub(crate) fn counter(&self, index: usize) -> u8 {
        self.counters[index].load(Ordering::Relaxed)
    }
}

/// The Cache Table: a power-of-two number of [`Bucket`]s in huge-page-backed memory, and
/// the heap its records come from.
pub(crate) struct CacheTable {
    buckets: HugeArray<Bucket>,
    mask: u64,
    heap: Arc<RecordHeap>,
}

impl CacheTable {
    /// A table of `buckets` buckets (a power of two).
    pub(crate) fn new(buckets: usize) -> orrery_core::Result<CacheTable> {
        debug_assert!(buckets.is_power_of_two());
        Ok(CacheTable {
            buckets: HugeArray::new(buckets)?,
            mask: buckets as u64 - 1,
            heap: Arc::new(RecordHeap::new()),
        })
    }

    /// The heap of this table's records.
    #[inline]
    pub(crate) fn heap(&self) -> &Arc<RecordHeap> {
        &self.heap
    }

    /// Index of the bucket of a key with this hash.
    #[inline]
    pub(crate) fn bucket_index(&self, hash: u64) -> usize {
        (hash & self.mask) as usize
    }

    /// The bucket at `index` (from [`CacheTable::bucket_index`]).
    #[inline]
    pub(crate) fn bucket(&self, index: usize) -> &Bucket {
        &self.buckets[index]
    }

    /// Starts loading the bucket at `index` into the CPU cache (batched lookups overlap these
    /// memory reads).
    #[inline]
    pub(crate) fn prefetch(&self, index: usize) {
        orrery_core::prefetch::<Bucket>(&self.buckets[index]);
    }

    /// Number of buckets.
    pub(crate) fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Bytes of the table itself.
    pub(crate) fn table_bytes(&self) -> usize {
        self.buckets.len() * size_of::<Bucket>()
    }

    /// Occupied slots over the whole table (a scan; for statistics).
    pub(crate) fn occupied(&self) -> usize {
        self.buckets.iter().map(Bucket::occupied).sum()
    }

    /// Unlinks every cached record, handing each to `sink`.
    pub(crate) fn drain(&self, mut sink: impl FnMut(Unlinked<'_>)) {
        for b in self.buckets.iter() {
            for i in 0..SLOTS {
                if let Some(u) = b.take(i, &self.heap) {
                    sink(u);
                }
                b.reset_counter(i);
            }
        }
    }
}

impl Drop for CacheTable {
    fn drop(&mut self) {
        self.drain(|u| {
            // SAFETY: `&mut self`: no reader can hold a reference into this table any more
            // (readers borrow the table for as long as they use a record).
            unsafe { u.free_now() }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use orrery_core::sync;

    /// The heap of the standalone test buckets (records live as long as the test).
    fn heap() -> &'static Arc<RecordHeap> {
        static HEAP: std::sync::OnceLock<Arc<RecordHeap>> = std::sync::OnceLock::new();
        HEAP.get_or_init(|| Arc::new(RecordHeap::new()))
    }

    fn rec(k: &[u8], v: &[u8]) -> OwnedRecord<'static> {
        OwnedRecord::new(heap(), k, v).unwrap()
    }

    /// Retires every record left in a standalone bucket (buckets own their records only
    /// through a `CacheTable`, whose `Drop` frees them).
    fn empty(b: &Bucket) {
        for i in 0..SLOTS {
            retire(b.take(i, heap()));
        }
    }

    fn retire(u: Option<Unlinked<'_>>) {
        if let Some(u) = u {
            u.retire(&sync::pin(), heap());
        }
    }

    #[test]
    fn short_and_long_key_comparison() {
        let keys: Vec<Vec<u8>> = (0..40usize)
            .flat_map(|n| [vec![7u8; n], (0..n as u8).collect()])
            .collect();
        for a in &keys {
            for b in &keys {
                assert_eq!(keys_equal(a, b), a == b, "{a:?} vs {b:?}");
            }
            for i in 0..a.len() {
                let mut c = a.clone();
                c[i] ^= 0x80;
                assert!(!keys_equal(a, &c));
            }
        }
    }

    #[test]
    fn probe_finds_by_tag_and_key() {
        let b = Bucket::default();
        let g = sync::pin();
        assert!(matches!(
            b.probe(7, b"a", &g),
            Probe::Miss { has_empty: true }
        ));
        retire(b.admit(7, rec(b"a", b"1"), heap(), 0));
        retire(b.admit(7, rec(b"b", b"2"), heap(), 0)); // same tag, other key
        match b.probe(7, b"b", &g) {
            Probe::Hit { record, .. } => assert_eq!(record.value(), b"2"),
            Probe::Miss { .. } => panic!("b is cached"),
        }
        assert!(matches!(b.probe(8, b"a", &g), Probe::Miss { .. }));
        assert!(matches!(b.probe(7, b"c", &g), Probe::Miss { .. }));
        assert_eq!(b.occupied(), 2);
        empty(&b);
        drop(g);
        crate::quiesce();
    }

    #[test]
    fn full_bucket_evicts_smallest_counter() {
        let b = Bucket::default();
        for i in 0..SLOTS as u8 {
            assert!(b.admit(u16::from(i), rec(&[i], &[i]), heap(), 3).is_none());
        }
        assert_eq!(b.occupied(), SLOTS);
        let g = sync::pin();
        // Heat every item but key 4.
        for i in 0..SLOTS as u8 {
            if i != 4 {
                let idx = b.find(u16::from(i), &[i], &g).unwrap();
                for _ in 0..3 {
                    b.touch(idx, || 0);
                }
            }
        }
        let evicted = b
            .admit(100, rec(b"new", b"v"), heap(), 5)
            .expect("bucket was full");
        assert_eq!(evicted.record().as_ref().key(), &[4]);
        retire(Some(evicted));
        assert!(b.find(100, b"new", &g).is_some());
        assert!(b.find(4, &[4], &g).is_none());
        assert_eq!(b.occupied(), SLOTS);
        empty(&b);
        drop(g);
        crate::quiesce();
    }

    #[test]
    fn saturated_counter_decrements_another() {
        let b = Bucket::default();
        retire(b.admit(1, rec(b"hot", b""), heap(), 0));
        retire(b.admit(2, rec(b"warm", b""), heap(), 0));
        let g = sync::pin();
        let hot = b.find(1, b"hot", &g).unwrap();
        let warm = b.find(2, b"warm", &g).unwrap();
        b.touch(warm, || 0); // warm: 2
        for _ in 0..300 {
            b.touch(hot, || 0);
        }
        assert_eq!(b.counter(hot), u8::MAX);
        // 254 increments saturate `hot`; the remaining 46 touches each decrement the only
        // other non-zero counter (`warm`, 2) until it reaches zero.
        assert_eq!(b.counter(warm), 0);
        // With every other counter at zero a saturated touch changes nothing.
        b.touch(hot, || 3);
        assert_eq!(b.counter(hot), u8::MAX);
        empty(&b);
        drop(g);
        crate::quiesce();
    }

    #[test]
    fn take_and_put_keep_the_slot() {
        let b = Bucket::default();
        retire(b.admit(9, rec(b"k", b"old"), heap(), 0));
        let g = sync::pin();
        let idx = b.find(9, b"k", &g).unwrap();
        b.touch(idx, || 0);
        let before = b.counter(idx);
        retire(b.take(idx, heap()));
        assert!(b.find(9, b"k", &g).is_none());
        assert!(b.take(idx, heap()).is_none());
        assert!(b.put(idx, 9, rec(b"k", b"new"), heap()).is_none());
        assert_eq!(b.counter(idx), before);
        match b.probe(9, b"k", &g) {
            Probe::Hit { record, .. } => assert_eq!(record.value(), b"new"),
            Probe::Miss { .. } => panic!("k was put back"),
        }
        b.reset_counter(idx);
        assert_eq!(b.counter(idx), 0);
        empty(&b);
        drop(g);
        crate::quiesce();
    }

    #[test]
    fn table_drain_and_drop_free_records() {
        let t = CacheTable::new(4).unwrap();
        let h = t.heap();
        assert_eq!(t.buckets(), 4);
        assert_eq!(t.table_bytes(), 256);
        let put = |i: u64, v: &[u8]| {
            let key = i.to_be_bytes();
            let b = t.bucket(t.bucket_index(i));
            let r = OwnedRecord::new(h, &key, v).unwrap();
            if let Some(u) = b.admit(i as u16, r, h, i as u32) {
                u.retire(&sync::pin(), h);
            }
        };
        for i in 0u64..20 {
            put(i, b"v");
        }
        assert_eq!(t.occupied(), 20);
        assert_eq!(h.payload_bytes(), 20 * 24);
        let mut n = 0;
        t.drain(|u| {
            n += 1;
            u.retire(&sync::pin(), h);
        });
        assert_eq!(n, 20);
        assert_eq!(t.occupied(), 0);
        put(1, b"left for drop");
        crate::quiesce();
    }
}
