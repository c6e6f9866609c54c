//! Point writes (Algorithm 2 `SET` and `DEL`): insert (upsert), remove, and the
//! read-modify-write primitives behind `compute`/`update`/`update_in_place`.
//!
//! Each searches its key like a lookup, takes the target leaf's exclusive lock (checking
//! the leaf's version and the search's deferred anchor check under it: `raw`), and
//! changes that leaf only; it takes effect when the lock is released. An insert into a
//! full leaf releases the leaf and its guard, splits (`smo`) and retries; a removal that
//! leaves the leaf small enough to merge with a neighbour asks `smo` for the merge after
//! releasing the leaf. Keys and values reach these primitives already checked against the
//! limits of `orrery_core::api` (`orrery_core::raw`).

use orrery_core::api::{self, Decision};
use orrery_core::raw::WriteMode;
use orrery_core::sync;

use crate::leaf::{LeafAccess, WriteLeaf, leaf_tag};
use crate::raw::{LEN, Pos, RawWormhole};

impl<const OPTS: u32> RawWormhole<OPTS> {
    /// Inserts or replaces; `Ok(true)` if the key was new.
    pub(crate) fn insert(&self, key: &[u8], value: &[u8]) -> api::Result<bool> {
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
        let lower = if merge { None } else { self.lower_block(&w) };
        drop(w);
        drop(g);
        if merge {
            self.try_merge(key);
        }
        if let Some(b) = lower {
            self.move_leaf(key, b);
        }
        true
    }

    /// The read-modify-write primitive (`orrery_core::raw::RawIndex::write`) under the
    /// key's leaf's exclusive lock: `decide` sees the current value (`None` if absent) and
    /// its decision is applied before the lock is released. It is called once, when the
    /// decision can be applied at once (an absent key in a full leaf splits the leaf first,
    /// then searches again). Returns whether the key was present.
    pub(crate) fn write(
        &self,
        key: &[u8],
        mode: WriteMode,
        decide: &mut dyn FnMut(Option<&[u8]>) -> Decision,
    ) -> api::Result<bool> {
        loop {
            let g = sync::pin();
            let (mut w, hash) = self.write_target(key, &g);
            match self.position(&w, key, hash) {
                Pos::Found(i) => {
                    match decide(Some(w.value(i))) {
                        Decision::Keep => {}
                        Decision::Store(v) => self.replace_value(&mut w, i, key, &v)?,
                        Decision::Remove => {
                            let p = w.remove(i);
                            self.counts.add(LEN, -1);
                            // SAFETY: removed under the exclusive lock.
                            unsafe { self.drop_pair(p) };
                            let merge = self.wants_merge(&w);
                            let lower = if merge { None } else { self.lower_block(&w) };
                            drop(w);
                            drop(g);
                            if merge {
                                self.try_merge(key);
                            }
                            if let Some(b) = lower {
                                self.move_leaf(key, b);
                            }
                        }
                    }
                    return Ok(true);
                }
                // An update never inserts: no need for room.
                Pos::Absent { .. } if mode == WriteMode::Update => return Ok(false),
                Pos::Absent { sorted_at } if !w.is_full() => {
                    if let Decision::Store(v) = decide(None) {
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

    /// Atomically applies `f` to the bytes of the value of an existing key (same length,
    /// in place) under its leaf's exclusive lock; `Ok(false)` without calling `f` if the
    /// key is absent.
    pub(crate) fn write_in_place(
        &self,
        key: &[u8],
        f: &mut dyn FnMut(&mut [u8]),
    ) -> api::Result<bool> {
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
