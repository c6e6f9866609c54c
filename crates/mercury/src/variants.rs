//! **Bench-only** measurement variants of Fig 4 (feature `bench-internals`, enabled only by
//! `orrery-bench`; hidden from the API docs). Not for production use.
//!
//! Both reuse Mercury's bucket cells (bucket word plus inline pair), nodes and size-class
//! pools (`table.rs`, `inline_pair.rs`, `link.rs`, `node.rs`) with the same placement rules
//! (a small new pair takes its bucket's free inline area; a pair grown past it moves into a
//! node), so that a comparison measures only the synchronization scheme:
//!
//! - [`NoLockMercury`]: the paper's "Mercury (nolock)", an upper bound with every lock,
//!   epoch guard, has-moved check and version check removed. It is **not thread-safe for
//!   writes**: see its constructor's contract. Expansion doubles the table in one go when the
//!   load passes the threshold (nothing else can be running).
//! - [`StripedMercury`]: a memcached-like table. A fixed array of striped mutexes
//!   (`std::sync::Mutex`, futex-based like memcached's default pthread locks) each protect
//!   every bucket whose index is congruent to the stripe modulo the stripe count; every
//!   operation, GETs included, takes its stripe's lock; expansion takes *all* stripe locks
//!   and rehashes the whole table (the "exclusive access to all the locks" of §2.2). Nodes are
//!   freed immediately (readers hold the stripe lock, so no reclamation scheme is needed).

use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use orrery_core::Result;
use orrery_core::api::{KvIndex, MAX_KEY_LEN, MemoryUsage, check_entry};

use crate::inline_pair;
use crate::link::Link;
use crate::node::{self, Node, NodeAlloc};
use crate::raw::{Hashed, hashed};
use crate::table::{Cell, Table};

/// Operations on one chain by a thread with exclusive access to it (no concurrent reader or
/// writer of this chain), shared by both variants. Orderings are Relaxed: exclusivity comes
/// from the caller (a single thread, or a mutex).
mod chain {
    use super::*;

    /// The node holding `key` and the word that links to it.
    pub(super) struct Hit<'a> {
        pub(super) node: NonNull<Node>,
        pub(super) slot: &'a AtomicU64,
        /// The slot's link (to `node`), with its LAST flag.
        pub(super) link: Link,
        /// The predecessor's slot and link (to fix its LAST flag on removal of the last node).
        pub(super) prev: Option<(&'a AtomicU64, Link)>,
    }

    /// Finds `key` in the chain starting at `bucket`.
    ///
    /// # Safety
    /// Exclusive access to the chain for `'a`.
    pub(super) unsafe fn find<'a>(bucket: &'a AtomicU64, h: Hashed, key: &[u8]) -> Option<Hit<'a>> {
        let mut slot = bucket;
        let mut prev = None;
        loop {
            let link = Link::from_word(slot.load(Ordering::Relaxed));
            let n = link.node()?;
            // SAFETY: exclusive access; `n` is in the chain.
            if link.tag() == h.tag && unsafe { node::key_eq(n, key) } {
                return Some(Hit {
                    node: n,
                    slot,
                    link,
                    prev,
                });
            }
            prev = Some((slot, link));
            // SAFETY: as above; the header outlives `'a` (nodes are freed only by the
            // exclusive owner).
            slot = &unsafe { node::header(n) }.next;
        }
    }

    /// Prepends a new node holding `key` and `value` to the chain of `bucket` (exclusive
    /// access: the caller holds the bucket's lock or is the only thread).
    fn push_head(
        alloc: &NodeAlloc,
        bucket: &AtomicU64,
        h: Hashed,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let head = Link::from_word(bucket.load(Ordering::Relaxed));
        let n = alloc.alloc(key, value, head)?;
        bucket.store(
            Link::new(n, h.tag, head.is_null()).word(),
            Ordering::Relaxed,
        );
        Ok(())
    }

    /// Inserts or replaces; returns whether the key was new and the key-value byte delta.
    ///
    /// # Safety
    /// Exclusive access to the chain.
    pub(super) unsafe fn upsert(
        alloc: &NodeAlloc,
        cell: &Cell,
        h: Hashed,
        key: &[u8],
        value: &[u8],
    ) -> Result<(bool, isize)> {
        let bucket = cell.word();
        let area = &cell.inline;
        if let Some(e) = area.locked_entry().filter(|e| e.key() == key) {
            let delta = value.len() as isize - e.value().len() as isize;
            if inline_pair::fits(key.len(), value.len()) {
                area.write(key, value);
            } else {
                push_head(alloc, bucket, h, key, value)?;
                area.clear();
            }
            return Ok((false, delta));
        }
        // SAFETY: forwarded from the caller.
        if let Some(hit) = unsafe { find(bucket, h, key) } {
            // SAFETY: exclusive access.
            let meta = unsafe { node::node_meta(hit.node, Ordering::Relaxed) };
            let delta = value.len() as isize - meta.vlen() as isize;
            // SAFETY: exclusive access stands in for the bucket lock.
            if unsafe { node::write_value_in_place(hit.node, value) } {
                return Ok((false, delta));
            }
            // SAFETY: exclusive access.
            let next = Link::from_word(
                unsafe { node::header(hit.node) }
                    .next
                    .load(Ordering::Relaxed),
            );
            let copy = alloc.alloc(key, value, next)?;
            hit.slot.store(
                Link::new(copy, h.tag, hit.link.is_last()).word(),
                Ordering::Relaxed,
            );
            // SAFETY: unlinked just above; nobody else can hold it (exclusive access).
            unsafe { alloc.free(hit.node) };
            return Ok((false, delta));
        }
        if inline_pair::fits(key.len(), value.len()) && area.locked_is_empty() {
            area.write(key, value);
        } else {
            push_head(alloc, bucket, h, key, value)?;
        }
        Ok((true, (key.len() + value.len()) as isize))
    }

    /// Removes `key`; returns the removed key-value bytes.
    ///
    /// # Safety
    /// Exclusive access to the chain.
    pub(super) unsafe fn remove(
        alloc: &NodeAlloc,
        cell: &Cell,
        h: Hashed,
        key: &[u8],
    ) -> Option<usize> {
        if let Some(e) = cell.inline.locked_entry().filter(|e| e.key() == key) {
            cell.inline.clear();
            return Some(e.key().len() + e.value().len());
        }
        // SAFETY: forwarded from the caller.
        let hit = unsafe { find(cell.word(), h, key) }?;
        // SAFETY: exclusive access.
        let meta = unsafe { node::node_meta(hit.node, Ordering::Relaxed) };
        // SAFETY: exclusive access.
        let succ = Link::from_word(
            unsafe { node::header(hit.node) }
                .next
                .load(Ordering::Relaxed),
        );
        hit.slot.store(succ.word(), Ordering::Relaxed);
        if succ.is_null()
            && let Some((pslot, plink)) = hit.prev
        {
            pslot.store(plink.with_last(true).word(), Ordering::Relaxed);
        }
        // SAFETY: unlinked above; exclusive access.
        unsafe { alloc.free(hit.node) };
        Some(meta.klen() + meta.vlen())
    }

    /// Moves every pair of bucket `from` (of `old`) into `new` (twice as many buckets, whose
    /// two buckets for `from` receive pairs from it only): the inline pair and chain pairs
    /// that fit into the new areas (such nodes are freed), the other nodes re-linked.
    ///
    /// # Safety
    /// Exclusive access to both tables.
    pub(super) unsafe fn rehash(alloc: &NodeAlloc, old: &Table, from: usize, new: &Table) {
        if let Some(e) = old.cell(from).inline.locked_entry() {
            new.cell(new.index(hashed(e.key()).hash))
                .inline
                .write(e.key(), e.value());
            old.cell(from).inline.clear();
        }
        let mut link = Link::from_word(old.bucket(from).load(Ordering::Relaxed));
        while let Some(x) = link.node() {
            // SAFETY: exclusive access.
            let hdr = unsafe { node::header(x) };
            let after = Link::from_word(hdr.next.load(Ordering::Relaxed));
            // SAFETY: exclusive access; the key is immutable.
            let meta = unsafe { node::node_meta(x, Ordering::Relaxed) };
            // SAFETY: exclusive access.
            let key = unsafe { node::key(x, meta) };
            let cell = new.cell(new.index(hashed(key).hash));
            if cell.inline.locked_is_empty()
                && !meta.is_long()
                && inline_pair::fits(meta.klen(), meta.vlen())
            {
                // SAFETY: exclusive access.
                unsafe { node::with_value(x, |v| cell.inline.write(key, v)) };
                // SAFETY: the node is in no chain any more (the old bucket is reset below);
                // exclusive access; freed once.
                unsafe { alloc.free(x) };
                link = after;
                continue;
            }
            let dest = cell.word();
            let head = Link::from_word(dest.load(Ordering::Relaxed));
            hdr.next.store(head.word(), Ordering::Relaxed);
            dest.store(
                Link::new(x, link.tag(), head.is_null()).word(),
                Ordering::Relaxed,
            );
            link = after;
        }
        old.bucket(from).store(0, Ordering::Relaxed);
    }

    /// Frees every node of `t`.
    ///
    /// # Safety
    /// Exclusive access.
    pub(super) unsafe fn free_all(alloc: &NodeAlloc, t: &Table) {
        for i in 0..t.len() {
            let mut link = Link::from_word(t.bucket(i).load(Ordering::Relaxed));
            while let Some(x) = link.node() {
                // SAFETY: exclusive access.
                link = Link::from_word(unsafe { node::header(x) }.next.load(Ordering::Relaxed));
                // SAFETY: exclusive access; freed once.
                unsafe { alloc.free(x) };
            }
        }
    }

    /// Looks `key` up with exclusive access (no version validation of the value).
    ///
    /// # Safety
    /// No concurrent writer of the chain.
    #[inline]
    pub(super) unsafe fn get<R>(
        cell: &Cell,
        h: Hashed,
        key: &[u8],
        f: impl FnOnce(&[u8]) -> R,
    ) -> Option<R> {
        if key.len() <= inline_pair::INLINE_MAX
            && let Some(e) = cell.inline.locked_entry()
            && e.key() == key
        {
            return Some(f(e.value()));
        }
        let mut link = Link::from_word(cell.word().load(Ordering::Relaxed));
        while let Some(n) = link.node() {
            // SAFETY: no concurrent writer; `n` is in the chain.
            if link.tag() == h.tag && unsafe { node::key_eq(n, key) } {
                // SAFETY: as above.
                return Some(unsafe { node::with_value(n, f) });
            }
            if link.is_last() {
                return None;
            }
            // SAFETY: as above.
            link = Link::from_word(unsafe { node::header(n) }.next.load(Ordering::Relaxed));
        }
        None
    }
}

const LOAD_PERCENT: usize = crate::config::DEFAULT_LOAD_PERCENT;
const INITIAL_BUCKETS: usize = 1024;

/// Mercury without any synchronization: the paper's "Mercury (nolock)" upper bound.
/// **Bench-only.**
pub struct NoLockMercury {
    table: UnsafeCell<Box<Table>>,
    alloc: NodeAlloc,
    items: AtomicUsize,
    kv_bytes: AtomicUsize,
}

// SAFETY: sending the table to another thread moves its nodes and pools along; nothing is
// tied to the creating thread.
unsafe impl Send for NoLockMercury {}
// SAFETY: shared use is sound under the constructor's contract (no call runs concurrently
// with a write), which the caller of `NoLockMercury::new` promised.
unsafe impl Sync for NoLockMercury {}

impl NoLockMercury {
    /// An empty table.
    ///
    /// # Safety
    /// The caller must never let a writing call (`insert`, `remove`) run concurrently with
    /// any other call on this table: concurrent lookups are fine, a single writing thread is
    /// fine, but a write racing with anything is a data race.
    pub unsafe fn new() -> NoLockMercury {
        NoLockMercury {
            table: UnsafeCell::new(
                Table::new(INITIAL_BUCKETS, LOAD_PERCENT).expect("initial bucket array"),
            ),
            alloc: NodeAlloc::new(),
            items: AtomicUsize::new(0),
            kv_bytes: AtomicUsize::new(0),
        }
    }

    fn table(&self) -> &Table {
        // SAFETY: the table box is replaced only by `grow`, which (by the constructor's
        // contract) never runs concurrently with another call.
        unsafe { &*self.table.get() }
    }

    /// Doubles the table in one go.
    fn grow(&self) -> Result<()> {
        let old = self.table();
        let new = Table::new(old.len() * 2, LOAD_PERCENT)?;
        for i in 0..old.len() {
            // SAFETY: a writing call has exclusive access (constructor's contract).
            unsafe { chain::rehash(&self.alloc, old, i, &new) };
        }
        // SAFETY: exclusive access (writing call); `old` is not used after this.
        unsafe { *self.table.get() = new };
        Ok(())
    }
}

impl Drop for NoLockMercury {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: exclusive access.
        unsafe { chain::free_all(&self.alloc, self.table.get_mut()) };
    }
}

impl KvIndex for NoLockMercury {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        if key.len() > MAX_KEY_LEN {
            return false;
        }
        let h = hashed(key);
        let t = self.table();
        // SAFETY: no writer runs concurrently (constructor's contract).
        unsafe { chain::get(t.cell(t.index(h.hash)), h, key, f) }.is_some()
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        check_entry(key, value)?;
        let h = hashed(key);
        let t = self.table();
        // SAFETY: a writing call has exclusive access (constructor's contract).
        let (new, delta) =
            unsafe { chain::upsert(&self.alloc, t.cell(t.index(h.hash)), h, key, value) }?;
        self.kv_bytes.fetch_add(delta as usize, Ordering::Relaxed);
        if new && self.items.fetch_add(1, Ordering::Relaxed) + 1 > t.grow_at() {
            // Failure to grow only leaves chains longer.
            let _ = self.grow();
        }
        Ok(new)
    }

    fn remove(&self, key: &[u8]) -> bool {
        if key.len() > MAX_KEY_LEN {
            return false;
        }
        let h = hashed(key);
        let t = self.table();
        // SAFETY: a writing call has exclusive access (constructor's contract).
        match unsafe { chain::remove(&self.alloc, t.cell(t.index(h.hash)), h, key) } {
            Some(bytes) => {
                self.items.fetch_sub(1, Ordering::Relaxed);
                self.kv_bytes.fetch_sub(bytes, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    fn len(&self) -> usize {
        self.items.load(Ordering::Relaxed)
    }

    fn memory_usage(&self) -> MemoryUsage {
        let kv = self.kv_bytes.load(Ordering::Relaxed);
        MemoryUsage {
            structure_bytes: (self.table().bytes() + self.alloc.bytes()).saturating_sub(kv),
            key_value_bytes: kv,
        }
    }
}

/// Stripe count of [`StripedMercury`] (memcached's item-lock table is a few thousand locks).
pub const STRIPES: usize = 4096;

/// A memcached-like chained table with a fixed array of striped mutexes. **Bench-only.**
pub struct StripedMercury {
    locks: Box<[Mutex<()>]>,
    /// Current table; replaced only while holding every stripe lock.
    table: AtomicPtr<Table>,
    alloc: NodeAlloc,
    items: AtomicUsize,
    kv_bytes: AtomicUsize,
}

impl Default for StripedMercury {
    fn default() -> Self {
        Self::new()
    }
}

impl StripedMercury {
    /// An empty table.
    pub fn new() -> StripedMercury {
        let table =
            Table::new(INITIAL_BUCKETS.max(STRIPES), LOAD_PERCENT).expect("initial bucket array");
        StripedMercury {
            locks: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            table: AtomicPtr::new(Box::into_raw(table)),
            alloc: NodeAlloc::new(),
            items: AtomicUsize::new(0),
            kv_bytes: AtomicUsize::new(0),
        }
    }

    /// Locks the stripe of hash `h` and returns the guard with the current table.
    fn lock(&self, h: u64) -> (MutexGuard<'_, ()>, &Table) {
        let g = self.locks[(h as usize) & (STRIPES - 1)]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // SAFETY: the table is replaced (and the old one freed) only while all stripe locks
        // are held, so it is valid while we hold one; it has at least STRIPES buckets, so the
        // bucket of `h` is covered by the stripe of `h`.
        let t = unsafe { &*self.table.load(Ordering::Acquire) };
        (g, t)
    }

    /// Doubles the table under every stripe lock (stop-the-world, as memcached's expansion
    /// under its global lock).
    fn grow(&self, seen: usize) {
        let guards: Vec<MutexGuard<'_, ()>> = self
            .locks
            .iter()
            .map(|l| l.lock().unwrap_or_else(|e| e.into_inner()))
            .collect();
        let old_ptr = self.table.load(Ordering::Acquire);
        // SAFETY: all locks held: nobody else uses the table.
        let old = unsafe { &*old_ptr };
        if old.len() != seen {
            return; // someone else grew it meanwhile
        }
        let Ok(new) = Table::new(old.len() * 2, LOAD_PERCENT) else {
            return;
        };
        for i in 0..old.len() {
            // SAFETY: all locks held.
            unsafe { chain::rehash(&self.alloc, old, i, &new) };
        }
        self.table.store(Box::into_raw(new), Ordering::Release);
        // SAFETY: all locks held, and every user loads the table pointer only under a lock.
        drop(unsafe { Box::from_raw(old_ptr) });
        drop(guards);
    }
}

impl Drop for StripedMercury {
    fn drop(&mut self) {
        let t = *self.table.get_mut();
        // SAFETY: `&mut self`: exclusive access; the table came from `Box::into_raw` and is
        // freed once, here.
        let table = unsafe { Box::from_raw(t) };
        // SAFETY: exclusive access.
        unsafe { chain::free_all(&self.alloc, &table) };
    }
}

impl KvIndex for StripedMercury {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> bool {
        if key.len() > MAX_KEY_LEN {
            return false;
        }
        let h = hashed(key);
        let (_g, t) = self.lock(h.hash);
        // SAFETY: the stripe lock excludes every writer of this chain.
        unsafe { chain::get(t.cell(t.index(h.hash)), h, key, f) }.is_some()
    }

    fn insert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        check_entry(key, value)?;
        let h = hashed(key);
        let (new, len) = {
            let (_g, t) = self.lock(h.hash);
            // SAFETY: the stripe lock gives exclusive access to this chain.
            let (new, delta) =
                unsafe { chain::upsert(&self.alloc, t.cell(t.index(h.hash)), h, key, value) }?;
            self.kv_bytes.fetch_add(delta as usize, Ordering::Relaxed);
            (new, t.len())
        };
        if new && self.items.fetch_add(1, Ordering::Relaxed) + 1 > len * LOAD_PERCENT / 100 {
            self.grow(len);
        }
        Ok(new)
    }

    fn remove(&self, key: &[u8]) -> bool {
        if key.len() > MAX_KEY_LEN {
            return false;
        }
        let h = hashed(key);
        let (_g, t) = self.lock(h.hash);
        // SAFETY: the stripe lock gives exclusive access to this chain.
        match unsafe { chain::remove(&self.alloc, t.cell(t.index(h.hash)), h, key) } {
            Some(bytes) => {
                self.items.fetch_sub(1, Ordering::Relaxed);
                self.kv_bytes.fetch_sub(bytes, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    fn len(&self) -> usize {
        self.items.load(Ordering::Relaxed)
    }

    fn memory_usage(&self) -> MemoryUsage {
        let kv = self.kv_bytes.load(Ordering::Relaxed);
        let table = {
            let (_g, t) = self.lock(0);
            t.bytes()
        };
        MemoryUsage {
            structure_bytes: (table + self.alloc.bytes()).saturating_sub(kv),
            key_value_bytes: kv,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise(m: &dyn KvIndex) {
        let n = if cfg!(miri) { 200 } else { 20_000u32 as usize };
        for i in 0..n as u32 {
            assert_eq!(m.insert(&i.to_be_bytes(), &i.to_le_bytes()), Ok(true));
        }
        assert_eq!(m.insert(&5u32.to_be_bytes(), &[1; 100]), Ok(false));
        // Inline boundary: 4 + 12 bytes stay inline, 4 + 13 move into a node, and a shrunk
        // value stays there.
        assert_eq!(m.insert(&7u32.to_be_bytes(), &[2; 12]), Ok(false));
        assert_eq!(m.get(&7u32.to_be_bytes()), Some(vec![2; 12]));
        assert_eq!(m.insert(&7u32.to_be_bytes(), &[3; 13]), Ok(false));
        assert_eq!(m.get(&7u32.to_be_bytes()), Some(vec![3; 13]));
        assert_eq!(
            m.insert(&7u32.to_be_bytes(), &7u32.to_le_bytes()),
            Ok(false)
        );
        assert_eq!(m.memory_usage().key_value_bytes, n * 8 + 96);
        for i in 0..n as u32 {
            let want = if i == 5 {
                vec![1; 100]
            } else {
                i.to_le_bytes().to_vec()
            };
            assert_eq!(m.get(&i.to_be_bytes()), Some(want));
        }
        for i in (0..n as u32).step_by(3) {
            assert!(m.remove(&i.to_be_bytes()));
        }
        assert_eq!(m.len(), n - n.div_ceil(3));
        for i in 0..n as u32 {
            assert_eq!(m.contains_key(&i.to_be_bytes()), i % 3 != 0);
        }
    }

    #[test]
    fn nolock_single_thread() {
        // SAFETY: used from this thread only.
        let m = unsafe { NoLockMercury::new() };
        exercise(&m);
    }

    #[test]
    fn striped_single_and_multi_thread() {
        let m = StripedMercury::new();
        exercise(&m);
        let m = StripedMercury::new();
        std::thread::scope(|s| {
            for t in 0..2u32 {
                let m = &m;
                s.spawn(move || {
                    for i in 0..if cfg!(miri) { 50 } else { 20_000u32 } {
                        let k = (i * 2 + t).to_be_bytes();
                        m.insert(&k, &k).unwrap();
                        assert!(m.contains_key(&k));
                    }
                });
            }
        });
        assert_eq!(m.len(), if cfg!(miri) { 100 } else { 40_000 });
    }
}
