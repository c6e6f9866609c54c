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

use crate::edit::{Ctx, Txn, decode, exact_fit, new_val};
use crate::mm::{Hp, MemoryManager};
use crate::node::{self, HEADER, PathEntry, used, write_header};

/// A writer's decision on the current value (read-modify-write).
pub(crate) enum Decision {
    /// Leave the key as it is.
    Keep,
    /// Store this value.
    Store(Vec<u8>),
    /// Remove the key.
    Remove,
}

/// One trie's root.
#[derive(Default)]
pub(crate) struct Root {
    hp: Option<Hp>,
    val: Option<Vec<u8>>,
}

/// The tries and memory manager of one arena.
pub(crate) struct ArenaInner {
    pub(crate) mm: MemoryManager,
    roots: Vec<Root>,
    empty: Option<Vec<u8>>,
    /// Bytes of root values on the heap.
    heap_bytes: usize,
    eject_threshold: usize,
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
        let b = key[0] as usize;
        let rest = &key[1..];
        let mut txn = Txn::default();
        let Some(root) = self.roots[b].hp else {
            let r = (|| {
                let mut ctx = Ctx {
                    old: &[],
                    mm: &mut self.mm,
                    txn: &mut txn,
                };
                let val = new_val(ctx.mm, ctx.txn, v)?;
                let mut c = crate::edit::Cont::default();
                ctx.insert(&mut c, rest, val)?;
                let mut payload = Vec::new();
                ctx.encode(&c, &mut payload, None)?;
                ctx.new_container(&payload)
            })();
            return match r {
                Ok(hp) => {
                    txn.commit(&mut self.mm);
                    self.roots[b].hp = Some(hp);
                    Ok(())
                }
                Err(e) => {
                    txn.abort(&mut self.mm);
                    Err(e)
                }
            };
        };
        let path = node::descend(&self.mm, root, rest);
        let last = *path.last().expect("the root is on the path");
        let chunk = self.mm.get(last.hp);
        let size = used(chunk);
        let old = chunk[..size].to_vec();
        let sub = &rest[last.consumed..];
        let threshold = self.eject_threshold;
        let r = (|| {
            let mut ctx = Ctx {
                old: &old,
                mm: &mut self.mm,
                txn: &mut txn,
            };
            let val = new_val(ctx.mm, ctx.txn, v)?;
            let mut c = decode(&old, HEADER..size);
            ctx.insert(&mut c, sub, val)?;
            let eject = (size > threshold && sub.len() > 2).then(|| (sub[0], sub[1]));
            let mut payload = Vec::with_capacity(size + 16);
            ctx.encode(&c, &mut payload, eject)?;
            let total = HEADER + payload.len();
            let target = if exact_fit(ctx.mm.capacity(last.hp), total) {
                last.hp
            } else {
                ctx.txn.alloc(ctx.mm, total)?
            };
            Ok((payload, target))
        })();
        match r {
            Err(e) => {
                txn.abort(&mut self.mm);
                Err(e)
            }
            Ok((payload, target)) => {
                self.place(&path, target, &payload, &mut txn);
                txn.commit(&mut self.mm);
                Ok(())
            }
        }
    }

    /// Writes `payload` into `target` (the last container's block or its replacement) and
    /// links the replacement in.
    fn place(&mut self, path: &[PathEntry], target: Hp, payload: &[u8], txn: &mut Txn) {
        let last = path[path.len() - 1];
        let total = HEADER + payload.len();
        let blk = self.mm.get_mut(target);
        write_header(blk, total);
        blk[HEADER..total].copy_from_slice(payload);
        if target != last.hp {
            txn.retire(last.hp);
            self.relink(path, path.len() - 1, Some(target));
        }
    }

    /// Points the parent of `path[i]` (or the trie root) at `to`.
    fn relink(&mut self, path: &[PathEntry], i: usize, to: Option<Hp>) {
        match (i, to) {
            (0, to) => {
                let b = self
                    .roots
                    .iter()
                    .position(|r| r.hp == Some(path[0].hp))
                    .expect("the path starts at a root");
                self.roots[b].hp = to;
            }
            (i, Some(to)) => {
                let at = path[i].at.expect("a child container has a parent pointer");
                self.mm.get_mut(path[i - 1].hp)[at..at + Hp::BYTES].copy_from_slice(&to.to_bytes());
            }
            (_, None) => unreachable!("emptied children are dropped by re-encoding the parent"),
        }
    }

    /// Removes `key` (present). Never fails: a container that shrinks keeps its block when
    /// a smaller one cannot be had.
    fn delete(&mut self, key: &[u8]) {
        if key.len() <= 1 {
            self.set_small(key, None);
            return;
        }
        let b = key[0] as usize;
        let rest = &key[1..];
        let Some(root) = self.roots[b].hp else {
            return;
        };
        let path = node::descend(&self.mm, root, rest);
        let mut txn = Txn::default();
        let mut i = path.len() - 1;
        let mut first = true;
        loop {
            let e = path[i];
            let chunk = self.mm.get(e.hp);
            let size = used(chunk);
            let old = chunk[..size].to_vec();
            let mut ctx = Ctx {
                old: &old,
                mm: &mut self.mm,
                txn: &mut txn,
            };
            let mut c = decode(&old, HEADER..size);
            if first {
                ctx.remove(&mut c, &rest[e.consumed..]);
                first = false;
            } else {
                ctx.drop_child(&mut c, &rest[e.consumed..path[i + 1].consumed]);
            }
            if c.t.is_empty() {
                txn.retire(e.hp);
                if i == 0 {
                    self.roots[b].hp = None;
                    break;
                }
                i -= 1;
                continue;
            }
            let mut payload = Vec::with_capacity(size);
            if ctx.encode(&c, &mut payload, None).is_err() {
                // Unreachable: a shrinking container ejects nothing. Keep it unchanged.
                txn.abort(&mut self.mm);
                return;
            }
            let total = HEADER + payload.len();
            let cap = self.mm.capacity(e.hp);
            let target = if exact_fit(cap, total) {
                e.hp
            } else {
                txn.alloc(&mut self.mm, total).unwrap_or(e.hp)
            };
            self.place(&path[..=i], target, &payload, &mut txn);
            break;
        }
        txn.commit(&mut self.mm);
    }

    /// Visits the keys of trie `b` (its root value included) that pass `bound`, ascending
    /// or descending.
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
