//! Key pre-processing (§3.4): an injective, invertible, order-preserving transform that
//! lowers the entropy of the first key bytes of uniformly distributed keys.
//!
//! The paper injects zero bits into the two least significant bits of the bytes after the
//! first, so that the third-level containers of random 64-bit keys become fewer and larger
//! (its Fig 12; the figure is not in our copy of the paper, so the exact bit placement
//! here is ours). Here: the first byte is kept; the next 24 bits of the key (bytes 1..4)
//! are spread over four bytes, 6 bits each, in the high bits, with the two low bits zero
//! (8 zero bits, the key grows by one byte); the rest of the key follows unchanged.
//!
//! Keys shorter than 4 bytes are spread the same way over `ceil(8·(len−1)/6)` bytes (the
//! last one zero-padded). The output length `1 + ceil(8·(len−1)/6)` for `len ≤ 4` and
//! `len + 1` beyond is strictly increasing in `len`, so outputs of keys of different
//! lengths differ, and a spread of a fixed number of bits is injective: the transform is
//! injective. It preserves order: where two keys first differ, their bit streams first
//! differ at a bit both have, which lands in the same output byte with the same bits
//! before it; and a proper prefix's output is a prefix of the longer key's output except
//! for its zero-padded last byte, which is no larger. Scans decode keys back
//! ([`decode`]), so users see only their own keys.
//!
//! # Keys with long shared prefixes
//!
//! The transform moves key bytes 1–3 into four bytes, so an 8-byte key's last two bytes
//! become one container level of their own: sequential integers (or any keys that share
//! their first six bytes) put up to 65,536 keys into one container, where without
//! pre-processing at most 256 keys end in a container. Nothing here is special-cased for
//! that; the paper's §3.3 structures bound the work, in every insert order: the container
//! is split into parts of one chain slot's T-Node key range each (`split.rs`), every part has a
//! container jump table from its split on (a search passes fewer than 8 T-Nodes,
//! `cjt.rs`), and every T-Node with 32 or more S-Nodes has a T-Node jump table (a search
//! passes fewer than 32 S-Nodes, `tjt.rs`) — built when a writer's new S-Node or T-Node
//! makes a group or run long, not only when a writer passes it, since a writer inserting
//! in front (descending keys) passes nothing. Issue #22 (a quadratic load of sequential
//! keys with pre-processing) was a linear scan of that container by every insert and
//! lookup; `tests::prep_sequential_keys_bounded_search_work` bounds the work per search
//! after loads in three orders.

/// Transforms `key` into `out` (cleared first).
pub(crate) fn encode(key: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let Some((&first, rest)) = key.split_first() else {
        return;
    };
    out.push(first);
    let head = rest.len().min(3);
    let mut bits: u32 = 0;
    for &b in &rest[..head] {
        bits = bits << 8 | u32::from(b);
    }
    let nbits = 8 * head;
    let nout = nbits.div_ceil(6);
    // Left-align the bits in a 24-bit field.
    let aligned = bits << (24 - nbits);
    for i in 0..nout {
        let six = (aligned >> (18 - 6 * i)) & 0x3F;
        out.push((six as u8) << 2);
    }
    out.extend_from_slice(&rest[head..]);
}

/// Inverts [`encode`]; `None` if `enc` is not an output of it.
pub(crate) fn decode(enc: &[u8], out: &mut Vec<u8>) -> Option<()> {
    out.clear();
    let Some((&first, rest)) = enc.split_first() else {
        return Some(());
    };
    out.push(first);
    let (head, nout) = match rest.len() {
        0 => (0, 0),
        2 => (1, 2),
        3 => (2, 3),
        n if n >= 4 => (3, 4),
        _ => return None,
    };
    let mut aligned: u32 = 0;
    for (i, &b) in rest[..nout].iter().enumerate() {
        if b & 3 != 0 {
            return None;
        }
        aligned |= u32::from(b >> 2) << (18 - 6 * i);
    }
    let bits = aligned >> (24 - 8 * head);
    for i in (0..head).rev() {
        out.push((bits >> (8 * i)) as u8);
    }
    out.extend_from_slice(&rest[nout..]);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::{ArenaInner, Decision};
    use crate::mm::MemoryManager;
    use crate::write::{BUILD_HOPS, REBUILD_HOPS, descend, locate};
    use rand::seq::SliceRandom;

    #[test]
    fn prep_round_trip_and_order() {
        let mut keys: Vec<Vec<u8>> = vec![vec![]];
        for a in [0u8, 1, 0x7F, 0xFF] {
            keys.push(vec![a]);
            for b in [0u8, 3, 4, 0xFC, 0xFF] {
                keys.push(vec![a, b]);
                for c in [0u8, 0x0F, 0x10, 0xFF] {
                    keys.push(vec![a, b, c]);
                    for d in [0u8, 1, 0xFF] {
                        keys.push(vec![a, b, c, d]);
                        keys.push(vec![a, b, c, d, 0]);
                        keys.push(vec![a, b, c, d, 9, 9]);
                    }
                }
            }
        }
        keys.sort();
        keys.dedup();
        let mut enc = Vec::new();
        let mut dec = Vec::new();
        let mut outs = Vec::new();
        for k in &keys {
            encode(k, &mut enc);
            decode(&enc, &mut dec).unwrap();
            assert_eq!(&dec, k, "round trip of {k:?} via {enc:?}");
            outs.push(enc.clone());
        }
        for w in outs.windows(2) {
            assert!(w[0] < w[1], "order: {:?} !< {:?}", w[0], w[1]);
        }
        encode(&[1, 2, 3, 4, 5, 6, 7, 8], &mut enc);
        assert_eq!(enc.len(), 9);
        assert!(enc[1..5].iter().all(|b| b & 3 == 0));
    }

    /// The work of a search for `key` (a whole key, its first byte naming the trie) in
    /// every container on its path, as a writer's `locate` does it (lookups enter the
    /// same way, through the same tables): the most T-Nodes passed after the container
    /// jump table's entry (extended containers, the ones with a table) and the most
    /// S-Nodes passed after the T-Node jump table's destination.
    fn search_work(a: &ArenaInner, key: &[u8]) -> (usize, usize) {
        let root = a.roots[usize::from(key[0])].hp.expect("a root");
        let (mut t_hops, mut s_hops) = (0, 0);
        for c in descend(&a.mm, root, &key[1..]) {
            let l = c.levels[0];
            let sub = &key[1 + l.off..];
            let loc = locate(a.mm.get(c.hp), &l, sub[0], sub.get(1).copied());
            if MemoryManager::is_extended(c.hp) {
                t_hops = t_hops.max(loc.hops);
            }
            s_hops = s_hops.max(loc.s_hops);
        }
        (t_hops, s_hops)
    }

    /// With pre-processing, sequential 8-byte keys share their first five encoded bytes,
    /// so their last two bytes form one container level of up to 65,536 keys (without it,
    /// at most 256 keys end in a container): only jump successors, jump tables and splits
    /// keep a search in it short, and they must be built whatever the insert order (a
    /// writer inserting in front of what it would pass, as descending keys do, passes
    /// nothing). History and figures: `docs/results/hyperion.md`, "Pre-processing and
    /// sequential keys".
    ///
    /// Checks the work, not a speed: after loading such keys in ascending, descending and
    /// shuffled order, a search for any key passes fewer than [`REBUILD_HOPS`]
    /// T-Nodes after its container jump table entry and fewer than [`BUILD_HOPS`]
    /// S-Nodes after its T-Node jump table destination, in every container on its path;
    /// and the big container was split.
    #[test]
    fn prep_sequential_keys_bounded_search_work() {
        let n: u64 = if cfg!(miri) { 3_000 } else { 20_000 };
        let mut shuffled: Vec<u64> = (0..n).collect();
        shuffled.shuffle(&mut orrery_core::testing::rng::rng(0x9E37_79B9_7F4A_7C15));
        let orders: [(&str, Vec<u64>); 3] = [
            ("ascending", (0..n).collect()),
            ("descending", (0..n).rev().collect()),
            ("shuffled", shuffled),
        ];
        for (name, order) in orders {
            let mut a = ArenaInner::new(16 * 1024);
            let mut enc = Vec::new();
            for &i in &order {
                encode(&i.to_be_bytes(), &mut enc);
                a.write(&enc, &mut |_| Decision::Store(i.to_le_bytes().to_vec()))
                    .unwrap();
            }
            let (mut t_max, mut s_max) = (0, 0);
            for i in 0..n {
                encode(&i.to_be_bytes(), &mut enc);
                assert_eq!(a.get(&enc), Some(&i.to_le_bytes()[..]), "{name}: key {i}");
                let (t, s) = search_work(&a, &enc);
                t_max = t_max.max(t);
                s_max = s_max.max(s);
            }
            assert!(
                t_max < REBUILD_HOPS && s_max < BUILD_HOPS,
                "{name}: a search passes up to {t_max} T-Nodes and {s_max} S-Nodes"
            );
            if !cfg!(miri) {
                // The last level (T-Nodes 0..=78 × 256 S-Nodes, ~200 KB) was split.
                encode(&(n - 1).to_be_bytes(), &mut enc);
                let root = a.roots[usize::from(enc[0])].hp.unwrap();
                let last = descend(&a.mm, root, &enc[1..]).pop().unwrap();
                assert!(a.mm.is_chain(last.link), "{name}: the last level was split");
            }
        }
    }
}
