//! Profiling driver: loads N random 8-byte keys (8-byte values) into a Wormhole, then runs
//! M uniform positive lookups; prints thread-CPU Mops/s of both phases.
//! `cargo run --release -p orrery-wormhole --example wormhole_perf -- [N] [M] [get|many]`
//! (`perf record -g` on the built binary to profile; the machine is shared, so CPU time.)
use orrery_wormhole::Wormhole;

fn cpu_now() -> f64 {
    orrery_core::testing::clock::thread_cpu_secs()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(1_000_000, |s| s.parse().unwrap());
    let m: usize = args.next().map_or(n, |s| s.parse().unwrap());
    let mode = args.next().unwrap_or_else(|| "get".into());
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let keys: Vec<[u8; 8]> = (0..n).map(|_| rnd().to_be_bytes()).collect();
    let wh = Wormhole::new();
    let t = cpu_now();
    for k in &keys {
        wh.insert(k, &k[..]).unwrap();
    }
    let ins = n as f64 / (cpu_now() - t) / 1e6;
    let order: Vec<usize> = (0..m).map(|_| (rnd() % n as u64) as usize).collect();
    let t = cpu_now();
    let mut hit = 0usize;
    if mode == "many" {
        for chunk in order.chunks(16) {
            let ks: Vec<&[u8]> = chunk.iter().map(|&i| &keys[i][..]).collect();
            wh.get_many(&ks, &mut |_, v| hit += v.is_some() as usize);
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
        wh.leaf_count(),
        mu.structure_bytes as f64 / n as f64,
        mu.key_value_bytes as f64 / n as f64
    );
}
