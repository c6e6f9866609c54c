//! What a run measures besides time: allocator-counted live bytes, resident set size (and
//! the memory ceiling a load runs under, `ceiling`),
//! sampled operation latencies, thread CPU time, and the statistics an index reports about
//! itself (`index_stats`).

pub(crate) mod alloc_count;
pub(crate) mod ceiling;
pub(crate) mod cpu;
pub(crate) mod index_stats;
pub(crate) mod latency;
pub(crate) mod rss;
