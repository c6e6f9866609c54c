//! Arenas (§3.2 "Arenas"): the 256 tries `T_b` (keys by first byte `b`), mapped round-robin
//! onto `n` arenas, each with its own memory manager and lock.
//!
//! # Protocol
//!
//! Each arena is an `orrery_core::sync::RwSpinLock` over its tries and memory manager.
//! Writers of an arena take its write lock; lookups and scans take its read lock, so they
//! never wait for writers of *other* arenas, and readers of one arena run in parallel, but
//! a reader waits for a writer of its own arena (and the other way round). This is the
//! paper's design (one spin lock per arena) with shared readers added. Optimistic,
//! lock-free reads validated by a per-arena version with epoch-reclaimed blocks are *not*
//! built in this version (`docs/hyperion.md`, "Not built"). A scan holds one arena's read
//! lock while it copies one batch from one trie.
//!
//! # Tries
//!
//! Trie `T_b` stores the keys `b·rest` as `rest` below its root container; the key `[b]`
//! itself is the trie's root value, and the empty key lives in arena 0. Root values are
//! kept on the heap (at most 257 of them in the whole index).

use std::ops::{Bound, ControlFlow};

use orrery_core::api::Result;

use crate::mm::{Hp, MemoryManager};
use crate::node::{self};
#[cfg(test)]
use crate::node::{HEADER, used};

pub(crate) use orrery_core::api::Decision;

/// One trie's root.
#[derive(Default)]
pub(crate) struct Root {
    pub(crate) hp: Option<Hp>,
    val: Option<Vec<u8>>,
}

/// The tries and memory manager of one arena.
pub(crate) struct ArenaInner {
    pub(crate) mm: MemoryManager,
    pub(crate) roots: Vec<Root>,
    empty: Option<Vec<u8>>,
    /// Bytes of root values on the heap.
    heap_bytes: usize,
    pub(crate) eject_threshold: usize,
}

impl ArenaInner {
    pub(crate) fn new(eject_threshold: usize) -> ArenaInner {
        ArenaInner {
            mm: MemoryManager::new(),
            roots: (0..256).map(|_| Root::default()).collect(),
            empty: None,
            heap_bytes: 0,
            eject_threshold,
        }
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.mm.bytes() + self.heap_bytes + self.roots.len() * std::mem::size_of::<Root>()
    }

    /// The value of `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<&[u8]> {
        let Some((&b, rest)) = key.split_first() else {
            return self.empty.as_deref();
        };
        let root = &self.roots[b as usize];
        if rest.is_empty() {
            return root.val.as_deref();
        }
        node::lookup(&self.mm, root.hp?, rest)
    }

    /// Read-modify-write of `key`: `f` sees the current value; returns whether the key was
    /// present. Out of memory leaves the arena unchanged.
    pub(crate) fn write(
        &mut self,
        key: &[u8],
        f: &mut dyn FnMut(Option<&[u8]>) -> Decision,
    ) -> Result<(bool, isize)> {
        let (present, d) = {
            let old = self.get(key);
            (old.is_some(), f(old))
        };
        match d {
            Decision::Keep => Ok((present, 0)),
            Decision::Store(v) => {
                self.store(key, &v)?;
                Ok((present, isize::from(!present)))
            }
            Decision::Remove => {
                if present {
                    self.delete(key);
                }
                Ok((present, -isize::from(present)))
            }
        }
    }

    fn set_small(&mut self, key: &[u8], v: Option<&[u8]>) {
        let slot = match key.first() {
            None => &mut self.empty,
            Some(&b) => &mut self.roots[b as usize].val,
        };
        if let Some(old) = slot.take() {
            self.heap_bytes -= old.capacity();
        }
        if let Some(v) = v {
            let v = v.to_vec();
            self.heap_bytes += v.capacity();
            *slot = Some(v);
        }
    }

    fn store(&mut self, key: &[u8], v: &[u8]) -> Result<()> {
        if key.len() <= 1 {
            self.set_small(key, Some(v));
            return Ok(());
        }
        self.store_in(key[0] as usize, &key[1..], v)
    }

    /// Removes `key` (present). Never fails: a container that shrinks keeps its block when
    /// a smaller one cannot be had.
    fn delete(&mut self, key: &[u8]) {
        if key.len() <= 1 {
            self.set_small(key, None);
            return;
        }
        self.delete_in(key[0] as usize, &key[1..]);
    }

    /// Visits the keys of trie `b` (its root value included) that pass `bound`, ascending
    /// or descending.
    // Scans copy through `iter::walk_trie` (the same walk, its visitor monomorphised).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn walk(
        &self,
        b: u8,
        bound: Bound<&[u8]>,
        desc: bool,
        buf: &mut Vec<u8>,
        visit: &mut node::Visit<'_>,
    ) -> ControlFlow<()> {
        let root = &self.roots[b as usize];
        let key = [b];
        let ok = |k: &[u8]| match (bound, desc) {
            (Bound::Unbounded, _) => true,
            (Bound::Included(x), false) => k >= x,
            (Bound::Excluded(x), false) => k > x,
            (Bound::Included(x), true) => k <= x,
            (Bound::Excluded(x), true) => k < x,
        };
        if !desc
            && let Some(v) = &root.val
            && ok(&key)
        {
            visit(&key, v)?;
        }
        if let Some(hp) = root.hp {
            buf.clear();
            buf.push(b);
            node::walk(&self.mm, hp, buf, bound, desc, visit)?;
        }
        if desc
            && let Some(v) = &root.val
            && ok(&key)
        {
            visit(&key, v)?;
        }
        ControlFlow::Continue(())
    }

    /// The empty key's value (arena 0 only).
    pub(crate) fn empty(&self) -> Option<&[u8]> {
        self.empty.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(a: &mut ArenaInner, k: &[u8], v: &[u8]) {
        a.write(k, &mut |_| Decision::Store(v.to_vec())).unwrap();
    }

    fn payload(a: &ArenaInner, b: u8) -> Vec<u8> {
        let hp = a.roots[b as usize].hp.unwrap();
        let c = a.mm.get(hp);
        c[HEADER..used(c)].to_vec()
    }

    /// The byte layout of Fig 5/6/10: T-Node, S-Nodes, delta encoding, values.
    #[test]
    fn container_bytes_delta_and_values() {
        let mut a = ArenaInner::new(16 * 1024);
        put(&mut a, b"xab", b"");
        assert_eq!(payload(&a, b'x'), [0x40, b'a', 0xA0, b'b']);
        put(&mut a, b"xac", b"1");
        // 'c' is 'b' + 1: delta-encoded (d = 1), no key byte; type 11 and an inline value.
        // The T-Node now has two S-Nodes: it gets a jump successor (js, bit 1), the
        // distance to the next T-Node (here the end: 9 bytes), after its key byte.
        assert_eq!(
            payload(&a, b'x'),
            [0x42, b'a', 9, 0, 0xA0, b'b', 0xE4, 1, b'1']
        );
        put(&mut a, b"xa", b"");
        // The T-Node now ends a key (type 10); its jump is unchanged.
        assert_eq!(payload(&a, b'x')[..4], [0x82, b'a', 9, 0]);
        // A unique suffix is path compressed (c = 11): [len][suffix][value tag 0].
        put(&mut a, b"xbcdef", b"");
        assert_eq!(
            payload(&a, b'x')[9..],
            [0x44, 0x63, b'c', 3, b'd', b'e', b'f', 0]
        );
        // Inserting between T-Nodes keeps the jump exact: 'a' gets a third S-Node.
        put(&mut a, b"xaz", b"");
        assert_eq!(payload(&a, b'x')[..4], [0x82, b'a', 11, 0]);
        assert_eq!(payload(&a, b'x')[11], 0x44);
        assert_eq!(a.get(b"xbcdef"), Some(&b""[..]));
        assert_eq!(a.get(b"xac"), Some(&b"1"[..]));
        assert_eq!(a.get(b"xa"), Some(&b""[..]));
        assert_eq!(a.get(b"xad"), None);
        assert_eq!(a.get(b"xaz"), Some(&b""[..]));
        // Removing an S-Node updates the jump: 'b' (2 bytes) goes, 'c' is no longer
        // delta encoded (explicit key byte, +1).
        a.write(b"xab", &mut |_| Decision::Remove).unwrap();
        assert_eq!(payload(&a, b'x')[..7], [0x82, b'a', 10, 0, 0xE0, b'c', 1]);
        assert_eq!(a.get(b"xbcdef"), Some(&b""[..]));
    }

    /// Embedded containers, their ejection past 255 bytes, long suffixes, out-of-line
    /// values; removal prunes everything and returns every chunk.
    #[test]
    fn container_embed_eject_and_return_memory() {
        let mut a = ArenaInner::new(16 * 1024);
        let base = a.mm.bytes();
        let n = if cfg!(miri) { 60 } else { 400 };
        let keys: Vec<Vec<u8>> = (0..n)
            .map(|i: u32| {
                let mut k = b"pfx-".to_vec();
                k.extend_from_slice(&(i * 7919).to_be_bytes());
                if i.is_multiple_of(5) {
                    k.extend(std::iter::repeat_n(b'z', 200));
                }
                k
            })
            .collect();
        for (i, k) in keys.iter().enumerate() {
            let v = vec![i as u8; i % 20];
            put(&mut a, k, &v);
        }
        assert!(
            a.mm.stats().chunks > 1,
            "children were ejected into their own chunks"
        );
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(a.get(k), Some(&vec![i as u8; i % 20][..]), "key {i}");
        }
        let mut seen = Vec::new();
        let mut buf = Vec::new();
        let _ = a.walk(b'p', Bound::Unbounded, false, &mut buf, &mut |k, _| {
            seen.push(k.to_vec());
            ControlFlow::Continue(())
        });
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(seen, sorted);
        for k in &keys {
            a.write(k, &mut |_| Decision::Remove).unwrap();
        }
        assert!(a.roots[b'p' as usize].hp.is_none());
        assert_eq!(a.mm.stats().chunks, 0);
        assert_eq!(a.mm.stats().extended, 0);
        assert!(a.mm.bytes() >= base);
        assert_eq!(a.mm.bytes(), a.mm.stats().metadata_bytes);
    }
}
