//! `hyperion_read_contention`: what a reader loses to writers — one lookup thread (a)
//! alone, (b) while one writer inserts into *other* arenas, (c) while one writer inserts
//! into *its own* arena — for the optimistic read path (`get_with`), the locked one
//! (`get_with_locked`, feature `bench-internals`) and `get_many` (16 keys a call;
//! optimistic), side by side in one run (`docs/results/hyperion.md`).
//!
//! Arguments: `[KEYS] [SECS] [ROUNDS] [locked-first]` (defaults `1M 2 3`).
//!
//! ```text
//! orrery-bench lab hyperion_read_contention 1M 2 3
//! ```
//!
//! Loads `KEYS` random 8-byte keys (8-byte values) into an index with the default 16
//! arenas. The reader looks up random loaded keys of arena 0 (first byte ≡ 0 mod 16); the
//! writer inserts fresh random keys whose first byte is ≡ 1 mod 16 (other arena) or
//! ≡ 0 mod 16 (same arena). Reader and writer start together at a barrier and run for
//! `SECS` seconds. One lookup in 16 is timed (`Instant`, its own cost included); the
//! throughput counts all lookups; `max_ns` is the slowest timed lookup. Every configuration runs `ROUNDS` times, interleaved;
//! the medians are printed.

use std::hint::black_box;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use orrery::hyperion::Hyperion;

use super::count_arg;
use crate::rng::Rng;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Writer {
    None,
    Other,
    Same,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Path {
    Optimistic,
    Locked,
    /// `get_many` of 16 keys at a time (optimistic; one timed batch counts 16 lookups).
    GetMany,
}

struct Sample {
    mops: f64,
    p50: u64,
    p99: u64,
    p999: u64,
    max: u64,
    writes: u64,
}

/// One run of `secs` seconds: the reader on `keys` by `path`, beside writer `w`.
fn measure(h: &Hyperion, keys: &[[u8; 8]], w: Writer, path: Path, secs: f64, seed: u64) -> Sample {
    let start = Barrier::new(2);
    let stop = AtomicBool::new(false);
    let writes = AtomicU64::new(0);
    let mut lat = Vec::with_capacity(1 << 20);
    let mut ops = 0u64;
    let mut elapsed = Duration::ZERO;
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut x = Rng::new(seed);
            start.wait();
            let mut n = 0u64;
            if w != Writer::None {
                let b = if w == Writer::Same { 0u64 } else { 1 };
                while !stop.load(Ordering::Relaxed) {
                    let r = x.next_u64();
                    let k = ((r & !(0xFF << 56)) | (((r >> 56) & 0xF0 | b) << 56)).to_be_bytes();
                    h.insert(&k, &r.to_le_bytes()).unwrap();
                    n += 1;
                }
            }
            writes.store(n, Ordering::Relaxed);
        });
        let mut x = Rng::fork(seed, "reader", 0);
        start.wait();
        let t0 = Instant::now();
        let deadline = t0 + Duration::from_secs_f64(secs);
        'outer: loop {
            if path == Path::GetMany {
                for _ in 0..4 {
                    let batch: [&[u8]; 16] = std::array::from_fn(|_| {
                        &keys[(x.next_u64() % keys.len() as u64) as usize][..]
                    });
                    let timed = ops.is_multiple_of(16 * 16);
                    let t = timed.then(Instant::now);
                    let mut hits = 0;
                    h.get_many(&batch, &mut |_, v| {
                        hits += usize::from(v.map(<[u8]>::len) == Some(8))
                    });
                    if let Some(t) = t {
                        lat.push(t.elapsed().as_nanos() as u64);
                    }
                    assert_eq!(black_box(hits), 16);
                    ops += 16;
                }
                if Instant::now() >= deadline {
                    break 'outer;
                }
                continue;
            }
            for _ in 0..64 {
                let k = &keys[(x.next_u64() % keys.len() as u64) as usize];
                let timed = ops.is_multiple_of(16);
                let t = timed.then(Instant::now);
                let v = match path {
                    Path::Optimistic => h.get_with(k, |v| v.len()),
                    Path::Locked => h.get_with_locked(k, |v| v.len()),
                    Path::GetMany => unreachable!("batched above"),
                };
                if let Some(t) = t {
                    lat.push(t.elapsed().as_nanos() as u64);
                }
                assert_eq!(black_box(v), Some(8));
                ops += 1;
            }
            if Instant::now() >= deadline {
                break 'outer;
            }
        }
        elapsed = t0.elapsed();
        stop.store(true, Ordering::Relaxed);
    });
    lat.sort_unstable();
    let q = |f: f64| lat[((lat.len() as f64 * f) as usize).min(lat.len() - 1)];
    Sample {
        mops: ops as f64 / elapsed.as_secs_f64() / 1e6,
        p50: q(0.5),
        p99: q(0.99),
        p999: q(0.999),
        max: lat.last().copied().unwrap_or(0),
        writes: writes.load(Ordering::Relaxed),
    }
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
    // `locked-first`: run the locked path before the optimistic one in each pair (the
    // order can bias a pair on a loaded machine; run both orders).
    let locked_first = args.get(3).map(String::as_str) == Some("locked-first");
    let h = Hyperion::new();
    let mut x = Rng::new(0x5EED_1234_ABCD_0001);
    let mut mine = Vec::new();
    for _ in 0..n {
        let r = x.next_u64();
        let k = r.to_be_bytes();
        h.insert(&k, &r.to_le_bytes()).unwrap();
        if k[0].is_multiple_of(16) {
            mine.push(k);
        }
    }
    eprintln!(
        "loaded {} keys ({} in the reader's arena); {secs} s per run, {rounds} rounds",
        h.len(),
        mine.len()
    );
    let (p1, p2) = if locked_first {
        (Path::Locked, Path::Optimistic)
    } else {
        (Path::Optimistic, Path::Locked)
    };
    let configs = [
        (Writer::None, p1),
        (Writer::None, p2),
        (Writer::None, Path::GetMany),
        (Writer::Other, p1),
        (Writer::Other, p2),
        (Writer::Other, Path::GetMany),
        (Writer::Same, p1),
        (Writer::Same, p2),
        (Writer::Same, Path::GetMany),
    ];
    let mut res: Vec<Vec<Sample>> = configs.iter().map(|_| Vec::new()).collect();
    for r in 0..rounds {
        for (i, &(w, p)) in configs.iter().enumerate() {
            res[i].push(measure(
                &h,
                &mine,
                w,
                p,
                secs,
                77 + r as u64 * 31 + i as u64,
            ));
        }
    }
    println!(
        "writer  path        reader_Mops  p50_ns  p99_ns  p999_ns    max_ns  writer_Mops (medians of {rounds})"
    );
    for (i, &(w, p)) in configs.iter().enumerate() {
        let s = &res[i];
        let m = |f: &dyn Fn(&Sample) -> f64| median(s.iter().map(f).collect());
        println!(
            "{:<7} {:<11} {:>11.3} {:>7.0} {:>7.0} {:>8.0} {:>9.0} {:>12.3}",
            format!("{w:?}"),
            format!("{p:?}"),
            m(&|s| s.mops),
            m(&|s| s.p50 as f64),
            m(&|s| s.p99 as f64),
            m(&|s| s.p999 as f64),
            m(&|s| s.max as f64),
            m(&|s| s.writes as f64 / secs / 1e6),
        );
    }
    Ok(())
}
