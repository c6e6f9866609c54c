//! Throwaway quick measurement: Wormhole vs std BTreeMap on random 8-byte keys, one run.
//! `cargo run --release -p orrery-wormhole --example wormhole_quick -- [N]` (thread CPU time)
use std::collections::BTreeMap;

/// Thread CPU time: the machine is shared, so wall time mostly measures other processes.
struct Instant(f64);
fn cpu_now() -> f64 {
    orrery_core::testing::clock::thread_cpu_secs()
}
impl Instant {
    fn now() -> Self {
        Instant(cpu_now())
    }
    fn elapsed(&self) -> Elapsed {
        Elapsed(cpu_now() - self.0)
    }
}
struct Elapsed(f64);
impl Elapsed {
    fn as_secs_f64(&self) -> f64 {
        self.0
    }
}

use orrery_wormhole::Wormhole;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(1_000_000, |s| s.parse().unwrap());
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let keys: Vec<[u8; 8]> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_be_bytes()
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }

    let wh = Wormhole::new();
    let t = Instant::now();
    for k in &keys {
        wh.insert(k, &k[..]).unwrap();
    }
    let wh_ins = n as f64 / t.elapsed().as_secs_f64() / 1e6;

    let mut bt = BTreeMap::new();
    let t = Instant::now();
    for k in &keys {
        bt.insert(k.to_vec(), k.to_vec());
    }
    let bt_ins = n as f64 / t.elapsed().as_secs_f64() / 1e6;

    let t = Instant::now();
    let mut hit = 0usize;
    for &i in &order {
        hit += usize::from(wh.get_with(&keys[i], |_| ()).is_some());
    }
    let wh_get = n as f64 / t.elapsed().as_secs_f64() / 1e6;
    assert_eq!(hit, n);

    let t = Instant::now();
    let mut hit = 0usize;
    for &i in &order {
        hit += bt.contains_key(&keys[i][..]) as usize;
    }
    let bt_get = n as f64 / t.elapsed().as_secs_f64() / 1e6;
    assert_eq!(hit, n);

    let t = Instant::now();
    let mut hit = 0usize;
    for chunk in order.chunks(16) {
        let ks: Vec<&[u8]> = chunk.iter().map(|&i| &keys[i][..]).collect();
        wh.get_many(&ks, &mut |_, v| hit += v.is_some() as usize);
    }
    let wh_many = n as f64 / t.elapsed().as_secs_f64() / 1e6;
    assert_eq!(hit, n);

    let m = wh.memory_usage();
    println!(
        "n={n} insert: wh {wh_ins:.2} Mops/s, btree {bt_ins:.2} ({:.2}x) | get: wh {wh_get:.2}, btree {bt_get:.2} ({:.2}x) | get_many16 {wh_many:.2} ({:.2}x of get) | leaves {} restarts {} | bytes/key struct {:.1} kv {:.1}",
        wh_ins / bt_ins,
        wh_get / bt_get,
        wh_many / wh_get,
        wh.leaf_count(),
        wh.restarts(),
        m.structure_bytes as f64 / n as f64,
        m.key_value_bytes as f64 / n as f64,
    );
}
