//! Moving nodes into lower chunks, so that the node pool gives pages back after mass
//! removals (beyond the paper; issue 38, "Memory comes back").
//!
//! It extends two parts of the paper (`shared/papers/mercury.md`), §3: the "Memory
//! Allocator" (per-thread pools fed in 2 MB chunks, which reuse freed pairs but never give
//! memory back; the paper leaves "more sophisticated memory allocator designs" to future
//! work), and the chain updates made under the lock in the bucket ("Locks"), of which a move
//! is one more: a node replaced by an identical copy.
//!
//! Nodes come from slab pools of 2 MiB chunks (`orrery_core::alloc::SizeClassPool`), which
//! give back empty chunks and whole free pages, but not a page that one live node pins.
//! After a fill and the removal of most keys, the survivors are spread over every chunk the
//! fill used (and a shrink's merges allocate their demoted inline pairs from whatever slots
//! were freed last), so the pages stay. Moving a survivor into a hole of a lower chunk lets
//! the higher chunks drain. The mechanism is the one the Wormhole uses for its leaves
//! (`orrery_core::alloc::SlabPool::try_alloc_lower`): the pool grants a block in the lowest
//! chunk with room, below the node's own, when the node's chunk is under a quarter in use or
//! more than an eighth of the class's chunks are free slots; otherwise nothing moves.
//!
//! # Who moves nodes
//!
//! - **Merges** (`shrink.rs`): a shrink visits every node of the two old buckets it merges,
//!   under both locks; a node granted a lower block is copied there and the copy is linked
//!   into the merged chain instead of the node. The node a merge makes for the second inline
//!   pair is allocated low too (`NodeAlloc::alloc_low`): allocated as usual it takes the
//!   slot its thread freed last, anywhere in the pool (after removing 90% of 4M keys, these
//!   were half of the surviving nodes, and kept all 22 chunks resident). A shrink happens
//!   only after the item count fell to 2/5 of the growth threshold, so the pool is sparse
//!   then, and the last shrink of a mass removal compacts every survivor.
//! - **Removals** (here): while the node pool is *sparse* (over a quarter of its chunk bytes,
//!   and at least [`SPARSE_MIN_SLACK`], hold no live node: refreshed every
//!   [`REFRESH_EVERY`] removals of a thread, the one check that takes the class pools'
//!   locks), every [`MOVE_EVERY`]th removal of a thread moves up to [`MOVE_MAX`] nodes of the
//!   chain it removed from (the first ones), before releasing the bucket lock. A table at its minimum size
//!   (which never shrinks) thus compacts too.
//!
//! # Protocol (a node replaced by its copy)
//!
//! Under the bucket's lock (the only writer of the chain and of its nodes' values):
//!
//! 1. the copy is written completely: the node's key, its value (stable: only lock holders
//!    write values), its size class, a fresh version, and as `next` the node's `next` link
//!    (tag and LAST flag included);
//! 2. one Release store of the predecessor's link (the predecessor node's `next` word, or the
//!    bucket word at the unlocking store for the head) makes the copy take the node's place,
//!    with the same tag and LAST flag;
//! 3. the node itself is never written again, and is retired through the epoch collector
//!    after the bucket word's unlocking store (so no reader pinned after that can reach it).
//!
//! In a merge, step 2 is the merge's own linking of the copy into the new chain, and the node
//! is left in the old chain untouched, exactly as a node whose pair the merge promoted into
//! an inline area.
//!
//! This is the *replace* of an update that does not fit in place (`write.rs`), with the same
//! value: fact (a) of the crate docs' linearizability argument ("a chain only changes by ...
//! one store that ... swaps it for a copy in place") covers it. A reader that loaded the link
//! before the store walks the node, whose key and value are those of the copy and whose
//! `next` still leads to the rest of the chain (a bypassed node's `next` is frozen, fact (b)),
//! so it misses no key; one that loads it after walks the copy, whose contents the Release
//! store published. A reader never sees a torn pair: the node's pair is not changed by the
//! move and the copy's is complete before it is reachable. Moving several nodes of one chain
//! under one lock is a sequence of such replaces, each leaving a valid chain.
//!
//! # Bounds
//!
//! Every move takes a node to a lower address of its class's pool, so moves cannot cycle:
//! between other allocations each node moves at most once per chunk below it. A removal moves
//! at most [`MOVE_MAX`] nodes (it asks the class pool, under the pool's lock, about the first
//! [`MOVE_MAX`] nodes of its chain), only every [`MOVE_EVERY`]th removal of a thread tries,
//! and only while the pool is sparse; a pool that moves compacted is dense again, which turns the removals' moves off. A
//! steady churn at one size keeps the pool dense (freed slots are reused), so it pays one
//! relaxed load per removal and a thread-local count.

use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

use orrery_core::alloc::CHUNK_SIZE;

use crate::link::Link;
use crate::node::{self, Node, NodeAlloc};

/// A thread refreshes the sparse flag every `REFRESH_EVERY` of its removals.
pub(crate) const REFRESH_EVERY: u32 = 1024;

/// While the pool is sparse, every `MOVE_EVERY`th removal of a thread moves nodes.
pub(crate) const MOVE_EVERY: u32 = 4;

/// Nodes a removal asks the pool about (and so moves) at most: the first ones of its chain.
pub(crate) const MOVE_MAX: usize = 4;

/// The pool is sparse only when at least this many chunk bytes hold no live node (so that a
/// small table, whose one partly used chunk and kept empty chunk are mostly slack, never
/// pays for asking).
pub(crate) const SPARSE_MIN_SLACK: usize = 4 * CHUNK_SIZE;

thread_local! {
    /// This thread's removals, for [`REFRESH_EVERY`] and [`MOVE_EVERY`].
    static REMOVALS: Cell<u32> = const { Cell::new(0) };
}

/// Whether moving nodes may give memory back: refreshed by removals.
#[derive(Default)]
pub(crate) struct Sparse {
    flag: AtomicBool,
}

impl Sparse {
    /// Called by a removal holding its bucket lock: whether it should move nodes of its
    /// chain ([`compact_chain`]). Refreshes the flag every [`REFRESH_EVERY`] removals of the
    /// thread.
    #[inline]
    pub(crate) fn should_move(&self, alloc: &NodeAlloc) -> bool {
        let n = REMOVALS
            .try_with(|r| {
                let n = r.get().wrapping_add(1);
                r.set(n);
                n
            })
            .unwrap_or(1);
        if n.is_multiple_of(REFRESH_EVERY) {
            self.refresh(alloc);
        }
        n.is_multiple_of(MOVE_EVERY) && self.flag.load(Ordering::Relaxed)
    }

    #[cold]
    fn refresh(&self, alloc: &NodeAlloc) {
        let slack = alloc.slack_bytes();
        let sparse = slack >= SPARSE_MIN_SLACK && slack * 4 > alloc.bytes();
        if self.flag.load(Ordering::Relaxed) != sparse {
            self.flag.store(sparse, Ordering::Relaxed);
        }
    }
}

/// Moves the first [`MOVE_MAX`] nodes of the chain starting at `head` into lower chunks
/// where the pool grants a block (see the module docs), pushing each node replaced onto `moved` for the caller to retire after its
/// unlocking store. Returns the chain's new head, which the caller stores in the bucket
/// word (at its unlocking store).
///
/// # Safety
/// The caller holds the lock of the bucket whose chain starts at `head` (and a guard).
pub(crate) unsafe fn compact_chain(
    alloc: &NodeAlloc,
    mut head: Link,
    moved: &mut Vec<NonNull<Node>>,
) -> Link {
    // The node whose `next` word holds `link`, or `None` for the head.
    let mut holder: Option<NonNull<Node>> = None;
    let mut link = head;
    let mut budget = MOVE_MAX;
    while let Some(x) = link.node() {
        // SAFETY: `x` is in the locked chain (caller), so it is live and only we write its
        // `next` word.
        let after = Link::from_word(unsafe { node::header(x) }.next.load(Ordering::Relaxed));
        // SAFETY: as above: live, and its value is stable under the lock.
        match unsafe { alloc.copy_lower(x, after) } {
            Some(copy) => {
                let new = Link::new(copy, link.tag(), link.is_last());
                match holder {
                    None => head = new,
                    // SAFETY: `h` is in the locked chain (or is an unpublished copy).
                    Some(h) => unsafe { node::header(h) }
                        .next
                        .store(new.word(), Ordering::Release),
                }
                moved.push(x);
                holder = Some(copy);
            }
            None => holder = Some(x),
        }
        budget -= 1;
        if budget == 0 || link.is_last() {
            break;
        }
        link = after;
    }
    head
}
