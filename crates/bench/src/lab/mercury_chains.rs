//! Mercury's chain statistics after a load: the share of inline pairs and the expected node
//! reads per lookup (so DRAM round trips of a cold uniform GET = 1 bucket read + node
//! reads), after loading N random 8-byte keys, for several N around the expansion
//! thresholds (32 Mi = 2^25 is the paper's Fig 3 size).
//!
//! Arguments: `[N…]` (default 1M, 1.5M and 4M keys, as powers of two: 2^20, 3·2^19, 2^22).
//!
//! `orrery-bench lab mercury_chains 33554432`

use orrery::mercury::Mercury;

use super::common::splitmix;

/// Runs the program (see the module docs).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let ns: Vec<u64> = if args.is_empty() {
        vec![1 << 20, 3 << 19, 1 << 22]
    } else {
        (0..args.len())
            .map(|i| super::count_arg(args, i, 0))
            .collect::<Result<_, _>>()?
    };
    for n in ns {
        let m = Mercury::new();
        let mut x = 0x5EED_u64;
        for _ in 0..n {
            m.insert(&splitmix(&mut x).to_le_bytes(), b"12345678")
                .map_err(|e| e.to_string())?;
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
    Ok(())
}
