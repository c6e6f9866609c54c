//! The wall clock the server runs on: Unix milliseconds, as Redis's deadlines and
//! `TIME` use. A leaf, so that every layer (the keyspace, persistence, the connections)
//! reads the same clock without importing the layers above it.

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
