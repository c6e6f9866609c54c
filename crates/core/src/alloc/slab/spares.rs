//! [`Spares`]: the empty chunks a pool (or all the classes of a size-class pool) keeps
//! mapped instead of unmapping them at once, so that a pool whose size goes up and down
//! around a chunk boundary does not map, fault in and unmap a chunk each time.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::chunk::Chunk;
use crate::sync::SpinLock;

/// Empty chunks kept for reuse by default: one (2 MiB) per [`Spares`].
pub(in crate::alloc) const DEFAULT_SPARE_CHUNKS: usize = 1;

/// A bounded stack of empty chunks (reset: nothing carved; the pages they gave back while
/// they drained stay given back), shared by the pools that hold it. Its lock is taken under
/// a pool's depot lock and nothing is taken under it (lock order depot → spares); chunks
/// are unmapped outside it.
pub(in crate::alloc) struct Spares {
    cap: usize,
    chunks: SpinLock<Vec<Chunk>>,
    /// The bytes the chunks hold (less the pages given back), readable without the lock.
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
    pub(in crate::alloc) fn take(&self) -> Option<Chunk> {
        let chunk = self.chunks.lock().pop();
        if let Some(c) = &chunk {
            self.bytes.fetch_sub(c.held_bytes(), Ordering::Relaxed);
        }
        chunk
    }

    /// Keeps the empty, reset `chunk` if there is room; otherwise hands it back (the caller
    /// unmaps it).
    pub(in crate::alloc) fn keep(&self, chunk: Chunk) -> Option<Chunk> {
        let mut chunks = self.chunks.lock();
        if chunks.len() >= self.cap {
            return Some(chunk);
        }
        self.bytes.fetch_add(chunk.held_bytes(), Ordering::Relaxed);
        chunks.push(chunk);
        None
    }

    /// Bytes of the chunks kept.
    pub(in crate::alloc) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }
}
