//! `orrery-bench machine`: this machine's memory latency and memory-level parallelism.
//!
//! *Dependent random-read latency*: a 1 GiB array of 64-byte slots is linked into one random
//! cycle (a shuffled visiting order, each slot holding the index of the next), and a single
//! pointer chase walks it: every load depends on the previous one, so elapsed time divided
//! by loads is the full DRAM round trip including TLB misses. Measured once on 4 KiB pages
//! and once on transparent huge pages (`orrery::alloc::HugeArray`, the structures' own
//! huge-page memory).
//!
//! *Independent-read throughput*: K chases start at K points spread evenly along the same
//! cycle and advance in lockstep; their loads are independent, so the core overlaps them
//! (memory-level parallelism). The figure is ns per load for K = 1..16 (on huge pages).
//! All chases are timed in thread CPU time, so time spent descheduled while other
//! processes use the cores does not count (cache and TLB disturbance by them still does).
//!
//! Two further modes, printed and not cached, characterise how the latency depends on the
//! memory a structure spans (module `sweep`): `--sweep` repeats the dependent chase over
//! working sets from 64 MiB to 4 GiB on 4 KiB pages, transparent huge pages (with the
//! fraction the kernel really backed, from `/proc/self/smaps`) and 1 GiB hugetlb pages if
//! any are reserved; `--locality` prices a second dependent read that lands within 4 KiB …
//! 2 MiB of the first (a leaf, then a pair block placed near it).
//!
//! The result is cached as JSON (by default `~/.cache/orrery-bench/machine.json`) and reused
//! while the CPU model, core count, memory size and kernel are the same and it is at most
//! [`MAX_AGE_SECS`] old; every report prints it with its age and the load average it was
//! taken under, and `dram_rt_per_op` divides per-thread ns/op by the 4 KiB-page latency.
//! Why an age limit: this project's VMs keep the fingerprint ("AMD EPYC", 2 cores) across
//! hosts and sessions, and a probe taken beside other work can read a much higher latency
//! than a quiet one (measured: `docs/results/scale.md`), so a stale probe would scale every
//! later `DRAM/op` figure by that error.

pub(crate) mod malloc;
mod region;
mod sweep;

pub(crate) use sweep::{describe_locality, describe_sweep, locality, parse_sizes, sweep};

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use crate::metrics::cpu;
use crate::progress::Progress;
use crate::rng::Rng;
use region::Pages;

/// Bytes of one slot (a cache line).
const SLOT: usize = 64;

/// What identifies a machine for the cache.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct Fingerprint {
    /// CPU model name from /proc/cpuinfo.
    pub(crate) cpu: String,
    /// Online cores.
    pub(crate) cores: usize,
    /// Total memory in GiB (rounded).
    pub(crate) mem_gib: u64,
    /// Kernel release.
    pub(crate) kernel: String,
}

/// Measured memory facts.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Machine {
    /// Identity.
    #[serde(flatten)]
    pub(crate) id: Fingerprint,
    /// Transparent-huge-page mode (`always`, `madvise`, `never`).
    pub(crate) thp: String,
    /// Size of the test array in MiB.
    pub(crate) array_mib: usize,
    /// Dependent random read, 4 KiB pages, ns.
    pub(crate) lat_4k_ns: f64,
    /// Dependent random read, huge pages, ns.
    pub(crate) lat_huge_ns: f64,
    /// `(streams, ns per read)` for independent chases on huge pages.
    pub(crate) mlp: Vec<(usize, f64)>,
    /// Unix time of the measurement.
    pub(crate) measured_at: u64,
    /// The 1-minute load average when the measurement started (absent in caches written
    /// before it was recorded).
    #[serde(default)]
    pub(crate) loadavg: Option<f64>,
}

/// Oldest cached measurement [`get`] reuses: a working session.
pub(crate) const MAX_AGE_SECS: u64 = 6 * 3600;

/// Seconds since the Unix epoch.
fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Machine {
    /// A compact JSON summary for result lines.
    pub(crate) fn summary_json(&self) -> serde_json::Value {
        serde_json::json!({
            "cpu": self.id.cpu,
            "cores": self.id.cores,
            "mem_gib": self.id.mem_gib,
            "kernel": self.id.kernel,
            "thp": self.thp,
            "lat_4k_ns": round1(self.lat_4k_ns),
            "lat_huge_ns": round1(self.lat_huge_ns),
            "mlp_best_ns": round1(self.mlp.iter().map(|m| m.1).fold(f64::INFINITY, f64::min)),
        })
    }

    /// A few lines for people.
    pub(crate) fn describe(&self) -> String {
        let mlp: Vec<String> = self
            .mlp
            .iter()
            .map(|(k, ns)| format!("{k}:{ns:.0}"))
            .collect();
        let age = now_secs().saturating_sub(self.measured_at);
        let load = self.loadavg.map_or_else(
            || "load average not recorded".into(),
            |l| format!("load average {l:.2}"),
        );
        format!(
            "machine: {}, {} cores, {} GiB, kernel {}, THP {}\n\
             memory:  dependent random read over {} MiB: {:.0} ns (4 KiB pages), {:.0} ns (huge pages)\n\
             \x20        independent reads, streams:ns/read (huge pages): {}\n\
             \x20        measured {} min ago, {load}",
            self.id.cpu,
            self.id.cores,
            self.id.mem_gib,
            self.id.kernel,
            self.thp,
            self.array_mib,
            self.lat_4k_ns,
            self.lat_huge_ns,
            mlp.join("  "),
            age / 60
        )
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// This machine's identity.
pub(crate) fn fingerprint() -> Fingerprint {
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let mem_kib: u64 = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Fingerprint {
        cpu,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        mem_gib: (mem_kib + (1 << 19)) >> 20,
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
    }
}

fn thp_mode() -> String {
    let s = read("/sys/kernel/mm/transparent_hugepage/enabled");
    s.split_whitespace()
        .find(|w| w.starts_with('['))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        .unwrap_or_else(|| "unavailable".into())
}

/// The default cache file.
pub(crate) fn default_cache_path() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("orrery-bench").join("machine.json")
}

/// Links the slots of `words` into the cycle given by `order`.
fn link(words: &mut [u64], order: &[u32]) {
    let stride = SLOT / 8;
    for w in order.windows(2) {
        words[w[0] as usize * stride] = u64::from(w[1]);
    }
    words[*order.last().unwrap_or(&0) as usize * stride] = u64::from(order[0]);
}

/// Advances `K` chases from `starts` for `steps` rounds; returns ns per load.
fn chase<const K: usize>(words: &[u64], starts: &[u32], steps: usize) -> f64 {
    let stride = SLOT / 8;
    let mut p = [0usize; K];
    for (p, s) in p.iter_mut().zip(starts) {
        *p = *s as usize;
    }
    // Thread CPU time, not wall time: on a shared machine the chase may be descheduled.
    let t = cpu::thread_cpu_secs();
    for _ in 0..steps {
        for p in &mut p {
            *p = words[*p * stride] as usize;
        }
    }
    let ns = (cpu::thread_cpu_secs() - t) * 1e9;
    std::hint::black_box(p);
    ns / (steps * K) as f64
}

/// Measures this machine with an array of `mib` MiB and `loads` dependent loads per test.
pub(crate) fn measure(mib: usize, loads: usize, progress: &Progress) -> Result<Machine, String> {
    if mib < 64 {
        return Err("the memory test array must be at least 64 MiB".into());
    }
    let loadavg = crate::output::record::loadavg();
    let len = mib << 20;
    let slots = len / SLOT;
    progress.note(&format!(
        "measuring memory latency over {mib} MiB (about 10-20 s) ..."
    ));
    let mut order: Vec<u32> = (0..slots as u32).collect();
    Rng::new(0x4D41_4348).shuffle(&mut order);
    let bar = progress.bar(2 + 7, "machine: memory latency");

    let mut small = Pages::small(len)?;
    link(small.words(), &order);
    let lat_4k_ns = chase::<1>(small.words(), &order[..1], loads);
    drop(small);
    bar.inc(1);

    let mut huge = orrery::alloc::HugeArray::<u64>::new(len / 8)
        .map_err(|e| format!("cannot map {mib} MiB of huge pages for the memory test: {e}"))?;
    link(&mut huge, &order);
    let words: &[u64] = &huge;
    let lat_huge_ns = chase::<1>(words, &order[..1], loads);
    bar.inc(1);
    let starts = |k: usize| -> Vec<u32> { (0..k).map(|j| order[j * slots / k]).collect() };
    let mut mlp = vec![(1, lat_huge_ns)];
    macro_rules! streams {
        ($($k:literal)*) => {$(
            mlp.push(($k, chase::<$k>(words, &starts($k), loads / $k)));
            bar.inc(1);
        )*};
    }
    streams!(2 4 6 8 12 16);
    bar.finish_and_clear();
    Ok(Machine {
        id: fingerprint(),
        thp: thp_mode(),
        array_mib: mib,
        lat_4k_ns,
        lat_huge_ns,
        mlp,
        measured_at: now_secs(),
        loadavg,
    })
}

/// Saves `m` to `path`.
pub(crate) fn save(m: &Machine, path: &Path) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(m).map_err(|e| e.to_string())?;
    std::fs::write(path, json).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The cached measurement at `path` if it describes this machine and is at most
/// [`MAX_AGE_SECS`] old.
pub(crate) fn load_cached(path: &Path) -> Option<Machine> {
    let text = std::fs::read_to_string(path).ok()?;
    let m: Machine = serde_json::from_str(&text).ok()?;
    (m.id == fingerprint() && now_secs().saturating_sub(m.measured_at) <= MAX_AGE_SECS).then_some(m)
}

/// The cached measurement, or a fresh one (saved to `path`).
pub(crate) fn get(path: &Path, progress: &Progress) -> Result<Machine, String> {
    if let Some(m) = load_cached(path) {
        return Ok(m);
    }
    let m = measure(1024, 4_000_000, progress)?;
    save(&m, path)?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linked_cycle_visits_every_slot() {
        let slots = 1000usize;
        let mut order: Vec<u32> = (0..slots as u32).collect();
        Rng::new(1).shuffle(&mut order);
        let mut words = vec![0u64; slots * SLOT / 8];
        link(&mut words, &order);
        let mut seen = vec![false; slots];
        let mut p = order[0] as usize;
        for _ in 0..slots {
            assert!(!seen[p]);
            seen[p] = true;
            p = words[p * SLOT / 8] as usize;
        }
        assert_eq!(p, order[0] as usize);
    }

    #[test]
    fn cache_round_trip_and_fingerprint_check() {
        let dir = std::env::temp_dir().join(format!("orrery-machine-{}", std::process::id()));
        let path = dir.join("m.json");
        let m = Machine {
            id: fingerprint(),
            thp: "madvise".into(),
            array_mib: 64,
            lat_4k_ns: 100.0,
            lat_huge_ns: 80.0,
            mlp: vec![(1, 80.0), (8, 12.0)],
            measured_at: now_secs() - 60,
            loadavg: Some(0.5),
        };
        save(&m, &path).unwrap();
        let back = load_cached(&path).unwrap();
        assert_eq!((back.lat_4k_ns, back.loadavg), (100.0, Some(0.5)));
        assert!(
            back.describe()
                .contains("measured 1 min ago, load average 0.50")
        );
        // Older than a session: measured again, not reused.
        let stale = Machine {
            measured_at: now_secs() - MAX_AGE_SECS - 1,
            ..m.clone()
        };
        save(&stale, &path).unwrap();
        assert!(load_cached(&path).is_none());
        // A cache written before the load average was recorded still reads.
        let mut old = serde_json::to_value(&m).unwrap();
        old.as_object_mut().unwrap().remove("loadavg").unwrap();
        std::fs::write(&path, old.to_string()).unwrap();
        assert_eq!(load_cached(&path).unwrap().loadavg, None);
        let other = Machine {
            id: Fingerprint {
                cpu: "other".into(),
                ..fingerprint()
            },
            ..m
        };
        save(&other, &path).unwrap();
        assert!(load_cached(&path).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
