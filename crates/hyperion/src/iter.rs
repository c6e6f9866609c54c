//! Ordered iteration: a double-ended, seekable [`Iter`] (the house `BatchIter`), fed by
//! ordered walks over the first-byte tries.
//!
//! A refill walks the tries in key order from its bound (ascending, or descending from
//! the back), each trie under its arena's read lock, and copies up to [`BATCH`] pairs into
//! the iterator's reusable [`PairBatch`]. No lock is held between refills, so a user may
//! keep an `Iter` while writing to the index. With key pre-processing the bounds are
//! transformed into the trie's key space and keys decoded back as they are copied.

use std::ops::{Bound, ControlFlow, RangeBounds};

use orrery_core::batch::{BatchIter, BatchSource, Entry, PairBatch};

use crate::{Hyperion, prep};

/// Pairs copied per refill.
pub const BATCH: usize = 64;

impl Hyperion {
    /// An iterator over all pairs in key order (ascending; `.rev()` for descending).
    pub fn iter(&self) -> Iter<'_> {
        BatchIter::all(self)
    }

    /// An iterator over the pairs whose keys fall in `range`, in key order (ascending;
    /// `.rev()` for descending), as `BTreeMap::range`. An empty or inverted range yields
    /// nothing (where `BTreeMap::range` panics).
    pub fn range<K, R>(&self, range: R) -> Iter<'_>
    where
        K: AsRef<[u8]> + ?Sized,
        R: RangeBounds<K>,
    {
        BatchIter::range(self, range)
    }

    fn to_trie(&self, b: Bound<&[u8]>) -> Bound<Vec<u8>> {
        b.map(|k| self.trie_key(k).to_vec())
    }

    /// The user's key for a trie key (decoding pre-processed keys).
    fn user_key<'a>(&self, k: &'a [u8], scratch: &'a mut Vec<u8>) -> &'a [u8] {
        if self.config.preprocess {
            if prep::decode(k, scratch).is_none() {
                debug_assert!(false, "a stored key is a pre-processed key");
            }
            scratch
        } else {
            k
        }
    }

    fn copy_front(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        let bound = self.to_trie(start);
        let bound = bound.as_ref().map(Vec::as_slice);
        let mut scratch = Vec::new();
        let mut last: Option<Vec<u8>> = None;
        let mut count = 0;
        let first = match bound {
            Bound::Unbounded | Bound::Included([]) => {
                if let Some(v) = self.arenas[0].read().empty() {
                    out.push(&[], v);
                    count += 1;
                }
                0
            }
            Bound::Included(k) | Bound::Excluded(k) => k.first().copied().unwrap_or(0),
        };
        let mut buf = Vec::new();
        for b in first..=255u8 {
            let a = self.arenas[b as usize % self.arenas.len()].read();
            let flow = a.walk(b, bound, false, &mut buf, &mut |k, v| {
                out.push(self.user_key(k, &mut scratch), v);
                count += 1;
                if count >= BATCH {
                    last = Some(k.to_vec());
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            drop(a);
            if flow.is_break() {
                let last = last.expect("set on break");
                let mut s = Vec::new();
                return Some(Bound::Excluded(self.user_key(&last, &mut s).to_vec()));
            }
        }
        None
    }

    fn copy_back(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        let bound = self.to_trie(end);
        let bound = bound.as_ref().map(Vec::as_slice);
        let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let top = match bound {
            Bound::Unbounded => Some(255u8),
            Bound::Included(k) | Bound::Excluded(k) => k.first().copied(),
        };
        let mut buf = Vec::new();
        let mut full = false;
        if let Some(top) = top {
            for b in (0..=top).rev() {
                let a = self.arenas[b as usize % self.arenas.len()].read();
                let flow = a.walk(b, bound, true, &mut buf, &mut |k, v| {
                    pairs.push((k.to_vec(), v.to_vec()));
                    if pairs.len() >= BATCH {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                });
                drop(a);
                if flow.is_break() {
                    full = true;
                    break;
                }
            }
        }
        let empty_ok = !matches!(bound, Bound::Excluded([]));
        if !full
            && empty_ok
            && let Some(v) = self.arenas[0].read().empty()
        {
            pairs.push((Vec::new(), v.to_vec()));
        }
        let mut scratch = Vec::new();
        for (k, v) in pairs.iter().rev() {
            out.push(self.user_key(k, &mut scratch), v);
        }
        if full {
            let (k, _) = pairs.last().expect("a full batch");
            return Some(Bound::Excluded(self.user_key(k, &mut scratch).to_vec()));
        }
        None
    }
}

/// An iterator over a key range of a [`Hyperion`], in key order from either end: a
/// seekable cursor that copies up to [`BATCH`] pairs at a time into a reusable arena.
///
/// Made by [`Hyperion::iter`] and [`Hyperion::range`]. It implements [`Iterator`] and
/// [`DoubleEndedIterator`] (`.rev()` yields descending keys; both ends may be used, and they
/// stop where they meet). Items are [`Entry`]s, handles into the batch; [`Iter::next_pair`]
/// and [`Iter::next_back_pair`] lend the pair as slices instead. No lock is held between
/// calls; under concurrent writers it is not a snapshot ([`orrery_core::api`]).
///
/// ```
/// use orrery_hyperion::Hyperion;
/// use std::ops::Bound;
/// let h = Hyperion::new();
/// for i in 0u32..1000 {
///     h.insert(&i.to_be_bytes(), b"v").unwrap();
/// }
/// let mut it = h.iter();
/// assert_eq!(it.next_pair().map(|(k, _)| k.to_vec()), Some(0u32.to_be_bytes().to_vec()));
/// it.seek(Bound::Excluded(&500u32.to_be_bytes()));
/// assert_eq!(it.next().unwrap().key(), 501u32.to_be_bytes());
/// assert_eq!(it.next_back().unwrap().key(), 999u32.to_be_bytes());
/// assert_eq!(it.count(), 497);
/// ```
pub type Iter<'a> = BatchIter<&'a Hyperion>;

/// [`Iter`]'s source: ordered walks of up to [`BATCH`] pairs per batch.
impl BatchSource for Hyperion {
    fn fill_front(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.copy_front(start, out)
    }

    fn fill_back(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.copy_back(end, out)
    }
}

impl<'a> IntoIterator for &'a Hyperion {
    type Item = Entry;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}
