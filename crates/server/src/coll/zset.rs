//! A sorted set. Compact: one pack of `member score` entries (the score's 8 bytes) in the
//! set's order, score then member (Redis's listpack order). Scores are ordered as numbers
//! (`-0` equals `0`) and kept exactly, as Redis keeps them: `-0` stays `-0` in a large
//! set and becomes `0` in a compact one (a listpack reads "-0" back as 0).
//! Large: two kinds of keys in the element index (the set-up of the Cuckoo Trie paper's
//! §6.8, where the ordered structure is the index itself), under the set's id:
//!
//! - member keys `id ++ 0x00 ++ h ++ member → score`, which answer `ZSCORE` and, being in
//!   hash order, the random picks;
//! - order keys `id ++ 0x01 ++ score ++ member → score`, whose key order is the set's
//!   order,
//!   which answer score, rank and lexicographic ranges in both directions
//!   (`zset_ranges`).
//!
//! Every access holds the key's stripe, so a reader never sees a member in one kind of
//! key and not the other.

use std::ops::ControlFlow;
use std::sync::Arc;

use super::{COMPACT_MAX_BYTES, Ending, Form, Result, Scored, Stored, check_lengths, random};
use crate::layout::{
    Pack, bits_score, score_bits, score_key, zset_member_key, zset_member_prefix, zset_score_key,
};
use crate::store::{Enc, Kind, Meta, Txn};

pub(super) enum Repr {
    Compact(Vec<u8>),
    Large(u64, Arc<Meta>),
}

/// A sorted set opened on a key (see the [module docs](self)).
pub(crate) struct ZSet<'k> {
    pub(super) end: Ending<'k>,
    pub(super) repr: Repr,
}

/// The `(member, score)` pairs of a compact set's pack, in order.
pub(super) fn compact_items(p: &[u8]) -> Vec<(&[u8], f64)> {
    let pack = Pack::new(p);
    let mut out = Vec::with_capacity(pack.len() / 2);
    let mut it = pack.iter();
    while let (Some(m), Some(s)) = (it.next(), it.next()) {
        out.push((m, bits_score(s)));
    }
    out
}

/// Drops a large set's kept run of end members (`Meta::picks`, `ZPOPMIN`'s or
/// `ZPOPMAX`'s: see `zset_ranges`'s `pop`) when the new order key `order` falls within it
/// (at or before its far end, seen from its own end): the run then might no longer be the
/// set's first (or last) members. An order key beyond the run leaves it exact.
fn keep_run_exact(meta: &Meta, order: &[u8]) {
    let mut picks = meta.lock_picks();
    let Some(far) = picks.keys.first() else {
        return;
    };
    let far = &far[..far.len().saturating_sub(8)];
    if (picks.max && order >= far) || (!picks.max && order <= far) {
        picks.keys.clear();
        picks.refills = 0;
    }
}

impl<'k> ZSet<'k> {
    /// The sorted set at `key`: `Ok(None)` when absent.
    pub(crate) fn open(t: &Txn<'_>, key: &'k [u8]) -> Result<Option<ZSet<'k>>> {
        let Some((end, e)) = Ending::open(t, key, Kind::ZSet)? else {
            return Ok(None);
        };
        let repr = match e {
            Stored::Large(id, m) => Repr::Large(id, m),
            Stored::Compact(_, p) => Repr::Compact(p),
        };
        Ok(Some(ZSet { end, repr }))
    }

    /// A new, empty sorted set for `key` (which the caller found absent or deleted),
    /// stored by [`ZSet::finish`] once it has a member.
    pub(crate) fn create(t: &Txn<'_>, key: &'k [u8]) -> Result<ZSet<'k>> {
        Ok(ZSet {
            end: Ending::create(t, key, Kind::ZSet)?,
            repr: Repr::Compact(Pack::encode(&[])),
        })
    }

    /// Number of members.
    pub(crate) fn len(&self) -> usize {
        match &self.repr {
            Repr::Compact(p) => Pack::new(p).len() / 2,
            Repr::Large(_, m) => m.len() as usize,
        }
    }

    /// `OBJECT ENCODING`'s name for the current form.
    pub(crate) fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Compact(_) => "listpack",
            Repr::Large(..) => "skiplist",
        }
    }

    /// The member's score.
    pub(crate) fn score(&self, t: &Txn<'_>, member: &[u8]) -> Option<f64> {
        match &self.repr {
            Repr::Compact(p) => compact_items(p)
                .into_iter()
                .find(|(m, _)| *m == member)
                .map(|(_, s)| s),
            Repr::Large(id, _) => {
                let mut out = None;
                t.elements()
                    .get_with(&zset_member_key(*id, member), |v| out = Some(bits_score(v)));
                out
            }
        }
    }

    /// Sets the member's score (logged); `old` is its current score, which the caller has
    /// just read under the key's stripe.
    pub(crate) fn insert(
        &mut self,
        t: &Txn<'_>,
        member: &[u8],
        score: f64,
        old: Option<f64>,
    ) -> Result<()> {
        check_lengths([member])?;
        if old.is_some_and(|o| score_key(o) == score_key(score)) {
            return Ok(());
        }
        if let Repr::Compact(p) = &self.repr {
            let th = t.thresholds();
            let n = Pack::new(p).len() / 2;
            let fits = (old.is_some() || (n + 1) as i64 <= th.zset_entries)
                && member.len() as i64 <= th.zset_value
                && p.len() + member.len() + 20 <= COMPACT_MAX_BYTES;
            if fits {
                // As a listpack, which keeps a score as text and reads "-0" back as the
                // integer 0, the compact form holds no negative zero.
                let score = if score == 0.0 { 0.0 } else { score };
                let mut items = compact_items(p);
                if old.is_some() {
                    items.retain(|(m, _)| *m != member);
                }
                let sk = score_key(score);
                let at = items.partition_point(|(m, s)| (score_key(*s), *m) < (sk, member));
                items.insert(at, (member, score));
                let keys: Vec<[u8; 8]> = items.iter().map(|(_, s)| score_bits(*s)).collect();
                let mut flat: Vec<&[u8]> = Vec::with_capacity(items.len() * 2);
                for (i, (m, _)) in items.iter().enumerate() {
                    flat.push(m);
                    flat.push(&keys[i]);
                }
                self.repr = Repr::Compact(Pack::encode(&flat));
                self.end.dirty = true;
                t.record(&[
                    b"ZADD",
                    self.end.key,
                    member,
                    &score.to_bits().to_be_bytes(),
                ]);
                return Ok(());
            }
            self.move_to_index(t)?;
        }
        let Repr::Large(id, meta) = &self.repr else {
            unreachable!("converted above")
        };
        let el = t.elements();
        let order = zset_score_key(*id, score, member);
        el.insert(&order, &score_bits(score))?;
        if let Err(e) = el.insert(&zset_member_key(*id, member), &score_bits(score)) {
            el.remove(&order);
            return Err(e.into());
        }
        keep_run_exact(meta, &order);
        match old {
            Some(o) => {
                el.remove(&zset_score_key(*id, o, member));
            }
            None => meta.add(1),
        }
        t.record(&[
            b"ZADD",
            self.end.key,
            member,
            &score.to_bits().to_be_bytes(),
        ]);
        Ok(())
    }

    /// Removes the member (logged); whether it was there.
    pub(crate) fn remove(&mut self, t: &Txn<'_>, member: &[u8]) -> bool {
        let removed = match &self.repr {
            Repr::Compact(p) => {
                let mut items = Pack::new(p).to_vec();
                match items.chunks(2).position(|c| c[0] == member) {
                    Some(i) => {
                        items.drain(2 * i..2 * i + 2);
                        self.repr = Repr::Compact(Pack::encode(&items));
                        self.end.dirty = true;
                        true
                    }
                    None => false,
                }
            }
            Repr::Large(id, meta) => match self.score(t, member) {
                Some(s) => {
                    t.elements().remove(&zset_member_key(*id, member));
                    t.elements().remove(&zset_score_key(*id, s, member));
                    meta.add(-1);
                    true
                }
                None => false,
            },
        };
        if removed {
            t.record(&[b"ZREM", self.end.key, member]);
        }
        removed
    }

    /// Removes `member`, whose score the caller has just read as `score` (logged).
    pub(crate) fn remove_scored(&mut self, t: &Txn<'_>, member: &[u8], score: f64) {
        match &self.repr {
            Repr::Large(id, meta) => {
                if t.elements().remove(&zset_member_key(*id, member)) {
                    t.elements().remove(&zset_score_key(*id, score, member));
                    meta.add(-1);
                    t.record(&[b"ZREM", self.end.key, member]);
                }
            }
            Repr::Compact(_) => {
                self.remove(t, member);
            }
        }
    }

    /// Moves the set to the element index now, whatever its size (a store command's
    /// result that Redis builds as a skiplist).
    pub(crate) fn make_large(&mut self, t: &Txn<'_>) -> Result<()> {
        self.move_to_index(t)
    }

    /// Moves the members into the element index.
    fn move_to_index(&mut self, t: &Txn<'_>) -> Result<()> {
        let Repr::Compact(p) = &self.repr else {
            return Ok(());
        };
        let items = compact_items(p);
        let (id, meta) = t.create_large(false);
        for (m, s) in &items {
            let r = t
                .elements()
                .insert(&zset_score_key(id, *s, m), &score_bits(*s))
                .and_then(|_| {
                    t.elements()
                        .insert(&zset_member_key(id, m), &score_bits(*s))
                });
            if let Err(e) = r {
                t.drop_large(id);
                return Err(e.into());
            }
        }
        meta.add(items.len() as i64);
        self.repr = Repr::Large(id, meta);
        self.end.dirty = true;
        Ok(())
    }

    /// Every `(member, score)` in member-key order for a large set (hash order), in the
    /// set's order for a compact one.
    pub(crate) fn members(&self, t: &Txn<'_>) -> Vec<(Vec<u8>, f64)> {
        match &self.repr {
            Repr::Compact(p) => compact_items(p)
                .into_iter()
                .map(|(m, s)| (m.to_vec(), s))
                .collect(),
            Repr::Large(id, _) => {
                let mut out = Vec::with_capacity(self.len());
                t.elements()
                    .scan_prefix(&zset_member_prefix(*id), &mut |k, v| {
                        out.push((k[13..].to_vec(), bits_score(v)));
                        ControlFlow::Continue(())
                    });
                out
            }
        }
    }

    /// One `ZSCAN` page: the whole set when compact (as Redis), else `count` members after
    /// `after`; and where the next page starts.
    pub(crate) fn page(
        &self,
        t: &Txn<'_>,
        after: Option<&[u8]>,
        count: usize,
    ) -> (Scored, Option<Vec<u8>>) {
        match &self.repr {
            Repr::Compact(_) => (self.members(t), None),
            Repr::Large(id, _) => {
                let page = super::scan_page(
                    t.elements(),
                    &zset_member_prefix(*id),
                    after,
                    count,
                    &|k, v| (k[13..].to_vec(), Some(v.to_vec())),
                );
                let items = page
                    .items
                    .into_iter()
                    .map(|(m, s)| (m, bits_score(&s.unwrap_or_default())))
                    .collect();
                (items, page.next)
            }
        }
    }

    /// Up to `n` distinct random members with their scores (all when `n` ≥ the size).
    pub(crate) fn random_distinct(&self, t: &Txn<'_>, n: usize) -> Vec<(Vec<u8>, f64)> {
        if n >= self.len() {
            return self.members(t);
        }
        match &self.repr {
            Repr::Compact(_) => {
                let mut all = self.members(t);
                for i in 0..n {
                    let j = i + random::below(all.len() - i);
                    all.swap(i, j);
                }
                all.truncate(n);
                all
            }
            Repr::Large(id, _) => random::distinct(t.elements(), &zset_member_prefix(*id), n)
                .into_iter()
                .map(|(k, v)| (k[13..].to_vec(), bits_score(&v)))
                .collect(),
        }
    }

    /// `n` random members with scores, repeats allowed (the set must not be empty).
    pub(crate) fn random_repeated(&self, t: &Txn<'_>, n: usize) -> Vec<(Vec<u8>, f64)> {
        match &self.repr {
            Repr::Compact(_) => {
                let all = self.members(t);
                (0..n)
                    .map(|_| all[random::below(all.len())].clone())
                    .collect()
            }
            Repr::Large(id, _) => (0..n)
                .filter_map(|_| random::probe(t.elements(), &zset_member_prefix(*id)))
                .map(|(k, v)| (k[13..].to_vec(), bits_score(&v)))
                .collect(),
        }
    }

    /// Writes the set back to its key (or deletes the key when the set is empty).
    pub(crate) fn finish(self, t: &Txn<'_>) -> Result<()> {
        let len = self.len();
        let form = match self.repr {
            Repr::Compact(p) => Form::Compact(Enc::Compact, p),
            Repr::Large(id, _) => Form::Large(id),
        };
        self.end.finish(t, len, form)
    }
}
