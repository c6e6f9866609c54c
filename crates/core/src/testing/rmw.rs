//! The read-modify-write parts: `update`, `compute` and `update_in_place` (through
//! [`KvUpdate`]) on every edge the contract names, then seeded random mixes of them with
//! inserts and removes against the model; and descending scans ([`check_scan_rev`]).
//!
//! The edges (the table in [`crate::raw`]): an over-long key is
//! [`Error::KeyTooLong`] before the closure runs; an over-long new value is
//! [`Error::ValueTooLong`] with the index unchanged; an absent key is `Ok(false)` without
//! a call for `update`/`update_in_place` and `None` for `compute`, whose `None` leaves it
//! absent; the empty key and the empty value are ordinary. Every closure is called exactly
//! once where it is called at all.

use std::ops::Bound;

use rand::Rng;

use super::common::{
    Check, Model, collect, compare_scan, ensure, probes_near, run_once, run_seeded, show,
    show_bound, verify_point,
};
use super::rng::{rng, sized};
use crate::api::{Error, KvUpdate, MAX_KEY_LEN, MAX_VALUE_LEN, OrderedKvIndex, u64_key};

fn is_key_too_long(r: &crate::Result<bool>) -> bool {
    matches!(r, Err(Error::KeyTooLong { len, max }) if *len == MAX_KEY_LEN + 1 && *max == MAX_KEY_LEN)
}

fn is_value_too_long(r: &crate::Result<bool>) -> bool {
    matches!(r, Err(Error::ValueTooLong { len, max }) if *len == MAX_VALUE_LEN + 1 && *max == MAX_VALUE_LEN)
}

fn insert<I: KvUpdate>(index: &I, model: &mut Model, key: &[u8], value: &[u8]) -> Check {
    index
        .insert(key, value)
        .map_err(|e| format!("insert({}) failed: {e}", show(key)))?;
    model.insert(key.to_vec(), value.to_vec());
    Ok(())
}

/// `update`: absent keys, present keys (growing, shrinking, emptying the value), the empty
/// key, an over-long key and an over-long new value, each call's result and closure calls.
pub fn check_update<I: KvUpdate>(make: &dyn Fn() -> I) -> Result<(), super::Failure> {
    run_once("update", |_| {
        let index = make();
        let mut model = Model::new();
        let mut calls = 0;
        let r = index.update_with(b"absent", &mut |_| {
            calls += 1;
            b"x".to_vec()
        });
        ensure!(
            r == Ok(false) && calls == 0,
            "update of an absent key: {r:?} after {calls} calls of f, expected Ok(false) and none"
        );
        ensure!(
            !index.contains_key(b"absent"),
            "update of an absent key inserted it"
        );
        insert(&index, &mut model, b"k", b"v1")?;
        insert(&index, &mut model, b"", b"empty key")?;
        for (key, new) in [
            (&b"k"[..], vec![b'w'; 300]),
            (b"k", b"w".to_vec()),
            (b"k", Vec::new()),
            (b"", b"still the empty key".to_vec()),
        ] {
            let mut seen = None;
            let mut calls = 0;
            let r = index.update_with(key, &mut |old| {
                calls += 1;
                seen = Some(old.to_vec());
                new.clone()
            });
            ensure!(
                r == Ok(true),
                "update({}) of a present key: {r:?}",
                show(key)
            );
            ensure!(calls == 1, "update({}) called f {calls} times", show(key));
            ensure!(
                seen.as_deref() == model.get(key).map(Vec::as_slice),
                "update({}) gave f {:?}, expected the current value",
                show(key),
                seen.as_deref().map(show)
            );
            model.insert(key.to_vec(), new);
            verify_point(&index, &model, &[b"absent".to_vec()])?;
        }
        let long = vec![b'k'; MAX_KEY_LEN + 1];
        let mut calls = 0;
        let r = index.update_with(&long, &mut |_| {
            calls += 1;
            Vec::new()
        });
        ensure!(
            is_key_too_long(&r) && calls == 0,
            "update of a key of MAX_KEY_LEN + 1 bytes: {r:?} after {calls} calls of f, expected Err(KeyTooLong) before f"
        );
        let r = index.update_with(b"k", &mut |_| vec![0; MAX_VALUE_LEN + 1]);
        ensure!(
            is_value_too_long(&r),
            "update to a value of MAX_VALUE_LEN + 1 bytes: {r:?}, expected Err(ValueTooLong)"
        );
        let r = index.update_with(b"k", &mut |_| vec![7; MAX_VALUE_LEN]);
        ensure!(
            r == Ok(true),
            "update to a value of MAX_VALUE_LEN bytes: {r:?}"
        );
        model.insert(b"k".to_vec(), vec![7; MAX_VALUE_LEN]);
        verify_point(&index, &model, &[long])
    })
}

/// `compute`: each of the four cases (absent/present × store/remove), the closure called
/// exactly once with the current value, `len` after each, the empty key, over-long key and
/// value (index unchanged, whether the key was present or not).
pub fn check_compute<I: KvUpdate>(make: &dyn Fn() -> I) -> Result<(), super::Failure> {
    run_once("compute", |_| {
        let index = make();
        let mut model = Model::new();
        // (key, what f returns, expected result); applied in order.
        type Step<'a> = (&'a [u8], Option<&'a [u8]>, bool);
        let steps: [Step<'_>; 7] = [
            (b"a", None, false),       // absent, removed: stays absent
            (b"a", Some(b"1"), false), // absent, stored: inserted
            (b"a", Some(b"22"), true), // present, stored: replaced
            (b"", Some(b""), false),   // the empty key with the empty value
            (b"a", None, true),        // present, removed
            (b"", None, true),
            (b"b", Some(b"3"), false),
        ];
        for (key, new, want) in steps {
            let mut seen: Option<Option<Vec<u8>>> = None;
            let mut calls = 0;
            let r = index.compute_with(key, &mut |old| {
                calls += 1;
                seen = Some(old.map(<[u8]>::to_vec));
                new.map(<[u8]>::to_vec)
            });
            let step = format!("compute({}) returning {:?}", show(key), new.map(show));
            ensure!(r == Ok(want), "{step}: {r:?}, expected Ok({want})");
            ensure!(calls == 1, "{step}: f called {calls} times");
            ensure!(
                seen == Some(model.get(key).cloned()),
                "{step}: f saw {:?}, expected the current value {:?}",
                seen.flatten().as_deref().map(show),
                model.get(key).map(|v| show(v))
            );
            match new {
                Some(v) => model.insert(key.to_vec(), v.to_vec()),
                None => model.remove(key),
            };
            ensure!(
                index.len() == model.len(),
                "{step}: len {} after it, expected {}",
                index.len(),
                model.len()
            );
            verify_point(&index, &model, &[b"a".to_vec(), b"b".to_vec(), Vec::new()])?;
        }
        let long = vec![b'k'; MAX_KEY_LEN + 1];
        let mut calls = 0;
        let r = index.compute_with(&long, &mut |_| {
            calls += 1;
            Some(Vec::new())
        });
        ensure!(
            is_key_too_long(&r) && calls == 0,
            "compute of a key of MAX_KEY_LEN + 1 bytes: {r:?} after {calls} calls of f, expected Err(KeyTooLong) before f"
        );
        for key in [&b"b"[..], b"absent"] {
            let r = index.compute_with(key, &mut |_| Some(vec![0; MAX_VALUE_LEN + 1]));
            ensure!(
                is_value_too_long(&r),
                "compute({}) returning MAX_VALUE_LEN + 1 bytes: {r:?}, expected Err(ValueTooLong)",
                show(key)
            );
        }
        verify_point(&index, &model, &[long, b"absent".to_vec()])
    })
}

/// `update_in_place`: absent keys (no call), present keys (the bytes rewritten, the length
/// kept), the empty value, an over-long key.
pub fn check_update_in_place<I: KvUpdate>(make: &dyn Fn() -> I) -> Result<(), super::Failure> {
    run_once("update_in_place", |_| {
        let index = make();
        let mut model = Model::new();
        let mut calls = 0;
        let r = index.update_in_place_with(b"absent", &mut |_| calls += 1);
        ensure!(
            r == Ok(false) && calls == 0,
            "update_in_place of an absent key: {r:?} after {calls} calls, expected Ok(false) and none"
        );
        for (key, value) in [
            (&b"k"[..], vec![1u8; 8]),
            (b"big", vec![2u8; 5000]),
            (b"", Vec::new()),
        ] {
            insert(&index, &mut model, key, &value)?;
            let mut calls = 0;
            let mut len = usize::MAX;
            let r = index.update_in_place_with(key, &mut |v| {
                calls += 1;
                len = v.len();
                for b in v.iter_mut() {
                    *b = b.wrapping_add(1);
                }
            });
            ensure!(
                r == Ok(true) && calls == 1,
                "update_in_place({}): {r:?} after {calls} calls",
                show(key)
            );
            ensure!(
                len == value.len(),
                "update_in_place({}) gave f {len} bytes, expected {}",
                show(key),
                value.len()
            );
            let updated: Vec<u8> = value.iter().map(|b| b.wrapping_add(1)).collect();
            model.insert(key.to_vec(), updated);
            verify_point(&index, &model, &[b"absent".to_vec()])?;
        }
        let long = vec![b'k'; MAX_KEY_LEN + 1];
        let mut calls = 0;
        let r = index.update_in_place_with(&long, &mut |_| calls += 1);
        ensure!(
            is_key_too_long(&r) && calls == 0,
            "update_in_place of a key of MAX_KEY_LEN + 1 bytes: {r:?} after {calls} calls, expected Err(KeyTooLong)"
        );
        Ok(())
    })
}

/// Seeded random mixes of `compute`, `update`, `update_in_place`, `insert` and `remove`
/// over a small key set (so keys are often present, often absent), compared with the
/// model after every operation's result and, every few operations, in every point view.
pub fn check_rmw_differential<I: KvUpdate>(make: &dyn Fn() -> I) -> Result<(), super::Failure> {
    run_seeded("rmw_differential", |seed| {
        let mut r = rng(seed);
        let index = make();
        let mut model = Model::new();
        let keys: Vec<Vec<u8>> = (0..64u64).map(|i| u64_key(i * 7)[5..].to_vec()).collect();
        for step in 0..sized(4000, 200) {
            let key = keys[r.random_range(0..keys.len())].clone();
            let len = r.random_range(0..40);
            let value: Vec<u8> = (0..len).map(|_| r.random()).collect();
            let old = model.get(&key).cloned();
            let what = r.random_range(0..5);
            let (op, got, want) = match what {
                0 => {
                    let remove = r.random_bool(0.3);
                    let got = index.compute_with(&key, &mut |_| (!remove).then(|| value.clone()));
                    if remove {
                        model.remove(&key);
                    } else {
                        model.insert(key.clone(), value.clone());
                    }
                    ("compute", got, Ok(old.is_some()))
                }
                1 => {
                    let got = index.update_with(&key, &mut |v| [v, &value[..]].concat());
                    if let Some(o) = &old {
                        model.insert(key.clone(), [&o[..], &value[..]].concat());
                    }
                    ("update", got, Ok(old.is_some()))
                }
                2 => {
                    let got = index.update_in_place_with(&key, &mut |v| v.reverse());
                    if let Some(o) = &old {
                        model.insert(key.clone(), o.iter().rev().copied().collect());
                    }
                    ("update_in_place", got, Ok(old.is_some()))
                }
                3 => {
                    let got = index.insert(&key, &value);
                    model.insert(key.clone(), value.clone());
                    ("insert", got, Ok(old.is_none()))
                }
                _ => {
                    let got = Ok(index.remove(&key));
                    model.remove(&key);
                    ("remove", got, Ok(old.is_some()))
                }
            };
            ensure!(
                got == want,
                "step {step}: {op}({}) returned {got:?}, expected {want:?}",
                show(&key)
            );
            if step % 16 == 0 {
                verify_point(&index, &model, &keys)?;
            }
        }
        verify_point(&index, &model, &keys)
    })
}

/// Descending scans: from every kind of bound (absent, present, near keys, the empty key,
/// an over-long key) with early stops, strictly descending, exactly the model's pairs at
/// or below the bound.
pub fn check_scan_rev<I: OrderedKvIndex>(make: &dyn Fn() -> I) -> Result<(), super::Failure> {
    run_once("scan_rev", |seed| {
        let mut r = rng(seed);
        let index = make();
        let mut model = Model::new();
        let empty = collect(usize::MAX, |v| index.scan_rev(Bound::Unbounded, v));
        ensure!(
            empty.pairs.is_empty(),
            "scan_rev of an empty index yielded {} pairs",
            empty.pairs.len()
        );
        let mut keys: Vec<Vec<u8>> = vec![
            Vec::new(),
            vec![0],
            vec![0, 0],
            vec![0xFF],
            vec![0xFF; 3],
            b"ab".to_vec(),
            b"abc".to_vec(),
            b"b".to_vec(),
        ];
        for i in 0..sized(300, 30) {
            keys.push(u64_key(r.random::<u64>() >> (i % 48))[..r.random_range(1..9)].to_vec());
        }
        for (i, k) in keys.iter().enumerate() {
            let v = (i as u32).to_be_bytes().to_vec();
            index
                .insert(k, &v)
                .map_err(|e| format!("insert failed: {e}"))?;
            model.insert(k.clone(), v);
        }
        let mut bounds: Vec<Bound<Vec<u8>>> = vec![Bound::Unbounded];
        let mut probes = probes_near(model.keys().map(Vec::as_slice));
        probes.push(vec![0xFF; MAX_KEY_LEN + 1]);
        for p in probes.into_iter().step_by(3) {
            bounds.push(Bound::Included(p.clone()));
            bounds.push(Bound::Excluded(p));
        }
        for b in &bounds {
            let end = b.as_ref().map(Vec::as_slice);
            for limit in [1, 2, 5, usize::MAX] {
                let got = collect(limit, |v| index.scan_rev(end, v));
                let mut expected: Vec<(&Vec<u8>, &Vec<u8>)> = model
                    .range::<[u8], _>((Bound::Unbounded, end))
                    .rev()
                    .collect();
                expected.truncate(limit);
                // `compare_scan` checks ascending order: compare the reversed views.
                let ascending = super::common::Collected {
                    pairs: got.pairs.iter().rev().cloned().collect(),
                    calls_after_break: got.calls_after_break,
                };
                compare_scan(
                    &|| format!("scan_rev({}) stopped after {limit}", show_bound(end)),
                    &ascending,
                    expected.into_iter().rev(),
                )?;
            }
        }
        Ok(())
    })
}

/// `compute` and `update` are atomic under contention: threads started together
/// increment a few shared counters (8-byte big-endian values) through `compute` (creating
/// them when absent) and `update`, and `update_in_place` flips a byte an even number of
/// times; once the threads have joined, every counter holds exactly the number of
/// increments made and the flipped bytes are back. A lost update (a read-modify-write that
/// is not atomic) leaves a counter short.
pub fn check_rmw_contention<I: KvUpdate>(make: &dyn Fn() -> I) -> Result<(), super::Failure> {
    const THREADS: usize = 4;
    const COUNTERS: usize = 3;
    run_once("rmw_contention", |_| {
        let index = make();
        let per_thread = sized(3000, 20);
        let counter = |c: usize| [&b"ctr"[..], &[c as u8]].concat();
        let flag = b"flag".to_vec();
        index
            .insert(&flag, &[0u8; 4])
            .map_err(|e| format!("insert failed: {e}"))?;
        let barrier = std::sync::Barrier::new(THREADS);
        let incr = |v: &[u8]| {
            let n = u64::from_be_bytes(v.try_into().unwrap_or([0; 8]));
            (n + 1).to_be_bytes().to_vec()
        };
        let errors: Vec<String> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|t| {
                    let (index, barrier, flag) = (&index, &barrier, &flag);
                    s.spawn(move || -> Result<(), String> {
                        barrier.wait();
                        for i in 0..per_thread {
                            let key = counter((t + i) % COUNTERS);
                            let r = if i % 2 == 0 {
                                index.compute_with(&key, &mut |old| {
                                    Some(old.map_or(1u64.to_be_bytes().to_vec(), incr))
                                })
                            } else {
                                // Absent only before the first compute of that counter: then
                                // this increment must go through `compute` as well.
                                match index.update_with(&key, &mut |v| incr(v)) {
                                    Ok(false) => index.compute_with(&key, &mut |old| {
                                        Some(old.map_or(1u64.to_be_bytes().to_vec(), incr))
                                    }),
                                    other => other,
                                }
                            };
                            r.map_err(|e| format!("thread {t}: increment {i} failed: {e}"))?;
                            index
                                .update_in_place_with(flag, &mut |v| v[t] ^= 1)
                                .map_err(|e| format!("thread {t}: flip failed: {e}"))?;
                        }
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| {
                    h.join()
                        .unwrap_or_else(|p| std::panic::resume_unwind(p))
                        .err()
                })
                .collect()
        });
        ensure!(errors.is_empty(), "{}", errors.join("; "));
        let mut want = [0u64; COUNTERS];
        for t in 0..THREADS {
            for i in 0..per_thread {
                want[(t + i) % COUNTERS] += 1;
            }
        }
        for (c, &w) in want.iter().enumerate() {
            let got = index
                .get(&counter(c))
                .and_then(|v| v.try_into().ok().map(u64::from_be_bytes));
            ensure!(
                got == Some(w),
                "counter {c}: {got:?} after {w} concurrent increments (a lost update)"
            );
        }
        let flips = index.get(&flag);
        let want_flag: Vec<u8> = (0..4)
            .map(|t| u8::from(t < THREADS && per_thread % 2 == 1))
            .collect();
        ensure!(
            flips.as_deref() == Some(&want_flag[..]),
            "flag bytes {flips:?} after each thread flipped its own {per_thread} times, expected {want_flag:?}"
        );
        Ok(())
    })
}
