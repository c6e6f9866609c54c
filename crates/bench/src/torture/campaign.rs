//! A campaign: every (configuration, seed) job on a pool of threads, progress on stderr,
//! each divergence's report on stdout as it happens, a summary table at the end.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use orrery::testing::clock::thread_cpu_secs;
use orrery::testing::torture::{Budget, Settings, run};

use super::configs::Config;

/// What one configuration's jobs added up to.
#[derive(Default, Clone)]
pub(crate) struct Tally {
    pub(crate) seeds: Vec<u64>,
    pub(crate) ops: u64,
    pub(crate) verifies: u64,
    pub(crate) episodes: u64,
    pub(crate) divergences: u64,
    /// Seconds its jobs ran, summed.
    pub(crate) job_secs: f64,
}

/// The campaign's plan.
pub(crate) struct Plan {
    pub(crate) configs: Vec<Config>,
    pub(crate) seeds: Vec<u64>,
    pub(crate) ops: u64,
    pub(crate) threads: usize,
    pub(crate) budget: Budget,
    /// Seconds between progress lines (0: none).
    pub(crate) progress_secs: u64,
}

/// Runs every job; the tallies per configuration, in the plan's order.
pub(crate) fn execute(plan: &Plan) -> Vec<Tally> {
    let jobs: Vec<(usize, u64)> = (0..plan.configs.len())
        .flat_map(|c| plan.seeds.iter().map(move |&s| (c, s)))
        .collect();
    let next = AtomicUsize::new(0);
    let done_ops = AtomicU64::new(0);
    let finished = AtomicUsize::new(0);
    let tallies = Mutex::new(vec![Tally::default(); plan.configs.len()]);
    let total = plan.ops * jobs.len() as u64;
    let start = Instant::now();
    std::thread::scope(|scope| {
        let mut workers = Vec::new();
        for _ in 0..plan.threads.max(1).min(jobs.len().max(1)) {
            workers.push(scope.spawn(|| {
                loop {
                    let j = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(c, seed)) = jobs.get(j) else {
                        break;
                    };
                    let config = &plan.configs[c];
                    let settings = Settings {
                        seed,
                        ops: plan.ops,
                        budget: plan.budget,
                    };
                    let t = Instant::now();
                    let cpu0 = thread_cpu_secs();
                    let report = run(&config.make, &settings, &mut |n| {
                        done_ops.fetch_add(n, Ordering::Relaxed);
                    });
                    let secs = t.elapsed().as_secs_f64();
                    // The job's own CPU time (not its structures' background threads): on a
                    // shared machine the wall time says more about the load than the runner.
                    let cpu = thread_cpu_secs() - cpu0;
                    if let Some(d) = &report.divergence {
                        println!("== {} (seed {seed:#x})\n{d}", config.name);
                    }
                    eprintln!(
                        "torture: {} seed {seed:#x}: {} ops, {} episodes, {} full comparisons, \
                         {} in {secs:.1} s ({cpu:.1} s CPU, {:.2} µs/op CPU)",
                        config.name,
                        report.ops,
                        report.episodes,
                        report.verifies,
                        if report.divergence.is_some() {
                            "DIVERGED"
                        } else {
                            "no divergence"
                        },
                        cpu * 1e6 / report.ops.max(1) as f64
                    );
                    let mut all = tallies.lock().unwrap_or_else(|e| e.into_inner());
                    let t = &mut all[c];
                    t.seeds.push(seed);
                    t.ops += report.ops;
                    t.verifies += report.verifies;
                    t.episodes += report.episodes;
                    t.divergences += u64::from(report.divergence.is_some());
                    t.job_secs += secs;
                    finished.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        if plan.progress_secs > 0 {
            let every = Duration::from_secs(plan.progress_secs);
            let mut last = Instant::now();
            while !workers.iter().all(|w| w.is_finished()) {
                std::thread::sleep(Duration::from_millis(200));
                if last.elapsed() >= every {
                    last = Instant::now();
                    let ops = done_ops.load(Ordering::Relaxed);
                    let secs = start.elapsed().as_secs_f64();
                    eprintln!(
                        "torture: [{:.0} s] {:.1}M of {:.1}M ops ({:.2} Mops/s), {} of {} jobs done",
                        secs,
                        ops as f64 / 1e6,
                        total as f64 / 1e6,
                        ops as f64 / secs / 1e6,
                        finished.load(Ordering::Relaxed),
                        jobs.len()
                    );
                }
            }
        }
        for w in workers {
            if w.join().is_err() {
                eprintln!("torture: a worker panicked outside a job's checks");
            }
        }
    });
    tallies.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// The summary as a markdown table.
pub(crate) fn table(plan: &Plan, tallies: &[Tally]) -> String {
    let mut out = String::from(
        "| configuration | seeds | operations | episodes | full comparisons | divergences | job time (s) |\n|---|---|---:|---:|---:|---:|---:|\n",
    );
    for (c, t) in plan.configs.iter().zip(tallies) {
        let mut seeds = t.seeds.clone();
        seeds.sort_unstable();
        let seeds = match (seeds.first(), seeds.last()) {
            (Some(a), Some(b)) if a != b => format!("{a:#x}–{b:#x} ({})", seeds.len()),
            (Some(a), _) => format!("{a:#x}"),
            _ => "—".into(),
        };
        out += &format!(
            "| {} | {seeds} | {} | {} | {} | {} | {:.0} |\n",
            c.name,
            group(t.ops),
            group(t.episodes),
            group(t.verifies),
            t.divergences,
            t.job_secs
        );
    }
    out
}

/// `n` with thousands separators.
pub(crate) fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}
