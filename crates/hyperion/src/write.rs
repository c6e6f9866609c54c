//! In-place writes (§3.1 "Operations", Fig 8): a write changes one node of one payload
//! level and shifts the container's tail within its exact-fit block.
//!
//! # Protocol of a write
//!
//! 1. [`descend`] follows the key through the containers (Hyperion Pointers) and, in the
//!    last container, through its embedded containers, recording every payload *level*
//!    (the container's own payload, then each embedded payload on the path, with the
//!    offsets of its S-Node flag and size byte).
//! 2. The change is planned on the innermost level as one *splice*: the bytes
//!    `[a, b)` of the block are replaced by new bytes. Only the nodes that change are
//!    re-encoded — the T-Node or S-Node the key ends at (or a new one), and the header of
//!    the following sibling, whose delta encoding depends on its predecessor's key.
//! 3. [`ArenaInner::apply`] applies the splice: the size bytes of every enclosing embedded
//!    container change by the splice's length difference; an embedded container that would
//!    exceed 255 bytes is ejected (Fig 8: its new payload goes to a new block, and its
//!    bytes in the parent are replaced by a Hyperion Pointer, `c = 01`), as is the
//!    outermost embedded container on an insert's path once the container exceeds the
//!    ejection threshold. Then the tail of the container is shifted (`copy_within`) and
//!    the new bytes written. When the container no longer fits its block, it moves: an
//!    extended block (superbin 0) gets a new heap block behind the *same* Hyperion Pointer
//!    ([`MemoryManager::regrow`], the paper's realloc), a chunk moves to the chunk of its
//!    new size class and the parent's pointer is patched. A shrinking container moves to
//!    its exact fit the same way when the smaller block can be had, else stays. The
//!    container jump table's entries shift (`cjt.rs`), and the jump fields — successor
//!    and T-Node jump table (`tjt.rs`) — of the T-Node whose group changed are recomputed
//!    ([`fix_jumps`]).
//! 4. After the write, a T-Node whose S-Nodes the writer passed at length, or whose group
//!    its new S-Node made long, gets a T-Node jump table (`tjt.rs`), a container whose
//!    T-Nodes it passed at length, or whose run of T-Nodes between two table entries
//!    its new T-Node made long, a rebuilt
//!    container jump table (`cjt.rs`), and a large container may be split (`split.rs`).
//!
//! # Failure
//!
//! Every allocation of a write (values and suffixes out of line, new containers of a
//! path-compressed split, ejected containers, the container's new block) happens before
//! the first byte of an existing block is written, and is recorded in the [`Txn`]: an
//! allocation failure frees the new blocks and leaves the trie unchanged. Removal never
//! fails (it only shrinks).

use orrery_core::api::Result;

use crate::arena::ArenaInner;
use crate::cjt::{self, TMove};
use crate::edit::{Ctx, SNode, Txn, decode_snode, decode_tval};
use crate::mm::{Hp, MemoryManager, capacity_for};
use crate::node::{C_EMB, C_HP, ChildRef, EMBED_MAX, jump_successor, parse, set_used, used};
use crate::tjt;

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
    a: usize,
    b: usize,
    bytes: Vec<u8>,
    /// Offset of the T-Node (at the splice's level) whose group holds the splice, or
    /// where the splice starts (a T-Node is inserted or deleted there).
    t: usize,
    /// What became of the T-Node at `a` (for the container jump table).
    tmove: TMove,
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
fn hdr_len(f: u8) -> usize {
    1 + usize::from((f >> 2) & 7 == 0)
}

#[inline]
fn is_s(f: u8) -> bool {
    f & 0x20 != 0
}

/// The key of the node at `pos` whose previous sibling has key `prev`.
#[inline]
fn key_at(buf: &[u8], pos: usize, prev: u8) -> u8 {
    match (buf[pos] >> 2) & 7 {
        0 => buf[pos + 1],
        d => prev.wrapping_add(d),
    }
}

/// `(d, explicit)`: the delta field for `key` after sibling key `prev`.
#[inline]
fn delta(prev: u8, key: u8) -> (u8, bool) {
    match key.wrapping_sub(prev) {
        d @ 1..=7 if key > prev => (d, false),
        _ => (0, true),
    }
}

/// Appends the header of the node at `pos` (key `key`) re-encoded after a new previous
/// sibling `prev`; returns the old header's length.
fn rehdr(buf: &[u8], pos: usize, key: u8, prev: u8, out: &mut Vec<u8>) -> usize {
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
                    tjt::set_entry(buf, tab, usize::from(n.key >> 4) - 1, p - t_end);
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

/// Where a key's first two bytes are in a payload level.
pub(crate) struct Loc {
    /// Key of the previous T-Node (0 if none).
    prev_t: u8,
    /// Offset of the T-Node, or where it would be inserted.
    pub(crate) ts: usize,
    /// The T-Node, if found: the end of the T-Node itself (value included).
    pub(crate) t_end: Option<usize>,
    /// The S-Node (if the key has a second byte and the T-Node exists).
    s: Option<SLoc>,
    /// T-Nodes passed (after the jump table's entry).
    pub(crate) hops: usize,
    /// S-Nodes passed in the T-Node's group (after its jump table's destination).
    pub(crate) s_hops: usize,
}

struct SLoc {
    prev_s: u8,
    /// Offset of the S-Node, or where it would be inserted.
    ss: usize,
    /// The S-Node's end, if found.
    se: Option<usize>,
}

/// The S-Nodes from `pos` (up to the next T-Node or `end`), counted up to `limit`.
fn count_s_nodes(buf: &[u8], mut pos: usize, end: usize, limit: usize) -> usize {
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
fn count_t_nodes(
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

/// Finds `k0` (and `k1`) in the payload level `l` of `buf` (a container's own payload
/// is entered through its jump table, a T-Node's S-Nodes through its table).
pub(crate) fn locate(buf: &[u8], l: &Level, k0: u8, k1: Option<u8>) -> Loc {
    let (start, end) = (l.start, l.end);
    let (mut pos, mut prev_t) = match l.emb {
        None => cjt::seek_before(buf, k0),
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
    let mut path = Vec::new();
    let (mut link, mut at, mut off) = (root, None, 0usize);
    'containers: loop {
        let hp = mm.resolve(link, key[off]);
        let buf = mm.get(hp);
        let mut levels = vec![Level {
            start: cjt::payload_start(buf),
            end: used(buf),
            emb: None,
            off,
            t_at: 0,
            s_hops: 0,
        }];
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

/// What happens to a container a removal empties.
enum Retire {
    /// Freed: its parent's pointer goes.
    Gone,
    /// A split container's part whose slot is made void.
    Voided,
    /// A split container's first part, kept empty.
    Keep,
}

/// What a removal clears at the node its key bytes name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Clear {
    /// The key (its value, or its path-compressed suffix).
    Key,
    /// The S-Node's child (an emptied embedded or child container).
    Child,
}

impl ArenaInner {
    /// Inserts or replaces `key` (the trie key below root `b`, non-empty) → `v`.
    pub(crate) fn store_in(&mut self, b: usize, key: &[u8], v: &[u8]) -> Result<()> {
        let mut txn = Txn::default();
        let mut tables = Vec::new();
        let r = self.store_txn(b, key, v, &mut txn, &mut tables);
        match r {
            Ok(path) => {
                txn.commit(&mut self.mm);
                if let Some(path) = path {
                    self.maybe_split(&path, path.len() - 1);
                }
                for off in tables {
                    self.build_tjt(b, key, off);
                }
                Ok(())
            }
            Err(e) => {
                txn.abort(&mut self.mm);
                Err(e)
            }
        }
    }

    /// The insert, recorded in `txn`; returns the path it took (`None` for a new root).
    /// Adds to `tables` the key offsets of the T-Nodes (of containers' own payloads) due
    /// for a T-Node jump table.
    fn store_txn(
        &mut self,
        b: usize,
        key: &[u8],
        v: &[u8],
        txn: &mut Txn,
        tables: &mut Vec<usize>,
    ) -> Result<Option<Vec<CPath>>> {
        let Some(root) = self.roots[b].hp else {
            let mut ctx = Ctx {
                old: &[],
                mm: &mut self.mm,
                txn,
            };
            let val = crate::edit::new_val(ctx.mm, ctx.txn, v)?;
            let mut c = crate::edit::Cont::default();
            ctx.insert(&mut c, key, val)?;
            let mut payload = Vec::new();
            ctx.encode(&c, &mut payload)?;
            let hp = ctx.new_container(&payload)?;
            self.roots[b].hp = Some(hp);
            return Ok(None);
        };
        let path = descend(&self.mm, root, key);
        let ci = path.len() - 1;
        let l = *path[ci].levels.last().expect("a level");
        let sub = &key[l.off..];
        let buf = self.mm.get(path[ci].hp);
        let loc = locate(buf, &l, sub[0], sub.get(1).copied());
        let n = path[ci].levels.len();
        // T-Node jump tables (§3.3) for the T-Nodes of the containers' own payloads whose
        // S-Nodes this writer scanned at length — or, where it adds an S-Node to a T-Node
        // without a table, whose group this makes long: a writer inserting in front of
        // what it would pass (descending keys) passes nothing, and its T-Node would never
        // get a table that every later search needs. Counting the group's S-Nodes after
        // the new one stops at the threshold, so a writer never counts more than
        // `BUILD_HOPS` S-Nodes in all.
        let group_s = match (&loc.t_end, &loc.s) {
            (Some(_), Some(s)) if n == 1 && s.se.is_none() && buf[loc.ts] & 1 == 0 => {
                let limit = tjt::BUILD_HOPS.saturating_sub(loc.s_hops + 1);
                loc.s_hops + 1 + count_s_nodes(buf, s.ss, l.end, limit)
            }
            _ => loc.s_hops,
        };
        // Likewise the container jump table (§3.3) of an extended container that gets a
        // new T-Node: rebuilt when the T-Nodes from the table's entry below the new one to
        // its next entry (or the end) reach `REBUILD_HOPS` — the T-Nodes a search passes.
        let cjt_due = n == 1
            && loc.t_end.is_none()
            && MemoryManager::is_extended(path[ci].hp)
            && loc.hops
                + 1
                + count_t_nodes(
                    buf,
                    loc.ts,
                    l.end,
                    loc.prev_t,
                    cjt::next_entry_key(buf, sub[0]),
                    cjt::REBUILD_HOPS.saturating_sub(loc.hops + 1),
                )
                >= cjt::REBUILD_HOPS;
        for (i, c) in path.iter().enumerate() {
            let hops = if i == ci && n == 1 {
                group_s
            } else {
                c.levels[0].s_hops
            };
            if hops >= tjt::BUILD_HOPS {
                tables.push(c.levels[0].off);
            }
        }
        // Jump successors (§3.3) are kept on the T-Nodes of a container's own payload
        // (embedded containers are at most 255 bytes): a T-Node gets one when its second
        // S-Node arrives (the paper's default threshold, 2).
        let add_js = n == 1
            && matches!((&loc.t_end, &loc.s), (Some(te), Some(SLoc { se: None, .. }))
                if buf[loc.ts] & 2 == 0 && *te < l.end && is_s(buf[*te]));
        // Copy what the plan reads of the block, so the block is not borrowed while the
        // context allocates.
        let (a, b_end, scratch, next) = match (&loc.t_end, &loc.s) {
            (Some(te), _) if sub.len() == 1 => (loc.ts, *te, buf[loc.ts..*te].to_vec(), None),
            (Some(_), Some(s)) => match s.se {
                Some(se) => (s.ss, se, buf[s.ss..se].to_vec(), None),
                None if add_js => {
                    // The T-Node gets its second S-Node: re-encode it with a jump
                    // successor (set after the splice), its S-Nodes before `ss` follow.
                    let next = (s.ss < l.end && is_s(buf[s.ss])).then(|| {
                        let k = key_at(buf, s.ss, s.prev_s);
                        let mut h = Vec::new();
                        let n = rehdr(buf, s.ss, k, sub[1], &mut h);
                        (n, h)
                    });
                    (loc.ts, s.ss, buf[loc.ts..s.ss].to_vec(), next)
                }
                None => {
                    let next = (s.ss < l.end && is_s(buf[s.ss])).then(|| {
                        let k = key_at(buf, s.ss, s.prev_s);
                        let mut h = Vec::new();
                        let n = rehdr(buf, s.ss, k, sub[1], &mut h);
                        (n, h)
                    });
                    (s.ss, s.ss, Vec::new(), next)
                }
            },
            _ => {
                let next = (loc.ts < l.end).then(|| {
                    let k = key_at(buf, loc.ts, loc.prev_t);
                    let mut h = Vec::new();
                    let n = rehdr(buf, loc.ts, k, sub[0], &mut h);
                    (n, h)
                });
                (loc.ts, loc.ts, Vec::new(), next)
            }
        };
        let mut ctx = Ctx {
            old: &scratch,
            mm: &mut self.mm,
            txn,
        };
        let val = crate::edit::new_val(ctx.mm, ctx.txn, v)?;
        let mut bytes = Vec::with_capacity(scratch.len() + 16);
        let mut b_end = b_end;
        match (&loc.t_end, &loc.s) {
            (Some(_), _) if sub.len() == 1 => {
                // The T-Node exists: re-encode it with the new value.
                let f = scratch[0];
                let h = hdr_len(f);
                let jl = 2 * usize::from(f & 2 != 0) + 30 * usize::from(f & 1 != 0);
                let mut slot = decode_tval(&scratch);
                ctx.replace(&mut slot, val);
                ctx.encode_tnode(
                    loc.prev_t,
                    sub[0],
                    f & 3,
                    &scratch[h..h + jl],
                    &slot,
                    &mut bytes,
                );
            }
            (Some(_), Some(s)) => {
                if add_js {
                    let f = scratch[0];
                    let h = hdr_len(f);
                    bytes.extend_from_slice(&scratch[..h]);
                    bytes[0] |= 2;
                    bytes.extend_from_slice(&[0, 0]);
                    bytes.extend_from_slice(&scratch[h..]);
                    debug_assert_eq!(bytes.len(), scratch.len() + 2);
                }
                let mut sn = match s.se {
                    Some(_) => decode_snode(&scratch, s.prev_s),
                    None => SNode::empty(sub[1]),
                };
                ctx.set_in_snode(&mut sn, &sub[2..], val)?;
                ctx.encode_snode(s.prev_s, &sn, &mut bytes)?;
                if let Some((n, h)) = &next {
                    bytes.extend_from_slice(h);
                    b_end += n;
                }
            }
            _ => {
                // A new T-Node (and S-Node) before the T-Node at the insertion point.
                if sub.len() == 1 {
                    ctx.encode_tnode(loc.prev_t, sub[0], 0, &[], &Some(val), &mut bytes);
                } else {
                    ctx.encode_tnode(loc.prev_t, sub[0], 0, &[], &None, &mut bytes);
                    let mut sn = SNode::empty(sub[1]);
                    ctx.set_in_snode(&mut sn, &sub[2..], val)?;
                    ctx.encode_snode(0, &sn, &mut bytes)?;
                }
                if let Some((n, h)) = &next {
                    bytes.extend_from_slice(h);
                    b_end += n;
                }
            }
        }
        let t = loc.ts;
        let tmove = match (&loc.t_end, &loc.s) {
            (Some(_), _) if sub.len() == 1 => TMove::Keep,
            (Some(_), Some(_)) if add_js => TMove::Keep,
            (Some(_), Some(_)) => TMove::Before,
            _ => match &next {
                Some((_, h)) => TMove::Insert(bytes.len() - h.len()),
                None => TMove::Before,
            },
        };
        self.apply(
            txn,
            &path,
            ci,
            n,
            Splice {
                a,
                b: b_end,
                bytes,
                t,
                tmove,
            },
            true,
        )?;
        if loc.hops >= cjt::REBUILD_HOPS || cjt_due {
            self.rebuild_cjt(path[ci].hp);
        }
        Ok(Some(path))
    }

    /// Removes `key` (the trie key below root `b`, non-empty; present). Never fails.
    pub(crate) fn delete_in(&mut self, b: usize, key: &[u8]) {
        let Some(root) = self.roots[b].hp else {
            return;
        };
        let path = descend(&self.mm, root, key);
        let mut txn = Txn::default();
        let mut ci = path.len() - 1;
        let mut n = path[ci].levels.len();
        let mut what = Clear::Key;
        loop {
            let l = path[ci].levels[n - 1];
            let sub = if what == Clear::Key {
                &key[l.off..]
            } else {
                &key[l.off..l.off + 2]
            };
            let Some(sp) = self.plan_remove(&mut txn, path[ci].hp, l, sub, what) else {
                break;
            };
            let emptied = l.end - l.start + sp.bytes.len() == sp.b - sp.a;
            if !emptied {
                // Cannot fail: a shrinking splice allocates only optionally.
                let _ = self.apply(&mut txn, &path, ci, n, sp, false);
                break;
            }
            what = Clear::Child;
            if n > 1 {
                n -= 1;
                continue;
            }
            // The container is empty: free it and clear its parent's pointer (a part of a
            // split container only when the whole chain is then empty).
            match self.retire_container(&mut txn, &path[ci]) {
                Retire::Gone => {}
                Retire::Voided => break,
                Retire::Keep => {
                    let _ = self.apply(&mut txn, &path, ci, n, sp, false);
                    break;
                }
            }
            if ci == 0 {
                self.roots[b].hp = None;
                break;
            }
            ci -= 1;
            n = path[ci].levels.len();
        }
        txn.commit(&mut self.mm);
    }

    /// Retires the container of `c`, which a removal empties; returns whether its parent's
    /// pointer must go. A part of a split container: a part other than the first is freed
    /// and its slot made void (its key range falls to the part below); the first part
    /// stays (empty) while other parts exist; when none remains the whole chain goes.
    fn retire_container(&mut self, txn: &mut Txn, c: &CPath) -> Retire {
        if c.hp == c.link && !self.mm.is_chain(c.link) {
            txn.retire(c.hp);
            return Retire::Gone;
        }
        let (base, slot) = c.hp.chain_of();
        let others = (1..8).any(|i| i != slot && !self.mm.is_void(base.slot(i)));
        if others && slot == 0 {
            return Retire::Keep;
        }
        let first = self.mm.get(base);
        if others || (slot != 0 && used(first) > cjt::payload_start(first)) {
            txn.retire_slot(c.hp);
            return Retire::Voided;
        }
        txn.retire_chain(base);
        Retire::Gone
    }

    /// The splice that clears `what` at `sub` in level `l` of container `hp`, pruning the
    /// nodes left empty; `None` when there is nothing to clear.
    fn plan_remove(
        &mut self,
        txn: &mut Txn,
        hp: Hp,
        l: Level,
        sub: &[u8],
        what: Clear,
    ) -> Option<Splice> {
        let buf = self.mm.get(hp);
        let loc = locate(buf, &l, sub[0], sub.get(1).copied());
        let t_end = loc.t_end?;
        let mut bytes = Vec::new();
        // Deleting the whole T-Node `[ts, end)`: the next T-Node's header is re-encoded.
        let drop_t = |end: usize, bytes: &mut Vec<u8>| {
            let mut b = end;
            let mut next = None;
            if end < l.end {
                let k = key_at(buf, end, key_at(buf, loc.ts, loc.prev_t));
                b += rehdr(buf, end, k, loc.prev_t, bytes);
                next = Some(k);
            }
            Splice {
                a: loc.ts,
                b,
                bytes: std::mem::take(bytes),
                t: loc.ts,
                tmove: TMove::Delete(next),
            }
        };
        let scratch_t = buf[loc.ts..t_end].to_vec();
        let has_s = t_end < l.end && is_s(buf[t_end]);
        // A T-Node with a jump table (`tjt.rs`): the end of its group, and whether it has
        // an S-Node other than the one at `except` that is not a placeholder.
        let table = buf[loc.ts] & 1 != 0;
        let group = |except: usize| {
            let (mut p, mut real) = (t_end, false);
            while p < l.end && is_s(buf[p]) {
                real |= p != except && !tjt::is_placeholder(buf[p]);
                p = parse(buf, p, 0).next;
            }
            (p, real)
        };
        if sub.len() == 1 {
            let mut slot = decode_tval(&scratch_t);
            slot.as_ref()?;
            let (g_end, real) = if table {
                group(usize::MAX)
            } else {
                (t_end, has_s)
            };
            if !real {
                let sp = drop_t(g_end, &mut bytes);
                let mut ctx = Ctx {
                    old: &scratch_t,
                    mm: &mut self.mm,
                    txn,
                };
                ctx.drop_val(&mut slot);
                return Some(sp);
            }
            let f = scratch_t[0];
            let h = hdr_len(f);
            let jl = 2 * usize::from(f & 2 != 0) + 30 * usize::from(f & 1 != 0);
            let (a, b) = (loc.ts, t_end);
            let mut ctx = Ctx {
                old: &scratch_t,
                mm: &mut self.mm,
                txn,
            };
            ctx.drop_val(&mut slot);
            ctx.encode_tnode(
                loc.prev_t,
                sub[0],
                f & 3,
                &scratch_t[h..h + jl],
                &None,
                &mut bytes,
            );
            return Some(Splice {
                a,
                b,
                bytes,
                t: loc.ts,
                tmove: TMove::Keep,
            });
        }
        let s = loc.s?;
        let se = s.se?;
        let scratch = buf[s.ss..se].to_vec();
        let (g_end, only) = if table {
            let (g_end, real) = group(s.ss);
            (g_end, !real)
        } else {
            (se, s.ss == t_end && !(se < l.end && is_s(buf[se])))
        };
        let t_has_val = decode_tval(&scratch_t).is_some();
        let next_s = (se < l.end && is_s(buf[se])).then(|| {
            let k = key_at(buf, se, sub[1]);
            let mut h = Vec::new();
            let n = rehdr(buf, se, k, s.prev_s, &mut h);
            (n, h)
        });
        let drop_whole_t = only && !t_has_val;
        let t_sp = drop_whole_t.then(|| drop_t(g_end, &mut bytes));
        let mut ctx = Ctx {
            old: &scratch,
            mm: &mut self.mm,
            txn,
        };
        let mut sn = decode_snode(&scratch, s.prev_s);
        match what {
            Clear::Key => {
                if !ctx.clear_in_snode(&mut sn, &sub[2..]) {
                    return None;
                }
            }
            Clear::Child => sn.child = crate::edit::Child::None,
        }
        // An emptied destination of the T-Node's jump table stays as a placeholder.
        let placeholder = t_sp.is_none() && table && tjt::is_destination(sn.key);
        if !sn.is_empty() || placeholder {
            let mut bytes = Vec::new();
            // Re-encoding a node without adding anything allocates nothing.
            ctx.encode_snode(s.prev_s, &sn, &mut bytes).ok()?;
            return Some(Splice {
                a: s.ss,
                b: se,
                bytes,
                t: loc.ts,
                tmove: TMove::Before,
            });
        }
        if let Some(sp) = t_sp {
            return Some(sp);
        }
        let (mut b, mut bytes) = (se, Vec::new());
        if let Some((n, h)) = next_s {
            b += n;
            bytes = h;
        }
        Some(Splice {
            a: s.ss,
            b,
            bytes,
            t: loc.ts,
            tmove: TMove::Before,
        })
    }

    /// Applies splice `sp` to level `n - 1` of container `path[ci]`: ejects embedded
    /// containers that outgrow 255 bytes (and, on an `insert` into a container over the
    /// ejection threshold, the outermost embedded container on the path), shifts the
    /// tail, updates the embedded size bytes and the header, and moves the container to
    /// a block of its new exact fit when needed. Fails (changing nothing) only when a
    /// block for an insert cannot be had.
    pub(crate) fn apply(
        &mut self,
        txn: &mut Txn,
        path: &[CPath],
        ci: usize,
        mut n: usize,
        mut sp: Splice,
        insert: bool,
    ) -> Result<()> {
        let hp = path[ci].hp;
        let levels = &path[ci].levels;
        let used0 = used(self.mm.get(hp));
        let mut force = insert && used0 > self.eject_threshold;
        loop {
            let delta = sp.bytes.len() as isize - (sp.b - sp.a) as isize;
            let mut ej = (1..n).rev().find(|&j| {
                (levels[j].end - levels[j].start) as isize + delta + 1 > EMBED_MAX as isize
            });
            if ej.is_none() && force && n > 1 && delta > 0 {
                ej = Some(1);
            }
            force = false;
            let Some(j) = ej else { break };
            let l = levels[j];
            let (flag_at, size_at) = l.emb.expect("an embedded level");
            let buf = self.mm.get(hp);
            let mut payload = Vec::with_capacity((l.end - l.start) + sp.bytes.len());
            payload.extend_from_slice(&buf[l.start..sp.a]);
            payload.extend_from_slice(&sp.bytes);
            payload.extend_from_slice(&buf[sp.b..l.end]);
            for inner in &levels[j + 1..n] {
                let (_, size_at) = inner.emb.expect("an embedded level");
                payload[size_at - l.start] = ((inner.end - inner.start) as isize + delta + 1) as u8;
            }
            debug_assert_eq!(buf[flag_at] & 3, C_EMB);
            let mut bytes = Vec::with_capacity(size_at - flag_at + 5);
            bytes.push((buf[flag_at] & !3) | C_HP);
            bytes.extend_from_slice(&buf[flag_at + 1..size_at]);
            let mut ctx = Ctx {
                old: &[],
                mm: &mut self.mm,
                txn,
            };
            let child = ctx.new_container(&payload)?;
            bytes.extend_from_slice(&child.to_bytes());
            sp = Splice {
                a: flag_at,
                b: l.end,
                bytes,
                t: levels[j - 1].t_at,
                tmove: TMove::Before,
            };
            n = j;
        }
        let delta = sp.bytes.len() as isize - (sp.b - sp.a) as isize;
        let new_used = (used0 as isize + delta) as usize;
        let cap = self.mm.capacity(hp);
        let ext = MemoryManager::is_extended(hp);
        let fits = if ext {
            crate::mm::extended_capacity(new_used) == cap
        } else {
            capacity_for(new_used) == cap
        };
        // Writes the container's new bytes into `dst` from its old bytes `src`.
        let write = |src: &[u8], dst: &mut [u8], same: bool| {
            if same {
                dst.copy_within(sp.b..used0, sp.a + sp.bytes.len());
            } else {
                dst[..sp.a].copy_from_slice(&src[..sp.a]);
                dst[sp.a + sp.bytes.len()..new_used].copy_from_slice(&src[sp.b..used0]);
            }
            dst[sp.a..sp.a + sp.bytes.len()].copy_from_slice(&sp.bytes);
            for l in &levels[1..n] {
                let (_, size_at) = l.emb.expect("an embedded level");
                dst[size_at] = ((l.end - l.start) as isize + delta + 1) as u8;
            }
            set_used(dst, new_used);
            let tmove = if n == 1 { sp.tmove } else { TMove::Before };
            cjt::shift(dst, sp.a, sp.b, delta, tmove);
            // The jump fields (successors, T-Node tables) of the T-Nodes whose groups the
            // splice changed.
            let top_t = if n == 1 { sp.t } else { levels[0].t_at };
            let until = if n == 1 {
                sp.a + sp.bytes.len()
            } else {
                top_t + 1
            };
            fix_jumps(dst, top_t, until, new_used);
        };
        if fits {
            write(&[], self.mm.get_mut(hp), true);
            return Ok(());
        }
        // A shrinking container that cannot have its smaller block stays where it is.
        if ext {
            let r = self
                .mm
                .regrow(hp, new_used, |src, dst| write(src, dst, false));
            return match r {
                Err(_) if new_used <= cap => {
                    write(&[], self.mm.get_mut(hp), true);
                    Ok(())
                }
                r => r,
            };
        }
        let to = match txn.alloc(&mut self.mm, new_used) {
            Ok(to) => to,
            Err(_) if new_used <= cap => {
                write(&[], self.mm.get_mut(hp), true);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let old = self.mm.get(hp)[..used0].to_vec();
        write(&old, self.mm.get_mut(to), false);
        txn.retire(hp);
        self.relink(path, ci, to);
        Ok(())
    }

    /// Points the parent of `path[i]` (or the trie root) at `to`.
    pub(crate) fn relink(&mut self, path: &[CPath], i: usize, to: Hp) {
        if i == 0 {
            let r = self
                .roots
                .iter_mut()
                .find(|r| r.hp == Some(path[0].link))
                .expect("the path starts at a root");
            r.hp = Some(to);
            return;
        }
        let at = path[i].at.expect("a child container has a parent pointer");
        self.mm.get_mut(path[i - 1].hp)[at..at + Hp::BYTES].copy_from_slice(&to.to_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::Decision;

    /// Every jump successor in the payload `buf[HEADER..used]` is the exact distance to
    /// the next T-Node.
    fn jumps_exact(buf: &[u8]) -> bool {
        let used = used(buf);
        let mut pos = cjt::payload_start(buf);
        let mut prev = 0;
        let mut ts = Vec::new();
        while pos < used {
            let f = buf[pos];
            ts.push((crate::node::t_key(buf, pos, prev), pos));
            prev = ts.last().unwrap().0;
            let mut p = parse(buf, pos, 0).next;
            while p < used && is_s(buf[p]) {
                p = parse(buf, p, 0).next;
            }
            if let Some(d) = jump_successor(buf, pos)
                && d != p - pos
            {
                return false;
            }
            assert!(!is_s(f));
            pos = p;
        }
        // Every container jump-table entry names a T-Node with its key, ascending.
        let entries = cjt::entries(buf);
        assert!(entries.is_sorted(), "{entries:?}");
        entries.iter().all(|e| ts.contains(e))
    }

    /// Random inserts, upserts and removes in one trie: after every write every jump
    /// successor of every container on the key's path is exact, and every key reads back.
    #[test]
    fn write_jump_successors_stay_exact() {
        let mut a = ArenaInner::new(16 * 1024);
        let mut model = std::collections::BTreeMap::new();
        let mut x = 0x1234_5678u32;
        let mut tables = 0;
        let ops = if cfg!(miri) { 300 } else { 5000 };
        for i in 0..ops {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let len = 2 + (x % 4) as usize;
            let mut k = vec![b'j'];
            k.extend((0..len).map(|j| ((x >> (j * 3)) & 0x1F) as u8 * 3));
            if x.is_multiple_of(5) {
                a.write(&k, &mut |_| Decision::Remove).unwrap();
                model.remove(&k);
            } else {
                let v = (i as u32).to_le_bytes()[..(x % 5) as usize].to_vec();
                a.write(&k, &mut |_| Decision::Store(v.clone())).unwrap();
                model.insert(k.clone(), v);
            }
            if let Some(root) = a.roots[b'j' as usize].hp {
                for c in descend(&a.mm, root, &k[1..]) {
                    assert!(jumps_exact(a.mm.get(c.hp)), "op {i}");
                    tables += usize::from(cjt::groups(a.mm.get(c.hp)) > 0);
                }
            }
        }
        for (k, v) in &model {
            assert_eq!(a.get(k), Some(&v[..]));
        }
        // Miri runs too few writes for a container to pass 2,016 bytes.
        assert!(cfg!(miri) || tables > 0, "some container had a jump table");
    }

    /// Checks every container below `root` (every part of a split one) with
    /// [`tjt::check`]: T-Node jump tables against a full decode; embedded payloads have
    /// none. Returns the number of tables.
    fn check_tables(mm: &MemoryManager, root: Hp) -> usize {
        let mut tables = 0;
        let mut todo = vec![root];
        while let Some(hp) = todo.pop() {
            let parts: Vec<Hp> = if mm.is_chain(hp) {
                (0..8)
                    .map(|i| hp.slot(i))
                    .filter(|&p| !mm.is_void(p))
                    .collect()
            } else {
                vec![hp]
            };
            for p in parts {
                let buf = mm.get(p);
                let mut payloads = vec![(cjt::payload_start(buf), used(buf), true)];
                while let Some((start, end, own)) = payloads.pop() {
                    let n = tjt::check(buf, start, end);
                    assert!(own || n == 0, "a table in an embedded container");
                    tables += n;
                    let mut pos = start;
                    while pos < end {
                        let node = parse(buf, pos, 0);
                        match node.child {
                            ChildRef::Hp(c, _) => todo.push(c),
                            ChildRef::Emb(a, b) => payloads.push((a, b, false)),
                            _ => {}
                        }
                        pos = node.next;
                    }
                }
            }
        }
        tables
    }

    /// Random inserts, upserts and removes of keys whose S-Node bytes take all 256
    /// values, in a few T-Nodes (so that T-Nodes collect enough S-Nodes for jump tables,
    /// and destinations are inserted, emptied into placeholders and filled again): after
    /// every write every T-Node jump table of the trie matches a full decode of its
    /// S-Nodes, and at the end every key of the model reads back and the walk yields
    /// exactly the model.
    #[test]
    fn write_tnode_jump_tables_stay_exact() {
        let mut a = ArenaInner::new(16 * 1024);
        let mut model = std::collections::BTreeMap::new();
        let mut x = 0x9E37_79B9u32;
        let mut max_tables = 0;
        let ops = if cfg!(miri) { 400 } else { 6000 };
        for i in 0..ops {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            // 'q', a T-Node byte of 4, an S-Node byte of 256, then 0–3 more bytes (path
            // compressed, embedded or child containers below).
            let len = (x >> 20) % 4;
            let mut k = vec![b'q', (x % 4) as u8 * 5, (x >> 2) as u8];
            k.extend((0..len).map(|j| (x >> (10 + 2 * j)) as u8 & 7));
            if (x >> 24).is_multiple_of(16) {
                // A key that ends at the T-Node.
                k.truncate(2);
            }
            if (x >> 28).is_multiple_of(3) {
                let present = model.remove(&k).is_some();
                a.write(&k, &mut |_| Decision::Remove).unwrap();
                assert_eq!(a.get(&k), None, "op {i}: removed {k:?} (present {present})");
            } else {
                let v = (i as u32).to_le_bytes()[..(x >> 29) as usize % 5].to_vec();
                a.write(&k, &mut |_| Decision::Store(v.clone())).unwrap();
                model.insert(k.clone(), v);
            }
            if let Some(root) = a.roots[b'q' as usize].hp {
                max_tables = max_tables.max(check_tables(&a.mm, root));
            }
        }
        assert!(max_tables >= 4, "every T-Node got a table ({max_tables})");
        // Empty two T-Nodes (one with its own key kept): placeholders do not keep a
        // T-Node alive.
        model.insert(vec![b'q', 5], vec![7]);
        a.write(&[b'q', 5], &mut |_| Decision::Store(vec![7]))
            .unwrap();
        let gone: Vec<Vec<u8>> = model
            .keys()
            .filter(|k| (k[1] == 0 || k[1] == 5) && k.len() > 2)
            .cloned()
            .collect();
        for i in 0..gone.len() {
            let k = &gone[(i * 7919) % gone.len()];
            if model.remove(k).is_none() {
                continue;
            }
            a.write(k, &mut |_| Decision::Remove).unwrap();
            let root = a.roots[b'q' as usize].hp.expect("keys remain");
            check_tables(&a.mm, root);
        }
        for k in &gone {
            model.remove(k);
            a.write(k, &mut |_| Decision::Remove).unwrap();
        }
        let root = a.roots[b'q' as usize].hp.expect("keys remain");
        // T-Node 0 went; T-Node 5 stays for its own key, with its table and placeholders.
        assert_eq!(check_tables(&a.mm, root), 3);
        model.remove(&[b'q', 5][..]);
        a.write(&[b'q', 5], &mut |_| Decision::Remove).unwrap();
        let root = a.roots[b'q' as usize].hp.expect("keys remain");
        assert_eq!(check_tables(&a.mm, root), 2, "T-Node 5 went");
        for (k, v) in &model {
            assert_eq!(a.get(k), Some(&v[..]), "{k:?}");
        }
        for s in 0..=255u8 {
            let k = [b'q', 1, s];
            assert_eq!(a.get(&k).is_some(), model.contains_key(&k[..]));
        }
        let want: Vec<_> = model.into_iter().collect();
        for desc in [false, true] {
            let mut seen = Vec::new();
            let _ = a.walk(
                b'q',
                std::ops::Bound::Unbounded,
                desc,
                &mut Vec::new(),
                &mut |k, v| {
                    seen.push((k.to_vec(), v.to_vec()));
                    std::ops::ControlFlow::Continue(())
                },
            );
            if desc {
                seen.reverse();
            }
            assert_eq!(seen, want, "desc {desc}");
        }
    }
}
