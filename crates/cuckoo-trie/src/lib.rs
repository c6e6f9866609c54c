//! Cuckoo Trie: an ordered index whose trie nodes live in a key-eliminating bucketized
//! cuckoo hash table, built for memory-level parallelism (Zeitak and Morrison, SOSP '21;
//! `shared/papers/cuckoo-trie.md`).
//!
//! # Status
//!
//! Work in progress (issue 21). Built and tested so far: the hashed trie representation's
//! table (§4.1: 64-byte buckets of four 15-byte entries and a 32-bit version/lock word) and
//! the hash table with key elimination (§4.2, Algorithm 2: peelable prefix hash, tags,
//! colours and parent colours, both candidate buckets, bounded breadth-first cuckoo
//! relocation). The trie on top of it is not written yet; see `docs/cuckoo-trie.md`.
//!
//! # Modules
//!
//! | module | what it holds |
//! |---|---|
//! | `hash` | the peelable prefix hash `h`, tags, the two buckets of a hash |
//! | `bucket` | the bucket and entry layouts (bytes), the version/lock protocol of a bucket |
//! | `table` | `ENTRIESFOR`, `SEARCHBYPARENT`, `SEARCHBYCOLOR`, placement and relocation |
//! | `config` | [`Config`] and its builder |

// The trie that uses the table is not written yet: until then parts of the table are only
// reached from its unit tests.
#![allow(dead_code)]

mod bucket;
mod config;
mod hash;
mod table;

pub use config::{Config, ConfigBuilder};
