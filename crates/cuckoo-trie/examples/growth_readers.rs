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

#[path = "common/readers.rs"]
mod readers;
use readers::{Summary, xorshift};

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
                s.spawn(move || readers::read(ct, loaded, r, start, stop))
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
    let mut sum = Summary::of(per_reader);
    println!(
        "keys {keys}, readers {readers}: writer inserted {inserted} keys, growth to {} MiB took {growth_secs:.3} s (the writer's longest insert)",
        ct.memory_usage().structure_bytes >> 20
    );
    sum.print("lookups", "growth");
}
