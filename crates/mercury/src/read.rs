//! Lookups: `get_with` (optimistic, lock-free) and the batched `get_many` pipeline.
//!
//! A reader never takes a bucket lock. It reads the bucket's inline area (a validated copy,
//! `inline_pair.rs`), then Acquire-loads the bucket word, walks the chain with
//! Acquire loads of the `next` words (comparing tags before keys), and reads the value (a
//! zero-copy slice of an immutable long value, or a seqlock-validated copy of a short one).
//! A miss is confirmed by re-loading the bucket word: if the bucket was marked MOVED in the
//! meantime a migration may have re-linked the chain under the reader, so the lookup is
//! retried in the successor table. Why this is linearizable is argued in the crate docs
//! ("Linearizability").

use orrery_core::api::MAX_KEY_LEN;

#[cfg(test)]
use crate::link::BucketWord;
use crate::node;
use crate::raw::{Hashed, Inner, find, hashed, successor, wait_migrated};
use crate::table::Table;
use orrery_core::sync::{Guard, pin};

/// Keys in flight in one stage of the `get_many` pipeline.
const BATCH: usize = 16;

use orrery_core::prefetch;

/// Looks `key` (hashed `h`) up starting at table `t`; calls `f` with its value if present.
///
/// Per bucket: the inline area first, then the bucket word, then the chain (this order is
/// what makes a miss sound when an inline pair moves into a node; see "Linearizability" in
/// the crate docs). Both the area and the word are in the bucket's one cache line.
#[inline(always)]
pub(crate) fn lookup<'g, R>(
    mut t: &'g Table,
    h: Hashed,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> R,
    guard: &'g Guard,
) -> Option<R> {
    loop {
        let (tt, idx) = peek_bucket(t, h.hash);
        if let Some(e) = tt.cell(idx).inline.find(key) {
            return Some(f(e.value()));
        }
        let w = tt.load(idx);
        if w.is_moved() {
            wait_migrated(tt, idx, w);
            t = successor(tt);
            continue;
        }
        let _ = guard;
        // SAFETY: `w` was loaded from `tt`, valid under `guard`, which outlives this call.
        if let Some(n) = unsafe { find(w.head(), h, key) } {
            // SAFETY: `n` was reachable under `guard`, so it stays allocated while `f` runs.
            return Some(unsafe { node::with_value(n, f) });
        }
        // A miss is final unless a migration of this bucket began meanwhile (then the walk
        // may have followed re-linked `next` words): see "Linearizability" in the crate docs.
        if !tt.load(idx).is_moved() {
            return None;
        }
        // Retry from `tt`: its bucket is MOVED, so the next round waits for the bucket's
        // migration and continues in the successor.
        t = tt;
    }
}

/// Continues a lookup with the chain of bucket word `w`, loaded from bucket `idx` of `t`
/// after its inline area was found not to hold the key (the second half of [`lookup`], for
/// tests that resume a lookup from a stale bucket word).
#[cfg(test)]
pub(crate) fn lookup_at<'g, R>(
    t: &'g Table,
    idx: usize,
    w: BucketWord,
    h: Hashed,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> R,
    guard: &'g Guard,
) -> Option<R> {
    // SAFETY: `w` was loaded from `t`, valid under `guard`, which outlives this call.
    if let Some(n) = unsafe { find(w.head(), h, key) } {
        // SAFETY: `n` was reachable under `guard`, so it stays allocated while `f` runs.
        return Some(unsafe { node::with_value(n, f) });
    }
    // A miss is final unless a migration of this bucket began meanwhile (then the walk may
    // have followed re-linked `next` words): see "Linearizability" in the crate docs.
    if !t.load(idx).is_moved() {
        return None;
    }
    // Retry from this table: the bucket is MOVED, so `lookup` waits for its migration and
    // continues in the successor.
    lookup(t, h, key, f, guard)
}

impl Inner {
    /// Calls `f` with the value of `key` if present.
    #[inline(always)]
    pub(crate) fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if key.len() > MAX_KEY_LEN {
            return None;
        }
        let h = hashed(key);
        // Start the bucket's miss before the pin's barrier (see `Inner::prefetch_bucket`).
        self.prefetch_bucket(h.hash);
        let guard = pin();
        lookup(self.current(&guard), h, key, f, &guard)
    }

    /// Looks up every key of `keys`, calling `f(i, value)` in order of `i`.
    ///
    /// A three-stage software pipeline over batches of [`BATCH`] keys overlaps their DRAM
    /// accesses: (1) hash every key, pick its bucket and prefetch the bucket's line; (2) load
    /// every bucket word and prefetch the head node when it must be read (its tag matches or
    /// it is not LAST); (3) finish each lookup in order with the ordinary protocol (whose
    /// loads now mostly hit the cache). One guard covers the whole batch.
    pub(crate) fn get_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        let guard = pin();
        let mut hs = [Hashed { hash: 0, tag: 0 }; BATCH];
        let mut tables: [Option<(&Table, usize)>; BATCH] = [None; BATCH];
        for (c, chunk) in keys.chunks(BATCH).enumerate() {
            let t = self.current(&guard);
            for (i, key) in chunk.iter().enumerate() {
                if key.len() > MAX_KEY_LEN {
                    tables[i] = None;
                    continue;
                }
                let h = hashed(key);
                hs[i] = h;
                let (tt, idx) = peek_bucket(t, h.hash);
                prefetch(tt.bucket(idx));
                tables[i] = Some((tt, idx));
            }
            for (i, slot) in tables.iter().enumerate().take(chunk.len()) {
                let Some((tt, idx)) = *slot else { continue };
                if tt.cell(idx).inline.find(chunk[i]).is_some() {
                    continue;
                }
                let w = tt.load(idx);
                if w.is_moved() {
                    continue;
                }
                let head = w.head();
                if let Some(n) = head.node()
                    && (head.tag() == hs[i].tag || !head.is_last())
                {
                    prefetch(n.as_ptr());
                }
            }
            for (i, key) in chunk.iter().enumerate() {
                let base = c * BATCH + i;
                let found = match tables[i] {
                    Some((tt, _)) => lookup(tt, hs[i], key, |v| f(base, Some(v)), &guard),
                    None => None,
                };
                if found.is_none() {
                    f(base, None);
                }
            }
        }
    }
}

/// The bucket a lookup of hash `h` would read first, following only migrated prefixes (no
/// bucket word is loaded: this only picks the line to prefetch).
#[inline]
fn peek_bucket(mut t: &Table, h: u64) -> (&Table, usize) {
    loop {
        let idx = t.index(h);
        match t.next() {
            Some(next) if t.is_migrated(idx, next) => t = next,
            _ => return (t, idx),
        }
    }
}
