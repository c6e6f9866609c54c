//! Per-thread CPU time.
//!
//! The machine is shared: with more runnable threads than cores, wall-clock throughput
//! falls for reasons that have nothing to do with the index. CPU time of the measuring
//! thread counts only the time it actually ran, so `ops / cpu time` estimates what a
//! thread achieves with a core to itself. It is reported beside the wall-clock figure,
//! never instead of it: time a thread spends blocked (e.g. sleeping on a contended lock)
//! is not CPU time, so under real lock contention the CPU-time figure is optimistic.

pub(crate) use orrery::testing::clock::thread_cpu_secs;
