//! Construction options: leaf capacity, the ablation switches of Fig 11, pre-faulting.
//!
//! The pattern every Orrery structure shares: a `Config` with public fields and the
//! paper's defaults, a builder whose `build` validates into a `Result`, and
//! `with_config`, which validates again (fields are public). Nothing is clamped.

use orrery_core::api::ConfigError;

use crate::Wormhole;
use crate::leaf::{MAX_CAP, MIN_CAP};

/// Options of a [`Wormhole`], built and validated by [`Config::builder`] (or written out
/// and checked by [`Wormhole::with_config`]).
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

impl Config {
    /// A builder starting from the defaults; [`ConfigBuilder::build`] validates.
    ///
    /// ```
    /// use orrery_wormhole::{Config, Wormhole};
    /// let base = Config::builder()
    ///     .tag_matching(false)
    ///     .inc_hashing(false)
    ///     .sort_by_tag(false)
    ///     .direct_pos(false)
    ///     .build()
    ///     .unwrap();
    /// let wh = Wormhole::with_config(base).unwrap();
    /// assert!(!wh.config().tag_matching);
    /// assert!(Config::builder().leaf_capacity(1).build().is_err());
    /// ```
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder::default()
    }

    /// Checks every field: `leaf_capacity` must be in `8..=256` (nothing is clamped).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(MIN_CAP..=MAX_CAP).contains(&self.leaf_capacity) {
            return Err(ConfigError::Invalid {
                field: "leaf_capacity",
                reason: "must be in 8..=256",
            });
        }
        Ok(())
    }
}

/// Builds a validated [`Config`] (start with [`Config::builder`]).
#[derive(Clone, Debug, Default)]
pub struct ConfigBuilder {
    config: Config,
}

impl ConfigBuilder {
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

    /// The validated configuration, or the first invalid field.
    pub fn build(self) -> Result<Config, ConfigError> {
        self.config.validate()?;
        Ok(self.config)
    }
}

impl Wormhole {
    /// An empty index with the given options, validated first ([`Config::validate`]);
    /// [`ConfigError::OutOfMemory`] when its first leaf and MetaTrieHTs cannot be
    /// allocated.
    pub fn with_config(config: Config) -> Result<Wormhole, ConfigError> {
        config.validate()?;
        Wormhole::from_valid_config(config).map_err(|_| ConfigError::OutOfMemory)
    }
}
