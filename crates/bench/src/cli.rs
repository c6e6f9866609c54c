//! The command line: `run`, `datasets`, `indexes`, `workloads`, `suites`, `machine`,
//! `report`.
//!
//! Every bad input (unknown name, unsupported pairing, bad number, unreadable file) ends
//! with a one-line `error:` message on stderr and a non-zero exit status: 2 for command-line
//! syntax (clap), 1 for everything else.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::datasets::{self, Spec};
use crate::dist::Dist;
use crate::isolate::{self, GroupId};
use crate::machine::{self, Machine};
use crate::matrix::{Matrix, Plan};
use crate::output::{Record, json::JsonSink, table};
use crate::progress::Progress;
use crate::settings::{EpochPin, Settings, defaults, parse_count};
use crate::workloads::{self, Workload};
use crate::{lab, registry, report, suites};

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
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// Do not re-execute with huge-page malloc (GLIBC_TUNABLES=glibc.malloc.hugetlb=1);
    /// by default every index, peers included, gets THP-backed malloc memory.
    #[arg(long, global = true)]
    no_huge_malloc: bool,
}

#[derive(Subcommand, Debug)]
enum Cmd {
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
struct RunArgs {
    /// Indexes, comma-separated (see `indexes`); `slb:<name>` wraps one in the SLB.
    #[arg(long, value_delimiter = ',')]
    index: Vec<String>,
    /// Datasets, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = defaults::DATASET)]
    dataset: Vec<String>,
    /// Keys to load, comma-separated for a sweep (each count runs the whole matrix).
    #[arg(long, value_parser = count, value_delimiter = ',', default_values_t = [defaults::KEYS])]
    keys: Vec<u64>,
    /// Workloads, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = defaults::WORKLOAD)]
    workload: Vec<String>,
    /// Thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [defaults::THREADS])]
    threads: Vec<usize>,
    /// Distribution: uniform, zipf or zipf:θ, latest or latest:θ [default: each workload's
    /// own: latest for d, uniform otherwise].
    #[arg(long)]
    dist: Option<String>,
    /// Value size in bytes.
    #[arg(long, default_value_t = defaults::VALUE_SIZE)]
    value_size: usize,
    /// Repeats; the median is reported.
    #[arg(long, default_value_t = defaults::REPEAT)]
    repeat: usize,
    /// Operations per thread [default: the smallest key count, at most MAX_OPS (1M)].
    #[arg(long, value_parser = count)]
    ops: Option<u64>,
    /// Warm-up lookups per thread [default: ops/10, at most MAX_WARMUP (1M)].
    #[arg(long, value_parser = count)]
    warmup: Option<u64>,
    /// Time one operation in this many for latency percentiles.
    #[arg(long, default_value_t = defaults::SAMPLE_EVERY)]
    sample_every: usize,
    /// Keys per get_many call (get-many workload).
    #[arg(long, default_value_t = defaults::GET_MANY_BATCH)]
    batch: usize,
    /// Stop each phase after this many seconds.
    #[arg(long)]
    max_secs: Option<f64>,
    /// Threads that load the index the workloads run on (the `load` workload itself uses
    /// each cell's thread count).
    #[arg(long, default_value_t = defaults::LOAD_THREADS)]
    load_threads: usize,
    /// Seed of datasets and operation streams.
    #[arg(long, default_value_t = defaults::SEED)]
    seed: u64,
    /// Switches recorded in every result (also keys of a suite's matrices).
    #[command(flatten)]
    settings: Settings,
    /// Append one JSON object per result to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress bars or status lines.
    #[arg(long, short)]
    quiet: bool,
    /// Run a named suite (see `suites`).
    #[arg(long)]
    suite: Option<String>,
    /// Read suites from this TOML file.
    #[arg(long)]
    suites: Option<PathBuf>,
    /// Skip unsupported index/dataset/workload/thread combinations instead of failing.
    #[arg(long)]
    skip_unsupported: bool,
    /// Machine measurement cache file [default: ~/.cache/orrery-bench/machine.json].
    #[arg(long)]
    machine_file: Option<PathBuf>,
    /// Do not measure the machine (DRAM round trips are then not reported).
    #[arg(long)]
    no_machine: bool,
    /// Measure every index in this one process, one after another, instead of each group
    /// of cells sharing a loaded index (one index, one dataset, one key count) in a fresh
    /// child process (the default). Quicker to start, but indexes measured later inherit
    /// the heap, huge-page and page-cache state the earlier ones left, and measure low.
    #[arg(long)]
    in_process: bool,
    /// (Internal) run only this group of the plans, as a child of an isolated run.
    #[arg(long = "child-group", hide = true)]
    child_group: Option<String>,
    /// (Internal) the parent's machine description, JSON.
    #[arg(long = "child-machine", hide = true)]
    child_machine: Option<String>,
    /// The ids of the options given on the command line (filled in by [`parse`]): a
    /// suite's values are overridden only by these.
    #[arg(skip)]
    given: Vec<String>,
}

impl RunArgs {
    /// Whether option `id` (its field name) was given on the command line.
    fn given(&self, id: &str) -> bool {
        self.given.iter().any(|g| g == id)
    }
}

#[derive(Args, Debug)]
struct DatasetArgs {
    /// Datasets to describe [default: all listed].
    #[arg(long, value_delimiter = ',')]
    dataset: Vec<String>,
    /// Keys to generate for the statistics.
    #[arg(long, value_parser = count, default_value = "100K")]
    keys: u64,
    /// Seed.
    #[arg(long, default_value_t = defaults::SEED)]
    seed: u64,
    /// Print this many example keys of each dataset.
    #[arg(long, default_value_t = 0)]
    examples: usize,
    /// Also write the generated keys of the (single) dataset to this file, one per line, in
    /// generation order: the `file:PATH` format, readable by programs outside the bench
    /// (e.g. the Wormhole `wormhole_az` example). Fails for keys containing a newline.
    #[arg(long)]
    write: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct MachineArgs {
    /// Cache file [default: ~/.cache/orrery-bench/machine.json].
    #[arg(long)]
    machine_file: Option<PathBuf>,
    /// Print the cached measurement instead of measuring again (measures if none).
    #[arg(long)]
    cached: bool,
    /// Test array size in MiB [default: 1024].
    #[arg(long, default_value_t = 1024)]
    mib: usize,
    /// Dependent loads per test [default: 4M].
    #[arg(long, value_parser = count, default_value = "4M")]
    loads: u64,
    /// Instead: latency against working-set size, MiB list [default: 64,128,256,512,1G,2G,4G]
    /// (4 KiB, transparent huge and, if reserved, 1 GiB pages; not cached).
    #[arg(long, num_args = 0..=1, default_missing_value = "64,128,256,512,1G,2G,4G")]
    sweep: Option<String>,
    /// Instead: the cost of a second load near the first, over an array of this many MiB
    /// (a power of two; not cached).
    #[arg(long)]
    locality: Option<usize>,
    /// No progress bars.
    #[arg(long, short)]
    quiet: bool,
}

/// Runs the command line `args` (program name first); returns the exit status.
pub(crate) fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let args: Vec<OsString> = args.into_iter().collect();
    let cli = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    match dispatch(cli.cmd, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Parses the command line `args` (program name first), noting which `run` options were
/// given rather than defaulted.
fn parse(args: &[OsString]) -> Result<Cli, clap::Error> {
    let matches = Cli::command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    if let (Cmd::Run(a), Some(m)) = (&mut cli.cmd, matches.subcommand_matches("run")) {
        a.given = m
            .ids()
            .filter(|id| m.value_source(id.as_str()) == Some(ValueSource::CommandLine))
            .map(|id| id.to_string())
            .collect();
    }
    Ok(cli)
}

/// Runs `cmd`, parsed from `args` (program name first; isolated runs hand the same
/// arguments to their child processes).
fn dispatch(cmd: Cmd, args: &[OsString]) -> Result<(), String> {
    match cmd {
        Cmd::Run(a) => run(*a, args.get(1..).unwrap_or_default()),
        Cmd::Datasets(a) => list_datasets(a),
        Cmd::Indexes => {
            println!("{:<18} {:<66} capabilities", "index", "what");
            for e in registry::entries() {
                println!("{:<18} {:<66} {}", e.name, e.about, e.caps.describe());
            }
            println!("{:<18} the SLB in front of any index", "slb:<index>");
            Ok(())
        }
        Cmd::Workloads => {
            for n in workloads::NAMES {
                let w = Workload::parse(n)?;
                println!("{n:<11} {}", w.about());
            }
            println!(
                "\ndistributions: uniform (default), zipf[:θ] (YCSB scrambled zipfian, θ=0.99), latest[:θ]"
            );
            Ok(())
        }
        Cmd::Suites { suites } => {
            for s in suites::load(suites.as_deref())? {
                println!("{:<10} {}", s.name, s.about);
            }
            Ok(())
        }
        Cmd::Machine(a) => {
            let path = a.machine_file.unwrap_or_else(machine::default_cache_path);
            let progress = Progress::new(a.quiet);
            if let Some(sizes) = &a.sweep {
                let pts =
                    machine::sweep(&machine::parse_sizes(sizes)?, a.loads as usize, &progress)?;
                print!("{}", machine::describe_sweep(&pts));
                return Ok(());
            }
            if let Some(mib) = a.locality {
                let pts = machine::locality(mib, a.loads as usize, &progress)?;
                print!("{}", machine::describe_locality(mib, &pts));
                return Ok(());
            }
            let m = if a.cached {
                machine::get(&path, &progress)?
            } else {
                let m = machine::measure(a.mib, a.loads as usize, &progress)?;
                machine::save(&m, &path)?;
                m
            };
            println!("{}", m.describe());
            println!("(cached in {})", path.display());
            Ok(())
        }
        Cmd::Report(a) => report::run(&a),
        Cmd::Lab { name, args } => lab::main(name.as_deref(), &args),
    }
}

fn list_datasets(a: DatasetArgs) -> Result<(), String> {
    let names: Vec<String> = if a.dataset.is_empty() {
        datasets::LISTED.iter().map(|s| s.to_string()).collect()
    } else {
        a.dataset
    };
    let n = a.keys;
    if n == 0 || n > 100_000_000 {
        return Err("--keys for datasets must be between 1 and 100M".into());
    }
    if a.write.is_some() && names.len() != 1 {
        return Err("--write takes exactly one --dataset".into());
    }
    let progress = Progress::new(true);
    println!(
        "{:<12} {:>10} {:>8} {:>9}  about (statistics over {n} keys)",
        "dataset", "keys", "avg len", "avg lcp"
    );
    for name in names {
        let spec = Spec::parse(&name)?;
        let set = spec.generate(n as usize, n as usize, a.seed, &progress)?;
        let s = datasets::stats(&set);
        println!(
            "{:<12} {:>10} {:>8.1} {:>9.1}  {}",
            name,
            s.keys,
            s.avg_len,
            s.avg_lcp,
            spec.about()
        );
        for i in 0..a.examples.min(set.len()) {
            println!("    {}", String::from_utf8_lossy(set.get(i)).escape_debug());
        }
        if let Some(path) = &a.write {
            write_keys(&set, path)?;
        }
    }
    println!(
        "\nalso: rand-N, kshort-L, klong-L for any length; file:PATH (one key per line); \
         sorted:NAME (NAME's loaded keys in ascending order)"
    );
    Ok(())
}

/// Writes `set` to `path`, one key per line (the `file:PATH` format).
fn write_keys(set: &datasets::KeySet, path: &std::path::Path) -> Result<(), String> {
    use std::io::Write;
    let err = |e: std::io::Error| format!("cannot write keys to {}: {e}", path.display());
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(err)?);
    for i in 0..set.len() {
        let k = set.get(i);
        if k.contains(&b'\n') {
            return Err(format!(
                "key {i} contains a newline: it cannot be written one per line to {}",
                path.display()
            ));
        }
        out.write_all(k).map_err(err)?;
        out.write_all(b"\n").map_err(err)?;
    }
    out.flush().map_err(err)
}

/// `run`; `args`: its command line without the program name.
fn run(a: RunArgs, args: &[OsString]) -> Result<(), String> {
    let child = a.child_group.as_deref().map(GroupId::parse).transpose()?;
    // A child's progress is set up in `run_child`; the suite line is the parent's to print.
    let progress = Progress::new(a.quiet || child.is_some());
    let (matrices, suite_name) = match &a.suite {
        Some(name) => {
            let s = suite_matrices(&a, name)?;
            progress.note(&format!("suite {}: {}", s.name, s.about));
            (s.matrices, Some(s.name))
        }
        None => (vec![command_line_matrix(&a)?], None),
    };
    let plans = matrices
        .into_iter()
        .map(Plan::new)
        .collect::<Result<Vec<_>, _>>()?;
    match child {
        Some(id) => run_child(&a, &plans, id, suite_name.as_deref()),
        None => run_parent(&a, &plans, suite_name.as_deref(), args, &progress),
    }
}

/// The matrices of suite `name`, with the options given on the command line applied.
fn suite_matrices(a: &RunArgs, name: &str) -> Result<suites::Suite, String> {
    if ["index", "dataset", "workload", "threads", "dist"]
        .iter()
        .any(|id| a.given(id))
    {
        return Err(
            "--suite fixes indexes, datasets, workloads, threads and distribution; \
             drop those options (keys, ops, repeat, value size, seed and the settings may be \
             overridden)"
                .into(),
        );
    }
    let mut s = suites::find(a.suites.as_deref(), name)?;
    for m in &mut s.matrices {
        override_matrix(a, m);
    }
    Ok(s)
}

/// Overrides a suite matrix's values by the options given on the command line.
fn override_matrix(a: &RunArgs, m: &mut Matrix) {
    if a.given("keys") {
        m.keys = a.keys.clone();
    }
    if let Some(o) = a.ops {
        m.ops = o;
    } else if a.given("keys") {
        m.ops = m.ops.min(m.keys.iter().copied().min().unwrap_or(1).max(1));
    }
    if a.given("value_size") {
        m.value_size = a.value_size;
    }
    if a.given("repeat") {
        m.repeat = a.repeat;
    }
    if a.given("load_threads") {
        m.load_threads = a.load_threads;
    }
    if a.given("seed") {
        m.seed = a.seed;
    }
    if a.warmup.is_some() {
        m.warmup = a.warmup;
    }
    if a.given("sample_every") {
        m.sample_every = a.sample_every;
    }
    if a.given("batch") {
        m.get_many_batch = a.batch;
    }
    if a.max_secs.is_some() {
        m.max_secs = a.max_secs;
    }
    m.settings.overlay(&a.settings, &|id| a.given(id));
}

/// The one matrix of a run without `--suite`.
fn command_line_matrix(a: &RunArgs) -> Result<Matrix, String> {
    if a.index.is_empty() {
        return Err(
            "name at least one index with --index (or a suite with --suite); \
                    see `orrery-bench indexes`"
                .into(),
        );
    }
    let smallest = a.keys.iter().copied().min().unwrap_or(1);
    Ok(Matrix {
        indexes: a.index.clone(),
        datasets: a.dataset.clone(),
        keys: a.keys.clone(),
        workloads: a
            .workload
            .iter()
            .map(|w| Workload::parse(w))
            .collect::<Result<_, _>>()?,
        threads: a.threads.clone(),
        dist: a.dist.as_deref().map(Dist::parse).transpose()?,
        value_size: a.value_size,
        repeat: a.repeat,
        ops: a.ops.unwrap_or(defaults::ops(smallest)),
        warmup: a.warmup,
        sample_every: a.sample_every,
        get_many_batch: a.batch,
        max_secs: a.max_secs,
        seed: a.seed,
        skip_unsupported: a.skip_unsupported,
        load_threads: a.load_threads,
        settings: a.settings,
    })
}

/// The parent of a run (isolated or `--in-process`): prints the header, measures every
/// plan, prints and records each result.
fn run_parent(
    a: &RunArgs,
    plans: &[Plan],
    suite: Option<&str>,
    args: &[OsString],
    progress: &Progress,
) -> Result<(), String> {
    if a.in_process {
        check_in_process_pin(plans)?;
    }
    let sink = a.json.as_deref().map(JsonSink::new).transpose()?;
    let machine = if a.no_machine {
        None
    } else {
        let path = a
            .machine_file
            .clone()
            .unwrap_or_else(machine::default_cache_path);
        Some(machine::get(&path, progress)?)
    };
    print_header(a, plans, machine.as_ref());
    let mut out = std::io::stdout();
    let mut latency = String::new();
    let mut stats_shown = std::collections::HashSet::new();
    let mut emit = |mut r: Record| {
        r.isolated = Some(!a.in_process);
        println!("{}", table::row(&r));
        if let Some(l) = table::split_line(&r) {
            println!("{l}");
        }
        // With every `load` cell, and with the first other cell of an index on a dataset.
        let load_threads = (r.workload == "load").then_some(r.threads);
        if let Some(l) = table::stats_line(&r)
            && stats_shown.insert((r.index.clone(), r.dataset.clone(), r.keys, load_threads))
        {
            println!("{l}");
        }
        let _ = out.flush();
        latency = r.latency.clone();
        if let Some(s) = &sink {
            s.write(&r)?;
        }
        Ok(())
    };
    for (i, p) in plans.iter().enumerate() {
        if a.in_process {
            p.run(machine.as_ref(), suite, progress, &mut emit)?;
        } else {
            for g in p.groups() {
                let id = GroupId::of(i, &g);
                let pin = p.settings().epoch_pin;
                isolate::run_group(args, id, &g, pin, machine.as_ref(), a.quiet, &mut emit)?;
            }
        }
    }
    println!(
        "\n{}",
        table::legend(&latency, machine.as_ref().map(|m| m.lat_4k_ns))
    );
    if let Some(path) = &a.json {
        println!("results appended to {}", path.display());
    }
    Ok(())
}

/// An `--in-process` run measures in this process, whose epoch pin barrier orrery-core
/// chose from its environment: it must be the one the plans ask for.
fn check_in_process_pin(plans: &[Plan]) -> Result<(), String> {
    let have = EpochPin::of_process();
    match plans.iter().find(|p| p.settings().epoch_pin != have) {
        Some(p) => Err(format!(
            "--epoch-pin {} cannot be honoured by --in-process: this process uses the {have} \
             pin (orrery-core reads {}=1 from the environment once per process); run isolated \
             (drop --in-process) or set the environment to match",
            p.settings().epoch_pin,
            orrery::sync::epoch::ASYMMETRIC_ENV
        )),
        None => Ok(()),
    }
}

/// Prints the machine, malloc, process and settings lines, the skipped combinations and
/// the table header.
fn print_header(a: &RunArgs, plans: &[Plan], machine: Option<&Machine>) {
    if let Some(m) = machine {
        println!("{}", m.describe());
    }
    println!("malloc:  {}", machine::malloc::describe());
    println!(
        "process: {}",
        if a.in_process {
            "every index measured in this one process, one after another (--in-process)"
        } else {
            "each index group (index, dataset, key count) measured in a fresh child process"
        }
    );
    let mut shown: Vec<Settings> = Vec::new();
    for p in plans {
        if !shown.contains(p.settings()) {
            println!("settings: {}", p.settings());
            shown.push(*p.settings());
        }
    }
    for p in plans {
        for s in p.skipped() {
            println!("skipped: {s}");
        }
    }
    println!("{}", table::header());
}

/// A child of an isolated run: measures group `id` of `plans` and sends its results to
/// the parent (`crate::isolate`); prints nothing else on stdout.
fn run_child(a: &RunArgs, plans: &[Plan], id: GroupId, suite: Option<&str>) -> Result<(), String> {
    let missing = || {
        format!(
            "{} {}: no such group in this plan",
            isolate::CHILD_FLAG,
            id.to_arg()
        )
    };
    let plan = plans.get(id.plan).ok_or_else(missing)?;
    let g = plan
        .group(id.keys, id.dataset, id.index)
        .ok_or_else(missing)?;
    let machine: Option<Machine> = a
        .child_machine
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| format!("bad {}: {e}", isolate::MACHINE_FLAG))?;
    let progress = match std::env::var(isolate::TTY_ENV)
        .ok()
        .and_then(|w| w.parse().ok())
    {
        Some(width) if !a.quiet => Progress::for_parent(width),
        _ => Progress::new(a.quiet),
    };
    isolate::fail_hook(&g.index_name);
    let (asked, have) = (plan.settings().epoch_pin, EpochPin::of_process());
    if asked != have {
        // The kernel refused membarrier (or ORRERY_EPOCH_FALLBACK forces the fence): the
        // records name the pin really used.
        eprintln!(
            "warning: --epoch-pin {asked} unavailable here: this process uses the {have} pin"
        );
    }
    plan.run_group(&g, machine.as_ref(), suite, &progress, &mut |mut r| {
        r.isolated = Some(true);
        isolate::send(&r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Switch;

    fn code(args: &[&str]) -> ExitCode {
        let mut v = vec!["orrery-bench".to_string()];
        v.extend(args.iter().map(|s| s.to_string()));
        main(v.into_iter().map(Into::into))
    }

    /// Runs `report` on `json` into `out/name` and returns its `tables.md`.
    fn report_tables(json: &std::path::Path, out: &std::path::Path, name: &str) -> String {
        let status = code(&[
            "report",
            "--input",
            json.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--name",
            name,
        ]);
        assert_eq!(status, ExitCode::SUCCESS);
        std::fs::read_to_string(out.join(name).join("tables.md")).unwrap()
    }

    /// Runs `run` in this process (`--quiet --no-machine --in-process`) with `args`,
    /// writing JSON into a fresh temporary directory named after `tag`; returns the
    /// directory (the caller removes it) and the records read back.
    fn run_json(tag: &str, args: &[&str]) -> (std::path::PathBuf, Vec<Record>) {
        let dir = std::env::temp_dir().join(format!("orrery-bench-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let json = dir.join("r.jsonl");
        let mut v = vec!["run"];
        v.extend(args);
        // The test binary cannot be re-executed as orrery-bench (tests/isolate.rs runs
        // isolated through the real binary).
        v.extend(["--quiet", "--no-machine", "--in-process", "--json"]);
        v.push(json.to_str().unwrap());
        assert_eq!(code(&v), ExitCode::SUCCESS);
        let recs = crate::output::json::read(&json).unwrap();
        (dir, recs)
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("10M"), Ok(10_000_000));
        assert_eq!(parse_count("100k"), Ok(100_000));
        assert_eq!(parse_count("1_000"), Ok(1000));
        assert_eq!(parse_count("2G"), Ok(2_000_000_000));
        assert!(parse_count("10X").unwrap_err().contains("bad number"));
        assert!(parse_count("").is_err());
        assert!(parse_count("99999999999999999999G").is_err());
    }

    fn parse_err(args: &[&str]) -> String {
        let mut v = vec!["orrery-bench"];
        v.extend(args);
        let v: Vec<OsString> = v.into_iter().map(Into::into).collect();
        let cli = parse(&v).map_err(|e| e.to_string());
        match cli {
            Err(e) => e,
            Ok(c) => dispatch(c.cmd, &[]).unwrap_err(),
        }
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        assert!(
            parse_err(&["run", "--index", "mercury", "--mercury-load-percent", "0"])
                .contains("mercury-load-percent")
        );
        assert!(
            parse_err(&["run", "--index", "wormhole", "--wormhole-prefault", "maybe"])
                .contains("maybe")
        );
        let q = ["--quiet", "--no-machine"];
        let with = |extra: &[&'static str]| {
            let mut v = vec!["run"];
            v.extend(extra);
            v.extend(q);
            parse_err(&v)
        };
        assert!(with(&["--index", "nope"]).contains("unknown index"));
        assert!(with(&["--index", "btreemap", "--dataset", "zzz"]).contains("unknown dataset"));
        assert!(with(&["--index", "btreemap", "--workload", "q"]).contains("unknown workload"));
        assert!(with(&["--index", "btreemap", "--keys", "1Q"]).contains("bad number"));
        assert!(with(&["--index", "btreemap", "--threads", "x"]).contains("invalid"));
        assert!(with(&["--index", "btreemap", "--threads", "0"]).contains("between 1 and 1024"));
        assert!(with(&["--index", "btreemap", "--dist", "zipf:2"]).contains("between 0 and 1"));
        assert!(with(&["--index", "btreemap", "--load-threads", "0"]).contains("--load-threads"));
        assert!(with(&["--index", "congee", "--dataset", "az"]).contains("8-byte keys"));
        assert!(with(&["--index", "dashmap", "--workload", "e"]).contains("point index"));
        assert!(with(&["--index", "btreemap-st", "--threads", "2"]).contains("single-threaded"));
        assert!(with(&["--index", "slb:nope"]).contains("unknown index"));
        assert!(with(&["--suite", "nope"]).contains("unknown suite"));
        assert!(with(&["--suite", "smoke", "--index", "btreemap"]).contains("--suite fixes"));
        assert!(with(&[]).contains("at least one index"));
        assert!(parse_err(&["frobnicate"]).contains("unrecognized subcommand"));
        assert_ne!(
            code(&["run", "--index", "nope", "--quiet", "--no-machine"]),
            ExitCode::SUCCESS
        );
        assert_ne!(code(&["run", "--keys"]), ExitCode::SUCCESS);
    }

    /// A key-count sweep through the command line: one result per count, Mercury's loads
    /// carry the expansion split, and the report draws the sweep and the split.
    #[test]
    fn sweep_and_expansion_split() {
        let (dir, recs) = run_json(
            "sweep",
            &[
                "--index",
                "mercury,dashmap",
                "--keys",
                "20K,40K,60K",
                "--ops",
                "5000",
                "--workload",
                "load,put-50",
            ],
        );
        let json = dir.join("r.jsonl");
        let mut keys: Vec<u64> = recs.iter().map(|r| r.keys).collect();
        keys.dedup();
        assert_eq!(keys, vec![20_000, 40_000, 60_000]);
        assert_eq!(recs.len(), 3 * 2 * 2);
        for r in &recs {
            assert!(r.malloc.is_some());
            // Only Mercury has a probe; its loads from empty cross several expansions.
            assert_eq!(r.split.is_some(), r.index == "mercury", "{r:?}");
            if r.index == "mercury" && r.workload == "load" {
                let s = r.split.as_ref().unwrap();
                assert!(s.expanding_share > 0.0, "{s:?}");
                assert_eq!(s.series.len(), 100);
            }
        }
        let out = dir.join("report");
        let md = report_tables(&json, &out, "sweep");
        assert!(md.contains("against key count"), "{md}");
        assert!(md.contains("Throughput while expanding"), "{md}");
        assert!(md.contains(&format!("- `{}`", Settings::DEFAULT)), "{md}");
        assert!(out.join("sweep").join("rand-8-put-50-sweep.png").exists());
        // One bar plot and one memory plot per key count: none overwrites another.
        for k in ["20K", "40K", "60K"] {
            let p = out.join("sweep");
            assert!(p.join(format!("rand-8-put-50-{k}-v8.png")).exists(), "{k}");
            assert!(p.join(format!("rand-8-memory-{k}-v8.png")).exists(), "{k}");
            assert!(md.contains(&format!("rand-8-put-50-{k}-v8.png")), "{md}");
        }
        assert!(!out.join("sweep").join("rand-8-put-50.png").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--load-threads` sets the threads that load the index the cells run on; the `load`
    /// workload keeps its own cell's thread count.
    #[test]
    fn load_threads_option() {
        let (dir, recs) = run_json(
            "lt",
            &[
                "--index",
                "wormhole,btreemap-st",
                "--keys",
                "4000",
                "--ops",
                "1000",
                "--workload",
                "load,c",
                "--threads",
                "1,2",
                "--load-threads",
                "2",
                "--skip-unsupported",
            ],
        );
        assert_eq!(recs.len(), 4 + 2, "{recs:?}");
        for r in &recs {
            let expect = match (r.index.as_str(), r.workload.as_str()) {
                (_, "load") => r.threads,
                // Not concurrent: always loaded by the one thread that uses it.
                ("btreemap-st", _) => 1,
                _ => 2,
            };
            assert_eq!(r.load_threads, expect, "{r:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every result-changing switch given on the command line reaches the indexes and is
    /// recorded in every JSON record (issue 20: environment variables steered runs without
    /// a trace in their output).
    #[test]
    fn settings_options_are_recorded() {
        let (dir, recs) = run_json(
            "settings",
            &[
                "--index",
                "wormhole,mercury",
                "--keys",
                "3000",
                "--ops",
                "1000",
                "--workload",
                "load,c",
                "--wormhole-prefault",
                "off",
                "--wormhole-item-prefetch",
                "off",
                "--mercury-load-percent",
                "75",
                "--mercury-prefault",
                "off",
                "--warmup",
                "7",
                "--sample-every",
                "5",
                "--batch",
                "3",
                "--max-secs",
                "30",
            ],
        );
        assert_eq!(recs.len(), 4);
        let expect = Settings {
            wormhole_prefault: Switch::Off,
            wormhole_item_prefetch: Switch::Off,
            mercury_load_percent: 75,
            mercury_prefault: Switch::Off,
            epoch_pin: EpochPin::Fenced,
            ..Settings::DEFAULT
        };
        for r in &recs {
            let s = r
                .settings
                .as_ref()
                .expect("every record carries its settings");
            assert_eq!(s.switches, expect, "{r:?}");
            assert_eq!(
                (s.ops_per_thread, s.warmup, s.sample_every, s.get_many_batch),
                (1000, 7, 5, 3)
            );
            assert_eq!(s.max_secs, Some(30.0));
        }
        // The JSON spells them as options and suite keys do.
        let line = std::fs::read_to_string(dir.join("r.jsonl")).unwrap();
        for field in [
            r#""wormhole_prefault":"off""#,
            r#""wormhole_item_prefetch":"off""#,
            r#""mercury_load_percent":75"#,
            r#""mercury_prefault":"off""#,
            r#""epoch_pin":"fenced""#,
        ] {
            assert!(line.contains(field), "{field} in {line}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A suite's settings keep their values unless the command line names the option.
    #[test]
    fn suite_settings_yield_only_to_given_options() {
        let dir = std::env::temp_dir().join(format!("orrery-bench-sset-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.toml");
        std::fs::write(
            &file,
            "[suites.x]\nabout = \"a\"\n[[suites.x.matrix]]\nindex=[\"mercury\"]\n\
             dataset=[\"rand-8\"]\nkeys=1000\nworkload=[\"c\"]\nthreads=[1]\n\
             mercury_prefault=\"off\"\nmercury_load_percent=60\n",
        )
        .unwrap();
        let suite = |extra: &[&str]| {
            let mut v = vec!["orrery-bench", "run", "--suite", "x", "--suites"];
            v.push(file.to_str().unwrap());
            v.extend(extra);
            let v: Vec<OsString> = v.into_iter().map(Into::into).collect();
            let Cmd::Run(a) = parse(&v).unwrap().cmd else {
                panic!("not a run")
            };
            suite_matrices(&a, "x").unwrap().matrices[0].settings
        };
        let kept = suite(&[]);
        assert_eq!(
            (kept.mercury_prefault, kept.mercury_load_percent),
            (Switch::Off, 60)
        );
        let over = suite(&["--mercury-load-percent", "90", "--wormhole-prefault", "off"]);
        assert_eq!(
            over,
            Settings {
                mercury_prefault: Switch::Off,
                mercury_load_percent: 90,
                wormhole_prefault: Switch::Off,
                ..Settings::DEFAULT
            }
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An `--in-process` run cannot change this process's epoch pin barrier: asking for
    /// the other one is an error, not a record that names a barrier the run did not use.
    #[test]
    fn in_process_epoch_pin_must_match_the_process() {
        let other = match EpochPin::of_process() {
            EpochPin::Fenced => "asymmetric",
            EpochPin::Asymmetric => "fenced",
        };
        let e = parse_err(&[
            "run",
            "--index",
            "btreemap",
            "--keys",
            "1000",
            "--quiet",
            "--no-machine",
            "--in-process",
            "--epoch-pin",
            other,
        ]);
        assert!(e.contains("--in-process"), "{e}");
    }

    /// A child's group must exist in the plans it rebuilds from the parent's arguments.
    #[test]
    fn child_group_must_exist() {
        let base = [
            "run",
            "--index",
            "btreemap",
            "--keys",
            "1000",
            "--quiet",
            "--no-machine",
        ];
        let with = |g: &'static str| {
            let mut v = base.to_vec();
            v.extend(["--child-group", g]);
            parse_err(&v)
        };
        assert!(with("0:1000:0:1").contains("no such group"));
        assert!(with("1:1000:0:0").contains("no such group"));
        assert!(with("0:2000:0:0").contains("no such group"));
        assert!(with("0:1000").contains("bad --child-group"));
        let mut v = base.to_vec();
        v.extend(["--child-group", "0:1000:0:0", "--child-machine", "{"]);
        assert!(parse_err(&v).contains("bad --child-machine"));
    }

    /// `datasets --write` writes the generated keys one per line, which `file:PATH` reads
    /// back as the same set; more than one dataset is refused.
    #[test]
    fn datasets_write_round_trips_through_file() {
        let dir = std::env::temp_dir().join(format!("orrery-bench-write-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("az.txt");
        let p = path.to_str().unwrap();
        let args = [
            "datasets",
            "--dataset",
            "az",
            "--keys",
            "2000",
            "--write",
            p,
        ];
        assert_eq!(code(&args), ExitCode::SUCCESS);
        let written: Vec<Vec<u8>> = std::fs::read(&path)
            .unwrap()
            .split(|&c| c == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        let spec = datasets::Spec::parse("az").unwrap();
        let set = spec.generate(2000, 2000, 42, &Progress::new(true)).unwrap();
        assert_eq!(written.len(), set.len());
        for (i, k) in written.iter().enumerate() {
            assert_eq!(&k[..], set.get(i), "key {i}");
        }
        let from_file = datasets::Spec::parse(&format!("file:{p}"))
            .unwrap()
            .generate(2000, 2000, 42, &Progress::new(true))
            .unwrap();
        assert_eq!(from_file.len(), set.len());
        let two = [
            "datasets",
            "--dataset",
            "az,url",
            "--keys",
            "100",
            "--write",
            p,
        ];
        assert_ne!(code(&two), ExitCode::SUCCESS);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A tiny end-to-end run through the command line: every peer, a load and a few
    /// workloads, JSON written and read back.
    #[test]
    fn tiny_end_to_end_run() {
        let dir = std::env::temp_dir().join(format!("orrery-bench-e2e-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let json = dir.join("r.jsonl");
        let idx = registry::entries()
            .iter()
            .map(|e| e.name)
            .collect::<Vec<_>>()
            .join(",");
        let status = code(&[
            "run",
            "--index",
            &idx,
            "--dataset",
            "rand-8,url",
            "--keys",
            "3000",
            "--ops",
            "2000",
            "--workload",
            "load,c,e,d,lookup-neg,get-many,delete,f",
            "--threads",
            "1,2",
            "--quiet",
            "--no-machine",
            // The test binary cannot be re-executed as orrery-bench (tests/isolate.rs
            // runs isolated through the real binary).
            "--in-process",
            "--skip-unsupported",
            "--repeat",
            "2",
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(status, ExitCode::SUCCESS);
        let recs = crate::output::json::read(&json).unwrap();
        assert!(
            recs.iter()
                .any(|r| r.index == "congee" && r.dataset == "rand-8")
        );
        assert!(
            !recs
                .iter()
                .any(|r| r.index == "congee" && r.dataset == "url")
        );
        assert!(
            !recs
                .iter()
                .any(|r| r.index == "dashmap" && r.workload == "e")
        );
        assert!(
            !recs
                .iter()
                .any(|r| r.index == "btreemap-st" && r.threads == 2)
        );
        for r in &recs {
            assert!(r.mops > 0.0, "{r:?}");
            assert_eq!(r.repeats, 2);
            // Only the `load` workload loads with its cell's thread count; the index every
            // other cell runs on is loaded by one thread (the default `--load-threads`).
            let expect = if r.workload == "load" { r.threads } else { 1 };
            assert_eq!(r.load_threads, expect, "{r:?}");
            // Other tests allocate and free concurrently, so only sanity is checked here.
            assert!(r.bytes_per_key.is_finite());
            assert!(r.p50_ns.is_some());
            // A run without settings options records the defaults.
            let s = r
                .settings
                .as_ref()
                .expect("every record carries its settings");
            assert_eq!(s.switches, Settings::DEFAULT, "{r:?}");
            assert_eq!(s.ops_per_thread, 2000);
            assert_eq!(s.sample_every, defaults::SAMPLE_EVERY);
            assert_eq!(s.get_many_batch, defaults::GET_MANY_BATCH);
            assert_eq!(s.warmup, defaults::warmup(2000));
        }
        let out = dir.join("report");
        let md = report_tables(&json, &out, "e2e");
        assert!(md.contains("| skiplist |"), "{md}");
        assert!(out.join("e2e").join("rand-8-c.svg").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
