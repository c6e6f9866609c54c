//! The Cuckoo Trie's side of the one API: the primitives of `orrery_core::raw` on the
//! trie engine ([`trie::Raw`]), each under one epoch guard, and the public methods and
//! traits written over them by `orrery_core::index_api!`.
//! Scans run in batches under one epoch guard each (`Raw::scan_resumable`).

use std::ops::Bound;

use orrery_core::api::{self, MemoryUsage, ScanVisitor};
use orrery_core::raw::{RawIndex, RawOrdered, WriteMode};
use orrery_core::sync::pin;

use crate::trie::{self, Decision, Mode};
use crate::{Config, CuckooTrie};

impl RawIndex for trie::Raw {
    #[inline]
    fn read<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let g = pin();
        self.lookup(key, &g).map(|(_, v)| f(v))
    }

    /// Keys are walked in groups of 16 whose searches advance in rounds, one step per key
    /// per round, each step reading what the same walk prefetched a round before (the
    /// primary bucket of the next prefix; the secondary one only when the node is not in
    /// the primary; the record once the leaf is read), so the DRAM reads of different
    /// keys' walks overlap (`Raw::lookup_group`). Nothing is allocated.
    fn read_many(&self, keys: &[&[u8]], f: &mut dyn FnMut(usize, Option<&[u8]>)) {
        let g = pin();
        let mut out = [None; trie::GROUP];
        for (c, group) in keys.chunks(trie::GROUP).enumerate() {
            let out = &mut out[..group.len()];
            self.lookup_group(group, &g, out);
            for (i, r) in out.iter().enumerate() {
                f(c * trie::GROUP + i, r.map(|(_, v)| v));
            }
        }
    }

    fn put(&self, key: &[u8], value: &[u8]) -> api::Result<bool> {
        let present = self.upsert(key, &mut |_| Decision::Store(value.to_vec()), Mode::INSERT)?;
        Ok(!present)
    }

    fn delete(&self, key: &[u8]) -> bool {
        self.remove(key)
    }

    /// Atomic: `decide` runs while the buckets the change writes are locked (the key's
    /// leaf, or every bucket an insert of the key writes), and its result is applied
    /// before any other writer can change the key.
    fn write(
        &self,
        key: &[u8],
        mode: WriteMode,
        decide: &mut dyn FnMut(Option<&[u8]>) -> Decision,
    ) -> api::Result<bool> {
        let mode = match mode {
            WriteMode::Compute => Mode::COMPUTE,
            WriteMode::Update => Mode::UPDATE,
        };
        self.upsert(key, decide, mode)
    }

    // `write_in_place`: the default (copy, change, store). Records are immutable (readers
    // read them without locks), so a changed value is published as a new record.

    fn count(&self) -> usize {
        self.len()
    }

    fn bytes(&self) -> MemoryUsage {
        let (table, records) = trie::Raw::bytes(self);
        MemoryUsage {
            structure_bytes: table,
            key_value_bytes: records,
        }
    }
}

impl RawOrdered for trie::Raw {
    /// One successor search, then a depth-first walk of the trie that keeps the buckets of
    /// the next nodes and the records of the next leaves in flight (`trie/scan.rs`).
    fn scan(&self, start: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.scan_resumable(start, visitor, trie::Raw::scan_batch)
    }

    /// One predecessor search, then the walk of `scan` mirrored.
    fn scan_rev(&self, end: Bound<&[u8]>, visitor: &mut ScanVisitor<'_>) {
        self.scan_resumable(end, visitor, trie::Raw::scan_batch_rev)
    }

    fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let g = pin();
        self.seek(Bound::Unbounded, true, &g)
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
    }

    fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let g = pin();
        self.seek(Bound::Unbounded, false, &g)
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
    }

    // `remove_range`: the default (ascending scans of up to 1,024 keys, each removed on
    // its own; a removal may shrink the table: `CuckooTrie::remove`).
}

impl CuckooTrie {
    /// The engine the API is written over.
    #[inline]
    fn raw(&self) -> &trie::Raw {
        &self.raw
    }

    fn build(config: Config) -> api::Result<Self> {
        Ok(CuckooTrie {
            raw: trie::Raw::new(config)?,
        })
    }

    fn config_ref(&self) -> &Config {
        &self.raw.config
    }
}

orrery_core::index_api!(point impl[] CuckooTrie as "CuckooTrie");
orrery_core::index_api!(ordered impl[] CuckooTrie, iter);
orrery_core::index_api!(new impl[] CuckooTrie as "CuckooTrie", Config);
