//! Workloads and their pre-generated operation streams.
//!
//! | name | operations | source |
//! |---|---|---|
//! | `load` | insert every key into an empty index | YCSB LOAD |
//! | `a` | 50% lookups, 50% updates of existing keys | Cuckoo Trie Table 2 |
//! | `b` | 95% lookups, 5% updates | 〃 |
//! | `c` | 100% lookups | 〃 |
//! | `d` | 5% inserts of new keys, 95% lookups of recently inserted keys (`latest`) | 〃 |
//! | `e` | 5% inserts, 95% scans of a random length in 1..=100 | 〃 |
//! | `f` | 50% lookups, 50% read-modify-writes | 〃 |
//! | `lookup` / `lookup-neg` | positive / negative lookups | Wormhole §4.1 |
//! | `scan100` | scans of 100 keys from a random existing key | Wormhole Fig. 18 |
//! | `scan-all` | one scan over every key from the first, per thread (throughput: keys visited per second) | Hyperion Table 3 |
//! | `mix-5` `mix-50` `mix-95` | that % inserts of new keys, the rest lookups | Wormhole Fig. 17 |
//! | `put-5` `put-50` `put-95` | that % PUTs (updates of loaded keys), the rest GETs | Mercury Fig. 5 |
//! | `delete` | removals of distinct loaded keys | |
//! | `verify` | one lookup of every loaded key, in key order, split over the threads: a miss is an error (a streamed check that nothing was lost) | issue 37 |
//! | `get-many` | lookups in batches through `get_many` | Orrery |
//! | `fb-usr` `fb-app` `fb-etc` `fb-var` `fb-sys` | Facebook Memcached pools (see `facebook`) | SLB §4.5 |
//!
//! A run first loads keys `0..N` of the dataset. `lookup-neg` looks up keys from `N..2N`,
//! which are never inserted. Keys after those are fresh: each inserting run gets its own
//! range (`insert_base`), and each thread its own disjoint slice of it, so inserts are
//! always of new keys even when several runs share one loaded index. Each thread's stream
//! is a pure function of (seed, workload, thread, dist) and is generated before the clock
//! starts, one `u64` per operation, so the generator costs nothing during the measurement.
//! The exact number of inserts per stream is fixed (selection sampling), so the key pool a
//! run needs is known in advance.
//!
//! Reads pick loaded keys with the chosen distribution. `latest` ranks keys by recency:
//! the thread's own inserts (newest first), then the loaded keys in reverse load order.

use std::fmt;

use crate::dist::{Dist, ScrambledZipf, Zipf};
use crate::rng::Rng;

use crate::op::{Kind, Op};

/// A workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workload {
    /// Insert all keys into an empty index.
    Load,
    /// YCSB A–F.
    Ycsb(char),
    /// Positive lookups.
    Lookup,
    /// Negative lookups.
    LookupNeg,
    /// Scans of 100.
    Scan100,
    /// One scan over every key, from the first (Hyperion's Table 3 range query).
    ScanAll,
    /// Insert percentage, rest lookups.
    Mix(u8),
    /// Update (PUT) percentage, rest lookups.
    Put(u8),
    /// Removals.
    Delete,
    /// Batched lookups.
    GetMany,
    /// One lookup of every loaded key (a streamed check: no miss allowed).
    Verify,
    /// A Facebook Memcached pool's request stream (`crate::facebook`).
    Facebook(crate::facebook::Trace),
}

/// Every workload name, for listings and errors.
pub(crate) const NAMES: &[&str] = &[
    "load",
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "lookup",
    "lookup-neg",
    "scan100",
    "scan-all",
    "mix-5",
    "mix-50",
    "mix-95",
    "put-5",
    "put-50",
    "put-95",
    "delete",
    "get-many",
    "verify",
    "fb-usr",
    "fb-app",
    "fb-etc",
    "fb-var",
    "fb-sys",
];

impl Workload {
    /// Parses a workload name (case-insensitive for YCSB letters).
    pub(crate) fn parse(s: &str) -> Result<Workload, String> {
        let lower = s.to_ascii_lowercase();
        Ok(match lower.as_str() {
            "load" => Workload::Load,
            "a" | "b" | "c" | "d" | "e" | "f" => Workload::Ycsb(lower.as_bytes()[0] as char),
            "lookup" => Workload::Lookup,
            "lookup-neg" => Workload::LookupNeg,
            "scan100" => Workload::Scan100,
            "scan-all" => Workload::ScanAll,
            "mix-5" => Workload::Mix(5),
            "mix-50" => Workload::Mix(50),
            "mix-95" => Workload::Mix(95),
            "put-5" => Workload::Put(5),
            "put-50" => Workload::Put(50),
            "put-95" => Workload::Put(95),
            "delete" => Workload::Delete,
            "get-many" => Workload::GetMany,
            "verify" => Workload::Verify,
            _ if lower.starts_with("fb-")
                && crate::facebook::Trace::parse(&lower[3..]).is_some() =>
            {
                Workload::Facebook(
                    crate::facebook::Trace::parse(&lower[3..])
                        .unwrap_or(crate::facebook::Trace::Usr),
                )
            }
            _ => {
                return Err(format!(
                    "unknown workload {s:?}; known: {}",
                    NAMES.join(", ")
                ));
            }
        })
    }

    /// One line for listings.
    pub(crate) fn about(&self) -> &'static str {
        match self {
            Workload::Load => "insert every key into an empty index",
            Workload::Ycsb('a') => "YCSB-A: 50% lookups, 50% updates",
            Workload::Ycsb('b') => "YCSB-B: 95% lookups, 5% updates",
            Workload::Ycsb('c') => "YCSB-C: 100% lookups",
            Workload::Ycsb('d') => "YCSB-D: 5% inserts, 95% lookups of recent keys (latest)",
            Workload::Ycsb('e') => "YCSB-E: 5% inserts, 95% scans of 1..=100 keys",
            Workload::Ycsb(_) => "YCSB-F: 50% lookups, 50% read-modify-writes",
            Workload::Lookup => "positive lookups",
            Workload::LookupNeg => "negative lookups (absent keys)",
            Workload::Scan100 => "scans of 100 keys from a random key",
            Workload::ScanAll => {
                "one full-range scan over every key per thread (Mops/s = keys visited)"
            }
            Workload::Mix(5) => "5% inserts, 95% lookups",
            Workload::Mix(50) => "50% inserts, 50% lookups",
            Workload::Mix(_) => "95% inserts, 5% lookups",
            Workload::Put(5) => "5% PUTs (updates of loaded keys), 95% GETs (= YCSB-B)",
            Workload::Put(50) => "50% PUTs, 50% GETs (= YCSB-A)",
            Workload::Put(_) => "95% PUTs (updates of loaded keys), 5% GETs",
            Workload::Delete => "removals of distinct loaded keys",
            Workload::GetMany => "lookups in batches via get_many",
            Workload::Verify => "one lookup of every loaded key in key order; a miss is an error",
            Workload::Facebook(t) => t.params().source,
        }
    }

    /// Whether the workload removes keys (`delete`, and the Facebook traces' DELETEs).
    pub(crate) fn deletes(&self) -> bool {
        matches!(self, Workload::Delete | Workload::Facebook(_))
    }

    /// Whether the workload scans (needs an ordered index).
    pub(crate) fn scans(&self) -> bool {
        matches!(
            self,
            Workload::Ycsb('e') | Workload::Scan100 | Workload::ScanAll
        )
    }

    /// Whether each repeat needs a freshly built index: `load` (it is the load), `delete`
    /// (it removes loaded keys that later runs expect), and every workload that inserts
    /// (on a shared index each repeat would start from a bigger index than the one before:
    /// Fig 17's mixes grew it by up to 30% over their repeats). Read- and update-only
    /// workloads run on a shared loaded index.
    pub(crate) fn needs_fresh_index(&self) -> bool {
        matches!(self, Workload::Load | Workload::Delete) || self.inserts_per_thread(100) > 0
    }

    /// Order of runs on a shared index: read/update-only first, inserting ones after.
    pub(crate) fn run_order(&self) -> u8 {
        if self.inserts_per_thread(100) > 0 {
            1
        } else {
            0
        }
    }

    /// The distribution used when none is given (`latest` for D, uniform otherwise).
    pub(crate) fn default_dist(&self) -> Dist {
        match self {
            Workload::Ycsb('d') => Dist::Latest(crate::dist::DEFAULT_THETA),
            _ => Dist::Uniform,
        }
    }

    /// Percentage of operations that insert new keys.
    fn insert_pct(&self) -> u64 {
        match self {
            Workload::Ycsb('d') | Workload::Ycsb('e') => 5,
            Workload::Mix(p) => u64::from(*p),
            _ => 0,
        }
    }

    /// New keys one thread's stream of `ops` operations inserts.
    pub(crate) fn inserts_per_thread(&self, ops: u64) -> u64 {
        (ops * self.insert_pct()).div_ceil(100)
    }

    /// Fresh keys `threads` streams of `ops` operations insert.
    pub(crate) fn inserts(&self, ops: u64, threads: u64) -> u64 {
        self.inserts_per_thread(ops) * threads
    }

    /// Operations one thread performs: all keys split over threads for `load` and
    /// `verify`, at most its
    /// share of the loaded keys for `delete`, one (full-range) scan for `scan-all`, `ops`
    /// otherwise.
    pub(crate) fn ops_per_thread(&self, n: u64, ops: u64, threads: u64) -> u64 {
        match self {
            Workload::Load | Workload::Verify => n.div_ceil(threads),
            Workload::ScanAll => 1,
            Workload::Delete => ops.min(n / threads),
            _ => ops,
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Workload::Load => f.write_str("load"),
            Workload::Ycsb(c) => write!(f, "{c}"),
            Workload::Lookup => f.write_str("lookup"),
            Workload::LookupNeg => f.write_str("lookup-neg"),
            Workload::Scan100 => f.write_str("scan100"),
            Workload::ScanAll => f.write_str("scan-all"),
            Workload::Mix(p) => write!(f, "mix-{p}"),
            Workload::Put(p) => write!(f, "put-{p}"),
            Workload::Delete => f.write_str("delete"),
            Workload::GetMany => f.write_str("get-many"),
            Workload::Verify => f.write_str("verify"),
            Workload::Facebook(t) => write!(f, "{t}"),
        }
    }
}

/// Picks keys for reads.
enum Chooser {
    Uniform(u64),
    Zipf(ScrambledZipf),
    Latest(Zipf),
}

/// Inputs of one thread's stream.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StreamSpec {
    /// The workload.
    pub(crate) workload: Workload,
    /// Read distribution.
    pub(crate) dist: Dist,
    /// Loaded keys (`0..n`).
    pub(crate) n: u64,
    /// Operations in this thread's stream.
    pub(crate) ops: u64,
    /// This thread's number.
    pub(crate) thread: u64,
    /// Number of threads.
    pub(crate) threads: u64,
    /// First fresh key of this run's insert range.
    pub(crate) insert_base: u64,
    /// Run seed.
    pub(crate) seed: u64,
}

/// The keys one thread of a `load` inserts (or of a `verify` looks up), in order: its slice
/// of `0..n` (`exec` runs these from the range without storing their operations).
pub(crate) fn load_range(s: &StreamSpec) -> std::ops::Range<u64> {
    let per = s.n.div_ceil(s.threads);
    let lo = (s.thread * per).min(s.n);
    let hi = (lo + per).min(s.n);
    lo..hi
}

/// Generates one thread's operation stream.
pub(crate) fn stream(s: &StreamSpec) -> Vec<Op> {
    let w = s.workload;
    let mut rng = Rng::fork(
        s.seed,
        &format!("ops:{w}:{}", s.dist),
        s.thread * 1_000_003 + s.threads,
    );
    let mut out = Vec::with_capacity(s.ops as usize);
    match w {
        Workload::Load => {
            out.extend(load_range(s).map(|k| Op::new(Kind::Insert, 0, k)));
            return out;
        }
        Workload::Verify => {
            out.extend(load_range(s).map(|k| Op::new(Kind::Read, 0, k)));
            return out;
        }
        Workload::Delete => {
            // A random bijection of 0..n, the same in every thread (it depends on the seed
            // only): i -> (a*i + b) mod n with gcd(a, n) = 1; thread t takes i in its slice.
            let n = s.n.max(1);
            let mut r = Rng::fork(s.seed, "delete", 0);
            let mut a = r.below(n).max(1);
            while gcd(a, n) != 1 {
                a = r.below(n).max(1);
            }
            let b = r.below(n);
            let start = s.thread * s.ops;
            for i in start..start + s.ops {
                let k = ((u128::from(a) * u128::from(i) + u128::from(b)) % u128::from(n)) as u64;
                out.push(Op::new(Kind::Delete, 0, k));
            }
            return out;
        }
        Workload::Facebook(t) => return crate::facebook::stream(t, s.n, s.ops, s.seed, &mut rng),
        Workload::ScanAll => {
            out.extend((0..s.ops).map(|_| Op::new(Kind::ScanAll, 0, 0)));
            return out;
        }
        _ => {}
    }
    let mut chooser = match s.dist {
        Dist::Uniform => Chooser::Uniform(s.n),
        Dist::Zipf(t) => Chooser::Zipf(ScrambledZipf::new(s.n, t)),
        Dist::Latest(t) => Chooser::Latest(Zipf::new(s.n, t)),
    };
    let insert_base = s.insert_base + s.thread * w.inserts_per_thread(s.ops);
    let mut inserts_left = w.inserts_per_thread(s.ops);
    let mut inserted = 0u64;
    for i in 0..s.ops {
        let left = s.ops - i;
        if inserts_left > 0 && rng.below(left) < inserts_left {
            inserts_left -= 1;
            out.push(Op::new(Kind::Insert, 0, insert_base + inserted));
            inserted += 1;
            if let Chooser::Latest(z) = &mut chooser {
                z.grow();
            }
            continue;
        }
        let key = match &chooser {
            Chooser::Uniform(n) => rng.below(*n),
            Chooser::Zipf(z) => z.sample(rng.f64()),
            Chooser::Latest(z) => {
                let r = z.sample(rng.f64());
                if r < inserted {
                    insert_base + inserted - 1 - r
                } else {
                    s.n - 1 - (r - inserted)
                }
            }
        };
        let op = match w {
            Workload::Ycsb('a') if rng.below(2) == 0 => Op::new(Kind::Update, 0, key),
            Workload::Ycsb('b') if rng.below(100) < 5 => Op::new(Kind::Update, 0, key),
            Workload::Put(p) if rng.below(100) < u64::from(p) => Op::new(Kind::Update, 0, key),
            Workload::Ycsb('e') => Op::new(Kind::Scan, rng.range_incl(1, 100) as u8, key),
            Workload::Ycsb('f') if rng.below(2) == 0 => Op::new(Kind::Rmw, 0, key),
            Workload::Scan100 => Op::new(Kind::Scan, 100, key),
            Workload::LookupNeg => Op::new(Kind::Read, 0, s.n + rng.below(s.n)),
            _ => Op::new(Kind::Read, 0, key),
        };
        out.push(op);
    }
    out
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(w: &str, dist: Dist, thread: u64) -> StreamSpec {
        StreamSpec {
            workload: Workload::parse(w).unwrap(),
            dist,
            n: 10_000,
            ops: 20_000,
            thread,
            threads: 2,
            insert_base: 20_000,
            seed: 1,
        }
    }

    fn mix(ops: &[Op]) -> [usize; 7] {
        let mut c = [0; 7];
        for o in ops {
            c[o.kind() as usize] += 1;
        }
        c
    }

    #[test]
    fn ycsb_mixes_follow_table_2() {
        let c = mix(&stream(&spec("a", Dist::Uniform, 0)));
        assert!((9000..11000).contains(&c[Kind::Update as usize]), "{c:?}");
        let c = mix(&stream(&spec("b", Dist::Uniform, 0)));
        assert!((700..1300).contains(&c[Kind::Update as usize]), "{c:?}");
        let c = mix(&stream(&spec("c", Dist::Uniform, 0)));
        assert_eq!(c[Kind::Read as usize], 20_000);
        let c = mix(&stream(&spec("d", Dist::Latest(0.99), 0)));
        assert_eq!(c[Kind::Insert as usize], 1000);
        let e = stream(&spec("e", Dist::Uniform, 0));
        let c = mix(&e);
        assert_eq!(c[Kind::Insert as usize], 1000);
        assert_eq!(c[Kind::Scan as usize], 19_000);
        assert!(
            e.iter()
                .filter(|o| o.kind() == Kind::Scan)
                .all(|o| (1..=100).contains(&o.len()))
        );
        let c = mix(&stream(&spec("f", Dist::Uniform, 0)));
        assert!((9000..11000).contains(&c[Kind::Rmw as usize]), "{c:?}");
        let c = mix(&stream(&spec("put-95", Dist::Zipf(0.99), 0)));
        assert!(
            (18_500..19_500).contains(&c[Kind::Update as usize]),
            "{c:?}"
        );
        assert_eq!(c[Kind::Insert as usize], 0);
        let c = mix(&stream(&spec("mix-95", Dist::Uniform, 0)));
        assert_eq!(c[Kind::Insert as usize], 19_000);
    }

    #[test]
    fn inserts_are_fresh_and_disjoint_between_threads() {
        let a = stream(&spec("mix-50", Dist::Uniform, 0));
        let b = stream(&spec("mix-50", Dist::Uniform, 1));
        let ins = |s: &[Op]| -> Vec<usize> {
            s.iter()
                .filter(|o| o.kind() == Kind::Insert)
                .map(|o| o.key())
                .collect()
        };
        let (ia, ib) = (ins(&a), ins(&b));
        assert!(ia.iter().chain(&ib).all(|&k| k >= 20_000));
        assert!(ia.iter().all(|k| !ib.contains(k)));
        let w = Workload::parse("mix-50").unwrap();
        let max = ia.iter().chain(&ib).max().unwrap();
        assert!((*max as u64) < 20_000 + w.inserts(20_000, 2));
        // Reads only ask for loaded keys.
        assert!(
            a.iter()
                .filter(|o| o.kind() == Kind::Read)
                .all(|o| o.key() < 10_000)
        );
    }

    #[test]
    fn latest_reads_recent_keys_and_only_existing_ones() {
        let s = stream(&spec("d", Dist::Latest(0.99), 1));
        let mut inserted = std::collections::HashSet::new();
        let mut recent = 0;
        for o in &s {
            match o.kind() {
                Kind::Insert => {
                    inserted.insert(o.key());
                }
                _ => {
                    assert!(o.key() < 10_000 || inserted.contains(&o.key()));
                    if o.key() >= 9_000 {
                        recent += 1;
                    }
                }
            }
        }
        // Under latest, most reads hit the newest tenth of the keys.
        assert!(recent > s.len() / 2, "{recent} of {}", s.len());
    }

    #[test]
    fn streams_are_deterministic_and_differ_per_thread() {
        let a = stream(&spec("c", Dist::Zipf(0.99), 0));
        assert_eq!(a, stream(&spec("c", Dist::Zipf(0.99), 0)));
        assert_ne!(a, stream(&spec("c", Dist::Zipf(0.99), 1)));
    }

    #[test]
    fn load_and_delete_cover_distinct_keys() {
        let mut all: Vec<usize> = (0..2)
            .flat_map(|t| stream(&spec("load", Dist::Uniform, t)))
            .map(|o| o.key())
            .collect();
        // Load inserts exactly the n loaded keys, whatever `ops` says.
        all.sort();
        all.dedup();
        assert_eq!(all, (0..10_000).collect::<Vec<_>>());
        let w = Workload::Delete;
        let per = w.ops_per_thread(10_000, 20_000, 2);
        let mut del: Vec<usize> = (0..2)
            .flat_map(|t| {
                stream(&StreamSpec {
                    ops: per,
                    ..spec("delete", Dist::Uniform, t)
                })
            })
            .map(|o| o.key())
            .collect();
        del.sort();
        let len = del.len();
        del.dedup();
        assert_eq!(del.len(), len);
        assert_eq!(len, 10_000);
    }

    /// `scan-all` is one full-range scan per thread, whatever `ops` says, on an ordered
    /// index, on the shared loaded index.
    #[test]
    fn scan_all_is_one_full_scan_per_thread() {
        let w = Workload::parse("scan-all").unwrap();
        assert_eq!(w, Workload::ScanAll);
        assert_eq!(w.to_string(), "scan-all");
        assert!(w.scans());
        assert!(!w.needs_fresh_index());
        assert_eq!(w.ops_per_thread(10_000, 20_000, 2), 1);
        let s = stream(&StreamSpec {
            ops: w.ops_per_thread(10_000, 20_000, 2),
            ..spec("scan-all", Dist::Uniform, 1)
        });
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].kind(), Kind::ScanAll);
        assert_eq!(mix(&s)[Kind::ScanAll as usize], 1);
    }

    #[test]
    fn bad_workload_names() {
        assert!(
            Workload::parse("g")
                .unwrap_err()
                .contains("unknown workload")
        );
        assert_eq!(Workload::parse("C"), Ok(Workload::Ycsb('c')));
    }
}
