//! The bucket's version/lock word and its protocol (the [module docs](super), "Bucket
//! layout"): the seqlock snapshot readers take, the writer's lock, edit and publication,
//! the abandon path, and the *frozen* mark a migration sets.
//!
//! [`Bucket`] is generic over its atomic word ([`PackedWord`]): the index uses
//! `std::sync::atomic::AtomicU64` (the default), and the loom models (`bucket/loom.rs`,
//! `RUSTFLAGS="--cfg loom"`) run this very code on loom's atomics.

use std::sync::atomic::{AtomicU64, Ordering};

use orrery_core::alloc::Zeroable;
use orrery_core::sync::{Backoff, PackedWord, VersionField};

use super::Line;

/// The bucket's version/lock field: lock bit 0, a 30-bit counter at bits 1..31 of word 0.
pub(crate) const VERSION: VersionField = VersionField::new(64, 0, 1, 30);
/// Bit 31 of word 0: the bucket is *frozen* — a growth is copying its table, and no
/// writer may lock it any more (§5 "Resizing": buckets are marked before they are copied).
/// Readers ignore it (it is not the lock bit), so they keep reading a frozen table.
pub(crate) const FROZEN: u64 = 1 << 31;
/// The bits of word 0 that belong to the version field.
pub(super) const VERSION_MASK: u64 = 0xFFFF_FFFF;

/// One 64-byte bucket: a cache line of eight atomic words (layout in the module docs).
#[repr(C, align(64))]
pub(crate) struct Bucket<W = AtomicU64> {
    words: [W; 8],
}

const _: () = assert!(size_of::<Bucket>() == 64);
const _: () = assert!(align_of::<Bucket>() == 64);

// SAFETY: a `Bucket` is eight `AtomicU64`s; all-zero bytes are eight atomics holding 0: an
// unlocked bucket of version 0 with four empty entries.
unsafe impl Zeroable for Bucket {}

impl<W: PackedWord> Bucket<W> {
    /// A bucket whose word `i` is `f(i)` (tests and loom models; the index's buckets come
    /// zeroed from the table's array).
    #[cfg(test)]
    pub(crate) fn from_fn(f: impl FnMut(usize) -> W) -> Bucket<W> {
        Bucket {
            words: std::array::from_fn(f),
        }
    }

    /// Word `i` (the loom models' broken reader).
    #[cfg(all(test, loom))]
    pub(super) fn word(&self, i: usize) -> &W {
        &self.words[i]
    }

    /// A consistent snapshot of the bucket (seqlock read: waits while a writer holds it,
    /// retries if the version moved).
    #[inline]
    pub(crate) fn read(&self) -> Line {
        loop {
            let seen = VERSION.read_begin(&self.words[0]);
            let mut line = Line::default();
            line.words[0] = seen;
            for (dst, src) in line.words.iter_mut().zip(&self.words).skip(1) {
                *dst = src.load_word(Ordering::Relaxed);
            }
            if VERSION.validate(&self.words[0], seen) {
                return line;
            }
        }
    }

    /// The current word 0 (the version) for a later [`Bucket::unchanged`] check: waits
    /// while a writer holds the bucket.
    #[inline]
    pub(crate) fn version(&self) -> u64 {
        VERSION.read_begin(&self.words[0])
    }

    /// Whether the bucket is still as it was when [`Bucket::version`] (or a snapshot's
    /// [`Line::version`]) returned `seen`; orders the reads made since before the check.
    #[inline]
    pub(crate) fn unchanged(&self, seen: u64) -> bool {
        VERSION.validate(&self.words[0], seen)
    }

    /// The address of the line, for prefetching.
    #[inline]
    pub(crate) fn addr(&self) -> *const u8 {
        (self as *const Self).cast()
    }

    /// Locks the bucket (spinning with backoff while another writer holds it); `None` if
    /// it is frozen. A caller may block here only while it holds no other bucket, or
    /// holds buckets of lower index that it locked the same way (lock order), so that
    /// two writers never wait for each other.
    pub(crate) fn lock(&self) -> Option<BucketGuard<'_, W>> {
        let backoff = Backoff::new();
        loop {
            let seen = VERSION.read_begin(&self.words[0]);
            if seen & FROZEN != 0 {
                return None;
            }
            if let Some(g) = self.try_lock_at(seen) {
                return Some(g);
            }
            backoff.spin();
        }
    }

    /// Locks the bucket if its word 0 is still `seen` and not frozen (the §5 "lock and
    /// verify unchanged" compare-and-swap). Never waits.
    pub(crate) fn try_lock_at(&self, seen: u64) -> Option<BucketGuard<'_, W>> {
        if seen & FROZEN != 0 || !VERSION.try_lock(&self.words[0], seen) {
            return None;
        }
        let mut line = Line::default();
        line.words[0] = VERSION.locked(seen);
        for (dst, src) in line.words.iter_mut().zip(&self.words).skip(1) {
            // Relaxed: the lock excludes other writers, and our own stores are ordered.
            *dst = src.load_word(Ordering::Relaxed);
        }
        Some(BucketGuard {
            bucket: self,
            seen,
            old: line,
            line,
        })
    }

    /// Locks the bucket if no writer holds it and it is not frozen. Never waits.
    pub(crate) fn try_lock(&self) -> Option<BucketGuard<'_, W>> {
        let seen = VERSION.try_read(&self.words[0])?;
        self.try_lock_at(seen)
    }

    /// Marks the bucket frozen (waiting while a writer holds it): from then on no writer
    /// can lock it. Changes word 0, so a reader straddling the mark retries its snapshot.
    pub(crate) fn freeze(&self) {
        loop {
            let seen = VERSION.read_begin(&self.words[0]);
            if seen & FROZEN != 0
                || self.words[0].cas_word(seen, seen | FROZEN, Ordering::AcqRel, Ordering::Relaxed)
            {
                return;
            }
        }
    }

    /// Clears the frozen mark (a growth that failed gives the table back to writers).
    pub(crate) fn unfreeze(&self) {
        // Nobody locks a frozen bucket, so only a concurrent `freeze` (a no-op on a frozen
        // word) can race this compare-and-swap; it is retried until it lands.
        loop {
            let w = self.words[0].load_word(Ordering::Relaxed);
            if self.words[0].cas_word(w, w & !FROZEN, Ordering::Release, Ordering::Relaxed) {
                return;
            }
        }
    }
}

impl Line {
    /// Word 0 as read (the version, with entry 0's high bits).
    #[inline]
    pub(crate) fn version(&self) -> u64 {
        self.words[0]
    }
}

/// A locked bucket: edit [`BucketGuard::line`]; dropping the guard stores the changes and
/// unlocks (advancing the version, which invalidates concurrent readers' snapshots).
pub(crate) struct BucketGuard<'a, W: PackedWord = AtomicU64> {
    bucket: &'a Bucket<W>,
    /// Word 0 before the lock.
    seen: u64,
    old: Line,
    /// The bucket's contents, edited in place by the lock holder.
    pub(crate) line: Line,
}

impl<W: PackedWord> BucketGuard<'_, W> {
    /// Word 0 as it was when the bucket was locked (unlocked, not frozen).
    #[inline]
    pub(crate) fn seen(&self) -> u64 {
        self.seen
    }

    /// Unlocks without publishing the edits of [`BucketGuard::line`]: word 0 goes back to
    /// exactly what it was before the lock. Sound because nothing was stored (edits are
    /// only stored by `drop`) and readers do not read a locked bucket, so a snapshot
    /// validated against the old word is still true.
    pub(crate) fn abandon(self) {
        self.bucket.words[0].store_word(self.seen, Ordering::Release);
        std::mem::forget(self);
    }
}

impl<W: PackedWord> Drop for BucketGuard<'_, W> {
    fn drop(&mut self) {
        for i in 1..8 {
            if self.line.words[i] != self.old.words[i] {
                self.bucket.words[i].store_word(self.line.words[i], Ordering::Relaxed);
            }
        }
        let locked = (self.old.words[0] & VERSION_MASK) | (self.line.words[0] & !VERSION_MASK);
        VERSION.write_end(&self.bucket.words[0], locked);
    }
}
