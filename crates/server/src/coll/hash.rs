//! A hash: field → value. Compact: one pack of `field value` entries in insertion order
//! (Redis's listpack order, so `HGETALL` on a small hash answers as Redis does). Large:
//! `id ++ h ++ field → value` in the element index (hash order).

use std::ops::ControlFlow;
use std::sync::Arc;

use orrery::api::ScanVisitor;

use super::{
    COMPACT_MAX_BYTES, Ending, Form, Page, Result, Stored, check_lengths, check_values, random,
};
use crate::layout::{Pack, hashed_key, id_prefix};
use crate::store::{Enc, Kind, Meta, Txn};

enum Repr {
    Compact(Vec<u8>),
    Large(u64, Arc<Meta>),
}

/// A hash opened on a key (see the [module docs](self)).
pub(crate) struct Hash<'k> {
    end: Ending<'k>,
    repr: Repr,
}

impl<'k> Hash<'k> {
    /// The hash at `key`: `Ok(None)` when absent.
    pub(crate) fn open(t: &Txn<'_>, key: &'k [u8]) -> Result<Option<Hash<'k>>> {
        let Some((end, e)) = Ending::open(t, key, Kind::Hash)? else {
            return Ok(None);
        };
        let repr = match e {
            Stored::Large(id, m) => Repr::Large(id, m),
            Stored::Compact(_, p) => Repr::Compact(p),
        };
        Ok(Some(Hash { end, repr }))
    }

    /// The hash at `key`, or a new empty one (stored by [`Hash::finish`] once it has a
    /// field).
    pub(crate) fn open_or_create(t: &Txn<'_>, key: &'k [u8]) -> Result<Hash<'k>> {
        if let Some(h) = Hash::open(t, key)? {
            return Ok(h);
        }
        Ok(Hash {
            end: Ending::create(t, key, Kind::Hash)?,
            repr: Repr::Compact(Pack::encode(&[])),
        })
    }

    /// Number of fields.
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
            Repr::Large(..) => "hashtable",
        }
    }

    /// The value of `field`.
    pub(crate) fn get(&self, t: &Txn<'_>, field: &[u8]) -> Option<Vec<u8>> {
        match &self.repr {
            Repr::Compact(p) => {
                let mut it = Pack::new(p).iter();
                while let (Some(f), Some(v)) = (it.next(), it.next()) {
                    if f == field {
                        return Some(v.to_vec());
                    }
                }
                None
            }
            Repr::Large(id, _) => t.elements().get(&hashed_key(*id, field)),
        }
    }

    /// Visits every pair (insertion order when compact, hash order when large) until `f`
    /// breaks.
    pub(crate) fn for_each(&self, t: &Txn<'_>, f: &mut ScanVisitor<'_>) {
        match &self.repr {
            Repr::Compact(p) => {
                let mut it = Pack::new(p).iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    if f(k, v).is_break() {
                        return;
                    }
                }
            }
            Repr::Large(id, _) => {
                let prefix = id_prefix(*id);
                t.elements()
                    .scan_prefix(&prefix, &mut |k, v| f(&k[12..], v));
            }
        }
    }

    /// Every pair, copied.
    pub(crate) fn pairs(&self, t: &Txn<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::with_capacity(self.len());
        self.for_each(t, &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        out
    }

    /// One `HSCAN` page: the whole hash when compact (as Redis), else `count` pairs after
    /// `after`.
    pub(crate) fn page(&self, t: &Txn<'_>, after: Option<&[u8]>, count: usize) -> Page {
        match &self.repr {
            Repr::Compact(_) => Page {
                items: self
                    .pairs(t)
                    .into_iter()
                    .map(|(k, v)| (k, Some(v)))
                    .collect(),
                next: None,
            },
            Repr::Large(id, _) => {
                super::scan_page(t.elements(), &id_prefix(*id), after, count, &|k, v| {
                    (k[12..].to_vec(), Some(v.to_vec()))
                })
            }
        }
    }

    /// Up to `n` distinct random pairs (all of them when `n` ≥ the hash's size).
    pub(crate) fn random_distinct(&self, t: &Txn<'_>, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        if n >= self.len() {
            return self.pairs(t);
        }
        match &self.repr {
            Repr::Compact(_) => {
                let mut all = self.pairs(t);
                // A partial Fisher-Yates shuffle: the first n are a random sample.
                for i in 0..n {
                    let j = i + random::below(all.len() - i);
                    all.swap(i, j);
                }
                all.truncate(n);
                all
            }
            Repr::Large(id, _) => random::distinct(t.elements(), &id_prefix(*id), n)
                .into_iter()
                .map(|(k, v)| (k[12..].to_vec(), v))
                .collect(),
        }
    }

    /// `n` random pairs, repeats allowed (the hash must not be empty).
    pub(crate) fn random_repeated(&self, t: &Txn<'_>, n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        match &self.repr {
            Repr::Compact(_) => {
                let all = self.pairs(t);
                (0..n)
                    .map(|_| all[random::below(all.len())].clone())
                    .collect()
            }
            Repr::Large(id, _) => (0..n)
                .filter_map(|_| random::probe(t.elements(), &id_prefix(*id)))
                .map(|(k, v)| (k[12..].to_vec(), v))
                .collect(),
        }
    }

    /// Sets `field` to `value` (logged); whether the field is new.
    pub(crate) fn set(&mut self, t: &Txn<'_>, field: &[u8], value: &[u8]) -> Result<bool> {
        check_lengths([field])?;
        check_values([value])?;
        if let Repr::Compact(p) = &self.repr {
            let th = t.thresholds();
            let pack = Pack::new(p);
            let mut items = pack.to_vec();
            let at = items.chunks(2).position(|c| c[0] == field);
            let too_long = field.len() as i64 > th.hash_value || value.len() as i64 > th.hash_value;
            let too_many = at.is_none() && (items.len() / 2 + 1) as i64 > th.hash_entries;
            let too_big = p.len() + field.len() + value.len() + 20 > COMPACT_MAX_BYTES;
            if !(too_long || too_many || too_big) {
                match at {
                    Some(i) => items[2 * i + 1] = value,
                    None => items.extend_from_slice(&[field, value]),
                }
                let new = Pack::encode(&items);
                self.repr = Repr::Compact(new);
                self.end.dirty = true;
                t.record(&[b"HSET", self.end.key, field, value]);
                return Ok(at.is_none());
            }
            self.move_to_index(t)?;
        }
        let Repr::Large(id, meta) = &self.repr else {
            unreachable!("converted above")
        };
        let new = t.elements().insert(&hashed_key(*id, field), value)?;
        if new {
            meta.add(1);
        }
        t.record(&[b"HSET", self.end.key, field, value]);
        Ok(new)
    }

    /// Removes `field` (logged); whether it was there.
    pub(crate) fn del(&mut self, t: &Txn<'_>, field: &[u8]) -> bool {
        let removed = match &self.repr {
            Repr::Compact(p) => {
                let mut items = Pack::new(p).to_vec();
                match items.chunks(2).position(|c| c[0] == field) {
                    Some(i) => {
                        items.drain(2 * i..2 * i + 2);
                        let new = Pack::encode(&items);
                        self.repr = Repr::Compact(new);
                        self.end.dirty = true;
                        true
                    }
                    None => false,
                }
            }
            Repr::Large(id, meta) => {
                let removed = t.elements().remove(&hashed_key(*id, field));
                if removed {
                    meta.add(-1);
                }
                removed
            }
        };
        if removed {
            t.record(&[b"HDEL", self.end.key, field]);
        }
        removed
    }

    /// Moves the collection to the shared indexes now, whatever its size (`COPY` of a
    /// large one: Redis's copy keeps the encoding).
    pub(crate) fn make_large(&mut self, t: &Txn<'_>) -> Result<()> {
        self.move_to_index(t)
    }

    /// Moves the pairs into the element index.
    fn move_to_index(&mut self, t: &Txn<'_>) -> Result<()> {
        let Repr::Compact(p) = &self.repr else {
            return Ok(());
        };
        let (id, meta) = t.create_large(false);
        let mut it = Pack::new(p).iter();
        let mut n = 0;
        while let (Some(f), Some(v)) = (it.next(), it.next()) {
            if let Err(e) = t.elements().insert(&hashed_key(id, f), v) {
                t.drop_large(id);
                return Err(e.into());
            }
            n += 1;
        }
        meta.add(n);
        self.repr = Repr::Large(id, meta);
        self.end.dirty = true;
        Ok(())
    }

    /// Writes the hash back to its key (or deletes the key when the hash is empty).
    pub(crate) fn finish(self, t: &Txn<'_>) -> Result<()> {
        let len = self.len();
        let form = match self.repr {
            Repr::Compact(p) => Form::Compact(Enc::Compact, p),
            Repr::Large(id, _) => Form::Large(id),
        };
        self.end.finish(t, len, form)
    }
}
