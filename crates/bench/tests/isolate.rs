//! `orrery-bench run` through the real binary: each index group measured in a process of its
//! own by default, the same results as `--in-process`, and a failing child reported as an
//! error naming its group.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_orrery-bench");

/// A scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "orrery-bench-isolate-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a tiny two-index matrix, `extra` appended; returns the output and the PID of the
/// process run (the huge-page re-execution keeps its PID: it is an exec).
fn run(json: &Path, extra: &[&str], env: Option<(&str, &str)>) -> (Output, u32) {
    let mut cmd = Command::new(BIN);
    cmd.args([
        "run",
        "--index",
        "btreemap,skiplist",
        "--dataset",
        "rand-8",
        "--keys",
        "1000",
        "--ops",
        "1000",
        "--workload",
        "c,load",
        "--quiet",
        "--no-machine",
        "--json",
    ])
    .arg(json)
    .args(extra)
    .env_remove("ORRERY_BENCH_FAIL_CHILD")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    (child.wait_with_output().unwrap(), pid)
}

fn records(path: &Path) -> Vec<serde_json::Map<String, Value>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| match serde_json::from_str(l).unwrap() {
            Value::Object(m) => m,
            v => panic!("not an object: {v}"),
        })
        .collect()
}

/// The (index, workload) of each table row, in order.
fn rows(stdout: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter(|l| l.starts_with("btreemap ") || l.starts_with("skiplist "))
        .map(|l| {
            let mut w = l.split_whitespace();
            (w.next().unwrap().into(), w.nth(1).unwrap().into())
        })
        .collect()
}

fn cell(r: &serde_json::Map<String, Value>) -> (String, String, u64) {
    (
        r["index"].as_str().unwrap().into(),
        r["workload"].as_str().unwrap().into(),
        r["threads"].as_u64().unwrap(),
    )
}

#[test]
fn each_group_runs_in_its_own_process_with_in_process_results() {
    let dir = scratch("same");
    let (iso_json, inp_json) = (dir.join("iso.jsonl"), dir.join("inp.jsonl"));
    let (iso, iso_pid) = run(&iso_json, &[], None);
    assert!(
        iso.status.success(),
        "{}",
        String::from_utf8_lossy(&iso.stderr)
    );
    let (inp, inp_pid) = run(&inp_json, &["--in-process"], None);
    assert!(
        inp.status.success(),
        "{}",
        String::from_utf8_lossy(&inp.stderr)
    );

    // The table: both indexes' rows, in the in-process order.
    let expect: Vec<(String, String)> = [
        ("btreemap", "c"),
        ("btreemap", "load"),
        ("skiplist", "c"),
        ("skiplist", "load"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(rows(&iso.stdout), expect);
    assert_eq!(rows(&inp.stdout), expect);
    let header = String::from_utf8_lossy(&iso.stdout);
    assert!(header.contains("fresh child process"), "{header}");

    // JSON: as many records, the same fields, the same cells in the same order.
    let (a, b) = (records(&iso_json), records(&inp_json));
    assert_eq!(a.len(), 4);
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        let kx: BTreeSet<&String> = x.keys().collect();
        let ky: BTreeSet<&String> = y.keys().collect();
        assert_eq!(kx, ky);
        assert_eq!(cell(x), cell(y));
        assert_eq!(x["keys"], y["keys"]);
        assert_eq!(x["repeats"], y["repeats"]);
        assert!(x["mops"].as_f64().unwrap() > 0.0, "{x:?}");
    }

    // Isolated: one child per index group, neither of them the parent.
    let pid = |r: &serde_json::Map<String, Value>| r["pid"].as_u64().unwrap() as u32;
    for r in &a {
        assert_eq!(r["isolated"], Value::Bool(true));
        assert_ne!(pid(r), iso_pid, "{r:?}");
    }
    assert_eq!(pid(&a[0]), pid(&a[1]), "one group, one process");
    assert_eq!(pid(&a[2]), pid(&a[3]), "one group, one process");
    assert_ne!(pid(&a[0]), pid(&a[2]), "each group its own process");
    // In process: everything measured by the process run.
    for r in &b {
        assert_eq!(r["isolated"], Value::Bool(false));
        assert_eq!(pid(r), inp_pid);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failing_child_is_an_error_naming_its_group() {
    let dir = scratch("fail");
    let json = dir.join("r.jsonl");
    for (how, says) in [
        ("skiplist", "fails on purpose"),
        ("skiplist:abort", "signal 6"),
        ("skiplist:exit", "exited with status 3"),
    ] {
        let _ = std::fs::remove_file(&json);
        let (out, _) = run(&json, &[], Some(("ORRERY_BENCH_FAIL_CHILD", how)));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{how}: {err}");
        assert!(
            err.contains("error: index skiplist, dataset rand-8, 1000 keys: its process (pid "),
            "{how}: {err}"
        );
        assert!(err.contains(says), "{how}: {err}");
        // The run stops at the failing group, as an in-process run stops at an error;
        // what came before it is kept.
        let got = rows(&out.stdout);
        assert_eq!(got.len(), 2, "{how}: {got:?}");
        assert!(got.iter().all(|(i, _)| i == "btreemap"), "{how}: {got:?}");
        assert_eq!(records(&json).len(), 2, "{how}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A load stopped at the memory ceiling in a child sends one record and skips the group's
/// other cells: the run goes on to the next group and succeeds (it used to stop the whole
/// run with "sent 1 of 2 results").
#[test]
fn a_load_stopped_at_the_ceiling_in_a_child_ends_its_group_not_the_run() {
    let dir = scratch("ceiling");
    let json = dir.join("r.jsonl");
    let out = Command::new(BIN)
        .args([
            "run",
            "--index",
            "btreemap,skiplist",
            "--dataset",
            "stream:rand-int",
            "--keys",
            "4M",
            "--ops",
            "1000",
            "--workload",
            "c,load",
            "--max-rss",
            "160M",
            "--quiet",
            "--no-machine",
            "--json",
        ])
        .arg(&json)
        .env_remove("ORRERY_BENCH_FAIL_CHILD")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let recs = records(&json);
    let held: Vec<(String, u64)> = recs
        .iter()
        .map(|r| {
            (
                r["index"].as_str().unwrap().to_string(),
                r["held_keys"].as_u64().expect("a stopped load"),
            )
        })
        .collect();
    assert_eq!(held.len(), 2, "one record per group: {recs:?}");
    assert_eq!(held[0].0, "btreemap");
    assert_eq!(held[1].0, "skiplist");
    assert!(
        held.iter().all(|(_, h)| *h > 0 && *h < 4_000_000),
        "{held:?}"
    );
    assert!(err.contains("skipped: btreemap"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Whether this kernel offers the membarrier commands orrery-core's asymmetric pin needs.
fn membarrier_supported() -> bool {
    // SAFETY: MEMBARRIER_CMD_QUERY (0) with flags 0 touches no memory; it returns the
    // supported commands or -1.
    let commands = unsafe { libc::syscall(libc::SYS_membarrier, 0, 0) };
    let needed = (1 << 3) | (1 << 4); // PRIVATE_EXPEDITED, REGISTER_PRIVATE_EXPEDITED
    commands >= 0 && commands & needed == needed
}

/// `--epoch-pin` sets the pin barrier of the children (the parent's environment does not),
/// and every record names the barrier its process used, with the other settings.
#[test]
fn children_get_and_record_the_epoch_pin() {
    let dir = scratch("pin");
    let (fenced, asym) = (dir.join("fenced.jsonl"), dir.join("asym.jsonl"));
    // The parent's environment asks for the asymmetric pin; the option (default fenced) wins.
    let (out, _) = run(&fenced, &[], Some(("ORRERY_EPOCH_ASYMMETRIC", "1")));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (out, _) = run(
        &asym,
        &["--epoch-pin", "asymmetric", "--mercury-prefault", "off"],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expect = if membarrier_supported() {
        "asymmetric"
    } else {
        "fenced"
    };
    for (path, pin, prefault) in [(&fenced, "fenced", "on"), (&asym, expect, "off")] {
        let recs = records(path);
        assert_eq!(recs.len(), 4);
        for r in recs {
            let s = r["settings"].as_object().expect("a settings object");
            assert_eq!(s["epoch_pin"], pin, "{r:?}");
            assert_eq!(s["mercury_prefault"], prefault, "{r:?}");
            assert_eq!(s["wormhole_prefault"], "on", "{r:?}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
