//! Container jump tables (§3.3): up to 49 entries after a container's header that let a
//! search start near its T-Node instead of at the payload's first byte.
//!
//! # Layout
//!
//! ```text
//! header bits 24..27: J, the number of 7-entry groups (0..=7)
//! bytes 4 .. 4 + 28·J: entries, u32 LE each: bits 0..8 a T-Node's key, 8..32 its offset
//!                      in the block; ascending by key; an entry of offset 0 ends the table
//! payload from 4 + 28·J
//! ```
//!
//! A search takes the last entry whose key is at most the key's next byte and starts at
//! its T-Node (decoding that T-Node's delta from the entry's key), else at the payload's
//! start. Only a container's own payload has a table (embedded containers are at most 255
//! bytes), and only extended containers (over 2,016 bytes) get one.
//!
//! This is the reading half: the layout and the seeks every search uses (the locked
//! paths, the optimistic reader, the ordered walks). The writer's half — entries shifted
//! by splices, tables rebuilt — is `write/cjt.rs`.

use super::bytes::{Bytes, R, ok, u32_in};
use super::format::HEADER;

/// Entries per group.
pub(crate) const GROUP: usize = 7;
/// Most groups (3 header bits).
pub(crate) const MAX_GROUPS: usize = 7;

/// The number of 7-entry groups of a container's jump table (header bits 24..27).
#[inline]
pub(crate) fn groups(chunk: &[u8]) -> usize {
    usize::from(chunk[3] & 7)
}

/// Where a container's payload starts (after its jump table).
#[inline]
pub(crate) fn payload_start(chunk: &[u8]) -> usize {
    HEADER + 4 * GROUP * groups(chunk)
}

/// Entry `i`: its key and offset (0: the table ends).
#[inline]
pub(crate) fn entry(chunk: &[u8], i: usize) -> (u8, usize) {
    let at = HEADER + 4 * i;
    let e = u32::from_le_bytes([chunk[at], chunk[at + 1], chunk[at + 2], chunk[at + 3]]);
    (e as u8, (e >> 8) as usize)
}

/// Where a search for a key whose next byte is `k0` starts in a container's payload: the
/// offset of a T-Node (or the payload's start) and the key its delta is decoded from.
///
/// Only the table is read while choosing the entry; the payload is touched once, at the
/// chosen T-Node (reading each candidate's T-Node would cost a cache miss per entry
/// passed; measured: `docs/results/hyperion.md`, container jump table profile).
#[inline]
pub(crate) fn seek(chunk: &[u8], k0: u8) -> (usize, u8) {
    ok(seek_in(chunk, k0))
}

/// [`seek`] on any [`Bytes`] (an optimistic reader's block: at most 49 entries read,
/// each checked).
#[inline(always)]
pub(crate) fn seek_in<B: Bytes>(chunk: B, k0: u8) -> R<(usize, u8)> {
    let groups = usize::from(chunk.at(3)? & 7);
    let mut best = None;
    for i in 0..GROUP * groups {
        let e = u32_in(chunk, HEADER + 4 * i)?;
        let (k, off) = (e as u8, (e >> 8) as usize);
        if off == 0 || k > k0 {
            break;
        }
        best = Some((k, off));
    }
    Ok(match best {
        Some((k, off)) => {
            // The T-Node's jump table (up to 34 bytes on) may be on the next cache line.
            chunk.prefetch(off + 34);
            (off, k.wrapping_sub((chunk.at(off)? >> 2) & 7))
        }
        None => (HEADER + 4 * GROUP * groups, 0),
    })
}

/// [`payload_start`] on any [`Bytes`].
#[inline(always)]
pub(crate) fn payload_start_in<B: Bytes>(chunk: B) -> R<usize> {
    Ok(HEADER + 4 * GROUP * usize::from(chunk.at(3)? & 7))
}
/// As [`seek`], but from the last entry whose key is *below* `k0`, so that a writer
/// reaching the T-Node of `k0` (or the place for it) knows its previous sibling's key.
#[inline]
pub(crate) fn seek_before(chunk: &[u8], k0: u8) -> (usize, u8) {
    match k0.checked_sub(1) {
        Some(k) => seek(chunk, k),
        None => (payload_start(chunk), 0),
    }
}

/// The key of the first entry of a container's jump table above `k0` (`None`: no such
/// entry, or no table).
pub(crate) fn next_entry_key(chunk: &[u8], k0: u8) -> Option<u8> {
    (0..GROUP * groups(chunk))
        .map(|i| entry(chunk, i))
        .take_while(|&(_, off)| off != 0)
        .map(|(k, _)| k)
        .find(|&k| k > k0)
}

/// The entries of a container's jump table: `(key, offset)`.
#[cfg(test)]
pub(crate) fn entries(chunk: &[u8]) -> Vec<(u8, usize)> {
    (0..GROUP * groups(chunk))
        .map(|i| entry(chunk, i))
        .take_while(|&(_, off)| off != 0)
        .collect()
}
