//! Multi-threaded stress of Mercury's protocol: lookups racing with inserts across many
//! expansions, in-place value rewrites racing with readers, iteration racing with writers,
//! and a mixed workload checked against per-thread models at the end.
//!
//! Sizes are small by default (the whole file runs in seconds on 2 cores); set
//! `MERCURY_STRESS=<factor>` to multiply them for a long run.

use orrery_core::KvIndex;
use orrery_core::testing::rng;
use orrery_core::testing::wait::{Progress, wait_for};
use orrery_mercury::{Config, Expansion, Mercury};
use rand::Rng;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

fn scale(n: usize) -> usize {
    let factor = std::env::var("MERCURY_STRESS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(1);
    if cfg!(miri) { n / 100 } else { n * factor }
}

fn key(writer: usize, i: usize) -> Vec<u8> {
    // Variable-length keys (some long) so that several size classes are in play.
    let mut k = format!("w{writer}-k{i}").into_bytes();
    if i.is_multiple_of(7) {
        k.extend(std::iter::repeat_n(b'x', 40 + i % 50));
    }
    k
}

fn value(k: &[u8]) -> Vec<u8> {
    // Derived from the key, sometimes long (> 64 B, the immutable representation).
    let len = 1 + k.len() % 9 + if k.len().is_multiple_of(5) { 100 } else { 0 };
    k.iter().cycle().take(len).copied().collect()
}

fn tiny_config(expansion: Expansion) -> Config {
    Config {
        initial_buckets: 1,
        migrate_run: 4,
        expansion,
        ..Config::default()
    }
}

/// Counts a finished writer when dropped (normal return or unwinding).
struct Finished<'a>(&'a AtomicUsize);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

/// Every key whose insert was acknowledged stays visible to every later lookup, through
/// every expansion (the table starts with one bucket and doubles ~17 times).
fn acknowledged_inserts_stay_visible(expansion: Expansion) {
    const WRITERS: usize = 2;
    const READERS: usize = 2;
    let per_writer = scale(60_000);
    let m = Mercury::with_config(tiny_config(expansion)).unwrap();
    let acked: Vec<AtomicUsize> = (0..WRITERS).map(|_| AtomicUsize::new(0)).collect();
    let done = AtomicBool::new(false);
    let checks = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (m, acked, checks, finished) = (&m, &acked, &checks, &finished);
            s.spawn(move || {
                // Counted on the way out, also when an assertion unwinds, so the waiter
                // below ends the run (and the scope re-raises the panic) instead of hanging.
                let _finished = Finished(finished);
                for i in 0..per_writer {
                    let k = key(w, i);
                    assert_eq!(m.insert(&k, &value(&k)), Ok(true));
                    acked[w].store(i + 1, Ordering::Release);
                    // The readers check between every few thousand inserts (whatever the
                    // scheduler does), so reads and expansions really overlap.
                    if (i + 1) % 4096 == 0 {
                        let seen = checks.load(Ordering::Relaxed);
                        wait_for("the readers' progress", || {
                            checks.load(Ordering::Relaxed) > seen
                        });
                    }
                }
            });
        }
        for r in 0..READERS {
            let (m, acked, done, checks) = (&m, &acked, &done, &checks);
            s.spawn(move || {
                let mut rng = rng::rng(0x9E37_79B9 + r as u64);
                let mut batch_keys = Vec::new();
                while !done.load(Ordering::Acquire) {
                    let w = rng.random_range(..WRITERS);
                    let upto = acked[w].load(Ordering::Acquire);
                    if upto == 0 {
                        continue;
                    }
                    // The newest acknowledged key, and a random older one.
                    for i in [upto - 1, rng.random_range(..upto)] {
                        let k = key(w, i);
                        let got = m.get(&k);
                        assert_eq!(got.as_deref(), Some(&value(&k)[..]), "key {w}/{i} lost");
                    }
                    // A key not yet inserted is absent (or, racing, correct).
                    let k = key(w, upto + 1000);
                    if let Some(v) = m.get(&k) {
                        assert_eq!(v, value(&k));
                    }
                    // A batch through the prefetch pipeline.
                    batch_keys.clear();
                    for _ in 0..20 {
                        batch_keys.push(key(w, rng.random_range(..upto)));
                    }
                    let refs: Vec<&[u8]> = batch_keys.iter().map(Vec::as_slice).collect();
                    KvIndex::get_many(m, &refs, &mut |i, v| {
                        assert_eq!(v, Some(&value(refs[i])[..]), "batched key lost");
                    });
                    checks.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        s.spawn(|| {
            // The writers' own waits are bounded by deadlines, so they all finish.
            while finished.load(Ordering::Acquire) < WRITERS {
                std::thread::yield_now();
            }
            done.store(true, Ordering::Release);
        });
    });
    assert!(
        acked
            .iter()
            .all(|a| a.load(Ordering::Acquire) == per_writer)
    );
    assert_eq!(m.len(), WRITERS * per_writer);
    let buckets = m.stats().buckets;
    assert!(buckets >= WRITERS * per_writer / 2);
    for w in 0..WRITERS {
        for i in 0..per_writer {
            let k = key(w, i);
            assert_eq!(m.get(&k), Some(value(&k)));
        }
    }
    assert!(checks.load(Ordering::Relaxed) > 0);
}

#[test]
fn acknowledged_inserts_stay_visible_cooperative() {
    acknowledged_inserts_stay_visible(Expansion::Cooperative);
}

#[test]
fn acknowledged_inserts_stay_visible_dedicated() {
    acknowledged_inserts_stay_visible(Expansion::Dedicated);
}

/// In-place rewrites of short values (varying length) are never seen torn: each value is
/// `[b; len(b)]` for one byte `b`.
#[test]
fn in_place_rewrites_are_atomic() {
    let rounds = scale(100_000);
    let m = Mercury::with_config(tiny_config(Expansion::Cooperative)).unwrap();
    let keys: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 3]).collect();
    let shape = |b: u8| vec![b; 1 + b as usize % 64];
    for k in &keys {
        m.insert(k, &shape(0)).unwrap();
    }
    let done = AtomicBool::new(false);
    let progress = Progress::new(1);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut rng = rng::rng(7);
            // The reader runs before the first rewrite and between every few thousand.
            let mut last = progress.snapshot();
            progress.wait_all_moved(&mut last);
            for r in 0..rounds {
                let k = &keys[rng.random_range(..keys.len())];
                let b = (r % 251) as u8;
                if r % 3 == 0 {
                    m.update(k, |_| shape(b)).unwrap();
                } else {
                    m.insert(k, &shape(b)).unwrap();
                }
                if r % 4096 == 4095 {
                    progress.wait_all_moved(&mut last);
                }
            }
            done.store(true, Ordering::Release);
        });
        s.spawn(|| {
            let mut rng = rng::rng(8);
            while !done.load(Ordering::Acquire) {
                let k = &keys[rng.random_range(..keys.len())];
                m.get_with(k, |v| {
                    let b = v[0];
                    assert_eq!(v, &shape(b)[..], "torn value");
                })
                .expect("key vanished");
                progress.bump(0);
            }
        });
    });
}

/// A walk concurrent with writers (and expansions) visits every stable key exactly once and
/// no key twice.
#[test]
fn iteration_races_writers() {
    let stable = scale(20_000);
    let m = Mercury::with_config(tiny_config(Expansion::Cooperative)).unwrap();
    for i in 0..stable {
        let k = key(0, i);
        m.insert(&k, &value(&k)).unwrap();
    }
    let done = AtomicBool::new(false);
    let start = Barrier::new(2);
    std::thread::scope(|s| {
        s.spawn(|| {
            start.wait();
            let mut i = 0;
            while !done.load(Ordering::Acquire) {
                // New keys (growing the table) and churned keys.
                let k = key(1, i);
                m.insert(&k, &value(&k)).unwrap();
                let c = key(2, i % 100);
                if i % 2 == 0 {
                    m.insert(&c, &value(&c)).unwrap();
                } else {
                    m.remove(&c);
                }
                i += 1;
            }
        });
        start.wait();
        for _ in 0..3 {
            let mut seen: HashMap<Vec<u8>, usize> = HashMap::new();
            m.for_each(|k, v| {
                assert_eq!(v, &value(k)[..]);
                *seen.entry(k.to_vec()).or_default() += 1;
                ControlFlow::Continue(())
            });
            assert!(seen.values().all(|&c| c == 1), "a key was visited twice");
            for i in 0..stable {
                assert_eq!(seen.get(&key(0, i)), Some(&1), "stable key {i} missed");
            }
        }
        done.store(true, Ordering::Release);
    });
}

/// Random inserts, upserts, removes and updates on per-thread key ranges (plus reads of the
/// other threads' ranges), checked against per-thread models at the end.
#[test]
fn mixed_workload_matches_models() {
    const THREADS: usize = 3;
    let ops = scale(40_000);
    let m = Mercury::with_config(tiny_config(Expansion::Cooperative)).unwrap();
    let models: Vec<HashMap<Vec<u8>, Vec<u8>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let m = &m;
                s.spawn(move || {
                    let mut rng = rng::rng(0xABCD + t as u64);
                    let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
                    let range = 2_000;
                    for _ in 0..ops {
                        let k = key(t, rng.random_range(..range));
                        match rng.random_range(..10usize) {
                            0..=3 => {
                                let mut v = value(&k);
                                v.truncate(rng.random_range(..v.len() + 1));
                                let new = m.insert(&k, &v).unwrap();
                                assert_eq!(new, model.insert(k, v).is_none());
                            }
                            4..=5 => {
                                assert_eq!(m.remove(&k), model.remove(&k).is_some());
                            }
                            6 => {
                                let grow = rng.random_range(..2usize) == 0;
                                let f = |old: &[u8]| {
                                    let mut v = old.to_vec();
                                    if grow {
                                        v.extend_from_slice(&[7; 30])
                                    } else {
                                        v.truncate(v.len() / 2)
                                    }
                                    v
                                };
                                let present = m.update(&k, f).unwrap();
                                assert_eq!(present, model.contains_key(&k));
                                if let Some(v) = model.get_mut(&k) {
                                    *v = f(v);
                                }
                            }
                            7 => {
                                let present = m.update_in_place(&k, |v| v.reverse()).unwrap();
                                assert_eq!(present, model.contains_key(&k));
                                if let Some(v) = model.get_mut(&k) {
                                    v.reverse();
                                }
                            }
                            _ => {
                                assert_eq!(m.get(&k).as_ref(), model.get(&k));
                                // Another thread's key: any answer, but never garbage.
                                let other = key((t + 1) % THREADS, rng.random_range(..range));
                                if let Some(v) = m.get(&other) {
                                    assert!(v.len() <= value(&other).len() + 30 * 64);
                                }
                            }
                        }
                    }
                    model
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total: usize = models.iter().map(HashMap::len).sum();
    assert_eq!(m.len(), total);
    let mut seen = 0;
    m.for_each(|k, v| {
        let owner = models
            .iter()
            .find(|md| md.contains_key(k))
            .expect("unknown key");
        assert_eq!(owner.get(k).map(Vec::as_slice), Some(v));
        seen += 1;
        ControlFlow::Continue(())
    });
    assert_eq!(seen, total);
    let usage = m.memory_usage();
    let kv: usize = models
        .iter()
        .flat_map(|md| md.iter())
        .map(|(k, v)| k.len() + v.len())
        .sum();
    assert_eq!(usage.key_value_bytes, kv);
}

/// Removals and copy-on-write replacements (long values) racing with readers: freed nodes
/// are reused by the pools, so a reader touching a node after its grace period would see
/// another key's bytes. Every value read must be `[b; 65 + b]` for its own byte `b`, and
/// carry the key it was read under.
#[test]
fn reclamation_under_readers() {
    let rounds = scale(60_000);
    let m = Mercury::with_config(tiny_config(Expansion::Cooperative)).unwrap();
    let keys: Vec<Vec<u8>> = (0..16u8).map(|i| vec![b'k', i]).collect();
    let shape = |k: &[u8], b: u8| {
        let mut v = vec![b; 65 + b as usize % 100];
        v.extend_from_slice(k);
        v
    };
    let done = AtomicBool::new(false);
    let progress = Progress::new(1);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut rng = rng::rng(11);
            // The reader runs before the first write and between every few thousand.
            let mut last = progress.snapshot();
            progress.wait_all_moved(&mut last);
            for r in 0..rounds {
                if r % 4096 == 4095 {
                    progress.wait_all_moved(&mut last);
                }
                let k = &keys[rng.random_range(..keys.len())];
                match r % 4 {
                    0 => {
                        m.remove(k);
                    }
                    1 => {
                        m.update(k, |old| shape(k, old[0].wrapping_add(1))).unwrap();
                    }
                    _ => {
                        m.insert(k, &shape(k, (r % 200) as u8)).unwrap();
                    }
                }
            }
            done.store(true, Ordering::Release);
        });
        s.spawn(|| {
            let mut rng = rng::rng(12);
            while !done.load(Ordering::Acquire) {
                let k = &keys[rng.random_range(..keys.len())];
                m.get_with(k, |v| assert_eq!(v, &shape(k, v[0])[..], "freed node read"));
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                KvIndex::get_many(&m, &refs, &mut |i, v| {
                    if let Some(v) = v {
                        assert_eq!(v, &shape(refs[i], v[0])[..], "freed node read (batch)");
                    }
                });
                progress.bump(0);
            }
        });
    });
}

/// A pair that moves from a bucket's inline area into a node (an upsert that grows its value
/// past the inline limit) is never missing for a concurrent reader: each key is inserted
/// small (inline when its bucket's area is free), announced, then grown while readers look
/// the announced keys up.
#[test]
fn inline_moves_never_hide_a_key() {
    let n = scale(3_000);
    for config in [
        Config {
            initial_buckets: 1,
            load_percent: 1_000_000,
            ..Config::default()
        },
        tiny_config(Expansion::Cooperative),
    ] {
        let m = Mercury::with_config(config).unwrap();
        let ready = AtomicUsize::new(0);
        let key = |j: usize| (j as u64).to_le_bytes();
        let small = |j: usize| (j as u32).to_le_bytes();
        let big = |j: usize| [(j as u8); 40];
        std::thread::scope(|s| {
            s.spawn(|| {
                for j in 0..n {
                    m.insert(&key(j), &small(j)).unwrap();
                    ready.store(j + 1, Ordering::Release);
                    m.insert(&key(j), &big(j)).unwrap();
                }
            });
            s.spawn(|| {
                let mut rng = rng::rng(11);
                loop {
                    let r = ready.load(Ordering::Acquire);
                    if r == n {
                        break;
                    }
                    if r == 0 {
                        std::hint::spin_loop();
                        continue;
                    }
                    // Mostly the newest key (the one being moved), sometimes an older one.
                    let j = if rng.random_range(..4usize) == 0 {
                        rng.random_range(..r)
                    } else {
                        r - 1
                    };
                    let v = m.get(&key(j)).unwrap_or_else(|| panic!("key {j} missing"));
                    assert!(v == small(j) || v == big(j), "key {j}: {v:?}");
                }
            });
        });
        for j in 0..n {
            assert_eq!(m.get(&key(j)), Some(big(j).to_vec()));
        }
    }
}
