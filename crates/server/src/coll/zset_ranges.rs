//! A sorted set's ranges: by rank, by score, by member (`BYLEX`), their counts, ranks, and
//! removals (`ZREMRANGEBY*`, `ZPOPMIN`/`ZPOPMAX`), on both forms of [`ZSet`].
//!
//! A large set's ranges are scans of its order keys (`id ++ 0x01 ++ score ++ member`): a
//! score range is a key range; a rank is a count from one end (Wormhole keeps no subtree
//! counts, so `ZRANK` and a rank range are O(rank), as they are on a listpack in Redis).
//! A lexicographic range assumes, as Redis does, that every score is equal: then it is a
//! key range under that score. When scores differ, Redis's answer is unspecified (its
//! skiplist walk follows random levels); both forms here then walk the set's order as
//! Redis walks a listpack: from the first member not below the minimum while members do
//! not pass the maximum.

use std::ops::{Bound, ControlFlow};

use orrery::OrderedKvIndex;

use super::scan_chunks;
use super::zset::{Repr, ZSet, compact_items};
use orrery::wormhole::Wormhole;

use crate::layout::{
    bits_score, key_score, score_bits, score_key, zset_member_key, zset_score_key,
    zset_score_prefix,
};
use crate::store::Txn;

/// One end of a score range.
pub(crate) type ScoreBound = Bound<f64>;

/// Which pairs a range asks for: skip `offset`, then at most `count` (`None`: all).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limit {
    /// Pairs skipped first.
    pub(crate) offset: usize,
    /// Most pairs returned.
    pub(crate) count: Option<usize>,
}

impl Limit {
    /// Everything.
    pub(crate) const ALL: Limit = Limit {
        offset: 0,
        count: None,
    };

    fn apply<T>(self, items: impl Iterator<Item = T>) -> Vec<T> {
        let it = items.skip(self.offset);
        match self.count {
            Some(c) => it.take(c).collect(),
            None => it.collect(),
        }
    }
}

fn in_score(s: f64, min: ScoreBound, max: ScoreBound) -> bool {
    let lo = match min {
        Bound::Included(m) => s >= m,
        Bound::Excluded(m) => s > m,
        Bound::Unbounded => true,
    };
    let hi = match max {
        Bound::Included(m) => s <= m,
        Bound::Excluded(m) => s < m,
        Bound::Unbounded => true,
    };
    lo && hi
}

fn gte_min(m: &[u8], min: &Bound<Vec<u8>>) -> bool {
    match min {
        Bound::Included(x) => m >= &x[..],
        Bound::Excluded(x) => m > &x[..],
        Bound::Unbounded => true,
    }
}

fn lte_max(m: &[u8], max: &Bound<Vec<u8>>) -> bool {
    match max {
        Bound::Included(x) => m <= &x[..],
        Bound::Excluded(x) => m < &x[..],
        Bound::Unbounded => true,
    }
}

/// The order-key range of scores `[min, max]` of set `id`; `None` when empty.
fn score_keys(id: u64, min: ScoreBound, max: ScoreBound) -> Option<(Vec<u8>, Bound<Vec<u8>>)> {
    let prefix = zset_score_prefix(id);
    let with = |k: [u8; 8]| {
        let mut v = prefix.to_vec();
        v.extend_from_slice(&k);
        v
    };
    let succ = |k: [u8; 8]| u64::from_be_bytes(k).checked_add(1).map(u64::to_be_bytes);
    let end_of_set = || match orrery::api::prefix_successor(&prefix) {
        Some(e) => Bound::Excluded(e),
        None => Bound::Unbounded,
    };
    let lo = match min {
        Bound::Unbounded => prefix.to_vec(),
        Bound::Included(s) => with(score_key(s)),
        Bound::Excluded(s) => with(succ(score_key(s))?),
    };
    let hi = match max {
        Bound::Unbounded => end_of_set(),
        Bound::Included(s) => match succ(score_key(s)) {
            Some(k) => Bound::Excluded(with(k)),
            None => end_of_set(),
        },
        Bound::Excluded(s) => Bound::Excluded(with(score_key(s))),
    };
    let empty = match &hi {
        Bound::Excluded(h) => lo >= *h,
        _ => false,
    };
    (!empty).then_some((lo, hi))
}

/// Most bytes of keys a kept pop run holds beyond what the pop that reads it takes.
const END_BYTES: usize = 1024;

/// The order keys at one end of set `id` (the highest with `max`), each followed by the
/// 8 bytes of its score, the end's first last: `need` of them (fewer when the set has
/// fewer), and up to `extra` more while their bytes stay within [`END_BYTES`].
fn end_run(el: &Wormhole, id: u64, max: bool, need: usize, extra: usize) -> Vec<Vec<u8>> {
    let prefix = zset_score_prefix(id);
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(need + extra);
    let mut bytes = 0;
    let mut f = |k: &[u8], v: &[u8]| {
        let wanted =
            out.len() < need || (out.len() < need + extra && bytes + k.len() + 8 <= END_BYTES);
        if !wanted || !k.starts_with(&prefix) || k.len() < 17 {
            return ControlFlow::Break(());
        }
        let mut e = Vec::with_capacity(k.len() + 8);
        e.extend_from_slice(k);
        match v.len() {
            8 => e.extend_from_slice(v),
            _ => e.extend_from_slice(&score_bits(key_score(&k[9..17]))),
        }
        if out.len() >= need {
            bytes += e.len();
        }
        out.push(e);
        ControlFlow::Continue(())
    };
    if max {
        match orrery::api::prefix_successor(&prefix) {
            Some(end) => el.scan_rev(Bound::Excluded(&end[..]), &mut f),
            None => el.scan_rev(Bound::Unbounded, &mut f),
        }
    } else {
        el.scan(Bound::Included(&prefix[..]), &mut f);
    }
    out.reverse();
    out
}

fn order_pair(k: &[u8], v: &[u8]) -> (Vec<u8>, f64) {
    let score = if v.len() == 8 {
        bits_score(v)
    } else {
        key_score(&k[9..17])
    };
    (k[17..].to_vec(), score)
}

impl ZSet<'_> {
    /// Members at ranks `start..=stop` (already clamped to the set), ascending or
    /// descending.
    pub(crate) fn by_rank(
        &self,
        t: &Txn<'_>,
        start: usize,
        stop: usize,
        rev: bool,
    ) -> Vec<(Vec<u8>, f64)> {
        let limit = Limit {
            offset: start,
            count: Some(stop + 1 - start),
        };
        match &self.repr {
            Repr::Compact(p) => {
                let items = compact_items(p);
                let owned = |(m, s): &(&[u8], f64)| (m.to_vec(), *s);
                if rev {
                    limit.apply(items.iter().rev().map(owned))
                } else {
                    limit.apply(items.iter().map(owned))
                }
            }
            Repr::Large(id, _) => {
                let prefix = zset_score_prefix(*id);
                self.walk_large(t, &prefix, (Bound::Unbounded, Bound::Unbounded), rev, limit)
            }
        }
    }

    /// Walks order keys of a large set in `range` (`Unbounded`: the set's own ends).
    fn walk_large(
        &self,
        t: &Txn<'_>,
        prefix: &[u8],
        range: (Bound<Vec<u8>>, Bound<Vec<u8>>),
        rev: bool,
        limit: Limit,
    ) -> Vec<(Vec<u8>, f64)> {
        let mut out = Vec::new();
        if limit.count == Some(0) {
            return out;
        }
        let mut skip = limit.offset;
        let (lo, hi) = range;
        let mut f = |k: &[u8], v: &[u8]| {
            if !k.starts_with(prefix) {
                return ControlFlow::Break(());
            }
            let inside = if rev {
                match &lo {
                    Bound::Included(l) => k >= &l[..],
                    Bound::Excluded(l) => k > &l[..],
                    Bound::Unbounded => true,
                }
            } else {
                match &hi {
                    Bound::Included(h) => k <= &h[..],
                    Bound::Excluded(h) => k < &h[..],
                    Bound::Unbounded => true,
                }
            };
            if !inside {
                return ControlFlow::Break(());
            }
            if skip > 0 {
                skip -= 1;
                return ControlFlow::Continue(());
            }
            out.push(order_pair(k, v));
            if limit.count.is_some_and(|c| out.len() >= c) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let el = t.elements();
        if rev {
            let end = orrery::api::prefix_successor(prefix);
            let from = match (&hi, &end) {
                (Bound::Included(h), _) => Bound::Included(&h[..]),
                (Bound::Excluded(h), _) => Bound::Excluded(&h[..]),
                (Bound::Unbounded, Some(e)) => Bound::Excluded(&e[..]),
                (Bound::Unbounded, None) => Bound::Unbounded,
            };
            el.scan_rev(from, &mut f);
        } else {
            let from = match &lo {
                Bound::Included(l) => Bound::Included(&l[..]),
                Bound::Excluded(l) => Bound::Excluded(&l[..]),
                Bound::Unbounded => Bound::Included(prefix),
            };
            el.scan(from, &mut f);
        }
        out
    }

    /// Members with scores in `[min, max]` (bounds as given), ascending or descending.
    pub(crate) fn by_score(
        &self,
        t: &Txn<'_>,
        min: ScoreBound,
        max: ScoreBound,
        rev: bool,
        limit: Limit,
    ) -> Vec<(Vec<u8>, f64)> {
        match &self.repr {
            Repr::Compact(p) => {
                let items = compact_items(p);
                let sel = items.iter().filter(|(_, s)| in_score(*s, min, max));
                let owned = |(m, s): &(&[u8], f64)| (m.to_vec(), *s);
                if rev {
                    let v: Vec<_> = sel.collect();
                    limit.apply(v.into_iter().rev().map(owned))
                } else {
                    limit.apply(sel.map(owned))
                }
            }
            Repr::Large(id, _) => match score_keys(*id, min, max) {
                Some((lo, hi)) => self.walk_large(
                    t,
                    &zset_score_prefix(*id),
                    (Bound::Included(lo), hi),
                    rev,
                    limit,
                ),
                None => Vec::new(),
            },
        }
    }

    /// Number of members with scores in the range.
    pub(crate) fn count_by_score(&self, t: &Txn<'_>, min: ScoreBound, max: ScoreBound) -> usize {
        match &self.repr {
            Repr::Compact(p) => compact_items(p)
                .iter()
                .filter(|(_, s)| in_score(*s, min, max))
                .count(),
            Repr::Large(..) => self.by_score(t, min, max, false, Limit::ALL).len(),
        }
    }

    /// Members in the lexicographic range `[min, max]` (see the module docs), ascending or
    /// descending.
    pub(crate) fn by_lex(
        &self,
        t: &Txn<'_>,
        min: &Bound<Vec<u8>>,
        max: &Bound<Vec<u8>>,
        rev: bool,
        limit: Limit,
    ) -> Vec<(Vec<u8>, f64)> {
        match &self.repr {
            Repr::Compact(p) => {
                let items = compact_items(p);
                let owned = |(m, s): &(&[u8], f64)| (m.to_vec(), *s);
                if rev {
                    let sel = items
                        .iter()
                        .rev()
                        .skip_while(|(m, _)| !lte_max(m, max))
                        .take_while(|(m, _)| gte_min(m, min));
                    limit.apply(sel.map(owned))
                } else {
                    let sel = items
                        .iter()
                        .skip_while(|(m, _)| !gte_min(m, min))
                        .take_while(|(m, _)| lte_max(m, max));
                    limit.apply(sel.map(owned))
                }
            }
            Repr::Large(id, _) => {
                let prefix = zset_score_prefix(*id);
                let ends = self
                    .by_rank(t, 0, 0, false)
                    .pop()
                    .zip(self.by_rank(t, 0, 0, true).pop());
                let Some(((_, first), (_, last))) = ends else {
                    return Vec::new();
                };
                if score_key(first) == score_key(last) {
                    // One score: the lexicographic range is a key range under it.
                    let key = |b: &Bound<Vec<u8>>| match b {
                        Bound::Included(m) => Bound::Included(zset_score_key(*id, first, m)),
                        Bound::Excluded(m) => Bound::Excluded(zset_score_key(*id, first, m)),
                        Bound::Unbounded => Bound::Unbounded,
                    };
                    return self.walk_large(t, &prefix, (key(min), key(max)), rev, limit);
                }
                // Mixed scores: walk the set's order as Redis walks a listpack.
                let mut all = Vec::new();
                scan_chunks(t.elements(), &prefix, Bound::Unbounded, &mut |k, v| {
                    all.push(order_pair(k, v));
                    ControlFlow::Continue(())
                });
                if rev {
                    let sel = all
                        .into_iter()
                        .rev()
                        .skip_while(|(m, _)| !lte_max(m, max))
                        .take_while(|(m, _)| gte_min(m, min));
                    limit.apply(sel)
                } else {
                    let sel = all
                        .into_iter()
                        .skip_while(|(m, _)| !gte_min(m, min))
                        .take_while(|(m, _)| lte_max(m, max));
                    limit.apply(sel)
                }
            }
        }
    }

    /// Number of members in a lexicographic range.
    pub(crate) fn count_by_lex(
        &self,
        t: &Txn<'_>,
        min: &Bound<Vec<u8>>,
        max: &Bound<Vec<u8>>,
    ) -> usize {
        self.by_lex(t, min, max, false, Limit::ALL).len()
    }

    /// The member's rank (0 for the lowest score), counting from the end with `rev`.
    pub(crate) fn rank(&self, t: &Txn<'_>, member: &[u8], rev: bool) -> Option<usize> {
        let score = self.score(t, member)?;
        let below = match &self.repr {
            Repr::Compact(p) => compact_items(p)
                .iter()
                .position(|(m, _)| *m == member)
                .unwrap_or(0),
            Repr::Large(id, _) => {
                let prefix = zset_score_prefix(*id);
                let mut n = 0;
                let end = zset_score_key(*id, score, member);
                t.elements().scan_range(
                    Bound::Included(&prefix),
                    Bound::Excluded(&end),
                    &mut |_, _| {
                        n += 1;
                        ControlFlow::Continue(())
                    },
                );
                n
            }
        };
        Some(if rev { self.len() - 1 - below } else { below })
    }

    /// Removes and returns the `count` lowest (`max`: highest) members (logged). A large
    /// set pops from a run of its end members read with one scan and kept in its
    /// bookkeeping (`Meta::picks`): a pop then costs its two removals and no seek. The
    /// run stays exact: an insert within it drops it (`ZSet::insert`), and a kept member
    /// removed since is skipped because the removal of its order key says so.
    pub(crate) fn pop(&mut self, t: &Txn<'_>, max: bool, count: usize) -> Vec<(Vec<u8>, f64)> {
        if count == 0 || self.len() == 0 {
            return Vec::new();
        }
        let n = count.min(self.len());
        let Repr::Large(id, meta) = &self.repr else {
            let items = self.by_rank(t, 0, n - 1, max);
            for (m, s) in &items {
                self.remove_scored(t, m, *s);
            }
            return items;
        };
        let (id, meta) = (*id, meta.clone());
        let el = t.elements();
        let mut out = Vec::with_capacity(n);
        let mut picks = meta.lock_picks();
        if picks.max != max {
            picks.keys.clear();
            picks.refills = 0;
            picks.max = max;
        }
        let mut fresh = false;
        while out.len() < n {
            let Some(k) = picks.keys.pop() else {
                // A fresh run that yields nothing means bookkeeping counting members the
                // index does not hold (only damage): stop rather than loop.
                if fresh {
                    break;
                }
                let extra = (1usize << picks.refills.min(4)) - 1;
                picks.refills = picks.refills.saturating_add(1);
                picks.keys = end_run(el, id, max, n - out.len(), extra);
                fresh = true;
                continue;
            };
            let (order, bits) = k.split_at(k.len() - 8);
            if el.remove(order) {
                fresh = false;
                let member = &order[17..];
                el.remove(&zset_member_key(id, member));
                meta.add(-1);
                t.record(&[b"ZREM", self.end.key, member]);
                out.push((member.to_vec(), bits_score(bits)));
            }
        }
        out
    }

    /// Removes the given members (logged); how many were removed.
    pub(crate) fn remove_all(&mut self, t: &Txn<'_>, members: &[(Vec<u8>, f64)]) -> usize {
        members.iter().filter(|(m, _)| self.remove(t, m)).count()
    }
}
