//! CPU-time clocks for examples and benchmarks on a shared machine.
//!
//! With more runnable threads than cores, wall-clock throughput falls for reasons that have
//! nothing to do with the code measured; the CPU time of the measuring thread (or process)
//! counts only the time it actually ran. Time spent blocked is not CPU time, so under real
//! contention a CPU-time rate is optimistic: report it beside the wall clock, not instead.

/// Seconds of CPU time the calling thread has used (0.0 if the clock is unavailable).
pub fn thread_cpu_secs() -> f64 {
    clock_secs(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Seconds of CPU time the whole process has used, all threads together (0.0 if the clock
/// is unavailable).
pub fn process_cpu_secs() -> f64 {
    clock_secs(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn clock_secs(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to the valid pointer it is given.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;

    #[test]
    fn clocks_advance_with_work() {
        // The process interval encloses the thread interval (p0 before t0, p1 after t1),
        // so the process clock must advance at least as much as the thread's. The two
        // clocks are summed along different kernel paths: allow 1 ms of disagreement
        // (the busy work takes tens of ms, so a process clock that stood still would fail).
        let p0 = process_cpu_secs();
        let t0 = thread_cpu_secs();
        let mut x = 0u64;
        for _ in 0..20_000_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let t1 = thread_cpu_secs();
        let p1 = process_cpu_secs();
        assert!(
            t1 > t0 + 1e-3,
            "thread clock did not advance over busy work: {t0} -> {t1}"
        );
        assert!(
            p1 - p0 + 1e-3 >= t1 - t0,
            "the process clock lags its own thread's: {} < {}",
            p1 - p0,
            t1 - t0
        );
    }
}
