//! Memory (placeholder until the alloc module lands).
