//! orrery-bench (placeholder until the benchmark CLI lands).
fn main() {}
