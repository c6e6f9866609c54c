//! Sync benchmarks (placeholder).
fn main() {}
