//! The collection types over the keyspace: [`Hash`](struct@Hash), [`Set`], [`ZSet`] and [`List`], each
//! in a compact form inside its key's value while it is small, and in the shared element
//! index once it outgrows Redis's thresholds (`crate::layout` has the bytes of both, the
//! thresholds and why; `docs/server.md` the measurements behind the choice).
//!
//! Each type is a view opened on a key inside a [`Txn`] (so under the key's stripe): its
//! methods read and change the collection, convert it from compact to large when it
//! outgrows the thresholds, and log one effect record per change (`HSET`, `HDEL`, `SADD`,
//! `SREM`, `ZADD`, `ZREM`, `LPUT`, `LSPAN`: `crate::aof` lists them). `finish` writes a
//! changed compact form back to the key, and deletes a key whose collection became empty
//! (Redis never keeps an empty collection). A failed `finish` (out of memory) takes back
//! the records the view logged.
//!
//! | module | what |
//! |---|---|
//! | `hash` | fields and values: a pack of pairs in insertion order / `id ++ h ++ field` |
//! | `set` | an intset, a pack in insertion order / `id ++ h ++ member` |
//! | `zset` | a pack of pairs in (score, member) order / member and order keys |
//! | `list` | head position and a pack / packed nodes (`qlist`) |
//! | `qlist` | a large list's packed nodes `id ++ node number` and their table |
//! | `copy` | `COPY`'s duplicate of a collection, large ones element by element |
//! | `dump` | the records that rebuild a collection (`RENAME`, the append-only file's rewrite) |
//! | `random` | the random source and the random probe of a large collection |

mod copy;
mod dump;
mod hash;
mod list;
mod qlist;
mod random;
mod set;
mod zset;
mod zset_ranges;

use std::ops::{Bound, ControlFlow};

use orrery::api::ScanVisitor;
use orrery::wormhole::Wormhole;

use crate::layout::MAX_ELEMENT;
use std::sync::Arc;

use crate::store::{Enc, Entry, Kind, MAX_KEY, Meta, Txn, WriteError};

pub(crate) use copy::copy;
pub(crate) use dump::{dump, log_state};
pub(crate) use hash::Hash;
pub(crate) use list::{End, List};
pub(crate) use qlist::footprint as list_footprint;
pub(crate) use random::next_u64 as random_u64;
pub(crate) use set::Set;
pub(crate) use zset::ZSet;
pub(crate) use zset_ranges::{Limit, ScoreBound};

/// How a view's collection is held when the view ends.
pub(super) enum Form {
    /// Inline, with this encoding and payload.
    Compact(Enc, Vec<u8>),
    /// In the shared indexes, under this id.
    Large(u64),
}

/// A collection's stored form, as a view opens it.
pub(super) enum Stored {
    /// Inline, with this encoding and payload (empty for a large collection whose
    /// bookkeeping is gone, which only damage could give).
    Compact(Enc, Vec<u8>),
    /// In the shared indexes, under this id, with this bookkeeping.
    Large(u64, Arc<Meta>),
}

/// What every view (`Hash`, `Set`, `ZSet`, `List`) keeps of its key besides the
/// collection: the key, its deadline, and what [`Ending::finish`] (every view's `finish`)
/// needs to write it back.
pub(super) struct Ending<'k> {
    pub(super) key: &'k [u8],
    pub(super) kind: Kind,
    pub(super) deadline: Option<u64>,
    /// The key held the collection when the view opened.
    pub(super) existed: bool,
    /// The compact form changed, or the collection moved to the shared indexes.
    pub(super) dirty: bool,
    /// The end of the log when the view opened.
    pub(super) mark: usize,
}

impl<'k> Ending<'k> {
    /// Opens the collection of `kind` at `key`: its ending and stored form, `Ok(None)`
    /// when absent, `WrongType` for another type.
    pub(super) fn open(t: &Txn<'_>, key: &'k [u8], kind: Kind) -> Result<Option<(Self, Stored)>> {
        let Some(e) = lookup(t, key, kind)? else {
            return Ok(None);
        };
        let stored = match (e.enc, t.large(&e)) {
            (Enc::Large, Some(m)) => Stored::Large(e.large_id().unwrap_or(0), m),
            (Enc::Large, None) => Stored::Compact(Enc::Compact, Vec::new()),
            (enc, _) => Stored::Compact(enc, e.payload),
        };
        let end = Ending {
            key,
            kind,
            deadline: e.deadline,
            existed: true,
            dirty: false,
            mark: t.log_mark(),
        };
        Ok(Some((end, stored)))
    }

    /// The ending of a new collection of `kind` for `key` (absent), which `finish` stores
    /// once it has an element.
    pub(super) fn create(t: &Txn<'_>, key: &'k [u8], kind: Kind) -> Result<Self> {
        if key.len() > MAX_KEY {
            return Err(Error::Write(WriteError::KeyTooLong));
        }
        Ok(Ending {
            key,
            kind,
            deadline: None,
            existed: false,
            dirty: false,
            mark: t.log_mark(),
        })
    }

    /// Writes the collection of `len` elements held as `form` back to its key: deletes
    /// the key when the collection is empty (Redis never keeps an empty one; a large
    /// collection no key holds is dropped), stores a changed form, and on failure drops a
    /// collection just moved to the shared indexes and takes back the view's records.
    pub(super) fn finish(self, t: &Txn<'_>, len: usize, form: Form) -> Result<()> {
        if len == 0 {
            if self.existed {
                t.delete(self.key);
            } else if let Form::Large(id) = form {
                t.drop_large(id);
            }
            return Ok(());
        }
        if !self.dirty {
            return Ok(());
        }
        let (enc, payload, id) = match form {
            Form::Compact(enc, p) => (enc, p, None),
            Form::Large(id) => (Enc::Large, id.to_be_bytes().to_vec(), Some(id)),
        };
        let entry = Entry {
            kind: self.kind,
            enc,
            deadline: self.deadline,
            payload,
        };
        t.store_quiet(self.key, &entry).map_err(|e| {
            if let Some(id) = id {
                t.drop_large(id);
            }
            t.rollback_log(self.mark);
            Error::from(e)
        })
    }
}

/// Why a collection operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Error {
    /// The key holds another type (Redis's `WRONGTYPE`).
    WrongType,
    /// A member or field is longer than the element index's keys take.
    TooLong,
    /// The store refused the write.
    Write(WriteError),
}

impl From<WriteError> for Error {
    fn from(e: WriteError) -> Self {
        Error::Write(e)
    }
}

impl From<orrery::Error> for Error {
    fn from(e: orrery::Error) -> Self {
        Error::Write(e.into())
    }
}

impl Error {
    /// Redis-style error text.
    pub(crate) fn message(self) -> String {
        match self {
            Error::WrongType => {
                "WRONGTYPE Operation against a key holding the wrong kind of value".into()
            }
            Error::TooLong => {
                format!("ERR member too long (limit {MAX_ELEMENT} bytes)")
            }
            Error::Write(e) => e.message(),
        }
    }
}

/// The result of a collection operation.
pub(crate) type Result<T> = std::result::Result<T, Error>;

/// The live value at `key` if it is of `kind`: `Ok(None)` when absent, `WrongType` for
/// another type.
pub(crate) fn lookup(t: &Txn<'_>, key: &[u8], kind: Kind) -> Result<Option<Entry>> {
    match t.load(key) {
        None => Ok(None),
        Some(e) if e.kind != kind => Err(Error::WrongType),
        Some(e) => Ok(Some(e)),
    }
}

/// Checks that every element can live in the element index.
pub(crate) fn check_lengths<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> Result<()> {
    if items.into_iter().any(|i| i.len() > MAX_ELEMENT) {
        Err(Error::TooLong)
    } else {
        Ok(())
    }
}

/// Longest list element or hash value: what a string may hold.
pub(crate) const MAX_VALUE: usize = orrery::api::MAX_VALUE_LEN - crate::store::MAX_HEADER;

/// Checks that every list element or hash value fits the element index.
pub(crate) fn check_values<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> Result<()> {
    if items.into_iter().any(|i| i.len() > MAX_VALUE) {
        Err(Error::Write(WriteError::ValueTooLong))
    } else {
        Ok(())
    }
}

/// Largest compact payload: a compact collection that would grow past it moves to the
/// element index whatever the thresholds say (the index's values stop at 1 MiB).
const COMPACT_MAX_BYTES: usize = 256 * 1024;

/// Visits, ascending from `from` (inclusive, or after it), the pairs whose key starts
/// with `prefix`, in chunks copied out of the index (so that the visitor may write to
/// it), until `f` breaks.
pub(crate) fn scan_chunks(
    elements: &Wormhole,
    prefix: &[u8],
    from: Bound<&[u8]>,
    f: &mut ScanVisitor<'_>,
) {
    let mut resume: Option<Vec<u8>> = None;
    loop {
        let mut chunk: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let start = match &resume {
            Some(k) => Bound::Excluded(&k[..]),
            None => match from {
                Bound::Unbounded => Bound::Included(prefix),
                b => b,
            },
        };
        elements.scan(start, &mut |k, v| {
            if !k.starts_with(prefix) {
                return ControlFlow::Break(());
            }
            chunk.push((k.to_vec(), v.to_vec()));
            if chunk.len() >= 256 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        let full = chunk.len() >= 256;
        for (k, v) in &chunk {
            if f(k, v).is_break() {
                return;
            }
        }
        match chunk.pop() {
            Some((k, _)) if full => resume = Some(k),
            _ => return,
        }
    }
}

/// One page of a `HSCAN`/`SSCAN`/`ZSCAN`: the items and where the next page starts (the
/// last element key visited, without the collection's prefix; `None`: done).
pub(crate) struct Page {
    /// The items visited (pairs for hashes and sorted sets, members for sets).
    pub(crate) items: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// The position to resume after.
    pub(crate) next: Option<Vec<u8>>,
}

/// Maps an element pair to a scan page's item.
pub(crate) type PageItem<'a> = dyn Fn(&[u8], &[u8]) -> (Vec<u8>, Option<Vec<u8>>) + 'a;

/// Members with their scores.
pub(crate) type Scored = Vec<(Vec<u8>, f64)>;

/// Visits `count` elements under `prefix` after `after` (a key suffix a previous page
/// returned), mapping each to an item.
pub(crate) fn scan_page(
    elements: &Wormhole,
    prefix: &[u8],
    after: Option<&[u8]>,
    count: usize,
    item: &PageItem<'_>,
) -> Page {
    let mut from = prefix.to_vec();
    if let Some(a) = after {
        from.extend_from_slice(a);
    }
    let bound = if after.is_some() {
        Bound::Excluded(&from[..])
    } else {
        Bound::Included(&from[..])
    };
    let mut items = Vec::new();
    let mut last = None;
    elements.scan(bound, &mut |k, v| {
        if !k.starts_with(prefix) {
            return ControlFlow::Break(());
        }
        items.push(item(k, v));
        if items.len() >= count {
            last = Some(k[prefix.len()..].to_vec());
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    Page { items, next: last }
}
