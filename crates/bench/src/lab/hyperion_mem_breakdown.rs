//! `hyperion_mem_breakdown`: where `memory_usage()` goes (the paper's Fig 14/16) — loads
//! `KEYS` 8-byte keys (the key as its own value) into a `Hyperion` per configuration (16
//! or 1 arenas, without and with key pre-processing) and prints its bytes per key split
//! into chunks, free chunks in mapped bins (external fragmentation), extended blocks and
//! metadata (`Hyperion::stats`), with the load's and the lookups' wall time for
//! orientation only (comparisons belong to `orrery-bench run`). Optionally times `SCANS`
//! full scans (thread CPU per key, for profiling the walk).
//!
//! Arguments: `[KEYS] [rand|seq] [EJECT] [all|plain|prep] [SCANS]` (defaults
//! `1M rand 16K all 0`): random or sequential (`0, 1, 2, …` big-endian) keys; the
//! ejection threshold of embedded containers in bytes; all four configurations, or only
//! the 16-arena one without (`plain`) or with (`prep`) pre-processing.
//!
//! ```text
//! orrery-bench lab hyperion_mem_breakdown 1M rand 16K all 0
//! ```

use std::ops::{Bound, ControlFlow};
use std::time::Instant;

use orrery::hyperion::{Config, Hyperion};

use super::count_arg;
use crate::metrics::cpu::thread_cpu_secs;
use crate::rng::Rng;

/// `n` keys: random, or `0..n` big-endian.
fn keys(n: usize, seq: bool) -> Vec<[u8; 8]> {
    if seq {
        return (0..n as u64).map(u64::to_be_bytes).collect();
    }
    let mut r = Rng::new(0x2545_F491_4F6C_DD1D);
    (0..n).map(|_| r.next_u64().to_be_bytes()).collect()
}

/// Runs the program (see the module docs for the arguments).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let n = count_arg(args, 0, 1_000_000)? as usize;
    let seq = match args.get(1).map(String::as_str) {
        None | Some("rand") => false,
        Some("seq") => true,
        Some(o) => return Err(format!("key order: rand or seq, not {o}")),
    };
    let eject = count_arg(args, 2, 16 * 1024)? as usize;
    let only = args.get(3).map_or("all", String::as_str);
    let scans = count_arg(args, 4, 0)? as usize;
    let configs: &[(usize, bool)] = match only {
        "all" => &[(16, false), (1, false), (16, true), (1, true)],
        "plain" => &[(16, false)],
        "prep" => &[(16, true)],
        o => return Err(format!("configurations: all, plain or prep, not {o}")),
    };
    let ks = keys(n, seq);
    for &(arenas, prep) in configs {
        let config = Config::builder()
            .arenas(arenas)
            .eject_threshold(eject)
            .preprocess(prep)
            .build()
            .map_err(|e| e.to_string())?;
        let h = Hyperion::with_config(config).map_err(|e| e.to_string())?;
        let t = Instant::now();
        for k in &ks {
            h.insert(k, k).map_err(|e| e.to_string())?;
        }
        let load = t.elapsed();
        let t = Instant::now();
        for k in &ks {
            if !h.contains_key(k) {
                return Err(format!("key {k:?} lost"));
            }
        }
        let get = t.elapsed();
        if scans > 0 {
            let t = Instant::now();
            let cpu = thread_cpu_secs();
            for _ in 0..scans {
                let mut seen = 0;
                h.scan(Bound::Unbounded, &mut |_, _| {
                    seen += 1;
                    ControlFlow::Continue(())
                });
                if seen != h.len() {
                    return Err(format!("a full scan saw {seen} of {} keys", h.len()));
                }
            }
            let cpu = thread_cpu_secs() - cpu;
            println!(
                "{scans} full scans: {:?} wall, {cpu:.3} s thread CPU ({:.1} ns/key)",
                t.elapsed(),
                cpu * 1e9 / (scans * h.len().max(1)) as f64
            );
        }
        let m = h.memory_usage();
        let s = h.stats();
        let per = |b: usize| b as f64 / h.len().max(1) as f64;
        println!(
            "arenas {arenas:3} prep {prep:5} keys {}: memory_usage {:.1} B/key = chunks {:.1} + free chunks {:.1} + extended {:.1} + metadata {:.1} (chunks {}, extended {}); load {load:?}, get {get:?}",
            h.len(),
            per(m.structure_bytes + m.key_value_bytes),
            per(s.chunk_bytes),
            per(s.free_chunk_bytes),
            per(s.extended_bytes),
            per(s.metadata_bytes),
            s.chunks,
            s.extended,
        );
    }
    Ok(())
}
