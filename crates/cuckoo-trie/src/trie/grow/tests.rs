//! Unit tests of growth and shrink: a migration shared by two participants by hand, the
//! growth policy, shrinking down to the initial size, a shrink into too small a table.

use super::*;
use crate::Config;
use crate::trie::{Decision, Mode};
use rand::Rng;

fn raw(bits: u32) -> Raw {
    Raw::new(Config {
        symbol_bits: bits,
        prefetch_depth: 3,
        initial_buckets: 4,
    })
    .unwrap()
}

/// Drops `r` and drives epoch reclamation until what this thread retired (old tables)
/// is freed, so Miri's leak check sees no queued garbage at exit.
fn drop_and_drain(r: Raw) {
    drop(r);
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    orrery_core::sync::pin().defer(move || flag.store(true, Ordering::Relaxed));
    let freed = orrery_core::sync::epoch::flush_until(std::time::Duration::from_secs(600), || {
        ran.load(Ordering::Relaxed)
    });
    assert!(freed, "deferred frees did not run within the deadline");
}

fn insert(r: &Raw, k: &[u8]) {
    r.upsert(k, &mut |_| Decision::Store(k.to_vec()), Mode::INSERT)
        .unwrap();
}

/// Two participants interleaved by hand on one thread: the first claims (and does)
/// half of the work, the second the rest, the last unit's participant publishes; the
/// result is the same trie, with the leaf list stitched across units.
#[test]
fn a_migration_shared_by_two_participants_publishes_a_correct_trie() {
    let n = if cfg!(miri) { 60 } else { 2000 };
    for bits in [1, 5] {
        let r = raw(bits);
        for i in 0..n {
            let k = (i as u32).wrapping_mul(2_654_435_761).to_be_bytes();
            insert(&r, &k[..(i % 4) + 1]);
        }
        let len = r.check_invariants().unwrap();
        let g = orrery_core::sync::pin();
        let old = r.table(&g);
        let before = old.bytes();
        let growths = r.growth_stats().growths;
        // Start a migration as `grow` does, but run its units from two "participants"
        // by hand: install it, then claim units alternately.
        let m = {
            let new = table_with_root(old.hash().buckets() as usize * 2).unwrap();
            Arc::new(Migration::new(old, new, bits))
        };
        *r.growth.current.lock().unwrap() = Some(Arc::clone(&m));
        r.resizing.store(true, Ordering::SeqCst);
        // Freeze everything (claims 0..chunks), then copy the first half of the units
        // as if by a second writer, checking the old table still answers meanwhile.
        for _ in 0..m.chunks {
            let i = m.next.fetch_add(1, Ordering::AcqRel);
            old.freeze_range(
                i * FREEZE_CHUNK..((i + 1) * FREEZE_CHUNK).min(old.hash().buckets() as usize),
            );
            m.frozen.fetch_add(1, Ordering::AcqRel);
        }
        assert!(r.is_growing());
        let half = m.units / 2;
        for _ in 0..half {
            let u = m.next.fetch_add(1, Ordering::AcqRel) - m.chunks;
            // SAFETY: the unpublished table owned by `m`, which this test holds.
            let new = unsafe { &*m.new.load(Ordering::Acquire) };
            let e = copy_unit(old, new, u as u8, &m.placed).unwrap();
            m.ends.lock().unwrap()[u] = e;
            m.copied.fetch_add(1, Ordering::AcqRel);
        }
        assert!(
            std::ptr::eq(r.table(&g), old),
            "not published before the last unit"
        );
        assert_eq!(
            r.check_invariants().unwrap(),
            len,
            "the old table still answers"
        );
        // The second participant takes the rest and finishes.
        r.participate(&m, false, &g).unwrap();
        assert!(!r.is_growing());
        assert_eq!(r.growth_stats().growths, growths + 1);
        drop(g);
        let g = orrery_core::sync::pin();
        assert_eq!(r.table(&g).bytes(), before * 2);
        drop(g);
        assert_eq!(r.check_invariants().unwrap(), len);
        // The trie keeps working after the handover.
        insert(&r, b"after");
        assert_eq!(r.check_invariants().unwrap(), len + 1);
        drop(m);
        drop_and_drain(r);
    }
}

/// Growth through the writers' path (`upsert` finding no room) from 4 buckets, with
/// the invariant check after every growth.
#[test]
fn growth_keeps_the_trie_and_its_leaf_list() {
    let n = if cfg!(miri) { 80 } else { 4000 };
    let r = raw(3);
    let mut growths = 0;
    for i in 0..n {
        let k = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes();
        insert(&r, &k[..(i % 8) + 1]);
        let now = r.growth_stats().growths;
        if now != growths {
            growths = now;
            r.check_invariants().unwrap();
        }
    }
    assert!(growths >= 3, "grew {growths} times");
    r.check_invariants().unwrap();
    drop_and_drain(r);
}

/// The growth policy: a table grows only when a placement finds no cuckoo path (or
/// no colour), which for random keys is at a high load factor; and the stats count
/// the entries a growth copied (checked against a count of the old table taken just
/// before the insert that grew it).
#[test]
fn growth_happens_at_high_load_and_counts_what_it_copied() {
    let n = if cfg!(miri) { 300 } else { 15_000 };
    let r = raw(5);
    let mut growths = 0;
    let mut rng = orrery_core::testing::rng::rng(0x2545_F491_4F6C_DD1D);
    let mut loads = Vec::new();
    for _ in 0..n {
        let before = {
            let g = orrery_core::sync::pin();
            let mut e = 0usize;
            r.table(&g).for_each(|_, _| e += 1);
            e
        };
        let x: u64 = rng.random();
        insert(&r, &x.to_be_bytes());
        let st = r.growth_stats();
        if st.growths != growths {
            growths = st.growths;
            assert_eq!(
                st.last_entries, before,
                "entries copied by growth {growths}"
            );
            loads.push(st.last_entries as f64 / st.last_slots as f64);
        }
    }
    assert!(!loads.is_empty());
    // Tables of 4 to 64 buckets fill unevenly; from 128 buckets on (the last growths)
    // random keys fill the table past 80% before it grows.
    let tail = &loads[loads.len().saturating_sub(3)..];
    if !cfg!(miri) {
        assert!(
            tail.iter().all(|&l| l > 0.8),
            "load factors at growth: {loads:?}"
        );
    }
    drop_and_drain(r);
}

fn remove(r: &Raw, k: &[u8]) {
    assert!(r.remove(k), "removing a present key");
}

fn key(i: usize) -> [u8; 8] {
    (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes()
}

fn buckets(r: &Raw) -> usize {
    let g = orrery_core::sync::pin();
    r.table(&g).hash().buckets() as usize
}

/// The shrink trigger through the writers' path: removals shrink the table (each
/// shrunk table at most half full, never below the initial size), the trie and its
/// count survive every shrink, and removing every key brings the table back to the
/// initial size.
#[test]
fn removals_shrink_the_table_down_to_its_initial_size() {
    let n = if cfg!(miri) { 120 } else { 6000 };
    for bits in [1, 3, 5] {
        let r = raw(bits);
        // Keys of 1..=8 bytes (short ones collide: kept once).
        let mut seen = std::collections::HashSet::new();
        let keys: Vec<Vec<u8>> = (0..n)
            .map(|i| key(i)[..(i % 8) + 1].to_vec())
            .filter(|k| seen.insert(k.clone()))
            .collect();
        let n = keys.len();
        for k in &keys {
            insert(&r, k);
        }
        let peak = buckets(&r);
        assert!(peak >= 64, "grew to {peak} buckets");
        let mut shrinks = 0;
        for (i, k) in keys.iter().enumerate() {
            remove(&r, k);
            let st = r.growth_stats();
            if st.shrinks != shrinks {
                shrinks = st.shrinks;
                let b = buckets(&r);
                assert!(
                    r.entries() <= b * crate::bucket::SLOTS / 2,
                    "{} entries in {b} buckets after a shrink",
                    r.entries()
                );
                assert!(b >= 4);
                assert_eq!(r.check_invariants().unwrap(), n - i - 1);
            }
        }
        assert!(shrinks >= 2, "shrank {shrinks} times (bits {bits})");
        assert_eq!(r.growth_stats().abandoned_shrinks, 0);
        assert_eq!(buckets(&r), 4, "an empty trie's table is the initial size");
        assert_eq!(r.entries(), 1);
        assert_eq!(r.check_invariants().unwrap(), 0);
        // It grows again from there.
        for i in 0..n / 4 {
            insert(&r, &key(i));
        }
        assert_eq!(r.check_invariants().unwrap(), n / 4);
        drop_and_drain(r);
    }
}

/// The fallback of a shrink whose target is too small: a migration into a table that
/// cannot hold the trie retries into twice the buckets, and so on; reaching the old
/// size it is given up — old table unfrozen and kept, no key lost or duplicated, the
/// removal-side caller sees no error, and writers go on.
#[test]
fn a_shrink_into_too_small_a_table_retries_larger_or_gives_up() {
    let n = if cfg!(miri) { 150 } else { 5000 };
    let r = raw(5);
    let mut i = 0;
    // Load, then on until the table is at most half full (it is after a growth).
    while i < n || r.entries() * 2 > buckets(&r) * crate::bucket::SLOTS {
        insert(&r, &key(i));
        i += 1;
    }
    // Then remove down to 3/8 full (above the low-water mark: no shrink yet), so that
    // half the buckets hold the trie at 3/4 load.
    let mut j = 0;
    while r.entries() * 8 > buckets(&r) * crate::bucket::SLOTS * 3 {
        remove(&r, &key(j));
        j += 1;
    }
    assert_eq!(r.growth_stats().shrinks, 0);
    let len = r.check_invariants().unwrap();
    let before = buckets(&r);
    let e = r.entries();
    // 1. Into 4 buckets (16 slots) with `e` entries: no room; the finisher retries into
    //    8, 16, … buckets and publishes the first that holds them, below the old size.
    {
        let g = orrery_core::sync::pin();
        r.migrate(r.table(&g), 4, &g).unwrap();
        drop(g);
        let st = r.growth_stats();
        assert_eq!((st.shrinks, st.abandoned_shrinks), (1, 0));
        let after = buckets(&r);
        assert!(after < before && after * crate::bucket::SLOTS >= e);
        assert_eq!(r.check_invariants().unwrap(), len);
    }
    // 2. Fill the table past half, then ask for half the buckets: no size below the
    //    current one holds the trie, so the shrink is given up.
    // (Should it grow meanwhile, the loop fills the new table.)
    while r.entries() * 2 <= buckets(&r) * crate::bucket::SLOTS + 16 {
        insert(&r, &key(i));
        i += 1;
    }
    let len = r.check_invariants().unwrap();
    let (shrinks, given_up) = (r.growth_stats().shrinks, r.growth_stats().abandoned_shrinks);
    let b = buckets(&r);
    let g = orrery_core::sync::pin();
    r.migrate(r.table(&g), b / 2, &g).unwrap();
    drop(g);
    let st = r.growth_stats();
    assert_eq!((st.shrinks, st.abandoned_shrinks), (shrinks, given_up + 1));
    assert_eq!(buckets(&r), b, "a shrink given up keeps the table");
    assert!(!r.is_growing());
    assert_eq!(r.check_invariants().unwrap(), len);
    // The old table is unfrozen: writers go on in it.
    insert(&r, b"after");
    remove(&r, &key(j));
    assert_eq!(r.check_invariants().unwrap(), len);
    drop_and_drain(r);
}
