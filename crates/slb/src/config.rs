//! Sizes and policy knobs of an SLB, with the paper's defaults (Table 2, §3.3): an
//! [`Config`] with public fields, a builder (`orrery_core::config_builder!`) whose `build` validates into a `Result`, and
//! `Slb::with_config`, which validates again (the pattern every Orrery structure shares).

use orrery_core::api::ConfigError;

/// One mebibyte.
const MIB: usize = 1 << 20;

/// Configuration of a [`LookasideBuffer`](crate::LookasideBuffer) / [`Slb`](crate::Slb).
///
/// The defaults are the paper's: a 16 MiB Cache Table (1,835,008 slots), a Log Table four
/// times as large (64 MiB, 15,728,640 tags), admission at three logged occurrences, 5%
/// sampling once a bucket is full, 1024 lock stripes; one deviation: while a bucket has an
/// empty slot, an item is admitted at its first emission (`warm_admission_threshold`). Use [`Config::with_cache_mib`] for
/// the paper's 32 MiB and 64 MiB configurations.
///
/// ```
/// use orrery_core::reference::LockedBTreeMap;
/// use orrery_slb::{Slb, Config};
/// let config = Config::builder()
///     .cache_table_bytes(1 << 20)
///     .admission_threshold(3)
///     .warm_admission_threshold(3)
///     .build()
///     .unwrap();
/// let slb = Slb::with_config(LockedBTreeMap::new(), config).unwrap();
/// # drop(slb);
/// assert!(Config::builder().stripes(1000).build().is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Bytes of the Cache Table, rounded down to a power-of-two number of 64-byte buckets
    /// (seven items each). At least 64. Default 16 MiB.
    pub cache_table_bytes: usize,
    /// Size of the Log Table as a multiple of the Cache Table, at least 1 (rounded so the
    /// table has a power-of-two number of buckets). Default 4.
    pub log_table_ratio: usize,
    /// An emitted item is admitted once its tag occurs this many times in its Log Table
    /// bucket (the new entry included), 1..=15, once its Cache Table bucket is full.
    /// Default 3 (the paper's).
    pub admission_threshold: usize,
    /// The same threshold while the item's Cache Table bucket still has an empty slot (the
    /// cache is warming: an admission evicts nothing), 1..=15. Default 1: admit at the first
    /// emission. The paper uses one threshold (3) throughout; see the crate docs
    /// ("Warming") for the measurement behind this default. Set it to
    /// `admission_threshold` for the paper's policy.
    pub warm_admission_threshold: usize,
    /// Fraction of emissions logged when the item's Cache Table bucket has no empty slot,
    /// in `0.0..=1.0`; while a bucket still has an empty slot (the cache is warming) every
    /// emission is logged. Default 0.05.
    pub log_sample_rate: f64,
    /// Number of striped locks (a power of two, 1..=2^20). Default 1024.
    pub stripes: usize,
    /// Largest item (key length + value length, in bytes) the SLB caches; larger items are
    /// served by the index alone. At most `MAX_KEY_LEN + MAX_VALUE_LEN`. Default 4096.
    pub max_item_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cache_table_bytes: 16 * MIB,
            log_table_ratio: 4,
            admission_threshold: 3,
            warm_admission_threshold: 1,
            log_sample_rate: 0.05,
            stripes: 1024,
            max_item_bytes: 4096,
        }
    }
}

impl Config {
    /// The default configuration with a Cache Table of `mib` MiB (the paper uses 16, 32 and
    /// 64).
    pub fn with_cache_mib(mib: usize) -> Self {
        Config {
            cache_table_bytes: mib.saturating_mul(MIB),
            ..Self::default()
        }
    }

    /// The default configuration with a Cache Table of `bytes` bytes (small tables are useful
    /// in tests).
    pub fn with_cache_bytes(bytes: usize) -> Self {
        Config {
            cache_table_bytes: bytes,
            ..Self::default()
        }
    }

    /// Checks every field against its documented range (nothing is clamped; the table
    /// sizes are rounded down to powers of two as documented).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.geometry().map(|_| ())
    }

    /// Checks every field and derives the table geometry.
    pub(crate) fn geometry(&self) -> Result<Geometry, ConfigError> {
        let invalid = |field, reason| Err(ConfigError::Invalid { field, reason });
        if self.cache_table_bytes < 64 {
            return invalid("cache_table_bytes", "must be at least 64 (one bucket)");
        }
        if self.log_table_ratio == 0 {
            return invalid("log_table_ratio", "must be at least 1");
        }
        if !(1..=crate::log::LOG_ENTRIES).contains(&self.admission_threshold) {
            return invalid("admission_threshold", "must be in 1..=15");
        }
        if !(1..=crate::log::LOG_ENTRIES).contains(&self.warm_admission_threshold) {
            return invalid("warm_admission_threshold", "must be in 1..=15");
        }
        if !(0.0..=1.0).contains(&self.log_sample_rate) {
            return invalid("log_sample_rate", "must be in 0.0..=1.0");
        }
        if !self.stripes.is_power_of_two() || self.stripes > 1 << 20 {
            return invalid("stripes", "must be a power of two, at most 2^20");
        }
        let max = orrery_core::api::MAX_KEY_LEN + orrery_core::api::MAX_VALUE_LEN;
        if self.max_item_bytes > max {
            return invalid(
                "max_item_bytes",
                "must be at most MAX_KEY_LEN + MAX_VALUE_LEN",
            );
        }
        let cache_buckets = prev_power_of_two(self.cache_table_bytes / 64);
        let Some(log_slots) = cache_buckets.checked_mul(self.log_table_ratio) else {
            return invalid(
                "log_table_ratio",
                "times the Cache Table's buckets must fit in a usize",
            );
        };
        let log_buckets = prev_power_of_two(log_slots);
        // 2^32 * rate, so that "log" is `random_u32 < threshold` (rate 1.0 logs everything).
        let sample_threshold = (self.log_sample_rate * 4_294_967_296.0) as u64;
        Ok(Geometry {
            cache_buckets,
            log_buckets,
            sample_threshold,
        })
    }
}

orrery_core::config_builder!(Config => ConfigBuilder {
    cache_table_bytes: usize,
    log_table_ratio: usize,
    admission_threshold: usize,
    warm_admission_threshold: usize,
    log_sample_rate: f64,
    stripes: usize,
    max_item_bytes: usize,
});

fn prev_power_of_two(x: usize) -> usize {
    debug_assert!(x > 0);
    1 << (usize::BITS - 1 - x.leading_zeros())
}

/// Table sizes derived from a validated [`Config`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) cache_buckets: usize,
    pub(crate) log_buckets: usize,
    /// Log an emission to a full bucket when a random `u32` is below this (0..=2^32).
    pub(crate) sample_threshold: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_geometry() {
        // Table 2: 16/32/64 MiB Cache Tables hold 1835008/3670016/7340032 items and their
        // Log Tables 15728640/31457280/62914560 tags.
        for (mib, items, tags) in [
            (16, 1_835_008, 15_728_640),
            (32, 3_670_016, 31_457_280),
            (64, 7_340_032, 62_914_560),
        ] {
            let g = Config::with_cache_mib(mib).geometry().unwrap();
            assert_eq!(g.cache_buckets * crate::cache::SLOTS, items);
            assert_eq!(g.log_buckets * crate::log::LOG_ENTRIES, tags);
        }
    }

    #[test]
    fn rounding_and_sampling() {
        let g = Config::with_cache_bytes(1000).geometry().unwrap();
        assert_eq!(g.cache_buckets, 8);
        assert_eq!(g.log_buckets, 32);
        assert_eq!(g.sample_threshold, 214_748_364);
        let all = Config {
            log_sample_rate: 1.0,
            ..Config::with_cache_bytes(64)
        };
        assert_eq!(all.geometry().unwrap().sample_threshold, 1 << 32);
        let odd = Config {
            log_table_ratio: 3,
            ..Config::with_cache_bytes(64 * 4)
        };
        assert_eq!(odd.geometry().unwrap().log_buckets, 8);
    }

    #[test]
    fn rejects_bad_fields() {
        let bad = [
            Config::with_cache_bytes(63),
            Config {
                log_table_ratio: 0,
                ..Default::default()
            },
            Config {
                admission_threshold: 0,
                ..Default::default()
            },
            Config {
                admission_threshold: 16,
                ..Default::default()
            },
            Config {
                warm_admission_threshold: 0,
                ..Default::default()
            },
            Config {
                log_sample_rate: f64::NAN,
                ..Default::default()
            },
            Config {
                log_sample_rate: 1.5,
                ..Default::default()
            },
            Config {
                stripes: 1000,
                ..Default::default()
            },
            Config {
                log_table_ratio: usize::MAX,
                ..Default::default()
            },
            Config {
                max_item_bytes: usize::MAX,
                ..Default::default()
            },
        ];
        for cfg in bad {
            let err = cfg.validate().unwrap_err();
            assert!(
                err.to_string().starts_with("invalid configuration"),
                "{err}"
            );
            assert_eq!(ConfigBuilder { config: cfg }.build().unwrap_err(), err);
        }
    }
}
