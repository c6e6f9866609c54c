//! A set. Compact: an intset while every member is an integer (ascending, as Redis's
//! intset), else a pack of members in insertion order (Redis 7.2's listpack set). Large:
//! `id ++ h ++ member → ""` in the element index (hash order).

use std::sync::Arc;

use super::{COMPACT_MAX_BYTES, Ending, Form, Page, Result, Stored, check_lengths, random};
use crate::layout::{IntSet, Pack, ThresholdValues, hashed_key, id_prefix};
use crate::num::parse_i64;
use crate::store::{Enc, Kind, Meta, Txn};

/// Most members a large set's `SPOP` reads in one run (see [`Set::pop`]).
const PICK_RUN: usize = 16;

/// Most bytes of member keys kept from one run (past the first).
const PICK_BYTES: usize = 1024;

enum Repr {
    Ints(Vec<u8>),
    Compact(Vec<u8>),
    Large(u64, Arc<Meta>),
}

/// A set opened on a key (see the [module docs](self)).
pub(crate) struct Set<'k> {
    end: Ending<'k>,
    repr: Repr,
}

impl<'k> Set<'k> {
    /// The set at `key`: `Ok(None)` when absent.
    pub(crate) fn open(t: &Txn<'_>, key: &'k [u8]) -> Result<Option<Set<'k>>> {
        let Some((end, e)) = Ending::open(t, key, Kind::Set)? else {
            return Ok(None);
        };
        let repr = match e {
            Stored::Large(id, m) => Repr::Large(id, m),
            Stored::Compact(Enc::IntSet, p) => Repr::Ints(p),
            Stored::Compact(_, p) => Repr::Compact(p),
        };
        Ok(Some(Set { end, repr }))
    }

    /// A new, empty set for `key` (which the caller found absent or deleted), stored by
    /// [`Set::finish`] once it has a member.
    pub(crate) fn create(t: &Txn<'_>, key: &'k [u8]) -> Result<Set<'k>> {
        Ok(Set {
            end: Ending::create(t, key, Kind::Set)?,
            repr: Repr::Ints(IntSet::encode(&[])),
        })
    }

    /// The set at `key`, or a new empty one.
    pub(crate) fn open_or_create(t: &Txn<'_>, key: &'k [u8]) -> Result<Set<'k>> {
        match Set::open(t, key)? {
            Some(s) => Ok(s),
            None => Set::create(t, key),
        }
    }

    /// Number of members.
    pub(crate) fn len(&self) -> usize {
        match &self.repr {
            Repr::Ints(p) => IntSet::new(p).len(),
            Repr::Compact(p) => Pack::new(p).len(),
            Repr::Large(_, m) => m.len() as usize,
        }
    }

    /// `OBJECT ENCODING`'s name for the current form.
    pub(crate) fn encoding(&self) -> &'static str {
        match self.repr {
            Repr::Ints(_) => "intset",
            Repr::Compact(_) => "listpack",
            Repr::Large(..) => "hashtable",
        }
    }

    /// Whether `member` is in the set.
    pub(crate) fn contains(&self, t: &Txn<'_>, member: &[u8]) -> bool {
        match &self.repr {
            Repr::Ints(p) => parse_i64(member).is_some_and(|v| IntSet::new(p).contains(v)),
            Repr::Compact(p) => Pack::new(p).iter().any(|m| m == member),
            Repr::Large(id, _) => t.elements().contains_key(&hashed_key(*id, member)),
        }
    }

    /// Every member (ascending integers, insertion order, or hash order).
    pub(crate) fn members(&self, t: &Txn<'_>) -> Vec<Vec<u8>> {
        match &self.repr {
            Repr::Ints(p) => IntSet::new(p)
                .iter()
                .map(|v| v.to_string().into_bytes())
                .collect(),
            Repr::Compact(p) => Pack::new(p).iter().map(<[u8]>::to_vec).collect(),
            Repr::Large(id, m) => {
                let mut out = Vec::with_capacity(m.len() as usize);
                t.elements().scan_prefix(&id_prefix(*id), &mut |k, _| {
                    out.push(k[12..].to_vec());
                    std::ops::ControlFlow::Continue(())
                });
                out
            }
        }
    }

    /// One `SSCAN` page: the whole set when compact (as Redis), else `count` members
    /// after `after`.
    pub(crate) fn page(&self, t: &Txn<'_>, after: Option<&[u8]>, count: usize) -> Page {
        match &self.repr {
            Repr::Large(id, _) => {
                super::scan_page(t.elements(), &id_prefix(*id), after, count, &|k, _| {
                    (k[12..].to_vec(), None)
                })
            }
            _ => Page {
                items: self.members(t).into_iter().map(|m| (m, None)).collect(),
                next: None,
            },
        }
    }

    /// Up to `n` distinct random members (all of them when `n` ≥ the set's size).
    pub(crate) fn random_distinct(&self, t: &Txn<'_>, n: usize) -> Vec<Vec<u8>> {
        if n >= self.len() {
            return self.members(t);
        }
        match &self.repr {
            Repr::Large(id, _) => random::distinct(t.elements(), &id_prefix(*id), n)
                .into_iter()
                .map(|(k, _)| k[12..].to_vec())
                .collect(),
            _ => {
                let mut all = self.members(t);
                for i in 0..n {
                    let j = i + random::below(all.len() - i);
                    all.swap(i, j);
                }
                all.truncate(n);
                all
            }
        }
    }

    /// Pops `n` distinct random members (all of them when `n` ≥ the set's size), each
    /// removal logged. A large set takes its picks from a run of up to [`PICK_RUN`]
    /// members following a random point of its hash order, read with one seek and kept in
    /// its bookkeeping (`Meta::picks`) for the next pops, each pop taking one of the run
    /// at random: a member is still picked with about the probability `1/n`, but the
    /// members of one run go out in consecutive pops (Redis's own pick samples buckets
    /// and is not exactly uniform either). A kept pick that is gone is skipped: the
    /// removal tells.
    pub(crate) fn pop(&mut self, t: &Txn<'_>, n: usize) -> Vec<Vec<u8>> {
        let Repr::Large(id, meta) = &self.repr else {
            return self.pop_picked(t, n);
        };
        if n >= self.len() {
            return self.pop_picked(t, n);
        }
        let (id, meta) = (*id, meta.clone());
        let mut out = Vec::with_capacity(n);
        let mut guard = meta.lock_picks();
        let picks = &mut guard.keys;
        let mut empty_runs = 0;
        while out.len() < n {
            if picks.is_empty() {
                *picks = random::run(t.elements(), &id_prefix(id), PICK_RUN, PICK_BYTES);
                // Only damage could leave the bookkeeping counting members the index
                // does not hold: give up rather than loop.
                if picks.is_empty() || empty_runs > 2 {
                    break;
                }
                empty_runs += 1;
            }
            let at = random::below(picks.len());
            let k = picks.swap_remove(at);
            if t.elements().remove(&k) {
                empty_runs = 0;
                meta.add(-1);
                let member = k[12..].to_vec();
                t.record(&[b"SREM", self.end.key, &member]);
                out.push(member);
            }
        }
        out
    }

    /// Pops `n` members picked by [`Set::random_distinct`].
    fn pop_picked(&mut self, t: &Txn<'_>, n: usize) -> Vec<Vec<u8>> {
        let picked = self.random_distinct(t, n);
        for m in &picked {
            self.remove(t, m);
        }
        picked
    }

    /// `n` random members, repeats allowed (the set must not be empty).
    pub(crate) fn random_repeated(&self, t: &Txn<'_>, n: usize) -> Vec<Vec<u8>> {
        match &self.repr {
            Repr::Large(id, _) => (0..n)
                .filter_map(|_| random::probe(t.elements(), &id_prefix(*id)))
                .map(|(k, _)| k[12..].to_vec())
                .collect(),
            _ => {
                let all = self.members(t);
                (0..n)
                    .map(|_| all[random::below(all.len())].clone())
                    .collect()
            }
        }
    }

    /// Adds `member` (logged); whether it is new.
    pub(crate) fn add(&mut self, t: &Txn<'_>, member: &[u8]) -> Result<bool> {
        check_lengths([member])?;
        let th = t.thresholds();
        if let Repr::Ints(p) = &self.repr {
            let ints = IntSet::new(p);
            match parse_i64(member) {
                Some(v) if ints.contains(v) => return Ok(false),
                Some(v) if (ints.len() + 1) as i64 <= th.set_intset_entries => {
                    self.repr = Repr::Ints(ints.with(v).unwrap_or_else(|| p.clone()));
                    self.end.dirty = true;
                    t.record(&[b"SADD", self.end.key, member]);
                    return Ok(true);
                }
                _ => self.convert(t, &th, member)?,
            }
        }
        if let Repr::Compact(p) = &self.repr {
            let pack = Pack::new(p);
            if pack.iter().any(|m| m == member) {
                return Ok(false);
            }
            if fits_pack(&th, pack.len() + 1, member, p.len()) {
                let mut items = pack.to_vec();
                items.push(member);
                self.repr = Repr::Compact(Pack::encode(&items));
                self.end.dirty = true;
                t.record(&[b"SADD", self.end.key, member]);
                return Ok(true);
            }
            self.move_to_index(t)?;
        }
        let Repr::Large(id, meta) = &self.repr else {
            unreachable!("converted above")
        };
        let new = t.elements().insert(&hashed_key(*id, member), b"")?;
        if new {
            meta.add(1);
            t.record(&[b"SADD", self.end.key, member]);
        }
        Ok(new)
    }

    /// Leaves the intset form for a pack or the element index, as adding `member` needs.
    fn convert(&mut self, t: &Txn<'_>, th: &ThresholdValues, member: &[u8]) -> Result<()> {
        let members = self.members(t);
        let bytes: usize = members.iter().map(|m| m.len() + 1).sum();
        let fit = members.len() < th.set_entries as usize
            && members.iter().all(|m| m.len() as i64 <= th.set_value)
            && fits_pack(th, members.len() + 1, member, bytes);
        if fit {
            let items: Vec<&[u8]> = members.iter().map(|m| &m[..]).collect();
            self.repr = Repr::Compact(Pack::encode(&items));
            self.end.dirty = true;
            Ok(())
        } else {
            self.move_to_index(t)
        }
    }

    /// Removes `member` (logged); whether it was there.
    pub(crate) fn remove(&mut self, t: &Txn<'_>, member: &[u8]) -> bool {
        let removed = match &self.repr {
            Repr::Ints(p) => match parse_i64(member).and_then(|v| IntSet::new(p).without(v)) {
                Some(new) => {
                    self.repr = Repr::Ints(new);
                    true
                }
                None => false,
            },
            Repr::Compact(p) => {
                let mut items = Pack::new(p).to_vec();
                match items.iter().position(|m| *m == member) {
                    Some(i) => {
                        items.remove(i);
                        self.repr = Repr::Compact(Pack::encode(&items));
                        true
                    }
                    None => false,
                }
            }
            Repr::Large(id, meta) => {
                let removed = t.elements().remove(&hashed_key(*id, member));
                if removed {
                    meta.add(-1);
                }
                removed
            }
        };
        if removed {
            if !matches!(self.repr, Repr::Large(..)) {
                self.end.dirty = true;
            }
            t.record(&[b"SREM", self.end.key, member]);
        }
        removed
    }

    /// Moves the collection to the shared indexes now, whatever its size (`COPY` of a
    /// large one: Redis's copy keeps the encoding).
    pub(crate) fn make_large(&mut self, t: &Txn<'_>) -> Result<()> {
        self.move_to_index(t)
    }

    /// Moves the members into the element index.
    fn move_to_index(&mut self, t: &Txn<'_>) -> Result<()> {
        if matches!(self.repr, Repr::Large(..)) {
            return Ok(());
        }
        let members = self.members(t);
        let (id, meta) = t.create_large(false);
        for m in &members {
            if let Err(e) = t.elements().insert(&hashed_key(id, m), b"") {
                t.drop_large(id);
                return Err(e.into());
            }
        }
        meta.add(members.len() as i64);
        self.repr = Repr::Large(id, meta);
        self.end.dirty = true;
        Ok(())
    }

    /// Writes the set back to its key (or deletes the key when the set is empty).
    pub(crate) fn finish(self, t: &Txn<'_>) -> Result<()> {
        let len = self.len();
        let form = match self.repr {
            Repr::Ints(p) => Form::Compact(Enc::IntSet, p),
            Repr::Compact(p) => Form::Compact(Enc::Compact, p),
            Repr::Large(id, _) => Form::Large(id),
        };
        self.end.finish(t, len, form)
    }
}

/// Whether a pack of `count` members, one of them `member`, taking about `bytes`, stays
/// within the thresholds.
fn fits_pack(th: &ThresholdValues, count: usize, member: &[u8], bytes: usize) -> bool {
    count as i64 <= th.set_entries
        && member.len() as i64 <= th.set_value
        && bytes + member.len() + 10 <= COMPACT_MAX_BYTES
}
