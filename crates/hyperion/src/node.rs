//! The container byte format (§3.1, Fig 3–8) and its read paths: lookup, the descent a
//! writer makes, and ordered walks.
//!
//! # Container
//!
//! A container is a block of the memory manager: a 4-byte header, then the payload.
//!
//! ```text
//! header (u32 LE): bits 0..24 size (bytes used, header included) | 24..27 J | 27..29 S | 29..32 0
//! payload:         T-Node [S-Node …] T-Node [S-Node …] …   (pre-order, keys ascending)
//! ```
//!
//! A container holds 16-bit partial keys as a two-level internal trie: a T-Node for the
//! first byte, its S-Node children for the second. The paper's header has 19 size bits and
//! an 8-bit `free` count; here the capacity is known from the Hyperion Pointer (its
//! superbin, or the eHP), so `free` is not stored and its bits widen `size` to 24 (values
//! of any length are inline or out of line, and a container that cannot be split — all
//! its T-Nodes in one 32-key range — may pass the paper's 512 KiB). `S` is the split delay
//! (`split.rs`); `J` the number of 7-entry groups of the container jump table that follows
//! the header (`cjt.rs`), the payload starting after it.
//!
//! A container referenced through a chained extended bin is *split* (`split.rs`): the
//! Hyperion Pointer names up to eight parts, each an ordinary container; a reader picks
//! the part by the next key byte ([`MemoryManager::resolve`]).
//!
//! # Nodes
//!
//! ```text
//! T-Node: [t:2 k=0 d:3 js:1 jt:1] [key byte if d = 0] [u16 jump if js] [30-byte table if jt]
//!         [value if t = 11]
//! S-Node: [t:2 k=1 d:3 c:2]       [key byte if d = 0] [value if t = 11] [child]
//! ```
//!
//! `t`: `01` inner (no key ends here), `10` a key ends here with the empty value, `11` a
//! key ends here and its value follows (the paper's "leaf without / with value"; a T-Node
//! may both end a key and have S-Node children). `d`: delta encoding — `1..=7` is the key
//! byte's distance from the previous sibling's (from 0 for the first sibling), `0` means
//! the key byte follows. `js`: a jump successor follows, the u16 LE distance from this
//! T-Node's first byte to the next T-Node's (0: none), kept on the T-Nodes of a
//! container's own payload (`write.rs`); `jt`: a T-Node jump table follows (15 u16 LE
//! offsets from the T-Node's end to its S-Nodes `16·(i+1)`, placeholders standing in for
//! missing ones; `tjt.rs`).
//! `c`: `00` no child, `01` a 5-byte Hyperion Pointer to a child container follows, `10` an
//! embedded container follows (`[size u8 = 1 + payload length][payload]`, at most 255
//! bytes, same format as a container's payload), `11` a path-compressed suffix follows.
//!
//! # Values
//!
//! `[tag u8]`: `1..=8` that many bytes inline follow (the paper's 8-byte values);
//! `0xFF` a Hyperion Pointer follows, to a block `[len u32 LE][bytes]` (out of line);
//! `0` the empty value (only inside a path-compressed node; nodes use `t = 10` for it).
//!
//! # Path-compressed suffix (c = 11)
//!
//! `[h u8][suffix][value]`: `h & 0x7F` is the suffix length (1..=127) and the suffix bytes
//! follow. Deviation: the paper's bit 7 says whether a value follows; every key here has a
//! value (possibly empty, tag 0), so bit 7 instead marks a *long* suffix (> 127 bytes, which
//! the paper does not support): then a Hyperion Pointer to a block `[len u32][bytes]`
//! replaces the inline bytes.

use std::ops::{Bound, ControlFlow};

use crate::cjt;
use crate::mm::{Hp, MemoryManager};
use crate::opt::Torn;
use crate::tjt;

/// A read that may find torn bytes (optimistic readers); never `Err` on a locked slice.
pub(crate) type R<T> = Result<T, Torn>;

/// The bytes of one block as the parsers read them: a slice under the arena's lock, or an
/// optimistic reader's [`RawBlock`](crate::mm::RawBlock) (`opt.rs`: bounds-checked
/// atomic loads, [`Torn`] past the block's end). The parsers below are written once,
/// generic over this; on a slice `at` cannot fail, so after inlining the error paths
/// compile away and the locked paths keep plain indexed reads ([`ok`] unwraps them).
pub(crate) trait Bytes: Copy {
    /// Byte `i`.
    fn at(self, i: usize) -> R<u8>;
    /// Bytes readable.
    fn size(self) -> usize;
    /// Prefetches the line holding byte `i` (a hint; any offset).
    fn prefetch(self, i: usize);
}

impl Bytes for &[u8] {
    #[inline(always)]
    fn at(self, i: usize) -> R<u8> {
        Ok(self[i])
    }

    #[inline(always)]
    fn size(self) -> usize {
        self.len()
    }

    #[inline(always)]
    fn prefetch(self, i: usize) {
        orrery_core::prefetch(self.as_ptr().wrapping_add(i));
    }
}

/// The result of a parse of a locked slice, which cannot be torn ([`Bytes::at`] on a
/// slice is never `Err`; a container that fails a check under the lock is a bug).
#[inline(always)]
pub(crate) fn ok<T>(r: R<T>) -> T {
    match r {
        Ok(t) => t,
        Err(Torn) => unreachable!("a container read under the arena's lock is consistent"),
    }
}

/// The little-endian u16 at `i`.
#[inline(always)]
pub(crate) fn u16_in<B: Bytes>(b: B, i: usize) -> R<usize> {
    Ok(usize::from(u16::from_le_bytes([b.at(i)?, b.at(i + 1)?])))
}

/// The little-endian u32 at `i`.
#[inline(always)]
pub(crate) fn u32_in<B: Bytes>(b: B, i: usize) -> R<u32> {
    Ok(u32::from_le_bytes([
        b.at(i)?,
        b.at(i + 1)?,
        b.at(i + 2)?,
        b.at(i + 3)?,
    ]))
}

/// The Hyperion Pointer stored at `i`.
#[inline(always)]
pub(crate) fn hp_in<B: Bytes>(b: B, i: usize) -> R<Hp> {
    Ok(Hp::from_bytes(&[
        b.at(i)?,
        b.at(i + 1)?,
        b.at(i + 2)?,
        b.at(i + 3)?,
        b.at(i + 4)?,
    ]))
}

/// Largest value stored inline.
pub(crate) const INLINE_MAX: usize = 8;
/// Value tag: out of line.
pub(crate) const TAG_OUT: u8 = 0xFF;
/// Longest suffix stored inline in a path-compressed node.
pub(crate) const PC_MAX: usize = 127;
/// Largest embedded container (size byte included).
pub(crate) const EMBED_MAX: usize = 255;
/// Container header bytes.
pub(crate) const HEADER: usize = 4;

/// Node type: no key ends here.
pub(crate) const T_INNER: u8 = 1;
/// Node type: a key with the empty value ends here.
pub(crate) const T_EMPTY: u8 = 2;
/// Node type: a key ends here, its value follows.
pub(crate) const T_VALUE: u8 = 3;

/// Child kinds of an S-Node.
pub(crate) const C_NONE: u8 = 0;
pub(crate) const C_HP: u8 = 1;
pub(crate) const C_EMB: u8 = 2;
pub(crate) const C_PC: u8 = 3;

/// Bytes used by a container (header included).
#[inline]
pub(crate) fn used(chunk: &[u8]) -> usize {
    (u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]) & 0x00FF_FFFF) as usize
}

/// [`used`], checked: a size below the header or past the block is torn.
#[inline]
pub(crate) fn used_in<B: Bytes>(b: B) -> R<usize> {
    let n = (u32_in(b, 0)? & 0x00FF_FFFF) as usize;
    if n < HEADER || n > b.size() {
        return Err(Torn);
    }
    Ok(n)
}

/// Sets the used size in a container header, keeping its `J` and `S` bits.
#[inline]
pub(crate) fn set_used(chunk: &mut [u8], size: usize) {
    debug_assert!(size < 1 << 24);
    let h = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    chunk[..4].copy_from_slice(&((h & 0xFF00_0000) | size as u32).to_le_bytes());
}

/// Writes a container header for `size` used bytes.
pub(crate) fn write_header(chunk: &mut [u8], size: usize) {
    debug_assert!(size < 1 << 24);
    chunk[..4].copy_from_slice(&(size as u32).to_le_bytes());
}

/// A value as found in a payload.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ValRef {
    /// The empty value.
    Empty,
    /// Inline bytes (a range of the payload buffer).
    Inline(usize, usize),
    /// Out of line.
    Out(Hp),
}

/// Reads an encoded value at `pos`; returns it and the offset after it.
#[inline]
pub(crate) fn parse_val(buf: &[u8], pos: usize) -> (ValRef, usize) {
    ok(parse_val_in(buf, pos))
}

/// [`parse_val`] on any [`Bytes`].
#[inline(always)]
pub(crate) fn parse_val_in<B: Bytes>(buf: B, pos: usize) -> R<(ValRef, usize)> {
    Ok(match buf.at(pos)? {
        0 => (ValRef::Empty, pos + 1),
        TAG_OUT => (ValRef::Out(hp_in(buf, pos + 1)?), pos + 1 + Hp::BYTES),
        n => (
            ValRef::Inline(pos + 1, pos + 1 + n as usize),
            pos + 1 + n as usize,
        ),
    })
}

/// The bytes of a value.
#[inline]
pub(crate) fn val_bytes<'a>(mm: &'a MemoryManager, buf: &'a [u8], v: ValRef) -> &'a [u8] {
    match v {
        ValRef::Empty => &[],
        ValRef::Inline(a, b) => &buf[a..b],
        ValRef::Out(hp) => blob(mm, hp),
    }
}

/// The bytes of an out-of-line block `[len u32][bytes]`.
#[inline]
pub(crate) fn blob(mm: &MemoryManager, hp: Hp) -> &[u8] {
    let b = mm.get(hp);
    let len = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    &b[4..4 + len]
}

/// A child of an S-Node, as found in a payload.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ChildRef {
    None,
    /// A child container, and the offset of its pointer in the buffer.
    Hp(Hp, usize),
    /// An embedded container's payload range.
    Emb(usize, usize),
    /// A path-compressed suffix (inline range, or a long suffix's block) and its value.
    Pc(Suffix, ValRef),
}

/// A path-compressed suffix as found in a payload.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Suffix {
    Inline(usize, usize),
    Long(Hp),
}

/// The bytes of a suffix.
#[inline]
pub(crate) fn suffix_bytes<'a>(mm: &'a MemoryManager, buf: &'a [u8], s: Suffix) -> &'a [u8] {
    match s {
        Suffix::Inline(a, b) => &buf[a..b],
        Suffix::Long(hp) => blob(mm, hp),
    }
}

/// One parsed node.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    /// S-Node (`k = 1`) or T-Node.
    pub(crate) is_s: bool,
    pub(crate) key: u8,
    /// `None` when no key ends here.
    pub(crate) val: Option<ValRef>,
    pub(crate) child: ChildRef,
    /// Offset after the node (its child included).
    pub(crate) next: usize,
}

/// Parses the node at `pos`, whose previous sibling had key `prev` (0 for the first).
#[inline]
pub(crate) fn parse(buf: &[u8], pos: usize, prev: u8) -> Node {
    ok(parse_in(buf, pos, prev))
}

/// The parser itself, on any [`Bytes`], always inlined: called directly by the walks
/// ([`Frame::next_up`]), where the call and the [`Node`] returned through memory cost a
/// full scan about a fifth of its time (`docs/results/hyperion.md`, scan work); the
/// locked point paths call it through [`parse`], which the compiler may keep out of line.
/// A parsed node is at least one byte long (`next > pos`), whatever the bytes say, so
/// loops over nodes always advance.
#[inline(always)]
pub(crate) fn parse_in<B: Bytes>(buf: B, mut pos: usize, prev: u8) -> R<Node> {
    let b = buf.at(pos)?;
    pos += 1;
    let t = b >> 6;
    let is_s = b & 0x20 != 0;
    let d = (b >> 2) & 7;
    let key = if d == 0 {
        pos += 1;
        buf.at(pos - 1)?
    } else {
        prev.wrapping_add(d)
    };
    if !is_s {
        pos += 2 * usize::from(b & 2 != 0) + 30 * usize::from(b & 1 != 0);
    }
    let val = match t {
        T_VALUE => {
            let (v, p) = parse_val_in(buf, pos)?;
            pos = p;
            Some(v)
        }
        T_EMPTY => Some(ValRef::Empty),
        _ => None,
    };
    let mut child = ChildRef::None;
    if is_s {
        match b & 3 {
            C_HP => {
                child = ChildRef::Hp(hp_in(buf, pos)?, pos);
                pos += Hp::BYTES;
            }
            C_EMB => {
                let size = buf.at(pos)? as usize;
                child = ChildRef::Emb(pos + 1, pos + size);
                pos += size;
            }
            C_PC => {
                let h = buf.at(pos)?;
                pos += 1;
                let suffix = if h & 0x80 != 0 {
                    pos += Hp::BYTES;
                    Suffix::Long(hp_in(buf, pos - Hp::BYTES)?)
                } else {
                    let n = (h & 0x7F) as usize;
                    pos += n;
                    Suffix::Inline(pos - n, pos)
                };
                let (v, p) = parse_val_in(buf, pos)?;
                pos = p;
                child = ChildRef::Pc(suffix, v);
            }
            _ => {}
        }
    }
    Ok(Node {
        is_s,
        key,
        val,
        child,
        next: pos,
    })
}

/// The key of the node at `pos` whose previous sibling has key `prev`.
#[inline]
pub(crate) fn t_key(buf: &[u8], pos: usize, prev: u8) -> u8 {
    ok(t_key_in(buf, pos, prev))
}

/// [`t_key`] on any [`Bytes`].
#[inline(always)]
pub(crate) fn t_key_in<B: Bytes>(buf: B, pos: usize, prev: u8) -> R<u8> {
    Ok(match (buf.at(pos)? >> 2) & 7 {
        0 => buf.at(pos + 1)?,
        d => prev.wrapping_add(d),
    })
}

/// The jump successor of the T-Node at `pos` (flag bit `js`): the distance in bytes from
/// its first byte to the next T-Node's (0 stored: none).
#[inline]
pub(crate) fn jump_successor(buf: &[u8], pos: usize) -> Option<usize> {
    ok(jump_successor_in(buf, pos))
}

/// [`jump_successor`] on any [`Bytes`] (at least 1 when `Some`).
#[inline(always)]
pub(crate) fn jump_successor_in<B: Bytes>(buf: B, pos: usize) -> R<Option<usize>> {
    let f = buf.at(pos)?;
    if f & 0x20 != 0 || f & 2 == 0 {
        return Ok(None);
    }
    let d = u16_in(buf, pos + 1 + usize::from((f >> 2) & 7 == 0))?;
    Ok((d != 0).then_some(d))
}

/// Where a key's search leaves a payload.
pub(crate) enum Step {
    /// The key ends at a node with this value.
    Found(ValRef),
    /// Absent.
    Missing,
    /// Continue in an embedded payload with the key advanced by 2.
    Embedded(usize, usize),
    /// Continue in a child container with the key advanced by 2 (pointer at offset).
    Child(Hp),
    /// The key continues in a path-compressed suffix.
    Pc(Suffix, ValRef),
}

/// Finds the T-Node of key `k0` in the payload `buf[start..end]`, from the T-Node at
/// `start` whose previous sibling's key is `prev_t`, skipping the groups of smaller keys
/// by their jump successors: its offset and the node. Ends on any bytes: `pos` grows by
/// at least one byte per round (a node, or a jump successor of at least 1) and stops at
/// `end`.
#[inline]
pub(crate) fn find_t<B: Bytes>(
    buf: B,
    start: usize,
    prev_t: u8,
    end: usize,
    k0: u8,
) -> R<Option<(usize, Node)>> {
    let mut pos = start;
    let mut prev_t = prev_t;
    loop {
        if pos >= end {
            return Ok(None);
        }
        let f = buf.at(pos)?;
        if f & 0x20 == 0 && f & 2 != 0 {
            // A T-Node with a jump successor: skip its S-Nodes if the key is further on.
            let key = t_key_in(buf, pos, prev_t)?;
            if key < k0
                && let Some(d) = jump_successor_in(buf, pos)?
            {
                prev_t = key;
                pos += d;
                continue;
            }
        }
        let t = pos;
        let n = parse_in(buf, pos, prev_t)?;
        pos = n.next;
        if n.is_s {
            continue;
        }
        prev_t = n.key;
        if n.key < k0 {
            continue;
        }
        if n.key > k0 {
            return Ok(None);
        }
        return Ok(Some((t, n)));
    }
}

/// Where the search for S-Node key `k1` below the T-Node at `t` (parsed: `n`) starts: its
/// jump table's destination at or below `k1` if it has one, else its first S-Node; and
/// the key to decode that node's delta from.
#[inline]
pub(crate) fn s_start<B: Bytes>(buf: B, t: usize, n: &Node, k1: u8) -> R<(usize, u8)> {
    if buf.at(t)? & 1 != 0 {
        tjt::seek_in(buf, t, n.next, k1)
    } else {
        Ok((n.next, 0))
    }
}

/// Searches the S-Nodes of one T-Node, from `pos` (previous sibling's key `prev_s`) to
/// the next T-Node or `end`, for `key[1]` (`key` has at least 2 bytes).
#[inline]
pub(crate) fn find_s<B: Bytes>(
    buf: B,
    mut pos: usize,
    mut prev_s: u8,
    end: usize,
    key: &[u8],
) -> R<Step> {
    let k1 = key[1];
    while pos < end {
        let s = parse_in(buf, pos, prev_s)?;
        if !s.is_s || s.key > k1 {
            return Ok(Step::Missing);
        }
        pos = s.next;
        prev_s = s.key;
        if s.key < k1 {
            continue;
        }
        if key.len() == 2 {
            return Ok(s.val.map_or(Step::Missing, Step::Found));
        }
        return Ok(match s.child {
            ChildRef::None => Step::Missing,
            ChildRef::Hp(hp, _) => Step::Child(hp),
            ChildRef::Emb(a, b) => Step::Embedded(a, b),
            ChildRef::Pc(sfx, v) => Step::Pc(sfx, v),
        });
    }
    Ok(Step::Missing)
}

/// Searches a payload `buf[start..end]` for `key` (non-empty), from the T-Node at `start`
/// whose previous sibling's key is `prev_t`.
#[inline]
pub(crate) fn search<B: Bytes>(
    buf: B,
    start: usize,
    prev_t: u8,
    end: usize,
    key: &[u8],
) -> R<Step> {
    let Some((t, n)) = find_t(buf, start, prev_t, end, key[0])? else {
        return Ok(Step::Missing);
    };
    let Some(&k1) = key.get(1) else {
        return Ok(n.val.map_or(Step::Missing, Step::Found));
    };
    let (pos, prev_s) = s_start(buf, t, &n, k1)?;
    find_s(buf, pos, prev_s, end, key)
}

/// Looks `key` (non-empty, the first key byte already consumed by the arena) up below the
/// root container `root`.
pub(crate) fn lookup<'a>(mm: &'a MemoryManager, root: Hp, mut key: &[u8]) -> Option<&'a [u8]> {
    let mut chunk = mm.get(mm.resolve(root, key[0]));
    let (mut start, mut prev) = cjt::seek(chunk, key[0]);
    let mut end = used(chunk);
    loop {
        match ok(search(chunk, start, prev, end, key)) {
            Step::Found(v) => return Some(val_bytes(mm, chunk, v)),
            Step::Missing => return None,
            Step::Embedded(a, b) => {
                key = &key[2..];
                (start, prev, end) = (a, 0, b);
            }
            Step::Child(hp) => {
                key = &key[2..];
                chunk = mm.get(mm.resolve(hp, key[0]));
                (start, prev) = cjt::seek(chunk, key[0]);
                end = used(chunk);
            }
            Step::Pc(sfx, v) => {
                return (suffix_bytes(mm, chunk, sfx) == &key[2..])
                    .then(|| val_bytes(mm, chunk, v));
            }
        }
    }
}

/// One lookup in flight in a pipeline of lookups (`Hyperion::get_many`): [`lookup`] cut
/// at its dependent memory accesses. Each [`Probe::step`] does the work of one stage and
/// prefetches what the next stage reads first, so that a caller stepping several probes
/// in turn overlaps their cache misses.
pub(crate) struct Probe<'a> {
    /// The key bytes still to find (non-empty).
    key: &'a [u8],
    stage: Stage<'a>,
}

#[derive(Clone, Copy)]
enum Stage<'a> {
    /// Resolve a container's Hyperion Pointer (its eHP or chunk is being fetched).
    Resolve(Hp),
    /// Seek in its jump table (its first bytes are being fetched).
    Seek(&'a [u8]),
    /// Find the T-Node from `pos` (being fetched).
    TNodes(&'a [u8], usize, u8, usize),
    /// Find the S-Node from `pos` (being fetched).
    SNodes(&'a [u8], usize, u8, usize),
    /// Finished.
    Done(Option<&'a [u8]>),
}

impl<'a> Probe<'a> {
    /// A lookup of `key` (non-empty, the first key byte already consumed by the arena)
    /// below root container `root`; prefetches the root's pointer.
    #[inline]
    pub(crate) fn new(mm: &MemoryManager, root: Hp, key: &'a [u8]) -> Probe<'a> {
        mm.prefetch(root, key[0]);
        Probe {
            key,
            stage: Stage::Resolve(root),
        }
    }

    /// A finished probe with result `v`.
    #[inline]
    pub(crate) fn done(v: Option<&'a [u8]>) -> Probe<'a> {
        Probe {
            key: &[],
            stage: Stage::Done(v),
        }
    }

    /// The result, once [`Probe::step`] has returned `true`.
    #[inline]
    pub(crate) fn result(&self) -> Option<&'a [u8]> {
        match self.stage {
            Stage::Done(v) => v,
            _ => None,
        }
    }

    /// Runs one stage; returns whether the lookup is finished.
    #[inline]
    pub(crate) fn step(&mut self, mm: &'a MemoryManager) -> bool {
        let key = self.key;
        self.stage = match self.stage {
            Stage::Done(_) => return true,
            Stage::Resolve(hp) => {
                let chunk = mm.get(mm.resolve(hp, key[0]));
                // The header and the container jump table (up to 200 bytes).
                let lines = chunk.len().min(4 * 64);
                for at in (0..lines).step_by(64) {
                    orrery_core::prefetch(chunk[at..].as_ptr());
                }
                Stage::Seek(chunk)
            }
            Stage::Seek(chunk) => {
                let (pos, prev) = cjt::seek(chunk, key[0]);
                let end = used(chunk);
                orrery_core::prefetch(chunk[pos.min(end)..].as_ptr());
                Stage::TNodes(chunk, pos, prev, end)
            }
            Stage::TNodes(buf, pos, prev, end) => match ok(find_t(buf, pos, prev, end, key[0])) {
                None => Stage::Done(None),
                Some((t, n)) => match key.get(1) {
                    None => Stage::Done(n.val.map(|v| val_bytes(mm, buf, v))),
                    Some(&k1) => {
                        let (pos, prev) = ok(s_start(buf, t, &n, k1));
                        orrery_core::prefetch(buf[pos.min(end)..].as_ptr());
                        Stage::SNodes(buf, pos, prev, end)
                    }
                },
            },
            Stage::SNodes(buf, pos, prev, end) => match ok(find_s(buf, pos, prev, end, key)) {
                Step::Found(v) => Stage::Done(Some(val_bytes(mm, buf, v))),
                Step::Missing => Stage::Done(None),
                Step::Embedded(a, b) => {
                    self.key = &key[2..];
                    Stage::TNodes(buf, a, 0, b)
                }
                Step::Child(hp) => {
                    self.key = &key[2..];
                    mm.prefetch(hp, self.key[0]);
                    Stage::Resolve(hp)
                }
                Step::Pc(sfx, v) => Stage::Done(
                    (suffix_bytes(mm, buf, sfx) == &key[2..]).then(|| val_bytes(mm, buf, v)),
                ),
            },
        };
        matches!(self.stage, Stage::Done(_))
    }
}

/// The visitor of an ordered walk.
pub(crate) type Visit<'a> = dyn FnMut(&[u8], &[u8]) -> ControlFlow<()> + 'a;

/// What an ordered walk does with a subtree, given its prefix and the bound.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fit {
    /// Every key of the subtree is outside the bound.
    Skip,
    /// Every key of the subtree is inside.
    All,
    /// The prefix is a proper prefix of the bound: look inside.
    Partial,
}

/// How the keys strictly below prefix `q` (all longer than `q`) relate to the walk's
/// bound `b` (a lower bound going up, an upper bound going down).
fn fit(q: &[u8], b: &[u8], desc: bool) -> Fit {
    if b.starts_with(q) {
        if q.len() < b.len() {
            return Fit::Partial;
        }
        // `q == b`: every key below is longer, hence greater than the bound.
        return if desc { Fit::Skip } else { Fit::All };
    }
    let n = q.len().min(b.len());
    // `q` is not a prefix of `b`: either they differ within `n`, or `b` is a proper prefix
    // of `q` (then `q > b`).
    let greater = q[..n] > b[..n] || (q[..n] == b[..n] && q.len() > b.len());
    match (greater, desc) {
        (true, false) | (false, true) => Fit::All,
        _ => Fit::Skip,
    }
}

/// Whether the single key `k` passes bound `b`.
fn key_ok(k: &[u8], b: Bound<&[u8]>, desc: bool) -> bool {
    match (b, desc) {
        (Bound::Unbounded, _) => true,
        (Bound::Included(b), false) => k >= b,
        (Bound::Excluded(b), false) => k > b,
        (Bound::Included(b), true) => k <= b,
        (Bound::Excluded(b), true) => k < b,
    }
}

/// One step of an ordered walk at one level.
#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A key ends: the bytes appended to the level's prefix (1 or 2 key bytes, or 2 plus a
    /// suffix), and its value.
    Key {
        t: u8,
        s: Option<u8>,
        sfx: Option<Suffix>,
        val: ValRef,
    },
    /// A child payload to enter (prefix + `t`, `s`).
    Enter {
        t: u8,
        s: u8,
        chunk: Option<Hp>,
        start: usize,
        end: usize,
    },
}

/// Where a bounded walk's bound falls in one payload: the bound's next key byte (a T-Node
/// key) and the one after it (an S-Node key), if the bound is that long.
type Seek = Option<(u8, Option<u8>)>;

/// The key of the T-Node group at `pos` (its delta decoded from `prev`) and the offset of
/// the next T-Node (or of `end`): by the T-Node's jump successor when it has one, else by
/// parsing its S-Nodes. The offset returned is past `pos`.
#[inline]
fn skip_group<B: Bytes>(buf: B, pos: usize, prev: u8, end: usize) -> R<(u8, usize)> {
    let key = t_key_in(buf, pos, prev)?;
    if let Some(d) = jump_successor_in(buf, pos)? {
        return Ok((key, pos + d));
    }
    let mut p = parse_in(buf, pos, prev)?.next;
    while p < end && buf.at(p)? & 0x20 != 0 {
        p = parse_in(buf, p, 0)?.next;
    }
    Ok((key, p))
}

/// Appends to `out`, ascending, the events of the T-Node group at `pos` (the T-Node's key
/// decoded from `prev`) of payload `buf[..end]`. When the group's T-Node is the bound's
/// (`seek`), only its S-Nodes on the bound's side are listed: from the bound's S-Node key
/// on going up, up to it going down (none when the bound ends at the T-Node). Returns the
/// T-Node's key and where decoding stopped (the group's end, or going down the first
/// S-Node past the bound). Descending walks use it; ascending ones parse in place
/// (`Frame::next_up`).
#[inline]
fn group<B: Bytes>(
    buf: B,
    pos: usize,
    prev: u8,
    end: usize,
    seek: Seek,
    desc: bool,
    out: &mut Vec<Ev>,
) -> R<(u8, usize)> {
    let n = parse_in(buf, pos, prev)?;
    if n.is_s {
        // Under the lock a group starts with a T-Node; here the bytes are torn.
        return Err(Torn);
    }
    let t = n.key;
    let (lo, hi): (u8, i16) = match seek {
        Some((b0, b1)) if b0 == t => match (desc, b1) {
            (false, Some(b1)) => (b1, 255),
            (false, None) => (0, 255),
            (true, Some(b1)) => (0, i16::from(b1)),
            (true, None) => (0, -1),
        },
        _ => (0, 255),
    };
    if let Some(val) = n.val {
        out.push(Ev::Key {
            t,
            s: None,
            sfx: None,
            val,
        });
    }
    let mut pos = n.next;
    let mut prev_s = 0u8;
    while pos < end && buf.at(pos)? & 0x20 != 0 {
        let s = parse_in(buf, pos, prev_s)?;
        pos = s.next;
        prev_s = s.key;
        if s.key < lo {
            continue;
        }
        if i16::from(s.key) > hi {
            break;
        }
        if let Some(val) = s.val {
            out.push(Ev::Key {
                t,
                s: Some(s.key),
                sfx: None,
                val,
            });
        }
        match s.child {
            ChildRef::None => {}
            ChildRef::Hp(hp, _) => out.push(Ev::Enter {
                t,
                s: s.key,
                chunk: Some(hp),
                start: 0,
                end: 0,
            }),
            ChildRef::Emb(a, b) => out.push(Ev::Enter {
                t,
                s: s.key,
                chunk: None,
                start: a,
                end: b,
            }),
            ChildRef::Pc(sfx, val) => out.push(Ev::Key {
                t,
                s: Some(s.key),
                sfx: Some(sfx),
                val,
            }),
        }
    }
    Ok((t, pos))
}

/// One level of an ordered walk's explicit stack: one payload, read one T-Node group at a
/// time (a T-Node and its S-Nodes).
struct Frame<B> {
    buf: B,
    end: usize,
    /// Going up: the offset of the next node, the key the next T-Node's delta is decoded
    /// from, the current T-Node's key, the previous S-Node's key, the least S-Node key
    /// listed in the current group (the bound's, in the bound's group), and the child
    /// event of an S-Node whose own key was returned first.
    next: usize,
    prev: u8,
    t: u8,
    prev_s: u8,
    lo: u8,
    pending: Option<Ev>,
    /// Going down: the groups still to read (offset, delta base), the next one last.
    groups: Vec<(usize, u8)>,
    /// The events of the current group, in walk order, and the next one's index.
    evs: Vec<Ev>,
    i: usize,
    /// The length of the key prefix above this payload.
    plen: usize,
    /// Whether the bound falls inside this payload (its keys must be checked).
    bounded: bool,
    seek: Seek,
}

/// The reusable vectors of popped frames.
type Spare = Vec<(Vec<Ev>, Vec<(usize, u8)>)>;

impl<B: Bytes> Frame<B> {
    /// A frame over payload `buf[start..end]`, positioned at the bound (`seek`): going up
    /// at the first group whose T-Node key is at least the bound's byte — entering a
    /// container through its jump table (`cjt`: `buf` is a container and `start` its
    /// payload's start) and skipping groups by their jump successors; going down with the
    /// list of groups whose T-Node key is at most the bound's byte. A range that does not
    /// fit in `buf` is torn.
    #[allow(clippy::too_many_arguments)]
    fn new(
        buf: B,
        (start, end): (usize, usize),
        cjt: bool,
        plen: usize,
        seek: Seek,
        desc: bool,
        spare: &mut Spare,
    ) -> R<Frame<B>> {
        if start > end || end > buf.size() {
            return Err(Torn);
        }
        // (Torn: the vectors are dropped with the error, not returned to `spare`.)
        let (evs, mut groups) = spare.pop().unwrap_or_default();
        let (mut next, mut prev) = (start, 0u8);
        if desc {
            let top = seek.map(|(b0, _)| b0);
            while next < end {
                let k = t_key_in(buf, next, prev)?;
                if top.is_some_and(|b0| k > b0) {
                    break;
                }
                groups.push((next, prev));
                (prev, next) = skip_group(buf, next, prev, end)?;
            }
        } else if let Some((b0, _)) = seek {
            if cjt {
                (next, prev) = crate::cjt::seek_in(buf, b0)?;
            }
            while next < end {
                if t_key_in(buf, next, prev)? >= b0 {
                    break;
                }
                (prev, next) = skip_group(buf, next, prev, end)?;
            }
        }
        Ok(Frame {
            buf,
            end,
            next,
            prev,
            t: 0,
            prev_s: 0,
            lo: 0,
            pending: None,
            groups,
            evs,
            i: 0,
            plen,
            bounded: seek.is_some(),
            seek,
        })
    }

    /// Going up: the next event, parsed in place (no list).
    #[inline]
    fn next_up(&mut self) -> R<Option<Ev>> {
        if let Some(ev) = self.pending.take() {
            return Ok(Some(ev));
        }
        let buf = self.buf;
        while self.next < self.end {
            if buf.at(self.next)? & 0x20 == 0 {
                let n = parse_in(buf, self.next, self.prev)?;
                self.next = n.next;
                (self.prev, self.t, self.prev_s, self.lo) = (n.key, n.key, 0, 0);
                if let Some((b0, b1)) = self.seek {
                    if b0 == n.key {
                        self.lo = b1.unwrap_or(0);
                    } else {
                        // Past the bound's T-Node every key here is inside the bound.
                        self.seek = None;
                        self.bounded = false;
                    }
                }
                if let Some(val) = n.val {
                    return Ok(Some(Ev::Key {
                        t: n.key,
                        s: None,
                        sfx: None,
                        val,
                    }));
                }
                continue;
            }
            let s = parse_in(buf, self.next, self.prev_s)?;
            self.next = s.next;
            self.prev_s = s.key;
            if s.key < self.lo {
                continue;
            }
            let t = self.t;
            let child = match s.child {
                ChildRef::None => None,
                ChildRef::Hp(hp, _) => Some(Ev::Enter {
                    t,
                    s: s.key,
                    chunk: Some(hp),
                    start: 0,
                    end: 0,
                }),
                ChildRef::Emb(a, b) => Some(Ev::Enter {
                    t,
                    s: s.key,
                    chunk: None,
                    start: a,
                    end: b,
                }),
                ChildRef::Pc(sfx, val) => Some(Ev::Key {
                    t,
                    s: Some(s.key),
                    sfx: Some(sfx),
                    val,
                }),
            };
            if let Some(val) = s.val {
                self.pending = child;
                return Ok(Some(Ev::Key {
                    t,
                    s: Some(s.key),
                    sfx: None,
                    val,
                }));
            }
            if child.is_some() {
                return Ok(child);
            }
        }
        Ok(None)
    }

    /// Going down: reads the next group's events (in walk order); `false` when none is
    /// left.
    #[inline]
    fn load(&mut self) -> R<bool> {
        self.evs.clear();
        self.i = 0;
        let Some((pos, prev)) = self.groups.pop() else {
            return Ok(false);
        };
        let (t, _) = group(
            self.buf,
            pos,
            prev,
            self.end,
            self.seek,
            true,
            &mut self.evs,
        )?;
        self.evs.reverse();
        // Below the bound's T-Node every key here is inside the bound.
        if self.seek.is_some_and(|(b0, _)| b0 != t) {
            self.bounded = false;
            self.seek = None;
        }
        Ok(true)
    }
}

/// Where an ordered walk finds containers and the bytes out of line: the memory manager
/// under the arena's lock (`&MemoryManager`, plain slices), or an optimistic reader's
/// view of it (`opt::OptSrc`: checked atomic reads, [`Torn`] when what it reads cannot be
/// consistent).
pub(crate) trait Src: Copy {
    /// The bytes of one container.
    type B: Bytes;
    /// Whether reads may be torn: the walk then validates every [`CHECK_EVERY`] steps.
    const OPTIMISTIC: bool;
    /// The container `hp` names (not a chain: one part, or an unsplit container).
    fn container(self, hp: Hp) -> R<Self::B>;
    /// For a chain `hp` (a split container), which of its 8 slots hold a part; `None`
    /// when `hp` is not a chain.
    fn chain(self, hp: Hp) -> R<Option<[bool; 8]>>;
    /// Appends suffix `s` of payload `buf` to `out`.
    fn suffix(self, buf: Self::B, s: Suffix, out: &mut Vec<u8>) -> R<()>;
    /// The bytes of value `v` of payload `buf`: borrowed, or copied into `scratch`.
    fn value<'s>(self, buf: Self::B, v: ValRef, scratch: &'s mut Vec<u8>) -> R<&'s [u8]>
    where
        Self: 's;
    /// `Ok` when everything read so far is consistent (the optimistic reader's version
    /// still validates); always `Ok` under the lock.
    fn check(self) -> R<()>;
}

impl<'a> Src for &'a MemoryManager {
    type B = &'a [u8];
    const OPTIMISTIC: bool = false;

    #[inline(always)]
    fn container(self, hp: Hp) -> R<&'a [u8]> {
        Ok(self.get(hp))
    }

    #[inline(always)]
    fn chain(self, hp: Hp) -> R<Option<[bool; 8]>> {
        Ok(self
            .is_chain(hp)
            .then(|| std::array::from_fn(|i| !self.is_void(hp.slot(i)))))
    }

    #[inline(always)]
    fn suffix(self, buf: &'a [u8], s: Suffix, out: &mut Vec<u8>) -> R<()> {
        out.extend_from_slice(suffix_bytes(self, buf, s));
        Ok(())
    }

    #[inline(always)]
    fn value<'s>(self, buf: &'a [u8], v: ValRef, _: &'s mut Vec<u8>) -> R<&'s [u8]>
    where
        Self: 's,
    {
        Ok(val_bytes(self, buf, v))
    }

    #[inline(always)]
    fn check(self) -> R<()> {
        Ok(())
    }
}

/// Steps (events and containers entered) an optimistic walk takes between validations.
/// Once the version validates, everything read so far was consistent, and a consistent
/// trie has no cycles and bounded depth: so a walk over torn bytes — which may follow a
/// torn child pointer back up the trie — ends within this many steps of going wrong.
pub(crate) const CHECK_EVERY: usize = 256;

/// Visits, in ascending (or, `desc`, descending) order, the keys below root container
/// `root` that pass `bound` (a lower bound going up, an upper bound going down). `prefix`
/// holds the key bytes above the root (the arena's first byte); it is used as the key
/// buffer and restored on return.
///
/// Iterative (an explicit stack), so a trie as deep as the longest key (32,768 containers
/// for a 64 KiB key) needs no deep recursion. Each stack level reads one payload one
/// T-Node group at a time, so a walk costs the bytes it reads plus, at each level the
/// bound falls in, a seek: going up, the container jump table, the jump successors of the
/// T-Nodes before the bound's and the S-Nodes before the bound's in its group; going
/// down, the jump successors of the T-Nodes up to the bound's and the S-Nodes up to the
/// bound's. Of a split container only the parts on the bound's side are read.
///
/// Generic over the visitor, so a scan's copy into its batch is compiled into the loop
/// (`iter.rs`); [`Visit`] (a `dyn` visitor) works too. Generic over where it reads
/// ([`Src`]): under the arena's lock it cannot fail; optimistically it returns [`Torn`]
/// as soon as it reads bytes that cannot be consistent or a periodic [`Src::check`]
/// fails, and what it visited means something only as far as the caller validated it
/// (a scan's copy validates before keeping each pair: `iter.rs`).
pub(crate) fn walk<S: Src, V>(
    src: S,
    root: Hp,
    prefix: &mut Vec<u8>,
    bound: Bound<&[u8]>,
    desc: bool,
    visit: &mut V,
) -> R<ControlFlow<()>>
where
    V: FnMut(&[u8], &[u8]) -> ControlFlow<()> + ?Sized,
{
    let base = prefix.len();
    let b = match bound {
        Bound::Included(b) | Bound::Excluded(b) => Some(b),
        Bound::Unbounded => None,
    };
    let root_fit = b.map_or(Fit::All, |b| fit(prefix, b, desc));
    if root_fit == Fit::Skip {
        return Ok(ControlFlow::Continue(()));
    }
    // The explicit stack and the popped frames' vectors are reused from this thread's last
    // walk: a refill of a scan is one walk per trie, and a fresh stack's growth (a split
    // container pushes up to eight frames at once) would allocate per refill.
    let (stack, mut spare) = WALK_SCRATCH.with(|s| s.take());
    let mut stack: Vec<Frame<S::B>> = reuse(stack);
    let root_seek = if root_fit == Fit::Partial {
        seek_at(b, base)
    } else {
        None
    };
    let result = push_container(src, &mut stack, &mut spare, root, base, root_seek, desc)
        .and_then(|()| run(src, &mut stack, &mut spare, prefix, bound, desc, visit));
    prefix.truncate(base);
    for f in stack.drain(..) {
        spare.push((f.evs, f.groups));
    }
    for (evs, groups) in &mut spare {
        evs.clear();
        groups.clear();
    }
    WALK_SCRATCH.with(|s| s.set((reuse(stack), spare)));
    result
}

/// The bound's bytes below a prefix of length `plen` (of a subtree that fits Partial).
#[inline]
fn seek_at(b: Option<&[u8]>, plen: usize) -> Seek {
    let b = b?;
    Some((*b.get(plen)?, b.get(plen + 1).copied()))
}

/// Pushes the frames of the container `hp` (of the parts of a split container on the
/// bound's side, the first on top when ascending).
#[inline]
fn push_container<S: Src>(
    src: S,
    stack: &mut Vec<Frame<S::B>>,
    spare: &mut Spare,
    hp: Hp,
    plen: usize,
    seek: Seek,
    desc: bool,
) -> R<()> {
    let mut parts = [hp; 8];
    let mut n = 1;
    if let Some(full) = src.chain(hp)? {
        // The part holding the bound's T-Node key: slot `b0 / 32`, or the nearest slot
        // below it that holds a part (`MemoryManager::resolve`).
        let at = seek.map(|(b0, _)| {
            let mut i = usize::from(b0 / 32);
            while i > 0 && !full[i] {
                i -= 1;
            }
            i
        });
        let mut seen = false;
        n = 0;
        for (i, &full) in full.iter().enumerate() {
            if !full {
                continue;
            }
            let here = at == Some(i);
            seen |= here;
            // Going up, the parts before the bound's hold only smaller keys; going
            // down, the parts after it only greater ones.
            let keep = match at {
                None => true,
                Some(_) => here || (seen != desc),
            };
            if keep {
                parts[n] = hp.slot(i);
                n += 1;
            }
        }
    }
    let mut push_one = |p: Hp| -> R<()> {
        let c = src.container(p)?;
        let range = (cjt::payload_start_in(c)?, used_in(c)?);
        stack.push(Frame::new(c, range, true, plen, seek, desc, spare)?);
        Ok(())
    };
    if desc {
        parts[..n].iter().try_for_each(|&p| push_one(p))
    } else {
        parts[..n].iter().rev().try_for_each(|&p| push_one(p))
    }
}

/// The walk's loop over its stack (see [`walk`]).
#[inline(always)]
fn run<S: Src, V>(
    src: S,
    stack: &mut Vec<Frame<S::B>>,
    spare: &mut Spare,
    prefix: &mut Vec<u8>,
    bound: Bound<&[u8]>,
    desc: bool,
    visit: &mut V,
) -> R<ControlFlow<()>>
where
    V: FnMut(&[u8], &[u8]) -> ControlFlow<()> + ?Sized,
{
    let b = match bound {
        Bound::Included(b) | Bound::Excluded(b) => Some(b),
        Bound::Unbounded => None,
    };
    let mut scratch = Vec::new();
    let mut steps = 0usize;
    loop {
        if S::OPTIMISTIC {
            steps += 1;
            if steps.is_multiple_of(CHECK_EVERY) {
                src.check()?;
            }
        }
        let Some(f) = stack.last_mut() else {
            return Ok(ControlFlow::Continue(()));
        };
        let ev = if desc {
            let Some(&ev) = f.evs.get(f.i) else {
                if !f.load()? {
                    let f = stack.pop().expect("a frame");
                    spare.push((f.evs, f.groups));
                }
                continue;
            };
            f.i += 1;
            ev
        } else {
            let Some(ev) = f.next_up()? else {
                let f = stack.pop().expect("a frame");
                spare.push((f.evs, f.groups));
                continue;
            };
            ev
        };
        let (buf, plen, bounded) = (f.buf, f.plen, f.bounded);
        prefix.truncate(plen);
        match ev {
            Ev::Key { t, s, sfx, val } => {
                prefix.push(t);
                prefix.extend(s);
                if let Some(sfx) = sfx {
                    src.suffix(buf, sfx, prefix)?;
                }
                if (!bounded || key_ok(prefix, bound, desc))
                    && visit(prefix, src.value(buf, val, &mut scratch)?).is_break()
                {
                    return Ok(ControlFlow::Break(()));
                }
            }
            Ev::Enter {
                t,
                s,
                chunk,
                start,
                end,
            } => {
                prefix.push(t);
                prefix.push(s);
                let f = match (bounded, b) {
                    (true, Some(b)) => fit(prefix, b, desc),
                    _ => Fit::All,
                };
                if f == Fit::Skip {
                    continue;
                }
                let plen = prefix.len();
                let seek = if f == Fit::Partial {
                    seek_at(b, plen)
                } else {
                    None
                };
                match chunk {
                    Some(hp) => push_container(src, stack, spare, hp, plen, seek, desc)?,
                    None => {
                        let fr = Frame::new(buf, (start, end), false, plen, seek, desc, spare)?;
                        stack.push(fr);
                    }
                }
            }
        }
    }
}

thread_local! {
    /// The last walk's emptied stack and spare frame vectors, kept for the next walk on
    /// this thread (see [`walk`]).
    static WALK_SCRATCH: std::cell::Cell<(Vec<Frame<&'static [u8]>>, Spare)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// An empty stack of frames of another type, keeping the allocation: `v` is emptied and
/// collected in place (the standard library reuses a vector's buffer when collecting its
/// own `into_iter` into elements of the same size and alignment — a locked walk's frames
/// and an optimistic walk's have both; were it not to, this allocates).
fn reuse<A, B>(mut v: Vec<Frame<A>>) -> Vec<Frame<B>> {
    v.clear();
    v.into_iter().map(|_| unreachable!("emptied")).collect()
}
