//! Memory and lookups around a shrink of the table (issue 21; `docs/results/cuckoo-trie.md`,
//! "Shrink after removals").
//!
//! `cargo run --release -p orrery-cuckoo-trie --example shrink -- [KEYS] [READERS] [PERCENT]`
//!
//! Loads `KEYS` random 8-byte keys (8-byte values) and prints `memory_usage` and the
//! process's RSS. Then starts `READERS` lookup threads and one writer together (barrier):
//! the writer removes `PERCENT`% of the keys (default 90), which shrinks the table (once or
//! more); the readers look up random keys of the remaining 10% in batches of 1024, filed by
//! `is_growing()` (true during a shrink too) read at both ends of a batch: *steady* if it
//! said no at both ends, *shrinking* if yes at both (per-thread rates summed over readers),
//! and one lookup in 64 is timed, as in `examples/growth_readers.rs`. Afterwards, once the
//! epoch collector has freed the old tables, prints `memory_usage` and RSS again, the
//! shrink counts and the longest removal (the one that ran a shrink).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
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

/// The process's resident set in MiB (`VmRSS` of `/proc/self/status`; 0 if unreadable).
fn rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib >> 10)
}

fn report(label: &str, ct: &CuckooTrie) {
    let m = ct.memory_usage();
    println!(
        "{label}: {} keys, table {:.1} MiB ({:.1} B/key), records {:.1} MiB, RSS {} MiB",
        ct.len(),
        m.structure_bytes as f64 / (1 << 20) as f64,
        m.structure_bytes as f64 / ct.len().max(1) as f64,
        m.key_value_bytes as f64 / (1 << 20) as f64,
        rss_mib()
    );
}

/// Runs epoch reclamation until what was retired before this call is freed.
fn drain() {
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    orrery_core::sync::pin().defer(move || flag.store(true, Ordering::Relaxed));
    let freed = orrery_core::sync::epoch::flush_until(Duration::from_secs(60), || {
        ran.load(Ordering::Relaxed)
    });
    assert!(freed, "retired tables not freed within 60 s");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let keys: usize = args.next().map_or(4_000_000, |a| a.parse().expect("KEYS"));
    let readers: usize = args.next().map_or(1, |a| a.parse().expect("READERS"));
    let percent: usize = args.next().map_or(90, |a| a.parse().expect("PERCENT"));
    let ct = CuckooTrie::new();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let loaded: Vec<[u8; 8]> = (0..keys).map(|_| xorshift(&mut x).to_be_bytes()).collect();
    for k in &loaded {
        ct.insert(k, b"12345678").unwrap();
    }
    drain();
    report("loaded", &ct);
    let (doomed, kept) = loaded.split_at(keys * percent / 100);
    let start = Barrier::new(readers + 1);
    let stop = AtomicBool::new(false);
    let (mut longest, mut remove_secs) = (0.0f64, 0.0f64);
    let per_reader: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..readers)
            .map(|r| {
                let (ct, start, stop) = (&ct, &start, &stop);
                s.spawn(move || {
                    let mut y = 0x2545_F491_4F6C_DD1Du64.wrapping_mul(r as u64 + 1);
                    let (mut so, mut ss, mut go, mut gs) = (0u64, 0.0, 0u64, 0.0);
                    let (mut sl, mut gl) = (Vec::new(), Vec::new());
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        let e0 = ct.is_growing();
                        let t0 = Instant::now();
                        for j in 0..1024 {
                            let k = &kept[(xorshift(&mut y) % kept.len() as u64) as usize];
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
        std::thread::sleep(Duration::from_millis(300));
        let t_all = Instant::now();
        for k in doomed {
            let t = Instant::now();
            assert!(ct.remove(k));
            longest = longest.max(t.elapsed().as_secs_f64());
        }
        remove_secs = t_all.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    drain();
    report("after removing", &ct);
    let st = ct.growth_stats();
    println!(
        "removed {} keys in {remove_secs:.2} s; {} shrinks, {} given up; longest removal {longest:.3} s",
        doomed.len(),
        st.shrinks,
        st.abandoned_shrinks
    );
    let (mut steady, mut during) = (0.0, 0.0);
    let (mut sl, mut gl) = (Vec::new(), Vec::new());
    let (mut ssecs, mut gsecs) = (0.0f64, 0.0f64);
    for (so, ss, go, gs, s, g) in per_reader {
        if ss > 0.0 {
            steady += so as f64 / ss / 1e6;
        }
        if gs > 0.0 {
            during += go as f64 / gs / 1e6;
        }
        ssecs = ssecs.max(ss);
        gsecs = gsecs.max(gs);
        sl.extend(s);
        gl.extend(g);
    }
    println!(
        "lookups ({readers} readers, writer removing): steady {steady:.3} Mops/s over {ssecs:.2} s, \
         during a shrink {during:.3} Mops/s over {gsecs:.2} s, ratio {}",
        if steady > 0.0 && during > 0.0 {
            format!("{:.2}", during / steady)
        } else {
            "n/a".into()
        }
    );
    println!("latency steady: {}", pct(&mut sl));
    println!("latency during a shrink: {}", pct(&mut gl));
}
