//! One thread loads random 8-byte keys (8-byte values) into an empty Cuckoo Trie, the
//! `rand-8` load of `orrery-bench`, and reports where the time and the memory go: the
//! insert rate (wall and thread CPU), every growth (keys at that point, the load factor
//! the old table had reached, the time spent inside the inserting call that grew), and
//! `memory_usage` bytes per key at the end and just before/after each growth (the
//! sawtooth), and the insert CPU cost against the table's load factor (bands of 5%). For
//! quick loops and `perf record`: `orrery-bench run` is the reference harness.
//!
//! Arguments: `[KEYS = 4M] [SEED = 1]`.
//!
//! `orrery-bench lab cuckoo_trie_load 4M 1`

use std::time::Instant;

use orrery::cuckoo_trie::CuckooTrie;

use super::common::{splitmix, thread_cpu_secs as thread_cpu};

/// Runs the program (see the module docs).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let keys = super::count_arg(args, 0, 4_000_000)? as usize;
    let seed = super::count_arg(args, 1, 1)?;
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ seed.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    let data: Vec<[u8; 8]> = (0..keys).map(|_| splitmix(&mut x).to_be_bytes()).collect();
    let ct = CuckooTrie::new();
    let (w0, c0) = (Instant::now(), thread_cpu());
    let mut growths = 0;
    let mut grow_secs = 0.0;
    // Insert CPU cost against the table's load factor: chunks of CHUNK inserts without a
    // growth, filed by the load estimated at their start (entries per key as counted by
    // the last growth, over the table's slots), in bands of 5%.
    const CHUNK: usize = 4096;
    let mut bands = [(0.0f64, 0usize); 20];
    let (mut chunk_cpu, mut chunk_growths, mut chunk_load) = (thread_cpu(), 0, 0.0);
    let mut epk = 1.3;
    for (i, k) in data.iter().enumerate() {
        if i % CHUNK == 0 {
            let now = thread_cpu();
            if i > 0 && chunk_growths == growths {
                let b = ((chunk_load * 20.0) as usize).min(19);
                bands[b].0 += now - chunk_cpu;
                bands[b].1 += CHUNK;
            }
            let slots = ct.memory_usage().structure_bytes / 16;
            (chunk_cpu, chunk_growths, chunk_load) = (now, growths, i as f64 * epk / slots as f64);
        }
        let before = (ct.memory_usage().structure_bytes, Instant::now());
        ct.insert(k, b"12345678").unwrap();
        let st = ct.stats().growth;
        if st.growths != growths {
            growths = st.growths;
            let took = before.1.elapsed().as_secs_f64();
            grow_secs += took;
            let after = ct.memory_usage().structure_bytes;
            epk = st.last_entries as f64 / i.max(1) as f64;
            println!(
                "growth {:2} at {:>9} keys: load {:.3} ({} entries, {:.3} per key), {:.1} -> {:.1} B/key, {:.3} s",
                growths,
                i,
                st.last_entries as f64 / st.last_slots as f64,
                st.last_entries,
                st.last_entries as f64 / i.max(1) as f64,
                before.0 as f64 / i.max(1) as f64,
                after as f64 / (i + 1) as f64,
                took
            );
        }
    }
    let (wall, cpu) = (w0.elapsed().as_secs_f64(), thread_cpu() - c0);
    for (b, &(secs, n)) in bands.iter().enumerate() {
        if n >= 8 * CHUNK {
            println!(
                "load {:.2}-{:.2}: {:>6.0} ns/insert cpu ({} inserts, no growth)",
                b as f64 / 20.0,
                (b + 1) as f64 / 20.0,
                secs * 1e9 / n as f64,
                n
            );
        }
    }
    let mem = ct.memory_usage();
    println!(
        "keys {keys}: wall {wall:.3} s ({:.3} Mops/s), thread cpu {cpu:.3} s ({:.3} cpuMops/s, {:.0} ns/insert), growth calls {grow_secs:.3} s ({:.0}% of wall), structure {:.1} B/key, records {:.1} B/key",
        keys as f64 / wall / 1e6,
        keys as f64 / cpu / 1e6,
        cpu * 1e9 / keys as f64,
        100.0 * grow_secs / wall,
        mem.structure_bytes as f64 / keys as f64,
        mem.key_value_bytes as f64 / keys as f64,
    );
    Ok(())
}
