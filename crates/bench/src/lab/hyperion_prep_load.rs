//! `hyperion_prep_load`: loads with and without key pre-processing (§3.4) — loads `KEYS`
//! keys of one data set into a `Hyperion` with `Config::preprocess` on or off, prints the
//! load's CPU time, the lookups' CPU time and the bytes per key. Not a benchmark of
//! record (use `orrery-bench run`).
//!
//! Arguments: `[SET] [KEYS] [prep|plain|both]` (defaults `seq-int 100000 both`).
//!
//! ```text
//! orrery-bench lab hyperion_prep_load seq-int 100000 both
//! ```
//!
//! Data sets: see `keys` (8-byte big-endian integers in several orders and strides, 4-byte
//! integers, a 16-byte common prefix, random integers).

use orrery::hyperion::{Config, Hyperion};

use super::count_arg;
use crate::rng::Rng;

/// This thread's CPU time in seconds (the machine is shared: wall time varies with load).
fn cpu_now() -> f64 {
    crate::metrics::cpu::thread_cpu_secs()
}

/// The keys of data set `set`.
fn keys(set: &str, n: usize) -> Result<Vec<Vec<u8>>, String> {
    let mut rng = Rng::new(0x2545_F491_4F6C_DD1D);
    let mut next = move || rng.next_u64();
    let n64 = n as u64;
    let be = |v: u64| v.to_be_bytes().to_vec();
    Ok(match set {
        "seq-int" => (0..n64).map(be).collect(),
        "rev-int" => (0..n64).rev().map(be).collect(),
        "seq-hi" => (0..n64).map(|i| be(0x0123_4567_0000_0000 + i)).collect(),
        "stride-256" => (0..n64).map(|i| be(i << 8)).collect(),
        "stride-64k" => (0..n64).map(|i| be(i << 16)).collect(),
        "seq-32" => (0..n as u32).map(|i| i.to_be_bytes().to_vec()).collect(),
        "prefix-16" => (0..n64)
            .map(|i| [&b"common-prefix-16"[..], &i.to_be_bytes()].concat())
            .collect(),
        "dense-shuf" => {
            let mut ks: Vec<Vec<u8>> = (0..n64).map(be).collect();
            for i in (1..ks.len()).rev() {
                let j = (next() % (i as u64 + 1)) as usize;
                ks.swap(i, j);
            }
            ks
        }
        "rand-int" => (0..n).map(|_| be(next())).collect(),
        // Keys `w t s` + a unique 100-byte suffix, `t < 32`: one container whose T-Nodes
        // are all in one 32-key range (it cannot be split), its S-Nodes holding
        // path-compressed suffixes, so it grows far past the largest split threshold.
        "wide-suffix" => {
            let mut ks: Vec<Vec<u8>> = (0..n.min(8192) as u64)
                .map(|i| {
                    let mut k = vec![b'w', (i >> 8) as u8, i as u8];
                    k.extend((0..100u64).map(|j| (i.wrapping_mul(31) ^ j) as u8));
                    k
                })
                .collect();
            for i in (1..ks.len()).rev() {
                let j = (next() % (i as u64 + 1)) as usize;
                ks.swap(i, j);
            }
            ks
        }
        _ => {
            return Err(
                "data set: seq-int, rev-int, seq-hi, stride-256, stride-64k, seq-32, prefix-16, dense-shuf, rand-int or wide-suffix"
                    .into(),
            );
        }
    })
}

/// Loads and looks up `ks` in one configuration; prints the figures.
fn load(set: &str, ks: &[Vec<u8>], prep: bool) {
    let cfg = Config::builder().preprocess(prep).build().expect("config");
    let h = Hyperion::with_config(cfg).expect("index");
    let t = cpu_now();
    for (i, k) in ks.iter().enumerate() {
        h.insert(k, &(i as u64).to_le_bytes()).expect("insert");
    }
    let load = cpu_now() - t;
    let t = cpu_now();
    let mut found = 0usize;
    for k in ks {
        found += usize::from(h.get(k).is_some());
    }
    let look = cpu_now() - t;
    assert_eq!(found, ks.len());
    let mu = h.memory_usage();
    println!(
        "{set} {} prep={prep}: load {load:.3} CPU-s ({:.3} Mops/CPU-s), lookups {look:.3} CPU-s ({:.3} Mops/CPU-s), {:.1} B/key",
        ks.len(),
        ks.len() as f64 / load / 1e6,
        ks.len() as f64 / look / 1e6,
        mu.total() as f64 / ks.len().max(1) as f64,
    );
}

/// Runs the program (see the module docs for the arguments).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let set = args.first().map_or("seq-int", String::as_str);
    let n = count_arg(args, 1, 100_000)? as usize;
    let which = args.get(2).map_or("both", String::as_str);
    let ks = keys(set, n)?;
    if which != "prep" {
        load(set, &ks, false);
    }
    if which != "plain" {
        load(set, &ks, true);
    }
    Ok(())
}
