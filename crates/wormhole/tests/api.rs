//! The user-facing API beyond the conformance suite: iterator allocations, bulk loading,
//! `IntoIterator`, configuration errors, the read-modify-write calls.

use std::collections::BTreeMap;

use orrery_core::api::{ConfigError, Error, MAX_KEY_LEN, MAX_VALUE_LEN};
use orrery_core::testing::count_alloc::{CountingAlloc, allocations};
use orrery_wormhole::{Config, Wormhole};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Allocations made by the calling thread while `f` runs.
fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = allocations();
    f();
    allocations() - before
}

/// Guards the iterator's design: items are handles into a per-leaf arena that is refilled
/// in place, so a full iteration allocates O(leaves), not O(pairs) (the first version
/// allocated two `Vec`s per pair).
#[test]
fn iteration_allocates_per_leaf_not_per_pair() {
    let n: u32 = if cfg!(miri) { 500 } else { 50_000 };
    let wh: Wormhole = (0..n).map(|i| (i.to_be_bytes(), i.to_le_bytes())).collect();
    let leaves = wh.stats().leaves as u64;
    assert!(leaves > 10, "{leaves} leaves");
    // Warm-up: the epoch scheme's thread registration, the arenas' first growth.
    assert_eq!(wh.iter().count(), n as usize);
    assert_eq!(wh.iter().rev().count(), n as usize);
    let up = allocations_in(|| {
        let mut sum = 0u64;
        for e in &wh {
            sum += u64::from(e.value()[0]);
        }
        assert!(sum > 0);
    });
    let down = allocations_in(|| assert_eq!(wh.iter().rev().count(), n as usize));
    let lent = allocations_in(|| {
        let mut it = wh.iter();
        let mut c = 0;
        while it.next_pair().is_some() {
            c += 1;
        }
        assert_eq!(c, n);
    });
    eprintln!("{n} pairs, {leaves} leaves: allocations up {up}, down {down}, lending {lent}");
    // One resume key (the next anchor, or the copied leaf's) per leaf, plus the epoch
    // scheme's occasional bookkeeping; per-pair allocation would be at least `n`.
    for (what, count) in [("ascending", up), ("descending", down), ("lending", lent)] {
        assert!(
            count <= 2 * leaves && count * 20 < u64::from(n),
            "{what}: {count} allocations for {n} pairs in {leaves} leaves"
        );
    }
}

#[test]
fn bulk_loading_and_into_iterator() {
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0u32..3000)
        .map(|i| {
            (
                i.wrapping_mul(2_654_435_761).to_be_bytes().to_vec(),
                vec![i as u8],
            )
        })
        .collect();
    let mut wh: Wormhole = pairs.iter().cloned().collect();
    wh.extend([(b"extra".to_vec(), b"x".to_vec())]);
    let model: BTreeMap<_, _> = pairs
        .into_iter()
        .chain([(b"extra".to_vec(), b"x".to_vec())])
        .collect();
    let got: Vec<(Vec<u8>, Vec<u8>)> = (&wh).into_iter().map(|e| e.into_pair()).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
    assert_eq!(got, want);
    let over = vec![0; MAX_VALUE_LEN + 1];
    assert_eq!(
        wh.insert_all([(&b"a"[..], &b"1"[..]), (b"b", &over), (b"c", b"3")]),
        Err(Error::ValueTooLong {
            len: MAX_VALUE_LEN + 1,
            max: MAX_VALUE_LEN
        })
    );
    assert_eq!(wh.get(b"a").as_deref(), Some(&b"1"[..]));
    assert_eq!(wh.get(b"c"), None);
}

#[test]
#[should_panic(expected = "Wormhole::extend")]
fn extend_panics_on_over_long_input() {
    let mut wh = Wormhole::new();
    wh.extend([(vec![0u8; MAX_KEY_LEN + 1], b"v".to_vec())]);
}

#[test]
fn configuration_is_validated_not_clamped() {
    for cap in [0, 7, 257, usize::MAX] {
        let err = Config::builder().leaf_capacity(cap).build().unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::Invalid {
                    field: "leaf_capacity",
                    ..
                }
            ),
            "{err}"
        );
        let raw = Config {
            leaf_capacity: cap,
            ..Config::default()
        };
        assert_eq!(Wormhole::with_config(raw).unwrap_err(), err);
    }
    for cap in [8, 256] {
        let wh =
            Wormhole::with_config(Config::builder().leaf_capacity(cap).build().unwrap()).unwrap();
        assert_eq!(wh.config().leaf_capacity, cap);
    }
}

#[test]
fn read_modify_write_calls() {
    let wh = Wormhole::new();
    // update: replace an existing value, never insert.
    assert_eq!(wh.update(b"k", |_| b"new".to_vec()), Ok(false));
    assert!(wh.get(b"k").is_none());
    wh.insert(b"k", b"v").unwrap();
    assert_eq!(wh.update(b"k", |old| [old, b"2"].concat()), Ok(true));
    assert_eq!(wh.get(b"k").as_deref(), Some(&b"v2"[..]));
    assert!(matches!(
        wh.update(b"k", |_| vec![0; MAX_VALUE_LEN + 1]),
        Err(Error::ValueTooLong { .. })
    ));
    assert_eq!(wh.get(b"k").as_deref(), Some(&b"v2"[..]));
    // update_in_place: same length, Result<bool> like Mercury's.
    assert_eq!(wh.update_in_place(b"k", |v| v[0] = b'w'), Ok(true));
    assert_eq!(wh.update_in_place(b"absent", |_| unreachable!()), Ok(false));
    let long = vec![1; MAX_KEY_LEN + 1];
    assert!(matches!(
        wh.update_in_place(&long, |_| ()),
        Err(Error::KeyTooLong { .. })
    ));
    assert!(matches!(
        wh.update(&long, |_| Vec::new()),
        Err(Error::KeyTooLong { .. })
    ));
    // compute: upsert or remove.
    assert_eq!(
        wh.compute(b"c", |old| old.map(<[u8]>::to_vec).or(Some(b"1".to_vec()))),
        Ok(false)
    );
    assert_eq!(wh.compute(b"c", |_| None), Ok(true));
    assert!(!wh.contains_key(b"c"));
    // get_with: generic, returns the closure's result.
    assert_eq!(wh.get_with(b"k", |v| v.len()), Some(2));
    assert_eq!(wh.get_with(b"zz", |v| v.len()), None);
}
