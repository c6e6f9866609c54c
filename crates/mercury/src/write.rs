//! Writes: insert/upsert, remove, the read-modify-write primitive (`write`, behind
//! `compute` and `update`) and in-place updates. Keys and values arrive checked against the
//! limits (`orrery_core::raw`).
//!
//! Every write takes the lock of the one bucket that holds its key (§3 "Locks": a
//! test-and-set bit inside the bucket word, so the lock comes with the bucket's cache line),
//! checks the has-moved bit (a migrated bucket redirects to the successor table), changes the
//! chain, and releases the lock with one Release store of the bucket word (which also
//! publishes a new head). Changes to the chain are published with Release stores of single
//! link words, in an order that keeps every intermediate state a valid chain for the
//! optimistic readers:
//!
//! - **insert** of a new key: a fresh node whose `next` is the old head is written
//!   completely, then the bucket word is stored pointing at it (insertion at the head).
//! - **update** of an existing key: a short value is rewritten in place under the node's
//!   version (`node.rs`); otherwise a copy of the node with the new value and the same `next`
//!   replaces it by one store of the predecessor's link, and the old node is retired.
//! - **remove**: the predecessor's link is stored to skip the node (taking the node's own
//!   `next` link, tag and LAST flag with it); if the node was last, the link *to* the
//!   predecessor then gets its LAST flag; the node is retired. A removed node's `next` word is
//!   never changed again, so a reader standing on it still reaches the rest of the chain.

use std::sync::atomic::Ordering;

use orrery_core::api::Decision;
use std::ptr::NonNull;

use orrery_core::Result;

use crate::compact;
use crate::inline_pair::{self, INLINE_MAX};
use crate::link::{BucketWord, Link};
use crate::node::{self, Node, SHORT_VALUE_MAX};
use crate::raw::{Hashed, Inner, Pos, find_locked, hashed, lock_bucket};
use crate::table::Table;
use orrery_core::sync::{Guard, pin};

/// A locked bucket: the table, the index and the word as of locking (LOCK set).
struct Locked<'g> {
    t: &'g Table,
    idx: usize,
    word: BucketWord,
}

impl Locked<'_> {
    /// Releases the lock, with `head` as the chain's head.
    #[inline]
    fn unlock_with(self, head: Link) {
        self.t.store_unlock(self.idx, BucketWord::unlocked(head));
    }

    /// Releases the lock without changing the chain.
    #[inline]
    fn unlock(self) {
        let head = self.word.head();
        self.unlock_with(head);
    }
}

/// Releases a bucket lock, chain unchanged, if a user callback run under it unwinds; defused
/// with `mem::forget` once the callback returned.
struct UnlockOnUnwind<'g> {
    t: &'g Table,
    idx: usize,
    head: Link,
}

impl Drop for UnlockOnUnwind<'_> {
    fn drop(&mut self) {
        self.t
            .store_unlock(self.idx, BucketWord::unlocked(self.head));
    }
}

impl Inner {
    /// Inserts or replaces; returns whether the key was new.
    pub(crate) fn insert(self: &std::sync::Arc<Self>, key: &[u8], value: &[u8]) -> Result<bool> {
        let h = hashed(key);
        // Start the bucket's miss before the pin's barrier (see `Inner::prefetch_bucket`).
        self.prefetch_bucket(h.hash);
        let guard = pin();
        let (t, idx, word) = lock_bucket(self.current(&guard), h.hash);
        let locked = Locked { t, idx, word };
        let area = &t.cell(idx).inline;
        if let Some(e) = area.locked_entry().filter(|e| e.key() == key) {
            let delta = value.len() as isize - e.value().len() as isize;
            self.set_inline(locked, key, value)?;
            self.counters.add_all([0, delta]);
            return Ok(false);
        }
        // SAFETY: we hold the bucket lock (from `lock_bucket`) and a guard.
        match unsafe { find_locked(word.head(), h, key) } {
            Some(pos) => {
                let head = word.head();
                let set = self.set_value(head, pos, value);
                self.finish(&guard, locked, set)?;
                Ok(false)
            }
            None => {
                let full = self.insert_new(&guard, locked, h, key, value)?;
                self.expand_if(guard, full);
                Ok(true)
            }
        }
    }

    /// Inserts the absent `key` into the locked bucket (inline when the pair fits and the
    /// area is free, else as a new head node), releases the lock, counts it, and helps or
    /// finishes an expansion when the successor table is full.
    ///
    /// Returns whether the successor table is full, for [`Inner::expand_if`].
    fn insert_new(
        self: &std::sync::Arc<Self>,
        guard: &Guard,
        locked: Locked<'_>,
        h: Hashed,
        key: &[u8],
        value: &[u8],
    ) -> Result<bool> {
        let head = locked.word.head();
        let area = &locked.t.cell(locked.idx).inline;
        if locked.t.fits_inline(key.len(), value.len()) && area.locked_is_empty() {
            area.write(key, value);
            locked.unlock();
        } else {
            let n = match self.alloc.alloc(key, value, head) {
                Ok(n) => n,
                Err(e) => {
                    locked.unlock();
                    return Err(e);
                }
            };
            locked.unlock_with(Link::new(n, h.tag, head.is_null()));
        }
        let local = self
            .counters
            .add_all([1, (key.len() + value.len()) as isize]);
        Ok(self.after_insert(local, guard))
    }

    /// After an insert that found the successor table full (`full`): finishes the
    /// expansion, unpinned between runs (the insert's `guard` dropped first).
    fn expand_if(self: &std::sync::Arc<Self>, guard: Guard, full: bool) {
        if full {
            drop(guard);
            if orrery_core::sync::epoch::is_pinned() {
                // An outer guard (a `Session`, or the caller's own pin) keeps this
                // thread pinned: waiting for the token here would hold the
                // process's epoch back for as long as its holder takes. Help while
                // the token is free; the holder and later inserts do the rest.
                self.help_expansion();
            } else {
                self.finish_expansion();
            }
        }
    }

    /// Gives the inline pair of the locked bucket (whose key is `key`) the value `value`,
    /// and releases the lock. A value that still fits is rewritten inline; otherwise the pair
    /// moves into a new head node: the node is published first (bucket word stored, lock
    /// kept), then the area is cleared, so that the key is never absent from the bucket (the
    /// one move between the area and the chain; see "Linearizability" in the crate docs).
    fn set_inline(&self, locked: Locked<'_>, key: &[u8], value: &[u8]) -> Result<()> {
        let area = &locked.t.cell(locked.idx).inline;
        if inline_pair::fits(key.len(), value.len()) {
            area.write(key, value);
            locked.unlock();
            return Ok(());
        }
        let head = locked.word.head();
        let n = match self.alloc.alloc(key, value, head) {
            Ok(n) => n,
            Err(e) => {
                locked.unlock();
                return Err(e);
            }
        };
        let link = Link::new(n, hashed(key).tag, head.is_null());
        locked.t.store_locked(locked.idx, BucketWord::locked(link));
        area.clear();
        locked.unlock_with(link);
        Ok(())
    }

    /// Removes `key`; returns whether it was present.
    pub(crate) fn remove(self: &std::sync::Arc<Self>, key: &[u8]) -> bool {
        let h = hashed(key);
        let guard = pin();
        let (t, idx, word) = lock_bucket(self.current(&guard), h.hash);
        let locked = Locked { t, idx, word };
        let area = &t.cell(idx).inline;
        if let Some(e) = area.locked_entry().filter(|e| e.key() == key) {
            let bytes = e.key().len() + e.value().len();
            let local = self.clear_inline(&guard, locked, bytes);
            self.shrink_if(guard, local);
            return true;
        }
        // SAFETY: we hold the bucket lock and a guard.
        let Some(pos) = (unsafe { find_locked(word.head(), h, key) }) else {
            locked.unlock();
            return false;
        };
        let local = self.unlink(&guard, locked, pos);
        self.shrink_if(guard, local);
        true
    }

    /// After a removal (`local`: the stripe's item count): starts or helps a shrink, and
    /// finishes the resize in progress when `after_remove` asks for it, unpinned between runs
    /// (the remove's `guard` dropped first), as [`Inner::expand_if`] does for inserts.
    fn shrink_if(self: &std::sync::Arc<Self>, guard: Guard, local: isize) {
        let finish = self.after_remove(local, &guard);
        self.expand_if(guard, finish);
    }

    /// Clears the locked bucket's inline pair (of `bytes` key and value bytes), releases
    /// the lock and counts the removal; returns the stripe's item count.
    fn clear_inline(&self, guard: &Guard, locked: Locked<'_>, bytes: usize) -> isize {
        locked.t.cell(locked.idx).inline.clear();
        let mut moved = Vec::new();
        let head = self.compact(locked.word.head(), &mut moved);
        locked.unlock_with(head);
        self.retire_moved(guard, moved);
        self.counters.add_all([-1, -(bytes as isize)])
    }

    /// Before a removal's unlocking store, with the bucket locked: moves the first nodes of
    /// the chain `head` into lower chunks while the node pool is sparse (`compact.rs`);
    /// returns the chain's new head and pushes the replaced nodes onto `moved`, for
    /// [`Inner::retire_moved`] after the unlocking store.
    #[inline]
    fn compact(&self, head: Link, moved: &mut Vec<NonNull<Node>>) -> Link {
        if head.is_null() || !self.sparse.should_move(&self.alloc) {
            return head;
        }
        // SAFETY: the caller holds the lock of the bucket whose chain starts at `head`.
        unsafe { compact::compact_chain(&self.alloc, head, moved) }
    }

    /// Retires the nodes [`Inner::compact`] replaced, after the unlocking store.
    #[inline]
    fn retire_moved(&self, guard: &Guard, moved: Vec<NonNull<Node>>) {
        if !moved.is_empty() {
            // SAFETY: each node was replaced by its copy in its locked chain and the bucket
            // word (which may have named it) was stored since, so readers pinned from now on
            // cannot reach it; each was in the chain once, so it is retired once.
            unsafe { self.retire_all(guard, moved) };
        }
    }

    /// Unlinks the node at `pos` from the locked chain, releases the lock, retires the node
    /// and counts the removal; returns the stripe's item count.
    fn unlink(&self, guard: &Guard, locked: Locked<'_>, pos: Pos) -> isize {
        // SAFETY: `pos.node` is in our locked chain; its key length is immutable and its
        // value is only written by lock holders (us).
        let meta = unsafe { node::node_meta(pos.node, Ordering::Relaxed) };
        // SAFETY: as above.
        let succ = Link::from_word(
            unsafe { node::header(pos.node) }
                .next
                .load(Ordering::Relaxed),
        );
        let mut head = locked.word.head();
        match pos.prev {
            None => head = succ,
            Some(prev) => {
                // SAFETY: `prev.node` is in our locked chain.
                unsafe { node::header(prev.node) }
                    .next
                    .store(succ.word(), Ordering::Release);
                if succ.is_null() {
                    // The predecessor is now last: flag the link that points at it.
                    let flagged = prev.link.with_last(true).word();
                    match prev.holder {
                        None => head = Link::from_word(flagged),
                        // SAFETY: `holder` is in our locked chain.
                        Some(hd) => unsafe { node::header(hd) }
                            .next
                            .store(flagged, Ordering::Release),
                    }
                }
            }
        }
        let mut moved = Vec::new();
        let head = self.compact(head, &mut moved);
        locked.unlock_with(head);
        // SAFETY: the node was unlinked above under the lock, and is retired once.
        unsafe { self.retire(guard, pos.node) };
        self.retire_moved(guard, moved);
        self.counters
            .add_all([-1, -((meta.klen() + meta.vlen()) as isize)])
    }

    /// The read-modify-write primitive: under the key's bucket lock, `decide` sees the
    /// current value (`None` if absent) and its decision is applied before the lock is
    /// released — a replaced value as `insert` replaces one, a removal as `remove`, a new
    /// key as `insert` adds one. Returns whether the key was present. If `decide` panics,
    /// the lock is released with the chain unchanged.
    pub(crate) fn write(
        self: &std::sync::Arc<Self>,
        key: &[u8],
        decide: &mut dyn FnMut(Option<&[u8]>) -> Decision,
    ) -> Result<bool> {
        let h = hashed(key);
        let guard = pin();
        let (t, idx, word) = lock_bucket(self.current(&guard), h.hash);
        let locked = Locked { t, idx, word };
        let on_unwind = UnlockOnUnwind {
            t,
            idx,
            head: word.head(),
        };
        let area = &t.cell(idx).inline;
        if let Some(e) = area.locked_entry().filter(|e| e.key() == key) {
            let old_len = e.value().len();
            let decision = decide(Some(e.value()));
            std::mem::forget(on_unwind);
            match decision {
                Decision::Keep => locked.unlock(),
                Decision::Store(new) => {
                    self.set_inline(locked, key, &new)?;
                    self.counters
                        .add_all([0, new.len() as isize - old_len as isize]);
                }
                Decision::Remove => {
                    let local = self.clear_inline(&guard, locked, key.len() + old_len);
                    self.shrink_if(guard, local);
                }
            }
            return Ok(true);
        }
        // SAFETY: we hold the bucket lock and a guard.
        match unsafe { find_locked(word.head(), h, key) } {
            Some(pos) => {
                // SAFETY: the node is in our locked chain; nobody else writes its value.
                let decision = unsafe { node::with_value(pos.node, |v| decide(Some(v))) };
                std::mem::forget(on_unwind);
                match decision {
                    Decision::Keep => locked.unlock(),
                    Decision::Store(new) => {
                        let set = self.set_value(word.head(), pos, &new);
                        self.finish(&guard, locked, set)?;
                    }
                    Decision::Remove => {
                        let local = self.unlink(&guard, locked, pos);
                        self.shrink_if(guard, local);
                    }
                }
                Ok(true)
            }
            None => {
                let decision = decide(None);
                std::mem::forget(on_unwind);
                match decision {
                    Decision::Store(new) => {
                        let full = self.insert_new(&guard, locked, h, key, &new)?;
                        self.expand_if(guard, full);
                    }
                    Decision::Keep | Decision::Remove => locked.unlock(),
                }
                Ok(false)
            }
        }
    }

    /// Applies `f` to the value of an existing key, keeping its length; returns whether the
    /// key was present.
    pub(crate) fn update_in_place(&self, key: &[u8], f: impl FnOnce(&mut [u8])) -> Result<bool> {
        let h = hashed(key);
        let guard = pin();
        let (t, idx, word) = lock_bucket(self.current(&guard), h.hash);
        let locked = Locked { t, idx, word };
        let area = &t.cell(idx).inline;
        if let Some(e) = area.locked_entry().filter(|e| e.key() == key) {
            let on_unwind = UnlockOnUnwind {
                t,
                idx,
                head: word.head(),
            };
            let mut buf = [0u8; INLINE_MAX];
            let v = &mut buf[..e.value().len()];
            v.copy_from_slice(e.value());
            f(v);
            std::mem::forget(on_unwind);
            area.write(key, v);
            locked.unlock();
            return Ok(true);
        }
        // SAFETY: we hold the bucket lock and a guard.
        let Some(pos) = (unsafe { find_locked(word.head(), h, key) }) else {
            locked.unlock();
            return Ok(false);
        };
        let mut short = [0u8; SHORT_VALUE_MAX];
        let mut long = Vec::new();
        // SAFETY: the node is in our locked chain; nobody else writes its value.
        let len = unsafe {
            node::with_value(pos.node, |v| {
                if v.len() <= SHORT_VALUE_MAX {
                    short[..v.len()].copy_from_slice(v);
                } else {
                    long = v.to_vec();
                }
                v.len()
            })
        };
        let buf: &mut [u8] = if len <= SHORT_VALUE_MAX {
            &mut short[..len]
        } else {
            &mut long
        };
        let on_unwind = UnlockOnUnwind {
            t,
            idx,
            head: word.head(),
        };
        f(buf);
        std::mem::forget(on_unwind);
        let set = self.set_value(word.head(), pos, buf);
        self.finish(&guard, locked, set)?;
        Ok(true)
    }

    /// Gives the node at `pos` the value `value`: in place when it fits, otherwise by
    /// replacing the node. Returns the bucket's new head link (`head` unless the head node was
    /// replaced) and the replaced node, which the caller retires after releasing the lock
    /// (only then is it unreachable for readers that pin later). The caller holds the bucket
    /// lock and has checked `value`'s length.
    fn set_value(
        &self,
        head: Link,
        pos: Pos,
        value: &[u8],
    ) -> Result<(Link, Option<NonNull<Node>>)> {
        // SAFETY: the node is in the caller's locked chain.
        let meta = unsafe { node::node_meta(pos.node, Ordering::Relaxed) };
        let delta = value.len() as isize - meta.vlen() as isize;
        // SAFETY: the caller holds the bucket lock of the node's chain.
        if unsafe { node::write_value_in_place(pos.node, value) } {
            self.counters.add_all([0, delta]);
            return Ok((head, None));
        }
        // SAFETY: the node is in the locked chain; its key is immutable.
        let key = unsafe { node::key(pos.node, meta) };
        // SAFETY: as above; `next` only changes under the lock we hold.
        let next = Link::from_word(
            unsafe { node::header(pos.node) }
                .next
                .load(Ordering::Relaxed),
        );
        let copy = self.alloc.alloc(key, value, next)?;
        let link = Link::new(copy, pos.link.tag(), pos.link.is_last());
        let new_head = match &pos.prev {
            None => link,
            Some(prev) => {
                // SAFETY: `prev.node` is in the locked chain.
                unsafe { node::header(prev.node) }
                    .next
                    .store(link.word(), Ordering::Release);
                head
            }
        };
        self.counters.add_all([0, delta]);
        Ok((new_head, Some(pos.node)))
    }

    /// Ends a locked update: releases the lock with the new head (or unchanged on error),
    /// then retires the replaced node, if any.
    fn finish(
        &self,
        guard: &Guard,
        locked: Locked<'_>,
        set: Result<(Link, Option<NonNull<Node>>)>,
    ) -> Result<()> {
        match set {
            Ok((head, replaced)) => {
                locked.unlock_with(head);
                if let Some(old) = replaced {
                    // SAFETY: `old` was unlinked (the store above, or the predecessor's link
                    // stored under the lock), so readers pinned from now on cannot reach it;
                    // it is retired once.
                    unsafe { self.retire(guard, old) };
                }
                Ok(())
            }
            Err(e) => {
                locked.unlock();
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Mercury};

    fn tiny() -> Mercury {
        Mercury::with_config(Config {
            initial_buckets: 1,
            ..Config::default()
        })
        .unwrap()
    }

    /// All keys collide in one bucket (one-bucket table with expansion disabled), so every
    /// chain position (head, middle, last) is exercised by removes and replacements.
    #[test]
    fn chain_positions() {
        let m = Mercury::with_config(Config {
            initial_buckets: 1,
            load_percent: 100_000,
            ..Config::default()
        })
        .unwrap();
        let keys: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; i as usize + 1]).collect();
        for k in &keys {
            assert_eq!(m.insert(k, k), Ok(true));
        }
        // Replace middle and last with long values (node replacement), then head.
        let long = vec![0xEE; 100];
        for i in [2, 0, 5] {
            assert_eq!(m.insert(&keys[i], &long), Ok(false));
            assert_eq!(m.get(&keys[i]).as_deref(), Some(&long[..]));
        }
        // Remove in an order that hits last, head and middle.
        for i in [0, 5, 3, 1] {
            assert!(m.remove(&keys[i]));
            assert!(!m.remove(&keys[i]));
            assert_eq!(m.get(&keys[i]), None);
        }
        for i in [2, 4] {
            assert!(m.get(&keys[i]).is_some());
        }
        assert_eq!(m.len(), 2);
    }

    /// One bucket, no expansion: the first small pair goes inline, the others into nodes.
    fn one_bucket() -> Mercury {
        Mercury::with_config(Config {
            initial_buckets: 1,
            load_percent: 100_000,
            ..Config::default()
        })
        .unwrap()
    }

    fn inline_items(m: &Mercury) -> usize {
        m.chain_stats().inline_items
    }

    /// Pairs at the inline size boundary (key + value = 16 bytes) are stored inline; one byte
    /// more goes into a node.
    #[test]
    fn inline_size_boundary() {
        let cases: [(usize, usize, bool); 7] = [
            (8, 8, true),
            (16, 0, true),
            (0, 16, true),
            (0, 0, true),
            (8, 9, false),
            (17, 0, false),
            (1, 16, false),
        ];
        for (klen, vlen, inline) in cases {
            let m = one_bucket();
            let k = vec![0xA5; klen];
            let v = vec![0x5A; vlen];
            assert_eq!(m.insert(&k, &v), Ok(true));
            assert_eq!(inline_items(&m), usize::from(inline), "{klen}+{vlen}");
            assert_eq!(m.get(&k).as_deref(), Some(&v[..]));
            // A second key: a node if the area is taken, else inline if it fits.
            let mut k2 = k.clone();
            k2.push(1);
            m.insert(&k2, b"").unwrap();
            let k2_inline = !inline && klen < 16;
            assert_eq!(m.chain_stats().items, 2);
            assert_eq!(inline_items(&m), usize::from(inline || k2_inline));
            assert_eq!(m.get(&k).as_deref(), Some(&v[..]));
            assert_eq!(m.get(&k2).as_deref(), Some(&b""[..]));
            let mut other = k.clone();
            if let Some(b) = other.first_mut() {
                *b ^= 1;
                assert_eq!(m.get(&other), None);
            }
            assert!(m.remove(&k) && !m.remove(&k));
            assert_eq!(m.get(&k), None);
            assert_eq!((m.len(), inline_items(&m)), (1, usize::from(k2_inline)));
            assert_eq!(m.get(&k2).as_deref(), Some(&b""[..]));
        }
    }

    /// An upsert (insert, `update`) that grows an inline value past the limit moves the pair
    /// into a node; a later small value stays in the node; removing it frees the area again.
    #[test]
    fn upsert_grows_past_the_inline_limit() {
        for via_update in [false, true] {
            let m = one_bucket();
            m.insert(b"other-1", b"x").unwrap(); // inline
            m.insert(b"key", b"12345678").unwrap(); // node (area taken)
            assert!(m.remove(b"other-1"));
            m.insert(b"k8", b"8 bytes!").unwrap(); // inline again
            assert_eq!(inline_items(&m), 1);
            let big = b"a value of 14+".to_vec(); // 2 + 14 = 16: still inline
            m.insert(b"k8", &big).unwrap();
            assert_eq!(inline_items(&m), 1);
            let bigger = [&big[..], b"!"].concat(); // 17: moves into a node
            if via_update {
                assert_eq!(m.update(b"k8", |_| bigger.clone()), Ok(true));
            } else {
                assert_eq!(m.insert(b"k8", &bigger), Ok(false));
            }
            assert_eq!(inline_items(&m), 0);
            assert_eq!(m.get(b"k8"), Some(bigger.clone()));
            assert_eq!(m.get(b"key").as_deref(), Some(&b"12345678"[..]));
            assert_eq!(m.len(), 2);
            // Shrinking again keeps the pair in its node (pairs never move into the area).
            m.insert(b"k8", b"s").unwrap();
            assert_eq!((inline_items(&m), m.get(b"k8")), (0, Some(b"s".to_vec())));
            // The area is free: the next small new key takes it.
            m.insert(b"new", b"n").unwrap();
            assert_eq!(inline_items(&m), 1);
            let usage = orrery_core::KvIndex::memory_usage(&m);
            assert_eq!(usage.key_value_bytes, 3 + 8 + 2 + 1 + 3 + 1);
        }
    }

    /// `update_in_place` and `update` of an inline pair rewrite it inline.
    #[test]
    fn inline_updates() {
        let m = one_bucket();
        m.insert(b"c", &5u64.to_le_bytes()).unwrap();
        for _ in 0..10 {
            m.update_in_place(b"c", |v| {
                let x = u64::from_le_bytes(v.try_into().unwrap()) + 1;
                v.copy_from_slice(&x.to_le_bytes());
            })
            .unwrap();
        }
        assert_eq!(m.get(b"c"), Some(15u64.to_le_bytes().to_vec()));
        assert_eq!(m.update(b"c", |v| v[..3].to_vec()), Ok(true));
        assert_eq!(m.get(b"c").map(|v| v.len()), Some(3));
        assert_eq!(inline_items(&m), 1);
        assert!(matches!(
            m.update(b"c", |_| vec![0; orrery_core::api::MAX_VALUE_LEN + 1]),
            Err(orrery_core::Error::ValueTooLong { .. })
        ));
        assert_eq!(m.get(b"c").map(|v| v.len()), Some(3));
        assert_eq!(m.insert(b"c", b"z"), Ok(false)); // the lock was released
    }

    /// Removing the inline pair leaves the chain behind it intact.
    #[test]
    fn remove_inline_head_with_a_chain_behind() {
        let m = one_bucket();
        let keys: Vec<Vec<u8>> = (0..6u8).map(|i| vec![i; 4]).collect();
        for k in &keys {
            m.insert(k, k).unwrap();
        }
        assert_eq!(inline_items(&m), 1);
        assert_eq!(m.chain_stats().max_chain, 5);
        assert!(m.remove(&keys[0]));
        assert_eq!((inline_items(&m), m.len()), (0, 5));
        assert_eq!(m.get(&keys[0]), None);
        for k in &keys[1..] {
            assert_eq!(m.get(k).as_deref(), Some(&k[..]));
        }
        // The area is reused by the next small new key; the chain is unchanged.
        m.insert(b"again", b"x").unwrap();
        assert_eq!((inline_items(&m), m.chain_stats().max_chain), (1, 5));
        let mut seen = 0;
        m.for_each(|_, _| {
            seen += 1;
            std::ops::ControlFlow::Continue(())
        });
        assert_eq!(seen, 6);
    }

    /// Migration carries the inline pair to its new bucket and moves chain pairs into the
    /// other new bucket's empty area (their nodes are retired); nothing is lost.
    #[test]
    fn migration_of_inline_pairs() {
        let m = one_bucket();
        let keys: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i, i ^ 0x55]).collect();
        let long = vec![7u8; 100];
        for (i, k) in keys.iter().enumerate() {
            let v: &[u8] = if i % 3 == 1 { &long } else { k };
            m.insert(k, v).unwrap();
        }
        assert_eq!(inline_items(&m), 1);
        let before = orrery_core::KvIndex::memory_usage(&m).key_value_bytes;
        let inner = &m.inner;
        {
            let guard = orrery_core::sync::pin();
            let t = inner.current(&guard);
            t.set_next(crate::table::Table::new(2, 100_000).unwrap());
            // Single-threaded: the token is always free, every call migrates a run.
            while inner.help(t, t.next().unwrap(), &guard) != crate::expand::Step::Done {}
        }
        assert_eq!((m.stats().buckets, m.stats().next_buckets), (2, None));
        // Both new buckets received keys (40 random hashes), so both areas are full.
        assert_eq!(inline_items(&m), 2);
        assert_eq!(m.chain_stats().items, keys.len());
        for (i, k) in keys.iter().enumerate() {
            let v: &[u8] = if i % 3 == 1 { &long } else { k };
            assert_eq!(m.get(k).as_deref(), Some(v), "key {i}");
        }
        assert_eq!(
            orrery_core::KvIndex::memory_usage(&m).key_value_bytes,
            before
        );
        for k in &keys {
            assert!(m.remove(k));
        }
        assert!(m.is_empty());
        assert_eq!(inline_items(&m), 0);
    }

    /// A panicking update closure must not leave its bucket locked.
    #[test]
    fn panicking_update_releases_the_lock() {
        let m = tiny();
        m.insert(b"k", b"v").unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = m.update(b"k", |_| panic!("user closure"));
        }));
        assert!(r.is_err());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = m.update_in_place(b"k", |_| panic!("user closure"));
        }));
        assert!(r.is_err());
        // The same with the key in a node (a long value).
        m.insert(b"k", &[1; 100]).unwrap();
        for in_place in [false, true] {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if in_place {
                    let _ = m.update_in_place(b"k", |_| panic!("user closure"));
                } else {
                    let _ = m.update(b"k", |_| panic!("user closure"));
                }
            }));
            assert!(r.is_err());
        }
        // The bucket is usable (a leaked lock would make these spin forever).
        assert_eq!(m.insert(b"k", b"w"), Ok(false));
        assert!(m.remove(b"k"));
    }

    #[test]
    fn updates() {
        let m = tiny();
        assert_eq!(m.update(b"k", |_| b"x".to_vec()), Ok(false));
        m.insert(b"k", b"12345678").unwrap();
        assert_eq!(m.update(b"k", |v| [v, v].concat()), Ok(true));
        assert_eq!(m.get(b"k").as_deref(), Some(&b"1234567812345678"[..]));
        assert_eq!(m.update(b"k", |_| vec![1; 200]), Ok(true));
        assert_eq!(m.get(b"k"), Some(vec![1; 200]));
        assert_eq!(m.update_in_place(b"k", |v| v[0] = 9), Ok(true));
        assert_eq!(m.get(b"k").unwrap()[..2], [9, 1]);
        assert_eq!(m.update_in_place(b"nope", |_| ()), Ok(false));
        m.insert(b"c", &7u64.to_le_bytes()).unwrap();
        for _ in 0..10 {
            m.update_in_place(b"c", |v| {
                let x = u64::from_le_bytes(v.try_into().unwrap()) + 1;
                v.copy_from_slice(&x.to_le_bytes());
            })
            .unwrap();
        }
        assert_eq!(m.get(b"c"), Some(17u64.to_le_bytes().to_vec()));
        assert!(matches!(
            m.update(b"k", |_| vec![0; orrery_core::api::MAX_VALUE_LEN + 1]),
            Err(orrery_core::Error::ValueTooLong { .. })
        ));
        assert_eq!(m.get(b"k").unwrap().len(), 200);
    }
}
