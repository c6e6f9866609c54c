//! The reader abstraction every parser of the byte format is written over: [`Bytes`] (a
//! slice under the arena's lock, or an optimistic reader's checked block) and [`Torn`], the
//! restart an optimistic read returns when what it reads cannot be consistent.
//!
//! On a slice [`Bytes::at`] cannot fail, so after inlining the error paths compile away
//! and the locked paths keep plain indexed reads ([`ok`] unwraps them); an optimistic
//! reader's block (`opt.rs`) checks every byte against the block's end.

use crate::mm::Hp;

/// An optimistic attempt saw bytes that cannot be a consistent container (or could not
/// reach a block): retry, or fall back to the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Torn;

/// A read that may find torn bytes (optimistic readers); never `Err` on a locked slice.
pub(crate) type R<T> = Result<T, Torn>;

/// The bytes of one block as the parsers read them: a slice under the arena's lock, or an
/// optimistic reader's [`RawBlock`](crate::mm::RawBlock) (`opt.rs`: bounds-checked
/// atomic loads, [`Torn`] past the block's end). The parsers below are written once,
/// generic over this; on a slice `at` cannot fail, so after inlining the error paths
/// compile away and the locked paths keep plain indexed reads ([`ok`] unwraps them).
pub(crate) trait Bytes: Copy {
    /// Byte `i`.
    fn at(self, i: usize) -> R<u8>;
    /// Bytes readable.
    fn size(self) -> usize;
    /// Prefetches the line holding byte `i` (a hint; any offset).
    fn prefetch(self, i: usize);
}

impl Bytes for &[u8] {
    #[inline(always)]
    fn at(self, i: usize) -> R<u8> {
        Ok(self[i])
    }

    #[inline(always)]
    fn size(self) -> usize {
        self.len()
    }

    #[inline(always)]
    fn prefetch(self, i: usize) {
        orrery_core::prefetch(self.as_ptr().wrapping_add(i));
    }
}

/// The result of a parse of a locked slice, which cannot be torn ([`Bytes::at`] on a
/// slice is never `Err`; a container that fails a check under the lock is a bug).
#[inline(always)]
pub(crate) fn ok<T>(r: R<T>) -> T {
    match r {
        Ok(t) => t,
        Err(Torn) => unreachable!("a container read under the arena's lock is consistent"),
    }
}

/// The little-endian u16 at `i`.
#[inline(always)]
pub(crate) fn u16_in<B: Bytes>(b: B, i: usize) -> R<usize> {
    Ok(usize::from(u16::from_le_bytes([b.at(i)?, b.at(i + 1)?])))
}

/// The little-endian u32 at `i`.
#[inline(always)]
pub(crate) fn u32_in<B: Bytes>(b: B, i: usize) -> R<u32> {
    Ok(u32::from_le_bytes([
        b.at(i)?,
        b.at(i + 1)?,
        b.at(i + 2)?,
        b.at(i + 3)?,
    ]))
}

/// The Hyperion Pointer stored at `i`.
#[inline(always)]
pub(crate) fn hp_in<B: Bytes>(b: B, i: usize) -> R<Hp> {
    Ok(Hp::from_bytes(&[
        b.at(i)?,
        b.at(i + 1)?,
        b.at(i + 2)?,
        b.at(i + 3)?,
        b.at(i + 4)?,
    ]))
}
