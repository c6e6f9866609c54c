//! The memory manager of one arena: its superbins, its heap of extended blocks, its
//! readers' directory, and its accounting (the [module docs](super), "Accounting and
//! failure"). Allocation is `alloc.rs`, chains `chain.rs`, access `access.rs`.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::bins::{Bin, Caps, Metabin, Superbin};
use super::dirs::Dirs;
use super::heap::ExtHeap;
use super::hp::{BINS_PER_METABIN, EXT_CHUNK, Hp, STEP, SUPERBINS};

/// Statistics of the manager, for the memory breakdown (Fig 14/16).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MemStats {
    /// Allocated chunks, over all superbins 1..63.
    pub chunks: usize,
    /// Bytes of allocated chunks (at their chunk size).
    pub chunk_bytes: usize,
    /// Free chunks inside mapped bins (external fragmentation), in bytes.
    pub free_chunk_bytes: usize,
    /// Extended blocks and their bytes at capacity.
    pub extended: usize,
    /// Bytes of extended blocks at capacity.
    pub extended_bytes: usize,
    /// Bytes of metadata (bin maps, metabins, superbins).
    pub metadata_bytes: usize,
}

/// The memory manager of one arena.
pub(crate) struct MemoryManager {
    pub(super) superbins: Vec<Superbin>,
    /// Heap blocks of extended bins; shared with the retired blocks that the epoch
    /// collector frees later.
    pub(super) heap: Arc<ExtHeap>,
    /// The readers' directory of bin memory (see "Optimistic readers").
    pub(super) dirs: Arc<Dirs>,
    /// Bytes of the directory's tables.
    pub(super) dir_bytes: usize,
    /// Bytes of live extended heap blocks (at capacity).
    pub(super) ext_bytes: usize,
    /// Exact bytes held (see the module docs).
    pub(super) bytes: usize,
}

// SAFETY: the manager owns its mappings and heap blocks exclusively (raw pointers inside
// are only reached through `&self`/`&mut self`); moving it to another thread moves that
// ownership.
unsafe impl Send for MemoryManager {}
// SAFETY: `&MemoryManager` only reads chunks (shared slices); writes need `&mut`.
unsafe impl Sync for MemoryManager {}

impl MemoryManager {
    /// An empty manager: maps nothing.
    pub(crate) fn new() -> MemoryManager {
        let superbins = (0..SUPERBINS)
            .map(|i| {
                let chunk_size = if i == 0 { EXT_CHUNK } else { i * STEP };
                Superbin {
                    chunk_size,
                    caps: Caps::new(chunk_size),
                    metabins: Vec::new(),
                    nonfull: BTreeSet::new(),
                    free_ids: BTreeSet::new(),
                    next_id: 0,
                }
            })
            .collect();
        MemoryManager {
            superbins,
            heap: Arc::new(ExtHeap::new()),
            dirs: Arc::new(Dirs::new()),
            dir_bytes: 0,
            ext_bytes: 0,
            bytes: SUPERBINS * std::mem::size_of::<Superbin>() + std::mem::size_of::<Dirs>(),
        }
    }

    /// Exact bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The readers' directory of this manager's bin memory.
    pub(crate) fn dirs(&self) -> Arc<Dirs> {
        Arc::clone(&self.dirs)
    }

    /// The chunk and fragmentation breakdown.
    pub(crate) fn stats(&self) -> MemStats {
        let mut st = MemStats {
            metadata_bytes: SUPERBINS * std::mem::size_of::<Superbin>(),
            ..MemStats::default()
        };
        for (i, s) in self.superbins.iter().enumerate() {
            for m in s.metabins.iter().flatten() {
                st.metadata_bytes += std::mem::size_of::<Metabin>()
                    + m.bins.capacity() * std::mem::size_of::<Option<Bin>>();
                for b in m.bins.iter().flatten() {
                    st.metadata_bytes += std::mem::size_of::<[u64; 64]>();
                    if i == 0 {
                        // Extended-bin chunks (eHPs) count as metadata.
                        st.metadata_bytes += b.mem.bytes();
                        st.extended += b.used as usize;
                    } else {
                        st.chunks += b.used as usize;
                        st.chunk_bytes += b.used as usize * s.chunk_size;
                        st.free_chunk_bytes += b.mem.bytes() - b.used as usize * s.chunk_size;
                    }
                }
            }
        }
        st.extended_bytes = self.ext_bytes;
        st.metadata_bytes += std::mem::size_of::<Dirs>() + self.dir_bytes;
        st
    }
}

impl Drop for MemoryManager {
    fn drop(&mut self) {
        // Extended blocks live on the heap: free them (bin mappings unmap themselves).
        let mut ext = Vec::new();
        if let Some(s) = self.superbins.first() {
            for (mi, m) in s.metabins.iter().enumerate() {
                let Some(m) = m else { continue };
                for (bi, b) in m.bins.iter().enumerate() {
                    let Some(b) = b else { continue };
                    for (w, word) in b.map.iter().enumerate() {
                        let mut word = *word;
                        while word != 0 {
                            let bit = word.trailing_zeros() as usize;
                            word &= word - 1;
                            ext.push(Hp::new(0, mi * BINS_PER_METABIN + bi, w * 64 + bit));
                        }
                    }
                }
            }
        }
        for hp in ext {
            self.free(hp);
        }
    }
}
