//! Tests of the memcached protocol front end (`orrery-server --memcache-port`): the
//! differential test against a real `memcached`, expiry, limits (line length, item size,
//! connections, memory) and eviction.

#[path = "../common/mod.rs"]
mod common;
mod differential;
mod framing;
mod harness;
mod limits;
