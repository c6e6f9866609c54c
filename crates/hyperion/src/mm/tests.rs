//! Unit tests of the memory manager.

use super::hp::CHUNKS_PER_BIN;
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
/// below `k / 32`, and frees everything.
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
    assert_eq!(mm.resolve(chain, 0), chain.slot(0));
    assert_eq!(mm.resolve(chain, 159), chain.slot(0));
    assert_eq!(mm.resolve(chain, 160), chain.slot(5));
    assert_eq!(mm.resolve(chain, 255), chain.slot(5));
    assert_eq!(mm.get(mm.resolve(chain, 200))[0], 5);
    assert_eq!(chain.slot(5).chain_of(), (chain, 5));
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
