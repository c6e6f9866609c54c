//! The `run` command: a matrix from the command line or a suite (with the given options
//! applied over the suite's), then measured either in this process (`--in-process`) or
//! group by group in child processes (`crate::isolate`), as the parent; or, with
//! `--child-group`, as such a child.

use std::ffi::OsString;
use std::io::Write;

use super::args::RunArgs;
use crate::dist::Dist;
use crate::isolate::{self, GroupId};
use crate::machine::{self, Machine};
use crate::matrix::{Matrix, Plan};
use crate::output::{Record, json::JsonSink, table};
use crate::progress::Progress;
use crate::settings::{EpochPin, Settings, defaults};
use crate::suites;
use crate::workloads::Workload;

pub(super) fn run(a: RunArgs, args: &[OsString]) -> Result<(), String> {
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
pub(super) fn suite_matrices(a: &RunArgs, name: &str) -> Result<suites::Suite, String> {
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
    m.max_rss = a.max_rss_bytes();
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
        max_rss: a.max_rss_bytes(),
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
        if let Some(l) = table::ceiling_line(&r) {
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
