//! The Log Table: approximate access history of items that are not (yet) cached (paper
//! §3.3.2–3.3.3, Fig. 6).
//!
//! # Layout
//!
//! A hash table of 64-byte buckets (by default four times as many bytes as the Cache
//! Table); each bucket is a circular log of fifteen 4-byte tags and a 4-byte head counter:
//!
//! ```text
//! byte 0    4    8                                         56   60   64
//!      +----+----+----------------------------------  ----+----+----+
//!      | t0 | t1 |  ...                                    |t14 |head|
//!      +----+----+----------------------------------  ----+----+----+
//! t_i: AtomicU32 tag (0 = empty; tags are never 0); head: AtomicU32, the number of appends
//! so far (the next entry written is head % 15; the oldest entry is overwritten).
//! ```
//!
//! The bucket of a key is chosen by the low bits of its 64-bit hash and its tag is the high
//! 32 bits (forced non-zero), so keys sharing a bucket are told apart by independent hash
//! bits. An emitted item becomes eligible for admission when its tag occurs at least
//! `threshold` (3) times in its bucket's log. Different keys may share a tag, which inflates
//! a count; with 32-bit tags in 15-entry logs this is rare and harmless (the paper's
//! argument).
//!
//! # Concurrency
//!
//! Lock-free and deliberately approximate: appends are a relaxed load of `head`, a relaxed
//! store of the tag and a relaxed store of `head + 1`. Two racing appends to one bucket may
//! overwrite each other's entry or count the same position twice; a lost log entry only
//! delays an admission, and the log never influences correctness (only what gets cached).

use std::sync::atomic::{AtomicU32, Ordering};

use orrery_core::alloc::HugeArray;

/// Tags per 64-byte log bucket.
pub(crate) const LOG_ENTRIES: usize = 15;

/// One 64-byte Log Table bucket (see the [module docs](self) for the layout).
#[repr(C, align(64))]
#[derive(Default)]
pub(crate) struct LogBucket {
    tags: [AtomicU32; LOG_ENTRIES],
    head: AtomicU32,
}

const _: () = assert!(size_of::<LogBucket>() == 64);

// SAFETY: `LogBucket` consists only of atomics; all-zero is a valid value (an empty log).
unsafe impl orrery_core::alloc::Zeroable for LogBucket {}

/// The log tag of a key with this 64-bit hash: the high 32 bits, never 0.
#[inline]
pub(crate) fn log_tag(hash: u64) -> u32 {
    ((hash >> 32) as u32).max(1)
}

impl LogBucket {
    /// How many entries of the log hold `tag`.
    #[inline]
    pub(crate) fn count(&self, tag: u32) -> usize {
        self.tags
            .iter()
            .filter(|t| t.load(Ordering::Relaxed) == tag)
            .count()
    }

    /// Starts loading this bucket into the CPU cache (a hint; see [`LogBucket::append`]).
    #[inline]
    pub(crate) fn prefetch(&self) {
        orrery_core::prefetch::<LogBucket>(self);
    }

    /// Appends `tag`, overwriting the oldest entry once the log is full.
    #[inline]
    pub(crate) fn append(&self, tag: u32) {
        let head = self.head.load(Ordering::Relaxed);
        self.tags[head as usize % LOG_ENTRIES].store(tag, Ordering::Relaxed);
        // Wrap at a multiple of LOG_ENTRIES so the position sequence stays circular.
        let next = if head >= u32::MAX - LOG_ENTRIES as u32 {
            (head + 1) % LOG_ENTRIES as u32
        } else {
            head + 1
        };
        self.head.store(next, Ordering::Relaxed);
    }
}

/// The Log Table: a power-of-two number of [`LogBucket`]s in huge-page-backed memory.
pub(crate) struct LogTable {
    buckets: HugeArray<LogBucket>,
    mask: u64,
}

impl LogTable {
    /// A table of `buckets` buckets (a power of two).
    pub(crate) fn new(buckets: usize) -> orrery_core::Result<LogTable> {
        debug_assert!(buckets.is_power_of_two());
        Ok(LogTable {
            buckets: HugeArray::new(buckets)?,
            mask: buckets as u64 - 1,
        })
    }

    /// The log bucket of a key with this hash.
    #[inline]
    pub(crate) fn bucket(&self, hash: u64) -> &LogBucket {
        &self.buckets[(hash & self.mask) as usize]
    }

    /// Bytes of the table.
    pub(crate) fn table_bytes(&self) -> usize {
        self.buckets.len() * size_of::<LogBucket>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_occurrences() {
        let b = LogBucket::default();
        assert_eq!(b.count(5), 0);
        b.append(5);
        b.append(6);
        b.append(5);
        assert_eq!(b.count(5), 2);
        assert_eq!(b.count(6), 1);
        assert_eq!(b.count(7), 0);
    }

    #[test]
    fn circular_log_forgets_the_oldest() {
        let b = LogBucket::default();
        b.append(42);
        for i in 0..LOG_ENTRIES as u32 - 1 {
            b.append(100 + i);
        }
        assert_eq!(b.count(42), 1);
        b.append(7); // overwrites the oldest entry: the 42
        assert_eq!(b.count(42), 0);
        assert_eq!(b.count(7), 1);
        for i in 0..LOG_ENTRIES as u32 {
            assert_eq!(b.count(100 + i), usize::from(i < LOG_ENTRIES as u32 - 1));
        }
    }

    #[test]
    fn head_wraps_at_a_multiple_of_the_log_length() {
        let b = LogBucket::default();
        b.head
            .store(u32::MAX - LOG_ENTRIES as u32, Ordering::Relaxed);
        let slot = (u32::MAX - LOG_ENTRIES as u32) as usize % LOG_ENTRIES;
        b.append(9);
        assert_eq!(b.tags[slot].load(Ordering::Relaxed), 9);
        let next = b.head.load(Ordering::Relaxed) as usize;
        assert_eq!(next % LOG_ENTRIES, (slot + 1) % LOG_ENTRIES);
    }

    #[test]
    fn tags_are_never_zero() {
        assert_eq!(log_tag(0), 1);
        assert_eq!(log_tag(0xFFFF_FFFF), 1);
        assert_eq!(log_tag(0xABCD_0000_0000_0000), 0xABCD_0000);
    }

    #[test]
    fn table_selects_by_low_bits() {
        let t = LogTable::new(8).unwrap();
        assert_eq!(t.table_bytes(), 512);
        t.bucket(3).append(11);
        assert_eq!(t.bucket(3 + 8).count(11), 1);
        assert_eq!(t.bucket(4).count(11), 0);
    }
}
