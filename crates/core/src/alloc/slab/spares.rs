//! [`Spares`]: the empty chunks a pool (or all the classes of a size-class pool) keeps
//! mapped instead of unmapping them at once, so that a pool whose size goes up and down
//! around a chunk boundary does not map, fault in and unmap a chunk each time.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::super::region::HugeRegion;
use super::CHUNK_SIZE;
use crate::sync::SpinLock;

/// Empty chunks kept for reuse by default: one (2 MiB) per [`Spares`].
pub(in crate::alloc) const DEFAULT_SPARE_CHUNKS: usize = 1;

/// A bounded stack of whole, empty chunks (none of their pages given back), shared by the
/// pools that hold it. Its lock is taken under a pool's depot lock and nothing is taken
/// under it (lock order depot → spares); chunks are unmapped outside it.
pub(in crate::alloc) struct Spares {
    cap: usize,
    chunks: SpinLock<Vec<HugeRegion>>,
    /// `chunks.len() * CHUNK_SIZE`, readable without the lock.
    bytes: AtomicUsize,
}

impl Spares {
    /// Room for `cap` chunks.
    pub(in crate::alloc) fn new(cap: usize) -> Spares {
        Spares {
            cap,
            chunks: SpinLock::new(Vec::new()),
            bytes: AtomicUsize::new(0),
        }
    }

    /// A kept chunk, if there is one.
    pub(in crate::alloc) fn take(&self) -> Option<HugeRegion> {
        let chunk = self.chunks.lock().pop();
        if chunk.is_some() {
            self.bytes.fetch_sub(CHUNK_SIZE, Ordering::Relaxed);
        }
        chunk
    }

    /// Keeps `chunk` if there is room; otherwise hands it back (the caller unmaps it).
    pub(in crate::alloc) fn keep(&self, chunk: HugeRegion) -> Option<HugeRegion> {
        let mut chunks = self.chunks.lock();
        if chunks.len() >= self.cap {
            return Some(chunk);
        }
        chunks.push(chunk);
        self.bytes.fetch_add(CHUNK_SIZE, Ordering::Relaxed);
        None
    }

    /// Bytes of the chunks kept.
    pub(in crate::alloc) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }
}
