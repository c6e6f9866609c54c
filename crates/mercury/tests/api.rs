//! The user-facing API beyond the conformance suite: the unordered iterator (against a
//! model, and its allocations), bulk loading, `IntoIterator`, configuration errors, the
//! read-modify-write calls.

use std::collections::BTreeMap;

use orrery_core::api::{ConfigError, Error, MAX_KEY_LEN, MAX_VALUE_LEN};
use orrery_core::testing::count_alloc::{CountingAlloc, allocations};
use orrery_mercury::{Config, Mercury};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fn sorted(m: &Mercury) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut got: Vec<_> = m.iter().map(|e| e.into_pair()).collect();
    got.sort();
    got
}

/// `iter()` yields every pair exactly once, across expansions, between random writes.
#[test]
fn iter_matches_model() {
    let m = Mercury::with_config(
        Config::builder()
            .initial_buckets(1)
            .migrate_run(2)
            .build()
            .unwrap(),
    )
    .unwrap();
    let mut model = BTreeMap::new();
    let mut r = SmallRng::seed_from_u64(5);
    let steps = if cfg!(miri) { 200 } else { 20_000 };
    for step in 0..steps {
        let k = r.random_range(0u32..4000).to_be_bytes().to_vec();
        if r.random_bool(0.7) {
            let v = vec![step as u8; r.random_range(0..30)];
            m.insert(&k, &v).unwrap();
            model.insert(k, v);
        } else {
            assert_eq!(m.remove(&k), model.remove(&k).is_some());
        }
        if step % 997 == 0 {
            let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(sorted(&m), want, "step {step}");
        }
    }
    let want: Vec<_> = model.into_iter().collect();
    assert_eq!(sorted(&m), want);
}

/// Items are handles into a batch refilled in place: no allocation per pair.
#[test]
fn iteration_allocates_per_batch_not_per_pair() {
    let n: u32 = if cfg!(miri) { 300 } else { 50_000 };
    let m: Mercury = (0..n).map(|i| (i.to_be_bytes(), [i as u8; 20])).collect();
    m.finish_expansion();
    assert_eq!(m.iter().count(), n as usize);
    let before = allocations();
    let mut c = 0;
    for e in &m {
        c += e.value().len();
    }
    let count = allocations() - before;
    assert_eq!(c, 20 * n as usize);
    assert!(
        count * 20 < u64::from(n),
        "{count} allocations for {n} pairs"
    );
}

#[test]
fn bulk_loading() {
    let mut m: Mercury = [(b"a", b"1"), (b"b", b"2")].into_iter().collect();
    m.extend([(b"a".to_vec(), b"3".to_vec())]);
    assert_eq!(
        sorted(&m),
        vec![
            (b"a".to_vec(), b"3".to_vec()),
            (b"b".to_vec(), b"2".to_vec())
        ]
    );
    let over = vec![0; MAX_VALUE_LEN + 1];
    assert!(matches!(
        m.insert_all([(&b"c"[..], &b"1"[..]), (b"d", &over)]),
        Err(Error::ValueTooLong { .. })
    ));
    assert!(m.contains_key(b"c") && !m.contains_key(b"d"));
}

#[test]
fn configuration_is_validated_not_clamped() {
    let bad = [
        (
            Config::builder().initial_buckets(0).build(),
            "initial_buckets",
        ),
        (
            Config::builder().initial_buckets((1 << 40) + 1).build(),
            "initial_buckets",
        ),
        (Config::builder().load_percent(0).build(), "load_percent"),
        (Config::builder().migrate_run(0).build(), "migrate_run"),
    ];
    for (got, name) in bad {
        assert!(
            matches!(got, Err(ConfigError::Invalid { field, .. }) if field == name),
            "{got:?}"
        );
    }
    let raw = Config {
        load_percent: 0,
        ..Config::default()
    };
    assert!(Mercury::with_config(raw).is_err());
    assert!(Mercury::with_capacity(usize::MAX).is_err());
    assert!(Mercury::with_config(Config::builder().initial_buckets(3).build().unwrap()).is_ok());
}

#[test]
fn read_modify_write_calls() {
    let m = Mercury::new();
    assert_eq!(m.update(b"k", |_| b"x".to_vec()), Ok(false));
    m.insert(b"k", b"v").unwrap();
    assert_eq!(m.update(b"k", |old| [old, b"2"].concat()), Ok(true));
    assert_eq!(m.update_in_place(b"k", |v| v[0] = b'w'), Ok(true));
    assert_eq!(m.get(b"k").as_deref(), Some(&b"w2"[..]));
    let long = vec![1; MAX_KEY_LEN + 1];
    assert!(matches!(
        m.update_in_place(&long, |_| ()),
        Err(Error::KeyTooLong { .. })
    ));
    assert!(matches!(
        m.update(&long, |_| Vec::new()),
        Err(Error::KeyTooLong { .. })
    ));
    assert_eq!(m.get_with(b"k", |v| v.len()), Some(2));
}
