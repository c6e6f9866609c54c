//! Leaf blocks: their layout, the pools they come from and the accounting of leaf kinds.

#[allow(unused_imports)]
use super::*;

pub(super) fn block_layout(cap: usize, inline: bool) -> Layout {
    let size = if inline {
        inline_off(cap) + cap * INLINE_MAX
    } else {
        size_of::<Leaf>() + cap * 8 + cap
    };
    Layout::from_size_align(size.next_multiple_of(64), 64).expect("leaf layout")
}

/// A pool of plain leaf blocks (no inline area) of capacity `cap` (2 MiB huge-page
/// chunks, see `orrery_core::alloc`).
pub(crate) fn leaf_pool(cap: usize) -> SlabPool {
    let lay = block_layout(cap, false);
    SlabPool::new(lay.size(), lay.align())
        .unwrap_or_else(|e| unreachable!("leaf blocks fit the slab pool: {e}"))
}

/// Where leaf blocks come from: a plain [`SlabPool`] (plain leaves only) or the index's
/// [`LeafPools`] (either kind, chosen per leaf).
pub(crate) trait LeafAlloc {
    /// A block for a new leaf of capacity `cap`, with an inline area if `inline` asks for
    /// one and the source has such blocks; returns whether it has one. Fails with
    /// [`Error::OutOfMemory`] when no block can be had.
    fn alloc_block(&self, cap: usize, inline: bool) -> Result<(NonNull<u8>, bool), Error>;
    /// Returns a block.
    ///
    /// # Safety
    /// `p` came from [`LeafAlloc::alloc_block`] of `self` with the inline-area answer
    /// `inline`, and is not used afterwards.
    unsafe fn free_block(&self, p: NonNull<u8>, inline: bool);
}

impl LeafAlloc for SlabPool {
    fn alloc_block(&self, cap: usize, _inline: bool) -> Result<(NonNull<u8>, bool), Error> {
        debug_assert_eq!(self.object_size(), block_layout(cap, false).size());
        Ok((self.try_alloc()?, false))
    }

    unsafe fn free_block(&self, p: NonNull<u8>, inline: bool) {
        debug_assert!(!inline);
        // SAFETY: allocated from this pool (caller's contract).
        unsafe { self.free(p) }
    }
}

impl<P: LeafAlloc> LeafAlloc for std::sync::Arc<P> {
    fn alloc_block(&self, cap: usize, inline: bool) -> Result<(NonNull<u8>, bool), Error> {
        (**self).alloc_block(cap, inline)
    }

    unsafe fn free_block(&self, p: NonNull<u8>, inline: bool) {
        // SAFETY: forwarded from the caller.
        unsafe { (**self).free_block(p, inline) }
    }
}

/// The leaf blocks of an index: plain and inline-area pools, and how many leaves of each
/// kind are live.
///
/// Each leaf's kind is chosen when it is allocated (see "Inline pairs"): the head has an
/// inline area, and a split gives its new right leaf one when at least half of the pairs
/// moving there fit inline. [`LeafPools::prefetch_cells`] tells lookups, which must
/// prefetch before they have read the leaf's header, whether most leaves have cells.
pub(crate) struct LeafPools {
    cap: usize,
    plain: SlabPool,
    inline: SlabPool,
    /// Leaves with an inline area, and without, allocated and not yet unlinked.
    live_inline: AtomicUsize,
    live_plain: AtomicUsize,
    /// `live_inline >= live_plain`, kept up to date by `alloc_block` and `unlinked`.
    cells: AtomicBool,
}

impl LeafPools {
    /// Pools for leaves of capacity `cap`.
    pub(crate) fn new(cap: usize) -> LeafPools {
        let lay = block_layout(cap, true);
        LeafPools {
            cap,
            plain: leaf_pool(cap),
            inline: SlabPool::new(lay.size(), lay.align())
                .unwrap_or_else(|e| unreachable!("leaf blocks fit the slab pool: {e}")),
            live_inline: AtomicUsize::new(0),
            live_plain: AtomicUsize::new(0),
            cells: AtomicBool::new(true),
        }
    }

    /// Whether at least half of the live leaves have an inline area: lookups then prefetch
    /// the inline cells of their home slot together with the tag line (for a plain leaf the
    /// prefetched line is not its own and goes unused).
    #[inline]
    pub(crate) fn prefetch_cells(&self) -> bool {
        self.cells.load(Ordering::Relaxed)
    }

    /// Leaves with an inline area and without, allocated and not unlinked: the leaves of
    /// the LeafList (tests and statistics).
    pub(crate) fn live(&self) -> (usize, usize) {
        (
            self.live_inline.load(Ordering::Relaxed),
            self.live_plain.load(Ordering::Relaxed),
        )
    }

    /// Counts a leaf of the kind `inline` out of the LeafList: a merge unlinked it (its
    /// block is freed after a grace period).
    pub(crate) fn unlinked(&self, inline: bool) {
        self.count(inline, -1);
    }

    /// Counts one more (`d = 1`) or one fewer (`d = -1`) leaf of a kind and refreshes the
    /// prefetch hint. Leaves are allocated and unlinked by structural writers (under the
    /// MetaTrieHT mutex), concurrently with lookups only: the hint is a relaxed flag that
    /// lookups read before they know the leaf, and at worst costs a useless (or a missing)
    /// prefetch.
    fn count(&self, inline: bool, d: isize) {
        let c = if inline {
            &self.live_inline
        } else {
            &self.live_plain
        };
        if d > 0 {
            c.fetch_add(1, Ordering::Relaxed);
        } else {
            c.fetch_sub(1, Ordering::Relaxed);
        }
        let (i, p) = self.live();
        let want = i >= p;
        if self.cells.load(Ordering::Relaxed) != want {
            self.cells.store(want, Ordering::Relaxed);
        }
    }

    /// A block for the leaf at `old` (of the kind `inline`) to move to, in a lower chunk
    /// of its pool, when its pool grants one (`SlabPool::try_alloc_lower`: `old`'s chunk
    /// is under a quarter in use, or over an eighth of the pool is free slots); counted as
    /// a live leaf like [`LeafAlloc::alloc_block`].
    pub(crate) fn alloc_lower(&self, old: NonNull<u8>, inline: bool) -> Option<NonNull<u8>> {
        let pool = if inline { &self.inline } else { &self.plain };
        let p = pool.try_alloc_lower(old)?;
        self.count(inline, 1);
        Some(p)
    }

    /// Returns a block from [`LeafPools::alloc_lower`] unused.
    ///
    /// # Safety
    /// `p` came from `alloc_lower` with the kind `inline` and was not used.
    pub(crate) unsafe fn free_lower(&self, p: NonNull<u8>, inline: bool) {
        self.count(inline, -1);
        // SAFETY: forwarded from the caller.
        unsafe { self.free_block(p, inline) };
    }

    /// Attaches both pools to the index's chunk populator (see `Config::prefault`).
    pub(crate) fn attach(&self, populator: &orrery_core::alloc::Populator) {
        self.plain.attach(populator);
        self.inline.attach(populator);
    }

    /// Bytes of huge-page chunks taken from the OS.
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.plain.reserved_bytes() + self.inline.reserved_bytes()
    }
}

impl LeafAlloc for LeafPools {
    fn alloc_block(&self, cap: usize, inline: bool) -> Result<(NonNull<u8>, bool), Error> {
        debug_assert_eq!(cap, self.cap);
        let block = if inline {
            self.inline.try_alloc()?
        } else {
            self.plain.try_alloc()?
        };
        self.count(inline, 1);
        Ok((block, inline))
    }

    unsafe fn free_block(&self, p: NonNull<u8>, inline: bool) {
        let pool = if inline { &self.inline } else { &self.plain };
        // SAFETY: allocated from the pool of its kind (caller's contract).
        unsafe { pool.free(p) }
    }
}

impl std::fmt::Debug for LeafPools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeafPools")
            .field("cap", &self.cap)
            .field("live", &self.live())
            .finish()
    }
}
