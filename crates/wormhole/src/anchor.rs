//! Anchors (§2.2, §3.3): how a split chooses the key that separates two leaves, and why the
//! MetaTrie stays well formed for arbitrary binary keys without a reserved token.
//!
//! # Definitions
//!
//! Leaves `L0 < L1 < … < Ln-1` form the LeafList. Leaf `Li` has an anchor `ai` (a byte
//! string); `a0` is the empty string and never changes. Invariants:
//!
//! * **Ordering condition.** `a0 < a1 < … < an-1`, and every key `k` stored in `Li`
//!   satisfies `ai ≤ k < ai+1` (no upper bound for the last leaf). This is the paper's
//!   condition `left-key < anchor-key ≤ node-key`, stated with the anchors themselves.
//!   The *target leaf* of a key `k` is the last leaf whose anchor is `≤ k`; if `k` is
//!   present it is in its target leaf.
//! * **Prefix condition, without a reserved token.** The paper needs "no anchor is a prefix
//!   of another" so that every anchor is a leaf of the MetaTrie, and it enforces it by
//!   appending a token `⊥` smaller than every key token, first assuming `⊥` never occurs
//!   in keys (§2.2) and then replacing it by `0x00` with a fat-node fallback for keys that
//!   differ only in trailing zeros (§3.3). We keep `⊥` as a *virtual 257th token*: the
//!   MetaTrie holds every anchor as the string `ai ⊥`, where `⊥` sorts below every byte
//!   value `0x00..=0xFF` and is never part of a key. Because `⊥` occurs only as the last
//!   token, no `ai ⊥` can be a proper prefix of another string of the trie: the prefix
//!   condition holds for **any** set of distinct byte-string anchors, including anchors
//!   that are prefixes of each other or that differ only in trailing `0x00` bytes. No byte
//!   value is reserved, no anchor is ever re-keyed, and no fat node is needed.
//!
//! In the MetaTrieHT (see `meta`) the trie node for `ai ⊥` is not a hash item of its own:
//! it is the "`⊥` child" bit of the item for `ai`, whose leftmost-leaf reference then is
//! `Li` (`⊥` is the smallest child). An item whose only child is `⊥` is the paper's *leaf
//! item*; an item with byte children is an *internal item*; an item with both is the pair
//! (`a` internal, `a⊥` leaf) of the paper folded into one entry. Probes therefore only
//! ever hash byte strings (prefixes of the search key), exactly as in the paper.
//!
//! # Choosing the anchor of a split (Algorithm 4, lines 2–8)
//!
//! A split of leaf `Li` between its sorted keys `p = k[j-1]` and `q = k[j]` (`p < q`)
//! creates a leaf whose anchor `A` must satisfy `p < A ≤ q`; then `ai ≤ p < A ≤ q < ai+1`
//! so the ordering condition holds for the three leaves. We take the shortest such string,
//! `A = q[..lcp(p, q) + 1]`:
//!
//! * if `p` and `q` differ at index `l = lcp(p, q)`, then `p[l] < q[l]`, so
//!   `p < q[..l+1] ≤ q`;
//! * otherwise `p` is a proper prefix of `q` (`l = |p|`), and `q[..|p|+1]` extends `p` by
//!   one byte, so it is `> p` and a prefix of `q`.
//!
//! No string shorter than `l + 1` lies in `(p, q]` (it would be a prefix of `p`, hence
//! `≤ p`, or differ from `q` before index `l` and then from `p` too, on the wrong side).
//! Every split point `1 ≤ j < n` of a leaf therefore yields a valid anchor, whatever the
//! bytes are (runs of trailing `0x00` included: `p = "a"`, `q = "a\0"` gives `A = "a\0"`,
//! and the trie holds `"a" ⊥` and `"a\0" ⊥` side by side). This is why the paper's fat node
//! is provably unnecessary here. Among the split points near the middle, [`choose_split`]
//! prefers the one with the shortest anchor (the paper leaves that as future work): shorter
//! anchors mean a smaller MetaTrieHT and fewer probes in Algorithm 1.
//!
//! # Why the search finds the target leaf (Algorithm 3)
//!
//! Let `T` be the set of all prefixes of all anchors (every `T` string is a hash item).
//! `T` is prefix-closed, so "`key[..l]` ∈ T" is monotone in `l` and the binary search on
//! prefix lengths (Algorithm 1) finds the longest prefix `P` of the key in `T`. The leaves
//! below an item `x` (anchors with prefix `x`) are contiguous in the LeafList, since
//! ordering the terminated strings `ai⊥` is the same as ordering the `ai`. Then, with
//! `lm`/`rm` the leftmost/rightmost leaves below `P`:
//!
//! 1. `P = key`: every anchor below `P` is `≥ key`, every anchor before `lm` is `< key`.
//!    If `P` has its `⊥` bit, `lm` has anchor `key` and is the target; otherwise
//!    `a(lm) > key` and the target is `lm.prev` (which exists: `a0 = ""` has the `⊥` bit
//!    of the root).
//! 2. `P ≠ key`, `c = key[|P|]`, and `P·c ∉ T`. Anchors below children `< c` (or equal to
//!    `P`, the `⊥` child) are `< key`; anchors below children `> c` are `> key`.
//!    * no child `< c`: target is `lm.prev` (all of `P`'s leaves are `> key`);
//!    * `⊥` is the largest child `< c`: target is `lm` (anchor `P`; the next anchors are
//!      below children `> c`);
//!    * the largest child `< c` is a byte `b` and no child is `> c`: target is `rm`;
//!    * otherwise target is the rightmost leaf below `P·b` (one more probe).
//!
//! In every case a leaf after the target has an anchor `> key`, because anchors that are
//! prefixes of `P` sort before all of `P`'s leaves.

/// Length of the longest common prefix of `a` and `b`.
#[inline]
pub(crate) fn lcp(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    // Compare 8 bytes at a time first.
    while i + 8 <= n {
        let x = u64::from_ne_bytes(a[i..i + 8].try_into().expect("8 bytes"));
        let y = u64::from_ne_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        if x != y {
            break;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// The anchor of a new right leaf whose smallest key is `right_min`, when the left leaf's
/// largest key is `left_max` (`left_max < right_min`): the shortest string `A` with
/// `left_max < A ≤ right_min`, i.e. `right_min[..lcp + 1]`.
#[inline]
pub(crate) fn split_anchor<'a>(left_max: &[u8], right_min: &'a [u8]) -> &'a [u8] {
    debug_assert!(left_max < right_min);
    &right_min[..lcp(left_max, right_min) + 1]
}

/// Chooses the split point `j` (the new right leaf takes sorted keys `[j..n)`) of a full
/// leaf: among the points within `n / 8` of the middle, the one with the shortest anchor,
/// ties going to the point closest to the middle. `key(i)` returns the `i`-th smallest key;
/// `n ≥ 2`.
pub(crate) fn choose_split<'a>(n: usize, key: impl Fn(usize) -> &'a [u8]) -> usize {
    debug_assert!(n >= 2);
    let mid = n / 2;
    let window = n / 8;
    let mut best = mid;
    let mut best_len = lcp(key(mid - 1), key(mid));
    for d in 1..=window {
        for j in [mid.wrapping_sub(d), mid + d] {
            if j == 0 || j >= n {
                continue;
            }
            let l = lcp(key(j - 1), key(j));
            if l < best_len {
                best = j;
                best_len = l;
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lcp_cases() {
        assert_eq!(lcp(b"", b""), 0);
        assert_eq!(lcp(b"abc", b"abd"), 2);
        assert_eq!(lcp(b"abc", b"abc"), 3);
        assert_eq!(lcp(b"ab", b"abc"), 2);
        let a = [7u8; 40];
        let mut b = a;
        b[33] = 9;
        assert_eq!(lcp(&a, &b), 33);
        assert_eq!(lcp(&a, &a[..17]), 17);
    }

    #[test]
    fn split_anchor_is_between() {
        let cases: &[(&[u8], &[u8], &[u8])] = &[
            (b"Au", b"Denice", b"D"),
            (b"James", b"Jos", b"Jo"),
            (b"a", b"a\0", b"a\0"),
            (b"a\0", b"a\0\0", b"a\0\0"),
            (b"", b"\0", b"\0"),
            (b"a\x01", b"a\x02\0\0", b"a\x02"),
            (b"\xff", b"\xff\0", b"\xff\0"),
        ];
        for &(p, q, want) in cases {
            let a = split_anchor(p, q);
            assert_eq!(a, want);
            assert!(p < a && a <= q);
        }
    }

    /// Exhaustive check over short strings of the bytes {0, 1, 255}: the anchor is the
    /// shortest string strictly above `p` and at most `q`.
    #[test]
    fn split_anchor_minimal_exhaustive() {
        let mut all: Vec<Vec<u8>> = vec![vec![]];
        let mut frontier: Vec<Vec<u8>> = vec![vec![]];
        for _ in 0..3 {
            let mut next = Vec::new();
            for s in &frontier {
                for b in [0u8, 1, 255] {
                    let mut t = s.clone();
                    t.push(b);
                    next.push(t);
                }
            }
            all.extend(next.iter().cloned());
            frontier = next;
        }
        all.sort();
        for (i, p) in all.iter().enumerate() {
            for q in &all[i + 1..] {
                let a = split_anchor(p, q);
                assert!(p.as_slice() < a && a <= q.as_slice());
                // No string of the universe in (p, q] is shorter.
                for s in &all[i + 1..] {
                    if s > q {
                        break;
                    }
                    assert!(s.len() >= a.len(), "{p:?} {q:?} {s:?} {a:?}");
                }
            }
        }
    }

    #[test]
    fn choose_split_prefers_short_anchor() {
        let keys: Vec<Vec<u8>> = (0..16u8).map(|i| vec![b'a', i / 8, i]).collect();
        let j = choose_split(keys.len(), |i| &keys[i]);
        assert_eq!(j, 8);
        let keys: Vec<Vec<u8>> = (0..16u8).map(|i| vec![b'a', 0, i]).collect();
        let j = choose_split(keys.len(), |i| &keys[i]);
        assert_eq!(j, 8);
        let keys: Vec<Vec<u8>> = vec![vec![1], vec![1, 0]];
        assert_eq!(choose_split(2, |i| &keys[i]), 1);
    }
}
