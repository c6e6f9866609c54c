//! Construction options: leaf capacity, the ablation switches of Fig 11, pre-faulting.

use std::fmt;

use crate::Wormhole;
use crate::leaf::{MAX_CAP, MIN_CAP};

/// Options of a [`Wormhole`], set through [`WormholeBuilder`].
///
/// The four optimization switches are the ones the paper turns on one at a time in Fig 11;
/// with all four off the index is the paper's *BaseWormhole*. They, and `prefault`, change
/// speed only, never results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Keys per leaf before it splits (paper default 128; 8..=256).
    pub leaf_capacity: usize,
    /// *TagMatching* (§3.1): MetaTrieHT probes trust 16-bit tags and compare one prefix
    /// at the end; off: every probe compares the full prefix.
    pub tag_matching: bool,
    /// *IncHashing* (§3.1): prefix hashes extend the hash of the last matched prefix; off:
    /// every probe hashes its prefix from scratch.
    pub inc_hashing: bool,
    /// *SortByTag* (§3.2): point lookups search the hash-ordered tag array; off: leaves
    /// are kept in key order and searched by binary search with key comparisons.
    pub sort_by_tag: bool,
    /// *DirectPos* (§3.2): the tag search starts at `tag · nr / 2^16`; off: binary search
    /// over the tags.
    pub direct_pos: bool,
    /// Pre-faulting (not in the paper; measured in `docs/wormhole.md`): once the index
    /// holds 16 MiB of slab chunks, a background thread keeps one fresh 2 MiB chunk mapped
    /// and populated for the leaf and pair pools, so that inserts do not pay the
    /// kernel's clearing of new huge pages (`orrery_core::alloc::Populator`). Off: every
    /// new chunk is faulted by the thread that first writes it. Speed only, and at most
    /// one spare chunk (counted in `memory_usage()`).
    pub prefault: bool,
    /// Item prefetch (not in the paper; measured in `docs/results/wormhole.md`): the
    /// MetaTrieHT keeps its items at positions computed from their hash, and a search
    /// prefetches the item of its most likely final prefix length together with its first
    /// slots (see the crate's `items` module). Off: items are placed the same way but not
    /// prefetched ahead (the ablation of this switch). Speed only.
    pub prefetch_items: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            leaf_capacity: 128,
            tag_matching: true,
            inc_hashing: true,
            sort_by_tag: true,
            direct_pos: true,
            prefault: true,
            prefetch_items: true,
        }
    }
}

impl Config {
    /// Combined size at or below which two neighbouring leaves are merged.
    pub(crate) fn merge_size(&self) -> usize {
        self.leaf_capacity * 3 / 4
    }
}

/// An invalid [`Config`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// `leaf_capacity` outside `8..=256`.
    LeafCapacity(usize),
    /// The first leaf and the MetaTrieHTs could not be allocated.
    OutOfMemory,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::LeafCapacity(n) => write!(
                f,
                "leaf capacity {n} is outside the supported range {MIN_CAP}..={MAX_CAP}"
            ),
            ConfigError::OutOfMemory => f.write_str("out of memory"),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Builds a [`Wormhole`] with non-default options.
///
/// ```
/// use orrery_wormhole::Wormhole;
/// let base = Wormhole::builder()
///     .tag_matching(false)
///     .inc_hashing(false)
///     .sort_by_tag(false)
///     .direct_pos(false)
///     .build()
///     .unwrap();
/// assert!(Wormhole::builder().leaf_capacity(1).build().is_err());
/// # drop(base);
/// ```
#[derive(Clone, Debug, Default)]
pub struct WormholeBuilder {
    config: Config,
}

impl WormholeBuilder {
    /// Keys per leaf (8..=256, default 128).
    pub fn leaf_capacity(mut self, n: usize) -> Self {
        self.config.leaf_capacity = n;
        self
    }

    /// The *TagMatching* optimization (default on).
    pub fn tag_matching(mut self, on: bool) -> Self {
        self.config.tag_matching = on;
        self
    }

    /// The *IncHashing* optimization (default on).
    pub fn inc_hashing(mut self, on: bool) -> Self {
        self.config.inc_hashing = on;
        self
    }

    /// The *SortByTag* optimization (default on).
    pub fn sort_by_tag(mut self, on: bool) -> Self {
        self.config.sort_by_tag = on;
        self
    }

    /// The *DirectPos* optimization (default on; only meaningful with *SortByTag*).
    pub fn direct_pos(mut self, on: bool) -> Self {
        self.config.direct_pos = on;
        self
    }

    /// Pre-faulting of new slab chunks by a background thread (default on; see
    /// [`Config::prefault`]).
    pub fn prefault(mut self, on: bool) -> Self {
        self.config.prefault = on;
        self
    }

    /// The item prefetch (default on; see [`Config::prefetch_items`]).
    pub fn prefetch_items(mut self, on: bool) -> Self {
        self.config.prefetch_items = on;
        self
    }

    /// Uses all options of `config`.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Builds the index; fails on an invalid option or when its first memory (a leaf and
    /// the two MetaTrieHTs) cannot be allocated.
    pub fn build(self) -> Result<Wormhole, ConfigError> {
        let c = self.config;
        if !(MIN_CAP..=MAX_CAP).contains(&c.leaf_capacity) {
            return Err(ConfigError::LeafCapacity(c.leaf_capacity));
        }
        Wormhole::with_config(c).map_err(|_| ConfigError::OutOfMemory)
    }
}
