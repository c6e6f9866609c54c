//! Sizes and policy knobs of an SLB, with the paper's defaults (Table 2, §3.3).

use std::fmt;

/// One mebibyte.
const MIB: usize = 1 << 20;

/// Configuration of a [`LookasideBuffer`](crate::LookasideBuffer) / [`Slb`](crate::Slb).
///
/// The defaults are the paper's: a 16 MiB Cache Table (1,835,008 slots), a Log Table four
/// times as large (64 MiB, 15,728,640 tags), admission at three logged occurrences, 5%
/// sampling once a bucket is full, 1024 lock stripes; one deviation: while a bucket has an
/// empty slot, an item is admitted at its first emission (`warm_admission_threshold`). Use [`SlbConfig::with_cache_mib`] for
/// the paper's 32 MiB and 64 MiB configurations.
#[derive(Clone, Debug, PartialEq)]
pub struct SlbConfig {
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
    /// The paper's locking (§3.1.3): every lookup holds its key's stripe lock across the
    /// SLB probe, the index search and the emission. Off by default: lookups then take no
    /// lock, and emissions are validated against the stripe's version instead (see the
    /// `buffer` module); this switch exists to measure the difference.
    pub lock_reads: bool,
}

impl Default for SlbConfig {
    fn default() -> Self {
        SlbConfig {
            cache_table_bytes: 16 * MIB,
            log_table_ratio: 4,
            admission_threshold: 3,
            warm_admission_threshold: 1,
            log_sample_rate: 0.05,
            stripes: 1024,
            max_item_bytes: 4096,
            lock_reads: false,
        }
    }
}

impl SlbConfig {
    /// The default configuration with a Cache Table of `mib` MiB (the paper uses 16, 32 and
    /// 64).
    pub fn with_cache_mib(mib: usize) -> Self {
        SlbConfig {
            cache_table_bytes: mib.saturating_mul(MIB),
            ..Self::default()
        }
    }

    /// The default configuration with a Cache Table of `bytes` bytes (small tables are useful
    /// in tests).
    pub fn with_cache_bytes(bytes: usize) -> Self {
        SlbConfig {
            cache_table_bytes: bytes,
            ..Self::default()
        }
    }

    /// Checks every field and derives the table geometry.
    pub(crate) fn validate(&self) -> Result<Geometry, ConfigError> {
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
        let log_buckets = prev_power_of_two(cache_buckets.saturating_mul(self.log_table_ratio));
        // 2^32 * rate, so that "log" is `random_u32 < threshold` (rate 1.0 logs everything).
        let sample_threshold = (self.log_sample_rate * 4_294_967_296.0) as u64;
        Ok(Geometry {
            cache_buckets,
            log_buckets,
            sample_threshold,
        })
    }
}

fn prev_power_of_two(x: usize) -> usize {
    debug_assert!(x > 0);
    1 << (usize::BITS - 1 - x.leading_zeros())
}

/// Table sizes derived from a validated [`SlbConfig`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) cache_buckets: usize,
    pub(crate) log_buckets: usize,
    /// Log an emission to a full bucket when a random `u32` is below this (0..=2^32).
    pub(crate) sample_threshold: u64,
}

/// Why an SLB could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A configuration field is out of range.
    Invalid {
        /// The offending [`SlbConfig`] field.
        field: &'static str,
        /// What the field must satisfy.
        reason: &'static str,
    },
    /// The tables could not be allocated.
    OutOfMemory,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Invalid { field, reason } => {
                write!(f, "invalid SLB configuration: `{field}` {reason}")
            }
            ConfigError::OutOfMemory => f.write_str("out of memory allocating the SLB tables"),
        }
    }
}

impl std::error::Error for ConfigError {}

impl From<orrery_core::Error> for ConfigError {
    fn from(_: orrery_core::Error) -> Self {
        ConfigError::OutOfMemory
    }
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
            let g = SlbConfig::with_cache_mib(mib).validate().unwrap();
            assert_eq!(g.cache_buckets * crate::cache::SLOTS, items);
            assert_eq!(g.log_buckets * crate::log::LOG_ENTRIES, tags);
        }
    }

    #[test]
    fn rounding_and_sampling() {
        let g = SlbConfig::with_cache_bytes(1000).validate().unwrap();
        assert_eq!(g.cache_buckets, 8);
        assert_eq!(g.log_buckets, 32);
        assert_eq!(g.sample_threshold, 214_748_364);
        let all = SlbConfig {
            log_sample_rate: 1.0,
            ..SlbConfig::with_cache_bytes(64)
        };
        assert_eq!(all.validate().unwrap().sample_threshold, 1 << 32);
        let odd = SlbConfig {
            log_table_ratio: 3,
            ..SlbConfig::with_cache_bytes(64 * 4)
        };
        assert_eq!(odd.validate().unwrap().log_buckets, 8);
    }

    #[test]
    fn rejects_bad_fields() {
        let bad = [
            SlbConfig::with_cache_bytes(63),
            SlbConfig {
                log_table_ratio: 0,
                ..Default::default()
            },
            SlbConfig {
                admission_threshold: 0,
                ..Default::default()
            },
            SlbConfig {
                admission_threshold: 16,
                ..Default::default()
            },
            SlbConfig {
                warm_admission_threshold: 0,
                ..Default::default()
            },
            SlbConfig {
                log_sample_rate: f64::NAN,
                ..Default::default()
            },
            SlbConfig {
                log_sample_rate: 1.5,
                ..Default::default()
            },
            SlbConfig {
                stripes: 1000,
                ..Default::default()
            },
            SlbConfig {
                max_item_bytes: usize::MAX,
                ..Default::default()
            },
        ];
        for cfg in bad {
            let err = cfg.validate().unwrap_err();
            assert!(err.to_string().starts_with("invalid SLB configuration"));
        }
    }
}
