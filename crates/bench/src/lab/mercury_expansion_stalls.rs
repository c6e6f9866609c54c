//! Where a `mix-5` phase loses time while a Mercury expansion runs, on one thread: loads
//! `keys` 8-byte keys (default 4150K, just below the 2^22-bucket threshold), then runs
//! `ops` operations (95% GETs of loaded keys, 5% inserts of new keys) in batches of 1024, and
//! records each batch's wall time, the thread's CPU time and whether the table was expanding
//! at both ends (as `orrery-bench` classifies them). Prints, per class, operations per wall
//! second and per thread-CPU second, the batches that took over 2 ms of wall or CPU time (a
//! long batch is a page fault, or the thread was descheduled), and the kernel's THP-fault
//! and compaction counters over the phase (`/proc/vmstat`).
//!
//! Arguments: `[keys = 4150K] [ops = 6M] [prefault 0|1 = 1]`.
//!
//! `orrery-bench lab mercury_expansion_stalls 4150K 6M 0`

use std::time::Instant;

use orrery::mercury::{Config, Mercury};

use super::common::{splitmix, thread_cpu_secs};

/// The kernel's THP-fault and compaction counters.
fn vmstat() -> Vec<(String, u64)> {
    let want = [
        "thp_fault_alloc",
        "compact_stall",
        "allocstall_movable",
        "pgscan_direct",
    ];
    std::fs::read_to_string("/proc/vmstat")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            let v: u64 = v.parse().ok()?;
            want.contains(&k).then(|| (k.to_string(), v))
        })
        .collect()
}

/// The batches of one class (steady or expanding).
#[derive(Default)]
struct Class {
    ops: u64,
    wall: f64,
    cpu: f64,
    long_wall: u64,
    long_cpu: u64,
    long_cpu_secs: f64,
}

/// Runs the program (see the module docs).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let keys = super::count_arg(args, 0, 4_150_000)?;
    let ops = super::count_arg(args, 1, 6_000_000)?;
    let prefault = match args.get(2).map(String::as_str) {
        None | Some("1") => true,
        Some("0") => false,
        Some(other) => return Err(format!("prefault must be 0 or 1, not {other:?}")),
    };
    let m = Mercury::with_config(Config {
        prefault,
        ..Config::default()
    })
    .map_err(|e| e.to_string())?;
    let key = |i: u64| {
        let mut s = i;
        splitmix(&mut s).to_le_bytes()
    };
    for i in 0..keys {
        m.insert(&key(i), &i.to_le_bytes()).expect("insert");
    }
    m.finish_expansion();
    let mut rng = 42u64;
    let mut next_new = keys;
    let mut classes = [Class::default(), Class::default()];
    let before = vmstat();
    let expanding = || m.stats().next_buckets.is_some();
    let (mut t0, mut c0, mut e0) = (Instant::now(), thread_cpu_secs(), expanding());
    let mut done = 0;
    while done < ops {
        for _ in 0..1024 {
            let r = splitmix(&mut rng);
            if r % 100 < 5 {
                m.insert(&key(next_new), &next_new.to_le_bytes())
                    .expect("insert");
                next_new += 1;
            } else {
                let k = key((r >> 8) % keys);
                assert!(m.get_with(&k, |v| v.len()).is_some());
            }
        }
        done += 1024;
        let (t1, c1, e1) = (Instant::now(), thread_cpu_secs(), expanding());
        if e0 == e1 {
            let c = &mut classes[usize::from(e1)];
            let (dw, dc) = (t1.duration_since(t0).as_secs_f64(), c1 - c0);
            c.ops += 1024;
            c.wall += dw;
            c.cpu += dc;
            c.long_wall += u64::from(dw > 2e-3);
            if dc > 2e-3 {
                c.long_cpu += 1;
                c.long_cpu_secs += dc;
            }
        }
        (t0, c0, e0) = (t1, c1, e1);
    }
    let after = vmstat();
    println!(
        "keys {keys}, ops {ops}, prefault {prefault}, buckets {:?}",
        m.stats()
    );
    for (name, c) in ["steady", "expanding"].iter().zip(&classes) {
        if c.ops == 0 {
            println!("{name:>9}: no batch");
            continue;
        }
        println!(
            "{name:>9}: {:>6.2}M ops, {:.3} Mops/wall-s, {:.3} Mops/cpu-s, batches > 2 ms: wall {}, cpu {} ({:.1} ms of cpu, {:.1}% of the class's cpu)",
            c.ops as f64 / 1e6,
            c.ops as f64 / c.wall / 1e6,
            c.ops as f64 / c.cpu / 1e6,
            c.long_wall,
            c.long_cpu,
            c.long_cpu_secs * 1e3,
            100.0 * c.long_cpu_secs / c.cpu
        );
    }
    let (s, e) = (&classes[0], &classes[1]);
    if s.ops > 0 && e.ops > 0 {
        println!(
            "expanding/steady: wall {:.2}, cpu {:.2}",
            (e.ops as f64 / e.wall) / (s.ops as f64 / s.wall),
            (e.ops as f64 / e.cpu) / (s.ops as f64 / s.cpu)
        );
    }
    let delta: Vec<String> = after
        .iter()
        .zip(&before)
        .map(|((k, a), (_, b))| format!("{k} +{}", a - b))
        .collect();
    println!("vmstat over the phase: {}", delta.join(", "));
    Ok(())
}
