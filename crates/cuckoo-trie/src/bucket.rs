//! The 64-byte bucket, its version/lock word, and the 15-byte entry codec (§4.2 Fig 4, §5).
//!
//! # Bucket layout (bytes, little-endian bit numbering over the 512-bit line)
//!
//! ```text
//! bits   0..32   version/lock: bit 0 = lock (writer in progress), bits 1..31 = counter,
//!                bit 31 = frozen (a growth is copying the table; writers may not lock)
//! bits  32..152  entry 0 (120 bits = 15 bytes)
//! bits 152..272  entry 1
//! bits 272..392  entry 2
//! bits 392..512  entry 3
//! ```
//!
//! As in the paper: four 15-byte entries and a 32-bit version/lock word per cache line.
//! The line is stored as eight `AtomicU64` words; the version is an
//! [`orrery_core::sync::VersionField`] in the low half of word 0, whose upper half holds
//! the first 32 bits of entry 0. Entries straddle words, so an entry is read from a
//! *snapshot* of the whole line ([`Line`]) taken under the seqlock protocol: the word 0
//! read by `read_begin`, relaxed loads of words 1..8, then `validate` of word 0 (which
//! compares the whole word, so a change to entry 0's bits also fails validation — a
//! conservative retry, never a torn read).
//!
//! A writer locks the version (compare-and-swap, refused on a frozen bucket), edits a
//! private [`Line`] (or abandons it: [`BucketGuard::abandon`] restores word 0 without
//! storing anything), stores the changed words 1..8 with relaxed stores, and publishes
//! word 0 (new entry-0 bits, lock clear, counter advanced) with the release store of
//! `write_end`.
//!
//! # Entry layout (120 bits)
//!
//! ```text
//! bits  0..2    kind: 0 empty, 1 bitmap (internal) node, 2 jump node, 3 leaf
//! bits  2..6    tag  (h mod 16)
//! bit   6       primary: the entry is in its primary bucket B1
//! bits  7..10   colour (unique among entries with the same hash; 8 = 2·4 colours)
//! bits 10..13   parent colour
//! bits 13..19   last symbol (0..=32)
//! bit  19       dirty (§5): on a leaf, deleted or stale; on an internal node, its
//!               subtree-max locator is stale (not to be followed)
//! bits 20..120  payload, by kind:
//!   bitmap: 20..53 child bitmap (one bit per symbol 0..=32), 53..93 subtree-max locator
//!           hash, 93..96 its colour
//!   jump:   20..23 child colour, 23..27 length (1..=8), 27..75 eight 6-bit symbols,
//!           75..115 subtree-max locator hash, 115..118 its colour
//!   leaf:   20..65 record address / 8, 65..105 next-leaf locator hash, 105..108 its
//!           colour, 108 has-next
//! bit 119       jump child: the node is the only child of a jump node, found by colour
//!               only (§4.3); `SEARCHBYPARENT` skips it
//! ```
//!
//! Locator hashes are 40 bits: tables are limited to `S·16 ≤ 2^40` (2^36 buckets, 4 TiB
//! of buckets). Record addresses are 8-aligned user-space addresses below 2^48.

/// Entries per bucket (`B`).
pub(crate) const SLOTS: usize = 4;
/// Colours: unique among the entries sharing a hash, which all sit in its two buckets.
pub(crate) const COLORS: u8 = 2 * SLOTS as u8;
/// Bits of an entry.
const ENTRY_BITS: u32 = 120;
/// Bits before entry 0 (the version/lock field and nothing else).
const HEADER_BITS: u32 = 32;
/// Symbols a jump node holds.
pub(crate) const JUMP_MAX: usize = 8;

mod lock;
#[cfg(all(test, loom))]
mod loom;

pub(crate) use lock::{Bucket, BucketGuard};

const _: () = assert!(HEADER_BITS + SLOTS as u32 * ENTRY_BITS == 512);

/// A private copy of a bucket's eight words, from which entries are decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Line {
    words: [u64; 8],
}

impl Line {
    /// Entry `i` (`i < SLOTS`).
    #[inline]
    pub(crate) fn entry(&self, i: usize) -> Entry {
        let start = HEADER_BITS + ENTRY_BITS * i as u32;
        let (w, off) = ((start / 64) as usize, start % 64);
        let mut v = u128::from(self.words[w] >> off);
        v |= u128::from(self.words[w + 1]) << (64 - off);
        if off + ENTRY_BITS > 128 {
            v |= u128::from(self.words[w + 2]) << (128 - off);
        }
        Entry(v & Entry::MASK)
    }

    /// Overwrites entry `i`.
    #[inline]
    pub(crate) fn set_entry(&mut self, i: usize, e: Entry) {
        let start = HEADER_BITS + ENTRY_BITS * i as u32;
        let (w, off) = ((start / 64) as usize, start % 64);
        let v = e.0 & Entry::MASK;
        // Clear then set the entry's bits word by word.
        let full = Entry::MASK;
        self.words[w] = (self.words[w] & !((full << off) as u64)) | ((v << off) as u64);
        let s1 = 64 - off;
        self.words[w + 1] = (self.words[w + 1] & !((full >> s1) as u64)) | ((v >> s1) as u64);
        if off + ENTRY_BITS > 128 {
            let s2 = 128 - off;
            self.words[w + 2] = (self.words[w + 2] & !((full >> s2) as u64)) | ((v >> s2) as u64);
        }
    }

    /// The number of empty entries.
    #[inline]
    pub(crate) fn free_slots(&self) -> usize {
        (0..SLOTS).filter(|&i| self.entry(i).is_empty()).count()
    }

    /// The index of an empty entry, if any.
    #[inline]
    pub(crate) fn free_slot(&self) -> Option<usize> {
        (0..SLOTS).find(|&i| self.entry(i).is_empty())
    }
}

/// What kind of trie node an entry holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// No node: a free slot.
    Empty = 0,
    /// An internal node with a child bitmap.
    Bitmap = 1,
    /// A path-compressed chain of single-child nodes (§4.3).
    Jump = 2,
    /// A leaf referencing a record.
    Leaf = 3,
}

/// A locator (§4.4): the hash and colour of a node, which find its entry in two bucket reads
/// wherever relocation moved it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Locator {
    /// The node's hash `h(name)`.
    pub(crate) hash: u64,
    /// The node's colour.
    pub(crate) color: u8,
}

/// One 120-bit entry (layout in the module docs). `Entry(0)` is empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entry(pub(crate) u128);

/// `(shift, width)` of a field.
type F = (u32, u32);
const KIND: F = (0, 2);
const TAG: F = (2, 4);
const PRIMARY: F = (6, 1);
const COLOR: F = (7, 3);
const PARENT_COLOR: F = (10, 3);
const LAST_SYMBOL: F = (13, 6);
const DIRTY: F = (19, 1);
const BITMAP: F = (20, 33);
const BM_MAX_HASH: F = (53, 40);
const BM_MAX_COLOR: F = (93, 3);
const J_CHILD_COLOR: F = (20, 3);
const J_LEN: F = (23, 4);
const J_SYMBOLS: u32 = 27;
const J_MAX_HASH: F = (75, 40);
const J_MAX_COLOR: F = (115, 3);
const L_RECORD: F = (20, 45);
const L_NEXT_HASH: F = (65, 40);
const L_NEXT_COLOR: F = (105, 3);
const L_HAS_NEXT: F = (108, 1);
/// Set on the only child of a jump node: such a node is found by colour only, never by
/// parent colour (its parent's hash is not the peel of its own).
const JUMP_CHILD: F = (119, 1);

const _: () = assert!(J_MAX_COLOR.0 + J_MAX_COLOR.1 <= ENTRY_BITS);
const _: () = assert!(L_HAS_NEXT.0 + L_HAS_NEXT.1 <= ENTRY_BITS);
// Locator hashes are 40 bits: the largest table (2^36 buckets · 16 tags) fits.
const _: () = assert!(BM_MAX_HASH.1 == 40 && J_MAX_HASH.1 == 40 && L_NEXT_HASH.1 == 40);
const _: () = assert!(J_SYMBOLS + 6 * JUMP_MAX as u32 <= J_MAX_HASH.0);

impl Entry {
    const MASK: u128 = (1u128 << ENTRY_BITS) - 1;

    #[inline]
    fn get(self, (shift, width): F) -> u64 {
        ((self.0 >> shift) & ((1u128 << width) - 1)) as u64
    }

    #[inline]
    fn set(self, (shift, width): F, v: u64) -> Entry {
        let mask = ((1u128 << width) - 1) << shift;
        debug_assert!(u128::from(v) < (1u128 << width), "field overflow");
        Entry((self.0 & !mask) | ((u128::from(v) << shift) & mask))
    }

    /// A new entry of `kind` with its identifying fields (tag, primary bit and colour are
    /// set when it is placed).
    pub(crate) fn new(kind: Kind, last_symbol: u8, parent_color: u8) -> Entry {
        Entry(0)
            .set(KIND, kind as u64)
            .set(LAST_SYMBOL, u64::from(last_symbol))
            .set(PARENT_COLOR, u64::from(parent_color))
    }

    /// The same node (kind, last symbol, dirty flag, payload) with fresh placement fields and
    /// parent colour `parent_color`: how growth copies an entry into a larger table. An
    /// internal node's copy is marked stale (dirty): its subtree-max locator names a node
    /// by its hash and colour in the old table, which mean nothing in the new one, until
    /// `Raw::fill_subtree_max` (tests, `trie/invariants.rs`) (or a writer) sets it again.
    pub(crate) fn rebased(self, parent_color: u8) -> Entry {
        let keep = Entry(self.0 & !(((1u128 << 20) - 1) & !0b11));
        let stale = self.dirty() || matches!(self.kind(), Kind::Bitmap | Kind::Jump);
        let keep = keep
            .set(LAST_SYMBOL, u64::from(self.last_symbol()))
            .set(DIRTY, u64::from(stale));
        keep.set(PARENT_COLOR, u64::from(parent_color))
    }

    /// The same node (placement, colour, parent colour, last symbol) turned into `kind`,
    /// with an empty payload: a leaf becoming an internal node on a split, or an internal
    /// node becoming a leaf on a collapse (§4.5).
    pub(crate) fn converted(self, kind: Kind) -> Entry {
        let keep = ((1u128 << 19) - 1) | (1u128 << JUMP_CHILD.0);
        Entry(self.0 & keep).set(KIND, kind as u64)
    }

    /// Whether the node is the only child of a jump node.
    #[inline]
    pub(crate) fn is_jump_child(self) -> bool {
        self.get(JUMP_CHILD) != 0
    }

    /// With the jump-child flag `b`.
    #[inline]
    pub(crate) fn with_jump_child(self, b: bool) -> Entry {
        self.set(JUMP_CHILD, u64::from(b))
    }

    /// With parent colour `c`.
    #[inline]
    pub(crate) fn with_parent_color(self, c: u8) -> Entry {
        self.set(PARENT_COLOR, u64::from(c))
    }

    /// Whether the slot is free.
    #[inline]
    pub(crate) fn is_empty(self) -> bool {
        self.get(KIND) == 0
    }

    /// The node kind.
    #[inline]
    pub(crate) fn kind(self) -> Kind {
        match self.get(KIND) {
            0 => Kind::Empty,
            1 => Kind::Bitmap,
            2 => Kind::Jump,
            _ => Kind::Leaf,
        }
    }

    /// The tag (`h mod 16`).
    #[inline]
    pub(crate) fn tag(self) -> u8 {
        self.get(TAG) as u8
    }

    /// Whether the entry is in its primary bucket.
    #[inline]
    pub(crate) fn primary(self) -> bool {
        self.get(PRIMARY) != 0
    }

    /// The entry placed with `tag`, in its primary bucket or not.
    #[inline]
    pub(crate) fn placed(self, tag: u8, primary: bool) -> Entry {
        self.set(TAG, u64::from(tag))
            .set(PRIMARY, u64::from(primary))
    }

    /// The colour.
    #[inline]
    pub(crate) fn color(self) -> u8 {
        self.get(COLOR) as u8
    }

    /// With colour `c`.
    #[inline]
    pub(crate) fn with_color(self, c: u8) -> Entry {
        self.set(COLOR, u64::from(c))
    }

    /// The parent's colour.
    #[inline]
    pub(crate) fn parent_color(self) -> u8 {
        self.get(PARENT_COLOR) as u8
    }

    /// The last symbol of the node's name.
    #[inline]
    pub(crate) fn last_symbol(self) -> u8 {
        self.get(LAST_SYMBOL) as u8
    }

    /// The dirty flag (§5).
    #[inline]
    pub(crate) fn dirty(self) -> bool {
        self.get(DIRTY) != 0
    }

    /// With the dirty flag set to `d`.
    #[inline]
    pub(crate) fn with_dirty(self, d: bool) -> Entry {
        self.set(DIRTY, u64::from(d))
    }

    /// A bitmap node's children (bit `s` for symbol `s`).
    #[inline]
    pub(crate) fn bitmap(self) -> u64 {
        debug_assert_eq!(self.kind(), Kind::Bitmap);
        self.get(BITMAP)
    }

    /// With child bitmap `b`.
    #[inline]
    pub(crate) fn with_bitmap(self, b: u64) -> Entry {
        self.set(BITMAP, b)
    }

    /// The subtree-max locator of an internal (bitmap or jump) node.
    #[inline]
    pub(crate) fn max(self) -> Locator {
        let (h, c) = match self.kind() {
            Kind::Jump => (J_MAX_HASH, J_MAX_COLOR),
            _ => (BM_MAX_HASH, BM_MAX_COLOR),
        };
        Locator {
            hash: self.get(h),
            color: self.get(c) as u8,
        }
    }

    /// With subtree-max locator `l`.
    #[inline]
    pub(crate) fn with_max(self, l: Locator) -> Entry {
        let (h, c) = match self.kind() {
            Kind::Jump => (J_MAX_HASH, J_MAX_COLOR),
            _ => (BM_MAX_HASH, BM_MAX_COLOR),
        };
        self.set(h, l.hash).set(c, u64::from(l.color))
    }

    /// A jump node's child colour.
    #[inline]
    pub(crate) fn child_color(self) -> u8 {
        self.get(J_CHILD_COLOR) as u8
    }

    /// With jump child colour `c`.
    #[inline]
    pub(crate) fn with_child_color(self, c: u8) -> Entry {
        self.set(J_CHILD_COLOR, u64::from(c))
    }

    /// A jump node's symbols (1..=8 of them).
    #[inline]
    pub(crate) fn jump_len(self) -> usize {
        self.get(J_LEN) as usize
    }

    /// Jump symbol `i`.
    #[inline]
    pub(crate) fn jump_symbol(self, i: usize) -> u8 {
        self.get((J_SYMBOLS + 6 * i as u32, 6)) as u8
    }

    /// With jump symbols `s` (1..=8 symbols).
    pub(crate) fn with_jump(self, s: &[u8]) -> Entry {
        debug_assert!((1..=JUMP_MAX).contains(&s.len()));
        let mut e = self.set(J_LEN, s.len() as u64);
        for (i, &c) in s.iter().enumerate() {
            e = e.set((J_SYMBOLS + 6 * i as u32, 6), u64::from(c));
        }
        e
    }

    /// A leaf's record address.
    #[inline]
    pub(crate) fn record(self) -> usize {
        (self.get(L_RECORD) as usize) << 3
    }

    /// With record address `p` (8-aligned, below 2^48).
    #[inline]
    pub(crate) fn with_record(self, p: usize) -> Entry {
        debug_assert!(p.is_multiple_of(8) && (p as u64) < (1 << 48));
        self.set(L_RECORD, (p >> 3) as u64)
    }

    /// A leaf's next-leaf locator, if it has a next leaf.
    #[inline]
    pub(crate) fn next(self) -> Option<Locator> {
        (self.get(L_HAS_NEXT) != 0).then(|| Locator {
            hash: self.get(L_NEXT_HASH),
            color: self.get(L_NEXT_COLOR) as u8,
        })
    }

    /// With next-leaf locator `l`.
    #[inline]
    pub(crate) fn with_next(self, l: Option<Locator>) -> Entry {
        let l2 = l.unwrap_or_default();
        self.set(L_HAS_NEXT, u64::from(l.is_some()))
            .set(L_NEXT_HASH, l2.hash)
            .set(L_NEXT_COLOR, u64::from(l2.color))
    }
}

#[cfg(test)]
mod tests {
    use super::lock::{VERSION, VERSION_MASK};
    use super::*;

    fn sample(i: u64) -> Entry {
        let e = Entry::new(Kind::Leaf, (i % 33) as u8, (i % 8) as u8)
            .placed((i % 16) as u8, i.is_multiple_of(2))
            .with_color(((i + 3) % 8) as u8)
            .with_record(((i + 1) * 8) as usize)
            .with_next(Some(Locator {
                hash: (1 << 40) - 1 - i,
                color: 7,
            }))
            .with_dirty(i.is_multiple_of(3));
        assert!(!e.is_empty());
        e
    }

    #[test]
    fn entry_fields_round_trip() {
        let e = sample(5);
        assert_eq!(e.kind(), Kind::Leaf);
        assert_eq!(e.last_symbol(), 5);
        assert_eq!(e.parent_color(), 5);
        assert_eq!(e.tag(), 5);
        assert!(!e.primary());
        assert_eq!(e.color(), 0);
        assert_eq!(e.record(), 48);
        assert_eq!(e.next().unwrap().hash, (1 << 40) - 6);
        assert!(!e.dirty());
        assert_eq!(e.with_next(None).next(), None);

        let b = Entry::new(Kind::Bitmap, 32, 7)
            .with_bitmap((1 << 33) - 1)
            .with_max(Locator {
                hash: 12345,
                color: 6,
            });
        assert_eq!(b.bitmap(), (1 << 33) - 1);
        assert_eq!(b.max().hash, 12345);
        assert_eq!(b.max().color, 6);
        assert_eq!(b.last_symbol(), 32);

        let j = Entry::new(Kind::Jump, 1, 2)
            .with_jump(&[32, 0, 1, 2, 3, 4, 5, 31])
            .with_child_color(4)
            .with_max(Locator {
                hash: (1 << 40) - 1,
                color: 7,
            });
        assert_eq!(j.jump_len(), 8);
        assert_eq!(
            (0..8).map(|i| j.jump_symbol(i)).collect::<Vec<_>>(),
            [32, 0, 1, 2, 3, 4, 5, 31]
        );
        assert_eq!(j.child_color(), 4);
        assert_eq!(j.max().hash, (1 << 40) - 1);
        assert!(j.0 >> ENTRY_BITS == 0);
    }

    #[test]
    fn line_entries_do_not_overlap() {
        let mut line = Line::default();
        let entries: Vec<Entry> = (0..SLOTS as u64).map(|i| sample(i + 10)).collect();
        for (i, &e) in entries.iter().enumerate() {
            line.set_entry(i, e);
        }
        for (i, &e) in entries.iter().enumerate() {
            assert_eq!(line.entry(i), e, "entry {i}");
        }
        assert_eq!(
            line.words[0] & VERSION_MASK,
            0,
            "entry 0 stays out of the version"
        );
        line.set_entry(2, Entry(0));
        assert_eq!(line.entry(1), entries[1]);
        assert_eq!(line.entry(3), entries[3]);
        assert_eq!(line.free_slot(), Some(2));
        // All-ones entries next to each other.
        let ones = Entry(Entry::MASK);
        let mut full = Line::default();
        for i in 0..SLOTS {
            full.set_entry(i, ones);
        }
        assert_eq!(full.words[0], !VERSION_MASK);
        assert!(full.words[1..].iter().all(|&w| w == u64::MAX));
    }

    #[test]
    fn guard_publishes_and_bumps_the_version() {
        let b: Bucket = Bucket::from_fn(|_| Default::default());
        let v0 = b.version();
        {
            let mut g = b.lock().unwrap();
            g.line.set_entry(0, sample(1));
            g.line.set_entry(3, sample(3));
            assert!(b.try_lock_at(v0).is_none(), "locked");
        }
        assert!(!b.unchanged(v0));
        let line = b.read();
        assert_eq!(line.entry(0), sample(1));
        assert_eq!(line.entry(3), sample(3));
        assert!(b.unchanged(line.version()));
        assert!(!VERSION.is_locked(line.version()));
        assert_eq!(VERSION.counter(line.version()), 1);
        assert!(b.try_lock_at(v0).is_none(), "stale version");
    }

    /// An abandoned lock stores nothing and leaves the version as it was; a frozen bucket
    /// refuses every lock but stays readable, until unfrozen.
    #[test]
    fn abandon_and_freeze() {
        let b: Bucket = Bucket::from_fn(|_| Default::default());
        let v0 = b.version();
        let mut g = b.try_lock_at(v0).expect("unlocked");
        g.line.set_entry(1, sample(2));
        assert!(b.try_lock().is_none(), "held");
        g.abandon();
        assert!(b.unchanged(v0), "abandon restores the version");
        assert_eq!(b.read().entry(1), Entry(0), "nothing stored");
        b.freeze();
        assert!(b.try_lock().is_none() && b.lock().is_none(), "frozen");
        assert!(b.try_lock_at(b.version()).is_none(), "frozen");
        assert_eq!(b.read().entry(1), Entry(0), "readable while frozen");
        b.unfreeze();
        assert!(b.try_lock().is_some(), "unfrozen");
    }
}
