//! Unit tests of the memory manager.

use super::hp::{CHAIN_SLOTS, CHUNKS_PER_BIN, SLOT_KEYS};
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
