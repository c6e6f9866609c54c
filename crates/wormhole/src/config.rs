//! Construction options: leaf capacity, pre-faulting, item prefetch. (The Fig 11
//! optimizations are not options but the const parameter of the index type: `ablation`.)
//!
//! The pattern every Orrery structure shares: a `Config` with public fields and the
//! paper's defaults, a builder (`orrery_core::config_builder!`) whose `build` validates
//! into a `Result`, and `with_config`, which validates again (fields are public). Nothing
//! is clamped.

use orrery_core::api::ConfigError;

use crate::leaf::{MAX_CAP, MIN_CAP};

/// Options of a [`Wormhole`](crate::Wormhole), built and validated by [`Config::builder`]
/// (or written out and checked by [`WormholeWith::with_config`](crate::WormholeWith::with_config)).
///
/// `prefault` and `prefetch_items` change speed only, never results. The optimizations the
/// paper turns on one at a time in Fig 11 are compile-time parameters of the index type
/// instead (`crate::ablation`), so that the default build does not test them.
///
/// ```
/// use orrery_wormhole::{Config, Wormhole};
/// let cfg = Config::builder().leaf_capacity(64).prefault(false).build().unwrap();
/// let wh = Wormhole::with_config(cfg).unwrap();
/// assert_eq!(wh.config().leaf_capacity, 64);
/// assert!(Config::builder().leaf_capacity(1).build().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Keys per leaf before it splits (paper default 128; 8..=256).
    pub leaf_capacity: usize,
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

orrery_core::config_builder!(Config => ConfigBuilder {
    leaf_capacity: usize,
    prefault: bool,
    prefetch_items: bool,
});
