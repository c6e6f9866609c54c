//! `orrery-bench torture --linearize`: the linearizability campaign.
//!
//! For every selected configuration and seed, `--rounds` rounds of
//! [`orrery::testing::linearize::drive`] on a fresh structure: `--workers` threads of
//! random point operations on five hot keys (the empty key, keys that are prefixes of each
//! other), `--ops` operations each, while each also inserts and then removes `--ops / 2`
//! filler keys (so the structure grows and shrinks under them), plus a scanner on ordered
//! structures. Each round's history is checked key by key (Wing–Gong–Lowe search) and its
//! scans against it; a violation prints its minimal window, and the command exits
//! non-zero. Configurations run one after another (each round already runs `--workers`
//! + 1 threads).

use std::time::Instant;

use orrery::testing::linearize::{Budget, Workload, check_round, drive};
use orrery::testing::rng::derive;

use super::TortureArgs;
use super::campaign::group;
use super::configs;

/// One configuration's totals.
#[derive(Default)]
struct Totals {
    rounds: u64,
    ops: u64,
    scans: u64,
    violations: u64,
    unknown: u64,
    secs: f64,
}

/// Runs the linearizability campaign.
pub(super) fn main(args: &TortureArgs) -> Result<(), String> {
    let configs = configs::select(&args.structure)?;
    let ops = args.ops.unwrap_or(20_000) as usize;
    let seeds: Vec<u64> = (0..args.seeds.max(1))
        .map(|i| args.seed.wrapping_add(i))
        .collect();
    let command: Vec<String> = std::env::args().collect();
    println!("# orrery-bench torture --linearize");
    println!("command: {}", command.join(" "));
    println!(
        "git: {}; {} configurations × {} seeds × {} rounds; {} workers × {} ops (+ {} fillers \
         inserted and removed each) and a scanner per round",
        env!("ORRERY_BUILD_GIT_REV"),
        configs.len(),
        seeds.len(),
        args.rounds,
        args.workers,
        group(ops as u64),
        group(ops as u64 / 2)
    );
    let start = Instant::now();
    let mut rows = Vec::new();
    for c in &configs {
        let ordered = (c.make)().ordered().is_some();
        let mut t = Totals::default();
        for &seed in &seeds {
            for r in 0..args.rounds {
                let w = Workload {
                    workers: args.workers,
                    ops,
                    hot_keys: 5,
                    fillers: ops / 2,
                    scanner: true,
                    seed: derive(seed, r),
                };
                let began = Instant::now();
                let subject = (c.make)();
                let round = drive(&*subject, &w);
                drop(subject);
                let verdict = check_round(&round, Budget::default());
                t.secs += began.elapsed().as_secs_f64();
                t.rounds += 1;
                t.ops += verdict.report.ops as u64;
                t.scans += verdict.scans as u64;
                t.unknown += verdict.report.unknown.len() as u64;
                if verdict.violated() {
                    t.violations += 1;
                    println!(
                        "== {} seed {seed:#x} round {r} (workload seed {:#x}): VIOLATION\n{verdict}",
                        c.name, w.seed
                    );
                }
            }
        }
        eprintln!(
            "linearize: {}: {} rounds, {} ops, {} scans, {} violations, {} unknown keys in {:.0} s",
            c.name,
            t.rounds,
            group(t.ops),
            group(t.scans),
            t.violations,
            t.unknown,
            t.secs
        );
        rows.push((c.name, ordered, t));
    }
    println!();
    println!(
        "| configuration | seeds | rounds | threads | point ops checked | scans checked | violations | unknown keys | time (s) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let seeds_text = match (seeds.first(), seeds.last()) {
        (Some(a), Some(b)) if a != b => format!("{a:#x}–{b:#x}"),
        (Some(a), _) => format!("{a:#x}"),
        _ => "—".into(),
    };
    let (mut violations, mut unknown) = (0, 0);
    for (name, ordered, t) in &rows {
        println!(
            "| {name} | {seeds_text} | {} | {}{} | {} | {} | {} | {} | {:.0} |",
            t.rounds,
            args.workers,
            if *ordered { " + scanner" } else { "" },
            group(t.ops),
            group(t.scans),
            t.violations,
            t.unknown,
            t.secs
        );
        violations += t.violations;
        unknown += t.unknown;
    }
    println!("wall time: {:.0} s", start.elapsed().as_secs_f64());
    if violations > 0 {
        return Err(format!(
            "{violations} rounds with violations (reports above)"
        ));
    }
    if unknown > 0 {
        return Err(format!(
            "{unknown} keys left unknown (search budget exhausted)"
        ));
    }
    Ok(())
}
