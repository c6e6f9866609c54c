//! Ordered iteration: a double-ended, seekable [`Iter`] (the house `BatchIter`), fed by
//! ordered walks over the first-byte tries.
//!
//! A refill walks the tries in key order from its bound (ascending, or descending from
//! the back), each trie under its arena's shared lock or optimistically (see "Locks and
//! optimistic copies"), and copies up to [`BATCH`] pairs into the iterator's reusable
//! [`PairBatch`]. No lock is held between refills, so a user may keep an `Iter` while
//! writing to the index. With key pre-processing the bounds are
//! transformed into the trie's key space and keys decoded back as they are copied.
//!
//! # Cost of a refill
//!
//! A refill does not keep a cursor from the previous one (none could stay valid: writers
//! of the arena run between refills, and they shift container bytes in place). It seeks
//! instead: at each container level the bound falls in, [`crate::node`]'s walk picks the
//! split part holding the bound's next byte, enters the part through its container jump
//! table, skips T-Node groups by their jump successors and parses only the S-Nodes of the
//! bound's T-Node before the bound's; then it reads nodes in place, one after the other.
//! A refill therefore costs the bytes it copies plus one seek per level (at most the
//! T-Nodes between two jump-table entries and the S-Nodes of one T-Node), not the size of
//! the containers before the bound. Going down, a level lists the offsets of its T-Node
//! groups up to the bound's (by jump successors) and decodes one group at a time.
//!
//! [`Hyperion::scan`], [`Hyperion::scan_rev`] and [`Hyperion::scan_prefix`] use the same
//! copies with growing batches (from [`BATCH`] to [`SCAN_BATCH`] pairs), so a long scan
//! seeks once per 1,024 pairs; `scan_prefix` stops its copies at the prefix's end;
//! [`Hyperion::remove_range`] walks with an [`Iter`] and removes key by key.
//!
//! # Cost of a copied pair
//!
//! A copy walks each trie through [`node::walk_trie`], which hands the walk (generic over
//! its visitor) the copy's closure, so the bound check and the append are compiled
//! into the walk's loop rather than called through a `dyn` pointer per key. Scans append
//! to a [`ScanBatch`], whose short keys and values (up to 32 bytes) are copied by
//! inlined 8-byte moves instead of a `memmove` call each; the iterators keep the house
//! [`PairBatch`].
//!
//! # Locks and optimistic copies
//!
//! A copy reads one trie at a time ([`Hyperion::copy_trie`]); the user's visitor or loop
//! body runs with no lock held and nothing pinned. Per attempt:
//!
//! - if the trie's arena lock is free at once (`try_read`: no writer holds or waits for
//!   it), the copy takes its shared side and walks the memory manager's slices — the
//!   common, uncontended case keeps the locked walk's speed, and a writer that arrives
//!   meanwhile waits for this one copy (at most a batch, [`SCAN_BATCH`] pairs);
//! - otherwise it copies **optimistically**: pinned in an epoch, it reads trie `b`'s
//!   version (`Arena::optimistic`), walks with `node::walk` over
//!   [`OptSrc`] — every byte a bounds-checked atomic load, values and suffixes copied
//!   out, the version re-checked every `node::CHECK_EVERY` steps so that a torn
//!   child pointer cannot keep the walk going round a cycle — and validates the version
//!   *before keeping each pair*: a pair is appended only when everything read so far was
//!   consistent. A torn attempt therefore loses at most the pair it was on; the next
//!   attempt seeks again after the last pair kept. Writers never wait for it;
//! - after [`OPT_ATTEMPTS`] optimistic attempts in a row that kept fewer than
//!   [`OPT_PROGRESS`] pairs each (writes of that very trie kept tearing them), the copy
//!   takes the fair scan lock (`Arena::scan_lock`: the shared side, or the exclusive one
//!   when writers kept it closed), so no scan retries forever or starves.
//!
//! Versions are per trie: a write of a key of trie `b` makes trie `b`'s version odd
//! while it changes the arena, so writes to the arena's other tries do not tear a copy
//! (why that is sound: `Arena::optimistic`). Empty tries and an absent empty key are
//! skipped without reading the arena (its `View`), the empty key is read as a point read
//! (`Arena::get_with`), and a bound `Excluded([t])` ends before trie `t`.

use std::ops::{Bound, ControlFlow};

use orrery_core::batch::{BatchIter, BatchSource, PairBatch};

use crate::arena::Arena;
use crate::index::Hyperion;
use crate::node::{self, Torn};
use crate::opt::OptSrc;
use crate::prep;

/// Pairs copied per refill of an [`Iter`].
pub(crate) const BATCH: usize = 64;

/// Most pairs copied at a time by [`Hyperion::scan`], [`Hyperion::scan_rev`] and
/// [`Hyperion::scan_prefix`] (each trie's pairs in one copy). Their copies
/// start at [`BATCH`] pairs and double up to this: a long scan seeks from the root once
/// per 1,024 pairs, a short one copies at most about twice what it visits.
pub(crate) const SCAN_BATCH: usize = 1024;

impl Hyperion {
    fn to_trie(&self, b: Bound<&[u8]>) -> Bound<Vec<u8>> {
        b.map(|k| self.trie_key(k).to_vec())
    }

    /// The user's key for a trie key (decoding pre-processed keys).
    #[inline]
    fn user_key<'a>(&self, k: &'a [u8], scratch: &'a mut Vec<u8>) -> &'a [u8] {
        if self.config.preprocess {
            if prep::decode(k, scratch).is_none() {
                debug_assert!(false, "a stored key is a pre-processed key");
            }
            scratch
        } else {
            k
        }
    }

    /// Copies into `out`, ascending, up to `max` pairs from `start` on, stopping before
    /// the first key past `end`. Returns the bound the next pairs start at (`None`: no
    /// pair follows, or `end` was reached). Each trie is copied by [`Hyperion::copy_trie`]
    /// (optimistic, or under its arena's lock); no user code runs during a copy.
    pub(crate) fn copy_front<S: Sink>(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        max: usize,
        out: &mut S,
    ) -> Option<Bound<Vec<u8>>> {
        let bound = self.to_trie(start);
        let bound = bound.as_ref().map(Vec::as_slice);
        let end = self.to_trie(end);
        let end = end.as_ref().map(Vec::as_slice);
        let mut count = 0;
        let first = match bound {
            Bound::Unbounded | Bound::Included([]) => {
                if before(&[], end)
                    && !self.arenas[0].empty_is_absent()
                    && self.arenas[0].get_with(&[], |v| out.push(&[], v)).is_some()
                {
                    count += 1;
                }
                0
            }
            Bound::Included(k) | Bound::Excluded(k) => k.first().copied().unwrap_or(0),
        };
        // The last trie that may hold keys before `end`. (An end `Excluded([t])` ends
        // before every key of trie `t`: its arena is not read just to find that out.)
        let top = match end {
            Bound::Unbounded => 255,
            Bound::Excluded(&[t]) => t.checked_sub(1)?,
            Bound::Included(e) | Bound::Excluded(e) => match e.first() {
                Some(&t) => t,
                None => return None,
            },
        };
        if count >= max {
            // The empty key alone filled the copy.
            return Some(Bound::Excluded(Vec::new()));
        }
        let mut buf = Vec::new();
        for b in first..=top {
            let arena = &self.arenas[b as usize % self.arenas.len()];
            if arena.trie_is_empty(b) {
                continue;
            }
            let how = Copy {
                bound,
                end,
                desc: false,
                decode: self.config.preprocess,
            };
            let (copied, n) = self.copy_trie(arena, b, how, max - count, out, &mut buf);
            count += n;
            match copied {
                Copied::Done => {}
                Copied::PastEnd => return None,
                Copied::Full(last) => {
                    let mut s = Vec::new();
                    return Some(Bound::Excluded(self.user_key(&last, &mut s).to_vec()));
                }
            }
        }
        None
    }

    /// Copies into `out`, ascending, the up to `max` pairs before `end` (the last ones).
    /// Returns the bound below which the previous pairs lie (`None`: none). Each trie is
    /// copied by [`Hyperion::copy_trie`]; no user code runs during a copy.
    pub(crate) fn copy_back<S: Sink>(
        &self,
        end: Bound<&[u8]>,
        max: usize,
        out: &mut S,
    ) -> Option<Bound<Vec<u8>>> {
        let bound = self.to_trie(end);
        let bound = bound.as_ref().map(Vec::as_slice);
        // Pairs are found descending: collected in a batch of their own, then copied to
        // `out` ascending.
        let mut desc = ScanBatch::default();
        // The last trie that may hold keys before the bound (`Excluded([t])`: trie `t`
        // holds none, and its arena is not read).
        let top = match bound {
            Bound::Unbounded => Some(255u8),
            Bound::Excluded(&[t]) => t.checked_sub(1),
            Bound::Included(k) | Bound::Excluded(k) => k.first().copied(),
        };
        let mut buf = Vec::new();
        let mut full = false;
        if let Some(top) = top {
            for b in (0..=top).rev() {
                let arena = &self.arenas[b as usize % self.arenas.len()];
                if arena.trie_is_empty(b) {
                    continue;
                }
                let how = Copy {
                    bound,
                    end: Bound::Unbounded,
                    desc: true,
                    decode: false,
                };
                let left = max - desc.len();
                if let (Copied::Full(_), _) =
                    self.copy_trie(arena, b, how, left, &mut desc, &mut buf)
                {
                    full = true;
                    break;
                }
            }
        }
        let empty_ok = !matches!(bound, Bound::Excluded([]));
        if !full && empty_ok && !self.arenas[0].empty_is_absent() {
            self.arenas[0].get_with(&[], |v| desc.push(&[], v));
        }
        let mut scratch = Vec::new();
        for i in (0..desc.len()).rev() {
            let (k, v) = desc.pair(i);
            out.push(self.user_key(k, &mut scratch), v);
        }
        if full {
            let (k, _) = desc.pair(desc.len() - 1);
            return Some(Bound::Excluded(self.user_key(k, &mut scratch).to_vec()));
        }
        None
    }

    /// Copies into `out` up to `max` pairs of trie `b` (of `arena`) from `how.bound` on
    /// (descending: down from it), stopping before a key past `how.end`; returns how it
    /// ended and the number of pairs copied.
    ///
    /// Each attempt takes the arena's shared lock if it is free at once (no writer holds
    /// or waits for it) and copies under it; otherwise it copies optimistically (see the
    /// module docs, "Locks and optimistic copies"): pinned, reading through [`OptSrc`],
    /// validating the trie's version before it keeps each pair, so a torn attempt keeps the pairs
    /// it copied before and the next attempt resumes after the last of them. After
    /// [`OPT_ATTEMPTS`] attempts in a row that kept fewer than [`OPT_PROGRESS`] pairs, the
    /// rest is copied under the arena's fair scan lock
    /// ([`crate::arena::Arena::scan_lock`]): a copy beside a continuous writer wastes a
    /// bounded amount of work before it waits; and the next [`CONTENDED_COPIES`] copies
    /// of the same trie on this thread wait for that lock at once (unless the shared
    /// lock is free).
    fn copy_trie<S: Sink>(
        &self,
        arena: &Arena,
        b: u8,
        how: Copy<'_>,
        max: usize,
        out: &mut S,
        buf: &mut Vec<u8>,
    ) -> (Copied, usize) {
        let mut resume: Option<Vec<u8>> = None;
        // A trie whose last copy on this thread ended under the scan lock is copied under
        // it again, for its next few copies, unless the shared lock is free.
        let here = (std::ptr::from_ref(arena).addr(), b);
        let skip = CONTENDED.with(|c| {
            let (at, n) = c.get();
            if at == here && n > 0 {
                c.set((at, n - 1));
                true
            } else {
                false
            }
        });
        let (mut left, mut slow) = (max, if skip { OPT_ATTEMPTS } else { 0 });
        let mut scratch = Vec::new();
        let mut root_val = Vec::new();
        loop {
            let from = resume.as_deref().map_or(how.bound, Bound::Excluded);
            let guard = match arena.try_scan_lock() {
                Some(g) => Some(g),
                None if slow >= OPT_ATTEMPTS => {
                    if !skip {
                        CONTENDED.with(|c| c.set((here, CONTENDED_COPIES)));
                    }
                    Some(arena.scan_lock())
                }
                None => None,
            };
            let mut c = Copier {
                out: &mut *out,
                end: how.end,
                decode: how.decode,
                want: left,
                n: 0,
                last: Vec::new(),
                track: guard.is_none(),
                past: false,
                bad: false,
                torn: false,
                scratch: &mut scratch,
            };
            let r = match &guard {
                Some(a) => {
                    let root = a.roots[usize::from(b)].hp;
                    let val = a.get(&[b]);
                    let mut visit = |k: &[u8], v: &[u8]| c.visit(k, v);
                    let flow =
                        node::walk_trie(&a.mm, root, val, b, from, how.desc, buf, &mut visit);
                    debug_assert!(!c.bad, "a stored key is a pre-processed key");
                    Ok(node::ok(flow))
                }
                None => arena.optimistic(b, |view, valid| {
                    let src = OptSrc {
                        dirs: &view.dirs,
                        valid,
                    };
                    let rv = view.get(&[b], &mut root_val, valid)?;
                    let rv = rv.then_some(root_val.as_slice());
                    // Everything read so far is consistent if the version still
                    // validates: then the pair is kept.
                    let mut visit = |k: &[u8], v: &[u8]| {
                        if !valid() {
                            c.torn = true;
                            return ControlFlow::Break(());
                        }
                        c.visit(k, v)
                    };
                    let flow =
                        node::walk_trie(src, view.root(b), rv, b, from, how.desc, buf, &mut visit)?;
                    // A stored key always decodes: one that does not was torn.
                    if c.torn || c.bad { Err(Torn) } else { Ok(flow) }
                }),
            };
            drop(guard);
            let (n, last, past) = (c.n, c.last, c.past);
            left -= n;
            match r {
                Ok(_) if past => return (Copied::PastEnd, max - left),
                Ok(ControlFlow::Continue(())) => return (Copied::Done, max - left),
                _ if left == 0 => return (Copied::Full(last), max),
                Ok(ControlFlow::Break(())) => {
                    // Only a stored key that does not decode stops a locked copy early
                    // (a bug: `Copier::bad`); the trie's remaining keys are skipped.
                    debug_assert!(false, "a copy stopped early without being full");
                    return (Copied::Done, max - left);
                }
                Err(Torn) => {
                    // The pairs kept were validated; go on after the last one.
                    if n < OPT_PROGRESS {
                        slow += 1;
                    } else {
                        slow = 0;
                    }
                    if n > 0 {
                        resume = Some(last);
                    }
                }
            }
        }
    }
}

/// Whether key `k` is before `end`.
#[inline]
fn before(k: &[u8], end: Bound<&[u8]>) -> bool {
    match end {
        Bound::Unbounded => true,
        Bound::Included(e) => k <= e,
        Bound::Excluded(e) => k < e,
    }
}

/// Optimistic attempts in a row that keep fewer than [`OPT_PROGRESS`] pairs after which a
/// copy takes the arena's fair scan lock.
pub(crate) const OPT_ATTEMPTS: usize = 3;

/// Pairs an optimistic attempt must keep to count as progress (see [`OPT_ATTEMPTS`]).
pub(crate) const OPT_PROGRESS: usize = 8;

/// Copies of a trie that go straight to the scan lock (when the shared lock is not free)
/// after a copy of it on the same thread gave up its optimistic attempts: a trie that
/// one writer keeps changing tears nearly every attempt, and the attempts' seeks then
/// only add to the wait for the lock.
pub(crate) const CONTENDED_COPIES: u32 = 16;

thread_local! {
    /// The trie (arena address, first byte) whose last copy on this thread gave up its
    /// optimistic attempts, and how many of its next copies still skip them.
    static CONTENDED: std::cell::Cell<((usize, u8), u32)> =
        const { std::cell::Cell::new(((0, 0), 0)) };
}

/// What one trie's copy is for (see [`Hyperion::copy_trie`]).
#[derive(Clone, Copy)]
struct Copy<'a> {
    /// Where it starts (trie key space): a lower bound, or going down an upper bound.
    bound: Bound<&'a [u8]>,
    /// Where it stops going up (trie key space).
    end: Bound<&'a [u8]>,
    desc: bool,
    /// Whether keys are decoded (pre-processing) as they are copied.
    decode: bool,
}

/// How one trie's copy ended.
enum Copied {
    /// Every key of the trie in range was copied.
    Done,
    /// As many pairs as asked were copied; the last one's key (trie key space).
    Full(Vec<u8>),
    /// A key past the copy's end was met.
    PastEnd,
}

/// One attempt's visitor: copies pairs into `out` up to `want`.
struct Copier<'a, S> {
    out: &'a mut S,
    end: Bound<&'a [u8]>,
    decode: bool,
    want: usize,
    /// Pairs copied, and the last one's key: kept for every pair when `track` (an
    /// optimistic attempt resumes after it), else only when `want` is reached.
    n: usize,
    last: Vec<u8>,
    track: bool,
    /// Whether a key past `end` was met, whether a key did not decode (torn: a stored key
    /// always does), whether validation failed before a pair (set by the caller).
    past: bool,
    bad: bool,
    torn: bool,
    scratch: &'a mut Vec<u8>,
}

impl<S: Sink> Copier<'_, S> {
    #[inline(always)]
    fn visit(&mut self, k: &[u8], v: &[u8]) -> ControlFlow<()> {
        if !matches!(self.end, Bound::Unbounded) && !before(k, self.end) {
            self.past = true;
            return ControlFlow::Break(());
        }
        if self.decode {
            if prep::decode(k, self.scratch).is_none() {
                self.bad = true;
                return ControlFlow::Break(());
            }
            self.out.push(self.scratch, v);
        } else {
            self.out.push(k, v);
        }
        self.n += 1;
        if self.track || self.n >= self.want {
            self.last.clear();
            self.last.extend_from_slice(k);
        }
        if self.n >= self.want {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// Where a copy puts its pairs: the iterator's [`PairBatch`] or a scan's [`ScanBatch`].
pub(crate) trait Sink {
    /// Appends a copy of a pair.
    fn push(&mut self, key: &[u8], value: &[u8]);
}

impl Sink for PairBatch {
    #[inline]
    fn push(&mut self, key: &[u8], value: &[u8]) {
        PairBatch::push(self, key, value);
    }
}

/// The pairs copied by one refill of [`Hyperion::scan`] and its kin: keys and values
/// appended to one byte buffer, two end offsets per pair, both reused across refills.
///
/// [`PairBatch`] (the iterators' batch) has the same layout; this one copies short keys
/// and values by 8-byte words instead of a `memmove` call per key and per value, which
/// took about a sixth of a full scan's time (`docs/results/hyperion.md`, scan work).
#[derive(Default)]
pub(crate) struct ScanBatch {
    bytes: Vec<u8>,
    /// Per pair: the end of its key (where its value starts), the end of its value (where
    /// the next key starts).
    ends: Vec<(usize, usize)>,
}

impl ScanBatch {
    /// Removes every pair, keeping the buffers.
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Number of pairs.
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The `i`-th pair (`i < len`).
    #[inline]
    pub(crate) fn pair(&self, i: usize) -> (&[u8], &[u8]) {
        let start = if i == 0 { 0 } else { self.ends[i - 1].1 };
        let (k, v) = self.ends[i];
        (&self.bytes[start..k], &self.bytes[k..v])
    }
}

impl Sink for ScanBatch {
    #[inline(always)]
    fn push(&mut self, key: &[u8], value: &[u8]) {
        self.bytes.reserve(key.len() + value.len());
        append(&mut self.bytes, key);
        let k = self.bytes.len();
        append(&mut self.bytes, value);
        self.ends.push((k, self.bytes.len()));
    }
}

/// Appends `s` to `v` by inlined moves when it is at most 32 bytes long (longer: by
/// `extend_from_slice`): under 8 bytes one byte at a time; else 8-byte words, the last one
/// (when the length is not a multiple of 8) being `s`'s last 8 bytes, written over the
/// previous word's tail.
#[inline(always)]
fn append(v: &mut Vec<u8>, s: &[u8]) {
    let n = s.len();
    if n > 32 {
        v.extend_from_slice(s);
        return;
    }
    if n < 8 {
        for &b in s {
            v.push(b);
        }
        return;
    }
    let mut words = s.chunks_exact(8);
    for w in words.by_ref() {
        let w: &[u8; 8] = w.try_into().expect("8-byte chunks");
        v.extend_from_slice(w);
    }
    let rem = words.remainder().len();
    if rem > 0 {
        v.truncate(v.len() - (8 - rem));
        let w: &[u8; 8] = s[n - 8..].try_into().expect("8 bytes");
        v.extend_from_slice(w);
    }
}

/// An iterator over a key range of a [`Hyperion`], in key order from either end: a
/// seekable cursor that copies up to 64 pairs at a time into a reusable arena.
///
/// Made by [`Hyperion::iter`] and [`Hyperion::range`]. It implements [`Iterator`] and
/// [`DoubleEndedIterator`] (`.rev()` yields descending keys; both ends may be used, and they
/// stop where they meet). Items are [`Entry`](orrery_core::batch::Entry)s, handles into the batch; [`Iter::next_pair`]
/// and [`Iter::next_back_pair`] lend the pair as slices instead. No lock is held between
/// calls; under concurrent writers it is not a snapshot ([`orrery_core::api`]).
///
/// ```
/// use orrery_hyperion::Hyperion;
/// use std::ops::Bound;
/// let h = Hyperion::new();
/// for i in 0u32..1000 {
///     h.insert(&i.to_be_bytes(), b"v").unwrap();
/// }
/// let mut it = h.iter();
/// assert_eq!(it.next_pair().map(|(k, _)| k.to_vec()), Some(0u32.to_be_bytes().to_vec()));
/// it.seek(Bound::Excluded(&500u32.to_be_bytes()));
/// assert_eq!(it.next().unwrap().key(), 501u32.to_be_bytes());
/// assert_eq!(it.next_back().unwrap().key(), 999u32.to_be_bytes());
/// assert_eq!(it.count(), 497);
/// ```
pub type Iter<'a> = BatchIter<&'a Hyperion>;

/// [`Iter`]'s source: ordered walks of up to 64 pairs per batch.
impl BatchSource for Hyperion {
    fn fill_front(&self, start: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.copy_front(start, Bound::Unbounded, BATCH, out)
    }

    fn fill_back(&self, end: Bound<&[u8]>, out: &mut PairBatch) -> Option<Bound<Vec<u8>>> {
        self.copy_back(end, BATCH, out)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::ops::{Bound, ControlFlow};

    use rand::Rng as _;

    use crate::{Config, Hyperion};

    type Map = BTreeMap<Vec<u8>, Vec<u8>>;

    fn owned(b: Bound<&Vec<u8>>) -> Bound<Vec<u8>> {
        b.map(Clone::clone)
    }

    /// A scan visitor that collects pairs into `got` until it holds `n`.
    fn take(
        got: &mut Vec<(Vec<u8>, Vec<u8>)>,
        n: usize,
    ) -> impl FnMut(&[u8], &[u8]) -> ControlFlow<()> + '_ {
        move |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            if got.len() == n {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }

    /// Compares scans, reverse scans and iterators from `lo`/`hi` with the map's, up to
    /// `n` pairs each way.
    fn check_from(h: &Hyperion, m: &Map, lo: Bound<&Vec<u8>>, hi: Bound<&Vec<u8>>, n: usize) {
        let mut got = Vec::new();
        h.scan(lo.map(Vec::as_slice), &mut take(&mut got, n));
        let want: Vec<_> = m
            .range((owned(lo), Bound::Unbounded))
            .take(n)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got, want, "scan from {lo:?}");
        got.clear();
        h.scan_rev(hi.map(Vec::as_slice), &mut take(&mut got, n));
        let want: Vec<_> = m
            .range((Bound::Unbounded, owned(hi)))
            .rev()
            .take(n)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got, want, "scan_rev from {hi:?}");
        let inverted = match (lo, hi) {
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a > b || (a == b && !matches!((lo, hi), (Bound::Included(_), Bound::Included(_))))
            }
            _ => false,
        };
        if inverted {
            assert_eq!(
                h.range::<[u8], _>((lo.map(Vec::as_slice), hi.map(Vec::as_slice)))
                    .count(),
                0
            );
            return;
        }
        let r = (owned(lo), owned(hi));
        let mut it = h.range::<[u8], _>((lo.map(Vec::as_slice), hi.map(Vec::as_slice)));
        let mut mi = m.range(r);
        // Alternate ends.
        for i in 0..2 * n {
            let (g, w) = if i % 3 == 0 {
                (
                    it.next_back_pair().map(|(k, _)| k.to_vec()),
                    mi.next_back().map(|(k, _)| k.clone()),
                )
            } else {
                (
                    it.next_pair().map(|(k, _)| k.to_vec()),
                    mi.next().map(|(k, _)| k.clone()),
                )
            };
            assert_eq!(g, w, "range {lo:?}..{hi:?} step {i}");
            if g.is_none() {
                break;
            }
        }
    }

    /// Scans from many bounds — keys, non-keys, prefixes — in a big split root container
    /// (plus embedded and child containers, path-compressed and out-of-line values) match
    /// a `BTreeMap`, both ways, before and after removing a third of the keys.
    #[test]
    fn scans_from_many_bounds_in_a_split_container() {
        let h = Hyperion::with_config(Config::builder().arenas(1).build().unwrap()).unwrap();
        let mut m = Map::new();
        let mut r = orrery_core::testing::rng::rng(0x2545_F491_4F6C_DD1D);
        let n = 24_000;
        for i in 0..n {
            let x = r.random::<u64>();
            let mut k = vec![b'x'];
            match i % 8 {
                // Short keys ending at T-Nodes and S-Nodes.
                0 => k.push(x as u8),
                1 => k.extend_from_slice(&(x as u16).to_be_bytes()),
                // Shared 3-byte prefixes: embedded containers and child containers.
                2 | 3 => {
                    k.extend_from_slice(&[(x >> 8) as u8 & 0x7, (x >> 16) as u8, 0x55]);
                    k.extend_from_slice(&(x as u32).to_be_bytes()[..(x as usize >> 40) % 5]);
                }
                _ => k.extend_from_slice(&(x as u32).to_be_bytes()),
            }
            let v = (i as u64).to_le_bytes()[..(x as usize >> 50) % 9].to_vec();
            let v = if i % 97 == 0 {
                [v.as_slice(), &[7; 20]].concat()
            } else {
                v
            };
            h.insert(&k, &v).unwrap();
            m.insert(k, v);
        }
        {
            let a = h.arenas[0].read();
            let root = a.roots[b'x' as usize].hp.expect("trie x");
            assert!(a.mm.is_chain(root), "the root container was split");
        }
        let all: Vec<_> = h.iter().map(|e| e.into_pair()).collect();
        assert_eq!(
            all,
            m.iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Vec<_>>()
        );
        let rev: Vec<_> = h.iter().rev().map(|e| e.key().to_vec()).collect();
        assert!(rev.iter().eq(m.keys().rev()));
        // Whole scans: many copies of growing batches.
        let mut got = Vec::new();
        h.scan(Bound::Unbounded, &mut |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        assert_eq!(got, all);
        got.clear();
        h.scan_rev(Bound::Unbounded, &mut |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        got.reverse();
        assert_eq!(got, all);
        for round in 0..2 {
            let keys: Vec<Vec<u8>> = m.keys().cloned().collect();
            for j in 0..300 {
                let x = r.random::<u64>();
                let mut b = match j % 4 {
                    0 => keys[x as usize % keys.len()].clone(),
                    1 => {
                        let mut k = keys[x as usize % keys.len()].clone();
                        k.truncate(1 + (x >> 32) as usize % k.len());
                        k
                    }
                    2 => {
                        let mut k = keys[x as usize % keys.len()].clone();
                        k.push((x >> 40) as u8);
                        k
                    }
                    _ => (x.to_be_bytes()[..(x >> 60) as usize % 9]).to_vec(),
                };
                if j % 50 == 0 {
                    b = vec![b'x'];
                }
                let c = keys[(x >> 20) as usize % keys.len()].clone();
                let (lo, hi) = if b <= c { (b, c) } else { (c, b) };
                let bounds = [
                    (Bound::Included(&lo), Bound::Included(&hi)),
                    (Bound::Excluded(&lo), Bound::Excluded(&hi)),
                    (Bound::Included(&lo), Bound::Excluded(&lo)),
                    (Bound::Excluded(&hi), Bound::Unbounded),
                    (Bound::Unbounded, Bound::Included(&lo)),
                ];
                let (l, u) = bounds[j % bounds.len()];
                check_from(&h, &m, l, u, 40);
            }
            if round == 0 {
                let keys: Vec<Vec<u8>> = m.keys().cloned().collect();
                for k in keys.iter().step_by(3) {
                    assert!(h.remove(k));
                    m.remove(k);
                }
                // A range removal across parts.
                let lo = vec![b'x', 0x30];
                let hi = vec![b'x', 0x90, 0x10];
                let want = m.range(lo.clone()..hi.clone()).count();
                let got = h.remove_range(Bound::Included(&lo), Bound::Excluded(&hi));
                assert_eq!(got, want);
                m.retain(|k, _| !(k >= &lo && k < &hi));
            }
        }
        // The house iterator checks (ascending, descending, both ends, ranges and seeks
        // at sampled keys) against the full scan, on the big split container.
        orrery_core::testing::fuzz::check_batch_iterators(&h);
        for p in [
            &[b'x', 0x05][..],
            b"x",
            &[b'x', 0xFF],
            &[b'x', 0x05, 0x55],
            b"w",
        ] {
            let mut got = Vec::new();
            h.scan_prefix(p, &mut |k, _| {
                got.push(k.to_vec());
                ControlFlow::Continue(())
            });
            let want: Vec<_> = m.keys().filter(|k| k.starts_with(p)).cloned().collect();
            assert_eq!(got, want, "prefix {p:?}");
        }
    }

    /// A scan batch returns every pair as pushed, for key and value lengths around the
    /// word copy's cases (0–7 bytes, whole words, remainders, over 32 bytes).
    #[test]
    fn scan_batch_round_trips_every_length() {
        let mut b = super::ScanBatch::default();
        for round in 0..2 {
            b.clear();
            let mut want = Vec::new();
            for i in 0..80usize {
                let k: Vec<u8> = (0..i).map(|j| (j * 7 + i + round) as u8).collect();
                let v: Vec<u8> = (0..(80 - i)).map(|j| (j * 3 + i) as u8).collect();
                super::Sink::push(&mut b, &k, &v);
                want.push((k, v));
            }
            assert_eq!(b.len(), want.len());
            for (i, (k, v)) in want.iter().enumerate() {
                assert_eq!(b.pair(i), (&k[..], &v[..]), "pair {i}");
            }
        }
    }

    /// Full and partial scans both ways over one trie whose containers hold thousands of
    /// keys each (so refills of 64 to 1,024 pairs stop and resume inside containers, at
    /// S-Nodes, path-compressed suffixes and embedded containers), with long keys (over
    /// 32 bytes: copied whole; over 127: long suffixes) and values from empty to 40 bytes
    /// (over 8: out of line), against a `BTreeMap`.
    #[test]
    fn scans_resume_inside_containers_with_long_keys_and_values() {
        let h = Hyperion::with_config(Config::builder().arenas(1).build().unwrap()).unwrap();
        let mut m = Map::new();
        let mut r = orrery_core::testing::rng::rng(0x1234_5678_9ABC_DEF1);
        for i in 0..12_000u32 {
            let x = r.random::<u64>();
            let mut k = vec![b'k', (x >> 56) as u8 & 0x3];
            k.extend_from_slice(&(x as u32).to_be_bytes()[..1 + i as usize % 4]);
            match i % 5 {
                0 => k.extend((0..(x >> 8) as usize % 60).map(|j| j as u8)),
                1 if i % 35 == 1 => k.extend((0..130 + (x >> 8) as usize % 40).map(|j| j as u8)),
                _ => {}
            }
            let v: Vec<u8> = (0..(x >> 20) as usize % 41)
                .map(|j| j as u8 ^ i as u8)
                .collect();
            h.insert(&k, &v).unwrap();
            m.insert(k, v);
        }
        let all: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut got = Vec::new();
        h.scan(Bound::Unbounded, &mut |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        assert_eq!(got, all, "ascending full scan");
        got.clear();
        h.scan_rev(Bound::Unbounded, &mut |k, v| {
            got.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        got.reverse();
        assert_eq!(got, all, "descending full scan");
        // Long scans from bounds inside the set: 3,000 pairs cross several refills.
        let keys: Vec<&Vec<u8>> = m.keys().collect();
        for j in 0..12 {
            let b = keys[(r.random::<u64>() as usize) % keys.len()];
            check_from(&h, &m, Bound::Included(b), Bound::Excluded(b), 3000);
            let mut p = b.clone();
            p.truncate(2 + j % 3);
            check_from(&h, &m, Bound::Excluded(&p), Bound::Included(&p), 3000);
        }
    }

    /// The fuzz target's checks on fixed pseudo-random inputs: differential runs against
    /// the model, then `check_batch_iterators`, on the default configuration, one arena
    /// with a 256-byte ejection threshold, and pre-processing.
    #[test]
    fn differential_then_batch_iterators() {
        use orrery_core::testing::fuzz::{check_batch_iterators, ops_from_bytes, run_differential};
        let mut r = orrery_core::testing::rng::rng(0x9E37_79B9_7F4A_7C15);
        for len in [64usize, 512, 4096, 16384] {
            let data: Vec<u8> = (0..len).map(|_| r.random::<u64>() as u8).collect();
            let ops = ops_from_bytes(&data);
            let configs = [
                Config::default(),
                Config::builder()
                    .arenas(1)
                    .eject_threshold(256)
                    .build()
                    .unwrap(),
                Config::builder().preprocess(true).build().unwrap(),
            ];
            for c in configs {
                let h = Hyperion::with_config(c).unwrap();
                run_differential(&h, &ops);
                check_batch_iterators(&h);
            }
        }
    }
}
