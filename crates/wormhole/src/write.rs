//! Point writes (Algorithm 2 `SET` and `DEL`): insert (upsert), remove, compute, update.
//!
//! Each searches its key like a lookup, takes the target leaf's exclusive lock (checking
//! the leaf's version and the search's deferred anchor check under it: `raw`), and
//! changes that leaf only; it takes effect when the lock is released. An insert into a
//! full leaf releases the leaf and its guard, splits (`smo`) and retries; a removal that
//! leaves the leaf small enough to merge with a neighbour asks `smo` for the merge after
//! releasing the leaf. Values up to the limits of `orrery_core::api` are checked before
//! anything is written.

use orrery_core::api::{self, check_entry, check_key};
use orrery_core::sync;

use crate::leaf::{LeafAccess, WriteLeaf, leaf_tag};
use crate::raw::{LEN, Pos, RawWormhole};

impl<const OPTS: u32> RawWormhole<OPTS> {
    /// Inserts or replaces; `Ok(true)` if the key was new.
    pub(crate) fn insert(&self, key: &[u8], value: &[u8]) -> api::Result<bool> {
        check_entry(key, value)?;
        loop {
            let g = sync::pin();
            let (mut w, hash) = self.write_target(key, &g);
            match self.position(&w, key, hash) {
                Pos::Found(i) => {
                    self.replace_value(&mut w, i, key, value)?;
                    return Ok(false);
                }
                Pos::Absent { sorted_at } if !w.is_full() => {
                    let p = self.new_pair(&w, key, value)?;
                    w.insert(sorted_at, leaf_tag(hash), p);
                    self.counts.add(LEN, 1);
                    return Ok(true);
                }
                Pos::Absent { .. } => {
                    drop(w);
                    drop(g);
                    self.split(key)?;
                }
            }
        }
    }

    /// Replaces the value of real slot `i` (in place when the length is unchanged, else by
    /// a new pair). On [`api::Error::OutOfMemory`] the old value stays.
    fn replace_value(
        &self,
        w: &mut WriteLeaf<'_>,
        i: usize,
        key: &[u8],
        value: &[u8],
    ) -> api::Result<()> {
        let ov = w.value_mut(i);
        if ov.len() == value.len() {
            ov.copy_from_slice(value);
            return Ok(());
        }
        let p = self.new_pair(w, key, value)?;
        let old = w.replace(i, p);
        // SAFETY: unlinked from the leaf under the exclusive lock, not used again.
        unsafe { self.drop_pair(old) };
        Ok(())
    }

    /// Removes `key`; whether it was present. Merges the leaf with a neighbour when their
    /// combined size falls to 3/4 of a leaf.
    pub(crate) fn remove(&self, key: &[u8]) -> bool {
        if check_key(key).is_err() {
            return false;
        }
        let g = sync::pin();
        let (mut w, hash) = self.write_target(key, &g);
        let Pos::Found(i) = self.position(&w, key, hash) else {
            return false;
        };
        let p = w.remove(i);
        self.counts.add(LEN, -1);
        // SAFETY: removed under the exclusive lock.
        unsafe { self.drop_pair(p) };
        let merge = self.wants_merge(&w);
        drop(w);
        drop(g);
        if merge {
            self.try_merge(key);
        }
        true
    }

    /// Atomically computes the entry of `key` under its leaf's exclusive lock: `f` gets the
    /// current value (`None` if absent) and returns the new one (`None` removes the key, or
    /// leaves it absent). Returns whether the key was present before. `f` is called exactly
    /// once, after the key's length was checked; a new value over the limit leaves the index
    /// unchanged and is the error.
    pub(crate) fn compute<F>(&self, key: &[u8], f: F) -> api::Result<bool>
    where
        F: FnOnce(Option<&[u8]>) -> Option<Vec<u8>>,
    {
        check_key(key)?;
        let mut f = Some(f);
        loop {
            let g = sync::pin();
            let (mut w, hash) = self.write_target(key, &g);
            match self.position(&w, key, hash) {
                Pos::Found(i) => {
                    let old = w.value(i);
                    let new = (f.take().expect("called once"))(Some(old));
                    match new {
                        Some(v) => {
                            check_entry(key, &v)?;
                            self.replace_value(&mut w, i, key, &v)?;
                        }
                        None => {
                            let p = w.remove(i);
                            self.counts.add(LEN, -1);
                            // SAFETY: removed under the exclusive lock.
                            unsafe { self.drop_pair(p) };
                            let merge = self.wants_merge(&w);
                            drop(w);
                            drop(g);
                            if merge {
                                self.try_merge(key);
                            }
                        }
                    }
                    return Ok(true);
                }
                Pos::Absent { sorted_at } if !w.is_full() => {
                    if let Some(v) = (f.take().expect("called once"))(None) {
                        check_entry(key, &v)?;
                        let p = self.new_pair(&w, key, &v)?;
                        w.insert(sorted_at, leaf_tag(hash), p);
                        self.counts.add(LEN, 1);
                    }
                    return Ok(false);
                }
                Pos::Absent { .. } => {
                    drop(w);
                    drop(g);
                    self.split(key)?;
                }
            }
        }
    }

    /// Atomically replaces the value of an existing key by `f(old value)` under its leaf's
    /// exclusive lock; `Ok(false)` without calling `f` if the key is absent.
    pub(crate) fn update(&self, key: &[u8], f: impl FnOnce(&[u8]) -> Vec<u8>) -> api::Result<bool> {
        check_key(key)?;
        let g = sync::pin();
        let (mut w, hash) = self.write_target(key, &g);
        match self.position(&w, key, hash) {
            Pos::Found(i) => {
                let v = f(w.value(i));
                check_entry(key, &v)?;
                self.replace_value(&mut w, i, key, &v)?;
                Ok(true)
            }
            Pos::Absent { .. } => Ok(false),
        }
    }

    /// Atomically applies `f` to the bytes of the value of an existing key (same length,
    /// in place) under its leaf's exclusive lock; `Ok(false)` without calling `f` if the
    /// key is absent.
    pub(crate) fn update_in_place(
        &self,
        key: &[u8],
        f: impl FnOnce(&mut [u8]),
    ) -> api::Result<bool> {
        check_key(key)?;
        let g = sync::pin();
        let (mut w, hash) = self.write_target(key, &g);
        match self.position(&w, key, hash) {
            Pos::Found(i) => {
                f(w.value_mut(i));
                Ok(true)
            }
            Pos::Absent { .. } => Ok(false),
        }
    }
}
