//! Measures the three ways `orrery-server` could keep a collection in Orrery indexes, for
//! collections of 1 to 10,000 elements (16-byte fields, 16-byte values):
//!
//! - `per-index`: one Wormhole per collection (field → value);
//! - `shared`: one Wormhole for every collection's elements, under composite keys
//!   `id (8 bytes) ++ hash (4) ++ field` (what the server does for large collections);
//! - `compact`: the whole collection as one value under its key in a shared Wormhole,
//!   fields and values length-prefixed (what the server does for small collections; each
//!   change rewrites the value).
//!
//! For each it reports RSS bytes per element (each configuration in a fresh process, so
//! that RSS is its own), nanoseconds per element insert (building every collection one
//! element at a time, as `HSET` would) and per random field lookup.
//!
//! ```sh
//! cargo run --release -p orrery-server --example collection_layouts
//! ```

use std::time::Instant;

use orrery::wormhole::Wormhole;

/// Bytes resident now.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// A field or value: 16 pseudo-random bytes from `x`.
fn bytes16(x: u64) -> [u8; 16] {
    let mut z = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut out = [0u8; 16];
    for chunk in out.chunks_mut(8) {
        z ^= z >> 31;
        z = z.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        chunk.copy_from_slice(&z.to_le_bytes());
    }
    out
}

fn key(c: u64) -> Vec<u8> {
    format!("coll:{c:011}").into_bytes()
}

fn composite(c: u64, field: &[u8]) -> Vec<u8> {
    let mut k = c.to_be_bytes().to_vec();
    k.extend_from_slice(&orrery::hash::crc32c(field).to_be_bytes());
    k.extend_from_slice(field);
    k
}

/// Appends `field value` to a pack (1-byte lengths: these are 16 bytes).
fn pack_push(pack: &mut Vec<u8>, field: &[u8], value: &[u8]) {
    pack.push(field.len() as u8);
    pack.extend_from_slice(field);
    pack.push(value.len() as u8);
    pack.extend_from_slice(value);
}

fn pack_get(pack: &[u8], field: &[u8]) -> Option<Vec<u8>> {
    let mut at = 0;
    while at < pack.len() {
        let f = &pack[at + 1..at + 1 + usize::from(pack[at])];
        at += 1 + f.len();
        let v = &pack[at + 1..at + 1 + usize::from(pack[at])];
        at += 1 + v.len();
        if f == field {
            return Some(v.to_vec());
        }
    }
    None
}

/// Builds `n` collections of `size` elements in `layout`; prints one result line.
fn run(layout: &str, n: u64, size: u64) {
    let base = rss();
    let field = |c: u64, i: u64| bytes16(c * 1_000_003 + i);
    let value = |c: u64, i: u64| bytes16(c ^ (i << 40) ^ 0x5555);
    let start = Instant::now();
    let mut per_index = Vec::new();
    let shared = Wormhole::new();
    match layout {
        "per-index" => {
            for c in 0..n {
                let w = Wormhole::new();
                for i in 0..size {
                    w.insert(&field(c, i), &value(c, i)).unwrap();
                }
                per_index.push(w);
            }
        }
        "shared" => {
            for c in 0..n {
                for i in 0..size {
                    shared
                        .insert(&composite(c, &field(c, i)), &value(c, i))
                        .unwrap();
                }
            }
        }
        _ => {
            for c in 0..n {
                let k = key(c);
                for i in 0..size {
                    // Each change rewrites the collection's value, as a compact one does.
                    let mut pack = shared.get(&k).unwrap_or_default();
                    pack_push(&mut pack, &field(c, i), &value(c, i));
                    shared.insert(&k, &pack).unwrap();
                }
            }
        }
    }
    let build = start.elapsed();
    let bytes = rss().saturating_sub(base);
    let lookups = 200_000u64;
    let mut x = 0x1234_5678u64;
    let start = Instant::now();
    let mut found = 0;
    for _ in 0..lookups {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let (c, i) = ((x >> 33) % n, (x >> 13) % size);
        let f = field(c, i);
        let hit = match layout {
            "per-index" => per_index[c as usize].get(&f).is_some(),
            "shared" => shared.get(&composite(c, &f)).is_some(),
            _ => shared.get(&key(c)).and_then(|p| pack_get(&p, &f)).is_some(),
        };
        found += usize::from(hit);
    }
    let lookup = start.elapsed();
    assert_eq!(found as u64, lookups);
    let elements = n * size;
    let first = shared.first().map(|p| p.0.len()).unwrap_or(0);
    std::hint::black_box(first);
    println!(
        "| {layout} | {size} | {n} | {:.1} | {:.0} | {:.0} |",
        bytes as f64 / elements as f64,
        build.as_nanos() as f64 / elements as f64,
        lookup.as_nanos() as f64 / lookups as f64,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, layout, n, size] = &args[..] {
        run(layout, n.parse().unwrap(), size.parse().unwrap());
        return;
    }
    println!(
        "| layout | elements per collection | collections | RSS bytes per element | ns per insert | ns per lookup |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let exe = std::env::current_exe().unwrap();
    // About a million elements per configuration; a Wormhole per collection reserves
    // megabytes, so that layout gets fewer collections (its per-element cost is what
    // matters, and it is measured on enough of them).
    for size in [1u64, 10, 100, 1_000, 10_000] {
        for layout in ["per-index", "shared", "compact"] {
            let mut n = 1_000_000 / size;
            if layout == "per-index" {
                n = n.min(200);
            }
            if layout == "compact" && size > 1_000 {
                // 10,000 elements make a 340 KB value rewritten per insert: quadratic.
                n = n.min(20);
            }
            let st = std::process::Command::new(&exe)
                .args([layout, &n.to_string(), &size.to_string()])
                .status()
                .unwrap();
            assert!(st.success());
        }
    }
}
