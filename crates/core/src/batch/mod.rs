//! Batches of copied pairs and the [`Entry`] handles that iterators yield.
//!
//! A concrete index's iterator cannot lend pairs out of the structure (a std `Iterator`
//! cannot yield slices borrowed from itself, and the structure's memory is protected only
//! while a lock or guard is held). So iterators copy a batch of pairs at a time (a leaf, a
//! run of buckets) into a [`PairBatch`]: one byte buffer and one span table, reused from
//! batch to batch. Items are [`Entry`]s, reference-counted handles to one pair of a
//! batch, so iteration allocates nothing per pair. When no entry of the previous batch is
//! alive at the next refill (a `for` loop that does not keep its items), the same buffers
//! are refilled in place ([`PairBatch::refill`]); otherwise a fresh batch is started and
//! the old one lives on in the entries that hold it.

mod cursor;

pub use cursor::{BatchIter, BatchSource, scan_back};

use std::fmt;
use std::sync::Arc;

/// A flat, reusable buffer of copied `(key, value)` pairs, in the order they were pushed.
#[derive(Default)]
pub struct PairBatch {
    bytes: Vec<u8>,
    /// (key start, key end = value start, value end) per pair.
    spans: Vec<(usize, usize, usize)>,
}

impl PairBatch {
    /// Appends a copy of a pair.
    #[inline]
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        let a = self.bytes.len();
        self.bytes.extend_from_slice(key);
        let b = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.spans.push((a, b, self.bytes.len()));
    }

    /// Removes every pair, keeping the buffers' capacity.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }

    /// Number of pairs.
    #[inline]
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether the batch holds no pair.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The `i`-th pair.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    #[inline]
    pub fn pair(&self, i: usize) -> (&[u8], &[u8]) {
        let (a, b, c) = self.spans[i];
        (&self.bytes[a..b], &self.bytes[b..c])
    }

    /// The key of the `i`-th pair.
    ///
    /// # Panics
    /// If `i >= self.len()`.
    #[inline]
    pub fn key(&self, i: usize) -> &[u8] {
        self.pair(i).0
    }

    /// The batch behind `this`, emptied for a refill: the same buffers when no [`Entry`]
    /// holds them, else a fresh batch (the entries keep the old one).
    pub fn refill(this: &mut Arc<PairBatch>) -> &mut PairBatch {
        if Arc::get_mut(this).is_none() {
            *this = Arc::new(PairBatch::default());
        }
        let b = Arc::get_mut(this).expect("a fresh or unshared batch");
        b.clear();
        b
    }
}

impl fmt::Debug for PairBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PairBatch")
            .field("pairs", &self.len())
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// A pair yielded by an index's iterator: a handle to one pair of a [`PairBatch`] (cloning
/// or holding it costs a reference count, not a copy of the bytes).
///
/// Holding an entry keeps its batch alive, so the iterator starts a new batch at its next
/// refill instead of reusing the buffers. [`Entry::into_pair`] copies the bytes out.
#[derive(Clone)]
pub struct Entry {
    batch: Arc<PairBatch>,
    i: usize,
}

impl Entry {
    /// The `i`-th pair of `batch`.
    ///
    /// # Panics
    /// If `i >= batch.len()`.
    #[inline]
    pub fn new(batch: &Arc<PairBatch>, i: usize) -> Entry {
        assert!(i < batch.len(), "entry {i} of a batch of {}", batch.len());
        Entry {
            batch: Arc::clone(batch),
            i,
        }
    }

    /// The key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        self.batch.pair(self.i).0
    }

    /// The value.
    #[inline]
    pub fn value(&self) -> &[u8] {
        self.batch.pair(self.i).1
    }

    /// The key and the value, borrowed.
    #[inline]
    pub fn pair(&self) -> (&[u8], &[u8]) {
        self.batch.pair(self.i)
    }

    /// Copies of the key and the value.
    pub fn into_pair(self) -> (Vec<u8>, Vec<u8>) {
        let (k, v) = self.pair();
        (k.to_vec(), v.to_vec())
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Entry")
            .field(&self.key())
            .field(&self.value())
            .finish()
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.pair() == other.pair()
    }
}

impl Eq for Entry {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refill_reuses_unshared_buffers() {
        let mut b = Arc::new(PairBatch::default());
        PairBatch::refill(&mut b).push(b"k", b"v");
        let first = Arc::as_ptr(&b);
        let e = Entry::new(&b, 0);
        assert_eq!(e.pair(), (&b"k"[..], &b"v"[..]));
        // Held entry: a fresh batch, the entry still reads the old one.
        PairBatch::refill(&mut b).push(b"k2", b"");
        assert_ne!(Arc::as_ptr(&b), first);
        assert_eq!(e.clone().into_pair(), (b"k".to_vec(), b"v".to_vec()));
        drop(e);
        let second = Arc::as_ptr(&b);
        assert!(PairBatch::refill(&mut b).is_empty());
        assert_eq!(Arc::as_ptr(&b), second);
    }
}
