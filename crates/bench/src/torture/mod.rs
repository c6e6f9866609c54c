//! `orrery-bench torture`: long correctness campaigns (not measurements).
//!
//! The default mode runs [`orrery::testing::torture`] campaigns: random operation
//! streams over every operation of the API, checked against a `BTreeMap` model after every
//! operation, with periodic full comparisons and invariant walks, on every configuration
//! of [`configs`] (`--structure` selects), for each seed of `--seed`..`--seed + --seeds`,
//! `--ops` operations per seed, `--threads` jobs at a time. A divergence prints its seed
//! and a minimized reproduction on stdout, and the command exits non-zero.
//!
//! `--linearize` runs the linearizability campaign instead ([`linearize`]): threads of
//! random point operations on a small shared key set, plus a scanner, on every structure
//! while it grows, shrinks and migrates, each round's history checked by
//! [`orrery::testing::linearize`].
//!
//! Both are correctness runs, meant for the release build under `nice -n 19`; the numbers
//! they print are counts, not speeds. `docs/results/reliability.md` records the campaigns.

mod campaign;
mod configs;
mod linearize;

#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use clap::Args;
use orrery::testing::torture::Budget;

use crate::settings::parse_count;

fn count(s: &str) -> Result<u64, String> {
    parse_count(s)
}

/// `orrery-bench torture`'s options.
#[derive(Args, Debug)]
pub(crate) struct TortureArgs {
    /// Configurations, comma-separated: a name of `--list`, a structure (all its
    /// configurations) or `all`.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    structure: Vec<String>,
    /// First seed (decimal or 0x-hex).
    #[arg(long, value_parser = parse_seed, default_value = "1")]
    seed: u64,
    /// Seeds per configuration: `--seed`, `--seed + 1`, ….
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// Operations per seed [default: 1M]; with `--linearize`, per worker and round
    /// [default: 20K].
    #[arg(long, value_parser = count)]
    ops: Option<u64>,
    /// Jobs (configuration × seed) run at once (not with `--linearize`, whose rounds run
    /// `--workers` + 1 threads each).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds a divergence's minimization may take.
    #[arg(long, default_value_t = 300)]
    shrink_secs: u64,
    /// Seconds between progress lines on stderr (0: none).
    #[arg(long, default_value_t = 60)]
    progress_secs: u64,
    /// List the configurations and exit.
    #[arg(long)]
    list: bool,
    /// Run the linearizability campaign instead.
    #[arg(long)]
    linearize: bool,
    /// `--linearize`: rounds per structure and seed.
    #[arg(long, default_value_t = 10)]
    rounds: u64,
    /// `--linearize`: worker threads per round (a scanner runs beside them).
    #[arg(long, default_value_t = 4)]
    workers: usize,
}

fn parse_seed(s: &str) -> Result<u64, String> {
    orrery::testing::rng::parse_seed(s).ok_or_else(|| format!("bad seed {s:?} (decimal or 0x-hex)"))
}

/// Runs `orrery-bench torture`.
pub(crate) fn main(args: TortureArgs) -> Result<(), String> {
    if args.list {
        for c in configs::all() {
            println!("{:<26} {}", c.name, c.about);
        }
        return Ok(());
    }
    if args.linearize {
        return linearize::main(&args);
    }
    let plan = campaign::Plan {
        configs: configs::select(&args.structure)?,
        seeds: (0..args.seeds.max(1))
            .map(|i| args.seed.wrapping_add(i))
            .collect(),
        ops: args.ops.unwrap_or(1_000_000),
        threads: args.threads,
        budget: Budget {
            tests: usize::MAX,
            time: Duration::from_secs(args.shrink_secs),
        },
        progress_secs: args.progress_secs,
    };
    let command: Vec<String> = std::env::args().collect();
    println!("# orrery-bench torture");
    println!("command: {}", command.join(" "));
    println!(
        "git: {}; {} configurations × {} seeds × {} ops; {} threads",
        env!("ORRERY_BUILD_GIT_REV"),
        plan.configs.len(),
        plan.seeds.len(),
        campaign::group(plan.ops),
        plan.threads
    );
    let start = Instant::now();
    let tallies = campaign::execute(&plan);
    let wall = start.elapsed().as_secs_f64();
    println!();
    print!("{}", campaign::table(&plan, &tallies));
    println!("wall time: {wall:.0} s");
    let divergences: u64 = tallies.iter().map(|t| t.divergences).sum();
    let jobs: usize = tallies.iter().map(|t| t.seeds.len()).sum();
    let planned = plan.configs.len() * plan.seeds.len();
    if jobs < planned {
        return Err(format!(
            "{} of {planned} jobs did not finish",
            planned - jobs
        ));
    }
    if divergences > 0 {
        return Err(format!("{divergences} divergences (reports above)"));
    }
    Ok(())
}
