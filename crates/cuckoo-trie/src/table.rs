//! The bucketized cuckoo hash table with key elimination (§4.2, Algorithm 2).
//!
//! Entries store no key. A node named `x` has hash `h = h(x)` ([`crate::hash`]) and lives
//! in one of the buckets `B1(h)`, `B2(h)`, with tag `h mod 16` and a primary bit. It is
//! identified by:
//!
//! - [`Table::search_by_parent`]: the entries of `h` (right tag and bucket role in either
//!   bucket) whose last symbol is `c` and whose parent colour is the colour of the parent
//!   already found. Correct because `h` is peelable: tag + bucket + last symbol determine
//!   the parent's hash, and colours are unique among entries of one hash, so the parent
//!   colour names the parent node, and the entry's name is `parent · c`.
//! - [`Table::search_by_color`]: the entry of `h` with last symbol `c` and a given colour:
//!   the child of a jump node (whose hash cannot be peeled to the jump node's) and any
//!   locator target.
//!
//! Colours: the entries of one hash all sit in its two buckets, at most `2·4 = 8` of them,
//! so a free colour among 8 always exists when a slot does ([`Table::place`]).
//!
//! Insertion takes a free slot of `B1` or `B2`; when both are full it searches a cuckoo path
//! breadth-first ([`MAX_BFS`] buckets at most, paths of at most [`MAX_PATH`] moves) and
//! executes it from its free end backwards, each move copying the entry to its alternate
//! bucket and then clearing the source under both bucket locks, so the entry is never
//! absent from both buckets in a state a reader can validate — but a reader that reads
//! the destination before the move and the source after it misses the entry; the trie
//! search retries in that case (the parent's bitmap says the child exists, Algorithm 2
//! `goto restart`). A failed search (no path) reports [`Full`]: the trie then grows the
//! table.
//!
//! Writers of a shared table lock the buckets they change through the trie's lock sets
//! (`lockset.rs`): relocation here is a separate step (each move under the locks of its two
//! buckets) run before a writer locks anything else. [`Table::place`] and [`Table::update_at`]
//! are for tables no other thread writes (a table being filled by growth).

use orrery_core::alloc::ZeroedArray;
use orrery_core::api::Error;

use crate::bucket::{Bucket, BucketGuard, COLORS, Entry, Line, Locator, SLOTS};
use crate::hash::PrefixHash;

/// The most buckets the relocation search visits.
pub(crate) const MAX_BFS: usize = 256;
/// The longest relocation path (moves).
pub(crate) const MAX_PATH: usize = 5;
/// Rounds of [`Table::place`] (lock, no free slot, make room) before it reports [`Full`]:
/// only concurrent placers taking the room made can need more than one or two.
const PLACE_TRIES: usize = 32;

/// No slot for a new entry: the table must grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Full;

/// Why [`Table::make_room_claimed`] made no room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Room {
    /// No cuckoo path within the bounds: the table must grow.
    Full,
    /// A concurrent writer changed a bucket of the path, or it is frozen: retry.
    Busy,
}

/// A node found by a search: where it sits, what it holds, and the version of its bucket
/// at the (validated) read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    /// Its slot.
    pub(crate) slot: Slot,
    /// The entry as read.
    pub(crate) entry: Entry,
    /// Word 0 of its bucket at the read, for [`Bucket::unchanged`].
    pub(crate) version: u64,
}

/// Where an entry sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Slot {
    /// Bucket index.
    pub(crate) bucket: usize,
    /// Entry index in the bucket.
    pub(crate) index: usize,
}

/// The table: `S` buckets and the hash of that size.
pub(crate) struct Table {
    buckets: ZeroedArray<Bucket>,
    hash: PrefixHash,
}

impl Table {
    /// An empty table of `buckets` buckets (a power of two, at least 4).
    pub(crate) fn new(buckets: usize) -> Result<Table, Error> {
        Ok(Table {
            buckets: ZeroedArray::new(buckets)?,
            hash: PrefixHash::new(buckets as u64),
        })
    }

    /// The hash of this table size.
    #[inline]
    pub(crate) fn hash(&self) -> &PrefixHash {
        &self.hash
    }

    /// Bytes of the bucket array.
    pub(crate) fn bytes(&self) -> usize {
        self.buckets.len() * size_of::<Bucket>()
    }

    /// Bucket `i`.
    #[inline]
    pub(crate) fn bucket(&self, i: usize) -> &Bucket {
        &self.buckets[i]
    }

    /// Prefetches both buckets of `h`.
    #[inline]
    pub(crate) fn prefetch(&self, h: u64) {
        let (b1, b2) = self.hash.buckets_of(h);
        orrery_core::prefetch(self.buckets[b1].addr());
        orrery_core::prefetch(self.buckets[b2].addr());
    }

    /// Prefetches one bucket of `h`: `B1` if `primary`, else `B2` (a lookup group reads
    /// `B2` only when the node is not in `B1`, a round later: `trie/mod.rs`).
    #[inline]
    pub(crate) fn prefetch_one(&self, h: u64, primary: bool) {
        let (b1, b2) = self.hash.buckets_of(h);
        let b = if primary { b1 } else { b2 };
        orrery_core::prefetch(self.buckets[b].addr());
    }

    /// [`Table::entries_for`] over one bucket of `h`: the entries of `h` in `B1` if
    /// `primary`, else in `B2`.
    #[inline(always)]
    fn entries_in<R>(
        &self,
        h: u64,
        primary: bool,
        mut f: impl FnMut(Slot, Entry, u64) -> Option<R>,
    ) -> Option<R> {
        let (b1, b2) = self.hash.buckets_of(h);
        let b = if primary { b1 } else { b2 };
        let tag = PrefixHash::tag(h);
        let line = self.buckets[b].read();
        for i in 0..SLOTS {
            let e = line.entry(i);
            if e.is_empty() || e.tag() != tag || e.primary() != primary {
                continue;
            }
            if let Some(r) = f(
                Slot {
                    bucket: b,
                    index: i,
                },
                e,
                line.version(),
            ) {
                return Some(r);
            }
        }
        None
    }

    /// [`Table::search_by_parent`] in one bucket of `h` (`B1` if `primary`, else `B2`).
    #[inline]
    pub(crate) fn search_by_parent_in(
        &self,
        h: u64,
        c: u8,
        parent_color: u8,
        primary: bool,
    ) -> Option<Found> {
        self.entries_in(h, primary, |slot, entry, version| {
            (entry.last_symbol() == c
                && entry.parent_color() == parent_color
                && !entry.is_jump_child())
            .then_some(Found {
                slot,
                entry,
                version,
            })
        })
    }

    /// [`Table::search_by_color`] in one bucket of `h` (`B1` if `primary`, else `B2`).
    #[inline]
    pub(crate) fn search_by_color_in(
        &self,
        h: u64,
        c: u8,
        color: u8,
        primary: bool,
    ) -> Option<Found> {
        self.entries_in(h, primary, |slot, entry, version| {
            (entry.last_symbol() == c && entry.color() == color).then_some(Found {
                slot,
                entry,
                version,
            })
        })
    }

    /// Calls `f(slot, entry)` for each entry of hash `h` (Algorithm 2 `ENTRIESFOR`); stops
    /// at the first `Some`. Each bucket is read as a validated snapshot.
    #[inline]
    fn entries_for<R>(
        &self,
        h: u64,
        mut f: impl FnMut(Slot, Entry, u64) -> Option<R>,
    ) -> Option<R> {
        // Direct reads (no reader callback): this is every search's inner loop, and a
        // call through `&dyn Fn` per bucket kept it from being inlined.
        match self.entries_in(h, true, &mut f) {
            Some(r) => Some(r),
            None => self.entries_in(h, false, &mut f),
        }
    }

    /// The node of hash `h`, last symbol `c`, whose parent has colour `parent_color`
    /// (Algorithm 2 `SEARCHBYPARENT`).
    #[inline]
    pub(crate) fn search_by_parent(&self, h: u64, c: u8, parent_color: u8) -> Option<Found> {
        self.entries_for(h, |slot, entry, version| {
            (entry.last_symbol() == c
                && entry.parent_color() == parent_color
                && !entry.is_jump_child())
            .then_some(Found {
                slot,
                entry,
                version,
            })
        })
    }

    /// The node of hash `h`, last symbol `c` and colour `color` (Algorithm 2
    /// `SEARCHBYCOLOR`).
    #[inline]
    pub(crate) fn search_by_color(&self, h: u64, c: u8, color: u8) -> Option<Found> {
        self.entries_for(h, |slot, entry, version| {
            (entry.last_symbol() == c && entry.color() == color).then_some(Found {
                slot,
                entry,
                version,
            })
        })
    }

    /// The node a locator names.
    #[inline]
    pub(crate) fn find(&self, l: Locator) -> Option<Found> {
        self.entries_for(l.hash, |slot, entry, version| {
            (entry.color() == l.color).then_some(Found {
                slot,
                entry,
                version,
            })
        })
    }

    /// The hash of the entry at `slot` (from its bucket, tag and primary bit).
    #[inline]
    pub(crate) fn hash_of(&self, slot: Slot, e: Entry) -> u64 {
        self.hash.hash_at(slot.bucket, e.tag(), e.primary())
    }

    /// Places `proto` (kind, last symbol, parent colour and payload set) as a node of hash
    /// `h`: with both buckets of `h` locked (index order), picks a colour no entry of `h`
    /// has and a free slot in `B1` or `B2`; if both are full, unlocks, makes room along a
    /// cuckoo path and tries again. Returns where it went and the entry as written (with
    /// its colour). Safe with concurrent placers (a table being filled by a cooperative
    /// growth, `trie/grow/`): the colour and the slot are chosen from locked lines, and
    /// a relocation moves an entry under the locks of both its buckets. Not for the shared
    /// trie table: updates there place through the trie's lock sets.
    pub(crate) fn place(&self, h: u64, proto: Entry) -> Result<(Slot, Entry), Full> {
        let (b1, b2) = self.hash.buckets_of(h);
        let tag = PrefixHash::tag(h);
        for _ in 0..PLACE_TRIES {
            let (mut g1, mut g2) = self.lock_pair(b1, b2).ok_or(Full)?;
            let mut used = 0u16;
            for (line, primary) in [(&g1.line, true), (&g2.line, false)] {
                for i in 0..SLOTS {
                    let e = line.entry(i);
                    if !e.is_empty() && e.tag() == tag && e.primary() == primary {
                        used |= 1 << e.color();
                    }
                }
            }
            let Some(color) = (0..COLORS).find(|&c| used & (1 << c) == 0) else {
                g2.abandon();
                g1.abandon();
                return Err(Full);
            };
            for (g, bucket, primary) in [(&mut g1, b1, true), (&mut g2, b2, false)] {
                if let Some(index) = g.line.free_slot() {
                    let e = proto.placed(tag, primary).with_color(color);
                    g.line.set_entry(index, e);
                    return Ok((Slot { bucket, index }, e));
                }
            }
            g2.abandon();
            g1.abandon();
            match self.make_room(b1, b2, &|_| 0) {
                Ok(_) | Err(Room::Busy) => {}
                Err(Room::Full) => return Err(Full),
            }
        }
        Err(Full)
    }

    /// Locks buckets `b1` and `b2` (distinct) in index order, waiting for each; returns
    /// their guards as `(b1, b2)`. `None` if one is frozen. The caller holds no bucket.
    fn lock_pair(&self, b1: usize, b2: usize) -> Option<(BucketGuard<'_>, BucketGuard<'_>)> {
        debug_assert_ne!(b1, b2);
        let (lo, hi) = (b1.min(b2), b1.max(b2));
        let a = self.buckets[lo].lock()?;
        let Some(b) = self.buckets[hi].lock() else {
            a.abandon();
            return None;
        };
        Some(if b1 < b2 { (a, b) } else { (b, a) })
    }

    /// Rewrites the node `l` names with `f(old)`, under the locks of both buckets of its
    /// hash (so a concurrent relocation cannot move it meanwhile). [`Full`] if no such
    /// node. For tables being filled by growth (concurrent placers, no readers).
    pub(crate) fn update_at(&self, l: Locator, f: impl FnOnce(Entry) -> Entry) -> Result<(), Full> {
        let (b1, b2) = self.hash.buckets_of(l.hash);
        let tag = PrefixHash::tag(l.hash);
        let (mut g1, mut g2) = self.lock_pair(b1, b2).ok_or(Full)?;
        for (g, primary) in [(&mut g1, true), (&mut g2, false)] {
            for i in 0..SLOTS {
                let e = g.line.entry(i);
                if !e.is_empty() && e.tag() == tag && e.primary() == primary && e.color() == l.color
                {
                    g.line.set_entry(i, f(e));
                    return Ok(());
                }
            }
        }
        g2.abandon();
        g1.abandon();
        Err(Full)
    }

    /// Makes a free slot for an entry of hash `h` that is not one of the free slots
    /// `claimed(b)` already promised in bucket `b` to other entries of the same update
    /// (two new entries whose hashes share a bucket need two slots there; the trie's
    /// `room` counts them). Returns the bucket (`B1` or `B2` of `h`) with the slot for
    /// `h`, and whether entries were moved to make it. For a writer that holds no
    /// bucket: the slot may be taken again before the caller locks the buckets (it then
    /// retries).
    pub(crate) fn make_room_claimed(
        &self,
        h: u64,
        claimed: &dyn Fn(usize) -> usize,
    ) -> Result<(usize, bool), Room> {
        let (b1, b2) = self.hash.buckets_of(h);
        for b in [b1, b2] {
            if self.buckets[b].read().free_slots() > claimed(b) {
                return Ok((b, false));
            }
        }
        self.make_room(b1, b2, claimed).map(|s| (s.bucket, true))
    }

    /// A free slot in `b1` or `b2`, relocating entries along a cuckoo path if both are
    /// full (breadth-first, bounded). A bucket's free slots count only beyond the
    /// `claimed(b)` already promised to other entries.
    fn make_room(
        &self,
        b1: usize,
        b2: usize,
        claimed: &dyn Fn(usize) -> usize,
    ) -> Result<Slot, Room> {
        // BFS nodes: (bucket, parent node, slot of the parent's bucket moved into this one).
        let mut queue: Vec<(usize, usize, usize, usize)> = Vec::with_capacity(32);
        queue.push((b1, usize::MAX, 0, 0));
        queue.push((b2, usize::MAX, 0, 0));
        let mut qi = 0;
        while qi < queue.len() {
            let (b, _, _, depth) = queue[qi];
            let line = self.buckets[b].read();
            if line.free_slots() > claimed(b)
                && let Some(free) = line.free_slot()
            {
                return self.execute_path(&queue, qi, free);
            }
            if depth < MAX_PATH {
                for i in 0..SLOTS {
                    if queue.len() >= MAX_BFS {
                        break;
                    }
                    let e = line.entry(i);
                    let alt = self.hash.alternate(b, e.tag(), e.primary());
                    // A bucket already on some path is not visited again: a path through
                    // one bucket twice would go stale as it is executed.
                    if queue.iter().any(|q| q.0 == alt) {
                        continue;
                    }
                    // Read later in breadth-first order: fetched now, the misses of a
                    // level overlap instead of waiting one after the other.
                    orrery_core::prefetch(self.buckets[alt].addr());
                    queue.push((alt, qi, i, depth + 1));
                }
            }
            qi += 1;
        }
        Err(Room::Full)
    }

    /// Executes the path ending at BFS node `end`, whose bucket has `free` slot: moves each
    /// entry along the path into the slot freed after it, and returns the slot freed in
    /// the path's first bucket (`B1` or `B2`).
    fn execute_path(
        &self,
        queue: &[(usize, usize, usize, usize)],
        end: usize,
        free: usize,
    ) -> Result<Slot, Room> {
        let mut node = end;
        let mut free = free;
        loop {
            let (b, parent, moved, _) = queue[node];
            if parent == usize::MAX {
                return Ok(Slot {
                    bucket: b,
                    index: free,
                });
            }
            let src = queue[parent].0;
            self.move_entry(
                Slot {
                    bucket: src,
                    index: moved,
                },
                Slot {
                    bucket: b,
                    index: free,
                },
            )?;
            free = moved;
            node = parent;
        }
    }

    /// Moves the entry at `from` to the free slot `to` of its alternate bucket (copy, then
    /// clear, under both bucket locks taken in index order; the mover holds no other
    /// bucket, so waiting for them cannot deadlock). Whatever entry sits at `from` now is
    /// moved if `to` is its alternate and still free; otherwise the path went stale under
    /// a concurrent writer ([`Room::Busy`]), as it does when a bucket is frozen.
    fn move_entry(&self, from: Slot, to: Slot) -> Result<(), Room> {
        debug_assert_ne!(from.bucket, to.bucket);
        let (lo, hi) = if from.bucket < to.bucket {
            (from.bucket, to.bucket)
        } else {
            (to.bucket, from.bucket)
        };
        let a = self.buckets[lo].lock().ok_or(Room::Busy)?;
        let b = self.buckets[hi].lock().ok_or(Room::Busy)?;
        let (mut gf, mut gt): (BucketGuard<'_>, BucketGuard<'_>) = if from.bucket < to.bucket {
            (a, b)
        } else {
            (b, a)
        };
        let e = gf.line.entry(from.index);
        if e.is_empty()
            || !gt.line.entry(to.index).is_empty()
            || self.hash.alternate(from.bucket, e.tag(), e.primary()) != to.bucket
        {
            gt.abandon();
            gf.abandon();
            return Err(Room::Busy);
        }
        gt.line.set_entry(to.index, e.placed(e.tag(), !e.primary()));
        gf.line.set_entry(from.index, Entry(0));
        drop(gt);
        drop(gf);
        Ok(())
    }

    /// Freezes the buckets of `range` (one claimed chunk of a growth, §5 "Resizing"):
    /// waits for each writer holding one to finish, after which no writer changes them.
    pub(crate) fn freeze_range(&self, range: std::ops::Range<usize>) {
        for b in range {
            self.buckets[b].freeze();
        }
    }

    /// Undoes the freezing of every bucket (a growth that could not allocate its new
    /// table).
    pub(crate) fn unfreeze_all(&self) {
        for b in 0..self.buckets.len() {
            self.buckets[b].unfreeze();
        }
    }

    /// Every non-empty entry with its slot (for growth and checks; no concurrent writer).
    pub(crate) fn for_each(&self, mut f: impl FnMut(Slot, Entry)) {
        for b in 0..self.buckets.len() {
            let line: Line = self.buckets[b].read();
            for i in 0..SLOTS {
                let e = line.entry(i);
                if !e.is_empty() {
                    f(
                        Slot {
                            bucket: b,
                            index: i,
                        },
                        e,
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bucket::Kind;

    /// Inserts a chain `root → s0 → s0 s1 → …` plus, for every node, children: a full
    /// trie over `alphabet` up to `depth`, identified only by key elimination; then finds
    /// every node again by walking from the root.
    fn build_and_walk(buckets: usize, alphabet: u8, depth: usize) -> Result<usize, Full> {
        let t = Table::new(buckets).unwrap();
        // (name, colour) of the nodes of the previous level.
        let (_, root) = t.place(0, Entry::new(Kind::Bitmap, 0, 0))?;
        let mut level: Vec<(Vec<u8>, u8)> = vec![(Vec::new(), root.color())];
        let mut count = 1;
        for _ in 0..depth {
            let mut next = Vec::new();
            for (name, pc) in &level {
                let hp = t.hash().of(name);
                for c in 0..alphabet {
                    let h = t.hash().child(hp, c);
                    let (_, e) = t.place(h, Entry::new(Kind::Bitmap, c, *pc))?;
                    let mut child = name.clone();
                    child.push(c);
                    next.push((child, e.color()));
                    count += 1;
                }
            }
            level = next;
        }
        // Walk every leaf-level name from the root by parent colour.
        for (name, colour) in &level {
            let mut h = 0;
            let mut pc = root.color();
            for &c in name {
                h = t.hash().child(h, c);
                let f = t.search_by_parent(h, c, pc).expect("child found");
                let (slot, e) = (f.slot, f.entry);
                assert_eq!(t.hash_of(slot, e), h, "tag + bucket give the hash back");
                assert_eq!(t.hash().peel(h, c), t.hash().peel(t.hash_of(slot, e), c));
                pc = e.color();
            }
            assert_eq!(pc, *colour);
            let f = t
                .search_by_color(h, *name.last().unwrap(), *colour)
                .unwrap();
            assert_eq!(f.entry.color(), *colour);
        }
        // A name never inserted is not found.
        let h = t.hash().child(0, alphabet);
        assert!(t.search_by_parent(h, alphabet, root.color()).is_none());
        let mut n = 0;
        t.for_each(|_, _| n += 1);
        assert_eq!(n, count);
        Ok(count)
    }

    #[test]
    fn key_elimination_finds_every_node() {
        // 1 + 4 + 16 + 64 = 85 nodes in 64 buckets (256 slots, load 33%).
        assert_eq!(build_and_walk(64, 4, 3), Ok(85));
    }

    #[test]
    fn relocation_reaches_high_load() {
        // 1 + 8 + 64 = 73 nodes in 32 buckets (128 slots): well past what a table without
        // relocation holds (the buckets of some hashes fill up), so cuckoo paths run.
        let depth = 2;
        let r = build_and_walk(32, 8, depth);
        assert_eq!(r, Ok(73));
        if cfg!(not(miri)) {
            // 1 + 7 + 49 + 343 = 400 of 512 slots (78% load).
            assert_eq!(build_and_walk(128, 7, 3), Ok(400));
        }
    }

    #[test]
    fn relocation_moves_entries_and_keeps_them_findable() {
        let t = Table::new(4).unwrap();
        let mut placed = Vec::new();
        // 16 slots; fill until full, checking every placed node after each insert.
        let mut h = 0u64;
        let mut moved = false;
        for i in 0..16u8 {
            h = (h + 29) % t.hash().space();
            match t.place(h, Entry::new(Kind::Leaf, i % 33, 0)) {
                Ok((slot, e)) => placed.push((h, i % 33, e.color(), slot)),
                Err(Full) => break,
            }
            for &(hh, c, col, slot) in &placed {
                let now = t.search_by_color(hh, c, col).expect("still present");
                moved |= now.slot != slot;
            }
        }
        assert!(
            placed.len() >= 12,
            "only {} of 16 slots filled",
            placed.len()
        );
        assert!(moved, "no relocation happened");
    }

    /// Two new entries of one update whose hashes share a bucket with one free slot need
    /// two slots: with the first one's slot claimed, room is made elsewhere (by moving
    /// entries), not promised twice.
    #[test]
    fn room_counts_slots_claimed_by_the_same_update() {
        let t = Table::new(16).unwrap();
        let h = 5 * TAGS_FOR_TEST + 3;
        let (b1, b2) = t.hash().buckets_of(h);
        // Fill `b1` to 3 entries and `b2` to 4, with hashes whose primary bucket it is.
        for (b, n) in [(b1, 3), (b2, 4)] {
            let mut placed = 0;
            for x in 0..t.hash().space() {
                if placed == n {
                    break;
                }
                if x != h && t.hash().buckets_of(x).0 == b {
                    let (slot, _) = t.place(x, Entry::new(Kind::Leaf, 1, 0)).unwrap();
                    assert_eq!(slot.bucket, b);
                    placed += 1;
                }
            }
        }
        assert_eq!(t.bucket(b1).read().free_slots(), 1);
        assert_eq!(t.bucket(b2).read().free_slots(), 0);
        assert_eq!(t.make_room_claimed(h, &|_| 0), Ok((b1, false)));
        let claimed = |b: usize| usize::from(b == b1);
        let (b, moved) = t.make_room_claimed(h, &claimed).unwrap();
        assert!(moved, "a second slot needs a relocation");
        assert!(b == b1 || b == b2);
        assert!(t.bucket(b).read().free_slots() > claimed(b));
    }

    const TAGS_FOR_TEST: u64 = crate::hash::TAGS;

    #[test]
    fn colours_are_unique_per_hash() {
        let t = Table::new(8).unwrap();
        let h = 77;
        let mut colours = Vec::new();
        for i in 0..8u8 {
            let (_, e) = t.place(h, Entry::new(Kind::Leaf, i, 0)).unwrap();
            colours.push(e.color());
        }
        colours.sort_unstable();
        assert_eq!(colours, (0..8).collect::<Vec<_>>());
        // Both buckets of `h` are full of entries of `h`: a ninth has no colour.
        assert_eq!(t.place(h, Entry::new(Kind::Leaf, 9, 0)), Err(Full));
    }
}
