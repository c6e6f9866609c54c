//! Unit tests of the trie engine: random updates checked against a model and the full
//! invariant walk, batched scans both ways, per-bucket locking, the symbol codec.

use super::*;
use crate::record;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};

/// Drops `raw` and drives epoch reclamation until what this thread retired before (old
/// tables, records) has been freed: a sentinel deferred last runs after it. Without it
/// the garbage still queued when a test ends shows up as a leak under Miri.
fn drop_and_drain(raw: Raw) {
    drop(raw);
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = Arc::clone(&ran);
    orrery_core::sync::pin().defer(move || r.store(true, Ordering::Relaxed));
    let freed = orrery_core::sync::epoch::flush_until(std::time::Duration::from_secs(600), || {
        ran.load(Ordering::Relaxed)
    });
    assert!(freed, "deferred frees did not run within the deadline");
}

/// Walks the whole trie (no concurrent writer) and checks its invariants: every key
/// reachable by its own symbols, keys in order, the tail rule (no non-root internal
/// node with a leaf as only child, none without children), entry count = nodes, the
/// leaf list, and every internal node's subtree-max locator naming the largest leaf
/// below it unless the node is marked stale. Returns the number of stale nodes.
fn check(raw: &Raw, model: &BTreeMap<Vec<u8>, Vec<u8>>) -> usize {
    let g = orrery_core::sync::pin();
    let t = raw.table(&g);
    let mut entries = 0;
    t.for_each(|_, _| entries += 1);
    let root = Raw::root(t).unwrap();
    let mut stack = vec![(root, true)];
    let mut nodes = 0;
    let mut keys = Vec::new();
    let mut leaves: Vec<Locator> = Vec::new();
    let mut seen = std::collections::HashMap::new();
    let mut stale = 0;
    while let Some((n, is_root)) = stack.pop() {
        nodes += 1;
        if let Some(prev) = seen.insert(n.found.slot, n) {
            panic!("node reached twice: {:?} / {:?}", prev, n);
        }
        let e = n.found.entry;
        if e.kind() == Kind::Leaf {
            // SAFETY: no writer runs; the guard protects the record.
            let (k, _) = unsafe { record::read(rec_ptr(e.record())) };
            keys.push(k.to_vec());
            assert!(!e.dirty(), "dirty leaf left behind");
            leaves.push(n.locator());
            continue;
        }
        // The subtree maximum by the rightmost edge (not by the locators).
        let mut scratch = Vec::new();
        let max = Raw::extreme(t, &mut scratch, n, false).unwrap();
        if e.dirty() {
            stale += 1;
        } else if let Some(m) = max {
            assert_eq!(e.max(), m.locator(), "subtree-max locator of {:?}", n);
        }
        let mut kids = Vec::new();
        if e.kind() == Kind::Jump {
            let k = Raw::jump_child(t, &n).unwrap();
            assert!(
                k.found.entry.is_jump_child(),
                "unflagged jump child {:?} of {:?}",
                k,
                n
            );
            kids.push(k);
        } else {
            let mut b = e.bitmap();
            while b != 0 {
                let s = b.trailing_zeros() as u8;
                b &= b - 1;
                let k = Raw::child(t, &n, s).unwrap();
                assert!(!k.found.entry.is_jump_child());
                kids.push(k);
            }
        }
        if !is_root {
            assert!(!kids.is_empty(), "childless internal node");
            assert!(
                !(kids.len() == 1 && kids[0].found.entry.kind() == Kind::Leaf),
                "uncollapsed tail"
            );
        }
        for k in kids.into_iter().rev() {
            stack.push((k, false));
        }
    }
    assert_eq!(nodes, entries, "unreachable entries");
    // The leaf list (next-leaf locators) is the leaves in key order.
    for (i, l) in leaves.iter().enumerate() {
        let f = t.find(*l).expect("leaf by locator");
        assert_eq!(
            f.entry.next(),
            leaves.get(i + 1).copied(),
            "next-leaf locator"
        );
    }
    let want: Vec<Vec<u8>> = model.keys().cloned().collect();
    assert_eq!(keys, want, "DFS order is key order");
    assert_eq!(raw.len(), model.len());
    for (k, v) in model {
        assert_eq!(raw.lookup(k, &g).map(|(_, v)| v.to_vec()).as_ref(), Some(v));
    }
    // Predecessor searches (by the locators) agree with the model.
    for k in model.keys().step_by(7).chain(model.keys().last()) {
        let want = model
            .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(k.as_slice())))
            .next_back()
            .map(|p| p.0);
        let got = raw.seek(Bound::Excluded(k), false, &g).map(|p| p.0);
        assert_eq!(got, want.map(Vec::as_slice), "predecessor of {k:?}");
    }
    let want = model.keys().next_back().map(Vec::as_slice);
    assert_eq!(
        raw.seek(Bound::Unbounded, false, &g).map(|p| p.0),
        want,
        "last"
    );
    stale
}

/// Marks every internal node stale (as a growth copy does), recomputes the locators
/// with [`Raw::fill_subtree_max`], and checks that none is stale and all are exact.
fn refill(raw: &Raw, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    {
        let g = orrery_core::sync::pin();
        let t = raw.table(&g);
        let mut internal = Vec::new();
        t.for_each(|s, e| {
            if matches!(e.kind(), Kind::Bitmap | Kind::Jump) {
                internal.push(Locator {
                    hash: t.hash_of(s, e),
                    color: e.color(),
                });
            }
        });
        for l in internal {
            t.update_at(l, |x| x.with_dirty(true).with_max(Locator::default()))
                .unwrap();
        }
        Raw::fill_subtree_max(t).unwrap();
    }
    assert_eq!(
        check(raw, model),
        0,
        "stale locators after fill_subtree_max"
    );
}

#[test]
fn random_inserts_and_removes_keep_the_invariants() {
    let ops = if cfg!(miri) { 40 } else { 5000 };
    // Tables that grow from 4 buckets, and ones that never grow; every locator must
    // be exact at every check.
    for (bits, buckets) in [(1, 4), (3, 4), (5, 4), (1, 4096), (5, 4096)] {
        let buckets = if cfg!(miri) { buckets.min(64) } else { buckets };
        let config = Config {
            symbol_bits: bits,
            prefetch_depth: 3,
            initial_buckets: buckets,
        };
        let raw = Raw::new(config).unwrap();
        let mut model = BTreeMap::new();
        let mut rng = SmallRng::seed_from_u64(u64::from(bits));
        let grown_from = raw.bytes().0;
        for i in 0..ops {
            // Short keys, and long keys sharing long prefixes (jump chains, splits
            // inside jumps).
            let len = if rng.random_bool(0.2) {
                rng.random_range(10..40)
            } else {
                rng.random_range(0..4)
            };
            let key: Vec<u8> = (0..len).map(|_| rng.random_range(0..4u8) * 85).collect();
            let ins = rng.random_bool(0.6);
            if ins {
                let v = vec![i as u8; i % 5];
                let new = !raw
                    .upsert(&key, &mut |_| Decision::Store(v.clone()), Mode::INSERT)
                    .unwrap();
                assert_eq!(new, model.insert(key, v).is_none());
            } else {
                assert_eq!(raw.remove(&key), model.remove(&key).is_some());
            }
            if i % 100 == 0 {
                // Growth sets the copies' locators too: none is ever left stale.
                assert_eq!(check(&raw, &model), 0, "a stale subtree-max locator");
            }
        }
        check(&raw, &model);
        if buckets == 4 {
            assert!(raw.bytes().0 > grown_from, "the table grew");
        }
        refill(&raw, &model);
        drop_and_drain(raw);
    }
}

/// Every pair, by scans (ascending if `forward`, else descending) in batches of 3,
/// each resuming after the last key of the one before.
fn batches(raw: &Raw, forward: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut got = Vec::new();
    let mut from: Bound<Vec<u8>> = Bound::Unbounded;
    loop {
        let g = orrery_core::sync::pin();
        let b = from.as_ref().map(Vec::as_slice);
        let mut f = |k: &[u8], v: &[u8]| {
            got.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        };
        let end = if forward {
            raw.scan_batch(b, &g, 3, &mut f)
        } else {
            raw.scan_batch_rev(b, &g, 3, &mut f)
        };
        match end {
            ScanEnd::More(k) => from = Bound::Excluded(k.to_vec()),
            _ => return got,
        }
    }
}

/// Ascending scans along the leaf list and descending reverse walks, in batches that
/// resume from a bound, agree with the model after inserts, splits, removals and
/// collapses (small: also run under Miri).
#[test]
fn scans_come_in_order_in_batches() {
    let n = if cfg!(miri) { 20 } else { 600 };
    for bits in [1, 5] {
        let config = Config {
            symbol_bits: bits,
            prefetch_depth: 2,
            initial_buckets: 4,
        };
        let raw = Raw::new(config).unwrap();
        let mut model = BTreeMap::new();
        let mut rng = SmallRng::seed_from_u64(11);
        for i in 0..n {
            let len = rng.random_range(0..6);
            let key: Vec<u8> = (0..len).map(|_| rng.random_range(0..3u8) * 120).collect();
            if rng.random_bool(0.7) {
                raw.upsert(&key, &mut |_| Decision::Store(vec![i as u8]), Mode::INSERT)
                    .unwrap();
                model.insert(key, vec![i as u8]);
            } else {
                raw.remove(&key);
                model.remove(&key);
            }
            if i % 10 != 0 {
                continue;
            }
            let want: Vec<(Vec<u8>, Vec<u8>)> =
                model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(batches(&raw, true), want, "ascending");
            let mut got = batches(&raw, false);
            got.reverse();
            assert_eq!(got, want, "descending");
            // get_many over present and absent keys.
            let probes: Vec<Vec<u8>> = (0..20)
                .map(|_| {
                    let len = rng.random_range(0..6);
                    (0..len).map(|_| rng.random_range(0..3u8) * 120).collect()
                })
                .collect();
            let refs: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();
            let g = orrery_core::sync::pin();
            let mut out = [None; GROUP];
            raw.lookup_group(&refs[..GROUP], &g, &mut out);
            for (k, o) in refs.iter().zip(out) {
                assert_eq!(o.map(|(_, v)| v.to_vec()).as_ref(), model.get(*k));
            }
        }
        check(&raw, &model);
        drop_and_drain(raw);
    }
}

/// Per-bucket locking: while one bucket of the trie is held (as by a writer in the
/// middle of an update: its lock set), an update of another part of the trie, which
/// locks other buckets, completes without waiting for it. The held bucket is the
/// leaf of key 10; the insert is far from it (deterministic hashes). The test fails
/// (deadline) if the insert needs the held bucket.
#[test]
fn an_update_elsewhere_proceeds_while_a_bucket_is_held() {
    let raw = Raw::new(Config::default()).unwrap();
    let key = |i: u32| i.to_be_bytes();
    for i in 0..1000 {
        raw.upsert(&key(i), &mut |_| Decision::Store(vec![1]), Mode::INSERT)
            .unwrap();
    }
    let g = orrery_core::sync::pin();
    let t = raw.table(&g);
    let mut path = Vec::new();
    let k10 = key(10);
    assert_eq!(
        raw.descend(t, &Symbols::new(&k10, raw.config.symbol_bits), &mut path)
            .unwrap(),
        End::Leaf
    );
    let leaf = path[path.len() - 1].found;
    let held = t.bucket(leaf.slot.bucket).try_lock().expect("unlocked");
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            raw.upsert(
                &key(700_000),
                &mut |_| Decision::Store(vec![2]),
                Mode::INSERT,
            )
            .unwrap();
            done.store(true, Ordering::Release);
        });
        orrery_core::testing::wait::wait_for("an insert elsewhere", || {
            done.load(Ordering::Acquire)
        });
        drop(held);
    });
    drop(g);
    assert_eq!(
        raw.lookup(&key(700_000), &orrery_core::sync::pin())
            .map(|(_, v)| v.to_vec()),
        Some(vec![2])
    );
    drop_and_drain(raw);
}

#[test]
fn symbols_preserve_order_and_are_prefix_free() {
    let keys: Vec<&[u8]> = vec![
        b"",
        b"\0",
        b"\0\0",
        b"\x01",
        b"a",
        b"a\0",
        b"a\x01",
        b"ab",
        b"b",
        b"\xff",
        b"\xff\xff",
    ];
    for bits in 1..=5 {
        let enc = |k: &[u8]| {
            let s = Symbols::new(k, bits);
            (0..s.len()).map(|i| s.at(i)).collect::<Vec<u8>>()
        };
        for w in keys.windows(2) {
            let (a, b) = (enc(w[0]), enc(w[1]));
            assert!(a < b, "bits {bits}: {:?} !< {:?}", w[0], w[1]);
            assert!(!b.starts_with(&a));
        }
    }
}
