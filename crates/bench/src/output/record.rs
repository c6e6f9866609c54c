//! One result: a (index, dataset, workload, distribution, threads) cell, median of its
//! repeats.

use serde::{Deserialize, Serialize};

/// One result line. Field names are the JSON keys other tools rely on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Record {
    /// Index name (`btreemap`, `slb:wormhole`, ...).
    pub(crate) index: String,
    /// Dataset name.
    pub(crate) dataset: String,
    /// Loaded keys.
    pub(crate) keys: u64,
    /// Value size in bytes.
    pub(crate) value_size: usize,
    /// Workload name.
    pub(crate) workload: String,
    /// Read distribution.
    pub(crate) dist: String,
    /// Threads.
    pub(crate) threads: usize,
    /// Operations completed in the median repeat (keys for `get-many`).
    pub(crate) ops: u64,
    /// Wall seconds of the median repeat.
    pub(crate) secs: f64,
    /// Median throughput, millions of operations per second.
    pub(crate) mops: f64,
    /// Throughput of every repeat.
    pub(crate) mops_repeats: Vec<f64>,
    /// Median repeat's sum over threads of operations per thread-CPU-second, millions
    /// (what the threads reach with a core each; robust to other work on the machine).
    pub(crate) mops_cpu: f64,
    /// CPU-time throughput of every repeat.
    pub(crate) mops_cpu_repeats: Vec<f64>,
    /// Live heap bytes added by loading, per key (counting global allocator; memory a
    /// structure maps itself, such as `orrery::alloc` huge-page regions, is not included —
    /// it shows in `rss_bytes_per_key` and `mem_usage_bytes_per_key`).
    pub(crate) bytes_per_key: f64,
    /// Resident-set growth during loading, per key.
    pub(crate) rss_bytes_per_key: Option<f64>,
    /// `memory_usage().total()` after loading, per key (None: the index does not report).
    pub(crate) mem_usage_bytes_per_key: Option<f64>,
    /// The `structure_bytes` part of `mem_usage_bytes_per_key` (keys and values excluded as
    /// the index counts them); absent in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) structure_bytes_per_key: Option<f64>,
    /// The index's own statistics right after loading (`metrics::index_stats::IndexStats`: Hyperion's
    /// memory-manager breakdown); absent for indexes that report none and in older results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) index_stats: Option<std::collections::BTreeMap<String, f64>>,
    /// Sampled single-operation latency percentiles, ns (see `latency`).
    pub(crate) p50_ns: Option<u64>,
    /// 99th percentile, ns.
    pub(crate) p99_ns: Option<u64>,
    /// 99.9th percentile, ns.
    pub(crate) p999_ns: Option<u64>,
    /// What the latency figures are.
    pub(crate) latency: String,
    /// Thread-CPU ns per operation over the machine's dependent DRAM read latency (4 KiB pages).
    pub(crate) dram_rt_per_op: Option<f64>,
    /// Per-thread wall ns per operation (threads / mops).
    pub(crate) ns_per_op: f64,
    /// Thread-CPU ns per operation.
    pub(crate) cpu_ns_per_op: f64,
    /// Throughput of the load that prepared the index (median repeat), Mops/s.
    pub(crate) load_mops: f64,
    /// Threads of that load.
    pub(crate) load_threads: usize,
    /// The memory ceiling every load ran under (`--max-rss`), bytes; absent: none (or a
    /// record from before the ceiling existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_rss_bytes: Option<u64>,
    /// Set when the load stopped at the ceiling: the keys the index held (`keys` is the
    /// count asked for; per-key figures are over the keys held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) held_keys: Option<u64>,
    /// The process's RSS when the load stopped at the ceiling, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) held_rss_bytes: Option<u64>,
    /// Repeats the median is taken over.
    pub(crate) repeats: usize,
    /// Run seed.
    pub(crate) seed: u64,
    /// 1-minute load average when the result was recorded (other work on the machine).
    pub(crate) loadavg: Option<f64>,
    /// Source revision of the benchmark (`-dirty` when uncommitted changes exist).
    pub(crate) git_rev: String,
    /// Machine facts.
    pub(crate) machine: serde_json::Value,
    /// Throughput while the index was expanding vs steady (indexes with a probe; see
    /// `exec::Split`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) split: Option<crate::exec::Split>,
    /// The global allocator's page backing (`machine::malloc`); absent in older results.
    #[serde(default)]
    pub(crate) malloc: Option<String>,
    /// The process that measured the result (absent in older results).
    #[serde(default)]
    pub(crate) pid: Option<u32>,
    /// Whether that process measured only this result's group (index, dataset, key count):
    /// `run`'s default process isolation; `false` for `--in-process` runs, absent in older
    /// results (which all ran in one process).
    #[serde(default)]
    pub(crate) isolated: Option<bool>,
    /// Suite the result belongs to, if any.
    pub(crate) suite: Option<String>,
    /// The settings that shaped the result: index switches, the epoch pin the measuring
    /// process used, and the run's knobs (`crate::settings::Recorded`); absent in older
    /// results (which ran with the defaults of their time, or with environment variables
    /// that were not recorded).
    #[serde(default)]
    pub(crate) settings: Option<crate::settings::Recorded>,
    /// Unix time of the result.
    pub(crate) unix_time: u64,
}

impl Record {
    /// The keys the index held after its load: [`Record::held_keys`] when the load stopped
    /// at the memory ceiling, else the count asked for. Per-key figures divide by this.
    pub(crate) fn keys_loaded(&self) -> u64 {
        self.held_keys.unwrap_or(self.keys)
    }
}

/// The source revision this binary was built from (recorded by `build.rs`; `-dirty` when
/// tracked files had uncommitted changes at build time), not the checkout's current one.
pub(crate) fn git_rev() -> String {
    env!("ORRERY_BUILD_GIT_REV").to_string()
}

/// The 1-minute load average.
pub(crate) fn loadavg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
