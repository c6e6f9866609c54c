//! Key-value nodes: byte layout, size classes, allocation, and the in-place value update.
//!
//! A node is the paper's key-value structure (Fig 2(b)): the key, the value and the link to
//! the next node of the chain, kept in one small block so that reaching a key-value pair
//! after its bucket costs one more DRAM access. Keys and values are inline (no pointer to
//! chase). Byte layout (all offsets in bytes; the block is 8-byte aligned):
//!
//! ```text
//! 0        8        16                    16+K8                 size
//! +--------+--------+---------------------+---------------------+
//! | next   | meta   | key (klen bytes,    | value               |
//! | link   | word   | padded to K8 =      |                     |
//! | word   |        | round8(klen))       |                     |
//! +--------+--------+---------------------+---------------------+
//! ```
//!
//! - `next` (`AtomicU64`): the [`Link`] to the next node of the chain (0 at the end), with the
//!   next node's tag and LAST flag (see `link.rs`).
//! - `meta` (`AtomicU64`), see [`Meta`]: key length, size class, whether the value is *long*,
//!   the value length and, for short values, a 32-bit version (seqlock).
//! - key bytes: immutable while the node is reachable.
//! - value, two representations:
//!   - **short** (`vlen <= SHORT_VALUE_MAX` = 64): the value occupies `ceil(vlen/8)`
//!     `AtomicU64` words at offset `16 + round8(klen)` (bytes little-endian within each word).
//!     The words up to the end of the node's size class are the value's *capacity*. A writer
//!     holding the bucket lock overwrites a short value in place (any length up to the
//!     capacity) under the version in `meta`: readers copy the words out and validate the
//!     version (a seqlock whose data are atomics, so there is no data race to reason about).
//!     Updating the value of an existing key therefore needs no allocation and no
//!     reclamation: the common case of the paper's workloads (78% of values < 8 B, YCSB
//!     10 B values).
//!   - **long** (`vlen > 64`): plain bytes at offset `16 + klen`, immutable for the node's
//!     life; an update replaces the node (copy-on-write) and retires the old one. Readers get
//!     a zero-copy slice.
//!
//! An 8-byte key with an 8-byte value is a 32-byte node (half a cache line); a 24-byte key
//! with a 10-byte value is a 56-byte node, in the 56-byte class.
//!
//! # Size classes and allocation
//!
//! Node sizes are rounded up to a size class: every multiple of 8 from 24 to 64 bytes, then
//! 80, 96, 128 and steps of half a power of two (192, 256, 384, …, 4096). Small nodes are
//! the common case of a cache (a key and a value of a few words), and a power-of-two class
//! would add up to 24 bytes per pair to them: the 8-byte steps keep a small node's slack
//! under 8 bytes (a memcached item of a 24-byte key and a 10-byte value, header included,
//! is 56 bytes, not 64). The price is that a 40-, 48- or 56-byte node at an address that is
//! not a multiple of 64 can straddle two cache lines (a slot is aligned to the largest
//! power of two dividing its size), so a read of such a pair may touch a second, usually
//! adjacent-line-prefetched, line; 32- and 64-byte nodes never straddle. Measured:
//! `docs/results/mercury.md`, "Against memcached". The classes are an `orrery_core`
//! [`SizeClassPool`]: a slab pool per class
//! (per-thread caches refilled from 2 MiB huge-page chunks, freed nodes reused: §3 "Memory
//! Allocator"), and the global allocator for nodes above 4096 bytes (long keys or values);
//! the class in `meta` says which.
//!
//! Nodes are freed only when unreachable by any reader: removal and replacement hand the node
//! to the epoch collector (`orrery_core::sync`), and the pools are kept alive by an `Arc`
//! captured by the deferred free (see `raw.rs`).

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use orrery_core::sync::VersionField;

use orrery_core::Error;

use crate::link::Link;
use orrery_core::alloc::SizeClassPool;

impl Link {
    /// The pointed node, or `None` at the end of a chain (the address was exposed by
    /// [`Link::new`]).
    #[inline]
    pub(crate) fn node(self) -> Option<NonNull<Node>> {
        NonNull::new(std::ptr::with_exposed_provenance_mut::<Node>(self.addr()))
    }
}

/// Bytes before the key: the `next` and `meta` words.
pub(crate) const HEADER: usize = 16;

/// Longest value stored as updatable atomic words; longer values are immutable bytes.
pub(crate) const SHORT_VALUE_MAX: usize = 64;

/// Node size classes served by slab pools; larger nodes use the global allocator.
pub(crate) const CLASSES: [usize; 19] = [
    24, 32, 40, 48, 56, 64, 80, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096,
];

/// The class number of nodes from the global allocator.
const LARGE_CLASS: u64 = 31;

const _: () = assert!((CLASSES.len() as u64) < LARGE_CLASS);

/// A node's header; the key and value follow it in the same block (see the module docs).
///
/// Always handled through `NonNull<Node>` derived from the block's allocation, never through
/// a `&Node` widened to the payload, so that the payload keeps the allocation's provenance.
#[repr(C, align(8))]
pub(crate) struct Node {
    /// Link to the next node of the chain.
    pub(crate) next: AtomicU64,
    /// The [`Meta`] word.
    meta: AtomicU64,
}

const _: () = assert!(size_of::<Node>() == HEADER);
const _: () = assert!(align_of::<Node>() == 8);

/// The `meta` word of a node.
///
/// ```text
/// bits  0..17  klen            (<= 64 KiB = MAX_KEY_LEN, needs 17 bits)
/// bits 17..22  size class      (index into CLASSES, or 31 = global allocator)
/// bit  22      LONG            (value stored as immutable bytes)
/// LONG:  bits 23..44 vlen      (<= 1 MiB = MAX_VALUE_LEN, needs 21 bits); bits 44..64 zero
/// short: bits 23..30 vlen      (<= 64);  bits 32..64 version (odd: a write is in progress)
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Meta(u64);

const KLEN_MASK: u64 = (1 << 17) - 1;
const CLASS_SHIFT: u32 = 17;
const CLASS_MASK: u64 = 0x1F;
const LONG: u64 = 1 << 22;
const VLEN_SHIFT: u32 = 23;
const LONG_VLEN_MASK: u64 = (1 << 21) - 1;
const SHORT_VLEN_MASK: u64 = (1 << 7) - 1;
/// The version of a short value: an odd/even seqlock in bits 32..64 (bit 32 set while a
/// write is in progress), through the shared `orrery_core` implementation.
const VERSION: VersionField = VersionField::new(64, 32, 33, 31);

const _: () = assert!(orrery_core::api::MAX_KEY_LEN as u64 <= KLEN_MASK);
const _: () = assert!(orrery_core::api::MAX_VALUE_LEN as u64 <= LONG_VLEN_MASK);
const _: () = assert!(SHORT_VALUE_MAX as u64 <= SHORT_VLEN_MASK);

impl Meta {
    fn new(klen: usize, class: u64, long: bool, vlen: usize) -> Meta {
        let mut m = klen as u64 | (class << CLASS_SHIFT) | ((vlen as u64) << VLEN_SHIFT);
        if long {
            m |= LONG;
        }
        Meta(m)
    }

    /// Key length in bytes.
    #[inline]
    pub(crate) const fn klen(self) -> usize {
        (self.0 & KLEN_MASK) as usize
    }

    #[inline]
    const fn class(self) -> u64 {
        (self.0 >> CLASS_SHIFT) & CLASS_MASK
    }

    /// Whether the value is long (immutable bytes).
    #[inline]
    pub(crate) const fn is_long(self) -> bool {
        self.0 & LONG != 0
    }

    /// Value length in bytes.
    #[inline]
    pub(crate) const fn vlen(self) -> usize {
        let mask = if self.is_long() {
            LONG_VLEN_MASK
        } else {
            SHORT_VLEN_MASK
        };
        ((self.0 >> VLEN_SHIFT) & mask) as usize
    }

    /// Whether an in-place value write is in progress (odd version).
    #[inline]
    const fn is_writing(self) -> bool {
        VERSION.is_locked(self.0)
    }

    /// `self` with the short value length set to `vlen` (the version is kept).
    #[inline]
    const fn with_short_vlen(self, vlen: usize) -> Meta {
        Meta((self.0 & !(SHORT_VLEN_MASK << VLEN_SHIFT)) | ((vlen as u64) << VLEN_SHIFT))
    }
}

/// Address of byte `off` of a node's block (same provenance as `node`; no dereference).
#[inline]
fn byte_at(node: NonNull<Node>, off: usize) -> *mut u8 {
    node.as_ptr().cast::<u8>().wrapping_add(off)
}

#[inline]
const fn round8(n: usize) -> usize {
    (n + 7) & !7
}

/// Offset of the value in a node with key length `klen`.
#[inline]
const fn value_offset(klen: usize, long: bool) -> usize {
    if long {
        HEADER + klen
    } else {
        HEADER + round8(klen)
    }
}

/// Bytes a node needs for a key of `klen` and a value of `vlen` bytes.
#[inline]
const fn needed_size(klen: usize, vlen: usize) -> usize {
    if vlen > SHORT_VALUE_MAX {
        HEADER + klen + vlen
    } else {
        HEADER + round8(klen) + round8(vlen)
    }
}

/// Bytes actually allocated for a node with meta `m`.
#[inline]
fn block_size(m: Meta) -> usize {
    if m.class() == LARGE_CLASS {
        large_size(m.klen(), m.is_long(), m.vlen())
    } else {
        CLASSES[m.class() as usize]
    }
}

/// Bytes of a node from the global allocator. A short-valued one is given the full short
/// capacity so that its size does not depend on the (mutable) value length.
#[inline]
const fn large_size(klen: usize, long: bool, vlen: usize) -> usize {
    if long {
        HEADER + klen + vlen
    } else {
        HEADER + round8(klen) + SHORT_VALUE_MAX
    }
}

/// Where a node's bytes come from: an `orrery_core` [`SizeClassPool`] with the classes of
/// [`CLASSES`] (a slab pool each), and the global allocator above them.
pub(crate) struct NodeAlloc {
    pool: SizeClassPool,
    /// Nodes copied to a lower chunk ([`NodeAlloc::copy_lower`]).
    moved: AtomicUsize,
}

impl NodeAlloc {
    /// An allocator with an empty pool per size class.
    pub(crate) fn new() -> NodeAlloc {
        // Slots are aligned to their size up to a cache line (the pool's rule), so that a
        // node of up to 64 bytes never straddles two lines.
        let pool = SizeClassPool::new(&CLASSES, 8)
            .unwrap_or_else(|e| unreachable!("the node classes are valid: {e}"));
        NodeAlloc {
            pool,
            moved: AtomicUsize::new(0),
        }
    }

    /// Bytes held: pool chunks (live, free and not yet carved) plus large nodes.
    pub(crate) fn bytes(&self) -> usize {
        self.pool.bytes()
    }

    /// Allocates a node holding `key` and `value` whose `next` word is `next`. The node is
    /// not yet reachable; publishing it (a Release store of a link to it) makes its contents
    /// visible to readers that Acquire-load that link.
    ///
    /// Fails with [`Error::OutOfMemory`] when memory (or a link-encodable address) is not
    /// available. The caller has checked the key and value against the API limits.
    pub(crate) fn alloc(
        &self,
        key: &[u8],
        value: &[u8],
        next: Link,
    ) -> Result<NonNull<Node>, Error> {
        let long = value.len() > SHORT_VALUE_MAX;
        let size = needed_size(key.len(), value.len());
        let (size, class) = match self.pool.class_of(size) {
            Some(c) => (self.pool.class_size(c), c as u64),
            None => (large_size(key.len(), long, value.len()), LARGE_CLASS),
        };
        let block = self.pool.try_alloc(size)?;
        let meta = Meta::new(key.len(), class, long, value.len());
        let node = block.cast::<Node>();
        if !Link::fits(node) {
            // SAFETY: `block` was just allocated by this allocator for a node with `meta`
            // and was never published.
            unsafe { self.free_block(block, meta) };
            return Err(Error::OutOfMemory);
        }
        // SAFETY: `block` is a fresh allocation of at least `needed_size` bytes, 8-aligned,
        // owned by this thread until published.
        unsafe { init(node, meta, key, value, next) };
        Ok(node)
    }

    /// A copy of `node` in a lower chunk of its class's pool, with `next` as its `next`
    /// word, when that lets memory go back: `SizeClassPool::try_alloc_lower` grants a block
    /// of the node's class in the lowest chunk with room, below `node`'s, when `node`'s chunk
    /// is under a quarter in use or over an eighth of the class's chunks are free slots.
    /// `None` otherwise (and always for nodes from the global allocator). The copy has the
    /// node's key, value and size class, a fresh version, and is not yet reachable: the
    /// caller publishes it in the node's place and retires the node (see `compact.rs`).
    ///
    /// # Safety
    /// `node` is live and its value stable: the caller holds the lock of the bucket whose
    /// chain holds it (only lock holders write a value).
    pub(crate) unsafe fn copy_lower(
        &self,
        node: NonNull<Node>,
        next: Link,
    ) -> Option<NonNull<Node>> {
        // SAFETY: live (caller).
        let m = unsafe { node_meta(node, Ordering::Relaxed) };
        if m.class() == LARGE_CLASS {
            return None;
        }
        let size = CLASSES[m.class() as usize];
        let block = self.pool.try_alloc_lower(node.cast(), size)?;
        let meta = Meta::new(m.klen(), m.class(), m.is_long(), m.vlen());
        let copy = block.cast::<Node>();
        if !Link::fits(copy) {
            // SAFETY: allocated just above for a node of class `meta.class()`, never
            // published.
            unsafe { self.free_block(block, meta) };
            return None;
        }
        // SAFETY: live (caller); the key is immutable.
        let key = unsafe { key(node, m) };
        // `copy` is a fresh block of the node's class, so it holds `needed_size(klen, vlen)`
        // bytes, and is ours until published.
        let write = |v: &[u8]| {
            // SAFETY: see above: a fresh block of the node's class, unpublished.
            unsafe { init(copy, meta, key, v, next) }
        };
        // SAFETY: `node` is live and its value stable (caller).
        unsafe { with_value(node, write) };
        self.moved.fetch_add(1, Ordering::Relaxed);
        Some(copy)
    }

    /// [`alloc`](NodeAlloc::alloc), then moved to a lower chunk when the pool grants one
    /// ([`copy_lower`](NodeAlloc::copy_lower)): for a node allocated while the pool is being
    /// compacted (a merge's demoted inline pair), which would otherwise take the slot freed
    /// last, anywhere in the pool, and pin its page.
    pub(crate) fn alloc_low(
        &self,
        key: &[u8],
        value: &[u8],
        next: Link,
    ) -> Result<NonNull<Node>, Error> {
        let n = self.alloc(key, value, next)?;
        // SAFETY: `n` is fresh and unpublished: ours alone, which stands for the lock.
        match unsafe { self.copy_lower(n, next) } {
            Some(copy) => {
                // SAFETY: allocated just above, never published, freed once.
                unsafe { self.free(n) };
                Ok(copy)
            }
            None => Ok(n),
        }
    }

    /// Nodes copied by [`copy_lower`](NodeAlloc::copy_lower) so far.
    pub(crate) fn moved(&self) -> usize {
        self.moved.load(Ordering::Relaxed)
    }

    /// Bytes of pool chunks (kept empty chunks included) not holding a live node: what
    /// moving nodes could give back. Takes each class pool's lock: call it rarely.
    pub(crate) fn slack_bytes(&self) -> usize {
        self.pool.slack_bytes()
    }

    /// Frees a node.
    ///
    /// # Safety
    /// - `node` was allocated by this allocator and is freed once.
    /// - No thread can reach it any more: it was unlinked and every guard that could have
    ///   observed it has been dropped (the epoch collector runs this), or the table is being
    ///   dropped with exclusive access.
    pub(crate) unsafe fn free(&self, node: NonNull<Node>) {
        // SAFETY: the node is still allocated (caller) and nobody writes its meta now.
        let meta = unsafe { node_meta(node, Ordering::Relaxed) };
        // SAFETY: forwarded from the caller; `meta` is the node's own.
        unsafe { self.free_block(node.cast(), meta) };
    }

    /// # Safety
    /// `block` was allocated by this allocator for a node with meta `meta` (same class and,
    /// for a large node, same size), is unreachable, and is freed once.
    unsafe fn free_block(&self, block: NonNull<u8>, meta: Meta) {
        // SAFETY: allocated from the pool with `block_size(meta)` bytes (the class size, or
        // the large size recomputed from the immutable key length, long flag and, for long
        // values, value length); unreachable and freed once (contract).
        unsafe { self.pool.free(block, block_size(meta)) };
    }
}

/// Writes a node's header, key and value into a fresh block.
///
/// # Safety
/// `node` is a fresh, unshared, 8-aligned block of at least `needed_size(klen, vlen)` bytes
/// (and of `block_size(meta)` bytes for the value capacity).
unsafe fn init(node: NonNull<Node>, meta: Meta, key: &[u8], value: &[u8], next: Link) {
    // SAFETY: the block is large enough for the header and exclusively ours.
    unsafe {
        node.as_ptr().write(Node {
            next: AtomicU64::new(next.word()),
            meta: AtomicU64::new(meta.0),
        })
    };
    // SAFETY: key bytes fit at HEADER (block >= HEADER + klen); `key` cannot overlap a fresh
    // block.
    unsafe { std::ptr::copy_nonoverlapping(key.as_ptr(), byte_at(node, HEADER), key.len()) };
    let voff = value_offset(key.len(), meta.is_long());
    if meta.is_long() {
        // SAFETY: the block holds HEADER + klen + vlen bytes for a long value.
        unsafe { std::ptr::copy_nonoverlapping(value.as_ptr(), byte_at(node, voff), value.len()) };
    } else {
        for (i, chunk) in value.chunks(8).enumerate() {
            let word = byte_at(node, voff + 8 * i).cast::<AtomicU64>();
            // SAFETY: word `i` lies inside the block (needed_size counts round8(vlen)) and
            // is 8-aligned (voff is a multiple of 8 for short values); the block is not
            // shared yet, so a plain write initializes it.
            unsafe { word.write(AtomicU64::new(pack(chunk))) };
        }
    }
}

/// Packs up to 8 bytes little-endian into a word.
#[inline]
fn pack(chunk: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..chunk.len()].copy_from_slice(chunk);
    u64::from_le_bytes(w)
}

/// A node's header.
///
/// # Safety
/// `node` is a live node: reachable from a table under a pinned guard, or protected by the
/// bucket lock, or exclusively owned; it stays so for `'a`.
#[inline]
pub(crate) unsafe fn header<'a>(node: NonNull<Node>) -> &'a Node {
    // SAFETY: the caller guarantees the node is allocated and initialized for 'a; the header
    // is only accessed through atomics.
    unsafe { node.as_ref() }
}

/// Loads a node's meta word.
///
/// # Safety
/// As [`header`].
#[inline]
pub(crate) unsafe fn node_meta(node: NonNull<Node>, order: Ordering) -> Meta {
    // SAFETY: forwarded from the caller.
    Meta(unsafe { header(node) }.meta.load(order))
}

/// The node's key.
///
/// # Safety
/// As [`header`]; `meta` was loaded from this node.
#[inline]
pub(crate) unsafe fn key<'a>(node: NonNull<Node>, meta: Meta) -> &'a [u8] {
    // SAFETY: the key occupies `klen` initialized bytes at HEADER, immutable while the node
    // lives (written before the node was published, which the reader's Acquire load of the
    // link ordered before this read).
    unsafe { std::slice::from_raw_parts(byte_at(node, HEADER), meta.klen()) }
}

/// Whether the node's key equals `key`.
///
/// # Safety
/// As [`header`].
#[inline(always)]
pub(crate) unsafe fn key_eq(node: NonNull<Node>, key: &[u8]) -> bool {
    // SAFETY: forwarded from the caller.
    let meta = unsafe { node_meta(node, Ordering::Acquire) };
    // SAFETY: forwarded from the caller; `meta` is this node's.
    meta.klen() == key.len() && bytes_eq(unsafe { self::key(node, meta) }, key)
}

/// Equality of two byte strings of the same length, without a `memcmp` call for short keys
/// (two overlapping word compares cover 4..=16 bytes).
#[inline]
fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len();
    let word8 =
        |s: &[u8], at: usize| u64::from_ne_bytes(s[at..at + 8].try_into().unwrap_or([0; 8]));
    let word4 =
        |s: &[u8], at: usize| u32::from_ne_bytes(s[at..at + 4].try_into().unwrap_or([0; 4]));
    match n {
        0 => true,
        1..=3 => a == b,
        4..=7 => word4(a, 0) == word4(b, 0) && word4(a, n - 4) == word4(b, n - 4),
        8..=16 => word8(a, 0) == word8(b, 0) && word8(a, n - 8) == word8(b, n - 8),
        _ => a == b,
    }
}

/// Calls `f` with the node's value: a zero-copy slice for long values, a validated copy for
/// short ones. Returns `f`'s result.
///
/// # Safety
/// As [`header`] (the node must stay allocated while `f` runs).
#[inline(always)]
pub(crate) unsafe fn with_value<R>(node: NonNull<Node>, f: impl FnOnce(&[u8]) -> R) -> R {
    // SAFETY: forwarded from the caller.
    let hdr = unsafe { header(node) };
    let mut m1 = Meta(hdr.meta.load(Ordering::Acquire));
    if m1.is_long() {
        let voff = value_offset(m1.klen(), true);
        // SAFETY: a long value is `vlen` immutable initialized bytes at `voff`.
        let v = unsafe { std::slice::from_raw_parts(byte_at(node, voff), m1.vlen()) };
        return f(v);
    }
    let voff = value_offset(m1.klen(), false);
    let mut buf = [0u8; SHORT_VALUE_MAX];
    loop {
        if m1.is_writing() {
            // Wait (with backoff) for the in-place write to end.
            m1 = Meta(VERSION.read_begin(&hdr.meta));
            continue;
        }
        let len = m1.vlen();
        for i in 0..len.div_ceil(8) {
            // SAFETY: word `i` is inside the node's value capacity (len <= capacity, an
            // invariant of in-place writes) and 8-aligned; value words are only ever accessed
            // atomically while the node is shared.
            let word = unsafe { &*byte_at(node, voff + 8 * i).cast::<AtomicU64>() };
            let bytes = word.load(Ordering::Relaxed).to_le_bytes();
            let n = (len - 8 * i).min(8);
            buf[8 * i..8 * i + n].copy_from_slice(&bytes[..n]);
        }
        // Seqlock read side: the value loads above are ordered before the re-check.
        if VERSION.validate(&hdr.meta, m1.0) {
            return f(&buf[..len]);
        }
        m1 = Meta(hdr.meta.load(Ordering::Acquire));
    }
}

/// Overwrites a short value in place if `value` fits the node's capacity; returns whether it
/// did (otherwise the caller replaces the node).
///
/// # Safety
/// As [`header`], and the caller holds the lock of the bucket whose chain holds `node` (the
/// only writer of its value).
pub(crate) unsafe fn write_value_in_place(node: NonNull<Node>, value: &[u8]) -> bool {
    // SAFETY: forwarded from the caller.
    let hdr = unsafe { header(node) };
    let m = Meta(hdr.meta.load(Ordering::Relaxed));
    if m.is_long() || value.len() > SHORT_VALUE_MAX {
        return false;
    }
    let voff = value_offset(m.klen(), false);
    if voff + round8(value.len()) > block_size(m) {
        return false;
    }
    // Seqlock write side: the odd version is ordered before the value stores.
    let writing = Meta(VERSION.write_begin(&hdr.meta));
    for (i, chunk) in value.chunks(8).enumerate() {
        // SAFETY: word `i` is inside the block (checked against the class size above) and
        // 8-aligned; only the lock holder writes value words.
        let word = unsafe { &*byte_at(node, voff + 8 * i).cast::<AtomicU64>() };
        word.store(pack(chunk), Ordering::Relaxed);
    }
    VERSION.write_end(&hdr.meta, writing.with_short_vlen(value.len()).0);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(node: NonNull<Node>) -> Vec<u8> {
        // SAFETY: test nodes are live until freed at the end of each test.
        unsafe { with_value(node, |v| v.to_vec()) }
    }

    #[test]
    fn meta_fields() {
        let m = Meta::new(65536, 3, false, 64);
        assert_eq!(
            (m.klen(), m.class(), m.is_long(), m.vlen()),
            (65536, 3, false, 64)
        );
        let l = Meta::new(7, LARGE_CLASS, true, 1 << 20);
        assert_eq!(
            (l.klen(), l.class(), l.is_long(), l.vlen()),
            (7, LARGE_CLASS, true, 1 << 20)
        );
        let w = Meta(VERSION.locked(m.0));
        assert!(w.is_writing() && !m.is_writing());
        let e = Meta(VERSION.unlocked(w.with_short_vlen(5).0));
        assert!(!e.is_writing());
        // The version wraps within bits 32..64 without touching the other fields.
        let top = Meta(m.0 | !((1u64 << 32) - 1) & !(1 << 32));
        assert_eq!(Meta(VERSION.unlocked(VERSION.locked(top.0))).0 >> 32, 0);
        assert_eq!((e.klen(), e.class(), e.vlen()), (65536, 3, 5));
        assert_ne!(e, m);
    }

    #[test]
    fn short_key_equality() {
        for n in 0..=40usize {
            let a: Vec<u8> = (0..n as u8).collect();
            assert!(bytes_eq(&a, &a.clone()));
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 0x80;
                assert!(!bytes_eq(&a, &b), "len {n}, byte {i}");
            }
        }
    }

    #[test]
    fn classes_and_sizes() {
        assert_eq!(needed_size(8, 8), 32);
        assert_eq!(needed_size(24, 10), 56);
        let a = NodeAlloc::new();
        assert_eq!(a.pool.class_of(16), Some(0));
        assert_eq!(a.pool.class_of(32), Some(1));
        assert_eq!(a.pool.class_of(56), Some(4));
        assert_eq!(a.pool.class_of(57), Some(5));
        assert_eq!(a.pool.class_of(4096), Some(18));
        assert_eq!(a.pool.class_of(4097), None);
        assert!(CLASSES.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn alloc_read_update_free() {
        let a = NodeAlloc::new();
        let big_key = vec![0xAB; if cfg!(miri) { 5000 } else { 70000 }.min(65536)];
        let long_val = vec![7u8; 300];
        let huge_val = vec![9u8; if cfg!(miri) { 5000 } else { 1 << 20 }];
        let cases: Vec<(&[u8], &[u8])> = vec![
            (b"", b""),
            (b"k", b"v"),
            (b"12345678", b"abcdefgh"),
            (&[0, 0xFF, 0], &[0xFF; 64]),
            (&big_key, b"short"),
            (b"key", &long_val),
            (&big_key, &huge_val),
        ];
        for (k, v) in cases {
            let n = a.alloc(k, v, Link::NULL).unwrap();
            // SAFETY: `n` is live and exclusively ours in this test.
            let same = unsafe { key_eq(n, k) };
            assert!(same);
            // SAFETY: as above.
            assert!(!unsafe { key_eq(n, b"other") });
            // SAFETY: as above.
            assert_eq!(unsafe { header(n) }.next.load(Ordering::Relaxed), 0);
            assert_eq!(read(n), v);
            // In-place updates succeed exactly for short values within the capacity.
            for new in [&b""[..], b"x", b"0123456789", &[3u8; 64]] {
                // SAFETY: exclusive access stands in for the bucket lock.
                let done = unsafe { write_value_in_place(n, new) };
                if done {
                    assert_eq!(read(n), new);
                } else {
                    assert!(v.len() > SHORT_VALUE_MAX || new.len() > 8);
                }
            }
            // SAFETY: allocated above, never shared, freed once.
            unsafe { a.free(n) };
        }
    }
}
