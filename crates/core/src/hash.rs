//! CRC32C hashing (placeholder until the hash module lands).
