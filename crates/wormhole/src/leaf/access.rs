//! Reading a locked leaf: `LeafAccess` over `ReadLeaf` (shared lock) and `WriteLeaf` (exclusive lock).

#[allow(unused_imports)]
use super::*;

/// Read access to a locked leaf (shared or exclusive).
pub(crate) trait LeafAccess {
    /// The leaf. Implementors hold at least its shared lock while they exist.
    fn ptr(&self) -> LeafPtr;

    /// The header.
    #[inline]
    fn hdr(&self) -> &Leaf {
        // SAFETY: the lock is held, so the leaf is live (it is freed only after being
        // unlinked and a grace period, and never while locked).
        unsafe { self.ptr().hdr() }
    }

    /// Number of keys.
    #[inline]
    fn len(&self) -> usize {
        self.hdr().nr.load(Ordering::Relaxed) as usize
    }

    /// The tag array (all `C` slots, holes included).
    #[inline]
    fn tags(&self) -> &[u64] {
        let n = self.hdr().cap();
        let p = self
            .ptr()
            .base()
            .wrapping_add(size_of::<Leaf>())
            .cast::<u64>();
        // SAFETY: the tag array is inside the live block, initialized, and not written
        // while any lock is shared (writers hold the exclusive lock).
        unsafe { std::slice::from_raw_parts(p, n) }
    }

    /// Key and value of the real slot `i`.
    #[inline]
    fn pair(&self, i: usize) -> (&[u8], &[u8]) {
        let e = self.tags()[i];
        if is_inline(e) {
            let (k, v) = inline_lens(e);
            let c = inline_cell(self.ptr(), i);
            // SAFETY: an inline entry's cell holds its `k + v ≤ INLINE_MAX` bytes inside
            // the live block, written only under the exclusive lock (we hold a lock).
            let b = unsafe { std::slice::from_raw_parts(c, k + v) };
            (&b[..k], &b[k..])
        } else {
            let kv = ekv(e);
            // SAFETY: the block is live under the leaf lock.
            let k = unsafe { kv.key() };
            // SAFETY: as above.
            (k, unsafe { kv.value() })
        }
    }

    /// The key of the real slot `i`.
    #[inline]
    fn key(&self, i: usize) -> &[u8] {
        // SAFETY: we hold a lock for the borrow; the entry is slot `i`'s.
        unsafe { key_of(self.ptr(), self.tags()[i], i) }
    }

    /// The value of the real slot `i`.
    #[inline]
    fn value(&self, i: usize) -> &[u8] {
        self.pair(i).1
    }

    /// Finds `key` (with leaf tag `tag`) in the tag array: `Ok(tag index)` or
    /// `Err(insertion index)` (§3.2, Algorithm 3 `pointSearchLeaf`).
    #[inline]
    fn find_by_tag(&self, key: &[u8], tag: u16, direct: bool) -> Result<usize, usize> {
        let tags = self.tags();
        let n = tags.len();
        let mut i = if direct {
            // Direct speculative positioning, then walk to the first slot >= tag.
            let mut i = home(tag, n);
            while i > 0 && etag(tags[i - 1]) >= tag {
                i -= 1;
            }
            while i < n && etag(tags[i]) < tag {
                i += 1;
            }
            i
        } else {
            tags.partition_point(|&e| etag(e) < tag)
        };
        while i < n && etag(tags[i]) == tag {
            // SAFETY: we hold a lock; the entry is slot `i`'s (holes are skipped).
            if !is_hole(tags[i]) && unsafe { key_of(self.ptr(), tags[i], i) } == key {
                return Ok(i);
            }
            i += 1;
        }
        Err(i)
    }

    /// Whether the order array is fully sorted (acquire: the sorted order is visible).
    #[inline]
    fn is_sorted(&self) -> bool {
        self.hdr().nr_sorted.load(Ordering::Acquire) as usize == self.len()
    }

    /// The order array `[0, nr)`. Only meaningful in key order when [`Self::is_sorted`].
    #[inline]
    fn order(&self) -> &[u8] {
        let n = self.len();
        let cap = self.hdr().cap();
        let p = self.ptr().base().wrapping_add(size_of::<Leaf>() + cap * 8);
        // SAFETY: inside the live block; written only under the exclusive lock or by the
        // sort-bit holder while `nr_sorted < nr`, and callers reading it in key order
        // first observed `nr_sorted == nr` (see module docs).
        unsafe { std::slice::from_raw_parts(p, n) }
    }

    /// Prefetches the pair block of the `j`-th smallest pair (its first two lines: header,
    /// key and the start of the value), unless the pair is inline (then it is in the leaf's
    /// cells, near the lines a scan reads anyway). Requires a sorted leaf and `j < len`.
    ///
    /// A scan knows every block address of a leaf from its tag array without dereferencing
    /// anything, so it can keep several block reads in flight instead of waiting for each.
    #[inline]
    fn prefetch_sorted_pair(&self, j: usize) {
        let i = self.order()[j] as usize;
        let e = self.tags()[i];
        if !is_inline(e) {
            let p = (e & ADDR_MASK) as usize as *const u8;
            orrery_core::prefetch(p);
            orrery_core::prefetch(p.wrapping_add(64));
        }
    }

    /// Key and value of the `j`-th smallest pair. Requires a sorted leaf.
    #[inline]
    fn sorted_pair(&self, j: usize) -> (&[u8], &[u8]) {
        debug_assert!(self.is_sorted());
        self.pair(self.order()[j] as usize)
    }

    /// Index in key order of the first key `>= key` (`> key` when `!inclusive`). Requires a
    /// sorted leaf.
    fn lower_bound(&self, key: &[u8], inclusive: bool) -> usize {
        let order = self.order();
        order.partition_point(|&i| {
            let k = self.key(i as usize);
            if inclusive { k < key } else { k <= key }
        })
    }

    /// Binary search of `key` in key order (requires a sorted leaf): `Ok(order index)` or
    /// `Err(insertion index)`. Used when `SortByTag` is off.
    fn find_sorted(&self, key: &[u8]) -> Result<usize, usize> {
        let order = self.order();
        order.binary_search_by(|&i| self.key(i as usize).cmp(key))
    }
}

/// The inline cell of slot `i` (inside the block only for leaves with an inline area).
#[inline]
pub(super) fn inline_cell(p: LeafPtr, i: usize) -> *mut u8 {
    // SAFETY: live (callers hold a lock).
    let cap = unsafe { p.hdr() }.cap();
    p.base().wrapping_add(inline_off(cap) + i * INLINE_MAX)
}

/// The key of the real entry `e` at slot `i` of the locked leaf `p`, valid while the lock
/// is held.
///
/// # Safety
/// The caller holds a lock of `p` for `'a`, and `e` is the entry of slot `i`.
#[inline]
pub(super) unsafe fn key_of<'a>(p: LeafPtr, e: u64, i: usize) -> &'a [u8] {
    if is_inline(e) {
        let (k, _) = inline_lens(e);
        // SAFETY: an inline entry's cell holds its key inside the live block (the caller
        // holds a lock; cells are written only under the exclusive lock).
        unsafe { std::slice::from_raw_parts(inline_cell(p, i), k) }
    } else {
        // SAFETY: the block is live under the leaf lock.
        unsafe { ekv(e).key() }
    }
}

/// A leaf under its shared lock.
pub(crate) struct ReadLeaf<'a> {
    pub(super) ptr: LeafPtr,
    pub(super) _g: RwSpinReadGuard<'a, ()>,
}

impl LeafAccess for ReadLeaf<'_> {
    #[inline]
    fn ptr(&self) -> LeafPtr {
        self.ptr
    }
}

impl ReadLeaf<'_> {
    /// Makes the order array sorted while holding only the shared lock (lazy sort by a
    /// scan, protected by the sort bit; see module docs).
    pub(crate) fn ensure_sorted(&self) {
        if self.is_sorted() {
            return;
        }
        let h = self.hdr();
        let backoff = Backoff::new();
        while h
            .sorting
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            backoff.snooze();
        }
        if !self.is_sorted() {
            // SAFETY: we hold the sort bit and `nr_sorted < nr`, so no other thread reads
            // or writes the order array (module docs); `nr` cannot change under the
            // shared lock.
            unsafe { sort_order(self.ptr) };
        }
        h.sorting.store(false, Ordering::Release);
    }
}

/// A leaf under its exclusive lock.
pub(crate) struct WriteLeaf<'a> {
    pub(super) ptr: LeafPtr,
    pub(super) _g: RwSpinWriteGuard<'a, ()>,
}

impl LeafAccess for WriteLeaf<'_> {
    #[inline]
    fn ptr(&self) -> LeafPtr {
        self.ptr
    }
}
