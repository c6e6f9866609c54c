//! Link words: the 64-bit words that point at key-value nodes.
//!
//! Two kinds of word hold a link: a **bucket word** (one per hash-table bucket, Fig 2(b) of
//! the paper) and a node's **`next` word**. Both use one format, so that a chain can be
//! re-pointed from a bucket to a node and back without re-encoding:
//!
//! ```text
//!  63            48 47                                     3   2      1       0
//! +----------------+----------------------------------------+------+-------+------+
//! |  tag16 of the  |  address of the node, bits 3..47       | LAST | MOVED | LOCK |
//! |  pointed node  |  (nodes are 8-byte aligned, < 2^48)    |      |       |      |
//! +----------------+----------------------------------------+------+-------+------+
//! ```
//!
//! - **address**: the pointed node, or 0 for "no node" (an empty bucket / the end of a chain).
//! - **tag16** (bits 48..63): a 16-bit tag of the pointed node's key hash. A reader compares
//!   it before touching the node, so a node whose key cannot match is only read to follow its
//!   `next` word.
//! - **LAST** (bit 2): the pointed node is the last of its chain (its `next` word is 0). With
//!   the tag, a lookup that misses stops *without reading the last node at all*: a negative
//!   lookup, or the absence check of an insert, costs one node read fewer than a plain chain
//!   (an insert into a bucket whose one node has another tag costs only the bucket's miss).
//! - **LOCK** (bit 0, bucket words only): the bucket's test-and-set lock. Its holder owns the
//!   bucket's chain and may store the whole word.
//! - **MOVED** (bit 1, bucket words only): the paper's *has-moved* bit. Set once by the
//!   expansion that migrates this bucket (see `expand.rs`); never cleared on that table.
//!
//! So reaching a bucket, its lock, its moved flag and the first key's tag costs one cache
//! miss (Fig 2). Node `next` words always have LOCK and MOVED clear.
//!
//! The address is stored as an exposed-provenance integer (`expose_provenance` /
//! `with_exposed_provenance_mut`): bucket words are `AtomicU64` so that the shared
//! `BitLock` helpers can lock one bit of them. Addresses at or above 2^48 cannot be stored;
//! [`Link::fits`] lets the allocator reject them (x86-64 and AArch64 Linux never hand such
//! addresses to a process that did not ask for them).
//!
//! This module is the format only: it sits below `node.rs` (whose `next` words are links)
//! and never names the node type; `node.rs` adds the typed `Link::node` accessor.

use std::ptr::NonNull;

/// Bit of a bucket word: the bucket's test-and-set lock.
pub(crate) const LOCK_BIT: u32 = 0;
/// Mask of [`LOCK_BIT`].
pub(crate) const LOCK: u64 = 1 << LOCK_BIT;
/// Bit of a bucket word: the has-moved bit (the bucket's chain was migrated to the next table).
pub(crate) const MOVED: u64 = 1 << 1;
/// The pointed node is the last of its chain.
const LAST: u64 = 1 << 2;
/// The address bits.
const ADDR_MASK: u64 = 0x0000_FFFF_FFFF_FFF8;
/// Where the tag starts.
const TAG_SHIFT: u32 = 48;

/// A link to a node (or to nothing), with the node's tag and whether it ends its chain.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Link(u64);

impl Link {
    /// No node: an empty bucket, the end of a chain.
    #[cfg(test)]
    pub(crate) const NULL: Link = Link(0);

    /// Whether `node`'s address can be stored in a link.
    #[inline]
    pub(crate) fn fits<T>(node: NonNull<T>) -> bool {
        let addr = node.as_ptr().addr() as u64;
        addr & !ADDR_MASK == 0
    }

    /// A link to `node`, whose key has tag `tag`; `last` says whether `node` ends its chain.
    ///
    /// `node` must satisfy [`Link::fits`] (checked when the node is allocated).
    #[inline]
    pub(crate) fn new<T>(node: NonNull<T>, tag: u16, last: bool) -> Link {
        let addr = node.as_ptr().expose_provenance() as u64;
        debug_assert_eq!(addr & !ADDR_MASK, 0, "node address does not fit a link");
        Link(addr | (u64::from(tag) << TAG_SHIFT) | if last { LAST } else { 0 })
    }

    /// Decodes a link from a word (bucket flags, if any, are dropped).
    #[inline]
    pub(crate) const fn from_word(word: u64) -> Link {
        Link(word & !(LOCK | MOVED))
    }

    /// The raw word (LOCK and MOVED clear).
    #[inline]
    pub(crate) const fn word(self) -> u64 {
        self.0
    }

    /// The pointed node's address (0 at the end of a chain). The typed pointer is
    /// `Link::node` (`node.rs`, which owns the node type).
    #[inline]
    pub(crate) const fn addr(self) -> usize {
        (self.0 & ADDR_MASK) as usize
    }

    /// Whether this link points at no node.
    #[inline]
    pub(crate) const fn is_null(self) -> bool {
        self.0 & ADDR_MASK == 0
    }

    /// The pointed node's tag (meaningless when null).
    #[inline]
    pub(crate) const fn tag(self) -> u16 {
        (self.0 >> TAG_SHIFT) as u16
    }

    /// Whether the pointed node ends its chain (false when null).
    #[inline]
    pub(crate) const fn is_last(self) -> bool {
        self.0 & LAST != 0
    }

    /// The same link with the LAST flag set to `last`.
    #[inline]
    pub(crate) const fn with_last(self, last: bool) -> Link {
        Link(if last { self.0 | LAST } else { self.0 & !LAST })
    }
}

/// The value of a bucket word: a [`Link`] to the chain's head plus the LOCK and MOVED bits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct BucketWord(u64);

impl BucketWord {
    /// An unlocked, unmoved bucket whose chain starts at `head`.
    #[inline]
    pub(crate) const fn unlocked(head: Link) -> BucketWord {
        BucketWord(head.word())
    }

    /// A locked, unmoved bucket whose chain starts at `head` (stored by the lock holder).
    #[inline]
    pub(crate) const fn locked(head: Link) -> BucketWord {
        BucketWord(head.word() | LOCK)
    }

    /// The word of a migrated bucket once its migration finished: MOVED, unlocked, empty.
    pub(crate) const MOVED_EMPTY: BucketWord = BucketWord(MOVED);

    /// Wraps a loaded word.
    #[inline]
    pub(crate) const fn from_word(word: u64) -> BucketWord {
        BucketWord(word)
    }

    /// The raw word.
    #[inline]
    pub(crate) const fn word(self) -> u64 {
        self.0
    }

    /// The chain head.
    #[inline]
    pub(crate) const fn head(self) -> Link {
        Link::from_word(self.0)
    }

    /// Whether the bucket lock is held.
    #[inline]
    pub(crate) const fn is_locked(self) -> bool {
        self.0 & LOCK != 0
    }

    /// Whether the bucket's chain was (or is being) migrated to the next table.
    #[inline]
    pub(crate) const fn is_moved(self) -> bool {
        self.0 & MOVED != 0
    }

    /// The same word with the MOVED bit set.
    #[inline]
    pub(crate) const fn with_moved(self) -> BucketWord {
        BucketWord(self.0 | MOVED)
    }

    /// The same word with the LOCK bit clear.
    #[inline]
    pub(crate) const fn without_lock(self) -> BucketWord {
        BucketWord(self.0 & !LOCK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Node;

    #[test]
    fn link_round_trip() {
        let mut slot = 0u64;
        let p = NonNull::from(&mut slot).cast::<Node>();
        assert!(Link::fits(p));
        for (tag, last) in [(0u16, false), (0xFFFF, true), (0x1234, false)] {
            let l = Link::new(p, tag, last);
            assert_eq!(l.node(), Some(p));
            assert_eq!(l.tag(), tag);
            assert_eq!(l.is_last(), last);
            assert!(!l.is_null());
            assert_eq!(l.with_last(!last).is_last(), !last);
            assert_eq!(l.with_last(!last).node(), Some(p));
        }
        assert!(Link::NULL.is_null());
        assert_eq!(Link::NULL.node(), None);
        assert!(!Link::NULL.is_last());
    }

    #[test]
    fn bucket_word_flags() {
        let mut slot = 0u64;
        let p = NonNull::from(&mut slot).cast::<Node>();
        let l = Link::new(p, 7, true);
        let w = BucketWord::unlocked(l);
        assert!(!w.is_locked() && !w.is_moved());
        let locked = BucketWord::from_word(w.word() | LOCK);
        assert!(locked.is_locked());
        assert_eq!(locked.head(), l);
        let moved = locked.with_moved();
        assert!(moved.is_moved() && moved.is_locked());
        assert_eq!(moved.head(), l);
        assert!(!moved.without_lock().is_locked());
        assert!(BucketWord::MOVED_EMPTY.is_moved());
        assert!(BucketWord::MOVED_EMPTY.head().is_null());
    }
}
