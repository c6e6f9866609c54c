//! Ordered operations over the LeafList (Algorithm 2 `RangeSearchAscending`): scans from
//! any bound, a seekable iterator, range delete, first and last.
//!
//! A scan finds its first leaf like a lookup (search, shared lock, version check), sorts
//! the leaf's key-order array lazily if needed (`leaf`), binary-searches the start
//! position, and then walks `next` pointers hand over hand: the next leaf's shared lock is
//! taken before the current one is released. Writers lock left to right too, so this
//! cannot deadlock; and because a leaf's `next` changes only under its exclusive lock,
//! the walk never skips a leaf. Keys are strictly ascending across leaves by the ordering
//! condition (`anchor`). The visitor runs under the leaf's shared lock.
//!
//! [`Iter`] holds no lock or guard between calls: it copies one leaf's pairs at a time
//! and resumes at the next leaf's anchor, so a user may keep it while writing to the index.

use std::ops::{Bound, ControlFlow};
use std::sync::atomic::Ordering;

use orrery_core::ScanVisitor;

use crate::Wormhole;
use crate::deps::sync::{self, Guard};
use crate::leaf::{DEAD, LeafAccess, LeafPtr, ReadLeaf};

impl Wormhole {
    /// The first leaf holding keys `>= start` (or `> start`) under its shared lock and
    /// sorted, with the key-order index of the first such key.
    fn scan_start<'g>(&self, start: Bound<&[u8]>, g: &'g Guard) -> (ReadLeaf<'g>, usize) {
        match start {
            Bound::Unbounded => {
                // SAFETY: the head leaf is never freed while the index lives.
                let r = unsafe { self.head.read() };
                r.ensure_sorted();
                (r, 0)
            }
            Bound::Included(k) | Bound::Excluded(k) => {
                let (r, _) = self.read_target(k, g);
                r.ensure_sorted();
                let j = r.lower_bound(k, matches!(start, Bound::Included(_)));
                (r, j)
            }
        }
    }

    /// Visits pairs in ascending key order from `start` until the visitor breaks.
    pub fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        let g = sync::pin();
        let (mut cur, mut j) = self.scan_start(start, &g);
        loop {
            while j < cur.len() {
                let (k, v) = cur.sorted_pair(j);
                if visitor(k, v).is_break() {
                    return;
                }
                j += 1;
            }
            let Some(next) = cur.hdr().next() else { return };
            // SAFETY: `next` is linked from a locked live leaf, so it is live; locking it
            // before releasing `cur` is the hand-over-hand step.
            let r = unsafe { next.read() };
            r.ensure_sorted();
            cur = r;
            j = 0;
        }
    }

    /// Visits the pairs whose key starts with `prefix`, ascending.
    pub fn scan_prefix(&self, prefix: &[u8], visitor: &mut ScanVisitor<'_>) {
        self.scan(Bound::Included(prefix), &mut |k, v| {
            if k.starts_with(prefix) {
                visitor(k, v)
            } else {
                ControlFlow::Break(())
            }
        });
    }

    /// The pair with the smallest key.
    pub fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut out = None;
        self.scan(Bound::Unbounded, &mut |k, v| {
            out = Some((k.to_vec(), v.to_vec()));
            ControlFlow::Break(())
        });
        out
    }

    /// The pair with the largest key.
    pub fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let g = sync::pin();
        'restart: loop {
            let t = self.table(&g);
            let v = t.version;
            let mut leaf = t.root().get().rightmost();
            // SAFETY: reached through the published table under `g`.
            let mut r = unsafe { leaf.read() };
            if r.hdr().version.load(Ordering::Acquire) > v || r.hdr().next().is_some() {
                continue 'restart;
            }
            loop {
                if r.len() > 0 {
                    r.ensure_sorted();
                    let (k, v) = r.sorted_pair(r.len() - 1);
                    return Some((k.to_vec(), v.to_vec()));
                }
                let p = r.hdr().prev()?;
                drop(r);
                // Right to left: one lock at a time, then check the two are still adjacent.
                // SAFETY: `p` was linked while we held the lock of its right neighbour and
                // we are pinned, so it is not freed yet.
                r = unsafe { p.read() };
                if r.hdr().version.load(Ordering::Acquire) == DEAD
                    || r.hdr().next().map(LeafPtr::as_raw) != Some(leaf.as_raw())
                {
                    continue 'restart;
                }
                leaf = p;
            }
        }
    }

    /// An iterator over all pairs, ascending.
    pub fn iter(&self) -> Iter<'_> {
        Iter::new(self, Bound::Unbounded)
    }

    /// An iterator over the pairs from `start`, ascending.
    pub fn iter_from(&self, start: Bound<&[u8]>) -> Iter<'_> {
        Iter::new(self, start)
    }

    /// Copies the pairs of the leaf where `start` falls, from `start` on, into `out`; returns
    /// the anchor of the next leaf (where to resume) or `None` at the end.
    fn copy_leaf(&self, start: Bound<&[u8]>, out: &mut Batch) -> Option<Vec<u8>> {
        let g = sync::pin();
        let (r, j) = self.scan_start(start, &g);
        for jj in j..r.len() {
            let (k, v) = r.sorted_pair(jj);
            out.push(k, v);
        }
        let next = r.hdr().next()?;
        // SAFETY: linked from a locked live leaf.
        Some(unsafe { next.hdr() }.anchor().to_vec())
    }

    /// Removes every key in `[start, end]` bounds; returns how many were removed. Each leaf
    /// is rewritten once under its exclusive lock; emptied leaves are merged.
    pub fn remove_range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>) -> usize {
        let beyond = |k: &[u8]| match end {
            Bound::Included(e) => k > e,
            Bound::Excluded(e) => k >= e,
            Bound::Unbounded => false,
        };
        let mut removed = 0;
        let mut from: Bound<Vec<u8>> = match start {
            Bound::Included(k) => Bound::Included(k.to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        loop {
            let g = sync::pin();
            let key: &[u8] = match &from {
                Bound::Included(k) | Bound::Excluded(k) => k,
                Bound::Unbounded => &[],
            };
            let (mut w, _) = self.write_target(key, &g);
            let pairs = w.sorted_pairs();
            let j0 = match &from {
                Bound::Excluded(k) => pairs.partition_point(|p| {
                    // SAFETY: live under the exclusive lock.
                    (unsafe { p.1.key() }) <= k.as_slice()
                }),
                // SAFETY: as above.
                _ => pairs.partition_point(|p| (unsafe { p.1.key() }) < key),
            };
            // SAFETY: as above.
            let j1 = j0 + pairs[j0..].partition_point(|p| !beyond(unsafe { p.1.key() }));
            if j1 > j0 {
                let mut keep = pairs[..j0].to_vec();
                keep.extend_from_slice(&pairs[j1..]);
                w.rebuild(&keep);
                for &(_, p) in &pairs[j0..j1] {
                    // SAFETY: removed from the leaf under its exclusive lock, used no more.
                    unsafe { self.drop_pair(p) };
                }
                self.counts.add(crate::LEN, -((j1 - j0) as isize));
                removed += j1 - j0;
            }
            let done_here = j1 < pairs.len();
            let next = w.hdr().next();
            // SAFETY: linked from a locked live leaf.
            let next_anchor = next.map(|n| unsafe { n.hdr() }.anchor().to_vec());
            let anchor = w.hdr().anchor().to_vec();
            let merge = j1 > j0 && self.wants_merge(&w);
            drop(w);
            drop(g);
            if merge {
                self.try_merge(&anchor);
            }
            match next_anchor {
                Some(a) if !done_here && !beyond(&a) => from = Bound::Included(a),
                _ => return removed,
            }
        }
    }
}

/// A flat buffer of copied pairs.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// (key start, key end = value start, value end)
    spans: Vec<(usize, usize, usize)>,
}

impl Batch {
    fn push(&mut self, k: &[u8], v: &[u8]) {
        let a = self.bytes.len();
        self.bytes.extend_from_slice(k);
        let b = self.bytes.len();
        self.bytes.extend_from_slice(v);
        self.spans.push((a, b, self.bytes.len()));
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }
}

/// A seekable ascending iterator (see the module docs: no lock is held between calls).
///
/// ```
/// use orrery_wormhole::Wormhole;
/// use std::ops::Bound;
/// let wh = Wormhole::new();
/// for i in 0u32..1000 {
///     wh.insert(&i.to_be_bytes(), b"v").unwrap();
/// }
/// let mut it = wh.iter();
/// assert_eq!(it.next_pair().map(|(k, _)| k.to_vec()), Some(0u32.to_be_bytes().to_vec()));
/// it.seek(Bound::Excluded(&500u32.to_be_bytes()));
/// assert_eq!(it.next().map(|(k, _)| k), Some(501u32.to_be_bytes().to_vec()));
/// assert_eq!(it.count(), 498);
/// ```
pub struct Iter<'a> {
    wh: &'a Wormhole,
    buf: Batch,
    pos: usize,
    resume: Option<Bound<Vec<u8>>>,
}

impl<'a> Iter<'a> {
    fn new(wh: &'a Wormhole, start: Bound<&[u8]>) -> Self {
        let mut it = Iter {
            wh,
            buf: Batch::default(),
            pos: 0,
            resume: None,
        };
        it.seek(start);
        it
    }

    /// Repositions the iterator at the first key `>= key` (`Included`), `> key`
    /// (`Excluded`), or the smallest key (`Unbounded`).
    pub fn seek(&mut self, start: Bound<&[u8]>) {
        self.buf.clear();
        self.pos = 0;
        self.resume = Some(match start {
            Bound::Included(k) => Bound::Included(k.to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        });
    }

    /// The next pair, borrowed from the iterator's buffer.
    pub fn next_pair(&mut self) -> Option<(&[u8], &[u8])> {
        while self.pos >= self.buf.spans.len() {
            let from = self.resume.take()?;
            self.buf.clear();
            self.pos = 0;
            let start = match &from {
                Bound::Included(k) => Bound::Included(k.as_slice()),
                Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
                Bound::Unbounded => Bound::Unbounded,
            };
            self.resume = self.wh.copy_leaf(start, &mut self.buf).map(Bound::Included);
        }
        let (a, b, c) = self.buf.spans[self.pos];
        self.pos += 1;
        Some((&self.buf.bytes[a..b], &self.buf.bytes[b..c]))
    }
}

impl Iterator for Iter<'_> {
    type Item = (Vec<u8>, Vec<u8>);

    fn next(&mut self) -> Option<Self::Item> {
        self.next_pair().map(|(k, v)| (k.to_vec(), v.to_vec()))
    }
}
