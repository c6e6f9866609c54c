//! A large list's packed nodes (the role of Redis's quicklist): the elements in runs of
//! up to [`NODE_COUNT`] elements and [`NODE_BYTES`] bytes, each run one value of the
//! store's positions table under `id ++ node number` (`crate::layout::list_key`), and the
//! order of the runs in the list's node table (`crate::store::Nodes`: node numbers and
//! element counts, head to tail).
//!
//! ```text
//! node run  := (varint(len) bytes rvarint(len))*   crate::layout::put_entry, no header:
//!                                                   the count is in the node table
//! ```
//!
//! Each entry's length is also written after it, reversed, so a run is walked from
//! either end (`crate::layout`'s `run` module): a pop, `LINDEX` or the start of an
//! `LRANGE` near a node's tail steps back from the tail, not forward over the node.
//!
//! A push copies the end node once with the element added at its front or back (one
//! update of one index value, no new entry) until the node is full, then starts a new
//! node; a pop copies it without the element, or removes it with its last element. An
//! element at index `i` is found by a walk of the node table's counts (from the nearer
//! end), one lookup, and a walk inside the node from its nearer end; a range reads whole
//! nodes. `LSET`, `LINSERT`, `LREM` and `LTRIM`
//! re-pack the nodes they change ([`pack_runs`]: a node grown past the limits splits, an
//! emptied one goes) and merge a changed node with a neighbour when the two fit in one.
//! An element larger than [`NODE_BYTES`] gets a node of its own.
//!
//! Every change holds the table's lock (`crate::store::Meta::lock_nodes`) while it
//! changes the nodes, the list's head position and its length, so that the append-only
//! file's rewrite, which holds no key stripe, takes a consistent copy ([`QList::snapshot`]).
//! The node sizes were chosen by measurement (`docs/server.md`, "Representation").

use std::collections::VecDeque;
use std::ops::ControlFlow;

use orrery::mercury::Mercury;

use super::Result;
use super::list::End;
use crate::layout::{entries, entry_len, from_entry, list_key, nth_entry, put_entry};
use crate::store::{Meta, Node, Nodes};

/// Most elements in one node.
pub(super) const NODE_COUNT: usize = 128;

/// Most bytes in one node's run (an element larger than this has a node of its own).
pub(super) const NODE_BYTES: usize = 8 * 1024;

/// Whether a run of `count` elements and `bytes` bytes fits in one node.
fn fits(count: usize, bytes: usize) -> bool {
    count <= NODE_COUNT && bytes <= NODE_BYTES
}

/// `items` packed into node runs, greedily, each with its element count.
pub(super) fn pack_runs<'e>(items: impl IntoIterator<Item = &'e [u8]>) -> Vec<(Vec<u8>, u32)> {
    let mut out = Vec::new();
    let (mut cur, mut n) = (Vec::new(), 0u32);
    for it in items {
        let l = entry_len(it);
        if n > 0 && !fits(n as usize + 1, cur.len() + l) {
            out.push((std::mem::take(&mut cur), n));
            n = 0;
        }
        put_entry(&mut cur, it);
        n += 1;
    }
    if n > 0 {
        out.push((cur, n));
    }
    out
}

/// The node holding element `i` of a list of `len` elements, and `i`'s offset in it,
/// found by a walk of the counts from the nearer end.
fn locate(nodes: &VecDeque<Node>, len: u64, i: usize) -> Option<(usize, usize)> {
    if i as u64 >= len {
        return None;
    }
    if (i as u64) < len / 2 {
        let mut at = 0usize;
        for (k, n) in nodes.iter().enumerate() {
            let c = n.count as usize;
            if i < at + c {
                return Some((k, i - at));
            }
            at += c;
        }
        None
    } else {
        let mut end = len as usize;
        for (k, n) in nodes.iter().enumerate().rev() {
            let start = end.saturating_sub(n.count as usize);
            if i >= start {
                return Some((k, i - start));
            }
            end = start;
        }
        None
    }
}

/// A large list's nodes (see the [module docs](self)).
pub(super) struct QList<'a> {
    el: &'a Mercury,
    id: u64,
    meta: &'a Meta,
}

impl<'a> QList<'a> {
    /// The nodes of large list `id` with bookkeeping `meta`, in table `el`.
    pub(super) fn new(el: &'a Mercury, id: u64, meta: &'a Meta) -> QList<'a> {
        QList { el, id, meta }
    }

    fn key(&self, no: u64) -> [u8; 16] {
        list_key(self.id, no)
    }

    /// A copy of node `no`'s run (empty if missing, which only damage could give).
    fn read(&self, no: u64) -> Vec<u8> {
        self.el.get(&self.key(no)).unwrap_or_default()
    }

    /// Replaces nodes `k .. k + remove` by `runs` (reusing their numbers first).
    fn splice(
        &self,
        g: &mut Nodes,
        k: usize,
        remove: usize,
        runs: Vec<(Vec<u8>, u32)>,
    ) -> Result<()> {
        let old: Vec<Node> = g.list.range(k..k + remove).copied().collect();
        let mut new = Vec::with_capacity(runs.len());
        for (i, (bytes, count)) in runs.iter().enumerate() {
            let no = match old.get(i) {
                Some(n) => n.no,
                None => g.fresh(),
            };
            self.el.insert(&self.key(no), bytes)?;
            new.push(Node {
                no,
                count: *count,
                bytes: bytes.len() as u32,
            });
        }
        for n in old.iter().skip(runs.len()) {
            self.el.remove(&self.key(n.no));
        }
        g.list.drain(k..k + remove);
        for (j, n) in new.into_iter().enumerate() {
            g.list.insert(k + j, n);
        }
        Ok(())
    }

    /// Merges nodes `k` and `k + 1` when the two fit in one; whether it did.
    fn merge_at(&self, g: &mut Nodes, k: usize) -> Result<bool> {
        let (Some(&a), Some(&b)) = (g.list.get(k), g.list.get(k + 1)) else {
            return Ok(false);
        };
        if !fits((a.count + b.count) as usize, (a.bytes + b.bytes) as usize) {
            return Ok(false);
        }
        let mut v = self.read(a.no);
        v.extend_from_slice(&self.read(b.no));
        self.el.insert(&self.key(a.no), &v)?;
        self.el.remove(&self.key(b.no));
        g.list[k] = Node {
            no: a.no,
            count: a.count + b.count,
            bytes: v.len() as u32,
        };
        g.list.remove(k + 1);
        Ok(true)
    }

    /// Merges what fits among nodes `from ..= to` and their right neighbours.
    fn compact(&self, g: &mut Nodes, from: usize, mut to: usize) -> Result<()> {
        let mut k = from;
        while k <= to && k + 1 < g.list.len() {
            if self.merge_at(g, k)? {
                to = to.saturating_sub(1);
            } else {
                k += 1;
            }
        }
        Ok(())
    }

    /// Builds the nodes of a list (which has none) from `items`, the first at `head`.
    pub(super) fn extend(&self, head: u64, items: &[&[u8]]) -> Result<()> {
        let mut g = self.meta.lock_nodes();
        let n = g.list.len();
        self.splice(&mut g, n, 0, pack_runs(items.iter().copied()))?;
        self.meta.set_span(head, items.len() as u64);
        Ok(())
    }

    /// Pushes `elem` at `end`: into the end node while it has room, else into a new node.
    pub(super) fn push(&self, end: End, elem: &[u8]) -> Result<()> {
        let mut g = self.meta.lock_nodes();
        let l = entry_len(elem);
        let at = match end {
            End::Left => g.list.front().copied(),
            End::Right => g.list.back().copied(),
        };
        let one = || {
            let mut v = Vec::with_capacity(l);
            put_entry(&mut v, elem);
            v
        };
        let grown = match at {
            Some(n) if fits(n.count as usize + 1, n.bytes as usize + l) => {
                self.el.update(&self.key(n.no), |old| {
                    let mut v = Vec::with_capacity(old.len() + l);
                    match end {
                        End::Left => {
                            put_entry(&mut v, elem);
                            v.extend_from_slice(old);
                        }
                        End::Right => {
                            v.extend_from_slice(old);
                            put_entry(&mut v, elem);
                        }
                    }
                    v
                })?
            }
            _ => false,
        };
        if grown {
            let node = match end {
                End::Left => g.list.front_mut(),
                End::Right => g.list.back_mut(),
            };
            if let Some(node) = node {
                node.count += 1;
                node.bytes += l as u32;
            }
        } else {
            let no = g.fresh();
            self.el.insert(&self.key(no), &one())?;
            let node = Node {
                no,
                count: 1,
                bytes: l as u32,
            };
            match end {
                End::Left => g.list.push_front(node),
                End::Right => g.list.push_back(node),
            }
        }
        let (h, n) = (self.meta.head(), self.meta.len());
        let h = if end == End::Left {
            h.wrapping_sub(1)
        } else {
            h
        };
        self.meta.set_span(h, n + 1);
        Ok(())
    }

    /// Pushes `n` empty elements at `end` (a replayed record naming a position beyond
    /// the list's ends).
    pub(super) fn pad(&self, end: End, n: u64) -> Result<()> {
        for _ in 0..n {
            self.push(end, b"")?;
        }
        Ok(())
    }

    /// Pops the element at `end` (`None` when the list has no node).
    pub(super) fn pop(&self, end: End) -> Option<Vec<u8>> {
        let mut g = self.meta.lock_nodes();
        let n = match end {
            End::Left => g.list.front().copied(),
            End::Right => g.list.back().copied(),
        }?;
        let key = self.key(n.no);
        let mut out = Vec::new();
        if n.count <= 1 {
            out = self
                .el
                .get_with(&key, |v| entries(v).next().map(<[u8]>::to_vec))
                .flatten()
                .unwrap_or_default();
            self.el.remove(&key);
            match end {
                End::Left => g.list.pop_front(),
                End::Right => g.list.pop_back(),
            };
        } else {
            // Shrinking a value only fails when the index has no memory for the copy:
            // the element then stays (and the pop reports an empty list end).
            let r = self.el.update(&key, |old| match end {
                End::Left => {
                    let e = entries(old).next().unwrap_or_default();
                    out = e.to_vec();
                    old.get(entry_len(e)..).unwrap_or_default().to_vec()
                }
                End::Right => {
                    let mut it = entries(old);
                    out = it.next_back().unwrap_or_default().to_vec();
                    it.remaining().to_vec()
                }
            });
            if r.is_err() {
                return None;
            }
            let node = match end {
                End::Left => g.list.front_mut(),
                End::Right => g.list.back_mut(),
            };
            if let Some(node) = node {
                node.count -= 1;
                node.bytes = node.bytes.saturating_sub(entry_len(&out) as u32);
            }
        }
        let (h, len) = (self.meta.head(), self.meta.len());
        let h = if end == End::Left {
            h.wrapping_add(1)
        } else {
            h
        };
        self.meta.set_span(h, len.saturating_sub(1));
        Some(out)
    }

    /// The element at index `i`.
    pub(super) fn get(&self, i: usize) -> Option<Vec<u8>> {
        let (no, count, off) = {
            let g = self.meta.lock_nodes();
            let (k, off) = locate(&g.list, self.meta.len(), i)?;
            (g.list[k].no, g.list[k].count as usize, off)
        };
        self.el
            .get_with(&self.key(no), |v| {
                nth_entry(v, count, off).map(<[u8]>::to_vec)
            })
            .flatten()
    }

    /// Up to `n` elements from index `start`, reading whole nodes.
    pub(super) fn range(&self, start: usize, n: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(n);
        self.range_with(start, n, &mut |e| out.push(e.to_vec()));
        out
    }

    /// Visits up to `n` elements from index `start`, in order, each in place in its node
    /// (under the node table's lock: `f` must not touch the list).
    pub(super) fn range_with(&self, start: usize, n: usize, f: &mut dyn FnMut(&[u8])) {
        let g = self.meta.lock_nodes();
        let Some((k, mut off)) = locate(&g.list, self.meta.len(), start) else {
            return;
        };
        let mut left = n;
        for node in g.list.range(k..) {
            if left == 0 {
                break;
            }
            self.el.get_with(&self.key(node.no), |v| {
                for e in entries(from_entry(v, node.count as usize, off)) {
                    if left == 0 {
                        break;
                    }
                    f(e);
                    left -= 1;
                }
            });
            off = 0;
        }
    }

    /// Visits the elements from the head (or, with `rev`, from the tail) with their
    /// indexes, a node at a time (each node copied before `f` sees it), until `f` breaks.
    pub(super) fn visit(&self, rev: bool, f: &mut dyn FnMut(usize, &[u8]) -> ControlFlow<()>) {
        let nodes: Vec<Node> = self.meta.lock_nodes().list.iter().copied().collect();
        let mut bases = Vec::with_capacity(nodes.len());
        let mut at = 0usize;
        for n in &nodes {
            bases.push(at);
            at += n.count as usize;
        }
        let order: Box<dyn Iterator<Item = usize>> = if rev {
            Box::new((0..nodes.len()).rev())
        } else {
            Box::new(0..nodes.len())
        };
        for k in order {
            let run = self.read(nodes[k].no);
            let base = bases[k];
            let stop = if rev {
                let last = base + (nodes[k].count as usize).saturating_sub(1);
                entries(&run)
                    .rev()
                    .enumerate()
                    .any(|(j, e)| f(last.saturating_sub(j), e).is_break())
            } else {
                entries(&run)
                    .enumerate()
                    .any(|(j, e)| f(base + j, e).is_break())
            };
            if stop {
                return;
            }
        }
    }

    /// Replaces the element at index `i` (which must exist).
    pub(super) fn set(&self, i: usize, elem: &[u8]) -> Result<()> {
        let mut g = self.meta.lock_nodes();
        let Some((k, off)) = locate(&g.list, self.meta.len(), i) else {
            return Ok(());
        };
        let run = self.read(g.list[k].no);
        let mut items: Vec<&[u8]> = entries(&run).collect();
        if let Some(x) = items.get_mut(off) {
            *x = elem;
        }
        self.splice(&mut g, k, 1, pack_runs(items))?;
        self.compact(&mut g, k.saturating_sub(1), k + 1)
    }

    /// Inserts `elem` so that it becomes index `idx` (`0 ..= len`); the list's head
    /// position moves one left with `left` (the elements before it took one position
    /// less), else the ones from `idx` on took one more.
    pub(super) fn insert_at(&self, idx: usize, elem: &[u8], left: bool) -> Result<()> {
        let mut g = self.meta.lock_nodes();
        let len = self.meta.len();
        let (k, off) = match locate(&g.list, len, idx) {
            Some(x) => x,
            None => match g.list.back() {
                Some(n) => (g.list.len() - 1, n.count as usize),
                None => (0, 0),
            },
        };
        let run = g.list.get(k).map(|n| self.read(n.no)).unwrap_or_default();
        let mut items: Vec<&[u8]> = entries(&run).collect();
        items.insert(off.min(items.len()), elem);
        let remove = usize::from(k < g.list.len());
        self.splice(&mut g, k, remove, pack_runs(items))?;
        self.compact(&mut g, k.saturating_sub(1), k + 1)?;
        let h = self.meta.head();
        let h = if left { h.wrapping_sub(1) } else { h };
        self.meta.set_span(h, len + 1);
        Ok(())
    }

    /// Removes the elements at indexes `gone` (ascending) and sets the head position to
    /// `head`.
    pub(super) fn remove_at(&self, gone: &[usize], head: u64) -> Result<()> {
        let mut g = self.meta.lock_nodes();
        let len = self.meta.len();
        // Node by node from the tail, so that a re-packed node leaves the indexes of the
        // nodes before it as they were.
        let mut bases = Vec::with_capacity(g.list.len());
        let mut at = 0usize;
        for n in &g.list {
            bases.push(at);
            at += n.count as usize;
        }
        let mut rest = gone;
        for k in (0..g.list.len()).rev() {
            let split = rest.partition_point(|&i| i < bases[k]);
            let (before, here) = rest.split_at(split);
            rest = before;
            if here.is_empty() {
                continue;
            }
            let run = self.read(g.list[k].no);
            let mut drop = here.iter().map(|&i| i - bases[k]).peekable();
            let kept: Vec<&[u8]> = entries(&run)
                .enumerate()
                .filter(|&(j, _)| {
                    if drop.peek() == Some(&j) {
                        drop.next();
                        false
                    } else {
                        true
                    }
                })
                .map(|(_, e)| e)
                .collect();
            self.splice(&mut g, k, 1, pack_runs(kept))?;
            self.compact(&mut g, k.saturating_sub(1), k)?;
        }
        self.meta
            .set_span(head, len.saturating_sub(gone.len() as u64));
        Ok(())
    }

    /// Keeps `keep` elements from index `start` (the head position moves by `start`).
    pub(super) fn trim(&self, start: usize, keep: usize) -> Result<()> {
        let mut g = self.meta.lock_nodes();
        let len = self.meta.len() as usize;
        let head = self.meta.head().wrapping_add(start as u64);
        let mut cut = start.min(len);
        let mut back = len - cut - keep.min(len - cut);
        // Whole nodes first, then the part of the end node.
        while let Some(n) = g.list.front().copied() {
            if (n.count as usize) > cut {
                break;
            }
            self.el.remove(&self.key(n.no));
            g.list.pop_front();
            cut -= n.count as usize;
        }
        while let Some(n) = g.list.back().copied() {
            if (n.count as usize) > back {
                break;
            }
            self.el.remove(&self.key(n.no));
            g.list.pop_back();
            back -= n.count as usize;
        }
        if cut > 0 && !g.list.is_empty() {
            let run = self.read(g.list[0].no);
            self.splice(&mut g, 0, 1, pack_runs(entries(&run).skip(cut)))?;
        }
        if back > 0 && !g.list.is_empty() {
            let k = g.list.len() - 1;
            let n = g.list[k];
            let run = self.read(n.no);
            let keep_here = (n.count as usize).saturating_sub(back);
            self.splice(&mut g, k, 1, pack_runs(entries(&run).take(keep_here)))?;
        }
        self.compact(&mut g, 0, 0)?;
        let last = g.list.len().saturating_sub(2);
        self.compact(&mut g, last, last)?;
        let kept: u64 = g.list.iter().map(|n| u64::from(n.count)).sum();
        self.meta.set_span(head, kept);
        Ok(())
    }

    /// The list's head position, length and node runs, copied together (the rewrite's
    /// consistent view; see the [module docs](self)).
    pub(super) fn snapshot(&self) -> (u64, u64, Vec<Vec<u8>>) {
        let g = self.meta.lock_nodes();
        let runs = g.list.iter().map(|n| self.read(n.no)).collect();
        (self.meta.head(), self.meta.len(), runs)
    }

    /// The bytes of the list's runs and its number of nodes.
    pub(super) fn footprint(&self) -> (usize, usize) {
        let g = self.meta.lock_nodes();
        let bytes = g.list.iter().map(|n| n.bytes as usize).sum();
        (bytes, g.list.len())
    }
}

/// The bytes of large list `id`'s node runs and its number of nodes (`MEMORY USAGE`).
pub(crate) fn footprint(el: &Mercury, id: u64, meta: &Meta) -> (usize, usize) {
    QList::new(el, id, meta).footprint()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_respect_the_limits() {
        let small = vec![&b"abc"[..]; 300];
        let runs = pack_runs(small.iter().copied());
        assert_eq!(
            runs.iter().map(|r| r.1).collect::<Vec<_>>(),
            vec![128, 128, 44]
        );
        let big = vec![0u8; NODE_BYTES + 5];
        let runs = pack_runs([&b"a"[..], &big, b"b"]);
        assert_eq!(runs.iter().map(|r| r.1).collect::<Vec<_>>(), vec![1, 1, 1]);
        assert!(pack_runs(std::iter::empty()).is_empty());
    }

    #[test]
    fn runs_at_the_byte_limit_walk_both_ways() {
        // One element whose entry is exactly NODE_BYTES (two 2-byte lengths) fits alone;
        // a byte more of anything splits.
        let edge = vec![7u8; NODE_BYTES - 4];
        assert_eq!(entry_len(&edge), NODE_BYTES);
        let runs = pack_runs([&edge[..], b"", &edge]);
        assert_eq!(runs.iter().map(|r| r.1).collect::<Vec<_>>(), vec![1, 1, 1]);
        assert!(runs.iter().all(|r| r.0.len() <= NODE_BYTES));
        // 128 elements of mixed sizes filling the count limit: each node walks the same
        // from either end, and every element is found from the nearer end.
        let items: Vec<Vec<u8>> = (0..300usize).map(|i| vec![i as u8; i % 70]).collect();
        let runs = pack_runs(items.iter().map(Vec::as_slice));
        let mut at = 0;
        for (run, count) in &runs {
            let count = *count as usize;
            assert!(count <= NODE_COUNT && run.len() <= NODE_BYTES);
            let fwd: Vec<&[u8]> = entries(run).collect();
            let mut back: Vec<&[u8]> = entries(run).rev().collect();
            back.reverse();
            assert_eq!(fwd, back);
            for (j, want) in items[at..at + count].iter().enumerate() {
                assert_eq!(nth_entry(run, count, j), Some(&want[..]));
                assert_eq!(entries(from_entry(run, count, j)).next(), Some(&want[..]));
            }
            at += count;
        }
        assert_eq!(at, items.len());
        // A large element (over a node) gets a node of its own, walked either way.
        let big = vec![1u8; 3 * NODE_BYTES];
        let runs = pack_runs([&b"a"[..], &big, b"b"]);
        assert_eq!(entries(&runs[1].0).next_back(), Some(&big[..]));
    }

    #[test]
    fn locate_walks_the_counts() {
        let nodes: VecDeque<Node> = [3u32, 1, 4]
            .iter()
            .enumerate()
            .map(|(i, &c)| Node {
                no: i as u64,
                count: c,
                bytes: 0,
            })
            .collect();
        let want = [
            (0, 0),
            (0, 1),
            (0, 2),
            (1, 0),
            (2, 0),
            (2, 1),
            (2, 2),
            (2, 3),
        ];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(locate(&nodes, 8, i), Some(*w), "{i}");
        }
        assert_eq!(locate(&nodes, 8, 8), None);
    }
}
