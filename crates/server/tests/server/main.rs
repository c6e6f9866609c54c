//! Integration tests of the `orrery-server` binary, driven by the Rust `redis` crate and
//! by raw sockets (exact replies, protocol errors, limits): one module per command family
//! or concern, one test binary.

#[path = "../common/mod.rs"]
mod common;

mod admin;
mod blocking;
mod collections;
mod concurrency;
mod connection;
mod databases;
mod eviction;
mod expiry;
mod framing;
mod keys;
mod large;
mod protocol;
mod pubsub;
mod strings;
mod transactions;
mod zsets;
