//! T-Node jump tables (§3.3), the writer's half: when a T-Node gets a table, its bytes,
//! and how the entries stay exact. The layout and the seek are `node/tjt.rs`.
//!
//! # When a T-Node gets one
//!
//! A writer that passes [`BUILD_HOPS`] or more S-Nodes of a T-Node of a container's own
//! payload (embedded containers, at most 255 bytes, have none, as they have no jump
//! successors) gives that T-Node a table after its write ([`build`],
//! `ArenaInner::build_tjt`): the T-Node is re-encoded with `js` and `jt` set and the
//! placeholders are inserted, in one splice. The paper gives no threshold; 32 S-Nodes
//! (about 300–600 bytes of 8-byte-valued S-Nodes, five to ten cache lines) keeps the table's
//! 30 bytes and its placeholders (at most 30 more) under a tenth of the group it serves.
//! A writer that adds an S-Node to a T-Node without a table also counts the S-Nodes
//! after the new one (stopping at the threshold) and builds the table when the group has
//! [`BUILD_HOPS`] or more: a writer inserting in front of what it would pass (descending
//! keys) passes nothing, and without this its T-Node never got a table, so every later
//! search scanned up to 256 S-Nodes (`prep::tests::
//! prep_sequential_keys_bounded_search_work` checks the bound). So every T-Node of a container's own
//! payload with [`BUILD_HOPS`] or more S-Nodes has a table, whatever the insert order.
//!
//! # Maintenance
//!
//! Every splice recomputes the jump fields of the T-Node whose group it changed
//! (`write::fix_jumps`, which walks that group anyway for the jump successor), so the
//! entries are exact after every write. Inserting a key whose S-Node is a destination turns
//! the placeholder into an ordinary S-Node; removing it turns it back into a placeholder
//! (`write.rs` `plan_remove`). A T-Node left with placeholders only and no value is removed
//! with them.
//!
//! # When it loses it
//!
//! A removal that leaves a T-Node with a table fewer than [`DROP_BELOW`] S-Nodes that are
//! not placeholders takes the table away after its write ([`unbuild`],
//! `ArenaInner::drop_tjt`): the T-Node is re-encoded without `jt` and its 30 bytes, and the
//! placeholders go. Without this a container that held many keys kept a table and up to 15
//! placeholders — about 50 bytes — in every T-Node after most keys were removed: 3.9 MB of
//! the 11.2 MB of extended blocks after removing 90% of 4M random 8-byte keys, against a
//! fresh index of the survivors, which has no tables (`docs/results/reliability.md`,
//! "Memory return"). The paper says nothing of removing tables; half of [`BUILD_HOPS`]
//! keeps a group from gaining and losing its table on every write near the threshold.

use orrery_core::api::Result;

use crate::arena::ArenaInner;
use crate::edit::Txn;
use crate::node::parse;
use crate::node::tjt::{BYTES, ENTRIES, is_placeholder};

use super::path::{Splice, descend, locate};

/// S-Nodes a writer may pass in a T-Node without a table before the T-Node gets one.
pub(crate) const BUILD_HOPS: usize = 32;
/// A T-Node left with fewer S-Nodes than this (placeholders not counted) by a removal
/// loses its table.
pub(crate) const DROP_BELOW: usize = BUILD_HOPS / 2;
/// Sets entry `i` of the table at `tab` to `off`.
#[inline]
pub(crate) fn set_entry(buf: &mut [u8], tab: usize, i: usize, off: usize) {
    debug_assert!(off <= usize::from(u16::MAX));
    buf[tab + 2 * i..tab + 2 * i + 2].copy_from_slice(&(off as u16).to_le_bytes());
}

/// The bytes of the T-Node group `buf[t..end)` (the T-Node at `t` and all its S-Nodes;
/// no table yet) re-encoded with a table: the T-Node with `js` and `jt` set (its jump
/// successor kept, or 0; the entries 0 — `write::fix_jumps` fills both once the splice
/// is in place), its value, then its S-Nodes with a placeholder at every missing
/// destination (the S-Node after a placeholder re-encoded after its new predecessor).
pub(crate) fn build(buf: &[u8], t: usize, end: usize) -> Vec<u8> {
    let f = buf[t];
    debug_assert!(f & 0x21 == 0, "a T-Node without a table");
    let h = 1 + usize::from((f >> 2) & 7 == 0);
    let t_end = parse(buf, t, 0).next;
    let mut out = Vec::with_capacity(end - t + BYTES + 2 + 2 * ENTRIES);
    out.push(f | 3);
    out.extend_from_slice(&buf[t + 1..t + h]);
    let js = 2 * usize::from(f & 2 != 0);
    out.extend_from_slice(&buf[t + h..t + h + js]);
    if js == 0 {
        out.extend_from_slice(&[0, 0]);
    }
    out.extend_from_slice(&[0; BYTES]);
    out.extend_from_slice(&buf[t + h + js..t_end]);
    let (mut pos, mut prev, mut emitted) = (t_end, 0u8, 0u8);
    let mut next_dest = 16u16;
    let put = |out: &mut Vec<u8>, prev_key: &mut u8, key: u8, rest: &[u8], flag: u8| {
        let (d, explicit) = match key.wrapping_sub(*prev_key) {
            d @ 1..=7 if key > *prev_key => (d, false),
            _ => (0, true),
        };
        out.push((flag & !0x1C) | d << 2);
        if explicit {
            out.push(key);
        }
        out.extend_from_slice(rest);
        *prev_key = key;
    };
    while pos < end {
        let n = parse(buf, pos, prev);
        debug_assert!(n.is_s);
        while next_dest <= 240 && next_dest < u16::from(n.key) {
            put(&mut out, &mut emitted, next_dest as u8, &[], 0x60);
            next_dest += 16;
        }
        if u16::from(n.key) == next_dest {
            next_dest += 16;
        }
        let fh = 1 + usize::from((buf[pos] >> 2) & 7 == 0);
        put(
            &mut out,
            &mut emitted,
            n.key,
            &buf[pos + fh..n.next],
            buf[pos],
        );
        prev = n.key;
        pos = n.next;
    }
    while next_dest <= 240 {
        put(&mut out, &mut emitted, next_dest as u8, &[], 0x60);
        next_dest += 16;
    }
    out
}

/// The bytes of the T-Node group `buf[t..end)` (the T-Node at `t`, which has a table, and
/// all its S-Nodes) re-encoded without its table: the T-Node without `jt` and the table's
/// bytes (its jump successor kept: `write::fix_jumps` sets it once the splice is in place),
/// its value, then its S-Nodes without the placeholders, each re-encoded after its new
/// predecessor.
pub(crate) fn unbuild(buf: &[u8], t: usize, end: usize) -> Vec<u8> {
    let f = buf[t];
    debug_assert!(f & 1 != 0, "a T-Node with a table");
    let tab = crate::node::tjt::table_at(buf, t);
    let t_end = parse(buf, t, 0).next;
    let mut out = Vec::with_capacity(end - t);
    out.push(f & !1);
    out.extend_from_slice(&buf[t + 1..tab]);
    out.extend_from_slice(&buf[tab + BYTES..t_end]);
    let (mut pos, mut prev, mut emitted) = (t_end, 0u8, 0u8);
    while pos < end {
        let n = parse(buf, pos, prev);
        debug_assert!(n.is_s);
        if !is_placeholder(buf[pos]) {
            let fh = 1 + usize::from((buf[pos] >> 2) & 7 == 0);
            let (d, explicit) = match n.key.wrapping_sub(emitted) {
                d @ 1..=7 if n.key > emitted => (d, false),
                _ => (0, true),
            };
            out.push((buf[pos] & !0x1C) | d << 2);
            if explicit {
                out.push(n.key);
            }
            out.extend_from_slice(&buf[pos + fh..n.next]);
            emitted = n.key;
        }
        prev = n.key;
        pos = n.next;
    }
    out
}

impl ArenaInner {
    /// Takes the table away from the T-Node of the container's own payload that the key
    /// `key` of trie `b` passes at key offset `off` (see "When it loses it"), if it has one
    /// and fewer than [`DROP_BELOW`] S-Nodes that are not placeholders. Cannot fail: the
    /// group only shrinks (a container that cannot have its smaller block keeps its own).
    pub(crate) fn drop_tjt(&mut self, b: usize, key: &[u8], off: usize) {
        let Some(root) = self.roots[b].hp else {
            return;
        };
        if key.len() < off + 1 {
            return;
        }
        let path = descend(&self.mm, root, key);
        let Some(ci) = path.iter().position(|c| c.levels[0].off == off) else {
            return;
        };
        let l = path[ci].levels[0];
        let buf = self.mm.get(path[ci].hp);
        let loc = locate(buf, &l, key[off], None);
        let Some(t_end) = loc.t_end else {
            return;
        };
        if buf[loc.ts] & 1 == 0 {
            return;
        }
        let (mut end, mut real) = (t_end, 0);
        while end < l.end && buf[end] & 0x20 != 0 {
            real += usize::from(!is_placeholder(buf[end]));
            end = parse(buf, end, 0).next;
        }
        if real >= DROP_BELOW {
            return;
        }
        let bytes = unbuild(buf, loc.ts, end);
        let sp = Splice::keep(loc.ts, end, bytes);
        let mut txn = Txn::default();
        // A shrinking splice: cannot fail (the container keeps its block when a smaller
        // one cannot be had).
        let _ = self.apply(&mut txn, &path, ci, 1, sp, false);
        txn.commit(&mut self.mm);
    }

    /// Gives a table to the T-Node of the container's own payload that the key `key` of
    /// trie `b` passes at key offset `off` (the key bytes `off`, `off + 1` name the T-Node
    /// and an S-Node below it), if it has none. Skipped when the memory cannot be had (the
    /// table is an optimisation; the container is then unchanged).
    pub(crate) fn build_tjt(&mut self, b: usize, key: &[u8], off: usize) {
        let _ = self.try_build_tjt(b, key, off);
    }

    fn try_build_tjt(&mut self, b: usize, key: &[u8], off: usize) -> Result<()> {
        let Some(root) = self.roots[b].hp else {
            return Ok(());
        };
        if key.len() < off + 2 {
            return Ok(());
        }
        let path = descend(&self.mm, root, key);
        let Some(ci) = path.iter().position(|c| c.levels[0].off == off) else {
            return Ok(());
        };
        let l = path[ci].levels[0];
        let buf = self.mm.get(path[ci].hp);
        let loc = locate(buf, &l, key[off], None);
        let Some(t_end) = loc.t_end else {
            return Ok(());
        };
        if buf[loc.ts] & 1 != 0 {
            return Ok(());
        }
        let mut end = t_end;
        while end < l.end && buf[end] & 0x20 != 0 {
            end = parse(buf, end, 0).next;
        }
        let bytes = build(buf, loc.ts, end);
        let sp = Splice::keep(loc.ts, end, bytes);
        let mut txn = Txn::default();
        match self.apply(&mut txn, &path, ci, 1, sp, false) {
            Ok(()) => {
                txn.commit(&mut self.mm);
                Ok(())
            }
            Err(e) => {
                txn.abort(&mut self.mm);
                Err(e)
            }
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::tjt::{check, seek, seek_before};

    /// The bytes of a table: a T-Node with two S-Nodes (keys 3 and 40, 1-byte values)
    /// gets `js`, `jt`, 30 bytes of entries and 14 placeholders; a seek lands on the
    /// destination at or below the key and decodes its key.
    #[test]
    fn tjt_layout_and_seek() {
        // T-Node key 7 (explicit), inner; S 3 (d = 3) value "a"; S 40 explicit, value "b".
        let group = [0x40, 7, 0xE0 | 3 << 2, 1, b'a', 0xE0, 40, 1, b'b'];
        let out = build(&group, 0, group.len());
        assert_eq!(out[0], 0x43);
        assert_eq!(out[1], 7);
        assert_eq!(&out[2..4], &[0, 0]);
        let t_end = 4 + BYTES;
        // S 3 (3 bytes), placeholders 16 and 32 (2 each), S 40 (4), placeholders 48..=240
        // (13, 2 each).
        assert_eq!(out.len(), t_end + 3 + 2 + 2 + 4 + 26);
        // S 3, placeholder 16 (explicit), S 32 placeholder explicit, then S 40 delta 8 →
        // explicit, placeholder 48 (delta 8: explicit) …
        assert_eq!(&out[t_end..t_end + 3], &[0xE0 | 3 << 2, 1, b'a']);
        assert_eq!(&out[t_end + 3..t_end + 5], &[0x60, 16]);
        assert_eq!(&out[t_end + 5..t_end + 7], &[0x60, 32]);
        assert_eq!(&out[t_end + 7..t_end + 10], &[0xE0, 40, 1]);
        let mut buf = out.clone();
        buf.extend_from_slice(&[0; 8]);
        let end = out.len();
        crate::write::path::fix_jumps(&mut buf, 0, 1, end);
        assert_eq!(u16::from_le_bytes([buf[2], buf[3]]) as usize, end);
        assert_eq!(check(&buf, 0, end), 1);
        assert_eq!(seek(&buf, 0, t_end, 3), (t_end, 0));
        let (p, prev) = seek(&buf, 0, t_end, 45);
        assert_eq!(p, t_end + 5);
        assert_eq!(parse(&buf, p, prev).key, 32);
        let (p, prev) = seek_before(&buf, 0, t_end, 16);
        assert_eq!((p, prev), (t_end, 0));
        let (p, prev) = seek(&buf, 0, t_end, 255);
        assert_eq!(parse(&buf, p, prev).key, 240);
        assert!(is_placeholder(buf[p]));
    }

    /// [`unbuild`] undoes [`build`]: the T-Node keeps `js` (and its two bytes), loses
    /// `jt`, the table and the placeholders, and an S-Node that followed a placeholder is
    /// re-encoded after its real predecessor (17 after 3: explicit again).
    #[test]
    fn tjt_unbuild_undoes_build() {
        let group = [0x40, 7, 0xE0 | 3 << 2, 1, b'a', 0xE0, 17, 1, b'b'];
        let built = build(&group, 0, group.len());
        let delta17 = [0x60, 16, 0xE0 | 1 << 2, 1, b'b'];
        assert!(
            built.windows(5).any(|w| w == delta17),
            "17 after placeholder 16"
        );
        let back = unbuild(&built, 0, built.len());
        assert_eq!(
            back,
            [0x42, 7, 0, 0, 0xE0 | 3 << 2, 1, b'a', 0xE0, 17, 1, b'b']
        );
    }

    /// A T-Node that gets a table from its 256 S-Nodes loses it once removals leave it
    /// fewer than [`DROP_BELOW`] (and the container shrinks by the table and its
    /// placeholders), keeps it above, and gets it back when the keys return; every key
    /// reads back throughout.
    #[test]
    fn tjt_dropped_when_few_s_nodes_remain() {
        use crate::arena::Decision;
        use crate::node::{cjt, used};
        let tables = |a: &ArenaInner| {
            let buf = a.mm.get(a.roots[usize::from(b'z')].hp.expect("a root"));
            (check(buf, cjt::payload_start(buf), used(buf)), used(buf))
        };
        let mut a = ArenaInner::new(16 * 1024);
        let key = |s: u8| [b'z', 1, s];
        for s in 0..=255u8 {
            a.write(&key(s), &mut |_| Decision::Store(vec![s])).unwrap();
        }
        assert_eq!(tables(&a).0, 1, "256 S-Nodes: a table");
        let order: Vec<u8> = (0..=255u8).map(|i| i.wrapping_mul(167)).collect();
        let mut left = 256;
        for &s in &order {
            if left == DROP_BELOW {
                break;
            }
            a.write(&key(s), &mut |_| Decision::Remove).unwrap();
            left -= 1;
        }
        assert_eq!(tables(&a).0, 1, "{DROP_BELOW} S-Nodes: the table stays");
        let before = tables(&a).1;
        a.write(&key(order[256 - DROP_BELOW]), &mut |_| Decision::Remove)
            .unwrap();
        let (n, after) = tables(&a);
        assert_eq!(n, 0, "{} S-Nodes: the table goes", DROP_BELOW - 1);
        assert!(after + BYTES < before, "{before} -> {after} bytes");
        for (i, &s) in order.iter().enumerate() {
            let want = (i > 256 - DROP_BELOW).then(|| vec![s]);
            assert_eq!(a.get(&key(s)).map(<[u8]>::to_vec), want, "key {s}");
        }
        for s in 0..=255u8 {
            a.write(&key(s), &mut |_| Decision::Store(vec![s])).unwrap();
        }
        assert_eq!(tables(&a).0, 1, "the keys are back: so is the table");
    }
}
