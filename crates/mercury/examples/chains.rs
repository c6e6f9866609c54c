//! Prints Mercury's chain statistics (share of inline pairs, expected node reads per lookup,
//! so DRAM round trips for a cold uniform GET = 1 + node reads) after loading N random 8-byte keys, for several
//! N around the expansion thresholds (32 Mi = 2^25 is the paper's Fig 3 size).
//!
//! `cargo run --release -p orrery-mercury --example chains -- [N...]`

use orrery_mercury::Mercury;

fn main() {
    let ns: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|s| s.parse().ok())
        .collect();
    let ns = if ns.is_empty() {
        vec![1 << 20, 3 << 19, 1 << 22]
    } else {
        ns
    };
    for n in ns {
        let m = Mercury::new();
        let mut x = 0x5EED_u64;
        for _ in 0..n {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            m.insert(&(z ^ (z >> 31)).to_le_bytes(), b"12345678")
                .unwrap();
        }
        m.finish_expansion();
        let s = m.chain_stats();
        println!(
            "{n:>10} keys, {:>10} buckets (load {:.2}), {:.1}% inline: GET hit = 1 + {:.3} node reads, miss = 1 + {:.3}, longest chain {}",
            s.buckets,
            s.items as f64 / s.buckets as f64,
            100.0 * s.inline_items as f64 / s.items.max(1) as f64,
            s.node_reads_per_hit,
            s.node_reads_per_miss,
            s.max_chain
        );
    }
}
