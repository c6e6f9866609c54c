//! Synchronization primitives (placeholder until the sync module lands).
