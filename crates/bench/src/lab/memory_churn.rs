//! The churn soak of "Memory comes back" (`docs/results/reliability.md`): keys replaced at a
//! constant live count, and the process's resident set over time, which must stay flat
//! after warm-up.
//!
//! Arguments: `STRUCTURE [LIVE = 1M] [THREADS = 2] [SECS = 600] [EVERY = 10]`.
//!
//! `orrery-bench lab memory_churn cuckoo-trie 1M 2 600 10`
//!
//! Fills the index with `LIVE` random 8-byte keys split over `THREADS` threads, then each
//! thread replaces a random one of its keys by a new key (remove, then insert) until `SECS`
//! seconds have passed. Every `EVERY` seconds it prints the time, the replacements per
//! second since the last line, the resident set and the index's `memory_usage`. Ends with
//! the resident set's range after the first minute. `STRUCTURE` is one of
//! `memory_return`'s.

use std::time::Duration;

use orrery::testing::memory;

fn mib(b: usize) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// Runs the program (see the module docs).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let name = args.first().ok_or("STRUCTURE missing")?.as_str();
    let index = super::memory_return::make(name)?;
    let live = super::count_arg(args, 1, 1_000_000)? as usize;
    let threads = super::count_arg(args, 2, 2)?.max(1) as usize;
    let secs = super::count_arg(args, 3, 600)?;
    let every = super::count_arg(args, 4, 10)?.max(1);
    println!("{name}: {live} live keys, {threads} threads, {secs} s, a line every {every} s");
    println!(
        "{:>7} {:>12} {:>10} {:>10}",
        "secs", "replaced/s", "RSS MiB", "usage MiB"
    );
    let (mut last_secs, mut last_n) = (0.0, 0);
    let (mut lo, mut hi) = (usize::MAX, 0);
    memory::churn(
        &index,
        live,
        threads,
        Duration::from_secs(secs),
        Duration::from_secs(every),
        orrery::testing::rng::DEFAULT_SEED,
        |s| {
            let rate = (s.replaced - last_n) as f64 / (s.secs - last_secs).max(1e-9);
            (last_secs, last_n) = (s.secs, s.replaced);
            if s.secs >= 60.0 {
                (lo, hi) = (lo.min(s.rss), hi.max(s.rss));
            }
            println!(
                "{:>7.0} {:>12.0} {:>10.1} {:>10.1}",
                s.secs,
                rate,
                mib(s.rss),
                mib(index.memory_usage().total())
            );
        },
    );
    if hi > 0 {
        println!(
            "RSS after the first minute: {:.1}..{:.1} MiB ({:+.1}%)",
            mib(lo),
            mib(hi),
            (hi as f64 / lo as f64 - 1.0) * 100.0
        );
    }
    Ok(())
}
