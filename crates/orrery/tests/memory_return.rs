//! Memory comes back (issue 38, `docs/results/reliability.md`, "Memory return"): for each of
//! the five structures, fill 4M keys, remove 90% of them (the first inserted, a cache's
//! eviction order), and the resident set the index adds must be at most 1.5× that of a
//! fresh index holding the remaining keys (the bound; looser for the structures
//! that do not reach it yet, see [`STRUCTURES`]).
//!
//! The resident set is the process's, and the test harness runs other tests in threads of
//! the same process, so every measurement runs in a child process of its own: the test
//! re-executes this test binary with `ORRERY_MEMORY_CHILD=STRUCTURE:PHASE`, which runs only
//! [`memory_return_child`]; the child prints the bytes its index adds to the resident set on
//! a line `rss-delta BYTES`. A structure's two children (after the removal, fresh) run at
//! once, one per core; the structures one after another (each child holds at most a few
//! hundred MiB).
#![cfg(all(
    feature = "wormhole",
    feature = "mercury",
    feature = "slb",
    feature = "cuckoo-trie",
    feature = "hyperion"
))]

use std::process::Command;

use orrery::KvIndex;
use orrery_core::testing::memory::{self, Removal, Scenario};

/// The structures measured (`slb` is the SLB over a Wormhole), each with the largest
/// ratio (resident set after the removal / fresh index) it may show: the bound, 1.5,
/// for all of them (`docs/results/reliability.md`, "Memory return": the surviving 10% were
/// spread over every page the fill used until each structure moved them; Wormhole moves its
/// leaves, Mercury its nodes, and Mercury's bucket array shrinks). With the pages not given
/// back, every ratio is above its bound (wormhole 9.7, mercury 8.5, cuckoo-trie 6.3,
/// hyperion 2.9, slb 9.6).
const STRUCTURES: &[(&str, f64)] = &[
    ("wormhole", 1.5),
    ("mercury", 1.5),
    ("cuckoo-trie", 1.5),
    ("hyperion", 1.5),
    ("slb", 1.5),
];

/// The environment variable that makes this binary a measuring child.
const CHILD: &str = "ORRERY_MEMORY_CHILD";

/// Fill 4M keys of 8 bytes, remove the first 90% inserted.
fn scenario() -> Scenario {
    Scenario {
        keys: std::env::var("ORRERY_MEMORY_KEYS")
            .ok()
            .and_then(|k| k.parse().ok())
            .unwrap_or(4_000_000),
        percent: 90,
        removal: Removal::Oldest,
        key_len: 8,
        seed: orrery_core::testing::rng::DEFAULT_SEED,
    }
}

/// Runs the phase in this process and returns the bytes the index adds to the resident
/// set: after the removal (`after`) or with only the remaining keys (`fresh`).
fn measure<I: KvIndex>(phase: &str, make: impl FnOnce() -> I) -> usize {
    let s = scenario();
    let (index, rss) = match phase {
        "after" => memory::fill_remove(&s, make),
        "fresh" => memory::fill(&s, make),
        _ => panic!("phase {phase:?}: after or fresh"),
    };
    assert_eq!(index.len() as u64, s.kept());
    let m = index.memory_usage();
    eprintln!(
        "memory_usage: structure {:.1} MiB, keys and values {:.1} MiB",
        mib(m.structure_bytes),
        mib(m.key_value_bytes)
    );
    eprintln!("resident set: full +{:.1} MiB", mib(rss.full_delta()));
    rss.after_delta()
}

/// The child's side: runs the measurement `ORRERY_MEMORY_CHILD` names, if any, and prints
/// it (a no-op in an ordinary test run).
#[test]
fn memory_return_child() {
    let Ok(what) = std::env::var(CHILD) else {
        return;
    };
    let (name, phase) = what.split_once(':').expect("STRUCTURE:PHASE");
    let delta = match name {
        "wormhole" => measure(phase, orrery::wormhole::Wormhole::new),
        "mercury" => measure(phase, orrery::mercury::Mercury::new),
        "cuckoo-trie" => measure(phase, orrery::cuckoo_trie::CuckooTrie::new),
        "hyperion" => measure(phase, orrery::hyperion::Hyperion::new),
        "slb" => measure(phase, || {
            orrery::slb::Slb::new(orrery::wormhole::Wormhole::new())
        }),
        _ => panic!("unknown structure {name:?}"),
    };
    println!("\nrss-delta {delta}");
}

/// Runs one measurement in a child process; returns its figure in bytes.
fn child(name: &str, phase: &str) -> usize {
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "memory_return_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, format!("{name}:{phase}"))
        .output()
        .expect("run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if std::env::var_os("ORRERY_MEMORY_VERBOSE").is_some() {
        eprintln!(
            "{name} {phase}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    assert!(
        out.status.success(),
        "{name} {phase}: child failed ({})\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.split("rss-delta ").nth(1))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} {phase}: no figure in\n{stdout}"))
}

fn mib(b: usize) -> f64 {
    b as f64 / (1 << 20) as f64
}

#[test]
fn memory_return_after_removing_90_percent() {
    if memory::resident_bytes().is_none() {
        eprintln!("no /proc/self/statm: the resident set cannot be measured here");
        return;
    }
    let only = std::env::var("ORRERY_MEMORY_ONLY").ok();
    let mut failures = Vec::new();
    for &(name, max) in STRUCTURES {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        // The two children of one structure run at once (one per core): each measures its
        // own process, so neither sees the other's pages.
        let (after, fresh) = std::thread::scope(|s| {
            let after = s.spawn(|| child(name, "after"));
            let fresh = child(name, "fresh");
            (after.join().expect("the child's thread"), fresh)
        });
        let ratio = after as f64 / fresh.max(1) as f64;
        println!(
            "{name}: after the removal +{:.1} MiB, fresh +{:.1} MiB, ratio {ratio:.2}",
            mib(after),
            mib(fresh)
        );
        if ratio > max {
            failures.push(format!("{name}: {ratio:.2} > {max}"));
        }
    }
    assert!(
        failures.is_empty(),
        "resident set after removing 90% over its bound times a fresh index: {failures:?}"
    );
}

/// Runs the churn soak on one structure in this process: `LIVE` keys replaced at two
/// threads for `SECS` seconds, the resident set printed every `EVERY` seconds.
fn soak<I: KvIndex + Sync>(index: &I, live: usize, secs: u64, every: u64) {
    let (mut lo, mut hi, mut first) = (usize::MAX, 0, 0);
    memory::churn(
        index,
        live,
        2,
        std::time::Duration::from_secs(secs),
        std::time::Duration::from_secs(every),
        orrery_core::testing::rng::DEFAULT_SEED,
        |s| {
            if first == 0 {
                first = s.rss;
            }
            if s.secs >= secs as f64 / 2.0 {
                (lo, hi) = (lo.min(s.rss), hi.max(s.rss));
            }
            println!(
                "{:>6.0} s {:>12} replaced  RSS {:>8.1} MiB",
                s.secs,
                s.replaced,
                mib(s.rss)
            );
        },
    );
    println!(
        "RSS at the first sample {:.1} MiB; over the second half {:.1}..{:.1} MiB",
        mib(first),
        mib(lo),
        mib(hi)
    );
}

/// The churn soak (opt-in; the long form is `orrery-bench lab memory_churn`):
/// `ORRERY_CHURN=STRUCTURE[:LIVE[:SECS[:EVERY]]] cargo test -p orrery --test memory_return
/// -- --ignored --nocapture memory_churn_soak`.
#[test]
#[ignore = "a soak of minutes: run by hand with ORRERY_CHURN"]
fn memory_churn_soak() {
    let spec = std::env::var("ORRERY_CHURN").unwrap_or_else(|_| "cuckoo-trie".into());
    let mut parts = spec.split(':');
    let name = parts.next().unwrap_or("cuckoo-trie").to_string();
    let mut num = |d: u64| parts.next().and_then(|p| p.parse().ok()).unwrap_or(d);
    let (live, secs, every) = (num(1_000_000) as usize, num(60), num(10));
    println!("{name}: {live} live keys, 2 threads, {secs} s");
    match name.as_str() {
        "wormhole" => soak(&orrery::wormhole::Wormhole::new(), live, secs, every),
        "mercury" => soak(&orrery::mercury::Mercury::new(), live, secs, every),
        "cuckoo-trie" => soak(&orrery::cuckoo_trie::CuckooTrie::new(), live, secs, every),
        "hyperion" => soak(&orrery::hyperion::Hyperion::new(), live, secs, every),
        "slb" => soak(
            &orrery::slb::Slb::new(orrery::wormhole::Wormhole::new()),
            live,
            secs,
            every,
        ),
        _ => panic!("unknown structure {name:?}"),
    }
}
