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

/// The capacity schedule: below 2 MiB powers of two; from 2 MiB whole huge pages, filled
/// to less than a chunk of slack; at most 4,096 chunks; every shrink goes down.
#[test]
fn mm_caps_fill_whole_huge_pages() {
    use orrery_core::alloc::HUGE_PAGE_SIZE;
    for sb in 1..64 {
        let size = sb * STEP;
        let caps = Caps::new(size);
        let full = caps.full();
        assert!(full <= CHUNKS_PER_BIN && full * size >= CHUNKS_PER_BIN * size / 2);
        if CHUNKS_PER_BIN * size > HUGE_PAGE_SIZE {
            let held = full * size;
            assert!(
                held.next_multiple_of(HUGE_PAGE_SIZE) - held < size,
                "class {sb}"
            );
        }
        let mut cap = FIRST_CHUNKS;
        let mut seen = vec![cap];
        while cap < full {
            let next = caps.grown(cap, cap + 1);
            assert!(next > cap && next <= full);
            let bytes = next * size;
            if bytes >= HUGE_PAGE_SIZE || !next.is_power_of_two() {
                // Held in huge pages (`BinMem::new`): filled.
                assert!(
                    bytes.next_multiple_of(HUGE_PAGE_SIZE) - bytes < size,
                    "class {sb}: {next} chunks leave a chunk's room unused"
                );
            }
            cap = next;
            seen.push(cap);
        }
        // Shrinking walks down through capacities the schedule grows through.
        while let Some(t) = caps.shrunk(cap) {
            assert!(t < cap && seen.contains(&t), "class {sb}: {cap} -> {t}");
            cap = t;
        }
        assert_eq!(cap, FIRST_CHUNKS);
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
    let h = crate::Hyperion::new();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..n {
        // splitmix64
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        h.insert(&z.to_be_bytes(), &z.to_le_bytes()).unwrap();
    }
    let mut rows = vec![(0usize, 0usize, 0usize, 0usize, [0usize; 5]); 64];
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
                    let occ = b.used as usize * 4 / CHUNKS_PER_BIN.max(1);
                    r.4[if b.cap < CHUNKS_PER_BIN {
                        4
                    } else {
                        occ.min(3)
                    }] += 1;
                }
            }
        }
    }
    let st = h.stats();
    println!("{n} keys: {st:?}");
    println!(
        "sb size used bins cap_chunks mapped_MB free_MB free_B/key | bins <1/4 <1/2 <3/4 full* growing"
    );
    for (i, r) in rows.iter().enumerate() {
        if r.1 == 0 {
            continue;
        }
        let size = if i == 0 { 16 } else { i * 32 };
        let free = r.2 - r.0 * size;
        println!(
            "{i:2} {size:5} {:9} {:6} {:9} {:8.1} {:8.1} {:6.3} | {:?}",
            r.0,
            r.1,
            r.3,
            r.2 as f64 / 1e6,
            free as f64 / 1e6,
            free as f64 / n as f64,
            r.4
        );
    }
}
