//! The optimistic point read: [`node::lookup`](crate::node::lookup) on bytes a writer
//! may be changing.
//!
//! A reader that holds no lock reads container bytes through
//! [`RawBlock::byte`](crate::mm::RawBlock::byte): every read is bounds-checked against the
//! block it lies in (a chunk of a mapped bin, or an extended heap block) and is an atomic
//! load. A writer may shift, rewrite, move or free any of these bytes meanwhile, so what
//! the reader parses may be torn: a mix of two states of the container. This module never
//! trusts it beyond memory safety and termination:
//!
//! - every offset is checked before it is read ([`Torn`] when it leaves its block, a
//!   header's size exceeds its block, an embedded container does not nest inside its
//!   parent's range), so a torn read never touches memory outside a block the reader may
//!   read;
//! - every loop advances: node walks move strictly forward (a parsed node is at least one
//!   byte; a jump successor is at least 1) and stop at the payload's end, the container
//!   jump table has at most 49 entries, a chain has `CHAIN_SLOTS` slots, and each container level
//!   consumes two key bytes — so a lookup ends within a bounded number of steps whatever
//!   the bytes say;
//! - the value is *copied* into the caller's buffer, and handed out only after the
//!   version (the key's trie's) validates (`arena::Arena::get_with`).
//!
//! The blocks stay mapped while the reader is pinned: the memory manager retires bins it
//! unmaps or regrows, extended heap blocks it frees or replaces, and its directory tables,
//! through the `orrery_core::sync` epoch collector (`mm.rs`, "Optimistic readers"); a
//! chunk freed and reused inside a still-mapped bin is read as garbage, which validation
//! rejects. The parsers and searches are `node.rs`'s (`parse_in`, `find_t`, `find_s`,
//! `search`, `cjt::seek_in`, `tjt::seek_in`), written once, generic over
//! [`Bytes`]: here they read a [`RawBlock`], whose every byte is
//! checked, and under the lock a slice, where the checks compile away. This module adds
//! what only an optimistic reader needs: reaching blocks through the bin directory
//! ([`Dirs`]), copying values and comparing suffixes with checked loads, the lookup's
//! driver and its pipelined [`Probe`], and the walk's source [`OptSrc`].

use crate::mm::{CHAIN_SLOTS, Dirs, Hp, RawBlock};
use crate::node::{
    Bytes, R, Src, Step, Suffix, Torn, ValRef, cjt, find_s, find_t, s_start, search, u32_in,
    used_in,
};

#[inline(always)]
fn at(b: &RawBlock, i: usize) -> R<u8> {
    b.byte(i).ok_or(Torn)
}

impl Bytes for RawBlock {
    #[inline(always)]
    fn at(self, i: usize) -> R<u8> {
        self.byte(i).ok_or(Torn)
    }

    #[inline(always)]
    fn size(self) -> usize {
        self.len()
    }

    #[inline(always)]
    fn prefetch(self, i: usize) {
        RawBlock::prefetch(&self, i);
    }
}

/// An ordered walk's optimistic [`Src`]: containers reached through the bin directory
/// (each eHP's pointer used only after `valid` passed), suffixes and values copied out
/// with checked loads, and `check` the caller's version validation.
#[derive(Clone, Copy)]
pub(crate) struct OptSrc<'a> {
    pub(crate) dirs: &'a Dirs,
    pub(crate) valid: &'a dyn Fn() -> bool,
}

impl Src for OptSrc<'_> {
    type B = RawBlock;
    const OPTIMISTIC: bool = true;

    #[inline]
    fn container(self, hp: Hp) -> R<RawBlock> {
        self.dirs.block(hp, self.valid).ok_or(Torn)
    }

    #[inline]
    fn chain(self, hp: Hp) -> R<Option<[bool; CHAIN_SLOTS]>> {
        self.dirs.chain_parts(hp).ok_or(Torn)
    }

    #[inline]
    fn suffix(self, buf: RawBlock, s: Suffix, out: &mut Vec<u8>) -> R<()> {
        match s {
            Suffix::Inline(a, e) => copy(&buf, a, e, out),
            Suffix::Long(hp) => {
                let (blk, a, e) = blob(self.dirs, hp, self.valid)?;
                copy(&blk, a, e, out)
            }
        }
    }

    #[inline]
    fn value<'s>(self, buf: RawBlock, v: ValRef, scratch: &'s mut Vec<u8>) -> R<&'s [u8]>
    where
        Self: 's,
    {
        copy_val(self.dirs, &buf, v, scratch, self.valid)?;
        Ok(scratch)
    }

    #[inline]
    fn check(self) -> R<()> {
        if (self.valid)() { Ok(()) } else { Err(Torn) }
    }
}

/// The block a key whose next byte is `k0` continues in: `hp` resolved (chains) and
/// reached; its first lines prefetched.
#[inline]
fn container(dirs: &Dirs, hp: Hp, k0: u8, valid: &dyn Fn() -> bool) -> R<RawBlock> {
    dirs.container(hp, Some(k0), valid).ok_or(Torn)
}

/// Appends bytes `a..e` of `b` to `out`.
#[inline]
fn copy(b: &RawBlock, a: usize, e: usize, out: &mut Vec<u8>) -> R<()> {
    if a > e || e > b.len() {
        return Err(Torn);
    }
    out.extend((a..e).map(|i| b.byte(i).unwrap_or(0)));
    Ok(())
}

/// The out-of-line block `hp` (`[len u32][bytes]`) and the range of its bytes.
#[inline]
fn blob(dirs: &Dirs, hp: Hp, valid: &dyn Fn() -> bool) -> R<(RawBlock, usize, usize)> {
    let b = dirs.block(hp, valid).ok_or(Torn)?;
    let len = u32_in(b, 0)? as usize;
    if 4 + len > b.len() {
        return Err(Torn);
    }
    Ok((b, 4, 4 + len))
}

/// Copies value `v` (of the payload in `b`) into `out`.
#[inline]
fn copy_val(
    dirs: &Dirs,
    b: &RawBlock,
    v: ValRef,
    out: &mut Vec<u8>,
    valid: &dyn Fn() -> bool,
) -> R<()> {
    out.clear();
    match v {
        ValRef::Empty => Ok(()),
        ValRef::Inline(a, e) => copy(b, a, e, out),
        ValRef::Out(hp) => {
            let (blk, a, e) = blob(dirs, hp, valid)?;
            copy(&blk, a, e, out)
        }
    }
}

/// Whether the suffix `s` (of the payload in `b`) is `rest`.
#[inline]
fn suffix_is(
    dirs: &Dirs,
    b: &RawBlock,
    s: Suffix,
    rest: &[u8],
    valid: &dyn Fn() -> bool,
) -> R<bool> {
    let (blk, a, e) = match s {
        Suffix::Inline(a, e) => (*b, a, e),
        Suffix::Long(hp) => blob(dirs, hp, valid)?,
    };
    if a > e || e > blk.len() {
        return Err(Torn);
    }
    if e - a != rest.len() {
        return Ok(false);
    }
    for (i, &k) in rest.iter().enumerate() {
        if at(&blk, a + i)? != k {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Looks `key` (non-empty; the first key byte already consumed by the arena) up below the
/// root container `root`, copying its value into `out`: `Ok(true)` found, `Ok(false)`
/// absent — both meaningful only once the caller's version validates — or [`Torn`].
/// `valid` is the caller's validation, used before following an eHP's pointer.
pub(crate) fn lookup(
    dirs: &Dirs,
    root: Hp,
    mut key: &[u8],
    out: &mut Vec<u8>,
    valid: &dyn Fn() -> bool,
) -> R<bool> {
    let mut b = container(dirs, root, key[0], valid)?;
    let (mut start, mut prev) = cjt::seek_in(b, key[0])?;
    let mut end = used_in(b)?;
    // Each round consumes two key bytes or returns: at most `key.len() / 2 + 1` rounds.
    loop {
        match search(b, start, prev, end, key)? {
            Step::Found(v) => {
                copy_val(dirs, &b, v, out, valid)?;
                return Ok(true);
            }
            Step::Missing => return Ok(false),
            Step::Embedded(a, e) => {
                if key.len() < 3 || a > e || e > end {
                    return Err(Torn);
                }
                key = &key[2..];
                (start, prev, end) = (a, 0, e);
            }
            Step::Child(hp) => {
                if key.len() < 3 {
                    return Err(Torn);
                }
                key = &key[2..];
                b = container(dirs, hp, key[0], valid)?;
                (start, prev) = cjt::seek_in(b, key[0])?;
                end = used_in(b)?;
            }
            Step::Pc(sfx, v) => {
                if key.len() < 2 || !suffix_is(dirs, &b, sfx, &key[2..], valid)? {
                    return Ok(false);
                }
                copy_val(dirs, &b, v, out, valid)?;
                return Ok(true);
            }
        }
    }
}

/// One optimistic lookup in flight in a pipeline ([`lookup`] cut at its dependent memory
/// accesses, as `node::Probe` cuts `node::lookup`): each [`Probe::step`] does one stage
/// and prefetches what the next one reads first. Its result means something only once
/// the caller's version validates.
pub(crate) struct Probe<'k> {
    key: &'k [u8],
    stage: Stage,
}

#[derive(Clone, Copy)]
enum Stage {
    Resolve(Hp),
    Seek(RawBlock),
    TNodes(RawBlock, usize, u8, usize),
    SNodes(RawBlock, usize, u8, usize),
    /// Finished: found (value copied) or not, or torn.
    Done(R<bool>),
}

impl<'k> Probe<'k> {
    /// A lookup of `key` (non-empty; first byte consumed) below root container `root`.
    #[inline]
    pub(crate) fn new(dirs: &Dirs, root: Hp, key: &'k [u8]) -> Probe<'k> {
        if let Some(c) = dirs.chunk(root) {
            c.prefetch(0);
        }
        Probe {
            key,
            stage: Stage::Resolve(root),
        }
    }

    /// A finished probe.
    #[inline]
    pub(crate) fn done(r: R<bool>) -> Probe<'k> {
        Probe {
            key: &[],
            stage: Stage::Done(r),
        }
    }

    /// The result once [`Probe::step`] returned `true`.
    #[inline]
    pub(crate) fn result(&self) -> R<bool> {
        match self.stage {
            Stage::Done(r) => r,
            _ => Err(Torn),
        }
    }

    /// Runs one stage (copying the value into `out` when found); returns whether the
    /// lookup is finished. Each stage ends (see the module docs), and a probe passes
    /// at most four stages per container level, each level consuming two key bytes.
    #[inline]
    pub(crate) fn step(
        &mut self,
        dirs: &Dirs,
        out: &mut Vec<u8>,
        valid: &dyn Fn() -> bool,
    ) -> bool {
        let r = self.advance(dirs, out, valid);
        if let Err(t) = r {
            self.stage = Stage::Done(Err(t));
        }
        matches!(self.stage, Stage::Done(_))
    }

    #[inline]
    fn advance(&mut self, dirs: &Dirs, out: &mut Vec<u8>, valid: &dyn Fn() -> bool) -> R<()> {
        let key = self.key;
        self.stage = match self.stage {
            Stage::Done(_) => return Ok(()),
            Stage::Resolve(hp) => {
                let b = container(dirs, hp, key[0], valid)?;
                for at in (0..b.len().min(4 * 64)).step_by(64) {
                    b.prefetch(at);
                }
                Stage::Seek(b)
            }
            Stage::Seek(b) => {
                let (pos, prev) = cjt::seek_in(b, key[0])?;
                let end = used_in(b)?;
                b.prefetch(pos);
                Stage::TNodes(b, pos, prev, end)
            }
            Stage::TNodes(b, pos, prev, end) => match find_t(b, pos, prev, end, key[0])? {
                None => Stage::Done(Ok(false)),
                Some((t, n)) => match key.get(1) {
                    None => match n.val {
                        None => Stage::Done(Ok(false)),
                        Some(v) => {
                            copy_val(dirs, &b, v, out, valid)?;
                            Stage::Done(Ok(true))
                        }
                    },
                    Some(&k1) => {
                        let (pos, prev) = s_start(b, t, &n, k1)?;
                        b.prefetch(pos);
                        Stage::SNodes(b, pos, prev, end)
                    }
                },
            },
            Stage::SNodes(b, pos, prev, end) => match find_s(b, pos, prev, end, key)? {
                Step::Found(v) => {
                    copy_val(dirs, &b, v, out, valid)?;
                    Stage::Done(Ok(true))
                }
                Step::Missing => Stage::Done(Ok(false)),
                Step::Embedded(a, e) => {
                    if key.len() < 3 || a > e || e > end {
                        return Err(Torn);
                    }
                    self.key = &key[2..];
                    Stage::TNodes(b, a, 0, e)
                }
                Step::Child(hp) => {
                    if key.len() < 3 {
                        return Err(Torn);
                    }
                    self.key = &key[2..];
                    if let Some(c) = dirs.chunk(hp) {
                        c.prefetch(0);
                    }
                    Stage::Resolve(hp)
                }
                Step::Pc(sfx, v) => {
                    if key.len() < 2 || !suffix_is(dirs, &b, sfx, &key[2..], valid)? {
                        Stage::Done(Ok(false))
                    } else {
                        copy_val(dirs, &b, v, out, valid)?;
                        Stage::Done(Ok(true))
                    }
                }
            },
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rand::Rng as _;
    use rand::rngs::SmallRng;

    use crate::arena::{ArenaInner, Decision};
    use crate::mm::MAX_SMALL;

    fn put(a: &mut ArenaInner, k: &[u8], v: &[u8]) {
        a.write(k, &mut |_| Decision::Store(v.to_vec())).unwrap();
    }

    /// Keys of every shape: under few T-Nodes with many S-Nodes (T-Node jump tables),
    /// deep (embedded and child containers, path-compressed and long suffixes), root
    /// values and the empty key, values inline and out of line.
    fn keys(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut r = orrery_core::testing::rng::rng(0x2545_F491);
        (0..n)
            .map(|i| {
                let x: u32 = r.random();
                let b = x.to_be_bytes();
                let mut k = match i % 6 {
                    0 => vec![b[0] % 3, b[1] % 2, b[2]],
                    1 => vec![b[0] % 3, b[1] % 2, b[2], b[3] % 4, 1, 2, 3],
                    2 => vec![b[0] % 5],
                    3 => vec![b[0] % 3, 7, 7, 7],
                    _ => b.to_vec(),
                };
                if i % 29 == 0 {
                    k.extend(std::iter::repeat_n(b'z', 150));
                }
                (k, b[..i % 5].repeat(1 + (i % 7) * (i % 3)))
            })
            .collect()
    }

    /// Pairs of a test.
    type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

    /// An arena holding [`keys`]`(n)`, and the keys.
    fn loaded(n: usize) -> (ArenaInner, Pairs) {
        let mut a = ArenaInner::new(256);
        let ks = keys(n);
        for (k, v) in &ks {
            put(&mut a, k, v);
        }
        (a, ks)
    }

    /// Overwrites 4 random bytes of one part of each of the root containers of tries 0–2
    /// (the part picked by `round`), as a reader racing a writer may see them.
    fn garble(a: &mut ArenaInner, round: usize, r: &mut SmallRng) {
        for b in 0..3u8 {
            let Some(hp) = a.roots[usize::from(b)].hp else {
                continue;
            };
            let hp = a.mm.resolve(hp, (round * 37) as u8);
            let c = a.mm.get_mut(hp);
            let len = c.len();
            for _ in 0..4 {
                let x: u32 = r.random();
                c[x as usize % len] = (x >> 16) as u8;
            }
        }
    }

    /// The checked lookup finds what the locked one finds, on a quiet arena: every key
    /// present with its value, absent keys absent.
    #[test]
    fn opt_lookup_matches_locked_lookup() {
        let (mut a, ks) = loaded(if cfg!(miri) { 200 } else { 4000 });
        put(&mut a, b"", b"empty");
        let view = a.view();
        let _g = orrery_core::sync::pin();
        let mut out = Vec::new();
        let mut probes: Vec<Vec<u8>> = ks.iter().map(|(k, _)| k.clone()).collect();
        probes.extend(ks.iter().map(|(k, _)| [&k[..], b"x"].concat()));
        probes.extend(
            ks.iter()
                .filter(|(k, _)| k.len() > 1)
                .map(|(k, _)| k[..k.len() - 1].to_vec()),
        );
        probes.push(Vec::new());
        for k in &probes {
            let want = a.get(k).map(<[u8]>::to_vec);
            let got = view
                .get(k, &mut out, &|| true)
                .expect("a quiet arena is never torn");
            assert_eq!(got.then(|| out.clone()), want, "key {k:?}");
        }
    }

    /// Torn bytes are safe: containers overwritten with garbage (as a reader racing a
    /// writer may see them) never make the checked lookup read outside a block, panic or
    /// loop forever, and what it returns stays inside what it may read. Extended blocks'
    /// pointers are never followed here (validation fails, as it would for a reader that
    /// read a changing eHP), so a value it copies lies in a chunk (at most
    /// [`MAX_SMALL`] bytes). Only the root containers of tries 0–2 are garbled: a key of
    /// another trie reads its own value, or `Torn` when its path needs an extended block.
    #[test]
    fn opt_lookup_survives_garbage() {
        let (mut a, ks) = loaded(if cfg!(miri) { 150 } else { 3000 });
        let view = a.view();
        let _g = orrery_core::sync::pin();
        let mut out = Vec::new();
        let mut r = orrery_core::testing::rng::rng(0x9E37_79B9);
        let rounds = if cfg!(miri) { 20 } else { 300 };
        let want: std::collections::HashMap<_, _> = ks.iter().cloned().collect();
        let (mut found, mut intact) = (0usize, 0usize);
        for round in 0..rounds {
            garble(&mut a, round, &mut r);
            for (k, _) in ks.iter().step_by(7) {
                let got = view.get(k, &mut out, &|| false);
                if let Ok(true) = got {
                    found += 1;
                    assert!(out.len() <= MAX_SMALL, "a value of {} bytes", out.len());
                }
                if k.first().is_some_and(|&b| b >= 3) {
                    match got {
                        Ok(true) => assert_eq!(&out, &want[k], "key {k:?} of an intact trie"),
                        Ok(false) => panic!("key {k:?} of an intact trie reads absent"),
                        Err(_) => {}
                    }
                    intact += 1;
                }
            }
        }
        assert!(found > 0 && intact > 0, "found {found}, intact {intact}");
    }

    /// Up to `limit` pairs of trie `b` from `bound`, read by the locked walk and by the
    /// optimistic one (over `view`, with validation `valid`): `None` for a torn
    /// optimistic walk.
    #[allow(clippy::type_complexity)]
    fn both_walks(
        a: &ArenaInner,
        view: &crate::arena::View,
        b: u8,
        (bound, desc, limit): (std::ops::Bound<&[u8]>, bool, usize),
        valid: &dyn Fn() -> bool,
    ) -> (Vec<(Vec<u8>, Vec<u8>)>, Option<Vec<(Vec<u8>, Vec<u8>)>>) {
        use std::ops::ControlFlow;
        let take = |got: &mut Vec<(Vec<u8>, Vec<u8>)>, k: &[u8], v: &[u8]| {
            got.push((k.to_vec(), v.to_vec()));
            if got.len() == limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let mut buf = Vec::new();
        let mut locked = Vec::new();
        let _ = a.walk(b, bound, desc, &mut buf, &mut |k, v| {
            take(&mut locked, k, v)
        });
        let mut opt = Vec::new();
        let mut rv = Vec::new();
        let src = super::OptSrc {
            dirs: &view.dirs,
            valid,
        };
        let got = view.get(&[b], &mut rv, valid).and_then(|found| {
            crate::node::walk_trie(
                src,
                view.root(b),
                found.then_some(rv.as_slice()),
                b,
                bound,
                desc,
                &mut buf,
                &mut |k: &[u8], v: &[u8]| take(&mut opt, k, v),
            )
        });
        (locked, got.ok().map(|_| opt))
    }

    /// The optimistic walk (`node::walk` over [`super::OptSrc`]) visits exactly what the
    /// locked walk visits, on a quiet arena: every trie whole, and 40 pairs from bounds
    /// at, between and beside the keys, both ways — keys of every shape, and a split
    /// container.
    #[test]
    fn opt_walk_matches_locked_walk() {
        use std::ops::Bound;
        let mut a = ArenaInner::new(256);
        let n = if cfg!(miri) { 150 } else { 4000 };
        let mut ks = keys(n);
        // Many keys in trie 9: its root container splits (not under Miri: too slow).
        let mut r = orrery_core::testing::rng::rng(0x9E37_79B9);
        for _ in 0..if cfg!(miri) { 0 } else { 24_000 } {
            let x: u32 = r.random();
            ks.push(([&[9u8][..], &x.to_be_bytes()].concat(), vec![x as u8]));
        }
        for (k, v) in &ks {
            put(&mut a, k, v);
        }
        if !cfg!(miri) {
            let root = a.roots[9].hp.expect("trie 9");
            assert!(a.mm.is_chain(root), "trie 9's root is split");
        }
        let view = a.view();
        let _g = orrery_core::sync::pin();
        let mut bounds: Vec<Vec<u8>> = ks.iter().step_by(13).map(|(k, _)| k.clone()).collect();
        bounds.extend(ks.iter().step_by(17).map(|(k, _)| [&k[..], b"\0"].concat()));
        bounds.extend(
            ks.iter()
                .step_by(19)
                .map(|(k, _)| k[..k.len().div_ceil(2)].to_vec()),
        );
        let tries: Vec<u8> = (0..=255u8)
            .filter(|&b| a.roots[usize::from(b)].hp.is_some() || a.get(&[b]).is_some())
            .collect();
        for desc in [false, true] {
            for &b in &tries {
                let how = (Bound::Unbounded, desc, usize::MAX);
                let (want, got) = both_walks(&a, &view, b, how, &|| true);
                assert_eq!(got.as_ref(), Some(&want), "trie {b}, desc {desc}");
            }
            for k in &bounds {
                for bound in [Bound::Included(&k[..]), Bound::Excluded(&k[..])] {
                    let how = (bound, desc, 40);
                    let (want, got) = both_walks(&a, &view, k[0], how, &|| true);
                    assert_eq!(got.as_ref(), Some(&want), "bound {bound:?}, desc {desc}");
                }
            }
        }
    }

    /// Torn bytes are safe for the optimistic walk too: with containers garbled, walks
    /// from many bounds return anything (or `Torn`) but never read outside a block, panic
    /// or loop forever — a walk sent round a cycle by a garbled child pointer is stopped
    /// by its periodic validation (which fails here, as after any write).
    #[test]
    fn opt_walk_survives_garbage() {
        use std::ops::Bound;
        let (mut a, ks) = loaded(if cfg!(miri) { 150 } else { 3000 });
        let view = a.view();
        let _g = orrery_core::sync::pin();
        let mut r = orrery_core::testing::rng::rng(0x2545_F491);
        let rounds = if cfg!(miri) { 10 } else { 200 };
        for round in 0..rounds {
            garble(&mut a, round, &mut r);
            for (k, _) in ks.iter().step_by(if cfg!(miri) { 29 } else { 7 }) {
                for desc in [false, true] {
                    let view = &view;
                    let src = super::OptSrc {
                        dirs: &view.dirs,
                        valid: &|| false,
                    };
                    let mut buf = Vec::new();
                    let mut seen = 0usize;
                    let _ = crate::node::walk_trie(
                        src,
                        view.root(k[0]),
                        None,
                        k[0],
                        Bound::Included(k),
                        desc,
                        &mut buf,
                        &mut |_: &[u8], _: &[u8]| {
                            seen += 1;
                            std::ops::ControlFlow::Continue(())
                        },
                    );
                    // At most one validation's worth of steps, then it fails.
                    assert!(seen <= crate::node::CHECK_EVERY, "{seen} keys visited");
                }
            }
        }
    }
}
