//! Shrinking the table after removals (issue 21; `trie/grow.rs`, "Shrinking"): the same
//! cooperative migration as a growth, into a smaller table, started by a removal that
//! leaves the trie below the low-water mark.
//!
//! - `grow_shrink_cycles_match_a_btreemap`: differential against a `BTreeMap` through
//!   several load-then-remove cycles on three configurations, with the invariant check and
//!   a full comparison after every phase; the table shrinks, and `memory_usage` falls.
//! - `churn_around_the_threshold_migrates_a_bounded_number_of_times`: the hysteresis.
//! - `readers_and_writers_run_through_a_shrink`: gets, lookup groups and scans keep
//!   finding every stable key while writers remove (and insert) keys and shrink the table.
//! - `out_of_memory_during_a_shrink_leaves_the_removal_done_and_the_table_large`.
//!
//! Concurrent rounds start their threads at a barrier and repeat until they have seen
//! what they are about, bounded by a generous time deadline.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use orrery_core::alloc::failpoint;
use orrery_core::testing::wait::Watchdog;
use orrery_cuckoo_trie::{Config, CuckooTrie};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A test still running after this is stuck inside the index (every wait of the test is
/// bounded by a shorter deadline): the watchdog ends the process.
const WATCHDOG: Duration = Duration::from_secs(600);

fn trie(bits: u32, initial: usize) -> CuckooTrie {
    CuckooTrie::with_config(
        Config::builder()
            .symbol_bits(bits)
            .initial_buckets(initial)
            .build()
            .unwrap(),
    )
    .unwrap()
}

/// Key `i` (8 spread bytes).
fn key(i: u64) -> [u8; 8] {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes()
}

/// A random key: short keys over a tiny alphabet (prefixes of each other), a long shared
/// prefix (jump nodes), or 8 random bytes.
fn random_key(rng: &mut SmallRng) -> Vec<u8> {
    match rng.random_range(0..4) {
        0 => (0..rng.random_range(0..5))
            .map(|_| rng.random_range(0..3u8))
            .collect(),
        1 => {
            let mut k = b"a/shared/prefix/".to_vec();
            k.extend((0..rng.random_range(0..4)).map(|_| rng.random_range(b'a'..b'h')));
            k
        }
        _ => rng.random::<u64>().to_be_bytes().to_vec(),
    }
}

/// Compares the whole trie with the model: invariants, every key by `get`, a forward scan.
fn same(ct: &CuckooTrie, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    assert_eq!(ct.check_invariants(), Ok(model.len()));
    for (k, v) in model {
        assert_eq!(ct.get(k).as_ref(), Some(v), "key {k:?}");
    }
    let mut got = Vec::new();
    ct.scan(Bound::Unbounded, &mut |k, v| {
        got.push((k.to_vec(), v.to_vec()));
        ControlFlow::Continue(())
    });
    assert!(got.iter().map(|(k, v)| (k, v)).eq(model.iter()), "scan");
}

#[test]
fn grow_shrink_cycles_match_a_btreemap() {
    let n = if cfg!(miri) { 150 } else { 5000 };
    for (bits, initial) in [(5, 4), (3, 16), (1, 4)] {
        let ct = trie(bits, initial);
        let mut model = BTreeMap::new();
        let mut rng = SmallRng::seed_from_u64(0x5EED + bits as u64);
        for cycle in 0..3 {
            // Load.
            while model.len() < n {
                let k = random_key(&mut rng);
                let v = rng.random::<u32>().to_le_bytes().to_vec();
                assert_eq!(ct.insert(&k, &v), Ok(model.insert(k, v).is_none()));
            }
            same(&ct, &model);
            let full = ct.memory_usage().structure_bytes;
            let shrinks = ct.stats().growth.shrinks;
            // Remove 95% (absent keys too), with upserts mixed in.
            while model.len() > n / 20 {
                if rng.random_bool(0.1) {
                    let k = random_key(&mut rng);
                    let v = vec![cycle as u8];
                    assert_eq!(ct.insert(&k, &v), Ok(model.insert(k, v).is_none()));
                } else {
                    let k = if rng.random_bool(0.9) {
                        let i = rng.random_range(0..model.len());
                        model.keys().nth(i).unwrap().clone()
                    } else {
                        random_key(&mut rng)
                    };
                    assert_eq!(ct.remove(&k), model.remove(&k).is_some());
                }
            }
            same(&ct, &model);
            let st = ct.stats().growth;
            assert!(
                st.shrinks > shrinks,
                "config {bits}/{initial} cycle {cycle}: no shrink ({st:?})"
            );
            assert_eq!(st.abandoned_shrinks, 0, "{st:?}");
            let small = ct.memory_usage().structure_bytes;
            assert!(
                small * 4 <= full,
                "config {bits}/{initial} cycle {cycle}: {full} bytes, then {small}"
            );
        }
    }
}

/// Hysteresis: once a shrink has run, inserting and removing keys over and over around
/// that size — the key count swinging 30% either way, between about 35% and 65% of the
/// shrunk table's slots — migrates the table a bounded number of times (here: none), not
/// on every cycle. A policy that shrank into a table near the growth threshold, or whose
/// low-water mark sat close to a just-grown table's load, would rebuild back and forth.
#[test]
fn churn_around_the_threshold_migrates_a_bounded_number_of_times() {
    let (n, cycles) = if cfg!(miri) { (300, 4) } else { (20_000, 30) };
    let ct = trie(5, 4);
    for i in 0..n {
        ct.insert(&key(i), b"v").unwrap();
    }
    // Remove until the first shrink.
    let mut next_removed = 0;
    let shrinks = ct.stats().growth.shrinks;
    while ct.stats().growth.shrinks == shrinks {
        assert!(next_removed < n, "removing every key never shrank");
        assert!(ct.remove(&key(next_removed)));
        next_removed += 1;
    }
    let before = ct.stats().growth;
    let bytes = ct.memory_usage().structure_bytes;
    let batch = ct.len() as u64 * 3 / 10;
    // Churn: up by a batch, down by two, up by one, repeatedly, with new keys.
    let mut next_new = n;
    for _ in 0..cycles {
        for step in [1, -2, 1] {
            for _ in 0..batch * (step as i64).unsigned_abs() {
                if step > 0 {
                    ct.insert(&key(next_new), b"w").unwrap();
                    next_new += 1;
                } else {
                    assert!(ct.remove(&key(next_removed)));
                    next_removed += 1;
                }
            }
        }
    }
    let after = ct.stats().growth;
    let migrations = after.growths + after.shrinks - before.growths - before.shrinks;
    assert_eq!(
        migrations, 0,
        "{migrations} migrations in {cycles} churn cycles of ±{batch} keys: \
         {before:?} -> {after:?}"
    );
    assert_eq!(ct.memory_usage().structure_bytes, bytes);
    assert_eq!(
        ct.check_invariants(),
        Ok((next_new - next_removed) as usize)
    );
}

/// Writers remove most keys (and insert a few) so that the table shrinks, possibly several
/// times, while readers check that every stable key (never removed) is found by `get` and
/// `get_many`, and that scans over a random range yield every stable key in it, in order.
/// Rounds repeat until lookups were seen during a shrink and a helping writer copied a
/// unit, within a time deadline.
#[test]
fn readers_and_writers_run_through_a_shrink() {
    let _watchdog = Watchdog::arm("readers_and_writers_run_through_a_shrink", WATCHDOG);
    const W: usize = 2;
    const R: usize = 2;
    let (stable, doomed) = if cfg!(miri) {
        (50u64, 400u64)
    } else {
        (2_000, 40_000)
    };
    let deadline = Instant::now() + Duration::from_secs(if cfg!(miri) { 3600 } else { 240 });
    let mut reads_during = 0u64;
    let mut helped = 0usize;
    let mut rounds = 0;
    while reads_during == 0 || helped == 0 || rounds < 2 {
        assert!(
            Instant::now() < deadline,
            "within the deadline: {rounds} rounds, {reads_during} reads during a shrink, \
             {helped} helped units"
        );
        let ct = trie(5, 4);
        // Stable keys are `key(i)` for i < stable; doomed ones above.
        for i in 0..stable + doomed {
            ct.insert(&key(i), &key(i)).unwrap();
        }
        let mut sorted: Vec<[u8; 8]> = (0..stable).map(key).collect();
        sorted.sort();
        let sorted = &sorted;
        let before = ct.stats().growth;
        let done = AtomicBool::new(false);
        let during = AtomicU64::new(0);
        let start = Barrier::new(W + R);
        std::thread::scope(|s| {
            let writers: Vec<_> = (0..W)
                .map(|w| {
                    let (ct, start) = (&ct, &start);
                    s.spawn(move || {
                        start.wait();
                        let mut i = stable + w as u64;
                        while i < stable + doomed {
                            assert!(ct.remove(&key(i)), "doomed key {i}");
                            // Every 8th removal puts a new key in (removed again below).
                            if i.is_multiple_of(8) {
                                let k = key(i + (1 << 40));
                                assert_eq!(ct.insert(&k, b"x"), Ok(true));
                                assert!(ct.remove(&k));
                            }
                            i += W as u64;
                        }
                    })
                })
                .collect();
            for r in 0..R {
                let (ct, start, done, during) = (&ct, &start, &done, &during);
                s.spawn(move || {
                    start.wait();
                    let mut rng = SmallRng::seed_from_u64(r as u64 + 1);
                    while !done.load(Ordering::Acquire) {
                        let i = rng.random_range(0..stable);
                        let resizing = ct.stats().migrating;
                        assert_eq!(ct.get(&key(i)).as_deref(), Some(&key(i)[..]));
                        if resizing && ct.stats().migrating {
                            during.fetch_add(1, Ordering::Relaxed);
                        }
                        let ks: Vec<[u8; 8]> =
                            (0..16).map(|_| key(rng.random_range(0..stable))).collect();
                        let refs: Vec<&[u8]> = ks.iter().map(|k| &k[..]).collect();
                        ct.get_many(&refs, &mut |q, v| {
                            assert_eq!(v, Some(&ks[q][..]), "get_many");
                        });
                        // A scan from a stable key over the next few stable keys: every
                        // one of them comes, in order (doomed keys may come too).
                        let a = rng.random_range(0..sorted.len());
                        let b = (a + 20).min(sorted.len());
                        let mut want = sorted[a..b].iter().peekable();
                        let mut last: Option<Vec<u8>> = None;
                        ct.scan(Bound::Included(&sorted[a][..]), &mut |k, v| {
                            assert!(last.as_deref().is_none_or(|l| l < k), "scan order");
                            last = Some(k.to_vec());
                            match want.peek() {
                                Some(&w) if k == &w[..] => {
                                    assert_eq!(k, v, "a stable key's value");
                                    want.next();
                                }
                                Some(&w) => assert!(k < &w[..], "stable key skipped"),
                                None => {}
                            }
                            if want.peek().is_none() {
                                ControlFlow::Break(())
                            } else {
                                ControlFlow::Continue(())
                            }
                        });
                        assert!(want.peek().is_none(), "scan ended before stable keys");
                    }
                });
            }
            for h in writers {
                h.join().unwrap();
            }
            done.store(true, Ordering::Release);
        });
        assert_eq!(ct.check_invariants(), Ok(stable as usize));
        let st = ct.stats().growth;
        assert!(st.shrinks > before.shrinks, "no shrink: {st:?}");
        assert_eq!(st.abandoned_shrinks, 0);
        helped += st.helped_units - before.helped_units;
        reads_during += during.load(Ordering::Relaxed);
        rounds += 1;
    }
}

/// The shrink's table allocation fails (thread-local fail point armed before each
/// removal): the removal still succeeds, the key is gone, the shrink is counted as given
/// up and the table keeps its size; after the fail point is disarmed, later removals
/// shrink the table (once the entries have halved again: a given-up shrink is not retried
/// on every removal).
#[test]
fn out_of_memory_during_a_shrink_leaves_the_removal_done_and_the_table_large() {
    let _watchdog = Watchdog::arm(
        "out_of_memory_during_a_shrink_leaves_the_removal_done_and_the_table_large",
        WATCHDOG,
    );
    let n = if cfg!(miri) { 200 } else { 8000 };
    let ct = trie(5, 4);
    for i in 0..n {
        ct.insert(&key(i), b"v").unwrap();
    }
    let mut i = 0;
    let mut failed = 0;
    // Phase 1: every removal runs with its first allocation failing.
    while failed == 0 {
        assert!(i < n, "no shrink was tried");
        let bytes = ct.memory_usage().structure_bytes;
        let given_up = ct.stats().growth.abandoned_shrinks;
        let removed = {
            let _armed = failpoint::arm(1);
            ct.remove(&key(i))
        };
        assert!(removed, "a removal whose shrink failed reports the key");
        assert!(!ct.contains_key(&key(i)));
        assert!(!ct.stats().migrating);
        if ct.stats().growth.abandoned_shrinks > given_up {
            failed += 1;
            assert_eq!(ct.memory_usage().structure_bytes, bytes, "table replaced");
            assert_eq!(ct.stats().growth.shrinks, 0);
        }
        i += 1;
    }
    assert_eq!(ct.check_invariants(), Ok((n - i) as usize));
    let bytes = ct.memory_usage().structure_bytes;
    // Phase 2: allocation works again; removing on shrinks the table.
    while ct.stats().growth.shrinks == 0 {
        assert!(i < n, "no shrink after the fail point was disarmed");
        assert!(ct.remove(&key(i)));
        i += 1;
    }
    assert!(ct.memory_usage().structure_bytes < bytes);
    assert_eq!(ct.check_invariants(), Ok((n - i) as usize));
    for j in i..n {
        assert!(ct.contains_key(&key(j)));
    }
}
