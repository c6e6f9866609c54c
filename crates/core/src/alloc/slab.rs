//! [`SlabPool`]: fixed-size objects carved from 2 MiB chunks, with per-thread magazines.

use std::cell::RefCell;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

mod chunk;
mod depot;
mod magazine;
mod spares;

use super::MemCounter;
use super::populate::Populator;
use super::region::HUGE_PAGE_SIZE;
use crate::api::Error;
use crate::sync::SpinLock;
use chunk::Geometry;
use depot::{Backing, Depot, LiveCell, Slots};
use magazine::{Magazine, Run};
pub(in crate::alloc) use spares::{DEFAULT_SPARE_CHUNKS, Spares};

/// Size of the chunks a [`SlabPool`] takes from the OS: one huge page, 2 MiB.
pub const CHUNK_SIZE: usize = HUGE_PAGE_SIZE;

/// Largest object (and alignment) a [`SlabPool`] serves: 64 KiB.
pub const MAX_OBJECT_SIZE: usize = 64 * 1024;

/// Smallest slot: a free slot holds the link to the next free slot in its first word.
const MIN_SLOT: usize = std::mem::size_of::<*mut u8>();

/// Bytes a magazine aims to hold; its capacity in objects is this over the slot size,
/// clamped to `MIN_MAGAZINE..=MAX_MAGAZINE`.
const MAGAZINE_BYTES: usize = 64 * 1024;
const MIN_MAGAZINE: usize = 2;
/// Under Miri, tiny magazines so that every refill/flush path runs in small tests.
const MAX_MAGAZINE: usize = if cfg!(miri) { 4 } else { 64 };

/// Source of pool ids: never reused, so a thread cache entry of a dropped pool can never be
/// mistaken for a live pool's.
static NEXT_POOL_ID: AtomicU64 = AtomicU64::new(1);

/// A [`SlabPool`] configuration that cannot be served.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlabError {
    /// The object size exceeds [`MAX_OBJECT_SIZE`].
    ObjectTooLarge {
        /// Requested object size in bytes.
        size: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The alignment is not a power of two, or exceeds [`MAX_OBJECT_SIZE`].
    InvalidAlign {
        /// Requested alignment.
        align: usize,
    },
    /// A [`SizeClassPool`](super::SizeClassPool)'s class sizes are not strictly ascending
    /// positive multiples of its alignment (or there are none, or too many).
    InvalidClasses,
}

impl fmt::Display for SlabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlabError::ObjectTooLarge { size, max } => {
                write!(
                    f,
                    "slab object of {size} bytes exceeds the limit of {max} bytes"
                )
            }
            SlabError::InvalidAlign { align } => write!(
                f,
                "slab alignment {align} is not a power of two up to {MAX_OBJECT_SIZE}"
            ),
            SlabError::InvalidClasses => f.write_str(
                "size classes must be strictly ascending positive multiples of the alignment",
            ),
        }
    }
}

impl std::error::Error for SlabError {}

/// A fixed-size object allocator: slots of one size and alignment carved from 2 MiB
/// huge-page chunks ([`HugeRegion`](crate::alloc::HugeRegion)s), reused after [`free`](Self::free), and given back to
/// the OS when they empty or drain (see [Giving memory back](Self#giving-memory-back)).
///
/// # Design
///
/// Objects are *slots* of `slot_size()` bytes: the object size rounded up to at least 8
/// bytes and to a multiple of the alignment (at least 8), laid back to back in each chunk
/// (chunks are 2 MiB-aligned, so every slot is aligned). A free slot stores the address of
/// the next free slot in its first word, so free lists cost no memory of their own.
///
/// The layers, after Bonwick and Adams' magazine allocator:
///
/// 1. **Thread cache** (no lock): each thread has, for each pool it used, an entry in a
///    thread-local table (found by the pool's id, which is never reused) holding two
///    *magazines* (singly linked lists of at most `C` free slots: `loaded` and `previous`)
///    and a *run* (a range of never-used slots it bump-allocates from). `C` is about 64 KiB
///    worth of slots, between 2 and 64 (4 under Miri).
///    - `alloc`: pop from `loaded`; else swap in `previous` if it has slots; else take the
///      next slot of the run; else go to the depot.
///    - `free`: push onto `loaded`; if it is full and `previous` is empty, swap them first;
///      if both are full, give `previous` to the depot and make `loaded` the new
///      `previous`.
///
///    So a thread goes to the depot at most once per `C` operations, whatever its mix of
///    allocations and frees.
/// 2. **Depot** (the pool's [`SpinLock`]): a stack of non-empty magazines, runs returned by
///    exited threads, the current chunk's unused tail, and the chunk list. A thread that
///    needs slots takes a whole magazine, or else a run of up to `C` never-used slots cut
///    from the chunk (mapping a new chunk if the current one is used up; that rare `mmap`
///    happens under the lock).
///
/// The price of the thread caches: each thread may hold up to `3 C` free slots of a pool
/// (two magazines and a run: at most about 192 KiB, or 384 KiB for objects over 32 KiB,
/// where `C` = 2) that other threads cannot use until it exits.
///
/// When a thread exits, its cache entries give their magazines and runs back to the
/// depot (if the pool is still alive). The thread cache holds only a `Weak` reference to the
/// pool's shared part: a dropped pool's entries are never dereferenced, just discarded the
/// next time that thread meets a new pool. A `free` (or `alloc`) made when the thread-local
/// table is unavailable — in another thread-local's destructor at thread exit, for example
/// an epoch collector flushing deferred frees — goes straight to the depot under the lock.
///
/// # Giving memory back
///
/// Freed slots go back to the OS in three ways, each bounded so that churn does not make
/// the pool give back and fault in the same memory over and over:
///
/// - **Empty chunks.** A chunk whose last slot is sorted back into it leaves the pool: kept
///   as a spare for the next chunk the pool needs (one per pool, or per size-class pool,
///   by default), else unmapped.
/// - **The pool mostly free.** When more than half of the bytes the pool holds are free
///   slots still resident, and at least a chunk (or an eighth of the pool) was freed since
///   the last pass, the whole pages of free slots of every chunk are given back
///   (`madvise(MADV_DONTNEED)`). A pool whose use goes up and down by less than half keeps
///   its pages; the passes cost O(1) per freed byte.
/// - **A chunk drained.** A chunk that was at least half in use and drains below a quarter
///   gives its free pages back, and again at each halving of its use (an eighth, a
///   sixteenth, …); it re-arms only once half in use again. Allocation takes the lowest
///   chunk with room first, so the high chunks are the ones that drain.
///
/// Memory that live objects pin can only come back if the pool's user moves them
/// (*moving objects*): [`try_alloc_lower`](Self::try_alloc_lower) hands out a slot in the
/// lowest chunk with room for an object that sits in a chunk less than a quarter in use,
/// or anywhere above it while more than an eighth of the pool's chunks are free slots, so
/// that the holes move up, the high chunks drain and go back by the rules above.
///
/// A page is given back only when every slot on it is sorted back into its chunk: slots in
/// a thread's cache or in a magazine of the depot's stash count as in use. The stash keeps
/// the last 16 magazines freed, sorting its oldest back into its chunks when a new one
/// comes in. A slot on a page given back reads zero when reused.
/// Memory that live slots pin stays: after removing 90% of a structure's objects at random,
/// most pages still hold a survivor, unless the user moves them (above).
///
/// # Accounting
///
/// [`reserved_bytes`](Self::reserved_bytes) counts chunks (2 MiB each) taken from the OS.
/// [`live_bytes`](Self::live_bytes) counts slots allocated and not freed. To keep the hot
/// path free of shared writes, each thread counts its own allocations minus frees in a
/// padded cell only it writes; the pool sums the cells (and the totals of exited threads)
/// under its lock. The sum is exact when every allocation and free happened-before the call
/// (e.g. the threads were joined), and a recent value otherwise. A pool made with [`with_counter`](Self::with_counter) also adds each
/// chunk to the caller's [`MemCounter`], and subtracts them all when dropped.
pub struct SlabPool {
    shared: Arc<Shared>,
}

/// The part of a pool that thread caches refer to (weakly).
struct Shared {
    /// Unique, never reused: the key of this pool's thread cache entries.
    id: u64,
    /// Object size asked for.
    size: usize,
    /// Alignment asked for.
    align: usize,
    /// Slot size: `size` rounded up to `max(align, MIN_SLOT)`, at least `MIN_SLOT`
    /// (`backing.geo.slot`, repeated here for the hot path).
    slot: usize,
    /// Chunk shape, magazine size, chunk sources and counters.
    backing: Backing,
    depot: SpinLock<Depot>,
}

/// One thread's cache for one pool.
struct Entry {
    /// The pool's id.
    id: u64,
    /// The pool's shared part; dead once the pool is dropped.
    pool: Weak<Shared>,
    loaded: Magazine,
    previous: Magazine,
    run: Run,
    live: Arc<LiveCell>,
}

impl Entry {
    /// Allocates a slot. `pool` is this entry's pool.
    #[inline]
    fn alloc(&mut self, pool: &Shared) -> Result<NonNull<u8>, Error> {
        let slot = if self.loaded.count > 0 {
            // SAFETY: (1) non-empty; (2) the entry's magazines hold free slots of `pool`,
            // alive while `&Shared` is borrowed, owned by this thread's cache.
            unsafe { self.loaded.pop() }
        } else if self.previous.count > 0 {
            std::mem::swap(&mut self.loaded, &mut self.previous);
            // SAFETY: as above; `loaded` is now the non-empty former `previous`.
            unsafe { self.loaded.pop() }
        } else if let Some(slot) = self.run.take(pool.slot) {
            slot
        } else {
            self.refill(pool)?
        };
        self.live.bump(1);
        Ok(slot)
    }

    /// Both magazines and the run are empty: take a magazine from the depot, or a new run.
    #[cold]
    fn refill(&mut self, pool: &Shared) -> Result<NonNull<u8>, Error> {
        let slots = pool.depot.lock().take(&pool.backing)?;
        match slots {
            Slots::Magazine(magazine) => {
                self.loaded = magazine;
                // SAFETY: (1) the depot hands out non-empty magazines; (2) they hold free
                // slots of `pool` (alive), now owned by this thread's cache.
                Ok(unsafe { self.loaded.pop() })
            }
            Slots::Run(run) => {
                self.run = run;
                self.run.take(pool.slot).ok_or(Error::OutOfMemory)
            }
        }
    }

    /// Frees a slot into this thread's magazines.
    ///
    /// # Safety
    ///
    /// As [`SlabPool::free`], for `pool`, this entry's pool.
    #[inline]
    unsafe fn free(&mut self, pool: &Shared, slot: NonNull<u8>) {
        if self.loaded.count >= pool.backing.magazine {
            if self.previous.count == 0 {
                std::mem::swap(&mut self.loaded, &mut self.previous);
            } else {
                self.flush(pool);
            }
        }
        // SAFETY: by the caller's contract `slot` is a slot of `pool` (alive) that nobody uses
        // any more; `loaded` now has room.
        unsafe { self.loaded.push(slot) };
        self.live.bump(-1);
    }

    /// Both magazines are full: `previous` goes to the depot, `loaded` becomes `previous`.
    #[cold]
    fn flush(&mut self, pool: &Shared) {
        pool.depot.lock().put_magazine(&pool.backing, self.previous);
        self.previous = self.loaded;
        self.loaded = Magazine::EMPTY;
    }

    /// Gives everything back to the depot of `pool` (this entry's pool): at thread exit.
    fn retire(&mut self, pool: &Shared) {
        let mut depot = pool.depot.lock();
        for magazine in [self.loaded, self.previous] {
            depot.put_magazine(&pool.backing, magazine);
        }
        depot.put_run(&pool.backing, self.run);
        (self.loaded, self.previous, self.run) = (Magazine::EMPTY, Magazine::EMPTY, Run::EMPTY);
        depot.orphan_live += self.live.get();
        depot.live_cells.retain(|c| !Arc::ptr_eq(c, &self.live));
    }
}

/// A thread's cache entries, one per pool it used.
struct ThreadCaches {
    entries: Vec<Entry>,
}

impl ThreadCaches {
    /// This thread's entry for `pool`, created on first use.
    #[inline]
    fn entry(&mut self, pool: &Arc<Shared>) -> &mut Entry {
        match self.entries.iter().position(|e| e.id == pool.id) {
            Some(i) => &mut self.entries[i],
            None => self.register(pool),
        }
    }

    #[cold]
    fn register(&mut self, pool: &Arc<Shared>) -> &mut Entry {
        // Entries of dropped pools are dead weight (their slots went with the chunks).
        self.entries.retain(|e| e.pool.strong_count() > 0);
        let live = Arc::new(LiveCell::default());
        pool.depot.lock().live_cells.push(Arc::clone(&live));
        self.entries.push(Entry {
            id: pool.id,
            pool: Arc::downgrade(pool),
            loaded: Magazine::EMPTY,
            previous: Magazine::EMPTY,
            run: Run::EMPTY,
            live,
        });
        let last = self.entries.len() - 1;
        &mut self.entries[last]
    }
}

impl Drop for ThreadCaches {
    fn drop(&mut self) {
        for entry in &mut self.entries {
            // The strong reference keeps the chunks mapped while the slots are handed back,
            // even if the pool is being dropped on another thread right now.
            if let Some(pool) = entry.pool.upgrade() {
                entry.retire(&pool);
            }
        }
    }
}

thread_local! {
    static CACHES: RefCell<ThreadCaches> = const {
        RefCell::new(ThreadCaches { entries: Vec::new() })
    };
}

impl Shared {
    /// `alloc` without a thread cache, under the lock.
    fn alloc_locked(&self) -> Result<NonNull<u8>, Error> {
        let mut depot = self.depot.lock();
        let slot = match depot.take(&self.backing)? {
            Slots::Magazine(mut magazine) => {
                // SAFETY: (1) the depot hands out non-empty magazines; (2) they hold free
                // slots of this pool (alive: `&self`), ours under the lock.
                let slot = unsafe { magazine.pop() };
                depot.put_magazine(&self.backing, magazine);
                slot
            }
            Slots::Run(mut run) => {
                let slot = run.take(self.slot).ok_or(Error::OutOfMemory)?;
                depot.put_run(&self.backing, run);
                slot
            }
        };
        depot.orphan_live += 1;
        Ok(slot)
    }

    /// `free` without a thread cache, under the lock.
    ///
    /// # Safety
    ///
    /// As [`SlabPool::free`].
    unsafe fn free_locked(&self, slot: NonNull<u8>) {
        let mut depot = self.depot.lock();
        depot.put_slot(&self.backing, slot);
        depot.orphan_live -= 1;
    }

    /// Whether `p` has the shape of one of this pool's slots (a debug check: the offset in
    /// its 2 MiB-aligned chunk is a whole number of slots).
    fn is_slot_shaped(&self, p: NonNull<u8>) -> bool {
        let offset = p.as_ptr() as usize % CHUNK_SIZE;
        offset.is_multiple_of(self.slot) && offset / self.slot < self.backing.geo.slots
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(counter) = &self.backing.external {
            counter.sub(self.backing.reserved.get());
        }
        // The chunks unmap when the depot drops, the spares when their last pool drops.
    }
}

impl SlabPool {
    /// A pool of objects of `size` bytes aligned to `align` (a power of two).
    ///
    /// Fails with [`SlabError`] when `align` is not a power of two up to
    /// [`MAX_OBJECT_SIZE`], or `size` exceeds [`MAX_OBJECT_SIZE`].
    pub fn new(size: usize, align: usize) -> Result<SlabPool, SlabError> {
        Self::build(size, align, None, None)
    }

    /// [`new`](Self::new), also charging every chunk the pool maps to `counter` (and
    /// subtracting them all when the pool is dropped).
    pub fn with_counter(
        size: usize,
        align: usize,
        counter: Arc<MemCounter>,
    ) -> Result<SlabPool, SlabError> {
        Self::build(size, align, Some(counter), None)
    }

    /// A pool for values of type `T` (its size and alignment).
    pub fn for_type<T>() -> Result<SlabPool, SlabError> {
        Self::new(std::mem::size_of::<T>(), std::mem::align_of::<T>())
    }

    /// A pool for a [`SizeClassPool`](super::SizeClassPool)'s class: its empty chunks go to
    /// `spares`, shared with the other classes.
    pub(in crate::alloc) fn with_spares(
        size: usize,
        align: usize,
        spares: Arc<Spares>,
    ) -> Result<SlabPool, SlabError> {
        Self::build(size, align, None, Some(spares))
    }

    fn build(
        size: usize,
        align: usize,
        external: Option<Arc<MemCounter>>,
        spares: Option<Arc<Spares>>,
    ) -> Result<SlabPool, SlabError> {
        if !align.is_power_of_two() || align > MAX_OBJECT_SIZE {
            return Err(SlabError::InvalidAlign { align });
        }
        if size > MAX_OBJECT_SIZE {
            return Err(SlabError::ObjectTooLarge {
                size,
                max: MAX_OBJECT_SIZE,
            });
        }
        let slot_align = align.max(MIN_SLOT);
        // At most MAX_OBJECT_SIZE: both `size` and `slot_align` are at most that power of two,
        // of which `slot_align` is a divisor.
        let slot = size.max(MIN_SLOT).next_multiple_of(slot_align);
        debug_assert!(slot <= MAX_OBJECT_SIZE);
        let magazine = (MAGAZINE_BYTES / slot).clamp(MIN_MAGAZINE, MAX_MAGAZINE);
        let shared = Shared {
            id: NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed),
            size,
            align,
            slot,
            backing: Backing {
                geo: Geometry {
                    slot,
                    slots: CHUNK_SIZE / slot,
                },
                magazine,
                reserved: MemCounter::new(),
                external,
                populator: OnceLock::new(),
                spares: spares.unwrap_or_else(|| Arc::new(Spares::new(DEFAULT_SPARE_CHUNKS))),
            },
            depot: SpinLock::new(Depot::new()),
        };
        Ok(SlabPool {
            shared: Arc::new(shared),
        })
    }

    /// Attaches the pool to `populator` (see [`Populator`]): from now on the pool takes its
    /// new chunks from the populator's reservoir of pre-faulted chunks when it holds one,
    /// and each new chunk wakes (or, past its threshold, starts) the populator's thread.
    /// The pool keeps working unchanged after the populator is dropped.
    ///
    /// Returns `false` (and changes nothing) if the pool was attached already.
    pub fn attach(&self, populator: &Populator) -> bool {
        self.shared
            .backing
            .populator
            .set(Arc::clone(populator.reservoir()))
            .is_ok()
    }

    /// Allocates one object: `slot_size()` bytes aligned to `align()`, uninitialized (treat
    /// it as `MaybeUninit`; it may hold a previous object's bytes). Valid until it is passed
    /// to [`free`](Self::free) or the pool is dropped.
    ///
    /// Fails with [`Error::OutOfMemory`] only when a new chunk is needed and the OS refuses
    /// it.
    #[inline]
    pub fn try_alloc(&self) -> Result<NonNull<u8>, Error> {
        if super::fail_here() {
            return Err(Error::OutOfMemory);
        }
        let pool = &self.shared;
        let cached = CACHES.try_with(|caches| {
            let mut caches = caches.try_borrow_mut().ok()?;
            Some(caches.entry(pool).alloc(pool))
        });
        match cached {
            Ok(Some(result)) => result,
            // No thread cache (thread-local destroyed at thread exit, or re-entered).
            _ => pool.alloc_locked(),
        }
    }

    /// A slot to move the live object at `p` (a slot of this pool) to, when that would
    /// let memory go back: if `p`'s chunk has fewer than a quarter of its slots in use, or
    /// more than an eighth of the pool's chunks are free slots (holes that pin pages), and
    /// a chunk at a lower address has room, one slot of the lowest such chunk, allocated
    /// (free it with [`free`](Self::free)); else `None`. The caller copies the object and
    /// frees `p` (see [Giving memory back](Self#giving-memory-back)).
    ///
    /// Each move takes an object to a lower address, so moves cannot go round in
    /// circles: between other allocations, a pool sees at most one move per object and
    /// chunk below it. Takes the pool's lock and bypasses the thread caches: for
    /// occasional moves, not for the hot path. Maps no chunk.
    pub fn try_alloc_lower(&self, p: NonNull<u8>) -> Option<NonNull<u8>> {
        if super::fail_here() {
            return None;
        }
        let pool = &self.shared;
        debug_assert!(pool.is_slot_shaped(p), "a pointer not from this pool");
        pool.depot.lock().take_lower(&pool.backing, p)
    }

    /// [`try_alloc`](Self::try_alloc), calling [`std::alloc::handle_alloc_error`] (which
    /// aborts) when the OS refuses memory, like `Box::new`.
    #[inline]
    pub fn alloc(&self) -> NonNull<u8> {
        match self.try_alloc() {
            Ok(p) => p,
            Err(_) => std::alloc::handle_alloc_error(self.layout()),
        }
    }

    /// Returns an object to the pool for reuse.
    ///
    /// # Safety
    ///
    /// 1. `ptr` was returned by [`alloc`](Self::alloc) / [`try_alloc`](Self::try_alloc) of
    ///    *this* pool and has not been freed since.
    /// 2. Nobody uses the object after this call (readers that may still hold it must be
    ///    waited out first, e.g. by deferring the `free` through `sync::Guard::defer_unchecked`).
    #[inline]
    pub unsafe fn free(&self, ptr: NonNull<u8>) {
        let pool = &self.shared;
        debug_assert!(
            pool.is_slot_shaped(ptr),
            "free of a pointer not from this pool"
        );
        let cached = CACHES.try_with(|caches| {
            let Ok(mut caches) = caches.try_borrow_mut() else {
                return false;
            };
            // SAFETY: the caller's contract (1)–(2), for this entry's pool.
            unsafe { caches.entry(pool).free(pool, ptr) };
            true
        });
        if cached != Ok(true) {
            // SAFETY: the caller's contract.
            unsafe { pool.free_locked(ptr) };
        }
    }

    /// The object size asked for.
    pub fn object_size(&self) -> usize {
        self.shared.size
    }

    /// The alignment asked for.
    pub fn align(&self) -> usize {
        self.shared.align
    }

    /// Bytes per object actually used: the size rounded up to at least 8 bytes and to a
    /// multiple of `max(align, 8)`. Every object is valid for this many bytes.
    pub fn slot_size(&self) -> usize {
        self.shared.slot
    }

    /// The layout of one slot (`slot_size()`, `max(align, 8)`).
    pub fn layout(&self) -> std::alloc::Layout {
        let align = self.shared.align.max(MIN_SLOT);
        std::alloc::Layout::from_size_align(self.shared.slot, align)
            .unwrap_or(std::alloc::Layout::new::<u64>())
    }

    /// Bytes taken from the OS and not given back: [`CHUNK_SIZE`] per chunk the pool holds
    /// less the pages it gave back, plus the empty chunks it keeps for reuse (see
    /// [giving memory back](Self#giving-memory-back); for a class of a
    /// [`SizeClassPool`](super::SizeClassPool) the kept chunks are the size-class pool's).
    pub fn reserved_bytes(&self) -> usize {
        self.chunk_bytes() + self.shared.backing.spares.bytes()
    }

    /// Bytes of the chunks the pool holds, less the pages given back (without the kept
    /// empty chunks).
    pub(in crate::alloc) fn chunk_bytes(&self) -> usize {
        self.shared.backing.reserved.get()
    }

    /// Chunks the pool holds (without the kept empty ones).
    pub fn chunks(&self) -> usize {
        self.shared.depot.lock().chunk_count()
    }

    /// Objects allocated and not yet freed (exact when no thread allocates or frees
    /// concurrently; see the [type docs](Self#accounting)).
    pub fn live_objects(&self) -> usize {
        let depot = self.shared.depot.lock();
        let sum = depot
            .live_cells
            .iter()
            .fold(depot.orphan_live, |acc, c| acc.wrapping_add(c.get()));
        // Racing threads can make the sum transiently negative (a free counted before the
        // allocation on another thread's cell was observed).
        usize::try_from(sum).unwrap_or(0)
    }

    /// Bytes of live objects: [`live_objects`](Self::live_objects) times
    /// [`slot_size`](Self::slot_size).
    pub fn live_bytes(&self) -> usize {
        self.live_objects() * self.shared.slot
    }
}

impl fmt::Debug for SlabPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SlabPool")
            .field("object_size", &self.shared.size)
            .field("align", &self.shared.align)
            .field("slot_size", &self.shared.slot)
            .field("chunks", &self.chunks())
            .field("reserved_bytes", &self.reserved_bytes())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
