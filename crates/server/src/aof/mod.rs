//! Persistence: the append-only file (`--appendonly yes`), its replay at start, its rewrite
//! while the server runs (`BGREWRITEAOF`, `SAVE`, or automatically on growth), and group
//! commit.
//!
//! # What is logged
//!
//! Not the commands but their *effects*, as one record per change, written by the store
//! while the command still holds its keys' stripes ([`crate::store::Txn`]):
//!
//! | record | effect on replay |
//! |---|---|
//! | `SET key raw` | the key holds the string value `raw` (the stored bytes: type, deadline, payload) |
//! | `DEL key` | the key is absent |
//! | `ZADD key member score` | the key is a sorted set (a new one if it held anything else) in which `member` has `score` (8 bytes: the `f64`'s bits, big-endian) |
//! | `ZREM key member` | `member` is not in the set (an emptied set deletes its key) |
//! | `HSET key field value` | the key is a hash (a new one if it held anything else) in which `field` has `value` |
//! | `HDEL key field` | `field` is not in the hash (an emptied hash deletes its key) |
//! | `SADD key member` | the key is a set (a new one if it held anything else) holding `member` |
//! | `SREM key member` | `member` is not in the set (an emptied set deletes its key) |
//! | `LPUT key pos element` | the key is a list (a new one if it held anything else) whose element at position `pos` (8 bytes, big-endian: `crate::coll`'s list positions) is `element` |
//! | `LSPAN key head len` | the list's elements are at positions `head .. head + len` (8 bytes each); those outside are dropped; length 0 deletes the key |
//! | `PEXPIREAT key ms` / `PERSIST key` | the key's deadline (on a collection; strings carry theirs in `SET`) |
//!
//! Effects make replay deterministic (an `INCRBYFLOAT`, a relative `EXPIRE` or an `SPOP`
//! is logged as its result), and each is an assignment to a part of the keyspace, which
//! is what makes the rewrite below correct: a list's records name absolute positions
//! rather than pushes and pops for that reason. The records do not depend on a
//! collection's encoding (compact or large): replay rebuilds each collection under the
//! thresholds in force, and a blocked client served by a push is logged as the pop it
//! received. A record is a RESP array, so the file can be read with a hex
//! dump and a little patience.
//!
//!
//! # Layout
//!
//! | module | job |
//! |---|---|
//! | `chain` | the files: names of the base and increments, the frame format, directory syncs |
//! | `replay` | loading the chain at start: frames applied in order, a torn tail cut off |
//! | `commit` | the open log: appending frames, the flusher thread, the fsync policy, group commit |
//! | `rewrite` | compaction while the server runs (`BGREWRITEAOF`, `SAVE`, automatic) |
//! | `settings` | the fsync policy, the settings `CONFIG SET` changes, the `INFO` figures |
//!
//! The store ([`crate::store`]) sees the log only as its `Journal`, which [`Aof`]
//! implements: persistence replays into the store and walks it, so it sits above it.

mod chain;
mod commit;
mod replay;
mod rewrite;
mod settings;
#[cfg(test)]
mod tests;

pub(crate) use chain::FILE_NAME;

/// Applies one frame's records to the databases `store` as replay does (for the fuzz
/// target that checks that the log rebuilds the keyspace it was written from).
pub(crate) fn replay_frame(
    store: &crate::store::Databases,
    records: &[u8],
    now: u64,
) -> Result<(), String> {
    replay::apply_frame(store, records, now)
}
pub(crate) use commit::Aof;
pub(crate) use settings::AofSettings;
pub use settings::Fsync;
