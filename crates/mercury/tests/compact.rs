//! Nodes move into lower chunks after mass removals (the crate's `compact.rs`; issue 38,
//! "Memory comes back"): removals and the shrink's merges copy survivors into holes of lower
//! chunks so that the higher chunks drain and give their pages back. Every pair here is a
//! node (8-byte key, 24-byte value: too large for a bucket's inline area), 300K of them over
//! seven 2 MiB chunks, so that the pool is sparse after removing 90%.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use orrery_core::testing::memory::drain_retired;
use orrery_mercury::Mercury;

const N: u64 = if cfg!(miri) { 1_000 } else { 300_000 };

/// A deadline for the concurrent phase (a hung or live-locked run fails, not hangs).
const DEADLINE: Duration = Duration::from_secs(300);

/// Key `i`: scattered over the buckets, in no relation to the insertion order.
fn key(i: u64) -> [u8; 8] {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes()
}

/// Value of key `i`: three words that a torn read would mix up.
fn value(i: u64) -> [u8; 24] {
    let mut v = [0u8; 24];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v[8..16].copy_from_slice(&(!i).to_le_bytes());
    v[16..].copy_from_slice(&i.wrapping_mul(3).to_le_bytes());
    v
}

/// The keys that stay: one in ten, the last inserted of every ten.
fn kept(i: u64) -> bool {
    i % 10 == 9
}

fn filled() -> Mercury {
    let m = Mercury::new();
    for i in 0..N {
        assert_eq!(m.insert(&key(i), &value(i)), Ok(true));
    }
    m
}

/// Every kept key is there with its value, through `get`, `len` and `for_each`.
fn holds_the_kept_keys(m: &Mercury) {
    let kept_keys: Vec<u64> = (0..N).filter(|&i| kept(i)).collect();
    assert_eq!(m.len(), kept_keys.len());
    for &i in &kept_keys {
        assert_eq!(m.get(&key(i)).as_deref(), Some(&value(i)[..]), "key {i}");
    }
    let mut seen = HashSet::new();
    m.for_each(|k, v| {
        let i = u64::from_le_bytes(v[..8].try_into().unwrap());
        assert_eq!((k, v), (&key(i)[..], &value(i)[..]));
        assert!(seen.insert(i), "visited twice");
        ControlFlow::Continue(())
    });
    assert_eq!(seen.len(), kept_keys.len());
}

/// After removing 90% of the keys, nodes have moved, every remaining key is found with its
/// value, and the memory the table holds fell with its contents (without moves the
/// survivors pin a page each of every chunk the fill used).
#[test]
#[cfg_attr(miri, ignore = "hundreds of thousands of nodes")]
fn nodes_move_after_a_mass_removal() {
    let m = filled();
    drain_retired();
    let full = m.memory_usage();
    assert_eq!(
        m.stats().moved_nodes,
        0,
        "nothing moves while the table fills"
    );
    for i in (0..N).filter(|&i| !kept(i)) {
        assert!(m.remove(&key(i)), "key {i}");
    }
    m.finish_expansion();
    drain_retired();
    let after = m.memory_usage();
    let moved = m.stats().moved_nodes;
    assert!(moved > 0, "no node moved");
    holds_the_kept_keys(&m);
    let total = |u: orrery_core::api::MemoryUsage| u.structure_bytes + u.key_value_bytes;
    eprintln!(
        "moved {moved} nodes; memory {:.1} MiB full, {:.1} MiB after, {:?}",
        total(full) as f64 / (1 << 20) as f64,
        total(after) as f64 / (1 << 20) as f64,
        m.stats()
    );
    assert!(
        total(after) * 4 < total(full),
        "{} bytes held after the removal, {} full",
        total(after),
        total(full)
    );
}

/// Readers, scans and removers at once while nodes move: from a synchronised start, two
/// threads remove 90% of the keys (moving nodes as they go, and shrinking the table) while a
/// reader looks up the kept keys and a scanner walks the table, until the removers are done.
/// No kept key is ever missed or read with another value, and each scan yields every kept
/// key exactly once.
#[test]
#[cfg_attr(miri, ignore = "hundreds of thousands of nodes")]
fn readers_and_scans_miss_nothing_while_nodes_move() {
    let m = filled();
    drain_retired();
    let kept_keys: Vec<u64> = (0..N).filter(|&i| kept(i)).collect();
    let start = Barrier::new(4);
    let removers_done = AtomicBool::new(false);
    let began = Instant::now();
    let (lookups, scans) = std::thread::scope(|s| {
        let removers: Vec<_> = (0..2u64)
            .map(|t| {
                let (m, start) = (&m, &start);
                s.spawn(move || {
                    start.wait();
                    for i in (0..N).filter(|&i| !kept(i) && i % 2 == t) {
                        assert!(m.remove(&key(i)), "key {i}");
                        assert!(began.elapsed() < DEADLINE, "removals past the deadline");
                    }
                })
            })
            .collect();
        let reader = s.spawn(|| {
            start.wait();
            let mut lookups = 0u64;
            while !removers_done.load(Ordering::Acquire) {
                for &i in &kept_keys {
                    assert_eq!(
                        m.get_with(&key(i), |v| v == value(i)),
                        Some(true),
                        "key {i} missed or torn"
                    );
                }
                lookups += kept_keys.len() as u64;
                assert!(began.elapsed() < DEADLINE, "reader past the deadline");
            }
            lookups
        });
        let scanner = s.spawn(|| {
            start.wait();
            let mut scans = 0;
            while !removers_done.load(Ordering::Acquire) || scans == 0 {
                let mut seen = HashSet::new();
                for e in m.iter() {
                    let i = u64::from_le_bytes(e.value()[..8].try_into().unwrap());
                    assert_eq!((e.key(), e.value()), (&key(i)[..], &value(i)[..]));
                    assert!(seen.insert(i), "key {i} yielded twice");
                }
                for &i in &kept_keys {
                    assert!(seen.contains(&i), "scan {scans} missed key {i}");
                }
                scans += 1;
                assert!(began.elapsed() < DEADLINE, "scanner past the deadline");
            }
            scans
        });
        for r in removers {
            r.join().unwrap();
        }
        removers_done.store(true, Ordering::Release);
        (reader.join().unwrap(), scanner.join().unwrap())
    });
    let moved = m.stats().moved_nodes;
    eprintln!("{lookups} lookups, {scans} scans, {moved} nodes moved meanwhile");
    assert!(moved > 0, "no node moved during the removals");
    m.finish_expansion();
    holds_the_kept_keys(&m);
}
