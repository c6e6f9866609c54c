//! Container splits (§3.3, Fig 11): a large container is cut vertically, between T-Nodes,
//! into parts held by a chained extended bin.
//!
//! # Chains
//!
//! A split container is referenced (by its parent's S-Node, or as a trie root) through the
//! Hyperion Pointer of a *chained extended bin*: [`CHAIN_SLOTS`](crate::mm::CHAIN_SLOTS)
//! consecutive extended-bin chunks ([`crate::mm::MemoryManager::alloc_chain`]; 64 where the
//! paper has 8, see `mm`, "Chained extended bins"), slot `i` holding the eHP of the part
//! responsible for the T-Node keys `[SLOT_KEYS·i, SLOT_KEYS·j)`, `j` the next non-void
//! slot (or the end). A void slot's range belongs to the part below it; slot 0 is never
//! void while the chain exists. A key whose next byte is `k` is in slot `k / SLOT_KEYS`
//! or the nearest non-void slot below ([`crate::mm::MemoryManager::resolve`]). Parts are always extended blocks, so
//! a part that grows or shrinks keeps its slot (the eHP is rewritten), and every part's
//! payload is an ordinary container payload whose first T-Node is delta encoded from 0.
//!
//! # When
//!
//! After an insert into a container of `size ≥ a + b·S` bytes (`a` = [`SPLIT_A`],
//! `b` = [`SPLIT_B`], `S` the container's 2-bit split delay in header bits 27..29), the
//! container is cut at the boundary `SLOT_KEYS·m` (a slot's key range start inside its range)
//! that balances the two parts best. The split is abandoned — and `S` incremented, so the
//! next attempt waits for `b` more bytes — when all T-Nodes are in one slot's range or the
//! smaller part would be under [`SPLIT_MIN`] bytes. A split that cannot get its memory is
//! skipped (the insert that triggered it has already succeeded) and tried again on the
//! next insert. An unsplit container becomes the chain's slot-0 part and the part above
//! the cut; a part of a chain is cut in two, the upper half going to the cut's slot.
//! Both parts then get container jump tables (`cjt.rs`). A container that cannot be split
//! and has reached `S` = 3 is looked at again after every insert, so [`best_cut`] passes
//! its T-Nodes by their jump successors instead of parsing every node.

use crate::arena::ArenaInner;
use crate::edit::Txn;
use crate::mm::{Hp, MemoryManager, SLOT_KEYS};
use crate::node::cjt::payload_start;
use crate::node::{HEADER, jump_successor, parse, set_used, used, write_header};

use super::path::{CPath, fix_jumps};

/// Split threshold `a` (bytes): the paper's 16 KiB.
pub(crate) const SPLIT_A: usize = 16 * 1024;
/// Split threshold step `b` per split-delay unit (bytes): the paper's 64 KiB.
pub(crate) const SPLIT_B: usize = 64 * 1024;
/// Smallest part a split may leave (bytes): the paper's 3 KiB.
pub(crate) const SPLIT_MIN: usize = 3 * 1024;

/// The split delay `S` of a container (header bits 27..29).
pub(crate) fn split_delay(chunk: &[u8]) -> usize {
    usize::from((chunk[3] >> 3) & 3)
}

/// Sets the split delay `S` of a container.
pub(crate) fn set_split_delay(chunk: &mut [u8], s: usize) {
    chunk[3] = (chunk[3] & !0x18) | ((s.min(3) as u8) << 3);
}

/// Where a container of `used` bytes would be cut: the offset of the first T-Node of the
/// slot's key range whose start balances the parts best, and that slot; `None` when all
/// T-Nodes are in one slot's range. Passes the T-Nodes by their jump successors.
pub(crate) fn best_cut(buf: &[u8], used: usize) -> Option<(usize, usize, u8)> {
    let ps = payload_start(buf);
    let mut pos = ps;
    let (mut prev, mut prev_slot) = (0u8, None);
    let mut best: Option<(usize, usize, u8)> = None;
    let score = |p: usize| (p - ps).abs_diff(used - p);
    while pos < used {
        let f = buf[pos];
        let n = parse(buf, pos, prev);
        if f & 0x20 == 0 {
            let slot = usize::from(n.key) / SLOT_KEYS;
            if prev_slot.is_some_and(|p| p != slot)
                && best.is_none_or(|(b, _, _)| score(pos) < score(b))
            {
                best = Some((pos, slot, n.key));
            }
            prev_slot = Some(slot);
            prev = n.key;
            // Skip the T-Node's S-Nodes by its jump successor: a container that cannot be
            // split and has reached the largest threshold (`S` = 3) is looked at again
            // after every insert, so this walk passes T-Nodes only, not every node.
            if let Some(d) = jump_successor(buf, pos) {
                pos += d;
                continue;
            }
        }
        pos = n.next;
    }
    best
}

impl ArenaInner {
    /// Splits the container `path[ci]` (the one an insert just wrote) if it is due.
    pub(crate) fn maybe_split(&mut self, path: &[CPath], ci: usize) {
        let c = &path[ci];
        if !MemoryManager::is_extended(c.hp) {
            return;
        }
        let buf = self.mm.get(c.hp);
        let size = used(buf);
        let delay = split_delay(buf);
        if size < SPLIT_A + SPLIT_B * delay {
            return;
        }
        let cut = best_cut(buf, size);
        let ps = payload_start(buf);
        let Some((pos, slot, key)) = cut.filter(|&(p, _, _)| (p - ps).min(size - p) >= SPLIT_MIN)
        else {
            set_split_delay(self.mm.get_mut(c.hp), delay + 1);
            return;
        };
        // The upper part: the first T-Node re-encoded after no sibling, then the rest.
        let mut upper = vec![0u8; HEADER];
        let f = buf[pos];
        let explicit_old = (f >> 2) & 7 == 0;
        if key == 0 || key > 7 {
            upper.push(f & !0x1C);
            upper.push(key);
        } else {
            upper.push((f & !0x1C) | key << 2);
        }
        upper.extend_from_slice(&buf[pos + 1 + usize::from(explicit_old)..size]);
        let upper_len = upper.len();
        write_header(&mut upper, upper_len);
        // The first T-Node's header may have changed length: its jump successor too.
        fix_jumps(&mut upper, HEADER, HEADER + 1, upper_len);
        let chained = self.mm.is_chain(c.link);
        // The lower part: the payload before the cut, without the jump table (both parts
        // are given new ones once the split is done).
        let lower_len = HEADER + pos - ps;
        let lower: Option<Vec<u8>> = (!chained).then(|| {
            let mut l = vec![0u8; HEADER];
            l.extend_from_slice(&buf[ps..pos]);
            write_header(&mut l, lower_len);
            l
        });
        let mut txn = Txn::default();
        let r = (|| {
            let base = if chained {
                c.link
            } else {
                txn.alloc_chain(&mut self.mm)?
            };
            if let Some(lower) = &lower {
                txn.fill_slot(&mut self.mm, base.slot(0), lower.len())?;
                self.mm.get_mut(base.slot(0))[..lower.len()].copy_from_slice(lower);
            }
            txn.fill_slot(&mut self.mm, base.slot(slot), upper_len)?;
            self.mm.get_mut(base.slot(slot))[..upper_len].copy_from_slice(&upper);
            Ok::<Hp, orrery_core::api::Error>(base)
        })();
        let Ok(base) = r else {
            txn.abort(&mut self.mm);
            return;
        };
        if chained {
            // The part keeps its lower half: shrink it to its exact fit if possible.
            // Its jump table goes (its entries may name T-Nodes of the upper part).
            let r = self.mm.regrow(c.hp, lower_len, |src, dst| {
                dst[..HEADER].copy_from_slice(&src[..HEADER]);
                dst[3] &= !7;
                dst[HEADER..lower_len].copy_from_slice(&src[ps..pos]);
                set_used(dst, lower_len);
            });
            if r.is_err() {
                let blk = self.mm.get_mut(c.hp);
                blk.copy_within(ps..pos, HEADER);
                blk[3] &= !7;
                set_used(blk, lower_len);
            }
        } else {
            txn.retire(c.hp);
            self.relink(path, ci, base);
        }
        txn.commit(&mut self.mm);
        // Both parts get their jump tables now: a part that no writer passes at length
        // again (the lower part, under ascending keys) would otherwise keep none, and
        // every search in it would pass up to 31 T-Nodes.
        self.rebuild_cjt(if chained { c.hp } else { base.slot(0) });
        self.rebuild_cjt(base.slot(slot));
    }
}

#[cfg(test)]
mod tests {
    use rand::Rng as _;
    use std::ops::{Bound, ControlFlow};

    use super::*;
    use crate::arena::{ArenaInner, Decision};
    use crate::mm::CHAIN_SLOTS;

    fn put(a: &mut ArenaInner, k: &[u8], v: &[u8]) {
        a.write(k, &mut |_| Decision::Store(v.to_vec())).unwrap();
    }

    fn keys(n: usize) -> Vec<Vec<u8>> {
        // Three-byte keys `x t s`: every key ends at an S-Node of trie `x`'s root, so the
        // root container grows by about 11 bytes per key until it splits.
        let mut r = orrery_core::testing::rng::rng(0x9E37_79B9);
        let mut ks: Vec<Vec<u8>> = (0..n)
            .map(|_| {
                let x: u32 = r.random();
                vec![b'x', (x >> 8) as u8, (x >> 16) as u8]
            })
            .collect();
        ks.sort();
        ks.dedup();
        ks
    }

    fn walk_all(a: &ArenaInner, desc: bool) -> Vec<Vec<u8>> {
        let mut seen = Vec::new();
        let mut buf = Vec::new();
        let _ = a.walk(b'x', Bound::Unbounded, desc, &mut buf, &mut |k, _| {
            seen.push(k.to_vec());
            ControlFlow::Continue(())
        });
        seen
    }

    /// A root container past 16 KiB splits into a chain of parts (Fig 11); every part is
    /// an ordinary container whose first T-Node is delta encoded from 0; lookups, ordered
    /// walks both ways and removal work across parts; removing everything frees the chain.
    #[test]
    fn split_root_into_chain_and_back() {
        let mut a = ArenaInner::new(16 * 1024);
        let ks = keys(if cfg!(miri) { 2200 } else { 6000 });
        for (i, k) in ks.iter().enumerate() {
            put(&mut a, k, &(i as u64).to_le_bytes());
        }
        let root = a.roots[b'x' as usize].hp.unwrap();
        assert!(a.mm.is_chain(root), "the root container was split");
        let parts: Vec<usize> = (0..CHAIN_SLOTS)
            .filter(|&i| !a.mm.is_void(root.slot(i)))
            .collect();
        assert!(parts.len() >= 2 && parts[0] == 0, "parts {parts:?}");
        for &i in &parts {
            let c = a.mm.get(root.slot(i));
            let size = used(c);
            assert!(size < SPLIT_A + SPLIT_B, "part {i} holds {size} bytes");
            // Every T-Node of part i is in its key range, the first delta encoded from 0.
            let next = parts
                .iter()
                .find(|&&j| j > i)
                .copied()
                .unwrap_or(CHAIN_SLOTS);
            let first = parse(c, payload_start(c), 0);
            assert!(!first.is_s);
            let mut pos = payload_start(c);
            let mut prev = 0;
            while pos < size {
                let n = parse(c, pos, prev);
                if !n.is_s {
                    let s = usize::from(n.key) / SLOT_KEYS;
                    assert!(s >= i && s < next);
                    prev = n.key;
                }
                pos = n.next;
            }
        }
        for (i, k) in ks.iter().enumerate() {
            assert_eq!(a.get(k), Some(&(i as u64).to_le_bytes()[..]), "key {k:?}");
        }
        assert_eq!(walk_all(&a, false), ks);
        let mut rev = ks.clone();
        rev.reverse();
        assert_eq!(walk_all(&a, true), rev);
        // Remove the upper half first (parts above the first are freed), then the rest.
        for k in ks.iter().rev() {
            a.write(k, &mut |_| Decision::Remove).unwrap();
            assert_eq!(a.get(k), None);
        }
        assert!(a.roots[b'x' as usize].hp.is_none());
        assert_eq!(a.mm.stats().chunks, 0);
        assert_eq!(a.mm.stats().extended, 0);
        assert_eq!(a.mm.bytes(), a.mm.stats().metadata_bytes);
    }

    /// A container whose T-Nodes are all in one slot's key range cannot be split: the
    /// split delay is incremented instead (header bits 27..29).
    #[test]
    fn split_delay_when_unsplittable() {
        let mut a = ArenaInner::new(16 * 1024);
        let n = SLOT_KEYS * 256;
        let key = |i: usize| {
            // T-Node keys `0..SLOT_KEYS` only (slot 0), S-Node keys 0..=255, and a
            // path-compressed suffix that makes the container pass 16 KiB.
            [b'y', (i / 256) as u8, i as u8, 1, 2, 3, 4, 5, 6, 7, 8]
        };
        for i in 0..n {
            put(&mut a, &key(i), &[7; 8]);
        }
        let root = a.roots[b'y' as usize].hp.unwrap();
        assert!(!a.mm.is_chain(root));
        let c = a.mm.get(root);
        assert!(used(c) >= SPLIT_A);
        assert_eq!(split_delay(c), 1);
        for i in 0..n {
            assert_eq!(a.get(&key(i)), Some(&[7u8; 8][..]));
        }
    }

    /// The split delay lives in header bits 27..29 next to the 24-bit size.
    #[test]
    fn split_delay_bits() {
        let mut h = [0u8; 8];
        write_header(&mut h, 0x12_3456);
        set_split_delay(&mut h, 2);
        assert_eq!(
            u32::from_le_bytes([h[0], h[1], h[2], h[3]]),
            0x12_3456 | 2 << 27
        );
        set_used(&mut h, 0x100);
        assert_eq!(split_delay(&h), 2);
        assert_eq!(used(&h), 0x100);
    }
}
