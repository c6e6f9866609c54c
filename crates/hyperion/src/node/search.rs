//! Point searches in the byte format: the T-Node and S-Node searches of one payload
//! (generic over [`Bytes`], so the optimistic reader of `opt.rs` runs the same code), the
//! locked [`lookup`] below a root container, and its pipelined form [`Probe`] for
//! `get_many`.

use crate::mm::{Hp, MemoryManager};

use super::bytes::{Bytes, R, ok};
use super::format::{
    ChildRef, Node, Suffix, ValRef, jump_successor_in, parse_in, suffix_bytes, t_key_in, used,
    val_bytes,
};
use super::{cjt, tjt};

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
