//! The listing commands: `datasets` (with their statistics, and `--write` to a key file),
//! `indexes`, `workloads` and `suites`.

use std::path::Path;

use super::args::DatasetArgs;
use crate::datasets::{self, Spec};
use crate::progress::Progress;
use crate::workloads::{self, Workload};
use crate::{registry, suites};

/// `indexes`: every registered index that can be built here, with its capabilities.
pub(super) fn indexes() -> Result<(), String> {
    println!("{:<18} {:<66} capabilities", "index", "what");
    for e in registry::entries() {
        println!("{:<18} {:<66} {}", e.name, e.about, e.caps.describe());
    }
    println!("{:<18} the SLB in front of any index", "slb:<index>");
    Ok(())
}

/// `workloads`: every workload and the distributions.
pub(super) fn workloads() -> Result<(), String> {
    for n in workloads::NAMES {
        let w = Workload::parse(n)?;
        println!("{n:<11} {}", w.about());
    }
    println!(
        "\ndistributions: uniform (default), zipf[:θ] (YCSB scrambled zipfian, θ=0.99), latest[:θ]"
    );
    Ok(())
}

/// `suites`: the suites of the built-in file or of `file`.
pub(super) fn suites(file: Option<&Path>) -> Result<(), String> {
    for s in suites::load(file)? {
        println!("{:<10} {}", s.name, s.about);
    }
    Ok(())
}

/// `datasets`: key count, average length and common prefix of each dataset.
pub(super) fn datasets(a: DatasetArgs) -> Result<(), String> {
    let names: Vec<String> = if a.dataset.is_empty() {
        datasets::LISTED.iter().map(|s| s.to_string()).collect()
    } else {
        a.dataset
    };
    let n = a.keys;
    if n == 0 || n > 100_000_000 {
        return Err("--keys for datasets must be between 1 and 100M".into());
    }
    if a.write.is_some() && names.len() != 1 {
        return Err("--write takes exactly one --dataset".into());
    }
    let progress = Progress::new(true);
    println!(
        "{:<12} {:>10} {:>8} {:>9}  about (statistics over {n} keys)",
        "dataset", "keys", "avg len", "avg lcp"
    );
    for name in names {
        let spec = Spec::parse(&name)?;
        let set = spec
            .generate(n as usize, n as usize, a.seed, &progress)?
            .stored();
        let s = datasets::stats(&set);
        println!(
            "{:<12} {:>10} {:>8.1} {:>9.1}  {}",
            name,
            s.keys,
            s.avg_len,
            s.avg_lcp,
            spec.about()
        );
        for i in 0..a.examples.min(set.len()) {
            println!("    {}", String::from_utf8_lossy(set.get(i)).escape_debug());
        }
        if let Some(path) = &a.write {
            write_keys(&set, path)?;
        }
    }
    println!(
        "\nalso: rand-N, kshort-L, klong-L for any length; file:PATH (one key per line); \
         sorted:NAME (NAME's loaded keys in ascending order)"
    );
    Ok(())
}

/// Writes `set` to `path`, one key per line (the `file:PATH` format).
fn write_keys(set: &datasets::KeySet, path: &Path) -> Result<(), String> {
    use std::io::Write;
    let err = |e: std::io::Error| format!("cannot write keys to {}: {e}", path.display());
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(err)?);
    for i in 0..set.len() {
        let k = set.get(i);
        if k.contains(&b'\n') {
            return Err(format!(
                "key {i} contains a newline: it cannot be written one per line to {}",
                path.display()
            ));
        }
        out.write_all(k).map_err(err)?;
        out.write_all(b"\n").map_err(err)?;
    }
    out.flush().map_err(err)
}
