//! Tag entries: the 64-bit words of a leaf's tag array (tag, inline bit, address or inline lengths) and the leaf-level constants.

#[allow(unused_imports)]
use super::*;

/// Mask of the 48-bit address field of a tag entry.
pub(crate) const ADDR_MASK: u64 = (1 << 48) - 1;

/// Largest supported leaf capacity (order entries are bytes).
pub(crate) const MAX_CAP: usize = 256;
/// Smallest supported leaf capacity.
pub(crate) const MIN_CAP: usize = 8;

/// The 16-bit leaf tag of a key hash: the low 16 bits of its CRC32C (§3.2).
#[inline]
pub(crate) fn leaf_tag(hash: u32) -> u16 {
    hash as u16
}

#[inline]
pub(super) fn etag(e: u64) -> u16 {
    (e >> 48) as u16
}

/// An empty tag slot with no real entry to its right.
pub(super) const HOLE_END: u64 = 0xFFFF << 48;

#[inline]
pub(super) fn is_hole(e: u64) -> bool {
    e & ADDR_MASK == 0
}

/// A hole carrying the tag of the next real entry to its right.
#[inline]
pub(super) fn hole(tag: u16) -> u64 {
    (tag as u64) << 48
}

/// The home slot of a tag: direct speculative positioning by capacity (§3.2).
#[inline]
pub(crate) fn home(tag: u16, cap: usize) -> usize {
    (tag as usize * cap) >> 16
}

/// Bit 47 of an entry: the pair is inline (block addresses are below `2^47`).
pub(super) const INLINE_BIT: u64 = 1 << 47;

#[inline]
pub(super) fn entry(tag: u16, kv: Kv) -> u64 {
    let addr = kv.addr() as u64;
    assert!(addr < INLINE_BIT, "pair address beyond 47 bits");
    ((tag as u64) << 48) | addr
}

/// An entry of an inline pair: the flag and the two lengths (the bytes are in the slot's
/// inline cell).
#[inline]
pub(super) fn entry_inline(tag: u16, p: &InlinePair) -> u64 {
    let (k, v) = p.lens();
    ((tag as u64) << 48) | INLINE_BIT | ((k as u64) << 8) | v as u64
}

#[inline]
pub(super) fn is_inline(e: u64) -> bool {
    e & INLINE_BIT != 0
}

/// Key and value lengths of an inline entry.
#[inline]
pub(super) fn inline_lens(e: u64) -> (usize, usize) {
    (((e >> 8) & 0xFF) as usize, (e & 0xFF) as usize)
}

#[inline]
pub(super) fn ekv(e: u64) -> Kv {
    debug_assert!(!is_inline(e) && !is_hole(e));
    // SAFETY: block entries are only made by `entry` from live blocks; callers read entries
    // of `[0, nr)` under the leaf lock, where every block is live.
    unsafe { Kv::from_addr((e & ADDR_MASK) as usize) }
}

/// Offset of the inline area in a leaf block of capacity `cap` (line-aligned, so that
/// four 16-byte cells share a line and cell `i` is in line `i / 4`).
#[inline]
pub(super) fn inline_off(cap: usize) -> usize {
    (size_of::<Leaf>() + cap * 9).next_multiple_of(64)
}

/// Anchor bytes kept in the header line; longer anchors live in a heap block.
pub(crate) const ANCHOR_INLINE: usize = 12;
