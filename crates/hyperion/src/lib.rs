//! Hyperion: a memory-dense ordered key-value index — a 65,536-ary trie of exact-fit
//! containers with its own memory manager (Mäsker et al., SIGMOD '19;
//! `shared/papers/hyperion.md`).
//!
//! Every trie node is a *container* holding 16-bit partial keys as a two-level internal
//! trie of T-Nodes and S-Nodes, laid out in pre-order in a byte array that grows in 32-byte
//! steps (§3.1). Sibling keys are delta encoded, small child containers are *embedded* in
//! their parent's bytes (and ejected when they outgrow 255 bytes), unique suffixes are
//! *path compressed*, and containers are addressed by 5-byte *Hyperion Pointers* into a
//! memory manager of superbins, metabins, bins and chunks (§3.2). Writes shift a
//! container's bytes in place; large containers are split vertically into up to 64 parts
//! behind a chained pointer; searches enter a container through its jump table, skip
//! T-Node groups by their jump successors and enter a T-Node's S-Nodes through its jump
//! table (§3.3); range scans seek to their bound the same way and then read containers
//! front to back (`iter.rs`).
//!
//! # Usage
//!
//! ```
//! use orrery_hyperion::Hyperion;
//! use std::ops::{Bound, ControlFlow};
//!
//! let h = Hyperion::new();
//! h.insert(b"that", b"1").unwrap();
//! h.insert(b"the", b"2").unwrap();
//! h.insert(b"to", b"3").unwrap();
//! assert_eq!(h.get(b"the").as_deref(), Some(&b"2"[..]));
//! let mut keys = Vec::new();
//! h.scan(Bound::Included(&b"th"[..]), &mut |k, _| {
//!     keys.push(k.to_vec());
//!     ControlFlow::Continue(())
//! });
//! assert_eq!(keys, [b"that".to_vec(), b"the".to_vec(), b"to".to_vec()]);
//! let down: Vec<_> = h.range(&b"th"[..]..).rev().map(|e| e.key().to_vec()).collect();
//! assert_eq!(down, [b"to".to_vec(), b"the".to_vec(), b"that".to_vec()]);
//! assert_eq!(h.update(b"to", |v| [v, b"!"].concat()), Ok(true));
//! assert_eq!(h.get(b"to").as_deref(), Some(&b"3!"[..]));
//! ```
//!
//! The names and their meanings are the ones every Orrery index shares
//! ([`orrery_core::api`], "Naming"); options come from [`Config::builder`].
//!
//! # Consistency guarantees
//!
//! Those of [`orrery_core::api`]. Concurrency is the paper's arenas: the tries of the 256
//! first key bytes are spread over [`Config::arenas`] arenas, each with its own memory
//! manager, a reader-writer spin lock and a version per trie. Writes take their arena's
//! lock, so point operations are linearizable. Point reads ([`Hyperion::get`],
//! [`Hyperion::get_with`], [`Hyperion::contains_key`], [`Hyperion::get_many`]) take no
//! lock: they are optimistic, validated by their key's trie's version, with memory
//! reclaimed through `orrery_core::sync` epochs, so they wait neither for writers of
//! other arenas nor — except while a change of their trie is being applied, and after a
//! few failed attempts, when they fall back to the lock — for writers of their own
//! (`arena.rs`, "Protocol"). Their callbacks run on a validated copy of the value with no
//! lock held. Scans copy one batch of one trie at a time: under the shared lock when it
//! is free, else optimistically (validated per pair), else — when writes of that very
//! trie keep tearing the attempts — under a lock writers cannot starve (`iter.rs`,
//! "Locks and optimistic copies").
//!
//! # Memory usage
//!
//! Keys and values are stored inside the containers (values longer than 8 bytes in blocks
//! of the same memory manager), so [`Hyperion::memory_usage`] reports everything as
//! `structure_bytes` (and `key_value_bytes = 0`): the exact bytes of the arenas' memory
//! managers (every bin mapping at its reserved size, extended heap blocks at capacity,
//! metadata) and of the root values.
//!
//! # Modules
//!
//! Floors, bottom first: no module imports one above it (`scripts/module-deps.py`).
//!
//! | module | what it holds |
//! |---|---|
//! | `mm/` | the memory manager: superbins, metabins, bins, chunks; Hyperion Pointers; the optimistic readers' directory |
//! | `prep` | key pre-processing (§3.4) |
//! | `config` | [`Config`] and its builder |
//! | `node/` | the container byte format and its readers: parser, point searches, ordered walks, the jump tables' reading halves |
//! | `opt` | the optimistic (checked) lookup and its `get_many` pipeline |
//! | `edit` | decoding and encoding single nodes; new subtrees (path-compressed splits) |
//! | `arena` | arenas, tries, roots; the locking and versioning protocol |
//! | `write/` | in-place writes (insert, remove, splices, ejection, exact-fit moves), the jump tables' writing halves, container splits |
//! | `index` | the [`Hyperion`] type and the key routing every layer above the arenas shares |
//! | `iter` | ordered copies and [`Iter`] |

mod arena;
mod config;
mod edit;
mod index;
mod iter;
mod mm;
mod node;
mod opt;
mod prep;
mod prims;
mod seq;
mod write;

use std::ops::{Bound, ControlFlow};
use std::sync::atomic::{AtomicIsize, Ordering};

use iter::ScanBatch;
use orrery_core::api::{self, MemoryUsage, ScanVisitor};
use orrery_core::sync::CachePadded;

use arena::{Arena, Decision};
pub use config::{Config, ConfigBuilder};
pub use index::Hyperion;
use index::TrieKey;
pub use iter::Iter;
use iter::{BATCH, SCAN_BATCH};
pub use mm::MemStats;
pub use write::Compacted;

/// Lookups a [`Hyperion::get_many`] pipeline keeps in flight.
pub(crate) const GET_MANY_WINDOW: usize = 16;

impl std::fmt::Debug for Hyperion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hyperion")
            .field("len", &self.len())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Hyperion {
    /// Maps nothing until the first insert: never out of memory.
    fn build(config: Config) -> api::Result<Self> {
        let arenas = (0..config.arenas)
            .map(|_| CachePadded::new(Arena::new(config.eject_threshold)))
            .collect();
        Ok(Hyperion {
            arenas,
            len: CachePadded::new(AtomicIsize::new(0)),
            config,
        })
    }

    fn config_ref(&self) -> &Config {
        &self.config
    }

    /// Lookup: `f`'s result on the value of `key`, `None` when absent.
    ///
    /// Optimistic: the lookup takes no lock; it copies the value into a (thread-local)
    /// buffer and validates its trie's version, and `f` runs on that validated copy with
    /// no lock held. After a few attempts invalidated by writers of the same trie it
    /// falls back to the arena's lock, taken exclusively (the shared side can starve under
    /// a continuous writer; `f` then runs under it: it must be short and must not call
    /// back into the index).
    fn read_key<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let key = self.trie_key(key);
        self.arena_of(&key).get_with(&key, f)
    }

    /// [`Hyperion::get_with`] through the arena's read lock, never optimistically: the
    /// path an optimistic read falls back to, for benchmarks that compare the two in one
    /// binary (feature `bench-internals`; not part of the API). `f` runs under the read
    /// lock.
    #[cfg(feature = "bench-internals")]
    pub fn get_with_locked<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        if key.len() > api::MAX_KEY_LEN {
            return None;
        }
        let key = self.trie_key(key);
        let a = self.arena_of(&key).read();
        a.get(&key).map(f)
    }

    /// Bytes the process-wide block heap of extended blocks holds (diagnostics; feature
    /// `bench-internals`).
    #[cfg(feature = "bench-internals")]
    pub fn paged_bytes() -> usize {
        mm::paged_bytes()
    }

    /// Looks up every key of `keys`, calling `f(i, value)` in order of `i`.
    ///
    /// A pipeline: the keys are taken in windows of 16, and the window's
    /// lookups advance in turn one stage at a time — container pointer, jump table,
    /// T-Node, S-Node — each stage prefetching what the next one reads, so the cache
    /// misses of the window's keys overlap instead of following one another.
    ///
    /// Optimistic, as [`Hyperion::get_with`]: a window's lookups copy their values and
    /// run without locks, and `f` sees them once the versions of the window's keys' tries
    /// validate, with no lock held. A window that fails a few attempts takes its arenas'
    /// locks (exclusively, in ascending arena order: writers hold one arena lock at a
    /// time, so the order rules out deadlock) and `f` then runs under them: it must be
    /// short and must not call back into the index.
    fn read_keys(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        let mut tkeys: Vec<Option<TrieKey<'_>>> = Vec::with_capacity(GET_MANY_WINDOW);
        let mut order: Vec<usize> = Vec::with_capacity(GET_MANY_WINDOW);
        let mut outs: Vec<Vec<u8>> = (0..GET_MANY_WINDOW).map(|_| Vec::new()).collect();
        let mut found: Vec<bool> = Vec::with_capacity(GET_MANY_WINDOW);
        let arena = |k: &[u8]| k.first().map_or(0, |&b| usize::from(b) % self.arenas.len());
        for (w, window) in keys.chunks(GET_MANY_WINDOW).enumerate() {
            tkeys.clear();
            tkeys.extend(
                window
                    .iter()
                    .map(|k| (k.len() <= api::MAX_KEY_LEN).then(|| self.trie_key(k))),
            );
            order.clear();
            order.extend(tkeys.iter().flatten().map(|k| arena(k)));
            order.sort_unstable();
            order.dedup();
            let ok = {
                let _guard = orrery_core::sync::pin();
                self.window_optimistic(&tkeys, &mut outs, &mut found)
            };
            if ok {
                for (i, (&hit, out)) in found.iter().zip(&outs).enumerate() {
                    f(w * GET_MANY_WINDOW + i, hit.then_some(&out[..]));
                }
                continue;
            }
            let guards: Vec<_> = order.iter().map(|&a| self.arenas[a].fallback()).collect();
            let inner = |k: &[u8]| &*guards[order.binary_search(&arena(k)).expect("locked")];
            let mut probes: Vec<node::Probe<'_>> = tkeys
                .iter()
                .map(|k| {
                    let Some(k) = k else {
                        return node::Probe::done(None);
                    };
                    let a = inner(k);
                    match (k.len() >= 2).then(|| a.roots[usize::from(k[0])].hp) {
                        Some(Some(root)) => node::Probe::new(&a.mm, root, &k[1..]),
                        Some(None) => node::Probe::done(None),
                        None => node::Probe::done(a.get(k)),
                    }
                })
                .collect();
            let mut pending = probes.len();
            while pending > 0 {
                pending = 0;
                for (p, k) in probes.iter_mut().zip(&tkeys) {
                    if let Some(k) = k
                        && !p.step(&inner(k).mm)
                    {
                        pending += 1;
                    }
                }
            }
            for (i, p) in probes.iter().enumerate() {
                f(w * GET_MANY_WINDOW + i, p.result());
            }
        }
    }

    /// The optimistic attempts of a [`Hyperion::get_many`] window (the caller is pinned):
    /// whether one validated — every key's trie's version, so writes to other tries of
    /// the same arenas do not tear it — then with `found[i]` and `outs[i]` the result of
    /// key `i`.
    fn window_optimistic(
        &self,
        tkeys: &[Option<TrieKey<'_>>],
        outs: &mut [Vec<u8>],
        found: &mut Vec<bool>,
    ) -> bool {
        let arena =
            |k: &[u8]| &self.arenas[k.first().map_or(0, |&b| usize::from(b) % self.arenas.len())];
        // One version per key, its trie's (keys of one trie read it once each: cheap).
        let mut vers: Vec<u64> = Vec::with_capacity(tkeys.len());
        'attempt: for _ in 0..arena::OPT_TRIES {
            vers.clear();
            for k in tkeys {
                match k {
                    None => vers.push(0),
                    Some(k) => match arena(k).begin(k) {
                        Some(v) => vers.push(v),
                        None => continue 'attempt,
                    },
                }
            }
            let mut probes: Vec<opt::Probe<'_>> = tkeys
                .iter()
                .zip(outs.iter_mut())
                .map(|(k, out)| match k {
                    None => opt::Probe::done(Ok(false)),
                    Some(k) => arena(k).view().probe(k, out),
                })
                .collect();
            let mut pending = probes.len();
            while pending > 0 {
                pending = 0;
                for (((p, k), out), &v) in
                    probes.iter_mut().zip(tkeys).zip(outs.iter_mut()).zip(&vers)
                {
                    let Some(k) = k else { continue };
                    let a = arena(k);
                    if !p.step(&a.view().dirs, out, &|| a.validate(k, v)) {
                        pending += 1;
                    }
                }
            }
            if tkeys
                .iter()
                .zip(&vers)
                .all(|(k, &v)| k.as_ref().is_none_or(|k| arena(k).validate(k, v)))
            {
                found.clear();
                for p in &probes {
                    match p.result() {
                        Ok(hit) => found.push(hit),
                        Err(_) => continue 'attempt,
                    }
                }
                return true;
            }
        }
        false
    }

    fn write_key(
        &self,
        key: &[u8],
        f: &mut dyn FnMut(Option<&[u8]>) -> Decision,
    ) -> api::Result<bool> {
        let key = self.trie_key(key);
        let (present, delta) = self.arena_of(&key).write(|a| {
            let r = a.write(&key, f);
            if matches!(r, Ok((_, 1))) {
                a.note_insert();
            }
            r
        })?;
        if delta != 0 {
            self.len.fetch_add(delta, Ordering::Relaxed);
        }
        Ok(present)
    }

    /// Inserts or replaces the value of `key`; `Ok(true)` if the key was new.
    fn put_key(&self, key: &[u8], value: &[u8]) -> api::Result<bool> {
        // No read of the old value first: the insert's descent finds whether it was there.
        let key = self.trie_key(key);
        let present = self.arena_of(&key).write(|a| {
            let r = a.put(&key, value);
            if matches!(r, Ok(false)) {
                a.note_insert();
            }
            r
        })?;
        if !present {
            self.len.fetch_add(1, Ordering::Relaxed);
        }
        Ok(!present)
    }

    /// Removes `key`; returns whether it was present.
    fn delete_key(&self, key: &[u8]) -> bool {
        self.write_key(key, &mut |_| Decision::Remove)
            .unwrap_or(false)
    }

    fn count_keys(&self) -> usize {
        self.len.load(Ordering::Relaxed).max(0) as usize
    }

    fn bytes_held(&self) -> MemoryUsage {
        let arenas: usize = self.arenas.iter().map(|a| a.read().bytes()).sum();
        MemoryUsage {
            structure_bytes: arenas
                + std::mem::size_of::<Self>()
                + self.arenas.len() * std::mem::size_of::<CachePadded<Arena>>(),
            key_value_bytes: 0,
        }
    }

    /// Gives back the free chunks of thinned size classes: in every arena in turn (under
    /// its write lock), the chunks of the bins at most half full are moved into fuller
    /// bins of their class and relinked, and the emptied bins are unmapped. Inserts run
    /// the same pass on their own once a class has thinned enough to be worth it
    /// (`write/compact.rs`, "When it runs"); this runs it now. A point reader waits at
    /// most for the walk of its key's trie.
    pub fn compact(&self) -> Compacted {
        self.arenas.iter().map(|a| a.write(|a| a.compact())).sum()
    }

    /// The memory managers' chunk and fragmentation breakdown, summed over arenas.
    pub fn stats(&self) -> MemStats {
        let mut s = MemStats::default();
        for a in self.arenas.iter() {
            let t = a.read().mm.stats();
            s.chunks += t.chunks;
            s.chunk_bytes += t.chunk_bytes;
            s.free_chunk_bytes += t.free_chunk_bytes;
            s.extended += t.extended;
            s.extended_bytes += t.extended_bytes;
            s.metadata_bytes += t.metadata_bytes;
        }
        s
    }

    /// Visits pairs in ascending key order from `start` until the visitor breaks. The
    /// visitor runs without any lock held: pairs are copied a batch at a time (the first
    /// 64 pairs, each next batch twice as many up to 1,024), each trie's under its arena's
    /// lock or optimistically.
    fn scan_from(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.scan_until(start, Bound::Unbounded, visitor);
    }

    /// [`Hyperion::scan`] up to `end`.
    fn scan_until(&self, start: Bound<&[u8]>, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        Self::visit_batches(start, false, visitor, |from, max, batch| {
            self.copy_front(from, end, max, batch)
        });
    }

    /// Visits, in descending key order, the pairs below `end` until the visitor breaks.
    /// The visitor runs without any lock held (pairs are copied as by [`Hyperion::scan`]).
    fn scan_down(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        Self::visit_batches(end, true, visitor, |from, max, batch| {
            self.copy_back(from, max, batch)
        });
    }

    /// The loop of [`Hyperion::scan`] and [`Hyperion::scan_rev`]: `copy(from, max, batch)`
    /// copies up to `max` pairs from the bound `from` (ascending within the batch) and
    /// returns the bound to resume from, if any; the visitor sees each batch in order
    /// (reversed when `rev`). Copies grow from [`BATCH`] to [`SCAN_BATCH`] pairs, so a
    /// short scan copies little more than it visits.
    fn visit_batches(
        from: Bound<&[u8]>,
        rev: bool,
        visitor: &mut ScanVisitor<'_>,
        mut copy: impl FnMut(Bound<&[u8]>, usize, &mut ScanBatch) -> Option<Bound<Vec<u8>>>,
    ) {
        let mut batch = ScanBatch::default();
        let mut from = from.map(<[u8]>::to_vec);
        let mut max = BATCH;
        loop {
            batch.clear();
            let next = copy(from.as_ref().map(Vec::as_slice), max, &mut batch);
            max = (2 * max).min(SCAN_BATCH);
            let n = batch.len();
            for j in 0..n {
                let (k, v) = batch.pair(if rev { n - 1 - j } else { j });
                if visitor(k, v).is_break() {
                    return;
                }
            }
            match next {
                Some(b) => from = b,
                None => return,
            }
        }
    }

    /// Visits the pairs whose key starts with `prefix`, ascending.
    fn scan_with_prefix(&self, prefix: &[u8], visitor: &mut ScanVisitor<'_>) {
        // The least key above every key with the prefix: the prefix without its trailing
        // 0xFF bytes, its last byte incremented (none: all bytes 0xFF).
        let mut up = prefix.to_vec();
        while up.last() == Some(&0xFF) {
            up.pop();
        }
        let end = match up.last_mut() {
            Some(b) => {
                *b += 1;
                Bound::Excluded(&up[..])
            }
            None => Bound::Unbounded,
        };
        self.scan_until(Bound::Included(prefix), end, &mut |k, v| {
            if k.starts_with(prefix) {
                visitor(k, v)
            } else {
                ControlFlow::Break(())
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng as _;

    /// `get_many`'s pipeline against a model, small enough for Miri: keys under a few
    /// T-Nodes with many S-Nodes (T-Node jump tables), deeper keys (embedded and child
    /// containers, path-compressed suffixes), root values, absent and over-long keys, in
    /// batches across windows and arenas.
    #[test]
    fn get_many_pipeline_small() {
        let h = Hyperion::new();
        let mut model = std::collections::HashMap::new();
        let mut r = orrery_core::testing::rng::rng(0x5DEE_CE66);
        let n = if cfg!(miri) { 300 } else { 3000 };
        for i in 0..n {
            let x: u32 = r.random();
            let b = x.to_be_bytes();
            let k = match i % 4 {
                0 => vec![b[0] % 3, b[1] % 2, b[2]],
                1 => vec![b[0] % 3, b[1] % 2, b[2], b[3] % 4, 1, 2, 3],
                2 => vec![b[0] % 5],
                _ => b.to_vec(),
            };
            let v = b[..i % 5].to_vec();
            h.insert(&k, &v).unwrap();
            model.insert(k, v);
        }
        let long = vec![0u8; api::MAX_KEY_LEN + 1];
        let mut batch: Vec<Vec<u8>> = model.keys().cloned().collect();
        batch.sort();
        batch.extend([vec![], vec![1, 1, 1, 1, 1, 1, 1, 1, 1], vec![9, 9], long]);
        let refs: Vec<&[u8]> = batch.iter().map(|k| &k[..]).collect();
        for size in [1, GET_MANY_WINDOW - 1, 3 * GET_MANY_WINDOW + 1] {
            for part in refs.chunks(size) {
                let mut got = Vec::new();
                h.get_many(part, &mut |i, v| got.push((i, v.map(<[u8]>::to_vec))));
                let want: Vec<_> = (0..part.len())
                    .map(|i| (i, model.get(part[i]).cloned()))
                    .collect();
                assert_eq!(got, want);
            }
        }
    }
}
