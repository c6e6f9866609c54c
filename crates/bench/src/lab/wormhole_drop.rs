//! Times loading and dropping a Wormhole: N random keys of L bytes with 8-byte values
//! (`L = 8`: pairs inline in the leaves; longer keys: pair blocks). Wall time.
//!
//! Arguments: `[N = 1M] [L = 8]` (L at least 8).
//!
//! `orrery-bench lab wormhole_drop 10M 8`

use std::time::Instant;

use orrery::wormhole::Wormhole;

use crate::rng::Rng;

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let n = super::count_arg(args, 0, 1_000_000)?;
    let len = super::count_arg(args, 1, 8)?.max(8) as usize;
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    let wh = Wormhole::new();
    let mut key = vec![0u8; len];
    let t = Instant::now();
    for _ in 0..n {
        let x = rng.next_u64();
        key[..8].copy_from_slice(&x.to_be_bytes());
        wh.insert(&key, &x.to_le_bytes())
            .map_err(|e| e.to_string())?;
    }
    let load = t.elapsed().as_secs_f64();
    let t = Instant::now();
    drop(wh);
    let d = t.elapsed().as_secs_f64();
    println!(
        "n={n} key {len} B: load {load:.2} s, drop {d:.3} s ({:.0} ns/key)",
        d * 1e9 / n.max(1) as f64
    );
    Ok(())
}
