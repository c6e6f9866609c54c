//! The byte format's constants and its node parser: container headers, values, S-Node
//! children, path-compressed suffixes (the layout is in the [module docs](super)), each
//! parser written once over [`Bytes`] with a slice form that cannot fail.

use crate::mm::{Hp, MemoryManager};

use super::bytes::{Bytes, R, Torn, hp_in, ok, u16_in, u32_in};

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
/// (`Frame::next_up` in `walk.rs`), where the call and the [`Node`] returned through memory cost a
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
