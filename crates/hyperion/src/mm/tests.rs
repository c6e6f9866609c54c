//! Unit tests of the memory manager.

use super::bins::Caps;
use super::hp::{CHAIN_SLOTS, CHUNKS_PER_BIN, FIRST_CHUNKS, SLOT_KEYS, STEP};
use super::*;

#[test]
fn mm_hp_round_trip() {
    let hp = Hp::new(63, (1 << 22) - 1, 4095);
    assert_eq!(Hp::from_bytes(&hp.to_bytes()), hp);
    assert_eq!(
        (hp.superbin(), hp.bin_id(), hp.chunk()),
        (63, (1 << 22) - 1, 4095)
    );
    let hp = Hp::new(1, 300, 7);
    assert_eq!(Hp::from_bytes(&hp.to_bytes()), hp);
}

#[test]
fn mm_alloc_write_free_returns_memory() {
    let mut mm = MemoryManager::new();
    let base = mm.bytes();
    let mut hps = Vec::new();
    for (i, size) in [1usize, 32, 33, 100, 2016, 2017, 9000, 20_000]
        .iter()
        .enumerate()
    {
        let hp = mm.alloc(*size).unwrap();
        assert!(mm.capacity(hp) >= *size);
        assert_eq!(mm.capacity(hp), capacity_for(*size));
        mm.get_mut(hp)[..*size].fill(i as u8);
        hps.push((hp, *size, i as u8));
    }
    for &(hp, size, b) in &hps {
        assert!(mm.get(hp)[..size].iter().all(|&x| x == b));
    }
    assert!(mm.bytes() > base);
    for (hp, _, _) in hps {
        mm.free(hp);
    }
    assert_eq!(mm.bytes(), mm.stats().metadata_bytes);
    assert_eq!(mm.stats().chunks, 0);
    assert_eq!(mm.stats().extended_bytes, 0);
}

/// An extended block regrows behind the same Hyperion Pointer (content kept, new
/// capacity); a chained extended bin resolves keys to the nearest non-void slot at or
/// below `k / SLOT_KEYS`, and frees everything.
#[test]
fn mm_regrow_and_chains() {
    let mut mm = MemoryManager::new();
    let base_bytes = mm.bytes();
    let hp = mm.alloc(3000).unwrap();
    mm.get_mut(hp)[..3000].fill(7);
    mm.regrow(hp, 9000, |src, dst| {
        dst[..3000].copy_from_slice(&src[..3000])
    })
    .unwrap();
    assert_eq!(mm.capacity(hp), extended_capacity(9000));
    assert!(mm.get(hp)[..3000].iter().all(|&b| b == 7));
    assert!(mm.get(hp)[3000..9000].iter().all(|&b| b == 0));
    mm.regrow(hp, 2100, |src, dst| {
        dst[..2100].copy_from_slice(&src[..2100])
    })
    .unwrap();
    assert_eq!(mm.capacity(hp), extended_capacity(2100));
    let chain = mm.alloc_chain().unwrap();
    assert!(mm.is_chain(chain) && !mm.is_chain(hp));
    assert_eq!(chain.chain_of(), (chain, 0));
    mm.fill_slot(chain.slot(0), 2500).unwrap();
    mm.fill_slot(chain.slot(5), 3000).unwrap();
    mm.get_mut(chain.slot(5))[0] = 5;
    mm.fill_slot(chain.slot(CHAIN_SLOTS - 1), 2200).unwrap();
    let at = |slot: usize| (slot * SLOT_KEYS) as u8;
    assert_eq!(mm.resolve(chain, 0), chain.slot(0));
    assert_eq!(mm.resolve(chain, at(5) - 1), chain.slot(0));
    assert_eq!(mm.resolve(chain, at(5)), chain.slot(5));
    assert_eq!(mm.resolve(chain, at(CHAIN_SLOTS - 1) - 1), chain.slot(5));
    assert_eq!(mm.resolve(chain, 255), chain.slot(CHAIN_SLOTS - 1));
    assert_eq!(mm.get(mm.resolve(chain, at(6)))[0], 5);
    assert_eq!(chain.slot(5).chain_of(), (chain, 5));
    mm.void_slot(chain.slot(CHAIN_SLOTS - 1));
    assert_eq!(mm.resolve(chain, 255), chain.slot(5));
    mm.void_slot(chain.slot(5));
    assert!(mm.is_void(chain.slot(5)));
    assert_eq!(mm.resolve(chain, 255), chain.slot(0));
    mm.free_chain(chain);
    mm.free(hp);
    assert_eq!(mm.bytes(), base_bytes);
    assert_eq!(mm.stats().extended, 0);
}

#[test]
fn mm_fills_a_bin_and_opens_the_next() {
    let mut mm = MemoryManager::new();
    let n = if cfg!(miri) { 300 } else { CHUNKS_PER_BIN + 10 };
    let hps: Vec<Hp> = (0..n).map(|_| mm.alloc(32).unwrap()).collect();
    let mut sorted = hps.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), n, "every chunk is distinct");
    assert_eq!(mm.stats().chunks, n);
    for hp in &hps {
        mm.free(*hp);
    }
    assert_eq!(mm.stats().chunks, 0);
    assert_eq!(mm.stats().free_chunk_bytes, 0, "empty bins are unmapped");
}

/// A bin halves once at most a quarter of its chunks are taken and its upper half is free
/// (the chunks below keep their bytes); chunks left in the upper half are what
/// [`MemoryManager::should_move`] names, and moving them (allocate, copy, free, as a
/// writer does) lets the bin halve down to what its chunks need.
#[test]
fn mm_sparse_bins_shrink_and_chunks_move_down() {
    let mut mm = MemoryManager::new();
    let n = if cfg!(miri) { 64 } else { 1024 };
    let hps: Vec<Hp> = (0..n).map(|_| mm.alloc(64).unwrap()).collect();
    for (i, hp) in hps.iter().enumerate() {
        mm.get_mut(*hp).fill(i as u8);
    }
    let full = mm.stats().free_chunk_bytes + mm.stats().chunk_bytes;
    assert_eq!(full, n * 64, "one bin of {n} chunks");
    // Keep every 8th chunk: an eighth taken, spread over the whole bin.
    for (i, hp) in hps.iter().enumerate() {
        if i % 8 != 0 {
            mm.free(*hp);
        }
    }
    let kept: Vec<(Hp, u8)> = (0..n).step_by(8).map(|i| (hps[i], i as u8)).collect();
    let spread = mm.stats();
    assert_eq!(
        spread.chunk_bytes + spread.free_chunk_bytes,
        n * 64,
        "no shrink yet"
    );
    assert!(!mm.should_move(kept[0].0), "the lower half stays");
    let movers: Vec<usize> = (0..kept.len())
        .filter(|&i| mm.should_move(kept[i].0))
        .collect();
    assert_eq!(movers.len(), kept.len() / 2, "the upper half moves");
    let mut now = kept.clone();
    // As a writer does for each block it touches: move while asked to.
    while let Some(i) = (0..now.len()).find(|&i| mm.should_move(now[i].0)) {
        let (old, b) = now[i];
        let to = mm.alloc(64).unwrap();
        let bytes = mm.get(old).to_vec();
        mm.get_mut(to).copy_from_slice(&bytes);
        mm.free(old);
        now[i] = (to, b);
    }
    for &(hp, b) in &now {
        assert!(mm.get(hp).iter().all(|&x| x == b), "{hp:?} kept its bytes");
    }
    let st = mm.stats();
    assert_eq!(st.chunk_bytes, kept.len() * 64);
    assert!(
        st.chunk_bytes + st.free_chunk_bytes <= 4 * kept.len() * 64,
        "the bin shrank to at most 4x its chunks: {st:?}"
    );
    for (hp, _) in now {
        mm.free(hp);
    }
    assert_eq!(mm.stats().chunks, 0);
    assert_eq!(mm.bytes(), mm.stats().metadata_bytes);
}

/// The capacity schedule: under 64 KiB powers of two (doubling); then whole 4 KiB pages,
/// one page a step; a full bin of 2 MiB or more in huge pages, filled to less than a
/// chunk of slack; at most 4,096 chunks; every shrink at least halves and lands on a
/// capacity of the schedule.
#[test]
fn mm_caps_schedule() {
    use orrery_core::alloc::{HUGE_PAGE_SIZE, PAGE_SIZE};
    for sb in 1..64 {
        let size = sb * STEP;
        let caps = Caps::new(size);
        let full = caps.full();
        assert!(full <= CHUNKS_PER_BIN && full * size >= CHUNKS_PER_BIN * size / 2);
        if CHUNKS_PER_BIN * size >= HUGE_PAGE_SIZE {
            assert!(caps.is_huge(full), "class {sb}");
            let held = full * size;
            assert!(
                held.next_multiple_of(HUGE_PAGE_SIZE) - held < size,
                "class {sb}"
            );
        } else {
            assert!(!caps.is_huge(full), "class {sb}");
        }
        // A capacity of the schedule: a power of two under 64 KiB, what whole 4 KiB pages
        // (64 KiB and more) hold, or full.
        let valid = |c: usize| {
            c == full
                || (c * size < 64 * 1024 && c.is_power_of_two())
                || (c * size >= 64 * 1024 - size
                    && c == (c * size).next_multiple_of(PAGE_SIZE) / size)
        };
        // Held in a heap block (`BinMem::new`).
        let heap = |c: usize| c.is_power_of_two() && c * size < 64 * 1024;
        let mut cap = FIRST_CHUNKS;
        while cap < full {
            let next = caps.grown(cap, cap + 1);
            assert!(
                next > cap && next <= full && valid(next),
                "class {sb}: {cap} -> {next}"
            );
            if heap(next) {
                assert_eq!(next, cap * 2, "class {sb}: doubles under 64 KiB");
            } else if !heap(cap) && !caps.is_huge(next) {
                assert_eq!(
                    (next * size).div_ceil(PAGE_SIZE),
                    (cap * size).div_ceil(PAGE_SIZE) + 1,
                    "class {sb}: {cap} -> {next} grows by one 4 KiB page"
                );
            }
            cap = next;
        }
        while let Some(t) = caps.shrunk(cap) {
            assert!(t <= cap / 2 && valid(t), "class {sb}: {cap} -> {t}");
            cap = t;
        }
        assert!(cap < 2 * FIRST_CHUNKS);
    }
}

/// Regression: a full bin of 1,056-byte chunks took 6 MiB of huge pages for 4,096 chunks
/// (4.1 MiB), 31 % unused: bins from 2 MiB are held in whole huge pages, so they fill
/// them. A full bin leaves less than a chunk unused; optimistic readers reach every chunk
/// of a bin mapped that way; the bin shrinks back and everything is given back.
#[test]
fn mm_full_huge_bin_fills_its_pages() {
    if cfg!(miri) {
        return; // megabytes of chunks
    }
    use orrery_core::alloc::HUGE_PAGE_SIZE;
    let size = 33 * STEP;
    let mut mm = MemoryManager::new();
    let mut hps = Vec::new();
    // Allocate until a second bin opens.
    loop {
        let hp = mm.alloc(size).unwrap();
        if hp.bin_id() != 0 {
            mm.free(hp);
            break;
        }
        mm.get_mut(hp).fill(hps.len() as u8);
        hps.push(hp);
    }
    let full = hps.len();
    assert!(
        full < CHUNKS_PER_BIN,
        "a full bin holds what its huge pages hold"
    );
    let st = mm.stats();
    assert_eq!(st.chunk_bytes, full * size);
    assert!(
        st.free_chunk_bytes < size,
        "a full bin leaves less than a chunk of its pages unused: {st:?}"
    );
    assert_eq!((st.chunk_bytes + st.free_chunk_bytes) % HUGE_PAGE_SIZE, 0);
    let dirs = mm.dirs();
    let _pin = orrery_core::sync::pin();
    for (i, hp) in hps.iter().enumerate() {
        let b = dirs.chunk(*hp).expect("a reader reaches every chunk");
        assert_eq!(b.ptr, mm.get(*hp).as_ptr());
        assert_eq!((b.len(), b.byte(size - 1)), (size, Some(i as u8)));
    }
    drop(_pin);
    // Keep an eighth, in the lower part: the bin shrinks through its schedule.
    for hp in hps.drain(full / 8..) {
        mm.free(hp);
    }
    let st = mm.stats();
    assert!(
        st.chunk_bytes + st.free_chunk_bytes <= 4 * st.chunk_bytes,
        "the bin shrank: {st:?}"
    );
    for (i, hp) in hps.iter().enumerate() {
        assert!(mm.get(*hp).iter().all(|&b| b == i as u8));
    }
    for hp in hps {
        mm.free(hp);
    }
    assert_eq!(mm.bytes(), mm.stats().metadata_bytes);
}

/// Regression: a bin from 64 KiB doubled (e.g. 1,024 → 2,048 chunks of 2,016 bytes, held
/// as 6 MiB of huge pages for 2.1 MB of chunks), so each class's last, growing bin could
/// hold megabytes of free capacity, and its huge pages became resident whole. Now it
/// grows in place in 4 KiB pages: at every step it holds less than 32 KiB beyond what its
/// chunks need (a heap block under 64 KiB, a 4 KiB page beyond it, less than a chunk
/// once full in huge pages); its chunks stay where they are from 64 KiB until it is full
/// (one move, into huge pages, for a full bin of 2 MiB or more); their bytes survive; and
/// optimistic readers reach every chunk through the directory, which a growth in place
/// leaves as it is.
#[test]
fn mm_growing_bins_hold_less_than_a_page_free() {
    if cfg!(miri) {
        return; // megabytes of chunks
    }
    use orrery_core::alloc::HUGE_PAGE_SIZE;
    for sb in [1, 3, 12, 16, 17, 33, 52, 63] {
        let size = sb * STEP;
        let full = Caps::new(size).full();
        let mut mm = MemoryManager::new();
        let mut hps = Vec::new();
        let mut moves_from_64k = 0;
        let mut last = std::ptr::null();
        while hps.len() < full {
            let hp = mm.alloc(size).unwrap();
            assert_eq!(hp.bin_id(), 0, "class {sb}: one bin until it is full");
            mm.get_mut(hp).fill(hps.len() as u8);
            hps.push(hp);
            let st = mm.stats();
            assert!(
                st.free_chunk_bytes < 32 * 1024,
                "class {sb}, {} chunks: {} bytes held free",
                hps.len(),
                st.free_chunk_bytes
            );
            let first = mm.get(hps[0]).as_ptr();
            if hps.len() * size > 64 * 1024 && first != last {
                moves_from_64k += 1;
            }
            last = first;
        }
        // From 64 KiB: the move into the mapping, and for a huge bin the one into huge
        // pages when it filled.
        let huge = usize::from(CHUNKS_PER_BIN * size >= HUGE_PAGE_SIZE);
        assert!(
            moves_from_64k <= 1 + huge,
            "class {sb}: {moves_from_64k} moves"
        );
        let dirs = mm.dirs();
        let pin = orrery_core::sync::pin();
        for (i, hp) in hps.iter().enumerate() {
            let b = dirs.chunk(*hp).expect("a reader reaches every chunk");
            assert_eq!(b.ptr, mm.get(*hp).as_ptr());
            assert_eq!(b.byte(size - 1), Some(i as u8), "class {sb}");
        }
        drop(pin);
        for (i, hp) in hps.iter().enumerate() {
            assert!(mm.get(*hp).iter().all(|&b| b == i as u8), "class {sb}");
        }
        for hp in hps {
            mm.free(hp);
        }
        assert_eq!(mm.bytes(), mm.stats().metadata_bytes);
    }
}

/// Where a random load's bytes go, per superbin: used chunks, bins, mapped bytes, free
/// bytes, and the bins by occupancy. A diagnostic, not a check: opt-in
/// (`HY_PROFILE_KEYS=N cargo test --release -p orrery-hyperion --lib mm_profile --
/// --ignored --nocapture`).
#[test]
#[ignore = "a diagnostic load (set HY_PROFILE_KEYS)"]
fn mm_profile_random_load() {
    let n: u64 = std::env::var("HY_PROFILE_KEYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    // HY_PROFILE_PREP=1: with key pre-processing (`hyperion-prep`).
    let prep = std::env::var("HY_PROFILE_PREP").is_ok_and(|v| v == "1");
    let h =
        crate::Hyperion::with_config(crate::Config::builder().preprocess(prep).build().unwrap())
            .unwrap();
    for i in 0..n {
        // SplitMix64 of i + 1: distinct random 64-bit keys.
        let z = orrery_core::testing::rng::derive(0, i);
        h.insert(&z.to_be_bytes(), &z.to_le_bytes()).unwrap();
    }
    // Per superbin: used chunks, bins, mapped bytes, capacity, bins by occupancy, free
    // bytes in bins below their full capacity (the growing ones).
    let mut rows = vec![(0usize, 0usize, 0usize, 0usize, [0usize; 5], 0usize); 64];
    for a in h.arenas.iter() {
        let g = a.read();
        for (i, s) in g.mm.superbins.iter().enumerate() {
            for m in s.metabins.iter().flatten() {
                for b in m.bins.iter().flatten() {
                    let r = &mut rows[i];
                    r.0 += b.used as usize;
                    r.1 += 1;
                    r.2 += b.mem.bytes();
                    r.3 += b.cap;
                    let occ = b.used as usize * 4 / s.caps.full();
                    let growing = b.cap < s.caps.full();
                    r.4[if growing { 4 } else { occ.min(3) }] += 1;
                    if growing {
                        r.5 += b.mem.bytes() - b.used as usize * s.chunk_size;
                    }
                }
            }
        }
    }
    let st = h.stats();
    println!("{n} keys: {st:?}");
    println!(
        "sb size used bins cap_chunks mapped_MB free_MB free_B/key growing_free_MB | bins <1/4 <1/2 <3/4 full* growing"
    );
    for (i, r) in rows.iter().enumerate() {
        if r.1 == 0 {
            continue;
        }
        let size = if i == 0 { 16 } else { i * 32 };
        let free = r.2 - r.0 * size;
        println!(
            "{i:2} {size:5} {:9} {:6} {:9} {:8.1} {:8.1} {:6.3} {:8.1} | {:?}",
            r.0,
            r.1,
            r.3,
            r.2 as f64 / 1e6,
            free as f64 / 1e6,
            free as f64 / n as f64,
            r.5 as f64 / 1e6,
            r.4
        );
    }
    let (free, growing) = rows
        .iter()
        .enumerate()
        .skip(1)
        .fold((0, 0), |(f, g), (i, r)| (f + r.2 - r.0 * i * 32, g + r.5));
    println!(
        "free chunks {:.3} B/key, of which in growing bins {:.3} B/key",
        free as f64 / n as f64,
        growing as f64 / n as f64
    );
}
