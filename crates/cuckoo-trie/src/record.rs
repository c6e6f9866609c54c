//! Key-value records: the objects leaves reference (§4, "the leaf … stores a pointer to the
//! full key"). A record is immutable once published: an upsert publishes a new record and
//! retires the old one through the epoch collector, so a reader holding a guard can read a
//! record it reached without further validation.
//!
//! Layout: `[key_len: u32][value_len: u32][key bytes][value bytes]`, 8-aligned, from an
//! `orrery_core` [`SizeClassPool`] (classes of 16 bytes up to 1 KiB; larger records from
//! the global allocator, as the pool does).

use std::ptr::NonNull;
use std::sync::Arc;

use orrery_core::alloc::SizeClassPool;
use orrery_core::api::Error;
use orrery_core::sync::Guard;

/// Bytes before the key.
const HEADER: usize = 8;

/// The record allocator (shared with deferred frees through an `Arc`).
pub(crate) struct Records {
    pool: SizeClassPool,
}

impl Records {
    /// An allocator with empty pools.
    pub(crate) fn new() -> Arc<Records> {
        let pool = SizeClassPool::with_step(16, 1024, 8)
            .unwrap_or_else(|e| unreachable!("the record classes are valid: {e}"));
        Arc::new(Records { pool })
    }

    /// Bytes held by the pools and large records.
    pub(crate) fn bytes(&self) -> usize {
        self.pool.bytes()
    }

    /// A new record holding `key` and `value` (lengths within the API limits). Fails with
    /// [`Error::OutOfMemory`], allocating nothing.
    pub(crate) fn alloc(&self, key: &[u8], value: &[u8]) -> Result<NonNull<u8>, Error> {
        let size = HEADER + key.len() + value.len();
        let p = self.pool.try_alloc(size)?;
        // SAFETY: `p` is a fresh block of at least `size` bytes, 8-aligned, owned here.
        unsafe { write(p, key, value) };
        Ok(p)
    }

    /// Frees a record.
    ///
    /// # Safety
    /// `p` came from [`Records::alloc`] of this allocator, is freed once, and no thread can
    /// read it any more (unreachable and past its grace period, or never published).
    pub(crate) unsafe fn free(&self, p: NonNull<u8>) {
        // SAFETY: the record is live until this call (contract).
        let (k, v) = unsafe { read(p) };
        let size = HEADER + k.len() + v.len();
        // SAFETY: allocated from this pool with `size` bytes; freed once (contract).
        unsafe { self.pool.free(p, size) };
    }

    /// Hands an unlinked record to the epoch collector.
    ///
    /// # Safety
    /// `p` came from [`Records::alloc`] of `this`, was unlinked from the trie (no thread
    /// pinning from now on can reach it), and is retired once.
    pub(crate) unsafe fn retire(this: &Arc<Records>, guard: &Guard, p: NonNull<u8>) {
        let records = Arc::clone(this);
        let free = move || {
            // SAFETY: runs after every guard that could have reached `p` is dropped; the
            // `Arc` keeps the pool alive; retired once, so freed once.
            unsafe { records.free(p) }
        };
        // SAFETY: `free` touches only `p` (unreachable for guards pinned after this call)
        // and its own `Arc`; sound on any thread once the grace period ends.
        unsafe { guard.defer_unchecked(free) };
    }
}

/// Writes a record's header, key and value.
///
/// # Safety
/// `p` is writable for `HEADER + key.len() + value.len()` bytes, 8-aligned, and not
/// shared yet.
unsafe fn write(p: NonNull<u8>, key: &[u8], value: &[u8]) {
    let base = p.as_ptr();
    let header = (key.len() as u64) | ((value.len() as u64) << 32);
    // SAFETY: 8-aligned and in bounds (contract).
    unsafe { base.cast::<u64>().write(header) };
    // SAFETY: in bounds of the block (contract).
    let kp = unsafe { base.add(HEADER) };
    // SAFETY: the key bytes are in bounds of the block and do not overlap `key`.
    unsafe { std::ptr::copy_nonoverlapping(key.as_ptr(), kp, key.len()) };
    // SAFETY: in bounds of the block (contract).
    let vp = unsafe { base.add(HEADER + key.len()) };
    // SAFETY: the value bytes follow the key, in bounds, not overlapping `value`.
    unsafe { std::ptr::copy_nonoverlapping(value.as_ptr(), vp, value.len()) };
}

/// The key and value of a record.
///
/// # Safety
/// `p` is a live record (from [`Records::alloc`], not freed, and not freed while the
/// returned slices are used: the caller holds an epoch guard that was pinned before the
/// record was reachable-and-read, or excludes frees otherwise).
pub(crate) unsafe fn read<'a>(p: NonNull<u8>) -> (&'a [u8], &'a [u8]) {
    let base = p.as_ptr();
    // SAFETY: a live record starts with its 8-aligned header, never written after
    // publication.
    let header = unsafe { base.cast::<u64>().read() };
    let (kl, vl) = ((header & 0xFFFF_FFFF) as usize, (header >> 32) as usize);
    // SAFETY: inside the live record.
    let kp = unsafe { base.add(HEADER) };
    // SAFETY: the key follows the header inside the record, immutable while live.
    let key = unsafe { std::slice::from_raw_parts(kp, kl) };
    // SAFETY: inside the live record.
    let vp = unsafe { base.add(HEADER + kl) };
    // SAFETY: the value follows the key inside the record, immutable while live.
    let value = unsafe { std::slice::from_raw_parts(vp, vl) };
    (key, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let r = Records::new();
        for (k, v) in [
            (&b""[..], &b""[..]),
            (b"key", b"value"),
            (&[0u8; 300], &[7u8; 2000]),
        ] {
            let p = r.alloc(k, v).unwrap();
            assert_eq!(p.as_ptr() as usize % 8, 0);
            // SAFETY: live until freed below, by this thread only.
            let (k2, v2) = unsafe { read(p) };
            assert_eq!((k2, v2), (k, v));
            // SAFETY: allocated above, never shared, freed once.
            unsafe { r.free(p) };
        }
    }
}
