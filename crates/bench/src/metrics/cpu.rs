//! Per-thread CPU time.
//!
//! The machine is shared: with more runnable threads than cores, wall-clock throughput
//! falls for reasons that have nothing to do with the index. CPU time of the measuring
//! thread counts only the time it actually ran, so `ops / cpu time` estimates what a
//! thread achieves with a core to itself. It is reported beside the wall-clock figure,
//! never instead of it: time a thread spends blocked (e.g. sleeping on a contended lock)
//! is not CPU time, so under real lock contention the CPU-time figure is optimistic.

/// Seconds of CPU time the calling thread has used.
pub(crate) fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to the valid pointer it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
