//! Edge cases: the keys, values and inputs where indexes break.
//!
//! Each part loads a deliberately nasty set of keys and walks it through a fixed life cycle
//! (insert in random order, upsert all, remove every other, reinsert in descending order,
//! remove all, insert ascending), verifying every view of the index after each phase against
//! a `BTreeMap` model (see `common::verify_all`). The `_ordered` variants add the ordered
//! views: scans from `Included`/`Excluded` bounds at and around every key, `scan_range`,
//! `range`, `scan_prefix`, `first` and `last`. Prefix chains (`a`, `a\0`, `a\0\0`, ...) and
//! runs of `0x00`/`0xFF` are where tries and anchor-based indexes (Wormhole's anchors, the
//! Cuckoo Trie's key elimination, Hyperion's spans) most often go wrong.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

use super::common::{
    Check, Failure, Model, View, check_absent, check_get_many_batch, check_present, collect,
    compare_scan, ensure, ordered_view, point_view, run_once, show, verify_all,
};
use super::rng::{random_bytes, rng, sized};
use crate::api::{Error, KvIndex, MAX_KEY_LEN, MAX_VALUE_LEN, OrderedKvIndex, u32_key, u64_key};

/// The edge-case key set: the empty key; runs of `0x00` and `0xFF` of many lengths (1 to 40
/// and around 64, 128, 256, 512, 4096) alone and followed or preceded by other bytes; every
/// single byte; prefix chains under `a`; keys around 8-byte word boundaries; big-endian
/// integers; keys differing only deep in the middle. Sorted, deduplicated.
pub fn edge_keys() -> Vec<Vec<u8>> {
    let mut set: BTreeSet<Vec<u8>> = BTreeSet::new();
    set.insert(Vec::new());
    let mut runs: Vec<usize> = (1..=40).collect();
    runs.extend([
        47, 48, 49, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 511, 512, 513, 4095, 4096, 4097,
    ]);
    // Under Miri, a subset that keeps every kind of case (sizes around 8 and 16, one long run).
    let miri = cfg!(miri);
    if miri {
        runs.retain(|&n| [1, 2, 9, 64].contains(&n));
    }
    for &n in &runs {
        let zeros = vec![0x00u8; n];
        let ffs = vec![0xFFu8; n];
        set.insert(zeros.clone());
        set.insert(ffs.clone());
        set.insert([&zeros[..], &[0x01]].concat());
        set.insert([&ffs[..], &[0x00]].concat());
        set.insert([&[0x01], &zeros[..]].concat());
        set.insert([&[0xFE], &ffs[..]].concat());
        set.insert([&b"a"[..], &zeros[..]].concat());
        set.insert([&b"a"[..], &ffs[..]].concat());
    }
    for b in (0..=255u8).filter(|b| !miri || b % 51 == 0) {
        set.insert(vec![b]);
    }
    for k in [
        &b"a"[..],
        b"a\0",
        b"a\0\0",
        b"a\0\x01",
        b"a\0\xff",
        b"a\x01",
        b"a\x7f",
        b"a\x80",
        b"a\xfe",
        b"a\xff",
        b"a\xff\x00",
        b"a\xff\xff\x00",
        b"a\xff\xff\xff\xff",
        b"a\0b",
        b"ab",
        b"ab\0",
        b"abc",
        b"abd",
        b"b",
        b"b\0",
        b"\0a",
        b"\xffa",
        b"\0\xff",
        b"\xff\0",
    ] {
        set.insert(k.to_vec());
    }
    let word = b"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH";
    let lens: &[usize] = if miri {
        &[8, 9]
    } else {
        &[7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 40]
    };
    for &len in lens {
        let base = word[..len].to_vec();
        set.insert(base.clone());
        set.insert([&base[..], &[0x00]].concat());
        set.insert([&base[..], &[0xFF]].concat());
        let mut bumped = base.clone();
        *bumped.last_mut().expect("len >= 7") = 0xFF;
        set.insert(bumped);
        let mut low = base;
        *low.last_mut().expect("len >= 7") = 0x00;
        set.insert(low);
    }
    let ints: &[u64] = if miri {
        &[0, 0x100, u64::MAX]
    } else {
        &[
            0,
            1,
            0xFF,
            0x100,
            0xFFFF,
            0x1_0000,
            1 << 32,
            u64::MAX - 1,
            u64::MAX,
        ]
    };
    for &x in ints {
        set.insert(u64_key(x).to_vec());
        set.insert(u32_key(x as u32).to_vec());
    }
    let positions: &[usize] = if miri {
        &[0, 99]
    } else {
        &[0, 1, 7, 8, 50, 98, 99]
    };
    for &pos in positions {
        for b in [0x00, 0x6c, 0x6e, 0xFF]
            .into_iter()
            .filter(|&b| !miri || b == 0 || b == 0xFF)
        {
            let mut k = vec![b'm'; 100];
            k[pos] = b;
            set.insert(k);
        }
    }
    set.into_iter().collect()
}

/// The 200-byte prefix shared by the keys of [`check_shared_prefix`]; it contains `0x00` and
/// `0xFF` bytes.
pub fn shared_prefix() -> Vec<u8> {
    (0..200u32)
        .map(|i| match i % 50 {
            10 => 0x00,
            20 => 0xFF,
            _ => (i * 13 % 251) as u8,
        })
        .collect()
}

/// The value stored for key number `i` in version `version` of a life cycle: varied lengths
/// (empty every seventh key), contents with `0x00`/`0xFF`, different for every version.
fn edge_value(i: usize, version: u8) -> Vec<u8> {
    if (i + version as usize).is_multiple_of(7) {
        return Vec::new();
    }
    let len = (i * 31 + version as usize * 17) % 90;
    let mut v = vec![version, 0x00, 0xFF];
    v.extend((0..len).map(|j| (i + j) as u8));
    v.extend((i as u32).to_be_bytes());
    v
}

/// The life cycle of a key set (see the module docs), verifying after each phase.
/// `extra_probes` are keys never inserted, checked absent and used as scan bounds and
/// prefixes.
fn life_cycle<I: KvIndex>(
    index: &I,
    view: View<I>,
    keys: &[Vec<u8>],
    extra_probes: &[Vec<u8>],
    rng: &mut SmallRng,
    max_probes: usize,
) -> Check {
    let ordered = view(index);
    let mut model = Model::new();
    let verify = |model: &Model, absent: &[Vec<u8>], phase: &str, rng: &mut SmallRng| -> Check {
        verify_all(index, ordered, model, absent, max_probes, rng)
            .map_err(|e| format!("after {phase} ({} keys in the model): {e}", model.len()))
    };
    let mut absent: Vec<Vec<u8>> = extra_probes.to_vec();
    absent.extend(keys.iter().step_by(3).cloned());
    verify(&model, &absent, "creating the index", rng)?;

    // Phase 1: insert everything in random order.
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.shuffle(rng);
    for (step, &i) in order.iter().enumerate() {
        let v = edge_value(i, 1);
        let r = index.insert(&keys[i], &v);
        ensure!(
            r == Ok(true),
            "phase 1 step {step}: insert of new key {} returned {r:?}, expected Ok(true)",
            show(&keys[i])
        );
        model.insert(keys[i].clone(), v);
        if step % 97 == 0 {
            check_present(index, &keys[i], &model[&keys[i]])
                .map_err(|e| format!("right after inserting it: {e}"))?;
        }
    }
    verify(
        &model,
        extra_probes,
        "inserting every key in random order",
        rng,
    )?;

    // Phase 2: upsert everything with new values, in another order.
    order.shuffle(rng);
    for (step, &i) in order.iter().enumerate() {
        let v = edge_value(i, 2);
        let r = index.insert(&keys[i], &v);
        ensure!(
            r == Ok(false),
            "phase 2 step {step}: upsert of present key {} returned {r:?}, expected Ok(false)",
            show(&keys[i])
        );
        model.insert(keys[i].clone(), v);
    }
    if !cfg!(miri) {
        verify(&model, extra_probes, "upserting every key", rng)?;
    }

    // Phase 3: remove every other key in order, twice (second time must find nothing).
    let removed: Vec<Vec<u8>> = keys.iter().skip(1).step_by(2).cloned().collect();
    for k in &removed {
        ensure!(
            index.remove(k),
            "phase 3: remove of present key {} returned false",
            show(k)
        );
        model.remove(k);
    }
    for k in &removed {
        ensure!(
            !index.remove(k),
            "phase 3: second remove of key {} returned true",
            show(k)
        );
    }
    let mut absent = removed.clone();
    absent.extend(extra_probes.iter().cloned());
    verify(&model, &absent, "removing every other key", rng)?;

    // Phase 4: reinsert the removed keys in descending order, then remove all in random order.
    for (j, k) in removed.iter().enumerate().rev() {
        let v = edge_value(j, 3);
        let r = index.insert(k, &v);
        ensure!(
            r == Ok(true),
            "phase 4: reinsert of removed key {} returned {r:?}",
            show(k)
        );
        model.insert(k.clone(), v);
    }
    if !cfg!(miri) {
        verify(&model, extra_probes, "reinserting in descending order", rng)?;
    }
    order.shuffle(rng);
    for (step, &i) in order.iter().enumerate() {
        ensure!(
            index.remove(&keys[i]),
            "phase 4 step {step}: remove of present key {} returned false",
            show(&keys[i])
        );
        model.remove(&keys[i]);
        if step % 101 == 0 {
            check_absent(index, &keys[i]).map_err(|e| format!("right after removing it: {e}"))?;
            let len = index.len();
            ensure!(
                len == model.len(),
                "phase 4 step {step}: len() = {len}, expected {}",
                model.len()
            );
        }
    }
    let mut absent = keys.to_vec();
    absent.extend(extra_probes.iter().cloned());
    verify(&model, &absent, "removing every key", rng)?;

    // Phase 5: insert in ascending order (right-edge growth), values of version 5.
    for (i, k) in keys.iter().enumerate() {
        let v = edge_value(i, 5);
        let r = index.insert(k, &v);
        ensure!(
            r == Ok(true),
            "phase 5: insert of key {} into emptied index returned {r:?}",
            show(k)
        );
        model.insert(k.clone(), v);
    }
    verify(
        &model,
        extra_probes,
        "inserting every key in ascending order",
        rng,
    )
}

fn edge_keys_impl<I: KvIndex>(
    part: &'static str,
    make: &dyn Fn() -> I,
    view: View<I>,
) -> Result<(), Failure> {
    run_once(part, |seed| {
        let keys = edge_keys();
        let index = make();
        let mut r = rng(seed);
        life_cycle(&index, view, &keys, &[], &mut r, sized(4000, 16))
    })
}

/// Edge-case keys ([`edge_keys`]) through their life cycle, point operations only: empty
/// key, `0x00`/`0xFF` runs, prefix chains, word boundaries; empty values; upsert and
/// remove results; `get`/`get_with`/`contains_key`/`get_many`/`len`/`is_empty` agreement.
pub fn check_edge_keys<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    edge_keys_impl("edge_keys", make, point_view::<I>)
}

/// [`check_edge_keys`] plus the ordered views at and around every edge key.
pub fn check_edge_keys_ordered<I: OrderedKvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    edge_keys_impl("edge_keys_ordered", make, ordered_view::<I>)
}

fn shared_prefix_impl<I: KvIndex>(
    part: &'static str,
    make: &dyn Fn() -> I,
    view: View<I>,
) -> Result<(), Failure> {
    run_once(part, |seed| {
        let p = shared_prefix();
        let n = sized(3000, 24);
        let mut set: BTreeSet<Vec<u8>> = BTreeSet::new();
        for i in 0..n {
            let be = (i as u16).to_be_bytes();
            let suffix: Vec<u8> = match i % 4 {
                0 => be.to_vec(),
                1 => [&be[..], &[0x00]].concat(),
                2 => [&be[..], &[0xFF, 0xFF]].concat(),
                _ => vec![i as u8],
            };
            set.insert([&p[..], &suffix[..]].concat());
        }
        // The prefix itself, a shorter one, and a sibling prefix differing in its last byte.
        set.insert(p.clone());
        set.insert(p[..199].to_vec());
        set.insert([&p[..], &[0x00; 50][..]].concat());
        let mut sibling = p.clone();
        sibling[199] = sibling[199].wrapping_add(1);
        for i in 0..n.min(100) {
            set.insert([&sibling[..], &(i as u16).to_be_bytes()[..]].concat());
        }
        let keys: Vec<Vec<u8>> = set.into_iter().collect();
        let probes: Vec<Vec<u8>> = [0, 1, 100, 198, 200]
            .iter()
            .map(|&l| p[..l].to_vec())
            .chain([
                [&p[..], &[0x00]].concat(),
                [&p[..], &[0xFF]].concat(),
                [&p[..], &[0xFF; 3]].concat(),
                sibling.clone(),
                [&sibling[..], &[0xFF; 3]].concat(),
            ])
            .filter(|k| keys.binary_search(k).is_err())
            .collect();
        let index = make();
        let mut r = rng(seed);
        life_cycle(&index, view, &keys, &probes, &mut r, sized(3000, 16))?;
        // Whole prefix scans, unlimited, at every level of the shared prefix.
        if let Some(o) = view(&index) {
            let model: Model = keys
                .iter()
                .enumerate()
                .map(|(i, k)| (k.clone(), edge_value(i, 5)))
                .collect();
            for l in [0, 1, 100, 199, 200, 201] {
                let prefix: Vec<u8> = if l <= 200 {
                    p[..l].to_vec()
                } else {
                    [&p[..], &[0x00]].concat()
                };
                let got = collect(usize::MAX, |v| o.scan_prefix(&prefix, v));
                compare_scan(
                    &|| format!("scan_prefix of the first {l} bytes of the shared prefix"),
                    &got,
                    model.iter().filter(|(k, _)| k.starts_with(&prefix)),
                )?;
            }
        }
        Ok(())
    })
}

/// Thousands of keys sharing a 200-byte prefix (with `0x00`/`0xFF` inside it), plus the
/// prefix itself, a shorter one and a sibling prefix, through the life cycle (point views).
pub fn check_shared_prefix<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    shared_prefix_impl("shared_prefix", make, point_view::<I>)
}

/// [`check_shared_prefix`] plus ordered views and whole prefix scans at every prefix level.
pub fn check_shared_prefix_ordered<I: OrderedKvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    shared_prefix_impl("shared_prefix_ordered", make, ordered_view::<I>)
}

fn large_entries_impl<I: KvIndex>(
    part: &'static str,
    make: &dyn Fn() -> I,
    view: View<I>,
) -> Result<(), Failure> {
    run_once(part, |seed| {
        let mut r = rng(seed);
        let max = MAX_KEY_LEN;
        let mut kx_y = vec![b'x'; max];
        kx_y[max - 1] = b'y';
        let mut kx_0 = vec![b'x'; max];
        kx_0[max - 1] = 0x00;
        let mut kx_mid = vec![b'x'; max];
        kx_mid[max / 2] = 0xFF;
        let keys: Vec<Vec<u8>> = vec![
            vec![b'x'; max],
            kx_y,
            kx_0,
            kx_mid,
            vec![b'x'; max - 1],
            vec![0x00; max],
            vec![0xFF; max],
            random_bytes(&mut r, max),
            b"small".to_vec(),
            Vec::new(),
        ];
        let big_random = random_bytes(&mut r, MAX_VALUE_LEN);
        let big_zero = vec![0u8; MAX_VALUE_LEN];
        let mut big_ff = vec![0xFFu8; MAX_VALUE_LEN];
        big_ff[MAX_VALUE_LEN / 2] = 0;
        let values: Vec<Vec<u8>> = vec![
            big_random.clone(),
            Vec::new(),
            b"v".to_vec(),
            big_zero.clone(),
            b"under 64 KiB key".to_vec(),
            big_ff.clone(),
            Vec::new(),
            b"random key".to_vec(),
            big_random.clone(),
            big_zero.clone(),
        ];
        let index = make();
        let ordered = view(&index);
        let mut model = Model::new();
        let verify = |model: &Model, what: &str, r: &mut SmallRng| -> Check {
            verify_all(&index, ordered, model, &keys, sized(200, 8), r)
                .map_err(|e| format!("after {what}: {e}"))
        };
        for (k, v) in keys.iter().zip(&values) {
            let res = index.insert(k, v);
            ensure!(
                res == Ok(true),
                "insert of a {}-byte key with a {}-byte value returned {res:?}, expected Ok(true)",
                k.len(),
                v.len()
            );
            model.insert(k.clone(), v.clone());
        }
        verify(&model, "inserting 64 KiB keys and 1 MiB values", &mut r)?;
        let usage = index.memory_usage().total();
        // One random 1 MiB value (stored twice: count it once) and one random 64 KiB key.
        let held = MAX_VALUE_LEN + keys[7].len();
        ensure!(
            usage >= held,
            "memory_usage().total() = {usage} with more than {held} incompressible bytes stored"
        );
        // Replace big values by empty ones and back, and small ones by big ones.
        for (k, v) in [
            (&keys[0], Vec::new()),
            (&keys[1], big_ff.clone()),
            (&keys[3], b"shrunk".to_vec()),
            (&keys[0], big_zero.clone()),
            (&keys[9], Vec::new()),
        ] {
            let res = index.insert(k, &v);
            ensure!(
                res == Ok(false),
                "upsert of a present {}-byte key returned {res:?}",
                k.len()
            );
            model.insert(k.clone(), v);
        }
        verify(&model, "replacing 1 MiB values", &mut r)?;
        for k in [&keys[4], &keys[0], &keys[6]] {
            ensure!(
                index.remove(k),
                "remove of a present {}-byte key returned false",
                k.len()
            );
            model.remove(k);
        }
        verify(&model, "removing 64 KiB keys", &mut r)?;
        for k in &keys {
            index.remove(k);
            model.remove(k);
        }
        verify(&model, "removing every key", &mut r)
    })
}

/// Keys of exactly [`MAX_KEY_LEN`] (64 KiB) — differing only in their last byte, in the
/// middle, being a prefix of each other — and values of exactly [`MAX_VALUE_LEN`] (1 MiB),
/// inserted, replaced by empty and back, removed (point views).
pub fn check_large_entries<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    large_entries_impl("large_entries", make, point_view::<I>)
}

/// [`check_large_entries`] plus ordered views over the 64 KiB keys.
pub fn check_large_entries_ordered<I: OrderedKvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    large_entries_impl("large_entries_ordered", make, ordered_view::<I>)
}

fn limits_impl<I: KvIndex>(
    part: &'static str,
    make: &dyn Fn() -> I,
    view: View<I>,
) -> Result<(), Failure> {
    run_once(part, |seed| {
        let mut r = rng(seed);
        let index = make();
        let ordered = view(&index);
        let mut model = Model::new();
        let mut keys: Vec<Vec<u8>> = edge_keys()
            .into_iter()
            .step_by(if cfg!(miri) { 20 } else { 9 })
            .collect();
        keys.push(vec![b'q'; MAX_KEY_LEN]);
        keys.push(b"present key".to_vec());
        for (i, k) in keys.iter().enumerate() {
            let v = edge_value(i, 1);
            ensure!(
                index.insert(k, &v) == Ok(true),
                "preload insert of {} failed",
                show(k)
            );
            model.insert(k.clone(), v);
        }
        let long_q = vec![b'q'; MAX_KEY_LEN + 1];
        let long_keys: Vec<Vec<u8>> = vec![
            long_q.clone(),
            vec![0x00; MAX_KEY_LEN + 1],
            vec![0xFF; MAX_KEY_LEN + 1],
            vec![b'z'; 2 * MAX_KEY_LEN],
        ];
        let long_value = vec![0xABu8; MAX_VALUE_LEN + 1];
        let key_err = |len| {
            Err(Error::KeyTooLong {
                len,
                max: MAX_KEY_LEN,
            })
        };
        let value_err = Err(Error::ValueTooLong {
            len: MAX_VALUE_LEN + 1,
            max: MAX_VALUE_LEN,
        });
        let unchanged = |model: &Model, what: &str, r: &mut SmallRng| -> Check {
            verify_all(&index, ordered, model, &long_keys, sized(300, 8), r)
                .map_err(|e| format!("the index changed after {what}: {e}"))
        };

        for k in &long_keys {
            let res = index.insert(k, b"x");
            ensure!(
                res == key_err(k.len()),
                "insert of a {}-byte key returned {res:?}, expected {:?}",
                k.len(),
                key_err(k.len())
            );
            let len = index.len();
            ensure!(
                len == model.len(),
                "len() = {len} after a rejected insert, expected {}",
                model.len()
            );
        }
        unchanged(
            &model,
            "rejected inserts of over-long keys (one extends a present 64 KiB key)",
            &mut r,
        )?;

        let res = index.insert(b"present key", &long_value);
        ensure!(
            res == value_err,
            "insert of an over-long value on a present key returned {res:?}"
        );
        let res = index.insert(b"new key", &long_value);
        ensure!(
            res == value_err,
            "insert of an over-long value on a new key returned {res:?}"
        );
        let res = index.insert(b"", &long_value);
        ensure!(
            res == value_err,
            "insert of an over-long value on the empty key returned {res:?}"
        );
        let res = index.insert(&long_q, &long_value);
        ensure!(
            matches!(
                res,
                Err(Error::KeyTooLong { .. } | Error::ValueTooLong { .. })
            ),
            "insert of an over-long key with an over-long value returned {res:?}"
        );
        unchanged(&model, "rejected inserts of over-long values", &mut r)?;

        // Lookups and removals of over-long keys find nothing and change nothing.
        for k in &long_keys {
            check_absent(&index, k)?;
            ensure!(
                !index.remove(k),
                "remove of a {}-byte key returned true",
                k.len()
            );
        }
        let mut batch: Vec<&[u8]> = model.keys().take(5).map(Vec::as_slice).collect();
        batch.insert(2, &long_q);
        batch.push(&long_keys[3]);
        check_get_many_batch(&index, &model, &batch)?;
        if let Some(o) = ordered {
            // Scans may start anywhere, even past the longest acceptable key.
            for k in &long_keys {
                for start in [Bound::Included(&k[..]), Bound::Excluded(&k[..])] {
                    let got = collect(3, |v| o.scan(start, v));
                    compare_scan(
                        &|| format!("scan from an over-long {}-byte bound", k.len()),
                        &got,
                        model.range::<[u8], _>((start, Bound::Unbounded)).take(3),
                    )?;
                }
                let got = collect(usize::MAX, |v| o.scan_prefix(k, v));
                compare_scan(
                    &|| format!("scan_prefix of an over-long {}-byte prefix", k.len()),
                    &got,
                    std::iter::empty(),
                )?;
                let got = collect(usize::MAX, |v| {
                    o.scan_range(Bound::Unbounded, Bound::Included(k), v)
                });
                compare_scan(
                    &|| format!("scan_range up to an over-long {}-byte bound", k.len()),
                    &got,
                    model.range::<[u8], _>((Bound::Unbounded, Bound::Included(&k[..]))),
                )?;
            }
        }
        unchanged(
            &model,
            "lookups, removals and scans of over-long keys",
            &mut r,
        )?;
        // Limits are exact: the largest accepted sizes still work afterwards.
        let res = index.insert(&long_q[..MAX_KEY_LEN], &long_value[..MAX_VALUE_LEN]);
        ensure!(
            res == Ok(false),
            "upsert of the present {}-byte key with a {}-byte value returned {res:?}",
            MAX_KEY_LEN,
            MAX_VALUE_LEN
        );
        model.insert(
            long_q[..MAX_KEY_LEN].to_vec(),
            long_value[..MAX_VALUE_LEN].to_vec(),
        );
        unchanged(&model, "an upsert at exactly the limits", &mut r)
    })
}

/// Over-long keys (`MAX_KEY_LEN + 1`, one extending a present 64 KiB key, `2 × MAX_KEY_LEN`)
/// and values (`MAX_VALUE_LEN + 1`) get exactly `Error::KeyTooLong` / `ValueTooLong`, leave
/// the index unchanged (len and contents), and lookups/removals of over-long keys find
/// nothing.
pub fn check_limits<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    limits_impl("limits", make, point_view::<I>)
}

/// [`check_limits`] plus scans, prefix scans and ranges bounded by over-long keys.
pub fn check_limits_ordered<I: OrderedKvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    limits_impl("limits_ordered", make, ordered_view::<I>)
}

/// Upsert, remove and lookup semantics on a few keys, then a seeded mix of a thousand keys:
/// `insert` reports new/not new and replaces the value; `remove` reports presence; a removed
/// key is new again; `get`, `get_with`, `contains_key`, `len` and `is_empty` agree.
pub fn check_basic<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    run_once("basic", |seed| {
        let index = make();
        let mut model = Model::new();
        ensure!(
            index.is_empty() && index.len() == 0,
            "a new index is not empty: len() = {}",
            index.len()
        );
        check_absent(&index, b"k")?;
        check_absent(&index, b"")?;
        ensure!(
            !index.remove(b"k"),
            "remove on an empty index returned true"
        );
        // (key, Some(value) to insert or None to remove, expected result)
        type Step<'a> = (&'a [u8], Option<&'a [u8]>, bool);
        let steps: [Step<'_>; 14] = [
            (b"k", Some(b"v1"), true),
            (b"k", Some(b"v2"), false),
            (b"k", Some(b"a much longer value than before"), false),
            (b"k", Some(b""), false),
            (b"k", Some(b"v3"), false),
            (b"j", Some(b"other"), true),
            (b"k", None, true),
            (b"k", None, false),
            (b"k", Some(b"again"), true),
            (b"", Some(b"empty key"), true),
            (b"", Some(b""), false),
            (b"", None, true),
            (b"", Some(b""), true),
            (b"j", None, true),
        ];
        for (step, (k, v, want)) in steps.into_iter().enumerate() {
            match v {
                Some(v) => {
                    let got = index.insert(k, v);
                    ensure!(
                        got == Ok(want),
                        "step {step}: insert({}, {}) returned {got:?}, expected Ok({want})",
                        show(k),
                        show(v)
                    );
                    model.insert(k.to_vec(), v.to_vec());
                }
                None => {
                    let got = index.remove(k);
                    ensure!(
                        got == want,
                        "step {step}: remove({}) returned {got}, expected {want}",
                        show(k)
                    );
                    model.remove(k);
                }
            }
            verify_all(
                &index,
                None,
                &model,
                &[b"k".to_vec(), b"j".to_vec(), Vec::new()],
                0,
                &mut rng(seed),
            )
            .map_err(|e| format!("after step {step}: {e}"))?;
        }
        // A seeded mix over a thousand keys, checking every result.
        let mut r = rng(seed);
        let n = sized(1000, 16);
        let keys: Vec<Vec<u8>> = (0..n as u32)
            .map(|i| format!("key{i}").into_bytes())
            .collect();
        for step in 0..sized(20_000, 100) {
            let k = &keys[r.random_range(0..n)];
            if r.random_bool(0.6) {
                let v = (step as u64).to_le_bytes()[..r.random_range(0..=8)].to_vec();
                let got = index.insert(k, &v);
                let want = !model.contains_key(k);
                ensure!(
                    got == Ok(want),
                    "mix step {step}: insert({}) returned {got:?}, expected Ok({want})",
                    show(k)
                );
                model.insert(k.clone(), v);
            } else {
                let got = index.remove(k);
                let want = model.remove(k).is_some();
                ensure!(
                    got == want,
                    "mix step {step}: remove({}) returned {got}, expected {want}",
                    show(k)
                );
            }
            if step % 1000 == 0 {
                let len = index.len();
                ensure!(
                    len == model.len(),
                    "mix step {step}: len() = {len}, expected {}",
                    model.len()
                );
            }
        }
        verify_all(&index, None, &model, &keys, 0, &mut r)
            .map_err(|e| format!("after the mix: {e}"))
    })
}

/// `get_many` in every shape: empty batch (no call), one key, duplicates, all absent, all
/// present, a batch of thousands, the empty key and an over-long key in a batch.
pub fn check_get_many<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    run_once("get_many", |seed| {
        let mut r = rng(seed);
        let index = make();
        let mut model = Model::new();
        let mut calls = 0;
        index.get_many(&[], &mut |_, _| calls += 1);
        ensure!(
            calls == 0,
            "get_many of an empty batch made {calls} callback calls"
        );
        check_get_many_batch(&index, &model, &[b"a", b""])?;
        let n = sized(3000, 32);
        let keys: Vec<Vec<u8>> = (0..n).map(|i| u64_key(i as u64 * 3).to_vec()).collect();
        let misses: Vec<Vec<u8>> = (0..n).map(|i| u64_key(i as u64 * 3 + 1).to_vec()).collect();
        for (i, k) in keys.iter().enumerate() {
            let v = edge_value(i, 1);
            index
                .insert(k, &v)
                .map_err(|e| format!("insert failed: {e}"))?;
            model.insert(k.clone(), v);
        }
        index
            .insert(b"", b"empty")
            .map_err(|e| format!("insert failed: {e}"))?;
        model.insert(Vec::new(), b"empty".to_vec());
        let all: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let none: Vec<&[u8]> = misses.iter().map(Vec::as_slice).collect();
        check_get_many_batch(&index, &model, &all)?;
        check_get_many_batch(&index, &model, &none)?;
        check_get_many_batch(&index, &model, &all[..1])?;
        check_get_many_batch(&index, &model, &none[..1])?;
        let dup = [all[0], all[0], none[0], all[0], b"", none[0], b""];
        check_get_many_batch(&index, &model, &dup)?;
        let long = vec![0u8; MAX_KEY_LEN + 1];
        check_get_many_batch(&index, &model, &[all[1], &long, b"", none[2]])?;
        for _ in 0..sized(300, 4) {
            let len = r.random_range(0..100);
            let batch: Vec<&[u8]> = (0..len)
                .map(|_| {
                    if r.random_bool(0.5) {
                        all[r.random_range(0..n)]
                    } else {
                        none[r.random_range(0..n)]
                    }
                })
                .collect();
            check_get_many_batch(&index, &model, &batch)?;
        }
        Ok(())
    })
}

/// `memory_usage` is plausible: sane (no wrapped counter) when empty, full and emptied;
/// `total()` at least the incompressible bytes stored (random keys, less the bits a set of
/// them could share, plus random values); bounded by a generous multiple; and repeated
/// replacement of the same keys' values does not grow it without bound (no leak per upsert).
pub fn check_memory_usage<I: KvIndex>(make: &dyn Fn() -> I) -> Result<(), Failure> {
    run_once("memory_usage", |seed| {
        const SANE: usize = 1 << 40;
        let mut r = rng(seed);
        let index = make();
        let empty = index.memory_usage();
        ensure!(
            empty.total() < SANE,
            "memory_usage() of an empty index is {empty:?}: an underflowed or absurd count"
        );
        let n = sized(4096, 32);
        let key_len = 16;
        let value_len = 256;
        let mut model = BTreeMap::new();
        while model.len() < n {
            model.insert(
                random_bytes(&mut r, key_len),
                random_bytes(&mut r, value_len),
            );
        }
        for (k, v) in &model {
            index
                .insert(k, v)
                .map_err(|e| format!("insert failed: {e}"))?;
        }
        let full = index.memory_usage();
        // n random keys of L bytes carry at least n * (L - log2(n)/8) bytes of information;
        // allow two bytes per key for that; values are incompressible.
        let floor = n * (key_len - 2) + n * value_len;
        ensure!(
            full.total() >= floor,
            "memory_usage() = {full:?} (total {}) with {n} random 16-byte keys and 256-byte values \
             stored: below the {floor} incompressible bytes they hold",
            full.total()
        );
        ensure!(
            full.total() > empty.total(),
            "memory_usage().total() did not grow from {} (empty) to {} with {n} entries stored",
            empty.total(),
            full.total()
        );
        let stored = n * (key_len + value_len);
        ensure!(
            full.total() < 64 * stored + (256 << 20),
            "memory_usage() = {full:?} with {stored} bytes stored: implausibly large"
        );
        // Replace the values of the same keys many times (same sizes): usage must stay bounded.
        // Reclamation is settled after every round, not only at the end: a structure's usage
        // counts memory it holds (e.g. slab chunks), which keeps the high-water mark of what
        // was allocated while retired objects waited for a grace period, and how long they
        // wait depends on every thread of the process (another test's thread descheduled while
        // pinned stalls the shared epoch for tens of milliseconds under CPU load, long enough
        // for many rounds). A real leak still adds a round's worth of values per round.
        let rounds = if cfg!(miri) { 3 } else { 16 };
        let replace_all = |r: &mut SmallRng| -> Result<(), String> {
            for k in model.keys() {
                let v = random_bytes(r, value_len);
                index
                    .insert(k, &v)
                    .map_err(|e| format!("insert failed: {e}"))?;
            }
            settle_reclamation();
            Ok(())
        };
        replace_all(&mut r)?;
        let after_first = index.memory_usage().total();
        for _ in 1..rounds {
            replace_all(&mut r)?;
        }
        let after = index.memory_usage().total();
        ensure!(
            after <= 4 * after_first + (4 << 20),
            "memory_usage().total() grew from {after_first} to {after} over {rounds} rounds of \
             replacing the same {n} values with same-sized ones: memory leaks per upsert"
        );
        for k in model.keys() {
            ensure!(index.remove(k), "remove of a present key returned false");
        }
        let emptied = index.memory_usage();
        ensure!(
            emptied.total() < SANE
                && emptied.key_value_bytes < SANE
                && emptied.structure_bytes < SANE,
            "memory_usage() after removing everything is {emptied:?}: an underflowed count"
        );
        Ok(())
    })
}

/// Waits out two grace periods of the shared epoch scheme, so that memory a structure retired
/// through it (replaced nodes, old tables) has been freed before the leak check goes on:
/// memory pending reclamation is not a leak, and how long it stays pending depends on the
/// scheduling of other threads (Mercury's dedicated expand-thread, the threads of tests
/// running concurrently in the same process), which made the check flaky before.
fn settle_reclamation() {
    if !crate::sync::epoch::is_pinned() {
        crate::sync::epoch::synchronize();
        crate::sync::epoch::synchronize();
    }
}
