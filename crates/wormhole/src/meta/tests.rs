//! Unit tests of the MetaTrieHT.

use super::*;
use crate::ablation::{ALL, DIRECT_POS, SORT_BY_TAG};
use crate::config::Config;
use crate::leaf::leaf_pool;
use crate::search::{locate, locate_exact, locate_in};
use orrery_core::alloc::SlabPool;

/// A LeafList of empty leaves and the two tables (`T1`, `T2`) a writer keeps, driven
/// the way `smo` drives them.
struct Harness {
    pool: SlabPool,
    leaves: Vec<(Vec<u8>, LeafPtr)>,
    t1: MetaTable,
    t2: MetaTable,
}

impl Harness {
    fn new() -> Harness {
        let pool = leaf_pool(8);
        let head = LeafPtr::alloc(&pool, 8, Box::new([]), 0).unwrap();
        Harness {
            t1: MetaTable::new(head).unwrap(),
            t2: MetaTable::new(head).unwrap(),
            leaves: vec![(Vec::new(), head)],
            pool,
        }
    }

    fn relink(&self) {
        for (i, (_, l)) in self.leaves.iter().enumerate() {
            let prev = i.checked_sub(1).map(|j| self.leaves[j].1);
            let next = self.leaves.get(i + 1).map(|x| x.1);
            // SAFETY: the harness owns its live leaves.
            let h = unsafe { l.hdr() };
            h.prev.store(
                prev.map_or(std::ptr::null_mut(), |p| p.as_raw()),
                std::sync::atomic::Ordering::Relaxed,
            );
            h.next.store(
                next.map_or(std::ptr::null_mut(), |p| p.as_raw()),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
    }

    fn add(&mut self, anchor: &[u8]) -> LeafPtr {
        let leaf = LeafPtr::alloc(&self.pool, 8, anchor.into(), 0).unwrap();
        let i = self.leaves.partition_point(|(a, _)| a.as_slice() < anchor);
        let prev = self.leaves[i - 1].1;
        let next = self.leaves.get(i).map(|x| x.1);
        self.leaves.insert(i, (anchor.to_vec(), leaf));
        self.relink();
        self.t1.reserve(anchor.len() + 1).unwrap();
        self.t1.insert_anchor(anchor, leaf, prev, next);
        self.t2.reserve(anchor.len() + 1).unwrap();
        self.t2.insert_anchor(anchor, leaf, prev, next);
        leaf
    }

    /// Merges the leaf of `anchor` away. Like a replay on the shadow table, `T2` is
    /// updated only after the victim was freed and its block reused.
    fn remove(&mut self, anchor: &[u8]) {
        let i = self
            .leaves
            .iter()
            .position(|(a, _)| a.as_slice() == anchor)
            .unwrap();
        let (_, leaf) = self.leaves.remove(i);
        let prev = self.leaves[i - 1].1;
        let next = self.leaves.get(i).map(|x| x.1);
        self.relink();
        self.t1.remove_anchor(anchor, leaf, prev, next);
        // SAFETY: unlinked and gone from `T1`; `T2` only compares its address.
        unsafe { leaf.free(&self.pool) };
        let reuse = LeafPtr::alloc(&self.pool, 8, Box::new(*b"other anchor bytes"), 0).unwrap();
        self.t2.remove_anchor(anchor, leaf, prev, next);
        // SAFETY: never linked.
        unsafe { reuse.free(&self.pool) };
    }

    /// The target leaf of `key` by definition: the last leaf whose anchor is `<= key`.
    fn want(&self, key: &[u8]) -> LeafPtr {
        let i = self.leaves.partition_point(|(a, _)| a.as_slice() <= key);
        self.leaves[i - 1].1
    }

    /// Both tables against the LeafList, and the target leaf of `keys` against the
    /// definition (the last leaf whose anchor is `<= key`).
    fn verify(&self, keys: &[&[u8]]) {
        self.t1.check(&self.leaves);
        self.t2.check(&self.leaves);
        self.verify_targets::<ALL>(keys);
        // Without TagMatching and IncHashing.
        self.verify_targets::<{ SORT_BY_TAG | DIRECT_POS }>(keys);
    }

    /// The target leaf of `keys` against the definition, searched with `OPTS`.
    fn verify_targets<const OPTS: u32>(&self, keys: &[&[u8]]) {
        let cfg = Config::default();
        for k in keys {
            let i = self.leaves.partition_point(|(a, _)| a.as_slice() <= *k);
            let want = self.leaves[i - 1].1;
            for t in [&self.t1, &self.t2] {
                assert_eq!(locate::<OPTS>(t, k, &cfg).unwrap().leaf, want, "key {k:?}");
                let tg = locate_in::<OPTS>(t, k, &cfg).unwrap();
                let leaf = match tg.check {
                    // SAFETY: the harness's leaves live until it is dropped.
                    Some(c) if !c.holds(unsafe { tg.leaf.hdr() }, k) => {
                        locate_exact::<OPTS>(t, k, &cfg).unwrap().leaf
                    }
                    _ => tg.leaf,
                };
                assert_eq!(leaf, want, "key {k:?}");
            }
        }
    }

    fn entry(&self, key: &[u8]) -> Option<Ref> {
        self.t1.get(key, crc32c(key))
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        for (_, l) in self.leaves.drain(..) {
            // SAFETY: owned by the harness, unused from now on.
            unsafe { l.free(&self.pool) };
        }
    }
}

/// An anchor that gains byte children turns from a leaf entry into an item, and back
/// into a leaf entry when a merge removes them; trailing `0x00` children included.
#[test]
fn leaf_entries_gain_and_lose_children() {
    let mut h = Harness::new();
    let keys: &[&[u8]] = &[
        b"", b"\0", b"a", b"a\0", b"a\0\0", b"a\0\0\0", b"a\x01", b"ab", b"abc", b"b",
    ];
    let la = h.add(b"a");
    assert_eq!(h.entry(b"a"), Some(Ref::Leaf(la)));
    h.verify(keys);
    let la0 = h.add(b"a\0");
    assert!(matches!(h.entry(b"a"), Some(Ref::Item(_))));
    assert_eq!(h.entry(b"a\0"), Some(Ref::Leaf(la0)));
    h.verify(keys);
    let la00 = h.add(b"a\0\0");
    let lab = h.add(b"ab");
    assert!(matches!(h.entry(b"a\0"), Some(Ref::Item(_))));
    assert_eq!(h.entry(b"a\0\0"), Some(Ref::Leaf(la00)));
    assert_eq!(h.entry(b"ab"), Some(Ref::Leaf(lab)));
    h.verify(keys);
    h.remove(b"a\0\0");
    assert_eq!(h.entry(b"a\0"), Some(Ref::Leaf(la0)));
    h.verify(keys);
    h.remove(b"a\0");
    h.remove(b"ab");
    assert_eq!(h.entry(b"a"), Some(Ref::Leaf(la)));
    h.verify(keys);
    // An anchor that is only a prefix of others (an internal item) and then an
    // anchor itself, then loses its anchor flag again.
    let lx = h.add(b"xyz");
    assert!(matches!(h.entry(b"xy"), Some(Ref::Item(_))));
    h.add(b"xy");
    h.verify(&[b"x", b"xy", b"xy\0", b"xyz", b"xz"]);
    h.remove(b"xy");
    assert_eq!(h.entry(b"xyz"), Some(Ref::Leaf(lx)));
    h.verify(&[b"x", b"xy", b"xy\0", b"xyz", b"xz"]);
    h.remove(b"xyz");
    assert_eq!(h.entry(b"x"), None);
    h.verify(keys);
}

/// A probe whose tag matches a leaf entry of another prefix: the final comparison
/// against the leaf's anchor catches it and the search restarts with exact probes.
#[test]
fn tag_false_positive_on_a_leaf_entry() {
    // `u\xAA=` and `xyq` share the tag (top 16 bits of the CRC32C) and the home slot in
    // an 8-slot table (low 3 bits).
    let (b, k): (&[u8], &[u8]) = (b"u\xaa=", b"xyq");
    assert_eq!(crc32c(b), 0xBCAA_7C96);
    assert_eq!(crc32c(k), 0xBCAA_C3BE);
    let mut h = Harness::new();
    let lx = h.add(b"xya");
    let lb = h.add(b);
    assert_eq!(h.t1.slots.len(), 8);
    assert_eq!(h.t1.probe_tag(crc32c(k)), Some(Ref::Leaf(lb)));
    h.verify(&[k, b"xy", b"xyr", b"u", b"u\xaa=\0"]);
    assert_eq!(
        locate::<ALL>(&h.t1, k, &Config::default()).unwrap().leaf,
        lx
    );
    // A lookup defers the comparison: it gets the wrong leaf with the check pending,
    // the check fails, and the exact restart finds the right leaf with nothing left
    // to check.
    let cfg = Config::default();
    let tg = locate_in::<ALL>(&h.t1, k, &cfg).unwrap();
    let c = crate::search::Check {
        plen: 3,
        byte: None,
        whole: true,
    };
    assert_eq!((tg.leaf, tg.check), (lb, Some(c)));
    // SAFETY: the harness's leaves live until it is dropped.
    assert!(!c.holds(unsafe { lb.hdr() }, k));
    let tg = locate_exact::<ALL>(&h.t1, k, &cfg).unwrap();
    assert_eq!((tg.leaf, tg.check), (lx, None));
    // A true leaf-entry match defers too, and its check passes.
    let tg = locate_in::<ALL>(&h.t1, b, &cfg).unwrap();
    assert_eq!((tg.leaf, tg.check), (lb, Some(c)));
    // SAFETY: as above.
    assert!(c.holds(unsafe { lb.hdr() }, b));
}

/// The sibling step's child probe with a deferred comparison: a leaf entry of another
/// prefix with the child's tag comes first in the slot, the lookup gets it with a
/// pending check that fails, and the exact restart finds the child's leaf.
#[test]
fn deferred_child_check() {
    let (b, k): (&[u8], &[u8]) = (b"u\xaa=", b"xyq");
    let mut h = Harness::new();
    let lb = h.add(b);
    let lq = h.add(k);
    let ls = h.add(b"xys");
    assert_eq!(h.t1.slots.len(), 8);
    assert_eq!(h.t1.probe_tag(crc32c(k)), Some(Ref::Leaf(lb)));
    h.verify(&[k, b"xy", b"xyr", b"xys", b"xyz", b"u", b"u\xaa=\0"]);
    let cfg = Config::default();
    // `xyr` falls between the children `q` and `s` of `xy`: its target is `xyq`'s leaf.
    let key = b"xyr!";
    assert_eq!(locate::<ALL>(&h.t1, key, &cfg).unwrap().leaf, lq);
    let tg = locate_in::<ALL>(&h.t1, key, &cfg).unwrap();
    let c = crate::search::Check {
        plen: 2,
        byte: Some(b'q'),
        whole: true,
    };
    assert_eq!((tg.leaf, tg.check), (lb, Some(c)));
    // SAFETY: the harness's leaves live until it is dropped.
    assert!(!c.holds(unsafe { lb.hdr() }, key));
    // SAFETY: as above.
    assert!(c.holds(unsafe { lq.hdr() }, key));
    let tg = locate_exact::<ALL>(&h.t1, key, &cfg).unwrap();
    assert_eq!((tg.leaf, tg.check), (lq, None));
    // Above the last child: the rightmost leaf below `xy`, no child probe, no check.
    let tg = locate_in::<ALL>(&h.t1, b"xyz", &cfg).unwrap();
    assert_eq!((tg.leaf, tg.check), (ls, None));
}

/// Two 12-byte prefixes with the same first 7 bytes and the same CRC32C (found by a
/// birthday search), hence the same tag and home slot: a tag match on one's item is a
/// false positive for the other that only the anchor comparison can tell.
const P: &[u8] = b"collide\xcc\x1c\x5a\x20\x68";
const Q: &[u8] = b"collide\x16\x8f\x93\x11\xd0";

/// A search that ends on a long item matched by tag, length and inline bytes but of
/// another prefix: exact probes tell them apart, a writer's search verifies at once,
/// and a lookup gets the wrong leaf with a pending prefix check that fails, after which
/// the exact search finds the right leaf.
#[test]
fn long_item_false_positive_is_caught() {
    assert_eq!(crc32c(P), crc32c(Q));
    assert_eq!(P[..INLINE], Q[..INLINE]);
    let mut h = Harness::new();
    // Eight 13-byte anchors below `P`: the search plan (rebuilt when the anchor count
    // moved by 5) then probes length 12 first.
    let mut lp = None;
    for b in *b"!#%&()*+" {
        lp = Some(h.add(&[P, &[b]].concat()));
    }
    let lp = lp.unwrap();
    let lc = h.add(b"collide");
    assert!(matches!(h.entry(P), Some(Ref::Item(_))));
    assert!(h.entry(Q).is_none());
    // `Q·~` sorts before `P·!`: its leaf is the one of `collide`. Through the false
    // match it would be the rightmost leaf below `P`.
    let key = [Q, b"~"].concat();
    let cfg = Config::default();
    assert_eq!(locate::<ALL>(&h.t1, &key, &cfg).unwrap().leaf, lc);
    assert_eq!(h.t1.plan().split(0, 14), 12);
    let tg = locate_in::<ALL>(&h.t1, &key, &cfg).unwrap();
    let c = crate::search::Check {
        plen: 12,
        byte: None,
        whole: false,
    };
    assert_eq!((tg.leaf, tg.check), (lp, Some(c)));
    // SAFETY: the harness's leaves live until it is dropped.
    assert!(!c.holds(unsafe { lp.hdr() }, &key));
    let tg = locate_exact::<ALL>(&h.t1, &key, &cfg).unwrap();
    assert_eq!((tg.leaf, tg.check), (lc, None));
    h.verify(&[&key, P, Q, &[P, b"!"].concat(), b"collide", b"collidf"]);
}

/// The sibling step's child probe with a deferred comparison: a long item of another
/// prefix matching the child by tag, length and inline bytes comes first, the lookup
/// gets its leaf with a pending prefix check that fails, and the exact restart finds
/// the child's leaf.
#[test]
fn long_child_false_positive_is_caught() {
    let x = &P[..11];
    let (a, c) = (P[11], P[11] + 8);
    let mut h = Harness::new();
    // `x` first, then `Q`, then `P`: `x` precedes `Q[..11]` (same tag: the collision
    // of `P` and `Q` makes their 11-byte prefixes agree in the top 24 hash bits), and
    // `Q` precedes `P` in their common home slot.
    let xc = [x, &[c]].concat();
    h.add(&xc);
    let lq = h.add(&[Q, b"0"].concat());
    h.add(&[Q, b"1"].concat());
    let lpa = h.add(&[P, b"0"].concat());
    let lp1 = h.add(&[P, b"1"].concat());
    let key = [x, &[a + 1], b"tail"].concat();
    let cfg = Config::default();
    assert_eq!(h.want(&key), lp1);
    assert_eq!(locate::<ALL>(&h.t1, &key, &cfg).unwrap().leaf, lp1);
    let tg = locate_in::<ALL>(&h.t1, &key, &cfg).unwrap();
    let chk = crate::search::Check {
        plen: 11,
        byte: Some(a),
        whole: false,
    };
    assert_eq!(tg.check, Some(chk));
    assert_eq!(tg.leaf, h.want(&[Q, b"1"].concat()));
    // SAFETY: the harness's leaves live until it is dropped.
    assert!(!chk.holds(unsafe { tg.leaf.hdr() }, &key));
    // SAFETY: as above.
    assert!(chk.holds(unsafe { lpa.hdr() }, &key));
    let tg = locate_exact::<ALL>(&h.t1, &key, &cfg).unwrap();
    assert_eq!((tg.leaf, tg.check), (lp1, None));
    assert_ne!(lq, lp1);
    h.verify(&[&key, x, P, Q, &xc]);
}

/// A search that ends on a long item of another prefix (same tag, length and inline
/// bytes) whose target is the leaf before the item's leftmost leaf: that leaf's anchor,
/// read for its `prev` pointer, disproves the item at once, and the search restarts
/// exactly (without the check it would return the leaf before `Q·0`).
#[test]
fn long_item_before_leftmost_is_checked() {
    let x = &P[..11];
    let mut h = Harness::new();
    // `Q[..11]` before `x` in their slot this time.
    h.add(&[Q, b"0"].concat());
    h.add(&[Q, b"1"].concat());
    h.add(&[P, b"0"].concat());
    let lp1 = h.add(&[P, b"1"].concat());
    h.add(&[x, &[P[11] + 8]].concat());
    let key = [x, &[P[11] + 1], b"tail"].concat();
    let cfg = Config::default();
    assert_eq!(h.want(&key), lp1);
    let tg = locate_in::<ALL>(&h.t1, &key, &cfg).unwrap();
    assert_eq!((tg.leaf, tg.check), (lp1, None));
    h.verify(&[&key, x, P, Q]);
}

/// Anchors longer than the leaf header's inline bytes (kept in a heap block).
#[test]
fn long_anchors() {
    let mut h = Harness::new();
    let long: Vec<u8> = (0..40u8).collect();
    let at_inline: Vec<u8> = (0..crate::leaf::ANCHOR_INLINE as u8).collect();
    let l1 = h.add(&long);
    let l2 = h.add(&at_inline);
    let l3 = h.add(&long[..crate::leaf::ANCHOR_INLINE + 1]);
    // SAFETY: owned by the harness.
    let h1 = unsafe { l1.hdr() };
    // SAFETY: as above.
    let h2 = unsafe { l2.hdr() };
    // SAFETY: as above.
    let h3 = unsafe { l3.hdr() };
    assert_eq!(h1.anchor(), long.as_slice());
    assert_eq!(h2.anchor(), at_inline.as_slice());
    assert!(!h3.anchor_is(&long[..crate::leaf::ANCHOR_INLINE]));
    assert_eq!(h.entry(&long), Some(Ref::Leaf(l1)));
    let mut other = long.clone();
    other[30] = 0xFF;
    h.verify(&[
        &long,
        &other,
        &at_inline,
        &long[..20],
        &long[..13],
        &long[..12],
    ]);
    h.remove(&long);
    assert_eq!(h.entry(&long[..13]), Some(Ref::Leaf(l3)));
    h.verify(&[&long, &other, &at_inline]);
}

#[test]
fn child_bitmap_queries() {
    let mut it = Item {
        hash: 0,
        len: 0,
        leftmost: std::ptr::null_mut(),
        rightmost: std::ptr::null_mut(),
        bitmap: [0; 4],
        anchor: 0,
        key: [0; INLINE],
    };
    for b in [0u8, 63, 64, 200, 255] {
        it.bitmap[(b >> 6) as usize] |= 1 << (b & 63);
    }
    assert_eq!(it.child_below(0), None);
    assert_eq!(it.child_below(1), Some(0));
    assert_eq!(it.child_below(64), Some(63));
    assert_eq!(it.child_below(65), Some(64));
    assert_eq!(it.child_below(255), Some(200));
    assert!(it.has_child_above(0));
    assert!(it.has_child_above(200));
    assert!(!it.has_child_above(255));
    assert!(it.has_child_above(254));
    assert!(it.has_child(63) && !it.has_child(62));
}
