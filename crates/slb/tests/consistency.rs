//! Targeted consistency stress: writers update a small hot key set with increasing versions
//! while readers, through the SLB, check that they never see a version older than one whose
//! write completed before their read began (nor one that was not yet started when it ended).
//!
//! The SLB is configured to churn (tiny Cache Table, every emission logged, admission at the
//! first emission) and the index yields at random points, so misses, emissions, admissions,
//! evictions, invalidations and updates all race with each other.

mod common;

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::SlowIndex;
use orrery_core::KvIndex;
use orrery_core::reference::LockedBTreeMap;
use orrery_core::testing::rng;
use orrery_slb::{Config, Slb};
use rand::RngCore;

/// Operation `n` on a key: a removal when `n % 4 == 3`, otherwise an insert of value `n`.
/// Version 0 is the initial absent state.
fn is_removal(n: u64) -> bool {
    n == 0 || n % 4 == 3
}

fn value_of(n: u64) -> Vec<u8> {
    // Versions padded to 24 bytes, so values are larger than the version itself.
    let mut v = n.to_be_bytes().to_vec();
    v.extend_from_slice(&[0xA5; 16]);
    v
}

fn version_of(v: &[u8]) -> u64 {
    assert_eq!(v.len(), 24, "torn or foreign value {v:?}");
    assert_eq!(&v[8..], &[0xA5; 16], "torn value {v:?}");
    u64::from_be_bytes(v[..8].try_into().unwrap())
}

/// Raises the flag if its thread unwinds (a failed check), so the others stop pacing on it.
struct FlagOnPanic<'a>(&'a AtomicBool);

impl Drop for FlagOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

struct KeyState {
    started: AtomicU64,
    completed: AtomicU64,
}

/// Checks one read of a key whose last completed operation before the read was `floor` and
/// whose last started operation after the read was `ceil`.
fn check(read: Option<&[u8]>, floor: u64, ceil: u64, key: usize) {
    match read {
        Some(v) => {
            let g = version_of(v);
            assert!(!is_removal(g), "key {key}: read a removal version {g}");
            assert!(
                g >= floor,
                "key {key}: stale read {g}, but write {floor} had completed before the read"
            );
            assert!(
                g <= ceil,
                "key {key}: read {g} before it was written ({ceil})"
            );
        }
        None => {
            assert!(
                (floor..=ceil).any(is_removal),
                "key {key}: absent, but write {floor} completed and no removal ran up to {ceil}"
            );
        }
    }
}

fn stress(slb: &impl KvIndex, keys: usize, writers: usize, readers: usize, ops: u64) {
    let state: Vec<KeyState> = (0..keys)
        .map(|_| KeyState {
            started: AtomicU64::new(0),
            completed: AtomicU64::new(0),
        })
        .collect();
    let names: Vec<Vec<u8>> = (0..keys).map(|k| format!("hot-{k}").into_bytes()).collect();
    let done = AtomicBool::new(false);
    // Set when any thread panics (a failed check), so that nobody waits for it.
    let failed = AtomicBool::new(false);
    // Readers and writers pace each other (about two reads per write, within a window of
    // `SLACK` operations), so that they interleave whatever the scheduler does.
    let reads = AtomicU64::new(0);
    let writes = AtomicU64::new(0);
    let slack = 4 * keys as u64;
    let start = Barrier::new(writers + readers);
    std::thread::scope(|s| {
        let mut writer_handles = Vec::new();
        for w in 0..writers {
            let (state, names, start, reads, writes) = (&state, &names, &start, &reads, &writes);
            let failed = &failed;
            writer_handles.push(s.spawn(move || {
                let _flag = FlagOnPanic(failed);
                start.wait();
                for n in 1..=ops {
                    while writes.load(Ordering::Relaxed) > reads.load(Ordering::Relaxed) / 2 + slack
                        && !failed.load(Ordering::Relaxed)
                    {
                        std::thread::yield_now();
                    }
                    for k in (w..keys).step_by(writers) {
                        state[k].started.store(n, Ordering::SeqCst);
                        if is_removal(n) {
                            slb.remove(&names[k]);
                        } else {
                            slb.insert(&names[k], &value_of(n)).unwrap();
                        }
                        state[k].completed.store(n, Ordering::SeqCst);
                        writes.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        for r in 0..readers {
            let (state, names, start, done) = (&state, &names, &start, &done);
            let (reads, writes, failed) = (&reads, &writes, &failed);
            s.spawn(move || {
                let _flag = FlagOnPanic(failed);
                start.wait();
                let mut rng = rng::rng(rng::derive(rng::seed().unwrap(), r as u64));
                // Keep reading for a while after the writers are done, so that quiescent
                // admissions and hits happen whatever the scheduling was.
                let mut after = 0;
                while after < 500 {
                    if done.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed) {
                        after += 1;
                    } else if reads.load(Ordering::Relaxed) / 2
                        > writes.load(Ordering::Relaxed) + slack
                    {
                        std::thread::yield_now();
                        continue;
                    }
                    let x = rng.next_u64();
                    if x.is_multiple_of(16) {
                        // A batch over every key.
                        let floors: Vec<u64> = state
                            .iter()
                            .map(|s| s.completed.load(Ordering::SeqCst))
                            .collect();
                        let refs: Vec<&[u8]> = names.iter().map(|n| &n[..]).collect();
                        let mut got: Vec<Option<Vec<u8>>> = Vec::new();
                        slb.get_many(&refs, &mut |i, v| {
                            assert_eq!(i, got.len(), "get_many out of order");
                            got.push(v.map(<[u8]>::to_vec));
                        });
                        assert_eq!(got.len(), keys);
                        for (k, v) in got.iter().enumerate() {
                            let ceil = state[k].started.load(Ordering::SeqCst);
                            check(v.as_deref(), floors[k], ceil, k);
                        }
                    } else {
                        let k = (x % keys as u64) as usize;
                        let floor = state[k].completed.load(Ordering::SeqCst);
                        let v = slb.get(&names[k]);
                        let ceil = state[k].started.load(Ordering::SeqCst);
                        check(v.as_deref(), floor, ceil, k);
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for h in writer_handles {
            if let Err(panic) = h.join() {
                failed.store(true, Ordering::Relaxed);
                std::panic::resume_unwind(panic);
            }
        }
        done.store(true, Ordering::Relaxed);
    });
    // Quiescent: every key holds its last operation's result, through the SLB as well.
    for (k, name) in names.iter().enumerate() {
        let last = state[k].completed.load(Ordering::SeqCst);
        assert_eq!(last, ops);
        let expect = (!is_removal(last)).then(|| value_of(last));
        assert_eq!(slb.get(name), expect, "key {k}");
    }
}

/// Every emission logged and admitted at once, in a Cache Table of `buckets` buckets with
/// `stripes` lock stripes.
fn churning(buckets: usize, stripes: usize) -> Config {
    Config {
        cache_table_bytes: 64 * buckets,
        admission_threshold: 1,
        log_sample_rate: 1.0,
        stripes,
        ..Config::default()
    }
}

fn scale(n: u64) -> u64 {
    if std::env::var_os("ORRERY_LONG_STRESS").is_some() {
        n * 20
    } else {
        n
    }
}

#[test]
fn readers_never_see_stale_versions_with_eviction_churn() {
    // 24 hot keys compete for 7 slots: admissions evict constantly.
    let slb = Slb::with_config(SlowIndex::new(), churning(1, 1)).unwrap();
    stress(&slb, 24, 2, 3, scale(300));
    let s = slb.stats();
    eprintln!("with_eviction_churn: {s}");
    assert!(s.hits > 0 && s.admissions > 0 && s.evictions > 0, "{s}");
}

#[test]
fn readers_never_see_stale_versions_with_updates() {
    // Room for every key: writes mostly invalidate and refresh cached copies.
    let slb = Slb::with_config(SlowIndex::new(), churning(64, 64)).unwrap();
    stress(&slb, 8, 2, 3, scale(1000));
    let s = slb.stats();
    eprintln!("with_updates: {s}");
    assert!(s.hits > 0 && s.invalidations > 0 && s.updates > 0, "{s}");
}

#[test]
fn readers_never_see_stale_versions_without_yields() {
    let slb = Slb::with_config(LockedBTreeMap::new(), churning(2, 2)).unwrap();
    stress(&slb, 16, 2, 2, scale(3000));
    let s = slb.stats();
    eprintln!("without_yields: {s}");
    assert!(s.hits > 0 && s.admissions > 0, "{s}");
}

#[test]
#[cfg(feature = "bench-internals")]
fn readers_never_see_stale_versions_with_locked_reads() {
    // The paper's locking: lookups hold the stripe across the index search.
    use orrery_slb::locked_reads::LockedReadSlb;
    let slb = LockedReadSlb::with_config(SlowIndex::new(), churning(4, 4)).unwrap();
    stress(&slb, 16, 2, 3, scale(100));
    let s = slb.stats();
    eprintln!("with_locked_reads: {s}");
    assert!(s.hits > 0 && s.admissions > 0 && s.invalidations > 0, "{s}");
}
