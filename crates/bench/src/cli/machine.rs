//! The `machine` command: measures (or prints the cached) memory latency and parallelism
//! of this machine, or one of the uncached sweeps (`--sweep`, `--locality`).

use super::args::MachineArgs;
use crate::machine;
use crate::progress::Progress;

/// `machine`.
pub(super) fn main(a: MachineArgs) -> Result<(), String> {
    let path = a.machine_file.unwrap_or_else(machine::default_cache_path);
    let progress = Progress::new(a.quiet);
    if let Some(sizes) = &a.sweep {
        let pts = machine::sweep(&machine::parse_sizes(sizes)?, a.loads as usize, &progress)?;
        print!("{}", machine::describe_sweep(&pts));
        return Ok(());
    }
    if let Some(mib) = a.locality {
        let pts = machine::locality(mib, a.loads as usize, &progress)?;
        print!("{}", machine::describe_locality(mib, &pts));
        return Ok(());
    }
    let m = if a.cached {
        machine::get(&path, &progress)?
    } else {
        let m = machine::measure(a.mib, a.loads as usize, &progress)?;
        machine::save(&m, &path)?;
        m
    };
    println!("{}", m.describe());
    println!("(cached in {})", path.display());
    Ok(())
}
