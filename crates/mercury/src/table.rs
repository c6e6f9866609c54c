//! One bucket array and its expansion state.
//!
//! A [`Table`] is the paper's hash table (Fig 2(a)): a power-of-two array of buckets, in
//! one of two layouts ([`Config::inline_pairs`](crate::Config::inline_pairs)):
//!
//! - **32-byte cells** (the default): each bucket is a [`Cell`], aligned to 32 bytes so that
//!   it never straddles two cache lines: the bucket word (see `link.rs`) followed by an
//!   inline area for one small pair (`inline_pair.rs`; beyond the paper, whose bucket is the
//!   word alone). Reaching a bucket, its lock, has-moved bit, chain head and inline pair is
//!   one miss.
//! - **8-byte cells**: each bucket is the bucket word alone, as in the paper, for tables
//!   whose pairs would rarely fit an inline area (a quarter of the bytes per bucket, so four
//!   times the buckets for the same memory: shorter chains). [`Table::cell`] then returns
//!   one shared placeholder cell whose inline area is always empty, and
//!   [`Table::fits_inline`] is false, so nothing is ever stored in it (a clear of an empty
//!   area stores nothing, `inline_pair.rs`): the paths that read the area find it empty.
//!
//! Either way the array is a zeroed huge-page-backed [`HugeArray`] of words, cell `i` at word
//! `i << shift` (`shift` 2 or 0): a zero cell is an empty, unlocked, unmoved bucket.
//!
//! During a resize the table also points at its successor (`next`: twice as many buckets for
//! an expansion, half as many for a shrink) and counts the migration's progress
//! (`migrated`, the paper's *r*). For an expansion, buckets `0..r` are MOVED and complete in
//! `next`; for a shrink, successor buckets `0..r` are complete (old buckets `l` and
//! `l + N/2` for every `l < r` are MOVED). Both cases are one test: old bucket `idx` is
//! migrated when `idx & (next.len() - 1) < r` ([`Table::is_migrated`]). The `resize` token is
//! held by whoever initializes the successor or migrates a run of buckets (see `expand.rs`,
//! `shrink.rs`).
//!
//! Fields are grouped per cache line: the read-mostly line every operation reads (`words`,
//! `mask`, `shift`, `next`), then `migrated` (written once per migrated run) and `resize`
//! (taken by writers) on lines of their own so that neither invalidates the first.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use orrery_core::Error;

use crate::inline_pair::{self, Inline};
use crate::link::{BucketWord, LOCK_BIT};
use orrery_core::alloc::{HugeArray, Zeroable};
use orrery_core::sync::{BitLock, CachePadded};

/// A table shrinks below `grow_at * SHRINK_FRACTION.0 / SHRINK_FRACTION.1` items: 2/5 of
/// `load_percent`% per bucket. After the halving the table is at 4/5 of its growth
/// threshold, so it grows again only after the item count rose by a quarter, and after a
/// doubling it is at 1/2 of its new threshold, so it shrinks again only after the count fell
/// by a fifth (the hysteresis that keeps churn at one size from thrashing; `shrink.rs`).
pub(crate) const SHRINK_FRACTION: (usize, usize) = (2, 5);

/// Buckets locked at once by a migration run (see `expand.rs`, `migrate_run`).
pub(crate) const LOCK_BATCH: usize = 16;

/// How often (in writes of one stripe of the item counter) the striped total is compared with
/// a threshold: every write for tables up to 1 Ki buckets, then every `len / 1 Ki` writes, at
/// most every 64 (summing the stripes reads 32 cache lines). The count may miss the
/// threshold by at most `stripes * interval`, under 5% of the table.
#[inline]
pub(crate) fn check_interval(buckets: usize) -> isize {
    (buckets >> 10).clamp(1, 64) as isize
}

/// One bucket: the bucket word and the inline area.
#[repr(C, align(32))]
pub(crate) struct Cell {
    /// The bucket word (`link.rs`).
    word: AtomicU64,
    /// The inline pair (`inline_pair.rs`).
    pub(crate) inline: Inline,
}

const _: () = assert!(size_of::<Cell>() == 32);

impl Cell {
    /// The bucket word.
    #[cfg(feature = "bench-internals")]
    #[inline]
    pub(crate) fn word(&self) -> &AtomicU64 {
        &self.word
    }
}

// SAFETY: a `Cell` is four `AtomicU64`s (plus alignment, no padding); all-zero bytes are an
// empty, unlocked, unmoved bucket word and an empty inline area (version 0, FULL clear).
unsafe impl Zeroable for Cell {}

/// The cell [`Table::cell`] returns in a table of 8-byte cells: its inline area is empty and
/// stays so (nothing is stored inline when [`Table::fits_inline`] is false, and clearing an
/// empty area stores nothing); its word is never used (bucket words are reached through
/// [`Table::bucket`]).
static NO_INLINE: Cell = Cell {
    word: AtomicU64::new(0),
    inline: Inline::empty(),
};

/// Words per 32-byte cell, as a shift: cell `i` of a table with inline areas starts at
/// word `i << WIDE_SHIFT`.
const WIDE_SHIFT: u32 = 2;

/// Low bits of [`Table::cells_addr`] holding log2 of the cell size (the array is aligned to
/// far more than 8 bytes, so these bits of its address are zero).
const HINT_SHIFT_BITS: usize = 0b111;

/// The address of the cell of hash `h` from a table's prefetch hint ([`Table::cells_addr`])
/// and mask, for a prefetch (never dereferenced).
#[inline(always)]
pub(crate) fn hinted_cell(hint: usize, mask: u64, h: u64) -> usize {
    (hint & !HINT_SHIFT_BITS).wrapping_add(((h & mask) as usize) << (hint & HINT_SHIFT_BITS))
}

/// A bucket array plus its expansion state.
pub(crate) struct Table {
    /// The cells: `len << shift` words.
    words: HugeArray<AtomicU64>,
    mask: u64,
    /// Words per cell as a shift: [`WIDE_SHIFT`] with inline areas, 0 without.
    shift: u32,
    /// Item count above which this table starts an expansion.
    grow_at: usize,
    /// Item count below which this table may shrink (`shrink.rs`).
    shrink_at: usize,
    /// The successor during (and after) an expansion; null before.
    next: AtomicPtr<Table>,
    /// Buckets `0..migrated` have been migrated to `next` (the paper's *r*).
    migrated: CachePadded<AtomicUsize>,
    /// Token of the expander (initialization, migration runs, termination).
    resize: CachePadded<AtomicBool>,
    /// The pre-fault thread's cursor: the successor's pages for old buckets `0..prefaulted`
    /// are populated (`prefault.rs`). Written by that thread only.
    prefaulted: CachePadded<AtomicUsize>,
}

impl Table {
    #[cfg(any(test, feature = "bench-internals"))]
    /// A table of `len` (a power of two) empty 32-byte cells (with inline areas) that grows
    /// above `len * load_percent / 100` items.
    pub(crate) fn new(len: usize, load_percent: usize) -> Result<Box<Table>, Error> {
        Table::with_cells(len, load_percent, true)
    }

    /// A table of `len` (a power of two) empty buckets, 32-byte cells with inline areas
    /// when `inline_pairs`, else 8-byte cells (the bucket word alone), that grows above
    /// `len * load_percent / 100` items.
    pub(crate) fn with_cells(
        len: usize,
        load_percent: usize,
        inline_pairs: bool,
    ) -> Result<Box<Table>, Error> {
        debug_assert!(len.is_power_of_two());
        let grow_at = (len / 100).saturating_mul(load_percent) + (len % 100) * load_percent / 100;
        let shift = if inline_pairs { WIDE_SHIFT } else { 0 };
        let words: HugeArray<AtomicU64> =
            HugeArray::new(len.checked_mul(1 << shift).ok_or(Error::OutOfMemory)?)?;
        // A huge-page region: aligned far beyond a cell (`cell` casts 4 words to a `Cell`,
        // the hint keeps the cell size in the address's low bits).
        assert_eq!(words.as_ptr().addr() % size_of::<Cell>(), 0);
        Ok(Box::new(Table {
            words,
            mask: len as u64 - 1,
            shift,
            grow_at,
            shrink_at: grow_at / SHRINK_FRACTION.1 * SHRINK_FRACTION.0
                + grow_at % SHRINK_FRACTION.1 * SHRINK_FRACTION.0 / SHRINK_FRACTION.1,
            next: AtomicPtr::new(std::ptr::null_mut()),
            migrated: CachePadded::new(AtomicUsize::new(0)),
            resize: CachePadded::new(AtomicBool::new(false)),
            prefaulted: CachePadded::new(AtomicUsize::new(0)),
        }))
    }

    /// Number of buckets.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.mask as usize + 1
    }

    /// The prefetch hint for `raw.rs`: the address of the first cell with log2 of the cell
    /// size (5 or 3) in its low bits; [`hinted_cell`] decodes it. Never dereferenced.
    pub(crate) fn cells_addr(&self) -> usize {
        self.words.as_ptr().addr() | (self.shift as usize + 3)
    }

    /// Bytes of the bucket array.
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * size_of::<AtomicU64>()
    }

    /// Whether a pair with these lengths is stored in its bucket's inline area when the area
    /// is free: never in a table of 8-byte cells.
    #[inline]
    pub(crate) fn fits_inline(&self, klen: usize, vlen: usize) -> bool {
        self.shift != 0 && inline_pair::fits(klen, vlen)
    }

    /// Item count above which this table should expand.
    #[inline]
    pub(crate) fn grow_at(&self) -> usize {
        self.grow_at
    }

    /// Item count below which this table should shrink ([`SHRINK_FRACTION`] of
    /// [`grow_at`](Table::grow_at)).
    #[inline]
    pub(crate) fn shrink_at(&self) -> usize {
        self.shrink_at
    }

    /// Whether old bucket `idx` of this table has been migrated into `next` (its successor):
    /// `idx & (next.len() - 1) < r`. For an expansion that is `idx < r`; for a shrink, old
    /// buckets `l` and `l + next.len()` are migrated together into successor bucket `l`.
    #[inline]
    pub(crate) fn is_migrated(&self, idx: usize, next: &Table) -> bool {
        (idx as u64 & next.mask) < self.migrated() as u64
    }

    /// The bucket index of hash `h`.
    #[inline]
    pub(crate) fn index(&self, h: u64) -> usize {
        (h & self.mask) as usize
    }

    /// The bucket word at `idx`.
    #[inline]
    pub(crate) fn bucket(&self, idx: usize) -> &AtomicU64 {
        &self.words[idx << self.shift]
    }

    /// The cell (bucket word and inline area) at `idx`; in a table of 8-byte cells, the
    /// shared placeholder whose inline area is always empty (use [`bucket`](Table::bucket)
    /// for the word).
    #[inline]
    pub(crate) fn cell(&self, idx: usize) -> &Cell {
        if self.shift == 0 {
            return &NO_INLINE;
        }
        let first = idx << WIDE_SHIFT;
        let words = &self.words[first..first + (1 << WIDE_SHIFT)];
        // SAFETY: `words` are the 4 words of cell `idx` (32 bytes, in bounds: the slice was
        // checked), 32-byte aligned (the array is, `with_cells`, and `first * 8` is a
        // multiple of 32); a `Cell` is `repr(C)` of 4 `AtomicU64`s without padding, so the
        // reference reads the same atomics, shared as the slice is.
        unsafe { &*words.as_ptr().cast::<Cell>() }
    }

    /// Loads the bucket word at `idx` (Acquire: the chain it points at is visible).
    #[inline]
    pub(crate) fn load(&self, idx: usize) -> BucketWord {
        BucketWord::from_word(self.bucket(idx).load(Ordering::Acquire))
    }

    /// Takes the lock of bucket `idx` (test-and-test-and-set with backoff) and returns the
    /// word as it is now, LOCK set. The holder owns the chain and the whole word until it
    /// stores a word with LOCK clear.
    #[inline]
    pub(crate) fn lock(&self, idx: usize) -> BucketWord {
        let word = self.bucket(idx);
        BitLock::lock_bit(word, LOCK_BIT);
        // Relaxed: we hold the lock, so nobody else changes the word, and coherence orders
        // this load after our own Acquire `fetch_or`.
        BucketWord::from_word(word.load(Ordering::Relaxed))
    }

    /// Stores `word` (LOCK clear) into bucket `idx`, publishing the chain and releasing the
    /// lock in one Release store. Only the lock holder calls this.
    #[inline]
    pub(crate) fn store_unlock(&self, idx: usize, word: BucketWord) {
        debug_assert!(!word.is_locked());
        self.bucket(idx).store(word.word(), Ordering::Release);
    }

    /// Stores `word` (LOCK still set) into bucket `idx` without releasing the lock.
    #[inline]
    pub(crate) fn store_locked(&self, idx: usize, word: BucketWord) {
        debug_assert!(word.is_locked());
        self.bucket(idx).store(word.word(), Ordering::Release);
    }

    /// The successor table, if an expansion started.
    ///
    /// The returned reference lives as long as `self`: a successor is freed only after its
    /// predecessor (see `raw.rs`, `Drop` and termination).
    #[inline]
    pub(crate) fn next(&self) -> Option<&Table> {
        let p = self.next.load(Ordering::Acquire);
        // SAFETY: a non-null `next` points at a live table that outlives `self`: tables are
        // retired oldest first, each only after it became unreachable (termination swings
        // the current pointer past it before deferring its free), and the successor is
        // retired only at its own termination, which comes after `self`'s.
        unsafe { p.as_ref() }
    }

    /// Installs the successor. Only the holder of the `resize` token calls this, once.
    pub(crate) fn set_next(&self, next: Box<Table>) {
        debug_assert!(self.next.load(Ordering::Relaxed).is_null());
        self.next.store(Box::into_raw(next), Ordering::Release);
    }

    /// The raw successor pointer (for `Drop`).
    pub(crate) fn next_ptr(&self) -> *mut Table {
        self.next.load(Ordering::Acquire)
    }

    /// Buckets migrated so far (`0..migrated` are complete in `next`).
    #[inline]
    pub(crate) fn migrated(&self) -> usize {
        self.migrated.load(Ordering::Acquire)
    }

    /// Publishes that buckets `0..upto` are migrated. Only the `resize` token holder calls it.
    pub(crate) fn set_migrated(&self, upto: usize) {
        self.migrated.store(upto, Ordering::Release);
    }

    /// The pre-fault cursor (see `prefault.rs`).
    pub(crate) fn prefaulted(&self) -> usize {
        self.prefaulted.load(Ordering::Relaxed)
    }

    /// Advances the pre-fault cursor (the pre-fault thread only).
    pub(crate) fn set_prefaulted(&self, upto: usize) {
        self.prefaulted.store(upto, Ordering::Relaxed);
    }

    /// Populates the pages of cells `range` (clamped to the table) without changing them:
    /// `madvise(MADV_POPULATE_WRITE)`, or where the OS lacks it, a compare-exchange of one
    /// bucket word per 4 KiB page with its own value (a write fault that changes nothing:
    /// every access to a bucket word is atomic, so this races with nobody).
    pub(crate) fn prefault(&self, range: std::ops::Range<usize>) -> Result<(), Error> {
        let words =
            range.start.saturating_mul(1 << self.shift)..range.end.saturating_mul(1 << self.shift);
        // (The word touched may be an inline area's: every access to those is atomic too.)
        self.words.prefault(words, |word| {
            let w = word.load(Ordering::Relaxed);
            let _ = word.compare_exchange(w, w, Ordering::Relaxed, Ordering::Relaxed);
        })
    }

    /// Tries to take the expansion token without waiting.
    #[inline]
    pub(crate) fn try_resize(&self) -> bool {
        !self.resize.load(Ordering::Relaxed)
            && self
                .resize
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Releases the expansion token.
    #[inline]
    pub(crate) fn end_resize(&self) {
        self.resize.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_and_indexes() {
        let t = Table::new(1024, 75).unwrap();
        assert_eq!(t.len(), 1024);
        assert_eq!(t.grow_at(), 768);
        assert_eq!(t.shrink_at(), 307);
        assert_eq!(t.index(0xFFFF_FFFF_0000_0401), 1);
        assert_eq!(Table::new(8, 100).unwrap().grow_at(), 8);
        assert!(t.next().is_none());
        assert!(t.try_resize());
        assert!(!t.try_resize());
        t.end_resize();
        assert!(t.try_resize());
    }

    #[test]
    fn cell_layouts() {
        for inline_pairs in [true, false] {
            let t = Table::with_cells(64, 100, inline_pairs).unwrap();
            let cell = if inline_pairs { 32 } else { 8 };
            assert_eq!(t.bytes(), 64 * cell);
            assert_eq!(t.fits_inline(8, 8), inline_pairs);
            assert!(!t.fits_inline(8, 9));
            // The hint decodes to each bucket word's address.
            for (h, idx) in [(0u64, 0usize), (5, 5), (64 + 63, 63)] {
                let addr = hinted_cell(t.cells_addr(), t.len() as u64 - 1, h);
                assert_eq!(addr, std::ptr::from_ref(t.bucket(idx)).addr());
            }
            // Buckets are distinct words; a locked bucket leaves its neighbours alone.
            let w = t.lock(7);
            assert!(!t.load(6).is_locked() && !t.load(8).is_locked());
            t.store_unlock(7, w.without_lock());
            // Cells: distinct with inline areas, one shared empty placeholder without.
            assert_eq!(std::ptr::eq(t.cell(1), t.cell(2)), !inline_pairs);
            if inline_pairs {
                assert!(std::ptr::eq(&t.cell(3).word, t.bucket(3)));
            }
            assert!(t.cell(9).inline.locked_is_empty());
            t.cell(9).inline.clear();
            assert!(t.cell(9).inline.snapshot().is_none());
            t.prefault(0..64).unwrap();
            assert!((0..64).all(|i| t.load(i).head().is_null()));
        }
    }

    #[test]
    fn lock_and_publish() {
        let t = Table::new(8, 75).unwrap();
        let w = t.lock(3);
        assert!(w.is_locked() && !w.is_moved());
        assert!(t.load(3).is_locked());
        t.store_locked(3, w.with_moved());
        assert!(t.load(3).is_moved());
        t.store_unlock(3, w.with_moved().without_lock());
        let w = t.load(3);
        assert!(w.is_moved() && !w.is_locked());
    }
}
