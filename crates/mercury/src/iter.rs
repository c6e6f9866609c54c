//! Unordered iteration.
//!
//! The walk enumerates the classes of hashes modulo the size `len` of the table current when
//! it started, in order, and visits each class through the buckets that hold it in the
//! table current at that moment. A bucket that is MOVED is replaced by the bucket(s) of the
//! successor it was migrated into (two for an expansion, one for a shrink; recursively, if
//! the successor is itself resizing). When the table holding a bucket is smaller than the
//! class's modulus (the table shrank since the walk started, or the bucket was merged by a
//! shrink), the bucket also holds keys of other classes, and only the keys whose hash is in
//! the class are kept. So every key is visited through exactly one bucket of its lineage,
//! in exactly one class. Each bucket's inline pair and chain are read optimistically, like a lookup,
//! into a small buffer of copies (a pair that moves from the inline area into a node during
//! the visit is kept once); the bucket word is then re-checked, and if the bucket was marked MOVED meanwhile
//! (a migration may have re-linked the chain under the walk) the buffer is discarded and the
//! bucket's successors are walked instead. Only then are the buffered pairs handed to the
//! visitor.
//!
//! Guarantees (not a snapshot): every key present for the whole iteration is visited exactly
//! once; a key inserted or removed meanwhile is visited at most once; every visited pair was
//! present with that value at some moment of the iteration.

use std::ops::ControlFlow;
use std::sync::atomic::Ordering;

use std::sync::Arc;

use orrery_core::batch::{Entry, PairBatch};

use crate::link::Link;
use crate::node;
use crate::raw::{Inner, hashed, successor, wait_migrated};
use crate::table::Table;
use orrery_core::sync::{Guard, pin};

/// The visitor of an iteration.
pub(crate) type Visitor<'a> = dyn FnMut(&[u8], &[u8]) -> ControlFlow<()> + 'a;

/// Copies of one chain's pairs.
#[derive(Default)]
struct ChainBuf {
    bytes: Vec<u8>,
    /// `(key_end, value_end)` offsets into `bytes`, one per pair.
    ends: Vec<(usize, usize)>,
}

impl ChainBuf {
    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.bytes.extend_from_slice(key);
        let k = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.ends.push((k, self.bytes.len()));
    }

    fn visit(&self, f: &mut Visitor<'_>) -> ControlFlow<()> {
        let mut start = 0;
        for &(k, v) in &self.ends {
            f(&self.bytes[start..k], &self.bytes[k..v])?;
            start = v;
        }
        ControlFlow::Continue(())
    }
}

/// Buckets walked per guard, so that a long iteration does not hold up reclamation.
const BUCKETS_PER_PIN: usize = 256;

impl Inner {
    /// Visits every pair (see the module docs for the guarantees), until `f` breaks.
    pub(crate) fn for_each(&self, f: &mut Visitor<'_>) {
        self.for_each_from(0, f);
    }

    /// [`Inner::for_each`] starting at bucket `start` modulo the table's size and wrapping
    /// around: the same guarantees, from another place in the table (a random `start`
    /// gives a random sample's starting point).
    pub(crate) fn for_each_from(&self, start: u64, f: &mut Visitor<'_>) {
        let mut buf = ChainBuf::default();
        let mut guard = pin();
        // The table whose buckets the walk enumerates; kept across re-pins by re-reading
        // the current table and mapping the position onto it.
        let mut t = self.current(&guard);
        let len = t.len();
        let first = (start % len as u64) as usize;
        let mut step = 0;
        while step < len {
            let idx = (first + step) % len;
            if step % BUCKETS_PER_PIN == 0 && step > 0 {
                drop(guard);
                guard = pin();
                t = self.current(&guard);
                // The current table may have doubled or halved (several times) since: class
                // `idx` of the old enumeration is the set of buckets `idx + k * len` of a
                // larger table, or the keys of that class in bucket `idx` modulo the size of
                // a smaller one (see `visit_lineage`), so the walk continues on the old
                // numbering.
            }
            if visit_lineage(t, len, idx, &mut buf, f, &guard).is_break() {
                return;
            }
            step += 1;
        }
    }
}

/// Pairs per refill of an [`Iter`] (a refill stops at the bucket that reaches it).
const ITER_BATCH: usize = 256;

/// An iterator over the pairs of a [`Mercury`](crate::Mercury) table in no particular order
/// (made by [`Mercury::iter`](crate::Mercury::iter)).
///
/// It walks the buckets as [`Mercury::for_each`](crate::Mercury::for_each) does, with the
/// same guarantees (not a snapshot: every key present for the whole iteration is yielded
/// exactly once, a key inserted or removed meanwhile at most once, every pair yielded was
/// present with that value at some moment), but holds no guard between calls: each refill
/// pins, copies the pairs of up to 256 buckets (or about 256 pairs) into a reusable
/// [`PairBatch`], and unpins. Items are [`Entry`] handles into that batch, so iterating
/// allocates nothing per pair. The table may be written while an `Iter` is alive.
///
/// ```
/// use orrery_mercury::Mercury;
/// let m: Mercury = (0u32..100).map(|i| (i.to_be_bytes(), [1u8])).collect();
/// let mut keys: Vec<Vec<u8>> = m.iter().map(|e| e.key().to_vec()).collect();
/// keys.sort();
/// assert_eq!(keys.len(), 100);
/// assert_eq!(keys[99], 99u32.to_be_bytes());
/// ```
pub struct Iter<'a> {
    inner: &'a Inner,
    /// Size of the table whose numbering the walk follows (0 before the first refill).
    len: usize,
    /// Next bucket of that numbering.
    idx: usize,
    batch: Arc<PairBatch>,
    /// Next pair of `batch`.
    pos: usize,
    chain: ChainBuf,
}

impl std::fmt::Debug for Iter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iter")
            .field("bucket", &self.idx)
            .field("of", &self.len)
            .finish_non_exhaustive()
    }
}

impl<'a> Iter<'a> {
    pub(crate) fn new(inner: &'a Inner) -> Self {
        Iter {
            inner,
            len: 0,
            idx: 0,
            batch: Arc::default(),
            pos: 0,
            chain: ChainBuf::default(),
        }
    }

    /// Copies the pairs of the next buckets into the batch; `false` once every bucket has
    /// been walked.
    fn refill(&mut self) -> bool {
        let guard = pin();
        let t = self.inner.current(&guard);
        if self.len == 0 {
            self.len = t.len();
        }
        if self.idx >= self.len {
            return false;
        }
        let out = PairBatch::refill(&mut self.batch);
        self.pos = 0;
        let end = (self.idx + BUCKETS_PER_PIN).min(self.len);
        while self.idx < end && out.len() < ITER_BATCH {
            // The visitor never breaks.
            let _ = visit_lineage(
                t,
                self.len,
                self.idx,
                &mut self.chain,
                &mut |k, v| {
                    out.push(k, v);
                    ControlFlow::Continue(())
                },
                &guard,
            );
            self.idx += 1;
        }
        true
    }
}

impl Iterator for Iter<'_> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        while self.pos >= self.batch.len() {
            if !self.refill() {
                return None;
            }
        }
        self.pos += 1;
        Some(Entry::new(&self.batch, self.pos - 1))
    }
}

impl std::iter::FusedIterator for Iter<'_> {}

/// A class of hashes: those equal to `residue` modulo `modulus` (a power of two).
#[derive(Clone, Copy)]
struct Class {
    modulus: usize,
    residue: usize,
}

impl Class {
    /// The class of the keys of bucket `idx` of `t` that are also in `self` (the stricter
    /// of the two: both moduli are powers of two and bucket `idx` was reached through
    /// `self`, so one class contains the other).
    fn within(self, t: &Table, idx: usize) -> Class {
        if t.len() > self.modulus {
            Class {
                modulus: t.len(),
                residue: idx,
            }
        } else {
            self
        }
    }

    /// Whether bucket `idx` of `t` can hold keys of the class: when `t` is at least as large
    /// as the modulus, the bucket holds one class (or a subclass), `idx` modulo the modulus
    /// (after a shrink and a growth back, a bucket may move into two of which only one is
    /// in the class); a smaller table's bucket holds several classes, among them this one.
    fn meets(self, t: &Table, idx: usize) -> bool {
        t.len() < self.modulus || idx & (self.modulus - 1) == self.residue
    }

    /// Whether a key found in a bucket of `t` that [`meets`](Class::meets) the class is in
    /// it (always, when `t` is at least as large as the modulus).
    fn holds(self, t: &Table, key: &[u8]) -> bool {
        t.len() >= self.modulus || (hashed(key).hash as usize) & (self.modulus - 1) == self.residue
    }
}

/// Visits every key whose hash is `idx` modulo `len` (a power of two), starting from table
/// `t`.
fn visit_lineage<'g>(
    t: &'g Table,
    len: usize,
    idx: usize,
    buf: &mut ChainBuf,
    f: &mut Visitor<'_>,
    guard: &'g Guard,
) -> ControlFlow<()> {
    let class = Class {
        modulus: len,
        residue: idx,
    };
    if t.len() < len {
        // The table shrank since the walk started: one bucket holds the class.
        return visit_bucket(t, idx & (t.len() - 1), class, buf, f, guard);
    }
    let mut i = idx;
    while i < t.len() {
        visit_bucket(t, i, class, buf, f, guard)?;
        i += len;
    }
    ControlFlow::Continue(())
}

/// Visits every key of `class` in bucket `idx` of `t`, following migrations. `t` (and every
/// table and node reached from it) is valid while `guard` lives.
fn visit_bucket<'g>(
    t: &'g Table,
    idx: usize,
    class: Class,
    buf: &mut ChainBuf,
    f: &mut Visitor<'_>,
    guard: &'g Guard,
) -> ControlFlow<()> {
    if !class.meets(t, idx) {
        return ControlFlow::Continue(());
    }
    loop {
        // The inline pair first, then the word: the order of a lookup (see `read.rs`).
        let pair = t.cell(idx).inline.snapshot();
        let w = t.load(idx);
        if w.is_moved() {
            wait_migrated(t, idx, w);
            let next = successor(t);
            let class = class.within(t, idx);
            if next.len() < t.len() {
                // A shrink merged this bucket with its partner into one.
                return visit_bucket(next, idx & (next.len() - 1), class, buf, f, guard);
            }
            visit_bucket(next, idx, class, buf, f, guard)?;
            return visit_bucket(next, idx + t.len(), class, buf, f, guard);
        }
        buf.clear();
        let pair = pair.filter(|e| class.holds(t, e.key()));
        if let Some(e) = &pair {
            buf.push(e.key(), e.value());
        }
        let mut link = w.head();
        while let Some(n) = link.node() {
            let _ = guard;
            // SAFETY: `n` was reachable under `guard`, so it is allocated.
            let meta = unsafe { node::node_meta(n, Ordering::Acquire) };
            // SAFETY: as above; keys are immutable.
            let key = unsafe { node::key(n, meta) };
            // A key seen inline and again in the chain moved from the area into a node
            // during this visit: keep one copy (either value was current at some moment).
            if pair.as_ref().is_none_or(|e| e.key() != key) && class.holds(t, key) {
                // SAFETY: as above.
                unsafe { node::with_value(n, |v| buf.push(key, v)) };
            }
            if link.is_last() {
                break;
            }
            // SAFETY: as above.
            link = Link::from_word(unsafe { node::header(n) }.next.load(Ordering::Acquire));
        }
        if !t.load(idx).is_moved() {
            return buf.visit(f);
        }
    }
}

#[cfg(any(test, feature = "bench-internals"))]
/// Chain-shape statistics of a table (see [`crate::Mercury::chain_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ChainStats {
    /// Buckets of the current table (the successor's when an expansion is in progress).
    pub buckets: usize,
    /// Items found by the walk.
    pub items: usize,
    /// Items held in the buckets' inline areas (a lookup of one reads no node).
    pub inline_items: usize,
    /// Longest chain.
    pub max_chain: usize,
    /// Mean number of nodes a lookup of a present key reads (uniform over the keys): 0 for
    /// an inline pair, else the key's position in its chain.
    pub node_reads_per_hit: f64,
    /// Mean number of nodes a lookup of an absent key reads (uniform over the buckets,
    /// assuming its tag matches no node): every node but the last of the chain, thanks to
    /// the LAST flag and tags in links.
    pub node_reads_per_miss: f64,
}

#[cfg(any(test, feature = "bench-internals"))]
impl Inner {
    /// Walks every chain (optimistically, like iteration) and summarizes chain lengths.
    pub(crate) fn chain_stats(&self) -> ChainStats {
        let guard = pin();
        let t = self.current(&guard);
        let mut lengths: Vec<usize> = Vec::new();
        let mut inline_items = 0;
        for idx in 0..t.len() {
            chain_lengths(t, idx, &mut lengths, &mut inline_items, &guard);
        }
        let items: usize = lengths.iter().sum::<usize>() + inline_items;
        let hit_reads: usize = lengths.iter().map(|&l| l * (l + 1) / 2).sum();
        let miss_reads: usize = lengths.iter().map(|&l| l.saturating_sub(1)).sum();
        let buckets = lengths.len();
        ChainStats {
            buckets,
            items,
            inline_items,
            max_chain: lengths.iter().copied().max().unwrap_or(0),
            node_reads_per_hit: hit_reads as f64 / items.max(1) as f64,
            node_reads_per_miss: miss_reads as f64 / buckets.max(1) as f64,
        }
    }
}

/// Appends the chain length of bucket `idx` of `t` (of its successor's buckets if MOVED) and
/// counts its inline pair.
#[cfg(any(test, feature = "bench-internals"))]
fn chain_lengths<'g>(
    t: &'g Table,
    idx: usize,
    out: &mut Vec<usize>,
    inline_items: &mut usize,
    guard: &'g Guard,
) {
    let pair = t.cell(idx).inline.snapshot();
    let w = t.load(idx);
    if w.is_moved() {
        wait_migrated(t, idx, w);
        let next = successor(t);
        if next.len() < t.len() {
            // A shrink merges buckets `idx` and `idx + next.len()`: count the result once.
            if idx < next.len() {
                chain_lengths(next, idx, out, inline_items, guard);
            }
            return;
        }
        chain_lengths(next, idx, out, inline_items, guard);
        chain_lengths(next, idx + t.len(), out, inline_items, guard);
        return;
    }
    *inline_items += usize::from(pair.is_some());
    let _ = guard;
    let mut len = 0;
    let mut link = w.head();
    while let Some(n) = link.node() {
        len += 1;
        if link.is_last() {
            break;
        }
        // SAFETY: `n` was reachable under `guard`, so it is allocated.
        link = Link::from_word(unsafe { node::header(n) }.next.load(Ordering::Acquire));
    }
    out.push(len);
}
