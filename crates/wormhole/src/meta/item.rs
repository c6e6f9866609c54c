//! MetaTrieHT items (one 64-byte line each: prefix bytes, leftmost/rightmost leaf, child bitmap) and the references slots hold.

#[allow(unused_imports)]
use super::*;

pub(super) const ADDR_MASK: u64 = (1 << 48) - 1;
pub(super) const OVF_MASK: u64 = 0x3F;
pub(super) const ITEM_ADDR_MASK: u64 = ADDR_MASK & !OVF_MASK;
/// Bit 47 of the address field marks a *leaf entry* (user-space addresses are below 2^47).
pub(super) const LEAF_BIT: u64 = 1 << 47;

/// An item (one line; see the module docs).
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(crate) struct Item {
    pub(super) hash: u32,
    pub(super) len: u32,
    pub(super) leftmost: *mut crate::leaf::Leaf,
    pub(super) rightmost: *mut crate::leaf::Leaf,
    pub(super) bitmap: [u64; 4],
    pub(super) anchor: u8,
    pub(super) key: [u8; INLINE],
}

/// Prefix bytes kept in an item: prefixes up to this long are compared in the item.
pub(crate) const INLINE: usize = 7;
/// Bytes of an item block.
pub(super) const ITEM_SIZE: usize = 64;
const _: () = assert!(size_of::<Item>() == ITEM_SIZE);

// SAFETY: an all-zero item is a valid value: integers, null leaf pointers, an empty bitmap.
unsafe impl Zeroable for Item {}

/// The bytes of a merged-away leaf's anchor, for the replay of its removal on the shadow
/// table (see the module docs): items whose leftmost leaf is `leaf` are compared with
/// `anchor`, never through the (possibly freed) leaf.
#[derive(Clone, Copy)]
pub(super) struct Victim<'a> {
    pub(super) leaf: *mut crate::leaf::Leaf,
    pub(super) anchor: &'a [u8],
}

/// A pointer to an item owned by one table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ItemPtr(pub(super) NonNull<Item>);

impl Item {
    /// A new item for `key` (CRC32C `hash`), leaf references unset.
    pub(super) fn new(key: &[u8], hash: u32) -> Item {
        let mut it = Item {
            hash,
            len: key.len() as u32,
            leftmost: std::ptr::null_mut(),
            rightmost: std::ptr::null_mut(),
            bitmap: [0; 4],
            anchor: 0,
            key: [0; INLINE],
        };
        let n = key.len().min(INLINE);
        it.key[..n].copy_from_slice(&key[..n]);
        it
    }
}

impl ItemPtr {
    #[inline]
    pub(super) fn addr(self) -> u64 {
        self.0.as_ptr().expose_provenance() as u64
    }

    #[inline]
    pub(super) fn from_entry(e: u64) -> ItemPtr {
        let p = std::ptr::with_exposed_provenance_mut::<Item>((e & ITEM_ADDR_MASK) as usize);
        // SAFETY: non-empty entries hold the exposed address of a live item of the table.
        ItemPtr(unsafe { NonNull::new_unchecked(p) })
    }

    /// The item. Items live as long as the table that owns them.
    #[inline]
    pub(crate) fn get<'a>(self) -> &'a Item {
        // SAFETY: items are live while their table is reachable, and tables are only read
        // by threads that keep them alive (epoch guard or writer mutex, see `smo`); a
        // table being read is never written.
        unsafe { self.0.as_ref() }
    }

    #[inline]
    pub(super) fn get_mut<'a>(self) -> &'a mut Item {
        // SAFETY: called only by the writer on the unpublished table it owns exclusively.
        unsafe { &mut *self.0.as_ptr() }
    }

    /// Prefetches the item's line.
    #[inline]
    pub(crate) fn prefetch(self) {
        orrery_core::prefetch(self.0.as_ptr().cast::<u8>());
    }
}

/// What a slot entry references: an item, or (a *leaf entry*) the leaf whose anchor is
/// the entry's prefix, when that anchor has no byte children (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ref {
    /// An item of the table.
    Item(ItemPtr),
    /// The leaf of a childless anchor.
    Leaf(LeafPtr),
}

impl Ref {
    #[inline]
    pub(super) fn from_entry(e: u64) -> Ref {
        if e & LEAF_BIT != 0 {
            let p = std::ptr::with_exposed_provenance_mut::<crate::leaf::Leaf>(
                (e & ITEM_ADDR_MASK & !LEAF_BIT) as usize,
            );
            Ref::Leaf(LeafPtr::from_raw(p).expect("leaf entries hold a leaf address"))
        } else {
            Ref::Item(ItemPtr::from_entry(e))
        }
    }

    /// The entry's address field (without the overflow count).
    #[inline]
    pub(super) fn bits(self) -> u64 {
        match self {
            Ref::Item(it) => it.addr(),
            Ref::Leaf(l) => leaf_bits(l),
        }
    }

    /// The full comparison of the entry's prefix with `p` (§3.1's final check; reads a
    /// leaf's anchor for a leaf entry and for an item longer than [`INLINE`] bytes).
    ///
    /// # Safety
    /// The leaves the table names are live (the reader's epoch guard: leaves are freed
    /// through the epoch scheme after leaving the published table; for the writer every
    /// leaf the caught-up shadow names is linked, see `smo`), except `victim`'s, which is
    /// only compared by address.
    #[inline]
    pub(super) unsafe fn key_is(self, p: &[u8], victim: Option<Victim<'_>>) -> bool {
        match self {
            // SAFETY: per the contract.
            Ref::Item(it) => unsafe { it.get().key_is(p, victim) },
            Ref::Leaf(l) if victim.is_some_and(|v| v.leaf == l.as_raw()) => false,
            // SAFETY: per the contract; anchors are immutable.
            Ref::Leaf(l) => unsafe { l.hdr() }.anchor_is(p),
        }
    }

    /// Prefetches the line the search reads next: the item, or the leaf's header (the
    /// anchor, and the lock word the lookup takes next).
    #[inline]
    pub(crate) fn prefetch(self) {
        match self {
            Ref::Item(it) => it.prefetch(),
            Ref::Leaf(l) => l.prefetch(),
        }
    }
}

/// The address field of a leaf entry for `l`.
#[inline]
pub(super) fn leaf_bits(l: LeafPtr) -> u64 {
    let a = l.as_raw().expose_provenance() as u64;
    assert!(
        a & !(ITEM_ADDR_MASK & !LEAF_BIT) == 0,
        "leaf address beyond 47 bits or not 64-byte aligned"
    );
    a | LEAF_BIT
}

impl Item {
    /// CRC32C of the prefix.
    #[inline]
    pub(crate) fn hash(&self) -> u32 {
        self.hash
    }

    /// Prefix length.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the inline bytes agree with `key[..len]` followed by `ext` (the byte of a
    /// child probe), for an item of `len` (+1) bytes: with the length, an exact comparison
    /// for prefixes of at most [`INLINE`] bytes.
    #[inline]
    pub(crate) fn inline_is(&self, key: &[u8], ext: Option<u8>) -> bool {
        let n = self.len as usize;
        match ext {
            None => {
                let m = n.min(INLINE);
                self.key[..m] == key[..m]
            }
            Some(b) => {
                let p = n - 1;
                if p < INLINE {
                    self.key[..p] == key[..p] && self.key[p] == b
                } else {
                    self.key == key[..INLINE]
                }
            }
        }
    }

    /// The anchor of the leftmost leaf, whose first `len` bytes are the prefix.
    ///
    /// # Safety
    /// The leftmost leaf is live, or is `victim`'s (see [`Ref::key_is`]).
    #[inline]
    pub(super) unsafe fn full<'a>(&self, victim: Option<Victim<'a>>) -> &'a [u8] {
        if let Some(v) = victim
            && v.leaf == self.leftmost
        {
            return v.anchor;
        }
        // SAFETY: live per the contract; anchors are immutable.
        unsafe { self.leftmost().hdr() }.anchor()
    }

    /// The full comparison of the prefix with `p`.
    ///
    /// # Safety
    /// As for [`Item::full`].
    #[inline]
    pub(super) unsafe fn key_is(&self, p: &[u8], victim: Option<Victim<'_>>) -> bool {
        if self.len as usize != p.len() || !self.inline_is(p, None) {
            return false;
        }
        // SAFETY: per the contract.
        p.len() <= INLINE || unsafe { self.full(victim) }.starts_with(p)
    }

    /// Whether the prefix is `key[..plen]·b`, given that `key[..plen]` is a prefix in
    /// the table (its child probe).
    ///
    /// # Safety
    /// As for [`Item::full`].
    #[inline]
    pub(super) unsafe fn is_child(&self, key: &[u8], plen: usize, b: u8) -> bool {
        if self.len as usize != plen + 1 || !self.inline_is(key, Some(b)) {
            return false;
        }
        plen < INLINE || {
            // SAFETY: per the contract.
            let a = unsafe { self.full(None) };
            a.len() > plen && a[..plen] == key[..plen] && a[plen] == b
        }
    }

    /// The prefix bytes (checks; reads the leftmost leaf's anchor).
    ///
    /// # Safety
    /// As for [`Item::full`].
    pub(super) unsafe fn prefix<'a>(&self) -> &'a [u8] {
        // SAFETY: per the contract.
        let a = unsafe { self.full(None) };
        &a[..self.len as usize]
    }

    /// Whether the prefix is an anchor (has the `⊥` child).
    #[inline]
    pub(crate) fn is_anchor(&self) -> bool {
        self.anchor != 0
    }

    /// Leftmost leaf below the item.
    #[inline]
    pub(crate) fn leftmost(&self) -> LeafPtr {
        LeafPtr::from_raw(self.leftmost).expect("items always have leaves below")
    }

    /// Rightmost leaf below the item.
    #[inline]
    pub(crate) fn rightmost(&self) -> LeafPtr {
        LeafPtr::from_raw(self.rightmost).expect("items always have leaves below")
    }

    #[cfg(test)]
    pub(super) fn has_child(&self, b: u8) -> bool {
        self.bitmap[(b >> 6) as usize] & (1 << (b & 63)) != 0
    }

    #[inline]
    pub(super) fn has_children(&self) -> bool {
        self.bitmap.iter().any(|&w| w != 0)
    }

    /// The largest byte child `< c`, if any.
    #[inline]
    pub(crate) fn child_below(&self, c: u8) -> Option<u8> {
        let mut w = (c >> 6) as usize;
        let mut bits = self.bitmap[w] & ((1u64 << (c & 63)) - 1);
        loop {
            if bits != 0 {
                return Some((w * 64 + 63 - bits.leading_zeros() as usize) as u8);
            }
            if w == 0 {
                return None;
            }
            w -= 1;
            bits = self.bitmap[w];
        }
    }

    /// Whether some byte child is `> c`.
    #[inline]
    pub(crate) fn has_child_above(&self, c: u8) -> bool {
        let w = (c >> 6) as usize;
        let above = if c & 63 == 63 {
            0
        } else {
            !((2u64 << (c & 63)) - 1)
        };
        self.bitmap[w] & above != 0 || self.bitmap[w + 1..].iter().any(|&x| x != 0)
    }
}
