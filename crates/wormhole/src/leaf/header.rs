//! The leaf header (`Leaf`, line 0 of a leaf block) and its accessors.

#[allow(unused_imports)]
use super::*;

/// Leaf header (cache line 0). The tag and order arrays follow in the same block.
///
/// ```text
/// 0   lock       RwSpinLock word
/// 8   version    expected MetaTrieHT version
/// 16  prev, next neighbours
/// 32  nr, nr_sorted (u16), sorting (u8), cap (u16)
/// 40  anchor_len (u32)
/// 44  anchor_inline [u8; 12]: the anchor when it has at most 12 bytes
/// 56  anchor_heap   the whole anchor (a leaked `Box<[u8]>`) when longer, else null
/// ```
///
/// The anchor sits in the line a lookup reads anyway (the lock word), because a MetaTrieHT
/// *leaf entry* (see `meta`) references the leaf directly and MetaTrieHT items do not store
/// prefix bytes past the seventh: a search's final full comparison is made against its
/// target leaf's anchor.
#[repr(C, align(64))]
pub(crate) struct Leaf {
    pub(super) lock: RwSpinLock<()>,
    /// Expected MetaTrieHT version; `u64::MAX` once the leaf was merged away.
    pub(crate) version: AtomicU64,
    /// Left neighbour (null for the first leaf).
    pub(crate) prev: AtomicPtr<Leaf>,
    /// Right neighbour (null for the last leaf).
    pub(crate) next: AtomicPtr<Leaf>,
    pub(super) nr: AtomicU16,
    pub(super) nr_sorted: AtomicU16,
    pub(super) sorting: AtomicBool,
    /// [`KIND_INLINE_AREA`] | [`KIND_INLINE_ON`].
    pub(super) kind: AtomicU8,
    pub(super) cap: u16,
    pub(super) anchor_len: u32,
    pub(super) anchor_inline: [u8; ANCHOR_INLINE],
    pub(super) anchor_heap: *mut u8,
}

const _: () = assert!(size_of::<Leaf>() == 64);
const _: () = assert!(std::mem::offset_of!(Leaf, kind) == 37);
const _: () = assert!(std::mem::offset_of!(Leaf, anchor_heap) == 56);

/// Version value of a leaf removed by a merge: every lookup that reaches it restarts.
pub(crate) const DEAD: u64 = u64::MAX;

/// Leaf kind bit: the block has an inline area (`INLINE_MAX` bytes per slot).
pub(super) const KIND_INLINE_AREA: u8 = 1;
/// Leaf kind bit: small pairs may be stored inline (only with an inline area).
pub(super) const KIND_INLINE_ON: u8 = 2;

impl Leaf {
    /// The anchor (immutable for the leaf's life).
    #[inline]
    pub(crate) fn anchor(&self) -> &[u8] {
        let n = self.anchor_len as usize;
        if self.anchor_heap.is_null() {
            &self.anchor_inline[..n]
        } else {
            // SAFETY: a non-null `anchor_heap` holds the `n` anchor bytes from `alloc`,
            // never written and freed only with the leaf.
            unsafe { std::slice::from_raw_parts(self.anchor_heap, n) }
        }
    }

    /// Whether the anchor equals `p` (the final comparison of a search that ended on a
    /// leaf entry; the length and, for short anchors, the bytes are in the header line).
    #[inline]
    pub(crate) fn anchor_is(&self, p: &[u8]) -> bool {
        self.anchor_len as usize == p.len() && self.anchor() == p
    }

    /// Whether the anchor equals `p`, followed by `b` when set (the check of a leaf entry,
    /// `search::Check`).
    #[inline]
    pub(crate) fn anchor_is_ext(&self, p: &[u8], b: Option<u8>) -> bool {
        let n = p.len() + usize::from(b.is_some());
        if self.anchor_len as usize != n {
            return false;
        }
        let a = self.anchor();
        a[..p.len()] == *p && b.is_none_or(|b| a[p.len()] == b)
    }

    /// Whether the anchor starts with `p`, followed by `b` when set (the check of an item
    /// that a search matched by tag, `search::Check`).
    #[inline]
    pub(crate) fn anchor_starts_with(&self, p: &[u8], b: Option<u8>) -> bool {
        let n = p.len() + usize::from(b.is_some());
        if (self.anchor_len as usize) < n {
            return false;
        }
        let a = self.anchor();
        a[..p.len()] == *p && b.is_none_or(|b| a[p.len()] == b)
    }

    /// Prefetches the anchor bytes that a check of `len` bytes (`search::Check`) would read
    /// outside the header line: the heap block of an anchor longer than 12 bytes (the
    /// lines of its first `len` bytes, at most two), when the anchor is long enough. A
    /// lookup issues it before it searches the leaf, so that the anchor and the pair block
    /// are fetched in parallel (`search`, deferred check).
    #[inline]
    pub(crate) fn prefetch_anchor(&self, len: usize) {
        if self.anchor_len as usize >= len && !self.anchor_heap.is_null() {
            let p = self.anchor_heap.cast_const();
            orrery_core::prefetch(p);
            if len > 64 {
                orrery_core::prefetch(p.wrapping_add(64));
            }
        }
    }

    /// The leaf's capacity.
    #[inline]
    pub(crate) fn cap(&self) -> usize {
        self.cap as usize
    }

    /// Whether new small pairs go to the inline area.
    #[inline]
    pub(crate) fn inline_on(&self) -> bool {
        self.kind.load(Ordering::Relaxed) & KIND_INLINE_ON != 0
    }

    /// Whether the block has an inline area (its pool: see `LeafPools`).
    #[inline]
    pub(crate) fn inline_area(&self) -> bool {
        self.kind.load(Ordering::Relaxed) & KIND_INLINE_AREA != 0
    }

    /// The right neighbour.
    #[inline]
    pub(crate) fn next(&self) -> Option<LeafPtr> {
        LeafPtr::from_raw(self.next.load(Ordering::Acquire))
    }

    /// The left neighbour.
    #[inline]
    pub(crate) fn prev(&self) -> Option<LeafPtr> {
        LeafPtr::from_raw(self.prev.load(Ordering::Acquire))
    }
}
