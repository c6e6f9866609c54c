//! A writer's view of a container: its descent through the containers to a key
//! ([`descend`], recording every payload level), where the key's first two bytes are in a
//! level ([`locate`]), the [`Splice`] a write plans, and the jump-field fix-up every
//! splice ends with ([`fix_jumps`]).

use crate::mm::{Hp, MemoryManager};
use crate::node::{ChildRef, cjt, jump_successor, parse, tjt, used};

use super::cjt::TMove;
use super::tjt::set_entry as set_tjt_entry;

/// One payload level of a container on a writer's path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Level {
    /// Payload range in the block.
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// For an embedded container: the offsets of its S-Node's flag byte and of its size
    /// byte.
    pub(crate) emb: Option<(usize, usize)>,
    /// Key bytes (of the trie key below the root) consumed above this level.
    pub(crate) off: usize,
    /// Offset of the T-Node through which the path leaves this level (for the last level
    /// of a container: 0).
    pub(crate) t_at: usize,
    /// S-Nodes of that T-Node the descent passed (for T-Node jump tables, `tjt.rs`).
    pub(crate) s_hops: usize,
}

/// One container on a writer's path.
#[derive(Clone, Debug)]
pub(crate) struct CPath {
    /// The container (for a split container: the part the key is in).
    pub(crate) hp: Hp,
    /// What its parent's pointer holds: `hp`, or the chain of a split container.
    pub(crate) link: Hp,
    /// Offset of this container's pointer in its parent's block (`None` for the root).
    pub(crate) at: Option<usize>,
    /// Its payload levels on the path, outermost first.
    pub(crate) levels: Vec<Level>,
}

/// Replace `block[a..b]` by `bytes`.
#[derive(Debug)]
pub(crate) struct Splice {
    pub(super) a: usize,
    pub(super) b: usize,
    pub(super) bytes: Vec<u8>,
    /// Offset of the T-Node (at the splice's level) whose group holds the splice, or
    /// where the splice starts (a T-Node is inserted or deleted there).
    pub(super) t: usize,
    /// What became of the T-Node at `a` (for the container jump table).
    pub(super) tmove: TMove,
}

impl Splice {
    /// Replaces the T-Node group `[a, b)` of a container's own payload (the T-Node at `a`
    /// stays there, re-encoded) by `bytes`.
    pub(crate) fn keep(a: usize, b: usize, bytes: Vec<u8>) -> Splice {
        Splice {
            a,
            b,
            bytes,
            t: a,
            tmove: TMove::Keep,
        }
    }
}

/// Header length (flag and key byte) of the node with flag `f`.
#[inline]
pub(super) fn hdr_len(f: u8) -> usize {
    1 + usize::from((f >> 2) & 7 == 0)
}

#[inline]
pub(super) fn is_s(f: u8) -> bool {
    f & 0x20 != 0
}

/// The key of the node at `pos` whose previous sibling has key `prev`.
#[inline]
pub(super) fn key_at(buf: &[u8], pos: usize, prev: u8) -> u8 {
    match (buf[pos] >> 2) & 7 {
        0 => buf[pos + 1],
        d => prev.wrapping_add(d),
    }
}

/// `(d, explicit)`: the delta field for `key` after sibling key `prev`.
#[inline]
pub(super) fn delta(prev: u8, key: u8) -> (u8, bool) {
    match key.wrapping_sub(prev) {
        d @ 1..=7 if key > prev => (d, false),
        _ => (0, true),
    }
}

/// Appends the header of the node at `pos` (key `key`) re-encoded after a new previous
/// sibling `prev`; returns the old header's length.
pub(super) fn rehdr(buf: &[u8], pos: usize, key: u8, prev: u8, out: &mut Vec<u8>) -> usize {
    let f = buf[pos];
    let (d, explicit) = delta(prev, key);
    out.push((f & !0x1C) | d << 2);
    if explicit {
        out.push(key);
    }
    hdr_len(f)
}

/// Recomputes the jump fields — jump successor and T-Node jump table (`tjt.rs`) — of the
/// T-Nodes of a container's payload that start in `[from, until)` (`from` is a T-Node's
/// offset, or the payload's end), in `buf` of `used` bytes. A distance over 65,535 bytes
/// is stored as 0 (no jump).
pub(crate) fn fix_jumps(buf: &mut [u8], from: usize, until: usize, used: usize) {
    let mut pos = from;
    while pos < used && pos < until {
        let f = buf[pos];
        debug_assert!(!is_s(f), "jump fix-ups start at a T-Node");
        let t_end = parse(buf, pos, 0).next;
        let mut p = t_end;
        if f & 1 != 0 {
            let tab = tjt::table_at(buf, pos);
            let mut prev = 0u8;
            while p < used && is_s(buf[p]) {
                let n = parse(buf, p, prev);
                if tjt::is_destination(n.key) {
                    set_tjt_entry(buf, tab, usize::from(n.key >> 4) - 1, p - t_end);
                }
                prev = n.key;
                p = n.next;
            }
        }
        while p < used && is_s(buf[p]) {
            p = parse(buf, p, 0).next;
        }
        if f & 2 != 0 {
            let at = pos + hdr_len(f);
            let d = u16::try_from(p - pos).unwrap_or(0);
            buf[at..at + 2].copy_from_slice(&d.to_le_bytes());
        }
        pos = p;
    }
}

#[cfg(test)]
thread_local! {
    /// Splices whose jump fields [`shift_jumps`] moved (this thread, for tests).
    pub(crate) static SHIFTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// [`fix_jumps`] for a splice inside one T-Node's group, without walking the group: the
/// T-Node at `t` (of a container's own payload) had its S-Nodes' bytes `[a, b)` (`t < a`)
/// replaced by S-Node bytes, which moved everything from `b` on by `delta`; `end` is
/// where the new bytes end (`a + len`). Its jump successor grows by `delta`, and the
/// entries of its T-Node jump table that name an S-Node at or after `b` by `delta`
/// (those before `a` stay). Returns `false`, changing nothing, where that is not enough
/// — no jump successor (or one stored as 0), a splice reaching past the group's end or a
/// group that would not end at or past `end`, a
/// distance out of 16 bits — and the caller runs [`fix_jumps`]. A table entry whose
/// S-Node was in `[a, b)` (re-encoded) is found again by decoding the S-Nodes from the
/// table's last destination before `a` up to `end`.
///
/// An insert into a group of `g` S-Nodes costs [`fix_jumps`] `g` node parses (every
/// S-Node of the T-Node, for the table's entries and the group's end); this costs 15
/// entry reads, and at most the 16 S-Nodes from a destination on when the splice
/// re-encoded one.
pub(crate) fn shift_jumps(
    buf: &mut [u8],
    t: usize,
    (a, b, end): (usize, usize, usize),
    delta: isize,
) -> bool {
    let f = buf[t];
    debug_assert!(!is_s(f) && t < a && a <= b);
    if f & 2 == 0 {
        return false;
    }
    let at = t + hdr_len(f);
    let d = usize::from(u16::from_le_bytes([buf[at], buf[at + 1]]));
    let Some(nd) = d
        .checked_add_signed(delta)
        .filter(|&nd| d != 0 && b <= t + d && t + nd >= end && t + nd > a)
        .and_then(|nd| u16::try_from(nd).ok())
    else {
        return false;
    };
    let mut entries = [0u16; tjt::ENTRIES];
    if f & 1 != 0 {
        let tab = tjt::table_at(buf, t);
        // The T-Node's own bytes end before `a`: `t_end` is the same before and after.
        let t_end = parse(buf, t, 0).next;
        debug_assert!(t_end <= a);
        // Entries naming S-Nodes in `[a, b)` (re-encoded), and the last one before `a`.
        let (mut pending, mut below) = (0u16, None);
        for (i, e) in entries.iter_mut().enumerate() {
            let old = u16::from_le_bytes([buf[tab + 2 * i], buf[tab + 2 * i + 1]]);
            let pos = t_end + usize::from(old);
            if pos < a {
                *e = old;
                below = Some(i);
            } else if pos >= b {
                match usize::from(old)
                    .checked_add_signed(delta)
                    .and_then(|n| u16::try_from(n).ok())
                {
                    Some(n) => *e = n,
                    None => return false,
                }
            } else {
                pending |= 1 << i;
            }
        }
        if pending != 0 {
            // Find them among the new bytes, decoding keys from the last destination
            // before `a` (its key is known: `16·(i+1)`), at most 16 S-Nodes on.
            let (mut p, mut prev) = match below {
                Some(i) => (t_end + usize::from(entries[i]), (16 * i + 16) as u8),
                None => (t_end, 0),
            };
            if below.is_some() {
                // Decode the destination itself from its known key.
                let d = (buf[p] >> 2) & 7;
                prev = prev.wrapping_sub(d);
            }
            while p < end && pending != 0 {
                let n = parse(buf, p, prev);
                if p >= a && tjt::is_destination(n.key) {
                    let i = usize::from(n.key >> 4) - 1;
                    let Ok(off) = u16::try_from(p - t_end) else {
                        return false;
                    };
                    entries[i] = off;
                    pending &= !(1 << i);
                }
                prev = n.key;
                p = n.next;
            }
            if pending != 0 {
                return false;
            }
        }
        for (i, e) in entries.iter().enumerate() {
            set_tjt_entry(buf, tab, i, usize::from(*e));
        }
    }
    buf[at..at + 2].copy_from_slice(&nd.to_le_bytes());
    true
}

/// Where a key's first two bytes are in a payload level.
pub(crate) struct Loc {
    /// Key of the previous T-Node (0 if none).
    pub(super) prev_t: u8,
    /// Offset of the T-Node, or where it would be inserted.
    pub(crate) ts: usize,
    /// The T-Node, if found: the end of the T-Node itself (value included).
    pub(crate) t_end: Option<usize>,
    /// The S-Node (if the key has a second byte and the T-Node exists).
    pub(super) s: Option<SLoc>,
    /// T-Nodes passed (after the jump table's entry).
    pub(crate) hops: usize,
    /// S-Nodes passed in the T-Node's group (after its jump table's destination).
    pub(crate) s_hops: usize,
}

/// Where a key's second byte is below its T-Node.
pub(super) struct SLoc {
    /// Key of the previous S-Node (0 if none).
    pub(super) prev_s: u8,
    /// Offset of the S-Node, or where it would be inserted.
    pub(super) ss: usize,
    /// The S-Node's end, if found.
    pub(super) se: Option<usize>,
}

/// The S-Nodes from `pos` (up to the next T-Node or `end`), counted up to `limit`.
pub(super) fn count_s_nodes(buf: &[u8], mut pos: usize, end: usize, limit: usize) -> usize {
    let mut n = 0;
    while n < limit && pos < end && is_s(buf[pos]) {
        n += 1;
        pos = parse(buf, pos, 0).next;
    }
    n
}

/// The T-Nodes of a container's own payload from `pos` (a T-Node whose previous sibling
/// has key `prev`, or `end`) whose keys are below `stop` (all if `None`), counted up to
/// `limit`; T-Node groups are skipped by their jump successors.
pub(super) fn count_t_nodes(
    buf: &[u8],
    mut pos: usize,
    end: usize,
    mut prev: u8,
    stop: Option<u8>,
    limit: usize,
) -> usize {
    let mut n = 0;
    while n < limit && pos < end {
        if is_s(buf[pos]) {
            pos = parse(buf, pos, 0).next;
            continue;
        }
        let key = key_at(buf, pos, prev);
        if stop.is_some_and(|s| key >= s) {
            break;
        }
        n += 1;
        prev = key;
        pos = match jump_successor(buf, pos) {
            Some(d) => pos + d,
            None => parse(buf, pos, 0).next,
        };
    }
    n
}

/// Where a writer's search for T-Node key `k0` in a container's own payload (of `end`
/// bytes) starts: a T-Node and the key of its previous sibling, which a writer needs
/// (to re-encode the T-Node of `k0`, or the one a new T-Node goes before).
///
/// The container jump table's last entry at most `k0` is taken when it names the T-Node
/// of `k0` itself and that T-Node is delta encoded: its previous sibling's key is then
/// its own key less the delta, and the search starts at its T-Node — one cache miss,
/// like a reader's. Otherwise (an explicit key, whose previous sibling the table does not
/// tell, or an entry below `k0`) the search starts at the last entry *below* `k0`
/// ([`cjt::seek_before`]) and walks on from there. (Always starting below `k0` cost an
/// insert a second DRAM miss whenever the table had an entry for `k0`'s T-Node — every
/// insert into a part of a split root container but its first T-Node's:
/// `docs/results/hyperion/insert-1203.md`.)
#[inline]
fn seek_writer(buf: &[u8], end: usize, k0: u8) -> (usize, u8) {
    let (off, prev) = cjt::seek(buf, k0);
    if off < end && (buf[off] >> 2) & 7 != 0 && key_at(buf, off, prev) == k0 {
        return (off, prev);
    }
    cjt::seek_before(buf, k0)
}

/// Finds `k0` (and `k1`) in the payload level `l` of `buf` (a container's own payload
/// is entered through its jump table, a T-Node's S-Nodes through its table).
pub(crate) fn locate(buf: &[u8], l: &Level, k0: u8, k1: Option<u8>) -> Loc {
    let (start, end) = (l.start, l.end);
    let (mut pos, mut prev_t) = match l.emb {
        None => seek_writer(buf, end, k0),
        Some(_) => (start, 0),
    };
    let mut hops = 0;
    while pos < end {
        let f = buf[pos];
        if is_s(f) {
            pos = parse(buf, pos, 0).next;
            continue;
        }
        let key = key_at(buf, pos, prev_t);
        if key < k0 {
            prev_t = key;
            hops += 1;
            pos = match jump_successor(buf, pos) {
                Some(d) => pos + d,
                None => parse(buf, pos, 0).next,
            };
            continue;
        }
        if key > k0 {
            break;
        }
        let ts = pos;
        let t_end = parse(buf, pos, prev_t).next;
        let mut s_hops = 0;
        let s = k1.map(|k1| {
            let (mut p, mut prev_s) = if f & 1 != 0 {
                tjt::seek_before(buf, pos, t_end, k1)
            } else {
                (t_end, 0)
            };
            while p < end && is_s(buf[p]) {
                let key = key_at(buf, p, prev_s);
                if key >= k1 {
                    let se = (key == k1).then(|| parse(buf, p, prev_s).next);
                    return SLoc { prev_s, ss: p, se };
                }
                prev_s = key;
                s_hops += 1;
                p = parse(buf, p, prev_s).next;
            }
            SLoc {
                prev_s,
                ss: p,
                se: None,
            }
        });
        return Loc {
            prev_t,
            ts,
            t_end: Some(t_end),
            s,
            hops,
            s_hops,
        };
    }
    Loc {
        prev_t,
        ts: pos,
        t_end: None,
        s: None,
        hops,
        s_hops: 0,
    }
}

/// The containers a write of `key` (the trie key below the root, non-empty) passes
/// through, root first, with the payload levels of the last one: where the key's path
/// ends (the key ends in it, or leaves it at a missing node or a path-compressed suffix).
pub(crate) fn descend(mm: &MemoryManager, root: Hp, key: &[u8]) -> Vec<CPath> {
    // Capacities for the common depths, so that a descent allocates each vector once.
    let mut path = Vec::with_capacity(4);
    let (mut link, mut at, mut off) = (root, None, 0usize);
    'containers: loop {
        let hp = mm.resolve(link, key[off]);
        let buf = mm.get(hp);
        let mut levels = Vec::with_capacity(4);
        levels.push(Level {
            start: cjt::payload_start(buf),
            end: used(buf),
            emb: None,
            off,
            t_at: 0,
            s_hops: 0,
        });
        loop {
            let l = *levels.last().expect("a level");
            let sub = &key[off..];
            if sub.len() < 3 {
                break;
            }
            let loc = locate(buf, &l, sub[0], Some(sub[1]));
            let Some(SLoc {
                ss, se: Some(_), ..
            }) = loc.s
            else {
                break;
            };
            let n = parse(buf, ss, 0);
            if matches!(n.child, ChildRef::Emb(..) | ChildRef::Hp(..)) {
                let l = levels.last_mut().expect("a level");
                l.t_at = loc.ts;
                l.s_hops = loc.s_hops;
            }
            match n.child {
                ChildRef::Emb(a, b) => {
                    off += 2;
                    levels.push(Level {
                        start: a,
                        end: b,
                        emb: Some((ss, a - 1)),
                        off,
                        t_at: 0,
                        s_hops: 0,
                    });
                }
                ChildRef::Hp(child, p) => {
                    off += 2;
                    path.push(CPath {
                        hp,
                        link,
                        at,
                        levels,
                    });
                    (link, at) = (child, Some(p));
                    continue 'containers;
                }
                _ => break,
            }
        }
        path.push(CPath {
            hp,
            link,
            at,
            levels,
        });
        return path;
    }
}
