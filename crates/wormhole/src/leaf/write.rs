//! Writes under the exclusive lock: inserts, removes, replacements, splits and merges of a leaf's entries.

#[allow(unused_imports)]
use super::*;

/// An entry on its way to a new slot (split, merge, rebuild): its tag word, its inline
/// cell (for an inline pair) and its key rank in the destination leaf.
#[derive(Clone, Copy)]
pub(super) struct Moved {
    e: u64,
    cell: [u8; INLINE_MAX],
    rank: u8,
}

impl Moved {
    const EMPTY: Moved = Moved {
        e: HOLE_END,
        cell: [0; INLINE_MAX],
        rank: 0,
    };

    /// The pair this entry names (an inline pair is a copy of the cell).
    fn pair(&self) -> Pair {
        if is_inline(self.e) {
            let (k, v) = inline_lens(self.e);
            Pair::Inline(InlinePair::from_parts(k, v, self.cell))
        } else {
            Pair::Heap(ekv(self.e))
        }
    }

    /// Pair `p` with leaf tag `tag` at key rank `rank`.
    fn of(tag: u16, p: Pair, rank: u8) -> Moved {
        match p {
            Pair::Heap(kv) => Moved {
                e: entry(tag, kv),
                cell: [0; INLINE_MAX],
                rank,
            },
            Pair::Inline(ip) => Moved {
                e: entry_inline(tag, &ip),
                cell: *ip.data(),
                rank,
            },
        }
    }
}

impl WriteLeaf<'_> {
    #[inline]
    fn cap(&self) -> usize {
        self.hdr().cap()
    }

    /// The whole tag array (capacity), writable.
    #[inline]
    fn tags_all_mut(&mut self) -> &mut [u64] {
        let cap = self.cap();
        let p = self
            .ptr
            .base()
            .wrapping_add(size_of::<Leaf>())
            .cast::<u64>();
        // SAFETY: exclusive lock held; the array lies inside the live block.
        unsafe { std::slice::from_raw_parts_mut(p, cap) }
    }

    /// The whole order array (capacity), writable.
    #[inline]
    fn order_all_mut(&mut self) -> &mut [u8] {
        let cap = self.cap();
        let p = self.ptr.base().wrapping_add(size_of::<Leaf>() + cap * 8);
        // SAFETY: exclusive lock held; the array lies inside the live block.
        unsafe { std::slice::from_raw_parts_mut(p, cap) }
    }

    #[inline]
    fn set_len(&mut self, n: usize, sorted: usize) {
        let h = self.hdr();
        h.nr.store(n as u16, Ordering::Relaxed);
        h.nr_sorted.store(sorted as u16, Ordering::Relaxed);
    }

    /// The whole inline area (`INLINE_MAX` bytes per slot), writable; empty for a leaf
    /// without one.
    #[inline]
    fn inline_all_mut(&mut self) -> &mut [u8] {
        if self.hdr().kind.load(Ordering::Relaxed) & KIND_INLINE_AREA == 0 {
            return &mut [];
        }
        let cap = self.cap();
        let p = self.ptr.base().wrapping_add(inline_off(cap));
        // SAFETY: exclusive lock held; a leaf with an inline area has `cap` cells there.
        unsafe { std::slice::from_raw_parts_mut(p, cap * INLINE_MAX) }
    }

    /// Stores `p`'s bytes in the inline cell of slot `i` and returns its entry.
    #[inline]
    fn put_inline(&mut self, i: usize, tag: u16, p: &InlinePair) -> u64 {
        assert!(
            self.hdr().inline_on(),
            "inline pair in a leaf without inline pairs"
        );
        self.inline_all_mut()[i * INLINE_MAX..(i + 1) * INLINE_MAX].copy_from_slice(p.data());
        entry_inline(tag, p)
    }

    /// The pair of real slot `i` (a copy of an inline pair).
    fn take(&mut self, i: usize) -> Pair {
        let e = self.tags()[i];
        if is_inline(e) {
            let (k, v) = inline_lens(e);
            let mut data = [0u8; INLINE_MAX];
            data.copy_from_slice(&self.inline_all_mut()[i * INLINE_MAX..(i + 1) * INLINE_MAX]);
            Pair::Inline(InlinePair::from_parts(k, v, data))
        } else {
            Pair::Heap(ekv(e))
        }
    }

    /// Whether new small pairs of this leaf go inline.
    #[inline]
    pub(crate) fn inline_on(&self) -> bool {
        self.hdr().inline_on()
    }

    /// Whether the block has an inline area.
    #[inline]
    pub(crate) fn inline_area(&self) -> bool {
        self.hdr().inline_area()
    }

    /// How many of the pairs of key ranks `[j, nr)` would fit inline (inline ones, and
    /// blocks of at most [`INLINE_MAX`] key and value bytes). The leaf must be sorted.
    pub(crate) fn small_from(&self, j: usize) -> usize {
        debug_assert!(self.is_sorted());
        self.order()[j.min(self.len())..]
            .iter()
            .filter(|&&o| {
                let e = self.tags()[o as usize];
                is_inline(e) || ekv(e).pair_len() <= INLINE_MAX
            })
            .count()
    }

    /// The value of real slot `i`, writable in place.
    #[inline]
    pub(crate) fn value_mut(&mut self, i: usize) -> &mut [u8] {
        let e = self.tags()[i];
        if is_inline(e) {
            let (k, v) = inline_lens(e);
            let off = i * INLINE_MAX + k;
            &mut self.inline_all_mut()[off..off + v]
        } else {
            // SAFETY: exclusive lock held: no other reference into the block exists, and
            // the borrow ends with `&mut self`'s.
            unsafe { ekv(e).value_mut() }
        }
    }

    /// Whether the leaf is full.
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.len() >= self.cap()
    }

    /// Sorts the order array (exclusive lock: no sort bit needed).
    pub(crate) fn sort(&mut self) {
        if !self.is_sorted() {
            // SAFETY: exclusive lock held.
            unsafe { sort_order(self.ptr) };
        }
    }

    /// Inserts a new pair with leaf tag `tag` into a non-full leaf, keeping the slots
    /// ordered by tag: into a hole of the right run when there is one (as close to the
    /// tag's home as the run allows), otherwise shifting entries toward the nearest hole.
    /// With `sorted_at = Some(j)` the key also goes to key-order position `j` (the leaf
    /// must be sorted; used when `SortByTag` is off), otherwise it is appended to the
    /// unsorted tail. An inline pair's bytes go to the cell of its slot, and the cells of
    /// shifted entries move with them. Returns the slot used.
    pub(crate) fn insert(&mut self, sorted_at: Option<usize>, tag: u16, pair: Pair) -> usize {
        let n = self.len();
        let s = self.hdr().nr_sorted.load(Ordering::Relaxed) as usize;
        let cap = self.cap();
        assert!(n < cap);
        let tags = self.tags_all_mut();
        // First slot whose tag is >= `tag` (slots are non-decreasing, holes included),
        // found by the lookup's walk from the home slot: it touches the tag lines the
        // lookup just read instead of a binary search's cold ones.
        let mut p = home(tag, cap);
        while p > 0 && etag(tags[p - 1]) >= tag {
            p -= 1;
        }
        while p < cap && etag(tags[p]) < tag {
            p += 1;
        }
        // `shift` = (first, last, delta): order entries naming slots in [first, last) move
        // by delta.
        let (pos, shift) = if p < cap && is_hole(tags[p]) {
            // `p` starts a run of holes; entries before it are < tag, the next real entry
            // after the run is >= tag. Take the slot of the run closest to home.
            let mut r = p;
            while r < cap && is_hole(tags[r]) {
                r += 1;
            }
            let q = home(tag, cap).clamp(p, r - 1);
            for h in &mut tags[p..q] {
                *h = hole(tag);
            }
            (q, None)
        } else {
            // Slot `p` (if any) is real, and so is `p - 1` (a hole there would carry a tag
            // >= `tag`). Shift toward the nearest hole.
            // The nearest hole, searched outward from `p`: only the tag lines around the
            // insertion point are read (scanning each side to its first hole read cold
            // lines far from it; measured in the module docs, "Inserts").
            let mut d = 0;
            let nearest = loop {
                if p + d < cap && is_hole(tags[p + d]) {
                    break Ok(p + d);
                }
                if d < p && is_hole(tags[p - 1 - d]) {
                    break Err(p - 1 - d);
                }
                assert!(p + d < cap || d < p, "a non-full leaf has a hole");
                d += 1;
            };
            match nearest {
                Ok(b) => {
                    tags.copy_within(p..b, p + 1);
                    (p, Some((p, b, 1i16)))
                }
                Err(a) => {
                    // Holes before `a` keep their tag: their next real entry moves to `a`.
                    tags.copy_within(a + 1..p, a);
                    (p - 1, Some((a + 1, p, -1i16)))
                }
            }
        };
        if let Some((first, last, d)) = shift {
            // Inline cells move with their entries.
            let to = (first as isize + d as isize) as usize;
            let cells = self.inline_all_mut();
            if !cells.is_empty() {
                cells.copy_within(first * INLINE_MAX..last * INLINE_MAX, to * INLINE_MAX);
            }
        }
        let e = match &pair {
            Pair::Heap(kv) => entry(tag, *kv),
            Pair::Inline(ip) => self.put_inline(pos, tag, ip),
        };
        self.tags_all_mut()[pos] = e;
        let order = self.order_all_mut();
        if let Some((first, last, d)) = shift {
            // Branch-free so that it vectorizes: `o - first < last - first` (wrapping)
            // tests `first <= o < last`.
            let (f, w, d) = (first as u16, (last - first) as u16, d as u8);
            for o in &mut order[..n] {
                let x = *o;
                let inside = (x as u16).wrapping_sub(f) < w;
                *o = if inside { x.wrapping_add(d) } else { x };
            }
        }
        match sorted_at {
            Some(j) => {
                debug_assert_eq!(s, n);
                order.copy_within(j..n, j + 1);
                order[j] = pos as u8;
                self.set_len(n + 1, n + 1);
            }
            None => {
                order[n] = pos as u8;
                self.set_len(n + 1, s);
            }
        }
        pos
    }

    /// Replaces the pair at tag index `i` (same key) and returns the old one (an inline
    /// pair as a copy).
    pub(crate) fn replace(&mut self, i: usize, pair: Pair) -> Pair {
        let old = self.take(i);
        let tag = etag(self.tags()[i]);
        let e = match &pair {
            Pair::Heap(kv) => entry(tag, *kv),
            Pair::Inline(ip) => self.put_inline(i, tag, ip),
        };
        self.tags_all_mut()[i] = e;
        old
    }

    /// Removes the pair at slot `ti` (which becomes a hole) and returns it (an inline pair
    /// as a copy).
    pub(crate) fn remove(&mut self, ti: usize) -> Pair {
        let taken = self.take(ti);
        let n = self.len();
        let mut s = self.hdr().nr_sorted.load(Ordering::Relaxed) as usize;
        let cap = self.cap();
        let tags = self.tags_all_mut();
        let old = tags[ti];
        debug_assert!(!is_hole(old));
        // The run of holes that now contains `ti` carries the tag of the next real entry.
        let mut first = ti;
        while first > 0 && is_hole(tags[first - 1]) {
            first -= 1;
        }
        let mut end = ti + 1;
        while end < cap && is_hole(tags[end]) {
            end += 1;
        }
        let t = if end < cap {
            hole(etag(tags[end]))
        } else {
            HOLE_END
        };
        for h in &mut tags[first..end] {
            *h = t;
        }
        let order = self.order_all_mut();
        let j = order[..n]
            .iter()
            .position(|&o| o as usize == ti)
            .expect("order is a permutation of the real slots");
        order.copy_within(j + 1..n, j);
        if j < s {
            s -= 1;
        }
        self.set_len(n - 1, s);
        taken
    }

    /// Replaces the contents with `pairs`, given in ascending key order as
    /// `(leaf tag, pair)`: entries go, in tag order, to their home slots or the first free
    /// slot after, pulled back from the end when they would not fit. Inline pairs (copies,
    /// so `pairs` may come from this leaf) go to their new slot's cell; the leaf must take
    /// inline pairs then. Leaves the leaf fully sorted.
    pub(crate) fn rebuild(&mut self, pairs: &[(u16, Pair)]) {
        let m = pairs.len();
        assert!(m <= self.cap());
        let mut keys = [0u32; MAX_CAP];
        for (j, &(t, _)) in pairs.iter().enumerate() {
            keys[j] = ((t as u32) << 8) | j as u32;
        }
        keys[..m].sort_unstable();
        let mut src = [Moved::EMPTY; MAX_CAP];
        for (s, &k) in src.iter_mut().zip(&keys[..m]) {
            let j = (k & 0xFF) as usize;
            let (tag, pair) = pairs[j];
            *s = Moved::of(tag, pair, j as u8);
        }
        self.place(&src[..m]);
    }

    /// Split (Algorithm 4): moves the pairs of key ranks `[j, nr)` to `right` (an empty
    /// leaf of the same capacity) and keeps ranks `[0, j)`, both spread around their home
    /// slots and fully sorted. The leaf must be sorted ([`Self::sort`]).
    ///
    /// Entries move as their tag words (a pair block's address or an inline entry's
    /// lengths) plus, for inline pairs, their 16-byte cells: no pair is copied out as a
    /// [`Pair`], nothing is allocated, and no tag sort is needed, because reading the
    /// slots in order yields each half already ordered by tag (measured: see the module
    /// docs, "Splits"). Only when `right`'s kind differs from this leaf's does each moving
    /// pair go through `convert` (given the pair and whether `right` takes inline pairs; it
    /// must return an inline pair only if `right` does, and may turn a block that fits into
    /// an inline pair); the tag stays.
    ///
    /// All conversions happen before either leaf is written. If one fails (turning an
    /// inline pair into a block needs memory), the pairs converted so far are handed to
    /// `discard` (only new blocks made from inline pairs, whose originals are still in this
    /// leaf: the failing direction is the only direction of that split) and the error is
    /// returned with both leaves unchanged.
    pub(crate) fn split_into(
        &mut self,
        right: &mut WriteLeaf<'_>,
        j: usize,
        convert: &mut dyn FnMut(Pair, bool) -> Result<Pair, Error>,
        discard: &mut dyn FnMut(Pair),
    ) -> Result<(), Error> {
        debug_assert!(self.is_sorted());
        let n = self.len();
        let cap = self.cap();
        assert!(0 < j && j < n && right.len() == 0 && right.cap() == cap);
        let mut rank = [0u8; MAX_CAP];
        for (r, &o) in self.order().iter().enumerate() {
            rank[o as usize] = r as u8;
        }
        let mut lo = [Moved::EMPTY; MAX_CAP];
        let mut hi = [Moved::EMPTY; MAX_CAP];
        let (mut nl, mut nh) = (0, 0);
        let has_cells = !self.inline_all_mut().is_empty();
        for (i, &r) in rank[..cap].iter().enumerate() {
            let e = self.tags()[i];
            if is_hole(e) {
                continue;
            }
            let mut m = Moved {
                e,
                cell: [0; INLINE_MAX],
                rank: r,
            };
            if has_cells && is_inline(e) {
                m.cell
                    .copy_from_slice(&self.inline_all_mut()[i * INLINE_MAX..(i + 1) * INLINE_MAX]);
            }
            if (m.rank as usize) < j {
                lo[nl] = m;
                nl += 1;
            } else {
                m.rank -= j as u8;
                hi[nh] = m;
                nh += 1;
            }
        }
        debug_assert_eq!(nl + nh, n);
        let to_inline = right.inline_on();
        if to_inline != self.inline_on() {
            let mut was_inline = [false; MAX_CAP];
            for k in 0..nh {
                let m = hi[k];
                was_inline[k] = is_inline(m.e);
                match convert(m.pair(), to_inline) {
                    Ok(p) => hi[k] = Moved::of(etag(m.e), p, m.rank),
                    Err(e) => {
                        for (c, &inl) in hi[..k].iter().zip(&was_inline[..k]) {
                            if inl && !is_inline(c.e) {
                                discard(c.pair());
                            }
                        }
                        return Err(e);
                    }
                }
            }
        }
        right.place(&hi[..nh]);
        self.place(&lo[..nl]);
        Ok(())
    }

    /// Replaces the contents with `src`, given in tag order with each entry's key rank
    /// (a permutation of `0..src.len()`): entries go to their home slots or the first free
    /// slot after, pulled back from the end when they would not fit; inline cells go with
    /// them. Leaves the leaf fully sorted.
    fn place(&mut self, src: &[Moved]) {
        let m = src.len();
        let cap = self.cap();
        assert!(m <= cap);
        let mut pos = [0usize; MAX_CAP];
        let mut next_free = 0;
        for (t, s) in src.iter().enumerate() {
            debug_assert!(t == 0 || etag(src[t - 1].e) <= etag(s.e));
            pos[t] = home(etag(s.e), cap).max(next_free);
            next_free = pos[t] + 1;
        }
        let mut limit = cap;
        for t in (0..m).rev() {
            pos[t] = pos[t].min(limit - 1);
            limit = pos[t];
        }
        let inline_on = self.hdr().inline_on();
        let mut ord = [0u8; MAX_CAP];
        {
            let cells = self.inline_all_mut();
            for (s, &p) in src.iter().zip(&pos[..m]) {
                if is_inline(s.e) {
                    assert!(inline_on, "inline pair in a leaf without inline pairs");
                    cells[p * INLINE_MAX..(p + 1) * INLINE_MAX].copy_from_slice(&s.cell);
                }
            }
        }
        let tags = self.tags_all_mut();
        // Fill from the right: a hole carries the tag of the next real entry after it.
        let mut next = HOLE_END;
        let mut t = m;
        for i in (0..cap).rev() {
            if t > 0 && pos[t - 1] == i {
                t -= 1;
                tags[i] = src[t].e;
                next = hole(etag(src[t].e));
                ord[src[t].rank as usize] = i as u8;
            } else {
                tags[i] = next;
            }
        }
        self.order_all_mut()[..m].copy_from_slice(&ord[..m]);
        self.set_len(m, m);
    }

    /// The pairs in key order as `(leaf tag, pair)` (sorts first; inline pairs are copied).
    pub(crate) fn sorted_pairs(&mut self) -> Vec<(u16, Pair)> {
        self.sort();
        let n = self.len();
        let mut out = Vec::with_capacity(n);
        for j in 0..n {
            let i = self.order()[j] as usize;
            out.push((etag(self.tags()[i]), self.take(i)));
        }
        out
    }

    /// Calls `f` with every pair block the leaf references, in slot order (no sort: for
    /// dropping the index, where the order does not matter). Inline pairs need no freeing
    /// and are skipped. The leaf is left as it is: the caller frees it next.
    pub(crate) fn for_each_block(&self, mut f: impl FnMut(Kv)) {
        for &e in self.tags() {
            if !is_hole(e) && !is_inline(e) {
                f(ekv(e));
            }
        }
    }

    /// Sets the expected MetaTrieHT version.
    #[inline]
    pub(crate) fn set_version(&self, v: u64) {
        self.hdr().version.store(v, Ordering::Release);
    }

    /// Sets the right neighbour.
    #[inline]
    pub(crate) fn set_next(&self, n: Option<LeafPtr>) {
        self.hdr().next.store(
            n.map_or(std::ptr::null_mut(), |p| p.as_raw()),
            Ordering::Release,
        );
    }

    /// Sets the left neighbour.
    #[inline]
    pub(crate) fn set_prev(&self, p: Option<LeafPtr>) {
        self.hdr().prev.store(
            p.map_or(std::ptr::null_mut(), |p| p.as_raw()),
            Ordering::Release,
        );
    }
}
