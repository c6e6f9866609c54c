use std::collections::HashSet;
use std::sync::atomic::AtomicUsize;
use std::sync::{Barrier, Mutex, mpsc};

use super::*;
use crate::alloc::PAGE_SIZE;

/// A slot address that may cross threads in tests (the pool's contract makes that sound:
/// the receiving thread owns the object from then on).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
struct Obj(NonNull<u8>);
// SAFETY: test objects are handed between threads through channels (which order the
// accesses); only the holder touches one.
unsafe impl Send for Obj {}

/// Fills the whole slot with the 8-byte `tag`.
fn fill(p: NonNull<u8>, slot: usize, tag: u64) {
    for i in 0..slot / 8 {
        // SAFETY: `p` is a live object of `slot` bytes owned by the caller, 8-aligned.
        unsafe { p.as_ptr().cast::<u64>().wrapping_add(i).write(tag) };
    }
}

/// Whether the whole slot still holds `tag` (no other object overlapped and wrote it).
fn holds(p: NonNull<u8>, slot: usize, tag: u64) -> bool {
    (0..slot / 8).all(|i| {
        // SAFETY: as in `fill`; the slot was filled (initialized) by `fill`.
        unsafe { p.as_ptr().cast::<u64>().wrapping_add(i).read() == tag }
    })
}

/// Sorted addresses are at least a slot apart.
fn assert_disjoint(objs: &mut [usize], slot: usize) {
    objs.sort_unstable();
    for w in objs.windows(2) {
        assert!(
            w[0] + slot <= w[1],
            "objects {:#x} and {:#x} overlap",
            w[0],
            w[1]
        );
    }
}

#[test]
fn alloc_slab_config() {
    let slot = |size, align| SlabPool::new(size, align).map(|p| p.slot_size());
    assert_eq!(slot(0, 1), Ok(8));
    assert_eq!(slot(1, 1), Ok(8));
    assert_eq!(slot(9, 1), Ok(16));
    assert_eq!(slot(24, 8), Ok(24));
    assert_eq!(slot(24, 16), Ok(32));
    assert_eq!(slot(100, 64), Ok(128));
    assert_eq!(slot(MAX_OBJECT_SIZE, 1), Ok(MAX_OBJECT_SIZE));
    assert_eq!(slot(MAX_OBJECT_SIZE, MAX_OBJECT_SIZE), Ok(MAX_OBJECT_SIZE));
    assert_eq!(slot(65_530, 4096), Ok(MAX_OBJECT_SIZE));
    assert_eq!(
        slot(MAX_OBJECT_SIZE + 1, 8),
        Err(SlabError::ObjectTooLarge {
            size: MAX_OBJECT_SIZE + 1,
            max: MAX_OBJECT_SIZE
        })
    );
    assert_eq!(slot(40_000, 32_768), Ok(MAX_OBJECT_SIZE));
    assert_eq!(slot(8, 0), Err(SlabError::InvalidAlign { align: 0 }));
    assert_eq!(slot(8, 24), Err(SlabError::InvalidAlign { align: 24 }));
    assert_eq!(
        slot(8, 2 * MAX_OBJECT_SIZE),
        Err(SlabError::InvalidAlign {
            align: 2 * MAX_OBJECT_SIZE
        })
    );
    assert!(
        SlabError::InvalidAlign { align: 3 }
            .to_string()
            .contains("power of two")
    );
    let p = SlabPool::for_type::<[u64; 5]>().unwrap();
    assert_eq!((p.object_size(), p.align(), p.slot_size()), (40, 8, 40));
    assert_eq!(
        p.layout(),
        std::alloc::Layout::from_size_align(40, 8).unwrap()
    );
    assert!(format!("{p:?}").contains("slot_size: 40"));
    assert_eq!((p.reserved_bytes(), p.live_bytes()), (0, 0));
}

#[test]
fn alloc_slab_single_thread_reuse_and_counters() {
    let pool = SlabPool::new(48, 16).unwrap();
    let slot = pool.slot_size();
    assert_eq!(slot, 48);
    let n = if cfg!(miri) { 60 } else { 100_000 };
    let objs: Vec<NonNull<u8>> = (0..n).map(|_| pool.alloc()).collect();
    for (i, &p) in objs.iter().enumerate() {
        assert_eq!(p.as_ptr() as usize % 16, 0);
        fill(p, slot, i as u64);
    }
    let mut addrs: Vec<usize> = objs.iter().map(|p| p.as_ptr() as usize).collect();
    assert_disjoint(&mut addrs, slot);
    assert_eq!(pool.live_objects(), n);
    assert_eq!(pool.live_bytes(), n * slot);
    let chunk_slots = CHUNK_SIZE / slot;
    assert_eq!(pool.reserved_bytes(), n.div_ceil(chunk_slots) * CHUNK_SIZE);
    assert!(
        objs.iter()
            .enumerate()
            .all(|(i, &p)| holds(p, slot, i as u64))
    );

    // Free every other object, allocate as many again: all reused, no new chunk.
    let reserved = pool.reserved_bytes();
    let mut freed = HashSet::new();
    for (i, &p) in objs.iter().enumerate().filter(|(i, _)| i % 2 == 0) {
        assert!(holds(p, slot, i as u64));
        freed.insert(p);
        // SAFETY: allocated from `pool`, freed once, not used again.
        unsafe { pool.free(p) };
    }
    assert_eq!(pool.live_objects(), n - freed.len());
    let again: Vec<NonNull<u8>> = (0..freed.len()).map(|_| pool.alloc()).collect();
    // All reused, except at most the rest of the thread's current run of never-used slots.
    let fresh = again.iter().filter(|p| !freed.contains(p)).count();
    assert!(
        fresh <= MAX_MAGAZINE,
        "{fresh} new slots used instead of freed ones"
    );
    assert_eq!(again.iter().collect::<HashSet<_>>().len(), again.len());
    assert_eq!(pool.reserved_bytes(), reserved);
    // The odd objects were untouched by all this.
    for (i, &p) in objs.iter().enumerate().filter(|(i, _)| i % 2 == 1) {
        assert!(holds(p, slot, i as u64));
        // SAFETY: allocated from `pool`, freed once.
        unsafe { pool.free(p) };
    }
    for p in again {
        // SAFETY: allocated from `pool`, freed once.
        unsafe { pool.free(p) };
    }
    assert_eq!(pool.live_objects(), 0);
    // Chunks emptied by the frees may have gone back to the OS.
    assert!(pool.reserved_bytes() <= reserved);
}

#[test]
fn alloc_slab_large_objects_span_chunks() {
    let pool = SlabPool::new(MAX_OBJECT_SIZE, 4096).unwrap();
    let per_chunk = CHUNK_SIZE / MAX_OBJECT_SIZE;
    let n = per_chunk + 3;
    let objs: Vec<NonNull<u8>> = (0..n).map(|_| pool.try_alloc().unwrap()).collect();
    assert_eq!(pool.reserved_bytes(), 2 * CHUNK_SIZE);
    for (i, &p) in objs.iter().enumerate() {
        assert_eq!(p.as_ptr() as usize % 4096, 0);
        // Write the first and last words (the whole 64 KiB is slow under Miri).
        // SAFETY: live object of MAX_OBJECT_SIZE bytes, 4096-aligned, owned here.
        unsafe { p.as_ptr().cast::<u64>().write(i as u64) };
        // SAFETY: as above; the last word is inside the object.
        unsafe {
            p.as_ptr()
                .wrapping_add(MAX_OBJECT_SIZE - 8)
                .cast::<u64>()
                .write(!(i as u64))
        };
    }
    let mut addrs: Vec<usize> = objs.iter().map(|p| p.as_ptr() as usize).collect();
    assert_disjoint(&mut addrs, MAX_OBJECT_SIZE);
    for (i, &p) in objs.iter().enumerate() {
        // SAFETY: written above.
        assert_eq!(unsafe { p.as_ptr().cast::<u64>().read() }, i as u64);
        // SAFETY: written above.
        let last = unsafe {
            p.as_ptr()
                .wrapping_add(MAX_OBJECT_SIZE - 8)
                .cast::<u64>()
                .read()
        };
        assert_eq!(last, !(i as u64));
        // SAFETY: allocated from `pool`, freed once.
        unsafe { pool.free(p) };
    }
    let again: Vec<NonNull<u8>> = (0..n).map(|_| pool.alloc()).collect();
    assert_eq!(
        pool.reserved_bytes(),
        2 * CHUNK_SIZE,
        "freed objects were not reused"
    );
    for p in again {
        // SAFETY: allocated from `pool`, freed once.
        unsafe { pool.free(p) };
    }
}

#[test]
fn alloc_slab_locked_path_mixes_with_caches() {
    let pool = SlabPool::new(16, 8).unwrap();
    let n = if cfg!(miri) { 20 } else { 1000 };
    // Lock-path allocations, cached frees, and the reverse.
    let a: Vec<NonNull<u8>> = (0..n)
        .map(|_| pool.shared.alloc_locked().unwrap())
        .collect();
    let b: Vec<NonNull<u8>> = (0..n).map(|_| pool.alloc()).collect();
    let mut all: Vec<usize> = a.iter().chain(&b).map(|p| p.as_ptr() as usize).collect();
    assert_disjoint(&mut all, 16);
    assert_eq!(pool.live_objects(), 2 * n);
    for (&x, &y) in a.iter().zip(&b) {
        fill(x, 16, 1);
        fill(y, 16, 2);
        // SAFETY: allocated from `pool`, freed once, not used again.
        unsafe { pool.free(x) };
        // SAFETY: as above.
        unsafe { pool.shared.free_locked(y) };
    }
    assert_eq!(pool.live_objects(), 0);
    let reserved = pool.reserved_bytes();
    let c: Vec<NonNull<u8>> = (0..n)
        .map(|_| pool.shared.alloc_locked().unwrap())
        .collect();
    let d: Vec<NonNull<u8>> = (0..n).map(|_| pool.alloc()).collect();
    let mut all: Vec<usize> = c.iter().chain(&d).map(|p| p.as_ptr() as usize).collect();
    assert_disjoint(&mut all, 16);
    assert_eq!(pool.reserved_bytes(), reserved);
    for p in c.into_iter().chain(d) {
        // SAFETY: allocated from `pool`, freed once.
        unsafe { pool.free(p) };
    }
    assert_eq!(pool.live_objects(), 0);
}

#[test]
fn alloc_slab_thread_exit_returns_its_cache() {
    let pool = SlabPool::new(64, 8).unwrap();
    let n = if cfg!(miri) { 30 } else { 5000 };
    let kept = std::thread::scope(|s| {
        s.spawn(|| {
            let objs: Vec<NonNull<u8>> = (0..n).map(|_| pool.alloc()).collect();
            for &p in &objs[1..] {
                // SAFETY: allocated from `pool`, freed once.
                unsafe { pool.free(p) };
            }
            // Its magazines and run now hold slots; they go back to the depot at exit.
            Obj(objs[0])
        })
        .join()
        .unwrap()
    });
    assert_eq!(pool.live_objects(), 1, "the exited thread's count was lost");
    let reserved = pool.reserved_bytes();
    // Everything the thread cached is reusable here: n - 1 allocations need no new chunk.
    let objs: Vec<NonNull<u8>> = (0..n - 1).map(|_| pool.alloc()).collect();
    assert_eq!(pool.reserved_bytes(), reserved);
    assert!(!objs.contains(&kept.0));
    assert_eq!(pool.live_objects(), n);
    for p in objs.into_iter().chain([kept.0]) {
        // SAFETY: allocated from `pool`, freed once.
        unsafe { pool.free(p) };
    }
    assert_eq!(pool.live_objects(), 0);
}

#[test]
fn alloc_slab_pool_dropped_while_thread_caches_refer_to_it() {
    let counter = Arc::new(MemCounter::new());
    let a = SlabPool::with_counter(32, 8, Arc::clone(&counter)).unwrap();
    let (to_worker, from_main) = mpsc::channel::<Option<SlabPool>>();
    let (to_main, from_worker) = mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        let a = from_main.recv().unwrap().unwrap();
        let objs: Vec<NonNull<u8>> = (0..10).map(|_| a.alloc()).collect();
        for p in objs {
            // SAFETY: allocated from `a`, freed once.
            unsafe { a.free(p) };
        }
        // This thread's cache holds slots of `a`; `a` is dropped here, the entry stays.
        drop(a);
        to_main.send(()).unwrap();
        // A new pool on this thread: registering it discards the dead entry.
        assert!(from_main.recv().unwrap().is_none());
        let b = SlabPool::new(32, 8).unwrap();
        let objs: Vec<NonNull<u8>> = (0..10).map(|_| b.alloc()).collect();
        assert_eq!(b.live_objects(), 10);
        for p in objs {
            // SAFETY: allocated from `b`, freed once.
            unsafe { b.free(p) };
        }
        assert_eq!(b.live_objects(), 0);
        // Thread exit with an entry of the live `b` (returned) just before `b` drops here
        // and, on the main thread, entries of the dead `a` (skipped).
    });
    // The main thread caches slots of `a` too.
    let p = a.alloc();
    // SAFETY: allocated from `a`, freed once.
    unsafe { a.free(p) };
    assert_eq!(counter.get(), CHUNK_SIZE);
    to_worker.send(Some(a)).unwrap();
    from_worker.recv().unwrap();
    assert_eq!(
        counter.get(),
        0,
        "the dropped pool's chunk was not returned"
    );
    to_worker.send(None).unwrap();
    worker.join().unwrap();
    // The main thread's dead entry of `a` is discarded when it meets a new pool.
    let c = SlabPool::new(8, 8).unwrap();
    let p = c.alloc();
    // SAFETY: allocated from `c`, freed once.
    unsafe { c.free(p) };
    CACHES.with(|caches| {
        let caches = caches.borrow();
        assert!(caches.entries.iter().all(|e| e.pool.strong_count() > 0));
    });
}

#[test]
fn alloc_slab_free_from_another_thread_local_destructor() {
    // A thread-local whose destructor frees objects: it may run before or after the pool's
    // thread cache is destroyed; either way the frees must land.
    struct FreeOnExit(Option<(Arc<SlabPool>, Vec<Obj>)>);
    impl Drop for FreeOnExit {
        fn drop(&mut self) {
            if let Some((pool, objs)) = self.0.take() {
                for o in objs {
                    // SAFETY: allocated from `pool`, freed once.
                    unsafe { pool.free(o.0) };
                }
                // Allocating at this point works as well.
                let p = pool.alloc();
                // SAFETY: allocated from `pool`, freed once.
                unsafe { pool.free(p) };
            }
        }
    }
    thread_local! {
        static PENDING: RefCell<FreeOnExit> = const { RefCell::new(FreeOnExit(None)) };
    }
    let pool = Arc::new(SlabPool::new(24, 8).unwrap());
    for _ in 0..2 {
        let pool2 = Arc::clone(&pool);
        std::thread::spawn(move || {
            let objs: Vec<Obj> = (0..9).map(|_| Obj(pool2.alloc())).collect();
            PENDING.with(|p| p.borrow_mut().0 = Some((Arc::clone(&pool2), objs)));
            // Make sure this thread has a cache entry (and so a destructor) too.
            let q = pool2.alloc();
            // SAFETY: allocated from `pool2`, freed once.
            unsafe { pool2.free(q) };
        })
        .join()
        .unwrap();
    }
    assert_eq!(pool.live_objects(), 0);
}

/// Runs `threads` threads that allocate, fill objects with their own tag, check the tags,
/// hand objects to the next thread (which checks and frees them), and at each phase end
/// check together that no two live objects overlap and the pool counts them all.
fn concurrent_run(size: usize, align: usize, threads: usize, phases: usize, ops: usize) {
    let pool = SlabPool::new(size, align).unwrap();
    let slot = pool.slot_size();
    let barrier = Barrier::new(threads);
    let census = Mutex::new(Vec::<usize>::new());
    let total = AtomicUsize::new(0);
    let (senders, receivers): (Vec<_>, Vec<_>) =
        (0..threads).map(|_| mpsc::channel::<(Obj, u64)>()).unzip();
    std::thread::scope(|s| {
        for (t, rx) in receivers.into_iter().enumerate() {
            let next = senders[(t + 1) % threads].clone();
            let (pool, barrier, census, total) = (&pool, &barrier, &census, &total);
            s.spawn(move || {
                let mut rng = crate::testing::rng::rng(crate::testing::rng::derive(1, t as u64));
                let mut rand = move || rand::RngCore::next_u64(&mut rng);
                let mut live: Vec<(NonNull<u8>, u64)> = Vec::new();
                let mut seq = 0u64;
                for _phase in 0..phases {
                    for _ in 0..ops {
                        match rand() % 8 {
                            0..=3 => {
                                let p = pool.alloc();
                                assert_eq!(p.as_ptr() as usize % align, 0);
                                let tag = ((t as u64) << 48) | seq;
                                seq += 1;
                                fill(p, slot, tag);
                                live.push((p, tag));
                            }
                            4..=5 if !live.is_empty() => {
                                let i = (rand() as usize) % live.len();
                                let (p, tag) = live.swap_remove(i);
                                assert!(holds(p, slot, tag), "object overwritten");
                                // SAFETY: allocated from `pool`, freed once, dropped from `live`.
                                unsafe { pool.free(p) };
                            }
                            6 if !live.is_empty() => {
                                let i = (rand() as usize) % live.len();
                                let (p, tag) = live.swap_remove(i);
                                next.send((Obj(p), tag)).unwrap();
                            }
                            _ => {
                                // Objects handed over by the previous thread: check, free.
                                while let Ok((o, tag)) = rx.try_recv() {
                                    assert!(holds(o.0, slot, tag), "handed object overwritten");
                                    // SAFETY: allocated from `pool`; ownership came with it.
                                    unsafe { pool.free(o.0) };
                                }
                            }
                        }
                    }
                    // Phase end: take in what is in flight, then a census of live objects.
                    barrier.wait();
                    while let Ok((o, tag)) = rx.try_recv() {
                        live.push((o.0, tag));
                    }
                    for &(p, tag) in &live {
                        assert!(holds(p, slot, tag), "object overwritten");
                    }
                    census
                        .lock()
                        .unwrap()
                        .extend(live.iter().map(|(p, _)| p.as_ptr() as usize));
                    total.fetch_add(live.len(), Ordering::Relaxed);
                    if barrier.wait().is_leader() {
                        let mut all = std::mem::take(&mut *census.lock().unwrap());
                        assert_eq!(all.len(), total.swap(0, Ordering::Relaxed));
                        assert_disjoint(&mut all, slot);
                        assert_eq!(pool.live_objects(), all.len());
                    }
                    barrier.wait();
                }
                for (p, tag) in live {
                    assert!(holds(p, slot, tag));
                    // SAFETY: allocated from `pool`, freed once.
                    unsafe { pool.free(p) };
                }
            });
        }
        drop(senders);
    });
    assert_eq!(pool.live_objects(), 0);
}

#[test]
fn alloc_slab_concurrent_no_overlap() {
    if cfg!(miri) {
        concurrent_run(40, 8, 3, 2, 40);
    } else {
        concurrent_run(40, 8, 4, 4, 20_000);
        concurrent_run(200, 64, 4, 2, 10_000);
        concurrent_run(MAX_OBJECT_SIZE / 2, 4096, 4, 2, 500);
    }
}

#[test]
fn alloc_slab_frees_deferred_through_epochs() {
    // The intended use: objects retired through `sync::Guard::defer_unchecked`, whose
    // deferred frees run later on whichever thread collects them (possibly in a thread-exit
    // destructor, where this thread's cache may be gone).
    let pool = Arc::new(SlabPool::new(56, 8).unwrap());
    let (threads, per_thread) = if cfg!(miri) { (2, 20) } else { (4, 5000) };
    // `JoinHandle::join` waits for the threads to terminate completely, thread-local
    // destructors included (the implicit joins of `thread::scope` do not): their epoch
    // records have handed their last deferred frees to the global queue by then.
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    let p = Obj(pool.alloc());
                    let tag = ((t as u64) << 32) | i as u64;
                    fill(p.0, 56, tag);
                    let guard = crate::sync::pin();
                    let pool = Arc::clone(&pool);
                    let free = move || {
                        let p = p;
                        assert!(holds(p.0, 56, tag));
                        // SAFETY: allocated from `pool`, freed once, unreachable since.
                        unsafe { pool.free(p.0) };
                    };
                    // SAFETY: the closure owns what it captures (an `Arc` and an address
                    // that moves with it) and may run on any thread.
                    unsafe { guard.defer_unchecked(free) };
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // Everything deferred runs once the epoch has advanced past it (other tests of this
    // process may hold the epoch back for a while: a generous bound in time).
    crate::testing::wait::reclaim_until("every deferred free", || pool.live_objects() == 0);
}

/// Frees `objs` (allocated from `pool`) on a thread that then exits, so that nothing of
/// them stays in a thread cache: its magazines go back to the depot at exit. (Joined
/// explicitly: the end of a scope does not wait for the thread-local destructors.)
fn free_on_exiting_thread(pool: &SlabPool, objs: Vec<NonNull<u8>>) {
    let objs: Vec<Obj> = objs.into_iter().map(Obj).collect();
    std::thread::scope(|s| {
        s.spawn(move || {
            for o in objs {
                // SAFETY: allocated from `pool`, freed once, not used again.
                unsafe { pool.free(o.0) };
            }
        })
        .join()
        .unwrap();
    });
}

#[test]
fn alloc_slab_gives_back_empty_chunks() {
    let pool = SlabPool::new(256, 8).unwrap();
    let per_chunk = CHUNK_SIZE / 256;
    let chunks = if cfg!(miri) { 2 } else { 8 };
    let objs: Vec<NonNull<u8>> = (0..chunks * per_chunk).map(|_| pool.alloc()).collect();
    assert_eq!(pool.chunks(), chunks);
    assert_eq!(pool.reserved_bytes(), chunks * CHUNK_SIZE);
    // Keep the first object of the first chunk; free everything else in allocation order
    // from another thread, which then exits (its caches go back to the depot).
    let kept = objs[0];
    fill(kept, 256, 7);
    free_on_exiting_thread(&pool, objs[1..].to_vec());
    assert_eq!(pool.live_objects(), 1);
    // Up to STASH magazines of the last frees stay stashed whole: they pin at most the
    // last chunk. Every other chunk but the kept object's went back (one kept as a spare).
    assert!(
        pool.chunks() <= 2,
        "{} chunks still held after freeing all but one object",
        pool.chunks()
    );
    assert!(pool.reserved_bytes() <= 3 * CHUNK_SIZE);
    assert!(holds(kept, 256, 7));
    // The memory is usable again.
    let again: Vec<NonNull<u8>> = (0..chunks * per_chunk - 1).map(|_| pool.alloc()).collect();
    for (i, &p) in again.iter().enumerate() {
        fill(p, 256, i as u64 + 100);
    }
    let mut addrs: Vec<usize> = again
        .iter()
        .chain([&kept])
        .map(|p| p.as_ptr() as usize)
        .collect();
    assert_disjoint(&mut addrs, 256);
    assert!(holds(kept, 256, 7));
    free_on_exiting_thread(&pool, again);
    free_on_exiting_thread(&pool, vec![kept]);
    assert_eq!(pool.live_objects(), 0);
    // At most the chunks the stashed magazines pin (two: they may straddle a boundary)
    // and the spare remain.
    assert!(pool.reserved_bytes() <= 3 * CHUNK_SIZE);
}

#[test]
fn alloc_slab_keeps_a_spare_chunk_across_churn() {
    // One chunk's worth, freed and allocated again: the chunk comes back from the spares
    // (same address), not from a new mapping.
    let pool = SlabPool::new(MAX_OBJECT_SIZE, 8).unwrap();
    let per_chunk = CHUNK_SIZE / MAX_OBJECT_SIZE;
    let rounds = if cfg!(miri) { 2 } else { 5 };
    let mut base = None;
    for _ in 0..rounds {
        // Fill two chunks so that the first empties whole when its objects are freed.
        let objs: Vec<NonNull<u8>> = (0..2 * per_chunk).map(|_| pool.alloc()).collect();
        let first = objs[0].as_ptr() as usize & !(CHUNK_SIZE - 1);
        if let Some(b) = base {
            assert!(
                objs.iter()
                    .any(|p| p.as_ptr() as usize & !(CHUNK_SIZE - 1) == b),
                "the spare chunk was not reused"
            );
        }
        free_on_exiting_thread(&pool, objs);
        assert!(pool.reserved_bytes() <= 3 * CHUNK_SIZE);
        base = Some(first);
    }
}

#[test]
fn alloc_slab_gives_back_free_pages() {
    // Page-sized objects: a free object is a whole page the pool can give back while its
    // neighbours stay in use.
    let pool = SlabPool::new(PAGE_SIZE, PAGE_SIZE).unwrap();
    let per_chunk = CHUNK_SIZE / PAGE_SIZE;
    let chunks = if cfg!(miri) { 1 } else { 8 };
    let objs: Vec<NonNull<u8>> = (0..chunks * per_chunk).map(|_| pool.alloc()).collect();
    for (i, &p) in objs.iter().enumerate() {
        fill(p, PAGE_SIZE, i as u64);
    }
    let held = pool.reserved_bytes();
    // Keep one object in four: three quarters of every chunk become free pages.
    let (kept, freed): (Vec<_>, Vec<_>) = objs.iter().enumerate().partition(|(i, _)| i % 4 == 0);
    free_on_exiting_thread(&pool, freed.into_iter().map(|(_, &p)| p).collect());
    assert_eq!(pool.chunks(), chunks, "no chunk is empty");
    if cfg!(all(unix, not(miri))) {
        // Everything freed is given back but what the stash pins and what was freed since
        // the last pass (at most an eighth of the bytes held, or one chunk).
        let stash = super::depot::STASH * pool.shared.backing.magazine * PAGE_SIZE;
        assert!(
            pool.reserved_bytes() <= held / 4 + held / 8 + CHUNK_SIZE + stash,
            "{} of {held} bytes still held",
            pool.reserved_bytes()
        );
    }
    for &(i, &p) in &kept {
        assert!(
            holds(p, PAGE_SIZE, i as u64),
            "a kept object lost its contents"
        );
    }
    // Allocating again faults the pages back in.
    let again: Vec<NonNull<u8>> = (0..chunks * per_chunk * 3 / 4)
        .map(|_| pool.alloc())
        .collect();
    for &p in &again {
        fill(p, PAGE_SIZE, 9);
    }
    assert_eq!(pool.chunks(), chunks);
    assert_eq!(pool.reserved_bytes(), held);
    free_on_exiting_thread(&pool, again);
    free_on_exiting_thread(&pool, kept.into_iter().map(|(_, &p)| p).collect());
}

#[test]
fn alloc_slab_drained_chunk_gives_back_its_pages() {
    // Eight full chunks; all but one object in 256 of the first one freed. The pool as a
    // whole is far from half free, but that chunk drained below a quarter: its free pages
    // go back (a 4 KiB page holds 64 objects: three pages in four are free).
    let pool = SlabPool::new(64, 8).unwrap();
    let per_chunk = CHUNK_SIZE / 64;
    let chunks = if cfg!(miri) { 2 } else { 8 };
    let objs: Vec<NonNull<u8>> = (0..chunks * per_chunk).map(|_| pool.alloc()).collect();
    assert_eq!(pool.chunks(), chunks);
    let held = pool.reserved_bytes();
    let chunk_of = |p: &NonNull<u8>| p.as_ptr() as usize & !(CHUNK_SIZE - 1);
    let base = chunk_of(&objs[0]);
    let mut kept = Vec::new();
    let mut freed = Vec::new();
    let mut rest = Vec::new();
    for (i, &p) in objs.iter().enumerate() {
        if chunk_of(&p) != base {
            rest.push(p);
        } else if i % 256 == 0 {
            fill(p, 64, i as u64);
            kept.push((i, p));
        } else {
            freed.push(p);
        }
    }
    free_on_exiting_thread(&pool, freed);
    assert_eq!(pool.chunks(), chunks);
    if cfg!(all(unix, not(miri))) {
        // The stash pins the pages of the last magazines freed (at most STASH of them).
        let stash = super::depot::STASH * pool.shared.backing.magazine * 64;
        assert!(
            pool.reserved_bytes() + CHUNK_SIZE / 2 <= held + stash,
            "{} of {held} bytes held: the drained chunk kept its pages",
            pool.reserved_bytes()
        );
    }
    for &(i, p) in &kept {
        assert!(holds(p, 64, i as u64), "a kept object lost its contents");
    }
    free_on_exiting_thread(&pool, kept.into_iter().map(|(_, p)| p).collect());
    free_on_exiting_thread(&pool, rest);
    assert_eq!(pool.live_objects(), 0);
}

/// Moving objects (`try_alloc_lower`): after freeing 7 of every 8 objects, the survivors
/// move down into the lowest chunks, every move goes to a lower address, repeated passes
/// soon find nothing to move (no cycles), the contents survive, and emptied chunks go back.
#[test]
fn alloc_slab_moves_objects_out_of_sparse_chunks() {
    const SIZE: usize = 16 * 1024;
    let pool = SlabPool::new(SIZE, 8).unwrap();
    let per_chunk = CHUNK_SIZE / SIZE;
    let chunks = if cfg!(miri) { 3 } else { 8 };
    let objs: Vec<NonNull<u8>> = (0..chunks * per_chunk).map(|_| pool.alloc()).collect();
    let (mut kept, freed): (Vec<_>, Vec<_>) =
        objs.iter().enumerate().partition(|(i, _)| i % 8 == 0);
    let mut kept: Vec<(NonNull<u8>, u64)> =
        kept.drain(..).map(|(i, &p)| (p, i as u64 + 1)).collect();
    for &(p, tag) in &kept {
        fill(p, SIZE, tag);
    }
    free_on_exiting_thread(&pool, freed.into_iter().map(|(_, &p)| p).collect());
    let before = pool.chunks();
    // A full chunk is not sparse: nothing to move there.
    let full = SlabPool::new(SIZE, 8).unwrap();
    let f: Vec<NonNull<u8>> = (0..2 * per_chunk).map(|_| full.alloc()).collect();
    assert!(f.iter().all(|&p| full.try_alloc_lower(p).is_none()));
    free_on_exiting_thread(&full, f);
    // Every move goes to a lower address, so passes end: at most one per chunk finds work.
    let mut last = usize::MAX;
    for pass in 0..=chunks {
        let mut moves = 0;
        let mut old = Vec::new();
        kept.sort_by_key(|&(p, _)| std::cmp::Reverse(p.as_ptr() as usize));
        for (p, tag) in &mut kept {
            if let Some(q) = pool.try_alloc_lower(*p) {
                assert!((q.as_ptr() as usize) < (p.as_ptr() as usize) & !(CHUNK_SIZE - 1));
                // SAFETY: two distinct live objects of `SIZE` bytes.
                unsafe { q.as_ptr().copy_from_nonoverlapping(p.as_ptr(), SIZE) };
                old.push(*p);
                *p = q;
                moves += 1;
            }
            assert!(holds(*p, SIZE, *tag));
        }
        free_on_exiting_thread(&pool, old);
        if pass == 0 {
            assert!(moves > 0, "nothing moved out of sparse chunks");
        }
        last = moves;
        if moves == 0 {
            break;
        }
    }
    assert_eq!(last, 0, "objects still moving after {chunks} passes");
    let mut addrs: Vec<usize> = kept.iter().map(|(p, _)| p.as_ptr() as usize).collect();
    assert_disjoint(&mut addrs, SIZE);
    assert_eq!(pool.live_objects(), kept.len());
    // The survivors fill the lowest chunks: two hold them all (one full, one with the
    // objects that found no room below). The old slots went back, except those the
    // depot's stash of magazines still pins (freed last: the lowest moved ones).
    let homes: HashSet<usize> = addrs.iter().map(|a| a & !(CHUNK_SIZE - 1)).collect();
    assert!(homes.len() <= 2, "survivors in {} chunks", homes.len());
    assert!(
        pool.chunks() < before,
        "{} chunks held after moving (before: {before})",
        pool.chunks()
    );
    free_on_exiting_thread(&pool, kept.into_iter().map(|(p, _)| p).collect());
}
