//! A set of keys stored back to back in one buffer, and the deduplicating builder.
//!
//! Ten million keys as ten million `Vec`s would cost an allocation and a 24-byte header each
//! and scatter the keys over the heap, polluting the measurement of the index; one flat
//! buffer plus an offset array keeps the generator's footprint small and its reads
//! sequential.
//!
//! A `KeySet` may instead be a key stream (`super::stream`): no buffer, key `i` computed
//! from `i` into the caller's [`KeyBuf`] by [`KeySet::key`], the one accessor the harness
//! uses; [`KeySet::get`] serves only the stored sets' own code (sorting, statistics).

use hashbrown::HashTable;
use orrery::prefetch;

use super::stream::{KeyBuf, KeyStream};

/// Keys `0..len()` in one buffer: key `i` is `bytes[offsets[i]..offsets[i + 1]]`; or, with
/// `stream`, no buffer and key `i` computed by the stream.
#[derive(Debug, Default)]
pub(crate) struct KeySet {
    bytes: Vec<u8>,
    offsets: Vec<u64>,
    stream: Option<KeyStream>,
}

impl KeySet {
    /// The set of a key stream.
    pub(crate) fn from_stream(stream: KeyStream) -> KeySet {
        KeySet {
            stream: Some(stream),
            ..KeySet::default()
        }
    }

    /// The stream this set computes its keys with, if it is one.
    pub(crate) fn stream(&self) -> Option<&KeyStream> {
        self.stream.as_ref()
    }

    /// This set with its keys stored: a stream's keys written into a buffer (for the
    /// `datasets` listing and statistics, at small counts), a stored set unchanged.
    pub(crate) fn stored(self) -> KeySet {
        let Some(s) = &self.stream else {
            return self;
        };
        let mut out = KeySet {
            offsets: Vec::with_capacity(s.len() + 1),
            ..KeySet::default()
        };
        out.offsets.push(0);
        let mut buf = [0u8; super::stream::MAX_LEN];
        for i in 0..s.len() as u64 {
            out.bytes.extend_from_slice(s.key(i, &mut buf));
            out.offsets.push(out.bytes.len() as u64);
        }
        out
    }

    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        match &self.stream {
            Some(s) => s.len(),
            None => self.offsets.len().saturating_sub(1),
        }
    }

    /// Key `i`: a slice of the stored buffer, or a stream's key written into `buf`.
    #[inline]
    pub(crate) fn key<'a>(&'a self, i: usize, buf: &'a mut KeyBuf) -> &'a [u8] {
        match &self.stream {
            None => self.get(i),
            Some(s) => s.key(i as u64, buf),
        }
    }

    /// Key `i` of a stored set (a stream's key must be written somewhere: [`KeySet::key`]).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        debug_assert!(self.stream.is_none(), "KeySet::get on a key stream");
        let (a, b) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        &self.bytes[a..b]
    }

    /// Hints the CPU to fetch the offset entry of key `i` (see `exec`: the harness fetches
    /// its own key data ahead, so that an index is not charged for the harness's misses).
    /// A hint never faults, so on a stream's empty array it is harmless.
    #[inline]
    pub(crate) fn prefetch_entry(&self, i: usize) {
        prefetch(self.offsets.as_ptr().wrapping_add(i));
    }

    /// Hints the CPU to fetch the first bytes of key `i` (reads its offset entry, which
    /// [`KeySet::prefetch_entry`] should have requested earlier).
    #[inline]
    pub(crate) fn prefetch_key(&self, i: usize) {
        if let Some(&a) = self.offsets.get(i) {
            prefetch(self.bytes.as_ptr().wrapping_add(a as usize));
        }
    }

    /// Total bytes of all keys.
    pub(crate) fn total_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Keeps the keys in the order given by `order` (a permutation or a subset of indices).
    pub(crate) fn permuted(&self, order: &[usize]) -> KeySet {
        let mut out = KeySet {
            bytes: Vec::with_capacity(self.bytes.len()),
            offsets: Vec::with_capacity(order.len() + 1),
            stream: None,
        };
        out.offsets.push(0);
        for &i in order {
            out.bytes.extend_from_slice(self.get(i));
            out.offsets.push(out.bytes.len() as u64);
        }
        out
    }
}

/// Builds a [`KeySet`] of distinct keys: a candidate equal to an earlier key (compared on
/// its last `dedupe_suffix` bytes, or the whole key) is dropped.
pub(crate) struct Builder {
    set: KeySet,
    seen: HashTable<u32>,
    hasher: foldhash::fast::FixedState,
    dedupe_suffix: Option<usize>,
    rejected_in_a_row: usize,
}

/// Consecutive duplicate candidates after which a generator is taken to have run out of
/// distinct keys.
const MAX_REJECTS_IN_A_ROW: usize = 100_000;

impl Builder {
    /// A builder expecting about `n` keys of about `avg_len` bytes.
    pub(crate) fn new(n: usize, avg_len: usize, dedupe_suffix: Option<usize>) -> Builder {
        let mut set = KeySet {
            bytes: Vec::with_capacity(n.saturating_mul(avg_len)),
            offsets: Vec::with_capacity(n + 1),
            stream: None,
        };
        set.offsets.push(0);
        Builder {
            set,
            seen: HashTable::with_capacity(n),
            hasher: foldhash::fast::FixedState::with_seed(0x5EED),
            dedupe_suffix,
            rejected_in_a_row: 0,
        }
    }

    /// Number of keys accepted so far.
    pub(crate) fn len(&self) -> usize {
        self.set.len()
    }

    fn ident<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        match self.dedupe_suffix {
            Some(s) if key.len() >= s => &key[key.len() - s..],
            _ => key,
        }
    }

    /// Offers the candidate built by `fill` (which appends the key's bytes to the buffer it
    /// is given). Returns whether it was new; errors when the generator seems unable to
    /// produce more distinct keys.
    pub(crate) fn offer(&mut self, fill: impl FnOnce(&mut Vec<u8>)) -> Result<bool, String> {
        let start = self.set.bytes.len();
        fill(&mut self.set.bytes);
        let end = self.set.bytes.len();
        let idx = self.set.len();
        if idx >= u32::MAX as usize {
            return Err("a dataset holds at most 4 billion keys".into());
        }
        let key = &self.set.bytes[start..end];
        let ident = self.ident(key);
        let hash = std::hash::BuildHasher::hash_one(&self.hasher, ident);
        let (bytes, offsets, suffix) = (&self.set.bytes, &self.set.offsets, self.dedupe_suffix);
        let eq = |&j: &u32| {
            let j = j as usize;
            let other = &bytes[offsets[j] as usize..offsets[j + 1] as usize];
            let other = match suffix {
                Some(s) if other.len() >= s => &other[other.len() - s..],
                _ => other,
            };
            other == ident
        };
        if self.seen.find(hash, eq).is_some() {
            self.set.bytes.truncate(start);
            self.rejected_in_a_row += 1;
            if self.rejected_in_a_row > MAX_REJECTS_IN_A_ROW {
                return Err(format!(
                    "the generator ran out of distinct keys after {idx} keys \
                     (ask for fewer keys or longer keys)"
                ));
            }
            return Ok(false);
        }
        self.rejected_in_a_row = 0;
        let (bytes, offsets) = (&self.set.bytes, &self.set.offsets);
        let hasher = &self.hasher;
        self.seen.insert_unique(hash, idx as u32, |&j| {
            let j = j as usize;
            let k = &bytes[offsets[j] as usize..offsets[j + 1] as usize];
            let k = match suffix {
                Some(s) if k.len() >= s => &k[k.len() - s..],
                _ => k,
            };
            std::hash::BuildHasher::hash_one(hasher, k)
        });
        self.set.offsets.push(end as u64);
        Ok(true)
    }

    /// The finished set.
    pub(crate) fn finish(self) -> KeySet {
        let mut set = self.set;
        set.bytes.shrink_to_fit();
        set.offsets.shrink_to_fit();
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_drops_duplicates_and_keeps_order() {
        let mut b = Builder::new(4, 2, None);
        for k in [&b"ab"[..], b"cd", b"ab", b"", b"cd", b"e"] {
            b.offer(|v| v.extend_from_slice(k)).unwrap();
        }
        let s = b.finish();
        let keys: Vec<&[u8]> = (0..s.len()).map(|i| s.get(i)).collect();
        assert_eq!(keys, [&b"ab"[..], b"cd", b"", b"e"]);
        let p = s.permuted(&[3, 0]);
        assert_eq!(p.get(0), b"e");
        assert_eq!(p.get(1), b"ab");
    }

    #[test]
    fn suffix_dedupe_compares_only_the_suffix() {
        let mut b = Builder::new(4, 3, Some(1));
        assert!(b.offer(|v| v.extend_from_slice(b"xa")).unwrap());
        assert!(!b.offer(|v| v.extend_from_slice(b"ya")).unwrap());
        assert!(b.offer(|v| v.extend_from_slice(b"yb")).unwrap());
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn exhausted_generator_is_an_error() {
        let mut b = Builder::new(4, 1, None);
        let mut err = None;
        for _ in 0..MAX_REJECTS_IN_A_ROW + 10 {
            if let Err(e) = b.offer(|v| v.push(1)) {
                err = Some(e);
                break;
            }
        }
        assert!(err.unwrap().contains("ran out of distinct keys"));
    }
}
