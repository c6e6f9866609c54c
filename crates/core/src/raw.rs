//! The primitives a structure supplies, and the API built on them once.
//!
//! Every Orrery structure has the same public methods with the same edges (what an empty
//! key, an over-long key or value, an absent key and out of memory give: the table in
//! [`crate::api`]). They are not written per structure. A structure supplies a few
//! primitives — [`RawIndex`] (a read with a closure, an upsert-or-remove driven by a
//! [`Decision`], a put, a delete, a count) and, if ordered, [`RawOrdered`] (scans in both
//! directions) — and [`index_api!`](crate::index_api) writes the public methods, the
//! traits ([`KvIndex`](crate::KvIndex), [`KvUpdate`](crate::KvUpdate),
//! [`OrderedKvIndex`](crate::OrderedKvIndex)), `Default`, `Extend` and `FromIterator` on
//! top, through the functions of this module. So the edges are decided here, in one place:
//!
//! | input | primitives see it? | what the API answers |
//! |---|---|---|
//! | key over [`MAX_KEY_LEN`] | never | `None`/`false` from reads and `remove`; [`Error::KeyTooLong`] from every method returning `Result` (`insert`, `update`, `update_in_place`, `compute`), before any closure runs |
//! | value over [`MAX_VALUE_LEN`](crate::api::MAX_VALUE_LEN) | never | [`Error::ValueTooLong`], the index unchanged (`compute`/`update`: the closure ran once, its value was not stored) |
//! | absent key | yes | `update`/`update_in_place`: `Ok(false)`, the closure not called; `compute`: the closure gets `None` |
//! | empty key | yes | an ordinary key |
//!
//! Primitives may therefore assume keys of at most [`MAX_KEY_LEN`] bytes and stored values
//! of at most [`MAX_VALUE_LEN`](crate::api::MAX_VALUE_LEN). Out of memory is theirs to report
//! ([`Error::OutOfMemory`], the index unchanged).

use std::ops::{Bound, ControlFlow};

pub use crate::api::Decision;
use crate::api::{
    ComputeOnce, Error, MAX_KEY_LEN, MemoryUsage, Result, ScanVisitor, check_entry, check_key,
    within_end, within_prefix,
};

/// What a read-modify-write may do to the key, so a structure can prepare only what is
/// needed (an update of an absent key needs no room for an insert).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// `compute`: the decision may store (insert or replace) or remove.
    Compute,
    /// `update`/`update_in_place`: the decision only replaces the value of a present key
    /// ([`Decision::Keep`] when absent); it never inserts or removes.
    Update,
}

/// The point primitives of a structure (see the [module docs](self) for the division of
/// work): keys given to them are at most [`MAX_KEY_LEN`] bytes, values at most
/// [`MAX_VALUE_LEN`](crate::api::MAX_VALUE_LEN). Each must be linearizable.
pub trait RawIndex: Send + Sync {
    /// `f`'s result on the value of `key`, `None` when absent. `f` runs while the value is
    /// protected (lock or guard).
    fn read<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R>;

    /// Looks up every key and calls `f(i, value)` in order of `i`. The default reads one
    /// key after the other; structures override it with a pipeline.
    fn read_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        for (i, key) in keys.iter().enumerate() {
            if self.read(key, |v| f(i, Some(v))).is_none() {
                f(i, None);
            }
        }
    }

    /// Inserts or replaces; `Ok(true)` if the key was new.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<bool>;

    /// Removes `key`; whether it was present.
    fn delete(&self, key: &[u8]) -> bool;

    /// Atomically applies `decide(current value)` to `key` and returns whether the key was
    /// present. Call `decide` only when its decision can be applied at once, with the key
    /// protected (its lock held): nothing else may change the key between the call and
    /// the write. The API's closures run on the first call only ([`ComputeOnce`]): a
    /// structure that calls `decide` again after a retry gets [`Decision::Keep`].
    /// [`WriteMode::Update`] promises the decision never inserts or removes, so an absent
    /// key may be answered `Ok(false)` without a call.
    fn write(
        &self,
        key: &[u8],
        mode: WriteMode,
        decide: &mut dyn FnMut(Option<&[u8]>) -> Decision,
    ) -> Result<bool>;

    /// Atomically rewrites the value of a present key through `f` (same length); `Ok(false)`
    /// without calling `f` when absent. The default copies the value and stores the copy
    /// through [`RawIndex::write`]; structures that can write in place override it.
    fn write_in_place(&self, key: &[u8], f: &mut dyn FnMut(&mut [u8])) -> Result<bool> {
        self.write(key, WriteMode::Update, &mut |old| match old {
            Some(v) => {
                let mut v = v.to_vec();
                f(&mut v);
                Decision::Store(v)
            }
            None => Decision::Keep,
        })
    }

    /// Number of keys (exact when no writer runs concurrently).
    fn count(&self) -> usize;

    /// Bytes held.
    fn bytes(&self) -> MemoryUsage;
}

/// The ordered primitives: scans both ways from a bound, visitor called under the
/// structure's protection, stopping when it breaks.
pub trait RawOrdered: RawIndex {
    /// Pairs in ascending key order from `start`.
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>);

    /// Pairs in descending key order from `end` down.
    fn scan_rev(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>);

    /// The pair with the smallest key. The default is the first pair of a scan.
    fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut out = None;
        self.scan(Bound::Unbounded, &mut |k, v| {
            out = Some((k.to_vec(), v.to_vec()));
            ControlFlow::Break(())
        });
        out
    }

    /// The pair with the largest key. The default is the first pair of a descending scan.
    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut out = None;
        self.scan_rev(Bound::Unbounded, &mut |k, v| {
            out = Some((k.to_vec(), v.to_vec()));
            ControlFlow::Break(())
        });
        out
    }

    /// Pairs whose key starts with `prefix`, ascending. The default is a scan from
    /// `prefix` stopped at the first key without it; a structure that copies ahead
    /// overrides it to bound its copies by the prefix's end.
    fn scan_prefix(&self, prefix: &[u8], visitor: &mut ScanVisitor<'_>) {
        self.scan(Bound::Included(prefix), &mut within_prefix(prefix, visitor));
    }

    /// Removes every key within `start..end`; how many this call removed. The default
    /// collects keys by ascending scans of up to [`RANGE_DELETE_BATCH`] keys and removes
    /// each (each removal linearizable on its own; not atomic as a whole).
    fn remove_range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> usize {
        remove_range_by_scans(self, start, end)
    }
}

/// Keys collected per scan by the default [`RawOrdered::remove_range`].
pub const RANGE_DELETE_BATCH: usize = 1024;

fn remove_range_by_scans<I: RawOrdered + ?Sized>(
    index: &I,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
) -> usize {
    let mut removed = 0;
    let mut from: Bound<Vec<u8>> = start.map(<[u8]>::to_vec);
    let mut batch: Vec<Vec<u8>> = Vec::new();
    loop {
        batch.clear();
        let mut ended = true;
        index.scan(from.as_ref().map(Vec::as_slice), &mut |k, _| {
            if !within_end(k, end) {
                return ControlFlow::Break(());
            }
            batch.push(k.to_vec());
            if batch.len() == RANGE_DELETE_BATCH {
                ended = false;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        });
        for k in &batch {
            removed += usize::from(index.delete(k));
        }
        match batch.pop() {
            Some(last) if !ended => from = Bound::Excluded(last),
            _ => return removed,
        }
    }
}

// ---- The API over the primitives: what `index_api!`'s methods call. ----

/// `get_with`: an over-long key is absent.
#[inline]
pub fn get_with<I: RawIndex + ?Sized, R>(
    index: &I,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> R,
) -> Option<R> {
    if key.len() > MAX_KEY_LEN {
        return None;
    }
    index.read(key, f)
}

/// `get_many`: over-long keys are answered `None` without reaching the primitive.
#[inline]
pub fn get_many<I: RawIndex + ?Sized>(
    index: &I,
    keys: &[&[u8]],
    f: &mut dyn FnMut(usize, Option<&[u8]>),
) {
    if keys.iter().all(|k| k.len() <= MAX_KEY_LEN) {
        return index.read_many(keys, f);
    }
    // Rare: answer the runs of valid keys through the primitive, the rest as absent.
    let mut i = 0;
    while i < keys.len() {
        if keys[i].len() > MAX_KEY_LEN {
            f(i, None);
            i += 1;
            continue;
        }
        let run = keys[i..]
            .iter()
            .position(|k| k.len() > MAX_KEY_LEN)
            .map_or(keys.len(), |p| i + p);
        let base = i;
        index.read_many(&keys[base..run], &mut |j, v| f(base + j, v));
        i = run;
    }
}

/// `insert`: limits checked first.
#[inline]
pub fn insert<I: RawIndex + ?Sized>(index: &I, key: &[u8], value: &[u8]) -> Result<bool> {
    check_entry(key, value)?;
    index.put(key, value)
}

/// `remove`: an over-long key is absent.
#[inline]
pub fn remove<I: RawIndex + ?Sized>(index: &I, key: &[u8]) -> bool {
    key.len() <= MAX_KEY_LEN && index.delete(key)
}

/// `compute`: upsert or remove by `f(current)`; the key checked before `f` runs, `f` called
/// exactly once, an over-long new value not stored.
pub fn compute<I: RawIndex + ?Sized>(
    index: &I,
    key: &[u8],
    f: impl FnOnce(Option<&[u8]>) -> Option<Vec<u8>>,
) -> Result<bool> {
    check_key(key)?;
    let mut c = ComputeOnce::new(f);
    let present = index.write(key, WriteMode::Compute, &mut |old| c.decide(old))?;
    c.finish(present)
}

/// `update`: replace the value of a present key by `f(old)`; never inserts.
pub fn update<I: RawIndex + ?Sized>(
    index: &I,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> Vec<u8>,
) -> Result<bool> {
    check_key(key)?;
    let mut c = ComputeOnce::new(|old: Option<&[u8]>| old.map(f));
    let present = index.write(key, WriteMode::Update, &mut |old| c.decide(old))?;
    c.finish(present)
}

/// `update_in_place`: rewrite the bytes of a present key's value; `f` called at most once.
pub fn update_in_place<I: RawIndex + ?Sized>(
    index: &I,
    key: &[u8],
    f: impl FnOnce(&mut [u8]),
) -> Result<bool> {
    check_key(key)?;
    let mut f = Some(f);
    index.write_in_place(key, &mut |v| {
        if let Some(f) = f.take() {
            f(v)
        }
    })
}

/// `insert_all`: upserts every pair, stopping at the first error; how many keys were new.
pub fn insert_all<I, K, V>(index: &I, pairs: impl IntoIterator<Item = (K, V)>) -> Result<usize>
where
    I: RawIndex + ?Sized,
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let mut new = 0;
    for (k, v) in pairs {
        new += usize::from(insert(index, k.as_ref(), v.as_ref())?);
    }
    Ok(new)
}

/// `scan_prefix`: the structure's prefix scan.
pub fn scan_prefix<I: RawOrdered + ?Sized>(
    index: &I,
    prefix: &[u8],
    visitor: &mut ScanVisitor<'_>,
) {
    index.scan_prefix(prefix, visitor)
}

/// What `new()` does when even an empty structure's memory cannot be had: report it as a
/// failed `Box::new` does ([`std::alloc::handle_alloc_error`], which aborts), so that every
/// structure fails the same way (`try_new` returns the error instead).
#[doc(hidden)]
pub fn alloc_failure() -> ! {
    std::alloc::handle_alloc_error(std::alloc::Layout::new::<[u64; 8]>())
}

/// What `Extend` does on input it cannot store (`insert_all` returns the error instead).
#[doc(hidden)]
pub fn extend_failure(name: &str, e: Error) -> ! {
    panic!("{name}::extend: {e}")
}
