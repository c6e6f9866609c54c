//! The prefetching trie-walk scans (`src/trie/scan.rs`) against a `BTreeMap`, and under
//! concurrent writers.
//!
//! - `scans_match_a_btreemap_from_every_kind_of_bound`: random tries (shared prefixes, long
//!   common prefixes that make jump nodes, keys that are prefixes of others, the empty key,
//!   `0x00` bytes) built by inserts and removes, on several configurations; after every
//!   phase, `scan`, `scan_rev`, `scan_leaf_list` (feature `bench-internals`) and `range` (both ends) from many bounds
//!   (present keys, absent keys, included, excluded, unbounded) with many stop points are
//!   compared with the model.
//! - `stable_keys_are_scanned_once_in_order_under_churn`: writers insert and remove keys
//!   around a stable set (extensions of stable keys, so leaves on the stable keys' paths
//!   split and collapse; neighbours under the same parents) on a table small enough to
//!   grow during the run, while scanners (both directions, random bounds and lengths)
//!   check that every stable key in the range they covered comes exactly once, in order,
//!   with its value. Threads start at a barrier; the run is bounded by time.
//! - `remove_range_matches_a_btreemap`: range deletes from random bounds against the model.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use orrery_core::testing::wait::Watchdog;
use orrery_cuckoo_trie::{Config, CuckooTrie};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A test still running after this is stuck inside the index (every wait of the test is
/// bounded by a shorter deadline): the watchdog ends the process instead of letting the
/// thread scope hang the run.
const WATCHDOG: std::time::Duration = std::time::Duration::from_secs(600);

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A random key of one of the shapes that stress a trie.
fn random_key(rng: &mut SmallRng) -> Vec<u8> {
    match rng.random_range(0..5) {
        // Short keys over a tiny alphabet: dense sharing, prefixes of each other, empty.
        0 => (0..rng.random_range(0..4))
            .map(|_| rng.random_range(0..3u8))
            .collect(),
        // A long common prefix (jump nodes), then a short varied tail.
        1 => {
            let mut k = b"common/prefix/that/is/long/".to_vec();
            k.extend((0..rng.random_range(0..3)).map(|_| rng.random_range(b'a'..b'e')));
            k
        }
        // Random 8-byte keys.
        2 => rng.random::<u64>().to_be_bytes().to_vec(),
        // Big-endian counters: neighbours under shared parents.
        3 => (rng.random_range(0..512u32)).to_be_bytes().to_vec(),
        // Zero bytes and 0xff bytes.
        _ => (0..rng.random_range(1..6))
            .map(|_| if rng.random() { 0 } else { 0xff })
            .collect(),
    }
}

/// A bound near the model's keys or anywhere.
fn random_bound(rng: &mut SmallRng, model: &Model) -> Bound<Vec<u8>> {
    let k = if !model.is_empty() && rng.random_bool(0.5) {
        let i = rng.random_range(0..model.len());
        let mut k = model.keys().nth(i).unwrap().clone();
        match rng.random_range(0..4) {
            0 => k.push(0),
            1 => {
                k.pop();
            }
            _ => {}
        }
        k
    } else {
        random_key(rng)
    };
    match rng.random_range(0..5) {
        0 => Bound::Unbounded,
        1 | 2 => Bound::Included(k),
        _ => Bound::Excluded(k),
    }
}

/// What a scan from `b` yields (ascending if `up`), up to `limit` pairs.
fn expect(model: &Model, b: &Bound<Vec<u8>>, up: bool, limit: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let range = if up {
        (b.clone(), Bound::Unbounded)
    } else {
        (Bound::Unbounded, b.clone())
    };
    let it = model.range::<Vec<u8>, _>(range);
    let pairs: Box<dyn Iterator<Item = _>> = if up { Box::new(it) } else { Box::new(it.rev()) };
    pairs
        .take(limit)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The scans [`scan_of`] runs: `scan`, `scan_rev`, and the leaf list's (a lab entry point,
/// feature `bench-internals`).
const SCAN_KINDS: u8 = if cfg!(feature = "bench-internals") {
    3
} else {
    2
};

/// Runs one scan of `ct` from `b` with a visitor that stops after `limit` pairs.
fn scan_of(ct: &CuckooTrie, b: &Bound<Vec<u8>>, how: u8, limit: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut got = Vec::new();
    let mut visit = |k: &[u8], v: &[u8]| {
        got.push((k.to_vec(), v.to_vec()));
        if got.len() >= limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let b = b.as_ref().map(Vec::as_slice);
    match how {
        0 => ct.scan(b, &mut visit),
        1 => ct.scan_rev(b, &mut visit),
        #[cfg(feature = "bench-internals")]
        2 => ct.scan_leaf_list(b, &mut visit),
        _ => unreachable!("scan kind {how}"),
    }
    got
}

fn check_scans(ct: &CuckooTrie, model: &Model, rng: &mut SmallRng, tries: usize) {
    for _ in 0..tries {
        let b = random_bound(rng, model);
        let limit = match rng.random_range(0..3) {
            0 => rng.random_range(1..4),
            1 => rng.random_range(1..120),
            _ => usize::MAX,
        };
        for how in 0..SCAN_KINDS {
            let up = how != 1;
            assert_eq!(
                scan_of(ct, &b, how, limit),
                expect(model, &b, up, limit),
                "scan {how} from {b:?}, limit {limit}"
            );
        }
        // The iterator, from both ends of a range.
        let hi = random_bound(rng, model);
        let want: Vec<Vec<u8>> = if range_is_empty(&b, &hi) {
            Vec::new()
        } else {
            model
                .range::<Vec<u8>, _>((b.clone(), hi.clone()))
                .map(|(k, _)| k.clone())
                .collect()
        };
        let r = (
            b.as_ref().map(Vec::as_slice),
            hi.as_ref().map(Vec::as_slice),
        );
        let up: Vec<Vec<u8>> = ct.range::<[u8], _>(r).map(|e| e.key().to_vec()).collect();
        assert_eq!(up, want, "range {b:?}..{hi:?}");
        let mut down: Vec<Vec<u8>> = ct
            .range::<[u8], _>(r)
            .rev()
            .map(|e| e.key().to_vec())
            .collect();
        down.reverse();
        assert_eq!(down, want, "range {b:?}..{hi:?} reversed");
    }
}

/// Whether `BTreeMap::range` would panic on (or yield nothing for) these bounds.
fn range_is_empty(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
        _ => false,
    }
}

#[test]
fn scans_match_a_btreemap_from_every_kind_of_bound() {
    let _watchdog = Watchdog::arm("scans_match_a_btreemap_from_every_kind_of_bound", WATCHDOG);
    let configs = [
        Config::default(),
        Config::builder().symbol_bits(1).build().unwrap(),
        Config::builder()
            .symbol_bits(3)
            .initial_buckets(4)
            .build()
            .unwrap(),
    ];
    let (phases, ops, tries) = if cfg!(miri) {
        (1, 30, 2)
    } else {
        (6, 600, 150)
    };
    // Under Miri one configuration (the interpreter is slow).
    let n_configs = if cfg!(miri) { 1 } else { configs.len() };
    for (ci, config) in configs.into_iter().enumerate().take(n_configs) {
        let ct = CuckooTrie::with_config(config).unwrap();
        let mut model = Model::new();
        let mut rng = SmallRng::seed_from_u64(0x5CA9 + ci as u64);
        check_scans(&ct, &model, &mut rng, 4);
        for phase in 0..phases {
            // Grow in the first phases, then mostly shrink (collapses of tails).
            let insert_share = if phase < phases / 2 { 0.8 } else { 0.3 };
            for _ in 0..ops {
                if rng.random_bool(insert_share) || model.is_empty() {
                    let k = random_key(&mut rng);
                    let v = rng.random::<u32>().to_be_bytes().to_vec();
                    ct.insert(&k, &v).unwrap();
                    model.insert(k, v);
                } else {
                    let i = rng.random_range(0..model.len());
                    let k = model.keys().nth(i).unwrap().clone();
                    assert!(ct.remove(&k));
                    model.remove(&k);
                }
            }
            check_scans(&ct, &model, &mut rng, tries);
        }
    }
}

/// A stable key: group `g`, member `m`.
fn stable_key(g: u16, m: u8) -> Vec<u8> {
    let mut k = g.to_be_bytes().to_vec();
    k.push(m * 4);
    k
}

/// The value every key carries: derived from the key, so a torn or foreign record shows.
fn value_of(k: &[u8]) -> Vec<u8> {
    let mut v = b"v".to_vec();
    v.extend(k.iter().rev());
    v
}

/// A churning key near stable key `(g, m)`: an extension of it (its leaf splits into an
/// internal node and collapses back), or a neighbour under the same parent.
fn churn_key(g: u16, m: u8, kind: u8) -> Vec<u8> {
    let mut k = g.to_be_bytes().to_vec();
    match kind % 3 {
        0 => {
            k.push(m * 4);
            k.push(kind);
        }
        1 => k.push(m * 4 + 1 + kind % 3),
        _ => {
            k.push(m * 4);
            k.extend_from_slice(&[0, kind]);
        }
    }
    k
}

#[test]
fn stable_keys_are_scanned_once_in_order_under_churn() {
    let _watchdog = Watchdog::arm(
        "stable_keys_are_scanned_once_in_order_under_churn",
        WATCHDOG,
    );
    const GROUPS: u16 = if cfg!(miri) { 4 } else { 256 };
    const MEMBERS: u8 = if cfg!(miri) { 4 } else { 16 };
    const WRITERS: usize = 2;
    const SCANNERS: usize = 2;
    let run_for = Duration::from_millis(if cfg!(miri) { 50 } else { 1500 });
    let ct =
        CuckooTrie::with_config(Config::builder().initial_buckets(16).build().unwrap()).unwrap();
    let mut stable = Model::new();
    for g in 0..GROUPS {
        for m in 0..MEMBERS {
            let k = stable_key(g, m);
            ct.insert(&k, &value_of(&k)).unwrap();
            stable.insert(k.clone(), value_of(&k));
        }
    }
    let stop = AtomicBool::new(false);
    let scans = AtomicU64::new(0);
    let writes = AtomicU64::new(0);
    let start = Barrier::new(WRITERS + SCANNERS + 1);
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for w in 0..WRITERS {
            let (ct, stop, start, writes) = (&ct, &stop, &start, &writes);
            handles.push(s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + w as u64);
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    let g = rng.random_range(0..GROUPS);
                    let m = rng.random_range(0..MEMBERS);
                    let k = churn_key(g, m, rng.random_range(0..6));
                    if rng.random() {
                        ct.insert(&k, &value_of(&k)).unwrap();
                    } else {
                        ct.remove(&k);
                    }
                    writes.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for r in 0..SCANNERS {
            let (ct, stop, start, scans, stable) = (&ct, &stop, &start, &scans, &stable);
            handles.push(s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(200 + r as u64);
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    let up = rng.random();
                    let g = rng.random_range(0..GROUPS);
                    let from = if rng.random_bool(0.1) {
                        Bound::Unbounded
                    } else {
                        Bound::Included(stable_key(g, rng.random_range(0..MEMBERS)))
                    };
                    let limit = rng.random_range(1..300usize);
                    let got = scan_of(ct, &from, if up { 0 } else { 1 }, limit);
                    for (k, v) in &got {
                        assert_eq!(v, &value_of(k), "value of {k:?}");
                    }
                    for w in got.windows(2) {
                        assert!(
                            if up { w[0].0 < w[1].0 } else { w[0].0 > w[1].0 },
                            "order {:?} then {:?}",
                            w[0].0,
                            w[1].0
                        );
                    }
                    // The stable keys of the range the scan covered: from its bound to its
                    // last key (or the end, if it ran out before the limit).
                    let reached = if got.len() >= limit {
                        Bound::Included(got[got.len() - 1].0.clone())
                    } else {
                        Bound::Unbounded
                    };
                    let range = if up {
                        (from.clone(), reached)
                    } else {
                        (reached, from.clone())
                    };
                    let mut want: Vec<&Vec<u8>> =
                        stable.range::<Vec<u8>, _>(range).map(|(k, _)| k).collect();
                    if !up {
                        want.reverse();
                    }
                    let seen: Vec<&Vec<u8>> = got
                        .iter()
                        .map(|(k, _)| k)
                        .filter(|k| stable.contains_key(*k))
                        .collect();
                    assert_eq!(seen, want, "stable keys of a scan from {from:?} (up: {up})");
                    scans.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        start.wait();
        let began = Instant::now();
        let deadline = began + Duration::from_secs(120);
        while began.elapsed() < run_for
            || scans.load(Ordering::Relaxed) < 20
            || writes.load(Ordering::Relaxed) < 200
        {
            // A thread that ended early panicked: stop the others and let the scope
            // report it.
            if handles.iter().any(|h| h.is_finished()) {
                break;
            }
            if Instant::now() >= deadline {
                stop.store(true, Ordering::Relaxed);
                panic!("no progress within the deadline");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert!(
        ct.stats().growth.growths > 0,
        "the table grew during the run"
    );
    ct.check_invariants().unwrap();
    let all: Vec<Vec<u8>> = ct.iter().map(|e| e.key().to_vec()).collect();
    for k in stable.keys() {
        assert!(all.contains(k), "stable key {k:?} lost");
    }
}

/// Whether `k` lies within `lo..hi` (bounds in any order: an empty range holds nothing).
fn within(k: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above = match lo {
        Bound::Included(b) => k >= b.as_slice(),
        Bound::Excluded(b) => k > b.as_slice(),
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(b) => k <= b.as_slice(),
        Bound::Excluded(b) => k < b.as_slice(),
        Bound::Unbounded => true,
    };
    above && below
}

/// `remove_range` from random bounds (empty and reversed ranges included) removes exactly
/// the model's keys in the range and returns their number, on tries of the shapes above;
/// a range of more than `RANGE_DELETE_BATCH` keys is removed in one call; the trie's
/// invariants hold after each call, and the table shrinks once most keys are gone.
#[test]
fn remove_range_matches_a_btreemap() {
    let _watchdog = Watchdog::arm("remove_range_matches_a_btreemap", WATCHDOG);
    let mut rng = SmallRng::seed_from_u64(0x7A9E);
    for round in 0..4 {
        let ct = CuckooTrie::with_config(Config::builder().initial_buckets(16).build().unwrap())
            .unwrap();
        let mut model = Model::new();
        for _ in 0..3_000 {
            let k = random_key(&mut rng);
            let v = rng.random::<u32>().to_le_bytes().to_vec();
            ct.insert(&k, &v).unwrap();
            model.insert(k, v);
        }
        for _ in 0..60 {
            let lo = random_bound(&mut rng, &model);
            let hi = random_bound(&mut rng, &model);
            let want: Vec<Vec<u8>> = model
                .keys()
                .filter(|k| within(k, &lo, &hi))
                .cloned()
                .collect();
            let got = ct.remove_range(
                lo.as_ref().map(Vec::as_slice),
                hi.as_ref().map(Vec::as_slice),
            );
            assert_eq!(got, want.len(), "round {round}: {lo:?}..{hi:?}");
            for k in &want {
                model.remove(k);
            }
            assert_eq!(ct.len(), model.len());
            ct.check_invariants().unwrap();
            assert_eq!(
                expect(&model, &Bound::Unbounded, true, usize::MAX),
                scan_of(&ct, &Bound::Unbounded, 0, usize::MAX)
            );
        }
    }
    // One call over more keys than a batch, in the middle of a larger set.
    let ct = CuckooTrie::new();
    for i in 0..10_000u32 {
        ct.insert(&i.to_be_bytes(), b"v").unwrap();
    }
    let (lo, hi) = (1_000u32.to_be_bytes(), 9_000u32.to_be_bytes());
    let n = ct.remove_range(Bound::Included(&lo), Bound::Excluded(&hi));
    assert_eq!(n, 8_000);
    assert_eq!(ct.len(), 2_000);
    assert!(ct.contains_key(&999u32.to_be_bytes()) && ct.contains_key(&hi));
    assert!(!ct.contains_key(&lo) && !ct.contains_key(&8_999u32.to_be_bytes()));
    ct.check_invariants().unwrap();
    assert!(ct.stats().growth.shrinks > 0, "{:?}", ct.stats().growth);
}
