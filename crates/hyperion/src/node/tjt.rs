//! T-Node jump tables (§3.3): 15 offsets in a T-Node that let a search start near the
//! S-Node it wants instead of at the T-Node's first S-Node.
//!
//! # Layout
//!
//! ```text
//! T-Node: [flag: t:2 k=0 d:3 js:1 jt=1] [key byte if d = 0] [u16 jump if js]
//!         [e_0 … e_14: u16 LE each] [value if t = 11]
//! S-Nodes of the T-Node follow (pre-order, keys ascending)
//! ```
//!
//! Entry `e_i` (`i ∈ 0..15`) is the distance in bytes from the T-Node's end (its value
//! included: where its first S-Node starts) to the S-Node whose key is `16·(i+1)` — the
//! paper's predefined destinations, so a search landing there knows the key without its
//! predecessor, which delta encoding would need: `JT(k) = (k >> 4) − 1`. Those 15 S-Nodes
//! always exist while the T-Node has its table: a destination no key uses is a
//! *placeholder* S-Node, `t = 01` (inner) with `c = 00` (no child) — one byte when delta
//! encoded, else two; it ends no key and has no child, so lookups and walks pass over it
//! ("additional destination points must be created if keys are missing"). Offsets are
//! relative to the T-Node's end so that re-encoding the T-Node (its value, its delta, a
//! split moving it to the front of a new part) leaves them exact. They fit in 16 bits: at
//! most 240 S-Nodes precede the last destination, each at most 266 bytes (flag, key, a
//! 9-byte value, a 255-byte embedded container), 63,840 bytes in all.
//!
//! This is the reading half: the layout, the placeholders and the seek every search
//! uses. The writer's half — when a T-Node gets a table, how it is built and kept exact —
//! is `write/tjt.rs`.

use super::bytes::{Bytes, R, ok, u16_in};
#[cfg(test)]
use super::format::parse;

/// Entries of a T-Node jump table.
pub(crate) const ENTRIES: usize = 15;
/// Bytes of a T-Node jump table.
pub(crate) const BYTES: usize = 2 * ENTRIES;

/// Whether the node with flag byte `f` is a placeholder S-Node (`t = 01`, `k = 1`,
/// `c = 00`).
#[inline]
pub(crate) fn is_placeholder(f: u8) -> bool {
    f & 0xE3 == 0x60
}

/// Whether `key` is a destination of a T-Node jump table (`16·(i+1)`, `i ∈ 0..15`).
#[inline]
pub(crate) fn is_destination(key: u8) -> bool {
    key & 15 == 0 && key != 0
}

/// Offset of the table of the T-Node at `t` (its flag has `jt` set).
#[inline]
pub(crate) fn table_at(buf: &[u8], t: usize) -> usize {
    let f = buf[t];
    t + 1 + usize::from((f >> 2) & 7 == 0) + 2 * usize::from(f & 2 != 0)
}

/// Where a search for S-Node key `k1` below the T-Node at `t` (flag `jt` set, its first
/// S-Node at `t_end`) starts: the destination S-Node of the largest `16·(i+1) ≤ k1`, and
/// the key to decode its delta from (so that `parse` yields `16·(i+1)`); for `k1 < 16`, the
/// first S-Node and 0.
#[inline]
pub(crate) fn seek(buf: &[u8], t: usize, t_end: usize, k1: u8) -> (usize, u8) {
    ok(seek_in(buf, t, t_end, k1))
}

/// [`seek`] on any [`Bytes`] (an optimistic reader's block: every read checked).
#[inline]
pub(crate) fn seek_in<B: Bytes>(buf: B, t: usize, t_end: usize, k1: u8) -> R<(usize, u8)> {
    if k1 < 16 {
        return Ok((t_end, 0));
    }
    let i = usize::from(k1 >> 4) - 1;
    let f = buf.at(t)?;
    let tab = t + 1 + usize::from((f >> 2) & 7 == 0) + 2 * usize::from(f & 2 != 0);
    let pos = t_end + u16_in(buf, tab + 2 * i)?;
    // The scan from here passes about half of 16 keys' S-Nodes: usually the next line too.
    buf.prefetch(pos + 64);
    let d = (buf.at(pos)? >> 2) & 7;
    Ok((pos, (k1 & 0xF0).wrapping_sub(d)))
}

/// As [`seek`], but from a destination *below* `k1`, so that a writer reaching the S-Node
/// of `k1` (or the place for it) knows its previous sibling's key: returns the position
/// and the key of the node before it (0 at the first S-Node).
#[inline]
pub(crate) fn seek_before(buf: &[u8], t: usize, t_end: usize, k1: u8) -> (usize, u8) {
    match k1.checked_sub(1) {
        Some(k) => seek(buf, t, t_end, k),
        None => (t_end, 0),
    }
}

/// Checks the T-Node jump tables of a container's own payload `buf[start..end)` against
/// a full decode: every table's 15 entries name the S-Nodes `16·(i+1)`, placeholders
/// appear only at destinations of T-Nodes with a table, and no T-Node is left with
/// nothing (no value, no S-Node other than placeholders). Returns the number of tables.
#[cfg(test)]
pub(crate) fn check(buf: &[u8], start: usize, end: usize) -> usize {
    let mut pos = start;
    let mut tables = 0;
    while pos < end {
        let f = buf[pos];
        assert_eq!(f & 0x20, 0, "a T-Node at {pos}");
        let t = parse(buf, pos, 0);
        let mut p = t.next;
        let mut prev = 0u8;
        let mut found = [None; ENTRIES];
        let mut real = 0;
        while p < end && buf[p] & 0x20 != 0 {
            let s = parse(buf, p, prev);
            if is_placeholder(buf[p]) {
                assert!(
                    f & 1 != 0 && is_destination(s.key),
                    "placeholder {} at {p}",
                    s.key
                );
            } else {
                real += 1;
            }
            if is_destination(s.key) {
                found[usize::from(s.key >> 4) - 1] = Some(p - t.next);
            }
            prev = s.key;
            p = s.next;
        }
        assert!(real > 0 || t.val.is_some(), "an empty T-Node at {pos}");
        if f & 1 != 0 {
            tables += 1;
            let tab = table_at(buf, pos);
            for (i, want) in found.iter().enumerate() {
                let e = u16::from_le_bytes([buf[tab + 2 * i], buf[tab + 2 * i + 1]]);
                assert_eq!(
                    Some(usize::from(e)),
                    *want,
                    "entry {i} of the T-Node at {pos}"
                );
            }
        }
        pos = p;
    }
    tables
}
