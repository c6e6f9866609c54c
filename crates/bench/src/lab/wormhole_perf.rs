//! Wormhole profiling driver: loads N random 8-byte keys (8-byte values), then runs M
//! uniform positive lookups, one at a time (`get`) or in batches of 16 (`many`); prints the
//! thread-CPU Mops/s of both phases, the process's RSS and huge pages, and the memory per
//! key. Run `perf record -g` on the release binary to profile (the machine is shared, so the
//! figures are CPU time).
//!
//! Arguments: `[N = 1M] [M = N] [get|many]`.
//!
//! `orrery-bench lab wormhole_perf 10M 10M get`

use orrery::testing::clock::thread_cpu_secs as cpu_now;
use orrery::wormhole::Wormhole;

use crate::rng::Rng;

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let n = super::count_arg(args, 0, 1_000_000)? as usize;
    let m = super::count_arg(args, 1, n as u64)? as usize;
    let mode = args.get(2).map_or("get", String::as_str);
    if !matches!(mode, "get" | "many") || n == 0 {
        return Err("arguments: [N >= 1] [M] [get|many]".into());
    }
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    let keys: Vec<[u8; 8]> = (0..n).map(|_| rng.next_u64().to_be_bytes()).collect();
    let wh = Wormhole::new();
    let t = cpu_now();
    for k in &keys {
        wh.insert(k, &k[..]).map_err(|e| e.to_string())?;
    }
    let ins = n as f64 / (cpu_now() - t) / 1e6;
    let order: Vec<usize> = (0..m).map(|_| rng.below(n as u64) as usize).collect();
    let t = cpu_now();
    let mut hit = 0usize;
    if mode == "many" {
        for chunk in order.chunks(16) {
            let ks: Vec<&[u8]> = chunk.iter().map(|&i| &keys[i][..]).collect();
            wh.get_many(&ks, &mut |_, v| hit += usize::from(v.is_some()));
        }
    } else {
        for &i in &order {
            hit += usize::from(wh.get_with(&keys[i], |_| ()).is_some());
        }
    }
    let get = m as f64 / (cpu_now() - t) / 1e6;
    assert_eq!(hit, m);
    if let Ok(r) = std::fs::read_to_string("/proc/self/smaps_rollup") {
        for l in r
            .lines()
            .filter(|l| l.starts_with("AnonHuge") || l.starts_with("Rss"))
        {
            println!("{l}");
        }
    }
    let mu = wh.memory_usage();
    println!(
        "n={n} insert {ins:.3} Mops/s | {mode} {get:.3} Mops/s | leaves {} | struct {:.1} B/key kv {:.1} B/key",
        wh.stats().leaves,
        mu.structure_bytes as f64 / n as f64,
        mu.key_value_bytes as f64 / n as f64
    );
    Ok(())
}
