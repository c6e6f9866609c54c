//! The version protocol of an arena and its tries (`arena.rs`, "Protocol"), on its own so
//! that the loom models (`seq/loom.rs`, `RUSTFLAGS="--cfg loom"`) run this very code on
//! loom's atomics.
//!
//! Each arena has a version word, and each of its 256 tries one more: seqlocks through
//! [`SEQ`] (bit 0 set — odd — while a write is in progress, the counter above it advanced
//! by every write). A write ([`Window`], under the arena's write lock) makes the arena's
//! version odd, then its key's trie's; changes the arena; and makes the trie's version even
//! again, then the arena's. A reader ([`begin`], then its checked atomic reads, then
//! [`SEQ`]`.validate`) of a key validates the key's trie's version: unchanged means no
//! write of that trie began since it read the version, so what it copied is what the trie
//! held then (`Arena::optimistic` says why the trie's version suffices).
//!
//! Orderings (those of [`VersionField`]): `write_begin` is a relaxed store of the odd word
//! then a `Release` fence, so the reader that sees any data store made after it also sees
//! the odd word at its validation (after its `Acquire` fence); `write_end` is a `Release`
//! store, so a reader that sees the even word (an `Acquire` load in `begin`) sees every data
//! store of the write before it.

use orrery_core::sync::{Backoff, PackedWord, VersionField};

#[cfg(all(test, loom))]
mod loom;

/// An arena's or a trie's version: a seqlock word, bit 0 set while a write is in progress
/// (odd), the counter in bits 1..64 bumped by every write.
pub(crate) const SEQ: VersionField = VersionField::new(64, 0, 1, 63);

/// A version of `seq` to validate against: waits while a write is in progress, at most
/// `rounds` backoff steps (`yields`: spins then yields, as `Backoff::snooze`; else spins
/// only); `None` if it is still in progress.
#[inline]
pub(crate) fn begin<W: PackedWord>(seq: &W, rounds: usize, yields: bool) -> Option<u64> {
    let backoff = Backoff::new();
    for _ in 0..rounds {
        if let Some(v) = SEQ.try_read(seq) {
            return Some(v);
        }
        if yields {
            backoff.snooze();
        } else {
            backoff.spin();
        }
    }
    SEQ.try_read(seq)
}

/// A write in progress: the arena's version odd, then its trie's (none for the empty key,
/// which is no trie's). Dropping it — when the change ends, fails or unwinds — makes the
/// trie's version even again, then the arena's, each advanced.
pub(crate) struct Window<'a, W: PackedWord> {
    arena: (&'a W, u64),
    trie: Option<(&'a W, u64)>,
}

impl<'a, W: PackedWord> Window<'a, W> {
    /// Opens the window on the arena's version `arena` and the trie's `trie`. The caller
    /// excludes other writers of both (the arena's write lock).
    pub(crate) fn open(arena: &'a W, trie: Option<&'a W>) -> Window<'a, W> {
        let odd = SEQ.write_begin(arena);
        Window {
            arena: (arena, odd),
            trie: trie.map(|t| (t, SEQ.write_begin(t))),
        }
    }
}

impl<W: PackedWord> Drop for Window<'_, W> {
    fn drop(&mut self) {
        if let Some((t, odd)) = self.trie {
            SEQ.write_end(t, odd);
        }
        SEQ.write_end(self.arena.0, self.arena.1);
    }
}
