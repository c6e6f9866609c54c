//! Ordered walks over the byte format: [`walk`] visits the keys below a root container
//! that pass a bound, ascending or descending, reading through a [`Src`] (the memory
//! manager under the arena's lock, or an optimistic reader's checked view); [`walk_trie`]
//! adds a trie's root value.

use std::ops::{Bound, ControlFlow};

use crate::mm::{CHAIN_SLOTS, Hp, MemoryManager, SLOT_KEYS};

use super::bytes::{Bytes, R, Torn};
use super::cjt;
use super::format::{
    ChildRef, Suffix, ValRef, jump_successor_in, parse_in, suffix_bytes, t_key_in, used_in,
    val_bytes,
};

/// The visitor of an ordered walk.
pub(crate) type Visit<'a> = dyn FnMut(&[u8], &[u8]) -> ControlFlow<()> + 'a;

/// What an ordered walk does with a subtree, given its prefix and the bound.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fit {
    /// Every key of the subtree is outside the bound.
    Skip,
    /// Every key of the subtree is inside.
    All,
    /// The prefix is a proper prefix of the bound: look inside.
    Partial,
}

/// How the keys strictly below prefix `q` (all longer than `q`) relate to the walk's
/// bound `b` (a lower bound going up, an upper bound going down).
fn fit(q: &[u8], b: &[u8], desc: bool) -> Fit {
    if b.starts_with(q) {
        if q.len() < b.len() {
            return Fit::Partial;
        }
        // `q == b`: every key below is longer, hence greater than the bound.
        return if desc { Fit::Skip } else { Fit::All };
    }
    let n = q.len().min(b.len());
    // `q` is not a prefix of `b`: either they differ within `n`, or `b` is a proper prefix
    // of `q` (then `q > b`).
    let greater = q[..n] > b[..n] || (q[..n] == b[..n] && q.len() > b.len());
    match (greater, desc) {
        (true, false) | (false, true) => Fit::All,
        _ => Fit::Skip,
    }
}

/// Whether the single key `k` passes bound `b`.
fn key_ok(k: &[u8], b: Bound<&[u8]>, desc: bool) -> bool {
    match (b, desc) {
        (Bound::Unbounded, _) => true,
        (Bound::Included(b), false) => k >= b,
        (Bound::Excluded(b), false) => k > b,
        (Bound::Included(b), true) => k <= b,
        (Bound::Excluded(b), true) => k < b,
    }
}

/// One step of an ordered walk at one level.
#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A key ends: the bytes appended to the level's prefix (1 or 2 key bytes, or 2 plus a
    /// suffix), and its value.
    Key {
        t: u8,
        s: Option<u8>,
        sfx: Option<Suffix>,
        val: ValRef,
    },
    /// A child payload to enter (prefix + `t`, `s`).
    Enter {
        t: u8,
        s: u8,
        chunk: Option<Hp>,
        start: usize,
        end: usize,
    },
}

/// Where a bounded walk's bound falls in one payload: the bound's next key byte (a T-Node
/// key) and the one after it (an S-Node key), if the bound is that long.
type Seek = Option<(u8, Option<u8>)>;

/// The key of the T-Node group at `pos` (its delta decoded from `prev`) and the offset of
/// the next T-Node (or of `end`): by the T-Node's jump successor when it has one, else by
/// parsing its S-Nodes. The offset returned is past `pos`.
#[inline]
fn skip_group<B: Bytes>(buf: B, pos: usize, prev: u8, end: usize) -> R<(u8, usize)> {
    let key = t_key_in(buf, pos, prev)?;
    if let Some(d) = jump_successor_in(buf, pos)? {
        return Ok((key, pos + d));
    }
    let mut p = parse_in(buf, pos, prev)?.next;
    while p < end && buf.at(p)? & 0x20 != 0 {
        p = parse_in(buf, p, 0)?.next;
    }
    Ok((key, p))
}

/// Appends to `out`, ascending, the events of the T-Node group at `pos` (the T-Node's key
/// decoded from `prev`) of payload `buf[..end]`. When the group's T-Node is the bound's
/// (`seek`), only its S-Nodes on the bound's side are listed: from the bound's S-Node key
/// on going up, up to it going down (none when the bound ends at the T-Node). Returns the
/// T-Node's key and where decoding stopped (the group's end, or going down the first
/// S-Node past the bound). Descending walks use it; ascending ones parse in place
/// (`Frame::next_up`).
#[inline]
fn group<B: Bytes>(
    buf: B,
    pos: usize,
    prev: u8,
    end: usize,
    seek: Seek,
    desc: bool,
    out: &mut Vec<Ev>,
) -> R<(u8, usize)> {
    let n = parse_in(buf, pos, prev)?;
    if n.is_s {
        // Under the lock a group starts with a T-Node; here the bytes are torn.
        return Err(Torn);
    }
    let t = n.key;
    let (lo, hi): (u8, i16) = match seek {
        Some((b0, b1)) if b0 == t => match (desc, b1) {
            (false, Some(b1)) => (b1, 255),
            (false, None) => (0, 255),
            (true, Some(b1)) => (0, i16::from(b1)),
            (true, None) => (0, -1),
        },
        _ => (0, 255),
    };
    if let Some(val) = n.val {
        out.push(Ev::Key {
            t,
            s: None,
            sfx: None,
            val,
        });
    }
    let mut pos = n.next;
    let mut prev_s = 0u8;
    while pos < end && buf.at(pos)? & 0x20 != 0 {
        let s = parse_in(buf, pos, prev_s)?;
        pos = s.next;
        prev_s = s.key;
        if s.key < lo {
            continue;
        }
        if i16::from(s.key) > hi {
            break;
        }
        if let Some(val) = s.val {
            out.push(Ev::Key {
                t,
                s: Some(s.key),
                sfx: None,
                val,
            });
        }
        match s.child {
            ChildRef::None => {}
            ChildRef::Hp(hp, _) => out.push(Ev::Enter {
                t,
                s: s.key,
                chunk: Some(hp),
                start: 0,
                end: 0,
            }),
            ChildRef::Emb(a, b) => out.push(Ev::Enter {
                t,
                s: s.key,
                chunk: None,
                start: a,
                end: b,
            }),
            ChildRef::Pc(sfx, val) => out.push(Ev::Key {
                t,
                s: Some(s.key),
                sfx: Some(sfx),
                val,
            }),
        }
    }
    Ok((t, pos))
}

/// One level of an ordered walk's explicit stack: one payload, read one T-Node group at a
/// time (a T-Node and its S-Nodes).
struct Frame<B> {
    buf: B,
    end: usize,
    /// Going up: the offset of the next node, the key the next T-Node's delta is decoded
    /// from, the current T-Node's key, the previous S-Node's key, the least S-Node key
    /// listed in the current group (the bound's, in the bound's group), and the child
    /// event of an S-Node whose own key was returned first.
    next: usize,
    prev: u8,
    t: u8,
    prev_s: u8,
    lo: u8,
    pending: Option<Ev>,
    /// Going down: the groups still to read (offset, delta base), the next one last.
    groups: Vec<(usize, u8)>,
    /// The events of the current group, in walk order, and the next one's index.
    evs: Vec<Ev>,
    i: usize,
    /// The length of the key prefix above this payload.
    plen: usize,
    /// Whether the bound falls inside this payload (its keys must be checked).
    bounded: bool,
    seek: Seek,
}

/// The reusable vectors of popped frames.
type Spare = Vec<(Vec<Ev>, Vec<(usize, u8)>)>;

impl<B: Bytes> Frame<B> {
    /// A frame over payload `buf[start..end]`, positioned at the bound (`seek`): going up
    /// at the first group whose T-Node key is at least the bound's byte — entering a
    /// container through its jump table (`cjt`: `buf` is a container and `start` its
    /// payload's start) and skipping groups by their jump successors; going down with the
    /// list of groups whose T-Node key is at most the bound's byte. A range that does not
    /// fit in `buf` is torn.
    #[allow(clippy::too_many_arguments)]
    fn new(
        buf: B,
        (start, end): (usize, usize),
        cjt: bool,
        plen: usize,
        seek: Seek,
        desc: bool,
        spare: &mut Spare,
    ) -> R<Frame<B>> {
        if start > end || end > buf.size() {
            return Err(Torn);
        }
        // (Torn: the vectors are dropped with the error, not returned to `spare`.)
        let (evs, mut groups) = spare.pop().unwrap_or_default();
        let (mut next, mut prev) = (start, 0u8);
        if desc {
            let top = seek.map(|(b0, _)| b0);
            while next < end {
                let k = t_key_in(buf, next, prev)?;
                if top.is_some_and(|b0| k > b0) {
                    break;
                }
                groups.push((next, prev));
                (prev, next) = skip_group(buf, next, prev, end)?;
            }
        } else if let Some((b0, _)) = seek {
            if cjt {
                (next, prev) = cjt::seek_in(buf, b0)?;
            }
            while next < end {
                if t_key_in(buf, next, prev)? >= b0 {
                    break;
                }
                (prev, next) = skip_group(buf, next, prev, end)?;
            }
        }
        Ok(Frame {
            buf,
            end,
            next,
            prev,
            t: 0,
            prev_s: 0,
            lo: 0,
            pending: None,
            groups,
            evs,
            i: 0,
            plen,
            bounded: seek.is_some(),
            seek,
        })
    }

    /// Going up: the next event, parsed in place (no list).
    #[inline]
    fn next_up(&mut self) -> R<Option<Ev>> {
        if let Some(ev) = self.pending.take() {
            return Ok(Some(ev));
        }
        let buf = self.buf;
        while self.next < self.end {
            if buf.at(self.next)? & 0x20 == 0 {
                let n = parse_in(buf, self.next, self.prev)?;
                self.next = n.next;
                (self.prev, self.t, self.prev_s, self.lo) = (n.key, n.key, 0, 0);
                if let Some((b0, b1)) = self.seek {
                    if b0 == n.key {
                        self.lo = b1.unwrap_or(0);
                    } else {
                        // Past the bound's T-Node every key here is inside the bound.
                        self.seek = None;
                        self.bounded = false;
                    }
                }
                if let Some(val) = n.val {
                    return Ok(Some(Ev::Key {
                        t: n.key,
                        s: None,
                        sfx: None,
                        val,
                    }));
                }
                continue;
            }
            let s = parse_in(buf, self.next, self.prev_s)?;
            self.next = s.next;
            self.prev_s = s.key;
            if s.key < self.lo {
                continue;
            }
            let t = self.t;
            let child = match s.child {
                ChildRef::None => None,
                ChildRef::Hp(hp, _) => Some(Ev::Enter {
                    t,
                    s: s.key,
                    chunk: Some(hp),
                    start: 0,
                    end: 0,
                }),
                ChildRef::Emb(a, b) => Some(Ev::Enter {
                    t,
                    s: s.key,
                    chunk: None,
                    start: a,
                    end: b,
                }),
                ChildRef::Pc(sfx, val) => Some(Ev::Key {
                    t,
                    s: Some(s.key),
                    sfx: Some(sfx),
                    val,
                }),
            };
            if let Some(val) = s.val {
                self.pending = child;
                return Ok(Some(Ev::Key {
                    t,
                    s: Some(s.key),
                    sfx: None,
                    val,
                }));
            }
            if child.is_some() {
                return Ok(child);
            }
        }
        Ok(None)
    }

    /// Going down: reads the next group's events (in walk order); `false` when none is
    /// left.
    #[inline]
    fn load(&mut self) -> R<bool> {
        self.evs.clear();
        self.i = 0;
        let Some((pos, prev)) = self.groups.pop() else {
            return Ok(false);
        };
        let (t, _) = group(
            self.buf,
            pos,
            prev,
            self.end,
            self.seek,
            true,
            &mut self.evs,
        )?;
        self.evs.reverse();
        // Below the bound's T-Node every key here is inside the bound.
        if self.seek.is_some_and(|(b0, _)| b0 != t) {
            self.bounded = false;
            self.seek = None;
        }
        Ok(true)
    }
}

/// Where an ordered walk finds containers and the bytes out of line: the memory manager
/// under the arena's lock (`&MemoryManager`, plain slices), or an optimistic reader's
/// view of it (`opt::OptSrc`: checked atomic reads, [`Torn`] when what it reads cannot be
/// consistent).
pub(crate) trait Src: Copy {
    /// The bytes of one container.
    type B: Bytes;
    /// Whether reads may be torn: the walk then validates every [`CHECK_EVERY`] steps.
    const OPTIMISTIC: bool;
    /// The container `hp` names (not a chain: one part, or an unsplit container).
    fn container(self, hp: Hp) -> R<Self::B>;
    /// For a chain `hp` (a split container), which of its [`CHAIN_SLOTS`] slots hold a
    /// part; `None` when `hp` is not a chain.
    fn chain(self, hp: Hp) -> R<Option<[bool; CHAIN_SLOTS]>>;
    /// Appends suffix `s` of payload `buf` to `out`.
    fn suffix(self, buf: Self::B, s: Suffix, out: &mut Vec<u8>) -> R<()>;
    /// The bytes of value `v` of payload `buf`: borrowed, or copied into `scratch`.
    fn value<'s>(self, buf: Self::B, v: ValRef, scratch: &'s mut Vec<u8>) -> R<&'s [u8]>
    where
        Self: 's;
    /// `Ok` when everything read so far is consistent (the optimistic reader's version
    /// still validates); always `Ok` under the lock.
    fn check(self) -> R<()>;
}

impl<'a> Src for &'a MemoryManager {
    type B = &'a [u8];
    const OPTIMISTIC: bool = false;

    #[inline(always)]
    fn container(self, hp: Hp) -> R<&'a [u8]> {
        Ok(self.get(hp))
    }

    #[inline(always)]
    fn chain(self, hp: Hp) -> R<Option<[bool; CHAIN_SLOTS]>> {
        Ok(self
            .is_chain(hp)
            .then(|| std::array::from_fn(|i| !self.is_void(hp.slot(i)))))
    }

    #[inline(always)]
    fn suffix(self, buf: &'a [u8], s: Suffix, out: &mut Vec<u8>) -> R<()> {
        out.extend_from_slice(suffix_bytes(self, buf, s));
        Ok(())
    }

    #[inline(always)]
    fn value<'s>(self, buf: &'a [u8], v: ValRef, _: &'s mut Vec<u8>) -> R<&'s [u8]>
    where
        Self: 's,
    {
        Ok(val_bytes(self, buf, v))
    }

    #[inline(always)]
    fn check(self) -> R<()> {
        Ok(())
    }
}

/// Steps (events and containers entered) an optimistic walk takes between validations.
/// Once the version validates, everything read so far was consistent, and a consistent
/// trie has no cycles and bounded depth: so a walk over torn bytes — which may follow a
/// torn child pointer back up the trie — ends within this many steps of going wrong.
pub(crate) const CHECK_EVERY: usize = 256;

/// Visits, in ascending (or, `desc`, descending) order, the keys below root container
/// `root` that pass `bound` (a lower bound going up, an upper bound going down). `prefix`
/// holds the key bytes above the root (the arena's first byte); it is used as the key
/// buffer and restored on return.
///
/// Iterative (an explicit stack), so a trie as deep as the longest key (32,768 containers
/// for a 64 KiB key) needs no deep recursion. Each stack level reads one payload one
/// T-Node group at a time, so a walk costs the bytes it reads plus, at each level the
/// bound falls in, a seek: going up, the container jump table, the jump successors of the
/// T-Nodes before the bound's and the S-Nodes before the bound's in its group; going
/// down, the jump successors of the T-Nodes up to the bound's and the S-Nodes up to the
/// bound's. Of a split container only the parts on the bound's side are read.
///
/// Generic over the visitor, so a scan's copy into its batch is compiled into the loop
/// (`iter.rs`); [`Visit`] (a `dyn` visitor) works too. Generic over where it reads
/// ([`Src`]): under the arena's lock it cannot fail; optimistically it returns [`Torn`]
/// as soon as it reads bytes that cannot be consistent or a periodic [`Src::check`]
/// fails, and what it visited means something only as far as the caller validated it
/// (a scan's copy validates before keeping each pair: `iter.rs`).
pub(crate) fn walk<S: Src, V>(
    src: S,
    root: Hp,
    prefix: &mut Vec<u8>,
    bound: Bound<&[u8]>,
    desc: bool,
    visit: &mut V,
) -> R<ControlFlow<()>>
where
    V: FnMut(&[u8], &[u8]) -> ControlFlow<()> + ?Sized,
{
    let base = prefix.len();
    let b = match bound {
        Bound::Included(b) | Bound::Excluded(b) => Some(b),
        Bound::Unbounded => None,
    };
    let root_fit = b.map_or(Fit::All, |b| fit(prefix, b, desc));
    if root_fit == Fit::Skip {
        return Ok(ControlFlow::Continue(()));
    }
    // The explicit stack and the popped frames' vectors are reused from this thread's last
    // walk: a refill of a scan is one walk per trie, and a fresh stack's growth (a split
    // container pushes up to 64 frames at once) would allocate per refill.
    let (stack, mut spare) = WALK_SCRATCH.with(|s| s.take());
    let mut stack: Vec<Frame<S::B>> = reuse(stack);
    let root_seek = if root_fit == Fit::Partial {
        seek_at(b, base)
    } else {
        None
    };
    let result = push_container(src, &mut stack, &mut spare, root, base, root_seek, desc)
        .and_then(|()| run(src, &mut stack, &mut spare, prefix, bound, desc, visit));
    prefix.truncate(base);
    for f in stack.drain(..) {
        spare.push((f.evs, f.groups));
    }
    for (evs, groups) in &mut spare {
        evs.clear();
        groups.clear();
    }
    WALK_SCRATCH.with(|s| s.set((reuse(stack), spare)));
    result
}

/// The bound's bytes below a prefix of length `plen` (of a subtree that fits Partial).
#[inline]
fn seek_at(b: Option<&[u8]>, plen: usize) -> Seek {
    let b = b?;
    Some((*b.get(plen)?, b.get(plen + 1).copied()))
}

/// Pushes the frames of the container `hp` (of the parts of a split container on the
/// bound's side, the first on top when ascending).
#[inline]
fn push_container<S: Src>(
    src: S,
    stack: &mut Vec<Frame<S::B>>,
    spare: &mut Spare,
    hp: Hp,
    plen: usize,
    seek: Seek,
    desc: bool,
) -> R<()> {
    let mut parts = [hp; CHAIN_SLOTS];
    let mut n = 1;
    if let Some(full) = src.chain(hp)? {
        // The part holding the bound's T-Node key: slot `b0 / SLOT_KEYS`, or the nearest
        // slot below it that holds a part (`MemoryManager::resolve`).
        let at = seek.map(|(b0, _)| {
            let mut i = usize::from(b0) / SLOT_KEYS;
            while i > 0 && !full[i] {
                i -= 1;
            }
            i
        });
        let mut seen = false;
        n = 0;
        for (i, &full) in full.iter().enumerate() {
            if !full {
                continue;
            }
            let here = at == Some(i);
            seen |= here;
            // Going up, the parts before the bound's hold only smaller keys; going
            // down, the parts after it only greater ones.
            let keep = match at {
                None => true,
                Some(_) => here || (seen != desc),
            };
            if keep {
                parts[n] = hp.slot(i);
                n += 1;
            }
        }
    }
    let mut push_one = |p: Hp| -> R<()> {
        let c = src.container(p)?;
        let range = (cjt::payload_start_in(c)?, used_in(c)?);
        stack.push(Frame::new(c, range, true, plen, seek, desc, spare)?);
        Ok(())
    };
    if desc {
        parts[..n].iter().try_for_each(|&p| push_one(p))
    } else {
        parts[..n].iter().rev().try_for_each(|&p| push_one(p))
    }
}

/// The walk's loop over its stack (see [`walk`]).
#[inline(always)]
fn run<S: Src, V>(
    src: S,
    stack: &mut Vec<Frame<S::B>>,
    spare: &mut Spare,
    prefix: &mut Vec<u8>,
    bound: Bound<&[u8]>,
    desc: bool,
    visit: &mut V,
) -> R<ControlFlow<()>>
where
    V: FnMut(&[u8], &[u8]) -> ControlFlow<()> + ?Sized,
{
    let b = match bound {
        Bound::Included(b) | Bound::Excluded(b) => Some(b),
        Bound::Unbounded => None,
    };
    let mut scratch = Vec::new();
    let mut steps = 0usize;
    loop {
        if S::OPTIMISTIC {
            steps += 1;
            if steps.is_multiple_of(CHECK_EVERY) {
                src.check()?;
            }
        }
        let Some(f) = stack.last_mut() else {
            return Ok(ControlFlow::Continue(()));
        };
        let ev = if desc {
            let Some(&ev) = f.evs.get(f.i) else {
                if !f.load()? {
                    let f = stack.pop().expect("a frame");
                    spare.push((f.evs, f.groups));
                }
                continue;
            };
            f.i += 1;
            ev
        } else {
            let Some(ev) = f.next_up()? else {
                let f = stack.pop().expect("a frame");
                spare.push((f.evs, f.groups));
                continue;
            };
            ev
        };
        let (buf, plen, bounded) = (f.buf, f.plen, f.bounded);
        prefix.truncate(plen);
        match ev {
            Ev::Key { t, s, sfx, val } => {
                prefix.push(t);
                prefix.extend(s);
                if let Some(sfx) = sfx {
                    src.suffix(buf, sfx, prefix)?;
                }
                if (!bounded || key_ok(prefix, bound, desc))
                    && visit(prefix, src.value(buf, val, &mut scratch)?).is_break()
                {
                    return Ok(ControlFlow::Break(()));
                }
            }
            Ev::Enter {
                t,
                s,
                chunk,
                start,
                end,
            } => {
                prefix.push(t);
                prefix.push(s);
                let f = match (bounded, b) {
                    (true, Some(b)) => fit(prefix, b, desc),
                    _ => Fit::All,
                };
                if f == Fit::Skip {
                    continue;
                }
                let plen = prefix.len();
                let seek = if f == Fit::Partial {
                    seek_at(b, plen)
                } else {
                    None
                };
                match chunk {
                    Some(hp) => push_container(src, stack, spare, hp, plen, seek, desc)?,
                    None => {
                        let fr = Frame::new(buf, (start, end), false, plen, seek, desc, spare)?;
                        stack.push(fr);
                    }
                }
            }
        }
    }
}

thread_local! {
    /// The last walk's emptied stack and spare frame vectors, kept for the next walk on
    /// this thread (see [`walk`]).
    static WALK_SCRATCH: std::cell::Cell<(Vec<Frame<&'static [u8]>>, Spare)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// An empty stack of frames of another type, keeping the allocation: `v` is emptied and
/// collected in place (the standard library reuses a vector's buffer when collecting its
/// own `into_iter` into elements of the same size and alignment — a locked walk's frames
/// and an optimistic walk's have both; were it not to, this allocates).
fn reuse<A, B>(mut v: Vec<Frame<A>>) -> Vec<Frame<B>> {
    v.clear();
    v.into_iter().map(|_| unreachable!("emptied")).collect()
}

/// Visits the keys of trie `b` — its root value (key `[b]`) `root_val` and the keys below
/// its root container `root` — that pass `bound`, ascending or descending, reading
/// through `src` (the arena's memory manager under its lock, or an optimistic
/// `opt::OptSrc`). Generic over the visitor, so a copy's closure is compiled into
/// [`walk`]'s loop instead of being called through a `dyn` pointer per key.
#[allow(clippy::too_many_arguments)]
pub(crate) fn walk_trie<Sr: Src, V>(
    src: Sr,
    root: Option<Hp>,
    root_val: Option<&[u8]>,
    b: u8,
    bound: Bound<&[u8]>,
    desc: bool,
    buf: &mut Vec<u8>,
    visit: &mut V,
) -> R<ControlFlow<()>>
where
    V: FnMut(&[u8], &[u8]) -> ControlFlow<()> + ?Sized,
{
    let key = [b];
    let ok = |k: &[u8]| match (bound, desc) {
        (Bound::Unbounded, _) => true,
        (Bound::Included(x), false) => k >= x,
        (Bound::Excluded(x), false) => k > x,
        (Bound::Included(x), true) => k <= x,
        (Bound::Excluded(x), true) => k < x,
    };
    let val = root_val.filter(|_| ok(&key));
    if !desc
        && let Some(v) = val
        && visit(&key, v).is_break()
    {
        return Ok(ControlFlow::Break(()));
    }
    if let Some(hp) = root {
        buf.clear();
        buf.push(b);
        if walk(src, hp, buf, bound, desc, visit)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    if desc
        && let Some(v) = val
        && visit(&key, v).is_break()
    {
        return Ok(ControlFlow::Break(()));
    }
    Ok(ControlFlow::Continue(()))
}
