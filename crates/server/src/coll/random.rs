//! Randomness for `SPOP`, `SRANDMEMBER`, `HRANDFIELD` and `ZRANDMEMBER`: a per-thread
//! SplitMix64 generator seeded from the clock, the thread and a global counter (no
//! dependency; not for cryptography), and the random probe of a large collection.
//!
//! A large hash, set or sorted set keeps its members in hash order (`crate::layout`), so
//! the first member at or after a random point of the 32-bit hash space is a random
//! member: each member is picked with the probability of the gap before it, which is
//! `1/n` on average (not exactly uniform, as Redis's own bucket sampling is not).
//! `SPOP` reads a whole run of members after one random point ([`run`]): one seek (a
//! leaf search) serves several pops.

use std::cell::Cell;
use std::ops::{Bound, ControlFlow};
use std::sync::atomic::{AtomicU64, Ordering};

use orrery::wormhole::Wormhole;

static SEEDS: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);

thread_local! {
    static STATE: Cell<u64> = Cell::new({
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        t ^ SEEDS.fetch_add(0x6A09_E667_F3BC_C909, Ordering::Relaxed)
    });
}

/// A random `u64`.
pub(crate) fn next_u64() -> u64 {
    STATE.with(|s| {
        let x = s.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        s.set(x);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

/// A random index below `n` (`n > 0`).
pub(crate) fn below(n: usize) -> usize {
    (next_u64() % n as u64) as usize
}

/// The first pair at or after a random point of `prefix ++ (4 hash bytes)`, wrapping to
/// the first pair under `prefix`; `None` when nothing is stored under it.
pub(crate) fn probe(elements: &Wormhole, prefix: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut start = prefix.to_vec();
    start.extend_from_slice(&(next_u64() as u32).to_be_bytes());
    let mut found = None;
    for from in [&start[..], prefix] {
        elements.scan(Bound::Included(from), &mut |k, v| {
            if k.starts_with(prefix) {
                found = Some((k.to_vec(), v.to_vec()));
            }
            ControlFlow::Break(())
        });
        if found.is_some() {
            break;
        }
    }
    found
}

/// The keys of up to `n` pairs under `prefix` (fewer once they take `bytes` bytes, at
/// least one when any exists) following a random point of `prefix ++ (4 hash bytes)`,
/// wrapping to the first pair under `prefix`: one seek for a run of random picks
/// (`SPOP`'s, see the set's `pop`).
pub(crate) fn run(elements: &Wormhole, prefix: &[u8], n: usize, bytes: usize) -> Vec<Vec<u8>> {
    let mut start = prefix.to_vec();
    start.extend_from_slice(&(next_u64() as u32).to_be_bytes());
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(n);
    let mut taken = 0;
    for from in [Bound::Included(&start[..]), Bound::Included(prefix)] {
        elements.scan(from, &mut |k, _| {
            // The wrapped second pass stops where the first began.
            let repeat = out.first().is_some_and(|f| f[..] == *k);
            if !k.starts_with(prefix) || repeat || out.len() >= n || taken >= bytes {
                return ControlFlow::Break(());
            }
            taken += k.len();
            out.push(k.to_vec());
            ControlFlow::Continue(())
        });
        if out.len() >= n || taken >= bytes {
            break;
        }
    }
    out
}

/// Up to `n` distinct pairs under `prefix`, picked at random (random probes, then, if
/// those keep finding the same pairs, the pairs following a random point): for a positive
/// `SRANDMEMBER` count and its relatives on a large collection.
pub(crate) fn distinct(elements: &Wormhole, prefix: &[u8], n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(n);
    let mut seen = std::collections::HashSet::new();
    let mut tries = 0;
    while out.len() < n && tries < 3 * n + 16 {
        tries += 1;
        match probe(elements, prefix) {
            Some(p) => {
                if seen.insert(p.0.clone()) {
                    out.push(p);
                }
            }
            None => return out,
        }
    }
    if out.len() < n {
        // Fill from a random point onwards, wrapping once.
        let mut start = prefix.to_vec();
        start.extend_from_slice(&(next_u64() as u32).to_be_bytes());
        for from in [&start[..], prefix] {
            elements.scan(Bound::Included(from), &mut |k, v| {
                if !k.starts_with(prefix) || out.len() >= n {
                    return ControlFlow::Break(());
                }
                if seen.insert(k.to_vec()) {
                    out.push((k.to_vec(), v.to_vec()));
                }
                ControlFlow::Continue(())
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_find_members_and_spread() {
        let w = Wormhole::new();
        assert!(probe(&w, b"p").is_none());
        for i in 0..200u32 {
            let mut k = b"p".to_vec();
            k.extend_from_slice(&orrery::hash::crc32c(&i.to_be_bytes()).to_be_bytes());
            w.insert(&k, &i.to_be_bytes()).unwrap();
        }
        w.insert(b"q", b"other").unwrap();
        let mut hits = std::collections::HashSet::new();
        for _ in 0..2000 {
            let (k, _) = probe(&w, b"p").unwrap();
            assert!(k.starts_with(b"p"));
            hits.insert(k);
        }
        assert!(
            hits.len() > 150,
            "{} of 200 members ever picked",
            hits.len()
        );
        let d = distinct(&w, b"p", 150);
        assert_eq!(d.len(), 150);
        let set: std::collections::HashSet<_> = d.iter().map(|p| &p.0).collect();
        assert_eq!(set.len(), 150);
        assert_eq!(distinct(&w, b"p", 500).len(), 200);
        assert!((0..100).all(|_| below(3) < 3));
    }

    /// `run` wraps past the prefix's end to its start and stops where it began: never a
    /// repeat, never a key of another prefix.
    #[test]
    fn runs_wrap_without_repeats() {
        let w = Wormhole::new();
        assert!(run(&w, b"p", 4, 1024).is_empty());
        for i in 0..200u32 {
            let mut k = b"p".to_vec();
            k.extend_from_slice(&orrery::hash::crc32c(&i.to_be_bytes()).to_be_bytes());
            w.insert(&k, b"").unwrap();
        }
        w.insert(b"q", b"").unwrap();
        w.insert(b"o", b"").unwrap();
        for _ in 0..200 {
            let r = run(&w, b"p", 16, 1 << 20);
            assert_eq!(r.len(), 16);
            assert!(r.iter().all(|k| k.starts_with(b"p") && k.len() == 5));
            let set: std::collections::HashSet<_> = r.iter().collect();
            assert_eq!(set.len(), 16);
        }
        for _ in 0..20 {
            let all = run(&w, b"p", 500, 1 << 20);
            let set: std::collections::HashSet<_> = all.iter().collect();
            assert_eq!((all.len(), set.len()), (200, 200));
        }
        assert_eq!(run(&w, b"p", 500, 1).len(), 1);
        assert!(run(&w, b"z", 5, 100).is_empty());
    }
}
