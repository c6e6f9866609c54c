//! Wormhole over a key set whose pair sizes change over time: N0 pairs of one kind are
//! inserted first, then N of the other, into one Wormhole; prints the memory per key and the
//! insert and lookup throughput (thread CPU time) of the second kind.
//!
//! Arguments: `[MODE = long-then-short] [N0 = 200K] [N = 5M] [M = 2M]`.
//! `long-then-short` inserts N0 40-byte keys (8-byte values), then N random 8-byte keys
//! (8-byte values: 16-byte pairs, which fit a leaf's inline cells) and looks M of them up;
//! `short-then-long` does the reverse. Leaves choose their kind as they are made (see the
//! `leaf` module of orrery-wormhole, "Inline pairs"), so the leaves made for the second kind
//! should suit it.
//!
//! `orrery-bench lab wormhole_mixed long-then-short 200K 5M 2M`

use orrery::testing::clock::thread_cpu_secs as cpu_now;
use orrery::wormhole::Wormhole;

use crate::rng::Rng;

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let mode = args.first().map_or("long-then-short", String::as_str);
    let n0 = super::count_arg(args, 1, 200_000)? as usize;
    let n = super::count_arg(args, 2, 5_000_000)? as usize;
    let m = super::count_arg(args, 3, 2_000_000)? as usize;
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    let long = |r: u64| {
        let mut k = format!("https://example.org/some/path/{r:010x}").into_bytes();
        k.resize(40, b'/');
        k
    };
    let short = |r: u64| r.to_be_bytes().to_vec();
    let long_first = match mode {
        "long-then-short" => true,
        "short-then-long" => false,
        _ => return Err("mode: long-then-short or short-then-long".into()),
    };
    let first: Vec<Vec<u8>> = (0..n0)
        .map(|_| {
            let r = rng.next_u64();
            if long_first { long(r) } else { short(r) }
        })
        .collect();
    let second: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            let r = rng.next_u64();
            if long_first { short(r) } else { long(r) }
        })
        .collect();
    if second.is_empty() {
        return Err("N must be at least 1".into());
    }
    let wh = Wormhole::new();
    for k in &first {
        wh.insert(k, &k[..8]).map_err(|e| e.to_string())?;
    }
    let t = cpu_now();
    for k in &second {
        wh.insert(k, &k[k.len() - 8..]).map_err(|e| e.to_string())?;
    }
    let ins = n as f64 / (cpu_now() - t) / 1e6;
    let order: Vec<usize> = (0..m).map(|_| rng.below(n as u64) as usize).collect();
    let t = cpu_now();
    let mut hit = 0usize;
    for &i in &order {
        hit += usize::from(wh.get_with(&second[i], |_| ()).is_some());
    }
    let get = m as f64 / (cpu_now() - t) / 1e6;
    assert_eq!(hit, m);
    let mu = wh.memory_usage();
    let keys = wh.len() as f64;
    let payload: usize = first.iter().chain(&second).map(|k| k.len() + 8).sum();
    println!(
        "{mode} n0={n0} n={n}: insert {ins:.3} Mops/s | get {get:.3} Mops/s | memory {:.1} B/key \
         (payload {:.1}) | leaves {}",
        (mu.structure_bytes + mu.key_value_bytes) as f64 / keys,
        payload as f64 / keys,
        wh.stats().leaves,
    );
    Ok(())
}
