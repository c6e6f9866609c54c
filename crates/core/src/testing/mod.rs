//! The conformance suite (placeholder until the testing module lands).
