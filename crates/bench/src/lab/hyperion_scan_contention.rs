//! `hyperion_scan_contention`: what a scanner loses to writers — one scan thread (a)
//! alone, (b) while one writer inserts into *other* arenas, (c) while one writer inserts
//! into *its own* arena — for short scans (1–100 pairs from random bounds) and for
//! full-range scans.
//!
//! Arguments: `[KEYS] [SECS] [ROUNDS] [arena|one-trie]` (defaults `1M 2 3 arena`).
//!
//! ```text
//! orrery-bench lab hyperion_scan_contention 1M 2 3 arena
//! ```
//!
//! `MODE` `arena` (default) spreads short scans' bounds and the writer's keys over the 16
//! tries of an arena (first byte ≡ 0 or 1 mod 16, below); `one-trie` puts them in one
//! trie (first byte 0, or 1 for the other arena's writer) — the worst case for
//! optimistic scans, whose versions are per trie.
//!
//! Loads `KEYS` random 8-byte keys (8-byte values) into an index with the default 16
//! arenas. Short scans start at a random bound whose first byte is ≡ 0 mod 16 (arena 0)
//! and stop after 1–100 pairs (uniform), so nearly all of them read arena 0 only; a full
//! scan reads every pair of every arena. The writer inserts fresh random keys whose first
//! byte is ≡ 1 mod 16 (other arena) or ≡ 0 mod 16 (same arena) and removes them again
//! in insertion order, keeping at most 4,096 of its own at a time (each insert and each
//! removal counts as a write), so the index — and what a full scan reads — keeps its
//! size across configurations and builds; `Mpairs/s` is the pairs scans visited per
//! second (their cost per pair). Scanner and writer start
//! together at a barrier and run for `SECS` seconds; every scan is timed (`Instant`, its
//! own cost included); `max_ns` is the slowest scan. A writer stops at the latest
//! `SECS + 20` seconds after the start even if the scanner is still inside a scan (a
//! starved scanner then finishes): such a run is marked `capped` on stderr, and its
//! figures are lower bounds of the stall. Every configuration runs `ROUNDS` times,
//! interleaved; each run is printed on stderr as it ends, and the medians on stdout. Each
//! scan is checked for ascending keys, and a full scan for at least the keys loaded.

use std::ops::{Bound, ControlFlow};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use orrery::hyperion::Hyperion;

use super::count_arg;
use crate::rng::Rng;

/// Most keys of its own a writer keeps in the index (see the module docs).
const LIVE: usize = 4096;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Writer {
    None,
    Other,
    Same,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Scan {
    Short,
    Full,
}

struct Sample {
    scans_per_s: f64,
    /// Pairs visited per second, in millions.
    mpairs_per_s: f64,
    p50: u64,
    p99: u64,
    p999: u64,
    max: u64,
    writes: u64,
}

/// One scan; returns the pairs visited (checking that keys ascend).
fn scan_once(h: &Hyperion, kind: Scan, x: &mut Rng, mask: u64) -> usize {
    let (from, want) = match kind {
        Scan::Short => {
            let r = x.next_u64();
            let b = ((r & !(0xFF << 56)) | (((r >> 56) & mask) << 56)).to_be_bytes();
            (Some(b), 1 + (x.next_u64() % 100) as usize)
        }
        Scan::Full => (None, usize::MAX),
    };
    let mut n = 0usize;
    let mut last = [0u8; 8];
    let start = from
        .as_ref()
        .map_or(Bound::Unbounded, |b| Bound::Included(&b[..]));
    h.scan(start, &mut |k, _v| {
        let k: [u8; 8] = k.try_into().expect("8-byte keys");
        assert!(n == 0 || k > last, "keys ascend");
        last = k;
        n += 1;
        if n >= want {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    n
}

/// One run of `secs` seconds: scans of `kind` beside writer `w`.
#[allow(clippy::too_many_arguments)]
fn measure(
    h: &Hyperion,
    w: Writer,
    kind: Scan,
    secs: f64,
    seed: u64,
    loaded: usize,
    mask: u64,
) -> Sample {
    let start = Barrier::new(2);
    let stop = AtomicBool::new(false);
    let writes = AtomicU64::new(0);
    let capped = AtomicBool::new(false);
    let mut lat = Vec::with_capacity(1 << 16);
    let mut elapsed = Duration::ZERO;
    let mut pairs = 0u64;
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut x = Rng::new(seed);
            start.wait();
            let mut n = 0u64;
            let mut live = std::collections::VecDeque::new();
            if w != Writer::None {
                let b = if w == Writer::Same { 0u64 } else { 1 };
                let cap = Instant::now() + Duration::from_secs_f64(secs + 20.0);
                while !stop.load(Ordering::Relaxed) {
                    if n.is_multiple_of(256) && Instant::now() >= cap {
                        capped.store(true, Ordering::Relaxed);
                        break;
                    }
                    let r = x.next_u64();
                    let k = ((r & !(0xFF << 56)) | (((r >> 56) & mask | b) << 56)).to_be_bytes();
                    h.insert(&k, &r.to_le_bytes()).unwrap();
                    live.push_back(k);
                    n += 1;
                    // Its own keys only, at most `LIVE` at a time: the index keeps its
                    // size, so every configuration (and build) scans the same keys.
                    if live.len() > LIVE {
                        let old = live.pop_front().expect("a live key");
                        h.remove(&old);
                        n += 1;
                    }
                }
            }
            for k in live {
                h.remove(&k);
            }
            writes.store(n, Ordering::Relaxed);
        });
        let mut x = Rng::fork(seed, "scanner", 0);
        start.wait();
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_secs_f64(secs);
        loop {
            let t = Instant::now();
            let n = scan_once(h, kind, &mut x, mask);
            lat.push(t.elapsed().as_nanos() as u64);
            pairs += n as u64;
            if kind == Scan::Full {
                assert!(n >= loaded, "a full scan saw {n} of {loaded} loaded keys");
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        elapsed = t0.elapsed();
        stop.store(true, Ordering::Relaxed);
    });
    let scans = lat.len();
    lat.sort_unstable();
    let q = |f: f64| lat[((lat.len() as f64 * f) as usize).min(lat.len() - 1)];
    let s = Sample {
        scans_per_s: scans as f64 / elapsed.as_secs_f64(),
        mpairs_per_s: pairs as f64 / elapsed.as_secs_f64() / 1e6,
        p50: q(0.5),
        p99: q(0.99),
        p999: q(0.999),
        max: lat.last().copied().unwrap_or(0),
        writes: writes.load(Ordering::Relaxed),
    };
    eprintln!(
        "{kind:?} {w:?}: {scans} scans in {:.1} s, {:.1}/s, p50 {} p99 {} p99.9 {} max {} ns{}",
        elapsed.as_secs_f64(),
        s.scans_per_s,
        s.p50,
        s.p99,
        s.p999,
        s.max,
        if capped.load(Ordering::Relaxed) {
            " (capped: the writer stopped while a scan waited)"
        } else {
            ""
        }
    );
    s
}

/// The median of `v`.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the program (see the module docs for the arguments).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let n = count_arg(args, 0, 1_000_000)?;
    let secs: f64 = args
        .get(1)
        .map_or(Ok(2.0), |a| a.parse().map_err(|_| format!("SECS: {a:?}")))?;
    let rounds = count_arg(args, 2, 3)?.max(1) as usize;
    // The first key bytes of short scans' bounds and of the writer's keys: the 16 tries
    // of an arena (default), or one trie (`one-trie`).
    let mask = match args.get(3).map(String::as_str) {
        None | Some("arena") => 0xF0,
        Some("one-trie") => 0,
        Some(m) => return Err(format!("MODE: arena or one-trie, not {m}")),
    };
    let h = Hyperion::new();
    let mut x = Rng::new(0x5EED_1234_ABCD_0001);
    for _ in 0..n {
        let r = x.next_u64();
        h.insert(&r.to_be_bytes(), &r.to_le_bytes()).unwrap();
    }
    let loaded = h.len();
    eprintln!("loaded {loaded} keys; {secs} s per run, {rounds} rounds");
    let mut configs = Vec::new();
    for kind in [Scan::Short, Scan::Full] {
        for w in [Writer::None, Writer::Other, Writer::Same] {
            configs.push((kind, w));
        }
    }
    let mut res: Vec<Vec<Sample>> = configs.iter().map(|_| Vec::new()).collect();
    for r in 0..rounds {
        for (i, &(kind, w)) in configs.iter().enumerate() {
            res[i].push(measure(
                &h,
                w,
                kind,
                secs,
                77 + r as u64 * 31 + i as u64,
                loaded,
                mask,
            ));
        }
    }
    println!(
        "scan   writer      scans/s  Mpairs/s     p50_ns     p99_ns    p999_ns      max_ns  writer_Mops (medians of {rounds})"
    );
    for (i, &(kind, w)) in configs.iter().enumerate() {
        let s = &res[i];
        let m = |f: &dyn Fn(&Sample) -> f64| median(s.iter().map(f).collect());
        println!(
            "{:<6} {:<7} {:>11.1} {:>9.2} {:>10.0} {:>10.0} {:>10.0} {:>11.0} {:>12.3}",
            format!("{kind:?}"),
            format!("{w:?}"),
            m(&|s| s.scans_per_s),
            m(&|s| s.mpairs_per_s),
            m(&|s| s.p50 as f64),
            m(&|s| s.p99 as f64),
            m(&|s| s.p999 as f64),
            m(&|s| s.max as f64),
            m(&|s| s.writes as f64 / secs / 1e6),
        );
    }
    Ok(())
}
