//! The search plan of one MetaTrieHT: where Algorithm 1 splits its ranges of possible
//! longest-matching-prefix lengths (deviation from the paper, measured).
//!
//! Algorithm 1 probes the middle of the range `(lo, hi)` of possible lengths of the
//! longest matching prefix (LPM). Any probe strictly inside the range keeps it correct
//! (the prefixes of anchors are closed under shortening, so a hit at `m` means the LPM is
//! at least `m`, a miss that it is below `m`); only the number of rounds depends on the
//! choice. On `az` (10M keys: ranges `(0, 36)`/`(0, 37)`) the LPM lengths are two
//! clusters, 5–6 (the item id's first bytes) and 12–14 (the item id and the separator),
//! and bisection took 5 rounds for nearly every key: two dependent slot waits even with
//! the first three rounds prefetched. Each table therefore keeps a [`Plan`]: for every
//! range `(lo, hi)` with `hi ≤ 128`, the probe of an optimal alphabetic search tree over
//! the LPM lengths, weighted by the anchor lengths (an anchor of length `a` predicts
//! lookups ending at `a − 1` and `a`; see [`Plan::build`]), computed with Knuth's
//! O(n²) dynamic program. The plan is rebuilt by the writer, on the unpublished table,
//! when the anchor count has moved by 1/16 or the longest anchor outgrew it; a stale plan
//! only costs rounds. Longer ranges are bisected until they fall inside it. Measured with
//! `orrery-bench lab wormhole_az` (`Wormhole::debug_search_trace`): on `az` the plan takes
//! about 3 rounds and 1 dependent slot wait per search where bisection takes 5 and 2, and
//! lookups are faster for it (figures: `docs/results/wormhole.md`, "Measurements behind
//! the module docs"). Memory: `side²` + `8·side` bytes per table
//! (1.7 KB on `az`, at most 17.7 KB).

use std::collections::BTreeMap;

/// Probes hashed ahead: the planned first batch (the plan's 7 most likely probes), or
/// three levels of a bisection (7). Four bisection levels (15 slots) for long ranges
/// measure slower on `az` than three plus [`crate::search::Lpm::prepare_ahead`]: the eight extra hashes
/// cost more than the round trip they save. The plan's 7 are chosen by weight; 9 save a
/// few slot waits but measure slower (figures: `docs/results/wormhole.md`, "Measurements
/// behind the module docs").
pub(crate) const PRE: usize = 7;

/// Largest plan side: ranges `(lo, hi)` with `hi < PLAN_SIDE` split by the plan, longer
/// ones at the midpoint until they fall inside it. The split table is `PLAN_SIDE²` bytes
/// at most (16.6 KB); longer keys rarely reach past 128 bytes of matched prefix.
const PLAN_SIDE: usize = 129;

/// The first batch of probes of a search of the range `(lo, hi)`: the `k` nodes of its
/// search tree under `split` most likely to be reached, by `weight(lo, hi)` of their
/// ranges (a connected top of the tree: a node is never heavier than its parent), in
/// ascending length order. With `weight = hi - lo` and `k = 7` these are the three top
/// levels of a bisection.
pub(crate) fn top_levels(
    split: impl Fn(usize, usize) -> usize,
    weight: impl Fn(usize, usize) -> u64,
    lo: usize,
    hi: usize,
    k: usize,
) -> ([usize; PRE], usize) {
    debug_assert!(k <= PRE);
    // Frontier of ranges not yet split (at most one more than the nodes taken).
    let mut q = [(0usize, 0usize); PRE + 1];
    q[0] = (lo, hi);
    let mut qn = 1;
    let (mut lens, mut n) = ([0usize; PRE], 0);
    while n < k {
        let Some(i) = (0..qn)
            .filter(|&i| q[i].0 + 1 < q[i].1)
            .max_by_key(|&i| weight(q[i].0, q[i].1))
        else {
            break;
        };
        let (lo, hi) = q[i];
        let mid = split(lo, hi);
        lens[n] = mid;
        n += 1;
        q[i] = (lo, mid);
        q[qn] = (mid, hi);
        qn += 1;
    }
    lens[..n].sort_unstable();
    (lens, n)
}

/// Where Algorithm 1 splits each range of prefix lengths (see the module docs, "Search
/// plan"): an optimal alphabetic search tree over the lengths the longest matching prefix
/// takes, estimated from the anchor lengths. Only the choice of the probe changes; any
/// split `lo < m < hi` keeps the binary search correct, so a stale plan costs rounds,
/// never results.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Ranges `(lo, hi)` with `hi < side` are planned.
    side: usize,
    /// `split[lo * side + hi]` for `hi - lo >= 2`: the length to probe.
    split: Box<[u8]>,
    /// Anchors counted when the plan was built (rebuild trigger, see [`Plan::stale`]).
    anchors: usize,
    /// `top[hi]`: [`top_levels`] of the range `(0, hi)` (`hi < side`), the count in the
    /// last byte: every search starts at `lo = 0`, so its first batch of probes is
    /// read from here instead of walked and sorted per lookup.
    top: Box<[[u8; PRE + 1]]>,
    /// The length whose item a search most likely reads last (see [`Plan::build`]); its
    /// item's home position is prefetched with the first batch of slots.
    pub(crate) likely: usize,
}

impl Plan {
    /// The plan for a table whose anchor lengths are `lens` (length → count), the longest
    /// `max_len`.
    ///
    /// Weights: a lookup of a key in the leaf of an anchor of length `a` usually ends its
    /// search at length `a - 1` (anchors are one byte past the common prefix of the keys
    /// around the split) or `a` (the key extends the anchor), so each anchor adds its count
    /// to both (uniform lookups visit every leaf about equally). Every length also gets a
    /// floor of 1/16 of the mean weight, which bounds the depth of lengths that no anchor
    /// predicts (`log2(16 · side) + 1` rounds at most).
    pub(crate) fn build(lens: &BTreeMap<usize, usize>, max_len: usize) -> Plan {
        let side = (max_len + 2).min(PLAN_SIDE);
        // Answers are lengths 0..n (the longest match is below `hi <= n`).
        let n = side - 1;
        let mut w = vec![0u64; n];
        let mut anchors = 0;
        for (&a, &c) in lens {
            anchors += c;
            for l in [a.wrapping_sub(1), a] {
                if l < n {
                    w[l] += c as u64;
                }
            }
        }
        // The item a lookup reads is the one of its longest matching prefix when that is
        // an item (an anchor's leaf entry has none): a search ending at `a - 1`, below an
        // anchor of length `a`. Lengths up to 0 are the root's, always cached.
        let likely = lens
            .iter()
            .filter(|&(&a, _)| a >= 2 && a - 1 < n)
            .max_by_key(|&(&a, &c)| (c, std::cmp::Reverse(a)))
            .map_or(0, |(&a, _)| a - 1);
        let total: u64 = w.iter().sum();
        let floor = (total / (16 * n as u64)).max(1);
        w.iter_mut().for_each(|x| *x += floor);
        let split = optimal_splits(&w);
        let mut pre = vec![0u64; side];
        for i in 0..n {
            pre[i + 1] = pre[i] + w[i];
        }
        let top = (0..side)
            .map(|hi| {
                let (lens, n) = top_levels(
                    |lo, hi| split[lo * side + hi] as usize,
                    |lo, hi| pre[hi] - pre[lo],
                    0,
                    hi,
                    PRE,
                );
                let mut t = [0u8; PRE + 1];
                for (t, &l) in t.iter_mut().zip(&lens[..n]) {
                    *t = l as u8;
                }
                t[PRE] = n as u8;
                t
            })
            .collect();
        Plan {
            side,
            split,
            anchors,
            top,
            likely,
        }
    }

    /// The precomputed first batch of probes of the range `(lo, hi)`, if planned.
    #[inline]
    pub(crate) fn top(&self, lo: usize, hi: usize) -> Option<&[u8; PRE + 1]> {
        if lo == 0 && hi < self.side {
            Some(&self.top[hi])
        } else {
            None
        }
    }

    /// Whether the plan should be rebuilt for a table with `anchors` anchors, the longest
    /// `max_len`: the longest range outgrew the plan (and it is not at its largest), or the
    /// anchor count moved by more than 1/16 (at least 4) since it was built.
    pub(crate) fn stale(&self, anchors: usize, max_len: usize) -> bool {
        self.side < (max_len + 2).min(PLAN_SIDE)
            || anchors.abs_diff(self.anchors) * 16 > self.anchors.max(64)
    }

    /// The length to probe in the range `(lo, hi)` (`lo + 1 < hi`): strictly inside it.
    #[inline]
    pub(crate) fn split(&self, lo: usize, hi: usize) -> usize {
        debug_assert!(lo + 1 < hi);
        if hi < self.side {
            self.split[lo * self.side + hi] as usize
        } else {
            (lo + hi) / 2
        }
    }

    /// Bytes of the split table and the first batches.
    pub(crate) fn bytes(&self) -> usize {
        self.split.len() + self.top.len() * (PRE + 1)
    }
}

/// The optimal probe of every range for answer weights `w` (answers `0..n`, `n = w.len()`;
/// result indexed `lo * (n + 1) + hi`, `0 <= lo < hi <= n`): the range `(lo, hi)` holds the
/// answers `lo..hi`, probing `m` costs one round for each of them and leaves `(lo, m)` or
/// `(m, hi)`. Minimizes the expected rounds, `C(lo, hi) = W(lo, hi) + min_m C(lo, m) +
/// C(m, hi)`, with Knuth's bound on the optimal root (`root(lo, hi - 1) <= root(lo, hi) <=
/// root(lo + 1, hi)`, valid because `W` is a sum of non-negative weights): O(n²).
fn optimal_splits(w: &[u64]) -> Box<[u8]> {
    let n = w.len();
    let side = n + 1;
    let mut pre = vec![0u64; side];
    for i in 0..n {
        pre[i + 1] = pre[i] + w[i];
    }
    let mut cost = vec![0u64; side * side];
    let mut root = vec![0u8; side * side];
    for len in 2..=n {
        for lo in 0..=n - len {
            let hi = lo + len;
            let (a, b) = if len == 2 {
                (lo + 1, lo + 1)
            } else {
                (
                    root[lo * side + hi - 1] as usize,
                    root[(lo + 1) * side + hi] as usize,
                )
            };
            let (mut best, mut arg) = (u64::MAX, a);
            for m in a..=b {
                let c = cost[lo * side + m] + cost[m * side + hi];
                if c < best {
                    (best, arg) = (c, m);
                }
            }
            cost[lo * side + hi] = pre[hi] - pre[lo] + best;
            root[lo * side + hi] = arg as u8;
        }
    }
    root.into_boxed_slice()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::{PLAN_SIDE, PRE, Plan, optimal_splits};

    /// Expected rounds of the plan `root` (side `n + 1`) for weights `w`.
    fn plan_cost(w: &[u64], root: &[u8], lo: usize, hi: usize) -> u64 {
        if lo + 1 >= hi {
            return 0;
        }
        let side = w.len() + 1;
        let m = root[lo * side + hi] as usize;
        assert!(lo < m && m < hi, "split {m} outside ({lo}, {hi})");
        w[lo..hi].iter().sum::<u64>() + plan_cost(w, root, lo, m) + plan_cost(w, root, m, hi)
    }

    /// The O(n³) recurrence without Knuth's bound.
    fn brute_cost(w: &[u64]) -> u64 {
        let n = w.len();
        let side = n + 1;
        let mut c = vec![0u64; side * side];
        for len in 2..=n {
            for lo in 0..=n - len {
                let hi = lo + len;
                let best = (lo + 1..hi)
                    .map(|m| c[lo * side + m] + c[m * side + hi])
                    .min()
                    .unwrap();
                c[lo * side + hi] = w[lo..hi].iter().sum::<u64>() + best;
            }
        }
        c[n]
    }

    /// Knuth's O(n²) plan is as good as the full O(n³) recurrence, every split lies
    /// strictly inside its range, and skewed weights give fewer rounds than bisection.
    #[test]
    fn plan_is_optimal_and_in_range() {
        let mut rng = SmallRng::seed_from_u64(3);
        let sizes: &[usize] = if cfg!(miri) {
            &[1, 2, 5, 9]
        } else {
            &[1, 2, 3, 7, 20, 40, 90]
        };
        for &n in sizes {
            for round in 0..if cfg!(miri) { 2 } else { 20 } {
                let w: Vec<u64> = (0..n)
                    .map(|_| match round % 3 {
                        0 => rng.random_range(1..100),
                        1 => rng.random_range(0..2) * rng.random_range(1..10_000),
                        _ => 1,
                    })
                    .collect();
                let root = optimal_splits(&w);
                let side = n + 1;
                for lo in 0..n {
                    for hi in lo + 2..=n {
                        let m = root[lo * side + hi] as usize;
                        assert!(lo < m && m < hi, "n {n}: split {m} outside ({lo}, {hi})");
                    }
                }
                assert_eq!(plan_cost(&w, &root, 0, n), brute_cost(&w), "weights {w:?}");
            }
        }
        // Two clusters of answers (as on `az`): far fewer rounds than bisection.
        let mut w = vec![0u64; 36];
        (w[4], w[5], w[12], w[13]) = (130, 350, 200, 200);
        let root = optimal_splits(&w);
        let mut mid = vec![0u8; 37 * 37];
        for lo in 0..36 {
            for hi in lo + 2..=36 {
                mid[lo * 37 + hi] = ((lo + hi) / 2) as u8;
            }
        }
        let (planned, bisect) = (plan_cost(&w, &root, 0, 36), plan_cost(&w, &mid, 0, 36));
        assert!(
            planned * 3 < bisect * 2,
            "planned {planned}, bisection {bisect}"
        );
    }

    /// A plan built from anchor lengths splits inside every range, falls back to the
    /// midpoint past its side, and goes stale when the longest anchor outgrows it or the
    /// anchor count moves.
    #[test]
    fn plan_from_anchor_lengths() {
        let lens = BTreeMap::from([(0, 1), (5, 40), (6, 50), (13, 60), (35, 2)]);
        let p = Plan::build(&lens, 35);
        assert_eq!(p.side, 37);
        for lo in 0..36 {
            for hi in lo + 2..=40 {
                let m = p.split(lo, hi);
                assert!(lo < m && m < hi);
            }
        }
        for hi in 0..37 {
            let top = p.top(0, hi).unwrap();
            assert!(top[PRE] as usize <= PRE);
            let n = top[PRE] as usize;
            let lens: Vec<usize> = top[..n].iter().map(|&l| l as usize).collect();
            // As many probes as the tree has (up to PRE), ascending, forming a connected
            // top of the plan's tree: walking down from the root through probes of the
            // set reaches all of them.
            assert_eq!(n, hi.saturating_sub(1).min(PRE), "hi {hi}");
            assert!(lens.windows(2).all(|w| w[0] < w[1]));
            fn reach(p: &Plan, set: &[usize], lo: usize, hi: usize) -> usize {
                if lo + 1 >= hi || !set.contains(&p.split(lo, hi)) {
                    return 0;
                }
                let m = p.split(lo, hi);
                1 + reach(p, set, lo, m) + reach(p, set, m, hi)
            }
            assert_eq!(reach(&p, &lens, 0, hi), n, "hi {hi}: {lens:?}");
        }
        assert!(p.top(0, 37).is_none() && p.top(1, 20).is_none());
        assert_eq!(p.split(0, 200), 100);
        assert!(!p.stale(153, 35));
        assert!(p.stale(153, 36));
        assert!(!p.stale(153 + 9, 35));
        assert!(p.stale(153 + 10, 35));
        assert!(p.stale(153 - 10, 35));
        let long = Plan::build(&BTreeMap::from([(0, 1), (500, 1)]), 500);
        assert_eq!(long.side, PLAN_SIDE);
        assert!(!long.stale(2, 600));
        assert_eq!(long.split(100, 400), 250);
        assert!((1..128).contains(&long.split(0, 128)));
    }
}
