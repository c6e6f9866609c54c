//! Times loading and dropping a Wormhole: `N` random keys of `L` bytes with 8-byte values
//! (`L = 8`: pairs inline in the leaves; longer keys: pair blocks).
//! `cargo run --release -p orrery-wormhole --example wormhole_drop -- [N] [L]`
use orrery_wormhole::Wormhole;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(1_000_000, |s| s.parse().expect("N"));
    let len: usize = args.next().map_or(8, |s| s.parse().expect("L"));
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let wh = Wormhole::new();
    let mut key = vec![0u8; len.max(8)];
    let t = Instant::now();
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        key[..8].copy_from_slice(&x.to_be_bytes());
        wh.insert(&key[..len.max(8)], &x.to_le_bytes())
            .expect("insert");
    }
    let load = t.elapsed().as_secs_f64();
    let t = Instant::now();
    drop(wh);
    let d = t.elapsed().as_secs_f64();
    println!(
        "n={n} key {len} B: load {load:.2} s, drop {d:.3} s ({:.0} ns/key)",
        d * 1e9 / n as f64
    );
}
