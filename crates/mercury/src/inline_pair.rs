//! The inline entry of a bucket cell (beyond the paper; measured reason in `docs/mercury.md`).
//!
//! The paper's bucket (Fig 2) holds only the chain head, so a GET costs two DRAM accesses:
//! the bucket line, then the key-value node. Here a bucket is a 32-byte *cell*: the bucket
//! word (`link.rs`) plus an inline area that can hold one small key-value pair (key length
//! plus value length at most [`INLINE_MAX`] = 16 bytes, e.g. an 8-byte key with an 8-byte
//! value). With the table kept at 0.5-1 items per bucket, most pairs are the only or
//! the first pair of their bucket, and a GET of an inline pair costs one DRAM access.
//!
//! ```text
//! 0        8        16                32
//! +--------+--------+-----------------+
//! | bucket | meta   | data: key bytes |
//! | word   |        | then value bytes|
//! +--------+--------+-----------------+
//! meta: bits 0..32 version (odd: a write is in progress), 32..40 klen, 40..48 vlen,
//!       bit 48 FULL (the area holds a pair)
//! ```
//!
//! # Protocol
//!
//! Only the holder of the bucket lock writes the area. Every access is atomic (the data are
//! two `AtomicU64` words), so there is no data race to reason about; readers validate a copy
//! against the version, seqlock-style, exactly as short node values do (`node.rs`):
//!
//! - **write** (insert or rewrite of the inline pair): store `meta` with the version made odd
//!   and the *old* fields kept, Release fence, store the data words, store `meta` with the
//!   version even again and the new fields (Release).
//! - **clear** (remove, move into a node, end of a migration): one Release store of `meta`
//!   with the version advanced by two and FULL clear (the data words are not touched).
//! - **read**: Acquire-load `meta`; if FULL is clear or the key length differs, the area does
//!   not hold the key *at that instant* (an odd version keeps the old fields, so the state
//!   before the write in progress is what the fields describe); otherwise copy the two data
//!   words, Acquire fence, re-load `meta`; equal words mean the copy is the pair the area held
//!   at the first load.
//!
//! How the inline pair fits in the chain protocol (the order in which a reader reads the
//! area and the bucket word, and the one move from the area into a node) is in the crate
//! docs, "Linearizability".

use std::sync::atomic::{AtomicU64, Ordering};

use orrery_core::sync::VersionField;

/// Largest `key.len() + value.len()` stored inline.
pub(crate) const INLINE_MAX: usize = 16;

const VERSION_MASK: u64 = 0xFFFF_FFFF;
/// The version: an odd/even seqlock in bits 0..32 (bit 0 set while a write is in
/// progress), through the shared `orrery_core` implementation.
const VERSION: VersionField = VersionField::new(64, 0, 1, 31);
const KLEN_SHIFT: u32 = 32;
const VLEN_SHIFT: u32 = 40;
const FULL: u64 = 1 << 48;

/// Whether a pair with these lengths is stored inline when the area is free.
#[inline]
pub(crate) const fn fits(klen: usize, vlen: usize) -> bool {
    klen + vlen <= INLINE_MAX
}

/// The inline area of a bucket cell: a version/length word and 16 data bytes.
///
/// All-zero bytes are an empty area (version 0, FULL clear).
#[repr(C)]
pub(crate) struct Inline {
    meta: AtomicU64,
    data: [AtomicU64; 2],
}

/// A copy of an inline pair.
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    buf: [u8; INLINE_MAX],
    klen: u8,
    vlen: u8,
}

impl Entry {
    /// The key.
    #[inline]
    pub(crate) fn key(&self) -> &[u8] {
        &self.buf[..self.klen as usize]
    }

    /// The value.
    #[inline]
    pub(crate) fn value(&self) -> &[u8] {
        let k = self.klen as usize;
        &self.buf[k..k + self.vlen as usize]
    }
}

#[inline]
const fn klen(meta: u64) -> usize {
    ((meta >> KLEN_SHIFT) & 0xFF) as usize
}

#[inline]
const fn vlen(meta: u64) -> usize {
    ((meta >> VLEN_SHIFT) & 0xFF) as usize
}

#[inline]
const fn is_full(meta: u64) -> bool {
    meta & FULL != 0
}

#[inline]
const fn is_writing(meta: u64) -> bool {
    VERSION.is_locked(meta)
}

impl Inline {
    /// An empty area (all zero: version 0, FULL clear), for the shared placeholder cell of
    /// tables without inline areas (`table.rs`), which nobody writes.
    pub(crate) const fn empty() -> Inline {
        Inline {
            meta: AtomicU64::new(0),
            data: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }

    /// Copies the data words (the caller validates the copy, or holds the lock).
    #[inline(always)]
    fn copy(&self, meta: u64) -> Entry {
        let mut buf = [0u8; INLINE_MAX];
        buf[..8].copy_from_slice(&self.data[0].load(Ordering::Relaxed).to_le_bytes());
        buf[8..].copy_from_slice(&self.data[1].load(Ordering::Relaxed).to_le_bytes());
        Entry {
            buf,
            klen: klen(meta) as u8,
            vlen: vlen(meta) as u8,
        }
    }

    /// A validated copy of the pair whose key is `key`, if the area held it at some instant
    /// during the call. Lock-free; waits only while a rewrite of that very key is in
    /// progress.
    #[inline(always)]
    pub(crate) fn find(&self, key: &[u8]) -> Option<Entry> {
        if key.len() > INLINE_MAX {
            return None;
        }
        self.read_validated(|m| klen(m) == key.len())
            .filter(|e| e.key() == key)
    }

    /// A validated copy of whatever pair the area holds (for iteration).
    pub(crate) fn snapshot(&self) -> Option<Entry> {
        self.read_validated(|_| true)
    }

    /// The seqlock read side: a copy of the pair, validated by re-reading `meta` unchanged,
    /// if the area is full and `wanted(meta)`; waits only while a rewrite is in progress.
    #[inline(always)]
    fn read_validated(&self, wanted: impl Fn(u64) -> bool) -> Option<Entry> {
        loop {
            let m1 = self.meta.load(Ordering::Acquire);
            if !is_full(m1) || !wanted(m1) {
                return None;
            }
            if is_writing(m1) {
                // Wait (with backoff) for the rewrite of this pair to end, then look again.
                VERSION.read_begin(&self.meta);
                continue;
            }
            let e = self.copy(m1);
            // The data loads above are ordered before the re-check.
            if VERSION.validate(&self.meta, m1) {
                return Some(e);
            }
        }
    }

    /// The pair held, read by the lock holder (the only writer: no validation needed).
    #[inline]
    pub(crate) fn locked_entry(&self) -> Option<Entry> {
        let m = self.meta.load(Ordering::Relaxed);
        is_full(m).then(|| self.copy(m))
    }

    /// Whether the area is empty (lock holder only).
    #[inline]
    pub(crate) fn locked_is_empty(&self) -> bool {
        !is_full(self.meta.load(Ordering::Relaxed))
    }

    /// Stores the pair `key`/`value` (which [`fits`]), replacing any pair held. Lock holder
    /// only.
    #[inline]
    pub(crate) fn write(&self, key: &[u8], value: &[u8]) {
        debug_assert!(fits(key.len(), value.len()));
        let mut buf = [0u8; INLINE_MAX];
        buf[..key.len()].copy_from_slice(key);
        buf[key.len()..key.len() + value.len()].copy_from_slice(value);
        // Seqlock write side: the odd version is ordered before the data stores.
        let writing = VERSION.write_begin(&self.meta);
        let lo = u64::from_le_bytes(buf[..8].try_into().unwrap_or([0; 8]));
        let hi = u64::from_le_bytes(buf[8..].try_into().unwrap_or([0; 8]));
        self.data[0].store(lo, Ordering::Relaxed);
        self.data[1].store(hi, Ordering::Relaxed);
        let fields = ((key.len() as u64) << KLEN_SHIFT) | ((value.len() as u64) << VLEN_SHIFT);
        VERSION.write_end(&self.meta, (writing & VERSION_MASK) | fields | FULL);
    }

    /// Stores the pair `key`/`value` (which [`fits`]) into an empty area that no other thread
    /// can reach yet (a successor's bucket during its migration), without reading it first:
    /// the first touch of a fresh page is then a write (one page fault, not a read fault
    /// followed by a copy-on-write fault). The version stays even (2: the area was version 0).
    #[inline]
    pub(crate) fn init(&self, key: &[u8], value: &[u8]) {
        debug_assert!(fits(key.len(), value.len()));
        let mut buf = [0u8; INLINE_MAX];
        buf[..key.len()].copy_from_slice(key);
        buf[key.len()..key.len() + value.len()].copy_from_slice(value);
        let lo = u64::from_le_bytes(buf[..8].try_into().unwrap_or([0; 8]));
        let hi = u64::from_le_bytes(buf[8..].try_into().unwrap_or([0; 8]));
        self.data[0].store(lo, Ordering::Relaxed);
        self.data[1].store(hi, Ordering::Relaxed);
        let fields = ((key.len() as u64) << KLEN_SHIFT) | ((value.len() as u64) << VLEN_SHIFT);
        self.meta
            .store(VERSION.bumped(0) | fields | FULL, Ordering::Release);
    }

    /// Empties the area. Lock holder only. An empty area is left as it is (no store): a
    /// reader of an empty area learns nothing from its version, and the placeholder cell of
    /// a table without inline areas (`table.rs`) is never written.
    #[inline]
    pub(crate) fn clear(&self) {
        let m = self.meta.load(Ordering::Relaxed);
        if !is_full(m) {
            return;
        }
        // The next even version (past a write, were one in progress), no fields.
        let even = VERSION.unlocked(VERSION.locked(m)) & VERSION_MASK;
        self.meta.store(even, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> Inline {
        Inline::empty()
    }

    #[test]
    fn write_find_clear() {
        let a = empty();
        assert!(a.find(b"k").is_none() && a.snapshot().is_none() && a.locked_is_empty());
        let cases: [(&[u8], &[u8]); 6] = [
            (b"", b""),
            (b"12345678", b"abcdefgh"),
            (&[7; 16], b""),
            (b"", &[9; 16]),
            (b"k", b"v"),
            (&[1, 2, 3], &[0; 13]),
        ];
        for (k, v) in cases {
            assert!(fits(k.len(), v.len()));
            a.write(k, v);
            let e = a.find(k).expect("just written");
            assert_eq!((e.key(), e.value()), (k, v));
            let s = a.snapshot().unwrap();
            assert_eq!((s.key(), s.value()), (k, v));
            assert_eq!(a.locked_entry().unwrap().value(), v);
            // Same length, other bytes; other lengths.
            let mut other = k.to_vec();
            if let Some(b) = other.last_mut() {
                *b ^= 1;
                assert!(a.find(&other).is_none());
            }
            other.push(0);
            assert!(a.find(&other).is_none());
            assert!(!is_writing(a.meta.load(Ordering::Relaxed)));
        }
        a.clear();
        assert!(a.find(&[1, 2, 3]).is_none() && a.locked_is_empty());
        assert!(!is_writing(a.meta.load(Ordering::Relaxed)));
        // Clearing an empty area stores nothing.
        let cleared = a.meta.load(Ordering::Relaxed);
        a.clear();
        assert_eq!(a.meta.load(Ordering::Relaxed), cleared);
        assert!(!fits(17, 0) && !fits(8, 9) && fits(8, 8));
        assert!(a.find(&[0; 17]).is_none());
    }

    #[test]
    fn version_wraps_without_touching_fields() {
        let a = empty();
        a.meta.store(VERSION_MASK - 1, Ordering::Relaxed);
        a.write(b"key", b"val");
        let m = a.meta.load(Ordering::Relaxed);
        assert_eq!(m & VERSION_MASK, 0);
        assert_eq!((klen(m), vlen(m), is_full(m)), (3, 3, true));
        assert_eq!(a.find(b"key").unwrap().value(), b"val");
        a.clear();
        assert_eq!(a.meta.load(Ordering::Relaxed), 2);
        let b = empty();
        b.init(b"12345678", b"abcdefgh");
        assert_eq!(b.find(b"12345678").unwrap().value(), b"abcdefgh");
        b.write(b"12345678", b"x");
        assert_eq!(b.find(b"12345678").unwrap().value(), b"x");
        assert!(!is_writing(b.meta.load(Ordering::Relaxed)));
    }

    /// A reader racing a writer that alternates two pairs of the same key sees only whole
    /// values (never a mix of the two).
    #[test]
    fn concurrent_rewrites_are_atomic() {
        let a = empty();
        let n = if cfg!(miri) { 50 } else { 20_000 };
        a.write(b"key", &[0; 13]);
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..n {
                    let v = if i % 2 == 0 { [0xAA; 13] } else { [0x55; 13] };
                    a.write(b"key", &v);
                }
            });
            for _ in 0..n {
                let e = a.find(b"key").expect("always present");
                let v = e.value();
                assert!(v.iter().all(|&b| b == v[0]), "torn value {v:?}");
            }
        });
    }
}
