//! Memory and lookups around a shrink of the Cuckoo Trie's table
//! (`docs/results/cuckoo-trie.md`, "Shrink after removals").
//!
//! Arguments: `[KEYS = 4M] [READERS = 1] [PERCENT = 90]`.
//!
//! `orrery-bench lab cuckoo_trie_shrink 4M 1 90`
//!
//! Loads `KEYS` random 8-byte keys (8-byte values) and prints `memory_usage` and the
//! process's RSS. Then starts `READERS` lookup threads and one writer together (barrier):
//! the writer removes `PERCENT`% of the keys (default 90), which shrinks the table (once or
//! more); the readers look up random keys of the remaining 10% in batches of 1024, filed by
//! `is_growing()` (true during a shrink too) read at both ends of a batch: *steady* if it
//! said no at both ends, *shrinking* if yes at both (per-thread rates summed over readers),
//! and one lookup in 64 is timed, as in `cuckoo_trie_growth_readers`. Afterwards, once the
//! epoch collector has freed the old tables, prints `memory_usage` and RSS again, the
//! shrink counts and the longest removal (the one that ran a shrink).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use orrery::cuckoo_trie::CuckooTrie;

use super::common::splitmix;
use super::cuckoo_trie_readers::{self as readers, Summary};

/// The process's resident set in MiB (0 if unreadable).
fn rss_mib() -> u64 {
    crate::metrics::rss::resident_bytes().map_or(0, |b| b >> 20)
}

/// Prints the index's memory and the process's RSS.
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
    orrery::sync::pin().defer(move || flag.store(true, Ordering::Relaxed));
    let freed =
        orrery::sync::epoch::flush_until(Duration::from_secs(60), || ran.load(Ordering::Relaxed));
    assert!(freed, "retired tables not freed within 60 s");
}

/// Runs the program (see the module docs).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let keys = super::count_arg(args, 0, 4_000_000)? as usize;
    let readers = super::count_arg(args, 1, 1)? as usize;
    let percent = super::count_arg(args, 2, 90)? as usize;
    if percent > 100 {
        return Err(format!("PERCENT {percent} is over 100"));
    }
    let ct = CuckooTrie::new();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let loaded: Vec<[u8; 8]> = (0..keys).map(|_| splitmix(&mut x).to_be_bytes()).collect();
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
                s.spawn(move || readers::read(ct, kept, r, start, stop))
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
    let st = ct.stats().growth;
    println!(
        "removed {} keys in {remove_secs:.2} s; {} shrinks, {} given up; longest removal {longest:.3} s",
        doomed.len(),
        st.shrinks,
        st.abandoned_shrinks
    );
    let mut sum = Summary::of(per_reader);
    sum.print(
        &format!("lookups ({readers} readers, writer removing)"),
        "a shrink",
    );
    Ok(())
}
