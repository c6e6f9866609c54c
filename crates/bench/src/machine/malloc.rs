//! Huge-page-backed `malloc` for every index, peers included.
//!
//! The papers' reference setups run their indexes on huge pages (jemalloc with THP, or
//! hugetlbfs). Orrery's own structures map their large memory with `MADV_HUGEPAGE`
//! (`orrery::alloc`), but peers allocate through the global allocator, and on a machine whose
//! THP mode is `madvise` glibc's `malloc` memory then stays on 4 KiB pages: every peer would
//! pay a page walk per DRAM access that our structures do not. To compare like with like,
//! `orrery-bench` re-executes itself once at start-up with the glibc tunable
//! `glibc.malloc.hugetlb=1` appended to `GLIBC_TUNABLES` (glibc ≥ 2.35: `malloc` then
//! `madvise`s its heap and its mmap'd blocks for transparent huge pages). The counting
//! allocator forwards to the system `malloc`, so it keeps counting exactly as before.
//!
//! It is skipped when the user passes `--no-huge-malloc`, or when `GLIBC_TUNABLES` already
//! sets `glibc.malloc.hugetlb` (the user's value wins, and the re-executed child never
//! re-executes again). The state is printed in the header of `run` and recorded in every
//! JSON result (`malloc`).
//!
//! When an opt-in C peer linked against jemalloc is configured (`ORRERY_WORMHOLE_C` or
//! `ORRERY_CUCKOO_TRIE_C` set), the same
//! re-execution also appends `glibc.rtld.optional_static_tls=16384`, which the jemalloc the
//! C library is linked against needs to be `dlopen`ed (see `peers::wormhole_c`, "Loading"),
//! unless `GLIBC_TUNABLES` already sets it; `--no-huge-malloc` does not turn that off.

use std::ffi::OsString;

/// The command-line flag that disables the re-execution.
pub(crate) const OPT_OUT: &str = "--no-huge-malloc";

/// The tunable that turns on THP for glibc's `malloc`.
const TUNABLE: &str = "glibc.malloc.hugetlb=1";

/// The `GLIBC_TUNABLES` value to re-execute with, or `None` to run as is. `c_peer`: the
/// `wormhole-c` library is configured and needs static TLS room.
fn reexec_value(args: &[OsString], tunables: Option<&str>, c_peer: bool) -> Option<String> {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        return None;
    }
    let t = tunables.unwrap_or("");
    let mut add = Vec::new();
    if !args.iter().any(|a| a == OPT_OUT) && !t.contains("glibc.malloc.hugetlb") {
        add.push(TUNABLE);
    }
    if c_peer && !t.contains("glibc.rtld.optional_static_tls") {
        add.push(crate::peers::clib::TLS_TUNABLE);
    }
    if add.is_empty() {
        return None;
    }
    let add = add.join(":");
    Some(if t.is_empty() {
        add
    } else {
        format!("{t}:{add}")
    })
}

/// Re-executes the program with huge-page `malloc` if it is not on yet (see the module
/// docs). Returns only if no re-execution was needed or it failed (then with a warning).
pub(crate) fn reexec_if_needed() {
    let args: Vec<OsString> = std::env::args_os().collect();
    let tunables = std::env::var("GLIBC_TUNABLES").ok();
    let c_peer = std::env::var_os(crate::peers::wormhole_c::ENV).is_some()
        || std::env::var_os(crate::peers::cuckoo_trie_c::ENV).is_some();
    let Some(value) = reexec_value(&args, tunables.as_deref(), c_peer) else {
        return;
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        let mut cmd = std::process::Command::new(exe);
        if let Some(arg0) = args.first() {
            cmd.arg0(arg0);
        }
        let err = cmd
            .args(args.iter().skip(1))
            .env("GLIBC_TUNABLES", value)
            .exec();
        eprintln!(
            "warning: could not re-execute with huge-page malloc ({err}); continuing without"
        );
    }
}

/// Whether glibc `malloc` runs on transparent huge pages in this process.
pub(crate) fn huge_malloc() -> bool {
    cfg!(target_env = "gnu")
        && std::env::var("GLIBC_TUNABLES").is_ok_and(|t| {
            t.split(':')
                .any(|kv| kv == "glibc.malloc.hugetlb=1" || kv == "glibc.malloc.hugetlb=2")
        })
}

/// A short description for headers and JSON.
pub(crate) fn describe() -> String {
    if huge_malloc() {
        "glibc malloc on transparent huge pages (GLIBC_TUNABLES glibc.malloc.hugetlb=1)".into()
    } else {
        "default malloc (no huge-page tunable; --no-huge-malloc or non-glibc)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn reexec_decision() {
        if !cfg!(all(target_os = "linux", target_env = "gnu")) {
            return;
        }
        let run = args(&["orrery-bench", "run", "--index", "btreemap"]);
        assert_eq!(reexec_value(&run, None, false).as_deref(), Some(TUNABLE));
        assert_eq!(
            reexec_value(&run, Some(""), false).as_deref(),
            Some(TUNABLE)
        );
        assert_eq!(
            reexec_value(&run, Some("glibc.malloc.arena_max=2"), false).as_deref(),
            Some("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1")
        );
        // Already set (by the user or by our own re-execution): run as is.
        assert_eq!(
            reexec_value(&run, Some("glibc.malloc.hugetlb=0"), false),
            None
        );
        assert_eq!(reexec_value(&run, Some(TUNABLE), false), None);
        let mut opt_out = run.clone();
        opt_out.push(OPT_OUT.into());
        assert_eq!(reexec_value(&opt_out, None, false), None);
        // The C peer's static TLS room, added once, also with --no-huge-malloc.
        let tls = crate::peers::clib::TLS_TUNABLE;
        assert_eq!(
            reexec_value(&run, None, true),
            Some(format!("{TUNABLE}:{tls}"))
        );
        assert_eq!(reexec_value(&opt_out, None, true).as_deref(), Some(tls));
        assert_eq!(
            reexec_value(&run, Some(&format!("{TUNABLE}:{tls}")), true),
            None
        );
        assert_eq!(
            reexec_value(&opt_out, Some("glibc.rtld.optional_static_tls=99999"), true),
            None
        );
    }
}
