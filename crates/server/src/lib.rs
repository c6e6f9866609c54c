//! `orrery-server`: a Redis-protocol server over any Orrery index.
//!
//! People who want a fast key-value service point a Redis client at a port rather than
//! link a Rust crate. This crate serves Orrery's structures that way: real Redis clients
//! (`redis-cli`, redis-py, the Rust `redis` crate) talk to it unchanged, over RESP2 or
//! RESP3, pipelined or not, with multibulk or inline requests.
//!
//! # Usage
//!
//! ```text
//! orrery-server --port 6380 --index wormhole
//! redis-cli -p 6380 set greeting hello
//! ```
//!
//! [`Config`] holds the settings ([`Config::from_args`] parses the command line) and
//! [`run`] serves until `SIGTERM`, `SIGINT` or `SHUTDOWN`. `docs/server.md` lists the
//! commands.
//!
//! # Layout
//!
//! Modules in layers, each importing only those below it (`scripts/module-deps.py`):
//!
//! | module | what |
//! |---|---|
//! | `server` | top: the accept loop, connections (framing, pipelining, limits, group-commit waits), the cron, shutdown |
//! | `cmd` | the command table and dispatch; one file per command family, one type per command: parsed (`Command::parse`) before it runs |
//! | `state` | what connections share (`Shared`: store, settings, client registry, `SCAN` cursors, counters) and each one's own (`Client`) |
//! | `aof` | persistence: the append-only file chain, its replay, group commit and rewrite (a folder, one file per job) |
//! | `config` | settings, the command line, and the run-time settings `CONFIG SET` changes |
//! | `waiters` | clients blocked in `BLPOP` and its relatives, by key, in arrival order |
//! | `coll` | the collection types (hash, set, sorted set, list): compact inside the key's value or large in the shared element index; each change logged |
//! | `store` | the keyspace: value header (type, encoding, deadline), striped writes, expiry, the element index of large collections; logs through a `Journal` and reports each command's log position in its `Call` |
//! | `resp` | request parser (with limits) and reply encoder (RESP2/RESP3) |
//! | `layout` | bytes of the collections: compact encodings, element keys, the `*-max-listpack-*` thresholds |
//! | `memcache` | the memcached protocol (text and meta) on a second listener, over its own items (a folder; its `mod.rs` has the table) |
//! | `memory` | the memory limit and sampled-LRU eviction, over any keyspace (used by `memcache`) |
//! | `glob`, `num`, `clock` | leaves: Redis's glob patterns, Redis's number syntax and formats, the wall clock |
//!
//! # Consistency
//!
//! One shared index serves every connection with no global lock: reads are the index's
//! own lookups, and a write holds only its key's stripe, which makes each command atomic
//! on its keys (`INCR`, `SET NX`, `MSETNX`, `RENAME` …). `KEYS`, `SCAN` and `FLUSHDB` walk
//! the index while others write, with the index's scan guarantees (a key present throughout
//! is seen exactly once), not Redis's single-threaded snapshot.

mod aof;
mod clock;
mod cmd;
mod coll;
mod config;
#[doc(hidden)]
pub mod fuzzing;
mod glob;
mod layout;
mod memcache;
mod memory;
mod multi;
mod num;
mod pubsub;
mod resp;
mod server;
mod state;
mod store;
mod stored;
mod waiters;

pub use aof::Fsync;
pub use config::{Config, USAGE};
pub use server::run;

/// The Redis version the server reports (`HELLO`, `INFO`): the version whose commands and
/// replies it follows.
pub const REDIS_VERSION: &str = "7.0.0";
