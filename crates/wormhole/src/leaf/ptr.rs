//! `LeafPtr`: a pointer to a leaf block, with the prefetches and lock entry points.

#[allow(unused_imports)]
use super::*;

/// A raw pointer to a leaf block. Liveness is the caller's business (the epoch guard of
/// the operation, or ownership by the index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeafPtr(NonNull<Leaf>);

// SAFETY: a `LeafPtr` is an address; all access through it is synchronized by the leaf
// locks and the epoch scheme as described in the module docs.
unsafe impl Send for LeafPtr {}
// SAFETY: as above.
unsafe impl Sync for LeafPtr {}

impl LeafPtr {
    /// Allocates from `pool` (made for `cap`) an empty leaf with the given anchor and
    /// version, with an inline area if the pool has such blocks. Fails with
    /// [`Error::OutOfMemory`] (allocating nothing) when no block can be had.
    pub(crate) fn alloc(
        pool: &impl LeafAlloc,
        cap: usize,
        anchor: Box<[u8]>,
        version: u64,
    ) -> Result<LeafPtr, Error> {
        LeafPtr::alloc_kind(pool, cap, anchor, version, true)
    }

    /// As [`LeafPtr::alloc`], with an inline area only if `inline` (and the pool has such
    /// blocks). A block with an inline area takes inline pairs.
    pub(crate) fn alloc_kind(
        pool: &impl LeafAlloc,
        cap: usize,
        anchor: Box<[u8]>,
        version: u64,
        inline: bool,
    ) -> Result<LeafPtr, Error> {
        assert!((MIN_CAP..=MAX_CAP).contains(&cap));
        // The block first: on failure nothing has been taken apart yet.
        let (p, inline) = pool.alloc_block(cap, inline)?;
        // SAFETY: a fresh block of this kind and capacity, ours.
        Ok(unsafe { LeafPtr::init_in(p, cap, anchor, version, inline) })
    }

    /// Writes an empty leaf with the given anchor and version into the block `p`.
    ///
    /// # Safety
    /// `p` is a block for leaves of capacity `cap` with an inline area iff `inline`, from
    /// the index's pools (e.g. [`LeafPools::alloc_lower`]), used by nobody else.
    pub(crate) unsafe fn init_in(
        p: NonNull<u8>,
        cap: usize,
        anchor: Box<[u8]>,
        version: u64,
        inline: bool,
    ) -> LeafPtr {
        let anchor_len = u32::try_from(anchor.len()).expect("anchors are at most a key long");
        let mut anchor_inline = [0u8; ANCHOR_INLINE];
        let anchor_heap = if anchor.len() <= ANCHOR_INLINE {
            anchor_inline[..anchor.len()].copy_from_slice(&anchor);
            std::ptr::null_mut()
        } else {
            Box::into_raw(anchor).cast::<u8>()
        };
        let p = p.cast::<Leaf>();
        let kind = if inline {
            KIND_INLINE_AREA | KIND_INLINE_ON
        } else {
            0
        };
        let hdr = Leaf {
            lock: RwSpinLock::new(()),
            version: AtomicU64::new(version),
            prev: AtomicPtr::new(std::ptr::null_mut()),
            next: AtomicPtr::new(std::ptr::null_mut()),
            nr: AtomicU16::new(0),
            nr_sorted: AtomicU16::new(0),
            sorting: AtomicBool::new(false),
            kind: AtomicU8::new(kind),
            cap: cap as u16,
            anchor_len,
            anchor_inline,
            anchor_heap,
        };
        // SAFETY: the block is large enough and aligned for the header.
        unsafe { p.as_ptr().write(hdr) };
        let lp = LeafPtr(p);
        // Arrays start initialized: all tag slots are holes (tag 0xFFFF: no real entry to
        // their right), the order array is zeroed.
        let tags = lp.base().wrapping_add(size_of::<Leaf>()).cast::<u64>();
        // SAFETY: the tag array lies inside the block right after the header, 8-aligned.
        unsafe { std::slice::from_raw_parts_mut(tags, cap) }.fill(HOLE_END);
        // SAFETY: the order array follows the tag array inside the block.
        unsafe { tags.cast::<u8>().wrapping_add(cap * 8).write_bytes(0, cap) };
        lp
    }

    /// Frees the block (not the pairs it references) to `pool`.
    ///
    /// # Safety
    /// The leaf came from `pool`; no other thread can reach it any more, and it is not used
    /// afterwards.
    pub(crate) unsafe fn free(self, pool: &impl LeafAlloc) {
        // SAFETY: the header was initialized by `alloc` and the leaf is ours (contract).
        let h = unsafe { self.hdr() };
        if !h.anchor_heap.is_null() {
            let raw = std::ptr::slice_from_raw_parts_mut(h.anchor_heap, h.anchor_len as usize);
            // SAFETY: `anchor_heap` came from `Box::into_raw` of a boxed slice of this
            // length in `alloc`, and is freed only here, once.
            drop(unsafe { Box::from_raw(raw) });
        }
        let inline = h.kind.load(Ordering::Relaxed) & KIND_INLINE_AREA != 0;
        // SAFETY: allocated from `pool` with this kind, unused from now on (contract).
        unsafe { pool.free_block(self.0.cast(), inline) };
    }

    /// From a non-null raw pointer.
    #[inline]
    pub(crate) fn from_raw(p: *mut Leaf) -> Option<LeafPtr> {
        NonNull::new(p).map(LeafPtr)
    }

    /// The block's address (for the pools).
    #[inline]
    pub(crate) fn block(self) -> NonNull<u8> {
        self.0.cast()
    }

    /// The raw pointer.
    #[inline]
    pub(crate) fn as_raw(self) -> *mut Leaf {
        self.0.as_ptr()
    }

    #[inline]
    pub(super) fn base(self) -> *mut u8 {
        self.0.as_ptr().cast()
    }

    /// The header.
    ///
    /// # Safety
    /// The leaf is live for `'a`.
    #[inline]
    pub(crate) unsafe fn hdr<'a>(self) -> &'a Leaf {
        // SAFETY: live per the contract.
        unsafe { self.0.as_ref() }
    }

    /// Prefetches the header line.
    #[inline]
    pub(crate) fn prefetch(self) {
        orrery_core::prefetch(self.base());
    }

    /// Prefetches the tag line a lookup of `tag` reads first (its home slot) and, with
    /// `inline` (the index's leaves have inline areas), the inline cells of the home slot
    /// and the next two. They depend only on the tag and the capacity, so they are fetched
    /// together with the header.
    #[inline]
    pub(crate) fn prefetch_tags(self, tag: u16, cap: usize, inline: bool) {
        let i = home(tag, cap);
        orrery_core::prefetch(
            self.base()
                .wrapping_add(size_of::<Leaf>() + i * 8)
                .cast_const(),
        );
        if inline {
            let c = self.base().wrapping_add(inline_off(cap) + i * INLINE_MAX);
            orrery_core::prefetch(c.cast_const());
            orrery_core::prefetch(c.wrapping_add(2 * INLINE_MAX).cast_const());
        }
    }

    /// Prefetches, for an insert of `tag`, the tag lines on both sides of the home line and
    /// (with `inline`) the inline-cell lines on both sides of those [`Self::prefetch_tags`]
    /// fetches: when the home run has no hole, the insert walks to the nearest hole and
    /// shifts the entries (and cells) in between, usually within these lines, which would
    /// otherwise be read one cold miss after the other (measured: module docs, "Inserts").
    #[inline]
    pub(crate) fn prefetch_around(self, tag: u16, cap: usize, inline: bool) {
        let i = home(tag, cap);
        let tags = self.base().wrapping_add(size_of::<Leaf>());
        if i >= 8 {
            orrery_core::prefetch(tags.wrapping_add((i - 8) * 8).cast_const());
        }
        if i + 8 < cap {
            orrery_core::prefetch(tags.wrapping_add((i + 8) * 8).cast_const());
        }
        if inline {
            let c = self.base().wrapping_add(inline_off(cap));
            if i >= 4 {
                orrery_core::prefetch(c.wrapping_add((i - 4) * INLINE_MAX).cast_const());
            }
            if i + 6 < cap {
                orrery_core::prefetch(c.wrapping_add((i + 6) * INLINE_MAX).cast_const());
            }
        }
    }

    /// Prefetches the order array (read and written by inserts and removals).
    #[inline]
    pub(crate) fn prefetch_order(self, cap: usize) {
        let o = self.base().wrapping_add(size_of::<Leaf>() + cap * 8);
        orrery_core::prefetch(o.cast_const());
        orrery_core::prefetch(o.wrapping_add(cap - 1).cast_const());
    }

    /// Prefetches what a scan of the leaf reads: the header line, the whole tag array and
    /// the order array. A scan reads the tag array in key order, which is random against
    /// its hash order: issued together these lines (adjacent, in one page) overlap instead
    /// of missing one after the other.
    #[inline]
    pub(crate) fn prefetch_for_scan(self, cap: usize) {
        let b = self.base().cast_const();
        orrery_core::prefetch(b);
        for off in (size_of::<Leaf>()..size_of::<Leaf>() + cap * 9).step_by(64) {
            orrery_core::prefetch(b.wrapping_add(off));
        }
    }

    /// Takes the shared lock.
    ///
    /// # Safety
    /// The leaf is live for `'a`.
    #[inline]
    pub(crate) unsafe fn read<'a>(self) -> ReadLeaf<'a> {
        // SAFETY: live per the contract.
        let g = unsafe { self.hdr() }.lock.read();
        ReadLeaf { ptr: self, _g: g }
    }

    /// Takes the exclusive lock.
    ///
    /// # Safety
    /// The leaf is live for `'a`.
    #[inline]
    pub(crate) unsafe fn write<'a>(self) -> WriteLeaf<'a> {
        // SAFETY: live per the contract.
        let g = unsafe { self.hdr() }.lock.write();
        WriteLeaf { ptr: self, _g: g }
    }

    /// Number of keys, read without the lock (a hint: exact only under the lock).
    #[inline]
    pub(crate) fn nr_hint(self) -> usize {
        // SAFETY: callers only pass live leaves (epoch-protected).
        unsafe { self.hdr() }.nr.load(Ordering::Relaxed) as usize
    }
}
