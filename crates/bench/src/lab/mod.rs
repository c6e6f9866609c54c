//! `orrery-bench lab NAME [ARGS…]`: the measurement programs of the structures' design work.
//!
//! A suite (`run --suite`) measures indexes side by side through the harness's one code
//! path. Some questions a structure's design raises do not fit that shape: how long an
//! expansion stalls a writer, how a scan copy behaves beside a writer of its own arena, what
//! a search in the MetaTrieHT passes through. Their programs live here (not under the
//! library crates' `examples/`, which only show a user how to use a structure), each one a
//! module with a `run(args)` entry taking its own positional arguments, listed in
//! [`PROGRAMS`]. They may use a structure's `bench-internals` feature (diagnostics and
//! experiment switches that are not part of its API).
//!
//! `orrery-bench lab` with no name lists the programs.

mod common;
mod cuckoo_trie_growth_readers;
mod cuckoo_trie_load;
mod cuckoo_trie_lookups;
mod cuckoo_trie_readers;
mod cuckoo_trie_scan_walk;
mod cuckoo_trie_shrink;
mod epoch_grace_cost;
mod hyperion_mem_breakdown;
mod hyperion_prep_load;
mod hyperion_read_contention;
mod hyperion_scan_contention;
mod hyperion_scan_profile;
mod memory_churn;
mod memory_return;
mod mercury_chains;
mod mercury_expansion;
mod mercury_expansion_stalls;
mod mercury_migrate_cost;
mod mercury_quick;
mod slb_admission;
mod slb_zipf;
mod wormhole_az;
mod wormhole_drop;
mod wormhole_mixed;
mod wormhole_perf;
mod wormhole_quick;
mod wormhole_workingset;

/// A lab program: its name on the command line, a line saying what it measures and its
/// arguments, and its entry point (the arguments after the name).
pub(crate) struct Program {
    /// The name after `orrery-bench lab`.
    pub(crate) name: &'static str,
    /// What it measures, and its arguments.
    pub(crate) about: &'static str,
    /// Runs it on the arguments after the name.
    pub(crate) run: fn(&[String]) -> Result<(), String>,
}

/// Every lab program, by name.
pub(crate) const PROGRAMS: &[Program] = &[
    Program {
        name: "cuckoo_trie_growth_readers",
        about: "Cuckoo Trie lookups steady vs during a growth forced by a writer: [KEYS] [READERS]",
        run: cuckoo_trie_growth_readers::run,
    },
    Program {
        name: "cuckoo_trie_load",
        about: "Cuckoo Trie rand-8 load: growths, B/key sawtooth, insert cost by load: [KEYS] [SEED]",
        run: cuckoo_trie_load::run,
    },
    Program {
        name: "cuckoo_trie_lookups",
        about: "Cuckoo Trie get vs get_many CPU per lookup: [KEYS] [ROUNDS] [D] [both|get|many]",
        run: cuckoo_trie_lookups::run,
    },
    Program {
        name: "cuckoo_trie_scan_walk",
        about: "Cuckoo Trie scans: trie walk vs leaf list vs descending walk: [KEYS] [ROUNDS] [OPS] [MAXLEN]",
        run: cuckoo_trie_scan_walk::run,
    },
    Program {
        name: "cuckoo_trie_shrink",
        about: "Cuckoo Trie memory and lookups around a shrink after removals: [KEYS] [READERS] [PERCENT]",
        run: cuckoo_trie_shrink::run,
    },
    Program {
        name: "epoch_grace_cost",
        about: "epoch grace period cost to the writer, deferred flag vs GracePeriod, 0/1 readers: [N]",
        run: epoch_grace_cost::run,
    },
    Program {
        name: "hyperion_mem_breakdown",
        about: "Hyperion's bytes/key by part (Fig 14/16): [KEYS] [rand|seq] [EJECT] [all|plain|prep] [SCANS]",
        run: hyperion_mem_breakdown::run,
    },
    Program {
        name: "hyperion_prep_load",
        about: "Hyperion loads with and without key pre-processing: [SET] [KEYS] [prep|plain|both]",
        run: hyperion_prep_load::run,
    },
    Program {
        name: "hyperion_read_contention",
        about: "Hyperion point reads beside writers (optimistic, locked, get_many): [KEYS] [SECS] [ROUNDS] [locked-first]",
        run: hyperion_read_contention::run,
    },
    Program {
        name: "hyperion_scan_contention",
        about: "Hyperion scans beside writers (short and full): [KEYS] [SECS] [ROUNDS] [arena|one-trie]",
        run: hyperion_scan_contention::run,
    },
    Program {
        name: "hyperion_scan_profile",
        about: "Hyperion full scans against a BTreeMap: [SET] [KEYS] [ROUNDS] [hyperion|btree|both|held] [DELAY_S]",
        run: hyperion_scan_profile::run,
    },
    Program {
        name: "mercury_chains",
        about: "Mercury's inline share and node reads per GET after loads of N keys: [N...]",
        run: mercury_chains::run,
    },
    Program {
        name: "mercury_expansion",
        about: "Mercury loads and GETs while expanding, cooperative vs dedicated: [N]",
        run: mercury_expansion::run,
    },
    Program {
        name: "mercury_expansion_stalls",
        about: "Mercury mix-5 batches steady vs expanding, long batches, vmstat: [keys] [ops] [prefault 0|1]",
        run: mercury_expansion_stalls::run,
    },
    Program {
        name: "mercury_migrate_cost",
        about: "Mercury CPU cost of a GET and of migrating one bucket: [log2 buckets] [gets]",
        run: mercury_migrate_cost::run,
    },
    Program {
        name: "mercury_quick",
        about: "Mercury and its variants vs a locked HashMap, GET ratios: [N] [secs] [table|pin-ab|nolock-ab|nolock-ab-presized]",
        run: mercury_quick::run,
    },
    Program {
        name: "memory_churn",
        about: "RSS over time while keys are replaced at a constant live count: STRUCTURE [LIVE] [THREADS] [SECS] [EVERY]",
        run: memory_churn::run,
    },
    Program {
        name: "memory_return",
        about: "RSS full / after removing most keys / fresh: STRUCTURE [KEYS] [PERCENT] [oldest|scattered] [KEY_LEN] [fresh]",
        run: memory_return::run,
    },
    Program {
        name: "slb_admission",
        about: "SLB hit ratio per window of Zipfian lookups (free index): [keys] [ops] [mib] [thr] [sample] [window] [warm]",
        run: slb_admission::run,
    },
    Program {
        name: "slb_zipf",
        about: "SLB quick ratios: bare index, SLB, paper-locked SLB: [keys] [threads] [cache_mib] [ops]",
        run: slb_zipf::run,
    },
    Program {
        name: "wormhole_az",
        about: "Wormhole lookups on a key file, with search traces: FILE [M] [trace]",
        run: wormhole_az::run,
    },
    Program {
        name: "wormhole_drop",
        about: "Wormhole load and drop times: [N] [key length]",
        run: wormhole_drop::run,
    },
    Program {
        name: "wormhole_mixed",
        about: "Wormhole with pair sizes changing over time: [long-then-short|short-then-long] [N0] [N] [M]",
        run: wormhole_mixed::run,
    },
    Program {
        name: "wormhole_perf",
        about: "Wormhole profiling driver, rand-8 load + lookups: [N] [M] [get|many]",
        run: wormhole_perf::run,
    },
    Program {
        name: "wormhole_quick",
        about: "Wormhole vs BTreeMap quick ratios on rand-8: [N]",
        run: wormhole_quick::run,
    },
    Program {
        name: "wormhole_workingset",
        about: "Wormhole lookups over key subsets: cache lines or pages? (N M R [sorted|thin])",
        run: wormhole_workingset::run,
    },
];

/// Runs the program `name` on `args`; with no name, lists the programs.
pub(crate) fn main(name: Option<&str>, args: &[String]) -> Result<(), String> {
    let Some(name) = name else {
        for p in PROGRAMS {
            println!("{:<24} {}", p.name, p.about);
        }
        return Ok(());
    };
    let p = PROGRAMS
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| format!("no lab program {name:?} (`orrery-bench lab` lists them)"))?;
    (p.run)(args)
}

/// The positional argument `i` of a lab program parsed as a count (`10M`, `100K`, …), or
/// `default` when it is absent.
#[allow(dead_code)]
pub(crate) fn count_arg(args: &[String], i: usize, default: u64) -> Result<u64, String> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => crate::settings::parse_count(s),
    }
}
