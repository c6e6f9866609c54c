//! Point lookups (Algorithm 1 with `FINDCHILD` of Algorithm 2) and lookup groups: the
//! allocation-free `Cursor` over a key's symbols and prefix hashes, one key's walk
//! (`Raw::lookup`), and `get_many`'s groups of walks advanced in rounds
//! (`Raw::lookup_group`; see "Point lookups and lookup groups" in the module docs of
//! `trie`).

use orrery_core::sync::{Backoff, Guard};

use super::{Pair, Raw, Restart, Step, Symbols, rec_ptr};
use crate::bucket::Kind;
use crate::record;
use crate::table::Table;

/// Keys a [`Raw::lookup_group`] walks at once.
pub(crate) const GROUP: usize = 16;

/// Prefix levels a [`Raw::lookup_group`] walk prefetches ahead of itself (its own `D`):
/// the other walks of the group, not a long cursor, cover the wait for DRAM, so every
/// prefetch past the leaf the walk ends at is waste that takes a miss buffer from a
/// useful read (`docs/results/cuckoo-trie.md`).
const GROUP_DEPTH: usize = 1;

/// Where one walk of a [`Raw::lookup_group`] is.
#[derive(Clone, Copy)]
enum WalkState {
    /// At this node (validated): its child is read next, from the child's primary bucket
    /// (prefetched a round before).
    At(Step),
    /// The child of `parent` (hash `h`, by symbol `c`; the jump child if `jump`) was not in
    /// its primary bucket: its secondary bucket, prefetched last round, is read next.
    Second {
        parent: Step,
        h: u64,
        c: u8,
        jump: bool,
    },
    /// At a leaf whose record (this address) was prefetched last round.
    Record(usize),
    /// Finished.
    Done,
}

/// One walk of a [`Raw::lookup_group`]: its state and its prefetch cursor (primary
/// buckets only).
#[derive(Clone, Copy)]
struct Walk {
    state: WalkState,
    cur: Cursor,
}

/// Prefix hashes a [`Cursor`] keeps: more than the farthest it runs ahead of the walk
/// (`D ≤ 16` plus a jump node's 8 symbols).
const RING: usize = 32;

/// The prefetch cursor of a point lookup (Algorithm 1): it reads the key's symbols in
/// order (from a bit buffer, not [`Symbols::at`] per symbol), computes the hashes of the
/// key's prefixes ahead of the walk, prefetches both buckets of each, and keeps the last
/// [`RING`] symbols and hashes so the walk computes neither again.
#[derive(Clone, Copy)]
struct Cursor {
    /// `hashes[j % RING]` is the hash of the key's prefix of `j` symbols, for the last
    /// [`RING`] values of `j` up to `at`.
    hashes: [u64; RING],
    /// `syms[j % RING]` is symbol `j - 1` of the key (the last of that prefix).
    syms: [u8; RING],
    /// Prefixes hashed (and their buckets prefetched) so far.
    at: usize,
    /// Unread key bits: the low `nbits` bits of `acc`.
    acc: u64,
    nbits: u32,
    /// The next key byte to load into `acc`.
    next_byte: usize,
}

impl Cursor {
    /// A cursor at the root (prefix 0, hash 0).
    #[inline]
    fn new() -> Cursor {
        Cursor {
            hashes: [0; RING],
            syms: [0; RING],
            at: 0,
            acc: 0,
            nbits: 0,
            next_byte: 0,
        }
    }

    /// Symbol `self.at` of `key` (`at < key.len()`), read from the bit buffer:
    /// [`Symbols::at`] in sequence.
    #[inline]
    fn next_symbol(&mut self, key: &Symbols<'_>) -> u8 {
        if self.at >= key.data {
            return 0;
        }
        if self.nbits < key.bits {
            let rest = &key.key[self.next_byte..];
            if let Some(b) = rest.first_chunk::<7>() {
                // 56 fresh bits below the `nbits < 8` unread ones.
                let mut w = [0u8; 8];
                w[1..].copy_from_slice(b);
                self.acc = (self.acc << 56) | u64::from_be_bytes(w);
                self.nbits += 56;
                self.next_byte += 7;
            } else {
                for &b in rest {
                    self.acc = (self.acc << 8) | u64::from(b);
                    self.nbits += 8;
                }
                self.next_byte = key.key.len();
                if self.nbits < key.bits {
                    // The last symbol, zero-padded.
                    self.acc <<= key.bits - self.nbits;
                    self.nbits = key.bits;
                }
            }
        }
        self.nbits -= key.bits;
        (((self.acc >> self.nbits) & ((1 << key.bits) - 1)) + 1) as u8
    }

    /// Hashes and prefetches the prefixes of `key` up to `upto` symbols (at most the whole
    /// string).
    #[inline(always)]
    fn advance(&mut self, t: &Table, key: &Symbols<'_>, upto: usize) {
        self.advance_with(t, key, upto, true);
    }

    /// [`Cursor::advance`], prefetching only the primary bucket of each prefix unless
    /// `both` (a [`Raw::lookup_group`] walk reads the secondary one a round later if it
    /// must).
    #[inline(always)]
    fn advance_with(&mut self, t: &Table, key: &Symbols<'_>, upto: usize, both: bool) {
        let upto = upto.min(key.len());
        let mut h = self.hashes[self.at % RING];
        while self.at < upto {
            let c = self.next_symbol(key);
            h = t.hash().child(h, c);
            self.at += 1;
            self.hashes[self.at % RING] = h;
            self.syms[self.at % RING] = c;
            if both {
                t.prefetch(h);
            } else {
                t.prefetch_one(h, true);
            }
        }
    }

    /// The hash of the prefix of `j` symbols (`at - RING < j <= at`).
    #[inline]
    fn hash(&self, j: usize) -> u64 {
        debug_assert!(j <= self.at && j + RING > self.at);
        self.hashes[j % RING]
    }

    /// Symbol `i` of the key (`at - RING <= i < at`).
    #[inline]
    fn symbol(&self, i: usize) -> u8 {
        debug_assert!(i < self.at && i + 1 + RING > self.at);
        self.syms[(i + 1) % RING]
    }
}

impl Raw {
    /// The record of `key`, if present, read under `g`.
    pub(crate) fn lookup<'g>(&self, key: &[u8], g: &'g Guard) -> Option<(&'g [u8], &'g [u8])> {
        let syms = Symbols::new(key, self.config.symbol_bits);
        let backoff = Backoff::new();
        loop {
            let t = self.table(g);
            let out = match self.find_leaf(t, &syms) {
                Ok(Some(rec)) => {
                    // SAFETY: the leaf was read validated under `g`; its record is retired
                    // through the epoch collector only after it is unlinked, so it is live
                    // while `g` is held.
                    let (k, v) = unsafe { record::read(rec_ptr(rec)) };
                    (k == key).then_some((k, v))
                }
                Ok(None) => None,
                Err(Restart) => {
                    backoff.snooze();
                    continue;
                }
            };
            if self.still_current(t) {
                return out;
            }
        }
    }

    /// The walk of a point lookup: [`Raw::descend`] without the path (nothing allocated),
    /// with each prefix hash computed once, by the prefetch cursor. Returns the record
    /// address of the leaf reached, `None` if the key's way ends at an internal node
    /// (missing child, jump mismatch).
    #[inline]
    pub(super) fn find_leaf(&self, t: &Table, key: &Symbols<'_>) -> Result<Option<usize>, Restart> {
        let d = self.config.prefetch_depth;
        let mut cur = Cursor::new();
        cur.advance(t, key, d);
        let mut node = Self::root(t)?;
        loop {
            let e = node.found.entry;
            let i = node.depth;
            match e.kind() {
                Kind::Leaf => return Ok(Some(e.record())),
                Kind::Bitmap if i < key.len() => {
                    cur.advance(t, key, i + 1 + d);
                    let c = cur.symbol(i);
                    debug_assert_eq!(c, key.at(i));
                    if e.bitmap() & (1 << c) == 0 {
                        return Ok(None);
                    }
                    node = Self::child_at(t, &node, c, cur.hash(i + 1))?;
                }
                Kind::Jump if e.jump_len() > 0 => {
                    let len = e.jump_len();
                    cur.advance(t, key, i + len + d);
                    let n = len.min(key.len().saturating_sub(i));
                    if (0..n).any(|k| cur.symbol(i + k) != e.jump_symbol(k)) {
                        return Ok(None);
                    }
                    if n < len {
                        return Err(Restart);
                    }
                    node = Self::jump_child_at(t, &node, cur.hash(i + len))?;
                }
                _ => return Err(Restart),
            }
        }
    }

    /// Looks up up to [`GROUP`] keys at once (MLP across operations, beyond the paper).
    /// The walks advance in rounds, one step per walk per round, so the DRAM reads of the
    /// group's walks overlap instead of following each other; every read a step makes was
    /// prefetched by the same walk one round before (the other walks' steps cover the
    /// wait):
    ///
    /// - a walk at a node reads its child from the child's *primary* bucket, and prefetches
    ///   the primary bucket of the next prefix ([`GROUP_DEPTH`] ahead);
    /// - a child not in its primary bucket is read from its secondary bucket in the next
    ///   round (prefetched now), so most levels cost one line, not the pair;
    /// - a walk that found its leaf prefetches the record and compares it next round.
    ///
    /// Every step is validated as in [`Raw::lookup`] (`FINDCHILD`: the parent's bucket
    /// unchanged after the child was read). A walk that must restart (a concurrent writer)
    /// finishes as a plain [`Raw::lookup`]; if the table was replaced meanwhile the whole
    /// group is looked up again. Results go to `out[i]` for `keys[i]`. Nothing is
    /// allocated.
    pub(crate) fn lookup_group<'g>(
        &self,
        keys: &[&[u8]],
        g: &'g Guard,
        out: &mut [Option<Pair<'g>>],
    ) {
        debug_assert!(keys.len() <= GROUP && out.len() == keys.len());
        let bits = self.config.symbol_bits;
        loop {
            let t = self.table(g);
            let done = Walk {
                state: WalkState::Done,
                cur: Cursor::new(),
            };
            let mut walks: [Walk; GROUP] = [done; GROUP];
            let mut active = keys.len();
            match Self::root(t) {
                Ok(root) => {
                    for (w, key) in walks.iter_mut().zip(keys) {
                        w.state = WalkState::At(root);
                        w.cur
                            .advance_with(t, &Symbols::new(key, bits), GROUP_DEPTH, false);
                    }
                }
                Err(Restart) => {
                    for (o, key) in out.iter_mut().zip(keys) {
                        *o = self.lookup(key, g);
                    }
                    active = 0;
                }
            }
            while active > 0 {
                for (i, key) in keys.iter().enumerate() {
                    let w = &mut walks[i];
                    if matches!(w.state, WalkState::Done) {
                        continue;
                    }
                    match self.walk_step(t, key, w, g) {
                        Ok(Some(r)) => {
                            out[i] = r;
                            w.state = WalkState::Done;
                            active -= 1;
                        }
                        Ok(None) => {}
                        Err(Restart) => {
                            out[i] = self.lookup(key, g);
                            w.state = WalkState::Done;
                            active -= 1;
                        }
                    }
                }
            }
            if self.still_current(t) {
                return;
            }
        }
    }

    /// One step of a [`Raw::lookup_group`] walk: `Some(result)` when it ended.
    #[inline]
    fn walk_step<'g>(
        &self,
        t: &Table,
        key: &[u8],
        w: &mut Walk,
        _g: &'g Guard,
    ) -> Result<Option<Option<Pair<'g>>>, Restart> {
        let syms = Symbols::new(key, self.config.symbol_bits);
        let (parent, found, h) = match w.state {
            WalkState::At(node) => {
                let e = node.found.entry;
                let i = node.depth;
                match e.kind() {
                    Kind::Leaf => {
                        let rec = e.record();
                        orrery_core::prefetch(rec as *const u8);
                        w.state = WalkState::Record(rec);
                        return Ok(None);
                    }
                    Kind::Bitmap if i < syms.len() => {
                        w.cur.advance_with(t, &syms, i + 1 + GROUP_DEPTH, false);
                        let c = w.cur.symbol(i);
                        if e.bitmap() & (1 << c) == 0 {
                            return Ok(Some(None));
                        }
                        let h = w.cur.hash(i + 1);
                        let found = t.search_by_parent_in(h, c, e.color(), true);
                        if found.is_none() {
                            t.prefetch_one(h, false);
                            w.state = WalkState::Second {
                                parent: node,
                                h,
                                c,
                                jump: false,
                            };
                            return Ok(None);
                        }
                        (node, found, h)
                    }
                    Kind::Jump if e.jump_len() > 0 => {
                        let len = e.jump_len();
                        w.cur.advance_with(t, &syms, i + len + GROUP_DEPTH, false);
                        let n = len.min(syms.len().saturating_sub(i));
                        if (0..n).any(|k| w.cur.symbol(i + k) != e.jump_symbol(k)) {
                            return Ok(Some(None));
                        }
                        if n < len {
                            return Err(Restart);
                        }
                        let h = w.cur.hash(i + len);
                        let c = e.jump_symbol(len - 1);
                        let found = t.search_by_color_in(h, c, e.child_color(), true);
                        if found.is_none() {
                            t.prefetch_one(h, false);
                            w.state = WalkState::Second {
                                parent: node,
                                h,
                                c,
                                jump: true,
                            };
                            return Ok(None);
                        }
                        (node, found, h)
                    }
                    _ => return Err(Restart),
                }
            }
            WalkState::Second { parent, h, c, jump } => {
                let e = parent.found.entry;
                let found = if jump {
                    t.search_by_color_in(h, c, e.child_color(), false)
                } else {
                    t.search_by_parent_in(h, c, e.color(), false)
                };
                (parent, found, h)
            }
            WalkState::Record(rec) => {
                // SAFETY: the leaf was read validated under `_g` (the caller's guard); its
                // record is retired only after it is unlinked (see `lookup`).
                let (k, v) = unsafe { record::read(rec_ptr(rec)) };
                return Ok(Some((k == key).then_some((k, v))));
            }
            WalkState::Done => return Err(Restart),
        };
        // `FINDCHILD`: the parent unchanged since it was read, so the child read is its
        // child; absent while the parent announces it: a relocation in flight.
        if !t
            .bucket(parent.found.slot.bucket)
            .unchanged(parent.found.version)
        {
            return Err(Restart);
        }
        let found = found.ok_or(Restart)?;
        let depth = match parent.found.entry.kind() {
            Kind::Jump => parent.depth + parent.found.entry.jump_len(),
            _ => parent.depth + 1,
        };
        let child = Step {
            found,
            hash: h,
            depth,
        };
        if found.entry.kind() == Kind::Leaf {
            let rec = found.entry.record();
            orrery_core::prefetch(rec as *const u8);
            w.state = WalkState::Record(rec);
        } else {
            w.state = WalkState::At(child);
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// The lookup cursor's bit-buffer symbol reader yields exactly [`Symbols::at`], for
    /// every symbol size and key lengths around its 7-byte refills, and its ring keeps
    /// the prefix hashes of [`PrefixHash::child`](crate::hash::PrefixHash).
    #[test]
    fn cursor_symbols_and_hashes_match_the_key() {
        let t = Table::new(64).unwrap();
        let mut rng = orrery_core::testing::rng::rng(0x1234_5678_9abc_def1);
        for len in 0..40 {
            let key: Vec<u8> = (0..len).map(|_| rng.random::<u8>()).collect();
            for bits in 1..=5 {
                let syms = Symbols::new(&key, bits);
                let mut cur = Cursor::new();
                let mut h = 0;
                for i in 0..syms.len() {
                    cur.advance(&t, &syms, i + 1);
                    assert_eq!(
                        cur.symbol(i),
                        syms.at(i),
                        "len {len} bits {bits} symbol {i}"
                    );
                    h = t.hash().child(h, syms.at(i));
                    assert_eq!(cur.hash(i + 1), h);
                }
                // Advancing past the end stops at the end symbol.
                cur.advance(&t, &syms, syms.len() + 5);
                assert_eq!(cur.at, syms.len());
            }
        }
    }
}
