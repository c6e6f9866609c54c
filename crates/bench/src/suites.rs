//! Suites: named matrices read from a TOML file (`crates/bench/suites.toml` is built in;
//! `--suites FILE` reads another), so that one paper figure is one command.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::dist::Dist;
use crate::matrix::Matrix;
use crate::settings::parse_count;
use crate::settings::{Settings, defaults};
use crate::workloads::Workload;

/// The suites shipped with the tool.
pub(crate) const BUILTIN: &str = include_str!("../suites.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    suites: BTreeMap<String, SuiteDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteDef {
    about: String,
    matrix: Vec<MatrixDef>,
}

/// A count written as a number or a string with a K/M/G suffix.
#[derive(Deserialize)]
#[serde(untagged)]
enum Count {
    Num(u64),
    Text(String),
}

impl Count {
    fn get(&self) -> Result<u64, String> {
        match self {
            Count::Num(n) => Ok(*n),
            Count::Text(s) => parse_count(s),
        }
    }
}

/// One key count or a sweep of them (`keys = "10M"` or `keys = ["1M", "2M", "4M"]`).
#[derive(Deserialize)]
#[serde(untagged)]
enum Keys {
    One(Count),
    Sweep(Vec<Count>),
}

/// A matrix of a suite: what it runs, its knobs, and any [`Settings`] (every other key,
/// e.g. `mercury_prefault = "off"`; an unknown key is an error).
#[derive(Deserialize)]
struct MatrixDef {
    index: Vec<String>,
    dataset: Vec<String>,
    keys: Keys,
    workload: Vec<String>,
    threads: Vec<usize>,
    ops: Option<Count>,
    repeat: Option<usize>,
    dist: Option<String>,
    value_size: Option<usize>,
    warmup: Option<Count>,
    max_secs: Option<f64>,
    load_threads: Option<usize>,
    #[serde(flatten)]
    settings: toml::Table,
}

/// A parsed suite.
pub(crate) struct Suite {
    /// Its name.
    pub(crate) name: String,
    /// One line about it.
    pub(crate) about: String,
    /// Its matrices (unsupported combinations are skipped).
    pub(crate) matrices: Vec<Matrix>,
}

/// Parses every suite of a TOML text (`origin` names it in errors).
pub(crate) fn parse(text: &str, origin: &str) -> Result<Vec<Suite>, String> {
    let file: File = toml::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
    file.suites
        .into_iter()
        .map(|(name, def)| {
            let matrices = def
                .matrix
                .into_iter()
                .map(|m| matrix(m).map_err(|e| format!("{origin}: suite {name}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Suite {
                name,
                about: def.about,
                matrices,
            })
        })
        .collect()
}

fn matrix(m: MatrixDef) -> Result<Matrix, String> {
    let keys = match &m.keys {
        Keys::One(c) => vec![c.get()?],
        Keys::Sweep(v) => v.iter().map(Count::get).collect::<Result<Vec<_>, _>>()?,
    };
    let smallest = keys.iter().copied().min().unwrap_or(1);
    let settings = Settings::from_toml(m.settings).map_err(|e| format!("matrix settings: {e}"))?;
    Ok(Matrix {
        indexes: m.index,
        datasets: m.dataset,
        keys,
        workloads: m
            .workload
            .iter()
            .map(|w| Workload::parse(w))
            .collect::<Result<_, _>>()?,
        threads: m.threads,
        dist: m.dist.as_deref().map(Dist::parse).transpose()?,
        value_size: m.value_size.unwrap_or(defaults::VALUE_SIZE),
        repeat: m.repeat.unwrap_or(defaults::REPEAT),
        ops: m
            .ops
            .map(|c| c.get())
            .transpose()?
            .unwrap_or(defaults::ops(smallest)),
        warmup: m.warmup.map(|c| c.get()).transpose()?,
        sample_every: defaults::SAMPLE_EVERY,
        get_many_batch: defaults::GET_MANY_BATCH,
        max_secs: m.max_secs,
        // The command line's `--max-rss` (or its default) applies to every suite.
        max_rss: None,
        seed: defaults::SEED,
        skip_unsupported: true,
        load_threads: m.load_threads.unwrap_or(defaults::LOAD_THREADS),
        settings,
    })
}

/// Loads suites from `path`, or the built-in file.
pub(crate) fn load(path: Option<&Path>) -> Result<Vec<Suite>, String> {
    match path {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| format!("cannot read suites from {}: {e}", p.display()))?;
            parse(&text, &p.display().to_string())
        }
        None => parse(BUILTIN, "suites.toml"),
    }
}

/// The suite called `name`.
pub(crate) fn find(path: Option<&Path>, name: &str) -> Result<Suite, String> {
    let all = load(path)?;
    let names: Vec<String> = all.iter().map(|s| s.name.clone()).collect();
    all.into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("unknown suite {name:?}; known: {}", names.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Plan;

    #[test]
    fn builtin_suites_parse_and_plan() {
        let all = load(None).unwrap();
        for required in ["smoke", "peers", "peers-10m"] {
            assert!(all.iter().any(|s| s.name == required), "{required}");
        }
        for s in &all {
            for m in &s.matrices {
                Plan::new(m.clone()).unwrap_or_else(|e| panic!("suite {}: {e}", s.name));
            }
        }
    }

    #[test]
    fn bad_suite_files_are_errors() {
        assert!(parse("[suites.x]\nabout = 1", "t").is_err());
        let e = parse(
            "[suites.x]\nabout = \"a\"\n[[suites.x.matrix]]\nindex=[\"btreemap\"]\n\
             dataset=[\"rand-8\"]\nkeys=\"12Q\"\nworkload=[\"c\"]\nthreads=[1]\n",
            "t",
        )
        .err()
        .unwrap();
        assert!(e.contains("12Q"), "{e}");
        assert!(find(None, "nope").err().unwrap().contains("unknown suite"));
        let e = parse(
            "[suites.x]\nabout = \"a\"\n[[suites.x.matrix]]\nindex=[\"btreemap\"]\n\
             dataset=[\"rand-8\"]\nkeys=1000\nworkload=[\"c\"]\nthreads=[1]\nopps=3\n",
            "t",
        )
        .err()
        .unwrap();
        assert!(e.contains("opps"), "{e}");
    }

    /// A matrix's settings keys reach its [`Matrix`]; keys not given keep the defaults.
    #[test]
    fn matrix_settings() {
        let s = parse(
            "[suites.x]\nabout = \"a\"\n[[suites.x.matrix]]\nindex=[\"mercury\"]\n\
             dataset=[\"rand-8\"]\nkeys=1000\nworkload=[\"c\"]\nthreads=[1]\n\
             mercury_prefault=\"off\"\nmercury_load_percent=75\nepoch_pin=\"asymmetric\"\n",
            "t",
        )
        .unwrap();
        let got = s[0].matrices[0].settings;
        assert_eq!(
            got,
            Settings {
                mercury_prefault: crate::settings::Switch::Off,
                mercury_load_percent: 75,
                epoch_pin: crate::settings::EpochPin::Asymmetric,
                ..Settings::DEFAULT
            }
        );
        let e = parse(
            "[suites.x]\nabout = \"a\"\n[[suites.x.matrix]]\nindex=[\"mercury\"]\n\
             dataset=[\"rand-8\"]\nkeys=1000\nworkload=[\"c\"]\nthreads=[1]\n\
             mercury_prefault=\"maybe\"\n",
            "t",
        )
        .err()
        .unwrap();
        assert!(e.contains("maybe"), "{e}");
    }

    #[test]
    fn key_sweeps() {
        let s = parse(
            "[suites.x]\nabout = \"a\"\n[[suites.x.matrix]]\nindex=[\"btreemap\"]\n\
             dataset=[\"rand-8\"]\nkeys=[\"2K\", 1000, \"4K\"]\nworkload=[\"c\"]\nthreads=[1]\n",
            "t",
        )
        .unwrap();
        let m = &s[0].matrices[0];
        assert_eq!(m.keys, vec![2000, 1000, 4000]);
        // The default operation count follows the smallest key count.
        assert_eq!(m.ops, 1000);
        let e = parse(
            "[suites.x]\nabout = \"a\"\n[[suites.x.matrix]]\nindex=[\"btreemap\"]\n\
             dataset=[\"rand-8\"]\nkeys=[\"2K\", \"x\"]\nworkload=[\"c\"]\nthreads=[1]\n",
            "t",
        )
        .err()
        .unwrap();
        assert!(e.contains("bad number"), "{e}");
    }
}
