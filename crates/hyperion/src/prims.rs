//! Hyperion's side of the one API: the primitives of `orrery_core::raw`, each the
//! structure's own path (optimistic reads, the `get_many` pipeline, the arena's write
//! path, batched scan copies), and the public methods and traits written over them by
//! `orrery_core::index_api!`.

use std::ops::Bound;

use orrery_core::api::{self, Decision, MemoryUsage, ScanVisitor};
use orrery_core::raw::{RawIndex, RawOrdered, WriteMode};

use crate::{Config, Hyperion};

impl RawIndex for Hyperion {
    /// Optimistic: the lookup takes no lock; it copies the value into a (thread-local)
    /// buffer and validates its trie's version, and `f` runs on that validated copy with
    /// no lock held. After a few attempts invalidated by writers of the same trie it
    /// falls back to the arena's lock, taken exclusively (the shared side can starve under
    /// a continuous writer), and `f` then runs under it.
    #[inline]
    fn read<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.read_key(key, f)
    }

    /// A pipeline: the keys are taken in windows of 16, and the window's lookups advance
    /// in turn one stage at a time — container pointer, jump table, T-Node, S-Node — each
    /// stage prefetching what the next one reads, so the cache misses of the window's keys
    /// overlap. Optimistic as `read`; a window that fails a few attempts takes its
    /// arenas' locks (exclusively, in ascending arena order: writers hold one arena lock
    /// at a time, so the order rules out deadlock).
    fn read_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        self.read_keys(keys, f)
    }

    fn put(&self, key: &[u8], value: &[u8]) -> api::Result<bool> {
        self.put_key(key, value)
    }

    fn delete(&self, key: &[u8]) -> bool {
        self.delete_key(key)
    }

    /// Under the arena's write lock.
    fn write(
        &self,
        key: &[u8],
        _mode: WriteMode,
        decide: &mut dyn FnMut(Option<&[u8]>) -> Decision,
    ) -> api::Result<bool> {
        self.write_key(key, decide)
    }

    // `write_in_place`: the default (copy, change, store: values are encoded inside
    // containers).

    fn count(&self) -> usize {
        self.count_keys()
    }

    fn bytes(&self) -> MemoryUsage {
        self.bytes_held()
    }
}

impl RawOrdered for Hyperion {
    /// The visitor runs without any lock held: pairs are copied a batch at a time (growing
    /// batches), each trie's under its arena's protection (optimistic, or the lock).
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.scan_from(start, visitor)
    }

    fn scan_rev(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.scan_down(end, visitor)
    }

    /// Copies bounded by the prefix's end, so a short prefix scan copies no more than it
    /// visits.
    fn scan_prefix(&self, prefix: &[u8], visitor: &mut ScanVisitor<'_>) {
        self.scan_with_prefix(prefix, visitor)
    }
}

impl Hyperion {
    /// The structure is its own engine.
    #[inline]
    fn raw(&self) -> &Self {
        self
    }
}

orrery_core::index_api!(point impl[] Hyperion as "Hyperion");
orrery_core::index_api!(ordered impl[] Hyperion, iter);
orrery_core::index_api!(new impl[] Hyperion as "Hyperion", Config);
