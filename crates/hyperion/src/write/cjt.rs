//! Container jump tables (§3.3), the writer's half: entries kept exact across splices and
//! tables rebuilt. The layout and the seeks are `node/cjt.rs`.
//!
//! # Maintenance
//!
//! Every splice of a container shifts the entries behind it by its length difference
//! ([`shift`]); an entry naming the T-Node a splice inserts before, or deletes, is moved to
//! the old T-Node's new offset, or to the following T-Node (or dropped). A writer that
//! passes 8 or more T-Nodes after the table's entry (the paper's trigger), or adds a
//! T-Node that makes the run of T-Nodes from the entry below it to the next entry 8 or
//! longer (counted by jump successors, stopping at 8: a writer inserting in front of what
//! it would pass — descending keys — passes nothing), rebuilds the
//! table after its write ([`crate::arena::ArenaInner::rebuild_cjt`]) with an entry for
//! every T-Node, or 49 evenly spaced when there are more; with 49 entries and at most 256
//! T-Nodes a search passes at most 6 T-Nodes, so a full table is not rebuilt again
//! until new T-Nodes lengthen a run. Both parts of a container split get a table at
//! once (`split.rs`): a part no writer passes again would otherwise keep none. (The
//! paper fixes the 49-entry maximum and the trigger, not the spacing. One entry per
//! T-Node up to 49 makes a search in a container of at most 49 T-Nodes — every part of
//! a split root container of random integers holds 32 — start at its own T-Node: one
//! cache miss instead of one per T-Node passed; the table costs at most 196 bytes of a
//! container of over 2,016.)

use crate::arena::ArenaInner;
use crate::mm::{Hp, MemoryManager};
use crate::node::cjt::{GROUP, MAX_GROUPS, entry, groups, payload_start};
use crate::node::{HEADER, jump_successor, parse, set_used, t_key, used};

/// T-Nodes a writer may pass before the table is rebuilt (the paper's 8).
pub(crate) const REBUILD_HOPS: usize = 8;

/// What a splice did to the T-Node at its start (a container's own payload only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TMove {
    /// The splice is in front of whatever starts at `b` (it touches no T-Node's start).
    Before,
    /// The T-Node at the splice's start was re-encoded there (same key).
    Keep,
    /// A T-Node was inserted before it; it now starts this many bytes after the splice.
    Insert(usize),
    /// It was deleted; the T-Node now there has this key (`None`: none).
    Delete(Option<u8>),
}

/// Sets entry `i` to T-Node `key` at offset `off`.
#[inline]
fn set_entry(chunk: &mut [u8], i: usize, key: u8, off: usize) {
    let at = HEADER + 4 * i;
    chunk[at..at + 4].copy_from_slice(&((off as u32) << 8 | u32::from(key)).to_le_bytes());
}

/// Updates the entries of a container after a splice that replaced `[a, b)` of its own
/// payload (`delta`: new length − old length), given what became of the T-Node at `a`.
/// A T-Node starting inside `(a, b)` is the one after a deleted T-Node (whose header the
/// splice re-encoded): it now starts at `a`.
pub(crate) fn shift(chunk: &mut [u8], a: usize, b: usize, delta: isize, t: TMove) {
    let n = GROUP * groups(chunk);
    let mut i = 0;
    while i < n {
        let (k, off) = entry(chunk, i);
        if off == 0 {
            break;
        }
        if off >= b && (off > a || t == TMove::Before) {
            set_entry(chunk, i, k, (off as isize + delta) as usize);
        } else if off > a {
            set_entry(chunk, i, k, a);
        } else if off == a {
            match t {
                TMove::Before | TMove::Keep => {}
                TMove::Insert(rel) => set_entry(chunk, i, k, a + rel),
                TMove::Delete(Some(next)) => set_entry(chunk, i, next, a),
                TMove::Delete(None) => {
                    // No T-Node follows: drop the entry (the ones after it name T-Nodes
                    // behind `a`, so there are none).
                    for j in i..n {
                        set_entry(chunk, j, 0, 0);
                    }
                    break;
                }
            }
        }
        i += 1;
    }
}

/// The T-Nodes of a container's payload: `(key, offset)`, following jump successors.
fn t_nodes(chunk: &[u8]) -> Vec<(u8, usize)> {
    let (mut pos, end) = (payload_start(chunk), used(chunk));
    let mut prev = 0u8;
    let mut out = Vec::new();
    while pos < end {
        if chunk[pos] & 0x20 != 0 {
            pos = parse(chunk, pos, 0).next;
            continue;
        }
        let k = t_key(chunk, pos, prev);
        out.push((k, pos));
        prev = k;
        pos = match jump_successor(chunk, pos) {
            Some(d) => pos + d,
            None => parse(chunk, pos, prev).next,
        };
    }
    out
}

impl ArenaInner {
    /// Rebuilds the jump table of the extended container `hp`: an entry per T-Node, or 49
    /// evenly spaced. Skipped when the new block cannot be had (the table is
    /// an optimisation; the container is unchanged).
    pub(crate) fn rebuild_cjt(&mut self, hp: Hp) {
        if !MemoryManager::is_extended(hp) {
            return;
        }
        let chunk = self.mm.get(hp);
        let ts = t_nodes(chunk);
        let entries = ts.len().min(GROUP * MAX_GROUPS);
        let g = entries.div_ceil(GROUP);
        let (ps, size) = (payload_start(chunk), used(chunk));
        let new_ps = HEADER + 4 * GROUP * g;
        let new_size = size - ps + new_ps;
        let shift_by = new_ps as isize - ps as isize;
        let _ = self.mm.regrow(hp, new_size, |src, dst| {
            dst[..HEADER].copy_from_slice(&src[..HEADER]);
            dst[3] = (dst[3] & !7) | g as u8;
            dst[new_ps..new_size].copy_from_slice(&src[ps..size]);
            set_used(dst, new_size);
            for i in 0..entries {
                let (k, off) = ts[i * ts.len() / entries];
                set_entry(dst, i, k, (off as isize + shift_by) as usize);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::cjt::seek;
    use crate::node::write_header;

    /// The table's bytes: J in header bits 24..27, u32 entries `key | offset << 8`, the
    /// payload after; seeks start at the last entry at or below the key; shifts follow
    /// splices.
    #[test]
    fn cjt_layout_seek_and_shift() {
        let mut c = vec![0u8; 64];
        write_header(&mut c, 40);
        c[3] |= 1;
        assert_eq!(payload_start(&c), 32);
        // Two T-Nodes: key 10 explicit at 32, key 13 delta-encoded (d = 3) at 36.
        c[32] = 0x40;
        c[33] = 10;
        c[36] = 0x40 | 3 << 2;
        set_entry(&mut c, 0, 10, 32);
        set_entry(&mut c, 1, 13, 36);
        assert_eq!(c[4..8], [10, 32, 0, 0]);
        assert_eq!(seek(&c, 9), (32, 0));
        assert_eq!(seek(&c, 10), (32, 10));
        assert_eq!(seek(&c, 200), (36, 10));
        // 3 bytes inserted inside the first group: the second entry moves.
        shift(&mut c, 34, 34, 3, TMove::Before);
        assert_eq!(entry(&c, 1), (13, 39));
        // A T-Node (2 bytes) inserted before the first, whose header is re-encoded
        // (`[32, 34)` → 4 bytes): it moves behind the new one.
        shift(&mut c, 32, 34, 2, TMove::Insert(2));
        assert_eq!(entry(&c, 0), (10, 34));
        assert_eq!(entry(&c, 1), (13, 41));
        // The first deleted (`[34, 41)` and the next header `[41, 42)` → 2 bytes): both
        // entries name the T-Node now at 34.
        shift(&mut c, 34, 42, -6, TMove::Delete(Some(13)));
        assert_eq!(entry(&c, 0), (13, 34));
        assert_eq!(entry(&c, 1), (13, 34));
        shift(&mut c, 34, 40, -6, TMove::Delete(None));
        assert_eq!(entry(&c, 0), (0, 0));
    }
}
