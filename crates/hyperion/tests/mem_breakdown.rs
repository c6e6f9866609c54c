//! Opt-in measurement (not a test of speed or size): where `memory_usage()` goes for random
//! 64-bit keys with 8-byte values, per configuration. Run with
//! `HYP_KEYS=1000000 cargo test -p orrery-hyperion --release --test mem_breakdown -- --ignored --nocapture`
//! (random keys; `HYP_SEQ=1` for sequential keys `0, 1, 2, …` big-endian; `HYP_EJECT`
//! sets the ejection threshold; `HYP_ONLY=plain|prep` runs only the 16-arena configuration
//! without or with pre-processing; `HYP_SCANS=n` adds n full scans and prints their
//! thread-CPU time per key, for profiling the walk). The load and
//! lookup times it prints are one run's wall time, for orientation only; comparisons
//! belong to orrery-bench.

use orrery_hyperion::{Config, Hyperion};

fn keys(n: usize) -> Vec<[u8; 8]> {
    if std::env::var("HYP_SEQ").is_ok() {
        return (0..n as u64).map(u64::to_be_bytes).collect();
    }
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_be_bytes()
        })
        .collect()
}

#[test]
#[ignore = "measurement; run explicitly"]
fn mem_breakdown_random_u64() {
    let n: usize = std::env::var("HYP_KEYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let ks = keys(n);
    let eject: usize = std::env::var("HYP_EJECT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16 * 1024);
    let configs = [(16, false), (1, false), (16, true), (1, true)];
    // `HYP_ONLY=plain` or `HYP_ONLY=prep`: only the 16-arena configuration without or with
    // pre-processing.
    let only = std::env::var("HYP_ONLY").ok();
    for (arenas, prep) in configs {
        match only.as_deref() {
            Some("plain") if (arenas, prep) != (16, false) => continue,
            Some("prep") if (arenas, prep) != (16, true) => continue,
            _ => {}
        }
        let h = Hyperion::with_config(
            Config::builder()
                .arenas(arenas)
                .eject_threshold(eject)
                .preprocess(prep)
                .build()
                .unwrap(),
        )
        .unwrap();
        let t = std::time::Instant::now();
        for k in &ks {
            h.insert(k, k).unwrap();
        }
        let load = t.elapsed();
        let t = std::time::Instant::now();
        for k in &ks {
            assert!(h.contains_key(k));
        }
        let get = t.elapsed();
        // `HYP_SCANS=n`: n full scans (for profiling the walk).
        let scans: usize = std::env::var("HYP_SCANS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let t = std::time::Instant::now();
        let cpu = orrery_core::testing::clock::thread_cpu_secs();
        for _ in 0..scans {
            let mut seen = 0;
            h.scan(std::ops::Bound::Unbounded, &mut |_, _| {
                seen += 1;
                std::ops::ControlFlow::Continue(())
            });
            assert_eq!(seen, h.len());
        }
        if scans > 0 {
            let cpu = orrery_core::testing::clock::thread_cpu_secs() - cpu;
            println!(
                "{scans} full scans: {:?} wall, {cpu:.3} s thread CPU ({:.1} ns/key)",
                t.elapsed(),
                cpu * 1e9 / (scans * h.len()) as f64
            );
        }
        let m = h.memory_usage();
        let s = h.mem_stats();
        let per = |b: usize| b as f64 / h.len() as f64;
        println!(
            "arenas {arenas:3} prep {prep:5} keys {}: memory_usage {:.1} B/key = chunks {:.1} + free chunks {:.1} + extended {:.1} + metadata {:.1} (chunks {}, extended {}); load {:?}, get {:?}",
            h.len(),
            per(m.structure_bytes + m.key_value_bytes),
            per(s.chunk_bytes),
            per(s.free_chunk_bytes),
            per(s.extended_bytes),
            per(s.metadata_bytes),
            s.chunks,
            s.extended,
            load,
            get,
        );
    }
}
