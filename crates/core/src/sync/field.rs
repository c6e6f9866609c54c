//! [`VersionField`]: a version counter with a lock (or write-in-progress) bit packed into
//! some bits of a 32- or 64-bit atomic word that also holds other fields, and the seqlock
//! protocol over it.
//!
//! Structures keep their version next to other data in one word to save a cache line or a
//! load: Mercury puts a node's value version beside its key and value lengths, and the
//! inline pair's version beside its lengths and FULL flag; a Cuckoo Trie bucket needs a
//! 32-bit version inside a 64-byte bucket; [`VersionLock`](super::VersionLock) is the
//! whole-word case (a lock bit, an obsolete bit, a 62-bit counter). They all use this one
//! implementation: a [`VersionField`] describes where the lock bit and the counter are,
//! and provides the word arithmetic and the memory-ordering protocol.

use super::Backoff;
use super::primitive::{AtomicU32, AtomicU64, Ordering, fence};

/// An atomic word a [`VersionField`] can live in: `AtomicU32` or `AtomicU64`. Values are
/// handled as `u64` (a 32-bit word's upper half is always zero), which costs nothing once
/// inlined.
pub trait PackedWord: Sync {
    /// Width of the word in bits.
    const BITS: u32;
    /// Atomic load.
    fn load_word(&self, order: Ordering) -> u64;
    /// Atomic store (`v` fits the word).
    fn store_word(&self, v: u64, order: Ordering);
    /// Atomic compare-and-swap (`current` and `new` fit the word).
    fn cas_word(&self, current: u64, new: u64, success: Ordering, failure: Ordering) -> bool;
}

/// `PackedWord` for an atomic type `$a` of `$bits` bits over the integer `$t`.
macro_rules! packed_word {
    ($a:ty, $bits:expr, $t:ty) => {
        impl PackedWord for $a {
            const BITS: u32 = $bits;

            #[inline(always)]
            fn load_word(&self, order: Ordering) -> u64 {
                u64::from(self.load(order))
            }

            #[inline(always)]
            fn store_word(&self, v: u64, order: Ordering) {
                debug_assert!(v <= u64::from(<$t>::MAX));
                self.store(v as $t, order);
            }

            #[inline(always)]
            fn cas_word(
                &self,
                current: u64,
                new: u64,
                success: Ordering,
                failure: Ordering,
            ) -> bool {
                debug_assert!(current <= u64::from(<$t>::MAX) && new <= u64::from(<$t>::MAX));
                self.compare_exchange(current as $t, new as $t, success, failure)
                    .is_ok()
            }
        }
    };
}

packed_word!(AtomicU64, 64, u64);
packed_word!(AtomicU32, 32, u32);

// Under loom the words above are loom's; the standard atomics stay words too, so that a
// structure's code on `std` atomics still compiles in the loom build (only the code a loom
// model instantiates with loom's atomics is checked; the rest is never run there).
#[cfg(loom)]
packed_word!(std::sync::atomic::AtomicU64, 64, u64);
#[cfg(loom)]
packed_word!(std::sync::atomic::AtomicU32, 32, u32);

/// Where a version's lock bit and counter are in a word (layout and protocol below).
/// A `const` value: structures declare theirs next to their word layout.
///
/// ```
/// use orrery_core::sync::VersionField;
/// use std::sync::atomic::{AtomicU32, Ordering};
///
/// // A 32-bit bucket word: bits 0..16 hold data, bit 16 the lock, bits 17..32 a counter.
/// const V: VersionField = VersionField::new(32, 16, 17, 15);
/// let word = AtomicU32::new(0x1234);
///
/// let seen = V.read_begin(&word);
/// assert!(V.validate(&word, seen));
/// assert!(V.try_lock(&word, seen));
/// assert!(V.try_read(&word).is_none());
/// // Unlock with new data in the low bits: the counter advances, the data changes.
/// let locked = word.load(Ordering::Relaxed) as u64;
/// V.write_end(&word, (locked & !0xFFFF) | 0x5678);
/// assert!(!V.validate(&word, seen));
/// assert_eq!(word.load(Ordering::Relaxed) & 0xFFFF, 0x5678);
/// assert_eq!(V.counter(word.load(Ordering::Relaxed) as u64), 1);
/// ```
///
/// # Layout
///
/// ```text
/// word (u32 or u64):  ... other fields ... | counter (counter_bits) | ... | L | ...
///                                           ^ counter_shift                ^ lock_bit
/// ```
///
/// `L` set: a writer holds the field (a lock holder, or the writer of a seqlock whose
/// mutual exclusion comes from elsewhere, e.g. a bucket lock). Unlocking clears `L` and
/// adds one to the counter, wrapping within `counter_bits` (the other bits of the word are
/// never carried into). With `counter_shift = lock_bit + 1` this is the classic odd/even
/// seqlock: the field `L | counter << 1` is odd while a write is in progress and advances
/// by one at each lock and each unlock.
///
/// # Protocol
///
/// Readers: [`read_begin`](VersionField::read_begin) (an `Acquire` load, waiting while
/// `L` is set), read the protected data only through atomics (or copy it without
/// interpreting it), then [`validate`](VersionField::validate): an `Acquire` fence and a
/// `Relaxed` reload that must give the same *word*. Writers: either
/// [`try_lock`](VersionField::try_lock) (a compare-and-swap setting `L`, `Acquire`) or,
/// when another lock already excludes writers, [`write_begin`](VersionField::write_begin)
/// (a `Relaxed` store setting `L`); both are followed by a `Release` fence before the
/// data stores, and [`write_end`](VersionField::write_end) publishes the new word (`L`
/// clear, counter advanced, the caller's new fields) with a `Release` store. Why a
/// validated read is consistent: the writer's `Release` fence precedes its data stores and
/// the reader's `Acquire` fence follows its data loads, so if the reader saw any of the
/// stores, the writer's setting of `L` happened before the reader's reload, which then
/// differs from the word read first (see the longer argument on
/// [`VersionLock`](super::VersionLock)). On x86-64 both fences compile to nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionField {
    lock: u64,
    counter_mask: u64,
    counter_one: u64,
}

impl VersionField {
    /// The field of a `word_bits`-bit word (32 or 64) with its lock bit at `lock_bit` and a
    /// `counter_bits`-bit counter at `counter_shift` (disjoint from the lock bit, inside the
    /// word). Checked at compile time when used in a `const`.
    pub const fn new(
        word_bits: u32,
        lock_bit: u32,
        counter_shift: u32,
        counter_bits: u32,
    ) -> VersionField {
        assert!(
            word_bits == 32 || word_bits == 64,
            "a word has 32 or 64 bits"
        );
        assert!(lock_bit < word_bits, "the lock bit lies in the word");
        assert!(
            counter_bits > 0 && counter_shift + counter_bits <= word_bits,
            "the counter lies in the word"
        );
        assert!(
            lock_bit < counter_shift || lock_bit >= counter_shift + counter_bits,
            "the lock bit is not a counter bit"
        );
        let ones = if counter_bits == 64 {
            u64::MAX
        } else {
            (1u64 << counter_bits) - 1
        };
        VersionField {
            lock: 1 << lock_bit,
            counter_mask: ones << counter_shift,
            counter_one: 1 << counter_shift,
        }
    }

    /// Whether the lock bit of `word` is set.
    #[inline(always)]
    pub const fn is_locked(self, word: u64) -> bool {
        word & self.lock != 0
    }

    /// The counter of `word`.
    #[inline(always)]
    pub const fn counter(self, word: u64) -> u64 {
        (word & self.counter_mask) / self.counter_one
    }

    /// `word` with the lock bit set.
    #[inline(always)]
    pub const fn locked(self, word: u64) -> u64 {
        word | self.lock
    }

    /// `word` with the counter advanced by one (wrapping within its bits) and the lock bit
    /// clear: the word a writer publishes when it is done. Other bits are kept.
    #[inline(always)]
    pub const fn unlocked(self, word: u64) -> u64 {
        self.bumped(word) & !self.lock
    }

    /// `word` with the counter advanced by one (wrapping within its bits), the lock bit and
    /// other bits kept: invalidates readers' snapshots without a locked phase (a writer
    /// already excluding others, changing the word in one store).
    #[inline(always)]
    pub const fn bumped(self, word: u64) -> u64 {
        let c = (word & self.counter_mask).wrapping_add(self.counter_one) & self.counter_mask;
        (word & !self.counter_mask) | c
    }

    /// Starts an optimistic read: an `Acquire` load of the word, repeated (with backoff)
    /// while the lock bit is set. Validate what is read with [`validate`](Self::validate).
    #[inline]
    pub fn read_begin<W: PackedWord>(self, w: &W) -> u64 {
        let word = w.load_word(Ordering::Acquire);
        if !self.is_locked(word) {
            return word;
        }
        self.read_begin_slow(w)
    }

    #[cold]
    fn read_begin_slow<W: PackedWord>(self, w: &W) -> u64 {
        let backoff = Backoff::new();
        loop {
            backoff.snooze();
            let word = w.load_word(Ordering::Acquire);
            if !self.is_locked(word) {
                return word;
            }
        }
    }

    /// Starts an optimistic read if the lock bit is clear (an `Acquire` load), else `None`.
    #[inline]
    pub fn try_read<W: PackedWord>(self, w: &W) -> Option<u64> {
        let word = w.load_word(Ordering::Acquire);
        (!self.is_locked(word)).then_some(word)
    }

    /// Whether the word is still `seen` (from [`read_begin`](Self::read_begin)): the
    /// reads made since saw a consistent state. An `Acquire` fence orders them before the
    /// `Relaxed` reload.
    #[inline]
    pub fn validate<W: PackedWord>(self, w: &W, seen: u64) -> bool {
        fence(Ordering::Acquire);
        w.load_word(Ordering::Relaxed) == seen
    }

    /// Locks the field if the word is still `seen` (unlocked): a compare-and-swap
    /// (`Acquire`) then a `Release` fence, so that the data stores that follow are ordered
    /// after the lock bit. Publish with [`write_end`](Self::write_end).
    #[inline]
    pub fn try_lock<W: PackedWord>(self, w: &W, seen: u64) -> bool {
        debug_assert!(!self.is_locked(seen));
        if w.cas_word(
            seen,
            self.locked(seen),
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            fence(Ordering::Release);
            true
        } else {
            false
        }
    }

    /// Marks a write in progress on a word whose writers are already excluded by another
    /// lock (the caller holds it): a `Relaxed` store of the word with the lock bit set,
    /// then a `Release` fence. Returns that word. Publish with
    /// [`write_end`](Self::write_end).
    #[inline]
    pub fn write_begin<W: PackedWord>(self, w: &W) -> u64 {
        let word = w.load_word(Ordering::Relaxed);
        debug_assert!(!self.is_locked(word), "a write is already in progress");
        let locked = self.locked(word);
        w.store_word(locked, Ordering::Relaxed);
        fence(Ordering::Release);
        locked
    }

    /// Ends a write: a `Release` store of [`unlocked`](Self::unlocked)`(locked)`, where
    /// `locked` is the locked word with the caller's new values in the other bits.
    #[inline]
    pub fn write_end<W: PackedWord>(self, w: &W, locked: u64) {
        debug_assert!(self.is_locked(locked));
        w.store_word(self.unlocked(locked), Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const ODD_EVEN_LOW: VersionField = VersionField::new(64, 0, 1, 31);
    const ODD_EVEN_HIGH: VersionField = VersionField::new(64, 32, 33, 31);
    const SPLIT: VersionField = VersionField::new(32, 0, 2, 30);

    #[test]
    fn field_odd_even_wraps_within_its_bits() {
        // Low 32 bits: the field; bits 32.. other data that must never change.
        let data = 0xABCD_u64 << 32;
        let w = AtomicU64::new(data | 0xFFFF_FFFE);
        assert_eq!(
            ODD_EVEN_LOW.counter(w.load(Ordering::Relaxed)),
            (1 << 31) - 1
        );
        let locked = ODD_EVEN_LOW.write_begin(&w);
        assert_eq!(locked & 0xFFFF_FFFF, 0xFFFF_FFFF, "odd while writing");
        ODD_EVEN_LOW.write_end(&w, locked);
        assert_eq!(w.load(Ordering::Relaxed), data, "wrapped to 0, data kept");
        assert_eq!(ODD_EVEN_LOW.bumped(data), data | 2);
    }

    #[test]
    fn field_in_the_high_half() {
        let w = AtomicU64::new(0x1234);
        let v = ODD_EVEN_HIGH.read_begin(&w);
        let locked = ODD_EVEN_HIGH.write_begin(&w);
        assert!(!ODD_EVEN_HIGH.validate(&w, v));
        assert!(ODD_EVEN_HIGH.try_read(&w).is_none());
        assert_eq!(locked >> 32, 1);
        ODD_EVEN_HIGH.write_end(&w, (locked & !0xFFFF) | 0x42);
        let now = w.load(Ordering::Relaxed);
        assert_eq!(now >> 32, 2);
        assert_eq!(now & 0xFFFF, 0x42);
        assert_eq!(ODD_EVEN_HIGH.counter(now), 1);
    }

    #[test]
    fn field_split_lock_and_counter_in_u32() {
        // Bit 1 is another flag (like VersionLock's obsolete bit): kept across writes.
        let w = AtomicU32::new(2);
        let seen = SPLIT.read_begin(&w);
        assert!(SPLIT.try_lock(&w, seen));
        assert!(
            !SPLIT.try_lock(&w, seen),
            "locked words do not match a snapshot"
        );
        SPLIT.write_end(&w, SPLIT.locked(seen));
        assert_eq!(w.load(Ordering::Relaxed), 2 | 4);
        // Counter wrap at 30 bits leaves the flag and the lock bit alone.
        w.store(!1u32, Ordering::Relaxed);
        let seen = SPLIT.read_begin(&w);
        assert!(SPLIT.try_lock(&w, seen));
        SPLIT.write_end(&w, SPLIT.locked(seen));
        assert_eq!(w.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn field_readers_see_consistent_pairs() {
        // A seqlock over two data words: readers never validate a torn pair.
        const F: VersionField = VersionField::new(64, 0, 1, 63);
        let v = AtomicU64::new(0);
        let data = [AtomicU64::new(0), AtomicU64::new(0)];
        let writer_lock = std::sync::Mutex::new(());
        let n = if cfg!(miri) { 50 } else { 20_000 };
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 1..=n {
                    let _g = writer_lock.lock().unwrap();
                    let locked = F.write_begin(&v);
                    data[0].store(i, Ordering::Relaxed);
                    data[1].store(i, Ordering::Relaxed);
                    F.write_end(&v, locked);
                }
            });
            s.spawn(|| {
                let mut last = 0;
                while last < n {
                    let seen = F.read_begin(&v);
                    let a = data[0].load(Ordering::Relaxed);
                    let b = data[1].load(Ordering::Relaxed);
                    if F.validate(&v, seen) {
                        assert_eq!(a, b, "torn read validated");
                        assert!(a >= last);
                        last = a;
                    }
                }
            });
        });
    }
}
