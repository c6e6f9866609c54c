//! Behaviour of the `Slb<I>` wrapper beyond the conformance suite: caching actually happens,
//! writes keep it coherent, batches keep their order, limits and pass-through operations.

mod common;

use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

use common::HashIndex;
use orrery_core::api::{Error, MAX_KEY_LEN, MAX_VALUE_LEN};
use orrery_core::reference::LockedBTreeMap;
use orrery_core::{KvIndex, OrderedKvIndex, OrderedKvIndexExt};
use orrery_slb::{Config, Slb};

fn small() -> Config {
    Config::with_cache_bytes(64 * 64)
}

/// Loads 100 keys, then reads the first 10 ten times each; returns the statistics.
fn ten_hot_keys(config: Config) -> orrery_slb::SlbStats {
    let slb = Slb::with_config(LockedBTreeMap::new(), config).unwrap();
    for i in 0u32..100 {
        slb.insert(&i.to_be_bytes(), &[i as u8; 64]).unwrap();
    }
    for _ in 0..10 {
        for i in 0u32..10 {
            assert_eq!(slb.get(&i.to_be_bytes()), Some(vec![i as u8; 64]));
        }
    }
    slb.stats()
}

#[test]
fn hot_keys_are_served_from_the_cache() {
    let s = ten_hot_keys(small());
    // The buckets have empty slots (warming): each hot key is admitted at its first miss,
    // then hits.
    assert_eq!(s.admissions, 10, "{s}");
    assert_eq!(s.misses, 10, "{s}");
    assert_eq!(s.hits, 90, "{s}");
    assert_eq!(s.cached_items, 10);
    assert!((s.hit_ratio() - 0.9).abs() < 1e-9);
}

#[test]
fn paper_warming_admits_at_the_third_emission() {
    let s = ten_hot_keys(Config {
        warm_admission_threshold: 3,
        ..small()
    });
    // Each of the 10 hot keys misses three times before it is admitted (warming buckets
    // log every emission), then hits.
    assert_eq!((s.admissions, s.misses, s.hits), (10, 30, 70), "{s}");
    assert!((s.hit_ratio() - 0.7).abs() < 1e-9);
}

/// The paper's read path (lookups hold the stripe lock) caches as the lock-free one does.
#[test]
#[cfg(feature = "bench-internals")]
fn locked_reads_cache_the_same_way() {
    use orrery_slb::locked_reads::LockedReadSlb;
    let slb = LockedReadSlb::with_config(LockedBTreeMap::new(), small()).unwrap();
    for i in 0u32..100 {
        slb.insert(&i.to_be_bytes(), &[i as u8; 64]).unwrap();
    }
    for _ in 0..10 {
        for i in 0u32..10 {
            assert_eq!(slb.get(&i.to_be_bytes()), Some(vec![i as u8; 64]));
        }
    }
    let s = slb.stats();
    assert_eq!((s.admissions, s.misses, s.hits), (10, 10, 90), "{s}");
    let keys: Vec<[u8; 4]> = (0u32..12).map(u32::to_be_bytes).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let mut got = Vec::new();
    slb.get_many(&refs, &mut |i, v| got.push((i, v.map(<[u8]>::to_vec))));
    assert_eq!(got.len(), 12);
    assert!(
        got.iter()
            .all(|(i, v)| v.as_deref() == Some(&[*i as u8; 64][..]))
    );
    slb.insert(&0u32.to_be_bytes(), b"new").unwrap();
    assert_eq!(slb.get(&0u32.to_be_bytes()).as_deref(), Some(&b"new"[..]));
}

#[test]
fn writes_update_and_invalidate_cached_items() {
    let slb = Slb::with_config(HashIndex::new(), small()).unwrap();
    assert_eq!(slb.insert(b"k", b"1"), Ok(true));
    for _ in 0..5 {
        assert_eq!(slb.get(b"k").as_deref(), Some(&b"1"[..]));
    }
    assert_eq!(slb.stats().cached_items, 1);
    assert_eq!(slb.insert(b"k", b"2"), Ok(false));
    assert_eq!(slb.stats().updates, 1);
    assert_eq!(slb.get(b"k").as_deref(), Some(&b"2"[..]));
    assert!(slb.contains_key(b"k"));
    assert!(slb.remove(b"k"));
    assert_eq!(slb.get(b"k"), None);
    assert!(!slb.contains_key(b"k"));
    assert!(!slb.remove(b"k"));
    assert_eq!(slb.stats().cached_items, 0);
    assert_eq!(slb.insert(b"k", b"3"), Ok(true));
    assert_eq!(slb.get(b"k").as_deref(), Some(&b"3"[..]));
}

#[test]
fn limits_are_errors_and_large_items_bypass_the_cache() {
    let slb = Slb::with_config(LockedBTreeMap::new(), small()).unwrap();
    let long_key = vec![1; MAX_KEY_LEN + 1];
    assert_eq!(
        slb.insert(&long_key, b"v"),
        Err(Error::KeyTooLong {
            len: MAX_KEY_LEN + 1,
            max: MAX_KEY_LEN
        })
    );
    assert!(matches!(
        slb.insert(b"k", &vec![0; MAX_VALUE_LEN + 1]),
        Err(Error::ValueTooLong { .. })
    ));
    assert_eq!(slb.get(&long_key), None);
    assert!(!slb.remove(&long_key));
    assert!(slb.is_empty());
    // The largest item is accepted and served, but never copied into the SLB.
    let max_key = vec![2; MAX_KEY_LEN];
    let big = vec![3; MAX_VALUE_LEN];
    assert_eq!(slb.insert(&max_key, &big), Ok(true));
    for _ in 0..5 {
        assert_eq!(slb.get(&max_key).as_deref(), Some(&big[..]));
    }
    assert_eq!(slb.stats().cached_items, 0);
    assert_eq!(slb.buffer().memory_usage().key_value_bytes, 0);
}

#[test]
fn get_many_mixes_hits_and_misses_in_order() {
    let slb = Slb::with_config(LockedBTreeMap::new(), small()).unwrap();
    for i in 0u8..20 {
        slb.insert(&[i], &[i, i]).unwrap();
    }
    // Heat the even keys.
    for _ in 0..4 {
        for i in (0u8..20).step_by(2) {
            slb.get(&[i]);
        }
    }
    let keys: Vec<[u8; 1]> = (0u8..25).rev().map(|i| [i]).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    let before = slb.stats();
    let mut got = Vec::new();
    slb.get_many(&refs, &mut |i, v| got.push((i, v.map(<[u8]>::to_vec))));
    let expect: Vec<(usize, Option<Vec<u8>>)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (i, (k[0] < 20).then(|| vec![k[0], k[0]])))
        .collect();
    assert_eq!(got, expect);
    let after = slb.stats();
    assert_eq!(after.hits - before.hits, 10);
    assert_eq!(after.misses - before.misses, 15);
    // All hits, and an empty batch.
    let hot: Vec<[u8; 1]> = (0u8..20).step_by(2).map(|i| [i]).collect();
    let refs: Vec<&[u8]> = hot.iter().map(|k| &k[..]).collect();
    let mut n = 0;
    slb.get_many(&refs, &mut |i, v| {
        assert_eq!(i, n);
        assert_eq!(v, Some(&[hot[i][0], hot[i][0]][..]));
        n += 1;
    });
    assert_eq!(n, hot.len());
    slb.get_many(&[], &mut |_, _| panic!("no keys"));
}

#[test]
fn scans_pass_through() {
    let slb = Slb::with_config(LockedBTreeMap::new(), small()).unwrap();
    for k in [&b"a"[..], b"ab", b"b", b"c"] {
        slb.insert(k, k).unwrap();
        slb.get(k);
    }
    assert_eq!(slb.first().unwrap().0, b"a");
    assert_eq!(slb.last().unwrap().0, b"c");
    assert_eq!(slb.prefix_collect(b"a").len(), 2);
    let mut seen = Vec::new();
    slb.scan_range(Bound::Excluded(b"a"), Bound::Included(b"b"), &mut |k, _| {
        seen.push(k.to_vec());
        ControlFlow::Continue(())
    });
    assert_eq!(seen, [b"ab".to_vec(), b"b".to_vec()]);
    assert_eq!(slb.range_collect(&b"b"[..].., 10).len(), 2);
    assert_eq!(slb.len(), 4);
}

#[test]
fn wraps_trait_objects_and_shared_indexes() {
    let boxed: Box<dyn OrderedKvIndex> = Box::new(LockedBTreeMap::new());
    let slb: Box<dyn OrderedKvIndex> = Box::new(Slb::with_config(boxed, small()).unwrap());
    slb.insert(b"x", b"1").unwrap();
    for _ in 0..4 {
        assert_eq!(slb.get(b"x").as_deref(), Some(&b"1"[..]));
    }
    assert_eq!(slb.first().unwrap().0, b"x");

    let shared = Arc::new(HashIndex::new());
    let slb = Slb::with_config(Arc::clone(&shared), small()).unwrap();
    slb.insert(b"y", b"2").unwrap();
    assert_eq!(shared.len(), 1);
    for _ in 0..4 {
        assert_eq!(slb.get(b"y").as_deref(), Some(&b"2"[..]));
    }
    // Admitted at the first miss (warming bucket), then three hits.
    assert_eq!(slb.stats().hits, 3);
    let index = slb.into_inner();
    assert_eq!(index.get(b"y").as_deref(), Some(&b"2"[..]));
}

#[test]
fn memory_usage_adds_the_slb() {
    let slb = Slb::with_config(LockedBTreeMap::new(), small()).unwrap();
    let empty = slb.memory_usage();
    assert!(empty.structure_bytes >= 64 * 64 * 5, "{empty:?}");
    slb.insert(b"key", b"value").unwrap();
    for _ in 0..3 {
        slb.get(b"key");
    }
    let used = slb.memory_usage();
    // The index's 8 bytes plus the SLB's 16-byte record.
    assert_eq!(used.key_value_bytes, 8 + 16);
    assert!(format!("{slb:?}").contains("Slb"));
}

#[test]
fn paper_default_sizes() {
    for mib in [16, 32, 64] {
        let slb = Slb::with_config(HashIndex::new(), Config::with_cache_mib(mib)).unwrap();
        assert_eq!(slb.stats().capacity, mib * (1 << 20) / 64 * 7);
        let m = slb.buffer().memory_usage();
        assert!(m.structure_bytes >= (mib * 5) << 20);
    }
    assert!(Slb::try_new(HashIndex::new()).is_ok());
    let bad = Slb::with_config(
        HashIndex::new(),
        Config {
            stripes: 3,
            ..Config::default()
        },
    );
    assert!(bad.is_err());
}

/// The read-modify-write calls go through the stripe lock: a cached item is refreshed, never
/// served stale; `get_with` is the generic form; bulk loading goes through the SLB.
#[test]
fn read_modify_write_keeps_the_cache_coherent() {
    let mut slb = Slb::with_config(LockedBTreeMap::new(), small()).unwrap();
    slb.extend([(b"k".to_vec(), b"v1".to_vec())]);
    for _ in 0..5 {
        assert_eq!(slb.get(b"k").as_deref(), Some(&b"v1"[..]));
    }
    assert!(slb.stats().hits > 0, "the item is cached");
    assert_eq!(slb.update(b"k", |old| [old, b"+"].concat()), Ok(true));
    assert_eq!(slb.get(b"k").as_deref(), Some(&b"v1+"[..]));
    assert_eq!(slb.inner().get(b"k").as_deref(), Some(&b"v1+"[..]));
    assert_eq!(slb.update_in_place(b"k", |v| v[0] = b'w'), Ok(true));
    assert_eq!(slb.get_with(b"k", |v| v.to_vec()), Some(b"w1+".to_vec()));
    assert_eq!(slb.update(b"absent", |_| unreachable!()), Ok(false));
    assert!(matches!(
        slb.update(b"k", |_| vec![0; MAX_VALUE_LEN + 1]),
        Err(Error::ValueTooLong { .. })
    ));
    assert_eq!(slb.get(b"k").as_deref(), Some(&b"w1+"[..]));
    assert!(matches!(
        slb.update(&vec![0; MAX_KEY_LEN + 1], |_| Vec::new()),
        Err(Error::KeyTooLong { .. })
    ));
    assert_eq!(slb.insert_all([(b"a", b"1"), (b"b", b"2")]), Ok(2));
    assert_eq!(slb.len(), 3);
}

#[test]
fn builder_validates() {
    assert!(Config::builder().cache_table_bytes(63).build().is_err());
    assert!(Config::builder().log_sample_rate(f64::NAN).build().is_err());
    let c = Config::builder()
        .stripes(16)
        .max_item_bytes(100)
        .build()
        .unwrap();
    assert!(c.max_item_bytes == 100 && c.stripes == 16);
    let bad = Config {
        stripes: 3,
        ..Config::default()
    };
    assert!(matches!(
        Slb::with_config(LockedBTreeMap::new(), bad),
        Err(orrery_slb::ConfigError::Invalid {
            field: "stripes",
            ..
        })
    ));
}
