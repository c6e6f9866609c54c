//! The lookup threads of the lab programs `cuckoo_trie_growth_readers` and
//! `cuckoo_trie_shrink` (a helper module, not a program): readers that file their
//! throughput and latency samples by whether a migration (growth or shrink) was running.
//!
//! A reader looks up random keys of its set in batches of 1024, reading `is_growing()` at
//! each batch boundary: a batch is *migrating* if it said so at both ends, *steady* if at
//! neither. One lookup in 64 is timed and filed by `is_growing()` read before and after it.

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use orrery::cuckoo_trie::CuckooTrie;

use super::common::splitmix;

/// p50/p99/p999 of `v` (sorted in place).
fn pct(v: &mut [u64]) -> String {
    if v.is_empty() {
        return "n/a".into();
    }
    v.sort_unstable();
    let q = |f: f64| v[((v.len() as f64 * f) as usize).min(v.len() - 1)];
    format!("{}/{}/{} ns (n={})", q(0.5), q(0.99), q(0.999), v.len())
}

/// What one reader saw.
#[derive(Default)]
pub(crate) struct Tally {
    /// Lookups and seconds of steady batches.
    steady: (u64, f64),
    /// Lookups and seconds of migrating batches.
    migrating: (u64, f64),
    /// Latency samples (ns) of steady lookups.
    steady_ns: Vec<u64>,
    /// Latency samples (ns) of lookups during a migration.
    migrating_ns: Vec<u64>,
}

/// Reader `r`: waits at `start`, then looks up random keys of `keys` (all present) until
/// `stop`.
pub(crate) fn read<K: AsRef<[u8]>>(
    ct: &CuckooTrie,
    keys: &[K],
    r: usize,
    start: &Barrier,
    stop: &AtomicBool,
) -> Tally {
    let mut y = 0x2545_F491_4F6C_DD1Du64.wrapping_mul(r as u64 + 1);
    let mut t = Tally::default();
    start.wait();
    while !stop.load(Ordering::Relaxed) {
        let e0 = ct.stats().migrating;
        let t0 = Instant::now();
        for j in 0..1024 {
            let k = keys[(splitmix(&mut y) % keys.len() as u64) as usize].as_ref();
            if j % 64 == 0 {
                let a = ct.stats().migrating;
                let s = Instant::now();
                assert!(ct.get_with(k, |_| ()).is_some());
                let ns = s.elapsed().as_nanos() as u64;
                match (a, ct.stats().migrating) {
                    (false, false) => t.steady_ns.push(ns),
                    (true, true) => t.migrating_ns.push(ns),
                    _ => {}
                }
            } else {
                assert!(ct.get_with(k, |_| ()).is_some());
            }
        }
        let dt = t0.elapsed().as_secs_f64();
        match (e0, ct.stats().migrating) {
            (false, false) => t.steady = (t.steady.0 + 1024, t.steady.1 + dt),
            (true, true) => t.migrating = (t.migrating.0 + 1024, t.migrating.1 + dt),
            _ => {}
        }
    }
    t
}

/// The readers' tallies summed: per-thread rates (Mops/s) added over readers, the longest
/// time any reader spent in each state, and all latency samples.
pub(crate) struct Summary {
    /// Steady lookups, Mops/s summed over readers.
    steady_mops: f64,
    /// Lookups during a migration, Mops/s summed over readers.
    migrating_mops: f64,
    /// The longest steady time of a reader.
    steady_secs: f64,
    /// The longest migrating time of a reader.
    migrating_secs: f64,
    /// Every steady latency sample (ns).
    steady_ns: Vec<u64>,
    /// Every latency sample during a migration (ns).
    migrating_ns: Vec<u64>,
}

impl Summary {
    /// Sums `tallies`.
    pub(crate) fn of(tallies: Vec<Tally>) -> Summary {
        let mut s = Summary {
            steady_mops: 0.0,
            migrating_mops: 0.0,
            steady_secs: 0.0,
            migrating_secs: 0.0,
            steady_ns: Vec::new(),
            migrating_ns: Vec::new(),
        };
        for t in tallies {
            if t.steady.1 > 0.0 {
                s.steady_mops += t.steady.0 as f64 / t.steady.1 / 1e6;
            }
            if t.migrating.1 > 0.0 {
                s.migrating_mops += t.migrating.0 as f64 / t.migrating.1 / 1e6;
            }
            s.steady_secs = s.steady_secs.max(t.steady.1);
            s.migrating_secs = s.migrating_secs.max(t.migrating.1);
            s.steady_ns.extend(t.steady_ns);
            s.migrating_ns.extend(t.migrating_ns);
        }
        s
    }

    /// Prints the throughput line (`head`, then steady and `during` figures) and both
    /// latency lines.
    pub(crate) fn print(&mut self, head: &str, during: &str) {
        println!(
            "{head}: steady {:.3} Mops/s over {:.2} s, during {during} {:.3} Mops/s over {:.2} s, ratio {}",
            self.steady_mops,
            self.steady_secs,
            self.migrating_mops,
            self.migrating_secs,
            self.ratio()
        );
        println!("latency steady: {}", pct(&mut self.steady_ns));
        println!("latency during {during}: {}", pct(&mut self.migrating_ns));
    }

    /// Migrating over steady throughput, or "n/a".
    pub(crate) fn ratio(&self) -> String {
        if self.steady_mops > 0.0 && self.migrating_mops > 0.0 {
            format!("{:.2}", self.migrating_mops / self.steady_mops)
        } else {
            "n/a".into()
        }
    }
}
