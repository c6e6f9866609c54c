//! The command line's grammar: [`Cli`], its subcommands ([`Cmd`]) and their options,
//! derived with clap. Defaults come from [`crate::settings::defaults`]; the switches every
//! record carries are [`Settings`], flattened into `run`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::report;
use crate::settings::{Settings, defaults, parse_count};

/// A count option (`10M`, `100K`, …).
fn count(s: &str) -> Result<u64, String> {
    parse_count(s)
}

#[derive(Parser, Debug)]
#[command(
    name = "orrery-bench",
    version,
    about = "Orrery's benchmark: the papers' datasets and workloads, Orrery's indexes and their peers",
    after_help = "Example: orrery-bench run --index btreemap,skiplist --dataset rand-8 --keys 1M --workload c --threads 1,2"
)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) cmd: Cmd,
    /// Do not re-execute with huge-page malloc (GLIBC_TUNABLES=glibc.malloc.hugetlb=1);
    /// by default every index, peers included, gets THP-backed malloc memory.
    #[arg(long, global = true)]
    pub(super) no_huge_malloc: bool,
}

#[derive(Subcommand, Debug)]
pub(super) enum Cmd {
    /// Run a benchmark matrix (or a named suite) and print a table.
    Run(Box<RunArgs>),
    /// List the datasets with key count, average length and common prefix.
    Datasets(DatasetArgs),
    /// List the registered indexes and their capabilities.
    Indexes,
    /// List the workloads.
    Workloads,
    /// List the suites.
    Suites {
        /// Read suites from this TOML file instead of the built-in one.
        #[arg(long)]
        suites: Option<PathBuf>,
    },
    /// Measure this machine's memory latency and parallelism (cached for `run`).
    Machine(MachineArgs),
    /// Turn JSON-lines results into markdown tables and SVG/PNG plots.
    Report(report::ReportArgs),
    /// Correctness campaigns: checked random operation streams, or linearizability.
    Torture(crate::torture::TortureArgs),
    /// A cache-aside GET/SET load with Zipf keys against a Redis-protocol server.
    RespZipf(crate::resp_zipf::RespZipfArgs),
    /// Run a structure's measurement program (`lab` alone lists them).
    Lab {
        /// The program's name.
        name: Option<String>,
        /// The program's own arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Args, Debug)]
pub(super) struct RunArgs {
    /// Indexes, comma-separated (see `indexes`); `slb:<name>` wraps one in the SLB.
    #[arg(long, value_delimiter = ',')]
    pub(super) index: Vec<String>,
    /// Datasets, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = defaults::DATASET)]
    pub(super) dataset: Vec<String>,
    /// Keys to load, comma-separated for a sweep (each count runs the whole matrix).
    #[arg(long, value_parser = count, value_delimiter = ',', default_values_t = [defaults::KEYS])]
    pub(super) keys: Vec<u64>,
    /// Workloads, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = defaults::WORKLOAD)]
    pub(super) workload: Vec<String>,
    /// Thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [defaults::THREADS])]
    pub(super) threads: Vec<usize>,
    /// Distribution: uniform, zipf or zipf:θ, latest or latest:θ [default: each workload's
    /// own: latest for d, uniform otherwise].
    #[arg(long)]
    pub(super) dist: Option<String>,
    /// Value size in bytes.
    #[arg(long, default_value_t = defaults::VALUE_SIZE)]
    pub(super) value_size: usize,
    /// Repeats; the median is reported.
    #[arg(long, default_value_t = defaults::REPEAT)]
    pub(super) repeat: usize,
    /// Operations per thread [default: the smallest key count, at most MAX_OPS (1M)].
    #[arg(long, value_parser = count)]
    pub(super) ops: Option<u64>,
    /// Warm-up lookups per thread [default: ops/10, at most MAX_WARMUP (1M)].
    #[arg(long, value_parser = count)]
    pub(super) warmup: Option<u64>,
    /// Time one operation in this many for latency percentiles.
    #[arg(long, default_value_t = defaults::SAMPLE_EVERY)]
    pub(super) sample_every: usize,
    /// Keys per get_many call (get-many workload).
    #[arg(long, default_value_t = defaults::GET_MANY_BATCH)]
    pub(super) batch: usize,
    /// Stop each phase after this many seconds.
    #[arg(long)]
    pub(super) max_secs: Option<f64>,
    /// Memory ceiling of every load: a load stops cleanly before the index process's RSS
    /// would pass SIZE (512M, 20G, bytes), and its record says how many keys it held;
    /// `off` for none [default: the machine's memory less 2 GiB].
    #[arg(long, value_name = "SIZE", value_parser = max_rss)]
    pub(super) max_rss: Option<MaxRss>,
    /// Threads that load the index the workloads run on (the `load` workload itself uses
    /// each cell's thread count).
    #[arg(long, default_value_t = defaults::LOAD_THREADS)]
    pub(super) load_threads: usize,
    /// Seed of datasets and operation streams.
    #[arg(long, default_value_t = defaults::SEED)]
    pub(super) seed: u64,
    /// Switches recorded in every result (also keys of a suite's matrices).
    #[command(flatten)]
    pub(super) settings: Settings,
    /// Append one JSON object per result to this file.
    #[arg(long)]
    pub(super) json: Option<PathBuf>,
    /// No progress bars or status lines.
    #[arg(long, short)]
    pub(super) quiet: bool,
    /// Run a named suite (see `suites`).
    #[arg(long)]
    pub(super) suite: Option<String>,
    /// Read suites from this TOML file.
    #[arg(long)]
    pub(super) suites: Option<PathBuf>,
    /// Skip unsupported index/dataset/workload/thread combinations instead of failing.
    #[arg(long)]
    pub(super) skip_unsupported: bool,
    /// Machine measurement cache file [default: ~/.cache/orrery-bench/machine.json].
    #[arg(long)]
    pub(super) machine_file: Option<PathBuf>,
    /// Do not measure the machine (DRAM round trips are then not reported).
    #[arg(long)]
    pub(super) no_machine: bool,
    /// Measure every index in this one process, one after another, instead of each group
    /// of cells sharing a loaded index (one index, one dataset, one key count) in a fresh
    /// child process (the default). Quicker to start, but indexes measured later inherit
    /// the heap, huge-page and page-cache state the earlier ones left, and measure low.
    #[arg(long)]
    pub(super) in_process: bool,
    /// (Internal) run only this group of the plans, as a child of an isolated run.
    #[arg(long = "child-group", hide = true)]
    pub(super) child_group: Option<String>,
    /// (Internal) the parent's machine description, JSON.
    #[arg(long = "child-machine", hide = true)]
    pub(super) child_machine: Option<String>,
    /// The ids of the options given on the command line (filled in by [`parse`](super::parse)): a
    /// suite's values are overridden only by these.
    #[arg(skip)]
    pub(super) given: Vec<String>,
}

impl RunArgs {
    /// Whether option `id` (its field name) was given on the command line.
    pub(super) fn given(&self, id: &str) -> bool {
        self.given.iter().any(|g| g == id)
    }

    /// The load's memory ceiling in bytes: `--max-rss`, or the default (`None`: off, or
    /// the machine's memory unknown).
    pub(super) fn max_rss_bytes(&self) -> Option<u64> {
        match self.max_rss {
            Some(MaxRss::Off) => None,
            Some(MaxRss::Bytes(b)) => Some(b),
            None => crate::metrics::ceiling::default_max_rss(),
        }
    }
}

/// A `--max-rss` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MaxRss {
    /// No ceiling.
    Off,
    /// A ceiling of this many bytes.
    Bytes(u64),
}

fn max_rss(s: &str) -> Result<MaxRss, String> {
    if s.eq_ignore_ascii_case("off") {
        return Ok(MaxRss::Off);
    }
    crate::metrics::ceiling::parse_size(s).map(MaxRss::Bytes)
}

#[derive(Args, Debug)]
pub(super) struct DatasetArgs {
    /// Datasets to describe [default: all listed].
    #[arg(long, value_delimiter = ',')]
    pub(super) dataset: Vec<String>,
    /// Keys to generate for the statistics.
    #[arg(long, value_parser = count, default_value = "100K")]
    pub(super) keys: u64,
    /// Seed.
    #[arg(long, default_value_t = defaults::SEED)]
    pub(super) seed: u64,
    /// Print this many example keys of each dataset.
    #[arg(long, default_value_t = 0)]
    pub(super) examples: usize,
    /// Also write the generated keys of the (single) dataset to this file, one per line, in
    /// generation order: the `file:PATH` format, readable by programs outside the bench
    /// (e.g. the Wormhole `wormhole_az` example). Fails for keys containing a newline.
    #[arg(long)]
    pub(super) write: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub(super) struct MachineArgs {
    /// Cache file [default: ~/.cache/orrery-bench/machine.json].
    #[arg(long)]
    pub(super) machine_file: Option<PathBuf>,
    /// Print the cached measurement instead of measuring again (measures if none).
    #[arg(long)]
    pub(super) cached: bool,
    /// Test array size in MiB [default: 1024].
    #[arg(long, default_value_t = 1024)]
    pub(super) mib: usize,
    /// Dependent loads per test [default: 4M].
    #[arg(long, value_parser = count, default_value = "4M")]
    pub(super) loads: u64,
    /// Instead: latency against working-set size, MiB list [default: 64,128,256,512,1G,2G,4G]
    /// (4 KiB, transparent huge and, if reserved, 1 GiB pages; not cached).
    #[arg(long, num_args = 0..=1, default_missing_value = "64,128,256,512,1G,2G,4G")]
    pub(super) sweep: Option<String>,
    /// Instead: the cost of a second load near the first, over an array of this many MiB
    /// (a power of two; not cached).
    #[arg(long)]
    pub(super) locality: Option<usize>,
    /// No progress bars.
    #[arg(long, short)]
    pub(super) quiet: bool,
}
