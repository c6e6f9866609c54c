//! Single-threaded differential tests against `BTreeMap`, with full structural validation.

#![allow(clippy::multiple_unsafe_ops_per_block)]

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::ablation::{ALL, BASE, SORT_BY_TAG, TAG_MATCHING};
use crate::{Config, Entry, Wormhole, WormholeWith};

/// Leaf capacities the differential test runs with, each with every optimization.
fn configs() -> Vec<Config> {
    let base = Config {
        leaf_capacity: 8,
        ..Config::default()
    };
    vec![
        base,
        Config {
            leaf_capacity: 16,
            ..Config::default()
        },
    ]
}

fn collect<const OPTS: u32>(
    wh: &WormholeWith<OPTS>,
    start: Bound<&[u8]>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    wh.scan(start, &mut |k, v| {
        out.push((k.to_vec(), v.to_vec()));
        ControlFlow::Continue(())
    });
    out
}

/// Keys from a tiny alphabet with zero runs, so prefixes, anchors that are prefixes of each
/// other, and keys differing only in trailing `0x00` are frequent.
fn nasty_key(rng: &mut SmallRng) -> Vec<u8> {
    let len = rng.random_range(0..6);
    (0..len)
        .map(|_| [0u8, 0, 1, 0xFF, b'a'][rng.random_range(0..5)])
        .collect()
}

fn random_key(rng: &mut SmallRng) -> Vec<u8> {
    if rng.random_bool(0.5) {
        nasty_key(rng)
    } else {
        rng.random::<u16>().to_be_bytes()[..rng.random_range(1..3)].to_vec()
    }
}

fn differential<const OPTS: u32>(cfg: Config, seed: u64, ops: usize) {
    let wh = WormholeWith::<OPTS>::with_config(cfg).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    for step in 0..ops {
        let k = random_key(&mut rng);
        match rng.random_range(0..10) {
            0..=4 => {
                let v = rng.random::<u32>().to_le_bytes()[..rng.random_range(0..5)].to_vec();
                let new = wh.insert(&k, &v).unwrap();
                assert_eq!(new, model.insert(k.clone(), v).is_none());
            }
            5..=6 => assert_eq!(wh.remove(&k), model.remove(&k).is_some()),
            7 => assert_eq!(wh.get(&k), model.get(&k).cloned()),
            8 => {
                let got = collect(&wh, Bound::Excluded(&k));
                let want: Vec<_> = model
                    .range::<[u8], _>((Bound::Excluded(k.as_slice()), Bound::Unbounded))
                    .map(|(a, b)| (a.clone(), b.clone()))
                    .collect();
                assert_eq!(got, want);
            }
            _ => {
                let k2 = random_key(&mut rng);
                let (a, b) = if k <= k2 { (k, k2) } else { (k2, k) };
                let n = wh.remove_range(Bound::Included(&a), Bound::Excluded(&b));
                let gone: Vec<_> = model
                    .range::<[u8], _>((
                        Bound::Included(a.as_slice()),
                        Bound::Excluded(b.as_slice()),
                    ))
                    .map(|(k, _)| k.clone())
                    .collect();
                assert_eq!(n, gone.len());
                for g in gone {
                    model.remove(&g);
                }
            }
        }
        if step % 97 == 0 {
            wh.check_invariants().unwrap();
        }
    }
    wh.check_invariants().unwrap();
    assert_eq!(
        collect(&wh, Bound::Unbounded),
        model.clone().into_iter().collect::<Vec<_>>()
    );
    assert_eq!(
        wh.first(),
        model.first_key_value().map(|(a, b)| (a.clone(), b.clone()))
    );
    assert_eq!(
        wh.last(),
        model.last_key_value().map(|(a, b)| (a.clone(), b.clone()))
    );
    for (k, v) in &model {
        assert_eq!(wh.get(k).as_ref(), Some(v));
    }
    // Drain everything: merges down to the head leaf.
    let keys: Vec<_> = model.keys().cloned().collect();
    for k in keys {
        assert!(wh.remove(&k));
    }
    wh.check_invariants().unwrap();
    assert!(wh.is_empty());
    assert_eq!(wh.first(), None);
    assert_eq!(wh.last(), None);
}

#[test]
fn differential_small_leaves() {
    let ops = if cfg!(miri) { 300 } else { 20_000 };
    for (i, cfg) in configs().into_iter().enumerate() {
        differential::<ALL>(cfg, 7 + i as u64, ops);
    }
    let small = configs()[0];
    // BaseWormhole (Fig 11), and TagMatching with SortByTag but without IncHashing and
    // DirectPos.
    differential::<BASE>(small, 9, ops);
    differential::<{ TAG_MATCHING | SORT_BY_TAG }>(small, 10, ops);
}

#[test]
fn trailing_zero_keys_split_without_fat_nodes() {
    // The paper's fat-node case (§3.3, Fig 8): keys "1", "10", "100", ... all in one leaf.
    let n = if cfg!(miri) { 40 } else { 600 };
    let wh = Wormhole::with_config(Config::builder().leaf_capacity(8).build().unwrap()).unwrap();
    for z in 0..n {
        let mut k = vec![1u8];
        k.extend(std::iter::repeat_n(0u8, z));
        assert!(wh.insert(&k, &[z as u8]).unwrap());
    }
    // Also keys that are all zeros, and the empty key.
    for z in 0..n / 2 {
        assert!(wh.insert(&vec![0u8; z], b"z").unwrap());
    }
    wh.check_invariants().unwrap();
    assert!(
        wh.stats().leaves > n / 8,
        "leaves split: {}",
        wh.stats().leaves
    );
    for z in 0..n {
        let mut k = vec![1u8];
        k.extend(std::iter::repeat_n(0u8, z));
        assert_eq!(wh.get(&k), Some(vec![z as u8]));
    }
    let all = collect(&wh, Bound::Unbounded);
    assert_eq!(all.len(), n + n / 2);
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn sequential_and_long_keys() {
    let n: u32 = if cfg!(miri) { 200 } else { 20_000 };
    let wh = Wormhole::new();
    for i in 0..n {
        let mut k = vec![b'x'; 300];
        k.extend_from_slice(&i.to_be_bytes());
        wh.insert(&k, &i.to_le_bytes()).unwrap();
    }
    wh.check_invariants().unwrap();
    for i in (0..n).step_by(7) {
        let mut k = vec![b'x'; 300];
        k.extend_from_slice(&i.to_be_bytes());
        assert_eq!(wh.get(&k), Some(i.to_le_bytes().to_vec()));
        k.push(0);
        assert_eq!(wh.get(&k), None);
    }
    let mut it = wh.range::<[u8], _>((Bound::Included(&[b'x'; 300][..]), Bound::Unbounded));
    assert_eq!(it.next().unwrap().value(), 0u32.to_le_bytes());
    assert_eq!(wh.iter().count(), n as usize);
}

#[test]
fn update_and_get_many() {
    let wh = Wormhole::with_config(Config::builder().leaf_capacity(8).build().unwrap()).unwrap();
    let n = if cfg!(miri) { 50u64 } else { 5_000 };
    for i in 0..n {
        wh.compute(&i.to_be_bytes(), |old| {
            assert!(old.is_none());
            Some(i.to_le_bytes().to_vec())
        })
        .unwrap();
    }
    for i in 0..n {
        assert!(
            wh.update_in_place(&i.to_be_bytes(), |v| v[0] = v[0].wrapping_add(1))
                .unwrap()
        );
        assert!(
            wh.update(&i.to_be_bytes(), |old| {
                let mut v = old.to_vec();
                v.push(9);
                v
            })
            .unwrap()
        );
    }
    let keys: Vec<[u8; 8]> = (0..n + 10).map(|i| i.to_be_bytes()).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
    let mut seen = 0;
    wh.get_many(&refs, &mut |i, v| {
        assert_eq!(i, seen);
        seen += 1;
        if (i as u64) < n {
            let mut want = (i as u64).to_le_bytes().to_vec();
            want[0] = want[0].wrapping_add(1);
            want.push(9);
            assert_eq!(v, Some(want.as_slice()));
        } else {
            assert_eq!(v, None);
        }
    });
    assert_eq!(seen, n as usize + 10);
    // Delete through update.
    for i in 0..n / 2 {
        assert!(wh.compute(&i.to_be_bytes(), |_| None).unwrap());
    }
    assert_eq!(wh.len(), (n - n / 2) as usize);
    wh.check_invariants().unwrap();
    assert!(
        wh.compute(&[], |_| Some(vec![0; orrery_core::api::MAX_VALUE_LEN + 1]))
            .is_err()
    );
    assert!(wh.get(&[]).is_none());
}

/// Dropping an index frees every pair: inline pairs, pool blocks (also above 256 bytes)
/// and blocks over 512 bytes from the global allocator (under Miri a block left behind is a reported leak), also in
/// leaves whose order array was never sorted.
#[test]
fn drop_frees_all_pairs() {
    let n = if cfg!(miri) { 120 } else { 5_000 };
    let wh = Wormhole::with_config(Config::builder().leaf_capacity(16).build().unwrap()).unwrap();
    for i in 0..n as u32 {
        let v = vec![i as u8; [4, 40, 300, 600][i as usize % 4]];
        wh.insert(&i.wrapping_mul(2_654_435_761).to_be_bytes(), &v)
            .unwrap();
    }
    for i in (0..n as u32).step_by(7) {
        wh.remove(&i.wrapping_mul(2_654_435_761).to_be_bytes());
    }
    wh.check_invariants().unwrap();
    let live = wh.raw.kvp.live_bytes();
    assert!(live > 0, "pool blocks in use before the drop");
    assert!(
        wh.raw.kvp.large_bytes() > 0,
        "large blocks in use before the drop"
    );
    drop(wh);
}

#[test]
fn memory_usage_counts() {
    let wh = Wormhole::new();
    let empty = wh.memory_usage();
    for i in 0..1000u32 {
        wh.insert(&i.to_be_bytes(), &[0u8; 12]).unwrap();
    }
    let m = wh.memory_usage();
    // Key + value = 16 bytes: inline pairs, counted as their bytes.
    assert_eq!(m.key_value_bytes, 1000 * (4 + 12));
    // The inline bytes are inside the leaf chunks, so the structure part may shrink; the
    // total may not.
    assert!(m.structure_bytes + m.key_value_bytes > empty.structure_bytes);
    assert!(m.structure_bytes + m.key_value_bytes >= wh.raw.pool.reserved_bytes());
    // One byte more: blocks (2-byte header, 8-byte size classes: 2 + 4 + 13 -> 24).
    let wh = Wormhole::new();
    for i in 0..1000u32 {
        wh.insert(&i.to_be_bytes(), &[0u8; 13]).unwrap();
    }
    assert_eq!(wh.memory_usage().key_value_bytes, 1000 * 24);
    wh.check_invariants().unwrap();
    // Values over 255 bytes: the 4-byte medium header and a size class above 256 bytes
    // (4 + 4 + 330 = 338 -> 344), not the global allocator.
    let wh = Wormhole::new();
    for i in 0..1000u32 {
        wh.insert(&i.to_be_bytes(), &[0u8; 330]).unwrap();
    }
    assert_eq!(wh.memory_usage().key_value_bytes, 1000 * 344);
    assert_eq!(wh.raw.kvp.large_bytes(), 0);
    // Above the largest class: exact bytes from the global allocator (9-byte long header
    // for a value over 64 KiB).
    wh.insert(b"big", &vec![1u8; 70_000]).unwrap();
    assert_eq!(wh.raw.kvp.large_bytes(), 9 + 3 + 70_000);
    wh.check_invariants().unwrap();
}

/// Inline pairs (`leaf`, "Inline pairs"): values growing past the inline limit and
/// shrinking back, through splits and merges, in an index of small pairs (inline leaves);
/// and an index of long keys, whose splits make plain leaves.
#[test]
fn inline_pairs_grow_shrink_split_merge() {
    let n: u32 = if cfg!(miri) { 300 } else { 20_000 };
    let mut model = BTreeMap::new();
    let wh = Wormhole::with_config(Config::builder().leaf_capacity(16).build().unwrap()).unwrap();
    for i in 0..n {
        let k = i.wrapping_mul(0x9E37_79B9).to_be_bytes();
        let v = vec![i as u8; (i % 13) as usize]; // 4 + 12 = 16 fits, 4 + 13 does not
        wh.insert(&k, &v).unwrap();
        model.insert(k.to_vec(), v);
    }
    wh.check_invariants().unwrap();
    for (r, (k, v)) in model.iter_mut().enumerate() {
        // Grow past the limit, shrink, change in place.
        let new = match r % 3 {
            0 => vec![1u8; 13 + r % 7],
            1 => vec![2u8; r % 12],
            _ => v.iter().map(|b| b ^ 0xFF).collect(),
        };
        if r % 3 == 2 {
            assert!(
                wh.update_in_place(k, |x| x.iter_mut().for_each(|b| *b ^= 0xFF))
                    .unwrap()
            );
        } else {
            assert!(!wh.insert(k, &new).unwrap());
        }
        *v = new;
    }
    let (inl, plain) = wh.raw.pool.live();
    assert!(
        inl > plain && wh.raw.pool.prefetch_cells(),
        "small pairs: inline leaves"
    );
    wh.check_invariants().unwrap();
    let got: Vec<(Vec<u8>, Vec<u8>)> = wh.iter().map(Entry::into_pair).collect();
    assert_eq!(got, model.clone().into_iter().collect::<Vec<_>>());
    // Remove most keys (merges move inline pairs), then check every survivor.
    remove_7_of_8(&wh, &mut model);
    let m = wh.memory_usage();
    let kv: usize = model
        .iter()
        .map(|(k, v)| {
            if k.len() + v.len() <= 16 {
                k.len() + v.len()
            } else {
                (2 + k.len() + v.len()).next_multiple_of(8)
            }
        })
        .sum();
    assert_eq!(m.key_value_bytes, kv);

    // Long keys: splits make plain leaves, the head's small pairs that move into them
    // become blocks, and nothing is lost.
    let wh = Wormhole::with_config(Config::builder().leaf_capacity(16).build().unwrap()).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..(n / 4) {
        let mut k = b"a-long-shared-prefix/".to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        let v = if i < 4 { vec![] } else { vec![7u8; 3] };
        wh.insert(&k, &v).unwrap();
        model.insert(k, v);
        // A few short pairs that would fit inline.
        if i % 4 == 0 {
            wh.insert(&i.to_be_bytes(), b"s").unwrap();
            model.insert(i.to_be_bytes().to_vec(), b"s".to_vec());
        }
    }
    let (inl, plain) = wh.raw.pool.live();
    assert!(
        inl < plain && !wh.raw.pool.prefetch_cells(),
        "long keys: plain leaves"
    );
    wh.check_invariants().unwrap();
    let got: Vec<(Vec<u8>, Vec<u8>)> = wh.iter().map(Entry::into_pair).collect();
    assert_eq!(got, model.into_iter().collect::<Vec<_>>());
}

/// Removes all keys of `model` but every eighth (in key order) from `wh` and the model
/// (leaves merge), validates, and looks every survivor up.
fn remove_7_of_8(wh: &Wormhole, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    for (r, k) in keys.iter().enumerate() {
        if r % 8 != 0 {
            assert!(wh.remove(k));
            model.remove(k);
        }
    }
    wh.check_invariants().unwrap();
    for (k, v) in model.iter() {
        assert_eq!(wh.get(k).as_deref(), Some(v.as_slice()));
    }
}

/// Bounds of the `key_value_bytes` of `model`'s pairs: a pair's form (inline bytes or a
/// block's slot) depends on its leaf's kind, so each pair counts between its smallest and
/// its largest form. (`debug_validate` checks the exact figure against the leaves.)
fn kv_bytes_bounds(model: &BTreeMap<Vec<u8>, Vec<u8>>) -> (usize, usize) {
    let (mut lo, mut hi) = (0, 0);
    for (k, v) in model {
        let n = k.len() + v.len();
        let block = (2 + n).next_multiple_of(8);
        hi += block.max(n);
        lo += if n <= 16 { n } else { block };
    }
    (lo, hi)
}

/// Each leaf's kind follows the pairs it was made for (`leaf`, "Inline pairs"): an index
/// that starts with long keys (plain leaves) and then takes many small pairs makes inline
/// leaves for them, moving the small pairs of plain leaves inline when they split into an
/// inline leaf; the reverse (small pairs, then long ones) makes plain leaves. Merges move
/// pairs between the kinds. Every step keeps the contents, the structure and the memory
/// counters right.
#[test]
fn leaf_kinds_follow_the_pairs() {
    let n: u32 = if cfg!(miri) { 200 } else { 20_000 };
    for small_first in [false, true] {
        let wh =
            Wormhole::with_config(Config::builder().leaf_capacity(16).build().unwrap()).unwrap();
        let mut model = BTreeMap::new();
        let long = |i: u32| {
            let mut k = b"a-long-shared-prefix/".to_vec();
            k.extend_from_slice(&i.wrapping_mul(0x9E37_79B9).to_be_bytes());
            k
        };
        let short = |i: u32| i.wrapping_mul(0x85EB_CA6B).to_be_bytes().to_vec();
        type KeyFn<'a> = &'a dyn Fn(u32) -> Vec<u8>;
        let (first, second): (KeyFn, KeyFn) = if small_first {
            (&short, &long)
        } else {
            (&long, &short)
        };
        for i in 0..n / 4 {
            let k = first(i);
            wh.insert(&k, b"v").unwrap();
            model.insert(k, b"v".to_vec());
        }
        let before = wh.raw.pool.live();
        // The second kind of pairs, 3x as many, over the same key space: splits of leaves
        // of the first kind make leaves of the second kind.
        for i in 0..n {
            let k = second(i);
            wh.insert(&k, b"w").unwrap();
            model.insert(k, b"w".to_vec());
        }
        wh.check_invariants().unwrap();
        let after = wh.raw.pool.live();
        if small_first {
            assert!(before.0 > before.1, "{before:?}");
            assert!(
                after.1 > before.1 + 10,
                "plain leaves for long keys: {after:?}"
            );
        } else {
            assert!(before.0 < before.1, "{before:?}");
            assert!(
                after.0 > before.0 + 10,
                "inline leaves for short keys: {after:?}"
            );
        }
        let got: Vec<(Vec<u8>, Vec<u8>)> = wh.iter().map(Entry::into_pair).collect();
        assert_eq!(got, model.clone().into_iter().collect::<Vec<_>>());
        let (lo, hi) = kv_bytes_bounds(&model);
        let kvb = wh.memory_usage().key_value_bytes;
        assert!((lo..=hi).contains(&kvb), "{lo} <= {kvb} <= {hi}");
        // Remove 7 of 8 of each kind: merges move pairs between leaves of both kinds.
        remove_7_of_8(&wh, &mut model);
        let got: Vec<(Vec<u8>, Vec<u8>)> = wh.iter().map(Entry::into_pair).collect();
        assert_eq!(got, model.clone().into_iter().collect::<Vec<_>>());
        let (lo, hi) = kv_bytes_bounds(&model);
        let kvb = wh.memory_usage().key_value_bytes;
        assert!((lo..=hi).contains(&kvb), "{lo} <= {kvb} <= {hi}");
        assert_eq!(wh.len(), model.len());
    }
}

#[test]
fn iterator_seek_matches_btreemap() {
    let wh = Wormhole::with_config(Config::builder().leaf_capacity(8).build().unwrap()).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(99);
    let n = if cfg!(miri) { 60 } else { 3000 };
    for _ in 0..n {
        let k = random_key(&mut rng);
        wh.insert(&k, &k).unwrap();
        model.insert(k.clone(), k);
    }
    let mut it = wh.iter();
    for _ in 0..if cfg!(miri) { 10 } else { 300 } {
        let k = random_key(&mut rng);
        let (bound, want) = if rng.random_bool(0.5) {
            (
                Bound::Included(k.as_slice()),
                model.range::<[u8], _>((Bound::Included(k.as_slice()), Bound::Unbounded)),
            )
        } else {
            (
                Bound::Excluded(k.as_slice()),
                model.range::<[u8], _>((Bound::Excluded(k.as_slice()), Bound::Unbounded)),
            )
        };
        it.seek(bound);
        let take = rng.random_range(0..40);
        let got: Vec<_> = it.by_ref().take(take).map(Entry::into_pair).collect();
        let want: Vec<_> = want
            .take(take)
            .map(|(a, b)| (a.clone(), b.clone()))
            .collect();
        assert_eq!(got, want);
        // Writing while an iterator is alive is allowed (it holds no lock).
        let k2 = random_key(&mut rng);
        wh.insert(&k2, &k2).unwrap();
        model.insert(k2.clone(), k2);
    }
    it.seek(Bound::Unbounded);
    assert_eq!(it.count(), model.len());
    let p = [b'a'];
    let mut got = Vec::new();
    wh.scan_prefix(&p, &mut |k, _| {
        got.push(k.to_vec());
        ControlFlow::Continue(())
    });
    let want: Vec<_> = model
        .keys()
        .filter(|k| k.starts_with(&p))
        .cloned()
        .collect();
    assert_eq!(got, want);
}

/// Descending iteration and both ends (the leftward leaf walk of `copy_leaf_rev`) against
/// `BTreeMap::range(..).rev()`, across splits and merges, with writes between calls and
/// empty leaves left by removals (sized for Miri: it runs the leaf walk's unsafe code).
#[test]
fn reverse_iteration_matches_btreemap() {
    let wh = Wormhole::with_config(Config::builder().leaf_capacity(8).build().unwrap()).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = SmallRng::seed_from_u64(5);
    let n = if cfg!(miri) { 60 } else { 3000 };
    for _ in 0..n {
        let k = random_key(&mut rng);
        wh.insert(&k, &k).unwrap();
        model.insert(k.clone(), k);
    }
    for _ in 0..if cfg!(miri) { 8 } else { 200 } {
        let a = random_key(&mut rng);
        let b = random_key(&mut rng);
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let got: Vec<_> = wh
            .range(lo.as_slice()..=hi.as_slice())
            .rev()
            .map(Entry::into_pair)
            .collect();
        let want: Vec<_> = model
            .range::<[u8], _>((
                Bound::Included(lo.as_slice()),
                Bound::Included(hi.as_slice()),
            ))
            .rev()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got, want);
        // Both ends, with writes between the calls (keys outside the range only, so the
        // result stays exact).
        let mut it = wh.range(lo.as_slice()..=hi.as_slice());
        let mut dq: std::collections::VecDeque<_> = want.into_iter().rev().collect();
        loop {
            let k = random_key(&mut rng);
            if k < lo || k > hi {
                if rng.random_bool(0.5) {
                    wh.insert(&k, b"x").unwrap();
                } else {
                    wh.remove(&k);
                }
            }
            let (got, want) = if rng.random_bool(0.5) {
                (it.next(), dq.pop_front())
            } else {
                (it.next_back(), dq.pop_back())
            };
            assert_eq!(got.map(Entry::into_pair), want);
            if want.is_none() {
                break;
            }
        }
        // Restore the model outside the range from the index (the writes above).
        model = wh.iter().map(Entry::into_pair).collect();
    }
    // Remove most keys so that leaves empty and merge, then walk down through them.
    let keys: Vec<_> = model.keys().cloned().collect();
    for (i, k) in keys.iter().enumerate() {
        if i % 5 != 0 {
            wh.remove(k);
            model.remove(k);
        }
    }
    wh.check_invariants().unwrap();
    let got: Vec<_> = wh.iter().rev().map(Entry::into_pair).collect();
    let want: Vec<_> = model
        .iter()
        .rev()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(got, want);
}

/// Regression: a caller that holds a guard of the shared epoch scheme while inserting (as a
/// wrapper pinning around index calls would) used to wait forever in the second split for a
/// grace period its own pin blocked.
#[test]
fn splits_while_caller_is_pinned() {
    let wh = Wormhole::with_config(Config::builder().leaf_capacity(8).build().unwrap()).unwrap();
    let n = if cfg!(miri) { 40u32 } else { 2000 };
    {
        let _g = orrery_core::sync::pin();
        for i in 0..n {
            wh.insert(&i.to_be_bytes(), b"v").unwrap();
        }
        for i in 0..n / 2 {
            assert!(wh.remove(&i.to_be_bytes()));
        }
    }
    wh.check_invariants().unwrap();
    assert_eq!(wh.len(), (n - n / 2) as usize);
}

/// Inserts 8-byte keys `from..` (8-byte values) until `done` holds; returns the next key.
fn insert_until(wh: &Wormhole, mut from: u64, done: impl Fn(&Wormhole) -> bool) -> u64 {
    while !done(wh) {
        let k = from.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes();
        wh.insert(&k, &from.to_le_bytes()).unwrap();
        from += 1;
    }
    from
}

/// Waits (at most a minute) until the populator holds a spare chunk.
fn wait_spare(wh: &Wormhole) -> bool {
    orrery_core::sync::wait_until(orrery_core::testing::wait::DEADLINE, || {
        wh.raw.populator.spare_bytes() > 0
    })
}

/// With `prefault` (the default) the populator's thread starts once the pools hold 16 MiB;
/// the next chunk a pool needs is a spare one; the spare is counted in `memory_usage()`
/// exactly once; and the pairs are intact.
#[test]
#[cfg_attr(miri, ignore = "needs 16 MiB of slab chunks: too slow under Miri")]
fn prefault_serves_the_pools_spare_chunks() {
    let wh = Wormhole::new();
    assert!(wh.config().prefault);
    let chunks = |wh: &Wormhole| wh.raw.pool.reserved_bytes() + wh.raw.kvp.reserved_bytes();
    let n = insert_until(&wh, 0, |wh| wh.raw.populator_stats().started);
    let s = wh.raw.populator_stats();
    assert_eq!(s.served + s.missed, 8, "started at 16 MiB: {s:?}");
    assert!(wait_spare(&wh), "the thread populates a spare chunk");
    let spare = wh.raw.populator.spare_bytes();
    let m = wh.memory_usage();
    let before = chunks(&wh);
    // The spare is in `memory_usage()`, not in any pool.
    let without =
        Wormhole::with_config(Config::builder().prefault(false).build().unwrap()).unwrap();
    insert_until(&without, 0, |w| w.len() == n as usize);
    assert_eq!(
        m.structure_bytes + m.key_value_bytes,
        without.memory_usage().structure_bytes + without.memory_usage().key_value_bytes + spare
    );
    let n = insert_until(&wh, n, |wh| chunks(wh) > before);
    let s = wh.raw.populator_stats();
    assert!(s.served >= 1, "{s:?}");
    for i in (0..n).step_by(97) {
        let k = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes();
        assert_eq!(wh.get(&k), Some(i.to_le_bytes().to_vec()), "{i}");
    }
    assert_eq!(wh.len(), n as usize);
    // Switched off: no thread however large the index, nothing in reserve.
    insert_until(&without, n, |w| w.len() == n as usize);
    assert_eq!(without.raw.populator_stats(), Default::default());
    assert_eq!(without.raw.populator.spare_bytes(), 0);
    assert_eq!(without.len(), n as usize);
}

/// Giving memory back (`compact`): after filling several slab chunks of small leaves and
/// removing the first 90% inserted, survivors (leaves, and with long values their pair
/// blocks) move to lower chunks, the leaf and pair pools hold far fewer bytes than
/// without moving, and the index stays exact and valid (and usable: refilled afterwards).
#[test]
fn mass_removal_moves_leaves_and_blocks() {
    let n: u64 = if cfg!(miri) { 3_000 } else { 120_000 };
    // 330: pair blocks in a class above 256 bytes (from the global allocator before).
    for vlen in [8usize, 24, 330] {
        let wh = Wormhole::with_config(Config {
            leaf_capacity: 8,
            prefault: false,
            ..Config::default()
        })
        .unwrap();
        let mut rng = SmallRng::seed_from_u64(38);
        let keys: Vec<[u8; 8]> = (0..n).map(|_| rng.random::<u64>().to_be_bytes()).collect();
        let mut model = BTreeMap::new();
        for (i, k) in keys.iter().enumerate() {
            let v = vec![i as u8; vlen];
            wh.insert(k, &v).unwrap();
            model.insert(k.to_vec(), v);
        }
        let full = (wh.raw.pool.reserved_bytes(), wh.raw.kvp.reserved_bytes());
        for k in &keys[..keys.len() / 10 * 9] {
            wh.remove(k);
            model.remove(&k[..]);
        }
        orrery_core::testing::memory::drain_retired();
        let st = wh.stats();
        assert!(st.moves > 0, "value of {vlen} bytes: no leaf moved");
        assert_eq!(wh.check_invariants(), Ok(model.len()));
        let got = collect(&wh, Bound::Unbounded);
        assert!(got.iter().map(|(k, v)| (k, v)).eq(model.iter()));
        let after = (wh.raw.pool.reserved_bytes(), wh.raw.kvp.reserved_bytes());
        eprintln!(
            "vlen {vlen}: moves {}, leaves {}, pools full {full:?} after {after:?}",
            st.moves, st.leaves
        );
        if !cfg!(miri) {
            assert!(after.0 < full.0, "leaf pools: {after:?} of {full:?}");
            if vlen > 8 {
                assert!(
                    after.1 * 3 < full.1 * 2,
                    "pair pools: {after:?} of {full:?}"
                );
            }
        }
        for (i, k) in keys[..1000].iter().enumerate() {
            wh.insert(k, &[i as u8; 3]).unwrap();
            model.insert(k.to_vec(), vec![i as u8; 3]);
        }
        assert_eq!(wh.check_invariants(), Ok(model.len()));
    }
}

/// Moves under concurrency (`compact`, "Moving leaves"): two threads remove the first 90%
/// inserted while a reader keeps finding every kept key with its value, and a scanner sees
/// ascending keys including every kept key; leaves move meanwhile.
#[test]
#[cfg_attr(miri, ignore = "hundreds of thousands of operations")]
fn moves_while_reading_and_scanning() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let wh = Wormhole::with_config(Config {
        leaf_capacity: 8,
        prefault: false,
        ..Config::default()
    })
    .unwrap();
    let n = 120_000usize;
    let mut rng = SmallRng::seed_from_u64(7);
    let keys: Vec<[u8; 8]> = (0..n).map(|_| rng.random::<u64>().to_be_bytes()).collect();
    for k in &keys {
        wh.insert(k, &k[..4]).unwrap();
    }
    let cut = n / 10 * 9;
    let kept: std::collections::BTreeSet<[u8; 8]> = keys[cut..].iter().copied().collect();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        for half in keys[..cut].chunks(cut / 2 + 1) {
            let wh = &wh;
            s.spawn(move || {
                for k in half {
                    wh.remove(k);
                }
            });
        }
        let (wh, kept, done) = (&wh, &kept, &done);
        s.spawn(move || {
            while !done.load(Ordering::Relaxed) {
                for k in kept.iter().step_by(97) {
                    assert_eq!(wh.get(k).as_deref(), Some(&k[..4]), "kept key lost");
                }
            }
        });
        s.spawn(move || {
            // Short scans (a long one would hold every structural change's grace period).
            while !done.load(Ordering::Relaxed) {
                for from in kept.iter().step_by(211) {
                    let want: Vec<&[u8; 8]> = kept.range(*from..).take(16).collect();
                    let last = *want[want.len() - 1];
                    let mut prev: Option<Vec<u8>> = None;
                    let mut seen = 0;
                    wh.scan(Bound::Included(&from[..]), &mut |k, _| {
                        assert!(prev.as_deref().is_none_or(|p| p < k), "scan out of order");
                        if k.len() == 8 && kept.contains(<&[u8; 8]>::try_from(k).unwrap()) {
                            seen += 1;
                        }
                        prev = Some(k.to_vec());
                        if k >= &last[..] {
                            ControlFlow::Break(())
                        } else {
                            ControlFlow::Continue(())
                        }
                    });
                    assert_eq!(seen, want.len(), "a scan missed kept keys");
                }
            }
        });
        // The removers are the first two threads spawned; the scope joins them all, so
        // signal the readers once the removals are done.
        s.spawn(move || {
            while wh.len() > kept.len() {
                std::thread::yield_now();
            }
            done.store(true, Ordering::Relaxed);
        });
    });
    assert!(wh.stats().moves > 0, "no leaf moved");
    assert_eq!(wh.check_invariants(), Ok(kept.len()));
}
