//! Key streams and the memory ceiling end to end through the command line, at counts CI
//! can afford.

use std::process::ExitCode;

use super::main;
use crate::output::Record;

/// Runs `run` in this process with `args` (as `tests::run_json`), returning the records.
fn run(tag: &str, args: &[&str]) -> Vec<Record> {
    let (dir, recs) = run_keep(tag, args);
    std::fs::remove_dir_all(&dir).unwrap();
    recs
}

/// [`run`], keeping its directory (`r.jsonl` in it) for the caller to remove.
fn run_keep(tag: &str, args: &[&str]) -> (std::path::PathBuf, Vec<Record>) {
    let dir = std::env::temp_dir().join(format!("orrery-bench-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("r.jsonl");
    let mut v = vec!["orrery-bench", "run"];
    v.extend(args);
    v.extend(["--quiet", "--no-machine", "--in-process", "--json"]);
    v.push(json.to_str().unwrap());
    let code = main(v.into_iter().map(Into::into));
    assert_eq!(code, ExitCode::SUCCESS, "run {args:?}");
    let recs = crate::output::json::read(&json).unwrap();
    (dir, recs)
}

/// Every workload family runs on every stream: lookups of present keys all hit and of
/// absent keys all miss (the matrix checks both), scans and `get_many` read regenerated
/// keys, inserts take fresh ones.
#[test]
fn every_workload_runs_on_the_streams() {
    let recs = run(
        "streams",
        &[
            "--index",
            "wormhole,btreemap",
            "--dataset",
            "stream:rand-int,stream:seq-int,stream:ngram",
            "--keys",
            "3000",
            "--ops",
            "2000",
            "--workload",
            "load,c,lookup-neg,get-many,e,d,mix-50",
            "--threads",
            "1,2",
        ],
    );
    for ds in ["stream:rand-int", "stream:seq-int", "stream:ngram"] {
        for w in ["load", "c", "lookup-neg", "get-many", "e", "d", "mix-50"] {
            assert!(
                recs.iter()
                    .any(|r| r.dataset == ds && r.workload == w && r.ops > 0),
                "{ds} {w}"
            );
        }
    }
    assert!(recs.iter().all(|r| r.held_keys.is_none()));
}

/// `verify` looks every loaded key up exactly once, split over the threads, with no time
/// limit (`--max-secs` would cut any other workload), on a stream and on a stored set.
#[test]
fn verify_checks_every_loaded_key_once() {
    let recs = run(
        "verify",
        &[
            "--index",
            "wormhole,btreemap",
            "--dataset",
            "stream:rand-int,rand-8",
            "--keys",
            "30001",
            "--workload",
            "verify",
            "--threads",
            "1,2",
            "--max-secs",
            "0.000001",
        ],
    );
    assert_eq!(recs.len(), 8, "{recs:?}");
    for r in &recs {
        assert_eq!(r.workload, "verify");
        assert_eq!(r.ops, 30_001, "{r:?}");
    }
}

/// A ceiling a few MiB above the process's RSS stops a load of far more keys than fit
/// under it, cleanly: the record says how many keys were held and at what RSS, and the
/// cells that need the whole load are skipped. Without a ceiling the same run loads
/// everything and records no ceiling.
#[test]
fn the_memory_ceiling_stops_a_load_and_is_recorded() {
    let rss = crate::metrics::rss::resident_bytes().expect("/proc/self/statm");
    let ceiling = (rss + (4 << 20)).to_string();
    let keys = "400000";
    let args = |max: &'static str| {
        [
            "--index",
            "btreemap",
            "--dataset",
            "stream:rand-int",
            "--keys",
            keys,
            "--ops",
            "1000",
            "--workload",
            "c",
            "--max-rss",
            max,
        ]
    };
    let max: &'static str = Box::leak(ceiling.clone().into_boxed_str());
    let recs = run("ceiling", &args(max));
    // No `load` cell: a record is made for the stopped load; `c` is skipped.
    assert_eq!(recs.len(), 1, "{recs:?}");
    let r = &recs[0];
    assert_eq!(r.workload, "load");
    assert_eq!(r.max_rss_bytes, Some(ceiling.parse().unwrap()));
    let held = r.held_keys.expect("the load stopped at the ceiling");
    assert!(held > 0 && held < 400_000, "held {held}");
    assert_eq!(r.ops, held);
    assert!(r.held_rss_bytes.is_some_and(|b| b > 0));
    let recs = run("no-ceiling", &args("off"));
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(r.workload, "c");
    assert_eq!(
        (r.max_rss_bytes, r.held_keys, r.held_rss_bytes),
        (None, None, None)
    );
    assert!(r.mops > 0.0);
}

/// A load the ceiling stops in the middle of a table's growth stays stopped: the harness
/// does not finish the growth after it (`settle`), which for Mercury would write the rest
/// of a successor twice the old table's size past the ceiling (at 2G keys on this machine
/// that was an out-of-memory kill). The RSS the load added stays within the ceiling's
/// window plus a margin for the other tests running in this process (measured: 249–253
/// MiB added under a 256 MiB window; 436–438 MiB with the settle).
#[test]
fn a_load_stopped_mid_growth_is_not_settled_past_the_ceiling() {
    const WINDOW: u64 = 256 << 20;
    let rss = crate::metrics::rss::resident_bytes().expect("/proc/self/statm");
    let ceiling: &'static str = Box::leak((rss + WINDOW).to_string().into_boxed_str());
    let recs = run(
        "ceiling-mercury",
        &[
            "--index",
            "mercury",
            "--dataset",
            "stream:rand-int",
            "--keys",
            "40000000",
            "--ops",
            "1000",
            "--workload",
            "c",
            "--max-rss",
            ceiling,
        ],
    );
    assert_eq!(recs.len(), 1, "{recs:?}");
    let r = &recs[0];
    let held = r.held_keys.expect("the load stopped at the ceiling");
    let added = r.rss_bytes_per_key.expect("rss growth") * held as f64;
    assert!(
        added <= (WINDOW + (32 << 20)) as f64,
        "the load added {:.0} MiB of RSS under a ceiling {} MiB above the process ({held} keys held)",
        added / (1 << 20) as f64,
        WINDOW >> 20
    );
}

/// The `scale` suite's machinery at tiny counts (its key counts overridden, as the lead
/// trims them): every index of it that is available here loads its stream and runs its
/// lookups and `get_many`, and the records carry what the report plots against the count.
#[test]
fn the_scale_suite_runs_at_tiny_counts() {
    let (dir, recs) = run_keep(
        "scale-suite",
        &[
            "--suite",
            "scale",
            "--keys",
            "2000,6000,20000",
            "--ops",
            "1000",
            "--warmup",
            "100",
        ],
    );
    let suite = crate::suites::find(None, "scale").unwrap();
    let m = &suite.matrices[0];
    assert_eq!(m.datasets, ["stream:rand-int"]);
    assert!(m.keys.contains(&1_000_000_000));
    for i in m
        .indexes
        .iter()
        .filter(|i| !crate::registry::is_unavailable_opt_in(i))
    {
        for k in [2000, 6000, 20000] {
            for (w, t) in [("lookup", 1), ("lookup", 2), ("get-many", 1)] {
                let r = recs
                    .iter()
                    .find(|r| &r.index == i && r.keys == k && r.workload == w && r.threads == t);
                let r = r.unwrap_or_else(|| panic!("{i} {k} {w} x{t}: no record"));
                assert!(r.mops > 0.0 && r.load_mops > 0.0 && r.load_threads <= 2);
                assert!(r.max_rss_bytes.is_some() && r.held_keys.is_none());
            }
        }
    }
    // The report plots load rate, bytes per key and DRAM per lookup against the count.
    let args = ["orrery-bench", "report", "--input"];
    let json = dir.join("r.jsonl");
    let out = dir.join("report");
    let mut v: Vec<&str> = args.to_vec();
    v.extend([
        json.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--name",
        "s",
    ]);
    assert_eq!(main(v.into_iter().map(Into::into)), ExitCode::SUCCESS);
    let md = std::fs::read_to_string(out.join("s").join("tables.md")).unwrap();
    assert!(
        md.contains("load Mops/s (wall clock) against key count"),
        "{md}"
    );
    assert!(md.contains("the most keys each index held"));
    assert!(
        out.join("s")
            .join("stream_rand-int-v8-load-sweep.svg")
            .exists()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
