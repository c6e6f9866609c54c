//! The command line end to end: parsing, clear errors, runs written as JSON and read back,
//! settings recorded, suites overridden, children, `datasets --write`, `report`.

use std::ffi::OsString;
use std::process::ExitCode;

use super::args::Cmd;
use super::run::suite_matrices;
use super::{dispatch, main, parse};
use crate::datasets;
use crate::output::Record;
use crate::progress::Progress;
use crate::registry;
use crate::settings::{EpochPin, Settings, Switch, defaults, parse_count};

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
/// recorded in every JSON record (the bug it guards: environment variables steered runs without
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
