//! Resident set size from `/proc/self/statm`, and returning freed heap to the OS.

/// Resident bytes of this process, or `None` where `/proc` is unavailable.
pub(crate) fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * page_size())
}

fn page_size() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u64 } else { 4096 }
}

/// Asks glibc to return free heap memory to the OS, so that the RSS growth of the next
/// load is not hidden by pages a previous index left behind.
pub(crate) fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it is safe to call at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
