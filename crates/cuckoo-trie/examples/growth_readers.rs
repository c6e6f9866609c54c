//! Lookup threads while one writer forces a growth of the table: the resize bar's
//! measurement (`docs/results/cuckoo-trie.md`), which `orrery-bench` cannot make (its
//! threads all run the same workload, and a writer cannot pass a batch boundary while a
//! growth runs: it helps or waits).
//!
//! `cargo run --release -p orrery-cuckoo-trie --example growth_readers -- [KEYS] [READERS]`
//!
//! Loads `KEYS` random 8-byte keys, then starts `READERS` lookup threads and one writer
//! together (barrier). The writer inserts fresh keys until one growth has completed. Each
//! reader looks up random loaded keys in batches of 1024, reading `is_growing()` at each
//! batch boundary: a batch is *growing* if it said so at both ends, *steady* if at
//! neither (per-thread rates summed over readers). One lookup in 64 is timed, and filed
//! by `is_growing()` read before and after it. Prints throughput and p50/p99/p999 of both.

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use orrery_cuckoo_trie::CuckooTrie;

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn pct(v: &mut [u64]) -> String {
    if v.is_empty() {
        return "n/a".into();
    }
    v.sort_unstable();
    let q = |f: f64| v[((v.len() as f64 * f) as usize).min(v.len() - 1)];
    format!("{}/{}/{} ns (n={})", q(0.5), q(0.99), q(0.999), v.len())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let keys: u64 = args.next().map_or(1_400_000, |a| a.parse().expect("KEYS"));
    let readers: usize = args.next().map_or(1, |a| a.parse().expect("READERS"));
    let ct = CuckooTrie::new();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let loaded: Vec<[u8; 8]> = (0..keys).map(|_| xorshift(&mut x).to_be_bytes()).collect();
    for k in &loaded {
        ct.insert(k, b"12345678").unwrap();
    }
    let g0 = ct.growth_stats().growths;
    eprintln!(
        "loaded {} keys, table {} MiB, {} growths so far",
        ct.len(),
        ct.memory_usage().structure_bytes >> 20,
        g0
    );
    let start = Barrier::new(readers + 1);
    let stop = AtomicBool::new(false);
    let (mut growth_secs, mut inserted) = (0.0, 0u64);
    let per_reader: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..readers)
            .map(|r| {
                let (ct, start, stop, loaded) = (&ct, &start, &stop, &loaded);
                s.spawn(move || {
                    let mut y = 0x2545_F491_4F6C_DD1Du64.wrapping_mul(r as u64 + 1);
                    // (ops, secs) steady and growing; latency samples steady and growing.
                    let (mut so, mut ss, mut go, mut gs) = (0u64, 0.0, 0u64, 0.0);
                    let (mut sl, mut gl) = (Vec::new(), Vec::new());
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let e0 = ct.is_growing();
                        let t0 = Instant::now();
                        for j in 0..1024 {
                            let k = &loaded[(xorshift(&mut y) % loaded.len() as u64) as usize];
                            if j % 64 == 0 {
                                let a = ct.is_growing();
                                let t = Instant::now();
                                assert!(ct.get_with(k, |_| ()).is_some());
                                let ns = t.elapsed().as_nanos() as u64;
                                match (a, ct.is_growing()) {
                                    (false, false) => sl.push(ns),
                                    (true, true) => gl.push(ns),
                                    _ => {}
                                }
                            } else {
                                assert!(ct.get_with(k, |_| ()).is_some());
                            }
                        }
                        let dt = t0.elapsed().as_secs_f64();
                        match (e0, ct.is_growing()) {
                            (false, false) => (so, ss) = (so + 1024, ss + dt),
                            (true, true) => (go, gs) = (go + 1024, gs + dt),
                            _ => {}
                        }
                    }
                    (so, ss, go, gs, sl, gl)
                })
            })
            .collect();
        start.wait();
        // Some steady time first, then insert until one growth has completed.
        std::thread::sleep(Duration::from_millis(500));
        let mut z = 0x1234_5678_9ABC_DEF1u64;
        while ct.growth_stats().growths == g0 {
            let t = Instant::now();
            ct.insert(&xorshift(&mut z).to_be_bytes(), b"12345678")
                .unwrap();
            inserted += 1;
            // The insert that grows the table returns once the growth is done.
            growth_secs = f64::max(growth_secs, t.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (mut steady, mut growing) = (0.0, 0.0);
    let (mut sl, mut gl) = (Vec::new(), Vec::new());
    let (mut ssecs, mut gsecs) = (0.0f64, 0.0f64);
    for (so, ss, go, gs, s, g) in per_reader {
        if ss > 0.0 {
            steady += so as f64 / ss / 1e6;
        }
        if gs > 0.0 {
            growing += go as f64 / gs / 1e6;
        }
        ssecs = ssecs.max(ss);
        gsecs = gsecs.max(gs);
        sl.extend(s);
        gl.extend(g);
    }
    println!(
        "keys {keys}, readers {readers}: writer inserted {inserted} keys, growth to {} MiB took {growth_secs:.3} s (the writer's longest insert)",
        ct.memory_usage().structure_bytes >> 20
    );
    println!(
        "lookups: steady {steady:.3} Mops/s over {ssecs:.2} s, during growth {growing:.3} Mops/s over {gsecs:.2} s, ratio {}",
        if steady > 0.0 && growing > 0.0 {
            format!("{:.2}", growing / steady)
        } else {
            "n/a".into()
        }
    );
    println!("latency steady: {}", pct(&mut sl));
    println!("latency during growth: {}", pct(&mut gl));
}
