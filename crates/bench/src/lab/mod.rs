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

mod epoch_grace_cost;
mod slb_admission;
mod slb_zipf;
mod wormhole_az;
mod wormhole_drop;
mod wormhole_mixed;
mod wormhole_perf;
mod wormhole_quick;

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
        name: "epoch_grace_cost",
        about: "epoch grace period cost to the writer, deferred flag vs GracePeriod, 0/1 readers: [N]",
        run: epoch_grace_cost::run,
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
pub(crate) fn count_arg(args: &[String], i: usize, default: u64) -> Result<u64, String> {
    match args.get(i) {
        None => Ok(default),
        Some(s) => crate::settings::parse_count(s),
    }
}
