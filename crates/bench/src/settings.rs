//! The run's settings and their defaults, written once.
//!
//! [`defaults`] holds every default of a run; the command line (`cli/args.rs`, through clap's
//! `default_value_t`) and the suite files (`suites.rs`) take them from there. [`Settings`]
//! are the switches that change how an index or the process behaves without changing the
//! index's name (pre-fault threads, prefetches, load factors, the epoch pin barrier): one
//! struct serves the command line (`--wormhole-prefault off`, …) and the suite TOML
//! (`wormhole_prefault = "off"` in a matrix), and every JSON record carries the settings
//! that shaped it ([`Recorded`]), so two differently configured runs never look identical.

use std::fmt;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

/// Defaults of a run, for the command line and the suites alike.
pub(crate) mod defaults {
    /// Dataset when none is named.
    pub(crate) const DATASET: &str = "rand-8";
    /// Keys loaded when no count is given.
    pub(crate) const KEYS: u64 = 1_000_000;
    /// Workload when none is named.
    pub(crate) const WORKLOAD: &str = "c";
    /// Thread count when none is given.
    pub(crate) const THREADS: usize = 1;
    /// Value size, bytes.
    pub(crate) const VALUE_SIZE: usize = 8;
    /// Repeats (the median is reported).
    pub(crate) const REPEAT: usize = 1;
    /// Operations per thread at most, when not given: `min(keys, MAX_OPS)`.
    pub(crate) const MAX_OPS: u64 = 1_000_000;
    /// Warm-up lookups per thread at most, when not given: `min(ops / 10, MAX_WARMUP)`.
    pub(crate) const MAX_WARMUP: u64 = 1_000_000;
    /// One operation in this many is timed for latency percentiles.
    pub(crate) const SAMPLE_EVERY: usize = 64;
    /// Keys per `get_many` call.
    pub(crate) const GET_MANY_BATCH: usize = 16;
    /// Seed of datasets and operation streams.
    pub(crate) const SEED: u64 = 42;
    /// Threads that load the index the workloads run on.
    pub(crate) const LOAD_THREADS: usize = 1;

    /// The operation count of a matrix whose smallest key count is `smallest_keys`.
    pub(crate) fn ops(smallest_keys: u64) -> u64 {
        smallest_keys.min(MAX_OPS)
    }

    /// The warm-up of a matrix of `ops` operations per thread.
    pub(crate) fn warmup(ops: u64) -> u64 {
        (ops / 10).min(MAX_WARMUP)
    }
}

/// A switch: `on` or `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Switch {
    /// Enabled.
    On,
    /// Disabled.
    Off,
}

impl Switch {
    /// Whether the switch is on.
    pub(crate) fn on(self) -> bool {
        self == Switch::On
    }
}

impl fmt::Display for Switch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.on() { "on" } else { "off" })
    }
}

/// The epoch collector's pin barrier (`orrery::sync::epoch::PinBarrier`), chosen once per
/// process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EpochPin {
    /// Every outermost pin issues a full fence (orrery-core's default).
    Fenced,
    /// Pins issue a compiler fence; epoch advances issue `membarrier(2)` (Linux).
    Asymmetric,
}

impl EpochPin {
    /// The pin barrier this process uses (chooses it if no thread has pinned yet).
    pub(crate) fn of_process() -> EpochPin {
        match orrery::sync::epoch::pin_barrier() {
            orrery::sync::epoch::PinBarrier::Fence => EpochPin::Fenced,
            orrery::sync::epoch::PinBarrier::Membarrier => EpochPin::Asymmetric,
        }
    }
}

impl fmt::Display for EpochPin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EpochPin::Fenced => "fenced",
            EpochPin::Asymmetric => "asymmetric",
        })
    }
}

/// Switches that change a result without changing an index's name. Options of `run` on
/// the command line, keys of a matrix in a suite file, recorded in every JSON record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Args, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct Settings {
    /// Wormhole's chunk pre-fault thread (`wormhole::Config::prefault`).
    #[arg(long, value_enum, default_value_t = Settings::DEFAULT.wormhole_prefault)]
    pub(crate) wormhole_prefault: Switch,
    /// Wormhole's item prefetch (`wormhole::Config::prefetch_items`).
    #[arg(long, value_enum, default_value_t = Settings::DEFAULT.wormhole_item_prefetch)]
    pub(crate) wormhole_item_prefetch: Switch,
    /// Mercury's load factor: items per 100 buckets before a doubling
    /// (`mercury::Config::load_percent`).
    #[arg(long, default_value_t = Settings::DEFAULT.mercury_load_percent,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) mercury_load_percent: u32,
    /// Mercury's successor pre-fault thread (`mercury::Config::prefault`).
    #[arg(long, value_enum, default_value_t = Settings::DEFAULT.mercury_prefault)]
    pub(crate) mercury_prefault: Switch,
    /// The epoch collector's pin barrier, for every index that uses epochs. Chosen once per
    /// process: each child of an isolated run gets it; an `--in-process` run must already
    /// have it (orrery-core's environment variable `ORRERY_EPOCH_ASYMMETRIC`). Records name
    /// the barrier the measuring process really used.
    #[arg(long, value_enum, default_value_t = Settings::DEFAULT.epoch_pin)]
    pub(crate) epoch_pin: EpochPin,
    /// Table cells per 100 keys of the opt-in `cuckoo-trie-c` peer, whose table cannot
    /// grow: it is built for every key the run may insert times this (16 bytes a cell).
    #[arg(long, default_value_t = Settings::DEFAULT.cuckoo_trie_c_cells_percent,
          value_parser = clap::value_parser!(u32).range(100..=10_000))]
    pub(crate) cuckoo_trie_c_cells_percent: u32,
}

impl Settings {
    /// The defaults: the libraries' own.
    pub(crate) const DEFAULT: Settings = Settings {
        wormhole_prefault: Switch::On,
        wormhole_item_prefetch: Switch::On,
        mercury_load_percent: orrery::mercury::DEFAULT_LOAD_PERCENT as u32,
        mercury_prefault: Switch::On,
        epoch_pin: EpochPin::Fenced,
        cuckoo_trie_c_cells_percent: 300,
    };

    /// Settings read from the extra keys of a suite matrix (every key not given keeps its
    /// default; an unknown key is an error).
    pub(crate) fn from_toml(table: toml::Table) -> Result<Settings, String> {
        Settings::deserialize(toml::Value::Table(table)).map_err(|e| e.to_string())
    }

    /// Takes the fields of `cli` for which `given(field name)` is true (options given on
    /// the command line override a suite's settings).
    pub(crate) fn overlay(&mut self, cli: &Settings, given: &dyn Fn(&str) -> bool) {
        let Settings {
            wormhole_prefault,
            wormhole_item_prefetch,
            mercury_load_percent,
            mercury_prefault,
            epoch_pin,
            cuckoo_trie_c_cells_percent,
        } = *cli;
        if given("wormhole_prefault") {
            self.wormhole_prefault = wormhole_prefault;
        }
        if given("wormhole_item_prefetch") {
            self.wormhole_item_prefetch = wormhole_item_prefetch;
        }
        if given("mercury_load_percent") {
            self.mercury_load_percent = mercury_load_percent;
        }
        if given("mercury_prefault") {
            self.mercury_prefault = mercury_prefault;
        }
        if given("epoch_pin") {
            self.epoch_pin = epoch_pin;
        }
        if given("cuckoo_trie_c_cells_percent") {
            self.cuckoo_trie_c_cells_percent = cuckoo_trie_c_cells_percent;
        }
    }

    /// A Wormhole configuration builder with these settings applied.
    pub(crate) fn wormhole(&self) -> orrery::wormhole::ConfigBuilder {
        orrery::wormhole::Config::builder()
            .prefault(self.wormhole_prefault.on())
            .prefetch_items(self.wormhole_item_prefetch.on())
    }

    /// `config` with these settings applied.
    pub(crate) fn mercury(&self, config: orrery::mercury::Config) -> orrery::mercury::Config {
        orrery::mercury::Config {
            load_percent: self.mercury_load_percent as usize,
            prefault: self.mercury_prefault.on(),
            ..config
        }
    }

    /// These settings as the process that measures them has them: the epoch pin is the
    /// one this process uses.
    pub(crate) fn effective(&self) -> Settings {
        Settings {
            epoch_pin: EpochPin::of_process(),
            ..*self
        }
    }
}

impl fmt::Display for Settings {
    /// As command-line options.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "--wormhole-prefault {} --wormhole-item-prefetch {} --mercury-load-percent {} \
             --mercury-prefault {} --epoch-pin {} --cuckoo-trie-c-cells-percent {}",
            self.wormhole_prefault,
            self.wormhole_item_prefetch,
            self.mercury_load_percent,
            self.mercury_prefault,
            self.epoch_pin,
            self.cuckoo_trie_c_cells_percent
        )
    }
}

impl Default for Settings {
    fn default() -> Settings {
        Settings::DEFAULT
    }
}

/// What a JSON record says about the settings that shaped it: the [`Settings`] (with the
/// epoch pin the measuring process used) and the run's knobs not recorded elsewhere.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Recorded {
    /// The switches.
    #[serde(flatten)]
    pub(crate) switches: Settings,
    /// Operations per thread asked for (the record's `ops` is what the median repeat did).
    pub(crate) ops_per_thread: u64,
    /// Warm-up lookups per thread.
    pub(crate) warmup: u64,
    /// One operation in this many timed for latency.
    pub(crate) sample_every: usize,
    /// Keys per `get_many` call.
    pub(crate) get_many_batch: usize,
    /// Per-phase time limit, seconds.
    pub(crate) max_secs: Option<f64>,
}

/// Parses a count: `1000`, `100K`, `10M`, `1G` (decimal multipliers), `1_000_000`.
pub(crate) fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000),
        Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000),
        Some('g' | 'G') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (&t[..], 1),
    };
    let n: u64 = num.parse().map_err(|_| {
        format!("bad number {s:?} (expected digits with an optional K, M or G suffix)")
    })?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("number {s:?} is too large"))
}
