//! Byte layouts of the collection types (hashes, sets, sorted sets, lists), below the store
//! that holds them: the compact encodings a small collection keeps inside its key's value,
//! the keys under which a large collection's elements live in the shared element index,
//! and the thresholds (Redis's `*-max-listpack-*` settings) that choose between the two.
//!
//! A leaf: it knows bytes, not the keyspace. The store (`crate::store`) uses it to drop and
//! walk collections; the typed collections (`crate::coll`) to read and change them.
//!
//! | module | what |
//! |---|---|
//! | `pack` | the compact sequence of strings (a listpack without back-pointers): hashes, sets, sorted sets, small lists |
//! | `run` | a large list node's run of elements, walkable from either end (a listpack with back-lengths) |
//! | `intset` | sorted fixed-width integers: a compact set whose members are all integers |
//! | `keys` | element keys of large collections: `id ++ …`, member hashes, score and position encodings |
//! | `thresholds` | the compact-encoding limits, read on every collection write and set by `CONFIG SET` |

mod intset;
mod keys;
mod pack;
mod run;
mod thresholds;

pub(crate) use intset::IntSet;
pub(crate) use keys::{
    MAX_ELEMENT, bits_score, hashed_key, id_bounds, id_prefix, key_score, list_key, score_bits,
    score_key, zset_member_key, zset_member_prefix, zset_score_key, zset_score_prefix,
};
pub(crate) use pack::Pack;
pub(crate) use run::{entries, entry_len, from_entry, nth_entry, put_entry};
pub(crate) use thresholds::{
    Param, ThresholdValues, Thresholds, param as threshold_param, parse as threshold_parse,
};
