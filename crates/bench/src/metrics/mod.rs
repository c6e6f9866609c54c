//! What a run measures besides time: allocator-counted live bytes, resident set size, and
//! sampled operation latencies.

pub(crate) mod alloc_count;
pub(crate) mod cpu;
pub(crate) mod latency;
pub(crate) mod rss;
