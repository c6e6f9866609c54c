//! Lookup diagnostics on `az`-like keys (the structure of `orrery-bench`'s `az` dataset:
//! zipfian item id `|` zipfian reviewer id `|` review time, about 40 bytes): loads N keys,
//! then runs M uniform lookups and prints their thread-CPU Mops/s, the anchor-length
//! histogram and, per lookup, the search's range, rounds, prefetch batches (dependent
//! slot waits) and longest matching prefix (`Wormhole::debug_search_trace`).
//!
//! `cargo run --release -p orrery-wormhole --example wormhole_az -- [N] [M] [trace]`
use orrery_core::testing::zipf::Zipf;
use orrery_wormhole::Wormhole;

fn cpu_now() -> f64 {
    orrery_core::testing::clock::thread_cpu_secs()
}

fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn base36(mut h: u64, digits: usize, out: &mut Vec<u8>) {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    for _ in 0..digits {
        if h < 36 {
            h = mix64(h ^ 0xA5A5);
        }
        out.push(ALPHABET[(h % 36) as usize]);
        h /= 36;
    }
}

fn item_id(rank: u64, out: &mut Vec<u8>) {
    let h = mix64(rank ^ 0x17E5);
    if h % 10 < 7 {
        out.extend_from_slice(b"B0");
        out.push([b'0', b'0', b'0', b'1', b'7'][(h >> 8) as usize % 5]);
        base36(h >> 16, 7, out);
    } else {
        let mut x = h >> 4;
        out.push(b'0' + (x % 2) as u8);
        for _ in 0..8 {
            x /= 10;
            out.push(b'0' + (x % 10) as u8);
        }
        out.push(if x % 11 == 10 {
            b'X'
        } else {
            b'0' + (x % 10) as u8
        });
    }
}

fn user_id(rank: u64, out: &mut Vec<u8>) {
    let h = mix64(rank ^ 0x05E8);
    out.push(b'A');
    let len = if h % 10 < 7 { 13 } else { 20 };
    base36(h >> 8, len, out);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(1_000_000, |s| s.parse().unwrap());
    let m: usize = args.next().map_or(n, |s| s.parse().unwrap());
    let trace = args.next().is_some_and(|s| s == "trace");
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let items = Zipf::new((n as u64 / 6).max(100), 0.9);
    let users = Zipf::new((n as u64 / 3).max(100), 0.7);
    let unit = |r: u64| (r >> 11) as f64 / (1u64 << 53) as f64;
    let mut keys = Vec::with_capacity(n);
    let mut seen = std::collections::HashSet::with_capacity(n);
    while keys.len() < n {
        let mut k = Vec::with_capacity(48);
        item_id(items.sample(unit(rnd())), &mut k);
        k.push(b'|');
        user_id(users.sample(unit(rnd())), &mut k);
        k.push(b'|');
        let day = 10_592 + rnd() % (16_274 - 10_592 + 1);
        k.extend_from_slice((day * 86_400).to_string().as_bytes());
        if seen.insert(k.clone()) {
            keys.push(k);
        }
    }
    drop(seen);
    let wh = Wormhole::new();
    let t = cpu_now();
    for k in &keys {
        wh.insert(k, &k[..8]).unwrap();
    }
    let ins = n as f64 / (cpu_now() - t) / 1e6;
    eprintln!("loaded");
    let order: Vec<usize> = (0..m).map(|_| (rnd() % n as u64) as usize).collect();
    let t = cpu_now();
    let mut hit = 0usize;
    for &i in &order {
        hit += wh.get_with(&keys[i], &mut |_| {}) as usize;
    }
    let get = m as f64 / (cpu_now() - t) / 1e6;
    assert_eq!(hit, m);
    let mu = wh.memory_usage();
    let klen = keys.iter().map(|k| k.len()).sum::<usize>() as f64 / n as f64;
    println!(
        "n={n} klen {klen:.1} insert {ins:.3} Mops/s | get {get:.3} Mops/s | leaves {} | struct {:.1} B/key kv {:.1} B/key",
        wh.leaf_count(),
        mu.structure_bytes as f64 / n as f64,
        mu.key_value_bytes as f64 / n as f64
    );
    if !trace {
        return;
    }
    let lens = wh.debug_anchor_lens();
    println!("anchor lengths (len:count): {lens:?}");
    let mut lpm = std::collections::BTreeMap::<u32, usize>::new();
    let mut rounds = std::collections::BTreeMap::<u32, usize>::new();
    let mut batches = std::collections::BTreeMap::<u32, usize>::new();
    let mut his = std::collections::BTreeMap::<u32, usize>::new();
    let mut steps = std::collections::BTreeMap::<u8, usize>::new();
    let tn = m.min(1_000_000);
    for &i in &order[..tn] {
        let tr = wh.debug_search_trace(&keys[i]);
        *lpm.entry(tr.lpm).or_default() += 1;
        *rounds.entry(tr.rounds).or_default() += 1;
        *batches.entry(tr.batches).or_default() += 1;
        *his.entry(tr.hi).or_default() += 1;
        *steps.entry(tr.step).or_default() += 1;
    }
    let avg = |h: &std::collections::BTreeMap<u32, usize>| {
        h.iter().map(|(&k, &c)| k as f64 * c as f64).sum::<f64>() / tn as f64
    };
    println!("range hi: {his:?}");
    println!("lpm (avg {:.2}): {lpm:?}", avg(&lpm));
    println!("rounds (avg {:.2}): {rounds:?}", avg(&rounds));
    println!(
        "sibling step (0 leaf entry, 1 leftmost, 2 prev, 3 rightmost, 4 child leaf entry, 5 child item): {steps:?}"
    );
    println!("batches (avg {:.2}): {batches:?}", avg(&batches));
}
