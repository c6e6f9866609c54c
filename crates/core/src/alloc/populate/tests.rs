use std::ptr::NonNull;

use super::*;
use crate::alloc::{MAX_OBJECT_SIZE, MemCounter, SlabPool};

/// Objects per chunk of the test pools (64 KiB objects: 32 per chunk).
const PER_CHUNK: usize = CHUNK_SIZE / MAX_OBJECT_SIZE;

/// Allocates from `pool` until it has taken `chunks` chunks; writes each object's first word.
fn fill_chunks(pool: &SlabPool, chunks: usize, objs: &mut Vec<NonNull<u8>>) {
    while pool.reserved_bytes() < chunks * CHUNK_SIZE {
        let p = pool.alloc();
        // SAFETY: a live object of at least 8 bytes, 8-aligned, owned by the test.
        unsafe { p.as_ptr().cast::<usize>().write(objs.len()) };
        objs.push(p);
    }
}

/// Every object still holds its index, and no two share an address.
fn check_and_free(pool: &SlabPool, objs: Vec<NonNull<u8>>) {
    let mut addrs: Vec<usize> = objs.iter().map(|p| p.as_ptr().addr()).collect();
    addrs.sort_unstable();
    assert!(addrs.windows(2).all(|w| w[0] + MAX_OBJECT_SIZE <= w[1]));
    for (i, p) in objs.into_iter().enumerate() {
        // SAFETY: written by `fill_chunks`, still live.
        assert_eq!(unsafe { p.as_ptr().cast::<usize>().read() }, i);
        // SAFETY: allocated from `pool`, not used afterwards.
        unsafe { pool.free(p) };
    }
}

/// Waits (at most a minute) until the reservoir holds `want` bytes; returns what it holds.
fn wait_spare(p: &Populator, want: usize) -> usize {
    crate::sync::wait_until(crate::testing::wait::DEADLINE, || p.spare_bytes() == want);
    p.spare_bytes()
}

/// No thread before the threshold; past it the thread fills the reservoir, the next chunk
/// the pool needs comes from it (counted once: by the pool from then on), the reservoir is
/// refilled, and the drop joins the thread and unmaps the spare chunk.
#[test]
fn alloc_populate_serves_spare_chunks_past_the_threshold() {
    let counter = Arc::new(MemCounter::new());
    let pool = SlabPool::with_counter(MAX_OBJECT_SIZE, 8, counter.clone()).unwrap();
    let populator = Populator::with_params(1, 2);
    assert!(pool.attach(&populator));
    assert!(!pool.attach(&populator), "attached once");
    let mut objs = Vec::new();
    fill_chunks(&pool, 1, &mut objs);
    assert!(!populator.stats().started, "below the threshold");
    assert_eq!(populator.spare_bytes(), 0);
    fill_chunks(&pool, 2, &mut objs);
    assert!(populator.stats().started);
    assert_eq!(wait_spare(&populator, CHUNK_SIZE), CHUNK_SIZE);
    let s = populator.stats();
    assert_eq!((s.served, s.missed, s.populated), (0, 2, 1));
    // The pool's third chunk is the spare.
    fill_chunks(&pool, 3, &mut objs);
    let s = populator.stats();
    assert_eq!((s.served, s.missed), (1, 2));
    assert_eq!(
        counter.get(),
        3 * CHUNK_SIZE,
        "the pool counts the chunk it took"
    );
    // Refilled.
    assert_eq!(wait_spare(&populator, CHUNK_SIZE), CHUNK_SIZE);
    assert_eq!(populator.stats().populated, 2);
    assert!(!populator.thread_exited());
    let reservoir = Arc::clone(populator.reservoir());
    drop(populator);
    assert!(
        reservoir.thread.exited_flag().load(Ordering::Acquire),
        "the drop joins"
    );
    assert_eq!(reservoir.spare_bytes.load(Ordering::Relaxed), 0);
    assert!(reservoir.ready.lock().is_empty(), "spares unmapped");
    // The pool outlives its populator: it maps its own chunks, no thread restarts.
    fill_chunks(&pool, 5, &mut objs);
    assert_eq!(reservoir.missed.load(Ordering::Relaxed), 4);
    assert!(reservoir.thread.is_stopping());
    assert_eq!(counter.get(), 5 * CHUNK_SIZE);
    check_and_free(&pool, objs);
}

/// One reservoir serves several pools (any object size), and never holds more than
/// `spares` chunks.
#[test]
fn alloc_populate_shared_by_pools() {
    let spares = 2;
    let populator = Populator::with_params(spares, 1);
    let a = SlabPool::new(MAX_OBJECT_SIZE, 8).unwrap();
    let b = SlabPool::new(MAX_OBJECT_SIZE, 64).unwrap();
    a.attach(&populator);
    b.attach(&populator);
    let (mut oa, mut ob) = (Vec::new(), Vec::new());
    fill_chunks(&a, 1, &mut oa);
    assert_eq!(
        wait_spare(&populator, spares * CHUNK_SIZE),
        spares * CHUNK_SIZE
    );
    fill_chunks(&b, 1, &mut ob);
    fill_chunks(&a, 2, &mut oa);
    let s = populator.stats();
    assert_eq!(s.served + s.missed, 3);
    assert!(s.served >= 2, "{s:?}");
    assert_eq!(
        wait_spare(&populator, spares * CHUNK_SIZE),
        spares * CHUNK_SIZE
    );
    assert!(populator.stats().populated <= s.served + spares);
    check_and_free(&a, oa);
    check_and_free(&b, ob);
    assert_eq!(a.live_objects() + b.live_objects(), 0);
    assert!(format!("{populator:?}").contains("spare_bytes"));
}

/// A disabled populator starts no thread and keeps nothing in reserve, however much its
/// pools grow; a pool never attached does not see a populator either.
#[test]
fn alloc_populate_disabled_starts_nothing() {
    let populator = Populator::disabled();
    assert!(!populator.is_enabled());
    let pool = SlabPool::new(MAX_OBJECT_SIZE, 8).unwrap();
    pool.attach(&populator);
    let mut objs = Vec::new();
    let chunks = if cfg!(miri) { 3 } else { 20 };
    fill_chunks(&pool, chunks, &mut objs);
    assert_eq!(objs.len(), (chunks - 1) * PER_CHUNK + 1);
    assert_eq!(populator.stats(), PopulatorStats::default());
    assert_eq!(populator.spare_bytes(), 0);
    check_and_free(&pool, objs);
}

/// Dropping the populator while its thread is populating (a reservoir of several chunks,
/// the thread just started) waits for the chunk in progress, joins the thread and unmaps
/// every spare.
#[test]
fn alloc_populate_drop_while_populating() {
    let rounds = if cfg!(miri) { 1 } else { 20 };
    for _ in 0..rounds {
        let populator = Populator::with_params(4, 1);
        let pool = SlabPool::new(MAX_OBJECT_SIZE, 8).unwrap();
        pool.attach(&populator);
        let p = pool.alloc();
        assert!(populator.stats().started);
        let reservoir = Arc::clone(populator.reservoir());
        drop(populator);
        assert!(reservoir.thread.exited_flag().load(Ordering::Acquire));
        assert!(reservoir.ready.lock().is_empty());
        assert_eq!(reservoir.spare_bytes.load(Ordering::Relaxed), 0);
        assert!(reservoir.populated.load(Ordering::Relaxed) <= 4);
        // SAFETY: allocated from `pool` above, not used afterwards.
        unsafe { pool.free(p) };
    }
}

/// Populating changes no byte of a region, and works on empty ones.
#[test]
fn alloc_region_prefault_keeps_contents() {
    let mut r = HugeRegion::new(CHUNK_SIZE + 100).unwrap();
    let p = r.as_ptr().wrapping_add(CHUNK_SIZE + 3);
    // SAFETY: inside the region (reserved 4 MiB); nobody else accesses it.
    unsafe { p.write(0x77) };
    r.prefault().unwrap();
    assert_eq!(r.len(), CHUNK_SIZE + 100, "the length asked for is kept");
    for off in [0, 4096, CHUNK_SIZE + 3, 2 * CHUNK_SIZE - 1] {
        // SAFETY: `off < reserved_len`, inside the live region (zeroed memory).
        let v = unsafe { r.as_ptr().wrapping_add(off).read() };
        assert_eq!(
            v,
            if off == CHUNK_SIZE + 3 { 0x77 } else { 0 },
            "offset {off}"
        );
    }
    HugeRegion::new(0).unwrap().prefault().unwrap();
}

/// Threads allocating from pools that share one populator (two threads on each of two
/// pools) while its thread refills: every chunk is taken once (served + missed = chunks
/// of all pools), objects never overlap, and each keeps what its owner wrote.
#[test]
fn alloc_populate_concurrent_pools() {
    let chunks = if cfg!(miri) { 2 } else { 12 };
    let populator = Populator::with_params(2, 1);
    let pools = [
        SlabPool::new(MAX_OBJECT_SIZE, 8).unwrap(),
        SlabPool::new(MAX_OBJECT_SIZE / 2, 64).unwrap(),
    ];
    for p in &pools {
        p.attach(&populator);
    }
    let per_thread = chunks * PER_CHUNK;
    let addrs = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let pool = &pools[t % 2];
                s.spawn(move || {
                    let objs: Vec<NonNull<u8>> = (0..per_thread)
                        .map(|i| {
                            let p = pool.alloc();
                            // SAFETY: a live object of at least 8 bytes, 8-aligned, ours.
                            unsafe { p.as_ptr().cast::<usize>().write(t << 32 | i) };
                            p
                        })
                        .collect();
                    let mut addrs = Vec::new();
                    for (i, p) in objs.into_iter().enumerate() {
                        // SAFETY: written above, still live and ours.
                        let v = unsafe { p.as_ptr().cast::<usize>().read() };
                        assert_eq!(v, t << 32 | i);
                        addrs.push((p.as_ptr().addr(), pool.slot_size()));
                    }
                    addrs
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    let mut sorted = addrs;
    sorted.sort_unstable();
    assert!(sorted.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0));
    let taken = (pools[0].reserved_bytes() + pools[1].reserved_bytes()) / CHUNK_SIZE;
    let s = populator.stats();
    assert_eq!(s.served + s.missed, taken, "{s:?}");
    assert!(s.populated <= s.served + 2, "{s:?}");
    // The objects are leaked into the pools' chunks, unmapped with the pools.
}

/// `trim` gives the spare chunk back at once; the next chunk a pool takes is mapped by the
/// pool (a miss) and wakes the thread, which populates a spare again.
#[test]
fn alloc_populate_trim_gives_spares_back() {
    let pool = SlabPool::new(MAX_OBJECT_SIZE, 8).unwrap();
    let populator = Populator::with_params(1, 1);
    assert!(pool.attach(&populator));
    let mut objs = Vec::new();
    fill_chunks(&pool, 1, &mut objs);
    assert_eq!(wait_spare(&populator, CHUNK_SIZE), CHUNK_SIZE);
    populator.trim();
    assert_eq!(populator.spare_bytes(), 0);
    assert!(
        populator.reservoir().ready.lock().is_empty(),
        "spares unmapped"
    );
    let missed = populator.stats().missed;
    fill_chunks(&pool, 2, &mut objs);
    assert_eq!(populator.stats().missed, missed + 1, "no spare to serve");
    assert_eq!(wait_spare(&populator, CHUNK_SIZE), CHUNK_SIZE, "refilled");
    check_and_free(&pool, objs);
}
