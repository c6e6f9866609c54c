//! Cuckoo Trie lookup threads while one writer forces a growth of the table: the resize
//! bar's measurement (`docs/results/cuckoo-trie.md`), which `orrery-bench run` cannot make
//! (its threads all run the same workload, and a writer cannot pass a batch boundary while
//! a growth runs: it helps or waits).
//!
//! Arguments: `[KEYS = 1.4M] [READERS = 1]`.
//!
//! `orrery-bench lab cuckoo_trie_growth_readers 1400K 1`
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

use orrery::cuckoo_trie::CuckooTrie;

use super::common::splitmix;
use super::cuckoo_trie_readers::{self as readers, Summary};

/// Runs the program (see the module docs).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let keys = super::count_arg(args, 0, 1_400_000)?;
    let readers = super::count_arg(args, 1, 1)? as usize;
    let ct = CuckooTrie::new();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let loaded: Vec<[u8; 8]> = (0..keys).map(|_| splitmix(&mut x).to_be_bytes()).collect();
    for k in &loaded {
        ct.insert(k, b"12345678").unwrap();
    }
    let g0 = ct.stats().growth.growths;
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
        while ct.stats().growth.growths == g0 {
            let t = Instant::now();
            ct.insert(&splitmix(&mut z).to_be_bytes(), b"12345678")
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
    Ok(())
}
