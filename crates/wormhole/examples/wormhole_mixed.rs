//! A key set whose pair sizes change over time: `N0` pairs of one kind are inserted first,
//! then `N` of the other, into one Wormhole; prints the memory per key and the lookup
//! throughput (thread CPU time) of the second kind.
//!
//! `cargo run --release -p orrery-wormhole --example wormhole_mixed -- long-then-short [N0] [N] [M]`
//! inserts `N0` 40-byte keys (8-byte values), then `N` random 8-byte keys (8-byte values:
//! 16-byte pairs, which fit a leaf's inline cells) and looks `M` of them up;
//! `short-then-long` does the reverse. Leaves choose their kind as they are made (see the
//! `leaf` module, "Inline pairs"), so the leaves made for the second kind should suit it.
use orrery_wormhole::Wormhole;

fn cpu_now() -> f64 {
    orrery_core::testing::clock::thread_cpu_secs()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "long-then-short".into());
    let n0: usize = args.next().map_or(200_000, |s| s.parse().unwrap());
    let n: usize = args.next().map_or(5_000_000, |s| s.parse().unwrap());
    let m: usize = args.next().map_or(2_000_000, |s| s.parse().unwrap());
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let long = |r: u64| {
        let mut k = format!("https://example.org/some/path/{r:010x}").into_bytes();
        k.resize(40, b'/');
        k
    };
    let short = |r: u64| r.to_be_bytes().to_vec();
    let long_first = match mode.as_str() {
        "long-then-short" => true,
        "short-then-long" => false,
        _ => panic!("mode: long-then-short or short-then-long"),
    };
    let first: Vec<Vec<u8>> = (0..n0)
        .map(|_| {
            let r = rnd();
            if long_first { long(r) } else { short(r) }
        })
        .collect();
    let second: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            let r = rnd();
            if long_first { short(r) } else { long(r) }
        })
        .collect();
    let wh = Wormhole::new();
    for k in &first {
        wh.insert(k, &k[..8]).unwrap();
    }
    let t = cpu_now();
    for k in &second {
        wh.insert(k, &k[k.len() - 8..]).unwrap();
    }
    let ins = n as f64 / (cpu_now() - t) / 1e6;
    let order: Vec<usize> = (0..m).map(|_| (rnd() % n as u64) as usize).collect();
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
        wh.leaf_count(),
    );
}
