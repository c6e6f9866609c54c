//! The index type and the routing every layer above the arenas shares: which arena a
//! key's trie lives in ([`Hyperion::arena_of`]: the trie of first byte `b` in arena
//! `b mod n`, the empty key in arena 0) and the key a trie stores ([`Hyperion::trie_key`]:
//! the user's key, or its pre-processed form, §3.4).
//!
//! The public operations are written on top of this, in the crate root (point reads and
//! writes) and `iter.rs` (ordered copies); neither imports the other.

use std::sync::atomic::AtomicIsize;

use orrery_core::sync::CachePadded;

use crate::arena::Arena;
use crate::config::Config;
use crate::prep;

/// A concurrent ordered key-value index over byte strings: Hyperion.
///
/// See the [crate docs](crate) for an example and the guarantees.
pub struct Hyperion {
    /// The arenas; trie `b` lives in `arenas[b % arenas.len()]`.
    pub(crate) arenas: Box<[CachePadded<Arena>]>,
    /// Number of keys (inserts minus removes; may dip below 0 transiently).
    pub(crate) len: CachePadded<AtomicIsize>,
    /// The options the index was built with.
    pub(crate) config: Config,
}

/// A key in the trie's key space: the user's key, or its pre-processed form.
pub(crate) enum TrieKey<'a> {
    /// The user's key (no pre-processing).
    User(&'a [u8]),
    /// The pre-processed key.
    Prep(Vec<u8>),
}

impl std::ops::Deref for TrieKey<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            TrieKey::User(k) => k,
            TrieKey::Prep(k) => k,
        }
    }
}

impl Hyperion {
    /// The arena of `key`'s trie (of its first byte; the empty key's: arena 0).
    #[inline]
    pub(crate) fn arena_of(&self, key: &[u8]) -> &Arena {
        let b = key.first().copied().unwrap_or(0) as usize;
        &self.arenas[b % self.arenas.len()]
    }

    /// `key` in the trie's key space.
    #[inline]
    pub(crate) fn trie_key<'a>(&self, key: &'a [u8]) -> TrieKey<'a> {
        if self.config.preprocess {
            let mut out = Vec::with_capacity(key.len() + 1);
            prep::encode(key, &mut out);
            TrieKey::Prep(out)
        } else {
            TrieKey::User(key)
        }
    }
}
