//! The shared state of a Mercury table and the walks every operation starts with.
//!
//! [`Inner`] owns the current [`Table`] (and, during an expansion, its successor), the node
//! allocator and the counters. Operations are split by kind: `read.rs` (lookups, batched
//! lookups), `write.rs` (insert/upsert, remove, updates), `expand.rs` (the three expansion
//! phases), `iter.rs` (unordered iteration).
//!
//! Every operation pins an epoch guard (`orrery_core::sync`) for its whole duration; every
//! table and node reference it holds is valid while the guard lives (see the reclamation
//! argument in the crate docs).

use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use orrery_core::Error;

use crate::compact::Sparse;
use crate::config::Config;
use crate::link::{BucketWord, Link};
use crate::node::{self, Node, NodeAlloc};
use crate::prefault::{self, Prefaulter};
use crate::table::{Table, hinted_cell};
use orrery_core::hash::{hash64, tag16};
use orrery_core::prefetch;
use orrery_core::sync::{Backoff, CachePadded, Guard, StripedCounter};

/// [`Inner::counters`]: items.
pub(crate) const ITEMS: usize = 0;
/// [`Inner::counters`]: key + value bytes.
pub(crate) const KV_BYTES: usize = 1;

/// The current-table pointer and, beside it, a *hint* of where the current table's cells
/// are (base address and index mask), readable without a guard.
///
/// An operation computes its bucket's address from the hint and prefetches that line
/// *before* it pins its epoch guard: the fenced pin is a full barrier that keeps later loads
/// from starting, so without the hint the bucket's DRAM miss could only begin after the
/// barrier retired (measured reason in `docs/mercury.md`, "Prefetch before the pin"). The
/// hint is only ever used for a prefetch (a hint to the CPU that never faults and has no
/// semantic effect), so a stale or torn hint (during a termination) costs at most a useless
/// prefetch.
struct Current {
    /// The current table (the newest one whose expansion has not terminated).
    table: AtomicPtr<Table>,
    /// Address of the current table's first cell (a hint, see above).
    cells: AtomicUsize,
    /// The current table's index mask (a hint, see above).
    mask: AtomicU64,
}

/// The state shared by all handles of one Mercury table.
pub(crate) struct Inner {
    /// The current table and the prefetch hint (one cache line, read by every operation).
    current: CachePadded<Current>,
    /// Node memory; an `Arc` so that deferred frees keep it alive past `Inner`.
    pub(crate) alloc: Arc<NodeAlloc>,
    /// Striped counts: [`ITEMS`] and [`KV_BYTES`] (key + value bytes).
    pub(crate) counters: StripedCounter<2>,
    pub(crate) config: Config,
    /// The successor pre-fault thread (`prefault.rs`).
    pub(crate) prefaulter: Prefaulter,
    /// Whether removals move nodes (`compact.rs`).
    pub(crate) sparse: Sparse,
}

impl prefault::Host for Inner {
    #[inline]
    fn prefaulter(&self) -> &Prefaulter {
        &self.prefaulter
    }

    #[inline]
    fn current_table<'g>(&self, guard: &'g Guard) -> &'g Table {
        self.current(guard)
    }
}

/// A key's 64-bit hash (bucket index from the low bits) and 16-bit tag (from the high half).
#[derive(Clone, Copy)]
pub(crate) struct Hashed {
    pub(crate) hash: u64,
    pub(crate) tag: u16,
}

#[inline]
pub(crate) fn hashed(key: &[u8]) -> Hashed {
    let hash = hash64(key);
    Hashed {
        hash,
        tag: tag16((hash >> 32) as u32),
    }
}

impl Inner {
    pub(crate) fn new(config: Config) -> Result<Inner, Error> {
        let table = Table::with_cells(
            config.initial_buckets,
            config.load_percent,
            config.inline_pairs,
        )?;
        Ok(Inner {
            current: CachePadded::new(Current {
                cells: AtomicUsize::new(table.cells_addr()),
                mask: AtomicU64::new(table.len() as u64 - 1),
                table: AtomicPtr::new(Box::into_raw(table)),
            }),
            alloc: Arc::new(NodeAlloc::new()),
            counters: StripedCounter::new(),
            prefaulter: Prefaulter::new(config.prefault),
            sparse: Sparse::default(),
            config,
        })
    }

    /// The current table, valid while `guard` lives.
    #[inline]
    pub(crate) fn current<'g>(&self, _guard: &'g Guard) -> &'g Table {
        let p = self.current.table.load(Ordering::Acquire);
        // SAFETY: the current table is never null, and a table is freed only through a
        // deferred destruction issued after it stopped being current (termination in
        // `expand.rs`), which runs after every guard pinned before that point (ours
        // included) is dropped; `Drop` has exclusive access.
        unsafe { &*p }
    }

    /// Swings the current table from `old` to its successor (termination of an expansion)
    /// and returns the raw pointer of `old` (with the provenance of its `Box`), for
    /// retirement. Only the holder of `old`'s resize token calls this.
    pub(crate) fn replace_current(&self, old: &Table) -> *mut Table {
        let new = old.next_ptr();
        debug_assert!(!new.is_null());
        let prev = self.current.table.swap(new, Ordering::AcqRel);
        // The hint follows (Relaxed: it is never dereferenced).
        if let Some(next) = old.next() {
            self.current
                .cells
                .store(next.cells_addr(), Ordering::Relaxed);
            self.current
                .mask
                .store(next.len() as u64 - 1, Ordering::Relaxed);
        }
        debug_assert!(
            std::ptr::eq(prev, old),
            "only the current table's expander terminates it"
        );
        prev
    }

    /// Prefetches the current table's cell for hash `h`, computed from the hint (no guard
    /// needed: the address is only a prefetch hint, never dereferenced).
    #[inline(always)]
    pub(crate) fn prefetch_bucket(&self, h: u64) {
        let cells = self.current.cells.load(Ordering::Relaxed);
        let mask = self.current.mask.load(Ordering::Relaxed);
        prefetch(std::ptr::without_provenance::<u8>(hinted_cell(
            cells, mask, h,
        )));
    }

    /// The prefetch hint (cells address, mask), for tests.
    #[cfg(test)]
    pub(crate) fn hint(&self) -> (usize, u64) {
        (
            self.current.cells.load(Ordering::Relaxed),
            self.current.mask.load(Ordering::Relaxed),
        )
    }

    /// Hands an unlinked node to the epoch collector.
    ///
    /// # Safety
    /// `node` was unlinked from its chain by the caller (holding the bucket lock), so no
    /// thread that pins a guard after this call can reach it; it is retired once.
    pub(crate) unsafe fn retire(&self, guard: &Guard, node: NonNull<Node>) {
        let alloc = Arc::clone(&self.alloc);
        let free = move || {
            // SAFETY: runs after every guard that could have observed `node` is dropped; the
            // `Arc` keeps the allocator alive; the node is freed once (retired once).
            unsafe { alloc.free(node) }
        };
        // SAFETY: `free` only touches `node` (unreachable to guards pinned from now on) and
        // its own `Arc`; it is sound to run on any thread once the grace period ends.
        unsafe { guard.defer_unchecked(free) };
    }

    /// Hands a batch of unlinked nodes to the epoch collector as one deferred function (one
    /// allocator reference for the batch, instead of one per node).
    ///
    /// # Safety
    /// As [`Inner::retire`], for every node of `nodes`.
    pub(crate) unsafe fn retire_all(&self, guard: &Guard, nodes: Vec<NonNull<Node>>) {
        let alloc = Arc::clone(&self.alloc);
        let free = move || {
            for node in nodes {
                // SAFETY: as in `retire`, for each node of the batch (each retired once).
                unsafe { alloc.free(node) }
            }
        };
        // SAFETY: `free` only touches the batch's nodes (unreachable to guards pinned from
        // now on) and its own `Arc`; it is sound to run on any thread once the grace period
        // ends.
        unsafe { guard.defer_unchecked(free) };
    }

    /// Bytes of the current table and of its successor, if any.
    pub(crate) fn table_bytes(&self, guard: &Guard) -> usize {
        let t = self.current(guard);
        t.bytes() + t.next().map_or(0, Table::bytes)
    }
}

/// Waits for the migration of a MOVED bucket to finish (its lock to be released), so that
/// its chains in the next table are complete.
#[inline]
pub(crate) fn wait_migrated(t: &Table, idx: usize, mut w: BucketWord) {
    let backoff = Backoff::new();
    while w.is_locked() {
        backoff.snooze();
        w = t.load(idx);
    }
}

/// The successor of a table with a MOVED bucket.
#[inline]
pub(crate) fn successor(t: &Table) -> &Table {
    // A bucket is marked MOVED only by a migration into `next`, which was installed before
    // (and the Acquire load that saw MOVED is ordered after that installation).
    t.next().expect("a MOVED bucket implies a successor table")
}

/// Finds and locks, for a writer, the bucket that holds hash `h`, starting at `t`. Returns
/// the bucket word with LOCK set and MOVED clear: the caller owns that chain.
#[inline]
pub(crate) fn lock_bucket(mut t: &Table, h: u64) -> (&Table, usize, BucketWord) {
    loop {
        let idx = t.index(h);
        if let Some(next) = t.next()
            && t.is_migrated(idx, next)
        {
            t = next;
            continue;
        }
        let w = t.lock(idx);
        if w.is_moved() {
            t.store_unlock(idx, w.without_lock());
            t = successor(t);
            continue;
        }
        return (t, idx, w);
    }
}

/// Searches a chain optimistically (no lock) for `key`: compares tags first, reads a node
/// only to compare its key (tag match) or to follow its `next` word (not LAST).
///
/// # Safety
/// `head` was loaded from a bucket of a table valid under a guard that the caller holds for
/// as long as it uses the returned node.
#[inline(always)]
pub(crate) unsafe fn find(head: Link, h: Hashed, key: &[u8]) -> Option<NonNull<Node>> {
    let mut link = head;
    while let Some(n) = link.node() {
        // SAFETY: `n` was reachable when its link was loaded, and stays allocated while the
        // caller's guard lives (nodes are freed only after a grace period).
        if link.tag() == h.tag && unsafe { node::key_eq(n, key) } {
            return Some(n);
        }
        if link.is_last() {
            return None;
        }
        // SAFETY: as above. Acquire: the next node's contents are visible.
        link = Link::from_word(unsafe { node::header(n) }.next.load(Ordering::Acquire));
    }
    None
}

/// Where a node found under the bucket lock sits in its chain.
pub(crate) struct Pos {
    /// The node.
    pub(crate) node: NonNull<Node>,
    /// The link pointing at it.
    pub(crate) link: Link,
    /// Its predecessor, if it is not the head.
    pub(crate) prev: Option<Prev>,
}

/// A node's predecessor in its chain.
pub(crate) struct Prev {
    /// The predecessor node (its `next` word holds the link to the found node).
    pub(crate) node: NonNull<Node>,
    /// The link pointing at the predecessor.
    pub(crate) link: Link,
    /// The node whose `next` word holds `link`, or `None` if the bucket word does.
    pub(crate) holder: Option<NonNull<Node>>,
}

/// Searches a chain whose bucket lock the caller holds, remembering the predecessors.
///
/// Under the lock the chain is stable and every LAST flag is exact (writers maintain it).
///
/// # Safety
/// The caller holds the lock of the bucket whose word held `head`, and a guard.
#[inline]
pub(crate) unsafe fn find_locked(head: Link, h: Hashed, key: &[u8]) -> Option<Pos> {
    let mut link = head;
    let mut prev: Option<Prev> = None;
    while let Some(n) = link.node() {
        // SAFETY: `n` is in the locked chain, so it is live.
        if link.tag() == h.tag && unsafe { node::key_eq(n, key) } {
            return Some(Pos {
                node: n,
                link,
                prev,
            });
        }
        if link.is_last() {
            return None;
        }
        // SAFETY: as above. Relaxed suffices: the previous holders' writes were published
        // by their unlocking Release store, which our locking Acquire observed.
        let next = Link::from_word(unsafe { node::header(n) }.next.load(Ordering::Relaxed));
        prev = Some(Prev {
            node: n,
            link,
            holder: prev.map(|p| p.node),
        });
        link = next;
    }
    None
}

impl Drop for Inner {
    fn drop(&mut self) {
        let t = self.current.table.load(Ordering::Acquire);
        // `drop` has exclusive access: no operation on this table can be running (they
        // borrow the handle, and a dedicated expander holds an `Arc` of `Inner`), so the
        // current table and its successor are ours. Each node is in exactly one chain and is
        // freed once; tables and nodes retired earlier belong to the epoch collector.
        // SAFETY: the current table is live (see above).
        let current = unsafe { &*t };
        let next = current.next_ptr();
        // SAFETY: exclusive access to the current table and its nodes.
        unsafe { free_chains(&self.alloc, current) };
        // SAFETY: a non-null successor is live (it is freed only below or at termination).
        if let Some(successor) = unsafe { next.as_ref() } {
            // SAFETY: exclusive access to the successor and its nodes.
            unsafe { free_chains(&self.alloc, successor) };
            // SAFETY: the successor came from `Box::into_raw` (`Table::set_next`), freed once.
            drop(unsafe { Box::from_raw(next) });
        }
        // SAFETY: the current table came from `Box::into_raw`, freed once.
        drop(unsafe { Box::from_raw(t) });
    }
}

/// Frees every node of every chain of `t`.
///
/// # Safety
/// Exclusive access to `t` and its nodes.
unsafe fn free_chains(alloc: &NodeAlloc, t: &Table) {
    for idx in 0..t.len() {
        let mut link = t.load(idx).head();
        while let Some(n) = link.node() {
            // SAFETY: exclusive access; the node is live until freed just below.
            link = Link::from_word(unsafe { node::header(n) }.next.load(Ordering::Relaxed));
            // SAFETY: unreachable by anyone else (exclusive access), freed once.
            unsafe { alloc.free(n) };
        }
    }
}
